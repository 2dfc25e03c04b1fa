"""TF^pr with its first layer normalised too (sec:generalization read as "each head", the public
code's reading): the hand-set construction's variance channel converges to the limit of
:mod:`pfntheory.maths.first_layer`, and no affine readout of its channels recovers ``tau``.

Each function measures and returns a :class:`~pfntheory.claims.ClaimResult`. Derivation and
tolerances: docs/exact-side.md, "The first layer normalised".
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    check_kernel,
    checked,
    mapping,
    optional,
    positive_int,
    positive_scalar,
    shaped,
)
from pfntheory.base.stats import EPS
from pfntheory.maths import construction as con
from pfntheory.maths import first_layer as fl
from pfntheory.maths import richardson as rich
from pfntheory.maths.kernels import RBFKernel

from . import ClaimResult
from .construction import _ON_CONTEXT
from .richardson import ROUNDOFF_SAFETY, roundoff_atol

__all__ = ["limit_bound", "check_first_layer_limit", "check_no_affine_readout"]

#: Smallest worst-case error of an affine readout that counts as "none recovers tau": far above the
#: round-off of the channels (``~1e-15`` relative; the two equal ``z_tau`` of the counterexample
#: agree to a few ``1e-16``, the public code's offset moves them ``~1e-6`` apart, which the third
#: query's line makes irrelevant), far below the measured errors (``0.2`` at the paper's task).
READOUT_TOLERANCE = 1e-8

#: The arguments of a limit check on one context: those of the construction's checks
#: (:mod:`.construction`), with a step that must be given.
_LIMIT_RULES = {
    **{k: v for k, v in _ON_CONTEXT.items() if k != "forward_kwargs"},
    "eta": positive_scalar,
}


@checked(**{k: v for k, v in _LIMIT_RULES.items() if k != "Y"})
def limit_bound(kernel, X, x, noise_var: float, eta: float, L: int) -> tuple[float, float]:
    """Upper bounds on the distance of the normalised-first TF^pr's variance row after ``L``
    layers (``L - 1`` preconditioned Richardson steps with ``v = alpha^2 1``, step ``eta``) to its
    limit: ``(max over the context tokens, at the query)``.

    The context error ``e^l = (I - eta D^{-1} A)^l e^0`` (``A = G + sigma^2 I``, ``D = diag(G 1)``)
    contracts by ``rho = max |1 - eta lambda(D^{-1} A)|`` in the ``D``-norm, so
    ``||e^l||_2 <= sqrt(d_max / d_min) rho^l ||e^0||_2``. The query's
    ``eps^{l+1} = beta eps^l - (eta / s_x) k_x^T e^l`` with ``beta = 1 - eta sigma^2 / s_x``
    (eqn:recursion prec) gives ``|eps^m| <= |beta|^m |eps^0| + (eta / s_x) ||k_x||_2
    sqrt(d_max / d_min) ||e^0||_2 sum_{l < m} |beta|^{m-1-l} rho^l``. Both tend to 0 when
    ``rho < 1`` and ``|beta| < 1``; otherwise the bounds are inf.
    """
    shaped(x, "x", (X.shape[1],), "to match X (n, d)")
    lim = fl.variance_limit(kernel, X, x, noise_var)
    G = kernel(X)
    D = rich.jacobi_preconditioner(G)
    A = G + noise_var * np.eye(len(G))
    rho = rich.convergence_factor(A, eta, D)
    k_x = kernel(X, x[None, :])[:, 0]
    beta = abs(1.0 - eta * noise_var / k_x.sum())  # s_x = sum_i k(x_i, x)
    if rho >= 1 or beta >= 1:
        return float("inf"), float("inf")
    c_ctx = float(np.sqrt(D.max() / D.min())) * float(np.linalg.norm(lim.g_context))  # e^0 = -g*
    m = L - 1  # Richardson steps of a depth-L transformer
    j = np.arange(m)
    series = float(np.sum(beta ** (m - 1 - j) * rho**j))  # sum_{l < m} beta^{m-1-l} rho^l
    ctx = c_ctx * rho**m
    query = beta**m * abs(lim.z_tau) + eta / k_x.sum() * np.linalg.norm(k_x) * c_ctx * series
    return float(ctx), float(query)


@checked(**_LIMIT_RULES, forward_kwargs=optional(mapping))
def check_first_layer_limit(
    kernel, X, Y, x, noise_var, eta, L: int, *, forward_kwargs=None
) -> ClaimResult:
    """The hand-set TF^pr (supp-eqn:weights, normalised) with eqn:1st attn normalised too: its row
    ``d+2`` is ``alpha^2`` at every token, its row ``d+4`` is the preconditioned Richardson
    iterate with ``v = alpha^2 1`` (to round-off), and its distance to the limit
    ``(G + sigma^2 I)^{-1} G c`` / ``k_x^T (G + sigma^2 I)^{-1} c`` is within
    :func:`limit_bound` (which tends to 0 with ``L``), as is the readout's distance to
    ``sigma^2 + alpha^2 - z_tau``.

    Tolerance: the bound plus :func:`~pfntheory.claims.richardson.roundoff_atol` with the size of
    the rows as scale, and ``rtol = 16 n eps`` on the row identities. ``forward_kwargs`` override
    those of :func:`~pfntheory.maths.construction.tf_forward` (fault injection:
    ``{"normalise_first_layer": False}`` runs our reading against this limit).
    """
    n, d = X.shape
    shaped(Y, "Y", (n,), "to match X (n, d)")
    shaped(x, "x", (d,), "to match X (n, d)")
    w = con.handset_weights(d, L, eta, noise_var, kernel, normalised=True)
    kw = {"normalise_first_layer": True, **(forward_kwargs or {})}
    _, tau_L, path = con.tf_forward(w, X, Y, x, return_path=True, **kw)
    _, Gv = con.expected_rows(
        kernel, X, Y, x, noise_var, eta, L, normalised=True, normalise_first=True
    )
    lim = fl.variance_limit(kernel, X, x, noise_var)
    ctx_bound, query_bound = limit_bound(kernel, X, x, noise_var, eta, L)
    scale = float(max(np.max(np.abs(Gv)), np.max(np.abs(lim.row)), abs(lim.z_tau), 1.0))
    atol = roundoff_atol(kernel(X), noise_var, scale)
    rtol = ROUNDOFF_SAFETY * n * EPS
    fin = bool(np.all(np.isfinite(path)))
    with np.errstate(invalid="ignore", over="ignore"):
        d_row_k = float(np.max(np.abs(path[1:, con.ROW_KX(d), :] - lim.row)))
        d_rows = np.abs(path[:, con.ROW_G(d), :] - Gv)
        g_L = path[-1, con.ROW_G(d), :]
        d_ctx = float(np.max(np.abs(g_L[:n] - lim.g_context)))
        d_query = float(abs(g_L[n] - lim.z_tau))
        d_tau = float(abs(tau_L - lim.tau_L))
    ok = (
        fin
        and d_row_k <= atol + rtol * np.max(np.abs(lim.row))
        and bool(np.all(d_rows <= atol + rtol * np.abs(Gv)))
        and d_ctx <= ctx_bound + atol
        and d_query <= query_bound + atol
        and d_tau <= query_bound + atol  # tau_L = sigma^2 + z_k - g_L(x): the query's error
    )
    return ClaimResult(
        label="sec:generalization (TF^pr)",
        key="first_layer_limit",
        statement=(
            "TF^pr with its first layer normalised: row d+2 = alpha^2, row d+4 -> "
            "(G + sigma^2 I)^-1 G c, k_x^T (G + sigma^2 I)^-1 c, within the derived bound"
        ),
        holds=bool(ok),
        observed=d_query,
        bound=query_bound + atol,
        tolerance=(
            f"limit_bound (context {ctx_bound:.2e}, query {query_bound:.2e}) + atol {atol:.2e} "
            f"(roundoff_atol); rows to the recursion within atol + rtol {rtol:.1e}"
        ),
        details={
            "row_k": d_row_k,
            "rows_vs_recursion": float(np.max(d_rows)) if fin else float("inf"),
            "context": d_ctx,
            "query": d_query,
            "readout": d_tau,
            "context_bound": ctx_bound,
            "query_bound": query_bound,
            "z_tau_limit": lim.z_tau,
            "tau_L_limit": lim.tau_L,
            "tau": lim.tau,
            "L": int(L),
            "n": int(n),
            "d": int(d),
        },
    )


@checked(kernel=check_kernel, noise_var=positive_scalar, d=positive_int)
def check_no_affine_readout(
    kernel, noise_var: float, d: int = 1, a: float | None = None, eps: float = 0.0
) -> ClaimResult:
    """No readout ``a + b z_k + c z_tau`` of the normalised-first construction's limit channels is
    ``tau`` on every context: on the three queries of
    :func:`pfntheory.maths.first_layer.readout_counterexample` every such readout errs by at least
    their :func:`~pfntheory.maths.first_layer.affine_minimax_error` somewhere. Holds when that least
    error exceeds :data:`READOUT_TOLERANCE`; a readout that could recover ``tau`` (an affine
    relation between the channels and ``tau``) would give an error at round-off.

    ``eps``: the first layer's normaliser offset (0 ours, :data:`~pfntheory.maths.first_layer.
    CODE_EPS` the public code's).
    """
    if not isinstance(kernel, RBFKernel):
        raise ArgumentTypeError(f"kernel must be an RBFKernel, got {type(kernel).__name__}")
    ce = fl.readout_counterexample(kernel, noise_var, d, a, eps)
    z_tau, tau = ce.z_tau, ce.tau
    return ClaimResult(
        label="sec:generalization (TF^pr)",
        key="first_layer_readout",
        statement=(
            "with its first layer normalised, no readout a + b z_k + c z_tau of the "
            "construction's channels recovers tau"
        ),
        holds=bool(ce.minimax_error > READOUT_TOLERANCE),
        observed=ce.minimax_error,
        bound=READOUT_TOLERANCE,
        tolerance=(
            f"least worst-case error of any such readout on three queries > "
            f"{READOUT_TOLERANCE:.0e} (round-off of the channels ~1e-15)"
        ),
        details={
            "z_k": ce.z_k.tolist(),
            "z_tau": z_tau.tolist(),
            "tau": tau.tolist(),
            "construction_tau_L": [lim.tau_L for lim in ce.limits],
            "equal_z_tau_gap": float(abs(z_tau[0] - z_tau[1])),
            "tau_gap": float(abs(tau[0] - tau[1])),
            "eps": float(eps),
            "d": int(d),
        },
    )
