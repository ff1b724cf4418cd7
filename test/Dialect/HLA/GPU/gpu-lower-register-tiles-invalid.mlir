// RUN: hla-opt %s --split-input-file --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles" --verify-diagnostics
// RUN: hla-opt %s --split-input-file --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --canonicalize "--hla-gpu-lower-register-tiles=report" -o %t 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: FileCheck %s --check-prefix=KEPT < %t
// RUN: not hla-opt %s --split-input-file "--hla-gpu-lower-register-tiles=generator=maybe" 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not hla-opt %s --split-input-file "--hla-gpu-lower-register-tiles=generator=phases" 2>&1 | FileCheck %s --check-prefix=PHASES

// Tests the loops hla-gpu-lower-register-tiles cannot place: with
// generator=tiles each is an error naming what it could not place; with
// generator=auto (report on) a remark, and the loop stays for
// hla-gpu-map-chunk-loops. And a bad option.

// OPTION: for the --generator option: Cannot find option named 'maybe'!
// PHASES: hla-gpu-lower-register-tiles: generator must be auto or tiles (phases means that this pass does not run)

// float32 inputs keep exact float32 arithmetic (wgmma would round them).
// AUTO: remark: left to hla-gpu-map-chunk-loops: tensor.extract_slice: a slice of a tensor that is not bf16
// KEPT-LABEL: func.func @f32
// KEPT: scf.forall
func.func @f32(%q: tensor<1x128x2x64xf32>, %k: tensor<1x128x2x64xf32>, %v: tensor<1x128x2x64xf32>) -> tensor<1x128x2x64xf32> {
  // expected-error @below {{hla-gpu-lower-register-tiles: cannot keep this loop's tiles in registers: tensor.extract_slice: a slice of a tensor that is not bf16}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x128x2x64xf32>, tensor<1x128x2x64xf32>, tensor<1x128x2x64xf32>) -> tensor<1x128x2x64xf32>
  return %o : tensor<1x128x2x64xf32>
}

// -----

// d = 96: the state's 96 rows are not whole 64-row wgmma blocks.
// AUTO: remark: left to hla-gpu-map-chunk-loops: scf.for: a carried tensor that is neither output rows, a 0-d value, a row vector nor a tile of 64 to 256 rows
// KEPT-LABEL: func.func @d96
// KEPT: scf.forall
func.func @d96(%q: tensor<1x128x2x96xbf16>, %k: tensor<1x128x2x96xbf16>, %v: tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16> {
  // expected-error @below {{hla-gpu-lower-register-tiles: cannot keep this loop's tiles in registers: scf.for: a carried tensor that is neither output rows, a 0-d value, a row vector nor a tile of 64 to 256 rows}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x128x2x96xbf16>, tensor<1x128x2x96xbf16>, tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16>
  return %o : tensor<1x128x2x64xbf16>
}

// -----

// Initial and final states are not read into and written from fragments yet.
// AUTO: remark: left to hla-gpu-map-chunk-loops: tensor.extract_slice: a slice of a tensor that is not bf16 (float32 tokens keep exact float32 arithmetic on the phase mapper; initial states are not read into fragments yet)
// KEPT-LABEL: func.func @state
// KEPT: scf.forall
func.func @state(%q: tensor<1x128x2x64xbf16>, %k: tensor<1x128x2x64xbf16>, %v: tensor<1x128x2x64xbf16>, %s: tensor<1x2x64x64xf32>) -> (tensor<1x128x2x64xbf16>, tensor<1x2x64x64xf32>) {
  // expected-error @below {{hla-gpu-lower-register-tiles: cannot keep this loop's tiles in registers}}
  %o:2 = hla.linear_attention %q, %k, %v initial_state(%s) : (tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>, tensor<1x2x64x64xf32>) -> (tensor<1x128x2x64xbf16>, tensor<1x2x64x64xf32>)
  return %o#0, %o#1 : tensor<1x128x2x64xbf16>, tensor<1x2x64x64xf32>
}
