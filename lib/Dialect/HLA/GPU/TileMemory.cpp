//===- TileMemory.cpp - Register tiles in memory ----------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The memory half of hla-gpu-lower-register-tiles' emitter (TileEmitter.h):
// on-demand tiles read where their elements are needed, contraction
// operands staged as bf16 copies in wgmma's core-matrix layout (from
// fragments by stmatrix), token rows copied a chunk ahead by cp.async into
// landing buffers of that layout, and output rows (or states) stored from
// fragments.
//
//===----------------------------------------------------------------------===//

#include "TileEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

/// Whether `generic` (null: no) reads and writes every tile at the same
/// position: evalRow8 evaluates it 8 columns at a time.
static bool isIdentityElementwise(linalg::GenericOp generic) {
  return generic && llvm::all_of(generic.getIndexingMapsArray(),
                                 [](AffineMap m) { return m.isIdentity(); });
}

/// The row `insert` puts its source's first row at (0 for tokens at a
/// tile's top; LinSimp's anchor rows come after a halo).
static OpFoldResult insertedRow(tensor::InsertSliceOp insert) {
  return insert.getMixedOffsets()[0];
}

Value TileEmitter::evalAt(Value tile, Value row, Value col) {
  Operation *def = tile.getDefiningOp();
  // A whole tensor of global memory (an argument, an earlier kernel's
  // result).
  if (Value buffer = buffers.lookup(tile))
    return memref::LoadOp::create(b, loc, buffer, ValueRange{row, col});
  if (auto constant = dyn_cast_or_null<arith::ConstantOp>(def)) {
    auto dense = cast<DenseElementsAttr>(constant.getValue());
    return arith::ConstantOp::create(b, loc, dense.getSplatValue<TypedAttr>());
  }
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return scalar(fill.value());
  if (auto copy = dyn_cast<linalg::CopyOp>(def))
    return evalAt(copy.getInputs()[0], row, col);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
    if (std::optional<unsigned> l = landedIn(slice))
      return memref::LoadOp::create(b, loc, landingViews[*l],
                                    ValueRange{landingIndex(*l, row, col)});
    if (plan.of(slice.getSource()) == Placement::Frag) {
      // A fragment's row, from its exact copy.
      llvm::SmallVector<Value> at = sliceIndices(slice, row, col);
      return exactAt(*plan.stagedIndex(slice.getSource(), /*exact=*/true),
                     at[0], at[1]);
    }
    if (plan.of(slice.getSource()) == Placement::Expr) {
      // A window of an on-demand tile.
      llvm::SmallVector<Value> at = sliceIndices(slice, row, col);
      return evalAt(slice.getSource(), at[0], at.size() > 1 ? at[1] : Value());
    }
    return memref::LoadOp::create(b, loc, buffers[slice.getSource()],
                                  sliceIndices(slice, row, col));
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(def)) {
    if (std::optional<unsigned> l = landedIn(insert)) {
      // Copied ahead, rows past the chunk's end zero-filled.
      return memref::LoadOp::create(b, loc, landingViews[*l],
                                    ValueRange{landingIndex(*l, row, col)});
    }
    // Token rows [0, len) of the chunk at the insertion's row, the
    // destination's elements elsewhere (a row above it wraps around: not
    // below len either).
    auto slice = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    Value length = scalar(insert.getMixedSizes()[0]);
    Value tokenRow =
        arith::SubIOp::create(b, loc, row, scalar(insertedRow(insert)));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         tokenRow, length);
    Value safeRow = arith::SelectOp::create(b, loc, inside, tokenRow, index(0));
    Value loaded = memref::LoadOp::create(b, loc, buffers[slice.getSource()],
                                          sliceIndices(slice, safeRow, col));
    return arith::SelectOp::create(b, loc, inside, loaded,
                                   evalAt(insert.getDest(), row, col));
  }
  auto generic = cast<linalg::GenericOp>(def);
  AffineMap outMap =
      generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  llvm::SmallVector<Value> ivs(generic.getNumLoops());
  ivs[outMap.getDimPosition(0)] = row;
  if (outMap.getNumResults() == 2)
    ivs[outMap.getDimPosition(1)] = col;
  return cloneBody(generic, ivs, [&](OpOperand &operand) {
    return evalOperand(generic, operand, ivs);
  })[0];
}

