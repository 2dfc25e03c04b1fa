"""Measurements of supp-sec:richardson (Appendix A) and supp-thm:KRR.

Every function measures and returns :class:`~pfntheory.claims.ClaimResult`; none asserts.

* :func:`check_convergence_iff` -- Richardson converges iff ``0 < eta < 2/lambda_1(D^{-1}A)``, and
  the measured per-step contraction never exceeds ``max_i |1 - eta lambda_i|``.
* :func:`check_optimal_step` -- ``eta* = 2/(lambda_1 + lambda_n)`` minimises the convergence factor,
  whose minimum is ``rho* = 1 - 2/(cond + 1)`` (and not ``1 - 2/(c_n + 2)`` as written in the proof
  of thm:L growth).
* :func:`check_rate_bound` -- for ``eta < 1/lambda_1``,
  ``||u^L - u*|| / ||u*|| <= (1 - eta lambda_n)^L <= exp(-(1 - rho) L)``.
* :func:`check_krr` -- supp-thm:KRR: both bounds on every ``L`` of a grid, and the closed form of
  ``e^(l)(x)`` against the testing recursion.
* :func:`check_krr_preconditioned` -- eqn:recursion prec has the fixed points of eqn:richardson
  (the training recursion equals :func:`~pfntheory.maths.richardson.richardson` with ``D = diag(G
  1)``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pfntheory.base._checks import (
    Rule,
    array,
    at_least,
    checked,
    floats,
    instance_of,
    nonneg_scalar,
    one_of,
    optional,
    positive_int,
    positive_scalar,
    shaped,
    symmetric_matrix,
)
from pfntheory.base.stats import EPS
from pfntheory.maths import richardson as rich

from . import ERRATUM, VERDICT_KINDS, ClaimResult, VerdictKind, checked_args

__all__ = [
    "ROUNDOFF_SAFETY",
    "as_erratum",
    "roundoff_atol",
    "check_convergence_iff",
    "check_optimal_step",
    "check_rate_bound",
    "check_krr",
    "check_krr_preconditioned",
]

#: Safety factor on first-order round-off estimates ``eps * n * cond * scale``: the constants of
#: the standard matrix-vector error bounds (gamma_n ~ n eps) are below 2 per operation and an
#: iteration step has at most ~4 such operations, so 16 covers them without hiding an O(1) error.
ROUNDOFF_SAFETY = 16.0


#: The arguments of a KRR query problem (supp-thm:KRR): ``G`` (n, n), ``k_x`` and ``Y`` (n,).
KRR_RULES: dict[str, Rule] = {
    "G": symmetric_matrix,
    "k_x": array(),
    "Y": array(ndim=1),
    "noise_var": positive_scalar,
}


@checked(r=instance_of(ClaimResult), kind=one_of(VERDICT_KINDS))
def as_erratum(r: ClaimResult, kind: VerdictKind = ERRATUM) -> ClaimResult:
    """``r`` with verdict ``kind`` when it holds, i.e. when the check confirms the corrected
    statement (of an erratum or a caveat); otherwise the verdict follows from ``holds`` (the check
    stopped confirming it, and the report says so)."""
    return dataclasses.replace(r, verdict=kind if r.holds else None)


@checked_args("G", "noise_var", scale=nonneg_scalar, n_ops=positive_int)
def roundoff_atol(G: np.ndarray, noise_var: float, scale: float, *, n_ops: int = 1) -> float:
    """Absolute round-off tolerance for a Richardson/KRR iterate computed two ways.

    A perturbation ``delta ~ eps n eta ||G||_inf scale`` introduced at a step is damped at worst by
    ``1 - eta sigma^2`` per step (the query recursion, supp-eqn:grad test error), so the accumulated
    difference is at most ``delta / (eta sigma^2) = eps n (||G||_inf / sigma^2) scale``; we use
    ``ROUNDOFF_SAFETY * n_ops * eps * n * (||G||_inf + sigma^2) / sigma^2 * scale``. ``||G||_inf``
    (max absolute row sum) bounds ``lambda_1`` and the Jacobi row sums ``s_x``, so the same formula
    covers the preconditioned recursion (damping ``1 - eta sigma^2 / s_x``).
    """
    n = G.shape[0]
    g_inf = float(np.max(np.sum(np.abs(G), axis=1)))
    return ROUNDOFF_SAFETY * n_ops * EPS * n * (g_inf + noise_var) / noise_var * max(1.0, scale)


def _dnorm(e: np.ndarray, D) -> np.ndarray:
    """``||e||_D = sqrt(e' D e)`` (Euclidean for ``D = None``), over the last axis.

    ``I - eta D^{-1} A`` is self-adjoint in the ``D`` inner product, so its contraction factor
    ``max_i |1 - eta lambda_i(D^{-1} A)|`` bounds the error in this norm; in the Euclidean norm it
    holds only up to ``sqrt(cond(D))``.
    """
    if D is None:
        return np.linalg.norm(e, axis=-1)
    D = np.asarray(D, dtype=float)
    De = e * D if D.ndim == 1 else e @ D
    return np.sqrt(np.sum(e * De, axis=-1))


def _err_path(A, b, eta, L, D=None):
    u_star = np.linalg.solve(A, b)
    # steps above 2/lambda_1 on purpose: the "only if" of the claim is their divergence
    _, path = rich.richardson(A, b, eta, L, D=D, return_path=True, allow_divergence=True)
    return _dnorm(path - u_star, D), _dnorm(u_star, D)


@checked_args(
    "A",
    "L",
    b=array(ndim=1),
    D=optional(array()),
    fractions=floats(positive=True),
    claimed_step=optional(positive_scalar),
)
def check_convergence_iff(
    A,
    b,
    D=None,
    *,
    fractions=(0.5, 0.9, 0.98, 1.02, 1.1, 1.5),
    L: int = 200,
    claimed_step: float | None = None,
) -> ClaimResult:
    """supp-sec:richardson: ``u^(l) -> u*`` iff ``0 < eta < 2 / lambda_1(D^{-1} A)``.

    For each ``eta = f * 2/lambda_1`` the empirical factor ``(||e^L||_D / ||e^0||_D)^{1/L}`` is
    measured (``u^0 = 0``; ``D``-norm, see :func:`_dnorm`). The claim holds if (i) it is below 1
    exactly for ``f < 1`` and above 1 for ``f > 1``, and (ii) it never exceeds the predicted
    ``max_i |1 - eta lambda_i|`` (the spectral bound) by more than round-off.

    Tolerance: (ii) allows a relative ``1e-9`` on the L-th root (round-off ``~ L eps cond`` on
    ``||e^L||``, after the root far below 1e-9).

    ``claimed_step`` replaces the threshold ``2/lambda_1`` under test (fault injection: a wrong
    threshold must make the check fail).
    """
    shaped(b, "b", (A.shape[0],), "to match A")
    eta_adm = rich.admissible_step(A, D) if claimed_step is None else float(claimed_step)
    rows = []
    ok = True
    for f in fractions:
        eta = f * eta_adm
        pred = rich.convergence_factor(A, eta, D)
        # stop before the error reaches the round-off floor (~eps cond ||u*||), where the L-th root
        # would measure the floor instead of the contraction
        L_f = L if pred >= 1 else int(max(1, min(L, np.floor(np.log(1e-10) / np.log(pred)))))
        err, _ = _err_path(A, b, eta, L_f, D)
        r = float((err[-1] / err[0]) ** (1.0 / L_f))
        converged = r < 1.0
        good = (converged == (f < 1.0)) and (r <= pred * (1 + 1e-9))
        ok &= good
        rows.append(
            {
                "fraction": f,
                "eta": eta,
                "L": L_f,
                "measured_factor": r,
                "predicted_factor": pred,
                "converged": converged,
                "ok": good,
            }
        )
    worst_gap = max(abs(row["measured_factor"] - row["predicted_factor"]) for row in rows)
    # what (ii) judges: the measured factor over the spectral bound, at its largest over the steps
    worst_ratio = max(
        row["measured_factor"] / row["predicted_factor"]
        if row["predicted_factor"] > 0
        else (0.0 if row["measured_factor"] == 0 else float("inf"))
        for row in rows
    )
    n_right = sum(row["converged"] == (row["fraction"] < 1.0) for row in rows)
    return ClaimResult(
        key="convergence_iff",
        label="supp-sec:richardson",
        statement=(
            "Richardson converges iff 0 < eta < 2/lambda_1(D^-1 A); factor <= max|1-eta lambda_i|"
        ),
        holds=bool(ok),
        observed=worst_ratio,
        bound=1.0,
        tolerance="measured factor <= spectral bound x (1 + 1e-9) (round-off on the L-th root) at "
        f"every step, and convergence exactly for the steps below 2/lambda_1 ({n_right} of "
        f"{len(rows)} steps on the right side)",
        details={
            "admissible_step": eta_adm,
            "L": L,
            "rows": rows,
            "worst_ratio": worst_ratio,
            "worst_gap": worst_gap,
            "n_classified": n_right,
        },
    )


@checked_args("A", D=optional(array()), n_grid=at_least(2))
def check_optimal_step(A, D=None, *, n_grid: int = 2001) -> list[ClaimResult]:
    """supp-sec:richardson, Optimal Step Size; and the docs/design.md ambiguity about thm:L growth.

    Returns two results: (1) ``convergence_factor(eta*) == 1 - 2/(cond+1)`` to round-off and no
    ``eta`` on a fine grid over ``(0, 2/lambda_1)`` does better; (2) the factor ``1 - 2/(c+2)``
    written in the proof of thm:L growth is *not* the optimal factor (it exceeds ``rho*`` by
    ``2/((c+1)(c+2))``; it is attained by no step size that is optimal). Claim (2) "holds" when the
    measurement confirms that ``1 - 2/(cond+1)`` is the true optimum and ``1 - 2/(c+2)`` differs
    from it by more than round-off.
    """
    lam = rich.spectrum(A, D)
    cond = lam[0] / lam[-1]
    eta_star = rich.optimal_step(A, D)
    rho_star = rich.optimal_convergence_factor(A, D)
    at_star = rich.convergence_factor(A, eta_star, D)
    grid = np.linspace(0, 2.0 / lam[0], n_grid + 2)[1:-1]
    grid_fac = np.max(np.abs(1.0 - np.outer(grid, lam)), axis=1)
    tol = (
        64 * EPS * max(1.0, cond)
    )  # eigvalsh relative error ~ n eps ||A||; rho* depends on lam_n/lam_1
    attained = abs(at_star - rho_star) <= tol  # both claims rest on it
    r1 = ClaimResult(
        key="optimal_step",
        label="supp-sec:richardson",
        statement="eta* = 2/(lambda_1+lambda_n) attains the minimal factor rho* = 1 - 2/(cond+1)",
        holds=bool(attained and grid_fac.min() >= rho_star - tol),
        observed=at_star,
        bound=rho_star,
        tolerance=f"atol {tol:.2e} (64 eps cond)",
        details={
            "cond": float(cond),
            "eta_star": eta_star,
            "grid_min_factor": float(grid_fac.min()),
            "grid_argmin_eta": float(grid[np.argmin(grid_fac)]),
        },
    )
    rho_lgrowth = 1.0 - 2.0 / (cond + 2.0)
    r2 = ClaimResult(
        key="rho_star_L_growth",
        label="thm:L growth",
        statement=(
            "optimal factor is 1-2/(cond+1) (Appendix A), not 1-2/(c_n+2) (proof of thm:L growth)"
        ),
        holds=bool(attained and abs(rho_lgrowth - at_star) > tol),
        observed=at_star,
        bound=float(rho_lgrowth),
        tolerance=f"atol {tol:.2e}",
        details={
            "cond": float(cond),
            "rho_appendix": rho_star,
            "rho_proof_L_growth": rho_lgrowth,
            "difference": rho_lgrowth - rho_star,
            "predicted_difference": 2.0 / ((cond + 1.0) * (cond + 2.0)),
        },
    )
    return [r1, as_erratum(r2)]


@checked_args("A", "eta_fraction", "Ls", b=array(ndim=1), D=optional(array()))
def check_rate_bound(
    A, b, eta_fraction: float = 0.9, Ls=(1, 2, 5, 10, 20, 50, 100), D=None
) -> ClaimResult:
    """supp-sec:richardson, Convergence Rate: for ``eta < 1/lambda_1``,
    ``||u^L - u*||_2 / ||u*||_2 <= (1 - eta lambda_n)^L <= exp(-(1 - rho) L)`` (``u^0 = 0``; with a
    preconditioner ``D`` the norm is ``||.||_D``, in which the preconditioned iteration contracts).

    Tolerance: ``atol = 16 L eps cond`` on the relative error (round-off of ``L`` steps).
    """
    shaped(b, "b", (A.shape[0],), "to match A")
    lam = rich.spectrum(A, D)
    eta = rich.safe_step(A, D, eta_fraction)  # eta_fraction / lambda_1
    Ls = np.asarray(Ls, dtype=int)
    err, unorm = _err_path(A, b, eta, int(Ls.max()), D)
    rel = err[Ls] / unorm
    rho = 1.0 - eta * lam[-1]
    geo = rho**Ls
    ex = np.exp(-(1.0 - rho) * Ls)
    tol = ROUNDOFF_SAFETY * Ls * EPS * lam[0] / lam[-1]
    ok = bool(np.all(rel <= geo + tol) and np.all(geo <= ex * (1 + 1e-12)))
    return ClaimResult(
        key="rate_bound",
        label="supp-sec:richardson",
        statement="eta < 1/lambda_1: ||u^L-u*||/||u*|| <= (1-eta lambda_n)^L <= exp(-(1-rho)L)",
        holds=ok,
        observed=float(np.max(rel / geo)),
        bound=1.0,
        tolerance="atol 16 L eps cond on the relative error",
        details={
            "L": Ls,
            "relative_error": rel,
            "geometric_bound": geo,
            "exp_bound": ex,
            "rho": rho,
        },
    )


@checked_args("eta_fraction", "Ls", **KRR_RULES)
def check_krr(
    G, k_x, Y, noise_var: float, eta_fraction: float = 0.9, Ls=(1, 2, 5, 10, 20, 50, 100, 200)
) -> list[ClaimResult]:
    """supp-thm:KRR with constant ``eta = eta_fraction / (lambda_1(G) + sigma^2)``.

    Returns three results: the training-point bound, the query bound (both on every ``L`` of
    ``Ls``), and the closed form ``e^(l)(x)`` against the testing recursion for every ``l``.
    The observed value is the worst ratio of the error to its allowed value
    ``bound (1 + rtol) + atol`` (<= 1 iff the bound holds; defined when ``Y = 0`` makes the bound
    0), or the worst closed-form error.

    Tolerance: :func:`roundoff_atol` with ``scale = max(||Y||_inf, ||u*_X||_inf, |u*(x)|)`` (the
    magnitude of the iterates), and ``rtol = 16 n eps``.
    """
    n = G.shape[0]
    k_x = np.atleast_2d(k_x)
    if k_x.ndim != 2 or k_x.shape[1] != n:
        raise ValueError(f"k_x must have shape ({n},) or (m, {n}) to match G, got {k_x.shape}")
    shaped(Y, "Y", (n,), "to match G")
    lam = np.linalg.eigvalsh(G)
    eta = rich.safe_step(G + noise_var * np.eye(n), fraction=eta_fraction)
    Ls = np.asarray(Ls, dtype=int)
    Lmax = int(Ls.max())
    train = rich.krr_training_recursion(G, Y, noise_var, eta, Lmax)  # (Lmax+1, n)
    test = rich.krr_testing_recursion(G, k_x, Y, noise_var, eta, Lmax)  # (Lmax+1, m)
    uX, ux = rich.krr_solution(G, k_x, Y, noise_var)
    scale = float(
        max(np.max(np.abs(Y)), np.max(np.abs(uX)), np.max(np.abs(ux)))
    )  # size of the iterates
    atol = roundoff_atol(G, noise_var, scale)
    rtol = ROUNDOFF_SAFETY * n * EPS
    e_train = np.max(np.abs(train[Ls] - uX), axis=1)  # max_i |u^L(x_i) - u*(x_i)|
    b_train = rich.krr_training_bound(G, Y, noise_var, eta, Ls)
    e_test = np.abs(test[Ls] - ux)  # (len(Ls), m)
    b_test = rich.krr_testing_bound(G, k_x, Y, noise_var, eta, Ls)
    cf = np.stack([rich.krr_test_error_closed_form(G, k_x, Y, noise_var, eta, int(l)) for l in Ls])
    cf_err = np.abs(cf - (test[Ls] - ux))
    cf_tol = atol + rtol * np.abs(cf)
    common = {
        "eta": eta,
        "lambda_1": float(lam[-1]),
        "lambda_n": float(lam[0]),
        "L": Ls,
        "rho": rich.krr_convergence_factor(G, noise_var, eta),
    }
    bound_claims = [
        ClaimResult(
            key=f"krr_{where}_bound",
            label="supp-thm:KRR",
            statement=statement,
            holds=bool(np.all(e <= b * (1 + rtol) + atol)),
            observed=float(np.max(e / (b * (1 + rtol) + atol))),
            bound=1.0,
            tolerance=f"atol {atol:.2e} (roundoff_atol), rtol {rtol:.2e}",
            details={**common, "error": e, "bound": b},
        )
        for where, statement, e, b in (
            (
                "training",
                "|u^L(x_i)-u*(x_i)| <= e^{-(1-rho)L} lambda_1/(lambda_n+σ²) ||Y||",
                e_train,
                b_train,
            ),
            (
                "testing",
                "|u^L(x)-u*(x)| <= e^{-(1-rho)L} ||k_x||/(lambda_n+σ²) ||Y||",
                e_test,
                b_test,
            ),
        )
    ]
    return [
        *bound_claims,
        ClaimResult(
            key="krr_closed_form",
            label="supp-thm:KRR",
            statement="e^(l)(x) = -k_x^T (I - eta(G+σ² I))^l (G+σ² I)^-1 Y (closed form)",
            holds=bool(np.all(cf_err <= cf_tol)),
            observed=float(np.max(cf_err)),
            bound=float(np.min(cf_tol)),
            tolerance=f"atol {atol:.2e} + rtol {rtol:.2e} |e|",
            details={**common, "abs_error": cf_err},
        ),
    ]


@checked_args("eta_fraction", "L", **KRR_RULES)
def check_krr_preconditioned(
    G, k_x, Y, noise_var: float, eta_fraction: float = 0.9, L: int = 4000
) -> list[ClaimResult]:
    """eqn:richardson prec / eqn:recursion prec with ``D = diag(G 1)`` and
    ``s_x = sum_i kappa(x_i, x)``.

    Returns two results: (1) the training recursion equals generic preconditioned Richardson on
    ``(G + sigma^2 I) u = G Y`` to round-off; (2) both recursions approach the fixed points of
    eqn:richardson, ``||u^L - u*|| <= ||u^0 - u*|| * rho_pr^L`` with ``rho_pr`` the factor of the
    preconditioned iteration matrix (query: its error recursion is damped by ``1 - eta sigma^2/s_x``
    and driven by the training error, so we check it against ``max(rho_pr, 1 - eta sigma^2/s_x)^L``
    times ``L`` -- a sum of ``L`` geometric terms).
    """
    n = G.shape[0]
    shaped(k_x, "k_x", (n,), "to match G (one query)")
    shaped(Y, "Y", (n,), "to match G")
    A = G + noise_var * np.eye(n)
    s = rich.jacobi_preconditioner(G)
    eta = eta_fraction * rich.admissible_step(A, s)
    train = rich.krr_training_recursion_prec(G, Y, noise_var, eta, L)
    ref = rich.richardson(A, G @ Y, eta, L, D=s, return_path=True)[1]
    scale = float(max(np.max(np.abs(Y)), np.max(np.abs(ref))))  # size of the iterates
    atol = roundoff_atol(G, noise_var, scale)
    d1 = float(np.max(np.abs(train - ref)))
    r1 = ClaimResult(
        key="krr_prec_equals_richardson",
        label="eqn:recursion prec",
        statement="preconditioned KRR training recursion == Richardson with D = diag(G 1)",
        holds=bool(d1 <= atol),
        observed=d1,
        bound=atol,
        tolerance="roundoff_atol",
        details={"eta": eta, "L": L},
    )
    uX, ux = rich.krr_solution(G, k_x, Y, noise_var)
    test = rich.krr_testing_recursion_prec(G, k_x, Y, noise_var, eta, L)
    rho_pr = rich.convergence_factor(A, eta, s)
    s_x = float(np.sum(k_x))
    damp = abs(1.0 - eta * noise_var / s_x)
    e_tr = float(np.linalg.norm(train[-1] - uX))
    e_te = float(abs(test[-1] - ux))
    b_tr = (
        float(np.linalg.norm(uX)) * rho_pr**L * np.sqrt(np.max(s) / np.min(s))
    )  # D-norm equivalence
    b_te = (
        abs(ux)
        + eta / s_x * np.linalg.norm(k_x) * np.linalg.norm(uX) * np.sqrt(np.max(s) / np.min(s)) * L
    ) * max(rho_pr, damp) ** (L - 1)
    r2 = ClaimResult(
        key="krr_prec_convergence",
        label="eqn:recursion prec",
        statement="preconditioned recursions converge to the fixed points of eqn:richardson",
        holds=bool(e_tr <= b_tr + atol and e_te <= b_te + atol),
        observed=max(e_tr, e_te),
        bound=max(b_tr, b_te),
        tolerance="roundoff_atol",
        details={
            "train_error": e_tr,
            "test_error": e_te,
            "train_bound": b_tr,
            "test_bound": b_te,
            "rho_pr": rho_pr,
            "damping_query": damp,
            "eta": eta,
            "L": L,
        },
    )
    return [r1, r2]
