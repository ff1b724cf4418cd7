module {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global private @__mbarrier() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<1 x i64>
  llvm.func @gemm_bf16_64x64x64(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: i64, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64) attributes {gpu.kernel, gpu.known_block_size = array<i32: 128, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    %0 = llvm.mlir.addressof @__mbarrier : !llvm.ptr<3>
    %1 = llvm.mlir.constant(64 : index) : i64
    %2 = llvm.mlir.addressof @__dynamic_shmem__0 : !llvm.ptr<3>
    %3 = llvm.mlir.constant(10000000 : index) : i64
    %4 = llvm.mlir.constant(46 : i64) : i64
    %5 = llvm.mlir.constant(50 : i64) : i64
    %6 = llvm.mlir.constant(0 : i64) : i64
    %7 = llvm.mlir.constant(0.000000e+00 : f32) : f32
    %8 = llvm.mlir.poison : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)>
    %9 = llvm.mlir.constant(1 : i32) : i32
    %10 = llvm.mlir.constant(0 : i32) : i32
    %11 = llvm.mlir.constant(2 : i32) : i64
    %12 = llvm.mlir.constant(128 : i32) : i64
    %13 = llvm.mlir.constant(4 : i32) : i64
    %14 = llvm.mlir.constant(256 : i32) : i64
    %15 = llvm.mlir.constant(6 : i32) : i64
    %16 = llvm.mlir.constant(384 : i32) : i64
    %17 = llvm.mlir.constant(2 : i32) : i32
    %18 = llvm.mlir.constant(4 : i32) : i32
    %19 = llvm.mlir.constant(8 : i32) : i32
    %20 = llvm.mlir.constant(16 : i32) : i32
    %21 = llvm.mlir.constant(32 : i32) : i32
    %22 = llvm.mlir.constant(3 : i32) : i32
    %23 = llvm.mlir.constant(5 : i32) : i32
    %24 = llvm.mlir.constant(6 : i32) : i32
    %25 = llvm.mlir.constant(7 : i32) : i32
    %26 = llvm.mlir.constant(4611686293338849280 : i64) : i64
    %27 = llvm.mlir.constant(16384 : index) : i64
    %28 = llvm.mlir.constant(1 : index) : i64
    %29 = llvm.mlir.constant(0 : index) : i64
    %30 = nvvm.read.ptx.sreg.tid.x range <i32, 0, 128> : i32
    %31 = llvm.sext %30 : i32 to i64
    %32 = llvm.icmp "eq" %31, %29 : i64
    %33 = llvm.getelementptr %2[8192] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
    %34 = llvm.getelementptr %0[0, 0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, !llvm.array<1 x i64>
    %35 = llvm.trunc %28 : i64 to i32
    nvvm.mbarrier.init %34, %35 : !llvm.ptr<3>, i32
    nvvm.barrier0
    nvvm.prefetch tensormap, %arg0 : !llvm.ptr
    nvvm.prefetch tensormap, %arg1 : !llvm.ptr
    llvm.cond_br %32, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    %36 = llvm.trunc %27 : i64 to i32
    nvvm.mbarrier.arrive.expect_tx %34, %36 : !llvm.ptr<3>, i32
    %37 = llvm.addrspacecast %2 : !llvm.ptr<3> to !llvm.ptr<7>
    %38 = llvm.trunc %29 : i64 to i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %37, %arg0, %34, box[%38, %38] : !llvm.ptr<7>, !llvm.ptr
    %39 = llvm.addrspacecast %33 : !llvm.ptr<3> to !llvm.ptr<7>
    nvvm.cp.async.bulk.tensor.shared.cluster.global %39, %arg1, %34, box[%38, %38] : !llvm.ptr<7>, !llvm.ptr
    llvm.br ^bb2
  ^bb2:  // 2 preds: ^bb0, ^bb1
    %40 = llvm.trunc %3 : i64 to i32
    llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred       P1; \0A\09LAB_WAIT: \0A\09mbarrier.try_wait.parity.shared.b64 P1, [$0], $1, $2; \0A\09@P1 bra.uni DONE; \0A\09bra.uni     LAB_WAIT; \0A\09DONE: \0A\09}", "r,r,r" %34, %10, %40 : (!llvm.ptr<3>, i32, i32) -> ()
    %41 = llvm.ptrtoint %2 : !llvm.ptr<3> to i64
    %42 = llvm.shl %41, %4 : i64
    %43 = llvm.lshr %42, %5 : i64
    %44 = llvm.shl %43, %6 : i64
    %45 = llvm.or %26, %44 : i64
    %46 = llvm.ptrtoint %33 : !llvm.ptr<3> to i64
    %47 = llvm.shl %46, %4 : i64
    %48 = llvm.lshr %47, %5 : i64
    %49 = llvm.shl %48, %6 : i64
    %50 = llvm.or %26, %49 : i64
    nvvm.wgmma.fence.aligned
    %51 = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31}, $64, $65, p, $67,  $68, $69,  $70;\0A}\0A", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,l,l,n,n,n,n,n" %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %7, %45, %50, %9, %9, %9, %10, %9 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i64, i64, i32, i32, i32, i32, i32) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
    %52 = llvm.add %45, %11 : i64
    %53 = llvm.add %50, %12 : i64
    %54 = llvm.extractvalue %51[0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %55 = llvm.extractvalue %51[1] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %56 = llvm.extractvalue %51[2] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %57 = llvm.extractvalue %51[3] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %58 = llvm.extractvalue %51[4] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %59 = llvm.extractvalue %51[5] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %60 = llvm.extractvalue %51[6] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %61 = llvm.extractvalue %51[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %62 = llvm.extractvalue %51[8] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %63 = llvm.extractvalue %51[9] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %64 = llvm.extractvalue %51[10] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %65 = llvm.extractvalue %51[11] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %66 = llvm.extractvalue %51[12] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %67 = llvm.extractvalue %51[13] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %68 = llvm.extractvalue %51[14] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %69 = llvm.extractvalue %51[15] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %70 = llvm.extractvalue %51[16] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %71 = llvm.extractvalue %51[17] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %72 = llvm.extractvalue %51[18] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %73 = llvm.extractvalue %51[19] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %74 = llvm.extractvalue %51[20] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %75 = llvm.extractvalue %51[21] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %76 = llvm.extractvalue %51[22] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %77 = llvm.extractvalue %51[23] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %78 = llvm.extractvalue %51[24] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %79 = llvm.extractvalue %51[25] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %80 = llvm.extractvalue %51[26] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %81 = llvm.extractvalue %51[27] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %82 = llvm.extractvalue %51[28] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %83 = llvm.extractvalue %51[29] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %84 = llvm.extractvalue %51[30] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %85 = llvm.extractvalue %51[31] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %86 = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31}, $64, $65, p, $67,  $68, $69,  $70;\0A}\0A", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,l,l,n,n,n,n,n" %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %52, %53, %9, %9, %9, %10, %9 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i64, i64, i32, i32, i32, i32, i32) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
    %87 = llvm.add %45, %13 : i64
    %88 = llvm.add %50, %14 : i64
    %89 = llvm.extractvalue %86[0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %90 = llvm.extractvalue %86[1] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %91 = llvm.extractvalue %86[2] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %92 = llvm.extractvalue %86[3] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %93 = llvm.extractvalue %86[4] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %94 = llvm.extractvalue %86[5] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %95 = llvm.extractvalue %86[6] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %96 = llvm.extractvalue %86[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %97 = llvm.extractvalue %86[8] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %98 = llvm.extractvalue %86[9] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %99 = llvm.extractvalue %86[10] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %100 = llvm.extractvalue %86[11] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %101 = llvm.extractvalue %86[12] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %102 = llvm.extractvalue %86[13] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %103 = llvm.extractvalue %86[14] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %104 = llvm.extractvalue %86[15] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %105 = llvm.extractvalue %86[16] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %106 = llvm.extractvalue %86[17] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %107 = llvm.extractvalue %86[18] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %108 = llvm.extractvalue %86[19] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %109 = llvm.extractvalue %86[20] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %110 = llvm.extractvalue %86[21] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %111 = llvm.extractvalue %86[22] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %112 = llvm.extractvalue %86[23] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %113 = llvm.extractvalue %86[24] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %114 = llvm.extractvalue %86[25] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %115 = llvm.extractvalue %86[26] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %116 = llvm.extractvalue %86[27] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %117 = llvm.extractvalue %86[28] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %118 = llvm.extractvalue %86[29] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %119 = llvm.extractvalue %86[30] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %120 = llvm.extractvalue %86[31] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %121 = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31}, $64, $65, p, $67,  $68, $69,  $70;\0A}\0A", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,l,l,n,n,n,n,n" %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %87, %88, %9, %9, %9, %10, %9 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i64, i64, i32, i32, i32, i32, i32) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
    %122 = llvm.add %45, %15 : i64
    %123 = llvm.add %50, %16 : i64
    %124 = llvm.extractvalue %121[0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %125 = llvm.extractvalue %121[1] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %126 = llvm.extractvalue %121[2] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %127 = llvm.extractvalue %121[3] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %128 = llvm.extractvalue %121[4] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %129 = llvm.extractvalue %121[5] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %130 = llvm.extractvalue %121[6] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %131 = llvm.extractvalue %121[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %132 = llvm.extractvalue %121[8] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %133 = llvm.extractvalue %121[9] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %134 = llvm.extractvalue %121[10] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %135 = llvm.extractvalue %121[11] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %136 = llvm.extractvalue %121[12] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %137 = llvm.extractvalue %121[13] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %138 = llvm.extractvalue %121[14] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %139 = llvm.extractvalue %121[15] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %140 = llvm.extractvalue %121[16] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %141 = llvm.extractvalue %121[17] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %142 = llvm.extractvalue %121[18] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %143 = llvm.extractvalue %121[19] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %144 = llvm.extractvalue %121[20] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %145 = llvm.extractvalue %121[21] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %146 = llvm.extractvalue %121[22] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %147 = llvm.extractvalue %121[23] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %148 = llvm.extractvalue %121[24] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %149 = llvm.extractvalue %121[25] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %150 = llvm.extractvalue %121[26] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %151 = llvm.extractvalue %121[27] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %152 = llvm.extractvalue %121[28] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %153 = llvm.extractvalue %121[29] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %154 = llvm.extractvalue %121[30] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %155 = llvm.extractvalue %121[31] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> 
    %156 = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31}, $64, $65, p, $67,  $68, $69,  $70;\0A}\0A", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,l,l,n,n,n,n,n" %124, %125, %126, %127, %128, %129, %130, %131, %132, %133, %134, %135, %136, %137, %138, %139, %140, %141, %142, %143, %144, %145, %146, %147, %148, %149, %150, %151, %152, %153, %154, %155, %122, %123, %9, %9, %9, %10, %9 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i64, i64, i32, i32, i32, i32, i32) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
    %157 = llvm.insertvalue %156, %8[0] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.wait.group.sync.aligned 1
    nvvm.wgmma.wait.group.sync.aligned 0
    %158 = nvvm.read.ptx.sreg.tid.x : i32
    %159 = llvm.urem %158, %21 : i32
    %160 = llvm.udiv %158, %21 : i32
    %161 = llvm.udiv %159, %18 : i32
    %162 = llvm.urem %159, %18 : i32
    %163 = llvm.mul %162, %17 : i32
    %164 = llvm.mul %160, %20 : i32
    %165 = llvm.add %161, %164 : i32
    %166 = llvm.mul %10, %19 : i32
    %167 = llvm.add %165, %166 : i32
    %168 = llvm.add %163, %166 : i32
    %169 = llvm.sext %167 : i32 to i64
    %170 = llvm.sext %168 : i32 to i64
    %171 = llvm.add %168, %9 : i32
    %172 = llvm.sext %171 : i32 to i64
    %173 = llvm.extractvalue %157[0, 0] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %174 = llvm.extractvalue %157[0, 1] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %175 = llvm.mul %169, %1 overflow<nsw, nuw> : i64
    %176 = llvm.add %175, %170 overflow<nsw, nuw> : i64
    %177 = llvm.getelementptr inbounds|nuw %arg3[%176] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %173, %177 : f32, !llvm.ptr
    %178 = llvm.add %175, %172 overflow<nsw, nuw> : i64
    %179 = llvm.getelementptr inbounds|nuw %arg3[%178] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %174, %179 : f32, !llvm.ptr
    %180 = llvm.mul %9, %19 : i32
    %181 = llvm.add %163, %180 : i32
    %182 = llvm.sext %181 : i32 to i64
    %183 = llvm.add %181, %9 : i32
    %184 = llvm.sext %183 : i32 to i64
    %185 = llvm.extractvalue %157[0, 4] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %186 = llvm.extractvalue %157[0, 5] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %187 = llvm.add %175, %182 overflow<nsw, nuw> : i64
    %188 = llvm.getelementptr inbounds|nuw %arg3[%187] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %185, %188 : f32, !llvm.ptr
    %189 = llvm.add %175, %184 overflow<nsw, nuw> : i64
    %190 = llvm.getelementptr inbounds|nuw %arg3[%189] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %186, %190 : f32, !llvm.ptr
    %191 = llvm.mul %17, %19 : i32
    %192 = llvm.add %163, %191 : i32
    %193 = llvm.sext %192 : i32 to i64
    %194 = llvm.add %192, %9 : i32
    %195 = llvm.sext %194 : i32 to i64
    %196 = llvm.extractvalue %157[0, 8] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %197 = llvm.extractvalue %157[0, 9] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %198 = llvm.add %175, %193 overflow<nsw, nuw> : i64
    %199 = llvm.getelementptr inbounds|nuw %arg3[%198] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %196, %199 : f32, !llvm.ptr
    %200 = llvm.add %175, %195 overflow<nsw, nuw> : i64
    %201 = llvm.getelementptr inbounds|nuw %arg3[%200] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %197, %201 : f32, !llvm.ptr
    %202 = llvm.mul %22, %19 : i32
    %203 = llvm.add %163, %202 : i32
    %204 = llvm.sext %203 : i32 to i64
    %205 = llvm.add %203, %9 : i32
    %206 = llvm.sext %205 : i32 to i64
    %207 = llvm.extractvalue %157[0, 12] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %208 = llvm.extractvalue %157[0, 13] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %209 = llvm.add %175, %204 overflow<nsw, nuw> : i64
    %210 = llvm.getelementptr inbounds|nuw %arg3[%209] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %207, %210 : f32, !llvm.ptr
    %211 = llvm.add %175, %206 overflow<nsw, nuw> : i64
    %212 = llvm.getelementptr inbounds|nuw %arg3[%211] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %208, %212 : f32, !llvm.ptr
    %213 = llvm.mul %18, %19 : i32
    %214 = llvm.add %163, %213 : i32
    %215 = llvm.sext %214 : i32 to i64
    %216 = llvm.add %214, %9 : i32
    %217 = llvm.sext %216 : i32 to i64
    %218 = llvm.extractvalue %157[0, 16] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %219 = llvm.extractvalue %157[0, 17] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %220 = llvm.add %175, %215 overflow<nsw, nuw> : i64
    %221 = llvm.getelementptr inbounds|nuw %arg3[%220] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %218, %221 : f32, !llvm.ptr
    %222 = llvm.add %175, %217 overflow<nsw, nuw> : i64
    %223 = llvm.getelementptr inbounds|nuw %arg3[%222] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %219, %223 : f32, !llvm.ptr
    %224 = llvm.mul %23, %19 : i32
    %225 = llvm.add %163, %224 : i32
    %226 = llvm.sext %225 : i32 to i64
    %227 = llvm.add %225, %9 : i32
    %228 = llvm.sext %227 : i32 to i64
    %229 = llvm.extractvalue %157[0, 20] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %230 = llvm.extractvalue %157[0, 21] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %231 = llvm.add %175, %226 overflow<nsw, nuw> : i64
    %232 = llvm.getelementptr inbounds|nuw %arg3[%231] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %229, %232 : f32, !llvm.ptr
    %233 = llvm.add %175, %228 overflow<nsw, nuw> : i64
    %234 = llvm.getelementptr inbounds|nuw %arg3[%233] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %230, %234 : f32, !llvm.ptr
    %235 = llvm.mul %24, %19 : i32
    %236 = llvm.add %163, %235 : i32
    %237 = llvm.sext %236 : i32 to i64
    %238 = llvm.add %236, %9 : i32
    %239 = llvm.sext %238 : i32 to i64
    %240 = llvm.extractvalue %157[0, 24] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %241 = llvm.extractvalue %157[0, 25] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %242 = llvm.add %175, %237 overflow<nsw, nuw> : i64
    %243 = llvm.getelementptr inbounds|nuw %arg3[%242] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %240, %243 : f32, !llvm.ptr
    %244 = llvm.add %175, %239 overflow<nsw, nuw> : i64
    %245 = llvm.getelementptr inbounds|nuw %arg3[%244] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %241, %245 : f32, !llvm.ptr
    %246 = llvm.mul %25, %19 : i32
    %247 = llvm.add %163, %246 : i32
    %248 = llvm.sext %247 : i32 to i64
    %249 = llvm.add %247, %9 : i32
    %250 = llvm.sext %249 : i32 to i64
    %251 = llvm.extractvalue %157[0, 28] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %252 = llvm.extractvalue %157[0, 29] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %253 = llvm.add %175, %248 overflow<nsw, nuw> : i64
    %254 = llvm.getelementptr inbounds|nuw %arg3[%253] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %251, %254 : f32, !llvm.ptr
    %255 = llvm.add %175, %250 overflow<nsw, nuw> : i64
    %256 = llvm.getelementptr inbounds|nuw %arg3[%255] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %252, %256 : f32, !llvm.ptr
    %257 = llvm.add %165, %180 : i32
    %258 = llvm.sext %257 : i32 to i64
    %259 = llvm.extractvalue %157[0, 2] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %260 = llvm.extractvalue %157[0, 3] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %261 = llvm.mul %258, %1 overflow<nsw, nuw> : i64
    %262 = llvm.add %261, %170 overflow<nsw, nuw> : i64
    %263 = llvm.getelementptr inbounds|nuw %arg3[%262] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %259, %263 : f32, !llvm.ptr
    %264 = llvm.add %261, %172 overflow<nsw, nuw> : i64
    %265 = llvm.getelementptr inbounds|nuw %arg3[%264] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %260, %265 : f32, !llvm.ptr
    %266 = llvm.extractvalue %157[0, 6] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %267 = llvm.extractvalue %157[0, 7] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %268 = llvm.add %261, %182 overflow<nsw, nuw> : i64
    %269 = llvm.getelementptr inbounds|nuw %arg3[%268] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %266, %269 : f32, !llvm.ptr
    %270 = llvm.add %261, %184 overflow<nsw, nuw> : i64
    %271 = llvm.getelementptr inbounds|nuw %arg3[%270] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %267, %271 : f32, !llvm.ptr
    %272 = llvm.extractvalue %157[0, 10] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %273 = llvm.extractvalue %157[0, 11] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %274 = llvm.add %261, %193 overflow<nsw, nuw> : i64
    %275 = llvm.getelementptr inbounds|nuw %arg3[%274] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %272, %275 : f32, !llvm.ptr
    %276 = llvm.add %261, %195 overflow<nsw, nuw> : i64
    %277 = llvm.getelementptr inbounds|nuw %arg3[%276] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %273, %277 : f32, !llvm.ptr
    %278 = llvm.extractvalue %157[0, 14] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %279 = llvm.extractvalue %157[0, 15] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %280 = llvm.add %261, %204 overflow<nsw, nuw> : i64
    %281 = llvm.getelementptr inbounds|nuw %arg3[%280] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %278, %281 : f32, !llvm.ptr
    %282 = llvm.add %261, %206 overflow<nsw, nuw> : i64
    %283 = llvm.getelementptr inbounds|nuw %arg3[%282] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %279, %283 : f32, !llvm.ptr
    %284 = llvm.extractvalue %157[0, 18] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %285 = llvm.extractvalue %157[0, 19] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %286 = llvm.add %261, %215 overflow<nsw, nuw> : i64
    %287 = llvm.getelementptr inbounds|nuw %arg3[%286] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %284, %287 : f32, !llvm.ptr
    %288 = llvm.add %261, %217 overflow<nsw, nuw> : i64
    %289 = llvm.getelementptr inbounds|nuw %arg3[%288] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %285, %289 : f32, !llvm.ptr
    %290 = llvm.extractvalue %157[0, 22] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %291 = llvm.extractvalue %157[0, 23] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %292 = llvm.add %261, %226 overflow<nsw, nuw> : i64
    %293 = llvm.getelementptr inbounds|nuw %arg3[%292] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %290, %293 : f32, !llvm.ptr
    %294 = llvm.add %261, %228 overflow<nsw, nuw> : i64
    %295 = llvm.getelementptr inbounds|nuw %arg3[%294] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %291, %295 : f32, !llvm.ptr
    %296 = llvm.extractvalue %157[0, 26] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %297 = llvm.extractvalue %157[0, 27] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %298 = llvm.add %261, %237 overflow<nsw, nuw> : i64
    %299 = llvm.getelementptr inbounds|nuw %arg3[%298] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %296, %299 : f32, !llvm.ptr
    %300 = llvm.add %261, %239 overflow<nsw, nuw> : i64
    %301 = llvm.getelementptr inbounds|nuw %arg3[%300] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %297, %301 : f32, !llvm.ptr
    %302 = llvm.extractvalue %157[0, 30] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %303 = llvm.extractvalue %157[0, 31] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
    %304 = llvm.add %261, %248 overflow<nsw, nuw> : i64
    %305 = llvm.getelementptr inbounds|nuw %arg3[%304] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %302, %305 : f32, !llvm.ptr
    %306 = llvm.add %261, %250 overflow<nsw, nuw> : i64
    %307 = llvm.getelementptr inbounds|nuw %arg3[%306] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %303, %307 : f32, !llvm.ptr
    llvm.return
  }
}
