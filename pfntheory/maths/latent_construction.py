"""Newton's method for Laplace GP classification written as the paper's attention updates
(the Discussion's conjecture, built in the style of thm:TFdoPPD; docs/latent.md, "The
construction").

One Newton step of R&W Algorithm 3.1, ``f_new = (K^-1 + W)^-1 (W f + grad)``, is GP regression on
the working response ``y~ = f + grad / W`` with heteroscedastic noise ``W^-1``: its fixed point
solves ``(I + K W) u = K W y~``, a system similar to ``B = I + W^1/2 K W^1/2`` (``W^1/2 (I + K W)
W^-1/2 = B``), i.e. the paper's system ``(G + sigma^2 I) u = G v`` on the reweighted Gram
``G = W^1/2 K W^1/2`` with ``sigma^2 = 1``. Its Richardson step is an attention layer of
eqn:std attn, ``Z + V Z h(KZ, QZ) M + S Z``:

* the score of key ``i`` and query ``j`` is ``kappa(x_i, x_j) W_i``: the key map reads the row
  ``t_i = sqrt(-2 log W_i)`` that the query map leaves at 0, so the unit RBF score
  ``exp(-||x_i - x_j||^2 / (2 ell^2) - t_i^2 / 2)`` carries the weight ``W_i`` (``W in (0, 1)``
  for the probit link);
* the value ``eta alpha^2 (y~_i - f_i)`` and the skip ``-eta f_j`` give
  ``f_j <- f_j + eta (sum_i kappa(x_i, x_j) W_i (y~_i - f_i) - f_j)`` at every token, so the
  context rows converge to the Newton iterate and the query row to ``k*^T a``
  (``a = K^-1 f_new``, the Laplace mean's form ``k*^T grad``);
* the same layer runs the variance row ``g`` on the values ``k_x`` (eqn:recur var), converging to
  ``k*^T (W^-1 + K)^-1 k*``.

Between Newton blocks a token-wise map (the MLP of a transformer block, exact here) writes
``t = sqrt(-2 log W(f, y))`` and ``y~ = f + grad / W`` from each token's ``f`` and ``y``. The
readout of the query token is ``P(y* = 1) = Phi(mu / sqrt(1 + s^2))`` with ``mu = f_q`` and
``s^2 = k_x(q) - g_q``: the paper's binned-Gaussian head with the two bins ``(-inf, 0], (0, inf)``
and variance ``1 + s^2``.

Token rows (0-based): ``x`` (0..d-1), ``y`` (d; 1 at the query as in thm:TFdoPPD), ``k_x`` (d+1),
``f`` (d+2), ``g`` (d+3), ``t`` (d+4), ``y~`` (d+5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfntheory.base._checks import (
    as_float_array,
    choice,
    positive_array,
    positive_int,
    positive_scalar,
    shaped,
)

from . import latent
from .construction import attention_scores
from .kernels import RBFKernel

__all__ = [
    "FAULTS",
    "NewtonTFResult",
    "solver_layer_weights",
    "token_map",
    "newton_tf_forward",
    "inner_factor",
    "newton_constant",
    "probit_third_derivative_bound",
]

#: Deliberately broken variants, for the fault-injection checks only: the gradient map with the
#: wrong sign (``y~ = f - grad / W``), or ``W`` taken from the latent of the previous Newton step.
FAULTS = ("grad_sign", "stale_W")
#: Most layers one forward runs (the depth ``1 + (L_out + 1) L_in``).
MAX_LAYERS = 10**6


def _rows(d: int) -> dict[str, int]:
    return {"y": d, "kx": d + 1, "f": d + 2, "g": d + 3, "t": d + 4, "yt": d + 5}


def solver_layer_weights(
    d: int, eta: float, kernel: RBFKernel, *, update_f: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``K, Q, V, S`` (each ``(d+6, d+6)``) of one reweighted Richardson layer (module docstring).

    ``update_f=False`` freezes the ``f`` row (the variance block after the last Newton step).
    """
    d = positive_int(d, "d")
    eta = positive_scalar(eta, "eta")
    _rbf(kernel)
    r, dt = _rows(d), d + 6
    Kw = np.zeros((dt, dt))
    Kw[np.arange(d), np.arange(d)] = 1.0 / kernel.lengthscale  # x / ell, as supp-eqn:weights
    Qw = Kw.copy()
    Kw[r["t"], r["t"]] = 1.0  # key side only: score factor exp(-t_i^2 / 2) = W_i
    V, S = np.zeros((dt, dt)), np.zeros((dt, dt))
    a2 = kernel.alpha**2
    if update_f:
        V[r["f"], r["yt"]], V[r["f"], r["f"]] = eta * a2, -eta * a2  # eta kappa W (y~ - f)
        S[r["f"], r["f"]] = -eta  # -eta sigma^2 f with sigma^2 = 1
    V[r["g"], r["kx"]], V[r["g"], r["g"]] = eta * a2, -eta * a2  # eta kappa W (k_x - g)
    S[r["g"], r["g"]] = -eta
    return Kw, Qw, V, S


