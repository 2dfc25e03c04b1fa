"""Measurements of the Gram-spectrum results of sec:generalization.

Each ``check_*`` function measures one claim (or one erratum) and returns a :class:`ClaimResult`;
``verify/`` asserts on ``holds`` and the notebooks tabulate ``observed``, ``bound`` and ``details``.

Labels covered: supp-lem:lienar kernel Gram, supp-lem:rbf kernel Gram (incl. the Mercer eigenvalue
formula), supp-lem:rbf kernel Gram ridge, supp-lem:rbf kernel Gram ridge prec, thm:lambda1,
fig:stepsize, thm:cond number, thm:L growth, supp-sec:richardson (rho* convention), and the
covariate-shift design of supp-sec:exp additional.

Round-off tolerances: an eigenvalue of a symmetric ``n x n`` matrix from ``eigvalsh`` is accurate to
about ``n eps ||M||_2`` (backward-stable Householder tridiagonalisation), so inequalities between
eigenvalues are checked with ``atol = 10 n eps ||M||_2`` (factor 10 of headroom) and ``rtol = 0``
unless stated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats

from .. import DEFAULT_NOISE_VAR
from .._checks import positive_int
from ..kernels import (
    LinearKernel,
    RBFKernel,
    blr_sigma_diag,
    expected_rbf_gaussian,
    expected_rbf_gaussian_given,
)
from ..richardson import optimal_step, richardson
from ..spectral import (
    RBFMercer,
    admissible_step_curve,
    depth_needed,
    depth_sufficient,
    expected_rbf_uniform,
    lambda1_lower_bound,
    linear_gram_eigenvalues,
    linear_gram_interval,
    prec_bounds,
    prec_spectrum,
    rho_star,
    ridge_cond,
    ridge_cond_bounds,
    sample_design,
    top_eigenvalue,
)
from ..stats import EPS, slope_ci, t_interval
from . import ClaimResult
from .richardson import as_erratum

__all__ = [
    "clopper_pearson",
    "seed_slopes",
    "check_linear_interval",
    "check_linear_rate",
    "check_lambda1_lower",
    "check_lambda1_limit",
    "operator_eigenvalues_quadrature",
    "check_mercer_quadrature",
    "check_mercer_nystrom",
    "check_mercer_truncation",
    "check_rbf_cond_growth",
    "check_ridge_sandwich",
    "check_prec_inequalities",
    "check_cond_rate",
    "check_stepsize_rate",
    "check_stepsize_figure",
    "check_L_growth",
    "check_rho_star_convention",
    "check_depth_inequality_direction",
    "check_prec_amplitude",
    "check_row_sum_limit",
    "check_covariate_shift",
    "check_rho_naming",
]


# --------------------------------------------------------------------------------------------- #
# helpers                                                                                       #
# --------------------------------------------------------------------------------------------- #

def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion ``k/n``."""
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(scipy.stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(scipy.stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def seed_slopes(x, Y, level: float = 0.95) -> tuple[float, tuple[float, float], np.ndarray]:
    """Per-seed least-squares slopes of the rows of ``Y`` (shape (seeds, m)) on ``x`` (shape (m,)),
    their mean and a Student-t confidence interval over seeds."""
    x = np.asarray(x, float)
    Y = np.atleast_2d(np.asarray(Y, float))
    slopes = np.array([slope_ci(x, y)[0] for y in Y])
    m, ci = t_interval(slopes, level)
    return m, ci, slopes


def _tol(n: int, scale: float) -> float:
    return 10.0 * n * EPS * scale  # round-off of eigvalsh, see module docstring


# --------------------------------------------------------------------------------------------- #
# supp-lem:lienar kernel Gram                                                                   #
# --------------------------------------------------------------------------------------------- #

def check_linear_interval(rng: np.random.Generator, n: int = 200, d: int = 4,
                          ts=(1.5, 2.0, 2.5), n_draws: int = 4000, level: float = 0.99) -> ClaimResult:
    """All nonzero eigenvalues of ``X X^T`` lie in the interval of supp-lem:lienar kernel Gram with
    probability ``>= 1 - 2 exp(-t^2/2)``.

    Counts draws with some eigenvalue outside ``[lo, hi]``; the claim fails at ``t`` if the lower
    Clopper-Pearson bound (``level``) of the violation rate exceeds ``2 exp(-t^2/2)``. A negative
    control (an interval narrowed to ``t/n`` in place of ``t/sqrt(n)``) is scored the same way and
    must fail, which shows the count has power.
    """
    n, d, n_draws = positive_int(n, "n"), positive_int(d, "d"), positive_int(n_draws, "n_draws")
    X = sample_design(n, d, rng, size=(n_draws,))
    lam = linear_gram_eigenvalues(X)                               # (n_draws, d)
    per_t, holds, worst = {}, True, 0.0
    control_fails = True
    for t in ts:
        iv = linear_gram_interval(n, d, t)
        bound = 1.0 - iv.prob                                      # 2 exp(-t^2/2)
        k = int(np.sum(np.any((lam < iv.lo) | (lam > iv.hi), axis=1)))
        ci = clopper_pearson(k, n_draws, level)
        ok = ci[0] <= bound
        # negative control: t/sqrt(n) -> t/n (too narrow)
        lo_c = n / d * max(1 - np.sqrt(d / n) - t / n, 0.0) ** 2
        hi_c = n / d * (1 + np.sqrt(d / n) + t / n) ** 2
        lo_c2 = n / d * (1 - t / n) ** 2          # and without the sqrt(d/n) shift of E s_j
        hi_c2 = n / d * (1 + t / n) ** 2
        kc = int(np.sum(np.any((lam < lo_c2) | (lam > hi_c2), axis=1)))
        cc = clopper_pearson(kc, n_draws, level)
        control_fails &= cc[0] > bound
        per_t[float(t)] = dict(violations=k, rate=k / n_draws, ci=ci, bound=bound, lo=iv.lo, hi=iv.hi,
                               control_rate=kc / n_draws, control_interval=(lo_c2, hi_c2),
                               narrow_interval=(lo_c, hi_c))
        holds &= ok
        worst = max(worst, k / n_draws / bound)
    return ClaimResult(key="linear_interval",
        label="supp-lem:lienar kernel Gram",
        statement="P(all lambda_j(XX^T) in [n/d(1-sqrt(d/n)-t/sqrt n)^2, n/d(1+sqrt(d/n)+t/sqrt n)^2]) >= 1-2e^{-t^2/2}",
        holds=bool(holds), observed=worst, bound=1.0,
        tolerance=f"Clopper-Pearson {level:.0%} lower bound of the violation rate <= 2e^(-t^2/2)",
        details=dict(n=n, d=d, n_draws=n_draws, per_t=per_t, control_fails=bool(control_fails)),
    )


def check_linear_rate(rng: np.random.Generator, ns=(100, 200, 400, 800, 1600, 3200, 6400), d: int = 4,
                      n_seeds: int = 6, reps: int = 20, band=(-0.6, -0.4)) -> ClaimResult:
    """``lambda_j d/n - 1 = O_P(n^{-1/2})`` (supp-lem:lienar kernel Gram): per seed, the slope of
    ``log mean_reps max_j |lambda_j d/n - 1|`` on ``log n``; the t-CI over seeds must lie in ``band``
    (-1/2 +- 0.1: the next term of ``(1 + sqrt(d/n))^2 - 1`` is ``d/n``, which moves the local slope
    by at most ``sqrt(d/n_min)/2 = 0.1`` at ``n_min = 100``, ``d = 4``)."""
    ns = np.asarray(ns)
    dev = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        for i, n in enumerate(ns):
            lam = linear_gram_eigenvalues(sample_design(int(n), d, rng, size=(reps,)))
            dev[s, i] = np.mean(np.max(np.abs(lam * d / n - 1.0), axis=1))
    m, ci, slopes = seed_slopes(np.log(ns), np.log(dev))
    return ClaimResult(key="linear_rate",
        label="supp-lem:lienar kernel Gram",
        statement="lambda_j = (1 + O_P(n^-1/2)) n/d: slope of log|lambda_j d/n - 1| vs log n is -1/2",
        holds=bool(band[0] <= ci[0] and ci[1] <= band[1]), observed=m, bound=-0.5, ci=ci,
        tolerance=f"95% t-CI over {n_seeds} seeds inside {band}",
        details=dict(ns=ns, slopes=slopes, mean_dev=dev.mean(axis=0), d=d),
    )


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram: lambda_1                                                           #
# --------------------------------------------------------------------------------------------- #

def check_lambda1_lower(G) -> ClaimResult:
    """``lambda_1(G) >= 1'G1/n`` for one Gram ``G`` (Rayleigh quotient; supp-lem:rbf kernel Gram).
    Tolerance ``10 n eps lambda_1`` (round-off of both sides)."""
    G = np.asarray(G, float)
    n = G.shape[0]
    lam1 = float(np.linalg.eigvalsh(G)[-1])
    lb = float(lambda1_lower_bound(G))
    return ClaimResult(key="lambda1_lower",
        label="supp-lem:rbf kernel Gram", statement="lambda_1(G) >= 1'G1/n",
        holds=bool(lam1 >= lb - _tol(n, lam1)), observed=lam1, bound=lb,
        tolerance="atol 10 n eps lambda_1, rtol 0", details=dict(n=n, gap=lam1 - lb),
    )


def check_lambda1_limit(rng: np.random.Generator, ns=(200, 800), d: int = 2,
                        lengthscale: float = 1.0, alpha: float = 1.0, n_seeds: int = 8,
                        k_se: float = 4.0) -> ClaimResult:
    """``lambda_1(G)/n -> mu_0`` (the top Mercer eigenvalue), while ``1'G1/n^2 -> rho = E kappa``.

    The lemma only needs ``lambda_1 >~ n``; its lower bound ``1'G1/n ~ n rho`` is not the limit of
    ``lambda_1``: ``rho = <1, T 1> <= mu_0`` with equality only if the constant is an eigenfunction.
    Holds if at the largest ``n`` the seed mean of ``lambda_1/n`` is within ``k_se`` standard errors
    (over seeds) plus a bias allowance ``alpha^2/n`` of ``mu_0``, and farther than that from ``rho``;
    and ``1'G1/n^2`` is within the same tolerance of ``rho``.
    """
    ns = np.asarray(ns)
    mer = RBFMercer(d, lengthscale, None, alpha)
    mu0 = float(mer.eig_degree(0))
    rho = expected_rbf_gaussian(alpha, lengthscale, d)
    k = RBFKernel(alpha, lengthscale)
    r1 = np.empty((n_seeds, ns.size))
    r2 = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        for i, n in enumerate(ns):
            G = k(sample_design(int(n), d, rng))
            r1[s, i] = top_eigenvalue(G) / n
            r2[s, i] = G.sum() / n**2
    m1, se1 = r1[:, -1].mean(), r1[:, -1].std(ddof=1) / np.sqrt(n_seeds)
    m2, se2 = r2[:, -1].mean(), r2[:, -1].std(ddof=1) / np.sqrt(n_seeds)
    tol1 = k_se * se1 + alpha**2 / ns[-1]
    tol2 = k_se * se2 + alpha**2 / ns[-1]
    holds = abs(m1 - mu0) <= tol1 and abs(m1 - rho) > tol1 and abs(m2 - rho) <= tol2
    return ClaimResult(key="lambda1_limit",
        label="supp-lem:rbf kernel Gram",
        statement="lambda_1(G)/n -> mu_0 (top Mercer eigenvalue) > rho = lim 1'G1/n^2",
        holds=bool(holds), observed=float(m1), bound=mu0, ci=(float(m1 - tol1), float(m1 + tol1)),
        tolerance=f"{k_se} SE over {n_seeds} seeds + alpha^2/n (O(1/n) bias)",
        details=dict(ns=ns, mu0=mu0, rho=rho, lambda1_over_n=r1.mean(0), ones_over_n2=r2.mean(0),
                     rms_to_mu0=np.sqrt(np.mean((r1 - mu0) ** 2, axis=0)), se=float(se1)),
    )


# --------------------------------------------------------------------------------------------- #
# Mercer eigenvalues                                                                            #
# --------------------------------------------------------------------------------------------- #

def operator_eigenvalues_quadrature(d: int, lengthscale: float, var: float, n_nodes: int,
                                    alpha: float = 1.0) -> np.ndarray:
    """Eigenvalues of the integral operator ``(T f)(x) = E_{x'} kappa(x, x') f(x')``, ``x' ~ N(0, var I_d)``,
    by tensor Gauss-Hermite quadrature with ``n_nodes`` per coordinate (Nystrom method with
    quadrature weights; converges exponentially fast for the analytic RBF kernel). An independent
    reference for the Mercer formula: it uses only the kernel and the measure. Descending, shape
    ``(n_nodes**d,)``."""
    z, w = np.polynomial.hermite_e.hermegauss(n_nodes)             # weight exp(-z^2/2)
    x1 = np.sqrt(var) * z
    w1 = w / np.sqrt(2.0 * np.pi)
    grids = np.meshgrid(*([x1] * d), indexing="ij")
    X = np.stack([g.ravel() for g in grids], axis=1)               # (n_nodes^d, d)
    W = np.ones(X.shape[0])
    for wg in np.meshgrid(*([w1] * d), indexing="ij"):
        W = W * wg.ravel()
    K = RBFKernel(alpha, lengthscale)(X)
    r = np.sqrt(W)
    return np.linalg.eigvalsh(r[:, None] * K * r[None, :])[::-1]


def check_mercer_quadrature(d: int = 2, lengthscale: float = 1.0, var: float | None = None,
                            alpha: float = 1.0, n_nodes: int = 30, n_degrees: int = 5,
                            rtol: float = 1e-9) -> ClaimResult:
    """The Mercer eigenvalues ``alpha^2 mercer_alpha^{d/2} beta^k`` with multiplicity ``C(k+d-1, d-1)``
    (proof of supp-lem:rbf kernel Gram; 1/a = 4 sigma^2, 1/b = 2 ell^2) against Gauss-Hermite
    operator eigenvalues, for degrees ``k < n_degrees``: every eigenvalue of the block within
    ``max(rtol, 10 x quadrature error)``, the quadrature error estimated by refining the rule from
    ``n_nodes - 6`` to ``n_nodes`` nodes (it converges exponentially for the analytic kernel; the
    floor ``rtol = 1e-9`` leaves room for the ``n eps`` round-off of ``eigvalsh`` relative to the
    smallest checked eigenvalue).

    ``details['conventions']`` scores the alternatives ``1/a = 2 sigma^2`` and ``1/b = ell^2``, which
    must fail (the test has power to tell the conventions apart). Rescaling ``a`` and ``b`` together
    leaves the eigenvalues unchanged (they depend on ``a/b = ell^2/(2 sigma^2)`` only); the
    eigenfunctions (R&W eq. 4.42) do see it, and the kernel-reconstruction test checks them.
    """
    var = 1.0 / d if var is None else float(var)
    mer = RBFMercer(d, lengthscale, var, alpha)
    ref = operator_eigenvalues_quadrature(d, lengthscale, var, n_nodes, alpha)
    T = int(sum(int(mer.multiplicity(k)) for k in range(n_degrees)))
    pred = mer.eigenvalues(T)
    rel = np.abs(ref[:T] / pred - 1.0)
    # quadrature error estimate: change when the rule is refined from n_nodes - 6 to n_nodes nodes
    coarse = operator_eigenvalues_quadrature(d, lengthscale, var, n_nodes - 6, alpha)[:T]
    quad_err = float(np.max(np.abs(coarse / ref[:T] - 1.0)))
    rtol = max(rtol, 10.0 * quad_err)
    # multiplicity: the number of quadrature eigenvalues within rtol of each distinct value
    mult_ok = all(int(np.sum(np.abs(ref / float(mer.eig_degree(k)) - 1) < 1e-6)) == int(mer.multiplicity(k))
                  for k in range(n_degrees))

    def alt(a_scale, b_scale):
        # eigenvalues under a different reading of a, b: 1/a = 4 var * a_scale, 1/b = 2 ell^2 * b_scale
        m2 = RBFMercer(d, lengthscale * np.sqrt(b_scale), var * a_scale, alpha)
        return float(np.max(np.abs(ref[:T] / m2.eigenvalues(T) - 1.0)))

    # the eigenvalues depend on a/b only (2a/A and b/A are homogeneous of degree 0), so rescaling
    # a and b together is invisible here; each one alone is not.
    conventions = {"1/a=4s2,1/b=2l2 (paper)": float(rel.max()),
                   "1/a=2s2": alt(0.5, 1.0), "1/b=l2": alt(1.0, 0.5)}
    return ClaimResult(key="mercer_quadrature",
        label="supp-lem:rbf kernel Gram",
        statement="Mercer eigenvalues of RBF under N(0, var I): alpha^{d/2} beta^k, multiplicity C(k+d-1,d-1)",
        holds=bool(rel.max() <= rtol and mult_ok), observed=float(rel.max()), bound=rtol,
        tolerance=f"rtol {rtol:.3g} vs {n_nodes}^{d}-node Gauss-Hermite operator eigenvalues, atol 0",
        details=dict(d=d, lengthscale=lengthscale, var=var, T=T, multiplicities_ok=mult_ok, quad_err=quad_err,
                     conventions=conventions, top=ref[:T], formula=pred),
    )


def check_mercer_nystrom(rng: np.random.Generator, n: int = 1000, d: int = 2, lengthscale: float = 1.0,
                         n_seeds: int = 2, n_degrees: int = 3, k_se: float = 4.0) -> ClaimResult:
    """Nystrom check: ``eigvalsh(G)/n`` grouped by degree block (sizes ``C(k+d-1, d-1)``) against
    ``m_k mu^{(k)}``.

    First-order perturbation gives the block sum as ``(1/n) sum_i sum_{|i|=k} mu^{(k)} phi_i(x_i)^2``,
    whose CLT standard error ``SE_k`` is estimated from the Mercer features at the same points; the
    claim holds if the mean over seeds is within ``k_se`` standard errors (pooled over seeds) plus a
    second-order allowance ``mu_0 m_k / n`` of the prediction.
    """
    mer = RBFMercer(d, lengthscale)
    kern = RBFKernel(1.0, lengthscale)
    sums = np.zeros((n_seeds, n_degrees))
    ses = np.zeros((n_seeds, n_degrees))
    sizes = [int(mer.multiplicity(k)) for k in range(n_degrees)]
    starts = np.cumsum([0] + sizes)
    for s in range(n_seeds):
        X = sample_design(n, d, rng)
        lam = np.linalg.eigvalsh(kern(X))[::-1] / n
        Phi = mer.features(X, n_degrees)                            # (n, T_<K)
        for k in range(n_degrees):
            sums[s, k] = lam[starts[k]:starts[k + 1]].sum()
            blk = np.sum(Phi[:, starts[k]:starts[k + 1]] ** 2, axis=1)  # sum_{|i|=k} mu phi_i(x)^2
            ses[s, k] = blk.std(ddof=1) / np.sqrt(n)
    pred = np.array([float(mer.eig_degree(k)) * sizes[k] for k in range(n_degrees)])
    se = np.sqrt(np.mean(ses**2, axis=0) / n_seeds)
    allow = float(mer.eig_degree(0)) * np.array(sizes) / n
    z = np.abs(sums.mean(0) - pred) / se
    holds = np.all(np.abs(sums.mean(0) - pred) <= k_se * se + allow)
    return ClaimResult(key="mercer_nystrom",
        label="supp-lem:rbf kernel Gram",
        statement="eigvalsh(G)/n (degree blocks) -> Mercer eigenvalues m_k alpha^{d/2} beta^k",
        holds=bool(holds), observed=float(z.max()), bound=k_se,
        tolerance=f"{k_se} CLT standard errors (first-order perturbation, pooled over {n_seeds} seeds) + mu_0 m_k/n",
        details=dict(n=n, d=d, block_sums=sums.mean(0), predicted=pred, se=se, z=z),
    )


def check_mercer_truncation(rng: np.random.Generator, n: int = 60, d: int = 2, M: int | None = None,
                            lengthscale: float = 1.0, n_seeds: int = 20, q: float | None = None,
                            n_quad: int = 40) -> ClaimResult:
    """The chain of the proof of supp-lem:rbf kernel Gram for one ``T = T_{<M} < n``:
    ``lambda_{T+1}(G) <= lambda_1(R_{>T}) <= tr R_{>T}`` on every draw (``R = G - Phi Phi^T``, with the
    Mercer features ``Phi`` of degree ``< M``), ``lambda_{T+1}(G_{<M}) = 0``,
    ``E tr R_{>T} = n sum_{t > T} mu_t`` (within ``k_se`` Monte-Carlo SE over draws), and the tail
    sum below the bound ``C beta^M M^{d-1}`` (supp-eqn:q)."""
    mer = RBFMercer(d, lengthscale)
    M = mer.max_degree_below(n) if M is None else positive_int(M, "M")
    T = mer.T_less(M)
    if not T < n:
        raise ValueError(f"M too large: T_<M = {T} >= n = {n}")
    kern = RBFKernel(1.0, lengthscale)
    chain_ok, rank_ok = True, True
    traces_l: list[float] = []
    margins: list[float] = []
    for _ in range(n_seeds):
        X = sample_design(n, d, rng)
        G = kern(X)
        Phi = mer.features(X, M)
        R = G - Phi @ Phi.T
        lamG = np.linalg.eigvalsh(G)[::-1]
        lamR = np.linalg.eigvalsh(R)[::-1]
        lamT = np.linalg.eigvalsh(Phi @ Phi.T)[::-1]
        tol = _tol(n, lamG[0])
        trR = float(np.trace(R))
        chain_ok &= bool(lamG[T] <= lamR[0] + tol and lamR[0] <= trR + tol and lamR[-1] >= -tol)
        rank_ok &= bool(abs(lamT[T]) <= tol)
        traces_l.append(trR)
        margins.append(lamG[T] / trR)
    traces = np.asarray(traces_l)
    tail = mer.tail_sum(M)
    # E r(x) = E[kappa(x,x) - kappa_<M(x,x)] by tensor Gauss-Hermite quadrature (the per-point residual
    # is heavy-tailed, so a Monte-Carlo mean over a few draws is not a reliable check of the identity)
    z, w = np.polynomial.hermite_e.hermegauss(n_quad)
    grids = np.meshgrid(*([np.sqrt(mer.variance) * z] * d), indexing="ij")
    Xq = np.stack([g.ravel() for g in grids], axis=1)
    Wq = np.ones(Xq.shape[0])
    for wg in np.meshgrid(*([w / np.sqrt(2 * np.pi)] * d), indexing="ij"):
        Wq = Wq * wg.ravel()
    Phq = mer.features(Xq, M)
    e_r = float(np.sum(Wq * (1.0 - np.sum(Phq * Phq, axis=1))))
    mc_ok = abs(e_r - tail) <= 1e-8 * tail + 1e-14
    se = traces.std(ddof=1) / np.sqrt(n_seeds)
    ratio = mer.beta * (1 + (d - 1) / (M + 1))
    q = 0.5 * (ratio + 1.0) if q is None else q
    bound_ok = ratio < 1 and tail <= mer.tail_bound(M, q)
    return ClaimResult(key="mercer_truncation",
        label="supp-lem:rbf kernel Gram",
        statement="lambda_n(G) <= lambda_{T+1}(G) <= lambda_1(R_>T) <= tr R_>T, E tr R = n sum_{t>T} mu_t <= n C beta^M M^{d-1}",
        holds=bool(chain_ok and rank_ok and mc_ok and bound_ok), observed=float(traces.mean()),
        bound=float(n * tail), tolerance="eigen round-off 10 n eps lambda_1; E r(x) by quadrature, rtol 1e-8",
        details=dict(n=n, d=d, M=M, T=T, tail=tail, tail_bound=mer.tail_bound(M, q) if bound_ok else None,
                     chain_ok=chain_ok, rank_ok=rank_ok, expectation_ok=bool(mc_ok), E_r_quadrature=e_r,
                     mean_trace_over_n=float(traces.mean() / n), se=se,
                     max_lambda_T1_over_trace=float(np.max(margins))),
    )


def check_rbf_cond_growth(rng: np.random.Generator, d: int = 2, ns=(6, 9, 12, 16, 20, 25, 30, 36, 45, 60),
                          n_seeds: int = 30, noise_var: float = DEFAULT_NOISE_VAR, floor_factor: float = 100.0
                          ) -> ClaimResult:
    """Super-polynomial growth of ``cond(G)`` (supp-lem:rbf kernel Gram), where float64 can see it.

    ``lambda_n(G)`` is resolved only while it exceeds the round-off floor ``n eps lambda_1``; an ``n`` is
    kept only if every draw has ``lambda_n > floor_factor * n eps lambda_1`` (``details`` records the
    first ``n`` that is not). On the resolved window, with ``y = mean_seeds log cond(G)``: (i) the fit
    ``y = a + b log n + c (log n)^2`` has ``c > 0`` with its 95% CI above 0 (convex in log-log: the local
    polynomial degree keeps growing, so no polynomial bound fits), and (ii)
    ``y + (2 + (d-1)/d) log n`` regressed on ``n^{1/d}`` has slope ``gamma_hat`` with CI above 0 (the
    shape ``exp(gamma n^{1/d})/n^{2+(d-1)/d}`` of the lemma). Also records
    ``cond(G + s2 I) <= (n + s2)/s2`` at the same ``n``: the ridge caps the growth (consistency of the
    lemma with thm:cond number).
    """
    kern = RBFKernel()
    ns = np.asarray(ns)
    logc_l: list[float] = []
    ridge: list[float] = []
    resolved_l: list[bool] = []
    for n in ns:
        c, r, ok = [], [], True
        for _ in range(n_seeds):
            G = kern(sample_design(int(n), d, rng))
            lam = np.linalg.eigvalsh(G)
            ok &= bool(lam[0] > floor_factor * n * EPS * lam[-1])
            c.append(np.log(lam[-1] / lam[0]) if lam[0] > 0 else np.inf)
            r.append((lam[-1] + noise_var) / (max(lam[0], 0.0) + noise_var))
        logc_l.append(float(np.mean(c)))
        ridge.append(np.max(r))
        resolved_l.append(ok)
    resolved = np.asarray(resolved_l)
    logc = np.asarray(logc_l)
    idx = np.flatnonzero(resolved)
    nn, y = ns[idx].astype(float), logc[idx]
    # (i) curvature in log-log
    Xd = np.stack([np.ones_like(nn), np.log(nn), np.log(nn) ** 2], axis=1)
    coef, *_ = np.linalg.lstsq(Xd, y, rcond=None)
    res = y - Xd @ coef
    dof = max(len(y) - 3, 1)
    cov = np.linalg.inv(Xd.T @ Xd) * float(res @ res) / dof
    half = scipy.stats.t.ppf(0.975, dof) * np.sqrt(cov[2, 2])
    curv_ci = (float(coef[2] - half), float(coef[2] + half))
    # (ii) gamma_hat
    gamma_hat, gci, _ = slope_ci(nn ** (1.0 / d), y + (2 + (d - 1) / d) * np.log(nn))
    ridge_ok = bool(np.all(np.asarray(ridge) <= (ns + noise_var) / noise_var * (1 + 1e-9)))
    first_bad = int(ns[~resolved][0]) if np.any(~resolved) else None
    mer = RBFMercer(d)
    return ClaimResult(key="rbf_cond_growth",
        label="supp-lem:rbf kernel Gram",
        statement="cond(G) >~ exp(gamma n^{1/d}) / n^{2+(d-1)/d} (super-polynomial)",
        holds=bool(idx.size >= 5 and curv_ci[0] > 0 and gci[0] > 0 and ridge_ok), observed=float(gamma_hat),
        bound=0.0, ci=gci,
        tolerance=(f"only n with lambda_n > {floor_factor:g} n eps lambda_1 on all {n_seeds} draws (float64 floor); "
                   "95% CIs of the log-log curvature and of gamma_hat above 0"),
        details=dict(d=d, ns=ns, mean_log_cond=logc, resolved=resolved, curvature=float(coef[2]),
                     curvature_ci=curv_ci, local_slopes=np.diff(y) / np.diff(np.log(nn)),
                     ridge_cond_max=np.asarray(ridge), ridge_cap=(ns + noise_var) / noise_var,
                     first_unresolved_n=first_bad, beta=mer.beta, log_inv_beta=float(-np.log(mer.beta))),
    )


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram ridge                                                                #
# --------------------------------------------------------------------------------------------- #

def check_ridge_sandwich(G, noise_var: float, alpha: float = 1.0, rho: float | None = None) -> ClaimResult:
    """``(alpha^2 + (n-1) rho + s2)/(alpha^2 + s2) <= cond(G + s2 I) <= (n alpha^2 + s2)/s2`` for one
    RBF Gram (supp-lem:rbf kernel Gram ridge). ``rho`` defaults to the empirical off-diagonal mean
    (then the sandwich is deterministic); pass ``E kappa`` for the paper's (asymptotic) version.
    Tolerance: ``rtol = 10 n eps cond`` (relative round-off of the eigenvalue ratio)."""
    G = np.asarray(G, float)
    n = G.shape[0]
    a2 = alpha**2
    rho_hat = (G.sum() - np.trace(G)) / (n * (n - 1)) if rho is None else rho
    lo, hi = ridge_cond_bounds(n, max(rho_hat, 0.0), noise_var, alpha)
    c = ridge_cond(G, noise_var)
    tol = 10 * n * EPS * c * (1 + a2 * n / noise_var)
    return ClaimResult(key="ridge_sandwich",
        label="supp-lem:rbf kernel Gram ridge",
        statement="(1+(n-1)rho+s2)/(1+s2) <= cond(G+s2 I) <= (n+s2)/s2",
        holds=bool(lo - tol <= c <= hi + tol), observed=c, bound=hi,
        tolerance="atol 10 n eps cond (1 + n alpha^2/s2), rtol 0",
        details=dict(n=n, lo=lo, hi=hi, rho=float(rho_hat), lo_slack=c / lo, hi_slack=hi / c),
    )


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram ridge prec                                                           #
# --------------------------------------------------------------------------------------------- #

def check_prec_inequalities(G, noise_var: float, alpha: float = 1.0) -> ClaimResult:
    """Every inequality of the proof of supp-lem:rbf kernel Gram ridge prec on one Gram:
    ``s_i >= alpha^2``; ``lambda_1(D^{-1/2} G D^{-1/2}) = 1``; ``lambda_1 in [1, 1 + s2/s_min]`` and in the
    paper's ``[1, 1 + s2/alpha^2]``; ``lambda_n in [s2/s_max, (alpha^2 + s2)/s_max]``; and the cond
    interval. Round-off: ``atol = 10 n eps (1 + s2/s_min)`` on eigenvalues of the scaled matrix
    (norm ``<= 1 + s2/s_min``), relative ``10 n eps cond`` on the condition number."""
    G = np.asarray(G, float)
    n = G.shape[0]
    sp = prec_spectrum(G, noise_var)
    b = prec_bounds(sp.s, noise_var, alpha)
    tol = _tol(n, 1.0 + noise_var / sp.s_min)
    ctol = 10 * n * EPS * sp.cond * (1 + sp.cond)
    checks = {
        "s_i >= alpha^2": sp.s_min >= alpha**2 * (1 - 10 * n * EPS),
        "lambda_1(A~) = 1": abs(sp.lambda_1_A - 1.0) <= tol,
        "lambda_1 in [1, 1+s2/s_min]": b.lambda1[0] - tol <= sp.lambda_1 <= b.lambda1[1] + tol,
        "lambda_1 in [1, 1+s2/alpha^2]": b.lambda1_paper[0] - tol <= sp.lambda_1 <= b.lambda1_paper[1] + tol,
        "lambda_n in [s2/s_max, (alpha^2+s2)/s_max]": b.lambda_n[0] - tol <= sp.lambda_n <= b.lambda_n[1] + tol,
        "cond in [s_max/(alpha^2+s2), s_max(alpha^2+s2)/(alpha^2 s2)]": b.cond[0] - ctol <= sp.cond <= b.cond[1] + ctol,
    }
    return ClaimResult(key="prec_inequalities",
        label="supp-lem:rbf kernel Gram ridge prec",
        statement="lambda_1 in [1,1+s2], lambda_n in [s2/s_max,(1+s2)/s_max], cond in [s_max/(1+s2), s_max(1+s2)/s2]",
        holds=bool(all(checks.values())), observed=sp.cond, bound=b.cond[1],
        tolerance="atol 10 n eps (1 + s2/s_min) on eigenvalues, 10 n eps cond^2 on cond",
        details=dict(n=n, checks={k: bool(v) for k, v in checks.items()}, lambda_1=sp.lambda_1,
                     lambda_n=sp.lambda_n, s_min=sp.s_min, s_max=sp.s_max, cond_interval=b.cond),
    )


def check_cond_rate(rng: np.random.Generator, which: str = "prec", ns=(100, 200, 400), d: int = 2,
                    lengthscale: float = 1.0, noise_var: float = 0.2, n_seeds: int = 3,
                    band=(0.8, 1.2)) -> ClaimResult:
    """``cond = Theta(n)``: per-seed slope of ``log cond`` on ``log n`` for the Jacobi-preconditioned
    (``which="prec"``, thm:cond number / supp-lem:rbf kernel Gram ridge prec) or the ridge
    (``which="ridge"``, supp-lem:rbf kernel Gram ridge) system; the 95% t-CI over seeds must lie in
    ``band``. The band (1 +- 0.2) is a pre-asymptotic allowance: the ratio ``cond/n`` converges but is
    only sandwiched in a factor ``(1 + s2)^2/s2`` at finite ``n``; ``details`` holds the measured slopes.
    """
    if which not in ("prec", "ridge"):
        raise ValueError(f"which must be 'prec' or 'ridge', got {which!r}")
    ns = np.asarray(ns)
    kern = RBFKernel(1.0, lengthscale)
    C = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        for i, n in enumerate(ns):
            G = kern(sample_design(int(n), d, rng))
            C[s, i] = prec_spectrum(G, noise_var).cond if which == "prec" else ridge_cond(G, noise_var)
    m, ci, slopes = seed_slopes(np.log(ns), np.log(C))
    label = "thm:cond number" if which == "prec" else "supp-lem:rbf kernel Gram ridge"
    return ClaimResult(key=f"cond_rate_{which}",
        label=label, statement=f"cond of the {which} system = Theta(n): slope of log cond vs log n is 1",
        holds=bool(band[0] <= ci[0] and ci[1] <= band[1]), observed=m, bound=1.0, ci=ci,
        tolerance=f"95% t-CI over {n_seeds} seeds inside {band}",
        details=dict(ns=ns, d=d, lengthscale=lengthscale, noise_var=noise_var, slopes=slopes,
                     mean_cond=C.mean(0)),
    )


# --------------------------------------------------------------------------------------------- #
# thm:lambda1, fig:stepsize                                                                     #
# --------------------------------------------------------------------------------------------- #

def check_stepsize_rate(rng: np.random.Generator, kernel: str | RBFKernel | LinearKernel = "rbf",
                        ns=(100, 200, 400, 800), d: int = 16, noise_var: float = DEFAULT_NOISE_VAR, n_seeds: int = 3, band=(-1.1, -0.9)) -> ClaimResult:
    """thm:lambda1: the admissible step ``2/(lambda_1(G) + s2)`` is of order ``1/n``: per seed, the slope
    of log step on log n; the 95% t-CI over seeds must lie in ``band``. For the linear kernel
    ``lambda_1 ~ (sqrt(n) + sqrt(d))^2/d`` approaches ``n/d`` only as ``sqrt(d/n) -> 0``, so use
    ``n >> d`` (the local slope is ``-1 + sqrt(d/n)/(1 + sqrt(d/n))`` roughly).

    ``kernel``: ``"rbf"`` (alpha 1, ell 0.8, sec:sims), ``"linear"`` (Sigma = I, the lemma) or
    ``"blr"`` (Sigma by thirds, supp-sec:exp details), or a kernel object.
    """
    kern: RBFKernel | LinearKernel
    if kernel == "rbf":
        kern = RBFKernel(1.0, 0.8)
    elif kernel == "linear":
        kern = LinearKernel((1.0,) * d)
    elif kernel == "blr":
        kern = LinearKernel(blr_sigma_diag(d))
    elif isinstance(kernel, (RBFKernel, LinearKernel)):
        kern = kernel
    else:
        raise ValueError(f"kernel must be 'rbf', 'linear', 'blr' or a kernel object, got {kernel!r}")
    ns = np.asarray(ns)
    S = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        S[s] = admissible_step_curve(kern, ns, d, noise_var, 1, rng).mean
    m, ci, slopes = seed_slopes(np.log(ns), np.log(S))
    return ClaimResult(key=f"stepsize_rate_{kernel if isinstance(kernel, str) else kern.name}",
        label="thm:lambda1", statement=f"admissible step 2/(lambda_1+s2) = Theta(1/n) ({kern.name}, d={d})",
        holds=bool(band[0] <= ci[0] and ci[1] <= band[1]), observed=m, bound=-1.0, ci=ci,
        tolerance=f"95% t-CI over {n_seeds} seeds inside {band}",
        details=dict(ns=ns, d=d, slopes=slopes, mean_step=S.mean(0), n_times_step=S.mean(0) * ns),
    )


def check_stepsize_figure(rng: np.random.Generator, ns=tuple(range(100, 1001, 100)), d: int = 16,
                          noise_var: float = 0.2, n_trials: int = 5, lengthscale: float = 0.8
                          ) -> ClaimResult:
    """fig:stepsize: the averaged admissible step against ``n`` for ``d = 16`` (RBF with the paper's
    ``ell`` and the BLR linear kernel), with the ``1/n`` reference. Holds if the mean curve is
    decreasing for both kernels, the RBF curve has log-log slope within 0.1 of -1, and the RBF
    ``n * step`` approaches ``2/mu_0`` (within 10% at the largest ``n``)."""
    out: dict[str, dict[str, Any]] = {}
    for name, kern in (("rbf", RBFKernel(1.0, lengthscale)), ("blr", LinearKernel(blr_sigma_diag(d)))):
        cur = admissible_step_curve(kern, ns, d, noise_var, n_trials, rng)
        sl = slope_ci(np.log(cur.ns), np.log(cur.mean))
        out[name] = dict(ns=cur.ns, mean=cur.mean, std=cur.std, reference=cur.reference, limit=cur.limit,
                         slope=sl[0], slope_ci=sl[1], decreasing=bool(np.all(np.diff(cur.mean) < 0)))
    mu0 = float(RBFMercer(d, lengthscale).eig_degree(0))
    ratio = out["rbf"]["mean"][-1] * ns[-1] / (2.0 / mu0)
    holds = (out["rbf"]["decreasing"] and out["blr"]["decreasing"] and abs(out["rbf"]["slope"] + 1) < 0.1
             and abs(ratio - 1) < 0.1)
    return ClaimResult(key="stepsize_figure",
        label="fig:stepsize", statement="admissible step decreases like 1/n (d=16)",
        holds=bool(holds), observed=float(out["rbf"]["slope"]), bound=-1.0,
        tolerance="RBF slope within 0.1 of -1; n*step within 10% of 2/mu_0 at n_max",
        details=dict(curves=out, rbf_n_step_over_limit=float(ratio), noise_var=noise_var, n_trials=n_trials),
    )


# --------------------------------------------------------------------------------------------- #
# thm:L growth                                                                                  #
# --------------------------------------------------------------------------------------------- #

def check_L_growth(rng: np.random.Generator, ns=(50, 100, 200, 400), d: int = 2, lengthscale: float = 1.0,
                   noise_var: float = 0.2, eps: float = 1e-4, n_seeds: int = 4,
                   band=(0.8, 1.2)) -> ClaimResult:
    """thm:L growth with the optimal constant step of the Jacobi-preconditioned system
    (eqn:richardson prec, ``A = G + s2 I``, ``b = G Y``, ``D = diag(G 1)``, ``Y`` a GP draw plus noise).

    Measures ``L_needed``: the first ``l`` with ``||u^l - u*||_2/||u*||_2 < eps`` from
    :func:`pfntheory.richardson.richardson`. Holds if (i) the per-seed slope of ``log L_needed`` on
    ``log n`` has its 95% t-CI in ``band`` and (ii) at the proof's depth ``L = ceil((c_n+1)/2 log 1/eps)``
    the error in the ``D``-norm (where ``rho*^L`` bounds it exactly) is below ``eps`` for every draw. The
    Euclidean error at that depth and ``L_needed`` vs the worst-case ``log eps/log rho*`` are in
    ``details``.
    """
    ns = np.asarray(ns)
    kern = RBFKernel(1.0, lengthscale)
    Lm = np.empty((n_seeds, ns.size))
    Lw = np.empty((n_seeds, ns.size))
    Ls = np.empty((n_seeds, ns.size))
    errD = np.empty((n_seeds, ns.size))
    err2 = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        for i, n in enumerate(ns):
            n = int(n)
            G = kern(sample_design(n, d, rng))
            A = G + noise_var * np.eye(n)
            Y = np.linalg.cholesky(A) @ rng.standard_normal(n)      # y ~ N(0, G + s2 I)
            b = G @ Y                                              # eqn:richardson, v = Y
            D = G.sum(axis=1)                                      # D = diag(G 1)
            u_star = np.linalg.solve(A, b)
            c = prec_spectrum(G, noise_var).cond
            eta = optimal_step(A, D=D)                             # eta* = 2/(lambda_1 + lambda_n)
            L_suff = int(np.ceil(depth_sufficient(c, eps)))
            _, path = richardson(A, b, eta, L_suff, D=D, return_path=True)
            e = path - u_star
            rel2 = np.linalg.norm(e, axis=1) / np.linalg.norm(u_star)
            relD = np.linalg.norm(e * np.sqrt(D), axis=1) / np.linalg.norm(u_star * np.sqrt(D))
            hit = np.flatnonzero(rel2 < eps)
            Lm[s, i] = hit[0] if hit.size else np.inf
            Lw[s, i] = float(depth_needed(c, eps))
            Ls[s, i] = L_suff
            errD[s, i] = relD[-1]
            err2[s, i] = rel2[-1]
    finite = np.all(np.isfinite(Lm))
    m, ci, slopes = seed_slopes(np.log(ns), np.log(Lm)) if finite else (np.nan, (np.nan, np.nan), None)
    suff_ok = bool(np.all(errD < eps))
    holds = finite and band[0] <= ci[0] and ci[1] <= band[1] and suff_ok
    return ClaimResult(key="L_growth",
        label="thm:L growth",
        statement="depth to reach eps at the optimal preconditioned step grows ~ n; (c_n+1)/2 log(1/eps) suffices",
        holds=bool(holds), observed=float(m), bound=1.0, ci=ci,
        tolerance=f"95% t-CI over {n_seeds} seeds inside {band}; D-norm error at the sufficient depth < eps",
        details=dict(ns=ns, eps=eps, d=d, noise_var=noise_var, L_needed=Lm.mean(0), L_worst=Lw.mean(0),
                     L_sufficient=Ls.mean(0), errD_at_sufficient=errD.max(0), err2_at_sufficient=err2.max(0),
                     slopes=slopes, sufficient_ok=suff_ok),
    )


# --------------------------------------------------------------------------------------------- #
# errata and ambiguities                                                                        #
# --------------------------------------------------------------------------------------------- #

def check_rho_star_convention(rng: np.random.Generator, ns=(20, 80, 320), d: int = 2,
                              noise_var: float = 0.2) -> ClaimResult:
    """The proof of thm:L growth writes ``rho = 1 - 2/(c_n + 2)``; supp-sec:richardson (and the next
    line of the same proof) give ``1 - 2/(c_n + 1)``. The spectral radius of the preconditioned
    iteration matrix ``I - eta* D^{-1}(G + s2 I)`` is measured (eigenvalues of the similar symmetric
    matrix); holds if it equals ``1 - 2/(c+1)`` to ``atol 10 n eps cond`` and differs from
    ``1 - 2/(c+2)`` by more than that."""
    kern = RBFKernel()
    rows, holds = [], True
    for n in ns:
        G = kern(sample_design(int(n), d, rng))
        sp = prec_spectrum(G, noise_var)
        eta = 2.0 / (sp.lambda_1 + sp.lambda_n)
        r = 1.0 / np.sqrt(sp.s)
        lam = np.linalg.eigvalsh(r[:, None] * (G + noise_var * np.eye(int(n))) * r[None, :])
        radius = float(np.max(np.abs(1.0 - eta * lam)))
        c = sp.cond
        right, typo = float(rho_star(c)), 1.0 - 2.0 / (c + 2.0)
        tol = 10 * n * EPS * c
        ok = abs(radius - right) <= tol and abs(radius - typo) > tol
        holds &= ok
        rows.append(dict(n=int(n), cond=c, radius=radius, appendix=right, proof=typo,
                         depth_ratio=float(np.log(right) / np.log(typo))))
    return as_erratum(ClaimResult(key="rho_star_convention",
        label="thm:L growth",
        statement="rho* = 1 - 2/(c_n+1) (supp-sec:richardson), not 1 - 2/(c_n+2) (proof of thm:L growth)",
        holds=bool(holds), observed=rows[-1]["radius"], bound=rows[-1]["appendix"],
        tolerance="atol 10 n eps cond", details=dict(rows=rows),
    ))


def check_depth_inequality_direction(conds=(2.0, 10.0, 100.0, 1e4), eps: float = 1e-6) -> ClaimResult:
    """The proof of thm:L growth writes ``log eps/log rho >= (c+1)/2 log(1/eps)``; since
    ``log(1 - x) <= -x`` the correct direction is ``<=``. Holds if ``depth_needed <= depth_sufficient``
    for every ``c`` (so the theorem's sufficiency conclusion stands; the displayed ``>=`` is reversed)."""
    c = np.asarray(conds, float)
    need = depth_needed(c, eps)
    suff = depth_sufficient(c, eps)
    return as_erratum(ClaimResult(key="depth_inequality_direction",
        label="thm:L growth",
        statement="log(eps)/log(rho*) <= (c+1)/2 log(1/eps) (paper prints >=)",
        holds=bool(np.all(need <= suff) and np.all(need < suff)), observed=float(np.max(need / suff)),
        bound=1.0, tolerance="exact (strict inequality of real numbers)",
        details=dict(conds=c, needed=need, sufficient=suff),
    ))


def check_prec_amplitude(rng: np.random.Generator, alpha: float = 0.5, noise_var: float = 0.2,
                         n: int = 50, d: int = 8, lengthscale: float = 0.3) -> ClaimResult:
    """supp-lem:rbf kernel Gram ridge prec uses ``s_i >= 1`` and ``lambda_1 in [1, 1 + s2]``: true for the
    unit kernel. For amplitude ``alpha^2 < 1`` only ``s_i >= alpha^2`` and
    ``lambda_1 in [1, 1 + s2/alpha^2]`` hold, and ``lambda_1 > 1 + s2`` happens (so the "conservative"
    step ``2/(1 + s2)`` of sec:generalization is not admissible). Two far-apart points give
    ``lambda_1 -> 1 + s2/alpha^2`` exactly; a random design with a short lengthscale is also scored.
    Holds (i.e. the erratum is confirmed) if both examples exceed ``1 + s2`` while respecting
    ``1 + s2/alpha^2``."""
    kern = RBFKernel(alpha, lengthscale)
    X2 = np.array([[0.0], [100.0]])
    sp2 = prec_spectrum(RBFKernel(alpha, 1.0)(X2), noise_var)
    G = kern(sample_design(n, d, rng))
    sp = prec_spectrum(G, noise_var)
    paper, general = 1 + noise_var, 1 + noise_var / alpha**2
    tol = _tol(n, general)
    holds = (sp2.lambda_1 > paper + tol and sp.lambda_1 > paper + tol
             and sp2.lambda_1 <= general + tol and sp.lambda_1 <= general + tol)
    return as_erratum(ClaimResult(key="prec_amplitude",
        label="supp-lem:rbf kernel Gram ridge prec",
        statement="lambda_1(D^-1(G+s2 I)) in [1, 1+s2/alpha^2]; the paper's [1, 1+s2] needs alpha >= 1",
        holds=bool(holds), observed=sp.lambda_1, bound=paper, tolerance="atol 10 n eps (1+s2/alpha^2)",
        details=dict(alpha=alpha, two_points_lambda1=sp2.lambda_1, random_lambda1=sp.lambda_1,
                     paper_upper=paper, general_upper=general, s_min=sp.s_min,
                     step_2_over_1_plus_s2=2 / paper, admissible_step=2 / sp.lambda_1),
    ))


def check_row_sum_limit(rng: np.random.Generator, n: int = 2000, d: int = 16, lengthscale: float = 1.0,
                        k_se: float = 5.0) -> ClaimResult:
    """The proof of supp-lem:rbf kernel Gram ridge prec writes ``s_max >= s_i = 1 + (n-1) rho``. In fact
    ``(s_i - 1)/(n-1) -> g(x_i) = E_x kappa(x_i, x)``, which depends on ``x_i``; only the average of the
    ``s_i`` tracks ``1 + (n-1) rho``. Holds if ``max_i |(s_i-1)/(n-1) - g(x_i)|`` is within ``k_se``
    binomial-type standard errors (``sqrt(g(1-g)/(n-1))``, a bound on the SD of a mean of ``[0,1]``
    variables with mean ``g``, times a union factor ``sqrt(2 log n)``) while ``max_i |.. - rho|`` is not, and
    ``s_max >= mean(s) = 1'G1/n`` (the corrected step)."""
    kern = RBFKernel(1.0, lengthscale)
    X = sample_design(n, d, rng)
    G = kern(X)
    s = G.sum(axis=1)
    t = (s - 1.0) / (n - 1)
    g = expected_rbf_gaussian_given(X, 1.0, lengthscale)
    rho = expected_rbf_gaussian(1.0, lengthscale, d)
    se = np.sqrt(g * (1 - g) / (n - 1)) * np.sqrt(2 * np.log(n))
    to_g = float(np.max(np.abs(t - g) / se))
    to_rho = float(np.max(np.abs(t - rho) / se))
    holds = to_g <= k_se and to_rho > k_se and s.max() >= s.mean()
    return as_erratum(ClaimResult(key="row_sum_limit",
        label="supp-lem:rbf kernel Gram ridge prec",
        statement="(s_i - 1)/(n-1) -> E_x kappa(x_i, x), not rho; s_max >= 1'G1/n ~ 1 + (n-1) rho",
        holds=bool(holds), observed=to_g, bound=k_se,
        tolerance=f"{k_se} standard errors with a sqrt(2 log n) union factor",
        details=dict(n=n, d=d, max_z_to_g=to_g, max_z_to_rho=to_rho, rho=rho, g_range=(float(g.min()), float(g.max())),
                     s_max_over_n=float(s.max() / n), s_mean_over_n=float(s.mean() / n),
                     g0=float(expected_rbf_gaussian_given(np.zeros(d), 1.0, lengthscale))),
    ))


def check_covariate_shift(rng: np.random.Generator, d: int = 4, lengthscale: float = 0.8,
                          noise_var: float = DEFAULT_NOISE_VAR, n: int = 400, n_trials: int = 3,
                          n_mc: int = 200_000) -> ClaimResult:
    """Covariate shift (supp-sec:exp additional): ``Unif[-1/sqrt(d), 1/sqrt(d)]^d`` has per-coordinate
    variance ``1/(3d)``, not ``1/d``. Quantifies ``rho = E kappa`` (closed form, checked by Monte Carlo
    within 5 SE), ``lambda_1/n``, the admissible step ``2/(lambda_1 + s2)`` and ``cond(D^{-1}(G + s2 I))``
    under both designs. Holds if the measured per-coordinate variance matches ``1/(3d)`` (5 SE), the MC
    rho matches the closed form (5 SE), and the uniform design has larger ``rho`` and smaller
    admissible step than the Gaussian one."""
    Xu = sample_design(n_mc // d, d, rng, "uniform")
    v_hat = float(Xu.var())
    v_se = float(np.sqrt(2.0) / (3 * d) / np.sqrt(Xu.size) * 1.2)      # SD of sample var of Unif ~ 0.89*var*sqrt(2/N)
    Xa, Xb = sample_design(n_mc, d, rng, "uniform"), sample_design(n_mc, d, rng, "uniform")
    kv = np.exp(-0.5 * np.sum((Xa - Xb) ** 2, axis=1) / lengthscale**2)
    rho_mc, rho_se = float(kv.mean()), float(kv.std(ddof=1) / np.sqrt(n_mc))
    rho_u = expected_rbf_uniform(1.0, lengthscale, d)
    rho_g = expected_rbf_gaussian(1.0, lengthscale, d)
    rho_g3 = expected_rbf_gaussian(1.0, lengthscale, d, 1.0 / (3 * d))
    kern = RBFKernel(1.0, lengthscale)
    stats = {}
    for design in ("gaussian", "uniform"):
        l1, st, cd = [], [], []
        for _ in range(n_trials):
            G = kern(sample_design(n, d, rng, design))
            lam1 = top_eigenvalue(G)
            l1.append(lam1 / n)
            st.append(2.0 / (lam1 + noise_var))
            cd.append(prec_spectrum(G, noise_var).cond)
        stats[design] = dict(lambda1_over_n=float(np.mean(l1)), step=float(np.mean(st)), prec_cond=float(np.mean(cd)))
    holds = (abs(v_hat - 1 / (3 * d)) <= 5 * v_se and abs(rho_mc - rho_u) <= 5 * rho_se
             and rho_u > rho_g and stats["uniform"]["step"] < stats["gaussian"]["step"])
    return as_erratum(ClaimResult(key="covariate_shift",
        label="supp-sec:exp additional",
        statement="Unif[-1/sqrt d, 1/sqrt d]^d has variance 1/(3d) per coordinate: larger rho, smaller admissible step",
        holds=bool(holds), observed=rho_u, bound=rho_g,
        tolerance="5 Monte-Carlo SE for variance and rho",
        details=dict(d=d, lengthscale=lengthscale, var_hat=v_hat, var_uniform=1 / (3 * d), var_gaussian=1 / d,
                     rho_uniform=rho_u, rho_uniform_mc=rho_mc, rho_gaussian=rho_g, rho_gaussian_var_1_3d=rho_g3,
                     step_ratio_uniform_over_gaussian=stats["uniform"]["step"] / stats["gaussian"]["step"],
                     cond_ratio_uniform_over_gaussian=stats["uniform"]["prec_cond"] / stats["gaussian"]["prec_cond"],
                     **{f"{k}_{kk}": vv for k, v in stats.items() for kk, vv in v.items()}),
    ))


def check_rho_naming(rng: np.random.Generator, n: int = 200, d: int = 16, noise_var: float = 0.2) -> ClaimResult:
    """The proof of supp-lem:rbf kernel Gram (and the ridge lemmas) use ``rho = E kappa(x, x')``; the
    convergence analysis (sec:generalization, supp-sec:richardson, thm:L growth) uses ``rho`` for the
    convergence factor. Reports both for the same design; holds if they differ (different objects)."""
    rho_k = expected_rbf_gaussian(1.0, 1.0, d)
    G = RBFKernel()(sample_design(n, d, rng))
    c = prec_spectrum(G, noise_var).cond
    rs = float(rho_star(c))
    return ClaimResult(key="rho_naming",
        label="supp-lem:rbf kernel Gram", statement="rho (mean kernel) and rho* (convergence factor) are different quantities",
        holds=bool(abs(rho_k - rs) > 0.1), observed=rho_k, bound=rs, tolerance="exact",
        details=dict(rho_kernel=rho_k, rho_star=rs, cond=c, n=n, d=d),
    )
