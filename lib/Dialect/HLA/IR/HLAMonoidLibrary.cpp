//===- HLAMonoidLibrary.cpp - The attention ops' monoids ----------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The prefix-moment monoid of every attention op, written once as text in the
// `#hla.monoid` syntax. An op instance's monoid is its template with the op's
// options filled in (`scale`, `gamma`, `ridge`), only the readouts it uses,
// and simplify() applied — so "no decay" removes the ρ component, "not
// normalized" removes the denominator's moments, and so on. Nothing here is
// C++ per variant; the formulas are SEMANTICS.md's, and each is checked
// numerically by the float64 references (python/hla/reference.py) and by
// hla-verify-algebra.
//
// Parameter conventions: `scale` multiplies every query (so it appears once
// per q factor), `gamma` is the per-token decay ρ, `ridge` is λ.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::hla;

namespace {
struct MonoidTemplate {
  const char *name;
  const char *text;
};
} // namespace

// clang-format off
static const MonoidTemplate kMonoidTemplates[] = {
// §1. First-order linear attention: P = Σ γ^{t-j} k vᵀ, m = Σ γ^{t-j} k.
{"linear_attention", R"mlir(#hla.monoid<"linear_attention"
  inputs(q: [d], k: [d], v: [dv])
  params(scale = 1.0, gamma = 1.0)
  state(P: [d, dv], m: [d], rho: [] eye)
  token(P = k * v.T, m = k, rho = gamma)
  combine(P = rho.b * P.a + P.b, m = rho.b * m.a + m.b, rho = rho.a * rho.b)
  readout(num = scale * q.T * P, den = scale * q.T * m)>)mlir"},

// §2. Masked second-order HLA. G and h decay by ρ_B² (the erratum): they are
// products of two once-decayed moments.
{"hla2", R"mlir(#hla.monoid<"hla2"
  inputs(q: [d], k: [d], v: [dv])
  params(scale = 1.0, gamma = 1.0, ridge = 0.0)
  state(S: [d, d], C: [d, dv], m: [d], G: [d, dv], h: [d], rho: [] eye)
  token(S = k * k.T, C = scale * q * v.T, m = scale * q, rho = gamma)
  combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b, m = rho.b * m.a + m.b,
          G = rho.b * rho.b * G.a + G.b + rho.b * S.b * C.a,
          h = rho.b * rho.b * h.a + h.b + rho.b * S.b * m.a,
          rho = rho.a * rho.b)
  readout(num = scale * q.T * S * C - scale * q.T * G + ridge * scale * q.T * C,
          den = scale * q.T * S * m - scale * q.T * h + ridge * scale * q.T * m)>)mlir"},

// §2. Unmasked second-order HLA: o_t = q_tᵀ (S_t + λI) C_t.
{"hla2_unmasked", R"mlir(#hla.monoid<"hla2_unmasked"
  inputs(q: [d], k: [d], v: [dv])
  params(scale = 1.0, gamma = 1.0, ridge = 0.0)
  state(S: [d, d], C: [d, dv], m: [d], rho: [] eye)
  token(S = k * k.T, C = scale * q * v.T, m = scale * q, rho = gamma)
  combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b, m = rho.b * m.a + m.b,
          rho = rho.a * rho.b)
  readout(num = scale * q.T * S * C + ridge * scale * q.T * C,
          den = scale * q.T * S * m + ridge * scale * q.T * m)>)mlir"},

// §3. Asymmetric HLA. R = Σ k qᵀ is a plain sum (the erratum): a path
// t <- i <- j carries γ^{t-j} whatever i is.
{"ahla", R"mlir(#hla.monoid<"ahla"
  inputs(q: [d], k: [d], v: [dv])
  params(scale = 1.0, gamma = 1.0)
  state(R: [d, d], P: [d, dv], m: [d], E: [d, dv], n: [d], rho: [] eye)
  token(R = scale * k * q.T, P = k * v.T, m = k,
        E = scale * k * q.T * k * v.T, n = scale * k * q.T * k, rho = gamma)
  combine(R = R.a + R.b, P = rho.b * P.a + P.b, m = rho.b * m.a + m.b,
          E = rho.b * E.a + E.b + rho.b * R.b * P.a,
          n = rho.b * n.a + n.b + rho.b * R.b * m.a,
          rho = rho.a * rho.b)
  readout(num = scale * q.T * E, den = scale * q.T * n)>)mlir"},

