//===- VerifyAlgebra.cpp - Numeric checks of monoid laws ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-verify-algebra: a monoid description is only useful if its combine is
// associative with the stated identity and its carried set is closed; these
// are numeric facts about the rules, so they are checked numerically, in
// double precision, on random tokens.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAMonoidEval.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <cstdio>
#include <vector>
#include <limits>

#define DEBUG_TYPE "hla-verify-algebra"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAVERIFYALGEBRAPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// ‖a − b‖ / max(‖b‖, 1e-300); NaN anywhere gives +inf.
/// Formats an error for a diagnostic (Diagnostic has no raw_ostream).
static std::string formatError(double error) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2e", error);
  return buffer;
}

static double relativeError(const DenseMatrix &a, const DenseMatrix &b) {
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double d = a.data[i] - b.data[i];
    if (std::isnan(d))
      return std::numeric_limits<double>::infinity();
    diff += d * d;
    ref += b.data[i] * b.data[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-300);
}

/// The largest error between two monoid values over `components` (all when
/// empty), and the component where it occurs.
struct Discrepancy {
  double error = 0.0;
  std::string where;

  void update(double e, llvm::StringRef location) {
    if (e > error || std::isnan(e)) {
      error = e;
      where = location.str();
    }
  }
};

/// Runs the three checks on one monoid.
class MonoidChecker {
public:
  MonoidChecker(const MonoidSpec &spec, uint64_t seed, unsigned trials,
                unsigned length)
      : eval(spec, {}, 3), rng(seed), trials(trials), length(length) {}

  /// Folds `count` random tokens into one segment.
  MonoidValue randomSegment(unsigned count) {
    MonoidValue value = eval.identity();
    for (unsigned i = 0; i < count; ++i)
      value = eval.combine(value, eval.token(eval.randomInputs(rng, 0.6)));
    return value;
  }

  void compare(const MonoidValue &a, const MonoidValue &b, Discrepancy &out,
               llvm::ArrayRef<unsigned> only = {}) {
    const MonoidSpec &spec = eval.getSpec();
    for (unsigned c = 0; c < spec.components.size(); ++c) {
      if (!only.empty() && !llvm::is_contained(only, c))
        continue;
      out.update(relativeError(a[c], b[c]), spec.components[c].name);
    }
  }

  Discrepancy checkIdentity() {
    Discrepancy result;
    MonoidValue e = eval.identity();
    for (unsigned i = 0; i < trials; ++i) {
      MonoidValue x = randomSegment(3);
      compare(eval.combine(e, x), x, result);
      compare(eval.combine(x, e), x, result);
    }
    return result;
  }

  Discrepancy checkAssociativity() {
    Discrepancy result;
    for (unsigned i = 0; i < trials; ++i) {
      MonoidValue a = randomSegment(3), b = randomSegment(2),
                  c = randomSegment(3);
      compare(eval.combine(eval.combine(a, b), c),
              eval.combine(a, eval.combine(b, c)), result);
    }
    return result;
  }

