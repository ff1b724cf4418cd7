//===- ReportChunkWork.cpp - Products and FLOPs per chunk body ------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-report-chunk-work (Passes.td): one remark per chunk body counting its
// linalg work, so that the planner's gains (and the GPU generator's phases)
// can be read off a compile instead of a profile.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAREPORTCHUNKWORKPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;

namespace {

struct Work {
  int64_t contractions = 0, matvecs = 0, reductions = 0, elementwise = 0;
  double flops = 0;

  bool empty() const {
    return contractions + matvecs + reductions + elementwise == 0;
  }
};

/// Whether every operand of `op` is a statically shaped tensor.
bool isStatic(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    auto type = dyn_cast<RankedTensorType>(t);
    return type && type.hasStaticShape();
  });
}

/// Adds one linalg op to `work`. A contraction has two matrix inputs, a
/// matrix output and one reduction loop; a matrix-vector product the same
/// with a vector among them.
void count(linalg::LinalgOp op, Work &work) {
  if (op.getNumReductionLoops() == 0) {
    if (!isa<linalg::FillOp>(op))
      ++work.elementwise;
    return;
  }
  // Multiply-adds: one per point of the iteration space.
  double points = 1;
  if (isStatic(op))
    for (int64_t size : op.getStaticLoopRanges())
      points *= double(size);
  bool twoInputs = op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1;
  int64_t outRank = op.getRank(op.getDpsInitOperand(0));
  if (twoInputs && op.getNumReductionLoops() == 1 && op.getNumLoops() == 3 &&
      outRank == 2) {
    ++work.contractions;
    work.flops += 2 * points;
  } else if (twoInputs && op.getNumReductionLoops() == 1 &&
             op.getNumLoops() == 2 && outRank == 1) {
    ++work.matvecs;
    work.flops += 2 * points;
  } else {
    ++work.reductions;
  }
}

std::string describe(const Work &w) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << w.contractions << " contractions (" << int64_t(w.flops) << " FLOP), "
     << w.matvecs << " matrix-vector products, " << w.reductions
     << " other reductions, " << w.elementwise << " elementwise ops";
  return text;
}

/// Counts the ops of `region`, those of nested conditional regions and
/// loops apart.
void countRegion(Region &region, Work &body, Work &conditional, Work &nested) {
  region.walk([&](Operation *op) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp)
      return;
    bool inBranch = false, inLoop = false;
    for (Operation *parent = op->getParentOp();
         parent && parent != region.getParentOp();
         parent = parent->getParentOp()) {
      inBranch |= isa<scf::IfOp>(parent);
      inLoop |= isa<scf::ForOp, scf::WhileOp>(parent);
    }
    count(linalgOp, inLoop ? nested : inBranch ? conditional : body);
  });
}

struct HLAReportChunkWorkPass
    : public hla::impl::HLAReportChunkWorkPassBase<HLAReportChunkWorkPass> {
  void runOnOperation() override {
    getOperation()->walk([&](scf::ForallOp forall) {
      // The chunk loop: the first scf.for directly in the forall's body;
      // without one (the phased form) the body is one chunk.
      Region *body = &forall.getRegion();
      Operation *anchor = forall;
      for (Operation &op : forall.getBody()->getOperations())
        if (auto loop = dyn_cast<scf::ForOp>(op)) {
          body = &loop.getRegion();
          anchor = loop;
          break;
        }
      Work work, conditional, nested;
      countRegion(*body, work, conditional, nested);
      if (work.empty() && conditional.empty() && nested.empty())
        return;
      // At the location only: the op itself would be printed with it.
      InFlightDiagnostic remark = emitRemark(anchor->getLoc())
                                  << "hla-report-chunk-work: " << describe(work)
                                  << " per chunk";
      if (!conditional.empty())
        remark << "; in conditional regions: " << describe(conditional);
      if (!nested.empty())
        remark << "; per iteration of nested loops: " << describe(nested);
    });
  }
};

} // namespace
