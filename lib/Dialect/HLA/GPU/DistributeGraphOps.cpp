//===- DistributeGraphOps.cpp - Graph ops as GPU block loops ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-distribute-graph-ops: the tensor ops of a model graph around the
// attention ops (projections, norms, activations, the embedding gather)
// become scf.forall loops of row blocks, which hla-gpu-map-chunk-loops
// then runs as kernels like the chunk loops. A straightforward schedule:
// one thread block per block of rows, the block's threads sharing the
// rows' outputs, operands read from device memory.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "../Transforms/TransformUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "hla-gpu-distribute-graph-ops"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUDISTRIBUTEGRAPHOPSPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLAGPUDistributeGraphOpsPass
    : public hla::impl::HLAGPUDistributeGraphOpsPassBase<
          HLAGPUDistributeGraphOpsPass> {
  using HLAGPUDistributeGraphOpsPassBase::HLAGPUDistributeGraphOpsPassBase;

  /// `tensor.insert_slice %src into %dest[...]` -> the same insert of
  /// `linalg.copy %src` into `tensor.extract_slice %dest[...]`: bufferized,
  /// the copy writes the destination's slice in place (a kernel), where the
  /// plain insert would copy on the host.
  void copyInsertedSlices(func::FuncOp func) {
    llvm::SmallVector<tensor::InsertSliceOp> inserts;
    for (auto insert : func.getBody().front().getOps<tensor::InsertSliceOp>())
      if (!insert.getSource().getDefiningOp<linalg::CopyOp>())
        inserts.push_back(insert);
    for (tensor::InsertSliceOp insert : inserts) {
      OpBuilder b(insert);
      Location loc = insert.getLoc();
      Value slot = tensor::ExtractSliceOp::create(
          b, loc, insert.getSourceType(), insert.getDest(),
          insert.getMixedOffsets(), insert.getMixedSizes(),
          insert.getMixedStrides());
      Value copied =
          linalg::CopyOp::create(b, loc, insert.getSource(), slot).getResult(0);
      insert.getSourceMutable().assign(copied);
    }
  }

  /// Loops of thread blocks; the mapping also keeps canonicalization from
  /// inlining a one-iteration loop back into the host code.
  std::optional<ArrayAttr> blockMapping() {
    MLIRContext *ctx = &getContext();
    return ArrayAttr::get(
        ctx, {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
  }

  /// hla-chunk's loops (the foralls of the function body) become thread
  /// blocks too: mapped like the graph's loops, so that canonicalization
  /// does not inline a loop of one (sequence, head) into the host code,
  /// which must not touch device memory.
  void keepChunkLoops(func::FuncOp func) {
    MLIRContext *ctx = &getContext();
    for (auto loop : func.getBody().front().getOps<scf::ForallOp>()) {
      if (loop.getMapping())
        continue;
      int64_t rank = loop.getRank();
      llvm::SmallVector<Attribute> dims;
      for (int64_t i = 0; i < rank; ++i)
        dims.push_back(gpu::GPUBlockMappingAttr::get(
            ctx,
            rank <= 3
                ? static_cast<gpu::MappingId>(
                      static_cast<int64_t>(gpu::MappingId::DimX) + i)
                : static_cast<gpu::MappingId>(
                      static_cast<int64_t>(gpu::MappingId::LinearDim0) + i)));
      loop.setMappingAttr(ArrayAttr::get(ctx, dims));
    }
  }

  /// An op without parallel loops: one block runs it.
  LogicalResult wrapInOneBlock(IRRewriter &rewriter, linalg::LinalgOp op) {
    auto dps = cast<DestinationStyleOpInterface>(op.getOperation());
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    auto forall = scf::ForallOp::create(
        rewriter, loc, llvm::ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)},
        ValueRange(dps.getDpsInits()), blockMapping());
    Block *body = forall.getBody();
    rewriter.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [init, arg] :
         llvm::zip(dps.getDpsInits(), body->getArguments().drop_front()))
      mapping.map(init, arg);
    Operation *clone = rewriter.clone(*op, mapping);
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [result, arg] :
         llvm::zip(clone->getResults(), body->getArguments().drop_front())) {
      auto type = cast<RankedTensorType>(result.getType());
      llvm::SmallVector<OpFoldResult> zeros(type.getRank(),
                                            rewriter.getIndexAttr(0));
      llvm::SmallVector<OpFoldResult> sizes;
      for (int64_t s : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(s));
      llvm::SmallVector<OpFoldResult> ones(type.getRank(),
                                           rewriter.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(rewriter, loc, result, arg, zeros,
                                            sizes, ones);
    }
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }

  LogicalResult distribute(IRRewriter &rewriter, linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics())
      return op->emitOpError("hla-gpu-distribute-graph-ops: expected tensors");
    llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return op->emitOpError(
          "hla-gpu-distribute-graph-ops: needs static shapes");
    auto iterators = op.getIteratorTypesArray();
    std::optional<unsigned> parallel;
    for (auto [i, iterator] : llvm::enumerate(iterators))
      if (iterator == utils::IteratorType::parallel && ranges[i] > 1) {
        parallel = i;
        break;
      }
    if (!parallel)
      return wrapInOneBlock(rewriter, op);
    unsigned dim = *parallel;
    llvm::SmallVector<OpFoldResult> sizes(ranges.size(),
                                          rewriter.getIndexAttr(0));
    sizes[dim] = rewriter.getIndexAttr(largestDivisorUpTo(ranges[dim], rows));
    scf::SCFTilingOptions options;
    options.setTileSizes(sizes);
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    options.setMapping(llvm::to_vector(*blockMapping()));
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled))
      return op->emitOpError("hla-gpu-distribute-graph-ops: cannot tile");
    if (tiled->loops.empty()) {
      // One tile covers the op: tiling made no loop.
      rewriter.eraseOp(tiled->tiledOps.front());
      return wrapInOneBlock(rewriter, op);
    }
    rewriter.replaceOp(op, tiled->replacements);
    // Block indices from 0 in steps of 1 (what hla-gpu-map-chunk-loops
    // takes): the row offset becomes index * rows in the body.
    for (LoopLikeOpInterface loop : tiled->loops)
      if (auto forall = dyn_cast<scf::ForallOp>(loop.getOperation()))
        normalize(rewriter, forall);
    return success();
  }

  void normalize(IRRewriter &rewriter, scf::ForallOp forall) {
    llvm::SmallVector<int64_t> lbs(forall.getStaticLowerBound()),
        ubs(forall.getStaticUpperBound()), steps(forall.getStaticStep());
    if (!forall.getDynamicLowerBound().empty() ||
        !forall.getDynamicUpperBound().empty() ||
        !forall.getDynamicStep().empty())
      return;
    Block *body = forall.getBody();
    rewriter.setInsertionPointToStart(body);
    for (unsigned i = 0; i < lbs.size(); ++i) {
      if (lbs[i] == 0 && steps[i] == 1)
        continue;
      Value iv = body->getArgument(i);
      Value scaled = arith::AddIOp::create(
          rewriter, forall.getLoc(),
          arith::MulIOp::create(rewriter, forall.getLoc(), iv,
                                arith::ConstantIndexOp::create(
                                    rewriter, forall.getLoc(), steps[i])),
          arith::ConstantIndexOp::create(rewriter, forall.getLoc(), lbs[i]));
      rewriter.replaceAllUsesExcept(
          iv, scaled,
          scaled.getDefiningOp<arith::AddIOp>().getLhs().getDefiningOp());
      ubs[i] = (ubs[i] - lbs[i] + steps[i] - 1) / steps[i];
      lbs[i] = 0;
      steps[i] = 1;
    }
    forall.setStaticLowerBound(lbs);
    forall.setStaticUpperBound(ubs);
    forall.setStaticStep(steps);
  }

  void runOnOperation() override {
    if (rows < 1) {
      getOperation().emitError()
          << "hla-gpu-distribute-graph-ops: rows must be at least 1";
      return signalPassFailure();
    }
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    copyInsertedSlices(func);
    keepChunkLoops(func);
    llvm::SmallVector<linalg::LinalgOp> ops;
    for (Operation &op : func.getBody().front())
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        // Matrix products go to cuBLAS (hla-gpu-matmuls-to-cublas, after
        // bufferization) instead.
        if (cublasMatmuls && isCublasProduct(linalgOp))
          continue;
        ops.push_back(linalgOp);
      }
    llvm::SmallPtrSet<Operation *, 8> chunkLoops;
    for (auto loop : func.getBody().front().getOps<scf::ForallOp>())
      chunkLoops.insert(loop);
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops)
      if (failed(distribute(rewriter, op)))
        return signalPassFailure();
    for (auto loop : func.getBody().front().getOps<scf::ForallOp>())
      if (!chunkLoops.contains(loop))
        loop->setAttr(kGraphLoopAttrName, UnitAttr::get(&getContext()));
  }
};

} // namespace
