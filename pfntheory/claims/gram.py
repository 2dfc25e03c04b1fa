"""supp-lem:lienar kernel Gram and supp-lem:rbf kernel Gram: how the Gram eigenvalues scale with the
context size ``n`` (the linear interval and its rate, ``lambda_1 >= 1'G1/n`` and its limit, the
growth of ``cond(G)``, ``rho`` against ``rho*``), and the decision rules the spectral claims share
(:func:`seed_slopes`, :func:`in_band`, :func:`rate_claim`, :func:`clopper_pearson`,
:func:`eig_atol`). Round-off tolerances: docs/exact-side.md#gram-spectra.
"""

from __future__ import annotations

import numpy as np
import scipy.stats

from pfntheory.base._checks import (
    array,
    as_float_array,
    check_callable,
    finite_scalar,
    floats,
    nonneg_int,
    nonneg_scalar,
    positive_array,
    positive_int,
    positive_scalar,
    text,
)
from pfntheory.base.stats import EPS, mean_se, slope_ci, t_interval
from pfntheory.maths.kernels import (
    RBFKernel,
    expected_rbf_gaussian,
)
from pfntheory.maths.mercer import RBFMercer
from pfntheory.maths.spectral import (
    lambda1_lower_bound,
    linear_gram_eigenvalues,
    linear_gram_interval,
    prec_spectrum,
    rho_star,
    sample_design,
    top_eigenvalue,
)

from .. import DEFAULT_NOISE_VAR
from . import ClaimResult, band_verdict, checked_args

__all__ = [
    "clopper_pearson",
    "seed_slopes",
    "in_band",
    "band_tolerance",
    "rate_claim",
    "check_linear_interval",
    "check_linear_rate",
    "check_lambda1_lower",
    "check_lambda1_limit",
    "check_rbf_cond_growth",
    "check_rho_naming",
    "eig_atol",
]


def _ci(x, name: str) -> tuple[float, float]:
    """A confidence interval ``(lo, hi)``: two real numbers (an undefined one is NaN or +-inf)."""
    a = as_float_array(x, name, ndim=1, allow_nan=True)
    if a.shape != (2,):
        raise ValueError(f"{name} must be a pair (lo, hi), got shape {a.shape}")
    return float(a[0]), float(a[1])


@checked_args("n", "level", k=nonneg_int)
def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion ``k/n``."""
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(scipy.stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(scipy.stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@checked_args("level", x=array(ndim=1), Y=array(ndim=(1, 2)))
def seed_slopes(x, Y, level: float = 0.95) -> tuple[float, tuple[float, float], np.ndarray]:
    """Per-seed least-squares slopes of the rows of ``Y`` (shape (seeds, m)) on ``x`` (shape (m,)),
    their mean and a Student-t confidence interval over seeds."""
    Y = np.atleast_2d(Y)
    if Y.shape[0] == 0 or Y.shape[1:] != x.shape:
        raise ValueError(f"Y must have shape (seeds, {x.size}) to match x, got {Y.shape}")
    slopes = np.array([slope_ci(x, y)[0] for y in Y])
    m, ci = t_interval(slopes, level)
    return m, ci, slopes


@checked_args("band", ci=_ci)
def in_band(ci, band) -> bool:
    """Whether the confidence interval ``ci`` of a fitted rate lies inside ``band``."""
    return bool(band[0] <= ci[0] and ci[1] <= band[1])


@checked_args("n_seeds", "band")
def band_tolerance(n_seeds: int, band) -> str:
    """The ``tolerance`` of a rate claim decided by :func:`seed_slopes` and :func:`in_band`."""
    return f"95% t-CI over {n_seeds} seeds inside {band}"


@checked_args(
    "band",
    key=text,
    label=text,
    statement=text,
    ns=floats(positive=True),
    values=positive_array,
    target=finite_scalar,
    details=check_callable,
)
def rate_claim(
    *, key: str, label: str, statement: str, ns, values, target: float, band, details
) -> ClaimResult:
    """A rate claim decided by :func:`seed_slopes` and :func:`in_band`: the per-seed slopes of
    ``log values`` (shape (seeds, len(ns))) on ``log ns``, their 95% t-CI inside ``band``;
    ``observed`` is the mean slope, ``bound`` the paper's rate ``target``, and ``details`` a
    function of the per-seed slopes giving the result's ``details``."""
    if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] != len(ns):
        raise ValueError(
            f"values must have shape (seeds, {len(ns)}) to match ns, got {values.shape}"
        )
    m, ci, slopes = seed_slopes(np.log(ns), np.log(values))
    return ClaimResult(
        key=key,
        label=label,
        statement=statement,
        holds=in_band(ci, band),
        verdict=band_verdict(ci, band),
        observed=m,
        bound=target,
        ci=ci,
        tolerance=band_tolerance(len(values), band),
        details=details(slopes),
    )


