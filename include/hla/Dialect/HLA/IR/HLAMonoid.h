//===- HLAMonoid.h - Declarative prefix-moment monoids ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A prefix-moment monoid is described, not coded: a list of named state
// components with symbolic shapes, and three sets of polynomial rules over
// them:
//
//   token    how one token's inputs (q, k, v, ...) make a one-token segment,
//   combine  how segment A followed by segment B makes the segment AB,
//   readout  how an inclusive prefix state and a query make an output.
//
// Every rule is a sum of signed terms; a term is an ordered product of
// factors. A factor is an input, a state component (of side A or B inside
// combine rules), a scalar parameter, or diag(x) / diag(exp(x)) of a vector
// input. Factors of rank 2 and rank 1 multiply as a matrix chain (a vector
// is a column, `.T` makes it a row); scalars commute and multiply anywhere.
//
// For example, second-order masked HLA with decay (SEMANTICS.md §2) is
//
//   state(S: [d, d], C: [d, dv], G: [d, dv], rho: [] eye)
//   combine(G = rho.b * rho.b * G.a + G.b + rho.b * S.b * C.a, ...)
//
// where `rho` is an ordinary scalar component whose identity is 1.
//
// MonoidSpec is a plain value type so that it can be the single parameter of
// the `#hla.monoid` attribute; the attribute adds uniquing and the textual
// syntax. Everything that inspects a monoid (verifiers, hla-expand, the
// chunked lowering, hla-verify-algebra) works on this class.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAMONOID_H
#define HLA_DIALECT_HLA_IR_HLAMONOID_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/bit.h"

#include <optional>
#include <string>

namespace mlir {
class AsmParser;
class AsmPrinter;
} // namespace mlir

namespace mlir::hla {

/// Which operand of a combine a component factor is read from.
enum class MonoidSide : uint8_t { None, A, B };

/// A named slot with a symbolic shape: a token input or a state component.
struct MonoidSlot {
  std::string name;
  /// Symbolic extents, outermost first; empty for a scalar.
  llvm::SmallVector<std::string, 2> shape;
  /// Components only: the identity element is the identity matrix (or 1 for
  /// a scalar) instead of zero.
  bool eyeIdentity = false;

  unsigned getRank() const { return shape.size(); }
  bool operator==(const MonoidSlot &other) const {
    return name == other.name && shape == other.shape &&
           eyeIdentity == other.eyeIdentity;
  }
};

/// A named scalar constant of the monoid (decay, scale, ridge, ...), or,
/// `perHead` (text `gamma = per_head`), a scalar with one value per head
/// given at run time: the ops that evaluate token rules (hla.segment,
/// hla.prefix_vjp) take those values as their `head_params` operand. Only
/// token rules may read a per-head parameter.
struct MonoidParam {
  std::string name;
  double value = 0.0;
  bool perHead = false;

  bool operator==(const MonoidParam &other) const {
    // Compare bit patterns so that uniquing is exact (and NaN-safe).
    return name == other.name && perHead == other.perHead &&
           llvm::bit_cast<uint64_t>(value) ==
               llvm::bit_cast<uint64_t>(other.value);
  }
};

/// One factor of a product term.
struct MonoidFactor {
  enum class Kind : uint8_t {
    Input,     ///< A token input, e.g. `k` or `k.T`.
    Component, ///< A state component, e.g. `S` (readout) or `S.b` (combine).
    Param,     ///< A scalar parameter, e.g. `gamma`.
    Diag,      ///< `diag(x)` of a vector input x.
    DiagExp,   ///< `diag(exp(x))` of a vector input x.
  };
  Kind kind = Kind::Input;
  MonoidSide side = MonoidSide::None;
  /// Index into the inputs, components or params, by kind.
  unsigned index = 0;
  bool transposed = false;

  bool operator==(const MonoidFactor &other) const {
    return kind == other.kind && side == other.side && index == other.index &&
           transposed == other.transposed;
  }
};

/// A signed product of factors. An empty product is the scalar 1.
struct MonoidTerm {
  bool negated = false;
  llvm::SmallVector<MonoidFactor, 4> factors;

  bool operator==(const MonoidTerm &other) const {
    return negated == other.negated && factors == other.factors;
  }
};

/// A sum of terms; no terms means zero.
using MonoidExpr = llvm::SmallVector<MonoidTerm, 2>;

/// A named output of the readout: `num` (required) and `den` (present when
/// the output is normalized).
struct MonoidReadout {
  std::string name;
  MonoidExpr expr;

  bool operator==(const MonoidReadout &other) const {
    return name == other.name && expr == other.expr;
  }
};

/// The shape a term evaluates to, as a (rows, cols) pair of symbols where
/// "1" is the unit extent.
struct MonoidMatrixShape {
  std::string rows = "1", cols = "1";
  bool operator==(const MonoidMatrixShape &other) const {
    return rows == other.rows && cols == other.cols;
  }
};

/// The full declarative description of a prefix-moment monoid.
class MonoidSpec {
public:
  std::string name;
  llvm::SmallVector<MonoidSlot, 6> inputs;
  llvm::SmallVector<MonoidParam, 4> params;
  llvm::SmallVector<MonoidSlot, 8> components;
  /// Per component, how a one-token segment is built (empty = zero).
  llvm::SmallVector<MonoidExpr, 8> token;
  /// Per component, how A followed by B combines.
  llvm::SmallVector<MonoidExpr, 8> combine;
  llvm::SmallVector<MonoidReadout, 2> readouts;

