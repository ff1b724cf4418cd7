//===- HLAAttrs.cpp - hla attributes ------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::hla;

#include "hla/Dialect/HLA/IR/HLAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "hla/Dialect/HLA/IR/HLAAttrs.cpp.inc"

void HLADialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hla/Dialect/HLA/IR/HLAAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MonoidAttr
//===----------------------------------------------------------------------===//

Attribute MonoidAttr::parse(AsmParser &parser, Type) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  FailureOr<MonoidSpec> spec = MonoidSpec::parse(parser);
  if (failed(spec) || parser.parseGreater())
    return {};
  return parser.getChecked<MonoidAttr>(loc, parser.getContext(),
                                       std::move(*spec));
}

void MonoidAttr::print(AsmPrinter &printer) const {
  printer << "<";
  getSpec().print(printer);
  printer << ">";
}

LogicalResult MonoidAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 MonoidSpec spec) {
  return spec.verify(emitError);
}
