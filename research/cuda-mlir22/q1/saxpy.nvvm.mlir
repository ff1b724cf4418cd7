module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">] {
    llvm.func @saxpy(%arg0: f32, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: i64, %arg4: i64, %arg5: i64, %arg6: !llvm.ptr, %arg7: !llvm.ptr, %arg8: i64, %arg9: i64, %arg10: i64, %arg11: i64) attributes {gpu.kernel, gpu.known_block_size = array<i32: 128, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
      %0 = llvm.mlir.constant(0 : i32) : i32
      %1 = llvm.mlir.poison : vector<4xf32>
      %2 = llvm.mlir.constant(4 : index) : i64
      %3 = nvvm.read.ptx.sreg.ctaid.x : i32
      %4 = llvm.sext %3 : i32 to i64
      %5 = nvvm.read.ptx.sreg.tid.x range <i32, 0, 128> : i32
      %6 = llvm.sext %5 : i32 to i64
      %7 = nvvm.read.ptx.sreg.ntid.x range <i32, 1, 129> : i32
      %8 = llvm.sext %7 : i32 to i64
      %9 = llvm.mul %4, %8 : i64
      %10 = llvm.add %9, %6 : i64
      %11 = llvm.mul %10, %2 : i64
      %12 = llvm.icmp "slt" %11, %arg11 : i64
      llvm.cond_br %12, ^bb1, ^bb2
    ^bb1:  // pred: ^bb0
      %13 = llvm.getelementptr %arg2[%11] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %14 = llvm.load %13 {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
      %15 = llvm.getelementptr %arg7[%11] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %16 = llvm.load %15 {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
      %17 = llvm.insertelement %arg0, %1[%0 : i32] : vector<4xf32>
      %18 = llvm.shufflevector %17, %1 [0, 0, 0, 0] : vector<4xf32> 
      %19 = llvm.intr.fmuladd(%18, %14, %16) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
      llvm.store %19, %15 {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
      llvm.br ^bb2
    ^bb2:  // 2 preds: ^bb0, ^bb1
      llvm.return
    }
  }
}

