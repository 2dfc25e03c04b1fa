"""supp-lem:lienar kernel Gram (Linear kernel).

Statement: for ``x_i ~ N(0, I_d/d)``, ``n > d``, the ``d`` nonzero eigenvalues of ``G = X X^T``
satisfy ``lambda_j = (1 + O_P(n^{-1/2})) n/d``; in the proof, with probability
``>= 1 - 2 exp(-t^2/2)`` all of them lie in
``[n/d (1 - sqrt(d/n) - t/sqrt n)^2, n/d (1 + sqrt(d/n) + t/sqrt n)^2]``.

Generated cases: the interval's shape and the d x d eigenvalue route are deterministic, so their
inputs are drawn by hypothesis (``n > d``; designs from ``verify/_array_strategies.py``, every
coordinate drawn; failures shrink). The probability bound and the rate are claims about the law
``x ~ N(0, I/d)`` and keep it (seeded generators).
"""

import numpy as np
import pytest
from _array_strategies import designs
from hypothesis import given
from hypothesis import strategies as st

from pfntheory.claims.gram import check_linear_interval, check_linear_rate
from pfntheory.maths.spectral import linear_gram_eigenvalues, linear_gram_interval

# (n, d, t) with n > d, the section's standing assumption
cases = st.integers(1, 12).flatmap(
    lambda d: st.tuples(
        st.integers(d + 1, 300), st.just(d), st.floats(0.0, 5.0, allow_subnormal=False)
    )
)


@given(cases)
def test_interval_contains_centre_and_widens_with_t(c):
    """Deterministic shape of the interval: lo <= n/d <= hi, lo >= 0, and [lo, hi] grows with t.
    Fails if a sign or the sqrt(d/n) shift is dropped."""
    n, d, t = c
    iv = linear_gram_interval(n, d, t)
    iv2 = linear_gram_interval(n, d, t + 0.5)
    assert 0.0 <= iv.lo <= n / d <= iv.hi
    assert iv2.lo <= iv.lo and iv2.hi > iv.hi
    assert iv.prob == pytest.approx(max(0.0, 1 - 2 * np.exp(-t * t / 2)), rel=1e-15, abs=1e-15)


@given(
    st.integers(1, 6)
    .flatmap(lambda d: st.tuples(st.integers(d + 1, 60), st.just(d)))
    .flatmap(lambda nd: designs(*nd))
)
def test_small_gram_matches_full_eigvalsh(X):
    """The d x d route equals the n x n eigvalsh of X X^T (independent reference) on every drawn
    design (an identity: rank-deficient and coincident designs included).
    Tolerance: 10 n eps lambda_1 (eigvalsh round-off), rtol 0. Fails if one eigenvalue is off by a
    relative 1e-6 (shrunk to a 2 x 1 design)."""
    n, d = X.shape
    lam = linear_gram_eigenvalues(X)
    full = np.linalg.eigvalsh(X @ X.T)[::-1][:d]
    np.testing.assert_allclose(lam, full, rtol=0, atol=10 * n * np.finfo(float).eps * full[0])


def test_interval_probability_bound():
    """Violation frequency over 4000 draws: its 99% Clopper-Pearson lower bound must not exceed
    2 exp(-t^2/2) for t in {1.5, 2, 2.5}. Can fail: a too-narrow interval does (the negative
    control, t/n in place of t/sqrt(n) and no sqrt(d/n) shift, is violated on nearly every draw)."""
    r = check_linear_interval(np.random.default_rng(20240601))
    assert r.holds, str(r)
    assert r.details["control_fails"], "the negative control should violate the bound (power check)"


def test_rate_n_to_minus_half():
    """Slope of log max_j |lambda_j d/n - 1| on log n, n = 100..6400, 6 seeds: the 95% CI must lie
    in -1/2 +- 0.1. Fails for a rate n^-1 or n^-1/4."""
    r = check_linear_rate(np.random.default_rng(7))
    assert r.holds, str(r)
