//===- PassOptions.td - Options several hla passes take ----*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// An option that more than one pass takes is declared once here, so that it
// has one name, one type, one default and one description in every pass;
// mode options take their spellings from hla/Dialect/HLA/Modes.h.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_PASSOPTIONS_TD
#define HLA_DIALECT_HLA_PASSOPTIONS_TD

include "mlir/Pass/PassBase.td"

def HLA_ChunkSizeOption : Option<"chunkSize", "chunk-size", "int64_t", "64",
                                 "Tokens per chunk">;

def HLA_MaxSharedMemoryOption
    : Option<"maxSharedMemory", "max-shared-memory", "int64_t", "232448",
             "Dynamic shared memory a thread block may use (bytes; the "
             "H200's 227 KiB): a loop whose copies and buffers need more "
             "does not get it">;

/// An option of enum type `mode` (hla/Dialect/HLA/Modes.h), spelled as
/// modeSpellings<mode>() spells it.
class HLA_ModeOption<string varName, string argName, string mode,
                     string default, string description>
    : Option<varName, argName, "::mlir::hla::" # mode,
             "::mlir::hla::" # mode # "::" # default, description,
             "::mlir::hla::modeValues<::mlir::hla::" # mode # ">()">;

#endif // HLA_DIALECT_HLA_PASSOPTIONS_TD
