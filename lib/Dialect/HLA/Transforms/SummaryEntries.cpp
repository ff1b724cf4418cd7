//===- SummaryEntries.cpp - A function's summary and combine ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-add-summary-entries: beside `f = attention(...)`, the two functions
// that split one sequence across devices: `f_summary` (the monoid's total
// of a span of tokens, every component) and `f_combine` (a state carried
// through a later span's total). Both come from the op's monoid
// (getAttentionMonoid), so nothing here is per op.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"
#include "TileBuilder.h"
#include "TransformUtils.h"
#include "hla/Conversion/HLAToLinalg.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/ChunkVjp.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAADDSUMMARYENTRIESPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct AddSummaryEntriesPass
    : public hla::impl::HLAAddSummaryEntriesPassBase<AddSummaryEntriesPass> {
  using HLAAddSummaryEntriesPassBase::HLAAddSummaryEntriesPassBase;

  /// The attention op `func` returns the output of, checked.
  FailureOr<AttentionOpInterface> attentionOf(func::FuncOp func) {
    auto fail = [&](Operation *at, const llvm::Twine &why) {
      at->emitError() << "hla-add-summary-entries: " << why;
      return failure();
    };
    Block &body = func.getBody().front();
    AttentionOpInterface attention = returnedAttentionOp(func);
    Operation *op = attention;
    if (!attention)
      return fail(func, "@" + func.getName() +
                            " must return the output of one attention op "
                            "and do nothing else");
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &body)
        return fail(op, "the attention op's operands must be arguments of @" +
                            func.getName());
    }
    if (body.getOperations().size() != 2)
      return fail(func, "@" + func.getName() +
                            " must return the output of one attention op "
                            "and do nothing else");
    return attention;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func || func.isExternal()) {
      module.emitError() << "hla-add-summary-entries: no function @" << function
                         << " with a body";
      return signalPassFailure();
    }
    for (llvm::StringRef suffix : {"_summary", "_combine", "_combine_vjp"})
      if (module.lookupSymbol(function + suffix.str())) {
        module.emitError() << "hla-add-summary-entries: @" << function << suffix
                           << " already exists";
        return signalPassFailure();
      }
    if (failed(attentionOf(func)))
      return signalPassFailure();

    // The summary: a copy of the function whose attention op is replaced by
    // the total of its segments, without the initial state's arguments.
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(func);
    auto summary = cast<func::FuncOp>(b.clone(*func));
    summary.setSymName(function + "_summary");
    AttentionOpInterface op = *attentionOf(summary);
    Location loc = op.getLoc();
    Block &body = summary.getBody().front();
    llvm::BitVector initialArgs(body.getNumArguments());
    for (Value state : op.getInitialState())
      initialArgs.set(cast<BlockArgument>(state).getArgNumber());
    b.setInsertionPoint(op);
    std::string reason;
    FailureOr<SegmentOp> segments = buildAttentionSegments(b, op, reason);
    if (failed(segments)) {
      op->emitError() << "hla-add-summary-entries: " << reason;
      summary.erase();
      return signalPassFailure();
    }
    MonoidAttr monoid = segments->getMonoid();
    // [B, T, H, shape] -> [B, H, shape] ([N, H, shape] per packed sequence).
    Value cu = op.getCuSeqlens();
    llvm::SmallVector<Type> totalTypes;
    for (Value segment : segments->getResults()) {
      auto type = cast<RankedTensorType>(segment.getType());
      llvm::SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + 1);
      if (cu)
        shape[0] = cast<RankedTensorType>(cu.getType()).getDimSize(0) - 1;
      totalTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
    }
    auto total = TotalOp::create(b, loc, totalTypes, monoid,
                                 segments->getResults(), cu, /*axis=*/1);
    Operation *ret = body.getTerminator();
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, loc, total.getResults());
    ret->erase();
    op->erase();
    if (failed(summary.eraseArguments(initialArgs))) {
      summary.emitError() << "hla-add-summary-entries: cannot drop the "
                             "initial state's arguments";
      return signalPassFailure();
    }
    summary.setFunctionType(
        b.getFunctionType(body.getArgumentTypes(), totalTypes));

    // The combine: a state (the carried components) through a later span's
    // total (every component).
    const MonoidSpec &spec = monoid.getSpec();
    llvm::SmallVector<Type> argTypes;
    for (unsigned c : spec.getCarryComponents())
      argTypes.push_back(totalTypes[c]);
    llvm::SmallVector<Type> stateTypes(argTypes);
    llvm::append_range(argTypes, totalTypes);
    b.setInsertionPointAfter(summary);
    auto combine = func::FuncOp::create(
        b, loc, function + "_combine", b.getFunctionType(argTypes, stateTypes));
    Block *entry = combine.addEntryBlock();
    b.setInsertionPointToStart(entry);
    ValueRange args = entry->getArguments();
    llvm::SmallVector<Value> state =
        combineCarried(b, loc, monoid, args.take_front(stateTypes.size()),
                       args.drop_front(stateTypes.size()), totalTypes);
    func::ReturnOp::create(b, loc, state);
    if (failed(addCombineVjp(b, combine, monoid, stateTypes, totalTypes)))
      return signalPassFailure();
  }

  /// Where the monoid's backward is derived (every carried component
  /// depends on the inputs): `@<function>_combine_vjp(state, total, λ) ->
  /// μ`, the cotangent of a state from that of the state after a later
  /// span, μ = (∂(state ∘ total)/∂state)ᵀ λ (the transposed combine of the
  /// derived backward, ChunkVjp.h). The backward across ranks carries the
  /// final state's cotangent back through the spans after a rank's with it.
  /// `@<function>_combine_vjp(state, total, λ) -> μ` after `after`, empty;
  /// `b` at the start of its body. Its arguments: the state, the total, λ.
  std::tuple<func::FuncOp, ValueRange, ValueRange, ValueRange>
  beginCombineVjp(OpBuilder &b, func::FuncOp after,
                  llvm::ArrayRef<Type> stateTypes,
                  llvm::ArrayRef<Type> totalTypes) {
    size_t k = stateTypes.size(), n = totalTypes.size();
    llvm::SmallVector<Type> argTypes(stateTypes);
    llvm::append_range(argTypes, totalTypes);
    llvm::append_range(argTypes, stateTypes);
    b.setInsertionPointAfter(after);
    auto fn = func::FuncOp::create(b, after.getLoc(), function + "_combine_vjp",
                                   b.getFunctionType(argTypes, stateTypes));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    ValueRange args = entry->getArguments();
    return {fn, args.take_front(k), args.slice(k, n), args.take_back(k)};
  }

  /// Without an index plan (the gated delta rule's matrix transition), the
  /// combine's linalg form differentiated in reverse (ReverseDiff.h).
  LogicalResult addCombineVjp(OpBuilder &b, func::FuncOp after,
                              MonoidAttr monoid,
                              llvm::ArrayRef<Type> stateTypes,
                              llvm::ArrayRef<Type> totalTypes) {
    const MonoidSpec &spec = monoid.getSpec();
    std::string error;
    FailureOr<chunk::ChunkVjpPlan> plan = chunk::buildChunkVjpPlan(spec, error);
    llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
    if (failed(plan)) {
      if (!chunk::isGatedDeltaRule(spec, b.getContext()))
        return success();
      return addReversedCombine(b, after, monoid, stateTypes, totalTypes);
    }
    if (llvm::any_of(carried,
                     [&](unsigned c) { return !plan->differentiable[c]; }))
      return success();
    unsigned n = spec.components.size();
    auto aux =
        MonoidAttr::get(b.getContext(), chunk::transposedCombineMonoid(*plan));
    Location loc = after.getLoc();
    auto [fn, state, total, lambda] =
        beginCombineVjp(b, after, stateTypes, totalTypes);
    auto empty = [&](unsigned c) -> Value {
      auto type = cast<RankedTensorType>(totalTypes[c]);
      return tensor::EmptyOp::create(b, loc, type.getShape(),
                                     type.getElementType());
    };
    // Components: the state's, λ, μ_B (ChunkVjp.h); side A the state and
    // λ, side B the total.
    llvm::SmallVector<Value> lhs, rhs;
    llvm::SmallVector<Type> types;
    for (unsigned part = 0; part < 3; ++part)
      for (unsigned c = 0; c < n; ++c) {
        types.push_back(totalTypes[c]);
        auto pos = llvm::find(carried, c);
        bool isCarried = pos != carried.end();
        Value a = part == 0 && isCarried   ? state[pos - carried.begin()]
                  : part == 1 && isCarried ? lambda[pos - carried.begin()]
                                           : empty(c);
        lhs.push_back(a);
        rhs.push_back(part == 0 ? total[c] : empty(c));
      }
    auto transposed =
        CombineOp::create(b, loc, TypeRange(types), aux, lhs, rhs);
    llvm::SmallVector<Value> mu;
    for (unsigned c : carried)
      mu.push_back(transposed.getResult(n + c));
    func::ReturnOp::create(b, loc, mu);
    return success();
  }

  /// `@<function>_combine_vjp(state, total, λ) -> μ` as the reverse of the
  /// combine lowered to linalg: μ = (∂(state ∘ total)/∂state)ᵀ λ (for KDA,
  /// the total's transition transposed applied to λ).
  LogicalResult addReversedCombine(OpBuilder &b, func::FuncOp after,
                                   MonoidAttr monoid,
                                   llvm::ArrayRef<Type> stateTypes,
                                   llvm::ArrayRef<Type> totalTypes) {
    Location loc = after.getLoc();
    auto [fn, state, total, lambda] =
        beginCombineVjp(b, after, stateTypes, totalTypes);
    Block *entry = &fn.getBody().front();
    llvm::SmallVector<Value> next =
        combineCarried(b, loc, monoid, state, total, totalTypes);
    auto ret = func::ReturnOp::create(b, loc, next);
    if (auto combine = next.front().getDefiningOp<CombineOp>())
      lowerCombineToLinalg(combine);
    llvm::SmallVector<Operation *> program;
    for (Operation &op : entry->without_terminator())
      program.push_back(&op);
    llvm::SmallVector<std::pair<Value, Value>> seeds;
    for (auto [after, cotangent] : llvm::zip(ret.getOperands(), lambda))
      seeds.push_back({after, cotangent});
    b.setInsertionPoint(ret);
    FailureOr<llvm::SmallVector<Value>> mu = emitReverseDiff(
        b, loc, program, seeds, llvm::SmallVector<Value>(state));
    if (failed(mu)) {
      fn.erase();
      return failure();
    }
    func::ReturnOp::create(b, loc, *mu);
    ret.erase();
    return success();
  }
};

} // namespace
