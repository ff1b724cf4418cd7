// RUN: hla-opt %s --hla-lower-asserts | FileCheck %s

// Tests that a cf.assert becomes a branch to a call of the runtime's
// hla_abort with the message (the running entry call fails with it: its
// hla_<f> returns non-zero and hla_last_error() holds the message).

// CHECK: llvm.mlir.global internal constant @__hla_assert_0("bad input\00")
// CHECK: llvm.func @hla_abort(!llvm.ptr)
// CHECK-LABEL: func.func @check
// CHECK-SAME: (%[[OK:.+]]: i1)
// CHECK:   cf.cond_br %[[OK]], ^[[CONT:.+]], ^[[FAIL:.+]]
// CHECK: ^[[FAIL]]:
// CHECK:   %[[MSG:.+]] = llvm.mlir.addressof @__hla_assert_0 : !llvm.ptr
// CHECK:   llvm.call @hla_abort(%[[MSG]]) : (!llvm.ptr) -> ()
// CHECK:   llvm.unreachable
// CHECK: ^[[CONT]]:
// CHECK:   return
func.func @check(%ok: i1) {
  cf.assert %ok, "bad input"
  return
}
