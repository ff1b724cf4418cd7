//===- RunTimeChecks.h - Checks of operand values at run time ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Some rules on an op's operands hold only for their values (packed
// sequences' offsets, decay rates): they are checked where the program
// runs, before anything reads them. One reduction over the operands (on the
// GPU a kernel of its own, where they are device memory) gives a code with
// one bit per broken rule; the host reads that scalar and asserts each rule
// on it with its message (cf.assert, which the runtime reports as an
// error). Kernels then read the operands unchecked: an assertion inside a
// kernel would serialize its wgmma (ptxas C7510), and a failed one would
// poison the CUDA context.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_RUNTIMECHECKS_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_RUNTIMECHECKS_H

#include "mlir/IR/Builders.h"

namespace mlir::hla {

/// A rule: its bit in the code, and the message when it is broken.
struct RunTimeRule {
  int64_t bit;
  llvm::StringRef message;
};

/// Reduces the 1-D `operands` (read at the same index) with `brokenBits`,
/// which returns the i64 bits of the rules element `index` breaks (OR-ed
/// over the elements), then asserts each of `rules` on the code.
void emitRunTimeChecks(
    OpBuilder &b, Location loc, ValueRange operands,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange elements,
                             Value index)>
        brokenBits,
    llvm::ArrayRef<RunTimeRule> rules);

} // namespace mlir::hla

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_RUNTIMECHECKS_H
