//===- HLAMonoid.cpp - Declarative prefix-moment monoids --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Parsing, printing, checking and simplifying monoid descriptions. The text
// form is the body of `#hla.monoid<...>`:
//
//   "name" inputs(q: [d], ...) [params(gamma = 0.9, ...)]
//   state(S: [d, d], ..., rho: [] eye) [token(S = k * k.T, ...)]
//   combine(S = rho.b * S.a + S.b, ...) [readout(num = q.T * S * C, ...)]
//
// Factors are bare identifiers with dotted suffixes (`S.a`, `k.T`,
// `C.b.T`), which MLIR's lexer reads as one bare identifier; `diag(x)` and
// `diag(exp(x))` wrap a vector input.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAMonoid.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::hla;

//===----------------------------------------------------------------------===//
// Equality and hashing
//===----------------------------------------------------------------------===//

bool MonoidSpec::operator==(const MonoidSpec &other) const {
  return name == other.name && inputs == other.inputs &&
         params == other.params && components == other.components &&
         token == other.token && combine == other.combine &&
         readouts == other.readouts;
}

llvm::hash_code mlir::hla::hash_value(const MonoidSlot &slot) {
  return llvm::hash_combine(
      slot.name, llvm::hash_combine_range(slot.shape.begin(), slot.shape.end()),
      slot.eyeIdentity);
}

llvm::hash_code mlir::hla::hash_value(const MonoidParam &param) {
  return llvm::hash_combine(param.name, llvm::bit_cast<uint64_t>(param.value),
                            param.perHead);
}

llvm::hash_code mlir::hla::hash_value(const MonoidFactor &factor) {
  return llvm::hash_combine(static_cast<unsigned>(factor.kind),
                            static_cast<unsigned>(factor.side), factor.index,
                            factor.transposed);
}

llvm::hash_code mlir::hla::hash_value(const MonoidTerm &term) {
  return llvm::hash_combine(
      term.negated,
      llvm::hash_combine_range(term.factors.begin(), term.factors.end()));
}

static llvm::hash_code hashExpr(const MonoidExpr &expr) {
  return llvm::hash_combine_range(expr.begin(), expr.end());
}

llvm::hash_code mlir::hla::hash_value(const MonoidReadout &readout) {
  return llvm::hash_combine(readout.name, hashExpr(readout.expr));
}

llvm::hash_code mlir::hla::hash_value(const MonoidSpec &spec) {
  llvm::hash_code h = llvm::hash_combine(
      spec.name,
      llvm::hash_combine_range(spec.inputs.begin(), spec.inputs.end()),
      llvm::hash_combine_range(spec.params.begin(), spec.params.end()),
      llvm::hash_combine_range(spec.components.begin(), spec.components.end()));
  for (const MonoidExpr &expr : spec.token)
    h = llvm::hash_combine(h, hashExpr(expr));
  for (const MonoidExpr &expr : spec.combine)
    h = llvm::hash_combine(h, hashExpr(expr));
  return llvm::hash_combine(
      h, llvm::hash_combine_range(spec.readouts.begin(), spec.readouts.end()));
}

//===----------------------------------------------------------------------===//
// Lookup and derived structure
//===----------------------------------------------------------------------===//

template <typename T>
static std::optional<unsigned> findByName(llvm::ArrayRef<T> slots,
                                          llvm::StringRef name) {
  for (auto [i, slot] : llvm::enumerate(slots))
    if (slot.name == name)
      return i;
  return std::nullopt;
}

std::optional<unsigned> MonoidSpec::findInput(llvm::StringRef n) const {
  return findByName<MonoidSlot>(inputs, n);
}
std::optional<unsigned> MonoidSpec::findComponent(llvm::StringRef n) const {
  return findByName<MonoidSlot>(components, n);
}
std::optional<unsigned> MonoidSpec::findParam(llvm::StringRef n) const {
  return findByName<MonoidParam>(params, n);
}
llvm::SmallVector<unsigned> MonoidSpec::getPerHeadParams() const {
  llvm::SmallVector<unsigned> result;
  for (auto [i, param] : llvm::enumerate(params))
    if (param.perHead)
      result.push_back(i);
  return result;
}
const MonoidReadout *MonoidSpec::findReadout(llvm::StringRef n) const {
  for (const MonoidReadout &readout : readouts)
    if (readout.name == n)
      return &readout;
  return nullptr;
}

/// Calls `fn` on every factor of every term of `expr`.
static void forEachFactor(const MonoidExpr &expr,
                          llvm::function_ref<void(const MonoidFactor &)> fn) {
  for (const MonoidTerm &term : expr)
    for (const MonoidFactor &factor : term.factors)
      fn(factor);
}

