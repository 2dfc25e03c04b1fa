"""Unit tests of the test densities (:mod:`pfntheory.maths.densities`): what the discretisation
checks of ``verify/`` (supp-lem:discretization error, supp-lem:smax quad) take for granted about
them.

* The declared Lipschitz constant is ``sup |p'|``: no secant slope of the pdf exceeds it, and a
  secant slope comes within 2% of it (so it is neither understated, which would make a violated
  bound look satisfied, nor loose, which would make the bounds easier to meet).
* The pdf integrates to the CDF's differences.
* :func:`pfntheory.maths.densities.quantile_interval` puts ``(a, b]`` at the asked tail masses and
  inside the support (``p > 0`` on ``[a, b]``, the hypothesis of supp-lem:smax quad), so the outside
  mass ``eps = lower + upper`` lies in ``(0, 1)``.

The densities are drawn by the strategy of ``verify/_discretization_strategies.py`` (the one the
discretisation checks use), with the inverse-Gaussian family added.
Each check measures a number; the ``*_detects_*`` tests show it fails on a broken density (a halved
or doubled Lipschitz constant, a CDF off by 10%, an interval reaching outside the support).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.integrate
from _discretization_strategies import densities
from hypothesis import given
from hypothesis import strategies as st

from pfntheory.maths.densities import (
    Density,
    gaussian,
    laplace,
    quantile_interval,
    triangular,
)

_f = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
#: The families whose Lipschitz constant supp-lem:discretization error uses.
LIPSCHITZ_KINDS = ("gaussian", "mixture", "triangular", "laplace")
ALL_KINDS = (*LIPSCHITZ_KINDS, "inverse_gaussian")


def _grid(d: Density, n: int = 40001) -> np.ndarray:
    """A grid one unit beyond the 1e-6 / 1 - 1e-6 quantiles (every maximum of |p'| lies inside)."""
    a, b = quantile_interval(d, 1e-6, 1e-6)
    return np.linspace(a - 1, b + 1, n)


def lipschitz_ratio(d: Density) -> float:
    """Largest secant slope of the pdf on :func:`_grid` over the declared constant: <= 1 for a valid
    constant (a secant slope is a mean of p'), near 1 for a sharp one."""
    y = _grid(d)
    return float(np.max(np.abs(np.diff(d.pdf(y))) / np.diff(y)) / d.lipschitz)


def mass_error(d: Density, a: float, b: float) -> float:
    """``|int_a^b p - (F(b) - F(a))|`` by scipy.integrate.quad, split at the density's kinks
    (triangle corners, Laplace peak) and at 40 points, so that quad meets its 1e-10 target."""
    kinks = [v for v in d.params.values() if np.isscalar(v) and a < v < b]
    points = np.union1d(np.linspace(a, b, 42)[1:-1], kinks)
    quad = scipy.integrate.quad(d.pdf, a, b, limit=400, points=points)[0]
    return float(abs(quad - (d.cdf(np.array([b]))[0] - d.cdf(np.array([a]))[0])))


def interval_errors(d: Density, a: float, b: float, lower: float, upper: float) -> dict:
    """How ``(a, b]`` misses the asked tail masses, and the smallest pdf on ``[a, b]``."""
    F = d.cdf(np.array([a, b]))
    return {
        "lower": float(abs(F[0] - lower)),
        "upper": float(abs(1 - F[1] - upper)),
        "min_pdf": float(np.min(d.pdf(np.linspace(a, b, 4001)))),
        "inside_support": bool(d.support[0] < a < b < d.support[1]),
    }


@given(densities(LIPSCHITZ_KINDS))
def test_lipschitz_constant_is_sup_abs_derivative(d):
    """No secant slope exceeds the declared constant (rtol 1e-9: the grid search and Brent
    refinement of the mixtures' constant), and one comes within 2% of it (grid spacing)."""
    r = lipschitz_ratio(d)
    assert 0.98 <= r <= 1 + 1e-9, (d.name, d.params, r)


@given(densities(ALL_KINDS), st.floats(1e-4, 0.2, **_f), st.floats(1e-4, 0.2, **_f))
def test_pdf_integrates_to_cdf(d, lower, upper):
    """int_a^b p = F(b) - F(a) on the intervals the verify strategies use (atol 1e-9: quad's error
    with the kinks split)."""
    a, b = quantile_interval(d, lower, upper)
    assert mass_error(d, a, b) <= 1e-9, (d.name, d.params)


@given(densities(ALL_KINDS), st.floats(1e-4, 0.2, **_f), st.floats(1e-4, 0.2, **_f))
def test_quantile_interval_is_inside_the_support(d, lower, upper):
    """F(a) = lower and 1 - F(b) = upper (Brent to 1e-14, atol 1e-10 on the CDF), a < b strictly
    inside the support and p > 0 on [a, b]: the hypotheses of supp-lem:smax quad, with outside mass
    eps = lower + upper in (0, 1)."""
    a, b = quantile_interval(d, lower, upper)
    r = interval_errors(d, a, b, lower, upper)
    assert r["lower"] <= 1e-10 and r["upper"] <= 1e-10, r
    assert r["inside_support"] and r["min_pdf"] > 0, r


@pytest.mark.parametrize("factor,fails", [(0.5, "understated"), (2.0, "loose")])
def test_lipschitz_check_detects_a_wrong_constant(factor, fails):
    """The Lipschitz check can fail: a halved constant (understated) or a doubled one (loose)."""
    for d in (gaussian(0.3, 0.5), triangular(-1.0, 0.2, 2.0), laplace(0.0, 0.7)):
        r = lipschitz_ratio(dataclasses.replace(d, lipschitz=factor * d.lipschitz))
        assert (r > 1 + 1e-9) if fails == "understated" else (r < 0.98), (d.name, r)


def test_mass_check_detects_a_wrong_cdf():
    """The mass check can fail: a CDF 10% too small is off by far more than its tolerance."""
    d = gaussian(0.0, 1.0)
    bad = dataclasses.replace(d, cdf=lambda y: 0.9 * d.cdf(y))
    a, b = quantile_interval(d, 0.01, 0.01)
    assert mass_error(d, a, b) <= 1e-9
    assert mass_error(bad, a, b) > 1e-3


def test_interval_check_detects_an_interval_outside_the_support():
    """The interval check can fail: (a, b] reaching below a triangle's support has p = 0 there and
    the wrong lower mass."""
    d = triangular(0.0, 0.5, 1.0)
    r = interval_errors(d, -0.1, 0.9, 0.01, 0.02)
    assert not r["inside_support"] and r["min_pdf"] == 0 and r["lower"] > 1e-3, r