/// `expr` at `dims`: sums, products, floor divisions and remainders of
/// loop indices (non-negative: unsigned division).
static Value expandIndexExpr(OpBuilder &b, Location loc, AffineExpr expr,
                             llvm::ArrayRef<Value> dims) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return arith::ConstantIndexOp::create(b, loc, constant.getValue());
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Value lhs = expandIndexExpr(b, loc, binary.getLHS(), dims);
  Value rhs = expandIndexExpr(b, loc, binary.getRHS(), dims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::DivUIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod:
    return arith::RemUIOp::create(b, loc, lhs, rhs);
  default:
    llvm_unreachable("ceildiv in a tile's indexing map");
  }
}

llvm::SmallVector<Value> TileEmitter::applyMap(AffineMap map,
                                               llvm::ArrayRef<Value> ivs) {
  llvm::SmallVector<Value> at;
  for (AffineExpr e : map.getResults())
    at.push_back(expandIndexExpr(b, loc, e, ivs));
  return at;
}

Value TileEmitter::evalOperand(linalg::GenericOp op, OpOperand &operand,
                               llvm::ArrayRef<Value> ivs) {
  // A row or column vector is read at one coordinate; a fragment read away
  // from the reader's own positions from its exact copy.
  llvm::SmallVector<Value> at =
      applyMap(op.getMatchingIndexingMap(&operand), ivs);
  if (plan.of(operand.get()) == Placement::Frag)
    return exactAt(*plan.stagedIndex(operand.get(), /*exact=*/true), at[0],
                   at[1]);
  return evalAt(operand.get(), at[0], at.size() == 2 ? at[1] : Value());
}

llvm::SmallVector<Value> TileEmitter::readRow8(Value tile, Value row,
                                               Value col0) {
  std::optional<unsigned> exact = plan.of(tile) == Placement::Frag
                                      ? plan.stagedIndex(tile, /*exact=*/true)
                                      : std::nullopt;
  if (!exact)
    return evalRow8(tile, row, col0);
  // Two 16-byte words of the exact copy: its rows are a multiple of 4
  // elements apart and col0 is a multiple of 8.
  readSince.insert(*exact);
  return loadQuads(stagedViews[*exact],
                   rowMajorIndex(plan.staged[*exact].cols, row, col0));
}

llvm::SmallVector<Value> TileEmitter::loadQuads(Value view, Value at) {
  auto quad = VectorType::get({4}, b.getF32Type());
  llvm::SmallVector<Value> values;
  for (int64_t half = 0; half < 2; ++half) {
    Value word = vector::LoadOp::create(
        b, loc, quad, view,
        ValueRange{arith::AddIOp::create(b, loc, at, index(4 * half))},
        /*nontemporal=*/false, /*alignment=*/llvm::MaybeAlign(16));
    for (int64_t j = 0; j < 4; ++j)
      values.push_back(vector::ExtractOp::create(b, loc, word, j));
  }
  return values;
}

llvm::SmallVector<Value> TileEmitter::landedRow8(unsigned l, Value row,
                                                 Value col0) {
  // An f32 tile landed row-major: two 16-byte words.
  if (plan.landing[l].f32)
    return loadQuads(landingViews[l], landingIndex(l, row, col0));
  auto type = VectorType::get({8}, b.getBF16Type());
  Value vec = vector::LoadOp::create(b, loc, type, landingViews[l],
                                     ValueRange{landingIndex(l, row, col0)},
                                     /*nontemporal=*/false,
                                     /*alignment=*/llvm::MaybeAlign(16));
  llvm::SmallVector<Value> values;
  for (int64_t j = 0; j < 8; ++j)
    values.push_back(vector::ExtractOp::create(b, loc, vec, j));
  return values;
}

Value TileEmitter::exactAt(unsigned staged, Value row, Value col) {
  readSince.insert(staged);
  Value at = rowMajorIndex(plan.staged[staged].cols, row, col);
  return memref::LoadOp::create(b, loc, stagedViews[staged], ValueRange{at});
}