@checked_args("n", scale=nonneg_scalar)
def eig_atol(n: int, scale: float) -> float:
    return 10.0 * n * EPS * scale  # round-off of eigvalsh, see module docstring


@checked_args("rng", "n", "d", "n_draws", "level", ts=floats(positive=True))
def check_linear_interval(
    rng: np.random.Generator,
    n: int = 200,
    d: int = 4,
    ts=(1.5, 2.0, 2.5),
    n_draws: int = 4000,
    level: float = 0.99,
) -> ClaimResult:
    """All nonzero eigenvalues of ``X X^T`` lie in the interval of supp-lem:lienar kernel Gram with
    probability ``>= 1 - 2 exp(-t^2/2)``.

    Counts draws with some eigenvalue outside ``[lo, hi]``; the claim fails at ``t`` if the lower
    Clopper-Pearson bound (``level``) of the violation rate exceeds ``2 exp(-t^2/2)``. A negative
    control (an interval narrowed to ``t/n`` in place of ``t/sqrt(n)``) is scored the same way and
    must fail, which shows the count has power.
    """
    X = sample_design(n, d, rng, size=(n_draws,))
    lam = linear_gram_eigenvalues(X)  # (n_draws, d)
    per_t, holds, worst = {}, True, 0.0
    control_fails = True
    for t in ts:
        iv = linear_gram_interval(n, d, t)
        bound = 1.0 - iv.prob  # 2 exp(-t^2/2)
        k = int(np.sum(np.any((lam < iv.lo) | (lam > iv.hi), axis=1)))
        ci = clopper_pearson(k, n_draws, level)
        ok = ci[0] <= bound
        # negative control: t/sqrt(n) -> t/n (too narrow)
        lo_c = n / d * max(1 - np.sqrt(d / n) - t / n, 0.0) ** 2
        hi_c = n / d * (1 + np.sqrt(d / n) + t / n) ** 2
        lo_c2 = n / d * (1 - t / n) ** 2  # and without the sqrt(d/n) shift of E s_j
        hi_c2 = n / d * (1 + t / n) ** 2
        kc = int(np.sum(np.any((lam < lo_c2) | (lam > hi_c2), axis=1)))
        cc = clopper_pearson(kc, n_draws, level)
        control_fails &= cc[0] > bound
        per_t[float(t)] = dict(
            violations=k,
            rate=k / n_draws,
            ci=ci,
            bound=bound,
            lo=iv.lo,
            hi=iv.hi,
            control_rate=kc / n_draws,
            control_interval=(lo_c2, hi_c2),
            narrow_interval=(lo_c, hi_c),
        )
        holds &= ok
        worst = max(worst, k / n_draws / bound)
    return ClaimResult(
        key="linear_interval",
        label="supp-lem:lienar kernel Gram",
        statement=(
            "P(all lambda_j(XX^T) in [n/d(1-sqrt(d/n)-t/sqrt n)^2, n/d(1+sqrt(d/n)+t/sqrt n)^2]) "
            ">= 1-2e^{-t^2/2}"
        ),
        holds=bool(holds),
        observed=worst,
        bound=1.0,
        tolerance=f"Clopper-Pearson {level:.0%} lower bound of the violation rate <= 2e^(-t^2/2)",
        details=dict(n=n, d=d, n_draws=n_draws, per_t=per_t, control_fails=bool(control_fails)),
    )


