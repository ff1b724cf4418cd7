//===- ChunkPlan.cpp - Intra-chunk forms derived from a monoid --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The derivation, step by step. Write P(t) for the chunk-local inclusive
// prefix (tokens 0..t). For a non-decay component x with combine rule
//
//   x = γ^w x.a + Σ_τ τ(A, B)        (no other term reads x.a)
//
// taking A = P(s−1), B = token(s) and unrolling gives
//
//   x(p) = Σ_{s ≤ p} γ^{w (p − s)} Σ_τ τ(P(s−1), token(s)).
//
// In τ, a B-side component is its token rule at index s, a B-side decay
// component is γ, an A-side decay component is γ^s (the s tokens before s),
// and an A-side component y is again an unrolled sum, y(s − 1), over indices
// strictly below s. Distributing the products gives the index terms. A
// readout at t reads readout(X₀ ∘ P(t)): the combine rule with A = X₀ (the
// carried constants) and B = P(t) (unrolled at t).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"
#include "hla/Dialect/HLA/IR/HLAMonoidEval.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

namespace {

using Terms = std::vector<IndexTerm>;

/// Appends `sub` (a template whose variable 0 is its attachment point) to
/// `term`, attaching it at `attach`. A transposed factor contributes its
/// chain reversed with every factor transposed.
static IndexTerm splice(const IndexTerm &term, const IndexTerm &sub, int attach,
                        bool transposed) {
  IndexTerm result = term;
  result.coeff *= sub.coeff;
  result.decayConst += sub.decayConst;
  std::vector<int> map(sub.vars.size());
  map[0] = attach;
  result.decay[attach] += sub.decay[0];
  for (size_t v = 1; v < sub.vars.size(); ++v) {
    int parent = map[sub.vars[v].parent];
    map[v] = result.addVar(parent, sub.vars[v].strict);
    result.decay[map[v]] = sub.decay[v];
  }
  std::vector<ChainFactor> chain;
  for (ChainFactor f : sub.chain) {
    if (f.kind == ChainFactor::Kind::Token)
      f.var = map[f.var];
    chain.push_back(f);
  }
  if (transposed) {
    std::reverse(chain.begin(), chain.end());
    for (ChainFactor &f : chain)
      f.transposed = !f.transposed;
  }
  llvm::append_range(result.chain, chain);
  return result;
}

/// Multiplies every partial term by every term of `sum` (distributivity).
static Terms distribute(const Terms &partial, const Terms &sum, int attach,
                        bool transposed) {
  Terms result;
  for (const IndexTerm &p : partial)
    for (const IndexTerm &s : sum)
      result.push_back(splice(p, s, attach, transposed));
  return result;
}

/// The order in which a term's variables are renumbered to compare terms:
/// the root, then by first use in the chain, then the rest — except that a
/// variable's parent always comes before it (evaluators rely on it).
static std::vector<int> canonicalOrder(const IndexTerm &term) {
  std::vector<int> order;
  std::vector<bool> placed(term.vars.size(), false);
  std::function<void(int)> place = [&](int v) {
    if (placed[v])
      return;
    if (term.vars[v].parent >= 0)
      place(term.vars[v].parent);
    placed[v] = true;
    order.push_back(v);
  };
  place(0);
  for (const ChainFactor &f : term.chain)
    if (f.kind == ChainFactor::Kind::Token)
      place(f.var);
  for (size_t v = 0; v < term.vars.size(); ++v)
    place(v);
  return order;
}

static IndexTerm canonicalize(const IndexTerm &term) {
  std::vector<int> order = canonicalOrder(term);
  std::vector<int> rank(term.vars.size());
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = i;
  IndexTerm result;
  result.coeff = term.coeff;
  result.decayConst = term.decayConst;
  for (int old : order) {
    IndexVar v = term.vars[old];
    if (v.parent >= 0)
      v.parent = rank[v.parent];
    result.vars.push_back(v);
    result.decay.push_back(term.decay[old]);
  }
  for (ChainFactor f : term.chain) {
    if (f.kind == ChainFactor::Kind::Token)
      f.var = rank[f.var];
    result.chain.push_back(f);
  }
  return result;
}

/// Structural equality of canonical terms, ignoring the coefficient.
static bool sameShape(const IndexTerm &a, const IndexTerm &b) {
  if (a.vars.size() != b.vars.size() || a.chain != b.chain ||
      std::abs(a.decayConst - b.decayConst) > 1e-12)
    return false;
  for (size_t v = 0; v < a.vars.size(); ++v)
    if (a.vars[v].parent != b.vars[v].parent ||
        a.vars[v].strict != b.vars[v].strict ||
        std::abs(a.decay[v] - b.decay[v]) > 1e-12)
      return false;
  return true;
}

/// `term` with variable `x` identified with its parent.
static IndexTerm mergeIntoParent(const IndexTerm &term, int x) {
  int p = term.vars[x].parent;
  IndexTerm result;
  result.coeff = term.coeff;
  result.decayConst = term.decayConst;
  std::vector<int> map(term.vars.size());
  for (size_t v = 0; v < term.vars.size(); ++v) {
    if (int(v) == x)
      continue;
    map[v] = result.vars.size();
    result.vars.push_back(term.vars[v]);
    result.decay.push_back(term.decay[v]);
  }
  map[x] = map[p];
  result.decay[map[p]] += term.decay[x];
  for (IndexVar &v : result.vars)
    if (v.parent >= 0)
      v.parent = map[v.parent];
  for (ChainFactor f : term.chain) {
    if (f.kind == ChainFactor::Kind::Token)
      f.var = map[f.var];
    result.chain.push_back(f);
  }
  return result;
}

/// Adds up structurally equal terms, drops zeros, and merges "x < p" with
/// "x = p" into "x ≤ p" until nothing changes.
static Terms simplifyTerms(Terms terms) {
  for (IndexTerm &t : terms)
    t = canonicalize(t);
  bool changed = true;
  while (changed) {
    changed = false;
    // Collect like terms.
    Terms collected;
    for (IndexTerm &t : terms) {
      auto it = llvm::find_if(
          collected, [&](const IndexTerm &c) { return sameShape(c, t); });
      if (it != collected.end())
        it->coeff += t.coeff;
      else
        collected.push_back(t);
    }
    llvm::erase_if(collected, [](const IndexTerm &t) {
      return std::abs(t.coeff) < 1e-300;
    });
    terms = std::move(collected);
    // Merge a strict variable with its diagonal twin.
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      for (size_t x = 1; x < terms[i].vars.size() && !changed; ++x) {
        if (!terms[i].vars[x].strict)
          continue;
        IndexTerm diagonal = canonicalize(mergeIntoParent(terms[i], x));
        for (size_t j = 0; j < terms.size(); ++j) {
          if (j == i ||
              std::abs(terms[j].coeff - terms[i].coeff) >
                  1e-12 * std::abs(terms[i].coeff) ||
              !sameShape(terms[j], diagonal))
            continue;
          terms[i].vars[x].strict = false;
          terms[i] = canonicalize(terms[i]);
          terms.erase(terms.begin() + j);
          changed = true;
          break;
        }
      }
    }
  }
  return terms;
}

