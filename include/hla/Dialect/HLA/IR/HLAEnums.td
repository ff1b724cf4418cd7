//===- HLAEnums.td - hla enum attributes -------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAENUMS_TD
#define HLA_DIALECT_HLA_IR_HLAENUMS_TD

include "mlir/IR/EnumAttr.td"
include "hla/Dialect/HLA/IR/HLADialect.td"

def HLA_FeatureKernel : I32EnumAttr<"FeatureKernel",
    "how LinSimp evaluates exp((q ⊙ r)·k)", [
      I32EnumAttrCase<"favor", 0>,
      I32EnumAttrCase<"exact", 1>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::hla";
}

def HLA_FeatureKernelAttr : EnumAttr<HLA_Dialect, HLA_FeatureKernel, "kernel"> {
  let summary = "LinSimp kernel: positive random features or the exact softmax";
  let assemblyFormat = "`<` $value `>`";
}

#endif // HLA_DIALECT_HLA_IR_HLAENUMS_TD