llvm::SmallVector<unsigned> MonoidSpec::getCarryComponents() const {
  // Start from what the readouts read; a carried component pulls in every
  // component its combine rule reads from the left operand, because a
  // prefix state is only ever the left operand of a combine.
  llvm::SetVector<unsigned> carried;
  for (const MonoidReadout &readout : readouts)
    forEachFactor(readout.expr, [&](const MonoidFactor &f) {
      if (f.kind == MonoidFactor::Kind::Component)
        carried.insert(f.index);
    });
  for (unsigned i = 0; i < carried.size(); ++i) {
    unsigned c = carried[i];
    if (c >= combine.size())
      continue;
    forEachFactor(combine[c], [&](const MonoidFactor &f) {
      if (f.kind == MonoidFactor::Kind::Component && f.side == MonoidSide::A)
        carried.insert(f.index);
    });
  }
  llvm::SmallVector<unsigned> result(carried.begin(), carried.end());
  llvm::sort(result);
  return result;
}

static bool readsInput(const MonoidFactor &f) {
  return f.kind == MonoidFactor::Kind::Input ||
         f.kind == MonoidFactor::Kind::Diag ||
         f.kind == MonoidFactor::Kind::DiagExp;
}

llvm::SmallVector<unsigned> MonoidSpec::getTokenInputs() const {
  llvm::SmallVector<bool> used(inputs.size(), false);
  for (const MonoidExpr &expr : token)
    forEachFactor(expr, [&](const MonoidFactor &f) {
      if (readsInput(f))
        used[f.index] = true;
    });
  llvm::SmallVector<unsigned> result;
  for (auto [i, u] : llvm::enumerate(used))
    if (u)
      result.push_back(i);
  return result;
}

bool MonoidSpec::isSymmetricComponent(unsigned c) const {
  const MonoidSlot &slot = components[c];
  if (slot.getRank() != 2 || slot.shape[0] != slot.shape[1])
    return false;
  // Scalars commute: only the chain of matrix and vector factors counts.
  auto matrixFactors = [&](const MonoidTerm &term) {
    llvm::SmallVector<MonoidFactor, 4> chain;
    for (const MonoidFactor &f : term.factors) {
      const MonoidSlot *s = getFactorSlot(f);
      if (s && s->getRank() > 0)
        chain.push_back(f);
    }
    return chain;
  };
  for (const MonoidTerm &term : token[c]) {
    llvm::SmallVector<MonoidFactor, 4> chain = matrixFactors(term);
    // The chain reversed with every factor transposed is itself: diag(·)
    // is its own transpose, an input or component must meet its transpose.
    for (size_t i = 0, n = chain.size(); i < n; ++i) {
      const MonoidFactor &f = chain[i], &g = chain[n - 1 - i];
      bool diagonal = f.kind == MonoidFactor::Kind::Diag ||
                      f.kind == MonoidFactor::Kind::DiagExp;
      if (f.kind != g.kind || f.index != g.index || f.side != g.side ||
          (!diagonal && (i == n - 1 - i || f.transposed == g.transposed)))
        return false;
    }
  }
  for (const MonoidTerm &term : combine[c]) {
    llvm::SmallVector<MonoidFactor, 4> chain = matrixFactors(term);
    if (chain.size() != 1 || chain[0].kind != MonoidFactor::Kind::Component ||
        chain[0].index != c)
      return false;
  }
  return true;
}

llvm::SmallVector<unsigned> MonoidSpec::getReadoutInputs() const {
  llvm::SmallVector<bool> used(inputs.size(), false);
  for (const MonoidReadout &readout : readouts)
    forEachFactor(readout.expr, [&](const MonoidFactor &f) {
      if (readsInput(f))
        used[f.index] = true;
    });
  llvm::SmallVector<unsigned> result;
  for (auto [i, u] : llvm::enumerate(used))
    if (u)
      result.push_back(i);
  return result;
}

MonoidMatrixShape MonoidSpec::getMatrixShape(const MonoidSlot &slot) {
  MonoidMatrixShape shape;
  if (slot.getRank() >= 1)
    shape.rows = slot.shape[0];
  if (slot.getRank() == 2)
    shape.cols = slot.shape[1];
  return shape;
}

const MonoidSlot *MonoidSpec::getFactorSlot(const MonoidFactor &f) const {
  switch (f.kind) {
  case MonoidFactor::Kind::Input:
  case MonoidFactor::Kind::Diag:
  case MonoidFactor::Kind::DiagExp:
    return f.index < inputs.size() ? &inputs[f.index] : nullptr;
  case MonoidFactor::Kind::Component:
    return f.index < components.size() ? &components[f.index] : nullptr;
  case MonoidFactor::Kind::Param:
    return nullptr;
  }
  return nullptr;
}

/// The (rows, cols) a single factor contributes to the matrix chain, or
/// nullopt for a scalar factor (which commutes).
static std::optional<MonoidMatrixShape> getFactorShape(const MonoidSpec &spec,
                                                       const MonoidFactor &f) {
  if (f.kind == MonoidFactor::Kind::Param)
    return std::nullopt;
  const MonoidSlot *slot = spec.getFactorSlot(f);
  if (!slot || slot->getRank() == 0)
    return std::nullopt;
  if (f.kind == MonoidFactor::Kind::Diag ||
      f.kind == MonoidFactor::Kind::DiagExp)
    return MonoidMatrixShape{slot->shape[0], slot->shape[0]};
  MonoidMatrixShape shape = MonoidSpec::getMatrixShape(*slot);
  if (f.transposed)
    std::swap(shape.rows, shape.cols);
  return shape;
}

