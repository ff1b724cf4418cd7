//===- ChunkForms.cpp - The three chunk forms -------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// phased: summaries of all chunks, an exclusive scan over them, readouts
//         of all chunks;
// fused: one loop per (sequence, head) carrying the state chunk to chunk;
// segmented: runs of chunks summarised, combined and read out.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace mlir::hla::chunk {

LogicalResult ChunkRewriter::rewritePhased() {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  SegmentOp segment = info.segment;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  OpBuilder hoist(segment);
  Type f32 = b.getF32Type();
  prepareShapes();
  checkOffsets(b, loc);
  prepareTiles(b, hoist, loc);

  // Phase 1: chunk summaries of every component.
  llvm::SmallVector<Value> summaryInits;
  llvm::SmallVector<llvm::SmallVector<int64_t>> summaryShapes;
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    llvm::SmallVector<int64_t> shape = {info.batch, numChunks, info.heads};
    llvm::append_range(shape, componentShapes[c]);
    summaryShapes.push_back(shape);
    summaryInits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
  }
  llvm::SmallVector<unsigned> summaryInputs = usedInputs(plan.summaries);
  auto phase1 = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, numChunks), idx(b, info.heads)},
      summaryInits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = phase1.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), ni = body->getArgument(1),
          hi = body->getArgument(2);
    auto [start, length] = chunkBounds(b, loc, ni);
    ChunkTiles tiles;
    tiles.chunk = chunk;
    tiles.length = length;
    loadTokens(b, loc, tiles, bi, start, hi, summaryInputs);
    FailureOr<llvm::SmallVector<Value>> values = emitSummaries(b, loc, tiles);
    if (failed(values))
      return failure();
    b.setInsertionPointToStart(phase1.getTerminator().getBody());
    for (unsigned c = 0; c < spec.components.size(); ++c) {
      unsigned rank = summaryShapes[c].size();
      llvm::SmallVector<OpFoldResult> offsets = {bi, ni, hi};
      llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1), idx(b, 1)};
      for (int64_t s : componentShapes[c]) {
        offsets.push_back(idx(b, 0));
        sizes.push_back(idx(b, s));
      }
      llvm::SmallVector<OpFoldResult> strides(rank, idx(b, 1));
      tensor::ParallelInsertSliceOp::create(b, loc, (*values)[c],
                                            body->getArgument(3 + c), offsets,
                                            sizes, strides);
    }
  }

  // Phase 2: the state carried into every chunk, and the final state.
  llvm::SmallVector<Type> scanTypes;
  for (unsigned c : carried)
    scanTypes.push_back(summaryInits[c].getType());
  bool wantFinal = !scan.getFinal().empty();
  if (wantFinal)
    llvm::append_range(scanTypes, scan.getFinal().getTypes());
  auto carry = ScanOp::create(b, loc, scanTypes, scan.getMonoid(),
                              phase1.getResults(), scan.getInit(),
                              /*cu_seqlens=*/chunkOffsets, /*exclusive=*/true,
                              /*axis=*/1);

  // Phase 3: every readout at every position.
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  Value outInit = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                          outType.getElementType());
  llvm::SmallVector<unsigned> readoutInputs = usedInputs(plan.readouts);
  auto phase3 = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, numChunks), idx(b, info.heads)},
      ValueRange{outInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = phase3.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), ni = body->getArgument(1),
          hi = body->getArgument(2);
    auto [start, length] = chunkBounds(b, loc, ni);
    ChunkTiles tiles;
    tiles.chunk = chunk;
    tiles.length = length;
    loadTokens(b, loc, tiles, bi, start, hi, readoutInputs);
    if (cuSeqlens) {
      // The slot's sequence and where it starts (for LinSimp's windows).
      auto asIndex = [&](Value v) -> Value {
        return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
      };
      tiles.sequence = asIndex(
          tensor::ExtractOp::create(b, loc, slotSequence, ValueRange{ni}));
      tiles.sequenceStart = asIndex(tensor::ExtractOp::create(
          b, loc, cuSeqlens, ValueRange{tiles.sequence}));
    }
    tiles.carried.assign(spec.components.size(), Value());
    for (auto [i, c] : llvm::enumerate(carried)) {
      llvm::ArrayRef<int64_t> shape = componentShapes[c];
      llvm::SmallVector<OpFoldResult> offsets = {bi, ni, hi};
      llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1), idx(b, 1)};
      for (int64_t s : shape) {
        offsets.push_back(idx(b, 0));
        sizes.push_back(idx(b, s));
      }
      llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
      tiles.carried[c] = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get(shape, f32), carry.getResult(i),
          offsets, sizes, strides);
    }
    FailureOr<Value> result = emitCausalRows(b, loc, tiles);
    if (failed(result))
      return failure();
    Value rows = tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic, width},
                              outType.getElementType()),
        *result, llvm::ArrayRef<OpFoldResult>{idx(b, 0), idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{length, idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
    b.setInsertionPointToStart(phase3.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, rows, body->getArgument(3),
        llvm::ArrayRef<OpFoldResult>{bi, start, hi, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), length, idx(b, 1),
                                     idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                     idx(b, 1)});
  }

  finish(
      b, loc, phase3.getResult(0),
      llvm::SmallVector<Value>(carry.getResults().drop_front(carried.size())));
  return success();
}

