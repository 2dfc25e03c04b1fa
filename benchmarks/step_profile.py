"""Where the time of one training step of config (a) goes: the data draw and the model step,
operator by operator (``torch.profiler``, CPU time, one thread).

Config (a) of ``benchmarks/train_step.py`` (RBF d=2, batch 128, L=32, C=256, learnable) at one
context size (``--n``, default 89, the mean of n ~ Unif[64, 128] weighted by the step's cost):
``sample_batch`` (the exact float64 draws every committed run trains on), ``sample_batch_fast``
(float32 factor, the same random numbers) and one optimiser step of the fused model. Prints a
table per part (self CPU ms per call of each operator) and, with ``--json``, writes it.

Usage::

    PYTHONPATH=. python benchmarks/step_profile.py --steps 10 \\
        --json benchmarks/results/step_profile.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from train_step import BATCH, BENCHES, INTERVAL  # benchmarks/ (the script's folder)

from pfntheory.nn.fast_oracle import sample_batch_fast
from pfntheory.nn.priors import TaskSpec, sample_batch
from pfntheory.nn.train import accumulate_gradients


def _table(prof, calls: int, rows: int) -> list[dict]:
    """Self CPU milliseconds per call of the part, by operator, largest first."""
    avg = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return [
        {"op": e.key, "ms": e.self_cpu_time_total / 1e3 / calls, "calls": e.count / calls}
        for e in avg[:rows]
    ]


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=89)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rows", type=int, default=12)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    bench = BENCHES["a"]
    task = TaskSpec(kind=bench.kind, d=bench.d)
    edges = torch.linspace(*INTERVAL, 257, dtype=torch.float64)
    torch.manual_seed(0)
    from pfntheory.nn.model import PFNTransformer

    model = PFNTransformer(bench.model_config(32, 256), edges)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(0)

    def draw(fn):
        return fn(task, BATCH, args.n, g, interval=INTERVAL)

    def step():
        opt.zero_grad(set_to_none=True)
        accumulate_gradients(model, [batch], edges)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    batch = draw(sample_batch)
    parts = {
        "sample_batch": lambda: draw(sample_batch),
        "sample_batch_fast": lambda: draw(sample_batch_fast),
        "model step": step,
    }
    out = {"n": args.n, "load_average": os.getloadavg(), "parts": {}}
    for name, fn in parts.items():
        fn()  # warm-up
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.steps):
                fn()
        rows = _table(prof, args.steps, args.rows)
        total = sum(e.self_cpu_time_total for e in prof.key_averages()) / 1e3 / args.steps
        out["parts"][name] = {"total_ms": total, "ops": rows}
        print(f"\n{name} (n = {args.n}): {total:.1f} ms CPU per call (profiled)")
        for r in rows:
            print(f"   {r['op']:40s} {r['ms']:7.2f} ms  ({r['calls']:.0f} calls)")
    print(f"load average {out['load_average']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
