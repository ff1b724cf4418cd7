//===- ChunkVjp.cpp - One chunk's backward, from its plan -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// See ChunkVjp.h for what is derived. Everything here is symbolic: matrix
// chains are differentiated factor by factor (product rule), and index
// trees are re-rooted at the differentiated token.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/ChunkVjp.h"

#include "llvm/ADT/STLExtras.h"

#include <deque>
#include <optional>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

namespace {

/// ∂/∂F of ⟨Λ, L·F·R⟩ as a chain: Lᵀ·Λ·Rᵀ, or R·Λᵀ·L when F is read
/// transposed (the gradient of the untransposed slot). Scalars commute, so
/// they are kept as they are; `isScalar` tells them apart. For a scalar F
/// the gradient ⟨Λ, L·R⟩ is a chain only when the term (of shape `shape`)
/// is a row or a column: Λᵀ·L·R or L·R·Λᵀ; otherwise it is a trace and
/// there is no chain (nullopt).
template <typename Factor, typename IsScalar>
static std::optional<std::vector<Factor>>
differentiateChain(llvm::ArrayRef<Factor> chain, size_t at, Factor cotangent,
                   IsScalar isScalar, const MonoidMatrixShape &shape) {
  auto flipped = [&](Factor f) {
    if (!isScalar(f))
      f.transposed = !f.transposed;
    return f;
  };
  std::vector<Factor> result;
  if (isScalar(chain[at])) {
    bool row = shape.rows == "1", column = shape.cols == "1";
    if (!row && !column)
      return std::nullopt;
    if (column)
      result.push_back(flipped(cotangent));
    for (size_t j = 0; j < chain.size(); ++j)
      if (j != at)
        result.push_back(chain[j]);
    if (!column)
      result.push_back(flipped(cotangent));
    return result;
  }
  if (!chain[at].transposed) {
    for (size_t j = at; j-- > 0;)
      result.push_back(flipped(chain[j]));
    result.push_back(cotangent);
    for (size_t j = chain.size(); j-- > at + 1;)
      result.push_back(flipped(chain[j]));
  } else {
    for (size_t j = at + 1; j < chain.size(); ++j)
      result.push_back(chain[j]);
    result.push_back(flipped(cotangent));
    for (size_t j = 0; j < at; ++j)
      result.push_back(chain[j]);
  }
  return result;
}

/// `term` with its variable tree re-rooted at `root`: the variables on the
/// path to the former root now run over later positions. `map` receives the
/// new index of every old variable.
static IndexTerm reroot(const IndexTerm &term, int root, bool formerRootAtEnd,
                        std::vector<int> &map) {
  size_t n = term.vars.size();
  std::vector<std::vector<int>> children(n);
  for (size_t v = 1; v < n; ++v)
    children[term.vars[v].parent].push_back(v);
  IndexTerm result;
  result.coeff = term.coeff;
  result.decayConst = term.decayConst;
  map.assign(n, -1);
  auto place = [&](int old, int parent, bool strict, bool later) {
    map[old] = result.addVar(parent, strict);
    IndexVar &var = result.vars[map[old]];
    var.later = later;
    var.atEnd = old == 0 && formerRootAtEnd;
    result.decay[map[old]] = term.decay[old];
  };
  place(root, -1, false, false);
  std::deque<int> queue = {root};
  while (!queue.empty()) {
    int u = queue.front();
    queue.pop_front();
    for (int w : children[u])
      if (map[w] < 0) {
        place(w, map[u], term.vars[w].strict, /*later=*/false);
        queue.push_back(w);
      }
    int p = term.vars[u].parent;
    if (p >= 0 && map[p] < 0) {
      place(p, map[u], term.vars[u].strict, /*later=*/true);
      queue.push_back(p);
    }
  }
  for (ChainFactor f : term.chain) {
    if (f.kind == ChainFactor::Kind::Token)
      f.var = map[f.var];
    result.chain.push_back(f);
  }
  return result;
}

/// `term` (a readout at t) summed over every position t of the chunk: a new
/// root E (the chunk's last token) with the former root below it.
static IndexTerm sumOverChunk(const IndexTerm &term) {
  IndexTerm result;
  result.coeff = term.coeff;
  result.decayConst = term.decayConst;
  result.addVar(-1, false);
  // Parents precede children, so old variable v becomes v + 1.
  for (size_t v = 0; v < term.vars.size(); ++v) {
    int parent = v == 0 ? 0 : term.vars[v].parent + 1;
    result.addVar(parent, v == 0 ? false : term.vars[v].strict);
    result.decay[v + 1] = term.decay[v];
  }
  for (ChainFactor f : term.chain) {
    if (f.kind == ChainFactor::Kind::Token)
      f.var += 1;
    result.chain.push_back(f);
  }
  return result;
}

class VjpBuilder {
public:
  VjpBuilder(const MonoidSpec &spec, std::string &error)
      : spec(spec), error(error) {}

