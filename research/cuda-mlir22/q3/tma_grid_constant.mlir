// Q3: CUtensorMap passed *by value* as a __grid_constant__ kernel parameter (128 B, align 64),
// instead of upstream's device-memory copy passed as a plain pointer.
// Kernel written at the LLVM/NVVM-dialect level (gpu.func cannot carry byval arguments).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.mlir.global external @hla_dyn_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
    llvm.func @tma_load_gc(%tmap: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant},
                           %out: !llvm.ptr {llvm.noalias, llvm.align = 16 : i64})
        attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %bytes = llvm.mlir.constant(8192 : i32) : i32   // 64x64 bf16 box
      %parity = llvm.mlir.constant(0 : i32) : i32
      %smem = llvm.mlir.addressof @hla_dyn_smem : !llvm.ptr<3>
      %c8192 = llvm.mlir.constant(8192 : i64) : i64
      // mbarrier lives in dynamic smem too (after the 8 KiB tile): no static/dynamic overlap question
      %mbar = llvm.getelementptr %smem[%c8192] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %leader = llvm.icmp "eq" %tid, %c0 : i32
      llvm.cond_br %leader, ^init, ^sync
    ^init:
      nvvm.mbarrier.init %mbar, %c1 : !llvm.ptr<3>, i32
      nvvm.fence.mbarrier.init
      llvm.br ^sync
    ^sync:
      nvvm.barrier0
      nvvm.prefetch tensormap, %tmap : !llvm.ptr
      llvm.cond_br %leader, ^issue, ^wait
    ^issue:
      nvvm.mbarrier.arrive.expect_tx %mbar, %bytes : !llvm.ptr<3>, i32
      %dst = llvm.addrspacecast %smem : !llvm.ptr<3> to !llvm.ptr<7>
      nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tmap, %mbar, box[%c0, %c0] : !llvm.ptr<7>, !llvm.ptr
      llvm.br ^wait
    ^wait:
      nvvm.mbarrier.try_wait.parity %mbar, %parity, %bytes : !llvm.ptr<3>, i32, i32
      // copy the first 16 bytes per thread back out (just to have a use)
      %off = llvm.mul %tid, %c1 : i32
      %p = llvm.getelementptr %smem[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, vector<4xi32>
      %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
      %q = llvm.getelementptr %out[%off] : (!llvm.ptr, i32) -> !llvm.ptr, vector<4xi32>
      llvm.store %v, %q {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr
      llvm.return
    }
  }
}
