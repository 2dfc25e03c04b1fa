"""supp-lem:rbf kernel Gram ridge (RBF kernel with ridge).

Statement: for the unit RBF Gram and ``sigma^2 > 0``,
``(lambda_1 + sigma^2)/(lambda_n + sigma^2) = Theta(n)`` a.s. for large ``n``, via
``(1 + (n-1) rho + sigma^2)/(1 + sigma^2) <= cond(G + sigma^2 I) <= (n + sigma^2)/sigma^2``.

The upper bound and the lower bound with the *empirical* off-diagonal mean hold on every design
(deterministic sandwich, generalised to amplitude alpha: alpha^2 in place of 1), so its designs are
drawn by hypothesis (``verify/_array_strategies.py``; failures shrink): ``2 <= n <= 150``,
``1 <= d <= 16``, RBF kernels with positive amplitude and lengthscale, ``sigma^2 > 0``. With the
population ``rho`` the lower bound is asymptotic, a claim about ``x ~ N(0, I/d)``: it is checked at
moderate ``n`` on draws of that law (a seeded generator), as is the ``Theta(n)`` rate.
"""

import numpy as np
import pytest
from _array_strategies import kernel_cases
from hypothesis import given, target

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.conditioning import check_cond_rate, check_ridge_sandwich
from pfntheory.maths.kernels import RBFKernel, expected_rbf_gaussian
from pfntheory.maths.spectral import sample_design


def cases():
    """(X, lengthscale, alpha, sigma^2): a drawn design (n in [2, 150], d in [1, 16]) and kernel."""
    return kernel_cases(150, (0.2, 3.0), (0.3, 2.0), (1e-3, 2.0))


@given(cases())
def test_sandwich_every_draw(c):
    """Deterministic sandwich with the empirical rho on every drawn design; tolerance 10 n eps cond
    (1 + n alpha^2/s2) (eigen round-off). Fails if the trace bound lambda_1 <= n alpha^2 or the
    Rayleigh bound were misapplied (halving the upper bound fails it, shrunk to n = 2 coincident
    points: the upper bound is attained when all points coincide)."""
    X, ell, alpha, s2 = c
    G = RBFKernel(alpha, ell)(X)
    r = check_ridge_sandwich(G, s2, alpha)
    assert r.holds, str(r)
    target(r.observed / r.bound, label="cond / upper bound")  # hunt draws near the upper bound


def test_sandwich_with_population_rho():
    """The paper's lower bound with rho = E kappa (d=16, unit kernel, s2=0.04) on 10 draws at n in
    {100, 400}: it holds with a wide margin since lambda_n + s2 << 1 + s2."""
    rho = expected_rbf_gaussian(1.0, 1.0, 16)
    rng = np.random.default_rng(2)
    for n in (100, 400):
        for _ in range(5):
            G = RBFKernel()(sample_design(n, 16, rng))
            r = check_ridge_sandwich(G, DEFAULT_NOISE_VAR, 1.0, rho=rho)
            assert r.holds, str(r)


def test_ridge_cond_theta_n():
    """Slope of log cond(G + s2 I) on log n (n=100..400, d=2, s2=0.2, 3 seeds): the 95% CI inside
    1 +- 0.2. Fails for the unridged super-polynomial growth or for a constant."""
    r = check_cond_rate(np.random.default_rng(4), which="ridge")
    assert r.holds, str(r)


def test_rho_outside_its_range_is_refused_not_clipped():
    """A rho above alpha^2 (or below 0) by more than round-off is a wrong input: the check refuses
    it, naming rho, instead of clipping it into [0, alpha^2] (an ulp of excess is taken back)."""
    G = RBFKernel()(np.zeros((3, 2)))  # coincident points: every entry is alpha^2 = 1
    assert check_ridge_sandwich(G, DEFAULT_NOISE_VAR, 1.0, rho=1.0 + 2e-16).holds
    for rho in (1.01, -0.01):
        with pytest.raises(ValueError, match="rho must lie"):
            check_ridge_sandwich(G, DEFAULT_NOISE_VAR, 1.0, rho=rho)