static std::string shapeStr(const MonoidMatrixShape &s) {
  return "(" + s.rows + " x " + s.cols + ")";
}

FailureOr<MonoidMatrixShape>
MonoidSpec::inferTermShape(const MonoidTerm &term, std::string &error) const {
  std::optional<MonoidMatrixShape> current;
  for (const MonoidFactor &f : term.factors) {
    std::optional<MonoidMatrixShape> next = getFactorShape(*this, f);
    if (!next)
      continue;
    if (!current) {
      current = next;
      continue;
    }
    if (current->cols != next->rows) {
      error =
          "cannot multiply " + shapeStr(*current) + " by " + shapeStr(*next);
      return failure();
    }
    current->cols = next->cols;
  }
  return current.value_or(MonoidMatrixShape{});
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

/// `diag` starts a diag() factor, so no slot may be called that.
static bool isReservedName(llvm::StringRef name) { return name == "diag"; }

LogicalResult
MonoidSpec::verify(llvm::function_ref<InFlightDiagnostic()> emitError) const {
  // Names: plain identifiers, unique across inputs, params and components.
  llvm::StringSet<> seen;
  auto checkName = [&](llvm::StringRef name,
                       llvm::StringRef what) -> LogicalResult {
    if (name.empty() || name.contains('.'))
      return emitError() << "monoid " << what << " name '" << name
                         << "' must be a plain identifier";
    if (isReservedName(name))
      return emitError() << "monoid " << what << " name '" << name
                         << "' is reserved";
    if (!seen.insert(name).second)
      return emitError() << "monoid name '" << name << "' is defined twice";
    return success();
  };
  for (const MonoidSlot &slot : inputs) {
    if (failed(checkName(slot.name, "input")))
      return failure();
    if (slot.getRank() > 2)
      return emitError() << "monoid input '" << slot.name << "' has rank "
                         << slot.getRank() << "; at most 2 is supported";
    if (slot.eyeIdentity)
      return emitError() << "monoid input '" << slot.name
                         << "' cannot have an identity";
  }
  for (const MonoidParam &param : params)
    if (failed(checkName(param.name, "parameter")))
      return failure();
  if (getPerHeadParams().size() > 1)
    return emitError() << "monoid '" << name
                       << "' has more than one per-head parameter";
  for (const MonoidSlot &slot : components) {
    if (failed(checkName(slot.name, "component")))
      return failure();
    if (slot.getRank() > 2)
      return emitError() << "monoid component '" << slot.name << "' has rank "
                         << slot.getRank() << "; at most 2 is supported";
    if (slot.eyeIdentity && slot.getRank() == 1)
      return emitError() << "monoid component '" << slot.name
                         << "' is a vector and cannot have identity 'eye'";
    if (slot.eyeIdentity && slot.getRank() == 2 &&
        slot.shape[0] != slot.shape[1])
      return emitError() << "monoid component '" << slot.name
                         << "' has identity 'eye' but is not square ["
                         << slot.shape[0] << ", " << slot.shape[1] << "]";
  }
  if (components.empty())
    return emitError() << "monoid '" << name << "' has no state components";
  if (token.size() != components.size() || combine.size() != components.size())
    return emitError() << "monoid '" << name
                       << "' needs one token and one combine rule slot per "
                          "component";

  // Which factor kinds each rule family may read.
  enum class RuleFamily { Token, Combine, Readout };
  auto checkExpr = [&](const MonoidExpr &expr, RuleFamily family,
                       llvm::StringRef ruleName,
                       std::optional<MonoidMatrixShape> expected,
                       MonoidMatrixShape *inferred) -> LogicalResult {
    llvm::StringRef familyName = family == RuleFamily::Token     ? "token"
                                 : family == RuleFamily::Combine ? "combine"
                                                                 : "readout";
    std::optional<MonoidMatrixShape> first;
    for (const MonoidTerm &term : expr) {
      for (const MonoidFactor &f : term.factors) {
        bool isComponent = f.kind == MonoidFactor::Kind::Component;
        if (family == RuleFamily::Token && isComponent)
          return emitError()
                 << "monoid " << familyName << " rule for '" << ruleName
                 << "' reads state component '" << components[f.index].name
                 << "'; token rules read only inputs and params";
        if (family == RuleFamily::Combine && readsInput(f))
          return emitError()
                 << "monoid " << familyName << " rule for '" << ruleName
                 << "' reads input '" << inputs[f.index].name
                 << "'; combine rules read only components and "
                    "params";
        // The values of a per-head parameter come with the ops that build
        // segments (hla.segment, hla.prefix_vjp); the others never see them.
        if (f.kind == MonoidFactor::Kind::Param && params[f.index].perHead &&
            family != RuleFamily::Token)
          return emitError()
                 << "monoid " << familyName << " rule for '" << ruleName
                 << "' reads per-head parameter '" << params[f.index].name
                 << "'; only token rules may";
        if (isComponent && family == RuleFamily::Combine &&
            f.side == MonoidSide::None)
          return emitError()
                 << "monoid combine rule for '" << ruleName << "' reads '"
                 << components[f.index].name << "' without a side (.a or .b)";
        if (isComponent && family != RuleFamily::Combine &&
            f.side != MonoidSide::None)
          return emitError() << "monoid " << familyName << " rule for '"
                             << ruleName << "' uses a side suffix on '"
                             << components[f.index].name << "'";
        const MonoidSlot *slot = getFactorSlot(f);
        if ((f.kind == MonoidFactor::Kind::Diag ||
             f.kind == MonoidFactor::Kind::DiagExp) &&
            slot->getRank() != 1)
          return emitError() << "monoid " << familyName << " rule for '"
                             << ruleName << "': diag() needs a vector, but '"
                             << slot->name << "' has rank " << slot->getRank();
        if (f.transposed && (!slot || slot->getRank() == 0))
          return emitError() << "monoid " << familyName << " rule for '"
                             << ruleName << "' transposes a scalar";
      }
      std::string error;
      FailureOr<MonoidMatrixShape> shape = inferTermShape(term, error);
      if (failed(shape))
        return emitError() << "monoid " << familyName << " rule for '"
                           << ruleName << "': " << error;
      if (expected && !(*shape == *expected))
        return emitError() << "monoid " << familyName << " rule for '"
                           << ruleName << "' has a term of shape "
                           << shapeStr(*shape) << " but the component is "
                           << shapeStr(*expected);
      if (!first)
        first = *shape;
      else if (!(*first == *shape))
        return emitError() << "monoid " << familyName << " rule for '"
                           << ruleName << "' mixes term shapes "
                           << shapeStr(*first) << " and " << shapeStr(*shape);
    }
    if (inferred && first)
      *inferred = *first;
    return success();
  };

  for (auto [i, slot] : llvm::enumerate(components)) {
    MonoidMatrixShape expected = getMatrixShape(slot);
    if (failed(checkExpr(token[i], RuleFamily::Token, slot.name, expected,
                         nullptr)))
      return failure();
    if (combine[i].empty())
      return emitError() << "monoid component '" << slot.name
                         << "' has no combine rule";
    if (failed(checkExpr(combine[i], RuleFamily::Combine, slot.name, expected,
                         nullptr)))
      return failure();
  }
  llvm::StringSet<> readoutNames;
  for (const MonoidReadout &readout : readouts) {
    if (!readoutNames.insert(readout.name).second)
      return emitError() << "monoid readout '" << readout.name
                         << "' is defined twice";
    if (readout.expr.empty())
      return emitError() << "monoid readout '" << readout.name << "' is empty";
    MonoidMatrixShape shape;
    if (failed(checkExpr(readout.expr, RuleFamily::Readout, readout.name,
                         std::nullopt, &shape)))
      return failure();
    if (shape.rows != "1" && shape.cols != "1")
      return emitError() << "monoid readout '" << readout.name
                         << "' must be a vector or scalar, not "
                         << shapeStr(shape);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

MonoidSpec MonoidSpec::withParams(llvm::ArrayRef<MonoidParam> values) const {
  MonoidSpec result = *this;
  for (const MonoidParam &value : values)
    if (std::optional<unsigned> index = result.findParam(value.name)) {
      result.params[*index].value = value.value;
      result.params[*index].perHead = value.perHead;
    }
  return result;
}

MonoidSpec
MonoidSpec::withReadouts(llvm::ArrayRef<llvm::StringRef> names) const {
  MonoidSpec result = *this;
  llvm::erase_if(result.readouts, [&](const MonoidReadout &readout) {
    return !llvm::is_contained(names, readout.name);
  });
  return result;
}

/// Rewrites every factor of `spec` through `mapFactor`, which returns false to
/// drop the factor (it is 1) or updates it in place.
static void rewriteFactors(MonoidSpec &spec,
                           llvm::function_ref<bool(MonoidFactor &)> mapFactor) {
  auto rewriteExpr = [&](MonoidExpr &expr) {
    for (MonoidTerm &term : expr) {
      llvm::SmallVector<MonoidFactor, 4> kept;
      for (MonoidFactor f : term.factors)
        if (mapFactor(f))
          kept.push_back(f);
      term.factors = std::move(kept);
    }
  };
  for (MonoidExpr &expr : spec.token)
    rewriteExpr(expr);
  for (MonoidExpr &expr : spec.combine)
    rewriteExpr(expr);
  for (MonoidReadout &readout : spec.readouts)
    rewriteExpr(readout.expr);
}

/// Whether component `c` is the constant 1: a scalar with identity 1, token
/// value exactly 1 and combine rule `c.a * c.b`.
static bool isConstantOne(const MonoidSpec &spec, unsigned c) {
  const MonoidSlot &slot = spec.components[c];
  if (slot.getRank() != 0 || !slot.eyeIdentity)
    return false;
  // The token value must be a product of unit parameters (or empty).
  const MonoidExpr &tok = spec.token[c];
  if (tok.size() != 1 || tok[0].negated)
    return false;
  for (const MonoidFactor &f : tok[0].factors)
    if (f.kind != MonoidFactor::Kind::Param || spec.params[f.index].perHead ||
        spec.params[f.index].value != 1.0)
      return false;
  const MonoidExpr &comb = spec.combine[c];
  if (comb.size() != 1 || comb[0].negated || comb[0].factors.size() != 2)
    return false;
  bool sawA = false, sawB = false;
  for (const MonoidFactor &f : comb[0].factors) {
    if (f.kind != MonoidFactor::Kind::Component || f.index != c)
      return false;
    sawA |= f.side == MonoidSide::A;
    sawB |= f.side == MonoidSide::B;
  }
  return sawA && sawB;
}

MonoidSpec MonoidSpec::simplify() const {
  MonoidSpec spec = *this;

  // 1. A zero parameter annihilates its term.
  auto dropZeroTerms = [&](MonoidExpr &expr) {
    llvm::erase_if(expr, [&](const MonoidTerm &term) {
      return llvm::any_of(term.factors, [&](const MonoidFactor &f) {
        return f.kind == MonoidFactor::Kind::Param &&
               !spec.params[f.index].perHead &&
               spec.params[f.index].value == 0.0;
      });
    });
  };
  for (MonoidExpr &expr : spec.token)
    dropZeroTerms(expr);
  for (MonoidExpr &expr : spec.combine)
    dropZeroTerms(expr);
  for (MonoidReadout &readout : spec.readouts)
    dropZeroTerms(readout.expr);

  // 2. Components that are constantly one (decay with gamma = 1) vanish from
  //    every product they appear in.
  llvm::SmallVector<bool> constantOne(spec.components.size(), false);
  for (unsigned c = 0; c < spec.components.size(); ++c)
    constantOne[c] = isConstantOne(spec, c);
  rewriteFactors(spec, [&](MonoidFactor &f) {
    return !(f.kind == MonoidFactor::Kind::Component && constantOne[f.index]);
  });

  // Unit parameters leave their products.
  rewriteFactors(spec, [&](MonoidFactor &f) {
    return !(f.kind == MonoidFactor::Kind::Param &&
             !spec.params[f.index].perHead &&
             spec.params[f.index].value == 1.0);
  });

  // 3. Keep the components the readouts depend on, through both operands of
  //    combine rules (a segment is also a right operand). A monoid without
  //    readouts is kept whole.
  llvm::SmallVector<bool> keep(spec.components.size(), spec.readouts.empty());
  if (!spec.readouts.empty()) {
    llvm::SmallVector<unsigned> worklist;
    auto visit = [&](const MonoidExpr &expr) {
      forEachFactor(expr, [&](const MonoidFactor &f) {
        if (f.kind == MonoidFactor::Kind::Component && !keep[f.index]) {
          keep[f.index] = true;
          worklist.push_back(f.index);
        }
      });
    };
    for (const MonoidReadout &readout : spec.readouts)
      visit(readout.expr);
    while (!worklist.empty())
      visit(spec.combine[worklist.pop_back_val()]);
  }
  for (unsigned c = 0; c < spec.components.size(); ++c)
    if (constantOne[c])
      keep[c] = false;

  // 4. Drop parameters and inputs nothing reads any more.
  llvm::SmallVector<bool> paramUsed(spec.params.size(), false);
  llvm::SmallVector<bool> inputUsed(spec.inputs.size(), false);
  auto markUsed = [&](const MonoidExpr &expr) {
    forEachFactor(expr, [&](const MonoidFactor &f) {
      if (f.kind == MonoidFactor::Kind::Param)
        paramUsed[f.index] = true;
      else if (readsInput(f))
        inputUsed[f.index] = true;
    });
  };
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    if (!keep[c])
      continue;
    markUsed(spec.token[c]);
    markUsed(spec.combine[c]);
  }
  for (const MonoidReadout &readout : spec.readouts)
    markUsed(readout.expr);

  // Renumber what is kept.
  auto buildMap = [](llvm::ArrayRef<bool> kept) {
    llvm::SmallVector<int> map(kept.size(), -1);
    int next = 0;
    for (auto [i, k] : llvm::enumerate(kept))
      if (k)
        map[i] = next++;
    return map;
  };
  llvm::SmallVector<int> componentMap = buildMap(keep);
  llvm::SmallVector<int> paramMap = buildMap(paramUsed);
  llvm::SmallVector<int> inputMap = buildMap(inputUsed);

  MonoidSpec result;
  result.name = spec.name;
  for (auto [i, slot] : llvm::enumerate(spec.inputs))
    if (inputUsed[i])
      result.inputs.push_back(slot);
  for (auto [i, param] : llvm::enumerate(spec.params))
    if (paramUsed[i])
      result.params.push_back(param);
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    if (!keep[c])
      continue;
    result.components.push_back(spec.components[c]);
    result.token.push_back(spec.token[c]);
    result.combine.push_back(spec.combine[c]);
  }
  result.readouts = spec.readouts;
  rewriteFactors(result, [&](MonoidFactor &f) {
    switch (f.kind) {
    case MonoidFactor::Kind::Component:
      f.index = componentMap[f.index];
      break;
    case MonoidFactor::Kind::Param:
      f.index = paramMap[f.index];
      break;
    default:
      f.index = inputMap[f.index];
      break;
    }
    return true;
  });
  return result;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// Parses a monoid body with an AsmParser; keeps the sections seen so far so
/// that rule bodies can resolve names.
class MonoidParser {
public:
  MonoidParser(AsmParser &parser) : parser(parser) {}

  FailureOr<MonoidSpec> parse();

private:
  enum class Family { Token, Combine, Readout };

  ParseResult parseSlot(MonoidSlot &slot, bool allowEye);
  ParseResult parseParam();
  ParseResult parseRule(Family family);
  ParseResult parseExpr(Family family, MonoidExpr &expr);
  ParseResult parseTerm(Family family, MonoidTerm &term);
  ParseResult parseFactor(Family family, MonoidTerm &term);
  ParseResult parseSection(llvm::StringRef keyword,
                           llvm::function_ref<ParseResult()> element,
                           bool required);

  AsmParser &parser;
  MonoidSpec spec;
  llvm::SmallVector<bool> hasToken, hasCombine;
};
} // namespace

ParseResult MonoidParser::parseSlot(MonoidSlot &slot, bool allowEye) {
  std::string name;
  if (parser.parseKeywordOrString(&name) || parser.parseColon())
    return failure();
  slot.name = name;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       llvm::StringRef symbol;
                                       if (parser.parseKeyword(&symbol))
                                         return failure();
                                       slot.shape.push_back(symbol.str());
                                       return success();
                                     }))
    return failure();
  if (allowEye && succeeded(parser.parseOptionalKeyword("eye")))
    slot.eyeIdentity = true;
  return success();
}

