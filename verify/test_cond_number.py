"""thm:cond number.

Statement: with ``x_i ~ N(0, I_d/d)`` for fixed ``d`` and RBF kernel,
``cond(D^{-1}(G + sigma^2 I)) = Theta(n)`` a.s. for large ``n``.

Checked as the slope of log cond on log n (95% t-CI over seeds inside 1 +- 0.2). Also checked: the
Theta(n) claim is consistent with the super-polynomial growth of cond(G) in supp-lem:rbf kernel
Gram, because the ridge caps ``cond(G + sigma^2 I) <= (n + sigma^2)/sigma^2`` and the Jacobi-scaled
condition number is sandwiched by ``s_max`` (numbers in the report).
"""

import numpy as np
import pytest

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.conditioning import check_cond_rate
from pfntheory.claims.gram import check_rbf_cond_growth


@pytest.mark.parametrize(
    "d,ell,s2",
    [(2, 1.0, 0.2), (2, 1.0, DEFAULT_NOISE_VAR), (4, 0.8, 0.2)],
    ids=["d2-unit-s0.2", "d2-unit-s0.04", "d4-l0.8-s0.2"],
)
def test_prec_cond_theta_n(d, ell, s2):
    """Fails for super-linear (e.g. the unridged, super-polynomial) or sub-linear growth."""
    r = check_cond_rate(np.random.default_rng(13), which="prec", d=d, lengthscale=ell, noise_var=s2)
    assert r.holds, str(r)


def test_consistent_with_superpolynomial_cond_G():
    """Same draws: cond(G) grows super-polynomially (float64 window) while cond(G + s2 I) stays
    below (n + s2)/s2 -- the ridge is what makes Theta(n) possible."""
    r = check_rbf_cond_growth(np.random.default_rng(19), d=2, noise_var=0.2)
    assert r.holds, str(r)
    ns = r.details["ns"]
    assert np.all(r.details["ridge_cond_max"] <= (ns + 0.2) / 0.2)
    # where resolved, cond(G) exceeds the ridge cap by orders of magnitude
    res = r.details["resolved"]
    assert np.all(
        np.exp(r.details["mean_log_cond"][res][-1]) > 100 * r.details["ridge_cap"][res][-1]
    )
