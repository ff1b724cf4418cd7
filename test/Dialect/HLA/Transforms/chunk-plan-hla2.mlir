// RUN: hla-opt %s --test-hla-chunk-plan --verify-diagnostics -o /dev/null

// Tests the index terms derived for masked HLA2 with scale 1 (SEMANTICS §2):
// the summaries are ΔS = Σ k kᵀ, ΔC = Σ q vᵀ, ΔG = Σ_{j<i} k_i k_iᵀ q_j v_jᵀ,
// and the readout at t is qᵀ(S₀C₀ − G₀) + Σ_{j≤t} (q_tᵀS₀q_j) v_j
// + Σ_{i,j≤t} (q_t·k_i)(k_i·q_j) v_j − Σ_{j<i≤t} (q_t·k_i)(k_i·q_j) v_j,
// i.e. the masked form ((W Wᵀ) ⊙ L) V once the last two are combined.

func.func @hla2(%q: tensor<1x8x2x4xf32>) {
  // expected-remark @+8 {{summary S: + 1.000000e+00 sum{v1 <= v0} k[v1] k[v1].T}}
  // expected-remark @+7 {{summary C: + 1.000000e+00 sum{v1 <= v0} q[v1] v[v1].T}}
  // expected-remark @+6 {{summary G: + 1.000000e+00 sum{v1 <= v0, v2 < v1} k[v1] k[v1].T q[v2] v[v2].T}}
  // expected-remark @+5 {{readout num: + 1.000000e+00 sum{} q[v0].T S0 C0}}
  // expected-remark @+4 {{readout num: + 1.000000e+00 sum{v1 <= v0} q[v0].T S0 q[v1] v[v1].T}}
  // expected-remark @+3 {{readout num: + 1.000000e+00 sum{v1 <= v0, v2 <= v0} q[v0].T k[v1] k[v1].T q[v2] v[v2].T}}
  // expected-remark @+2 {{readout num: - 1.000000e+00 sum{} q[v0].T G0}}
  // expected-remark @+1 {{readout num: - 1.000000e+00 sum{v1 <= v0, v2 < v1} q[v0].T k[v1] k[v1].T q[v2] v[v2].T}}
  %0 = hla.hla2 %q, %q, %q {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}
