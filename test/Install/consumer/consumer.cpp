//===- consumer.cpp - An embedder of the installed hla ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What a compiler that embeds hla does: registers hla's dialect and passes
// with its own context, runs hla-expand on a graph, and compiles the graph
// to a shared library. Prints the expanded IR's algebra ops and the result.
//
//   consumer OUT.so
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/InitAll.h"
#include "hla/Target/Artefact.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

static const char *kGraph = R"mlir(
func.func @main(%q: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}
)mlir";

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: consumer OUT.so\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::hla::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  mlir::OwningOpRef<mlir::ModuleOp> expanded =
      mlir::parseSourceString<mlir::ModuleOp>(kGraph, &context);
  if (!expanded)
    return 1;
  mlir::PassManager pm(&context);
  pm.addPass(mlir::hla::createHLAExpandPass());
  if (mlir::failed(pm.run(*expanded)))
    return 1;
  expanded->walk([](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "hla")
      llvm::outs() << "expanded: " << op->getName() << "\n";
  });

  mlir::OwningOpRef<mlir::ModuleOp> graph =
      mlir::parseSourceString<mlir::ModuleOp>(kGraph, &context);
  mlir::hla::ArtefactOptions options;
  options.target = "cpu";
  options.emit = "shared";
  options.outputPath = argv[1];
  options.runtimeDirectory = HLA_RUNTIMES;
  if (mlir::failed(mlir::hla::compileToArtefact(*graph, options)))
    return 1;
  llvm::outs() << "compiled: " << argv[1] << "\n";
  return 0;
}
