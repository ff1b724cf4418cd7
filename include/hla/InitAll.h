//===- InitAll.h - Register everything hla provides ---------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_INITALL_H
#define HLA_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::hla {

/// Adds the hla dialect and the upstream dialects hla's passes create or
/// consume to `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers hla's passes and pass pipelines with the global registry.
void registerAllPasses();

} // namespace mlir::hla

#endif // HLA_INITALL_H
