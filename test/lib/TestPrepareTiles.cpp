//===- TestPrepareTiles.cpp - Register tiles' loop rewrites -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// test-hla-prepare-register-tiles: applies one of the rewrites that
// hla-gpu-lower-register-tiles makes on its copy of a loop
// (PrepareTiles.h) to every scf.forall of the module, for FileCheck tests
// of each.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/PrepareTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct TestPrepareTilesPass
    : public PassWrapper<TestPrepareTilesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrepareTilesPass)

  TestPrepareTilesPass() = default;
  TestPrepareTilesPass(const TestPrepareTilesPass &pass) : PassWrapper(pass) {}

  StringRef getArgument() const final {
    return "test-hla-prepare-register-tiles";
  }
  StringRef getDescription() const final {
    return "Rewrite each scf.forall as register tiles' copy of it is";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  }

  Option<std::string> rewrite{
      *this, "rewrite",
      llvm::cl::desc("flatten (flattenBlockedTiles), rows "
                     "(insertedRowsAsSelects) or split "
                     "(splitElementwiseResults)"),
      llvm::cl::init("flatten")};

  void runOnOperation() override {
    if (rewrite != "flatten" && rewrite != "rows" && rewrite != "split") {
      getOperation().emitError()
          << "test-hla-prepare-register-tiles: rewrite must be flatten, rows "
             "or split, got '"
          << rewrite << "'";
      return signalPassFailure();
    }
    getOperation().walk([&](scf::ForallOp forall) {
      if (rewrite == "flatten") {
        if (!hla::gpumap::flattenBlockedTiles(forall))
          forall.emitRemark("blocked tiles kept");
      } else if (rewrite == "rows") {
        hla::gpumap::insertedRowsAsSelects(forall);
      } else {
        hla::gpumap::splitElementwiseResults(forall);
      }
    });
  }
};

} // namespace

namespace mlir::hla::test {
void registerTestPrepareTilesPass() {
  PassRegistration<TestPrepareTilesPass>();
}
} // namespace mlir::hla::test
