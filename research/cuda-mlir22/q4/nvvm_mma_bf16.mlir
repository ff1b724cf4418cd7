// Q4b: one warp computes D(16x8,f32) = A(16x16,bf16, row-major) * B(16x8,bf16) + C
// with nvvm.mma.sync m16n8k16 (bf16 operands packed two per i32). B is given as Bt (8x16, row-major = "col" B).
// Fragment layout (PTX ISA, m16n8k16 .bf16): g = lane/4, t = lane%4
//   a0=A[g][2t:2t+2] a1=A[g+8][2t:2t+2] a2=A[g][2t+8:2t+10] a3=A[g+8][2t+8:2t+10]
//   b0=Bt[g][2t:2t+2] b1=Bt[g][2t+8:2t+10]
//   d0,d1=D[g][2t],D[g][2t+1]  d2,d3=D[g+8][2t],D[g+8][2t+1]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @ld2(%m: memref<?x16xbf16>, %r: index, %c: index) -> i32 {
      %v = vector.load %m[%r, %c] {alignment = 4} : memref<?x16xbf16>, vector<2xbf16>
      %w = vector.bitcast %v : vector<2xbf16> to vector<1xi32>
      %x = vector.extract %w[0] : i32 from vector<1xi32>
      return %x : i32
    }
    gpu.func @mma_bf16_m16n8k16(%A: memref<?x16xbf16>, %Bt: memref<?x16xbf16>, %C: memref<16x8xf32>, %D: memref<16x8xf32>) kernel
        attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %lane = gpu.thread_id x
      %g = arith.divui %lane, %c4 : index
      %t = arith.remui %lane, %c4 : index
      %g8 = arith.addi %g, %c8 : index
      %k0 = arith.muli %t, %c2 : index
      %k8 = arith.addi %k0, %c8 : index
      %k1 = arith.addi %k0, %c1 : index
      %a0 = func.call @ld2(%A, %g, %k0) : (memref<?x16xbf16>, index, index) -> i32
      %a1 = func.call @ld2(%A, %g8, %k0) : (memref<?x16xbf16>, index, index) -> i32
      %a2 = func.call @ld2(%A, %g, %k8) : (memref<?x16xbf16>, index, index) -> i32
      %a3 = func.call @ld2(%A, %g8, %k8) : (memref<?x16xbf16>, index, index) -> i32
      %b0 = func.call @ld2(%Bt, %g, %k0) : (memref<?x16xbf16>, index, index) -> i32
      %b1 = func.call @ld2(%Bt, %g, %k8) : (memref<?x16xbf16>, index, index) -> i32
      %c0v = memref.load %C[%g, %k0] : memref<16x8xf32>
      %c1v = memref.load %C[%g, %k1] : memref<16x8xf32>
      %c2v = memref.load %C[%g8, %k0] : memref<16x8xf32>
      %c3v = memref.load %C[%g8, %k1] : memref<16x8xf32>
      %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0v, %c1v, %c2v, %c3v]
             {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
              multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>,
              shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      %d1 = llvm.extractvalue %d[1] : !llvm.struct<(f32, f32, f32, f32)>
      %d2 = llvm.extractvalue %d[2] : !llvm.struct<(f32, f32, f32, f32)>
      %d3 = llvm.extractvalue %d[3] : !llvm.struct<(f32, f32, f32, f32)>
      memref.store %d0, %D[%g, %k0] : memref<16x8xf32>
      memref.store %d1, %D[%g, %k1] : memref<16x8xf32>
      memref.store %d2, %D[%g8, %k0] : memref<16x8xf32>
      memref.store %d3, %D[%g8, %k1] : memref<16x8xf32>
      gpu.return
    }
  }
}
