"""The multi-head transformer of the remark "Extension to hierarchical GPs" (float64 NumPy): wide
tokens, one hand-set head of thm:TFdoPPD per GP component of the prior (supp-tab:hierarchical-gp),
the forward pass, the per-head readout ``(mu_h, tau_h)`` and the mixture-weight readout
``log w_h = log pi_h - q_h / 2 - logdet_h / 2`` (the log-determinant exact, an oracle, or read from
the heads' attention normalisers by a least-squares fit).

The construction and its reasoning: docs/multihead.md; the TV bound:
:mod:`pfntheory.maths.mixture_tv`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.special

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_rng,
    check_size,
    checked,
    instance_of,
    int_tuple,
    ints,
    one_of,
    positive_array,
    positive_int,
    positive_scalar,
    sequence,
    shaped,
)

from . import construction as con
from .gp import MixturePPD, log_marginal_likelihood
from .kernels import RBFKernel
from .spectral import COVARIATES, sample_design

__all__ = [
    "MultiHeadWeights",
    "MultiHeadOutput",
    "token_rows",
    "multihead_weights",
    "multihead_forward",
    "readout_path",
    "head_steps",
    "LogdetReadout",
    "exact_logdet",
    "logdet_features",
    "N_LOGDET_FEATURES",
    "fit_logdet_readout",
    "readout_log_weights",
    "exact_log_weights",
    "model_ppd",
    "selection_stats",
]


def token_rows(d: int, H: int) -> dict[str, Any]:
    """0-based rows of the wide token: ``x`` (``0..d-1``), ``y`` (``d``) and per head ``h`` the
    rows ``k = d+1+3h``, ``f = d+2+3h``, ``g = d+3+3h``; ``D = d + 1 + 3H`` rows in all."""
    d, H = positive_int(d, "d"), positive_int(H, "H")
    base = d + 1 + 3 * np.arange(H)
    return {"x": np.arange(d), "y": d, "k": base, "f": base + 1, "g": base + 2, "D": d + 1 + 3 * H}


def mixture_components(kernels, noise_var) -> tuple[list, np.ndarray]:
    """The prior's components, checked: ``kernels`` (a sequence, length H) and ``noise_var``
    ``sigma_h^2 > 0`` of shape (H,), one per kernel."""
    kernels = sequence(kernels, "kernels")
    noise_var = positive_array(noise_var, "noise_var", ndim=1)
    return kernels, shaped(noise_var, "noise_var", (len(kernels),), "(one per kernel)")


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
        :func:`~pfntheory.maths.construction.handset_weights` takes it).
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
    kernels, noise_var = mixture_components(kernels, noise_var)
    H = len(kernels)
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
        con.handset_weights(d, L, steps[e], noise_var[e], kernels[e], normalised=normalised)
        for e in enc
    )
    return MultiHeadWeights(
        heads=heads,
        noise_var=noise_var[list(enc)],
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
    X, Y, x_query, return_path
        The context, its labels and the query, as :func:`pfntheory.maths.construction.tf_forward`
        takes them; ``return_path`` keeps every ``Z^(l)``.

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


def exact_logdet(kernels, noise_var, X) -> np.ndarray:
    """The oracle ``log det(G_h + sigma_h^2 I)`` per component, shape ``X.shape[:-2] + (H,)``
    (Cholesky, via :func:`pfntheory.maths.gp.log_marginal_likelihood` at ``Y = 0``)."""
    kernels, noise_var = mixture_components(kernels, noise_var)
    X = as_float_array(X, "X", min_ndim=2, non_empty=True)
    n = X.shape[-2]
    zero = np.zeros(X.shape[:-1])
    # log N(0; 0, A) = -logdet/2 - n/2 log 2 pi
    return np.stack(
        [
            -2.0 * log_marginal_likelihood(k, X, zero, noise_var_h) - n * np.log(2 * np.pi)
            for k, noise_var_h in zip(kernels, noise_var, strict=True)
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


@checked(rng=check_rng, ns=ints(minimum=2), n_draws=positive_int, covariates=one_of(COVARIATES))
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
    kernels, noise_var = mixture_components(kernels, noise_var)
    for i, k in enumerate(kernels):
        instance_of(RBFKernel)(k, f"kernels[{i}]")
    if len(set(ns)) < 4:
        raise ValueError(f"ns must hold at least 4 distinct sizes (6 coefficients), got {ns}")
    feats, targets = [], []
    for n in ns:
        X = sample_design(n, d, rng, covariates, size=(n_draws,))
        ld = exact_logdet(kernels, noise_var, X)  # (n_draws, H)
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
    kernels, noise_var = mixture_components(kernels, noise_var)
    z = np.stack(
        [
            log_marginal_likelihood(k, X, Y, noise_var_h)
            for k, noise_var_h in zip(kernels, noise_var, strict=True)
        ],
        -1,
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


def selection_stats(X, Y, x_query, bank, *, scale_error: float = 1.0, keep_diagonal=False):
    """The selector's statistics by attention on the tokens ``[x; y; u_b]`` (docs/multihead.md,
    "Selectors"; :func:`pfntheory.nn.selector.summary_stats` is the batched closed form).

    Per lengthscale ``ell_b``: one unnormalised RBF attention layer, ``K = Q = diag(1/ell_b)`` on
    the ``x`` rows, value ``y -> u_b``, mask ``M_ij = 1{i <= n, j <= n, i != j}`` plus the query
    column: ``u_{b,j} = sum_{i != j} kappa_b(x_i, x_j) y_i`` at the context tokens and, with
    value ``1``, ``c_{b,j} = sum_{i != j} kappa_b(x_i, x_j)``; then linear summary heads at the
    query (key ``u_{b,i}`` or ``c_{b,i}``, value ``y_i`` or ``1``, query 1) give
    ``t_b = Y^T (K_b - I) Y / (n (n - 1))`` and ``m_b = 1^T (K_b - I) 1 / (n (n - 1))``; and
    ``s_0 = Y^T Y / n`` (key and value ``y_i``).

    Parameters
    ----------
    X : ndarray (n, d), n >= 2; Y : ndarray (n,); x_query : ndarray (d,)
    bank : sequence of float
    scale_error, keep_diagonal
        Fault injections: ``K = Q = diag(scale_error / ell_b)``, and the mask's diagonal kept.

    Returns
    -------
    dict: ``{"s0": float, "t": ndarray (B,), "m": ndarray (B,)}``
    """
    Z = con.build_Z0(X, Y, x_query)
    d, n = Z.shape[0] - 4, Z.shape[1] - 1
    if n < 2:
        raise ValueError(f"selection_stats needs n >= 2 context points, got {n}")
    bank = positive_array(bank, "bank", ndim=1)
    scale_error = positive_scalar(scale_error, "scale_error")
    idx = np.arange(n + 1)
    M = ((idx[:, None] < n) & (idx[None, :] < n)).astype(float)  # keys and queries: the context
    if not keep_diagonal:
        M[idx, idx] = 0.0
    y, xs = Z[d], Z[:d]
    yc = np.where(idx < n, y, 0.0)  # value y_i at the context keys (0 at the query)
    one = (idx < n).astype(float)
    q = np.zeros(n + 1)
    q[n] = 1.0  # Q z_{n+1} = 1 (the query's y row), 0 at the context
    pairs = n * (n - 1)
    t, m = [], []
    for ell in bank:
        sc = np.full((d, 1), scale_error / ell)
        A = con.attention_scores(sc * xs, sc * xs, "rbf") * M  # (n+1, n+1): keys i, queries j
        u, c = yc @ A, one @ A  # u_{b,j}, c_{b,j}: the attention layer's outputs
        # linear summary head at the query: sum_i (V z_i) (K z_i)^T (Q z_{n+1})
        t.append(float(np.sum(yc * con.attention_scores(u[None], q[None], "linear")[:, n])))
        m.append(float(np.sum(one * con.attention_scores(c[None], q[None], "linear")[:, n])))
    s0 = float(np.sum(yc * con.attention_scores(yc[None], q[None], "linear")[:, n])) / n
    return {"s0": s0, "t": np.asarray(t) / pairs, "m": np.asarray(m) / pairs}