  bool operator==(const MonoidSpec &other) const;

  //===--------------------------------------------------------------------===//
  // Lookup
  //===--------------------------------------------------------------------===//

  std::optional<unsigned> findInput(llvm::StringRef name) const;
  std::optional<unsigned> findComponent(llvm::StringRef name) const;
  std::optional<unsigned> findParam(llvm::StringRef name) const;
  /// The per-head parameters, in parameter order.
  llvm::SmallVector<unsigned> getPerHeadParams() const;
  const MonoidReadout *findReadout(llvm::StringRef name) const;

  //===--------------------------------------------------------------------===//
  // Derived structure
  //===--------------------------------------------------------------------===//

  /// The components an inclusive prefix state must carry: those the readouts
  /// read, closed under "is read from the left operand A of a combine rule
  /// of a carried component". A scan's prefix results, an initial state and
  /// a final state hold exactly these, in component order.
  llvm::SmallVector<unsigned> getCarryComponents() const;

  /// The token inputs the token rules read, in input order.
  llvm::SmallVector<unsigned> getTokenInputs() const;

  /// Whether component `c` is a symmetric matrix in every state built from
  /// tokens: square, each token term a scalar times a palindromic chain
  /// (`k * k.T`, `x * x.T * y * y.T * x * x.T`), each combine term a scalar
  /// times `c.a` or `c.b` (hla2's and hla3's S = Σ k kᵀ). An initial state
  /// given from outside need not be.
  bool isSymmetricComponent(unsigned c) const;

  /// The inputs the readout rules read, in input order.
  llvm::SmallVector<unsigned> getReadoutInputs() const;

  /// The matrix shape of a slot: a vector [n] is the column (n, 1), a scalar
  /// is (1, 1).
  static MonoidMatrixShape getMatrixShape(const MonoidSlot &slot);

  /// The shape one term evaluates to, or failure with a message when the
  /// matrix chain does not conform.
  FailureOr<MonoidMatrixShape> inferTermShape(const MonoidTerm &term,
                                              std::string &error) const;

  /// The slot a factor refers to (input or component); null for params.
  const MonoidSlot *getFactorSlot(const MonoidFactor &factor) const;

  /// Checks names, references, sides and shapes of every rule. Reports the
  /// first problem through `emitError`.
  LogicalResult
  verify(llvm::function_ref<InFlightDiagnostic()> emitError) const;

  //===--------------------------------------------------------------------===//
  // Rewriting
  //===--------------------------------------------------------------------===//

  /// Returns a copy with the given parameter values (and per-head flags)
  /// set; names that do not exist are ignored.
  MonoidSpec withParams(llvm::ArrayRef<MonoidParam> values) const;

  /// Returns a copy that keeps only the named readouts.
  MonoidSpec withReadouts(llvm::ArrayRef<llvm::StringRef> names) const;

  /// Algebraic clean-up that keeps the monoid's meaning: drops terms with a
  /// zero parameter, drops unit parameters from products, removes scalar
  /// components that are constantly one (identity 1, token value 1, combine
  /// rule `c.a * c.b`), removes components no readout depends on, and
  /// removes unused parameters and inputs.
  MonoidSpec simplify() const;

  //===--------------------------------------------------------------------===//
  // Text
  //===--------------------------------------------------------------------===//

  /// Parses the body of `#hla.monoid<...>` (everything between the angle
  /// brackets).
  static FailureOr<MonoidSpec> parse(AsmParser &parser);
  void print(AsmPrinter &printer) const;
  /// Plain-text form of the body (used in diagnostics and tests).
  std::string str() const;
  void printExpr(llvm::raw_ostream &os, const MonoidExpr &expr) const;
};

llvm::hash_code hash_value(const MonoidSlot &slot);
llvm::hash_code hash_value(const MonoidParam &param);
llvm::hash_code hash_value(const MonoidFactor &factor);
llvm::hash_code hash_value(const MonoidTerm &term);
llvm::hash_code hash_value(const MonoidReadout &readout);
llvm::hash_code hash_value(const MonoidSpec &spec);

/// Binds the symbolic extents of a monoid to concrete sizes, checking that
/// every use of a symbol agrees. Dynamic extents (ShapedType::kDynamic) bind
/// nothing and conflict with nothing.
class MonoidDimBinder {
public:
  /// Binds `slot.shape` to `sizes` (the trailing extents of a tensor). On a
  /// conflict returns failure and sets `error`.
  LogicalResult bind(const MonoidSlot &slot, llvm::ArrayRef<int64_t> sizes,
                     std::string &error);
  /// The bound size of a symbol, or ShapedType::kDynamic.
  int64_t lookup(llvm::StringRef symbol) const;
  /// The concrete trailing shape of a slot under this binding.
  llvm::SmallVector<int64_t> resolve(const MonoidSlot &slot) const;

private:
  llvm::StringMap<int64_t> sizes;
};

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_IR_HLAMONOID_H
