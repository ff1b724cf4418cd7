#!/usr/bin/env python3
"""Writes the seed's no-softmax language model as an MLIR model graph.

    gen_linsimp_kda_model.py [-o FILE] [--tokens T] [--d-model D] [--heads H]
                             [--vocab V] [--mlp F] [--features M] [--window W]

24 pre-norm residual layers, every 4th one (layers 3, 7, ..., 23) LinSimp
and the rest KDA (18 + 6), then a final RMSNorm and the logits. Every
layer's projections, short causal convolutions, normalisations, gates and
MLP are ordinary func/arith/math/tensor/linalg ops; the attention ops are
`hla.kda` and `hla.linsimp` (Ω from `hla.random_features`, one seed per
layer). Weights are arguments, stacked per layer kind ([18, ...] for KDA,
[6, ...] for LinSimp), so that `--random SEED` can make all of them.

Token ids are the first argument ([T] i32, byte-level: V = 256 by default);
the graph checks 0 <= id < V at run time. The default sizes are the small
ones the CI runs; the seed model's are `--d-model 1024 --heads 16`.

Per KDA layer (x the residual stream, n = RMSNorm(x)):
  q, k, v = silu(conv4(n Wq)), silu(conv4(n Wk)), silu(conv4(n Wv))
  q, k L2-normalised per head; g = -softplus(n Wg) / 8; beta = sigmoid(n Wb)
  x += (kda(q, k, v, g, beta) * sigmoid(n Wgate)) Wo
Per LinSimp layer:
  q, k, r from silu(conv4(n W)) L2-normalised per head; v, u = n Wv, n Wu
  x += (linsimp(q, k, v, r, u, Ω, W) * sigmoid(n Wgate)) Wo
and after either, x += silu(RMSNorm(x) W1) W2. Projections are scaled by
fan_in^-1/2 (the weights are standard-normal-like).
"""

import argparse
import sys


