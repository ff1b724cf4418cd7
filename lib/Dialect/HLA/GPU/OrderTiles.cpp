//===- OrderTiles.cpp - Chunk body order, shared bytes ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The chunk planner lists a body's ops term by term (a chunk loop's, or a
// pass parallel over chunks whose block has no loop); run in that order, a
// body with many products (hla2: fifteen 64 x 64 fragments per chunk) keeps
// more fragments alive at once than a warpgroup has registers, and ptxas
// spills. The ops are side-effect free tensor ops, so any order their
// operands allow computes the same values: this step picks one greedily,
// each time the ready op that adds the fewest fragment registers (its
// fragment results less the fragments it reads last), the planner's order
// breaking ties, and the ops a branch needs before any it does not; a second
// schedule breaks ties first by the readers an op makes ready, and the one
// with fewer registers at its peak is kept. Then the
// shared-memory copies of tiles whose lifetimes in that order do not overlap
// share bytes. Before placement, ops whose results only one side of a branch
// reads move into it (causal isolation's branch: the ordinary readout is then
// computed on its side only, not alive across the second readout on the other).
//
//===----------------------------------------------------------------------===//

#include "RegisterTiles.h"

#include "llvm/ADT/SetVector.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/ControlFlowSinkUtils.h"
#include "llvm/ADT/SetVector.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::hla::gpumap;

namespace {

/// Registers per thread of a fragment value (0 for other placements).
int64_t fragmentRegisters(const TilePlan &plan, Value v) {
  if (plan.of(v) != Placement::Frag)
    return 0;
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() / kTileThreads;
}

/// The values of `block` (results of its ops, its arguments) that `op` or
/// an op nested in it reads. A DPS init whose block argument is unused is
/// not read: it only gives the result's shape.
llvm::SmallVector<Value> readsIn(Operation *op, Block &block) {
  llvm::SmallVector<Value> reads;
  auto note = [&](Value v) {
    if (v.getParentBlock() == &block && !llvm::is_contained(reads, v))
      reads.push_back(v);
  };
  op->walk([&](Operation *inner) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(inner);
    for (OpOperand &operand : inner->getOpOperands()) {
      if (linalgOp && linalgOp.isDpsInit(&operand) &&
          !linalgOp.payloadUsesValueFromOperand(&operand))
        continue;
      note(operand.get());
    }
  });
  return reads;
}

/// The values `op` (and the ops nested in it) need computed first: every
/// operand defined in `block`, read or not.
llvm::SmallVector<Operation *> dependencies(Operation *op, Block &block) {
  llvm::SmallVector<Operation *> deps;
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &block && def != op &&
          !llvm::is_contained(deps, def))
        deps.push_back(def);
  });
  return deps;
}