/// Builds the plan; holds the classification of the monoid's components.
class PlanBuilder {
public:
  PlanBuilder(const MonoidSpec &spec, std::string &error)
      : spec(spec), error(error) {}

  FailureOr<ChunkPlan> build();

private:
  LogicalResult classify();
  /// x(p − offset) unrolled, as a template attached at variable 0.
  FailureOr<Terms> expandComponent(unsigned x, unsigned offset);
  /// The token rule of component y as terms at variable `var` of a
  /// template whose variable count is `numVars`.
  FailureOr<Terms> tokenTerms(unsigned y);
  FailureOr<Terms> expandReadout(const MonoidReadout &readout);

  const MonoidSpec &spec;
  std::string &error;
  std::vector<bool> isDecay;
  /// Per non-decay component: the γ power of its self term.
  std::vector<double> selfDecay;
  /// Per non-decay component: the index of its self term (-1: none).
  std::vector<int> selfTerm;
  double gamma = 1.0;
  /// The per-head parameter that is the decay's rate, if any.
  std::optional<unsigned> decayParam;
  std::map<std::pair<unsigned, unsigned>, Terms> memo;
  std::vector<bool> expanding;
};

LogicalResult PlanBuilder::classify() {
  size_t n = spec.components.size();
  isDecay.assign(n, false);
  selfDecay.assign(n, 0.0);
  selfTerm.assign(n, -1);
  std::optional<double> decayValue;
  for (unsigned c = 0; c < n; ++c) {
    const MonoidSlot &slot = spec.components[c];
    const MonoidExpr &rule = spec.combine[c];
    // A decay component: scalar, identity 1, token = product of params,
    // combine = c.a * c.b.
    if (slot.getRank() == 0 && slot.eyeIdentity && rule.size() == 1 &&
        rule[0].factors.size() == 2 && !rule[0].negated &&
        llvm::all_of(rule[0].factors, [&](const MonoidFactor &f) {
          return f.kind == MonoidFactor::Kind::Component && f.index == c;
        })) {
      double value = spec.token[c].empty() ? 0.0 : 1.0;
      for (const MonoidTerm &term : spec.token[c]) {
        if (&term != &spec.token[c].front()) {
          error = "decay component '" + slot.name +
                  "' has a token rule with "
                  "several terms";
          return failure();
        }
        for (const MonoidFactor &f : term.factors) {
          if (f.kind != MonoidFactor::Kind::Param) {
            error = "decay component '" + slot.name +
                    "' must have a constant token value";
            return failure();
          }
          if (spec.params[f.index].perHead) {
            if (decayParam && *decayParam != f.index) {
              error = "decay component '" + slot.name +
                      "' reads two per-head parameters";
              return failure();
            }
            decayParam = f.index;
            value *= kPerHeadSample;
            continue;
          }
          value *= spec.params[f.index].value;
        }
        if (term.negated)
          value = -value;
      }
      if (!(value > 0.0 && value <= 1.0)) {
        error = "decay component '" + slot.name + "' has token value " +
                std::to_string(value) + ", not in (0, 1]";
        return failure();
      }
      if (decayValue && *decayValue != value) {
        error = "decay components with different rates are not supported";
        return failure();
      }
      decayValue = value;
      isDecay[c] = true;
      continue;
    }
    if (slot.eyeIdentity) {
      error = "component '" + slot.name +
              "' has identity 'eye' but is not a "
              "scalar decay; matrix-valued transitions (as in KDA) need their "
              "own chunked form";
      return failure();
    }
  }
  gamma = decayValue.value_or(1.0);
  for (unsigned p : spec.getPerHeadParams())
    if (!decayParam || p != *decayParam) {
      error = "per-head parameter '" + spec.params[p].name +
              "' is not the rate of a decay component";
      return failure();
    }

  // Every other component: x = γ^w x.a + terms without x.a.
  for (unsigned c = 0; c < n; ++c) {
    if (isDecay[c])
      continue;
    for (auto [i, term] : llvm::enumerate(spec.combine[c])) {
      bool readsSelfA = llvm::any_of(term.factors, [&](const MonoidFactor &f) {
        return f.kind == MonoidFactor::Kind::Component && f.index == c &&
               f.side == MonoidSide::A;
      });
      if (!readsSelfA)
        continue;
      if (selfTerm[c] >= 0) {
        error = "component '" + spec.components[c].name +
                "' reads itself from A in more than one term";
        return failure();
      }
      double coeff = term.negated ? -1.0 : 1.0;
      double power = 0.0;
      for (const MonoidFactor &f : term.factors) {
        if (f.kind == MonoidFactor::Kind::Param) {
          coeff *= spec.params[f.index].value;
        } else if (f.kind == MonoidFactor::Kind::Component &&
                   isDecay[f.index] && f.side == MonoidSide::B) {
          power += 1.0;
        } else if (!(f.kind == MonoidFactor::Kind::Component && f.index == c &&
                     f.side == MonoidSide::A && !f.transposed)) {
          error = "component '" + spec.components[c].name +
                  "' updates itself with a factor other than a decay of B; "
                  "only x = γ^w x.a + ... is supported";
          return failure();
        }
      }
      if (std::abs(coeff - 1.0) > 1e-12) {
        error = "component '" + spec.components[c].name +
                "' scales itself by a constant other than 1";
        return failure();
      }
      selfTerm[c] = i;
      selfDecay[c] = power;
    }
  }
  for (unsigned x = 0; x < spec.inputs.size(); ++x)
    if (spec.inputs[x].getRank() > 1) {
      error = "token input '" + spec.inputs[x].name + "' is a matrix";
      return failure();
    }
  return success();
}

