// RUN: not hla-opt %s --emit=wasm -o %t 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not hla-opt %s --hla-target=tpu --emit=exe -o %t 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not hla-opt %s --emit=exe 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not hla-opt %s --emit=exe --entry=missing -o %t 2>&1 | FileCheck %s --check-prefix=ENTRY

// Tests hla-opt's artefact-flag diagnostics: unknown artefact kind, unknown
// target, no output file, and an entry function that does not exist.

// EMIT: error: hla-opt: --emit=wasm is not supported for --hla-target=cpu (llvm, obj, shared, exe)
// TARGET: error: hla-opt: --hla-target=tpu is not supported (targets: cpu, cuda)
// OUTPUT: error: hla-opt: --emit=exe needs an output file (-o)
// ENTRY: error: hla-emit-entry-abi: entry function 'missing' is not a public function with a static tensor signature
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