/// One greedy order of `block`'s ops and the fragment registers alive at its
/// peak. With `preferReadying`, ties between ops adding as many registers
/// go to the op that makes more of its readers ready (so that the products
/// a sum adds are computed one reader at a time).
std::pair<int64_t, llvm::SmallVector<Operation *>>
scheduleBlock(const TilePlan &plan, Block &block, bool preferReadying) {
  llvm::SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;

  llvm::DenseMap<Operation *, llvm::SmallVector<Value>> reads;
  llvm::DenseMap<Operation *, unsigned> waitingOn;
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> dependents;
  llvm::DenseMap<Value, unsigned> readersLeft;
  for (Operation *op : ops) {
    reads[op] = readsIn(op, block);
    for (Value v : reads[op])
      ++readersLeft[v];
    llvm::SmallVector<Operation *> deps = dependencies(op, block);
    waitingOn[op] = deps.size();
    for (Operation *dep : deps)
      dependents[dep].push_back(op);
  }
  // Values the terminator reads stay alive to the end.
  llvm::DenseSet<Value> kept;
  for (Value v : block.getTerminator()->getOperands())
    kept.insert(v);

  auto added = [&](Operation *op) {
    int64_t regs = 0;
    for (Value result : op->getResults())
      regs += fragmentRegisters(plan, result);
    for (Value v : reads[op])
      if (readersLeft[v] == 1 && !kept.contains(v))
        regs -= fragmentRegisters(plan, v);
    return regs;
  };

  // Live fragment registers: the block's arguments and outer values it
  // reads, then each op's results until their last reader.
  int64_t live = 0, peak = 0;
  for (auto &[v, count] : readersLeft)
    if (!v.getDefiningOp() || v.getDefiningOp()->getBlock() != &block)
      live += fragmentRegisters(plan, v);
  peak = live;
  // A branch (causal isolation's second readout) holds a whole readout's
  // fragments on top of what is alive across it: what it needs comes first,
  // everything else after it (the summaries' products are not alive
  // through the branch).
  llvm::DenseSet<Operation *> beforeBranch;
  llvm::SmallVector<Operation *> work;
  for (Operation *op : ops)
    if (isa<scf::IfOp>(op))
      work.push_back(op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!beforeBranch.insert(op).second)
      continue;
    llvm::append_range(work, dependencies(op, block));
  }
  auto readies = [&](Operation *op) {
    int64_t count = 0;
    for (Operation *user : dependents[op])
      count += waitingOn[user] == 1;
    return count;
  };
  llvm::SmallVector<Operation *> ready, order;
  for (Operation *op : ops)
    if (waitingOn[op] == 0)
      ready.push_back(op);
  while (!ready.empty()) {
    auto best = llvm::min_element(ready, [&](Operation *a, Operation *b) {
      bool fa = beforeBranch.contains(a), fb = beforeBranch.contains(b);
      if (fa != fb)
        return fa;
      int64_t ca = added(a), cb = added(b);
      if (ca != cb)
        return ca < cb;
      if (preferReadying) {
        int64_t ra = readies(a), rb = readies(b);
        if (ra != rb)
          return ra > rb;
      }
      return position[a] < position[b];
    });
    Operation *op = *best;
    ready.erase(best);
    order.push_back(op);
    live += added(op);
    peak = std::max(peak, live);
    for (Value v : reads[op])
      --readersLeft[v];
    for (Operation *user : dependents[op])
      if (--waitingOn[user] == 0)
        ready.push_back(user);
  }
  assert(order.size() == ops.size() && "a dependency cycle in a block");
  return {peak, order};
}

/// Orders `block` by the schedule with fewer fragment registers at its
/// peak (neither tie-break wins everywhere: hla2's backward needs 304
/// registers per thread of two warpgroups with it, 336 without; AHLA's 224
/// and 208); returns that peak.
int64_t orderBlock(const TilePlan &plan, Block &block) {
  auto [peak, order] = scheduleBlock(plan, block, /*preferReadying=*/false);
  auto [readyingPeak, readyingOrder] =
      scheduleBlock(plan, block, /*preferReadying=*/true);
  if (readyingPeak < peak) {
    peak = readyingPeak;
    order = std::move(readyingOrder);
  }
  Operation *terminator = block.getTerminator();
  for (Operation *op : order)
    op->moveBefore(terminator);
  return peak;
}

} // namespace

void mlir::hla::gpumap::sinkIntoBranches(scf::ForallOp forall) {
  DominanceInfo dominance(forall);
  forall.walk([&](scf::IfOp branch) {
    llvm::SmallVector<Region *> regions;
    getSinglyExecutedRegionsToSink(
        cast<RegionBranchOpInterface>(branch.getOperation()), regions);
    controlFlowSink(
        regions, dominance,
        [](Operation *op, Region *) {
          return !isa<scf::ForOp, scf::IfOp>(op) && isMemoryEffectFree(op);
        },
        [](Operation *op, Region *region) {
          op->moveBefore(&region->front(), region->front().begin());
        });
  });
}

void mlir::hla::gpumap::orderForRegisterPressure(TilePlan &plan) {
  // A body without a chunk loop (a pass parallel over chunks: the
  // backward's gradients) holds its products in the forall's block itself.
  // A body with one is left as it is: the greedy order knows nothing of the
  // peak inside the loop and could move an op across it, alive throughout.
  Block &body = *plan.forall.getBody();
  if (body.getOps<scf::ForOp>().empty())
    plan.peakFragmentRegisters = orderBlock(plan, body);
  // Chunk loop bodies and the branches in them (causal isolation's second
  // readout).
  plan.forall.walk([&](Operation *op) {
    if (!isa<scf::ForOp, scf::IfOp>(op))
      return;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        plan.peakFragmentRegisters =
            std::max(plan.peakFragmentRegisters, orderBlock(plan, block));
  });
}

