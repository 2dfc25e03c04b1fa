"""The multi-head transformer of the remark "Extension to hierarchical GPs" (float64 NumPy).

When the prior puts mass ``pi_h`` on finitely many GP components ``(kappa_h, sigma_h^2)``
(supp-tab:hierarchical-gp), the PPD is the mixture ``sum_h w_h N(mu_h, tau_h)`` with
``w_h oc pi_h N(Y; 0, G_h + sigma_h^2 I)``. The remark proposes a wider token and one attention head
per component. Here:

* **Tokens** have ``d + 1 + 3H`` rows: ``x`` (``d`` rows) and ``y`` shared, then ``(k_h, f_h, g_h)``
  for every head ``h`` (:func:`token_rows`).
* **Head h** carries the hand-set weights of thm:TFdoPPD for component ``h``
  (:func:`pfntheory.construction.handset_weights`: its kernel, noise and step), embedded into the
  wide token; a layer adds the heads' updates ``sum_h V_h Z h_h(K_h Z, Q_h Z) (+ S_h Z)``
  (:func:`multihead_forward`). Head ``h`` reads only the shared rows and its own three, so its
  rows are component ``h``'s Richardson iterates (thm:TFdoPPD; TF^pr with ``normalised=True``).
* **Per-head readout** at the query: ``mu_h = f_h``, ``tau_h = sigma_h^2 + k_h(x,x) - g_h``.
* **Mixture-weight readout** (:func:`readout_log_weights`): ``log w_h = log pi_h - q_h / 2 -
  logdet_h / 2`` normalised over ``h``. The quadratic term ``q_h = Y^T (G_h + sigma_h^2 I)^{-1} Y``
  is produced exactly by one linear-score attention head per component on the solver's rows,
  ``q_h^(L) = sigma_h^{-2} sum_i y_i (y_i - f_{h,i}^(L))`` (the fixed point of the training
  recursion is ``f_X = G (G + sigma^2 I)^{-1} Y``, so ``Y - f_X = sigma^2 (G + sigma^2 I)^{-1} Y``).
  The log-determinant ``log det(G_h + sigma_h^2 I)`` is not produced by the recursion: it is
  either supplied exactly (:func:`exact_logdet`, an oracle) or approximated by a per-head linear
  function of :func:`logdet_features` of ``(sum_i log s_{h,i}, n)``, where
  ``s_{h,i} = sum_j kappa_h(x_i, x_j)`` is the normaliser of head ``h``'s attention (TF^pr
  computes it; ``sum_i log s_i = log det D``, the Jacobi preconditioner of eqn:richardson prec),
  fitted by least squares to Monte-Carlo designs of the prior (:func:`fit_logdet_readout`).

The bound of docs/multihead.md, checked in ``verify/test_multihead_hier.py``:
``TV(sum_h w_h p_h, sum_h w'_h q_h) <= TV(w, w') + sum_h w'_h TV(p_h, q_h)`` and, per Gaussian
component, :func:`gaussian_tv_bound`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.integrate
import scipy.special
import scipy.stats

from . import construction as con
from ._checks import (
    ArgumentTypeError,
    as_float_array,
    check_rng,
    check_size,
    choice,
    int_tuple,
    positive_array,
    positive_int,
    sequence,
    shaped,
)
from .config import COVARIATES
from .gp import MixturePPD, log_marginal_likelihood
from .kernels import RBFKernel
from .spectral import sample_design

__all__ = [
    "MultiHeadWeights",
    "MultiHeadOutput",
    "LogdetReadout",
    "token_rows",
    "multihead_weights",
    "multihead_forward",
    "readout_path",
    "head_steps",
    "exact_logdet",
    "logdet_features",
    "N_LOGDET_FEATURES",
    "fit_logdet_readout",
    "readout_log_weights",
    "exact_log_weights",
    "model_ppd",
    "gaussian_tv",
    "gaussian_tv_bound",
    "mixture_tv",
    "mixture_tv_bound",
]


def token_rows(d: int, H: int) -> dict[str, Any]:
    """0-based rows of the wide token: ``x`` (``0..d-1``), ``y`` (``d``) and per head ``h`` the
    rows ``k = d+1+3h``, ``f = d+2+3h``, ``g = d+3+3h``; ``D = d + 1 + 3H`` rows in all."""
    d, H = positive_int(d, "d"), positive_int(H, "H")
    base = d + 1 + 3 * np.arange(H)
    return {"x": np.arange(d), "y": d, "k": base, "f": base + 1, "g": base + 2, "D": d + 1 + 3 * H}


@dataclass(frozen=True, eq=False)
class MultiHeadWeights:
    """Per-head hand-set weights (supp-eqn:weights) and the prior of the mixture.

    Attributes
    ----------
    heads : tuple of HandsetWeights, length H
        Head ``h``'s weights in its own ``d + 4`` layout (embedded by :func:`multihead_forward`).
    noise_var : ndarray of shape (H,)
        ``sigma_h^2`` of each component (the readout's ``q_h`` divides by it).
    log_prior : ndarray of shape (H,)
        ``log pi_h`` (normalised).
    kernels : tuple of kernel, length H
        The component each head encodes.
    """

    heads: tuple
    noise_var: np.ndarray = field(repr=False)
    log_prior: np.ndarray = field(repr=False)
    kernels: tuple = ()

    @property
    def H(self) -> int:
        return len(self.heads)

    @property
    def d(self) -> int:
        return self.heads[0].d

    @property
    def L(self) -> int:
        return self.heads[0].L


def head_steps(eta, H: int, L: int) -> list:
    """``eta`` per head, checked: a positive scalar for every head, or one entry per head (a
    positive scalar or ``L - 1`` positive per-layer steps).

    Returns
    -------
    list of float or ndarray, length H
    """
    H, L = positive_int(H, "H"), positive_int(L, "L")
    if isinstance(eta, (str, bytes)) or eta is None:
        raise ArgumentTypeError(f"eta must be a positive number or a sequence of them, got {eta!r}")
    entries = [eta] * H if np.ndim(eta) == 0 else list(eta)
    if len(entries) != H:
        raise ValueError(
            f"eta must be a scalar or hold one entry per head (H={H}), got {len(entries)}"
        )
    steps: list = []
    for h, e in enumerate(entries):
        a = positive_array(e, f"eta[{h}]", ndim=(0, 1))
        if a.ndim == 1 and a.shape != (L - 1,):
            raise ValueError(
                f"eta[{h}] must be a scalar or have L-1={L - 1} entries, got {a.shape}"
            )
        steps.append(float(a) if a.ndim == 0 else a)
    return steps


def multihead_weights(
    d: int,
    L: int,
    kernels,
    noise_var,
    eta,
    *,
    prior_weights=None,
    normalised: bool = False,
    encode=None,
) -> MultiHeadWeights:
    """Hand-set weights of the multi-head transformer: head ``h`` = thm:TFdoPPD for component ``h``.

    Parameters
    ----------
    d, L : int
        Input dimension and depth (layer 0 writes ``k_h``; layers ``1..L-1`` are solver layers).
    kernels : sequence of kernel, length H
        Component kernels (RBF / ARD RBF; linear without ``normalised``).
    noise_var : array of shape (H,)
        ``sigma_h^2 > 0``.
    eta : float or sequence of length H
        Solver step of each head (a scalar, or per layer, as
        :func:`~pfntheory.construction.handset_weights` takes it).
    prior_weights : array of shape (H,), optional
        ``pi_h > 0`` (normalised here); default uniform.
    normalised : bool
        TF^pr heads (``Attn^na``, skip over ``s_x``).
    encode : sequence of int, length H, optional
        Component encoded by each head (default ``h``): its kernel, noise and step. A fault
        injection: ``encode=(0,) * H`` makes every head carry component 0 (heads sharing one
        component).

    Returns
    -------
    MultiHeadWeights
    """
    kernels = sequence(kernels, "kernels")
    H = len(kernels)
    nv = shaped(
        positive_array(noise_var, "noise_var", ndim=1), "noise_var", (H,), "(one per kernel)"
    )
    pw = (
        np.full(H, 1.0 / H)
        if prior_weights is None
        else shaped(positive_array(prior_weights, "prior_weights", ndim=1), "prior_weights", (H,))
    )
    enc = tuple(range(H)) if encode is None else int_tuple(encode, "encode", minimum=0)
    if len(enc) != H or max(enc) >= H:
        raise ValueError(f"encode must hold H={H} component indices in [0, {H - 1}], got {enc}")
    steps = head_steps(eta, H, positive_int(L, "L"))
    heads = tuple(  # head h carries component enc[h]: its kernel, noise and step
        con.handset_weights(d, L, steps[e], nv[e], kernels[e], normalised=normalised) for e in enc
    )
    return MultiHeadWeights(
        heads=heads,
        noise_var=nv[list(enc)],
        log_prior=np.log(pw / pw.sum()),
        kernels=tuple(kernels[e] for e in enc),
    )


@dataclass(frozen=True, eq=False)
class MultiHeadOutput:
    """Per-head readouts of :func:`multihead_forward` (``...`` = the batch shape of the input).

    Attributes
    ----------
    mu, tau : ndarray of shape (..., H)
        ``mu_h = f_h``, ``tau_h = sigma_h^2 + k_h(x, x) - g_h`` at the query (thm:TFdoPPD per head).
    quad : ndarray of shape (..., H)
        ``q_h^(L) = sigma_h^{-2} sum_i y_i (y_i - f_{h,i})`` (linear-attention summary head).
    log_det_D : ndarray of shape (..., H)
        ``sum_i log s_{h,i}``, the log-determinant of head ``h``'s Jacobi normaliser at the context.
    n : int
        Context size.
    path : ndarray of shape (L + 1, ..., D, n + 1) or None
        ``Z^(0..L)`` when asked for.
    """

    mu: np.ndarray
    tau: np.ndarray
    quad: np.ndarray
    log_det_D: np.ndarray
    n: int
    path: np.ndarray | None = None


def _head_index(rows: dict, h: int) -> np.ndarray:
    """Wide rows of head ``h``'s ``d + 4`` layout: ``x``, ``y`` and its own ``k, f, g``."""
    return np.concatenate([rows["x"], [rows["y"], rows["k"][h], rows["f"][h], rows["g"][h]]])


def _embed_columns(W: np.ndarray, d: int, rows: dict, h: int) -> np.ndarray:
    """A head's readout ``W`` (2, d+4) on the wide token, (2, D)."""
    out = np.zeros((W.shape[0], rows["D"]))
    out[:, _head_index(rows, h)] = W
    return out


def _embed(A: np.ndarray, d: int, rows: dict, h: int) -> np.ndarray:
    """A head's ``(d+4) x (d+4)`` matrices in the wide ``D x D`` layout (its own k, f, g rows)."""
    idx = _head_index(rows, h)
    out = np.zeros(A.shape[:-2] + (rows["D"], rows["D"]))
    out[..., idx[:, None], idx[None, :]] = A
    return out


def multihead_forward(weights: MultiHeadWeights, X, Y, x_query, *, return_path: bool = False):
    """Forward pass of the multi-head transformer on the wide tokens.

    Layer ``l`` maps ``Z -> Z + sum_h [V_h Z h_h + S_h Z]`` (eqn:std attn per head, masks
    ``M^(0)`` for layer 0 and ``M`` after; TF^pr heads normalise ``h_h`` and scale their skip by
    ``1/s_{h,x_j}``), with ``V_h, K_h = Q_h, S_h`` head ``h``'s hand-set matrices embedded in the
    wide layout. Then the per-head readout and the linear-attention summary head
    ``q_h = sum_i (V z_i)(K z_i)^T (Q z_{n+1})`` with ``V z_i = y_i / sigma_h^2``,
    ``K z_i = y_i - f_{h,i}`` and ``Q z_{n+1} = 1`` (the query's ``y`` row).

    Parameters
    ----------
    weights : MultiHeadWeights
    X : ndarray of shape (..., n, d)
    Y : ndarray of shape (..., n)
    x_query : ndarray of shape (..., d)
    return_path : bool

    Returns
    -------
    MultiHeadOutput
    """
    if not isinstance(weights, MultiHeadWeights):
        raise ArgumentTypeError(f"weights must be MultiHeadWeights, got {type(weights).__name__}")
    Z1 = con.build_Z0(X, Y, x_query)  # (..., d+4, n+1): checks shapes, n >= 1, finiteness
    d, H, L = weights.d, weights.H, weights.L
    if Z1.shape[-2] != d + 4:
        raise ValueError(f"X has d={Z1.shape[-2] - 4} features, weights expect d={d}")
    n = Z1.shape[-1] - 1
    rows = token_rows(d, H)
    D = rows["D"]
    check_size(int(np.prod(Z1.shape[:-2], dtype=float)) * D * (n + 1) ** 2, "X (attention scores)")
    Z = np.zeros(Z1.shape[:-2] + (D, n + 1))
    Z[..., : d + 1, :] = Z1[..., : d + 1, :]  # x rows and y row (1 at the query)
    M0, M = weights.heads[0].masks(n)
    big = [
        {nm: _embed(getattr(w, nm), d, rows, h) for nm in ("K", "Q", "V", "S")}
        for h, w in enumerate(weights.heads)
    ]
    s_ctx = np.zeros(Z.shape[:-2] + (H, n))  # s_{h,i} at the context tokens
    path = [Z]
    with np.errstate(over="ignore", invalid="ignore"):
        for l in range(L):
            update = np.zeros_like(Z)
            for h, (w, b) in enumerate(zip(weights.heads, big, strict=True)):
                # K = Q = diag(scale, 0) (supp-eqn:weights): only the x block enters the score, so
                # the product is taken there (the same numbers; a head that diverges, inf/NaN in
                # its own rows, does not poison the others' scores through 0 * inf)
                KX, QX = b["K"][l][:d, :d] @ Z[..., :d, :], b["Q"][l][:d, :d] @ Z[..., :d, :]
                Hh = con.attention_scores(KX, QX, w.score) * (M0 if l == 0 else M)
                skip = b["S"][l] @ Z
                if l == 1:
                    s_ctx[..., h, :] = np.sum(Hh, axis=-2)[..., :n]
                if l > 0 and w.normalised:
                    s = np.sum(Hh, axis=-2)  # s_j (sec:generalization)
                    Hh = Hh / s[..., None, :]
                    skip = skip / s[..., None, :]
                update += b["V"][l] @ Z @ Hh + skip  # eqn:std attn, head h
            Z = Z + update
            if return_path:
                path.append(Z)
        mu, tau = _readout(weights, Z[None])  # (1, ..., H): W_h [Z^(L)]_{:, n+1}
        mu, tau = mu[0], tau[0]
        quad = np.empty_like(mu)
        for h in range(H):
            e_y, e_f = np.zeros(D), np.zeros(D)
            e_y[rows["y"]], e_f[rows["f"][h]] = 1.0, 1.0
            KZ = ((e_y - e_f) @ Z)[..., None, :]  # (..., 1, n+1): K z_i = y_i - f_{h,i}
            QZ = (e_y @ Z)[..., None, :]  # Q z_j = y_j (1 at the query)
            A = con.attention_scores(KZ, QZ, "linear") * M  # (..., n+1, n+1), keys i <= n
            vals = (e_y @ Z) / weights.noise_var[h]  # V z_i = y_i / sigma_h^2
            quad[..., h] = np.sum(vals[..., :, None] * A, axis=-2)[..., n]
        log_det_D = np.sum(np.log(s_ctx), axis=-1) if L > 1 else np.full(mu.shape, np.nan)
    return MultiHeadOutput(
        mu=mu,
        tau=tau,
        quad=quad,
        log_det_D=log_det_D,
        n=n,
        path=np.stack(path) if return_path else None,
    )


def readout_path(weights: MultiHeadWeights, path) -> tuple[np.ndarray, np.ndarray]:
    """Per-head readouts ``(mu_h, tau_h)`` of every ``Z^(l)`` of a path (the depth-``l`` model's
    output: the layers of the hand-set model do not depend on the depth).

    Parameters
    ----------
    weights : MultiHeadWeights
    path : ndarray of shape (L + 1, ..., D, n + 1)

    Returns
    -------
    mu, tau : ndarray of shape (L + 1, ..., H)
    """
    if not isinstance(weights, MultiHeadWeights):
        raise ArgumentTypeError(f"weights must be MultiHeadWeights, got {type(weights).__name__}")
    rows = token_rows(weights.d, weights.H)
    path = as_float_array(path, "path", min_ndim=3)
    if path.shape[-2] != rows["D"]:
        raise ValueError(f"path must have {rows['D']} token rows, got shape {path.shape}")
    return _readout(weights, path)


def _readout(weights: MultiHeadWeights, path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`readout_path` unchecked (a divergent path's inf/NaN pass through)."""
    rows = token_rows(weights.d, weights.H)
    W = np.stack([_embed_columns(w.W, weights.d, rows, h) for h, w in enumerate(weights.heads)])
    zq = path[..., :, -1]  # (L + 1, ..., D): the query token
    return zq @ W[:, 0].T, zq @ W[:, 1].T


# --------------------------------------------------------------------------------------------------
# the mixture-weight readout
# --------------------------------------------------------------------------------------------------


def exact_logdet(kernels, noise_var, X) -> np.ndarray:
    """The oracle ``log det(G_h + sigma_h^2 I)`` per component, shape ``X.shape[:-2] + (H,)``
    (Cholesky, via :func:`pfntheory.gp.log_marginal_likelihood` at ``Y = 0``)."""
    kernels = sequence(kernels, "kernels")
    nv = shaped(positive_array(noise_var, "noise_var", ndim=1), "noise_var", (len(kernels),))
    X = as_float_array(X, "X", min_ndim=2, non_empty=True)
    n = X.shape[-2]
    zero = np.zeros(X.shape[:-1])
    # log N(0; 0, A) = -logdet/2 - n/2 log 2 pi
    return np.stack(
        [
            -2.0 * log_marginal_likelihood(k, X, zero, s2) - n * np.log(2 * np.pi)
            for k, s2 in zip(kernels, nv, strict=True)
        ],
        -1,
    )


#: Number of features of the log-determinant readout (:func:`logdet_features`).
N_LOGDET_FEATURES = 6


def logdet_features(log_det_D, n: int) -> np.ndarray:
    """Features ``(l, l log n, n, n log n, log n, 1)`` with ``l = sum_i log s_{h,i}`` of the
    log-determinant readout, shape ``log_det_D.shape + (6,)`` (the ``log n`` interactions let the
    slope in ``l`` and ``n`` change with ``n``: fitted over ``n`` in [32, 1024] they halve the
    largest residual of the 4-feature ``(l, n, log n, 1)``, docs/multihead.md)."""
    ld = as_float_array(log_det_D, "log_det_D")
    n = positive_int(n, "n")
    one, ln = np.ones_like(ld), np.log(n)
    return np.stack([ld, ld * ln, n * one, n * ln * one, ln * one, one], -1)


@dataclass(frozen=True, eq=False)
class LogdetReadout:
    """``logdet_h ~ coef_h . logdet_features(sum_i log s_{h,i}, n)``, fitted by least squares.

    Attributes
    ----------
    coef : ndarray of shape (H, 6)
    rms, max_abs : ndarray of shape (H,)
        Residuals of the fit over its Monte-Carlo designs (log-determinant units: a residual ``r``
        changes the weight ratio of two components by up to ``exp(r)``).
    ns : tuple of int
        Context sizes of the fit.
    """

    coef: np.ndarray
    rms: np.ndarray
    max_abs: np.ndarray
    ns: tuple[int, ...]

    def __call__(self, log_det_D, n: int) -> np.ndarray:
        """Approximate log-determinants, shape ``log_det_D.shape`` (last axis H)."""
        return np.sum(logdet_features(log_det_D, n) * self.coef, -1)


def _unit_row_sums(kernel, X) -> np.ndarray:
    """``s_i = sum_j kappa_unit(x_i, x_j)``: the row sums of ``G / alpha^2`` (the normaliser of a
    TF^pr head, whose normalised weights are free of ``alpha``)."""
    return np.sum(kernel(X), axis=-1) / kernel.alpha**2


def fit_logdet_readout(
    kernels,
    noise_var,
    d: int,
    rng: np.random.Generator,
    ns=(32, 64, 128, 256, 512, 1024),
    n_draws: int = 2,
    covariates: str = "gaussian",
) -> LogdetReadout:
    """Fit :class:`LogdetReadout` on ``n_draws`` designs ``X ~`` the prior's covariates per ``n``.

    Parameters
    ----------
    kernels : sequence of RBFKernel, length H
    noise_var : array of shape (H,)
    d : int
    rng : numpy.random.Generator
    ns : sequence of int
    n_draws : int
    covariates : {'gaussian', 'uniform'}

    Returns
    -------
    LogdetReadout
    """
    kernels = sequence(kernels, "kernels")
    for i, k in enumerate(kernels):
        if not isinstance(k, RBFKernel):
            raise ArgumentTypeError(f"kernels[{i}] must be an RBFKernel, got {type(k).__name__}")
    nv = shaped(positive_array(noise_var, "noise_var", ndim=1), "noise_var", (len(kernels),))
    ns = int_tuple(ns, "ns", minimum=2)
    if len(set(ns)) < 4:
        raise ValueError(f"ns must hold at least 4 distinct sizes (6 coefficients), got {ns}")
    n_draws = positive_int(n_draws, "n_draws")
    rng = check_rng(rng)
    covariates = choice(covariates, "covariates", COVARIATES)
    feats, targets = [], []
    for n in ns:
        X = sample_design(n, d, rng, covariates, size=(n_draws,))
        ld = exact_logdet(kernels, nv, X)  # (n_draws, H)
        ldD = np.stack([np.sum(np.log(_unit_row_sums(k, X)), -1) for k in kernels], -1)
        feats.append(logdet_features(ldD, n))  # (n_draws, H, 6)
        targets.append(ld)
    F, T = np.concatenate(feats), np.concatenate(targets)  # (N, H, 6), (N, H)
    coef = np.stack([np.linalg.lstsq(F[:, h], T[:, h], rcond=None)[0] for h in range(len(kernels))])
    res = T - np.sum(F * coef, -1)
    return LogdetReadout(
        coef=coef, rms=np.sqrt(np.mean(res**2, 0)), max_abs=np.max(np.abs(res), 0), ns=ns
    )


def readout_log_weights(out: MultiHeadOutput, log_prior, logdet) -> np.ndarray:
    """``log w_h = log pi_h - q_h/2 - logdet_h/2``, normalised over ``h`` (shape ``(..., H)``).

    ``logdet`` is an array of shape ``(..., H)`` (e.g. :func:`exact_logdet`, the oracle) or a
    :class:`LogdetReadout` applied to ``out.log_det_D``.
    """
    if not isinstance(out, MultiHeadOutput):
        raise ArgumentTypeError(f"out must be a MultiHeadOutput, got {type(out).__name__}")
    lp = shaped(as_float_array(log_prior, "log_prior", ndim=1), "log_prior", out.quad.shape[-1:])
    ld = (
        logdet(out.log_det_D, out.n)
        if isinstance(logdet, LogdetReadout)
        else as_float_array(logdet, "logdet")
    )
    if ld.shape != out.quad.shape:
        raise ValueError(f"logdet must have shape {out.quad.shape}, got {ld.shape}")
    z = lp - 0.5 * out.quad - 0.5 * ld
    return z - scipy.special.logsumexp(z, axis=-1, keepdims=True)


def exact_log_weights(kernels, noise_var, log_prior, X, Y) -> np.ndarray:
    """The exact posterior log-weights ``log pi_h + log N(Y; 0, G_h + sigma_h^2 I)``, normalised."""
    kernels = sequence(kernels, "kernels")
    nv = shaped(positive_array(noise_var, "noise_var", ndim=1), "noise_var", (len(kernels),))
    z = np.stack(
        [log_marginal_likelihood(k, X, Y, s2) for k, s2 in zip(kernels, nv, strict=True)], -1
    ) + shaped(as_float_array(log_prior, "log_prior", ndim=1), "log_prior", (len(kernels),))
    return z - scipy.special.logsumexp(z, axis=-1, keepdims=True)


def model_ppd(out: MultiHeadOutput, log_weights) -> MixturePPD:
    """The model's mixture ``sum_h w_h N(mu_h, tau_h)`` at the query (one query: m = 1);
    ``log_weights`` of ``out.mu``'s shape."""
    if not isinstance(out, MultiHeadOutput):
        raise ArgumentTypeError(f"out must be a MultiHeadOutput, got {type(out).__name__}")
    lw = shaped(as_float_array(log_weights, "log_weights"), "log_weights", out.mu.shape)
    w = np.exp(lw)
    w = w / w.sum(-1, keepdims=True)
    return MixturePPD(weights=w, mu=out.mu[..., None], tau=out.tau[..., None])


# --------------------------------------------------------------------------------------------------
# total variation: exact per Gaussian, numerical per mixture, and the bound
# --------------------------------------------------------------------------------------------------


def gaussian_tv(m1, v1, m2, v2) -> np.ndarray:
    """Exact ``TV(N(m1, v1), N(m2, v2))`` (elementwise).

    Equal variances: ``2 Phi(|m1 - m2| / (2 sqrt v)) - 1``. Otherwise the densities cross at the
    two roots ``t1 < t2`` of ``log p = log q`` and ``TV = |P(t1, t2] - Q(t1, t2]|``.
    """
    m1, m2 = as_float_array(m1, "m1"), as_float_array(m2, "m2")
    v1, v2 = positive_array(v1, "v1"), positive_array(v2, "v2")
    m1, v1, m2, v2 = np.broadcast_arrays(m1, v1, m2, v2)
    out = np.empty(m1.shape)
    eq = v1 == v2
    out[eq] = 2.0 * scipy.stats.norm.cdf(np.abs(m1 - m2)[eq] / (2 * np.sqrt(v1[eq]))) - 1.0
    ne = ~eq
    if np.any(ne):
        a1, b1, a2, b2 = m1[ne], v1[ne], m2[ne], v2[ne]
        # a t^2 + b t + c = 0 where log p(t) = log q(t)
        a = 0.5 / b2 - 0.5 / b1
        b = a1 / b1 - a2 / b2
        c = 0.5 * a2**2 / b2 - 0.5 * a1**2 / b1 + 0.5 * np.log(b2 / b1)
        disc = np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))
        q = -0.5 * (b + np.where(b >= 0, disc, -disc))  # stable roots: q / a and c / q
        r1 = q / a
        r2 = np.where(q != 0, c / np.where(q != 0, q, 1.0), -r1)
        t1, t2 = np.minimum(r1, r2), np.maximum(r1, r2)

        def mass(m, v):
            s = np.sqrt(v)
            return scipy.special.ndtr((t2 - m) / s) - scipy.special.ndtr((t1 - m) / s)

        out[ne] = np.abs(mass(a1, b1) - mass(a2, b2))
    return out


def gaussian_tv_bound(dmu, dtau, tau) -> np.ndarray:
    """Upper bound on ``TV(N(mu, tau), N(mu + dmu, tau + dtau))`` from moment errors
    (docs/multihead.md):

    ``|dmu| / sqrt(2 pi tau) + (1/2) sqrt(max(f(1 - |dtau|/tau), f(1 + |dtau|/tau)))``, capped at 1,
    with ``f(r) = r - 1 - log r`` (``f = inf`` for ``r <= 0``). The first term is the exact TV of a
    mean shift bounded by the density's maximum; the second is Pinsker's inequality on the
    closed-form KL of a variance change, maximised over ``|dtau|`` (``f`` is convex with minimum at
    1). Monotone in ``|dmu|`` and ``|dtau|``, so a bound on the errors gives a bound on the TV."""
    dmu, dtau = np.abs(as_float_array(dmu, "dmu")), np.abs(as_float_array(dtau, "dtau"))
    tau = positive_array(tau, "tau")
    rho = dtau / tau

    def f(r):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r > 0, r - 1.0 - np.log(np.where(r > 0, r, 1.0)), np.inf)

    var = 0.5 * np.sqrt(np.maximum(f(1.0 - rho), f(1.0 + rho)))
    return np.minimum(1.0, dmu / np.sqrt(2 * np.pi * tau) + var)