void TileEmitter::prepareExactReads(Operation *op,
                                    llvm::ArrayRef<Value> tiles) {
  llvm::SmallVector<unsigned> needed;
  auto need = [&](Value fragment) {
    if (std::optional<unsigned> i = plan.stagedIndex(fragment, true))
      if (!llvm::is_contained(needed, *i))
        needed.push_back(*i);
  };
  llvm::DenseSet<Value> seen;
  // On-demand tiles are evaluated where they are read: their rows of
  // fragments too.
  std::function<void(Value)> visit = [&](Value v) {
    if (!seen.insert(v).second || plan.of(v) != Placement::Expr)
      return;
    Operation *def = v.getDefiningOp();
    if (!def)
      return;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      if (plan.of(slice.getSource()) == Placement::Frag)
        need(slice.getSource());
      else
        visit(slice.getSource()); // a window of an on-demand tile
      return;
    }
    for (Value operand : def->getOperands())
      visit(operand);
  };
  if (auto generic = dyn_cast_or_null<linalg::GenericOp>(op)) {
    bool threadReduction =
        generic.getNumReductionLoops() > 0 && !matchContraction(generic);
    AffineMap outMap =
        generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
    for (OpOperand &operand : generic->getOpOperands()) {
      if (plan.of(operand.get()) == Placement::Frag &&
          (threadReduction ||
           generic.getMatchingIndexingMap(&operand) != outMap))
        need(operand.get());
      visit(operand.get());
    }
  } else if (op) {
    for (Value operand : op->getOperands())
      visit(operand);
  }
  for (Value tile : tiles)
    visit(tile);
  for (unsigned i : needed)
    if (!materialized.contains(i))
      materialize(i);
  for (unsigned i : needed)
    beforeRead(i);
}

llvm::SmallVector<Value> TileEmitter::evalRow8(Value tile, Value row,
                                               Value col0) {
  Operation *def = tile.getDefiningOp();
  llvm::SmallVector<Value> values;
  auto colAt = [&](int64_t j) -> Value {
    return arith::AddIOp::create(b, loc, col0, index(j));
  };
  // Token rows or a stack's tile copied ahead.
  if (isa_and_nonnull<tensor::InsertSliceOp, tensor::ExtractSliceOp>(def))
    if (std::optional<unsigned> l = landedIn(def))
      return landedRow8(*l, row, col0);
  if (auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(def)) {
    auto [loaded, inside] = tokenRow8(insert, row, col0);
    for (int64_t j = 0; j < 8; ++j)
      values.push_back(arith::SelectOp::create(
          b, loc, inside, loaded[j], evalAt(insert.getDest(), row, colAt(j))));
    return values;
  }
  if (Value buffer = buffers.lookup(tile)) // a whole tensor
    return loadRow8(buffer, {row, col0});
  if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def)) {
    if (plan.of(slice.getSource()) == Placement::Expr) {
      // A window of an on-demand tile: its rows, 8 columns at a time where
      // the window starts on a group of 8.
      std::optional<int64_t> colOffset =
          getConstantIntValue(slice.getMixedOffsets().back());
      if (slice.getType().getRank() == 2 && colOffset && *colOffset % 8 == 0) {
        llvm::SmallVector<Value> at = sliceIndices(slice, row, col0);
        return evalRow8(slice.getSource(), at[0], at[1]);
      }
    } else {
      return rowLoad(slice, row, col0, [&] {
        return loadRow8(buffers[slice.getSource()],
                        sliceIndices(slice, row, col0));
      });
    }
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(def);
  if (isIdentityElementwise(generic)) {
    llvm::DenseMap<Value, llvm::SmallVector<Value>> inputs;
    for (OpOperand &operand : generic->getOpOperands())
      if (!generic.getMatchingBlockArgument(&operand).use_empty())
        inputs[operand.get()] = evalRow8(operand.get(), row, col0);
    for (int64_t j = 0; j < 8; ++j) {
      Value col = colAt(j);
      values.push_back(cloneBody(generic, {row, col}, [&](OpOperand &operand) {
        return inputs[operand.get()][j];
      })[0]);
    }
    return values;
  }
  for (int64_t j = 0; j < 8; ++j)
    values.push_back(evalAt(tile, row, colAt(j)));
  return values;
}

std::pair<llvm::SmallVector<Value>, Value>
TileEmitter::tokenRow8(tensor::InsertSliceOp insert, Value row, Value col0) {
  auto slice = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
  Value length = scalar(insert.getMixedSizes()[0]);
  Value tokenRow =
      arith::SubIOp::create(b, loc, row, scalar(insertedRow(insert)));
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       tokenRow, length);
  llvm::SmallVector<Value> loaded = rowLoad(insert, row, col0, [&] {
    Value safeRow = arith::SelectOp::create(b, loc, inside, tokenRow, index(0));
    return loadRow8(buffers[slice.getSource()],
                    sliceIndices(slice, safeRow, col0));
  });
  return {loaded, inside};
}

