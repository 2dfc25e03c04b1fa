"""Measurements of the multi-head construction of the remark "Extension to hierarchical GPs"
(:mod:`pfntheory.maths.multihead_construction`): each head runs its component's Richardson recursion
(thm:TFdoPPD, TF^pr), the model's mixture PPD converges to the exact one at the per-component rate,
and the TV error obeys the bound of docs/multihead.md.

Every function measures and returns a :class:`~pfntheory.claims.ClaimResult`; none asserts. The
``encode`` argument builds a deliberately wrong model (heads sharing one component) for the fault
injections of ``verify/test_multihead_hier.py``.
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    as_float_array,
    check_rng,
    instance_of,
    int_tuple,
    positive_int,
    shaped,
)
from pfntheory.base.stats import EPS
from pfntheory.maths import construction as con
from pfntheory.maths import mixture_tv as mtv
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths import richardson as rich
from pfntheory.maths.gp import MixturePPD, mixture_ppd

from . import ClaimResult
from .richardson import ROUNDOFF_SAFETY, roundoff_atol

__all__ = [
    "check_heads_richardson",
    "check_mixture_rate",
    "check_tv_bound",
    "readout_weights_against_depth",
]

LABEL = "thm:TFdoPPD"
#: Tolerance of a TV by quadrature beyond its error estimate: the quadrature is asked for relative
#: accuracy 1e-10 and its estimate can be low by more where |p - q| has kinks (the crossing
#: points; measured 5.9e-10 on a TV of 0.88, 2.6e-11 on 0.30), so 1e-9 relative; 1e-12 absolute
#: for the round-off of densities of size O(1).
QUAD_RTOL = 1e-9
QUAD_ATOL = 1e-12
TOLERANCE = "quadrature error estimate + 1e-12 + 1e-9 TV (kinks of |p - q|)"


def _components(kernels, noise_var, X, Y, x):
    kernels, noise_var = mh.mixture_components(kernels, noise_var)
    X = as_float_array(X, "X", ndim=2, non_empty=True)
    Y = shaped(as_float_array(Y, "Y", ndim=1), "Y", (X.shape[0],), "(one label per row of X)")
    x = shaped(as_float_array(x, "x", ndim=1), "x", (X.shape[1],), "(one point of X's d)")
    return kernels, noise_var, X, Y, x


def _path_readout(w: mh.MultiHeadWeights, path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer per-head readouts of a path; NaN at the layers where the path is not finite (a
    divergent model), so that the check reports it instead of refusing it."""
    finite = np.all(np.isfinite(path), axis=(-2, -1))  # (L + 1,)
    mu, tau = mh.readout_path(w, np.where(np.isfinite(path), path, 0.0))
    mu[~finite], tau[~finite] = np.nan, np.nan
    return mu, tau


