"""Measure the constants of the cost model (:data:`pfntheory.experiments.cost.COST`) on this
machine: CPU seconds (``time.process_time``, one torch thread) of the pieces of a run of the
n-generalisation family (RBF TF^pr, C = 256, batch 128), each timed on its own:

* ``draw``: one training batch of 128 contexts, by the exact float64 path and by the fused GP draw
  (``sample_batch(..., fast=True)``), at d in {4, 8, 16} and n from 64 to 512 (and the exact path
  up to 1024: the evaluation's oracle is the same draw in float64);
* ``step``: one optimiser step of the model on a drawn batch (forward, backward, clipping, Adam,
  the weight average), at L in {2, 9} and n in {64, 128, 256, 512};
* ``curve``: one learning-curve point of one design on 256 held-out contexts (the forward and the
  curve's metrics) of each finished run of ``--models`` (trained weights: an initialisation's
  forward is several times slower), at n' in {64, 128, 256, 512};
* ``eval``: the evaluation's forward (``numerics="symmetric"``) and metrics on 128 contexts of
  each of those runs, at n' in {256, 512, 1024};
* ``run``: what a run costs besides its steps (the interval's calibration, the held-out sets).

Prints the measurements as JSON lines; ``--out FILE`` writes them. ``--check EXP:L:N_MAX:STEPS``
(repeatable) instead trains and evaluates that run of experiment ``EXP`` (cpu scale) in
``--scratch`` and prints its measured CPU seconds per part (training, learning curves, each
evaluation) beside :func:`pfntheory.experiments.cost.run_parts`.

Usage::

    R=reports/runs/supp_exp2_d8_budget
    A=$R/rbf-d8-pr-learn-L8-C256-n64-128-s1000-b7b9f000e2
    B=$R/rbf-d8-pr-learn-L32-C256-n64-128-s1000-a4d369655e
    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/cost_calibration.py --out /tmp/calib.json \
        --models $A,$B
    python benchmarks/cost_calibration.py --fit /tmp/calib.json
    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/cost_calibration.py --scratch /tmp/runs \
        --check supp_exp2_d8_budget:4:128:1000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from pfntheory.experiments.definitions import get_experiment
from pfntheory.maths.discretize import bin_edges
from pfntheory.nn import curve as curve_mod
from pfntheory.nn import evaluate as eval_mod
from pfntheory.nn import train as train_mod
from pfntheory.nn.priors import calibrate_task_interval, sample_batch


def _cpu(fn, reps: int = 1) -> float:
    """The smallest CPU seconds of ``reps`` calls of ``fn`` (after none: the first call counts)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _family_spec(d: int):
    name = {4: "supp_exp2_d4_budget", 8: "supp_exp2_d8_budget", 16: "fig_exp2_2_budget"}[d]
    return get_experiment(name).runs("cpu")[0]


def measure_draws(ds, ns, exact_more, reps: int) -> list[dict]:
    out = []
    for d in ds:
        task = _family_spec(d).task
        interval = (-3.0, 3.0)
        for n in sorted(set(ns) | set(exact_more)):
            for fast in (False, True):
                if fast and n not in ns:
                    continue
                g = torch.Generator().manual_seed(n)
                s = _cpu(
                    lambda: sample_batch(task, 128, n, g, interval=interval, fast=fast),  # noqa: B023
                    reps,
                )
                out.append({"d": d, "n": n, "path": "fused" if fast else "exact", "s": s})
                print(json.dumps(out[-1]), flush=True)
    return out


def _run(spec, tmp: Path, L: int, n: int):
    s = dataclasses.replace(
        spec,
        model=dataclasses.replace(spec.model, L=L),
        n_min=n,
        n_max=n,
        curve_n_eval=(),
        curve_covariates=(),
        interval=(-3.0, 3.0),
    )
    return train_mod._Run(s, tmp / f"L{L}-n{n}", torch.device("cpu"))


def measure_steps(d: int, Ls, ns, steps: int) -> list[dict]:
    spec, out = _family_spec(d), []
    with tempfile.TemporaryDirectory() as tmp:
        for L in Ls:
            for n in ns:
                run = _run(spec, Path(tmp), L, n)
                g = torch.Generator().manual_seed(0)
                batches = [sample_batch(run.spec.task, 128, n, g, interval=run.interval)]
                real = train_mod.step_batches
                train_mod.step_batches = lambda *a, **k: batches  # noqa: B023
                try:
                    run.step(0)  # warm-up
                    s = _cpu(lambda: [run.step(i) for i in range(1, steps + 1)]) / steps  # noqa: B023
                finally:
                    train_mod.step_batches = real
                out.append({"d": d, "L": L, "n": n, "s": s})
                print(json.dumps(out[-1]), flush=True)
    return out


