// RUN: hla-opt %s --hla-gpu-queue-launches | FileCheck %s

// Tests hla-gpu-queue-launches: each synchronous launch becomes an
// asynchronous one on hla's stream (a `gpu.wait async` of its own, which
// the runtime answers with the call's one stream), attributes and
// operands kept, and nothing waits for it; a launch already asynchronous
// is left as it is. (test/Target/CUDA/queued-launches.mlir: no host
// synchronisation is left in an artefact's calls.)

// CHECK-LABEL: func.func @two_kernels
// CHECK-SAME: (%[[N:[^:]+]]: index, %[[BUF:[^:]+]]: memref<8xf32>)
// CHECK: %[[S0:.+]] = gpu.wait async
// CHECK-NEXT: %{{.+}} = gpu.launch_func async [%[[S0]]] @kernels::@first blocks in (%[[N]], %{{.+}}, %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) args(%[[BUF]] : memref<8xf32>) {hla.note = "kept"}
// CHECK: %[[S1:.+]] = gpu.wait async
// CHECK-NEXT: %{{.+}} = gpu.launch_func async [%[[S1]]] @kernels::@second
// CHECK: %[[S2:.+]] = gpu.wait async
// CHECK-NEXT: %{{.+}} = gpu.launch_func async [%[[S2]]] @kernels::@second
// CHECK-NOT: gpu.wait [
// CHECK: return

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @first(%b: memref<8xf32>) kernel {
      gpu.return
    }
    gpu.func @second(%b: memref<8xf32>) kernel {
      gpu.return
    }
  }
  func.func @two_kernels(%n: index, %buf: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@first blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>) {hla.note = "kept"}
    gpu.launch_func @kernels::@second blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    %t = gpu.wait async
    %done = gpu.launch_func async [%t] @kernels::@second blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    return
  }
}
