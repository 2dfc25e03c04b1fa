"""supp-lem:rbf kernel Gram ridge (RBF kernel with ridge).

Statement: for the unit RBF Gram and ``sigma^2 > 0``,
``(lambda_1 + sigma^2)/(lambda_n + sigma^2) = Theta(n)`` a.s. for large ``n``, via
``(1 + (n-1) rho + sigma^2)/(1 + sigma^2) <= cond(G + sigma^2 I) <= (n + sigma^2)/sigma^2``.

The upper bound and the lower bound with the *empirical* off-diagonal mean hold on every draw
(deterministic sandwich, generalised to amplitude alpha: alpha^2 in place of 1); with the population
``rho`` the lower bound is asymptotic and is checked at moderate ``n``. Generated cases: Gaussian
designs, RBF kernels with positive amplitude and lengthscale, ``sigma^2 > 0``.
"""

import numpy as np
from hypothesis import given, target
from hypothesis import strategies as st

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.conditioning import check_cond_rate, check_ridge_sandwich
from pfntheory.kernels import RBFKernel, expected_rbf_gaussian
from pfntheory.spectral import sample_design

pos = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
cases = st.tuples(
    st.integers(2, 150),
    st.integers(1, 16),
    st.floats(0.2, 3.0, **pos),
    st.floats(0.3, 2.0, **pos),
    st.floats(1e-3, 2.0, **pos),
    st.integers(0, 2**31 - 1),
)


@given(cases)
def test_sandwich_every_draw(c):
    """Deterministic sandwich with the empirical rho on every draw; tolerance 10 n eps cond (1 + n
    alpha^2/s2) (eigen round-off). Fails if the trace bound lambda_1 <= n alpha^2 or the Rayleigh bound
    were misapplied."""
    n, d, ell, alpha, s2, seed = c
    G = RBFKernel(alpha, ell)(sample_design(n, d, np.random.default_rng(seed)))
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