// §4. Third-order HLA, exact scan. With decay, Q2 weighs each token by the
// decay from the segment's start (γ^{u-a}), which is why its rule reads ρ_A;
// R, Rm and U are unweighted and the cross terms of X pick up one ρ_B.
{"hla3", R"mlir(#hla.monoid<"hla3"
  inputs(q: [d], k: [d], v: [dv])
  params(scale = 1.0, gamma = 1.0)
  state(S: [d, d], P: [d, dv], m: [d], Q2: [d, d], R: [d, dv], Rm: [d],
        U: [d, d], X: [d, dv], x: [d], rho: [] eye)
  token(S = k * k.T, P = k * v.T, m = k,
        Q2 = gamma * scale * scale * q * q.T,
        R = scale * scale * q * q.T * k * v.T,
        Rm = scale * scale * q * q.T * k,
        U = scale * scale * k * k.T * q * q.T,
        X = scale * scale * k * k.T * q * q.T * k * v.T,
        x = scale * scale * k * k.T * q * q.T * k,
        rho = gamma)
  combine(S = rho.b * S.a + S.b, P = rho.b * P.a + P.b, m = rho.b * m.a + m.b,
          Q2 = Q2.a + rho.a * Q2.b,
          R = R.a + R.b + Q2.b * P.a,
          Rm = Rm.a + Rm.b + Q2.b * m.a,
          U = U.a + U.b + S.a * Q2.b,
          X = rho.b * X.a + X.b + rho.b * S.a * Q2.b * P.a + rho.b * S.a * R.b
              + rho.b * U.b * P.a,
          x = rho.b * x.a + x.b + rho.b * S.a * Q2.b * m.a + rho.b * S.a * Rm.b
              + rho.b * U.b * m.a,
          rho = rho.a * rho.b)
  readout(num = scale * q.T * X, den = scale * q.T * x)>)mlir"},

// §5. LinSimp's global axis: random-feature moments of the keys. The query
// side `f` is a per-(token, anchor) feature, read by hla.anchor_readout.
{"linsimp", R"mlir(#hla.monoid<"linsimp"
  inputs(phi: [m], v: [dv], f: [m])
  state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi)
  combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>)mlir"},

// §6. KDA: each token is the affine map S -> M S + B; segments compose.
{"kda", R"mlir(#hla.monoid<"kda"
  inputs(q: [dk], k: [dk], v: [dv], g: [dk], beta: [])
  params(scale = 1.0)
  state(M: [dk, dk] eye, S: [dk, dv])
  token(M = diag(exp(g)) - beta * k * k.T * diag(exp(g)), S = beta * k * v.T)
  combine(M = M.b * M.a, S = M.b * S.a + S.b)
  readout(num = scale * q.T * S)>)mlir"},
};
// clang-format on

FailureOr<MonoidSpec> HLADialect::getMonoidTemplate(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(monoidTemplatesMutex);
  auto it = monoidTemplates.find(name);
  if (it != monoidTemplates.end())
    return it->second;
  for (const MonoidTemplate &entry : kMonoidTemplates) {
    if (name != entry.name)
      continue;
    // A parse failure here is a bug in the table above; the diagnostic goes
    // to the context's handler like any other.
    Attribute attr = mlir::parseAttribute(entry.text, getContext());
    auto monoid = dyn_cast_or_null<MonoidAttr>(attr);
    if (!monoid)
      return failure();
    monoidTemplates[name] = monoid.getSpec();
    return monoid.getSpec();
  }
  return failure();
}

//===----------------------------------------------------------------------===//
// Per-op instantiation
//===----------------------------------------------------------------------===//

/// The decay of an op with an optional `decay` attribute (1 when absent).
/// A `head_decay` tensor makes it a per-head parameter.
template <typename OpTy>
static MonoidParam getDecayParam(OpTy op) {
  if (op.getHeadDecay())
    return {"gamma", 0.0, /*perHead=*/true};
  if (FloatAttr decay = op.getDecayAttr())
    return {"gamma", decay.getValueAsDouble()};
  return {"gamma", 1.0};
}

