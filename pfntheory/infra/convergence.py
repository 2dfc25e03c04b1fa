"""Has a trained run stopped improving? The plateau criterion that gates every trained verdict
(docs/verdicts.md, "The plateau criterion"), the one reader of a run's learning curves
(``learning_curve*.json``, written by :func:`pfntheory.nn.train.train`) and the gate "has every run
plateaued" (:func:`all_plateaued`). Torch-free.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from pfntheory.base._checks import ArgumentTypeError, choice, int_tuple, keys, sequence

from . import runs
from .config import COVARIATES, curve_file
from .status import (
    ALPHA,
    NOMINAL,
    Status,
    as_status,
    no_curve,
    start_vs_end,
    trend_text,
)

__all__ = [
    "ALPHA",
    "MIN_POINTS",
    "METRICS",
    "STATES",
    "Status",
    "no_curve",
    "TOLERANCES",
    "curve_means",
    "curve_status",
    "doubling_status",
    "final_instances",
    "last_half_values",
    "last_half_start",
    "plateau_status",
    "read_learning_curve",
    "curve_points",
    "all_plateaued",
    "trend_text",
]

#: Minimum number of log-spaced evaluation steps (> 0) in the last log-half for a decision.
MIN_POINTS = 4
#: Metrics of the learning-curve points.
METRICS = runs.CURVE_METRICS
#: Equivalence tolerance per metric: ``("rel", r)`` is ``r`` times the fitted value at the last
#: step, ``("abs", a)`` is ``a`` in the metric's units (docs/verdicts.md: why these).
TOLERANCES = {
    "tv": ("rel", 0.10),
    "crps": ("rel", 0.10),
    "nll": ("abs", 0.05),
    "coverage90": ("abs", 0.02),
}
#: The states :func:`plateau_status` returns, in its ``state`` field.
STATES = ("plateaued", "still improving", "diverging", "too noisy to tell", "too short")


def _curve(points, name: str = "points") -> list:
    """``points`` as a list of learning-curve points (mappings); None, strings, numbers and
    mappings are refused, naming the argument."""
    items = sequence(points, name, non_empty=False)
    for i, p in enumerate(items):
        if not isinstance(p, Mapping):
            raise ArgumentTypeError(
                f"{name}[{i}] must be a learning-curve point (a dict with step, n and the "
                f"metrics), got {p!r}"
            )
    return items


def curve_means(points: Sequence[dict], metric: str = "tv") -> list[tuple[int, float, float]]:
    """``(step, mean over n', se)`` per evaluated step, sorted by step.

    Parameters
    ----------
    points : sequence of dict
        Learning-curve points with keys ``step``, ``n``, ``metric`` and ``metric + "_se"``.
    metric : {"tv", "nll", "coverage90", "crps"}
    """
    points = _curve(points)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    by_step: dict[int, list[tuple[float, float]]] = {}
    for i, p in enumerate(points):
        try:
            step, m, se = int(p["step"]), float(p[metric]), float(p[metric + "_se"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(
                f"points[{i}] lacks a numeric step/{metric}/{metric}_se: {p!r}"
            ) from err
        if step < 0:
            raise ValueError(f"points[{i}] has a negative step {step}")
        by_step.setdefault(step, []).append((m, se))
    out = []
    for step in sorted(by_step):
        vals = by_step[step]
        m = sum(v for v, _ in vals) / len(vals)
        se = math.sqrt(sum(s * s for _, s in vals)) / len(vals)
        out.append((step, m, se))
    return out


def _tolerance(metric: str, value: float, tol) -> tuple[float, str]:
    """The tolerance in the metric's units and its description."""
    kind, size = TOLERANCES[metric] if tol is None else tol
    if kind not in ("rel", "abs"):
        raise ValueError(f"tol must be ('rel', r) or ('abs', a), got {tol!r}")
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
        raise ValueError(f"tol must have a finite positive size, got {tol!r}")
    if not math.isfinite(size):
        raise ValueError(f"tol must have a finite positive size, got {tol!r}")
    if kind == "rel":
        return float(size) * abs(value), f"{100 * size:g}% of the value at the last step"
    return float(size), f"{size:g}"


def _state(lo: float, hi: float, tol: float) -> str:
    """The state of a fall whose confidence interval is ``[lo, hi]`` against the equivalence
    tolerance ``tol`` (two one-sided tests; docs/verdicts.md: the four states)."""
    if -tol <= lo and hi <= tol:
        return "plateaued"
    if lo > 0:
        return "still improving"
    if hi < 0:
        return "diverging"
    return "too noisy to tell"


def _decision(fall: float, se: float, dof: int, alpha: float, tol: float) -> dict[str, Any]:
    """The state of a fall with standard error ``se`` (``dof`` degrees of freedom) against ``tol``,
    with its ``1 - 2 alpha`` confidence interval, as the :class:`Status` fields both tests set."""
    t = float(stats.t.ppf(1 - alpha, dof))
    lo, hi = fall - t * se, fall + t * se
    return {
        "state": _state(lo, hi, tol),
        "fall": fall,
        "se": se,
        "ci": (lo, hi),
        "tol": tol,
        "halfwidth": t * se,
        "resolvable": bool(t * se <= tol),
    }


def plateau_status(
    points: Sequence[dict], metric: str = "tv", tol: tuple | None = None, alpha: float = ALPHA
) -> Status:
    """Whether a learning curve has plateaued (docs/verdicts.md, "The plateau criterion").

    Parameters
    ----------
    points : sequence of dict
        The ``points`` of ``learning_curve.json``.
    metric : {"tv", "nll", "coverage90", "crps"}
    tol : ("rel", r) or ("abs", a), optional
        Equivalence tolerance of the fall over the last log-half; default :data:`TOLERANCES`.
    alpha : float
        One-sided level of each test, in (0, 0.5).

    Returns
    -------
    Status
        ``state`` (one of :data:`STATES`; ``plateaued`` and ``diverging`` are its booleans),
        ``last_step`` (int), ``value`` (the metric at the last step), ``fall`` (the fitted fall
        over the last log-half; for coverage, of the distance to 0.9), ``se`` (its standard error),
        ``ci`` (its ``1 - 2 alpha`` confidence interval), ``tol`` (in the metric's units),
        ``jitter`` (residual SD about the trend), ``instance_se`` (RMS held-out standard error over
        the last half), ``halfwidth`` (the interval's half-width, ``t se``) and ``resolvable``
        (``halfwidth <= tol``: False means that no fitted fall, not even 0, could put the interval
        inside the tolerance, so the curve cannot be called plateaued at its jitter and steps,
        however long the run; both only once a trend was fitted), ``n_points``, ``mid_step``
        (first step of the last half), ``alpha`` and ``criterion`` (text). Where no trend is
        fitted (too few steps, or a non-finite value in the last half) the fitted quantities are
        NaN, and so is ``value`` for a curve without a step > 0 (an empty curve is "too short").
        ``start`` / ``worse_than_start``: the curve's value at step 0 against its last, per n'
        (:data:`~pfntheory.base.stats.Z_MARGIN`), whatever the state.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be a number in (0, 0.5), got {alpha!r}")
    points = _curve(points)
    curve = [c for c in curve_means(points, metric) if c[0] > 0]
    # the initialisation is compared on E[TV] only (the accuracy the construction sets at step 0)
    ends, worse = start_vs_end(points, metric) if metric == "tv" else ((), ())
    base: dict[str, Any] = {
        "state": "too noisy to tell",
        "last_step": curve[-1][0] if curve else 0,
        "value": curve[-1][1] if curve else float("nan"),
        "alpha": float(alpha),
        "start": ends,
        "worse_than_start": worse,
    }
    _, tol_text = _tolerance(metric, 1.0, tol)  # validates tol before any early return
    crit = (
        f"{metric}: the {100 * (1 - 2 * alpha):g}% confidence interval of its fitted fall over the "
        f"last log-half of the curve lies within +-{tol_text}"
    )
    start = last_half_start([c[0] for c in curve]) if curve else 0
    half = [c for c in curve if c[0] >= start]
    if len(half) < MIN_POINTS:
        return Status(
            **{
                **base,
                "state": "too short",
                "n_points": len(half),
                "criterion": crit + f" (needs >= {MIN_POINTS} steps in the last log-half, "
                f"has {len(half)})",
            }
        )
    x = np.log([c[0] for c in half])
    m = np.array([c[1] for c in half])
    se_i = np.array([c[2] for c in half])
    nominal = NOMINAL.get(metric)
    y = np.abs(m - nominal) if nominal is not None else m
    base = {**base, "n_points": len(half), "mid_step": int(half[0][0]), "criterion": crit}
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(se_i))):
        return Status(**{**base, "criterion": crit + " (a non-finite value in the last log-half)"})
    xc = x - x.mean()
    sxx = float(xc @ xc)
    b = float(xc @ (y - y.mean())) / sxx
    resid = y - y.mean() - b * xc
    dof = len(half) - 2
    jitter = math.sqrt(float(resid @ resid) / dof)
    inst = math.sqrt(float(np.mean(se_i**2)))
    sigma = max(jitter, inst)
    span = float(x[-1] - x[0])
    fall = -b * span
    se = span * sigma / math.sqrt(sxx)
    end = float(y.mean() + b * xc[-1])
    tol_units, _ = _tolerance(metric, end, tol)
    return Status(
        **{
            **base,
            **_decision(fall, se, dof, alpha, tol_units),
            "jitter": jitter,
            "instance_se": inst,
        }
    )


def last_half_start(steps: Sequence[int]) -> int:
    """The first step of the *last log-half* of log-spaced evaluation steps ``s > 0`` (sorted):
    the first with ``s >= sqrt(s_first * s_last)``."""
    steps = int_tuple(steps, "steps", minimum=0)
    if list(steps) != sorted(steps):
        raise ValueError(f"steps must be sorted in increasing order, got {list(steps)}")
    mid = math.sqrt(steps[0] * steps[-1])
    return next(s for s in steps if s >= mid)


def read_learning_curve(run_dir: str | os.PathLike, covariates: str | None = None) -> dict | None:
    """The learning curve of a run directory (``learning_curve.json``; with ``covariates``, the
    curve on that covariate law, :func:`pfntheory.infra.config.curve_file`), or None if it has none.

    Schema 1: ``{"schema": 1, "eval_seed", "n_instances", "n_eval": [n'...], "points": [{"step",
    "n", "tv", "tv_se", "nll", "nll_se", "coverage90", "coverage90_se", "crps", "crps_se"}, ...],
    "eval_seconds", "train_seconds"}``; one point per evaluated step and n'.

    Raises
    ------
    pfntheory.infra.runs.CorruptFileError
        (a ValueError) If the file exists but is not valid JSON (or not UTF-8), not schema 1, or
        holds values no curve can hold (:func:`_point_values`: a point without ``step``, a
        negative step, a NaN or out-of-range E[TV] or coverage, per-instance TVs outside
        [0, 1]); the message names the file and the field.
    """
    if covariates is not None:
        choice(covariates, "covariates", COVARIATES)
    path = Path(run_dir) / curve_file(covariates)
    if not path.is_file():
        return None
    doc = runs.load_json(path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != 1
        or not isinstance(doc.get("points"), list)
    ):
        raise runs.CorruptFileError(
            f"{path} is not a learning curve (schema 1 with a 'points' list)"
        )
    for i, p in enumerate(doc["points"]):
        problem = _point_values(p)
        if problem is not None:
            raise runs.CorruptFileError(f"{path} points[{i}] {problem}")
    return doc


def _point_values(p) -> str | None:
    """What is wrong with the values of one curve point (None: nothing): an integer ``step`` >= 0
    and ``n`` >= 1, a finite E[TV] in [0, 1] with a finite SE >= 0, the other metrics present
    numeric (coverage in [0, 1], CRPS finite; the NLL may be infinite, its SE NaN), per-instance
    TVs in [0, 1]."""
    if not isinstance(p, Mapping):
        return "is not an object"
    for key in ("step", "n"):
        v = p.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if key == "step" else 1):
            return f"has no valid {key!r} (got {v!r})"
    for key in (*METRICS, *(m + "_se" for m in METRICS)):
        v = p.get(key, 0.0 if key not in ("tv", "tv_se") else None)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"has no numeric {key!r} (got {v!r})"
        if not key.startswith("nll") and not math.isfinite(v):
            return f"has a non-finite {key!r} ({v!r})"
        if key in ("tv", "coverage90") and not 0 <= v <= 1 or key.endswith("_se") and v < 0:
            return f"has {key!r} = {v!r} outside its range"
    inst = p.get("tv_instances", [])
    if not (isinstance(inst, list) and all(_unit(v) for v in inst)):
        return "has 'tv_instances' that are not TVs in [0, 1]"
    return None


def _unit(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v <= 1


def curve_points(run_dir: str | os.PathLike, covariates: str | None = None) -> list | None:
    """The ``points`` of :func:`read_learning_curve`, or None when the run has no such curve."""
    doc = read_learning_curve(run_dir, covariates)
    return None if doc is None else doc["points"]


def curve_status(
    run_dir: str | os.PathLike, covariates: str | None = None, metric: str = "tv"
) -> Status:
    """:func:`plateau_status` of a run's learning curve (:func:`read_learning_curve`), named by
    the run's directory; a run without that curve (or a covariate law outside
    :data:`~pfntheory.infra.config.COVARIATES`, which no run has) gives ``state`` "no curve" (never
    plateaued), which its ``trend`` says."""
    known = covariates is None or covariates in COVARIATES
    points = curve_points(run_dir, covariates) if known else None
    if points is None:
        return no_curve(f"no learning curve: {curve_file(covariates)} missing").replace(
            run=Path(run_dir).name
        )
    return plateau_status(points, metric=metric).replace(run=Path(run_dir).name)


def all_plateaued(statuses: Mapping[str, Status | Mapping]) -> dict:
    """The gate of every trained verdict: has every run plateaued?

    Parameters
    ----------
    statuses : mapping of str to dict
        Run (or curve) name -> its convergence status (:func:`curve_status`,
        :func:`doubling_status`...: a ``state``, ``plateaued`` and ``last_step``).

    Returns
    -------
    dict
        ``plateaued`` (every status plateaued; True for none), ``n`` (statuses), ``not_plateaued``
        and ``no_curve`` (their names, in order; ``no_curve``: state "no curve"), ``states``
        (``{state: count}`` of those not plateaued, sorted by state), ``last_step`` (the largest
        known, or None) and ``counts`` (the states as text, e.g. "2 still improving, 1 too short").
    """
    if not isinstance(statuses, Mapping):
        raise ArgumentTypeError(
            f"statuses must map run names to convergence statuses, got {type(statuses).__name__}"
        )
    for name, st in statuses.items():
        if not isinstance(st, Status):
            keys("state", "plateaued")(st, f"statuses[{name!r}]")
    sts: dict[str, Status] = {
        n: st if isinstance(st, Status) else as_status(st) for n, st in statuses.items()
    }
    out = [n for n, st in sts.items() if not st.plateaued]
    states = dict(sorted(Counter(sts[n].state for n in out).items()))
    steps = [st.last_step for st in sts.values() if st.last_step is not None]
    return {
        "plateaued": not out,
        "n": len(sts),
        "not_plateaued": out,
        "no_curve": [n for n in out if sts[n].state == "no curve"],
        "worse": [n for n, st in sts.items() if st.got_worse],
        "states": states,
        "last_step": max(steps) if steps else None,
        "counts": ", ".join(f"{v} {k}" for k, v in states.items()),
    }


# --------------------------------------------------------------------------------------------------
# budget doubling: a convergence test that the learning-rate schedule cannot fool
# --------------------------------------------------------------------------------------------------


def final_instances(points: Sequence[dict], metric: str = "tv") -> np.ndarray | None:
    """Per-instance values of ``metric`` at the last step of a learning curve (the ``tv_instances``
    that a weight-averaged run records at its final point), concatenated over n' in increasing
    order; None when the curve has none."""
    if metric != "tv":
        raise ValueError(f"only per-instance 'tv' is recorded, got metric={metric!r}")
    points = _curve(points)
    if not points:
        return None
    last = max(int(p["step"]) for p in points)
    final = sorted((p for p in points if int(p["step"]) == last), key=lambda p: int(p["n"]))
    if not all("tv_instances" in p for p in final):
        return None
    return np.concatenate([np.asarray(p["tv_instances"], dtype=float) for p in final])


def doubling_status(
    short: Sequence[dict], long: Sequence[dict], tol: float = 0.10, alpha: float = ALPHA
) -> Status:
    """Has a run stopped improving, by budget doubling (docs/verdicts.md, "Budget doubling").

    ``short`` and ``long`` are the learning-curve points of the same run trained for ``S`` and
    ``2S`` steps, each with its own schedule (warm-up, cosine decay to its own end), both ending
    with per-instance E[TV] on the same held-out instances (:func:`final_instances`). The paired
    differences ``d_i = TV_S,i - TV_2S,i`` give the fall the doubled budget bought and its
    standard error ``sd(d) / sqrt(N)``. With the ``1 - 2 alpha`` interval ``fall -+ t se``, the run
    is *plateaued* iff the interval lies within ``+-tol x E[TV_2S]`` (10%: the tolerance of the
    log-half test, now per doubling of the whole schedule), *still improving* iff not and it lies
    above 0, *diverging* iff it lies below 0, and *too noisy to tell* otherwise. Each end is the
    end of a complete schedule, so an annealing rate cannot pass for a plateau as a bend of one
    curve can; the pairing removes the instance-to-instance spread (the two means share
    instances), so the interval is set by how differently the two models score each instance.
    Its size (a true fall of ``tol`` called plateaued) is at most ``alpha`` for independent
    instances: two one-sided t-tests (simulated in tests/test_convergence.py).

    Returns a :class:`Status` (``test`` "doubling"; ``fall`` the paired fall, ``value``
    E[TV_2S], ``last_step`` the long run's steps, ``jitter`` 0, ``instance_se`` the paired SE,
    ``short_step``, ``n_instances``, and the long run's ``start`` / ``worse_than_start``: the model
    read is the 2S one). Without per-instance values at either end (an empty
    curve, a curve read from a missing file as ``[]``) the state is "too short" and the fitted
    quantities are NaN.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be a number in (0, 0.5), got {alpha!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise ValueError(f"tol must be a relative tolerance in (0, 1), got {tol!r}")
    short, long = _curve(short, "short"), _curve(long, "long")
    a, b = final_instances(short), final_instances(long)
    s_short = max((int(p["step"]) for p in short), default=0)
    s_long = max((int(p["step"]) for p in long), default=0)
    crit = (
        f"budget doubling: the {100 * (1 - 2 * alpha):g}% CI of the paired fall of E[TV] from "
        f"{s_short} to {s_long} steps lies within +-{100 * tol:g}% of E[TV] at {s_long}"
    )
    ends, worse = start_vs_end(long, "tv")
    base: dict[str, Any] = {
        "state": "too short",
        "test": "doubling",
        "last_step": s_long,
        "short_step": s_short,
        "jitter": 0.0,
        "n_points": 2,
        "mid_step": s_short,
        "alpha": float(alpha),
        "criterion": crit,
        "start": ends,
        "worse_than_start": worse,
        "model": f"the weight average at {s_long} steps",
    }
    if a is None or b is None:
        return Status(**{**base, "criterion": crit + " (a curve lacks per-instance values)"})
    if a.shape != b.shape or a.size < 3:
        raise ValueError(
            f"short and long must end on the same held-out instances, got {a.size} and {b.size}"
        )
    if s_long <= s_short:
        raise ValueError(f"long must train for more steps than short, got {s_long} <= {s_short}")
    d = a - b
    if not (np.all(np.isfinite(d))):
        return Status(
            **{**base, "state": "too noisy to tell", "criterion": crit + " (non-finite TV)"}
        )
    n = d.size
    fall = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    value = float(b.mean())
    return Status(
        **{
            **base,
            **_decision(fall, se, n - 1, alpha, tol * value),
            "value": value,
            "instance_se": se,
            "n_instances": n,
            "by_n": _doubling_by_n(short, long),
        }
    )


def _doubling_by_n(short: Sequence[dict], long: Sequence[dict]) -> tuple:
    """Per n' of the two final points (both with per-instance E[TV] of one length): ``(n', E[TV]
    at S, E[TV] at 2S, paired SE of the change)``; n' missing at either end are left out."""

    def last(points):
        step = max(int(p["step"]) for p in points)
        return {
            int(p["n"]): np.asarray(p["tv_instances"], float)
            for p in points
            if int(p["step"]) == step and "tv_instances" in p
        }

    a, b = last(short), last(long)
    rows = []
    for n in sorted(set(a) & set(b)):
        if a[n].shape != b[n].shape or a[n].size < 2:
            continue
        d = b[n] - a[n]
        if not np.all(np.isfinite(d)):
            continue
        rows.append(
            (n, float(a[n].mean()), float(b[n].mean()), float(d.std(ddof=1) / math.sqrt(d.size)))
        )
    return tuple(rows)


def last_half_values(points: Sequence[dict]) -> dict[int, dict]:
    """The curve's values at each step of its last log-half: ``step -> {metric: (mean over n',
    se), ..., "by_n": {n': {metric: (mean, se)}}}`` for every metric present in the points (the
    last iterate's ``last_<metric>`` are not read: a weight-averaged curve is judged on the
    average)."""
    points = _curve(points)
    steps = sorted({int(p["step"]) for p in points if int(p["step"]) > 0})
    if not steps:
        return {}
    start = last_half_start(steps)
    out: dict[int, dict] = {}
    for metric in METRICS:
        if not all(metric in p for p in points):
            continue
        for step, m, se in curve_means(points, metric):
            if step >= start:
                out.setdefault(step, {"by_n": {}})[metric] = (m, se)
    for p in points:
        step = int(p["step"])
        if step in out:
            out[step]["by_n"][int(p["n"])] = {
                k: (float(p[k]), float(p[k + "_se"])) for k in METRICS if k in p
            }
    return out
