"""Hypothesis strategies shared by the discretisation verify modules.

Every generated case satisfies the hypotheses of supp-lem:discretization error and
supp-lem:smax quad: a density that is Lipschitz on R (with a known Lipschitz constant), an interval
(a, b] with outside mass eps in (0, 1), and a partition of (a, b] into C >= 2 bins, equidistant or
not. For supp-lem:smax quad the density is also continuous and positive on [a, b] (the interval is
taken between two interior quantiles, inside the support). What this rests on -- each family's
declared Lipschitz constant and :func:`pfntheory.maths.densities.quantile_interval` -- is
unit-tested in ``tests/test_densities.py``.
"""

import numpy as np
from hypothesis import strategies as st

from pfntheory.claims.discretization import (
    warped_partition,
)
from pfntheory.maths.densities import (
    gaussian,
    gaussian_mixture,
    inverse_gaussian,
    laplace,
    quantile_interval,
    triangular,
)

_f = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def densities(draw, kinds=("gaussian", "mixture", "triangular", "laplace")):
    kind = draw(st.sampled_from(kinds))
    if kind == "gaussian":
        return gaussian(draw(st.floats(-3, 3, **_f)), draw(st.floats(0.02, 4.0, **_f)))
    if kind == "mixture":
        k = draw(st.integers(2, 4))
        w = np.array(draw(st.lists(st.floats(0.05, 1.0, **_f), min_size=k, max_size=k)))
        mu = draw(st.lists(st.floats(-3, 3, **_f), min_size=k, max_size=k))
        tau = draw(st.lists(st.floats(0.02, 2.0, **_f), min_size=k, max_size=k))
        return gaussian_mixture(w / w.sum(), mu, tau)
    if kind == "triangular":
        lo = draw(st.floats(-3, 3, **_f))
        width = draw(st.floats(0.3, 5.0, **_f))
        frac = draw(st.floats(0.05, 0.95, **_f))
        return triangular(lo, lo + frac * width, lo + width)
    if kind == "laplace":
        return laplace(draw(st.floats(-3, 3, **_f)), draw(st.floats(0.1, 2.0, **_f)))
    if kind == "inverse_gaussian":
        return inverse_gaussian(draw(st.floats(0.3, 3.0, **_f)), draw(st.floats(0.05, 2.0, **_f)))
    raise AssertionError(kind)


@st.composite
def partitions(draw, a, b, C_min=2, C_max=300):
    """Equidistant, random (widths in [1, ratio]) or smoothly warped partitions of (a, b]."""
    C = draw(st.integers(C_min, C_max))
    kind = draw(st.sampled_from(["uniform", "random", "warped"]))
    if kind == "uniform":
        e = np.linspace(a, b, C + 1)
    elif kind == "random":
        w = np.array(draw(st.lists(st.floats(1.0, 5.0, **_f), min_size=C, max_size=C)))
        e = a + (b - a) * np.concatenate([[0.0], np.cumsum(w) / w.sum()])
    else:
        e = warped_partition(
            a, b, C, draw(st.floats(-0.9, 0.9, **_f)), draw(st.floats(0, 6.28, **_f))
        )
    e[0], e[-1] = a, b
    return e


@st.composite
def cases(draw, kinds=("gaussian", "mixture", "triangular", "laplace"), C_max=300):
    """(density, edges): (a, b] between the quantiles lower and 1 - upper, each in [1e-4, 0.2]."""
    d = draw(densities(kinds))
    lower = draw(st.floats(1e-4, 0.2, **_f))
    upper = draw(st.floats(1e-4, 0.2, **_f))
    a, b = quantile_interval(d, lower, upper)
    return d, draw(partitions(a, b, C_max=C_max))
