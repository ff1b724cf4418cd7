//===- HLADialect.td - hla dialect definition --------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLADIALECT_TD
#define HLA_DIALECT_HLA_IR_HLADIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def HLA_Dialect : Dialect {
  let name = "hla";
  let cppNamespace = "::mlir::hla";
  let summary = "Higher-order linear attention and its prefix-moment algebra";
  let description = [{
    The `hla` dialect has two layers.

    *Attention ops* (`hla.linear_attention`, `hla.hla2`, `hla.ahla`,
    `hla.hla3`, `hla.linsimp`, `hla.kda`) are what model graphs use: they take
    `[B, T, H, D]` tensors and compute exactly what `docs/HLA.md` (the
    project's SEMANTICS) defines, optionally from an initial state and
    returning the final state, optionally over a packed variable-length batch
    (`cu_seqlens`).

    *Algebra ops* (`hla.segment`, `hla.combine`, `hla.scan`, `hla.readout`,
    plus `hla.feature_map` and `hla.anchor_readout` for LinSimp) are what
    lowering works on. Each carries a `#hla.monoid` attribute: a declarative
    description of a prefix-moment monoid (state components, the token map,
    the associative combine rule, the readout). `hla-expand` rewrites each
    attention op into algebra ops under its monoid; new variants are new
    monoid descriptions, not new C++.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the dialect's attributes (defined in HLAAttrs.cpp).
    void registerAttributes();

    /// Parses (once per context) and returns a monoid template of the
    /// monoid library by name, e.g. "hla2".
    ::mlir::FailureOr<::mlir::hla::MonoidSpec>
    getMonoidTemplate(::llvm::StringRef name);

  private:
    // Verifiers may run on several threads; the cache is guarded.
    ::std::mutex monoidTemplatesMutex;
    ::llvm::StringMap<::mlir::hla::MonoidSpec> monoidTemplates;
  public:
  }];
}

class HLA_Op<string mnemonic, list<Trait> traits = []>
    : Op<HLA_Dialect, mnemonic, traits>;

#endif // HLA_DIALECT_HLA_IR_HLADIALECT_TD
