// Q4a: does nvgpu.mma.sync accept/lower bf16 in MLIR 22?
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf32>, %o: memref<2x2xf32>) kernel {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %c0 = arith.constant 0 : index
      vector.store %d, %o[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
      gpu.return
    }
  }
}
