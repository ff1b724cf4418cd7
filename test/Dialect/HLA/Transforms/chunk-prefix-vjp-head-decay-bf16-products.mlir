// RUN: hla-opt %s --hla-chunk="chunk-size=4 bf16-products=true" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that with bf16-products a bf16 op's decay-rate gradient pass (the
// last pass, parallel over (batch entry, head, chunk): each chunk's forward
// program reversed with respect to the log rate) splits its matrix
// products into products of bf16-exact parts: an operand X as
// hi = f32(bf16(X)) and lo = X − hi, and A·B as A_lo·B_hi + A_hi·B_lo +
// A_hi·B_hi, each product accumulating into the next.
// CHECK-LABEL: func.func @linear
// CHECK:       scf.forall ({{.*}}) in (1, 2, 3) {{.*}} -> (tensor<1x10x2x4xbf16>, tensor<1x10x2x4xbf16>, tensor<1x10x2x3xbf16>)
// CHECK:       scf.forall ({{.*}}) in (1, 2, 3) {{.*}} -> (tensor<1x2x3xf32>)
// CHECK:         %[[R16:.+]] = linalg.generic {{.+}} ins(%[[X:.+]] : tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xbf16>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.truncf %{{.+}} : f32 to bf16
// CHECK:         %[[HI:.+]] = linalg.generic {{.+}} ins(%[[R16]] : tensor<4x4xbf16>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:         %[[LO:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[HI]] : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.subf
// CHECK:         %[[P1:.+]] = linalg.generic {{.+}}"reduction"]} ins(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:         %[[P2:.+]] = linalg.generic {{.+}}"reduction"]} ins(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[P1]] : tensor<4x4xf32>)
// CHECK:         linalg.generic {{.+}}"reduction"]} ins(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[P2]] : tensor<4x4xf32>)
// CHECK:         scf.forall.in_parallel
func.func @linear(%q: tensor<1x10x2x4xbf16>, %k: tensor<1x10x2x4xbf16>, %v: tensor<1x10x2x3xbf16>, %g: tensor<1x10x2x3xbf16>, %rates: tensor<2xf32>) -> (tensor<1x10x2x4xbf16>, tensor<1x10x2x4xbf16>, tensor<1x10x2x3xbf16>, tensor<2xf32>) {
  %dq, %dk, %dv, %dr = hla.prefix_vjp #la(%q, %k, %v) cotangent(%g) head_params(%rates) : (tensor<1x10x2x4xbf16>, tensor<1x10x2x4xbf16>, tensor<1x10x2x3xbf16>, tensor<1x10x2x3xbf16>, tensor<2xf32>) -> (tensor<1x10x2x4xbf16>, tensor<1x10x2x4xbf16>, tensor<1x10x2x3xbf16>, tensor<2xf32>)
  return %dq, %dk, %dv, %dr : tensor<1x10x2x4xbf16>, tensor<1x10x2x4xbf16>, tensor<1x10x2x3xbf16>, tensor<2xf32>
}
