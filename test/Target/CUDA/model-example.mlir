// REQUIRES: cuda-toolkit
// RUN: hla-opt %hla_src_root/examples/linsimp_kda_model.mlir --hla-target=cuda --emit=exe --chunk-size=16 -o %t.exe
// RUN: FileCheck %s < %t.exe.ptxas.log
// RUN: not grep -E "[1-9][0-9]* bytes spill" %t.exe.ptxas.log

// Tests that the whole no-softmax model example (embedding, 18 KDA and 6
// LinSimp layers with projections, convolutions, norms, gates and MLPs,
// logits) compiles for CUDA: every op of the graph is a kernel, and ptxas
// accepts them all without spilling (the build would fail otherwise).

// CHECK-DAG: Compiling entry function 'main_kernel
// CHECK-DAG: Compiling entry function 'kda_layer_kernel
// CHECK-DAG: Compiling entry function 'linsimp_layer_kernel
