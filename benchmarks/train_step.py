"""Milliseconds per training step of the PFN transformer: fast path vs the dense reference.

One training step = draw a batch (``pfntheory.nn.priors.sample_batch``, timed separately), forward,
truncated-NLL loss, backward, gradient clipping and an Adam step, batch 128, ``n ~ Unif[n_min, n_max]``
drawn per step as in training (sec:sims). The fast model (:class:`~pfntheory.nn.model.PFNTransformer`)
and the dense reference (:class:`~pfntheory.nn.model.DenseTransformer`, the literal eqn:tabPFN attn
with per-layer checkpointing) start from the same weights and see the same batches, so the ratio
of their step times is measured on one sequence of n in one run. Before timing, the two forward
passes are compared on the first batch (max |logits difference|, float32 and float64).

Configurations (supp-tab:pretraining hyperparameters sizes):

    a  RBF d=2,  n in [64, 128], L=32, C=256, learnable
    b  RBF d=16, n in [64, 512], L=32, C=256, learnable, normalised (TF^pr)
    c  BLR d=5,  n in [128, 512], L=32, C=256, learnable

Usage::

    python benchmarks/train_step.py                 # all three, 3 timed steps after 1 warm-up
    python benchmarks/train_step.py --configs a --steps 10 --dense-steps 2

Timings on a shared machine are noisy: compare the ratios printed in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch

from pfntheory.nn.model import DenseTransformer, ModelConfig, PFNTransformer
from pfntheory.nn.priors import TaskConfig, sample_batch, sample_context_size
from pfntheory.nn.train import truncated_nll

BATCH = 128
INTERVAL = (-4.0, 4.0)  # fixed truncation interval: timing does not depend on its calibration


@dataclass(frozen=True)
class Bench:
    name: str
    kind: str
    d: int
    n_min: int
    n_max: int
    normalised: bool

    def model_config(self, L: int, C: int) -> ModelConfig:
        score = "linear" if self.kind == "blr" else "rbf"
        scale = 1.0 if self.kind == "blr" else 1.0 / 0.8
        return ModelConfig(score=score, d=self.d, L=L, C=C, mode="learnable",
                           normalised=self.normalised, scale_init=scale)


BENCHES = {
    "a": Bench("a: RBF d=2 n[64,128]", "rbf", 2, 64, 128, False),
    "b": Bench("b: RBF d=16 n[64,512] pr", "rbf", 16, 64, 512, True),
    "c": Bench("c: BLR d=5 n[128,512]", "blr", 5, 128, 512, False),
}


def _loss(out, y, edges):
    return truncated_nll(out.logits, y, edges).mean()


def _step(model, opt, batch, edges):
    out = model(batch.X, batch.Y, batch.xq)
    loss = _loss(out, batch.y, edges)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach())


def run(bench: Bench, steps: int, dense_steps: int, warmup: int, L: int, C: int, seed: int,
        dtype: torch.dtype) -> dict:
    edges = torch.linspace(*INTERVAL, C + 1, dtype=torch.float64)
    cfg = bench.model_config(L, C)
    torch.manual_seed(seed)
    fast = PFNTransformer(cfg, edges).to(dtype)
    dense = DenseTransformer(cfg, edges).to(dtype)
    dense.load_state_dict(fast.state_dict())
    opt_f = torch.optim.Adam(fast.parameters(), lr=2e-4)
    opt_d = torch.optim.Adam(dense.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(seed)
    task = TaskConfig(kind=bench.kind, d=bench.d)

    def draw():
        t0 = time.perf_counter()
        n = sample_context_size(bench.n_min, bench.n_max, g)
        b = sample_batch(task, BATCH, n, g, dtype=dtype, interval=INTERVAL)
        return b, n, time.perf_counter() - t0

    # parity of the two forward passes on the first batch (float32 and float64)
    b0, _, _ = draw()
    with torch.no_grad():
        diff32 = float((fast(b0.X, b0.Y, b0.xq).logits - dense(b0.X, b0.Y, b0.xq).logits).abs().max())
        f64, d64 = fast.double(), dense.double()
        o1, o2 = f64(b0.X, b0.Y, b0.xq), d64(b0.X, b0.Y, b0.xq)
        diff64 = float((o1.logits - o2.logits).abs().max())
        fast.to(dtype), dense.to(dtype)
    t_data, t_fast, t_dense, ns = [], [], [], []
    for i in range(warmup + steps):
        b, n, td = draw()
        t0 = time.perf_counter()
        _step(fast, opt_f, b, edges)
        tf = time.perf_counter() - t0
        tdn = None
        if i < warmup + dense_steps:
            t0 = time.perf_counter()
            _step(dense, opt_d, b, edges)
            tdn = time.perf_counter() - t0
        if i >= warmup:
            t_data.append(td)
            t_fast.append(tf)
            ns.append(n)
            if tdn is not None:
                t_dense.append(tdn)
    k = len(t_dense)
    fast_ms = 1e3 * statistics.mean(t_fast)
    data_ms = 1e3 * statistics.mean(t_data)
    fast_same = 1e3 * statistics.mean(t_fast[:k]) if k else float("nan")
    dense_ms = 1e3 * statistics.mean(t_dense) if k else float("nan")
    return {
        "bench": bench.name, "n_mean": float(np.mean(ns)), "data_ms": data_ms, "fast_ms": fast_ms,
        "samples_per_s": BATCH / ((fast_ms + data_ms) / 1e3),
        "data_share": data_ms / (data_ms + fast_ms), "dense_ms": dense_ms,
        "speedup": dense_ms / fast_same if k else float("nan"), "diff32": diff32, "diff64": diff64,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="a,b,c", help="comma-separated subset of a,b,c")
    p.add_argument("--steps", type=int, default=3, help="timed steps of the fast model")
    p.add_argument("--dense-steps", type=int, default=None,
                   help="timed steps of the dense model (default: --steps); the speed-up compares "
                        "the first dense-steps fast steps, which saw the same batches")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--L", type=int, default=32)
    p.add_argument("--C", type=int, default=256)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: all)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    dense_steps = args.steps if args.dense_steps is None else min(args.dense_steps, args.steps)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.dtype}, batch {BATCH}, "
          f"L={args.L}, C={args.C}, steps {args.steps} (dense {dense_steps}) after {args.warmup} warm-up")
    hdr = (f"{'config':28s} {'mean n':>7s} {'data ms':>9s} {'fast ms':>9s} {'samples/s':>10s} "
           f"{'data %':>7s} {'dense ms':>10s} {'speed-up':>9s} {'|dlogit| f32':>13s} {'f64':>9s}")
    print(hdr)
    print("-" * len(hdr))
    for key in args.configs.split(","):
        r = run(BENCHES[key.strip()], args.steps, dense_steps, args.warmup, args.L, args.C,
                args.seed, dtype)
        print(f"{r['bench']:28s} {r['n_mean']:7.0f} {r['data_ms']:9.0f} {r['fast_ms']:9.0f} "
              f"{r['samples_per_s']:10.0f} {100 * r['data_share']:6.1f}% {r['dense_ms']:10.0f} "
              f"{r['speedup']:8.1f}x {r['diff32']:13.1e} {r['diff64']:9.1e}", flush=True)


if __name__ == "__main__":
    main()