FailureOr<MonoidSpec> mlir::hla::getAttentionMonoid(Operation *op,
                                                    std::string &reason) {
  auto *dialect = op->getContext()->getLoadedDialect<HLADialect>();
  auto attention = dyn_cast<AttentionOpInterface>(op);
  if (!dialect || !attention) {
    reason = "not an hla attention op";
    return failure();
  }
  double scale = attention.getEffectiveScale();

  llvm::StringRef templateName;
  llvm::SmallVector<MonoidParam> params = {{"scale", scale}};
  bool normalize = false;
  LogicalResult known =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](LinearAttentionOp op) {
            templateName = "linear_attention";
            params.push_back(getDecayParam(op));
            normalize = op.getNormalize();
            return success();
          })
          .Case([&](HLA2Op op) {
            templateName = op.getMasked() ? "hla2" : "hla2_unmasked";
            params.push_back(getDecayParam(op));
            params.push_back({"ridge", op.getRidgeAttr().getValueAsDouble()});
            normalize = op.getNormalize();
            return success();
          })
          .Case([&](AHLAOp op) {
            templateName = "ahla";
            params.push_back(getDecayParam(op));
            normalize = op.getNormalize();
            return success();
          })
          .Case([&](HLA3Op op) {
            templateName = "hla3";
            params.push_back(getDecayParam(op));
            normalize = op.getNormalize();
            return success();
          })
          .Case([&](LinSimpOp op) -> LogicalResult {
            if (op.getKernel() == FeatureKernel::exact) {
              reason = "kernel = exact has no finite prefix-moment state";
              return failure();
            }
            // Features are built by hla.feature_map; the monoid itself has
            // no scale, and both readouts are always used (joint
            // normalisation).
            templateName = "linsimp";
            normalize = true;
            return success();
          })
          .Case([&](KDAOp) {
            templateName = "kda";
            return success();
          })
          .Default([&](Operation *) {
            reason = "no monoid is known for this op";
            return failure();
          });
  if (failed(known))
    return failure();

  FailureOr<MonoidSpec> base = dialect->getMonoidTemplate(templateName);
  if (failed(base)) {
    reason =
        ("the monoid library entry '" + templateName + "' is broken").str();
    return failure();
  }
  llvm::SmallVector<llvm::StringRef, 2> readouts = {"num"};
  if (normalize)
    readouts.push_back("den");
  return base->withParams(params).withReadouts(readouts).simplify();
}

FailureOr<llvm::SmallVector<AttentionStateSlot>>
mlir::hla::getAttentionStateSlots(Operation *op, std::string &reason) {
  auto attention = cast<AttentionOpInterface>(op);
  FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
  if (failed(spec))
    return failure();

  // Symbol sizes come from the operands: d from the query, dv from the
  // value, m from LinSimp's feature matrix.
  MonoidDimBinder binder;
  std::string ignored;
  int64_t d = attention.getQuery().getType().getDimSize(3);
  int64_t dv = attention.getValue().getType().getDimSize(3);
  (void)binder.bind({"", {"d"}, false}, {d}, ignored);
  (void)binder.bind({"", {"dk"}, false}, {d}, ignored);
  (void)binder.bind({"", {"dv"}, false}, {dv}, ignored);
  auto linsimp = dyn_cast<LinSimpOp>(op);
  if (linsimp)
    (void)binder.bind({"", {"m"}, false},
                      {linsimp.getOmega().getType().getDimSize(0)}, ignored);

  llvm::SmallVector<AttentionStateSlot> slots;
  for (unsigned c : spec->getCarryComponents()) {
    const MonoidSlot &slot = spec->components[c];
    slots.push_back({slot.name, binder.resolve(slot)});
  }
  if (linsimp) {
    // The anchor window's halo: the last W-1 anchors and their validity.
    int64_t halo = linsimp.getWindow() - 1;
    slots.push_back({"anchor_r", {halo, d}});
    slots.push_back({"anchor_u", {halo, dv}});
    slots.push_back({"anchor_valid", {halo}});
  }
  return slots;
}