void mlir::hla::gpumap::shareSharedMemory(TilePlan &plan) {
  // Program positions in the (ordered) body, and each loop's extent.
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseMap<Operation *, int64_t> lastInside;
  int64_t next = 0;
  plan.forall.getBody()->walk<WalkOrder::PreOrder>(
      [&](Operation *op) { position[op] = next++; });
  plan.forall.getBody()->walk([&](scf::ForOp loop) {
    int64_t last = position[loop];
    loop.getBody()->walk(
        [&](Operation *op) { last = std::max(last, position.lookup(op)); });
    lastInside[loop] = last;
  });

  // A copy is alive from its tile's definition (a fragment is copied no
  // earlier) to its last reader; a reader in a loop the tile is defined outside
  // reads it in every iteration.
  struct Interval {
    int64_t start, end;
  };
  llvm::SmallVector<Interval> alive;
  for (const TilePlan::Staged &s : plan.staged) {
    Value tile = s.tile;
    Operation *def = tile.getDefiningOp();
    if (!def)
      def = tile.getParentBlock()->getParentOp();
    // On-demand tiles are copied as soon as their inputs are there, perhaps
    // before their op: from the start of their block.
    if (plan.of(tile) == Placement::Expr && def->getBlock() &&
        def->getBlock() != plan.forall.getBody())
      def = def->getBlock()->getParentOp();
    int64_t start = plan.forall->isProperAncestor(def) ? position[def] : 0;
    int64_t end = start;
    // An exact copy is read wherever an on-demand value made from the
    // fragment (a row of it) is evaluated: by their readers too.
    llvm::SetVector<Operation *> readers;
    llvm::SmallVector<Value> reads = {tile};
    while (!reads.empty()) {
      Value v = reads.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!readers.insert(user) || !s.exact)
          continue;
        for (Value r : user->getResults())
          if (plan.of(r) == Placement::Expr)
            reads.push_back(r);
      }
    }
    for (Operation *user : readers) {
      if (!position.count(user))
        continue;
      end = std::max(end, position[user]);
      for (Operation *loop = user->getParentOfType<scf::ForOp>(); loop;
           loop = loop->getParentOfType<scf::ForOp>()) {
        if (loop->isAncestor(def))
          break;
        start = std::min(start, position[loop]);
        end = std::max(end, lastInside[loop]);
      }
    }
    alive.push_back({start, end});
  }

  // Landing buffers and reduction scratch first, then first fit: each copy
  // at the lowest offset no copy alive at the same time occupies.
  int64_t offset = 0;
  for (TilePlan::Landing &l : plan.landing) {
    l.offset = offset;
    offset += llvm::alignTo(l.bytes(), int64_t(128));
  }
  for (auto &[op, words] : plan.reductionScratch) {
    words = offset;
    offset += llvm::alignTo(TilePlan::scratchBytes(op), int64_t(128));
  }
  for (auto &[op, scratch] : plan.conversionScratch) {
    scratch.offset = offset;
    offset += llvm::alignTo(scratch.bytes(), int64_t(128));
  }
  int64_t base = offset, end = offset;
  llvm::SmallVector<unsigned> order(plan.staged.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return std::make_pair(alive[a].start, a) <
           std::make_pair(alive[b].start, b);
  });
  auto bytes = [&](unsigned i) -> int64_t {
    return llvm::alignTo(plan.staged[i].bytes(), int64_t(128));
  };
  llvm::SmallVector<unsigned> placed;
  for (unsigned i : order) {
    if (plan.staged[i].landing)
      continue; // no bytes of its own
    int64_t at = base;
    bool moved = true;
    while (moved) {
      moved = false;
      for (unsigned j : placed) {
        bool together =
            alive[i].start <= alive[j].end && alive[j].start <= alive[i].end;
        int64_t other = plan.staged[j].offset;
        if (together && at < other + bytes(j) && other < at + bytes(i)) {
          at = other + bytes(j);
          moved = true;
        }
      }
    }
    plan.staged[i].offset = at;
    end = std::max(end, at + bytes(i));
    placed.push_back(i);
  }
  plan.sharedBytes = end;
}
