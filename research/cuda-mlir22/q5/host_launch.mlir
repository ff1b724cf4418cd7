// Q5: host program using the gpu dialect runtime ops; lowered by gpu-to-llvm to mgpu* calls.
!tmA = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<4096xf32>, %tm: !llvm.ptr, %s: f32) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c128 = arith.constant 128 : index
      %o = arith.muli %bid, %c128 : index
      %i = arith.addi %o, %tid : index
      %v = memref.load %x[%i] : memref<4096xf32>
      %r = arith.mulf %v, %s : f32
      memref.store %r, %x[%i] : memref<4096xf32>
      gpu.return
    }
  }
  func.func @run(%host: memref<4096xf32>, %hA: memref<64x64xbf16>, %s: f32) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %smem = arith.constant 100000 : i32
    %t0 = gpu.wait async
    %d:2 = gpu.alloc async [%t0] () : memref<4096xf32>
    %t1 = gpu.memcpy async [%d#1] %d#0, %host : memref<4096xf32>, memref<4096xf32>
    %dA:2 = gpu.alloc async [%t1] () : memref<64x64xbf16>
    %t2 = gpu.memset async [%dA#1] %d#0, %s : memref<4096xf32>, f32
    %u = memref.cast %dA#0 : memref<64x64xbf16> to memref<*xbf16>
    %tm = nvgpu.tma.create.descriptor %u box[%c64, %c64] : memref<*xbf16> -> !tmA
    %tmp = builtin.unrealized_conversion_cast %tm : !tmA to !llvm.ptr
    %t3 = gpu.launch_func async [%t2] @kernels::@scale blocks in (%c32, %c1, %c1) threads in (%c128, %c1, %c1)
        dynamic_shared_memory_size %smem args(%d#0 : memref<4096xf32>, %tmp : !llvm.ptr, %s : f32)
    %t4 = gpu.memcpy async [%t3] %host, %d#0 : memref<4096xf32>, memref<4096xf32>
    %t5 = gpu.dealloc async [%t4] %d#0 : memref<4096xf32>
    gpu.wait [%t5]
    return
  }
}
