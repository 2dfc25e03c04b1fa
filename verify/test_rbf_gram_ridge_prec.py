"""supp-lem:rbf kernel Gram ridge prec (RBF kernel with ridge and row normalisation).

Statement: with ``D = diag(s_1, ..., s_n)``, ``s_i = sum_j G_ij``,
``cond(D^{-1}(G + sigma^2 I)) = Theta(n)`` a.s. for large ``n``. The proof: ``lambda_1(D^{-1/2} G
D^{-1/2}) = 1``; ``s_i >= 1``; ``lambda_1 in [1, 1 + sigma^2]``; ``lambda_n in [sigma^2/s_max,
(1 + sigma^2)/s_max]``; ``cond in [s_max/(1 + sigma^2), s_max (1 + sigma^2)/sigma^2]``;
``s_max = Theta(n)``.

Every inequality is checked on every draw for the unit-amplitude kernel (the lemma's). For amplitude
``alpha < 1`` the interval for ``lambda_1`` becomes ``[1, 1 + sigma^2/alpha^2]`` (erratum test).

Generated cases: the inequalities of the proof hold for every design (they use only
``G_ii = alpha^2`` and ``G_ij >= 0``), so the designs are drawn by hypothesis
(``verify/_array_strategies.py``: every coordinate, or a sparse perturbation of coincident or spread
points for ``n d > 400``) and failures shrink; ``2 <= n <= 150``, ``1 <= d <= 16``, lengthscale in
``[0.2, 3]``, ``sigma^2`` in ``[1e-3, 2]``. The ``Theta(n)`` rate and the row-sum limit are claims
about ``x ~ N(0, I/d)`` and keep that law (a seeded generator).
"""

import numpy as np
from _array_strategies import FINITE, kernel_cases
from hypothesis import given, target
from hypothesis import strategies as st

from pfntheory.claims.conditioning import (
    check_cond_rate,
    check_prec_amplitude,
    check_prec_inequalities,
    check_row_sum_limit,
)
from pfntheory.maths.kernels import RBFKernel


def cases():
    """(X, lengthscale, sigma^2): a drawn design (n in [2, 150], d in [1, 16]) and kernel."""
    return kernel_cases(150, (0.2, 3.0), (1e-3, 2.0))


@given(cases())
def test_every_inequality_of_the_proof_unit_kernel(c):
    """All six inequalities on every drawn design (alpha = 1); round-off atol 10 n eps (1 +
    s2/s_min). Fails e.g. if D^{-1} G were not row-stochastic or the e_i Rayleigh bound were wrong
    (halving the upper end of the lambda_n interval of ``prec_bounds`` fails it, shrunk
    to n = 2)."""
    X, ell, s2 = c
    G = RBFKernel(1.0, ell)(X)
    r = check_prec_inequalities(G, s2, 1.0)
    assert r.holds, str(r.details["checks"])
    target(r.observed / r.bound, label="cond / upper bound")  # hunt draws near the upper bound


@given(cases(), st.floats(0.3, 3.0, **FINITE))
def test_general_amplitude_intervals(c, alpha):
    """With amplitude alpha the same chain holds with alpha^2 in place of 1 (s_i >= alpha^2,
    lambda_1 <= 1 + s2/s_min <= 1 + s2/alpha^2, lambda_n <= (alpha^2 + s2)/s_max), on every drawn
    design. Fails as the test above does."""
    X, ell, s2 = c
    G = RBFKernel(alpha, ell)(X)
    r = check_prec_inequalities(G, s2, alpha)
    assert r.holds, str(r.details["checks"])


def test_erratum_lambda1_exceeds_1_plus_s2_when_alpha_below_one():
    """Erratum: for alpha = 0.5 (s2 = 0.2) lambda_1 reaches 1 + s2/alpha^2 = 1.8 > 1 + s2 = 1.2 (two
    far points: exactly; a random d=8 design with ell=0.3: 1.798), so the 'conservative' step
    2/(1+s2) of sec:generalization is not admissible there."""
    r = check_prec_amplitude(np.random.default_rng(1))
    assert r.holds, str(r)


def test_row_sums_track_E_kappa_given_x_not_rho():
    """Ambiguity: the proof writes s_max >= s_i = 1 + (n-1) rho; in fact (s_i-1)/(n-1) -> E_x
    kappa(x_i, x) (within 5 SE with a union factor), which ranges far from rho; s_max >= mean(s) ~
    1 + (n-1) rho is the valid step (n = 2000, d = 16)."""
    r = check_row_sum_limit(np.random.default_rng(2))
    assert r.holds, str(r)


def test_prec_cond_theta_n():
    """thm:cond number via this lemma: slope of log cond(D^-1(G + s2 I)) on log n inside 1 +- 0.2
    (95% CI over 3 seeds, n = 100..400, d = 2, s2 = 0.2)."""
    r = check_cond_rate(np.random.default_rng(5), which="prec")
    assert r.holds, str(r)
