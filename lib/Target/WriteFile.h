//===- WriteFile.h - A file of bytes, or why not ----------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_TARGET_WRITEFILE_H
#define HLA_LIB_TARGET_WRITEFILE_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::hla {

/// Writes `data` to `path` (artefacts, PTX, ptxas logs); on failure `error`
/// says which file and why.
inline LogicalResult writeFile(llvm::StringRef path, llvm::StringRef data,
                               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  out << data;
  return success();
}

} // namespace mlir::hla

#endif // HLA_LIB_TARGET_WRITEFILE_H
