// RUN: hla-opt %s --hla-derive-vjp --hla-chunk="chunk-size=4 bf16-products=true" | FileCheck %s
// RUN: hla-opt %s --hla-derive-vjp --hla-chunk="chunk-size=4" | FileCheck %s --check-prefix=UNSPLIT

// Tests that hla-chunk's bf16-products splits the matrix products of
// LinSimp's backward for a bf16 graph into products of bf16-exact parts
// (tensor cores round their operands to bf16, and the features'
// cotangents are differences of nearly equal sums): Ω's f32 copy is split
// once, ahead of both passes, into hi = f32(bf16(Ω)) and lo = Ω − hi; the
// keys' projection k·Ωᵀ in the pass saving the states becomes
// k_lo·hiᵀ + k_hi·loᵀ + k_hi·hiᵀ, each product accumulating into the next.
// Without the option the products stay whole.

// CHECK-LABEL: func.func @main
// CHECK: %[[OMEGA:.+]] = linalg.generic {{.+}} ins(%{{.+}} : tensor<8x4xbf16>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK: %[[R16:.+]] = linalg.generic {{.+}} ins(%[[OMEGA]] : tensor<8x4xf32>) outs(%{{.+}} : tensor<8x4xbf16>)
// CHECK:   arith.truncf %{{.+}} : f32 to bf16
// CHECK: %[[HI:.+]] = linalg.generic {{.+}} ins(%[[R16]] : tensor<8x4xbf16>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK: %[[LO:.+]] = linalg.generic {{.+}} ins(%[[OMEGA]], %[[HI]] : tensor<8x4xf32>, tensor<8x4xf32>)
// CHECK:   arith.subf
// CHECK-NOT: ins(%[[OMEGA]] : tensor<8x4xf32>) outs(%{{.+}} : tensor<8x4xbf16>)
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK:     %[[P1:.+]] = linalg.generic {{.+}}"reduction"]} ins(%[[KLO:.+]], %[[HI]] : tensor<4x4xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK:     %[[P2:.+]] = linalg.generic {{.+}}"reduction"]} ins(%[[KHI:.+]], %[[LO]] : tensor<4x4xf32>, tensor<8x4xf32>) outs(%[[P1]] : tensor<4x8xf32>)
// CHECK:     linalg.generic {{.+}}"reduction"]} ins(%[[KHI]], %[[HI]] : tensor<4x4xf32>, tensor<8x4xf32>) outs(%[[P2]] : tensor<4x8xf32>)
// CHECK: scf.forall

// UNSPLIT-LABEL: func.func @main
// UNSPLIT-NOT: arith.truncf %{{.+}} : f32 to bf16
// UNSPLIT: scf.forall
func.func @main(%q: tensor<1x11x2x4xbf16>, %k: tensor<1x11x2x4xbf16>, %v: tensor<1x11x2x3xbf16>, %r: tensor<1x11x2x4xbf16>, %u: tensor<1x11x2x3xbf16>, %omega: tensor<8x4xbf16>) -> tensor<1x11x2x3xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 3 : i64} : (tensor<1x11x2x4xbf16>, tensor<1x11x2x4xbf16>, tensor<1x11x2x3xbf16>, tensor<1x11x2x4xbf16>, tensor<1x11x2x3xbf16>, tensor<8x4xbf16>) -> tensor<1x11x2x3xbf16>
  return %o : tensor<1x11x2x3xbf16>
}
