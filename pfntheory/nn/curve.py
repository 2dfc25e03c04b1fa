"""The learning curve of a training run: E[TV] to the exact PPD, truncated NLL, 90% coverage and
CRPS on a held-out set drawn once, at log-spaced steps (the convergence gate of every trained
result, :mod:`pfntheory.infra.convergence`; metrics of sec:sims).

File schema 1 (``learning_curve.json``, ``learning_curve_<covariates>.json``): see
:func:`pfntheory.infra.convergence.read_learning_curve` (the one reader, re-exported here).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pfntheory.base._checks import choice, keys, positive_int
from pfntheory.base.stats import mean_se
from pfntheory.infra import runs
from pfntheory.infra.config import LEARNING_CURVE_FILE, curve_file
from pfntheory.infra.convergence import METRICS, read_learning_curve
from pfntheory.infra.runs import CURVE_METRICS
from pfntheory.infra.tree import RunSpec
from pfntheory.maths import metrics as M
from pfntheory.maths.discretize import bin_edges

from .priors import sample_batch

__all__ = [
    "CURVE_METRICS",
    "LEARNING_CURVE",
    "LearningCurves",
    "curve_file",
    "curve_steps",
    "format_learning_curve",
    "read_learning_curve",
]

#: File of the learning curve in a run directory (schema 1, see :func:`read_learning_curve`).
LEARNING_CURVE = LEARNING_CURVE_FILE


def curve_steps(steps: int, n_points: int) -> list[int]:
    """Evaluation steps of a learning curve: 0 (the initialisation), ``n_points`` log-spaced steps
    from 10 (or 1 for short runs) to ``steps``, rounded and de-duplicated; always ends at
    ``steps``."""
    steps, n_points = positive_int(steps, "steps"), positive_int(n_points, "n_points")
    first = 10 if steps >= 100 else 1
    grid = np.unique(np.round(np.geomspace(first, steps, n_points)).astype(int))
    return [0] + sorted({int(v) for v in grid} | {steps})


def _curve_generator(seed: int, n: int, chunk: int) -> torch.Generator:
    s = np.random.SeedSequence([int(seed), int(n), int(chunk), 0xC0FE]).generate_state(
        2, dtype=np.uint32
    )
    return torch.Generator().manual_seed(int(s[0]) << 31 | int(s[1]) >> 1)


def _heldout_set(
    spec: RunSpec, interval, chunk_size: int = 256, covariates: str | None = None
) -> list[tuple[int, list]]:
    """The held-out instances of the learning curve, per n': drawn once per run from
    ``(curve_seed, n', chunk)`` only, so a resumed run (and every run of one task) sees the same
    set. ``covariates`` replaces the task's covariate law (the covariate-shift curve)."""
    task = (
        spec.task if covariates is None else dataclasses.replace(spec.task, covariates=covariates)
    )
    out = []
    for n in spec.curve_n_eval:
        batches = []
        for chunk, start in enumerate(range(0, spec.curve_instances, chunk_size)):
            m = min(chunk_size, spec.curve_instances - start)
            batches.append(
                sample_batch(
                    task,
                    m,
                    n,
                    _curve_generator(spec.curve_seed, n, chunk),
                    dtype=torch.float64,
                    interval=interval,
                )
            )
        out.append((n, batches))
    return out


def _tv_per_instance(bt, edges: np.ndarray, probs: np.ndarray) -> np.ndarray:
    if bt.weights is None:
        return M.tv_truncnorm_histogram(bt.mu.numpy(), bt.tau.numpy(), edges, probs)
    return M.tv_mixture_histogram(
        bt.weights.numpy(),
        bt.mu_h.numpy(),
        bt.tau_h.numpy(),
        edges,
        probs,
        float(edges[0]),
        float(edges[-1]),
    )


@torch.no_grad()
def _curve_points(
    model, heldout, edges: np.ndarray, step: int, instances: bool = False
) -> list[dict]:
    """One learning-curve point per n' at ``step``: E[TV], truncated NLL, 90% coverage, CRPS, each
    with its standard error over the held-out instances (:func:`pfntheory.base.stats.mean_se`);
    ``instances``: also each instance's TV (``tv_instances``, 6 significant digits), for comparisons
    paired on the held-out instances (:func:`pfntheory.infra.convergence.doubling_status`)."""
    was_training = model.training
    model.eval()
    p = next(model.parameters())
    pts = []
    for n, batches in heldout:
        cols: dict[str, list] = {"tv": [], "nll": [], "cov": [], "crps": []}
        for bt in batches:
            out = model(
                bt.X.to(p.device, p.dtype), bt.Y.to(p.device, p.dtype), bt.xq.to(p.device, p.dtype)
            )
            probs = torch.softmax(out.logits.double(), -1).cpu().numpy()
            y = bt.y.numpy()
            lo, hi = M.central_interval(edges, probs, 0.9)
            cols["tv"].append(_tv_per_instance(bt, edges, probs))
            cols["nll"].append(M.histogram_nll(edges, probs, y))
            cols["cov"].append(((lo <= y) & (y <= hi)).astype(float))  # closed, as metrics.coverage
            cols["crps"].append(M.histogram_crps(edges, probs, y))
        pt: dict[str, Any] = {"step": int(step), "n": int(n)}
        for key, name in (("tv", "tv"), ("nll", "nll"), ("cov", "coverage90"), ("crps", "crps")):
            # an NLL may be infinite (a bin of zero mass under the label): mean inf, se NaN
            pt[name], pt[name + "_se"] = mean_se(np.concatenate(cols[key]), allow_inf=key == "nll")
        if instances:
            pt["tv_instances"] = [float(f"{v:.6g}") for v in np.concatenate(cols["tv"])]
        pts.append(pt)
    model.train(was_training)
    return pts


def format_learning_curve(doc: dict, metric: str = "tv") -> str:
    """A text table of a learning curve: one row per step, one column per n' (``metric +- se``)."""
    doc = keys("n_eval", "points")(doc, "doc")
    choice(metric, "metric", METRICS)
    ns = list(doc["n_eval"])
    by = {(p["step"], p["n"]): p for p in doc["points"]}
    steps = sorted({p["step"] for p in doc["points"]})
    head = f"{'step':>8} " + " ".join(f"{metric} n'={n:<6}".rjust(22) for n in ns)
    lines = [head]
    for st in steps:
        cells = []
        for n in ns:
            p = by.get((st, n))
            cells.append(f"{p[metric]:.4g} +- {p[metric + '_se']:.2g}".rjust(22) if p else " " * 22)
        lines.append(f"{st:>8} " + " ".join(cells))
    return "\n".join(lines)


class LearningCurves:
    """The learning curves of one run (its own covariates, then each of ``spec.curve_covariates``):
    the held-out sets, drawn once, and the points recorded so far. A resumed run (``start > 0``)
    keeps the points up to its checkpoint; later ones are recomputed, identically, since evaluation
    touches neither weights nor RNG."""

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        interval: tuple[float, float],
        start: int,
        averaged: bool,
    ):
        self.run_dir = run_dir
        self.at = set(curve_steps(spec.steps, spec.curve_points)) if spec.curve_n_eval else set()
        self.final = spec.steps
        designs = (None, *spec.curve_covariates) if self.at else ()
        average = {"weights": "average", "ema_decay": spec.ema_decay} if averaged else {}
        self.docs: dict[str | None, dict[str, Any]] = {
            cov: {
                "schema": 1,
                "eval_seed": spec.curve_seed,
                "n_instances": spec.curve_instances,
                "n_eval": list(spec.curve_n_eval),
                "covariates": spec.task.covariates if cov is None else cov,
                "points": [],
                "eval_seconds": 0.0,
                **average,
            }
            for cov in designs
        }
        self.heldout = {cov: _heldout_set(spec, interval, covariates=cov) for cov in designs}
        a, b = interval
        self.edges = bin_edges(a, b, spec.model.C)
        for cov, doc in self.docs.items():
            old = read_learning_curve(run_dir, cov) if start > 0 else None
            if old is not None:
                doc["points"] = [p for p in old["points"] if p["step"] <= start]
                doc["eval_seconds"] = float(old.get("eval_seconds", 0.0))

    def eval_seconds(self) -> float:
        """Seconds spent evaluating the curves (all covariate laws)."""
        return sum(doc["eval_seconds"] for doc in self.docs.values())

    def record(
        self, step: int, model: torch.nn.Module, average, elapsed: Callable[[], float]
    ) -> None:
        """Evaluate and save the points of ``step`` when it is a curve step. With a weight
        average ``average`` the points are the average's, the last iterate's beside them as
        ``last_<metric>``; ``elapsed()``: seconds since the run began (training and curves)."""
        if step not in self.at:
            return
        final = step == self.final
        for cov, doc in self.docs.items():
            te = time.perf_counter()
            if average is None:
                doc["points"] += _curve_points(model, self.heldout[cov], self.edges, step, final)
            else:
                pts = _curve_points(average, self.heldout[cov], self.edges, step, final)
                last = _curve_points(model, self.heldout[cov], self.edges, step)
                for p, q in zip(pts, last, strict=True):
                    p.update({f"last_{k}": q[k] for k in q if k not in ("step", "n")})
                doc["points"] += pts
            doc["eval_seconds"] += time.perf_counter() - te
        for cov, doc in self.docs.items():
            doc["train_seconds"] = elapsed() - self.eval_seconds()
            runs.save_json(self.run_dir / curve_file(cov), doc)