class Graph:
    def __init__(self, a):
        self.T, self.D, self.H = a.tokens, a.d_model, a.heads
        self.dh = self.D // self.H
        self.V, self.F, self.M, self.W = a.vocab, a.mlp, a.features, a.window
        self.K = 4
        self.layers = 24
        self.funcs = []
        self.helpers = set()

    # -- types ---------------------------------------------------------------
    @staticmethod
    def t(*shape, dtype="f32"):
        return "tensor<" + "x".join(str(s) for s in shape) + f"x{dtype}>"

    # -- helper functions (emitted once per shape) -----------------------------
    def rmsnorm(self, n):
        name = f"rmsnorm_{n}"
        if name not in self.helpers:
            self.helpers.add(name)
            T = self.T
            self.funcs.append(f"""
// RMSNorm over the feature axis: x / sqrt(mean(x^2) + 1e-6) * g.
func.func private @{name}(%x: {self.t(T, n)}, %g: {self.t(n)}) -> {self.t(T, n)} {{
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant {1.0 / n!r} : f32
  %eps = arith.constant 1.0e-6 : f32
  %e = tensor.empty() : {self.t(T)}
  %z = linalg.fill ins(%zero : f32) outs(%e : {self.t(T)}) -> {self.t(T)}
  %s = linalg.generic {{indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}}
      ins(%x : {self.t(T, n)}) outs(%z : {self.t(T)}) {{
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }} -> {self.t(T)}
  %oe = tensor.empty() : {self.t(T, n)}
  %y = linalg.generic {{indexing_maps = [#id2, #row2, #col2, #id2], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %s, %g : {self.t(T, n)}, {self.t(T)}, {self.t(n)}) outs(%oe : {self.t(T, n)}) {{
  ^bb0(%a: f32, %ss: f32, %w: f32, %o: f32):
    %m = arith.mulf %ss, %inv : f32
    %b = arith.addf %m, %eps : f32
    %r = math.rsqrt %b : f32
    %nn = arith.mulf %a, %r : f32
    %y0 = arith.mulf %nn, %w : f32
    linalg.yield %y0 : f32
  }} -> {self.t(T, n)}
  return %y : {self.t(T, n)}
}}""")
        return name

    def proj(self, k, n):
        """x [T, k] · w [k, n] · k^-1/2."""
        name = f"proj_{k}x{n}"
        if name not in self.helpers:
            self.helpers.add(name)
            T = self.T
            self.funcs.append(f"""
func.func private @{name}(%x: {self.t(T, k)}, %w: {self.t(k, n)}) -> {self.t(T, n)} {{
  %zero = arith.constant 0.0 : f32
  %c = arith.constant {k ** -0.5!r} : f32
  %e = tensor.empty() : {self.t(T, n)}
  %z = linalg.fill ins(%zero : f32) outs(%e : {self.t(T, n)}) -> {self.t(T, n)}
  %y = linalg.matmul ins(%x, %w : {self.t(T, k)}, {self.t(k, n)}) outs(%z : {self.t(T, n)}) -> {self.t(T, n)}
  %oe = tensor.empty() : {self.t(T, n)}
  %s = linalg.generic {{indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}}
      ins(%y : {self.t(T, n)}) outs(%oe : {self.t(T, n)}) {{
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  }} -> {self.t(T, n)}
  return %s : {self.t(T, n)}
}}""")
        return name

    def unary(self, op, n):
        """Elementwise silu / sigmoid / negsoftplus (-softplus(x) / 8) on [T, n]."""
        name = f"{op}_{n}"
        if name not in self.helpers:
            self.helpers.add(name)
            T = self.T
            if op == "silu":
                body = """    %ng = arith.negf %a : f32
    %ex = math.exp %ng : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %r = arith.divf %a, %den : f32"""
            elif op == "sigmoid":
                body = """    %ng = arith.negf %a : f32
    %ex = math.exp %ng : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %r = arith.divf %one, %den : f32"""
            else:  # log-decay: -softplus(a) / 8 = -log(1 + e^a) / 8, stable form
                body = """    %zero = arith.constant 0.0 : f32
    %mx = arith.maximumf %a, %zero : f32
    %ab = math.absf %a : f32
    %nab = arith.negf %ab : f32
    %ex = math.exp %nab : f32
    %lp = math.log1p %ex : f32
    %sp = arith.addf %mx, %lp : f32
    %c = arith.constant -0.125 : f32
    %r = arith.mulf %sp, %c : f32"""
            self.funcs.append(f"""
func.func private @{name}(%x: {self.t(T, n)}) -> {self.t(T, n)} {{
  %oe = tensor.empty() : {self.t(T, n)}
  %y = linalg.generic {{indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}}
      ins(%x : {self.t(T, n)}) outs(%oe : {self.t(T, n)}) {{
  ^bb0(%a: f32, %o: f32):
{body}
    linalg.yield %r : f32
  }} -> {self.t(T, n)}
  return %y : {self.t(T, n)}
}}""")
        return name

    def conv(self):
        """Short causal depthwise convolution (kernel 4) then SiLU, on [T, D]."""
        name = "conv_silu"
        if name not in self.helpers:
            self.helpers.add(name)
            T, D, K = self.T, self.D, self.K
            self.funcs.append(f"""
// y[t, c] = silu(sum_j w[j, c] x[t - 3 + j, c]) (w[3] on the current token),
// zero before the sequence.
func.func private @{name}(%x: {self.t(T, D)}, %w: {self.t(K, D)}) -> {self.t(T, D)} {{
  %zero = arith.constant 0.0 : f32
  %pe = tensor.empty() : {self.t(T + K - 1, D)}
  %pz = linalg.fill ins(%zero : f32) outs(%pe : {self.t(T + K - 1, D)}) -> {self.t(T + K - 1, D)}
  %p = tensor.insert_slice %x into %pz[{K - 1}, 0] [{T}, {D}] [1, 1] : {self.t(T, D)} into {self.t(T + K - 1, D)}
  %e = tensor.empty() : {self.t(T, D)}
  %z = linalg.fill ins(%zero : f32) outs(%e : {self.t(T, D)}) -> {self.t(T, D)}
  %s = linalg.generic {{indexing_maps = [#conv_in, #conv_w, #conv_out], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%p, %w : {self.t(T + K - 1, D)}, {self.t(K, D)}) outs(%z : {self.t(T, D)}) {{
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  }} -> {self.t(T, D)}
  %y = func.call @{self.unary("silu", D)}(%s) : ({self.t(T, D)}) -> {self.t(T, D)}
  return %y : {self.t(T, D)}
}}""")
        return name

    def l2heads(self):
        """[T, D] -> [1, T, H, dh], each head's vector L2-normalised."""
        name = "l2norm_heads"
        if name not in self.helpers:
            self.helpers.add(name)
            T, H, dh, D = self.T, self.H, self.dh, self.D
            q4 = self.t(1, T, H, dh)
            self.funcs.append(f"""
func.func private @{name}(%x: {self.t(T, D)}) -> {q4} {{
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %x4 = tensor.expand_shape %x [[0, 1], [2, 3]] output_shape [1, {T}, {H}, {dh}] : {self.t(T, D)} into {q4}
  %e = tensor.empty() : {self.t(1, T, H)}
  %z = linalg.fill ins(%zero : f32) outs(%e : {self.t(1, T, H)}) -> {self.t(1, T, H)}
  %s = linalg.generic {{indexing_maps = [#id4, #lead4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%x4 : {q4}) outs(%z : {self.t(1, T, H)}) {{
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }} -> {self.t(1, T, H)}
  %oe = tensor.empty() : {q4}
  %y = linalg.generic {{indexing_maps = [#id4, #lead4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%x4, %s : {q4}, {self.t(1, T, H)}) outs(%oe : {q4}) {{
  ^bb0(%a: f32, %ss: f32, %o: f32):
    %b = arith.addf %ss, %eps : f32
    %r = math.rsqrt %b : f32
    %n = arith.mulf %a, %r : f32
    linalg.yield %n : f32
  }} -> {q4}
  return %y : {q4}
}}""")
        return name

    # -- layers ----------------------------------------------------------------
    def kda_layer(self):
        T, D, H, dh, F, K = self.T, self.D, self.H, self.dh, self.F, self.K
        td, q4, dd = self.t(T, D), self.t(1, T, H, dh), self.t(D, D)
        rms, proj, conv, l2 = self.rmsnorm(D), self.proj(D, D), self.conv(), self.l2heads()
        projh, sig, sigh = self.proj(D, H), self.unary("sigmoid", D), self.unary("sigmoid", H)
        dec, mlp = self.unary("decay", D), self.mlp()
        self.funcs.append(f"""
// One KDA layer (see the file's header).
func.func private @kda_layer(%x: {td}, %gn: {self.t(D)}, %wq: {dd}, %wk: {dd}, %wv: {dd},
    %cq: {self.t(K, D)}, %ck: {self.t(K, D)}, %cv: {self.t(K, D)}, %wg: {dd}, %wb: {self.t(D, H)},
    %wgate: {dd}, %wo: {dd}, %gm: {self.t(D)}, %w1: {self.t(D, F)}, %w2: {self.t(F, D)}) -> {td} {{
  %n = func.call @{rms}(%x, %gn) : ({td}, {self.t(D)}) -> {td}
  %q0 = func.call @{proj}(%n, %wq) : ({td}, {dd}) -> {td}
  %k0 = func.call @{proj}(%n, %wk) : ({td}, {dd}) -> {td}
  %v0 = func.call @{proj}(%n, %wv) : ({td}, {dd}) -> {td}
  %q1 = func.call @{conv}(%q0, %cq) : ({td}, {self.t(K, D)}) -> {td}
  %k1 = func.call @{conv}(%k0, %ck) : ({td}, {self.t(K, D)}) -> {td}
  %v1 = func.call @{conv}(%v0, %cv) : ({td}, {self.t(K, D)}) -> {td}
  %q = func.call @{l2}(%q1) : ({td}) -> {q4}
  %k = func.call @{l2}(%k1) : ({td}) -> {q4}
  %v = tensor.expand_shape %v1 [[0, 1], [2, 3]] output_shape [1, {T}, {H}, {dh}] : {td} into {q4}
  %g0 = func.call @{proj}(%n, %wg) : ({td}, {dd}) -> {td}
  %g1 = func.call @{dec}(%g0) : ({td}) -> {td}
  %g = tensor.expand_shape %g1 [[0, 1], [2, 3]] output_shape [1, {T}, {H}, {dh}] : {td} into {q4}
  %b0 = func.call @{projh}(%n, %wb) : ({td}, {self.t(D, H)}) -> {self.t(T, H)}
  %b1 = func.call @{sigh}(%b0) : ({self.t(T, H)}) -> {self.t(T, H)}
  %beta = tensor.expand_shape %b1 [[0, 1], [2]] output_shape [1, {T}, {H}] : {self.t(T, H)} into {self.t(1, T, H)}
  %o4 = hla.kda %q, %k, %v, %g, %beta : ({q4}, {q4}, {q4}, {q4}, {self.t(1, T, H)}) -> {q4}
  %o = tensor.collapse_shape %o4 [[0, 1], [2, 3]] : {q4} into {td}
  %gt0 = func.call @{proj}(%n, %wgate) : ({td}, {dd}) -> {td}
  %gt = func.call @{sig}(%gt0) : ({td}) -> {td}
  %og = arith.mulf %o, %gt : {td}
  %a = func.call @{proj}(%og, %wo) : ({td}, {dd}) -> {td}
  %h = arith.addf %x, %a : {td}
  %y = func.call @{mlp}(%h, %gm, %w1, %w2) : ({td}, {self.t(D)}, {self.t(D, F)}, {self.t(F, D)}) -> {td}
  return %y : {td}
}}""")

    def linsimp_layer(self):
        T, D, H, dh, F, K, M, W = (self.T, self.D, self.H, self.dh, self.F, self.K,
                                   self.M, self.W)
        td, q4, dd = self.t(T, D), self.t(1, T, H, dh), self.t(D, D)
        rms, proj, conv, l2 = self.rmsnorm(D), self.proj(D, D), self.conv(), self.l2heads()
        sig, mlp = self.unary("sigmoid", D), self.mlp()
        self.funcs.append(f"""
// One LinSimp layer (see the file's header); Ω is the layer's own.
func.func private @linsimp_layer(%x: {td}, %omega: {self.t(M, dh)}, %gn: {self.t(D)},
    %wq: {dd}, %wk: {dd}, %wr: {dd}, %wv: {dd}, %wu: {dd},
    %cq: {self.t(K, D)}, %ck: {self.t(K, D)}, %cr: {self.t(K, D)},
    %wgate: {dd}, %wo: {dd}, %gm: {self.t(D)}, %w1: {self.t(D, F)}, %w2: {self.t(F, D)}) -> {td} {{
  %n = func.call @{rms}(%x, %gn) : ({td}, {self.t(D)}) -> {td}
  %q0 = func.call @{proj}(%n, %wq) : ({td}, {dd}) -> {td}
  %k0 = func.call @{proj}(%n, %wk) : ({td}, {dd}) -> {td}
  %r0 = func.call @{proj}(%n, %wr) : ({td}, {dd}) -> {td}
  %q1 = func.call @{conv}(%q0, %cq) : ({td}, {self.t(K, D)}) -> {td}
  %k1 = func.call @{conv}(%k0, %ck) : ({td}, {self.t(K, D)}) -> {td}
  %r1 = func.call @{conv}(%r0, %cr) : ({td}, {self.t(K, D)}) -> {td}
  %q = func.call @{l2}(%q1) : ({td}) -> {q4}
  %k = func.call @{l2}(%k1) : ({td}) -> {q4}
  %r = func.call @{l2}(%r1) : ({td}) -> {q4}
  %v0 = func.call @{proj}(%n, %wv) : ({td}, {dd}) -> {td}
  %u0 = func.call @{proj}(%n, %wu) : ({td}, {dd}) -> {td}
  %v = tensor.expand_shape %v0 [[0, 1], [2, 3]] output_shape [1, {T}, {H}, {dh}] : {td} into {q4}
  %u = tensor.expand_shape %u0 [[0, 1], [2, 3]] output_shape [1, {T}, {H}, {dh}] : {td} into {q4}
  %o4 = hla.linsimp %q, %k, %v, %r, %u, %omega {{window = {W} : i64}} : ({q4}, {q4}, {q4}, {q4}, {q4}, {self.t(M, dh)}) -> {q4}
  %o = tensor.collapse_shape %o4 [[0, 1], [2, 3]] : {q4} into {td}
  %gt0 = func.call @{proj}(%n, %wgate) : ({td}, {dd}) -> {td}
  %gt = func.call @{sig}(%gt0) : ({td}) -> {td}
  %og = arith.mulf %o, %gt : {td}
  %a = func.call @{proj}(%og, %wo) : ({td}, {dd}) -> {td}
  %h = arith.addf %x, %a : {td}
  %y = func.call @{mlp}(%h, %gm, %w1, %w2) : ({td}, {self.t(D)}, {self.t(D, F)}, {self.t(F, D)}) -> {td}
  return %y : {td}
}}""")

    def mlp(self):
        name = "mlp"
        if name not in self.helpers:
            self.helpers.add(name)
            T, D, F = self.T, self.D, self.F
            td, tf = self.t(T, D), self.t(T, F)
            rms, up, down, silu = (self.rmsnorm(D), self.proj(D, F), self.proj(F, D),
                                   self.unary("silu", F))
            self.funcs.append(f"""
// x + silu(RMSNorm(x) W1) W2.
func.func private @mlp(%x: {td}, %g: {self.t(D)}, %w1: {self.t(D, F)}, %w2: {self.t(F, D)}) -> {td} {{
  %n = func.call @{rms}(%x, %g) : ({td}, {self.t(D)}) -> {td}
  %u = func.call @{up}(%n, %w1) : ({td}, {self.t(D, F)}) -> {tf}
  %a = func.call @{silu}(%u) : ({tf}) -> {tf}
  %d = func.call @{down}(%a, %w2) : ({tf}, {self.t(F, D)}) -> {td}
  %y = arith.addf %x, %d : {td}
  return %y : {td}
}}""")
        return name

    # -- the model ----------------------------------------------------------------
    def main(self):
        T, D, H, dh, F, K, M, V = (self.T, self.D, self.H, self.dh, self.F, self.K,
                                   self.M, self.V)
        nk, nl = 18, 6
        td = self.t(T, D)
        kda_w = [("gn", (D,)), ("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)),
                 ("cq", (K, D)), ("ck", (K, D)), ("cv", (K, D)), ("wg", (D, D)),
                 ("wb", (D, H)), ("wgate", (D, D)), ("wo", (D, D)), ("gm", (D,)),
                 ("w1", (D, F)), ("w2", (F, D))]
        ls_w = [("gn", (D,)), ("wq", (D, D)), ("wk", (D, D)), ("wr", (D, D)),
                ("wv", (D, D)), ("wu", (D, D)), ("cq", (K, D)), ("ck", (K, D)),
                ("cr", (K, D)), ("wgate", (D, D)), ("wo", (D, D)), ("gm", (D,)),
                ("w1", (D, F)), ("w2", (F, D))]
        args = [f"%tokens: {self.t(T, dtype='i32')}", f"%embed: {self.t(V, D)}"]
        args += [f"%kda_{n}: {self.t(nk, *s)}" for n, s in kda_w]
        args += [f"%ls_{n}: {self.t(nl, *s)}" for n, s in ls_w]
        args += [f"%g_final: {self.t(D)}", f"%w_out: {self.t(D, V)}"]
        body = []
        # Token ids must index the embedding table: checked at run time.
        body.append(f"""  %c0 = arith.constant 0 : index
  %imin = arith.constant 2147483647 : i32
  %imax = arith.constant -2147483648 : i32
  %e0 = tensor.empty() : tensor<i32>
  %lo0 = linalg.fill ins(%imin : i32) outs(%e0 : tensor<i32>) -> tensor<i32>
  %hi0 = linalg.fill ins(%imax : i32) outs(%e0 : tensor<i32>) -> tensor<i32>
  %range:2 = linalg.generic {{indexing_maps = [#vec, #scalar, #scalar], iterator_types = ["reduction"]}}
      ins(%tokens : {self.t(T, dtype='i32')}) outs(%lo0, %hi0 : tensor<i32>, tensor<i32>) {{
  ^bb0(%id: i32, %lo: i32, %hi: i32):
    %l = arith.minsi %lo, %id : i32
    %h = arith.maxsi %hi, %id : i32
    linalg.yield %l, %h : i32, i32
  }} -> (tensor<i32>, tensor<i32>)
  %lo = tensor.extract %range#0[] : tensor<i32>
  %hi = tensor.extract %range#1[] : tensor<i32>
  %zero_i = arith.constant 0 : i32
  %vocab = arith.constant {V} : i32
  %ok_lo = arith.cmpi sge, %lo, %zero_i : i32
  %ok_hi = arith.cmpi slt, %hi, %vocab : i32
  %ok = arith.andi %ok_lo, %ok_hi : i1
  cf.assert %ok, "hla model: token ids must be in [0, {V})"
  // Token embedding: x[t] = embed[tokens[t]].
  %xe = tensor.empty() : {td}
  %x0 = linalg.generic {{indexing_maps = [#row2, #id2], iterator_types = ["parallel", "parallel"]}}
      ins(%tokens : {self.t(T, dtype='i32')}) outs(%xe : {td}) {{
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %c = linalg.index 1 : index
    %val = tensor.extract %embed[%i, %c] : {self.t(V, D)}
    linalg.yield %val : f32
  }} -> {td}""")
        x = "%x0"
        ki = li = 0

        def slice_of(prefix, name, shape, n, i, count):
            full = self.t(count, *shape)
            part = self.t(*shape)
            nm = f"%{prefix}{name}_{i}"
            offs = ", ".join([str(i)] + ["0"] * len(shape))
            sizes = ", ".join(["1"] + [str(s) for s in shape])
            strides = ", ".join(["1"] * (len(shape) + 1))
            body.append(f"  {nm} = tensor.extract_slice %{prefix}{name}[{offs}] [{sizes}] "
                        f"[{strides}] : {full} to {part}")
            return nm, part

        for layer in range(self.layers):
            if layer % 4 == 3:
                ops, types = [], []
                om = f"%omega_{li}"
                body.append(f"  {om} = hla.random_features {{seed = {layer} : i64}} : "
                            f"{self.t(M, dh)}")
                for n, s in ls_w:
                    nm, ty = slice_of("ls_", n, s, nl, li, nl)
                    ops.append(nm)
                    types.append(ty)
                nx = f"%x{layer + 1}"
                body.append(f"  {nx} = func.call @linsimp_layer({x}, {om}, {', '.join(ops)}) : "
                            f"({td}, {self.t(M, dh)}, {', '.join(types)}) -> {td}")
                li += 1
            else:
                ops, types = [], []
                for n, s in kda_w:
                    nm, ty = slice_of("kda_", n, s, nk, ki, nk)
                    ops.append(nm)
                    types.append(ty)
                nx = f"%x{layer + 1}"
                body.append(f"  {nx} = func.call @kda_layer({x}, {', '.join(ops)}) : "
                            f"({td}, {', '.join(types)}) -> {td}")
                ki += 1
            x = nx
        rms, out = self.rmsnorm(D), self.proj(D, V)
        body.append(f"  %xf = func.call @{rms}({x}, %g_final) : ({td}, {self.t(D)}) -> {td}")
        body.append(f"  %logits = func.call @{out}(%xf, %w_out) : ({td}, {self.t(D, V)}) -> "
                    f"{self.t(T, V)}")
        body.append(f"  return %logits : {self.t(T, V)}")
        self.funcs.append(f"""
// tokens [T] -> logits [T, V].
func.func @main({', '.join(args)}) -> {self.t(T, V)} {{
""" + "\n".join(body) + "\n}")

    def text(self):
        self.kda_layer()
        self.linsimp_layer()
        self.main()
        header = f"""// The seed's no-softmax language model: 24 layers, every 4th LinSimp
// (W = {self.W}, m = {self.M}) and the rest KDA; d_model = {self.D}, {self.H} heads of
// {self.dh}, MLP width {self.F}, vocabulary {self.V}, T = {self.T} tokens.
// Generated by examples/gen_linsimp_kda_model.py (see its docstring for the
// layers); regenerate rather than edit.

#id2 = affine_map<(t, c) -> (t, c)>
#row2 = affine_map<(t, c) -> (t)>
#col2 = affine_map<(t, c) -> (c)>
#id4 = affine_map<(b, t, h, c) -> (b, t, h, c)>
#lead4 = affine_map<(b, t, h, c) -> (b, t, h)>
#conv_in = affine_map<(t, c, j) -> (t + j, c)>
#conv_w = affine_map<(t, c, j) -> (j, c)>
#conv_out = affine_map<(t, c, j) -> (t, c)>
#vec = affine_map<(t) -> (t)>
#scalar = affine_map<(t) -> ()>
"""
        return header + "\n".join(self.funcs) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--mlp", type=int, default=128)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--window", type=int, default=16)
    a = ap.parse_args()
    if a.d_model % a.heads:
        ap.error("--d-model must be a multiple of --heads")
    text = Graph(a).text()
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