def _trained(run_dir: str):
    """A finished run's model (read only), its spec and its interval."""
    from pfntheory.nn.state import load_trained

    model, config, metrics = load_trained(run_dir, "cpu")
    return model, config, tuple(metrics["interval"])


def measure_curves(models, ns) -> list[dict]:
    """A learning-curve point (256 held-out contexts) of each trained model at each n'. Trained
    weights, not an initialisation: the forward of an untrained model was measured 3.6-6x slower
    (at n' = 256 and 1024) than a trained one's on the same contexts."""
    out = []
    for rd in models:
        model, spec, interval = _trained(rd)
        edges = bin_edges(*interval, spec.model.C)
        for n in ns:
            held = curve_mod._heldout_set(
                dataclasses.replace(spec, curve_n_eval=(n,), curve_covariates=()), interval
            )
            curve_mod._curve_points(model, held, edges, 0)  # warm-up
            s = _cpu(lambda: curve_mod._curve_points(model, held, edges, 0), 2)  # noqa: B023
            row = {"d": spec.task.d, "L": spec.model.L, "n": n, "instances": 256, "s": s}
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def measure_eval(models, ns, m: int) -> list[dict]:
    """The evaluation's forward and metrics of ``m`` contexts at each n', for each trained model
    (the oracle drawn outside the timing)."""
    out = []
    for rd in models:
        model, spec, interval = _trained(rd)
        edges = bin_edges(*interval, spec.model.C)
        for n in ns:
            g = torch.Generator().manual_seed(n)
            bt = sample_batch(spec.task, m, n, g, dtype=torch.float64, interval=interval)

            def fwd():
                return eval_mod.predict(model, bt, "cpu")  # noqa: B023

            def metrics():
                pred = fwd()
                r = {"mu": bt.mu.numpy(), "tau": bt.tau.numpy(), "y": bt.y.numpy(), **pred}  # noqa: B023
                eval_mod._metrics(r, edges, eval_mod.INTERVAL_LEVELS)  # noqa: B023

            fwd()
            f = _cpu(fwd, 2)
            total = _cpu(metrics, 2)
            row = {"d": spec.task.d, "L": spec.model.L, "n": n, "instances": m}
            out.append({**row, "forward_s": f, "s": total})
            print(json.dumps(out[-1]), flush=True)
    return out


def measure_run(d: int) -> dict:
    spec = _family_spec(d)
    s = _cpu(
        lambda: calibrate_task_interval(
            spec.task, spec.n_min, spec.n_max, spec.calib_instances, spec.outside_mass
        )
    )
    out = {"d": d, "n_min": spec.n_min, "n_max": spec.n_max, "calibration_s": s}
    print(json.dumps(out), flush=True)
    return out


def check_run(cell: str, scratch: Path) -> dict:
    """Train and evaluate one run, timing each part in CPU seconds (the curves by wrapping
    ``LearningCurves.record``), beside the cost model's estimate."""
    from pfntheory.experiments import cost
    from pfntheory.nn.evaluate import evaluate

    name, L, n_max, steps = cell.split(":")
    spec = next(
        r
        for r in get_experiment(name).runs("cpu")
        if (r.model.L, r.n_max, r.steps) == (int(L), int(n_max), int(steps))
    )
    rd = scratch / spec.name
    curves = [0.0]
    real = curve_mod.LearningCurves.record

    def timed(self, *a, **k):
        t0 = time.process_time()
        real(self, *a, **k)
        curves[0] += time.process_time() - t0

    curve_mod.LearningCurves.record = timed
    try:
        train_s = _cpu(lambda: train_mod.train(spec, rd, progress=False))
    finally:
        curve_mod.LearningCurves.record = real
    evals = [_cpu(lambda e=e: evaluate(rd, e)) for e in spec.evals]
    measured = {"training": train_s - curves[0], "curves": curves[0], "evaluation": sum(evals)}
    out = {
        "run": spec.name,
        "measured": measured,
        "evaluations": evals,
        "estimate": cost.run_parts(spec),
        "estimate_oracle_cached": cost.run_parts(spec, oracle_cached=True),
    }
    print(json.dumps(out), flush=True)
    return out