def _rbf(kernel) -> RBFKernel:
    if not isinstance(kernel, RBFKernel):
        raise ValueError(f"kernel must be an RBFKernel, got {type(kernel).__name__}")
    return kernel


def token_map(Z: np.ndarray, d: int, link: str = "probit", *, W_from=None, fault=None):
    """The token-wise map between Newton blocks: rows ``t = sqrt(-2 log W)`` and
    ``y~ = f + grad / W`` from rows ``f`` and ``y`` of every token (``W_from``: the latent that
    ``W`` and the gradient are read from, default row ``f``). Returns a new array and ``W``.

    ``Z`` has shape ``(..., d + 6, N)`` (module docstring), row ``y`` holding labels in {-1, +1}.
    """
    d = positive_int(d, "d")
    Z = as_float_array(Z, "Z", min_ndim=2, non_empty=True)
    if Z.shape[-2] != d + 6:
        raise ValueError(f"Z must have d + 6 = {d + 6} rows for d={d}, got shape {Z.shape}")
    if not np.all(np.isin(Z[..., d, :], (-1.0, 1.0))):
        raise ValueError(f"Z's row y (row d={d}) must hold labels in {{-1, +1}}")
    if W_from is not None:
        W_from = shaped(as_float_array(W_from, "W_from"), "W_from", Z[..., d + 2, :].shape)
    if fault is not None:
        choice(fault, "fault", FAULTS)
    return _token_map(Z, d, choice(link, "link", latent.LINKS), W_from=W_from, fault=fault)


def _token_map(Z, d, link, *, W_from=None, fault=None):
    r = _rows(d)
    f = Z[..., r["f"], :] if W_from is None else W_from
    grad, W = latent._likelihood_derivatives(Z[..., r["y"], :], f, link)
    Z = Z.copy()
    sign = -1.0 if fault == "grad_sign" else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):  # a diverging fault underflows W
        Z[..., r["t"], :] = np.sqrt(-2.0 * np.log(W))
        Z[..., r["yt"], :] = Z[..., r["f"], :] + sign * grad / W
    return Z, W


def inner_factor(K, W, eta: float) -> float:
    """Richardson contraction factor ``max_i |1 - eta lambda_i(B)|`` of ``B = I + W^1/2 K W^1/2``
    (the spectrum of ``I + K W``). ``K``: a Gram matrix (symmetric positive semi-definite)."""
    K = latent._gram(K)
    W = shaped(positive_array(W, "W", ndim=1), "W", (K.shape[0],), "to match K")
    eta = positive_scalar(eta, "eta")
    sW = np.sqrt(W)
    lam = np.linalg.eigvalsh(np.eye(len(sW)) + sW[:, None] * K * sW[None, :])
    return float(np.max(np.abs(1.0 - eta * lam)))


def _optimal_eta(K, W) -> float:
    sW = np.sqrt(W)
    lam = np.linalg.eigvalsh(np.eye(len(W)) + sW[:, None] * K * sW[None, :])
    return 2.0 / (lam[0] + lam[-1])  # eta* = 2 / (lambda_1 + lambda_n)


