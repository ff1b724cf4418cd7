// Q1: minimal gpu.module + gpu.func kernel (arith/memref/vector/nvvm)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%a: f32, %x: memref<?xf32>, %y: memref<?xf32>, %n: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %t = arith.muli %bid, %bdim : index
      %c4 = arith.constant 4 : index
      %i0 = arith.addi %t, %tid : index
      %i = arith.muli %i0, %c4 : index
      %ok = arith.cmpi slt, %i, %n : index
      scf.if %ok {
        %vx = vector.load %x[%i] : memref<?xf32>, vector<4xf32>
        %vy = vector.load %y[%i] : memref<?xf32>, vector<4xf32>
        %va = vector.broadcast %a : f32 to vector<4xf32>
        %r = vector.fma %va, %vx, %vy : vector<4xf32>
        vector.store %r, %y[%i] : memref<?xf32>, vector<4xf32>
      }
      %w = nvvm.read.ptx.sreg.warpid : i32
      gpu.return
    }
  }
}