  /// Serial recurrence vs. a Blelloch scan, and vs. the recurrence that
  /// keeps only the carried components (the others poisoned with NaN).
  std::pair<Discrepancy, Discrepancy> checkScan() {
    const MonoidSpec &spec = eval.getSpec();
    llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
    std::vector<llvm::SmallVector<DenseMatrix>> inputs;
    std::vector<MonoidValue> tokens;
    for (unsigned t = 0; t < length; ++t) {
      inputs.push_back(eval.randomInputs(rng, 0.6));
      tokens.push_back(eval.token(inputs.back()));
    }

    // Left-to-right with every component, and with only the carried ones.
    std::vector<MonoidValue> serial;
    MonoidValue full = eval.identity(), partial = eval.identity();
    std::vector<MonoidValue> partialStates;
    for (unsigned t = 0; t < length; ++t) {
      full = eval.combine(full, tokens[t]);
      serial.push_back(full);
      for (unsigned c = 0; c < spec.components.size(); ++c)
        if (!llvm::is_contained(carried, c))
          for (double &x : partial[c].data)
            x = std::numeric_limits<double>::quiet_NaN();
      partial = eval.combine(partial, tokens[t]);
      partialStates.push_back(partial);
    }

    // Exclusive Blelloch scan over a power-of-two padded array.
    unsigned size = 1;
    while (size < length)
      size *= 2;
    std::vector<MonoidValue> tree(size, eval.identity());
    for (unsigned t = 0; t < length; ++t)
      tree[t] = tokens[t];
    for (unsigned stride = 1; stride < size; stride *= 2)
      for (unsigned i = 2 * stride - 1; i < size; i += 2 * stride)
        tree[i] = eval.combine(tree[i - stride], tree[i]);
    tree[size - 1] = eval.identity();
    for (unsigned stride = size / 2; stride >= 1; stride /= 2)
      for (unsigned i = 2 * stride - 1; i < size; i += 2 * stride) {
        MonoidValue left = tree[i - stride];
        tree[i - stride] = tree[i];
        tree[i] = eval.combine(tree[i], left);
      }

    Discrepancy scanVsSerial, carriedVsSerial;
    for (unsigned t = 0; t < length; ++t) {
      MonoidValue inclusive = eval.combine(tree[t], tokens[t]);
      compare(inclusive, serial[t], scanVsSerial, carried);
      compare(partialStates[t], serial[t], carriedVsSerial, carried);
      for (const MonoidReadout &readout : spec.readouts) {
        DenseMatrix expected = eval.readout(readout, inputs[t], serial[t]);
        scanVsSerial.update(
            relativeError(eval.readout(readout, inputs[t], inclusive),
                          expected),
            "readout " + readout.name);
        carriedVsSerial.update(
            relativeError(eval.readout(readout, inputs[t], partialStates[t]),
                          expected),
            "readout " + readout.name);
      }
    }
    return {scanVsSerial, carriedVsSerial};
  }

private:
  MonoidEvaluator eval;
  std::mt19937_64 rng;
  unsigned trials, length;
};

struct HLAVerifyAlgebraPass
    : public hla::impl::HLAVerifyAlgebraPassBase<HLAVerifyAlgebraPass> {
  using HLAVerifyAlgebraPassBase::HLAVerifyAlgebraPassBase;

  /// Checks `spec`, reporting on `op`. Returns failure on a broken law.
  LogicalResult check(Operation *op, const MonoidSpec &spec) {
    MonoidChecker checker(spec, seed, trials, length);
    auto fail = [&](llvm::StringRef law, const Discrepancy &d) {
      op->emitError() << "monoid '" << spec.name << "': " << law
                      << " (relative error "
                      << formatError(d.error) << " in " << d.where
                      << ")";
      return failure();
    };
    Discrepancy identity = checker.checkIdentity();
    if (!(identity.error <= tolerance))
      return fail("the identity is not a two-sided unit", identity);
    Discrepancy assoc = checker.checkAssociativity();
    if (!(assoc.error <= tolerance))
      return fail("combine is not associative", assoc);
    Discrepancy scan, carried;
    if (!spec.readouts.empty()) {
      std::tie(scan, carried) = checker.checkScan();
      if (!(scan.error <= tolerance))
        return fail("the Blelloch scan disagrees with the serial recurrence",
                    scan);
      if (!(carried.error <= tolerance))
        return fail("the carried components are not closed under combine",
                    carried);
    }
    if (remarks) {
      double worst = std::max({identity.error, assoc.error, scan.error,
                               carried.error});
      op->emitRemark() << "monoid '" << spec.name
                       << "' passed (largest relative error "
                       << formatError(worst) << ")";
    }
    return success();
  }

  void runOnOperation() override {
    llvm::DenseSet<Attribute> seen;
    bool failed = false;
    getOperation()->walk([&](Operation *op) {
      if (auto attention = dyn_cast<AttentionOpInterface>(op)) {
        std::string reason;
        FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
        if (succeeded(spec) && seen.insert(MonoidAttr::get(op->getContext(),
                                                           *spec))
                                   .second)
          failed |= mlir::failed(check(op, *spec));
      }
      for (NamedAttribute attr : op->getAttrs())
        if (auto monoid = dyn_cast<MonoidAttr>(attr.getValue()))
          if (seen.insert(monoid).second)
            failed |= mlir::failed(check(op, monoid.getSpec()));
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
