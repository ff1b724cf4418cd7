// RUN: not hla-opt %s --hla-target=cuda --cuda-mma=hmma --emit=ptx -o %t 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not hla-opt %s --hla-target=cuda --cuda-chip=sm_80 --cuda-mma=wgmma --emit=ptx -o %t 2>&1 | FileCheck %s --check-prefix=CHIP

// Tests hla-opt's diagnostics for --cuda-mma: an unknown instruction, and
// wgmma on a chip that does not have it.

// UNKNOWN: error: hla-opt: option 'cuda-mma' needs auto, mma.sync or wgmma, not 'hmma'
// CHIP: error: hla-opt: --cuda-mma=wgmma needs --cuda-chip=sm_90a (got sm_80)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
