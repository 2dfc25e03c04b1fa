"""Refit the cost model of ``sweep --list`` (:data:`pfntheory.experiments.definitions.COST`) to the
training times of the committed runs, and print measured against estimated hours per experiment.

The model is linear in its coefficients (:func:`~pfntheory.experiments.definitions.training_terms`
gives each coefficient's multiplier for a run), so the fit is a non-negative least-squares problem.
Each run's equation is divided by its measured seconds: the fit minimises relative errors, so the
100 short fig:exp1 cells do not drown the few long runs, and a minute-long BLR cell weighs as much
as a three-hour one. The measured seconds are ``wall_time_s - curve_eval_s`` of a run's
``metrics.json`` (its optimiser steps; the learning-curve evaluations are costed separately).

The timings come from a shared 2-core machine (two workers, one thread each), so single runs
scatter by +-30% around any smooth model; the per-experiment sums are what ``sweep --list``
reports and what to judge the model by.

Usage::

    python benchmarks/cost_model.py                  # fit to reports/runs at the cpu scale
    python benchmarks/cost_model.py --root DIR --scale quick
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
from scipy.optimize import nnls

from pfntheory.experiments import definitions as D
from pfntheory.experiments.results import load_available
from pfntheory.infra.tree import RunSpec

#: Coefficients the fit leaves as they are: ``RUN_S`` (a run's fixed cost) is not identifiable
#: beside ``DATA_S`` at a fixed step count per experiment, nor ``STEP_S`` (per step, as
#: ``DATA_S``), and the curves', evaluations' and references' coefficients are not part of
#: training. Since issue 45 the coefficients are measured piece by piece on a pinned core
#: (``benchmarks/cost_calibration.py``); this refit to wall times of committed runs, which carry
#: the load of a shared machine, is a cross-check.
FIXED = (
    "RUN_S",
    "STEP_S",
    "CURVE_S",
    "EVAL_S",
    "FWD0_N2_S",
    "FWD_N_S",
    "FWD_N2_S",
    "FWD_N2D_S",
    "EXACT_N2D_S",
    "EXACT_N3_S",
)


def timed_runs(root, scale: str) -> list[tuple[str, RunSpec, float]]:
    """(experiment, spec, measured training seconds) of every complete trained run under ``root``
    at ``scale`` (:func:`~pfntheory.experiments.results.load_available`); a spec shared by two
    experiments counts once."""
    out, seen = [], set()
    for name in D.experiment_names():
        for r in load_available(name, scale, root)[0]:
            m = r.train_metrics
            if not isinstance(r.spec, RunSpec) or not m or r.spec.name in seen:
                continue
            seen.add(r.spec.name)
            out.append((name, r.spec, float(m["wall_time_s"]) - float(m.get("curve_eval_s", 0.0))))
    return out


def fit(runs: list[tuple[str, RunSpec, float]]) -> dict[str, float]:
    """The COST coefficients refitted to ``runs`` (relative least squares, non-negative); the
    :data:`FIXED` ones keep their values."""
    terms = [D.training_terms(s) for _, s, _ in runs]
    free = sorted({k for t in terms for k in t} - set(FIXED))
    A = np.array([[t.get(k, 0.0) for k in free] for t in terms])
    fixed = np.array([sum(D.COST[k] * v for k, v in t.items() if k in FIXED) for t in terms])
    y = np.array([t for _, _, t in runs])
    coef, _ = nnls(A / y[:, None], (y - fixed) / y)
    return {**D.COST, **dict(zip(free, coef.tolist(), strict=True))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=None, help="runs root (default: reports/runs)")
    ap.add_argument("--scale", default="cpu", choices=D.EXPERIMENT_SCALES)
    args = ap.parse_args(argv)
    runs = timed_runs(args.root, args.scale)
    if len(runs) < 8:
        raise SystemExit(f"--root: only {len(runs)} completed runs at scale {args.scale}; need 8")
    new = fit(runs)
    print(f"{len(runs)} completed runs at scale {args.scale}\n")
    print("coefficient           current     refitted")
    for k in D.COST:
        print(f"{k:<18} {D.COST[k]:>11.3g}  {new[k]:>11.3g}")
    by_exp: dict[str, list] = defaultdict(list)
    for name, spec, t in runs:
        by_exp[name].append((t, D.training_seconds(spec), D.training_seconds(spec, new)))
    print("\nexperiment               runs  measured h  current h (x)  refitted h (x)")
    for name, rows in by_exp.items():
        m, c, r = (sum(col) / 3600 for col in zip(*rows, strict=True))
        line = f"{name:<24} {len(rows):>4}  {m:>10.2f}  {c:>6.2f} ({c / m:4.2f})"
        print(f"{line}  {r:>7.2f} ({r / m:4.2f})")
    ratios = {
        "current": np.array([D.training_seconds(s) / t for _, s, t in runs]),
        "refitted": np.array([D.training_seconds(s, new) / t for _, s, t in runs]),
    }
    print("\nestimated / measured per run: median [10%, 90%]")
    for k, r in ratios.items():
        q = np.quantile(r, [0.5, 0.1, 0.9])
        print(f"  {k:<9} {q[0]:.2f} [{q[1]:.2f}, {q[2]:.2f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