ParseResult MonoidParser::parseParam() {
  llvm::StringRef name;
  MonoidParam param;
  if (parser.parseKeyword(&name) || parser.parseEqual())
    return failure();
  if (succeeded(parser.parseOptionalKeyword("per_head")))
    param.perHead = true;
  else if (parser.parseFloat(param.value))
    return failure();
  param.name = name.str();
  spec.params.push_back(param);
  return success();
}

ParseResult MonoidParser::parseFactor(Family family, MonoidTerm &term) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  llvm::StringRef word;
  if (parser.parseKeyword(&word))
    return failure();

  MonoidFactor factor;
  if (word == "diag") {
    // diag(x) or diag(exp(x)) of a vector input.
    factor.kind = MonoidFactor::Kind::Diag;
    llvm::StringRef inner;
    if (parser.parseLParen() || parser.parseKeyword(&inner))
      return failure();
    bool isExp = inner == "exp";
    if (isExp) {
      factor.kind = MonoidFactor::Kind::DiagExp;
      if (parser.parseLParen() || parser.parseKeyword(&inner) ||
          parser.parseRParen())
        return failure();
    }
    if (parser.parseRParen())
      return failure();
    std::optional<unsigned> input = spec.findInput(inner);
    if (!input)
      return parser.emitError(loc)
             << "diag() of '" << inner << "', which is not a monoid input";
    factor.index = *input;
    term.factors.push_back(factor);
    return success();
  }

  // name[.a|.b][.T]
  llvm::SmallVector<llvm::StringRef, 3> parts;
  word.split(parts, '.');
  llvm::StringRef base = parts.front();
  for (llvm::StringRef suffix : llvm::drop_begin(parts)) {
    if (suffix == "T" && !factor.transposed) {
      factor.transposed = true;
    } else if ((suffix == "a" || suffix == "b") &&
               factor.side == MonoidSide::None && !factor.transposed) {
      factor.side = suffix == "a" ? MonoidSide::A : MonoidSide::B;
    } else {
      return parser.emitError(loc) << "unexpected suffix '." << suffix
                                   << "' in factor '" << word << "'";
    }
  }
  if (std::optional<unsigned> c = spec.findComponent(base)) {
    if (family == Family::Token)
      return parser.emitError(loc)
             << "token rules cannot read state component '" << base << "'";
    if (family == Family::Combine && factor.side == MonoidSide::None)
      return parser.emitError(loc) << "state component '" << base
                                   << "' in a combine rule needs a side: '"
                                   << base << ".a' or '" << base << ".b'";
    if (family != Family::Combine && factor.side != MonoidSide::None)
      return parser.emitError(loc)
             << "sides (.a, .b) only exist in combine rules";
    factor.kind = MonoidFactor::Kind::Component;
    factor.index = *c;
  } else if (std::optional<unsigned> i = spec.findInput(base)) {
    if (family == Family::Combine)
      return parser.emitError(loc)
             << "combine rules cannot read input '" << base << "'";
    if (factor.side != MonoidSide::None)
      return parser.emitError(loc) << "input '" << base << "' has no side";
    factor.kind = MonoidFactor::Kind::Input;
    factor.index = *i;
  } else if (std::optional<unsigned> p = spec.findParam(base)) {
    if (factor.side != MonoidSide::None || factor.transposed)
      return parser.emitError(loc)
             << "parameter '" << base << "' takes no suffix";
    factor.kind = MonoidFactor::Kind::Param;
    factor.index = *p;
  } else {
    return parser.emitError(loc)
           << "'" << base << "' is not an input, parameter or component of "
           << "the monoid";
  }
  term.factors.push_back(factor);
  return success();
}