def check_heads_richardson(
    kernels, noise_var, X, Y, x, eta, L: int, *, normalised: bool = False, encode=None
) -> ClaimResult:
    """Every head's rows ``k_h, f_h, g_h`` of every ``Z^(l)`` equal component ``h``'s
    (preconditioned) Richardson iterates (:func:`pfntheory.maths.construction.expected_rows`, from
    the component's own Gram matrix), and the head's readout equals
    ``(f_h, kappa_h(x,x) + sigma_h^2 - g_h)``.

    Tolerance per head: :func:`~pfntheory.claims.richardson.roundoff_atol` of its component with the
    size of its rows, plus ``rtol = 16 n eps`` (as for the single head, check_tf_rows).
    """
    kernels, noise_var, X, Y, x = _components(kernels, noise_var, X, Y, x)
    n, d = X.shape
    H = len(kernels)
    w = mh.multihead_weights(d, L, kernels, noise_var, eta, normalised=normalised, encode=encode)
    out = mh.multihead_forward(w, X, Y, x, return_path=True)
    assert out.path is not None
    rows = mh.token_rows(d, H)
    mu_p, tau_p = _path_readout(w, out.path)
    steps = mh.head_steps(eta, H, L)
    worst_ratio, per_head, ok = 0.0, [], bool(np.all(np.isfinite(out.path)))
    for h, (k, noise_var_h) in enumerate(zip(kernels, noise_var, strict=True)):
        F, Gv = con.expected_rows(k, X, Y, x, noise_var_h, steps[h], L, normalised=normalised)
        kx_row = np.concatenate([k(X, x[None, :])[:, 0], k.diag(x[None, :])])
        scale = float(max(np.max(np.abs(F)), np.max(np.abs(Gv)), np.max(np.abs(Y)), 1.0))
        atol = roundoff_atol(k(X), noise_var_h, scale)
        rtol = ROUNDOFF_SAFETY * n * EPS
        with np.errstate(invalid="ignore", over="ignore"):
            errs = {
                "f": np.abs(out.path[:, rows["f"][h]] - F) / (atol + rtol * np.abs(F)),
                "g": np.abs(out.path[:, rows["g"][h]] - Gv) / (atol + rtol * np.abs(Gv)),
                "k": np.abs(out.path[1:, rows["k"][h]] - kx_row) / (atol + rtol * np.abs(kx_row)),
                "mu": np.abs(mu_p[-1, h] - F[-1, n]) / (atol + rtol * scale),
                "tau": np.abs(tau_p[-1, h] - (kx_row[-1] + noise_var_h - Gv[-1, n]))
                / (atol + rtol * scale),
            }
        r = max(float(np.max(v)) for v in errs.values())
        r = r if np.isfinite(r) else float("inf")
        per_head.append({"ratio": r, "atol": atol})
        worst_ratio = max(worst_ratio, r)
        ok = ok and r <= 1.0
    return ClaimResult(
        label=LABEL,
        key="multihead_rows",
        statement="head h's rows of Z^(l) = component h's Richardson iterate l-1 (every layer)",
        holds=bool(ok),
        observed=worst_ratio,
        bound=1.0,
        tolerance="per head: roundoff_atol (eps n ||G_h||_inf / sigma_h^2) + 16 n eps relative",
        details={"per_head": per_head, "L": L, "n": n, "d": d, "H": H, "normalised": normalised},
    )


def _do_nothing_tv(ppd: MixturePPD, kxx, noise_var) -> float:
    """TV between the exact mixture and a model whose solver layers do nothing (the zero iterate:
    every head reads ``(0, kappa_h(x,x) + sigma_h^2)``), with the exact weights."""
    lazy = MixturePPD(weights=ppd.weights, mu=np.zeros_like(ppd.mu), tau=(kxx + noise_var)[:, None])
    return mtv.mixture_tv(ppd, lazy)[0]


