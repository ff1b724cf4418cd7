//===- HLADialect.cpp - hla dialect -------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::hla;

#include "hla/Dialect/HLA/IR/HLAOpsDialect.cpp.inc"

namespace {
/// Gives every monoid an alias named after it (`#hla2 = #hla.monoid<...>`),
/// so that algebra ops stay readable and a monoid is printed once per file.
struct HLAOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (auto monoid = dyn_cast<MonoidAttr>(attr)) {
      os << monoid.getSpec().name;
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void HLADialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "hla/Dialect/HLA/IR/HLAOps.cpp.inc"
      >();
  addInterfaces<HLAOpAsmInterface>();
}
