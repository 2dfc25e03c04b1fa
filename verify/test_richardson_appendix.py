"""supp-sec:richardson (Appendix A, "Richardson Iteration").

Statement: for ``A`` positive definite, ``u^{l+1} = u^l + eta D^{-1}(b - A u^l)`` converges iff
``0 < eta < 2/lambda_1(D^{-1}A)``; the optimal step ``eta* = 2/(lambda_1 + lambda_n)`` gives the
factor ``rho* = 1 - 2/(cond + 1)``; for ``0 < eta < 1/lambda_1``,
``||u^L - u*||/||u*|| <= (1 - eta lambda_n)^L <= exp(-(1 - rho) L)``.

Generated cases (:func:`spd_systems`; every number drawn by hypothesis, so failures shrink):
``A = Q diag(lambda) Q'`` with ``lambda`` in ``[0.05, 20]`` (positive definite by construction, the
hypothesis) and ``Q`` the orthogonal QR factor of a drawn matrix, optional positive diagonal ``D``,
and ``b`` exciting every mode of the iteration. Also checks an ambiguity of docs/design.md: the
proof of thm:L growth writes ``rho = 1 - 2/(c_n + 2)``.
"""

import numpy as np
from _array_strategies import FINITE, vectors
from hypothesis import assume, given, target
from hypothesis import strategies as st

from pfntheory.claims.richardson import check_convergence_iff, check_optimal_step, check_rate_bound


def _floats(lo, hi, n):
    return st.lists(st.floats(lo, hi, **FINITE), min_size=n, max_size=n).map(np.array)


@st.composite
def spd_systems(draw, with_D=None):
    """``(A, b, D)`` with every number drawn by hypothesis (failures shrink towards ``n = 2``,
    ``Q = I``, ``lambda = 1``):

    * ``A = Q diag(lambda) Q'``: ``2 <= n <= 12``, ``log lambda_i`` in ``[log 0.05, log 20]``, ``Q``
      the QR factor of a drawn ``n x n`` matrix (entries in ``[-1, 1]``; orthogonal for any matrix);
    * ``D`` (when used) positive diagonal ``exp([-1, 1])``;
    * ``b = A D^{-1/2} P c`` with ``P`` the eigenvectors of ``D^{-1/2} A D^{-1/2}`` and ``|c_i|`` in
      ``[0.1, 3]``: the initial error ``-u* = -A^{-1} b`` has a component along every mode of the
      iteration, as a Gaussian ``b`` has almost surely (a ``b`` orthogonal to the top mode would not
      diverge above the threshold, and the "iff" would be unmeasurable);
    * the spectrum of ``D^{-1} A`` not a single point (cond > 1; at cond = 1 the step
      ``2/lambda_1 x 0.5`` solves in one step, factor 0, where ``check_convergence_iff`` cannot take
      the logarithm of the factor).
    """
    n = draw(st.integers(2, 12))
    lam = np.exp(draw(_floats(np.log(0.05), np.log(20.0), n)))
    Q, _ = np.linalg.qr(draw(vectors((n, n), 1.0)))
    A = (Q * lam) @ Q.T
    A = 0.5 * (A + A.T)
    use_D = draw(st.booleans()) if with_D is None else with_D
    D = np.exp(draw(_floats(-1.0, 1.0, n))) if use_D else None
    r = np.sqrt(np.ones(n) if D is None else D)
    mu, P = np.linalg.eigh(A / np.outer(r, r))
    assume(mu[-1] > mu[0] * (1 + 1e-6))
    signs = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    c = draw(_floats(0.1, 3.0, n)) * np.where(signs, -1.0, 1.0)
    b = A @ ((P @ c) / r)
    return A, b, D


@given(spd_systems())
def test_converges_iff_step_below_2_over_lambda1(sys_):
    """Both sides of the threshold: steps 0.5..0.98 x 2/lambda_1 must converge and 1.05..1.5 x
    must diverge, and the measured factor must respect max|1 - eta lambda_i|. Fails if the
    iteration or the spectrum (eigvalsh of D^-1/2 A D^-1/2) were wrong (a threshold 1.1 x 2/lambda_1
    fails it: the 0.98 step diverges; shrunk to a 2 x 2 diagonal system)."""
    A, b, D = sys_
    r = check_convergence_iff(A, b, D, fractions=(0.5, 0.9, 0.98, 1.05, 1.1, 1.5), L=400)
    assert r.holds, str(r) + str(r.details["rows"])


@given(spd_systems())
def test_optimal_step_and_factor(sys_):
    """eta* attains 1 - 2/(cond+1) (atol 64 eps cond) and no grid step does better; fails for a
    wrong eta* or rho* formula."""
    A, b, D = sys_
    r1, _ = check_optimal_step(A, D)
    assert r1.holds, str(r1)


def test_ambiguity_L_growth_rho_is_not_optimal_factor():
    """docs/design.md ambiguity: the optimal factor is 1 - 2/(cond+1); the proof of thm:L growth's
    1 - 2/(c_n+2) exceeds it by 2/((c+1)(c+2)) (a valid but non-optimal factor, inconsistent with
    the 1 - 2/(c_n+1) used two lines later). Fails if the two coincided or the Appendix formula
    were off."""
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
    16 L eps cond); fails if the error decayed slower than the stated rate (a spectrum whose
    lambda_n is doubled fails it, shrunk to a 2 x 2 diagonal system: b excites the
    lambda_n mode)."""
    A, b, D = sys_
    r = check_rate_bound(A, b, eta_fraction=frac, D=D)
    assert r.holds, str(r)
    target(r.observed, label="relative error / (1 - eta lambda_n)^L")  # hunt near-violations
