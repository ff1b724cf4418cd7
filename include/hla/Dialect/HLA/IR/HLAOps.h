//===- HLAOps.h - hla operations ----------------------------------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAOPS_H
#define HLA_DIALECT_HLA_IR_HLAOPS_H

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

#include "hla/Dialect/HLA/IR/HLAInterfaces.h.inc"

#define GET_OP_CLASSES
#include "hla/Dialect/HLA/IR/HLAOps.h.inc"

namespace mlir::hla {

/// The monoid of an attention op with its options applied and simplified:
/// the description `hla-expand` lowers the op with, and whose carried
/// components define the op's initial and final state. Fails for ops that
/// have no prefix-moment state (LinSimp with the exact kernel); `reason`
/// then says why.
FailureOr<MonoidSpec> getAttentionMonoid(Operation *op, std::string &reason);

/// Shapes (without the leading [B or N, H] dimensions) and names of an
/// attention op's state tensors, in order. Fails like getAttentionMonoid.
struct AttentionStateSlot {
  std::string name;
  llvm::SmallVector<int64_t> shape;
};
FailureOr<llvm::SmallVector<AttentionStateSlot>>
getAttentionStateSlots(Operation *op, std::string &reason);

/// An attention op's `head_decay` tensor (its decay rate per query head),
/// or null: absent, or an op without a decay.
Value getHeadDecay(Operation *op);

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_IR_HLAOPS_H
