"""The hand-set TF^pr with its first layer normalised too (the public code's reading of TF^pr):
what its variance channel computes, and why no affine readout of its channels is ``tau``.

Implements (derivation: docs/exact-side.md, "The first layer normalised")
-------------------------------------------------------------------------
* eqn:1st attn under ``Attn^na`` (sec:generalization applied to "each head"): the layer has one key
  per query (the query token, mask ``M^(0)``), so its normalised weight is
  ``kappa(x, x_j) / (kappa(x, x_j) + eps)``: 1 for ``eps = 0`` (our normalisation), about 1 for the
  public code's offset ``eps = 1e-6`` (:data:`CODE_EPS`). Row ``d+2`` then holds
  ``c_j = alpha^2 kappa / (kappa + eps)`` (:func:`first_row`) instead of ``k(x_j, x)``.
* eqn:richardson / eqn:richardson prec with ``v = c`` instead of ``v = k_x``: the variance channel's
  fixed point is ``g*_X = (G + sigma^2 I)^{-1} G c`` at the context and ``g*(x) = k_x^T
  (G + sigma^2 I)^{-1} c`` at the query (the preconditioner changes the path, not the fixed point),
  so the readout ``W`` of supp-eqn:weights gives ``sigma^2 + c_{n+1} - g*(x)``, not
  ``tau = sigma^2 + k(x, x) - k_x^T (G + sigma^2 I)^{-1} k_x`` (:func:`variance_limit`).
* No readout ``a + b z_k + c z_tau`` of the query's channels ``z_k = c_{n+1}`` (the same constant
  for every query) and ``z_tau = g*(x)`` is ``tau`` on every context: three queries on a two-point
  context, two of them with equal ``z_tau`` and different ``tau`` (:func:`readout_counterexample`),
  and the least worst-case error of any such readout on them (:func:`affine_minimax_error`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.optimize

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    positive_int,
    positive_scalar,
)

from .gp import posterior_predictive
from .kernels import ARDRBFKernel, RBFKernel

__all__ = [
    "CODE_EPS",
    "FirstLayerLimit",
    "ReadoutCounterexample",
    "affine_minimax_error",
    "first_row",
    "readout_counterexample",
    "variance_limit",
]

#: The offset the authors' public code adds to every normaliser of its normalised attention; in the
#: first layer it makes the weight ``kappa / (kappa + 1e-6)`` instead of 1.
CODE_EPS = 1e-6


def _rbf(kernel) -> float:
    """``alpha^2`` of an RBF or ARD-RBF kernel (the normalised attention needs a positive score)."""
    if not isinstance(kernel, (RBFKernel, ARDRBFKernel)):
        raise ArgumentTypeError(
            "kernel must be an RBFKernel or ARDRBFKernel (normalised attention needs a strictly "
            f"positive score), got {type(kernel).__name__}"
        )
    return float(kernel.alpha) ** 2


def _context(X, x_query) -> tuple[np.ndarray, np.ndarray]:
    X = as_float_array(X, "X", ndim=2)
    x_query = as_float_array(x_query, "x_query", ndim=1)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must hold n >= 1 points of d >= 1 features, got shape {X.shape}")
    if x_query.shape != (X.shape[1],):
        raise ValueError(f"x_query must have shape ({X.shape[1]},) to match X, got {x_query.shape}")
    return X, x_query


def first_row(kernel, X, x_query, eps: float = 0.0) -> np.ndarray:
    """Row ``d+2`` of ``Z^(1)`` when eqn:1st attn is normalised: ``alpha^2 kappa_j / (kappa_j +
    eps)`` with ``kappa_j = k(x_j, x) / alpha^2`` the unit score of token ``j`` against the query.

    Parameters
    ----------
    kernel : RBFKernel or ARDRBFKernel
    X : ndarray of shape (n, d)
    x_query : ndarray of shape (d,)
    eps : float
        Offset of the normaliser: 0 (our ``Attn^na``: the row is ``alpha^2`` exactly) or
        :data:`CODE_EPS` (the public code's).

    Returns
    -------
    c : ndarray of shape (n + 1,)
        The row at the ``n`` context tokens and the query (last).
    """
    alpha2 = _rbf(kernel)
    X, x_query = _context(X, x_query)
    eps = positive_scalar(eps, "eps", allow_zero=True)
    tokens = np.vstack([X, x_query[None, :]])  # (n+1, d)
    score = kernel(tokens, x_query[None, :])[:, 0] / alpha2  # (n+1,) unit score, 1 at the query
    return alpha2 * score / (score + eps)  # V^(0)_{k,y} * 1 * (normalised weight)


@dataclass(frozen=True)
class FirstLayerLimit:
    """The variance channel of the normalised-first hand-set TF^pr as ``L -> infinity``.

    Attributes
    ----------
    row : ndarray of shape (n + 1,)
        ``c``: row ``d+2`` after the first layer (:func:`first_row`); ``z_k = row[-1]``.
    g_context : ndarray of shape (n,)
        ``(G + sigma^2 I)^{-1} G c_X``: row ``d+4`` at the context tokens.
    z_tau : float
        ``k_x^T (G + sigma^2 I)^{-1} c_X``: row ``d+4`` at the query.
    tau_L : float
        The construction's readout ``sigma^2 + z_k - z_tau`` (``W`` of supp-eqn:weights).
    tau : float
        The exact predictive variance ``sigma^2 + k(x, x) - k_x^T (G + sigma^2 I)^{-1} k_x``.
    """

    row: np.ndarray = field(repr=False)
    g_context: np.ndarray = field(repr=False)
    z_tau: float
    tau_L: float
    tau: float

    @property
    def z_k(self) -> float:
        """Row ``d+2`` at the query."""
        return float(self.row[-1])


def variance_limit(kernel, X, x_query, noise_var: float, eps: float = 0.0) -> FirstLayerLimit:
    """The limit of the variance channel (rows ``d+2``, ``d+4``) and of the readout of the hand-set
    TF^pr (or TF: same fixed point) whose first layer is normalised too.

    Parameters
    ----------
    kernel : RBFKernel or ARDRBFKernel
    X : ndarray of shape (n, d)
    x_query : ndarray of shape (d,)
    noise_var : float
        ``sigma^2 > 0``.
    eps : float
        Offset of the first layer's normaliser (:func:`first_row`).

    Returns
    -------
    FirstLayerLimit
    """
    c = first_row(kernel, X, x_query, eps)
    X, x_query = _context(X, x_query)
    noise_var = positive_scalar(noise_var, "noise_var")
    n = X.shape[0]
    G = kernel(X)  # (n, n)
    k_x = kernel(X, x_query[None, :])[:, 0]  # (n,)
    cho = scipy.linalg.cho_factor(G + noise_var * np.eye(n))  # G + sigma^2 I, SPD
    w = scipy.linalg.cho_solve(cho, c[:n])  # (G + sigma^2 I)^{-1} c_X
    # eqn:richardson (G + sigma^2 I) u = G v at the context; eqn:recursion's fixed point at x
    g_context = G @ w
    z_tau = float(k_x @ w)
    _, tau = posterior_predictive(kernel, X, np.zeros(n), x_query[None, :], noise_var)
    return FirstLayerLimit(
        row=c,
        g_context=g_context,
        z_tau=z_tau,
        tau_L=float(noise_var + c[-1] - z_tau),  # W_{2,y} 1 + W_{2,k} z_k + W_{2,g} z_tau
        tau=float(tau[0]),
    )


def affine_minimax_error(channel, target) -> float:
    """The least worst-case error ``min_{a, c} max_i |a + c z_i - t_i|`` of an affine readout of
    one channel ``z`` (``channel``) against ``t`` (``target``) on a finite set of instances (at
    least 2).

    For a line (a Haar system of dimension 2) the best worst-case error on a finite set is the
    largest over its 3-point subsets (de la Vallee Poussin), and on 3 points ``z_a <= z_b <= z_c``
    it is ``|t_b - (t_a (z_c - z_b) + t_c (z_b - z_a)) / (z_c - z_a)| / 2`` (the error alternates
    in sign); points of one ``z`` need ``(max t - min t) / 2``.

    Parameters
    ----------
    channel, target : ndarray of shape (m,)

    Returns
    -------
    float
    """
    z = as_float_array(channel, "channel", ndim=1)
    t = as_float_array(target, "target", ndim=1)
    if z.shape != t.shape or z.size < 2:
        raise ValueError(
            f"channel and target must have one shape (m,) with m >= 2, got {z.shape} and {t.shape}"
        )
    order = np.argsort(z, kind="stable")
    z, t = z[order], t[order]
    best = 0.0
    for za in np.unique(z):  # one z, several targets: no readout separates them
        same = t[z == za]
        best = max(best, float(same.max() - same.min()) / 2)
    for a, b, c in itertools.combinations(range(z.size), 3):
        if z[c] == z[a]:
            continue  # covered above
        line = (t[a] * (z[c] - z[b]) + t[c] * (z[b] - z[a])) / (z[c] - z[a])
        best = max(best, float(abs(t[b] - line)) / 2)
    return best


@dataclass(frozen=True)
class ReadoutCounterexample:
    """Three queries on one two-point context where no readout ``a + b z_k + c z_tau`` of the
    normalised-first construction's limit is ``tau``.

    Attributes
    ----------
    X : ndarray of shape (2, d)
        The context ``-/+ a e_1``.
    queries : ndarray of shape (3, d)
        ``0``, ``t e_1`` (``t > a``: the root of ``kappa(t e_1, x_1) + kappa(t e_1, x_2) =
        kappa(0, x_1) + kappa(0, x_2)``, so its ``z_tau`` equals the first's) and a far query.
    limits : tuple of FirstLayerLimit
        The limit at each query.
    minimax_error : float
        :func:`affine_minimax_error` of ``z_tau`` against ``tau`` over the three (``z_k`` is the
        same at every query, so a readout ``a + b z_k + c z_tau`` is an affine function of
        ``z_tau``): no such readout errs by less than this on the three.
    """

    X: np.ndarray = field(repr=False)
    queries: np.ndarray = field(repr=False)
    limits: tuple[FirstLayerLimit, ...] = field(repr=False)
    minimax_error: float

    @property
    def z_k(self) -> np.ndarray:
        return np.array([lim.z_k for lim in self.limits])

    @property
    def z_tau(self) -> np.ndarray:
        return np.array([lim.z_tau for lim in self.limits])

    @property
    def tau(self) -> np.ndarray:
        return np.array([lim.tau for lim in self.limits])


def _equal_sum_root(a: float, ell: float) -> float:
    """The ``t > 0`` with ``exp(-t^2/(2 ell^2)) cosh(t a / ell^2) = 1``: the query ``t e_1`` whose
    unit scores against ``-/+ a e_1`` sum to those of the midpoint (exists for ``a > ell``: the
    left side rises from 1 at ``t = 0``, ``h''(0) = a^2/ell^4 - 1/ell^2 > 0``, and falls to 0)."""

    def h(t):  # log of the left side, minus log 1
        u = t * a / ell**2
        return -(t**2) / (2 * ell**2) + u + np.log1p(np.exp(-2 * u)) - np.log(2.0)

    hi = 2 * a  # h(2a) = -2a^2/ell^2 + log cosh(2a^2/ell^2) < 0
    ts = np.linspace(hi / 4096, hi, 4097)
    vals = h(ts)
    top = int(np.argmax(vals))
    if vals[top] <= 0:  # pragma: no cover - refused by the caller (a > ell)
        raise ValueError(f"no query with equal score sums for a={a}, ell={ell}")
    below = top + int(np.argmax(vals[top:] < 0))
    return float(scipy.optimize.brentq(h, ts[below - 1], ts[below], xtol=1e-15, rtol=1e-15))


def readout_counterexample(
    kernel, noise_var: float, d: int = 1, a: float | None = None, eps: float = 0.0
) -> ReadoutCounterexample:
    """Three queries where the normalised-first construction's channels cannot be read out as
    ``tau`` by any ``a + b z_k + c z_tau``.

    Context ``x_{1,2} = -/+ a e_1``: ``1`` is an eigenvector of ``G + sigma^2 I``, so with
    ``eps = 0`` ``z_tau = alpha^2 (k_1 + k_2) / (alpha^2 (1 + gamma) + sigma^2)`` depends on the
    query only through ``k_1 + k_2``, while ``tau`` also falls with ``(k_1 - k_2)^2``. The midpoint
    (``k_1 = k_2``) and ``t e_1`` (same sum, ``k_1 != k_2``) share ``z_k`` and ``z_tau`` and differ
    in ``tau``; a third, far query makes the least worst-case error of an affine readout about
    half that difference, robust to the round-off of the two equal ``z_tau`` (and to the public
    code's ``eps``, which moves them apart by about ``eps``).

    Parameters
    ----------
    kernel : RBFKernel
        Isotropic (the construction uses distances along ``e_1``).
    noise_var : float
    d : int
        Input dimension (the points lie on the first axis).
    a : float, optional
        Half the context's spread, ``> lengthscale``; default ``1.2 lengthscale``.
    eps : float
        Offset of the first layer's normaliser (:func:`first_row`).

    Returns
    -------
    ReadoutCounterexample
    """
    if not isinstance(kernel, RBFKernel):
        raise ArgumentTypeError(f"kernel must be an RBFKernel, got {type(kernel).__name__}")
    d = positive_int(d, "d")
    ell = kernel.lengthscale
    a = 1.2 * ell if a is None else positive_scalar(a, "a")
    if a <= ell:
        raise ValueError(f"a must exceed the lengthscale {ell} (else no second query), got {a}")
    t = _equal_sum_root(a, ell)
    e1 = np.eye(d)[0]
    X = np.stack([-a * e1, a * e1])  # (2, d)
    far = t + a + 4 * ell  # every score below exp(-8) of the others
    queries = np.stack([0 * e1, t * e1, far * e1])  # (3, d)
    limits = tuple(variance_limit(kernel, X, q, noise_var, eps) for q in queries)
    z_k = np.array([lim.z_k for lim in limits])
    if np.ptp(z_k) != 0:  # pragma: no cover - c_{n+1} = alpha^2 / (1 + eps) at every query
        raise AssertionError(f"z_k differs across the queries: {z_k}")
    err = affine_minimax_error([lim.z_tau for lim in limits], [lim.tau for lim in limits])
    return ReadoutCounterexample(X=X, queries=queries, limits=limits, minimax_error=err)
