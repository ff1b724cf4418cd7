// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on KDA (bf16, c = d = dv = 64): its
// chunk loop places on register tiles. What KDA needs beyond the other ops:
//   * β, one value per token, is a vector read from global memory where it
//     is needed (rows past the sequence's end zero);
//   * the cumulative log-decay Γ (a fragment: a contraction of the lower-
//     triangular ones with the raised g) gets an exact copy, its f32 values
//     row-major in shared memory (68 columns apart), from which its rows at
//     the pair blocks' first tokens and at the chunk's last token are read
//     as vectors;
//   * the pair sums within blocks of 16 tokens, the decay's exponential
//     inside the sum over d (A_kk's and A_qk's bands), are reductions that
//     each thread computes for its own elements: one loop over d carrying
//     its four elements of the 64 x 16 band, eight values of d a step,
//     reading k from its landing buffer and Γ from its exact copy (16-byte
//     words); each band gets an exact copy too (20
//     columns apart), read at (r, s mod 16) by the elementwise op that
//     merges it with the pairs across blocks.
// 25 contractions per chunk: Γ, 12 of the triangular solve by doubling, W
// and U, 3 + 3 for the pairs across blocks, the readout's W·S, (e^Γ⊙Q)·S
// and A_qk·(U − W·S), the next state's K̃ᵀ·(U − W·S).

// CHECK-LABEL: func.func @kda
// CHECK: gpu.launch
// CHECK-DAG: memref.view {{.*}} to memref<4352xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view {{.*}} to memref<1280xf32, #gpu.address_space<workgroup>>
// A band: every thread's four elements carried over d, eight values of d
// a step, Γ's eight read from its exact copy as two 16-byte words; in a
// chunk loop its exponentials are libdevice's (approximations only in
// passes parallel over chunks: gpu-lower-register-tiles-kda-hoisted.mlir).
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64{{.*}} step %c8{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: vector.load %{{.*}} : memref<4352xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: math.exp %{{.*}} : f32
// The band's exact copy, a barrier, its reads at (r, s mod 16).
// CHECK: memref.store %{{.*}} : memref<1280xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: memref.load %{{.*}} : memref<1280xf32, #gpu.address_space<workgroup>>
// β: read from the global tensor where it scales A_kk's rows.
// CHECK: memref.load %{{.*}} : memref<1x256x2xbf16>
// CHECK: nvvm.wgmma.mma_async
func.func @kda(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>, %g: tensor<1x256x2x64xbf16>, %beta: tensor<1x256x2xbf16>) -> tensor<1x256x2x64xbf16> {
  // expected-remark @below {{register tiles: 25 contractions on wgmma, 60 fragments, 53 on-demand tiles, 37 shared-memory operand copies (34 conversions from fragments; 1 operands read from landing buffers), 158848 bytes of shared memory, 2 warpgroup(s), 136 fragment registers per thread at most, 3 exact copies of fragments, 2 reductions by thread}}
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