def probit_third_derivative_bound() -> float:
    """``c3 = sup_z |d^3 log Phi(z) / dz^3|`` (the Lipschitz constant of ``W``), from a grid of
    step 1e-4 on [-40, 40] plus 1% (the derivative is smooth, so the grid misses the sup by far
    less)."""
    z = np.arange(-40.0, 40.0, 1e-4)
    r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - latent.log_ndtr(z))  # N/Phi
    dW = r - (2 * r + z) * r * (z + r)  # d/dz (r^2 + z r), with r' = -r (z + r)
    return float(np.max(np.abs(dW)) * 1.01)


def newton_constant(K) -> float:
    """``M = c3 lambda_max(K) / 2``: exact Newton for probit Laplace satisfies
    ``||f^(t+1) - f_hat|| <= M ||f^(t) - f_hat||^2`` (docs/latent.md, "Rates"). ``K``: a Gram
    matrix (symmetric positive semi-definite)."""
    K = latent._gram(K)
    return probit_third_derivative_bound() * float(np.linalg.eigvalsh(K)[-1]) / 2.0


@dataclass(frozen=True)
class NewtonTFResult:
    """Output of :func:`newton_tf_forward`: the query's ``mu``, ``s2`` and ``p = P(y* = 1)``; the
    row ``f`` after every Newton block (``(L_out + 1, n + 1)``, block 0 = the input, the query
    last) and the step and contraction factor of each block."""

    mu: float
    s2: float
    p: float
    f_path: np.ndarray
    etas: tuple[float, ...]
    factors: tuple[float, ...]
    layers: int


def _attn_layer(Z, Kw, Qw, V, S, Mask):
    H = attention_scores(Kw @ Z, Qw @ Z, "rbf") * Mask  # (N, N): kappa/alpha^2 W_i, keys i
    return Z + V @ Z @ H + S @ Z  # eqn:std attn


def _exact_block(Z, r, K, Wc, k_star, variance):
    """Write the fixed point of a block's layers into ``Z`` (in place): ``u = (I + K W)^-1 K W v``
    at the context and ``k*^T W (v - u)`` at the query, for ``v = y~`` (row f) and ``k_x`` (row g).
    """
    n = len(Wc)
    KW = K * Wc[None, :]
    if not variance:
        u = np.linalg.solve(np.eye(n) + KW, KW @ Z[r["yt"], :n])
        Z[r["f"], n] = k_star @ (Wc * (Z[r["yt"], :n] - u))
        Z[r["f"], :n] = u
    gc = np.linalg.solve(np.eye(n) + KW, KW @ k_star)
    Z[r["g"], n] = k_star @ (Wc * (k_star - gc))
    Z[r["g"], :n] = gc


def _forward_inputs(X, y, x_query, kernel, L_out, L_in, eta, link, fault):
    """The forward's arguments, checked (see :func:`newton_tf_forward`)."""
    X = as_float_array(X, "X", ndim=2, non_empty=True)
    n, d = X.shape
    y = latent._labels(y, n)
    x_query = as_float_array(x_query, "x_query", ndim=1)
    if x_query.shape != (d,):
        raise ValueError(f"x_query must have shape ({d},), got {x_query.shape}")
    _rbf(kernel)
    L_out = positive_int(L_out, "L_out")
    if L_in is not None:
        L_in = positive_int(L_in, "L_in")
        if 1 + (L_out + 1) * L_in > MAX_LAYERS:
            raise ValueError(f"L_out={L_out}, L_in={L_in} exceed MAX_LAYERS={MAX_LAYERS} layers")
    link = choice(link, "link", latent.LINKS)
    if fault is not None:
        choice(fault, "fault", FAULTS)
    if not (eta == "optimal" or isinstance(eta, (int, float))):
        raise ValueError(f"eta must be 'optimal' or a positive number, got {eta!r}")
    return X, y, x_query, L_out, L_in, link


