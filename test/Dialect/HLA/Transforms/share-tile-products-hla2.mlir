// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=64 form=fused causal-isolation=false" --convert-hla-to-linalg --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s --check-prefix=TERMS
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=64 form=fused causal-isolation=false" --convert-hla-to-linalg --hla-share-tile-products --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARED

// Tests the products of hla2's chunk body (c = d = dv = 64). hla-chunk
// emits each index term on its own, except that readout terms ending in
// the same right factor (V) are summed before one product: 18 contractions
// (20 without that), Q·S₀ twice, Q·Kᵀ twice and K·Qᵀ three times among
// them. hla-share-tile-products computes each once: 13 remain.

// TERMS: remark: hla-report-chunk-work: 18 contractions (9437184 FLOP)
// SHARED: remark: hla-report-chunk-work: 13 contractions (6815744 FLOP)
func.func @hla2(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
