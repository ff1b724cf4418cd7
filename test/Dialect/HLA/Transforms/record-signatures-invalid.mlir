// RUN: hla-opt %s --hla-record-signatures=strict=true --verify-diagnostics

// Tests that, for executables, a public function without a static tensor
// signature is an error.
// expected-error @+1 {{an entry function needs statically shaped tensor arguments and results of f32, f16, bf16, f64, i32 or i64}}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}