def newton_tf_forward(
    X,
    y,
    x_query,
    kernel: RBFKernel,
    L_out: int,
    L_in: int | None,
    *,
    eta="optimal",
    link: str = "probit",
    fault: str | None = None,
) -> NewtonTFResult:
    """The forward pass of the Newton transformer: layer 0 (eqn:1st attn) writes ``k_x``; then
    ``L_out`` Newton blocks, each a token-wise map and ``L_in`` reweighted Richardson layers;
    then a variance block (the token-wise map at the final latent and ``L_in`` layers on ``g``
    only); the readout ``Phi(mu / sqrt(1 + s^2))``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), labels in {-1, +1}
    x_query : ndarray of shape (d,)
    kernel : RBFKernel
    L_out : int
        Newton blocks (>= 1).
    L_in : int or None
        Richardson layers per block; None replaces each block's layers by their fixed point (the
        exact inner solve, for the identity checks).
    eta : "optimal" or float
        "optimal": each block's ``eta* = 2 / (lambda_1 + lambda_n)`` of its ``B`` (a hand-set
        weight that reads the context, as thm:TFdoPPD's ``eta`` reads ``lambda_1(G)``).
    link : {"probit", "logistic"}
        Only ``probit`` has the readout above; ``logistic`` returns ``p`` by quadrature.
    fault : None or one of :data:`FAULTS`
    """
    X, y, x_query, L_out, L_in, link = _forward_inputs(
        X, y, x_query, kernel, L_out, L_in, eta, link, fault
    )
    n, d = X.shape
    r = _rows(d)
    Z = np.zeros((d + 6, n + 1))
    Z[:d, :n], Z[:d, n], Z[r["y"], :n], Z[r["y"], n] = X.T, x_query, y, 1.0
    mask0 = np.zeros((n + 1, n + 1))
    mask0[n, :] = 1.0  # M^(0): the query is the only key
    mask = np.zeros((n + 1, n + 1))
    mask[:n, :] = 1.0  # M: the context tokens are the keys
    Kx = np.zeros((d + 6, d + 6))
    Kx[np.arange(d), np.arange(d)] = 1.0 / kernel.lengthscale
    V0 = np.zeros((d + 6, d + 6))
    V0[r["kx"], r["y"]] = kernel.alpha**2  # eqn:1st attn: k_x row
    Z = _attn_layer(Z, Kx, Kx, V0, np.zeros_like(V0), mask0)
    K = kernel(X)  # used only for the steps and factors, and by the exact inner solve
    k_star = Z[r["kx"], :n]
    f_path, etas, factors, layers = [Z[r["f"]].copy()], [], [], 1
    f_prev = Z[r["f"]].copy()
    for block in range(L_out + 1):
        variance = block == L_out
        W_from = f_prev if (fault == "stale_W" and not variance) else None
        f_prev = Z[r["f"]].copy()
        Z, W = _token_map(Z, d, link, W_from=W_from, fault=fault)
        Wc = W[:n]
        if not np.all(np.isfinite(Wc) & (Wc > 0)):  # a diverged (faulty) iterate: report NaN
            Z[r["f"]] = Z[r["g"]] = np.nan
            etas.append(np.nan)
            factors.append(np.nan)
            if not variance:
                f_path.append(Z[r["f"]].copy())
            continue
        step = _optimal_eta(K, Wc) if eta == "optimal" else positive_scalar(eta, "eta")
        etas.append(step)
        factors.append(inner_factor(K, Wc, step))
        if L_in is None:  # the fixed point of the block's layers
            _exact_block(Z, r, K, Wc, k_star, variance)
        else:
            Kw, Qw, V, S = solver_layer_weights(d, step, kernel, update_f=not variance)
            with np.errstate(over="ignore", invalid="ignore"):
                for _ in range(L_in):
                    Z = _attn_layer(Z, Kw, Qw, V, S, mask)
            layers += L_in
        if not variance:
            f_path.append(Z[r["f"]].copy())
    mu, s2 = float(Z[r["f"], n]), float(Z[r["kx"], n] - Z[r["g"], n])
    if link == "probit":
        p = float(latent.probit_predictive(mu, s2)) if s2 >= 0 else float("nan")
    else:
        p = float(latent.logistic_gauss(mu, max(s2, 0.0)))
    return NewtonTFResult(mu, s2, p, np.stack(f_path), tuple(etas), tuple(factors), layers)
