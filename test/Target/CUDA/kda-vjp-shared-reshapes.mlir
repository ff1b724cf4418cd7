// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests that reshapes of chunk buffers moved to shared memory follow their
// source's strides: KDA's reverse pass expands its f32 tiles into blocks
// of 16 rows (d = 16, whose shared-memory rows are padded), which failed
// with "'memref.expand_shape' op expected expanded type to be
// 'memref<2x16x16xf32, strided<[256, 16, 1], offset: ?>, ...>'".
// CHECK: remark: hla.cuda_options = "{{.*}}generator=phases{{.*}}"
// CHECK-NOT: error
func.func @main(%q: tensor<2x100x2x16xf32>, %k: tensor<2x100x2x16xf32>, %v: tensor<2x100x2x16xf32>, %g: tensor<2x100x2x16xf32>, %beta: tensor<2x100x2xf32>) -> tensor<2x100x2x16xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.25 : f64} : (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2xf32>) -> tensor<2x100x2x16xf32>
  return %o : tensor<2x100x2x16xf32>
}
