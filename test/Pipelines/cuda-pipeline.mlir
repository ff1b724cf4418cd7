// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-cuda-pipeline="chunk-size=16 entry=main" | FileCheck %s

// Tests the phase-boundary facts of hla-cuda-pipeline on a bf16 hla2: one
// kernel module compiled to PTX for sm_90a (tensor-core mma.sync for the
// chunk contractions, the extern dynamic shared memory window, one block
// per SM), and host code in the LLVM dialect that loads the module and
// launches the kernel with its shared memory on hla's stream (queued: no
// wait after it) through the mgpu* runtime calls, behind the artefact C
// ABI.

// CHECK-NOT: hla.hla2
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK: llvm.func internal @__hla_fn_main(
// CHECK: %[[STREAM:.+]] = llvm.call @mgpuStreamCreate()
// CHECK-NEXT: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @main_kernel::@main_kernel blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) : i64 dynamic_shared_memory_size %{{.+}}
// CHECK: gpu.binary @main_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// CHECK-SAME: .maxntid 256, 1, 1
// CHECK-SAME: .minnctapersm 1
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-SAME: bar.sync
// CHECK: llvm.func @hla_main(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr)
// CHECK: llvm.mlir.global external constant @hla_main_signature("main|bf16:2x40x2x16,bf16:2x40x2x16,bf16:2x40x2x16|bf16:2x40x2x16\00")
func.func @main(%q: tensor<2x40x2x16xbf16>, %k: tensor<2x40x2x16xbf16>, %v: tensor<2x40x2x16xbf16>) -> tensor<2x40x2x16xbf16> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64} : (tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>) -> tensor<2x40x2x16xbf16>
  return %o : tensor<2x40x2x16xbf16>
}
