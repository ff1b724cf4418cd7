// RUN: hla-opt %s --hla-emit-entry-abi=entry=main | FileCheck %s

// Tests that hla-emit-entry-abi wraps a lowered function (results already
// out-parameters) as int32_t hla_<name>(void **inputs, void **outputs): an
// internal body turns each pointer into a row-major memref descriptor, and
// the exported function runs that body through the runtime's
// hla_runtime_call and returns its status; the compiled function gets a
// private name (main would clash with the runtime's), and the signature
// string and the hla_entry aliases are emitted.

// CHECK: llvm.func @hla_runtime_call(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
module attributes {hla.signatures = {main = "main|f32:2x3|f32:2x3"}} {
  // CHECK: llvm.func internal @__hla_fn_main(
  llvm.func @main(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64, %a3: i64, %a4: i64, %a5: i64, %a6: i64,
                  %b0: !llvm.ptr, %b1: !llvm.ptr, %b2: i64, %b3: i64, %b4: i64, %b5: i64, %b6: i64) {
    llvm.return
  }
}

// CHECK-LABEL: llvm.func internal @__hla_call_main(
// CHECK-SAME: %[[IN:.+]]: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr) {
// CHECK:   %[[IN0:.+]] = llvm.getelementptr %[[IN]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:   %[[X:.+]] = llvm.load %[[IN0]] : !llvm.ptr -> !llvm.ptr
// CHECK:   %[[OUT0:.+]] = llvm.getelementptr %[[OUT]][0]
// CHECK:   %[[Y:.+]] = llvm.load %[[OUT0]] : !llvm.ptr -> !llvm.ptr
// Descriptor: pointer twice, offset 0, sizes 2 and 3, strides 3 and 1.
// CHECK:   llvm.call @__hla_fn_main(%[[X]], %[[X]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[Y]], %[[Y]],
// CHECK:   llvm.return
// CHECK-LABEL: llvm.func @hla_main(
// CHECK-SAME: %[[IN:.+]]: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr) -> i32
// CHECK:   %[[BODY:.+]] = llvm.mlir.addressof @__hla_call_main : !llvm.ptr
// CHECK:   %[[STATUS:.+]] = llvm.call @hla_runtime_call(%[[BODY]], %[[IN]], %[[OUT]])
// CHECK:   llvm.return %[[STATUS]] : i32
// CHECK: llvm.mlir.global external constant @hla_main_signature("main|f32:2x3|f32:2x3\00")
// CHECK-LABEL: llvm.func @hla_entry(
// CHECK:   %[[BODY:.+]] = llvm.mlir.addressof @__hla_call_main : !llvm.ptr
// CHECK:   llvm.call @hla_runtime_call(%[[BODY]],
// CHECK: llvm.mlir.global external constant @hla_entry_signature("main|f32:2x3|f32:2x3\00")
