// RUN: hla-opt %s "--hla-fission-chunk-passes=max-live-bytes=2048" | FileCheck %s
// RUN: hla-opt %s "--hla-fission-chunk-passes=max-live-bytes=2048 bf16-operands" | FileCheck %s --check-prefix=BF16
// RUN: hla-opt %s "--hla-fission-chunk-passes=max-live-bytes=2048 report" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Tests hla-fission-chunk-passes: a pass parallel over (sequence, chunk)
// whose 16 x 16 f32 tiles (1,024 bytes each) would be alive three at once
// is cut where a third would join: the first stage computes P1 and P2 and
// stacks both (rows [c * 16, c * 16 + 16) of [2, 64, 16]); the second reads
// them back, recomputes exp(P1) (an elementwise map of one tile) and the
// token tile, and writes the output. With bf16-operands, P2 (read later
// only as a product's input) is stacked in bf16; P1, read by exp, in f32.

// REPORT: remark: hla-fission-chunk-passes: 2 stages: 2 products (2048 live bytes), 1 products (3072 live bytes); 2 tiles stacked (0 in bf16), 2048 bytes a chunk

// CHECK-LABEL: func.func @three_products
// CHECK: %[[S:.+]]:2 = scf.forall (%[[P:.+]], %[[C:.+]]) in (2, 4) shared_outs(%[[S1:.+]] = %{{.+}}, %[[S2:.+]] = %{{.+}}) -> (tensor<2x64x16xf32>, tensor<2x64x16xf32>)
// CHECK: %[[P1:.+]] = linalg.matmul
// CHECK: %[[P2:.+]] = linalg.matmul ins(%[[P1]],
// CHECK-NOT: linalg.matmul
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[P1]] into %[[S1]][%[[P]], %{{.+}}, 0] [1, 16, 16] [1, 1, 1]
// CHECK-NEXT: tensor.parallel_insert_slice %[[P2]] into %[[S2]][%[[P]], %{{.+}}, 0] [1, 16, 16] [1, 1, 1]
// CHECK: %[[R:.+]] = scf.forall (%[[P_:.+]], %[[C_:.+]]) in (2, 4) shared_outs(%[[O:.+]] = %{{.+}}) -> (tensor<2x64x16xf32>)
// CHECK-DAG: %[[R1:.+]] = tensor.extract_slice %[[S]]#0[%[[P_]], %{{.+}}, 0] [1, 16, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<16x16xf32>
// CHECK-DAG: %[[R2:.+]] = tensor.extract_slice %[[S]]#1[%[[P_]], %{{.+}}, 0] [1, 16, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<16x16xf32>
// CHECK: %[[E:.+]] = linalg.generic {{.+}} ins(%[[R1]] : tensor<16x16xf32>)
// CHECK: math.exp
// CHECK: %[[P3:.+]] = linalg.matmul ins(%[[R2]], %[[E]] :
// CHECK: tensor.parallel_insert_slice %[[P3]] into %[[O]]
// CHECK: return %[[R]]

// BF16-LABEL: func.func @three_products
// BF16: scf.forall {{.+}} -> (tensor<2x64x16xf32>, tensor<2x64x16xbf16>)
// BF16: arith.truncf
// BF16: scf.forall.in_parallel
// BF16: scf.forall
// BF16: tensor.extract_slice {{.+}} : tensor<2x64x16xbf16> to tensor<16x16xbf16>
// BF16: arith.extf
func.func @three_products(%x: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x16xf32>
  %r = scf.forall (%p, %c) in (2, 4) shared_outs(%out = %e) -> (tensor<2x64x16xf32>) {
    %row = arith.muli %c, %c16 : index
    %t = tensor.extract_slice %x[%p, %row, 0] [1, 16, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<16x16xf32>
    %z = tensor.empty() : tensor<16x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
    %p1 = linalg.matmul ins(%t, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    %p2 = linalg.matmul ins(%p1, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    %x1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<16x16xf32>) outs(%z : tensor<16x16xf32>) {
    ^bb0(%in: f32, %o: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<16x16xf32>
    %p3 = linalg.matmul ins(%p2, %x1 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p3 into %out[%p, %row, 0] [1, 16, 16] [1, 1, 1] : tensor<16x16xf32> into tensor<2x64x16xf32>
    }
  }
  return %r : tensor<2x64x16xf32>
}

// Within the budget: left as it is.
// CHECK-LABEL: func.func @within_budget
// CHECK: scf.forall
// CHECK-NOT: scf.forall (
// CHECK: return
func.func @within_budget(%x: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x16xf32>
  %r = scf.forall (%p, %c) in (2, 4) shared_outs(%out = %e) -> (tensor<2x64x16xf32>) {
    %row = arith.muli %c, %c16 : index
    %t = tensor.extract_slice %x[%p, %row, 0] [1, 16, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<16x16xf32>
    %z = tensor.empty() : tensor<16x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
    %p1 = linalg.matmul ins(%t, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    %p2 = linalg.matmul ins(%p1, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p2 into %out[%p, %row, 0] [1, 16, 16] [1, 1, 1] : tensor<16x16xf32> into tensor<2x64x16xf32>
    }
  }
  return %r : tensor<2x64x16xf32>
}

// A pass with a loop over chunks (a state carried from chunk to chunk) is
// not parallel over chunks: left as it is.
// CHECK-LABEL: func.func @chunk_loop
// CHECK: scf.forall
// CHECK: scf.for
// CHECK-NOT: scf.forall (
// CHECK: return
func.func @chunk_loop(%x: tensor<2x64x16xf32>) -> tensor<2x16x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x16xf32>
  %r = scf.forall (%p) in (2) shared_outs(%out = %e) -> (tensor<2x16x16xf32>) {
    %z = tensor.empty() : tensor<16x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
    %s = scf.for %c = %c0 to %c4 step %c1 iter_args(%acc = %f) -> (tensor<16x16xf32>) {
      %row = arith.muli %c, %c16 : index
      %t = tensor.extract_slice %x[%p, %row, 0] [1, 16, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<16x16xf32>
      %p1 = linalg.matmul ins(%t, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
      %p2 = linalg.matmul ins(%p1, %p1 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
      %p3 = linalg.matmul ins(%p2, %acc : tensor<16x16xf32>, tensor<16x16xf32>) outs(%p1 : tensor<16x16xf32>) -> tensor<16x16xf32>
      scf.yield %p3 : tensor<16x16xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %out[%p, 0, 0] [1, 16, 16] [1, 1, 1] : tensor<16x16xf32> into tensor<2x16x16xf32>
    }
  }
  return %r : tensor<2x16x16xf32>
}
