//===- HLADialect.h - hla dialect ---------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLADIALECT_H
#define HLA_DIALECT_HLA_IR_HLADIALECT_H

#include "hla/Dialect/HLA/IR/HLAMonoid.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

#include "hla/Dialect/HLA/IR/HLAOpsDialect.h.inc"

#endif // HLA_DIALECT_HLA_IR_HLADIALECT_H
