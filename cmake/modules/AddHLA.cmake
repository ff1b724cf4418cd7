#===- AddHLA.cmake - helpers for hla libraries ---------------*- cmake -*-===//
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Thin wrappers over AddMLIR that record every hla library in a global
# property, so tools and the C API can link "all of hla" without listing it.
#===---------------------------------------------------------------------===//

function(add_hla_dialect_library name)
  set_property(GLOBAL APPEND PROPERTY HLA_ALL_LIBS ${name})
  add_mlir_dialect_library(${ARGV})
endfunction()

function(add_hla_library name)
  set_property(GLOBAL APPEND PROPERTY HLA_ALL_LIBS ${name})
  add_mlir_library(${ARGV})
endfunction()