FailureOr<Terms> PlanBuilder::tokenTerms(unsigned y) {
  // Variable 0 is the token's index.
  Terms result;
  for (const MonoidTerm &term : spec.token[y]) {
    IndexTerm t;
    t.addVar(-1, false);
    t.coeff = term.negated ? -1.0 : 1.0;
    for (const MonoidFactor &f : term.factors) {
      switch (f.kind) {
      case MonoidFactor::Kind::Param:
        // A per-head rate is known only at run time: γ scaling a token
        // rule is one more power of the decay (hla3's Q2 = γ q qᵀ).
        if (spec.params[f.index].perHead)
          t.decayConst += 1.0;
        else
          t.coeff *= spec.params[f.index].value;
        break;
      case MonoidFactor::Kind::Input:
        t.chain.push_back({ChainFactor::Kind::Token, f.index, 0, f.transposed});
        break;
      default:
        error = "token rule of '" + spec.components[y].name +
                "' uses diag(); only vector inputs are supported";
        return failure();
      }
    }
    result.push_back(std::move(t));
  }
  return result;
}

FailureOr<Terms> PlanBuilder::expandComponent(unsigned x, unsigned offset) {
  auto key = std::make_pair(x, offset);
  auto it = memo.find(key);
  if (it != memo.end())
    return it->second;
  if (expanding[x]) {
    error = "component '" + spec.components[x].name +
            "' depends on itself through other components";
    return failure();
  }
  expanding[x] = true;

  // x(p − offset) = Σ_{s ≤ p − offset} γ^{w (p − offset − s)} r_x(s).
  double w = selfDecay[x];
  IndexTerm base;
  base.addVar(-1, false);
  int s = base.addVar(0, offset == 1);
  base.decay[0] += w;
  base.decay[s] -= w;
  base.decayConst -= w * offset;

  Terms result;
  for (auto [i, term] : llvm::enumerate(spec.combine[x])) {
    if (int(i) == selfTerm[x])
      continue;
    Terms partial = {base};
    partial[0].coeff = term.negated ? -1.0 : 1.0;
    for (const MonoidFactor &f : term.factors) {
      if (f.kind == MonoidFactor::Kind::Param) {
        for (IndexTerm &p : partial)
          p.coeff *= spec.params[f.index].value;
        continue;
      }
      unsigned y = f.index;
      if (isDecay[y]) {
        // B: one token, γ. A: the s tokens before s, γ^s.
        for (IndexTerm &p : partial) {
          if (f.side == MonoidSide::B)
            p.decayConst += 1.0;
          else
            p.decay[s] += 1.0;
        }
        continue;
      }
      FailureOr<Terms> sum =
          f.side == MonoidSide::B ? tokenTerms(y) : expandComponent(y, 1);
      if (failed(sum))
        return failure();
      partial = distribute(partial, *sum, s, f.transposed);
    }
    llvm::append_range(result, partial);
  }
  expanding[x] = false;
  Terms simplified = simplifyTerms(std::move(result));
  memo[key] = simplified;
  return simplified;
}