llvm::SmallVector<Value>
TileEmitter::rowLoad(Operation *at, Value row, Value col0,
                     llvm::function_ref<llvm::SmallVector<Value>()> load) {
  auto it = rowLoads.find({at, row, col0});
  if (it != rowLoads.end())
    return it->second;
  return load();
}

void TileEmitter::prefetchRow8(Value tile, Value row, Value col0) {
  Operation *def = tile.getDefiningOp();
  if (auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(def)) {
    if (landedIn(insert) ||
        !insert.getSource().getDefiningOp<tensor::ExtractSliceOp>())
      return; // in shared memory already, or not token rows
    rowLoads[{insert, row, col0}] = tokenRow8(insert, row, col0).first;
    return;
  }
  if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def)) {
    if (landedIn(slice) || plan.of(slice.getSource()) == Placement::Expr)
      return; // in shared memory already, or a window of a tile
    rowLoads[{slice, row, col0}] =
        loadRow8(buffers[slice.getSource()], sliceIndices(slice, row, col0));
    return;
  }
  // What evalRow8 reads by rows: identity elementwise ops' inputs.
  auto generic = dyn_cast_or_null<linalg::GenericOp>(def);
  if (!isIdentityElementwise(generic))
    return;
  for (OpOperand &operand : generic->getOpOperands())
    if (!generic.getMatchingBlockArgument(&operand).use_empty())
      prefetchRow8(operand.get(), row, col0);
}

void TileEmitter::forRowGroups(
    Value tile, llvm::function_ref<void(Value, Value, Value)> use) {
  OpBuilder::InsertionGuard guard(b);
  auto type = cast<RankedTensorType>(tile.getType());
  int64_t rows = type.getDimSize(0), groups = type.getDimSize(1) / 8;
  int64_t units = rows * groups, threads = plan.threads();
  int64_t inFlight =
      std::min<int64_t>(kRowGroupsInFlight, llvm::divideCeil(units, threads));
  int64_t step = threads * inFlight;
  Value base = index(0);
  if (units > step) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(units), index(step));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    base = loop.getInductionVar();
  }
  struct Group {
    Value row, col0, valid;
  };
  llvm::SmallVector<Group> batch;
  for (int64_t j = 0; j < inFlight; ++j) {
    Value unit = arith::AddIOp::create(
        b, loc, base,
        arith::AddIOp::create(b, loc, threadId, index(j * threads)));
    Value valid;
    if (units % step) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, unit,
                                    index(units));
      unit = arith::MinUIOp::create(b, loc, unit, index(units - 1));
    }
    Value row = arith::RemUIOp::create(b, loc, unit, index(rows));
    Value col0 = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, unit, index(rows)), index(8));
    batch.push_back({row, col0, valid});
  }
  for (const Group &g : batch)
    prefetchRow8(tile, g.row, g.col0);
  for (const Group &g : batch)
    use(g.row, g.col0, g.valid);
  rowLoads.clear();
}

Value TileEmitter::alignedOf(Value buffer) {
  Value &flag = alignment[buffer];
  if (!flag) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(windowAddress);
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    flag = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, address, index(16)), index(0));
  }
  return flag;
}

llvm::SmallVector<Value>
TileEmitter::loadElements8(Value buffer, llvm::ArrayRef<Value> indices,
                           Value inside, int64_t count) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  llvm::SmallVector<Value> elements;
  for (int64_t j = 0; j < count; ++j) {
    llvm::SmallVector<Value> at(indices);
    at.back() = arith::AddIOp::create(b, loc, at.back(), index(j));
    Value v = memref::LoadOp::create(b, loc, buffer, at);
    if (inside)
      v = arith::SelectOp::create(
          b, loc, inside, v,
          arith::ConstantOp::create(b, loc, b.getZeroAttr(element)));
    elements.push_back(v);
  }
  return elements;
}