ParseResult MonoidParser::parseTerm(Family family, MonoidTerm &term) {
  do {
    if (parseFactor(family, term))
      return failure();
  } while (succeeded(parser.parseOptionalStar()));
  return success();
}

ParseResult MonoidParser::parseExpr(Family family, MonoidExpr &expr) {
  bool negated = succeeded(parser.parseOptionalMinus());
  while (true) {
    MonoidTerm term;
    term.negated = negated;
    // Integer literals: a lone 0 is the empty sum; 1 is the empty product.
    // Every other constant is a parameter.
    uint64_t literalValue;
    llvm::SMLoc loc = parser.getCurrentLocation();
    OptionalParseResult literal = parser.parseOptionalInteger(literalValue);
    if (literal.has_value()) {
      if (failed(*literal))
        return failure();
      if (literalValue == 0 && expr.empty() && !negated)
        return success();
      if (literalValue != 1)
        return parser.emitError(loc, "the only numeric literals are a lone 0 "
                                     "and the factor 1; write other "
                                     "constants as params");
      if (succeeded(parser.parseOptionalStar()) && parseTerm(family, term))
        return failure();
    } else if (parseTerm(family, term)) {
      return failure();
    }
    expr.push_back(std::move(term));
    if (succeeded(parser.parseOptionalPlus()))
      negated = false;
    else if (succeeded(parser.parseOptionalMinus()))
      negated = true;
    else
      return success();
  }
}

