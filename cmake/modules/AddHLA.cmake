#===- AddHLA.cmake - helpers for hla libraries ---------------*- cmake -*-===//
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Thin wrappers over AddMLIR that record every hla library in a global
# property, so tools and the C API can link "all of hla" without listing it,
# and install it into hla's own export set (HLATargets, read by
# lib/cmake/hla/HLAConfig.cmake) rather than MLIR's.
#===---------------------------------------------------------------------===//

# Installs target `name` into lib/ (bin/ for executables) as part of the
# HLATargets export set; users of the installed target get the installed
# include directory.
function(hla_install_target name)
  target_include_directories(${name} INTERFACE $<INSTALL_INTERFACE:include>)
  install(TARGETS ${name} EXPORT HLATargets
    ARCHIVE DESTINATION lib
    LIBRARY DESTINATION lib
    RUNTIME DESTINATION bin)
endfunction()

function(add_hla_dialect_library name)
  set_property(GLOBAL APPEND PROPERTY HLA_ALL_LIBS ${name})
  add_mlir_dialect_library(${ARGV} DISABLE_INSTALL)
  hla_install_target(${name})
endfunction()

function(add_hla_library name)
  set_property(GLOBAL APPEND PROPERTY HLA_ALL_LIBS ${name})
  add_mlir_library(${ARGV} DISABLE_INSTALL)
  hla_install_target(${name})
endfunction()