llvm::SmallVector<Value> TileEmitter::loadRow8(Value buffer,
                                               llvm::ArrayRef<Value> indices) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  auto type = VectorType::get({8}, element);
  auto branch = scf::IfOp::create(b, loc, TypeRange{type}, alignedOf(buffer),
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value vec = vector::LoadOp::create(b, loc, type, buffer, indices,
                                       /*nontemporal=*/false,
                                       /*alignment=*/llvm::MaybeAlign(16));
    scf::YieldOp::create(b, loc, vec);
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(
        b, loc,
        ValueRange{vector::FromElementsOp::create(
            b, loc, type, loadElements8(buffer, indices, Value()))});
  }
  llvm::SmallVector<Value> values;
  for (int64_t j = 0; j < 8; ++j)
    values.push_back(vector::ExtractOp::create(b, loc, branch.getResult(0), j));
  return values;
}

void TileEmitter::materialize(unsigned which) {
  const TilePlan::Staged &s = plan.staged[which];
  // An on-demand tile reading fragments' rows: their copies first.
  if (!s.exact && plan.of(s.tile) == Placement::Expr)
    prepareExactReads(nullptr, {s.tile});
  beforeWrite(which);
  Type bf16 = b.getBF16Type();
  Value view = stagedViews[which];
  if (s.exact) {
    // Each thread stores its own elements.
    llvm::SmallVector<Value> values = elements(s.tile);
    for (auto [i, v] : llvm::enumerate(values)) {
      Value at = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, slotRow(i, s.cols),
                                index(TilePlan::Staged::exactStride(s.cols))),
          slotCol(i, s.cols));
      if (!v.getType().isF32())
        v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
      memref::StoreOp::create(b, loc, v, view, ValueRange{at});
    }
    markWritten(which);
    return;
  }
  auto type = cast<RankedTensorType>(s.tile.getType());
  if (plan.of(s.tile) == Placement::Frag) {
    // A conversion by stmatrix: each 8 x 8 block of the fragment a warp
    // holds (rows 64 r + 16 w + 8 h of row block r, columns 8 j of its
    // warpgroup's share) is one core matrix of the copy, its rows 16
    // contiguous bytes. A thread's pair of slots (i, i + 1) of a row block
    // is its register of block (h = i / 2 % 2, j = i / 4); four blocks per
    // instruction.
    llvm::SmallVector<Value> values = elements(s.tile);
    int64_t share = columns(s.tile) / plan.warpgroups;
    int64_t blocks = share / 8;
    int64_t perBlock = plan.slots(kFragmentRows, columns(s.tile));
    auto pack = [&](int64_t i) { return packBF16(values[i], values[i + 1]); };
    Value laneRow = arith::RemUIOp::create(b, loc, lane, index(8));
    Value matrix = arith::DivUIOp::create(b, loc, lane, index(8));
    Value colBase = arith::MulIOp::create(b, loc, warpgroup, index(share));
    for (int64_t rowBlock = 0; rowBlock < type.getDimSize(0) / kFragmentRows;
         ++rowBlock) {
      for (int64_t j0 = 0; j0 < blocks; j0 += 2) {
        int64_t count = std::min<int64_t>(2, blocks - j0) * 2; // matrices
        llvm::SmallVector<Value> sources;
        for (int64_t m = 0; m < count; ++m)
          sources.push_back(
              pack(rowBlock * perBlock + 4 * (j0 + m / 2) + 2 * (m % 2)));
        // Lane l addresses row l % 8 of matrix l / 8 (h = m % 2,
        // j = j0 + m / 2).
        Value m = count == 4 ? matrix
                             : arith::RemUIOp::create(b, loc, matrix, index(2));
        Value r0 = arith::AddIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, warpInGroup, index(16)),
                index(rowBlock * kFragmentRows)),
            arith::MulIOp::create(
                b, loc, arith::RemUIOp::create(b, loc, m, index(2)), index(8)));
        Value c0 = arith::AddIOp::create(
            b, loc, colBase,
            arith::MulIOp::create(
                b, loc,
                arith::AddIOp::create(
                    b, loc, index(j0),
                    arith::DivUIOp::create(b, loc, m, index(2))),
                index(8)));
        Value element = groupedIndex(
            s.rows, arith::AddIOp::create(b, loc, r0, laneRow), c0);
        Value byte = arith::AddIOp::create(
            b, loc, index(s.offset),
            arith::MulIOp::create(b, loc, element, index(2)));
        Value address = arith::AddIOp::create(
            b, loc, windowAddress,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), byte));
        Value pointer = LLVM::IntToPtrOp::create(
            b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
        NVVM::StMatrixOp::create(
            b, loc, pointer, sources,
            NVVM::MMALayoutAttr::get(b.getContext(), NVVM::MMALayout::row),
            NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
            NVVM::LdStMatrixEltTypeAttr::get(b.getContext(),
                                             NVVM::LdStMatrixEltType::B16));
      }
    }
  } else {
    // The block computes the tile 8 columns at a time (one 16-byte row of a
    // core matrix each).
    forRowGroups(s.tile, [&](Value row, Value col0, Value valid) {
      llvm::SmallVector<Value> values = evalRow8(s.tile, row, col0);
      for (Value &v : values)
        v = toBF16(v);
      Value vec = vector::FromElementsOp::create(
          b, loc, VectorType::get({8}, bf16), values);
      OpBuilder::InsertionGuard guard(b);
      if (valid) {
        auto real = scf::IfOp::create(b, loc, valid, /*withElseRegion=*/false);
        b.setInsertionPoint(real.thenBlock()->getTerminator());
      }
      vector::StoreOp::create(b, loc, vec, view,
                              ValueRange{groupedIndex(s.rows, row, col0)},
                              /*nontemporal=*/false,
                              /*alignment=*/llvm::MaybeAlign(16));
    });
  }
  markWritten(which);
}