ParseResult MonoidParser::parseRule(Family family) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  llvm::StringRef name;
  if (parser.parseKeyword(&name) || parser.parseEqual())
    return failure();
  MonoidExpr expr;
  if (parseExpr(family, expr))
    return failure();
  if (family == Family::Readout) {
    if (spec.findReadout(name))
      return parser.emitError(loc)
             << "readout '" << name << "' is defined twice";
    spec.readouts.push_back({name.str(), std::move(expr)});
    return success();
  }
  std::optional<unsigned> c = spec.findComponent(name);
  if (!c)
    return parser.emitError(loc)
           << "rule for '" << name << "', which is not a state component";
  llvm::SmallVector<bool> &seen =
      family == Family::Token ? hasToken : hasCombine;
  if (seen[*c])
    return parser.emitError(loc)
           << "two " << (family == Family::Token ? "token" : "combine")
           << " rules for '" << name << "'";
  seen[*c] = true;
  (family == Family::Token ? spec.token : spec.combine)[*c] = std::move(expr);
  return success();
}

ParseResult
MonoidParser::parseSection(llvm::StringRef keyword,
                           llvm::function_ref<ParseResult()> element,
                           bool required) {
  if (required) {
    if (parser.parseKeyword(keyword))
      return failure();
  } else if (failed(parser.parseOptionalKeyword(keyword))) {
    return success();
  }
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Paren, element);
}

