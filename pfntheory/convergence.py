"""Has a trained run stopped improving? The plateau criterion that gates every trained verdict.

A trained claim may say "holds" or "does not hold" only when each run it rests on has plateaued
(issue 10, DESIGN.md "Scales and verdicts of trained results"); otherwise its verdict is
"undecided: still improving at N steps". This module states and implements that criterion on a
learning curve (``learning_curve.json``, written by :func:`pfntheory.nn.train.train`). Torch-free.

Criterion
---------
Average the metric over the held-out sizes n' at each evaluated step (its standard error is
``sqrt(sum se_n^2) / len(n')``: the sizes are drawn independently). Take the log-spaced steps
``s > 0`` and split them in log-step at their midpoint ``sqrt(s_first * s_last)``; ``m_mid`` is the
metric at the first step of the second half, ``m_last`` at the last step. The run has *plateaued* iff

    |change| <= k * se,    change = m_mid - m_last,    se = sqrt(se_mid^2 + se_last^2),

i.e. the metric moved by no more than k standard errors over the last half (in log-steps) of
training. A curve that got significantly *worse* (``change < -k se``: training drifted away, e.g. a
held-out design the model is specialising against) is *diverging*, not plateaued: it is still moving. For ``metric="coverage90"`` (which should approach 0.9, not fall) the change is of
``|coverage - 0.9|``.

Why ``k = 2``: on a truly flat curve the change is a difference of two estimates; with independent
standard errors it exceeds 2 se with probability about 2.3% (one-sided normal), so a converged run is
rarely called "still improving". The standard error ignores that both points are scored on the same
held-out instances (a positive correlation, which makes the true se of the difference smaller), so
the test is conservative towards "plateaued" at the margin: a fall smaller than about 2 se of one
point is below what the held-out set resolves, and "plateaued" means exactly that.

A curve with fewer than :data:`MIN_POINTS` log-spaced steps, or a non-finite metric at either end,
is never plateaued.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["K_DEFAULT", "MIN_POINTS", "METRICS", "curve_means", "plateau_status", "trend_text"]

#: Number of standard errors a fall over the last half of the curve may reach on a plateau.
K_DEFAULT = 2.0
#: Minimum number of log-spaced evaluation steps (> 0) for a plateau decision.
MIN_POINTS = 4
#: Metrics of the learning-curve points.
METRICS = ("tv", "nll", "coverage90", "crps")
_NOMINAL = {"coverage90": 0.9}


def curve_means(points: Sequence[dict], metric: str = "tv") -> list[tuple[int, float, float]]:
    """``(step, mean over n', se)`` per evaluated step, sorted by step.

    Parameters
    ----------
    points : sequence of dict
        Learning-curve points with keys ``step``, ``n``, ``metric`` and ``metric + "_se"``.
    metric : {"tv", "nll", "coverage90", "crps"}
    """
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


def plateau_status(points: Sequence[dict], metric: str = "tv", k: float = K_DEFAULT) -> dict:
    """Whether a learning curve has plateaued (criterion in the module docstring).

    Parameters
    ----------
    points : sequence of dict
        The ``points`` of ``learning_curve.json``.
    metric : {"tv", "nll", "coverage90", "crps"}
    k : float
        Standard errors allowed for the fall over the last half of the curve (> 0).

    Returns
    -------
    dict
        ``plateaued`` (bool), ``diverging`` (bool: significantly worse over the last half),
        ``last_step`` (int), ``change`` (metric at the middle step minus
        metric at the last step; for coverage, of the distance to 0.9), ``se`` (its standard error),
        ``k``, ``criterion`` (text), ``mid_step`` and ``value`` (the metric at the last step).
    """
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        raise ValueError(f"k must be a finite positive number, got {k!r}")
    curve = [c for c in curve_means(points, metric) if c[0] > 0]
    crit = (
        f"{metric} moved by at most {k:g} standard errors between the first step of the last half "
        f"(in log-steps) of the curve and the last step"
    )
    base = {
        "plateaued": False,
        "last_step": curve[-1][0] if curve else 0,
        "change": float("nan"),
        "se": float("nan"),
        "k": float(k),
        "criterion": crit,
        "mid_step": None,
        "diverging": False,
        "value": curve[-1][1] if curve else float("nan"),
    }
    if len(curve) < MIN_POINTS:
        return {
            **base,
            "criterion": crit + f" (needs >= {MIN_POINTS} evaluated steps, has {len(curve)})",
        }
    s_mid = math.sqrt(curve[0][0] * curve[-1][0])
    mid = next(c for c in curve if c[0] >= s_mid)
    last = curve[-1]
    nominal = _NOMINAL.get(metric)

    def dist(v):
        return abs(v - nominal) if nominal is not None else v

    change = dist(mid[1]) - dist(last[1])
    se = math.sqrt(mid[2] ** 2 + last[2] ** 2)
    finite = math.isfinite(change) and math.isfinite(se)
    ok = finite and abs(change) <= k * se
    diverging = finite and change < -k * se
    return {
        **base,
        "plateaued": bool(ok),
        "diverging": bool(diverging),
        "change": float(change),
        "se": float(se),
        "mid_step": int(mid[0]),
    }


def trend_text(status: dict) -> str:
    """One line for a claim's details: "plateaued at N steps (...)" or "still improving at N ..."."""
    word = (
        "plateaued"
        if status["plateaued"]
        else "getting worse"
        if status.get("diverging")
        else "still improving"
    )
    return (
        f"{word} at {status['last_step']} steps ({status.get('value', float('nan')):.4g}; change "
        f"over the last half {status['change']:.3g} vs {status['k']:g} se = "
        f"{status['k'] * status['se']:.3g})"
    )