FailureOr<Terms> PlanBuilder::expandReadout(const MonoidReadout &readout) {
  Terms result;
  for (const MonoidTerm &term : readout.expr) {
    IndexTerm root;
    root.addVar(-1, false);
    root.coeff = term.negated ? -1.0 : 1.0;
    Terms partial = {root};
    for (const MonoidFactor &f : term.factors) {
      if (f.kind == MonoidFactor::Kind::Param) {
        for (IndexTerm &p : partial)
          p.coeff *= spec.params[f.index].value;
        continue;
      }
      if (f.kind == MonoidFactor::Kind::Input) {
        for (IndexTerm &p : partial)
          p.chain.push_back(
              {ChainFactor::Kind::Token, f.index, 0, f.transposed});
        continue;
      }
      if (f.kind != MonoidFactor::Kind::Component) {
        error = "readout '" + readout.name + "' uses diag()";
        return failure();
      }
      // The state read is X₀ ∘ P(t): expand its combine rule with A = X₀
      // (carried constants) and B = P(t).
      unsigned c = f.index;
      Terms stateTerms;
      for (const MonoidTerm &rule : spec.combine[c]) {
        IndexTerm t;
        t.addVar(-1, false);
        t.coeff = rule.negated ? -1.0 : 1.0;
        Terms sub = {t};
        for (const MonoidFactor &g : rule.factors) {
          if (g.kind == MonoidFactor::Kind::Param) {
            for (IndexTerm &p : sub)
              p.coeff *= spec.params[g.index].value;
            continue;
          }
          unsigned y = g.index;
          if (g.side == MonoidSide::A) {
            if (isDecay[y]) {
              error = "the carried state's decay '" + spec.components[y].name +
                      "' is read by the readout";
              return failure();
            }
            for (IndexTerm &p : sub)
              p.chain.push_back(
                  {ChainFactor::Kind::Carried, y, -1, g.transposed});
            continue;
          }
          if (isDecay[y]) {
            // ρ of P(t) is γ^{t+1}.
            for (IndexTerm &p : sub) {
              p.decay[0] += 1.0;
              p.decayConst += 1.0;
            }
            continue;
          }
          FailureOr<Terms> prefix = expandComponent(y, 0);
          if (failed(prefix))
            return failure();
          sub = distribute(sub, *prefix, 0, g.transposed);
        }
        llvm::append_range(stateTerms, sub);
      }
      partial = distribute(partial, stateTerms, 0, f.transposed);
    }
    llvm::append_range(result, partial);
  }
  return simplifyTerms(std::move(result));
}