LogicalResult ChunkRewriter::rewriteFused() {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  Type f32 = b.getF32Type();
  prepareShapes();
  checkOffsets(b, loc);
  if (failed(prepareValueTiles()))
    return failure();

  RankedTensorType outType = info.outputType();
  Type outElement = outType.getElementType();
  int64_t width = valueWidth;
  bool wantFinal = !scan.getFinal().empty();
  llvm::SmallVector<Value> inits = {tensor::EmptyOp::create(
      b, loc, outType.getShape(), outType.getElementType())};
  // The final states have every value column (the scan's result types).
  // Components without value columns come out of every value tile alike;
  // each tile writes its own copy (parallel writes must not overlap) and
  // the first tile's is kept.
  auto perTile = [&](unsigned c) {
    return valueTiles > 1 && componentValueDims[c].empty();
  };
  if (wantFinal)
    for (auto [i, state] : llvm::enumerate(scan.getFinal())) {
      auto shape =
          llvm::to_vector(cast<RankedTensorType>(state.getType()).getShape());
      if (perTile(carried[i]))
        shape.insert(shape.begin() + 2, valueTiles);
      inits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
    }
  llvm::SmallVector<unsigned> inputs = usedInputs(plan.summaries);
  for (unsigned input : usedInputs(plan.readouts))
    if (!llvm::is_contained(inputs, input))
      inputs.push_back(input);

  llvm::SmallVector<OpFoldResult> bounds = {idx(b, sequences),
                                            idx(b, info.heads)};
  if (valueTiles > 1)
    bounds.push_back(idx(b, valueTiles));
  auto loop = scf::ForallOp::create(b, loc, bounds, inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value si = body->getArgument(0), hi = body->getArgument(1);
  llvm::ArrayRef<BlockArgument> outs = loop.getRegionIterArgs();
  if (valueTiles > 1)
    valueOffset = arith::MulIOp::create(
        b, loc, body->getArgument(2),
        arith::ConstantIndexOp::create(b, loc, valueWidth));
  // Everything the chunk loop needs is built inside the (sequence, head)
  // loop, so that its body is self-contained: a GPU kernel's thread block
  // builds its own masks and slot table instead of reading the host's.
  prepareTiles(b, b, loc);
  auto [batch, first, seqLength, firstSlot, endSlot] =
      sequenceSlots(b, loc, si);
  auto rowsType =
      RankedTensorType::get({ShapedType::kDynamic, width}, outElement);
  Value rowsOut = tensor::ExtractSliceOp::create(
      b, loc, rowsType, outs[0],
      llvm::ArrayRef<OpFoldResult>{batch, first, hi, valueColumn(b)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), seqLength, idx(b, 1),
                                   idx(b, width)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1), idx(b, 1)});
  FailureOr<scf::ForOp> chunks = emitChunkLoop(
      b, loc, batch, hi, firstSlot, endSlot, initialCarry(b, loc, si, hi),
      rowsOut, first, /*allComponents=*/false, inputs, si, first);
  if (failed(chunks))
    return failure();
  size_t k = carried.size();

  b.setInsertionPointToStart(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, chunks->getResult(k), outs[0],
      llvm::ArrayRef<OpFoldResult>{batch, first, hi, valueColumn(b)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), seqLength, idx(b, 1),
                                   idx(b, width)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1), idx(b, 1)});
  if (wantFinal)
    for (auto [i, c] : llvm::enumerate(carried))
      insertComponent(
          b, loc, chunks->getResult(i), outs[1 + i], c,
          perTile(c)
              ? llvm::SmallVector<OpFoldResult>{si, hi, body->getArgument(2)}
              : llvm::SmallVector<OpFoldResult>{si, hi});

  llvm::SmallVector<Value> finals(loop.getResults().drop_front());
  b.setInsertionPointAfter(loop);
  for (auto [i, c] : llvm::enumerate(carried)) {
    if (!wantFinal || !perTile(c))
      continue;
    auto type = cast<RankedTensorType>(scan.getFinal()[i].getType());
    auto full = cast<RankedTensorType>(finals[i].getType());
    llvm::SmallVector<OpFoldResult> offsets(full.getRank(), idx(b, 0));
    llvm::SmallVector<OpFoldResult> sizes, strides(full.getRank(), idx(b, 1));
    for (int64_t size : full.getShape())
      sizes.push_back(idx(b, size));
    sizes[2] = idx(b, 1);
    finals[i] = tensor::ExtractSliceOp::create(b, loc, type, finals[i], offsets,
                                               sizes, strides);
  }
  finish(b, loc, loop.getResult(0), finals);
  return success();
}