Value TileEmitter::toBF16(Value v) {
  Type bf16 = b.getBF16Type();
  if (v.getType() == bf16)
    return v;
  if (!v.getType().isF32())
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, bf16, v);
}

Value TileEmitter::packBF16(Value lo, Value hi) {
  Value pair = vector::FromElementsOp::create(
      b, loc, VectorType::get({2}, b.getBF16Type()),
      ValueRange{toBF16(lo), toBF16(hi)});
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, 0);
}

void TileEmitter::markWritten(unsigned which) {
  ++copiesWritten;
  writtenSince.insert(which);
  // Copies in the same bytes are gone.
  for (unsigned other = 0; other < plan.staged.size(); ++other)
    if (other != which && overlap(other, which))
      materialized.erase(other);
  materialized.insert(which);
}

void TileEmitter::stage(Operation *op, llvm::ArrayRef<unsigned> needed) {
  llvm::SmallVector<unsigned> batch;
  for (unsigned i : needed)
    if (!plan.staged[i].landing && !materialized.contains(i) &&
        !llvm::is_contained(batch, i))
      batch.push_back(i);
  if (batch.empty())
    return;
  // Later contractions' operands that are ready now: fragments already
  // computed, on-demand tiles whose inputs (tiles, and scalars read by their
  // bodies) all are.
  Block *block = op->getBlock();
  std::function<bool(Value)> ready = [&](Value v) -> bool {
    if (v.getParentBlock() != block)
      return true; // from an enclosing scope
    Operation *def = v.getDefiningOp();
    if (!def || def->isBeforeInBlock(op))
      return true;
    Placement p = plan.of(v);
    if (p == Placement::Empty)
      return true; // never read
    if (p == Placement::ScalarTensor && isa<linalg::GenericOp>(def))
      return false; // a reduction, emitted in program order
    if (p != Placement::Expr && p != Placement::ScalarTensor)
      return false; // fragments and scalars are emitted in program order
    bool inputsReady = true;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (!def->isAncestor(operand.getParentRegion()->getParentOp()) &&
            !ready(operand))
          inputsReady = false;
    });
    return inputsReady;
  };
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    auto generic = dyn_cast<linalg::GenericOp>(next);
    if (!generic || !matchContraction(generic) ||
        plan.of(generic.getResult(0)) != Placement::Frag)
      continue;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      std::optional<unsigned> i = plan.stagedIndex(input->get());
      if (i && !plan.staged[*i].landing && !materialized.contains(*i) &&
          !llvm::is_contained(batch, *i) && ready(input->get()))
        batch.push_back(*i);
    }
  }
  for (unsigned i : batch)
    materialize(i);
}

TileEmitter::Operand TileEmitter::operandOf(unsigned staged, bool kIsRow) {
  const TilePlan::Staged &s = plan.staged[staged];
  Operand operand;
  operand.mnMajor = kIsRow;
  operand.base = windowAddress;
  operand.offset = s.offset;
  if (s.landing) {
    // The current buffer of the pair, two bytes per element.
    operand.offset = plan.landing[*s.landing].offset;
    operand.base = arith::AddIOp::create(
        b, loc, windowAddress,
        arith::IndexCastUIOp::create(
            b, loc, b.getI64Type(),
            arith::MulIOp::create(b, loc, landingCurrent[*s.landing],
                                  index(2))));
  }
  // Core matrices adjacent in the tile's rows are 16 x 8 = 128 bytes
  // apart, in its columns groupBytes: K-major (K the columns) the
  // leading stride is the column groups', MN-major the rows'.
  operand.kGroupBytes = kIsRow ? 128 : s.columnGroupBytes();
  operand.mnGroupBytes = kIsRow ? s.columnGroupBytes() : 128;
  return operand;
}

