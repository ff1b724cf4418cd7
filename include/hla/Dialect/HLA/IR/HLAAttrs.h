//===- HLAAttrs.h - hla attributes --------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAATTRS_H
#define HLA_DIALECT_HLA_IR_HLAATTRS_H

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/IR/HLAMonoid.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "hla/Dialect/HLA/IR/HLAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hla/Dialect/HLA/IR/HLAAttrs.h.inc"

#endif // HLA_DIALECT_HLA_IR_HLAATTRS_H