FailureOr<ChunkPlan> PlanBuilder::build() {
  if (failed(classify()))
    return failure();
  expanding.assign(spec.components.size(), false);
  ChunkPlan plan;
  plan.gamma = gamma;
  plan.perHeadDecay = decayParam.has_value();
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    if (isDecay[c])
      continue;
    FailureOr<Terms> terms = expandComponent(c, 0);
    if (failed(terms))
      return failure();
    plan.summaries.push_back({spec.components[c].name, c, *terms});
  }
  for (auto [i, readout] : llvm::enumerate(spec.readouts)) {
    FailureOr<Terms> terms = expandReadout(readout);
    if (failed(terms))
      return failure();
    plan.readouts.push_back({readout.name, unsigned(i), *terms});
  }
  return plan;
}

} // namespace

FailureOr<ChunkPlan> mlir::hla::chunk::buildChunkPlan(const MonoidSpec &spec,
                                                      std::string &error) {
  return PlanBuilder(spec, error).build();
}

std::string mlir::hla::chunk::printTerm(const MonoidSpec &spec,
                                        const IndexTerm &term,
                                        unsigned bareFrom) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (term.coeff < 0 ? "- " : "+ ") << std::abs(term.coeff) << " sum{";
  for (size_t v = 1; v < term.vars.size(); ++v) {
    const IndexVar &var = term.vars[v];
    os << (v > 1 ? ", " : "") << "v" << v
       << (var.later ? (var.strict ? " > v" : " >= v")
                     : (var.strict ? " < v" : " <= v"))
       << var.parent;
    if (var.atEnd)
      os << " = E";
  }
  os << "}";
  for (const ChainFactor &f : term.chain) {
    os << " ";
    if (f.kind == ChainFactor::Kind::Token)
      os << spec.inputs[f.slot].name << "[v" << f.var << "]";
    else
      os << spec.components[f.slot].name << (f.slot < bareFrom ? "0" : "");
    if (f.transposed)
      os << ".T";
  }
  bool anyDecay = term.decayConst != 0.0 ||
                  llvm::any_of(term.decay, [](double d) { return d != 0.0; });
  if (anyDecay) {
    os << " g^(";
    bool first = true;
    for (size_t v = 0; v < term.decay.size(); ++v) {
      if (term.decay[v] == 0.0)
        continue;
      os << (first ? "" : " + ") << term.decay[v] << "*v" << v;
      first = false;
    }
    if (term.decayConst != 0.0 || first)
      os << (first ? "" : " + ") << term.decayConst;
    os << ")";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Chain pieces and decay decomposition
//===----------------------------------------------------------------------===//

FailureOr<std::vector<ChainPiece>>
mlir::hla::chunk::splitChain(const MonoidSpec &spec, const IndexTerm &term,
                             std::vector<ChainFactor> &scalars,
                             std::string &error) {
  auto slotOf = [&](const ChainFactor &f) -> const MonoidSlot & {
    return f.kind == ChainFactor::Kind::Token ? spec.inputs[f.slot]
                                              : spec.components[f.slot];
  };
  std::vector<ChainFactor> matrices;
  for (const ChainFactor &f : term.chain) {
    if (slotOf(f).getRank() == 0)
      scalars.push_back(f);
    else
      matrices.push_back(f);
  }

  std::vector<ChainPiece> pieces;
  ChainPiece current;
  bool started = false;
  std::string rowsOfPiece;
  auto shape = [&](const ChainFactor &f) {
    MonoidMatrixShape s = MonoidSpec::getMatrixShape(slotOf(f));
    if (f.transposed)
      std::swap(s.rows, s.cols);
    return s;
  };
  for (size_t i = 0; i < matrices.size(); ++i) {
    const ChainFactor &f = matrices[i];
    MonoidMatrixShape s = shape(f);
    if (!started) {
      current = ChainPiece();
      rowsOfPiece = s.rows;
      started = true;
    }
    if (f.kind == ChainFactor::Kind::Token) {
      bool isFirst = current.factors.empty();
      bool isLast = s.cols == "1";
      if (!isFirst && !isLast) {
        error = "a token vector sits inside a matrix product";
        return failure();
      }
      if (isFirst)
        current.firstVar = f.var;
      if (isLast)
        current.lastVar = f.var;
    }
    current.factors.push_back(f);
    if (s.cols == "1") {
      current.kind = rowsOfPiece == "1" ? ChainPiece::Kind::Scalar
                                        : ChainPiece::Kind::Left;
      if (current.kind == ChainPiece::Kind::Left && !pieces.empty()) {
        error = "a column piece follows another piece";
        return failure();
      }
      // A left piece's token is its last factor; it has no first token.
      if (current.kind == ChainPiece::Kind::Left)
        current.firstVar = -1;
      pieces.push_back(current);
      started = false;
    }
  }
  if (started) {
    current.kind = ChainPiece::Kind::Right;
    if (rowsOfPiece != "1") {
      // The whole chain is one matrix piece: only constants can form it.
      if (current.firstVar >= 0 || current.lastVar >= 0) {
        error = "a chain without boundaries holds a token vector";
        return failure();
      }
    }
    current.lastVar = -1;
    pieces.push_back(current);
  }
  return pieces;
}

FailureOr<DecayPlan> mlir::hla::chunk::planDecay(const IndexTerm &term,
                                                 std::string &error) {
  size_t n = term.vars.size();
  DecayPlan plan;
  plan.edge.assign(n, 0.0);
  plan.fromStart.assign(n, 0.0);
  // Children before parents: order by depth, deepest first.
  std::vector<int> depth(n, 0);
  for (size_t v = 1; v < n; ++v) {
    int d = 0;
    for (int p = v; term.vars[p].parent >= 0; p = term.vars[p].parent)
      ++d;
    depth[v] = d;
  }
  std::vector<int> order(n);
  for (size_t v = 0; v < n; ++v)
    order[v] = v;
  llvm::stable_sort(order, [&](int a, int b) { return depth[a] > depth[b]; });
  // An edge to an earlier child weighs γ^(w (parent − child)), one to a
  // later child γ^(w (child − parent)): w moves between the two variables'
  // coefficients with opposite signs.
  std::vector<double> childSum(n, 0.0);
  for (int v : order) {
    double excess = term.decay[v] - childSum[v];
    if (v == 0) {
      if (excess < -1e-12) {
        error = "the decay grows along the chunk (root weight " +
                std::to_string(excess) + ")";
        return failure();
      }
      plan.fromStart[0] = std::max(excess, 0.0);
      continue;
    }
    const IndexVar &var = term.vars[v];
    if (var.later) {
      if (excess < -1e-12) {
        error = "the decay grows towards later tokens (weight " +
                std::to_string(excess) + ")";
        return failure();
      }
      plan.edge[v] = std::max(excess, 0.0);
      childSum[var.parent] -= plan.edge[v];
    } else if (excess >= 0) {
      plan.fromStart[v] = excess;
    } else {
      plan.edge[v] = -excess;
      childSum[var.parent] += plan.edge[v];
    }
  }
  plan.constant = term.decayConst;
  for (size_t v = 0; v < n; ++v)
    plan.constant -= plan.fromStart[v];
  return plan;
}