void TileEmitter::emitRows(tensor::InsertSliceOp op) {
  // A tile's leading rows, or a whole tile.
  Value tile = op.getSource();
  if (plan.of(tile) == Placement::Prefix)
    tile = tile.getDefiningOp<tensor::ExtractSliceOp>().getSource();
  tensor::ExtractSliceOp slice = plan.rowsSlice.lookup(op.getDest());
  Value rowOffset = scalar(op.getMixedOffsets()[0]);
  Value colOffset = scalar(op.getMixedOffsets()[1]);
  emitTileRows(tile, scalar(op.getMixedSizes()[0]), buffers[slice.getSource()],
               [&](Value row, Value col) {
                 return sliceIndices(
                     slice, arith::AddIOp::create(b, loc, rowOffset, row),
                     arith::AddIOp::create(b, loc, colOffset, col));
               });
}

void TileEmitter::emitRows(tensor::ParallelInsertSliceOp op) {
  Value tile = op.getSource();
  Value length = index(op.getSourceType().getDimSize(0));
  if (plan.of(tile) == Placement::Prefix) {
    auto prefix = tile.getDefiningOp<tensor::ExtractSliceOp>();
    tile = prefix.getSource();
    length = scalar(prefix.getMixedSizes()[0]);
  }
  llvm::SmallBitVector dropped = op.getDroppedDims();
  llvm::SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
  emitTileRows(tile, length, buffers[op.getDest()], [&](Value row, Value col) {
    return indicesAt(offsets, dropped, row, col);
  });
}

void TileEmitter::emitVectorStore(tensor::ParallelInsertSliceOp op) {
  Value vector = op.getSource();
  prepareExactReads(nullptr, {vector});
  Value buffer = buffers[op.getDest()];
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  int64_t length = op.getSourceType().getDimSize(0);
  auto elements = scf::ForOp::create(b, loc, threadId, index(length),
                                     index(plan.threads()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(elements.getBody()->getTerminator());
  Value at = elements.getInductionVar();
  Value value = evalAt(vector, at, Value());
  if (value.getType() != element)
    value = arith::TruncFOp::create(b, loc, element, value);
  memref::StoreOp::create(
      b, loc, value, buffer,
      indicesAt(op.getMixedOffsets(), op.getDroppedDims(), at, Value()));
}

void TileEmitter::emitTileRows(
    Value tile, Value length, Value buffer,
    llvm::function_ref<llvm::SmallVector<Value>(Value, Value)> indices) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  auto convert = [&](Value v) -> Value {
    if (v.getType() == element)
      return v;
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return element.isF32() ? v : arith::TruncFOp::create(b, loc, element, v);
  };
  if (plan.of(tile) == Placement::Frag) {
    llvm::SmallVector<Value> values = elements(tile);
    int64_t cols = columns(tile);
    int64_t perBlock = plan.slots(kFragmentRows, cols);
    // Per row block, the thread's two rows: slots 0, 1 mod 4 and 2, 3.
    for (int64_t first = 0; first < int64_t(values.size()); first += 2) {
      if (first % perBlock >= 4)
        continue;
      Value row = slotRow(first, cols);
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
      auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      int64_t end = (first / perBlock + 1) * perBlock;
      for (int64_t i = first; i < end; i += 4) {
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, element),
            ValueRange{convert(values[i]), convert(values[i + 1])});
        vector::StoreOp::create(
            b, loc, pair, buffer, indices(row, slotCol(i, cols)),
            /*nontemporal=*/false,
            /*alignment=*/
            llvm::MaybeAlign(2 * element.getIntOrFloatBitWidth() / 8));
      }
    }
    return;
  }
  // An on-demand tile: the block stores it 8 columns at a time.
  forRowGroups(tile, [&](Value row, Value col0, Value valid) {
    OpBuilder::InsertionGuard guard(b);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
    if (valid)
      inside = arith::AndIOp::create(b, loc, inside, valid);
    auto ifInside = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPoint(ifInside.thenBlock()->getTerminator());
    llvm::SmallVector<Value> values = evalRow8(tile, row, col0);
    for (Value &v : values)
      v = convert(v);
    Value vec = vector::FromElementsOp::create(
        b, loc, VectorType::get({8}, element), values);
    vector::StoreOp::create(
        b, loc, vec, buffer, indices(row, col0),
        /*nontemporal=*/false,
        /*alignment=*/
        llvm::MaybeAlign(8 * element.getIntOrFloatBitWidth() / 8));
  });
}

