//===- HLAInterfaces.td - hla op interfaces ----------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAINTERFACES_TD
#define HLA_DIALECT_HLA_IR_HLAINTERFACES_TD

include "mlir/IR/OpBase.td"

def HLA_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::mlir::hla";
  let description = [{
    The common shape of every attention op: `[B, T, H, D]` query, key and
    value, an optional initial state and packed-sequence offsets, the output
    and the optional final state. Lowering passes and verifiers use it to
    treat the six attention ops uniformly.
  }];
  let methods = [
    InterfaceMethod<"The query tensor [B, T, H_q, d].",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getQuery">,
    InterfaceMethod<"The key tensor [B, T, H_kv, d].",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getKey">,
    InterfaceMethod<"The value tensor [B, T, H_kv, dv].",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getValue">,
    InterfaceMethod<"The initial state operands (empty when absent).",
      "::mlir::Operation::operand_range", "getInitialState">,
    InterfaceMethod<"The packed-sequence offsets, or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getCuSeqlens">,
    InterfaceMethod<"The attention output [B, T, H_q, dv].",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getOutput">,
    InterfaceMethod<"The final state results (empty when absent).",
      "::mlir::Operation::result_range", "getFinalState">,
    InterfaceMethod<[{
        The query scale the op applies: the `scale` attribute, or d^-1/2
        when it is absent.
      }], "double", "getEffectiveScale", (ins), [{}], [{
        if (::mlir::FloatAttr s = $_op.getScaleAttr())
          return s.getValueAsDouble();
        int64_t d = $_op.getQuery().getType().getDimSize(3);
        return ::mlir::ShapedType::isDynamic(d) ? 1.0
                                                : 1.0 / ::std::sqrt(double(d));
      }]>,
  ];
}

#endif // HLA_DIALECT_HLA_IR_HLAINTERFACES_TD