def check_mixture_rate(kernels, noise_var, X, Y, x, eta, Ls, *, encode=None) -> ClaimResult:
    """With the exact mixture weights, the hand-set model's mixture PPD converges to the exact one
    at thm:TFdoPPD's per-component rate: for every depth ``L`` in ``Ls``

    ``TV(p, q_L) <= sum_h w_h B_h(L)``, ``B_h`` =
    :func:`pfntheory.maths.multihead_construction.gaussian_tv_bound` of the theorem's bounds on
    ``|mu_L - mu|`` and ``|tau_L - tau|`` (supp-thm:KRR with ``L - 1`` steps of a constant step
    ``eta_h < 1/(lambda_1 + sigma_h^2)``, :func:`pfntheory.maths.richardson.krr_testing_bound`, ``v
    = Y`` and ``v = k_x``), i.e. ``O(sum_h w_h exp(-(1 - rho_h)(L - 1)))``. Unnormalised heads (the
    theorem's TF). ``details["informative"]``: at the deepest ``L`` the bound is below half the TV
    of a model whose solver layers do nothing, so the check could reject one.

    Tolerance: :data:`TOLERANCE`.
    """
    kernels, noise_var, X, Y, x = _components(kernels, noise_var, X, Y, x)
    n, d = X.shape
    H = len(kernels)
    Ls = sorted(set(int_tuple(Ls, "Ls", minimum=1)))
    steps = mh.head_steps(eta, H, Ls[-1])
    w = mh.multihead_weights(d, Ls[-1], kernels, noise_var, eta, encode=encode)
    out = mh.multihead_forward(w, X, Y, x, return_path=True)
    assert out.path is not None
    mu_p, tau_p = _path_readout(w, out.path)  # (L+1, H)
    ppd = mixture_ppd(kernels, noise_var, np.exp(w.log_prior), X, Y, x[None, :])  # exact, float64
    tau, wts = ppd.tau[:, 0], ppd.weights
    rows, ok = [], True
    for L in Ls:
        b = []
        for h, (k, noise_var_h) in enumerate(zip(kernels, noise_var, strict=True)):
            G, k_x = k(X), k(X, x[None, :])[:, 0]
            b_mu = float(rich.krr_testing_bound(G, k_x, Y, noise_var_h, steps[h], L - 1))
            b_tau = float(rich.krr_testing_bound(G, k_x, k_x, noise_var_h, steps[h], L - 1))
            b.append(float(mtv.gaussian_tv_bound(b_mu, b_tau, tau[h])))
        bound = float(np.sum(wts * np.asarray(b)))
        fin = bool(np.all(np.isfinite(mu_p[L])) and np.all(tau_p[L] > 0))
        if fin:
            model = MixturePPD(weights=wts, mu=mu_p[L][:, None], tau=tau_p[L][:, None])
            tv, err = mtv.mixture_tv(ppd, model)
        else:
            tv, err = float("inf"), 0.0
        holds = tv <= bound + err + QUAD_ATOL + QUAD_RTOL * tv
        ok = ok and holds
        rows.append({"L": L, "tv": tv, "bound": bound, "quad_err": err, "holds": holds})
    kxx = np.array([float(k.diag(x[None, :])[0]) for k in kernels])
    lazy = _do_nothing_tv(ppd, kxx, noise_var)
    return ClaimResult(
        label=LABEL,
        key="multihead_rate",
        statement=(
            "with exact weights, TV(exact mixture PPD, model) <= sum_h w_h B_h(L), B_h from "
            "thm:TFdoPPD's per-component moment bounds"
        ),
        holds=bool(ok),
        observed=max(r["tv"] / max(r["bound"], 1e-300) for r in rows),
        bound=1.0,
        tolerance=TOLERANCE,
        details={
            "rows": rows,
            "do_nothing_tv": lazy,
            "informative": bool(rows[-1]["bound"] < 0.5 * lazy),
            "weights": wts.tolist(),
            "n": n,
            "d": d,
            "H": H,
        },
    )