LogicalResult ChunkRewriter::rewriteSegmented(int64_t segments) {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  Type f32 = b.getF32Type();
  prepareShapes();
  if (cuSeqlens) {
    return chunkError(info.readout)
           << "the segmented form does not take packed sequences "
              "(cu_seqlens); use the fused form";
  }
  // Segments of equal numbers of chunks, none empty.
  int64_t perSegment = (numChunks + std::max<int64_t>(segments, 1) - 1) /
                       std::max<int64_t>(segments, 1);
  segments = (numChunks + perSegment - 1) / perSegment;

  RankedTensorType outType = info.outputType();
  Type outElement = outType.getElementType();
  int64_t width = outType.getDimSize(3);
  bool wantFinal = !scan.getFinal().empty();
  auto segmentBounds = [&](OpBuilder &nb, Value s) {
    Value per = arith::ConstantIndexOp::create(nb, loc, perSegment);
    Value lo = arith::MulIOp::create(nb, loc, s, per);
    Value hi = arith::MinSIOp::create(
        nb, loc, arith::AddIOp::create(nb, loc, lo, per),
        arith::ConstantIndexOp::create(nb, loc, numChunks));
    return std::make_pair(lo, hi);
  };

  // 1. Every segment's summary, folded from the identity (every component:
  //    combining segments needs them all).
  FailureOr<scf::ForallOp> summarize =
      emitRunSummaries(b, loc, segments, perSegment);
  if (failed(summarize))
    return failure();

  // 2. Every segment's outputs, from the state its predecessors leave.
  llvm::SmallVector<Value> inits = {
      tensor::EmptyOp::create(b, loc, outType.getShape(), outElement)};
  if (wantFinal)
    for (unsigned c : carried)
      inits.push_back(emptyPerRun(b, loc, c, segments));
  llvm::SmallVector<unsigned> inputs = usedInputs(plan.summaries);
  for (unsigned input : usedInputs(plan.readouts))
    if (!llvm::is_contained(inputs, input))
      inputs.push_back(input);
  llvm::SmallVector<Type> summaryTypes = componentTypes(b);
  auto readoutLoop = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, segments), idx(b, info.heads)}, inits,
      std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = readoutLoop.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), si = body->getArgument(1),
          hi = body->getArgument(2);
    prepareTiles(b, b, loc);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    size_t k = carried.size();
    auto before = scf::ForOp::create(
        b, loc, c0, si, c1, initialCarry(b, loc, bi, hi),
        [&](OpBuilder &nb, Location l, Value previous, ValueRange carry) {
          llvm::SmallVector<Value> summary;
          for (unsigned c = 0; c < spec.components.size(); ++c)
            summary.push_back(componentSlice(nb, l, summarize->getResult(c), c,
                                             {bi, previous, hi}));
          llvm::SmallVector<Value> next = ::mlir::hla::combineCarried(
              nb, l, info.monoid, carry, summary, summaryTypes);
          for (size_t i = 0; i < k; ++i)
            next[i] =
                linalg::CopyOp::create(nb, l, next[i], carry[i]).getResult(0);
          scf::YieldOp::create(nb, l, next);
        });
    auto [lo, end] = segmentBounds(b, si);
    Value c = arith::ConstantIndexOp::create(b, loc, chunk);
    Value first = arith::MulIOp::create(b, loc, lo, c);
    Value last = arith::MinSIOp::create(
        b, loc, arith::MulIOp::create(b, loc, end, c),
        arith::ConstantIndexOp::create(b, loc, info.length));
    Value length = arith::SubIOp::create(b, loc, last, first);
    auto rowsType =
        RankedTensorType::get({ShapedType::kDynamic, width}, outElement);
    llvm::SmallVector<OpFoldResult> offsets = {bi, first, hi, idx(b, 0)};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), length, idx(b, 1),
                                             idx(b, width)};
    llvm::SmallVector<OpFoldResult> strides(4, idx(b, 1));
    Value rowsOut = tensor::ExtractSliceOp::create(
        b, loc, rowsType, body->getArgument(3), offsets, sizes, strides);
    FailureOr<scf::ForOp> chunks = emitChunkLoop(
        b, loc, bi, hi, lo, end, llvm::SmallVector<Value>(before.getResults()),
        rowsOut, first, /*allComponents=*/false, inputs);
    if (failed(chunks))
      return failure();
    b.setInsertionPointToStart(readoutLoop.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, chunks->getResult(k),
                                          body->getArgument(3), offsets, sizes,
                                          strides);
    if (wantFinal)
      for (auto [i, comp] : llvm::enumerate(carried))
        insertComponent(b, loc, chunks->getResult(i), body->getArgument(4 + i),
                        comp, {bi, si, hi});
  }

  // The final state is the last segment's, copied out per (batch entry,
  // head) by a loop of its own: on a GPU the copy is a kernel, not a host
  // access to device memory.
  llvm::SmallVector<Value> finalStates;
  if (wantFinal) {
    llvm::SmallVector<Value> finalInits;
    for (unsigned c : carried) {
      llvm::SmallVector<int64_t> shape = {info.batch, info.heads};
      llvm::append_range(shape, componentShapes[c]);
      finalInits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
    }
    auto copyOut =
        scf::ForallOp::create(b, loc, {idx(b, info.batch), idx(b, info.heads)},
                              finalInits, std::nullopt);
    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = copyOut.getBody();
      b.setInsertionPointToStart(body);
      Value bi = body->getArgument(0), hi = body->getArgument(1);
      llvm::SmallVector<Value> states;
      for (auto [i, c] : llvm::enumerate(carried))
        states.push_back(componentSlice(b, loc, readoutLoop.getResult(1 + i), c,
                                        {bi, idx(b, segments - 1), hi}));
      b.setInsertionPointToStart(copyOut.getTerminator().getBody());
      for (auto [i, c] : llvm::enumerate(carried))
        insertComponent(b, loc, states[i], body->getArgument(2 + i), c,
                        {bi, hi});
    }
    finalStates = llvm::SmallVector<Value>(copyOut.getResults());
  }
  finish(b, loc, readoutLoop.getResult(0), finalStates);
  return success();
}

