// Q5b: remaining runtime entry points: events (multi-token joins), cluster launch,
// set_default_device, host_register, memset16.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: memref<256xf16>) kernel { gpu.return }
  }
  func.func @more(%h: memref<256xf16>, %v: f16) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %dev = arith.constant 0 : i32
    gpu.set_default_device %dev
    %u = memref.cast %h : memref<256xf16> to memref<*xf16>
    gpu.host_register %u : memref<*xf16>
    %a0 = gpu.wait async
    %b0 = gpu.wait async
    %d:2 = gpu.alloc async [%a0] () : memref<256xf16>
    %m = gpu.memset async [%b0] %d#0, %v : memref<256xf16>, f16
    %j = gpu.wait async [%d#1, %m]
    %t = gpu.launch_func async [%j] @kernels::@k clusters in (%c2, %c1, %c1) blocks in (%c2, %c1, %c1) threads in (%c128, %c1, %c1) args(%d#0 : memref<256xf16>)
    gpu.wait [%t]
    return
  }
}
