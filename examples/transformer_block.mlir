// One pre-norm transformer block whose attention sublayer is masked
// second-order HLA:
//
//   h = x + W_o · hla2(RMSNorm(x) W_q, RMSNorm(x) W_k, RMSNorm(x) W_v)
//   y = h + W_2 · silu(RMSNorm(h) W_1)
//
// x is [T = 200, D = 64]; 2 heads of 32; MLP width 128. Weights are
// arguments, so the compiled executable reads them as .npy files (or makes
// them with --random). Only func, arith, math, tensor and linalg ops besides
// hla.hla2.

#id = affine_map<(t, c) -> (t, c)>
#row = affine_map<(t, c) -> (t)>
#col = affine_map<(t, c) -> (c)>

// RMSNorm over the feature axis: x / sqrt(mean(x^2) + 1e-6) * g.
func.func private @rmsnorm(%x: tensor<200x64xf32>, %g: tensor<64xf32>) -> tensor<200x64xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant 0.015625 : f32
  %eps = arith.constant 1.0e-6 : f32
  %sums_init = tensor.empty() : tensor<200xf32>
  %sums_zero = linalg.fill ins(%zero : f32) outs(%sums_init : tensor<200xf32>) -> tensor<200xf32>
  %sums = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<200x64xf32>) outs(%sums_zero : tensor<200xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<200xf32>
  %out_init = tensor.empty() : tensor<200x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sums, %g : tensor<200x64xf32>, tensor<200xf32>, tensor<64xf32>) outs(%out_init : tensor<200x64xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %biased = arith.addf %mean, %eps : f32
    %r = math.rsqrt %biased : f32
    %n = arith.mulf %a, %r : f32
    %scaled = arith.mulf %n, %w : f32
    linalg.yield %scaled : f32
  } -> tensor<200x64xf32>
  return %y : tensor<200x64xf32>
}

// x · w for x [200, K] and w [K, N].
func.func private @project_64x64(%x: tensor<200x64xf32>, %w: tensor<64x64xf32>) -> tensor<200x64xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<200x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<200x64xf32>) -> tensor<200x64xf32>
  %y = linalg.matmul ins(%x, %w : tensor<200x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<200x64xf32>) -> tensor<200x64xf32>
  return %y : tensor<200x64xf32>
}

func.func @main(%x: tensor<200x64xf32>, %g_attn: tensor<64xf32>,
                %w_q: tensor<64x64xf32>, %w_k: tensor<64x64xf32>,
                %w_v: tensor<64x64xf32>, %w_o: tensor<64x64xf32>,
                %g_mlp: tensor<64xf32>, %w_1: tensor<64x128xf32>,
                %w_2: tensor<128x64xf32>) -> tensor<200x64xf32> {
  %zero = arith.constant 0.0 : f32

  // Attention sublayer.
  %xn = func.call @rmsnorm(%x, %g_attn) : (tensor<200x64xf32>, tensor<64xf32>) -> tensor<200x64xf32>
  %q2 = func.call @project_64x64(%xn, %w_q) : (tensor<200x64xf32>, tensor<64x64xf32>) -> tensor<200x64xf32>
  %k2 = func.call @project_64x64(%xn, %w_k) : (tensor<200x64xf32>, tensor<64x64xf32>) -> tensor<200x64xf32>
  %v2 = func.call @project_64x64(%xn, %w_v) : (tensor<200x64xf32>, tensor<64x64xf32>) -> tensor<200x64xf32>
  %q = tensor.expand_shape %q2 [[0, 1], [2, 3]] output_shape [1, 200, 2, 32] : tensor<200x64xf32> into tensor<1x200x2x32xf32>
  %k = tensor.expand_shape %k2 [[0, 1], [2, 3]] output_shape [1, 200, 2, 32] : tensor<200x64xf32> into tensor<1x200x2x32xf32>
  %v = tensor.expand_shape %v2 [[0, 1], [2, 3]] output_shape [1, 200, 2, 32] : tensor<200x64xf32> into tensor<1x200x2x32xf32>
  %a = hla.hla2 %q, %k, %v : (tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32>
  %a2 = tensor.collapse_shape %a [[0, 1], [2, 3]] : tensor<1x200x2x32xf32> into tensor<200x64xf32>
  %attn = func.call @project_64x64(%a2, %w_o) : (tensor<200x64xf32>, tensor<64x64xf32>) -> tensor<200x64xf32>
  %h = arith.addf %x, %attn : tensor<200x64xf32>

  // MLP sublayer with a SiLU.
  %hn = func.call @rmsnorm(%h, %g_mlp) : (tensor<200x64xf32>, tensor<64xf32>) -> tensor<200x64xf32>
  %up_init = tensor.empty() : tensor<200x128xf32>
  %up_zero = linalg.fill ins(%zero : f32) outs(%up_init : tensor<200x128xf32>) -> tensor<200x128xf32>
  %up = linalg.matmul ins(%hn, %w_1 : tensor<200x64xf32>, tensor<64x128xf32>) outs(%up_zero : tensor<200x128xf32>) -> tensor<200x128xf32>
  %act_init = tensor.empty() : tensor<200x128xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%up : tensor<200x128xf32>) outs(%act_init : tensor<200x128xf32>) {
  ^bb0(%u: f32, %o: f32):
    %neg = arith.negf %u : f32
    %e = math.exp %neg : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %e : f32
    %silu = arith.divf %u, %den : f32
    linalg.yield %silu : f32
  } -> tensor<200x128xf32>
  %down_init = tensor.empty() : tensor<200x64xf32>
  %down_zero = linalg.fill ins(%zero : f32) outs(%down_init : tensor<200x64xf32>) -> tensor<200x64xf32>
  %down = linalg.matmul ins(%act, %w_2 : tensor<200x128xf32>, tensor<128x64xf32>) outs(%down_zero : tensor<200x64xf32>) -> tensor<200x64xf32>
  %y = arith.addf %h, %down : tensor<200x64xf32>
  return %y : tensor<200x64xf32>
}
