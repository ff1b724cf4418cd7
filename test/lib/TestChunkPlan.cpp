//===- TestChunkPlan.cpp - Print and check chunk plans -----------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// test-hla-chunk-plan: for every monoid (an `hla.monoid` attribute or an
// attention op's monoid) prints the index terms of its chunk plan as
// remarks and, with `check`, evaluates every term by brute force over a
// chunk of random tokens and compares with the monoid's own fold:
//
//   summary of x      == fold of the chunk's tokens, component x
//   readout r at t    == r(X₀ ∘ fold of tokens 0..t)
//
// X₀ is random on the carried components and NaN elsewhere, so a plan that
// read an uncarried component would fail.
//
// With `vjp`, the same for the chunk's backward (ChunkVjp.h): every token
// gradient and the carried-in state's gradient are compared with central
// differences of  L = Σ_t ⟨g(t), o(t)⟩ + ⟨λ, X₀ ∘ Σ⟩  for random g and λ.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAMonoidEval.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"
#include "hla/Dialect/HLA/Transforms/ChunkVjp.h"

#include "mlir/Pass/Pass.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

namespace {

/// Σ over all index assignments allowed by the term's variable tree, with
/// the root fixed at `root`. `carried` holds every component a Carried
/// factor may name (for backward terms, the cotangents too).
static std::optional<DenseMatrix>
evaluateTerm(const IndexTerm &term, int root, double gamma, int chunk,
             const std::vector<llvm::SmallVector<DenseMatrix>> &tokens,
             const MonoidValue &carried, const MonoidEvaluator &eval) {
  size_t n = term.vars.size();
  std::vector<int> value(n, 0);
  value[0] = root;
  std::optional<DenseMatrix> sum;
  std::function<void(size_t)> visit = [&](size_t v) {
    if (v == n) {
      DenseMatrix product(1, 1, term.coeff);
      double exponent = term.decayConst;
      for (size_t i = 0; i < n; ++i)
        exponent += term.decay[i] * value[i];
      product = product.scaled(std::pow(gamma, exponent));
      for (const ChainFactor &f : term.chain) {
        DenseMatrix m = f.kind == ChainFactor::Kind::Token
                            ? tokens[value[f.var]][f.slot]
                            : carried[f.slot];
        if (f.transposed)
          m = m.transposed();
        product = product * m;
      }
      if (!sum)
        sum = product;
      else
        *sum += product;
      return;
    }
    const IndexVar &var = term.vars[v];
    int parent = value[var.parent];
    int lo = 0, hi = parent - (var.strict ? 1 : 0);
    if (var.later) {
      lo = parent + (var.strict ? 1 : 0);
      hi = chunk - 1;
    }
    if (var.atEnd)
      lo = std::max(lo, chunk - 1);
    for (int i = lo; i <= hi && i < chunk; ++i) {
      value[v] = i;
      visit(v + 1);
    }
  };
  // Parents precede children in every plan term.
  visit(1);
  // No index assignment satisfies the tree: the term is empty (zero).
  return sum;
}

static double relErr(const DenseMatrix &a, const DenseMatrix &b) {
  if (a.data.size() != b.data.size())
    return std::numeric_limits<double>::infinity();
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    diff += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
    ref += b.data[i] * b.data[i];
  }
  double e = std::sqrt(diff) / std::max(std::sqrt(ref), 1e-300);
  return std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
}