@checked_args("rng", "ns", "d", "n_seeds", "band", reps=positive_int)
def check_linear_rate(
    rng: np.random.Generator,
    ns=(100, 200, 400, 800, 1600, 3200, 6400),
    d: int = 4,
    n_seeds: int = 6,
    reps: int = 20,
    band=(-0.6, -0.4),
) -> ClaimResult:
    """``lambda_j d/n - 1 = O_P(n^{-1/2})`` (supp-lem:lienar kernel Gram): per seed, the slope of
    ``log mean_reps max_j |lambda_j d/n - 1|`` on ``log n``; the t-CI over seeds must lie in
    ``band`` (-1/2 +- 0.1: the next term of ``(1 + sqrt(d/n))^2 - 1`` is ``d/n``, which moves the
    local slope by at most ``sqrt(d/n_min)/2 = 0.1`` at ``n_min = 100``, ``d = 4``)."""
    ns = np.asarray(ns)
    dev = np.empty((n_seeds, ns.size))
    for s in range(n_seeds):
        for i, n in enumerate(ns):
            lam = linear_gram_eigenvalues(sample_design(int(n), d, rng, size=(reps,)))
            dev[s, i] = np.mean(np.max(np.abs(lam * d / n - 1.0), axis=1))
    return rate_claim(
        key="linear_rate",
        label="supp-lem:lienar kernel Gram",
        statement=(
            "lambda_j = (1 + O_P(n^-1/2)) n/d: slope of log|lambda_j d/n - 1| vs log n is -1/2"
        ),
        ns=ns,
        values=dev,
        target=-0.5,
        band=band,
        details=lambda slopes: dict(ns=ns, slopes=slopes, mean_dev=dev.mean(axis=0), d=d),
    )


@checked_args("G")
def check_lambda1_lower(G) -> ClaimResult:
    """``lambda_1(G) >= 1'G1/n`` for one Gram ``G`` (Rayleigh quotient; supp-lem:rbf kernel Gram).
    Tolerance ``10 n eps lambda_1`` (round-off of both sides)."""
    G = np.asarray(G, float)
    n = G.shape[0]
    lam1 = float(np.linalg.eigvalsh(G)[-1])
    lb = float(lambda1_lower_bound(G))
    return ClaimResult(
        key="lambda1_lower",
        label="supp-lem:rbf kernel Gram",
        statement="lambda_1(G) >= 1'G1/n",
        holds=bool(lam1 >= lb - eig_atol(n, lam1)),
        observed=lam1,
        bound=lb,
        tolerance="atol 10 n eps lambda_1, rtol 0",
        details=dict(n=n, gap=lam1 - lb),
    )


