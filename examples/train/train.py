#!/usr/bin/env python3
"""A small language model built from hla layers, trained on a task that
needs its attention: in-context successor lookup.

Each sequence draws its own random permutation π of the vocabulary and
walks it: the next token is π(current) with probability 1 - noise, else a
uniform draw. π changes from sequence to sequence, so nothing outside the
sequence predicts the next token (a model without attention stays at
ln(vocab) nats); a model that looks up "which token followed the current
one earlier in this sequence" approaches the noise floor. That lookup is
what linear attention's state stores: with keys from the previous token
(a token shift) and values from the current one, S = Σ k_j v_jᵀ holds the
transitions seen so far and q_tᵀ S reads out the successor of x_t.

The model: embedding, `--layers` blocks of [RMSNorm, hla attention (k from
the token-shifted stream), residual, RMSNorm, MLP, residual], RMSNorm,
output projection. Every attention call runs hla's compiled forward and
the backward the compiler derives from the op's monoid.

    python3 train.py [--op hla2] [--steps 150] [--device cpu] [--width 32] ...

`--op none` trains the same model without attention, the control.

Prints one line per `--log-every` steps (step, loss, tokens/s) and, last,
a JSON summary; exits 1 if `--target-loss` is given and the mean loss of
the last 10 steps is not below it.
"""

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

import hla  # noqa: E402
from hla import functional  # noqa: E402

OPS = ("linear_attention", "hla2", "ahla", "hla3", "kda")
NO_ATTENTION = "none"  # the control: the same model without its attention


def successor_walks(batch, length, vocab, noise, generator):
    """[batch, length + 1] token ids: per row, a walk of a fresh random
    permutation with uniform jumps of probability `noise`."""
    perms = torch.stack([torch.randperm(vocab, generator=generator) for _ in range(batch)])
    tokens = torch.empty(batch, length + 1, dtype=torch.long)
    tokens[:, 0] = torch.randint(vocab, (batch,), generator=generator)
    jumps = torch.rand(batch, length, generator=generator) < noise
    uniform = torch.randint(vocab, (batch, length), generator=generator)
    for t in range(length):
        follow = perms.gather(1, tokens[:, t:t + 1]).squeeze(1)
        tokens[:, t + 1] = torch.where(jumps[:, t], uniform[:, t], follow)
    return tokens


class RMSNorm(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class ShiftedAttention(torch.nn.Module):
    """hla attention whose keys see the previous token's stream (the value
    and query see the current one). KDA's gates are learned too, from the
    current stream: the per-channel log-decay g = −softplus(W_g x − 4)
    (starting near e^−0.02 a token) and the write strength
    β = sigmoid(W_β x), one per head."""

    def __init__(self, width, heads, op, **options):
        super().__init__()
        self.heads, self.head_dim, self.op, self.options = heads, width // heads, op, options
        self.q = torch.nn.Linear(width, width, bias=False)
        self.k = torch.nn.Linear(width, width, bias=False)
        self.v = torch.nn.Linear(width, width, bias=False)
        self.o = torch.nn.Linear(width, width, bias=False)
        if op == "kda":
            self.gate = torch.nn.Linear(width, width)
            self.beta = torch.nn.Linear(width, heads)

    def forward(self, x):
        B, T, _ = x.shape
        shifted = torch.nn.functional.pad(x, (0, 0, 1, 0))[:, :T]
        split = lambda y: y.view(B, T, self.heads, self.head_dim)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(shifted)), split(self.v(x))
        # Unit-norm queries and keys keep the unnormalized sums bounded.
        q = torch.nn.functional.normalize(q, dim=-1)
        k = torch.nn.functional.normalize(k, dim=-1)
        if self.op == "kda":
            g = -torch.nn.functional.softplus(split(self.gate(x)) - 4.0)
            beta = torch.sigmoid(self.beta(x))
            o = functional.kda(q, k, v, g=g, beta=beta, **self.options)
        else:
            o = getattr(functional, self.op)(q, k, v, **self.options)
        return self.o(o.reshape(B, T, -1))


class Block(torch.nn.Module):
    def __init__(self, width, heads, op, **options):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(width), RMSNorm(width)
        self.attention = (None if op == NO_ATTENTION
                          else ShiftedAttention(width, heads, op, **options))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x):
        if self.attention is not None:
            x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Model(torch.nn.Module):
    def __init__(self, vocab, width, heads, layers, op, **options):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads, op, **options)
                                          for _ in range(layers))
        self.norm = RMSNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def train(args):
    torch.manual_seed(args.seed)
    data = torch.Generator().manual_seed(args.seed + 1)
    options = {"scale": 1.0}
    if args.decay is not None:
        if args.op == "kda":
            raise SystemExit("train.py: --decay does not apply to kda (its gates are learned)")
        options["decay"] = args.decay
    model = Model(args.vocab, args.width, args.heads, args.layers, args.op, **options)
    model = model.to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    losses, start, tokens_seen = [], None, 0
    for step in range(1, args.steps + 1):
        batch = successor_walks(args.batch, args.length, args.vocab, args.noise, data)
        batch = batch.to(args.device)
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab),
                                                 batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
        if step == 1:  # the first step compiles; time from the second on
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
        else:
            tokens_seen += args.batch * args.length
        if step % args.log_every == 0 or step == args.steps:
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            rate = tokens_seen / elapsed if elapsed > 0 else float("nan")
            print(f"step {step:5d}  loss {losses[-1]:.4f}  tokens/s {rate:,.0f}", flush=True)
    tail = sum(losses[-10:]) / len(losses[-10:])
    summary = {"op": args.op, "device": args.device, "steps": args.steps,
               "first_loss": losses[0], "final_loss": tail, "uniform_loss": math.log(args.vocab),
               "tokens_per_s": tokens_seen / (time.perf_counter() - start) if start else None,
               "parameters": sum(p.numel() for p in model.parameters())}
    print(json.dumps(summary), flush=True)
    if args.target_loss is not None and not tail < args.target_loss:
        print(f"mean loss of the last 10 steps {tail:.4f} is not below {args.target_loss}",
              file=sys.stderr)
        return 1
    return 0


def precompile(args, target):
    """One CPU step at the given sizes, recording the artefacts it uses,
    then the same artefacts compiled for `target` into the cache (for a GPU
    machine without the compiler: carry the cache, set HLA_CACHE_DIR)."""
    from hla import compiler
    cpu = argparse.Namespace(**{**vars(args), "steps": 1, "device": "cpu",
                                "target_loss": None})
    with functional.recorded_compiles() as records:
        train(cpu)
    for text, options in records:
        print("precompiled", compiler.precompile(text, target, **options), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", choices=OPS + (NO_ATTENTION,), default="hla2")
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--length", type=int, default=64)
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--noise", type=float, default=0.1)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--decay", type=float, default=None)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--target-loss", type=float, default=None)
    p.add_argument("--precompile-for", choices=("cuda",), default=None,
                   help="compile this run's artefacts for the target and exit")
    args = p.parse_args(argv)
    if args.precompile_for:
        return precompile(args, args.precompile_for)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
