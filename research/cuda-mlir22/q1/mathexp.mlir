// Q1b: math ops -> __nv_* libdevice calls; does gpu-module-to-binary link libdevice?
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @expk(%x: memref<128xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %e = math.exp %v : f32
      %t = math.tanh %e : f32
      memref.store %t, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
}
