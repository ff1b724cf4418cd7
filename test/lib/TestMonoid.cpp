//===- TestMonoid.cpp - Test passes for MonoidSpec ---------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// test-hla-monoid: exposes MonoidSpec's derived structure to FileCheck. For
// every operation with an `hla.monoid` attribute it attaches
//   hla.carried    the carried components (getCarryComponents),
//   hla.simplified the monoid after simplify().
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::hla;

namespace {
struct TestMonoidPass
    : public PassWrapper<TestMonoidPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestMonoidPass)

  StringRef getArgument() const final { return "test-hla-monoid"; }
  StringRef getDescription() const final {
    return "Attach a monoid's carried components and simplified form";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<HLADialect>();
  }

  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      auto monoid = op->getAttrOfType<MonoidAttr>("hla.monoid");
      if (!monoid)
        return;
      Builder builder(op->getContext());
      const MonoidSpec &spec = monoid.getSpec();
      SmallVector<Attribute> carried;
      for (unsigned c : spec.getCarryComponents())
        carried.push_back(builder.getStringAttr(spec.components[c].name));
      op->setAttr("hla.carried", builder.getArrayAttr(carried));
      op->setAttr("hla.simplified",
                  MonoidAttr::get(op->getContext(), spec.simplify()));
    });
  }
};
} // namespace

namespace mlir::hla::test {
void registerTestMonoidPass() { PassRegistration<TestMonoidPass>(); }
} // namespace mlir::hla::test
