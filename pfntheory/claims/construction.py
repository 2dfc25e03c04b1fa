"""thm:TFdoPPD and TF^pr (sec:generalization): the hand-set transformer's rows, its distance to the
exact posterior moments within the theorem's bound, and TF^pr at a query far from the context.

Each function measures and returns a :class:`~pfntheory.claims.ClaimResult`; ``weights`` and
``forward_kwargs`` run the same check on a wrong transformer (fault injection). Conventions and
tolerances: docs/exact-side.md#the-hand-set-transformer.
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    Rule,
    array,
    as_float_array,
    check_kernel,
    checked,
    mapping,
    optional,
    positive_int,
    positive_scalar,
    probability,
    shaped,
)
from pfntheory.base.stats import EPS
from pfntheory.maths import construction as con
from pfntheory.maths import richardson as rich
from pfntheory.maths.gp import posterior_predictive

from . import ERRATUM, ClaimResult, checked_args
from .richardson import ROUNDOFF_SAFETY, roundoff_atol

__all__ = [
    "context",
    "check_tf_rows",
    "check_tf_convergence",
    "informative_depth",
    "check_tfpr_far_query",
]

#: The arguments of a context draw (:func:`context`), shared by the checks that draw their own.
CONTEXT_RULES: dict[str, Rule] = {
    "kernel": check_kernel,
    "n": positive_int,
    "d": positive_int,
    "noise_var": positive_scalar,
}


def _eta(x, name: str):
    """A positive step, or one per solver layer (length checked where ``L`` is known)."""
    e = as_float_array(x, name, ndim=(0, 1), non_empty=True)
    if np.any(e <= 0):
        raise ValueError(f"{name} must be positive, got min {e.min()}")
    return x


#: The arguments of a check on one given context ``(X, Y, x)`` at depth ``L``.
_ON_CONTEXT: dict[str, Rule] = {
    "kernel": check_kernel,
    "X": array(ndim=2, non_empty=True),
    "Y": array(ndim=1),
    "x": array(ndim=1),
    "noise_var": positive_scalar,
    "eta": _eta,
    "L": positive_int,
    "forward_kwargs": optional(mapping),
}


@checked_args("rng", **CONTEXT_RULES)
def context(kernel, n: int, d: int, noise_var: float, rng: np.random.Generator):
    """A GP regression context of sec:sims: ``x_i ~ N(0, I/d)``, ``Y ~ N(0, G + sigma^2 I)``.

    Returns
    -------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n,)
    x : ndarray of shape (d,)
    """
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    x = rng.normal(size=d) / np.sqrt(d)
    G = kernel(X)
    Lc = np.linalg.cholesky(G + noise_var * np.eye(n))
    Y = Lc @ rng.normal(size=n)
    return X, Y, x


def query_parts(kernel, X, Y, x, noise_var):
    """``(G, k_x, kappa(x, x), mu, tau)`` of one context and query (exact GP posterior)."""
    G = kernel(X)
    k_x = kernel(X, x[None, :])[:, 0]
    kxx = float(kernel.diag(x[None, :])[0])
    mu, tau = posterior_predictive(kernel, X, Y, x[None, :], noise_var)
    return G, k_x, kxx, float(mu[0]), float(tau[0])


def layer_readouts(kernel, X, Y, x, noise_var, eta, L: int, *, normalised=False) -> np.ndarray:
    """The hand-set transformer's readout ``(mu_l, tau_l)`` after each layer ``l = 0..L``.

    Returns
    -------
    ndarray of shape (L + 1, 2)
    """
    n, d = X.shape
    w = con.handset_weights(d, L, eta, noise_var, kernel, normalised=normalised)
    _, _, path = con.tf_forward(w, X, Y, x, return_path=True)
    return path[:, :, n] @ w.W.T


def _context_shapes(X: np.ndarray, Y: np.ndarray, x: np.ndarray) -> None:
    """``Y`` of shape (n,) and the query ``x`` of shape (d,) to match ``X`` (n, d)."""
    shaped(Y, "Y", (X.shape[0],), "to match X (n, d)")
    shaped(x, "x", (X.shape[1],), "to match X (n, d)")


def _tf(kernel, X, Y, x, noise_var, eta, L, normalised, weights, forward_kwargs):
    d = X.shape[1]
    w = (
        weights
        if weights is not None
        else con.handset_weights(d, L, eta, noise_var, kernel, normalised=normalised)
    )
    mu_L, tau_L, path = con.tf_forward(w, X, Y, x, return_path=True, **(forward_kwargs or {}))
    return w, float(mu_L), float(tau_L), path


@checked(**_ON_CONTEXT)
def check_tf_rows(
    kernel, X, Y, x, noise_var, eta, L: int, *, normalised=False, weights=None, forward_kwargs=None
) -> ClaimResult:
    """thm:TFdoPPD (``normalised=False``) or TF^pr (``True``): rows of every ``Z^(l)``.

    Checks, for every layer ``l`` and every token: row ``d+2`` equals ``k_x`` (``kappa(x, x)`` at
    the query) after layer 0, rows ``d+3`` / ``d+4`` equal the ``(l-1)``-th iterate of the
    (preconditioned) Richardson recursions with ``v = Y`` / ``v = k_x`` computed by
    :mod:`pfntheory.maths.richardson`, and the readout ``W [Z^(L)]_{:, n+1}`` equals
    ``(f^(L-1)(x), kappa(x,x) + sigma^2 - g^(L-1)(x))``.

    Tolerance: :func:`~pfntheory.claims.richardson.roundoff_atol` with the size of the rows as scale
    (``eps n ||G||_inf / sigma^2``, see there), plus ``rtol = 16 n eps``.
    """
    _context_shapes(X, Y, x)
    n, d = X.shape
    G, k_x, kxx, _, _ = query_parts(kernel, X, Y, x, noise_var)
    w, mu_L, tau_L, path = _tf(
        kernel, X, Y, x, noise_var, eta, L, normalised, weights, forward_kwargs
    )
    F, Gv = con.expected_rows(kernel, X, Y, x, noise_var, eta, L, normalised=normalised)
    fin = np.all(np.isfinite(path))
    kx_row = np.concatenate([k_x, [kxx]])
    scale = float(
        max(np.max(np.abs(F)), np.max(np.abs(Gv)), np.max(np.abs(Y)), np.max(np.abs(kx_row)))
    )
    atol = roundoff_atol(G, noise_var, scale)
    rtol = ROUNDOFF_SAFETY * n * EPS
    with np.errstate(invalid="ignore", over="ignore"):
        dF = np.abs(path[:, con.ROW_F(d), :] - F)
        dG = np.abs(path[:, con.ROW_G(d), :] - Gv)
        dK = np.abs(path[1:, con.ROW_KX(d), :] - kx_row)
        mu_ref, tau_ref = F[-1, n], kxx + noise_var - Gv[-1, n]
        d_read = max(abs(mu_L - mu_ref), abs(tau_L - tau_ref))
    errs = {
        "row_f": float(np.max(dF)),
        "row_g": float(np.max(dG)),
        "row_kx": float(np.max(dK)),
        "readout": float(d_read),
    }
    ok = bool(
        fin
        and np.all(dF <= atol + rtol * np.abs(F))
        and np.all(dG <= atol + rtol * np.abs(Gv))
        and np.all(dK <= atol + rtol * np.abs(kx_row))
        and d_read <= atol + rtol * scale
    )
    worst = max(errs.values()) if fin else float("inf")
    return ClaimResult(
        label="sec:generalization (TF^pr)" if normalised else "thm:TFdoPPD",
        key="tfpr_rows" if normalised else "tf_rows",
        statement=(
            "rows d+3/d+4 of Z^(l) = (preconditioned) Richardson iterate l-1; "
            "readout = (mu_L, tau_L)"
        ),
        holds=ok,
        observed=worst,
        bound=atol,
        tolerance=f"atol {atol:.2e} (roundoff_atol), rtol {rtol:.1e}",
        details={**errs, "L": L, "n": n, "d": d, "finite": bool(fin)},
    )


def _tf_bounds(G, k_x, Y, noise_var, steps, normalised):
    """Upper bounds on ``|mu_L - mu|`` and ``|tau_L - tau|`` after the Richardson steps ``steps``
    (one per solver layer; every step counts, not only the first).

    Unnormalised: the theorem's bound of supp-thm:KRR with its exponent summed over the layers,
    ``exp(-(lambda_n + sigma^2) sum_l eta_l) ||k_x|| ||v|| / (lambda_n + sigma^2)``; for a constant
    step it is exactly :func:`pfntheory.maths.richardson.krr_testing_bound`. It holds when every
    ``eta_l <= 2/(lambda_1 + lambda_n + 2 sigma^2)`` (then ``|1 - eta_l (lambda_i + sigma^2)| <=
    1 - eta_l (lambda_n + sigma^2) <= exp(-eta_l (lambda_n + sigma^2))``), so a step past that range
    is caught. Normalised: the unrolled
    preconditioned query recursion, ``B_{l+1} = a_l B_l + (eta_l / s_x) ||k_x|| E_l`` and
    ``E_{l+1} = rho_l E_l``, with ``a_l = |1 - eta_l sigma^2 / s_x|``, ``rho_l`` the factor of
    ``I - eta_l D^{-1} A`` and ``E_0 = sqrt(cond D) ||u*_X||`` (D-norm to Euclidean).
    """
    steps = np.atleast_1d(np.asarray(steps, float))
    if not normalised:
        lam_n = max(float(np.linalg.eigvalsh(G)[0]), 0.0)
        scale = (
            np.exp(-(lam_n + noise_var) * float(np.sum(steps)))
            * np.linalg.norm(k_x)
            / (lam_n + noise_var)
        )
        return scale * float(np.linalg.norm(Y)), scale * float(np.linalg.norm(k_x))
    n = G.shape[0]
    A = G + noise_var * np.eye(n)
    s = rich.jacobi_preconditioner(G)
    s_x = float(np.sum(k_x))
    cD = np.sqrt(np.max(s) / np.min(s))
    rho_l = [rich.convergence_factor(A, float(e), s) for e in np.unique(steps)]
    rho_of = dict(zip(np.unique(steps), rho_l, strict=True))
    out = []
    for v in (Y, k_x):
        uX, ux = rich.krr_solution(G, k_x, v, noise_var)
        B, E = abs(float(ux)), cD * float(np.linalg.norm(uX))
        for e in steps:
            B = abs(1.0 - e * noise_var / s_x) * B + e / s_x * float(np.linalg.norm(k_x)) * E
            E = rho_of[e] * E
        out.append(B)
    return out[0], out[1]


def _solver_steps(eta, L: int) -> np.ndarray:
    """The ``L - 1`` solver steps of a depth-``L`` transformer (a scalar is repeated)."""
    e = np.atleast_1d(np.asarray(eta, float))
    return np.full(L - 1, float(e[0])) if e.size == 1 else e


def _trivial_errors(k_x, kxx, noise_var, mu, tau) -> tuple[float, float]:
    """``|TF - (mu, tau)|`` of a transformer whose solver layers do nothing: it reads out
    ``(0, kappa(x, x) + sigma^2)``, the zero iterate."""
    return abs(mu), abs(kxx + noise_var - tau)


@checked_args(
    "kernel",
    "noise_var",
    "eta",
    X=array(ndim=2, non_empty=True),
    x=array(ndim=1),
    margin=positive_scalar,
)
def informative_depth(kernel, X, x, noise_var: float, eta: float, *, margin: float = 0.5) -> int:
    """Smallest depth ``L`` at which the theorem's bound on ``|tau_L - tau|`` (constant ``eta``,
    unnormalised) is at most ``margin`` times the error of a do-nothing transformer
    (:func:`_trivial_errors`), so that a check at that depth rejects one.

    With ``C = ||k_x||^2 / (lambda_n + sigma^2)`` and ``rho = 1 - eta (lambda_n + sigma^2)``:
    ``L = 1 + ceil(log(C / (margin t)) / (1 - rho))`` with ``t = kappa(x,x) + sigma^2 - tau > 0``.
    """
    shaped(x, "x", (X.shape[1],), "to match X (n, d)")
    G = kernel(X)
    k_x = kernel(X, x[None, :])[:, 0]
    kxx = float(kernel.diag(x[None, :])[0])
    _, tau = posterior_predictive(kernel, X, np.zeros(len(X)), x[None, :], noise_var)
    t = kxx + noise_var - float(tau[0])
    lam_n = max(float(np.linalg.eigvalsh(G)[0]), 0.0)
    C = float(k_x @ k_x) / (lam_n + noise_var)
    gap = eta * (lam_n + noise_var)  # 1 - rho
    return 1 + max(0, int(np.ceil(np.log(C / (margin * t)) / gap)))


@checked(**_ON_CONTEXT)
def check_tf_convergence(
    kernel, X, Y, x, noise_var, eta, L: int, *, normalised=False, weights=None, forward_kwargs=None
) -> ClaimResult:
    """``|TF_L - (mu, tau)|`` within the theorem's bound (thm:TFdoPPD; TF^pr: sec:generalization).

    Unnormalised: the bound of supp-thm:KRR with the ``L - 1`` solver steps, each step counted
    (:func:`_tf_bounds`; the theorem's ``exp(-(1-rho)(L-1))`` form for a constant step),
    ``v = Y`` for ``mu`` and ``v = k_x`` for ``tau``. Normalised:
    the unrolled bound of the preconditioned query recursion. ``(mu, tau)`` from
    :func:`pfntheory.maths.gp.posterior_predictive` (Cholesky). A divergent transformer (inf/NaN, or
    above the bound) fails. ``details["informative"]`` says whether the bound is below the error of
    a do-nothing transformer (``(0, kappa(x,x) + sigma^2)``), i.e. whether this draw
    could reject one.

    Tolerance: ``roundoff_atol`` scaled by ``max(|mu|, tau)``.
    """
    _context_shapes(X, Y, x)
    G, k_x, kxx, mu, tau = query_parts(kernel, X, Y, x, noise_var)
    steps = _solver_steps(eta, L)
    w, mu_L, tau_L, _ = _tf(kernel, X, Y, x, noise_var, eta, L, normalised, weights, forward_kwargs)
    b_mu, b_tau = _tf_bounds(G, k_x, Y, noise_var, steps, normalised)
    atol = roundoff_atol(G, noise_var, max(abs(mu), tau))
    e_mu, e_tau = abs(mu_L - mu), abs(tau_L - tau)
    t_mu, t_tau = _trivial_errors(k_x, kxx, noise_var, mu, tau)
    fin = np.isfinite(mu_L) and np.isfinite(tau_L)
    ok = bool(fin and e_mu <= b_mu + atol and e_tau <= b_tau + atol)
    return ClaimResult(
        label="sec:generalization (TF^pr)" if normalised else "thm:TFdoPPD",
        key="tfpr_convergence" if normalised else "tf_convergence",
        statement="||TF_L - (mu, tau)||_inf within the exponential bound (L-1 Richardson steps)",
        holds=ok,
        observed=float(max(e_mu, e_tau)) if fin else float("inf"),
        bound=float(max(b_mu, b_tau)),
        tolerance=f"atol {atol:.2e}",
        details={
            "mu": mu,
            "tau": tau,
            "mu_L": mu_L,
            "tau_L": tau_L,
            "err_mu": e_mu,
            "err_tau": e_tau,
            "bound_mu": b_mu,
            "bound_tau": b_tau,
            "eta": steps.tolist(),
            "L": L,
            "trivial_err_mu": t_mu,
            "trivial_err_tau": t_tau,
            "atol": atol,
            "informative": bool(b_mu + atol < t_mu or b_tau + atol < t_tau),
        },
    )


@checked_args("L", "seed", **CONTEXT_RULES, step_frac=probability)
def check_tfpr_far_query(
    kernel, n: int, d: int, noise_var: float, *, L: int = 200, step_frac: float = 0.9, seed: int = 0
) -> ClaimResult:
    """TF^pr converges at a query only if ``|1 - eta sigma^2 / s_x| < 1``, i.e.
    ``s_x > eta sigma^2/2``.

    sec:generalization replaces the solver layers' attention by ``Attn^na`` and divides the skip
    term of every token by ``s_{x_j}``, the query's included. The query's rows then follow
    ``f^(l+1)(x) = (1 - eta sigma^2 / s_x) f^(l)(x) + (eta / s_x) sum_j kappa(x, x_j)(y_j -
    f_j^(l))``: the context part converges for every step admissible for ``D^{-1}(G + sigma^2 I)``
    (``eta < 2 / lambda_1``), but the query's own factor ``1 - eta sigma^2 / s_x`` leaves
    ``(-1, 1)`` when the query has little kernel mass on the context. The paper states no
    such condition.

    Measured: on one context of sec:sims, the hand-set TF^pr at ``step_frac`` times the admissible
    step, for a query drawn from the design (``s_x`` large) and for a query moved away from the
    inputs until ``s_x < eta sigma^2 / 2``. ``holds`` is the paper's implicit claim "TF^pr converges
    at both queries"; ``observed`` is ``|TF^pr_L - (mu, tau)|_inf`` at the far query, ``bound`` its
    value at the near query.
    """
    rng = np.random.default_rng(seed)
    X, Y, x_near = context(kernel, n, d, noise_var, rng)
    G = kernel(X)
    s = rich.jacobi_preconditioner(G)
    eta_adm = rich.admissible_step(G + noise_var * np.eye(n), s)  # 2 / lambda_1(D^-1 A)
    eta = step_frac * eta_adm
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    x_far = None
    for r in np.linspace(0.5, 20.0, 400):  # walk away from the origin until the query is "far"
        cand = r * direction
        if float(np.sum(kernel(X, cand[None, :]))) < 0.5 * eta * noise_var:
            x_far = cand
            break
    if x_far is None:
        raise ValueError("kernel: no query with s_x < eta sigma^2 / 2 within radius 20")
    out = {}
    for name, x in (("near", x_near), ("far", x_far)):
        _, k_x, _, mu, tau = query_parts(kernel, X, Y, x, noise_var)
        errs = []
        for depth in (L // 2, L):
            w = con.handset_weights(d, depth, eta, noise_var, kernel, normalised=True)
            with np.errstate(over="ignore", invalid="ignore"):
                mu_L, tau_L = con.tf_forward(w, X, Y, x)
                errs.append(float(max(abs(mu_L - mu), abs(tau_L - tau))))
        s_x = float(np.sum(k_x))
        out[name] = {
            "s_x": s_x,
            "query_factor": abs(1 - eta * noise_var / s_x),
            "error_half_depth": errs[0],
            "error": errs[1],
            "mu": mu,
            "tau": tau,
        }
    near, far = out["near"], out["far"]
    # converging: finite and the error at depth L is below the error at depth L/2
    converging = [
        bool(np.isfinite(v["error"]) and v["error"] < v["error_half_depth"]) for v in (near, far)
    ]
    # the erratum (docs/findings.md, "Normalised attention"): the paper's implicit claim fails
    # exactly at the far query, as predicted
    confirmed = bool(converging[0] and not converging[1] and far["query_factor"] > 1.0)
    return ClaimResult(
        label="sec:generalization (TF^pr)",
        key="tfpr_far_query",
        verdict=ERRATUM if confirmed else None,
        statement="TF^pr (hand-set) converges at every query for every admissible step",
        holds=bool(all(converging)),
        observed=far["error"] / far["error_half_depth"],
        bound=1.0,
        tolerance_clauses=(
            f"error ratio |TF^pr_L - (mu,tau)| / |TF^pr_(L/2) - (mu,tau)| < 1 at both the near "
            f"and the far query (L={L})",
            f"shown: the far query's ratio (near: {near['error'] / near['error_half_depth']:.3g})",
        ),
        details={
            "eta": eta,
            "eta_admissible": eta_adm,
            "noise_var": noise_var,
            "threshold_s_x": 0.5 * eta * noise_var,
            "n": n,
            "d": d,
            "L": L,
            "converging_near": converging[0],
            "converging_far": converging[1],
            "predicted_far_ratio": far["query_factor"] ** (L - L // 2),
            **{f"{k}_{q}": v for q, dct in out.items() for k, v in dct.items()},
        },
    )
