//===- HLAAttrs.td - hla attributes ------------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAATTRS_TD
#define HLA_DIALECT_HLA_IR_HLAATTRS_TD

include "hla/Dialect/HLA/IR/HLADialect.td"
include "hla/Dialect/HLA/IR/HLAEnums.td"

class HLA_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<HLA_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def HLA_MonoidAttr : HLA_Attr<"Monoid", "monoid"> {
  let summary = "Declarative description of a prefix-moment monoid";
  let description = [{
    A prefix-moment monoid: the state components a segment of tokens keeps,
    and polynomial rules that say how one token makes a segment (`token`),
    how two adjacent segments combine (`combine`, A then B), and how an
    inclusive prefix state and a query make an output (`readout`).

    ```
    monoid  ::= `<` string-literal sections `>`
    sections::= [`inputs` `(` slot-list `)`] [`params` `(` param-list `)`]
                `state` `(` slot-list `)` [`token` `(` rule-list `)`]
                `combine` `(` rule-list `)` [`readout` `(` rule-list `)`]
    slot    ::= name `:` `[` symbol-list `]` [`eye`]
    param   ::= name `=` float
    rule    ::= name `=` expr
    expr    ::= `0` | [`-`] term ((`+`|`-`) term)*
    term    ::= factor (`*` factor)*
    factor  ::= `1` | name[.a|.b][.T] | `diag` `(` name `)`
              | `diag` `(` `exp` `(` name `)` `)`
    ```

    Shapes are symbolic (`[d, dv]`); a vector is a column and `.T` makes it a
    row; rank-2 and rank-1 factors multiply as a matrix chain while scalars
    commute. In combine rules every component factor names its operand:
    `S.a` is S of the earlier segment A, `S.b` of the later segment B. A
    component marked `eye` has the identity matrix (1 for a scalar) as its
    identity element; every other component's identity is zero. Components
    not listed under `token` are zero for a single token.

    The *carried* components are those the readouts read, closed under
    "read from operand A of a carried component's combine rule": they are
    what a prefix state, an initial state and a final state hold.

    Example (first-order linear attention with decay, SEMANTICS.md §1):

    ```mlir
    #hla.monoid<"linear_attention"
      inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
      state(P: [d, dv], rho: [] eye)
      token(P = k * v.T, rho = gamma)
      combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b)
      readout(num = q.T * P)>
    ```
  }];
  let parameters = (ins
    AttrParameter<"::mlir::hla::MonoidSpec", "the monoid description",
                  "const ::mlir::hla::MonoidSpec &">:$spec
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The components prefix states carry (see the description).
    ::llvm::SmallVector<unsigned> getCarryComponents() const {
      return getSpec().getCarryComponents();
    }
  }];
}

#endif // HLA_DIALECT_HLA_IR_HLAATTRS_TD