def mixture_tv(p: MixturePPD, q: MixturePPD, query: int = 0) -> tuple[float, float]:
    """``TV(p, q)`` of two Gaussian mixtures of one context (weights of shape (H,)) at query
    ``query``, by adaptive quadrature of ``|p - q| / 2``; returns ``(tv, abserr)`` (the
    quadrature's error estimate, which a check adds to its tolerance)."""
    for name, m in (("p", p), ("q", q)):
        if not isinstance(m, MixturePPD):
            raise ArgumentTypeError(f"{name} must be a MixturePPD, got {type(m).__name__}")
        if m.weights.ndim != 1:
            raise ValueError(f"{name} must hold one context (weights (H,)), got {m.weights.shape}")
    m_q = min(p.mu.shape[-1], q.mu.shape[-1])
    query = positive_int(query, "query", minimum=0, maximum=m_q - 1)
    comps = []
    for m in (p, q):
        comps.append((m.weights, m.mu[:, query], np.sqrt(m.tau[:, query])))
    lo = min(float(np.min(mu - 40 * s)) for _, mu, s in comps)
    hi = max(float(np.max(mu + 40 * s)) for _, mu, s in comps)
    pts = sorted({float(v) for _, mu, s in comps for v in np.concatenate([mu, mu - s, mu + s])})

    def dens(t, w, mu, s):
        return float(np.sum(w * np.exp(-0.5 * ((t - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))))

    with warnings.catch_warnings():  # a round-off-level integrand (p = q) makes quad complain
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)
        val, err = scipy.integrate.quad(
            lambda t: abs(dens(t, *comps[0]) - dens(t, *comps[1])),
            lo,
            hi,
            points=[v for v in pts if lo < v < hi][:100],
            limit=500,
            epsabs=1e-14,
            epsrel=1e-10,
        )
    return 0.5 * val, 0.5 * err


def _simplex(w, name: str) -> np.ndarray:
    """Weights ``>= 0`` summing to 1 over the last axis (to 1e-9 H)."""
    w = as_float_array(w, name, min_ndim=1, non_empty=True)
    if np.any(w < 0) or np.any(np.abs(w.sum(-1) - 1.0) > 1e-9 * w.shape[-1]):
        raise ValueError(f"{name} must be non-negative and sum to 1 over the last axis")
    return w


def mixture_tv_bound(w, w_model, tv_components) -> np.ndarray:
    """``TV(w, w') + sum_h w'_h TV(p_h, q_h)`` (docs/multihead.md), over the last axis (H)."""
    w = _simplex(w, "w")
    w2 = _simplex(w_model, "w_model")
    tv = as_float_array(tv_components, "tv_components")
    if np.any(tv < 0) or np.any(tv > 1):
        raise ValueError("tv_components must lie in [0, 1] (total variations)")
    if not (w.shape == w2.shape == tv.shape):
        raise ValueError(
            f"w, w_model, tv_components must share a shape, got {w.shape}, {w2.shape}, {tv.shape}"
        )
    return 0.5 * np.sum(np.abs(w - w2), -1) + np.sum(w2 * tv, -1)
