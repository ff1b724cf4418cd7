//===- VerifyLowered.cpp - No hla op after the lowering ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-verify-lowered: no hla op survives the hla-level lowering; each one
// left is reported where it is.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#define DEBUG_TYPE "hla-verify-lowered"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAVERIFYLOWEREDPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLAVerifyLoweredPass
    : public hla::impl::HLAVerifyLoweredPassBase<HLAVerifyLoweredPass> {
  using HLAVerifyLoweredPassBase::HLAVerifyLoweredPassBase;

  void runOnOperation() override {
    bool failed = false;
    getOperation()->walk([&](Operation *op) {
      if (op == getOperation() || !isa<HLADialect>(op->getDialect()))
        return;
      llvm::StringRef reason = "no lowering takes it in this form";
      op->emitError() << "'" << op->getName()
                      << "' was not lowered by the hla code-generation "
                         "pipeline: "
                      << reason;
      failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
