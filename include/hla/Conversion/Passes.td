//===- Passes.td - hla conversion passes -------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_CONVERSION_PASSES_TD
#define HLA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertHLAToLinalgPass : Pass<"convert-hla-to-linalg"> {
  let summary = "Lower hla.combine to linalg ops on tensors";
  let description = [{
    Evaluates every `hla.combine` with linalg ops: each result component is
    the sum of its rule's terms, each term a batched matrix chain over the
    leading dimensions (matrix products, matrix-vector products, outer and
    inner products of vectors, and broadcast scalars such as decays).
    Results nobody reads become dead code. `hla.feature_map` becomes two
    reductions (the projections Ω z and the squared norms) and an
    elementwise `m^-½ exp(·)`.

    ```mlir
    %S, %C = hla.combine #m(%Sa, %Ca), (%Sb, %Cb) : ...
    // becomes, for C = C.a + C.b and S = S.a + S.b,
    %C = linalg.generic {...} ins(%Ca, %Cb ...)   // elementwise add
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // HLA_CONVERSION_PASSES_TD
