"""The training draw per n (issue 45): where the fused GP draw stops beating the exact path, and
what choosing per n gains on a training step of an n_max = 512 cell.

* ``--crossover``: CPU seconds (``time.process_time``, one thread) of one batch of 128 by both
  draws at d in {4, 8, 16} and n in 320..400 (the coarse grid of
  ``benchmarks/cost_calibration.py --parts draw`` puts the crossing between 320 and 384);
* ``--steps K``: K training steps (data and model) of the fast-numerics cell ``--cell EXP:L:N_MAX``
  (cpu scale, its own seed, n ~ Unif{n_min..n_max}), once with the fused draw at every n (every
  run trained before) and once with the choice per n
  (:data:`pfntheory.infra.config.FUSED_DRAW_MAX_N`), the same steps and random numbers.

Usage::

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/draw_per_n.py --crossover --steps 150
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import torch

from pfntheory.experiments.definitions import get_experiment
from pfntheory.infra.config import FUSED_DRAW_MAX_N
from pfntheory.nn import train as train_mod
from pfntheory.nn.arithmetic import LEGACY_FUSED_DRAW_MAX_N
from pfntheory.nn.priors import sample_batch

_FAMILY = {4: "supp_exp2_d4_budget", 8: "supp_exp2_d8_budget", 16: "fig_exp2_2_budget"}


def crossover(ns=(320, 336, 352, 368, 384, 400), reps: int = 3) -> list[dict]:
    out = []
    for d, name in _FAMILY.items():
        task = get_experiment(name).runs("cpu")[0].task
        for n in ns:
            row = {"d": d, "n": n}
            for fast in (False, True):
                best = float("inf")
                for r in range(reps):
                    g = torch.Generator().manual_seed(r)
                    t0 = time.process_time()
                    sample_batch(task, 128, n, g, interval=(-3.0, 3.0), fast=fast)
                    best = min(best, time.process_time() - t0)
                row["fused" if fast else "exact"] = best
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def step_gain(cell: str, steps: int) -> dict:
    name, L, n_max = cell.split(":")
    spec = next(
        r
        for r in get_experiment(name).runs("cpu")
        if (r.model.L, r.n_max) == (int(L), int(n_max)) and r.fast_numerics
    )
    short = dataclasses.replace(spec, curve_n_eval=(), curve_covariates=(), interval=(-3.0, 3.0))
    res: dict = {"run": spec.name, "steps": steps}
    with tempfile.TemporaryDirectory() as tmp:
        for label, limit in (
            ("fused at every n", LEGACY_FUSED_DRAW_MAX_N),
            ("per n", FUSED_DRAW_MAX_N),
        ):
            run = train_mod._Run(short, Path(tmp) / label.replace(" ", "-"), torch.device("cpu"))
            run.fused_max_n = limit
            t0 = time.process_time()
            for s in range(steps):
                run.step(s)
            res[label] = (time.process_time() - t0) / steps
    res["gain"] = res["fused at every n"] / res["per n"]
    print(json.dumps(res), flush=True)
    return res


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--crossover", action="store_true")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--cell", default="supp_exp2_d8_budget:4:512")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    res: dict = {"fused_draw_max_n": FUSED_DRAW_MAX_N}
    if args.crossover:
        res["crossover"] = crossover()
    if args.steps:
        res["step"] = step_gain(args.cell, args.steps)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
