module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.mlir.global external @hla_dyn_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
    llvm.func @tma_load_gc(%arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %arg1: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
      %0 = llvm.mlir.constant(0 : i32) : i32
      %1 = llvm.mlir.constant(1 : i32) : i32
      %2 = llvm.mlir.constant(8192 : i32) : i32
      %3 = llvm.mlir.constant(0 : i32) : i32
      %4 = llvm.mlir.addressof @hla_dyn_smem : !llvm.ptr<3>
      %5 = llvm.mlir.constant(8192 : i64) : i64
      %6 = llvm.getelementptr %4[%5] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
      %7 = nvvm.read.ptx.sreg.tid.x : i32
      %8 = llvm.icmp "eq" %7, %0 : i32
      llvm.cond_br %8, ^bb1, ^bb2
    ^bb1:  // pred: ^bb0
      nvvm.mbarrier.init %6, %1 : !llvm.ptr<3>, i32
      nvvm.fence.mbarrier.init
      llvm.br ^bb2
    ^bb2:  // 2 preds: ^bb0, ^bb1
      nvvm.barrier0
      nvvm.prefetch tensormap, %arg0 : !llvm.ptr
      llvm.cond_br %8, ^bb3, ^bb4
    ^bb3:  // pred: ^bb2
      nvvm.mbarrier.arrive.expect_tx %6, %2 : !llvm.ptr<3>, i32
      %9 = llvm.addrspacecast %4 : !llvm.ptr<3> to !llvm.ptr<7>
      nvvm.cp.async.bulk.tensor.shared.cluster.global %9, %arg0, %6, box[%0, %0] : !llvm.ptr<7>, !llvm.ptr
      llvm.br ^bb4
    ^bb4:  // 2 preds: ^bb2, ^bb3
      llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred       P1; \0A\09LAB_WAIT: \0A\09mbarrier.try_wait.parity.shared.b64 P1, [$0], $1, $2; \0A\09@P1 bra.uni DONE; \0A\09bra.uni     LAB_WAIT; \0A\09DONE: \0A\09}", "r,n,n" %6, %3, %2 : (!llvm.ptr<3>, i32, i32) -> ()
      %10 = llvm.mul %7, %1 : i32
      %11 = llvm.getelementptr %4[%10] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, vector<4xi32>
      %12 = llvm.load %11 {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
      %13 = llvm.getelementptr %arg1[%10] : (!llvm.ptr, i32) -> !llvm.ptr, vector<4xi32>
      llvm.store %12, %13 {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr
      llvm.return
    }
  }
}