def check_tv_bound(kernels, noise_var, X, Y, x, eta, L: int, logdet, *, normalised=False):
    """The TV bound of docs/multihead.md on the hand-set model with an approximate readout.

    With ``w'`` the readout's weights (``logdet``: a
    :class:`~pfntheory.maths.multihead_construction.LogdetReadout` or an array of log-determinants)
    and ``q_h = N(mu_h^L, tau_h^L)``: (a) ``TV(p, q) <= TV(w, w') + sum_h w'_h TV(p_h, q_h)`` (exact
    Gaussian TVs) and (b) ``TV(p_h, q_h) <= gaussian_tv_bound(mu_h^L - mu_h, tau_h^L - tau_h,
    tau_h)`` per head.

    Tolerance: :data:`TOLERANCE` for (a); ``1e-12`` for (b) (closed forms of O(1) CDF values).
    """
    kernels, noise_var, X, Y, x = _components(kernels, noise_var, X, Y, x)
    d = X.shape[1]
    w = mh.multihead_weights(d, L, kernels, noise_var, eta, normalised=normalised)
    out = mh.multihead_forward(w, X, Y, x)
    ppd = mixture_ppd(kernels, noise_var, np.exp(w.log_prior), X, Y, x[None, :])
    mu, tau, wts = ppd.mu[:, 0], ppd.tau[:, 0], ppd.weights
    w_model = np.exp(mh.readout_log_weights(out, w.log_prior, logdet))
    if not (np.all(np.isfinite(out.mu)) and np.all(out.tau > 0)):
        return ClaimResult(
            label=LABEL,
            key="multihead_tv_bound",
            statement="model readout not a valid mixture (non-finite mean or tau <= 0)",
            holds=False,
            observed=float("inf"),
        )
    model = mh.model_ppd(out, np.log(w_model))
    tv, err = mtv.mixture_tv(ppd, model)
    tv_h = mtv.gaussian_tv(mu, tau, out.mu, out.tau)
    b_h = mtv.gaussian_tv_bound(out.mu - mu, out.tau - tau, tau)
    tv_w = 0.5 * float(np.sum(np.abs(wts - w_model)))
    bound_a = float(mtv.mixture_tv_bound(wts, w_model, tv_h))
    bound_b = float(mtv.mixture_tv_bound(wts, w_model, b_h))
    ok_a = tv <= bound_a + err + QUAD_ATOL + QUAD_RTOL * tv
    ok_b = bool(np.all(tv_h <= b_h + 1e-12))
    return ClaimResult(
        label=LABEL,
        key="multihead_tv_bound",
        statement=(
            "TV(exact, model) <= TV(w, w') + sum_h w'_h TV(p_h, q_h) <= TV(w, w') + "
            "sum_h w'_h B(moment errors)"
        ),
        holds=bool(ok_a and ok_b),
        observed=tv,
        bound=bound_b,
        tolerance=TOLERANCE,
        details={
            "tv": tv,
            "tv_weights": tv_w,
            "bound_exact_components": bound_a,
            "bound_moments": bound_b,
            "tv_components": tv_h.tolist(),
            "bound_components": b_h.tolist(),
            "holds_a": bool(ok_a),
            "holds_b": ok_b,
            "quad_err": err,
        },
    )