def _lsq(rows: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    """Non-negative least squares of ``sum_k c_k x_k = s`` relative to each ``s``."""
    from scipy.optimize import nnls

    keys = sorted({k for x, _ in rows for k in x})
    A = np.array([[x.get(k, 0.0) / s for k in keys] for x, s in rows])
    coef, _ = nnls(A, np.ones(len(rows)))
    return dict(zip(keys, coef.tolist(), strict=True))


def fit(res: dict, fused_max_n: int) -> dict[str, float]:
    """The :data:`~pfntheory.experiments.cost.COST` coefficients of a calibration ``res`` (the
    pieces' forms are documented there): per batch of 128 for the draws and the step, per context
    for the curves and the evaluation."""
    out: dict[str, float] = {}
    for path, pre, keep in (
        ("exact", "DATA", lambda n: True),
        ("fused", "FUSED", lambda n: n <= fused_max_n + 32),
    ):
        rows = []
        for r in res["draw"]:
            if r["path"] == path and keep(r["n"]):
                n, d = r["n"], r["d"]
                x = {f"{pre}_S": 1.0, f"{pre}_N2_S": n * n, f"{pre}_N2D_S": n * n * d}
                rows.append(({**x, f"{pre}_N3_S": n**3}, r["s"]))
        out |= _lsq(rows)
    out["FUSED_DATA_S"] = out.pop("FUSED_S")
    out["DATA_S"] = out.pop("DATA_S")
    out |= _lsq(
        [
            (
                {
                    "STEP_S": 1.0,
                    "STEP_N_S": r["n"],
                    "RBF_N_S": (r["L"] - 1) * r["n"],
                    "RBF_N2_S": (r["L"] - 1) * r["n"] ** 2,
                    "RBF_N2D_S": (r["L"] - 1) * r["n"] ** 2 * r["d"],
                },
                r["s"],
            )
            for r in res["step"]
        ]
    )
    rows = []
    for part, key in (("curve", "CURVE_S"), ("eval", "EVAL_S")):
        for r in res[part]:
            m, n, layers = r["instances"], r["n"], r["L"] - 1
            x = {key: m, "FWD0_N2_S": m * n * n, "FWD_N_S": m * layers * n}
            x["FWD_N2_S"] = m * layers * n * n
            rows.append((x, r["s"]))
    out |= _lsq(rows)
    # the forward's kernel cost per layer grows with d as the training step's does (the forward
    # was timed at d = 8 only): split FWD_N2_S at d = 8 in the step's proportion
    share = out["RBF_N2D_S"] * 8 / (out["RBF_N2_S"] + out["RBF_N2D_S"] * 8)
    out["FWD_N2D_S"] = out["FWD_N2_S"] * share / 8
    out["FWD_N2_S"] *= 1 - share
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="draw,step,curve,eval,run")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--out", default=None)
    p.add_argument(
        "--models", default=None, help="finished run directories (comma-separated) for curve/eval"
    )
    p.add_argument("--merge", default=None, help="keep the other parts of this earlier record")
    p.add_argument("--check", action="append", default=[])
    p.add_argument("--scratch", default=None)
    p.add_argument("--fit", default=None, help="print the coefficients fitted to this record")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.fit:
        from pfntheory.infra.config import FUSED_DRAW_MAX_N

        coef = fit(json.loads(Path(args.fit).read_text()), FUSED_DRAW_MAX_N)
        print(json.dumps({k: float(f"{v:.3g}") for k, v in sorted(coef.items())}, indent=1))
        return coef
    if args.check:
        if not args.scratch:
            p.error("--check needs --scratch DIR (a directory outside the repository)")
        res = {"check": [check_run(c, Path(args.scratch)) for c in args.check]}
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))
        return res
    parts = set(args.parts.split(","))
    res: dict = {"torch": torch.__version__, "numpy": np.__version__}
    if "draw" in parts:
        res["draw"] = measure_draws(
            (4, 8, 16), (64, 128, 192, 256, 320, 384, 448, 512), (768, 1024), args.reps
        )
    if "step" in parts:
        res["step"] = measure_steps(8, (2, 9), (64, 128, 256, 512), args.steps)
        res["step"] += measure_steps(16, (9,), (256,), args.steps)
        res["step"] += measure_steps(4, (9,), (256,), args.steps)
    models = args.models.split(",") if args.models else []
    if ("curve" in parts or "eval" in parts) and not models:
        p.error("--parts curve/eval need --models: finished run directories (read only)")
    if "curve" in parts:
        res["curve"] = measure_curves(models, (64, 128, 256, 512))
    if "eval" in parts:
        res["eval"] = measure_eval(models, (256, 512, 1024), 128)
    if "run" in parts:
        res["run"] = [measure_run(d) for d in (4, 8, 16)]
    if args.merge:  # the parts not measured now, from an earlier record
        res = {**json.loads(Path(args.merge).read_text()), **res}
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
