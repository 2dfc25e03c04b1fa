"""supp-thm:KRR (Standard KRR).

Statement: with ``0 < eta < 1/(lambda_1(G) + sigma^2)`` constant and ``u^(0) = 0``,
``|u^L(x_i) - u*(x_i)| <= exp(-(1-rho)L) lambda_1/(lambda_n + sigma^2) ||Y||`` and
``|u^L(x) - u*(x)| <= exp(-(1-rho)L) ||k_x||/(lambda_n + sigma^2) ||Y||``,
``rho = 1 - eta(lambda_n + sigma^2)``; the proof's closed form
``e^(l)(x) = -k_x'(I - eta(G + sigma^2 I))^l (G + sigma^2 I)^{-1} Y``.

Generated cases: n in [3, 25], d in [1, 5], linear / RBF / ARD RBF kernels with random parameters,
noise variance in [0.01, 1], inputs and query in [-3, 3]^d / sqrt(d), labels in [-3, 3] (all drawn
by hypothesis); eta = f/(lambda_1 + sigma^2)
with f in (0, 1) (the theorem's hypothesis). Tolerances: pfntheory.claims.richardson.roundoff_atol.
"""

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import assume, given, target
from hypothesis import strategies as st

from pfntheory.claims.richardson import check_krr, check_krr_preconditioned
from pfntheory.maths import richardson as rich
from pfntheory.maths.kernels import ARDRBFKernel, LinearKernel, RBFKernel

_f = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def krr_cases(draw, kernels=("linear", "rbf", "ard_rbf")):
    """Every number is drawn by hypothesis (no seeded NumPy generator), so a failure shrinks to a
    small context with simple values. Inputs in [-3, 3]^d / sqrt(d) (the bounds hold for any
    inputs), labels in [-3, 3]."""
    n = draw(st.integers(3, 25))
    d = draw(st.integers(1, 5))
    name = draw(st.sampled_from(kernels))
    s2 = draw(st.floats(0.01, 1.0, **_f))
    frac = draw(st.floats(0.05, 0.99))
    log_scale, log_ell = st.floats(-0.5, 0.5, **_f), st.floats(-1.0, 0.5, **_f)
    if name == "linear":
        k = LinearKernel(
            tuple(np.exp(draw(st.lists(st.floats(-1, 1, **_f), min_size=d, max_size=d))))
        )
    elif name == "rbf":
        k = RBFKernel(float(np.exp(draw(log_scale))), float(np.exp(draw(log_ell))))
    else:
        k = ARDRBFKernel(
            float(np.exp(draw(log_scale))),
            tuple(np.exp(draw(st.lists(log_ell, min_size=d, max_size=d)))),
        )
    X = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-3, 3, **_f))) / np.sqrt(d)
    x = draw(hnp.arrays(np.float64, (d,), elements=st.floats(-3, 3, **_f))) / np.sqrt(d)
    Y = draw(hnp.arrays(np.float64, (n,), elements=st.floats(-3, 3, **_f)))
    return k, X, x, Y, s2, frac


@given(krr_cases())
def test_both_bounds_and_closed_form(case):
    """Training bound, query bound (every L in 1..200) and the closed form of e^(l)(x) to round-off.
    Fails if a recursion, a bound or the closed form were wrong (e.g. a missing sigma^2)."""
    k, X, x, Y, s2, frac = case
    G, k_x = k(X), k(X, x[None])[:, 0]
    for r in check_krr(G, k_x, Y, s2, eta_fraction=frac):
        assert r.holds, str(r)
        if r.key != "krr_closed_form":  # observed = worst error / bound: hunt near-violations
            target(float(r.observed), label=r.key)


def test_fixed_point_matches_sklearn_gp():
    """u*(x) = k_x'(G + s2 I)^{-1} Y equals sklearn's GP posterior mean (optimizer=None), rtol 1e-9
    / atol 1e-10 (two Cholesky solves of a matrix with cond < 1e4); and the recursion reaches it."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    rng = np.random.default_rng(3)
    n, d, s2 = 15, 2, 0.1
    k = RBFKernel(1.2, 0.7)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    x = rng.normal(size=(1, d)) / np.sqrt(d)
    Y = rng.normal(size=n)
    gpr = GaussianProcessRegressor(
        ConstantKernel(1.44, "fixed") * RBF(0.7, "fixed"), alpha=s2, optimizer=None
    ).fit(X, Y)
    G, k_x = k(X), k(X, x)[:, 0]
    _, ux = rich.krr_solution(G, k_x, Y, s2)
    assert np.isclose(ux, gpr.predict(x)[0], rtol=1e-9, atol=1e-10)
    eta = 0.9 / (np.linalg.eigvalsh(G)[-1] + s2)
    path = rich.krr_testing_recursion(G, k_x, Y, s2, eta, 3000)
    assert np.isclose(path[-1], ux, rtol=1e-8, atol=1e-9)


@given(krr_cases(kernels=("rbf", "ard_rbf")))
def test_preconditioned_recursion(case):
    """eqn:recursion prec with D = diag(G 1), s_x = sum k_x: equals preconditioned Richardson and
    has the fixed points of eqn:richardson (bound from the D-norm contraction). Fails if 1/s_x or D
    were misplaced.

    Hypothesis of the query part: |1 - eta sigma^2 / s_x| < 1, i.e. s_x > eta sigma^2 / 2. The paper
    does not state it; without it the query recursion diverges (an erratum, shown in
    verify/test_tfpr_far_query.py), so cases violating it (a query with little kernel mass on the
    context; about 1 draw in 100 here) are excluded with ``assume``."""
    k, X, x, Y, s2, frac = case
    G, k_x = k(X), k(X, x[None])[:, 0]
    eta = frac * rich.admissible_step(G + s2 * np.eye(len(G)), rich.jacobi_preconditioner(G))
    assume(abs(1.0 - eta * s2 / np.sum(k_x)) < 1.0)
    for r in check_krr_preconditioned(G, k_x, Y, s2, eta_fraction=frac, L=1500):
        assert r.holds, str(r)
