//===- Passes.h - hla transformation passes ---------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_PASSES_H
#define HLA_DIALECT_HLA_TRANSFORMS_PASSES_H

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Modes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::hla {

#define GEN_PASS_DECL
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"

/// Adds the patterns that rewrite attention ops into algebra ops (the body
/// of hla-expand).
void populateHLAExpandPatterns(RewritePatternSet &patterns);

/// The one-token segments of attention op `op` under its monoid (with
/// LinSimp's key features), built at `b`'s insertion point; on failure
/// `reason` says why and nothing is built.
FailureOr<SegmentOp> buildAttentionSegments(OpBuilder &b,
                                            AttentionOpInterface op,
                                            std::string &reason);

/// Asserts at run time that every rate of `rates` (an attention op's
/// `head_decay`) lies in (0, 1]: a reduction over the rates, then a
/// cf.assert whose message names the operand (a rate out of range would
/// make log γ NaN or the state grow, silently).
void emitHeadDecayCheck(OpBuilder &b, Location loc, Value rates);

#define GEN_PASS_REGISTRATION
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_TRANSFORMS_PASSES_H