FailureOr<scf::ForallOp> ChunkRewriter::emitRunSummaries(OpBuilder &b,
                                                         Location loc,
                                                         int64_t runs,
                                                         int64_t perRun) {
  Type f32 = b.getF32Type();
  llvm::SmallVector<Value> sumInits;
  for (unsigned c = 0; c < spec.components.size(); ++c)
    sumInits.push_back(emptyPerRun(b, loc, c, runs));
  auto summarize = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, runs), idx(b, info.heads)}, sumInits,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = summarize.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), ri = body->getArgument(1),
        hi = body->getArgument(2);
  prepareTiles(b, b, loc);
  Value per = arith::ConstantIndexOp::create(b, loc, perRun);
  Value lo = arith::MulIOp::create(b, loc, ri, per);
  Value end =
      arith::MinSIOp::create(b, loc, arith::AddIOp::create(b, loc, lo, per),
                             arith::ConstantIndexOp::create(b, loc, numChunks));
  llvm::SmallVector<Value> identity;
  for (unsigned c = 0; c < spec.components.size(); ++c)
    identity.push_back(buildMonoidIdentity(
        b, loc, spec, c, RankedTensorType::get(componentShapes[c], f32)));
  FailureOr<scf::ForOp> chunks =
      emitChunkLoop(b, loc, bi, hi, lo, end, identity, Value(), Value(),
                    /*allComponents=*/true, usedInputs(plan.summaries));
  if (failed(chunks))
    return failure();
  b.setInsertionPointToStart(summarize.getTerminator().getBody());
  for (unsigned c = 0; c < spec.components.size(); ++c)
    insertComponent(b, loc, chunks->getResult(c), body->getArgument(3 + c), c,
                    {bi, ri, hi});
  return summarize;
}