  FailureOr<ChunkVjpPlan> build();

private:
  LogicalResult extendSpec();
  void findDifferentiable();
  LogicalResult transposeCombine();
  LogicalResult differentiateReadouts();
  LogicalResult differentiateSummaries();

  /// Cotangent factors name slots of the extended monoid.
  bool isScalarSlot(const ChainFactor &f) const {
    const MonoidSpec &all = plan.vjpSpec;
    const MonoidSlot &slot = f.kind == ChainFactor::Kind::Token
                                 ? all.inputs[f.slot]
                                 : all.components[f.slot];
    return slot.getRank() == 0;
  }
  /// The error for a scalar slot read by a matrix-valued term.
  LogicalResult traceError(llvm::StringRef what, llvm::StringRef name) {
    error = "the gradient of " + what.str() + " '" + name.str() +
            "' in a matrix-valued term is a trace";
    return failure();
  }

  const MonoidSpec &spec;
  std::string &error;
  ChunkPlan forward;
  ChunkVjpPlan plan;
  /// Per readout: the cotangent factor (at index variable 0) and its shape.
  std::vector<ChainFactor> readoutCotangent;
  std::vector<MonoidMatrixShape> readoutShape;
};

LogicalResult VjpBuilder::extendSpec() {
  plan.vjpSpec = spec;
  plan.numInputs = spec.inputs.size();
  plan.numComponents = spec.components.size();
  for (const MonoidReadout &readout : spec.readouts) {
    if (readout.expr.empty()) {
      error = "readout '" + readout.name + "' is empty";
      return failure();
    }
    FailureOr<MonoidMatrixShape> shape =
        spec.inferTermShape(readout.expr.front(), error);
    if (failed(shape))
      return failure();
    MonoidSlot slot;
    slot.name = "d_" + readout.name;
    ChainFactor cotangent;
    cotangent.slot = plan.vjpSpec.inputs.size();
    cotangent.var = 0;
    if (shape->rows == "1") {
      if (shape->cols != "1")
        slot.shape.push_back(shape->cols);
      // The readout is a row; its cotangent input is stored as a column.
      cotangent.transposed = shape->cols != "1";
    } else if (shape->cols == "1") {
      slot.shape.push_back(shape->rows);
    } else {
      error = "readout '" + readout.name + "' is a matrix";
      return failure();
    }
    plan.vjpSpec.inputs.push_back(slot);
    readoutCotangent.push_back(cotangent);
    readoutShape.push_back(*shape);
  }
  for (const char *prefix : {"dout_", "dsum_"})
    for (const MonoidSlot &component : spec.components) {
      MonoidSlot slot = component;
      slot.name = prefix + component.name;
      slot.eyeIdentity = false;
      plan.vjpSpec.components.push_back(slot);
      // Cotangents have no rules of their own.
      plan.vjpSpec.token.push_back({});
      plan.vjpSpec.combine.push_back({});
    }
  plan.carriedFromCombine.resize(plan.numComponents);
  plan.summaryCotangent.resize(plan.numComponents);
  return success();
}

void VjpBuilder::findDifferentiable() {
  size_t n = spec.components.size();
  plan.differentiable.assign(n, false);
  auto readsInput = [](const MonoidExpr &expr) {
    return llvm::any_of(expr, [](const MonoidTerm &t) {
      return llvm::any_of(t.factors, [](const MonoidFactor &f) {
        return f.kind != MonoidFactor::Kind::Component &&
               f.kind != MonoidFactor::Kind::Param;
      });
    });
  };
  for (size_t c = 0; c < n; ++c)
    plan.differentiable[c] = readsInput(spec.token[c]);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < n; ++c) {
      if (plan.differentiable[c])
        continue;
      for (const MonoidTerm &t : spec.combine[c])
        for (const MonoidFactor &f : t.factors)
          if (f.kind == MonoidFactor::Kind::Component &&
              plan.differentiable[f.index] && !plan.differentiable[c]) {
            plan.differentiable[c] = true;
            changed = true;
          }
    }
  }
}

