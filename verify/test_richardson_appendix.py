"""supp-sec:richardson (Appendix A, "Richardson Iteration").

Statement: for ``A`` positive definite, ``u^{l+1} = u^l + eta D^{-1}(b - A u^l)`` converges iff
``0 < eta < 2/lambda_1(D^{-1}A)``; the optimal step ``eta* = 2/(lambda_1 + lambda_n)`` gives the factor
``rho* = 1 - 2/(cond + 1)``; for ``0 < eta < 1/lambda_1``,
``||u^L - u*||/||u*|| <= (1 - eta lambda_n)^L <= exp(-(1 - rho) L)``.

Generated cases: ``A = Q diag(lambda) Q'`` with random orthogonal ``Q`` and ``lambda`` in
``[0.05, 20]`` (positive definite, the hypothesis), optional positive diagonal ``D``; ``b`` Gaussian.
Also checks the DESIGN.md ambiguity: the proof of thm:L growth writes ``rho = 1 - 2/(c_n + 2)``.
"""

import numpy as np
from hypothesis import given, target
from hypothesis import strategies as st

from pfntheory.claims.richardson import check_convergence_iff, check_optimal_step, check_rate_bound


@st.composite
def spd_systems(draw, with_D=None):
    n = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    lam = np.exp(rng.uniform(np.log(0.05), np.log(20.0), size=n))
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = (Q * lam) @ Q.T
    A = 0.5 * (A + A.T)
    use_D = draw(st.booleans()) if with_D is None else with_D
    D = np.exp(rng.uniform(-1.0, 1.0, size=n)) if use_D else None
    b = rng.normal(size=n)
    return A, b, D


@given(spd_systems())
def test_strategy_satisfies_hypotheses(sys_):
    """The strategy itself: A symmetric positive definite, D positive (fails if it drifted)."""
    A, b, D = sys_
    assert np.allclose(A, A.T, rtol=0, atol=1e-12 * np.abs(A).max())
    assert np.linalg.eigvalsh(A).min() > 0
    assert D is None or np.all(D > 0)


@given(spd_systems())
def test_converges_iff_step_below_2_over_lambda1(sys_):
    """Both sides of the threshold: steps 0.5..0.98 x 2/lambda_1 must converge and 1.05..1.5 x
    must diverge, and the measured factor must respect max|1 - eta lambda_i|. Fails if the
    iteration or the spectrum (eigvalsh of D^-1/2 A D^-1/2) were wrong."""
    A, b, D = sys_
    r = check_convergence_iff(A, b, D, fractions=(0.5, 0.9, 0.98, 1.05, 1.1, 1.5), L=400)
    assert r.holds, str(r) + str(r.details["rows"])


@given(spd_systems())
def test_optimal_step_and_factor(sys_):
    """eta* attains 1 - 2/(cond+1) (atol 64 eps cond) and no grid step does better; fails for a wrong
    eta* or rho* formula."""
    A, b, D = sys_
    r1, _ = check_optimal_step(A, D)
    assert r1.holds, str(r1)


def test_ambiguity_L_growth_rho_is_not_optimal_factor():
    """DESIGN.md ambiguity: the optimal factor is 1 - 2/(cond+1); the proof of thm:L growth's
    1 - 2/(c_n+2) exceeds it by 2/((c+1)(c+2)) (a valid but non-optimal factor, inconsistent with the
    1 - 2/(c_n+1) used two lines later). Fails if the two coincided or the Appendix formula were off."""
    rng = np.random.default_rng(0)
    for cond in (2.0, 10.0, 100.0):
        n = 6
        lam = np.linspace(1.0, cond, n)
        Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        A = (Q * lam) @ Q.T
        A = 0.5 * (A + A.T)
        _, r2 = check_optimal_step(A)
        assert r2.holds, str(r2)
        diff, pred = r2.details["difference"], r2.details["predicted_difference"]
        assert np.isclose(diff, pred, rtol=1e-8, atol=1e-14), (diff, pred)


@given(spd_systems(), st.sampled_from([0.3, 0.6, 0.9, 0.99]))
def test_rate_bound_below_1_over_lambda1(sys_, frac):
    """||u^L-u*||/||u*|| <= (1-eta lambda_n)^L <= exp(-(1-rho)L) for eta = frac/lambda_1 (atol
    16 L eps cond); fails if the error decayed slower than the stated rate."""
    A, b, D = sys_
    r = check_rate_bound(A, b, eta_fraction=frac, D=D)
    assert r.holds, str(r)
    target(r.observed, label="relative error / (1 - eta lambda_n)^L")  # hunt near-violations