FailureOr<MonoidSpec> MonoidParser::parse() {
  std::string name;
  if (parser.parseString(&name))
    return failure();
  spec.name = name;
  if (parseSection(
          "inputs",
          [&]() {
            MonoidSlot slot;
            if (parseSlot(slot, /*allowEye=*/false))
              return failure();
            spec.inputs.push_back(std::move(slot));
            return success();
          },
          /*required=*/false) ||
      parseSection(
          "params", [&]() { return parseParam(); },
          /*required=*/false) ||
      parseSection(
          "state",
          [&]() {
            MonoidSlot slot;
            if (parseSlot(slot, /*allowEye=*/true))
              return failure();
            spec.components.push_back(std::move(slot));
            return success();
          },
          /*required=*/true))
    return failure();
  spec.token.resize(spec.components.size());
  spec.combine.resize(spec.components.size());
  hasToken.assign(spec.components.size(), false);
  hasCombine.assign(spec.components.size(), false);
  if (parseSection(
          "token", [&]() { return parseRule(Family::Token); },
          /*required=*/false) ||
      parseSection(
          "combine", [&]() { return parseRule(Family::Combine); },
          /*required=*/true) ||
      parseSection(
          "readout", [&]() { return parseRule(Family::Readout); },
          /*required=*/false))
    return failure();
  return spec;
}

