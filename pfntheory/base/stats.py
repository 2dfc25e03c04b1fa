"""Small statistics shared by every measurement: one implementation of each.

- :data:`EPS` -- float64 machine epsilon, the unit of every round-off tolerance.
- :data:`Z_MARGIN` -- the standard errors a difference must exceed to count (3 SE).
- :func:`mean_se` -- a sample mean and its standard error.
- :func:`t_interval` -- a Student-t confidence interval for a mean over seeds.
- :func:`slope_ci` -- a least-squares slope with its Student-t confidence interval.

One rule for degenerate intervals: an estimate with no degree of freedom left for its error (one
value for a mean, two points for a slope) has the interval ``(-inf, inf)`` -- nothing is known
about its spread, and an unbounded interval lies inside no band, so no verdict rests on it. A
zero-width interval would claim the opposite (certainty).
"""

from __future__ import annotations

import numpy as np
import scipy.stats

from ._checks import as_float_array, finite_scalar

__all__ = ["EPS", "Z_MARGIN", "mean_se", "t_interval", "slope_ci"]

EPS = float(np.finfo(np.float64).eps)
#: Standard errors a difference (a deficit, a worsening, a coverage gap beyond its slack) must
#: exceed to count: one-sided normal tail 0.13% per comparison. The one margin of every
#: statistical check of the package (docs/verdicts.md).
Z_MARGIN = 3.0


def _level(level) -> float:
    v = finite_scalar(level, "level")
    if not 0.0 < v < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {v!r}")
    return v


def mean_se(x, *, allow_inf: bool = False, allow_nan: bool = False) -> tuple[float, float]:
    """Mean of ``x`` and its standard error ``std(x, ddof=1) / sqrt(len(x))``.

    One value gives a standard error of 0 (nothing to estimate it from). An empty ``x`` is refused.
    Non-finite values are refused unless allowed: with ``allow_inf=True`` an infinite value (an NLL
    where a model gives a bin zero mass) is accepted, with ``allow_nan=True`` a NaN is; either makes
    the standard error NaN (undefined) and the mean infinite or NaN as NumPy's mean has it, without
    a NumPy warning.
    """
    x = as_float_array(x, "x", allow_nan=True, non_empty=True).ravel()
    if not allow_nan and np.any(np.isnan(x)):
        raise ValueError("x contains NaN" + ("" if allow_inf else " or infinite values"))
    if not allow_inf and np.any(np.isinf(x)):
        raise ValueError("x contains " + ("" if allow_nan else "NaN or ") + "infinite values")
    if x.size < 2:
        return float(x[0]), 0.0
    if not np.all(np.isfinite(x)):
        return float(np.mean(x)), float("nan")
    return float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(x.size))


def t_interval(x, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean of ``x`` and its two-sided Student-t confidence interval at ``level``.

    With a single value there is no degree of freedom to estimate the spread: the interval is
    ``(-inf, inf)`` (the module's rule for degenerate intervals; documented non-finite result).
    """
    level = _level(level)
    m, se = mean_se(x)
    n = np.asarray(x).size
    if n < 2:
        return m, (-np.inf, np.inf)
    half = float(scipy.stats.t.ppf(0.5 + level / 2, n - 1) * se)
    return m, (m - half, m + half)


def slope_ci(x, y, level: float = 0.95) -> tuple[float, tuple[float, float], float]:
    """Least-squares slope of ``y`` on ``x`` with a Student-t confidence interval.

    Returns ``(slope, (lo, hi), r_value)`` from :func:`scipy.stats.linregress`.

    ``x`` and ``y``: 1-d, finite, of one length >= 2, ``x`` not constant. Two points determine the
    line exactly and leave no degree of freedom to estimate its error: the interval is then
    ``(-inf, inf)`` (the module's rule for degenerate intervals; documented non-finite result).
    """
    level = _level(level)
    x = as_float_array(x, "x")
    y = as_float_array(y, "y")
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of equal length, got {x.shape} and {y.shape}")
    if x.size < 2:
        raise ValueError(f"x and y must hold at least two points for a slope, got {x.size}")
    if np.all(x == x[0]):
        raise ValueError("x must not be constant (the slope is undefined)")
    res = scipy.stats.linregress(x, y)
    dof = x.size - 2
    if dof == 0:
        return float(res.slope), (-np.inf, np.inf), float(res.rvalue)
    t = scipy.stats.t.ppf(0.5 + level / 2, dof)
    stderr = float(res.stderr)
    if not np.isfinite(stderr):  # a constant y: linregress's r is 0/0; the fit is exact
        resid = y - (res.intercept + res.slope * x)
        xc = x - x.mean()
        stderr = float(np.sqrt(resid @ resid / dof / (xc @ xc)))
    return (
        float(res.slope),
        (float(res.slope - t * stderr), float(res.slope + t * stderr)),
        float(res.rvalue),
    )
