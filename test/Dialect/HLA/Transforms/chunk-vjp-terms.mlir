// RUN: hla-opt %s --test-hla-chunk-plan=vjp=true --verify-diagnostics -o /dev/null

// Tests the backward terms derived for decayed linear attention (scale 1,
// γ = 0.5): with λ the cotangent of the state carried out of the chunk and g
// the readouts' cotangent,
//   dP₀ = γᶜ λ + Σ_t γ^(t+1) q_t g_tᵀ,
//   dq_p = γ^(p+1) P₀ g_p + Σ_{i≤p} γ^(p−i) k_i v_iᵀ g_p,
//   dk_p = Σ_{t≥p} γ^(t−p) q_t g_tᵀ v_p + γ^(E−p) λ v_p, and dv_p alike:
// the sums over later tokens (t ≥ p) are the re-rooted index trees.
func.func @linear(%q: tensor<1x8x2x4xf32>) {
  // expected-remark @+9 {{combine dP0: rho.b * dout_P}}
  // expected-remark @+8 {{dsum_P: dout_P}}
  // expected-remark @+7 {{readout dP0: + 1.000000e+00 sum{v1 <= v0} q[v1] d_num[v1].T g^(1.000000e+00*v1 + 1.000000e+00)}}
  // expected-remark @+6 {{dq: + 1.000000e+00 sum{} P0 d_num[v0] g^(1.000000e+00*v0 + 1.000000e+00)}}
  // expected-remark @+5 {{dq: + 1.000000e+00 sum{v1 <= v0} k[v1] v[v1].T d_num[v0] g^(1.000000e+00*v0 + -1.000000e+00*v1)}}
  // expected-remark @+4 {{dk: + 1.000000e+00 sum{v1 >= v0} q[v1] d_num[v1].T v[v0] g^(-1.000000e+00*v0 + 1.000000e+00*v1)}}
  // expected-remark @+3 {{dk: + 1.000000e+00 sum{v1 >= v0 = E} dsum_P v[v0] g^(-1.000000e+00*v0 + 1.000000e+00*v1)}}
  // expected-remark @+2 {{dv: + 1.000000e+00 sum{v1 >= v0} d_num[v1] q[v1].T k[v0] g^(-1.000000e+00*v0 + 1.000000e+00*v1)}}
  // expected-remark @+1 {{dv: + 1.000000e+00 sum{v1 >= v0 = E} dsum_P.T k[v0] g^(-1.000000e+00*v0 + 1.000000e+00*v1)}}
  %0 = hla.linear_attention %q, %q, %q {scale = 1.0 : f64, decay = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}