Value TileEmitter::cloneAt(Value v, Block *body, IRMapping &mapping) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return scalar(v);
  for (Value operand : def->getOperands())
    mapping.map(operand, cloneAt(operand, body, mapping));
  b.clone(*def, mapping);
  return mapping.lookup(v);
}

void TileEmitter::issueLanding(unsigned l, Block *body, IRMapping &mapping,
                               Value base) {
  const TilePlan::Landing &landing = plan.landing[l];
  // Token rows into a zero tile, or a whole tile of a stack.
  auto insert = dyn_cast<tensor::InsertSliceOp>(landing.tokens);
  auto slice = insert
                   ? insert.getSource().getDefiningOp<tensor::ExtractSliceOp>()
                   : cast<tensor::ExtractSliceOp>(landing.tokens);
  llvm::SmallVector<OpFoldResult> offsets;
  for (OpFoldResult offset : slice.getMixedOffsets())
    offsets.push_back(
        isa<Value>(offset)
            ? OpFoldResult(cloneAt(cast<Value>(offset), body, mapping))
            : offset);
  auto valueAt = [&](OpFoldResult v) {
    return isa<Value>(v) ? cloneAt(cast<Value>(v), body, mapping) : scalar(v);
  };
  OpFoldResult size = insert ? insert.getMixedSizes()[0]
                             : OpFoldResult(b.getIndexAttr(landing.rows));
  Value length = valueAt(size);
  Value firstRow = insert ? valueAt(insertedRow(insert)) : index(0);
  // Consecutive threads take consecutive 16 bytes of a row (coalesced):
  // 8 bf16 or 4 f32 values.
  int64_t perCopy = 16 / landing.elementBytes();
  int64_t groups = landing.cols / perCopy;
  auto copies = scf::ForOp::create(
      b, loc, threadId, index(landing.rows * groups), index(plan.threads()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(copies.getBody()->getTerminator());
  Value unit = copies.getInductionVar();
  Value row = arith::DivUIOp::create(b, loc, unit, index(groups));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, unit, index(groups)),
      index(perCopy));
  // The tile's rows outside the tokens' (past the chunk's end, or in the
  // halo before a sequence's start): nothing read, 16 zero bytes written.
  Value tokenRow = arith::SubIOp::create(b, loc, row, firstRow);
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       tokenRow, length);
  Value safeRow = arith::SelectOp::create(b, loc, inside, tokenRow, index(0));
  Value elements =
      arith::SelectOp::create(b, loc, inside, index(perCopy), index(0));
  Value at = arith::AddIOp::create(b, loc, base, landingOffset(l, row, col));
  Value source = buffers[slice.getSource()];
  llvm::SmallVector<Value> from =
      indicesAt(offsets, slice.getDroppedDims(), safeRow, col);
  // cp.async moves 16 aligned bytes; tokens a view leaves off a 16-byte
  // boundary are read element by element instead (synchronously: the
  // chunk's opening barrier orders them like the copies).
  auto aligned = scf::IfOp::create(b, loc, alignedOf(source),
                                   /*withElseRegion=*/true);
  b.setInsertionPoint(aligned.thenBlock()->getTerminator());
  nvgpu::DeviceAsyncCopyOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), landingViews[l],
      ValueRange{at}, source, from, b.getIndexAttr(perCopy), elements,
      b.getUnitAttr());
  b.setInsertionPoint(aligned.elseBlock()->getTerminator());
  llvm::SmallVector<Value> values =
      loadElements8(source, from, inside, perCopy);
  Type element = landing.f32 ? b.getF32Type() : b.getBF16Type();
  vector::StoreOp::create(
      b, loc,
      vector::FromElementsOp::create(
          b, loc, VectorType::get({perCopy}, element), values),
      landingViews[l], ValueRange{at}, /*nontemporal=*/false,
      /*alignment=*/llvm::MaybeAlign(16));
}