LogicalResult ChunkRewriter::rewriteTotal() {
  TotalOp total = info.total;
  Location loc = total.getLoc();
  OpBuilder b(total);
  Type f32 = b.getF32Type();
  prepareShapes();
  checkOffsets(b, loc);
  llvm::SmallVector<Value> inits;
  for (Value result : total.getTotals()) {
    auto type = cast<RankedTensorType>(result.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(), f32));
  }
  auto loop = scf::ForallOp::create(
      b, loc, {idx(b, sequences), idx(b, info.heads)}, inits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = loop.getBody();
    b.setInsertionPointToStart(body);
    Value si = body->getArgument(0), hi = body->getArgument(1);
    prepareTiles(b, b, loc);
    auto [batch, first, length, firstSlot, endSlot] = sequenceSlots(b, loc, si);
    llvm::SmallVector<Value> identity;
    for (unsigned c = 0; c < spec.components.size(); ++c)
      identity.push_back(buildMonoidIdentity(
          b, loc, spec, c, RankedTensorType::get(componentShapes[c], f32)));
    FailureOr<scf::ForOp> chunks = emitChunkLoop(
        b, loc, batch, hi, firstSlot, endSlot, identity, Value(), Value(),
        /*allComponents=*/true, usedInputs(plan.summaries),
        cuSeqlens ? si : Value(), cuSeqlens ? first : Value());
    if (failed(chunks))
      return failure();
    b.setInsertionPointToStart(loop.getTerminator().getBody());
    for (unsigned c = 0; c < spec.components.size(); ++c)
      insertComponent(b, loc, chunks->getResult(c), body->getArgument(2 + c), c,
                      {si, hi});
  }
  total.replaceAllUsesWith(loop.getResults());
  total.erase();
  llvm::SmallVector<Operation *> producers;
  for (Value input : info.segment.getInputs())
    if (auto features = input.getDefiningOp<FeatureMapOp>())
      producers.push_back(features);
  info.segment.erase();
  for (Operation *op : producers)
    if (op->use_empty())
      op->erase();
  return success();
}

/// LinSimp with `kernel = exact` (SEMANTICS.md §5): no finite state, so
/// no scan — every chunk of queries runs, per anchor offset w, over the key
/// chunks up to its own, with one softmax per query over all its (j, c)
/// pairs kept online (a running maximum, rescaled sums): quadratic in T.

} // namespace mlir::hla::chunk