struct TestChunkPlanPass
    : public PassWrapper<TestChunkPlanPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestChunkPlanPass)

  TestChunkPlanPass() = default;
  TestChunkPlanPass(const TestChunkPlanPass &) : PassWrapper() {}

  StringRef getArgument() const final { return "test-hla-chunk-plan"; }
  StringRef getDescription() const final {
    return "Print a monoid's chunk plan; check it numerically";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<HLADialect>();
  }

  Option<bool> check{*this, "check",
                     llvm::cl::desc("Evaluate the plan by brute force"),
                     llvm::cl::init(false)};
  Option<bool> print{*this, "print", llvm::cl::desc("Print every term"),
                     llvm::cl::init(true)};
  Option<bool> vjp{*this, "vjp",
                   llvm::cl::desc("The chunk's backward instead of its plan"),
                   llvm::cl::init(false)};

  static double dot(const DenseMatrix &a, const DenseMatrix &b) {
    double sum = 0.0;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
      sum += a.data[i] * b.data[i];
    return sum;
  }

  static DenseMatrix
  sumTerms(const std::vector<IndexTerm> &terms, int root, double gamma,
           int chunk, const std::vector<llvm::SmallVector<DenseMatrix>> &tokens,
           const MonoidValue &carried, const MonoidEvaluator &eval,
           DenseMatrix zero) {
    DenseMatrix sum = zero;
    for (const IndexTerm &t : terms)
      if (std::optional<DenseMatrix> v =
              evaluateTerm(t, root, gamma, chunk, tokens, carried, eval))
        sum += *v;
    return sum;
  }

  void processVjp(Operation *op, const MonoidSpec &spec) {
    std::string error;
    FailureOr<ChunkVjpPlan> plan = buildChunkVjpPlan(spec, error);
    if (failed(plan)) {
      op->emitError() << "no backward for monoid '" << spec.name
                      << "': " << error;
      return;
    }
    const MonoidSpec &vspec = plan->vjpSpec;
    unsigned n = plan->numComponents;
    if (print) {
      for (unsigned c = 0; c < n; ++c) {
        std::string text;
        llvm::raw_string_ostream os(text);
        if (!plan->carriedFromCombine[c].empty()) {
          vspec.printExpr(os, plan->carriedFromCombine[c]);
          op->emitRemark() << "combine d" << spec.components[c].name
                           << "0: " << text;
        }
        text.clear();
        if (!plan->summaryCotangent[c].empty()) {
          vspec.printExpr(os, plan->summaryCotangent[c]);
          op->emitRemark() << "dsum_" << spec.components[c].name << ": "
                           << text;
        }
      }
      for (const PlannedOutput &out : plan->carriedFromReadouts)
        for (const IndexTerm &t : out.terms)
          op->emitRemark() << "readout d" << out.name
                           << "0: " << printTerm(vspec, t, n);
      for (const PlannedOutput &out : plan->inputGradients)
        for (const IndexTerm &t : out.terms)
          op->emitRemark() << "d" << out.name << ": " << printTerm(vspec, t, n);
    }
    if (!check)
      return;

    const int chunk = 5;
    MonoidEvaluator eval(spec, {}, 3);
    MonoidEvaluator veval(vspec, {}, 3);
    std::mt19937_64 rng(13);
    // Token inputs with their readout cotangents appended.
    std::vector<llvm::SmallVector<DenseMatrix>> tokens;
    for (int i = 0; i < chunk; ++i)
      tokens.push_back(veval.randomInputs(rng, 0.6));
    auto original = [&](const llvm::SmallVector<DenseMatrix> &all) {
      return llvm::SmallVector<DenseMatrix>(all.begin(),
                                            all.begin() + plan->numInputs);
    };
    llvm::SmallVector<unsigned> carriedSet = spec.getCarryComponents();
    auto isCarried = [&](unsigned c) {
      return llvm::is_contained(carriedSet, c) && plan->differentiable[c];
    };
    MonoidValue x0 = eval.identity();
    for (int i = 0; i < 3; ++i)
      x0 = eval.combine(x0, eval.token(eval.randomInputs(rng, 0.6)));
    for (unsigned c = 0; c < n; ++c)
      if (!llvm::is_contained(carriedSet, c))
        for (double &x : x0[c].data)
          x = std::numeric_limits<double>::quiet_NaN();
    MonoidValue lambda = eval.identity();
    for (unsigned c = 0; c < n; ++c)
      for (double &x : lambda[c].data)
        x = isCarried(c) ? std::normal_distribution<double>(0.0, 1.0)(rng)
                         : std::numeric_limits<double>::quiet_NaN();

    auto loss = [&](const std::vector<llvm::SmallVector<DenseMatrix>> &toks,
                    const MonoidValue &carriedIn) {
      double total = 0.0;
      MonoidValue fold = eval.identity();
      for (int t = 0; t < chunk; ++t) {
        llvm::SmallVector<DenseMatrix> in = original(toks[t]);
        fold = eval.combine(fold, eval.token(in));
        MonoidValue state = eval.combine(carriedIn, fold);
        for (auto [r, readout] : llvm::enumerate(spec.readouts))
          total += dot(toks[t][plan->numInputs + r],
                       eval.readout(readout, in, state));
      }
      MonoidValue out = eval.combine(carriedIn, fold);
      for (unsigned c = 0; c < n; ++c)
        if (isCarried(c))
          total += dot(lambda[c], out[c]);
      return total;
    };

    // The backward's own values.
    MonoidValue fold = eval.identity();
    for (int t = 0; t < chunk; ++t)
      fold = eval.combine(fold, eval.token(original(tokens[t])));
    MonoidValue extended = x0;
    llvm::append_range(extended, lambda);
    for (unsigned c = 0; c < n; ++c)
      extended.push_back(
          plan->summaryCotangent[c].empty()
              ? DenseMatrix(x0[c].rows, x0[c].cols,
                            std::numeric_limits<double>::quiet_NaN())
              : veval.evaluate(plan->summaryCotangent[c], &vspec.components[c],
                               {}, &extended, &fold));

    const double h = 1e-5;
    double worst = 0.0;
    std::string worstWhere = "nothing";
    auto compare = [&](const DenseMatrix &got, const DenseMatrix &want,
                       const std::string &where) {
      double e = relErr(got, want);
      if (e > worst || std::isinf(e)) {
        worst = e;
        worstWhere = where;
      }
    };
    for (const PlannedOutput &out : plan->inputGradients) {
      for (int p = 0; p < chunk; ++p) {
        DenseMatrix want = tokens[p][out.index];
        for (size_t e = 0; e < want.data.size(); ++e) {
          auto plus = tokens, minus = tokens;
          plus[p][out.index].data[e] += h;
          minus[p][out.index].data[e] -= h;
          want.data[e] = (loss(plus, x0) - loss(minus, x0)) / (2 * h);
        }
        DenseMatrix got =
            sumTerms(out.terms, p, plan->gamma, chunk, tokens, extended, veval,
                     DenseMatrix(want.rows, want.cols));
        compare(got, want, "d" + out.name + " at " + std::to_string(p));
      }
    }
    for (unsigned c = 0; c < n; ++c) {
      if (!isCarried(c))
        continue;
      DenseMatrix want = x0[c];
      for (size_t e = 0; e < want.data.size(); ++e) {
        MonoidValue plus = x0, minus = x0;
        plus[c].data[e] += h;
        minus[c].data[e] -= h;
        want.data[e] = (loss(tokens, plus) - loss(tokens, minus)) / (2 * h);
      }
      DenseMatrix got =
          veval.evaluate(plan->carriedFromCombine[c], &vspec.components[c], {},
                         &extended, &fold);
      for (const PlannedOutput &out : plan->carriedFromReadouts)
        if (out.index == c)
          got += sumTerms(out.terms, chunk - 1, plan->gamma, chunk, tokens,
                          extended, veval, DenseMatrix(want.rows, want.cols));
      compare(got, want, "d" + spec.components[c].name + "0");
    }
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.1e", worst);
    if (worst <= 1e-6)
      op->emitRemark() << "backward of '" << spec.name
                       << "' matches central differences (relative error "
                       << buffer << ")";
    else
      op->emitError() << "backward of '" << spec.name
                      << "' disagrees with central differences (relative "
                         "error "
                      << buffer << " in " << worstWhere << ")";
  }

  void process(Operation *op, const MonoidSpec &spec) {
    if (vjp)
      return processVjp(op, spec);
    std::string error;
    FailureOr<ChunkPlan> plan = buildChunkPlan(spec, error);
    if (failed(plan)) {
      op->emitError() << "no chunk plan for monoid '" << spec.name
                      << "': " << error;
      return;
    }
    if (print) {
      for (const PlannedOutput &out : plan->summaries)
        for (const IndexTerm &t : out.terms)
          op->emitRemark() << "summary " << out.name << ": "
                           << printTerm(spec, t);
      for (const PlannedOutput &out : plan->readouts)
        for (const IndexTerm &t : out.terms)
          op->emitRemark() << "readout " << out.name << ": "
                           << printTerm(spec, t);
    }
    if (!check)
      return;

    const int chunk = 5;
    MonoidEvaluator eval(spec, {}, 3);
    std::mt19937_64 rng(11);
    std::vector<llvm::SmallVector<DenseMatrix>> tokens;
    for (int i = 0; i < chunk; ++i)
      tokens.push_back(eval.randomInputs(rng, 0.6));
    // A random carried-in state: fold of a few tokens, uncarried poisoned.
    MonoidValue carried = eval.identity();
    for (int i = 0; i < 3; ++i)
      carried = eval.combine(carried, eval.token(eval.randomInputs(rng, 0.6)));
    llvm::SmallVector<unsigned> carriedSet = spec.getCarryComponents();
    MonoidValue poisoned = carried;
    for (unsigned c = 0; c < spec.components.size(); ++c)
      if (!llvm::is_contained(carriedSet, c))
        for (double &x : poisoned[c].data)
          x = std::numeric_limits<double>::quiet_NaN();

    double worst = 0.0;
    std::string worstWhere = "nothing";
    auto note = [&](double e, const std::string &where) {
      if (e > worst || std::isinf(e)) {
        worst = e;
        worstWhere = where;
      }
    };
    MonoidValue fold = eval.identity();
    std::vector<MonoidValue> prefixes;
    for (int t = 0; t < chunk; ++t) {
      fold = eval.combine(fold, eval.token(tokens[t]));
      prefixes.push_back(fold);
    }
    for (const PlannedOutput &out : plan->summaries) {
      DenseMatrix got(1, 1, 0.0);
      bool first = true;
      for (const IndexTerm &t : out.terms) {
        std::optional<DenseMatrix> v = evaluateTerm(
            t, chunk - 1, plan->gamma, chunk, tokens, poisoned, eval);
        if (!v)
          continue;
        if (first)
          got = *v;
        else
          got += *v;
        first = false;
      }
      if (first)
        got = eval.identity()[out.index];
      note(relErr(got, fold[out.index]), "summary " + out.name);
    }
    for (const PlannedOutput &out : plan->readouts) {
      for (int t = 0; t < chunk; ++t) {
        MonoidValue state = eval.combine(poisoned, prefixes[t]);
        DenseMatrix expected =
            eval.readout(spec.readouts[out.index], tokens[t], state);
        DenseMatrix got(1, 1, 0.0);
        bool first = true;
        for (const IndexTerm &term : out.terms) {
          std::optional<DenseMatrix> v =
              evaluateTerm(term, t, plan->gamma, chunk, tokens, poisoned, eval);
          if (!v)
            continue;
          if (first)
            got = *v;
          else
            got += *v;
          first = false;
        }
        if (first)
          got = DenseMatrix(expected.rows, expected.cols);
        // Readouts come out as rows; compare values.
        if (got.rows != expected.rows)
          got = got.transposed();
        note(relErr(got, expected),
             "readout " + out.name + " at " + std::to_string(t));
      }
    }
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.1e", worst);
    if (worst <= 1e-10)
      op->emitRemark() << "chunk plan of '" << spec.name
                       << "' matches the fold (relative error " << buffer
                       << ")";
    else
      op->emitError() << "chunk plan of '" << spec.name
                      << "' disagrees with the fold (relative error " << buffer
                      << " in " << worstWhere << ")";
  }

  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOpInterface>(op)) {
        std::string reason;
        FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
        if (succeeded(spec))
          process(op, *spec);
      }
      if (auto monoid = op->getAttrOfType<MonoidAttr>("hla.monoid"))
        process(op, monoid.getSpec());
    });
  }
};
} // namespace

namespace mlir::hla::test {
void registerTestChunkPlanPass() { PassRegistration<TestChunkPlanPass>(); }
} // namespace mlir::hla::test