FailureOr<MonoidSpec> MonoidSpec::parse(AsmParser &parser) {
  return MonoidParser(parser).parse();
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static void printFactor(llvm::raw_ostream &os, const MonoidSpec &spec,
                        const MonoidFactor &f) {
  switch (f.kind) {
  case MonoidFactor::Kind::Param:
    os << spec.params[f.index].name;
    return;
  case MonoidFactor::Kind::Diag:
    os << "diag(" << spec.inputs[f.index].name << ")";
    return;
  case MonoidFactor::Kind::DiagExp:
    os << "diag(exp(" << spec.inputs[f.index].name << "))";
    return;
  case MonoidFactor::Kind::Input:
    os << spec.inputs[f.index].name;
    break;
  case MonoidFactor::Kind::Component:
    os << spec.components[f.index].name;
    if (f.side != MonoidSide::None)
      os << (f.side == MonoidSide::A ? ".a" : ".b");
    break;
  }
  if (f.transposed)
    os << ".T";
}

void MonoidSpec::printExpr(llvm::raw_ostream &os,
                           const MonoidExpr &expr) const {
  if (expr.empty()) {
    os << "0";
    return;
  }
  for (auto [i, term] : llvm::enumerate(expr)) {
    if (i == 0)
      os << (term.negated ? "-" : "");
    else
      os << (term.negated ? " - " : " + ");
    if (term.factors.empty())
      os << "1";
    llvm::interleave(
        term.factors, os,
        [&](const MonoidFactor &f) { printFactor(os, *this, f); }, " * ");
  }
}

static void printSlots(llvm::raw_ostream &os, llvm::StringRef keyword,
                       llvm::ArrayRef<MonoidSlot> slots) {
  os << " " << keyword << "(";
  llvm::interleaveComma(slots, os, [&](const MonoidSlot &slot) {
    os << slot.name << ": [";
    llvm::interleaveComma(slot.shape, os);
    os << "]";
    if (slot.eyeIdentity)
      os << " eye";
  });
  os << ")";
}

/// Prints everything but the parameters, whose values need the AsmPrinter's
/// float formatting; `printParams` is called in between.
static void printBody(llvm::raw_ostream &os, const MonoidSpec &spec,
                      llvm::function_ref<void()> printParams) {
  if (!spec.inputs.empty())
    printSlots(os, "inputs", spec.inputs);
  if (!spec.params.empty()) {
    os << " params(";
    printParams();
    os << ")";
  }
  printSlots(os, "state", spec.components);
  bool anyToken =
      llvm::any_of(spec.token, [](const MonoidExpr &e) { return !e.empty(); });
  if (anyToken) {
    os << " token(";
    bool first = true;
    for (auto [i, expr] : llvm::enumerate(spec.token)) {
      if (expr.empty())
        continue;
      os << (first ? "" : ", ") << spec.components[i].name << " = ";
      spec.printExpr(os, expr);
      first = false;
    }
    os << ")";
  }
  os << " combine(";
  for (auto [i, expr] : llvm::enumerate(spec.combine)) {
    os << (i ? ", " : "") << spec.components[i].name << " = ";
    spec.printExpr(os, expr);
  }
  os << ")";
  if (!spec.readouts.empty()) {
    os << " readout(";
    llvm::interleaveComma(spec.readouts, os, [&](const MonoidReadout &r) {
      os << r.name << " = ";
      spec.printExpr(os, r.expr);
    });
    os << ")";
  }
}

void MonoidSpec::print(AsmPrinter &printer) const {
  printer << "\"" << name << "\"";
  printBody(printer.getStream(), *this, [&]() {
    llvm::interleaveComma(params, printer.getStream(),
                          [&](const MonoidParam &p) {
                            printer << p.name << " = ";
                            if (p.perHead)
                              printer << "per_head";
                            else
                              printer.printFloat(llvm::APFloat(p.value));
                          });
  });
}

std::string MonoidSpec::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "\"" << name << "\"";
  printBody(os, *this, [&]() {
    llvm::interleaveComma(params, os, [&](const MonoidParam &p) {
      os << p.name << " = ";
      if (p.perHead)
        os << "per_head";
      else
        os << p.value;
    });
  });
  return text;
}

//===----------------------------------------------------------------------===//
// MonoidDimBinder
//===----------------------------------------------------------------------===//

LogicalResult MonoidDimBinder::bind(const MonoidSlot &slot,
                                    llvm::ArrayRef<int64_t> extents,
                                    std::string &error) {
  if (extents.size() != slot.getRank()) {
    error = "'" + slot.name + "' needs " + std::to_string(slot.getRank()) +
            " trailing dimension(s) but has " + std::to_string(extents.size());
    return failure();
  }
  for (auto [symbol, extent] : llvm::zip(slot.shape, extents)) {
    if (ShapedType::isDynamic(extent))
      continue;
    auto [it, inserted] = sizes.try_emplace(symbol, extent);
    if (!inserted && it->second != extent) {
      error = "'" + slot.name + "' has " + symbol + " = " +
              std::to_string(extent) + " but " + symbol + " = " +
              std::to_string(it->second) + " elsewhere";
      return failure();
    }
  }
  return success();
}

int64_t MonoidDimBinder::lookup(llvm::StringRef symbol) const {
  auto it = sizes.find(symbol);
  return it == sizes.end() ? ShapedType::kDynamic : it->second;
}

llvm::SmallVector<int64_t>
MonoidDimBinder::resolve(const MonoidSlot &slot) const {
  llvm::SmallVector<int64_t> result;
  for (const std::string &symbol : slot.shape)
    result.push_back(lookup(symbol));
  return result;
}