LogicalResult VjpBuilder::transposeCombine() {
  auto isScalar = [&](const MonoidFactor &f) {
    return f.kind == MonoidFactor::Kind::Param ||
           plan.vjpSpec.getFactorSlot(f)->getRank() == 0;
  };
  for (unsigned x : spec.getCarryComponents()) {
    if (!plan.differentiable[x])
      continue;
    MonoidFactor lambda;
    lambda.kind = MonoidFactor::Kind::Component;
    lambda.index = plan.getOutCotangent(x);
    MonoidMatrixShape shape = MonoidSpec::getMatrixShape(spec.components[x]);
    for (const MonoidTerm &term : spec.combine[x]) {
      for (size_t i = 0; i < term.factors.size(); ++i) {
        const MonoidFactor &f = term.factors[i];
        if (f.kind != MonoidFactor::Kind::Component ||
            !plan.differentiable[f.index])
          continue;
        std::optional<std::vector<MonoidFactor>> chain =
            differentiateChain<MonoidFactor>(term.factors, i, lambda, isScalar,
                                             shape);
        if (!chain)
          return traceError("scalar component", spec.components[f.index].name);
        MonoidTerm derived;
        derived.negated = term.negated;
        llvm::append_range(derived.factors, *chain);
        (f.side == MonoidSide::A ? plan.carriedFromCombine
                                 : plan.summaryCotangent)[f.index]
            .push_back(derived);
      }
    }
  }
  return success();
}

LogicalResult VjpBuilder::differentiateReadouts() {
  auto isScalar = [&](const ChainFactor &f) { return isScalarSlot(f); };
  for (unsigned c : spec.getCarryComponents())
    if (plan.differentiable[c])
      plan.carriedFromReadouts.push_back({spec.components[c].name, c, {}});
  for (const PlannedOutput &out : forward.readouts) {
    const ChainFactor &cotangent = readoutCotangent[out.index];
    for (const IndexTerm &term : out.terms) {
      for (size_t i = 0; i < term.chain.size(); ++i) {
        const ChainFactor &f = term.chain[i];
        if (f.kind == ChainFactor::Kind::Carried) {
          if (!plan.differentiable[f.slot])
            continue;
          IndexTerm summed = sumOverChunk(term);
          ChainFactor g = cotangent;
          g.var = 1;
          std::optional<std::vector<ChainFactor>> chain =
              differentiateChain<ChainFactor>(summed.chain, i, g, isScalar,
                                              readoutShape[out.index]);
          if (!chain)
            return traceError("scalar component", spec.components[f.slot].name);
          summed.chain = std::move(*chain);
          auto target = llvm::find_if(
              plan.carriedFromReadouts,
              [&](const PlannedOutput &o) { return o.index == f.slot; });
          target->terms.push_back(std::move(summed));
          continue;
        }
        std::vector<int> map;
        IndexTerm rooted = reroot(term, f.var, /*formerRootAtEnd=*/false, map);
        ChainFactor g = cotangent;
        g.var = map[0];
        std::optional<std::vector<ChainFactor>> chain =
            differentiateChain<ChainFactor>(rooted.chain, i, g, isScalar,
                                            readoutShape[out.index]);
        if (!chain)
          return traceError("scalar token input", spec.inputs[f.slot].name);
        rooted.chain = std::move(*chain);
        plan.inputGradients[f.slot].terms.push_back(std::move(rooted));
      }
    }
  }
  return success();
}

