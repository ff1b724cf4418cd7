//===- TestChunkPlan.cpp - Print and check chunk plans -----------*- C++ -*-===//
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
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAMonoidEval.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"

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
/// the root fixed at `root`.
static std::optional<DenseMatrix> evaluateTerm(const IndexTerm &term, int root, double gamma,
                                int chunk,
                                const std::vector<llvm::SmallVector<DenseMatrix>> &tokens,
                                const MonoidValue &carried,
                                const MonoidEvaluator &eval) {
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
    int bound = value[term.vars[v].parent] - (term.vars[v].strict ? 1 : 0);
    for (int i = 0; i <= bound && i < chunk; ++i) {
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

  void process(Operation *op, const MonoidSpec &spec) {
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
          std::optional<DenseMatrix> v = evaluateTerm(
              term, t, plan->gamma, chunk, tokens, poisoned, eval);
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