@checked_args("rng", "ns", "d", "lengthscale", "alpha", "n_seeds", "k_se")
def check_lambda1_limit(
    rng: np.random.Generator,
    ns=(200, 800),
    d: int = 2,
    lengthscale: float = 1.0,
    alpha: float = 1.0,
    n_seeds: int = 8,
    k_se: float = 4.0,
) -> ClaimResult:
    """``lambda_1(G)/n -> mu_0`` (the top Mercer eigenvalue), while ``1'G1/n^2 -> rho = E kappa``.

    The lemma only needs ``lambda_1 >~ n``; its lower bound ``1'G1/n ~ n rho`` is not the limit of
    ``lambda_1``: ``rho = <1, T 1> <= mu_0`` with equality only if the constant is an eigenfunction.
    Holds if at the largest ``n`` the seed mean of ``lambda_1/n`` is within ``k_se`` standard errors
    (over seeds) plus a bias allowance ``alpha^2/n`` of ``mu_0``, and farther than that from
    ``rho``; and ``1'G1/n^2`` is within the same tolerance of ``rho``.
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
    m1, se1 = mean_se(r1[:, -1])
    m2, se2 = mean_se(r2[:, -1])
    tol1 = k_se * se1 + alpha**2 / ns[-1]
    tol2 = k_se * se2 + alpha**2 / ns[-1]
    holds = abs(m1 - mu0) <= tol1 and abs(m1 - rho) > tol1 and abs(m2 - rho) <= tol2
    return ClaimResult(
        key="lambda1_limit",
        label="supp-lem:rbf kernel Gram",
        statement="lambda_1(G)/n -> mu_0 (top Mercer eigenvalue) > rho = lim 1'G1/n^2",
        holds=bool(holds),
        observed=float(m1),
        bound=mu0,
        ci=(float(m1 - tol1), float(m1 + tol1)),
        tolerance=f"{k_se} SE over {n_seeds} seeds + alpha^2/n (O(1/n) bias)",
        details=dict(
            ns=ns,
            mu0=mu0,
            rho=rho,
            lambda1_over_n=r1.mean(0),
            ones_over_n2=r2.mean(0),
            rms_to_mu0=np.sqrt(np.mean((r1 - mu0) ** 2, axis=0)),
            se=float(se1),
        ),
    )


@checked_args("rng", "d", "ns", "n_seeds", "noise_var", floor_factor=positive_scalar)
def check_rbf_cond_growth(
    rng: np.random.Generator,
    d: int = 2,
    ns=(6, 9, 12, 16, 20, 25, 30, 36, 45, 60),
    n_seeds: int = 30,
    noise_var: float = DEFAULT_NOISE_VAR,
    floor_factor: float = 100.0,
) -> ClaimResult:
    """Super-polynomial growth of ``cond(G)`` (supp-lem:rbf kernel Gram), where float64 can see it.

    ``lambda_n(G)`` is resolved only while it exceeds the round-off floor ``n eps lambda_1``; an
    ``n`` is kept only if every draw has ``lambda_n > floor_factor * n eps lambda_1`` (``details``
    records the first ``n`` that is not). On the resolved window, with
    ``y = mean_seeds log cond(G)``: (i) the fit ``y = a + b log n + c (log n)^2`` has ``c > 0`` with
    its 95% CI above 0 (convex in log-log: the local polynomial degree keeps growing, so no
    polynomial bound fits), and (ii) ``y + (2 + (d-1)/d) log n`` regressed on ``n^{1/d}`` has slope
    ``gamma_hat`` with CI above 0 (the shape ``exp(gamma n^{1/d})/n^{2+(d-1)/d}`` of the lemma).
    Also records ``cond(G + σ² I) <= (n + σ²)/σ²`` at the same ``n``: the ridge caps the growth
    (consistency of the lemma with thm:cond number).
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
    return ClaimResult(
        key="rbf_cond_growth",
        label="supp-lem:rbf kernel Gram",
        statement="cond(G) >~ exp(gamma n^{1/d}) / n^{2+(d-1)/d} (super-polynomial)",
        holds=bool(idx.size >= 5 and curv_ci[0] > 0 and gci[0] > 0 and ridge_ok),
        observed=float(gamma_hat),
        bound=0.0,
        ci=gci,
        tolerance=(
            f"only n with lambda_n > {floor_factor:g} n eps lambda_1 on all {n_seeds} draws "
            "(float64 floor); 95% CIs of the log-log curvature and of gamma_hat above 0"
        ),
        details=dict(
            d=d,
            ns=ns,
            mean_log_cond=logc,
            resolved=resolved,
            curvature=float(coef[2]),
            curvature_ci=curv_ci,
            local_slopes=np.diff(y) / np.diff(np.log(nn)),
            ridge_cond_max=np.asarray(ridge),
            ridge_cap=(ns + noise_var) / noise_var,
            first_unresolved_n=first_bad,
            beta=mer.beta,
            log_inv_beta=float(-np.log(mer.beta)),
        ),
    )


@checked_args("rng", "n", "d", "noise_var")
def check_rho_naming(
    rng: np.random.Generator, n: int = 200, d: int = 16, noise_var: float = 0.2
) -> ClaimResult:
    """The proof of supp-lem:rbf kernel Gram (and the ridge lemmas) use ``rho = E kappa(x, x')``;
    the convergence analysis (sec:generalization, supp-sec:richardson, thm:L growth) uses ``rho``
    for the convergence factor. Reports both for the same design; holds if they differ (different
    objects)."""
    rho_k = expected_rbf_gaussian(1.0, 1.0, d)
    G = RBFKernel()(sample_design(n, d, rng))
    c = prec_spectrum(G, noise_var).cond
    rs = float(rho_star(c))
    return ClaimResult(
        key="rho_naming",
        label="supp-lem:rbf kernel Gram",
        statement="rho (mean kernel) and rho* (convergence factor) are different quantities",
        holds=bool(abs(rho_k - rs) > 0.1),
        observed=rho_k,
        bound=rs,
        tolerance="exact",
        details=dict(rho_kernel=rho_k, rho_star=rs, cond=c, n=n, d=d),
    )