LogicalResult VjpBuilder::differentiateSummaries() {
  auto isScalar = [&](const ChainFactor &f) { return isScalarSlot(f); };
  for (const PlannedOutput &out : forward.summaries) {
    if (plan.summaryCotangent[out.index].empty())
      continue;
    ChainFactor mu;
    mu.kind = ChainFactor::Kind::Carried;
    mu.slot = plan.getSummaryCotangent(out.index);
    MonoidMatrixShape shape =
        MonoidSpec::getMatrixShape(spec.components[out.index]);
    for (const IndexTerm &term : out.terms) {
      for (size_t i = 0; i < term.chain.size(); ++i) {
        const ChainFactor &f = term.chain[i];
        if (f.kind != ChainFactor::Kind::Token)
          continue;
        std::vector<int> map;
        IndexTerm rooted = reroot(term, f.var, /*formerRootAtEnd=*/true, map);
        // μ_B has the summary's shape: it is the summary's cotangent.
        std::optional<std::vector<ChainFactor>> chain =
            differentiateChain<ChainFactor>(rooted.chain, i, mu, isScalar,
                                            shape);
        if (!chain)
          return traceError("scalar token input", spec.inputs[f.slot].name);
        rooted.chain = std::move(*chain);
        plan.inputGradients[f.slot].terms.push_back(std::move(rooted));
      }
    }
  }
  return success();
}

FailureOr<ChunkVjpPlan> VjpBuilder::build() {
  FailureOr<ChunkPlan> built = buildChunkPlan(spec, error);
  if (failed(built))
    return failure();
  forward = std::move(*built);
  plan.gamma = forward.gamma;
  plan.perHeadDecay = forward.perHeadDecay;
  if (failed(extendSpec()))
    return failure();
  findDifferentiable();
  for (auto [i, input] : llvm::enumerate(spec.inputs))
    plan.inputGradients.push_back({input.name, unsigned(i), {}});
  if (failed(transposeCombine()) || failed(differentiateReadouts()) ||
      failed(differentiateSummaries()))
    return failure();
  return std::move(plan);
}

} // namespace

FailureOr<ChunkVjpPlan>
mlir::hla::chunk::buildChunkVjpPlan(const MonoidSpec &spec,
                                    std::string &error) {
  return VjpBuilder(spec, error).build();
}

void mlir::hla::chunk::readSymmetricStatesAsStored(ChunkVjpPlan &plan,
                                                   const MonoidSpec &spec,
                                                   bool initialStateGiven) {
  auto symmetric = [&](unsigned component) {
    return component < plan.numComponents &&
           spec.isSymmetricComponent(component);
  };
  if (!initialStateGiven)
    for (PlannedOutput &out : llvm::concat<PlannedOutput>(
             plan.carriedFromReadouts, plan.inputGradients))
      for (IndexTerm &term : out.terms)
        for (ChainFactor &f : term.chain)
          if (f.kind == ChainFactor::Kind::Carried && symmetric(f.slot))
            f.transposed = false;
  // In μ_A and μ_B side A is X₀, side B the summary.
  for (MonoidExpr &expr :
       llvm::concat<MonoidExpr>(plan.carriedFromCombine, plan.summaryCotangent))
    for (MonoidTerm &term : expr)
      for (MonoidFactor &f : term.factors)
        if (f.kind == MonoidFactor::Kind::Component && symmetric(f.index) &&
            (f.side == MonoidSide::B ||
             (f.side == MonoidSide::A && !initialStateGiven)))
          f.transposed = false;
}

// λ, read as side None by the plan, is read from side A here.
MonoidSpec mlir::hla::chunk::transposedCombineMonoid(const ChunkVjpPlan &plan) {
  MonoidSpec aux = plan.vjpSpec;
  aux.name = plan.vjpSpec.name + "_transposed_combine";
  aux.inputs.clear();
  aux.readouts.clear();
  unsigned n = plan.numComponents;
  for (unsigned c = 0; c < 3 * n; ++c) {
    aux.token[c].clear();
    aux.combine[c].clear();
    aux.components[c].eyeIdentity = false;
  }
  auto sided = [](MonoidExpr expr) {
    for (MonoidTerm &t : expr)
      for (MonoidFactor &f : t.factors)
        if (f.kind == MonoidFactor::Kind::Component &&
            f.side == MonoidSide::None)
          f.side = MonoidSide::A;
    return expr;
  };
  for (unsigned y = 0; y < n; ++y) {
    aux.combine[n + y] = sided(plan.carriedFromCombine[y]);
    aux.combine[2 * n + y] = sided(plan.summaryCotangent[y]);
  }
  return aux;
}
