// RUN: hla-opt %s --hla-derive-vjp --hla-chunk=chunk-size=16 --convert-hla-to-linalg --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s

// Tests that KDA's backward reverses each chunk's triangular solve by its
// closed form (ClosedFormVjp): N = (I + L)^-1 gives L the cotangent
// −Nᵀ dN Nᵀ, two products, instead of the doubling's four levels reversed
// op by op (two products a level forward; every level's N kept alive). The
// pass saving the states: 13 contractions. The reverse pass (the chunk's
// forward again, then its reverse) at c = d = 16: 17 contractions and 27
// other reductions; reversing the doubling op by op gave 15 and 41
// (2026-12-06).
// CHECK: remark: hla-report-chunk-work: 13 contractions
// CHECK: remark: hla-report-chunk-work: 17 contractions (139264 FLOP), 0 matrix-vector products, 27 other reductions
func.func @main(%q: tensor<1x32x1x16xf32>, %k: tensor<1x32x1x16xf32>, %v: tensor<1x32x1x16xf32>, %g: tensor<1x32x1x16xf32>, %beta: tensor<1x32x1xf32>) -> tensor<1x32x1x16xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.25 : f64} : (tensor<1x32x1x16xf32>, tensor<1x32x1x16xf32>, tensor<1x32x1x16xf32>, tensor<1x32x1x16xf32>, tensor<1x32x1xf32>) -> tensor<1x32x1x16xf32>
  return %o : tensor<1x32x1x16xf32>
}