def readout_weights_against_depth(
    task, n: int, Ls, n_instances: int, rng, *, steps: str = "stationary"
) -> dict:
    """How deep the hand-set model must be for its weight readout to find the posterior weights.

    On ``n_instances`` contexts of ``task``'s prior (component drawn uniformly, then ``X``, ``Y``),
    the TF^pr heads at each depth ``L``; the readout's quadratic term ``sigma_h^{-2} sum_i y_i (y_i
    - f_{h,i}^(L))`` with the exact log-determinant (the oracle, so that only the recursion's
    convergence shows), and ``TV(w, w')`` to the exact posterior weights.

    ``steps``: ``"stationary"``, the constant step ``1/(1 + sigma_h^2)`` (the trained model's
    initialisation); ``"chebyshev"``, per-layer steps at the Chebyshev nodes of the prior's range
    ``[sigma_h^2 / n, 1 + sigma_h^2]`` of the Jacobi-preconditioned system, Leja order
    (:mod:`pfntheory.maths.chebyshev`: fixed weights for every context of size ``n``, depth
    ``~ sqrt(kappa)``); ``"chebyshev-prior"``, the range ``[min lambda_min, 1 + sigma_h^2]`` with
    the minimum over 32 designs of the prior (the range's top is the proven one: missing it would
    diverge; a context whose ``lambda_min`` lies below the bottom only converges slower there, as
    ``|p_L| <= 1`` on ``[0, lo]``), also fixed weights; ``"chebyshev-context"``, each context's own
    spectrum range per component (an oracle: an eigensolve per context).

    Returns
    -------
    dict
        ``{"n", "steps", "L": [...], "tv_w": [[per-instance TV at each L]...], "mean": [...]}``.
    """
    from pfntheory.infra.config import TaskSpec, prior_components
    from pfntheory.maths import chebyshev as ch
    from pfntheory.maths.kernels import RBFKernel
    from pfntheory.maths.richardson import jacobi_preconditioner, spectrum
    from pfntheory.maths.spectral import sample_design

    task = instance_of(TaskSpec)(task, "task")
    kernels, noise_var = prior_components(task)
    if not all(isinstance(k, RBFKernel) for k in kernels):
        raise ValueError(f"task must have RBF components (TF^pr heads), got kind {task.kind!r}")
    kinds = ("stationary", "chebyshev", "chebyshev-prior", "chebyshev-context")
    if steps not in kinds:
        raise ValueError(f"steps must be one of {kinds}, got {steps!r}")
    n = positive_int(n, "n")
    n_instances = positive_int(n_instances, "n_instances")
    rng = check_rng(rng)
    Ls = sorted(set(int_tuple(Ls, "Ls", minimum=2 if steps != "stationary" else 1)))
    H, d = len(kernels), task.d
    stationary = [1.0 / (1.0 + noise_var_h) for noise_var_h in noise_var]
    w = mh.multihead_weights(d, Ls[-1], kernels, noise_var, stationary, normalised=True)
    rows = mh.token_rows(d, H)

    def lam_range(X, k, s2):
        G = k(X)
        lam = spectrum(G + s2 * np.eye(len(X)), jacobi_preconditioner(G))
        return float(lam[-1]), float(lam[0])

    prior = None
    if steps == "chebyshev-prior":  # from designs of their own stream (the contexts' unchanged)
        r2 = np.random.default_rng(rng.integers(2**32))
        designs = [sample_design(n, d, r2, task.covariates) for _ in range(32)]
        prior = [
            (min(lam_range(Xm, k, s2)[0] for Xm in designs), 1.0 + s2)
            for k, s2 in zip(kernels, noise_var, strict=True)
        ]
    tv_w = []
    for _ in range(n_instances):
        X, x = (
            sample_design(n, d, rng, task.covariates),
            sample_design(1, d, rng, task.covariates)[0],
        )
        h0 = int(rng.integers(H))
        Y = np.linalg.cholesky(kernels[h0](X) + noise_var[h0] * np.eye(n)) @ rng.normal(size=n)
        exact = np.exp(mh.exact_log_weights(kernels, noise_var, w.log_prior, X, Y))
        logdet = mh.exact_logdet(kernels, noise_var, X)

        def tv_of(q, logdet=logdet, exact=exact):
            z = w.log_prior - 0.5 * q - 0.5 * logdet
            wq = np.exp(z - z.max())
            return 0.5 * float(np.sum(np.abs(wq / wq.sum() - exact)))

        if steps == "stationary":
            out = mh.multihead_forward(w, X, Y, x, return_path=True)
            assert out.path is not None
            tv_w.append(
                [tv_of(np.sum(Y * (Y - out.path[L][rows["f"], :n]), -1) / noise_var) for L in Ls]
            )
            continue
        if steps == "chebyshev":
            ranges = [ch.prior_range(s2, n) for s2 in noise_var]
        elif prior is not None:
            ranges = prior
        else:
            ranges = [lam_range(X, k, s2) for k, s2 in zip(kernels, noise_var, strict=True)]
        row = []
        for L in Ls:
            eta = [ch.chebyshev_steps(lo, hi, L - 1) for lo, hi in ranges]
            wL = mh.multihead_weights(d, L, kernels, noise_var, eta, normalised=True)
            row.append(tv_of(mh.multihead_forward(wL, X, Y, x).quad))
        tv_w.append(row)
    return {"n": n, "steps": steps, "L": Ls, "tv_w": tv_w, "mean": np.mean(tv_w, 0).tolist()}
