//===- HLAToLinalg.h - hla algebra ops as linalg ops ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rewrites of convert-hla-to-linalg, one op at a time, for passes that
// need an algebra op's linalg form early (to differentiate it).
//
//===----------------------------------------------------------------------===//

#ifndef HLA_CONVERSION_HLATOLINALG_H
#define HLA_CONVERSION_HLATOLINALG_H

#include "hla/Dialect/HLA/IR/HLAOps.h"

namespace mlir::hla {

/// Replaces `op` by linalg generics computing its used results (batched
/// over its leading dimensions) and erases it. Returns what replaced each
/// result (null for the unused ones).
llvm::SmallVector<Value> lowerCombineToLinalg(CombineOp op);

} // namespace mlir::hla

#endif // HLA_CONVERSION_HLATOLINALG_H
