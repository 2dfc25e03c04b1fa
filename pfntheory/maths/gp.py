"""Exact Gaussian-process posterior predictive distributions (float64, Cholesky).

Implements
----------
* Sec. 2 (eqn:GPreg): ``mu(Z) = k_x^T (G + sigma^2 I)^{-1} Y`` and
  ``tau(Z) = kappa(x, x) + sigma^2 - k_x^T (G + sigma^2 I)^{-1} k_x`` for a batch of contexts.
* The log marginal likelihood ``log N(Y; 0, G + sigma^2 I)`` (Rasmussen & Williams, eq. 2.30).
* supp-sec:exp additional (hierarchical GP prior): the finite-mixture PPD, with posterior weights
  proportional to prior weight times marginal likelihood.
* supp-sec:real data: the empirical-Bayes fit of an ARD RBF kernel with amplitude and Gaussian noise
  by maximising the log marginal likelihood with restarts.

Noise is parameterised by its *variance* ``noise_var`` (the paper's ``sigma^2``) everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special
import scipy.stats

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_rng,
    check_size,
    positive_array,
    positive_int,
    positive_scalar,
)

from .kernels import ARDRBFKernel

__all__ = [
    "posterior_predictive",
    "log_marginal_likelihood",
    "MixturePPD",
    "mixture_ppd",
    "EBFit",
    "fit_empirical_bayes",
]


def _check_kernel(kernel, name: str = "kernel"):
    if not (callable(kernel) and callable(getattr(kernel, "diag", None))):
        raise ArgumentTypeError(
            f"{name} must be a kernel of pfntheory.maths.kernels (callable with a "
            f".diag method), got {type(kernel).__name__}"
        )
    return kernel


def _context(X, Y, Xq):
    X = as_float_array(X, "X", min_ndim=2)
    Y = as_float_array(Y, "Y", min_ndim=1)
    if X.shape[-2] == 0:
        raise ValueError("X must hold at least one context point (n = 0 given)")
    if X.shape[-1] == 0:
        raise ValueError(f"X must have d >= 1 features, got shape {X.shape}")
    if Y.shape != X.shape[:-1]:
        raise ValueError(f"Y must have shape {X.shape[:-1]} to match X {X.shape}, got {Y.shape}")
    check_size(int(np.prod(X.shape[:-2])) * X.shape[-2] ** 2, "the Gram matrix of X")
    if Xq is not None:
        Xq = as_float_array(Xq, "Xq", min_ndim=2)
        if Xq.shape[-1] != X.shape[-1] or Xq.shape[:-2] != X.shape[:-2]:
            raise ValueError(
                f"Xq must have shape {X.shape[:-2]} + (m, {X.shape[-1]}), got {Xq.shape}"
            )
        if Xq.shape[-2] == 0:
            raise ValueError(
                f"Xq must hold at least one query point (m = 0 given), shape {Xq.shape}"
            )
    return X, Y, Xq


def _chol(A: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError as err:  # a kernel that is not positive semi-definite
        raise ValueError(
            "G + noise_var I is not numerically positive definite (kernel not PSD, "
            "or noise_var too small for its round-off)"
        ) from err


def _trisolve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve ``L V = B`` for lower-triangular ``L`` over leading batch dimensions."""
    if L.ndim == 2:
        return scipy.linalg.solve_triangular(L, B, lower=True)
    out = np.empty(np.broadcast_shapes(L.shape[:-2], B.shape[:-2]) + B.shape[-2:])
    Lb = np.broadcast_to(L, out.shape[:-2] + L.shape[-2:])
    Bb = np.broadcast_to(B, out.shape)
    for idx in np.ndindex(out.shape[:-2]):
        out[idx] = scipy.linalg.solve_triangular(Lb[idx], Bb[idx], lower=True)
    return out


def posterior_predictive(kernel, X, Y, Xq, noise_var: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact GP posterior predictive mean and variance of ``y`` at query points.

    Parameters
    ----------
    kernel : callable
        A kernel of :mod:`pfntheory.maths.kernels` (``kernel(X1, X2)`` and ``kernel.diag(X)``).
    X : ndarray of shape (..., n, d)
        Context inputs (``n >= 1``).
    Y : ndarray of shape (..., n)
        Context labels.
    Xq : ndarray of shape (..., m, d)
        Query inputs.
    noise_var : float
        Noise variance ``sigma^2 > 0``.

    Returns
    -------
    mu, tau : ndarray of shape (..., m)
        ``mu = k_x^T (G + sigma^2 I)^{-1} Y``,
        ``tau = kappa(x,x) + sigma^2 - k_x^T (G+sigma^2 I)^{-1} k_x``.
    """
    _check_kernel(kernel)
    if Xq is None:
        raise ArgumentTypeError("Xq must be an array of query inputs, got None")
    X, Y, Xq = _context(X, Y, Xq)
    noise_var = positive_scalar(noise_var, "noise_var")
    n = X.shape[-2]
    G = kernel(X)  # (..., n, n)
    Kq = kernel(X, Xq)  # (..., n, m)
    L = _chol(G + noise_var * np.eye(n))  # Alg 2.1 (R&W p.19) line 2: L = chol(K + sigma^2 I)
    a = _trisolve(L, Y[..., None])  # L \ y
    V = _trisolve(L, Kq)  # line 5: v = L \ k_*
    mu = np.sum(V * a, axis=-2)  # line 4: mu = k_*^T alpha = (L\k)^T (L\y)
    tau = kernel.diag(Xq) + noise_var - np.sum(V * V, axis=-2)  # line 6 + noise
    return mu, tau


def log_marginal_likelihood(kernel, X, Y, noise_var: float) -> np.ndarray:
    """``log N(Y; 0, G + sigma^2 I)`` for each context, shape ``X.shape[:-2]``."""
    _check_kernel(kernel)
    X, Y, _ = _context(X, Y, None)
    noise_var = positive_scalar(noise_var, "noise_var")
    n = X.shape[-2]
    L = _chol(kernel(X) + noise_var * np.eye(n))
    a = _trisolve(L, Y[..., None])[..., 0]
    logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    # R&W eq. 2.30: -1/2 y^T K^{-1} y - 1/2 log|K| - n/2 log 2 pi
    return -0.5 * np.sum(a * a, axis=-1) - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)


@dataclass(frozen=True)
class MixturePPD:
    """A finite mixture of Gaussian predictive distributions at ``m`` query points.

    Attributes
    ----------
    weights : ndarray of shape (..., H)
        Posterior component weights (sum to 1 over the last axis).
    mu, tau : ndarray of shape (..., H, m)
        Componentwise predictive means and variances.
    """

    weights: np.ndarray
    mu: np.ndarray
    tau: np.ndarray

    def __post_init__(self):
        w = as_float_array(self.weights, "weights", min_ndim=1, non_empty=True)
        mu = as_float_array(self.mu, "mu", min_ndim=2)
        tau = positive_array(self.tau, "tau", min_ndim=2)
        if mu.shape != tau.shape or mu.shape[:-1] != w.shape or mu.shape[-1] == 0:
            raise ValueError(
                f"mu and tau must have shape weights.shape + (m,) = {w.shape} + (m,), "
                f"got {mu.shape} and {tau.shape}"
            )
        if np.any(w < 0) or np.any(np.abs(w.sum(-1) - 1.0) > 1e-9 * w.shape[-1]):
            raise ValueError("weights must be non-negative and sum to 1 over the last axis")
        for k, v in (("weights", w), ("mu", mu), ("tau", tau)):
            object.__setattr__(self, k, v)

    def _y(self, y) -> np.ndarray:
        y = as_float_array(y, "y")
        try:
            np.broadcast_shapes(y.shape, self.mu.shape[:-2] + self.mu.shape[-1:])
        except ValueError as err:
            raise ValueError(
                f"y must broadcast to {self.mu.shape[:-2] + self.mu.shape[-1:]}, got {y.shape}"
            ) from err
        return y

    def cdf(self, y) -> np.ndarray:
        """Mixture CDF at ``y`` (shape broadcastable to ``(..., m)``)."""
        y = self._y(y)
        if y.ndim == 0:
            y = y[None]
        y = y[..., None, :]
        comp = scipy.stats.norm.cdf((y - self.mu) / np.sqrt(self.tau))
        return np.sum(self.weights[..., :, None] * comp, axis=-2)

    def pdf(self, y) -> np.ndarray:
        y = self._y(y)
        if y.ndim == 0:
            y = y[None]
        y = y[..., None, :]
        comp = scipy.stats.norm.pdf(y, loc=self.mu, scale=np.sqrt(self.tau))
        return np.sum(self.weights[..., :, None] * comp, axis=-2)

    def mean(self) -> np.ndarray:
        return np.sum(self.weights[..., :, None] * self.mu, axis=-2)

    def second_moment(self) -> np.ndarray:
        return np.sum(self.weights[..., :, None] * (self.tau + self.mu**2), axis=-2)


def mixture_ppd(kernels, noise_var, prior_weights, X, Y, Xq) -> MixturePPD:
    """PPD of the hierarchical GP prior of supp-sec:exp additional.

    ``theta ~ sum_h pi_h delta_{theta_h}``; given ``theta_h = (kernel_h, noise_var_h)`` the PPD is
    the GP predictive ``N(mu_h, tau_h)``, and the posterior weight of component ``h`` is
    ``pi_h p(Y | X, theta_h) / sum_h' pi_h' p(Y | X, theta_h')``.

    ``prior_weights``: positive, one per component; only their ratios matter (they are normalised
    here, so ``(1, 1)`` and ``(0.5, 0.5)`` are the same prior).
    """
    if isinstance(kernels, (str, bytes)) or not hasattr(kernels, "__iter__"):
        raise ArgumentTypeError(
            f"kernels must be a sequence of kernels, got {type(kernels).__name__}"
        )
    kernels = list(kernels)
    H = len(kernels)
    if H == 0:
        raise ValueError("kernels must hold at least one component")
    for h, k in enumerate(kernels):
        _check_kernel(k, f"kernels[{h}]")
    noise_var = positive_array(noise_var, "noise_var", ndim=1)
    pw = positive_array(prior_weights, "prior_weights", ndim=1)
    if noise_var.shape != (H,) or pw.shape != (H,):
        raise ValueError(
            f"noise_var and prior_weights must have shape ({H},), got {noise_var.shape}, {pw.shape}"
        )
    if Xq is None:
        raise ArgumentTypeError("Xq must be an array of query inputs, got None")
    X, Y, Xq = _context(X, Y, Xq)
    mus, taus, lml = [], [], []
    for k, noise_var_h in zip(kernels, noise_var, strict=True):  # sigma_h^2
        mu, tau = posterior_predictive(k, X, Y, Xq, noise_var_h)
        mus.append(mu)
        taus.append(tau)
        lml.append(log_marginal_likelihood(k, X, Y, noise_var_h))
    logw = np.stack(lml, axis=-1) + np.log(pw / pw.sum())
    w = np.exp(logw - scipy.special.logsumexp(logw, axis=-1, keepdims=True))
    return MixturePPD(weights=w, mu=np.stack(mus, axis=-2), tau=np.stack(taus, axis=-2))


@dataclass(frozen=True)
class EBFit:
    """Empirical-Bayes ARD RBF fit: ``alpha``, ``lengthscales``, noise ``sigma`` (std) and the
    maximised log marginal likelihood."""

    alpha: float
    lengthscales: tuple[float, ...]
    noise_std: float
    log_marginal_likelihood: float

    @property
    def noise_var(self) -> float:
        return self.noise_std**2

    @property
    def kernel(self) -> ARDRBFKernel:
        return ARDRBFKernel(alpha=self.alpha, lengthscales=self.lengthscales)


def _neg_lml_and_grad(log_params: np.ndarray, X: np.ndarray, Y: np.ndarray):
    """Negative LML of the ARD RBF + noise model and its gradient in log-parameters.

    ``log_params = (log alpha, log ell_1..d, log sigma)``; R&W eq. 5.9:
    ``d lml / d theta = 1/2 tr((a a^T - K^{-1}) dK/dtheta)``.
    """
    d = X.shape[1]
    alpha = np.exp(log_params[0])
    ls = np.exp(log_params[1 : 1 + d])
    s = np.exp(log_params[1 + d])
    n = X.shape[0]
    diff2 = (X[:, None, :] - X[None, :, :]) ** 2 / ls**2  # (n, n, d)
    E = np.exp(-0.5 * diff2.sum(-1))
    Kf = alpha**2 * E
    K = Kf + s**2 * np.eye(n)
    try:
        cf = scipy.linalg.cho_factor(K, lower=True)
    except np.linalg.LinAlgError:
        return 1e25, np.zeros_like(log_params)
    a = scipy.linalg.cho_solve(cf, Y)
    logdet = 2.0 * np.sum(np.log(np.diag(cf[0])))
    lml = -0.5 * Y @ a - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)
    W = np.outer(a, a) - scipy.linalg.cho_solve(cf, np.eye(n))
    grad = np.empty_like(log_params)
    grad[0] = 0.5 * np.sum(W * (2.0 * Kf))  # dK/dlog alpha = 2 Kf
    for k in range(d):
        grad[1 + k] = 0.5 * np.sum(W * (Kf * diff2[:, :, k]))  # dK/dlog ell_k = Kf * (dx/ell)^2
    grad[1 + d] = 0.5 * np.trace(W) * 2.0 * s**2  # dK/dlog s = 2 s^2 I
    return -lml, -grad


def fit_empirical_bayes(
    X,
    Y,
    *,
    n_restarts: int = 10,
    rng: np.random.Generator,
    bounds: tuple[float, float] = (1e-3, 1e3),
) -> EBFit:
    """Maximise the log marginal likelihood of an ARD RBF GP with amplitude and Gaussian noise.

    L-BFGS-B on log-parameters with the analytic gradient (R&W Sec. 5.4.1); ``n_restarts`` random
    starts drawn log-uniformly within ``bounds`` plus one start at all-ones. Returns the
    best optimum.
    """
    X = as_float_array(X, "X", ndim=2)
    Y = as_float_array(Y, "Y", ndim=1)
    if X.shape[0] != Y.shape[0] or X.shape[0] == 0:
        raise ValueError(
            f"X and Y must have the same non-zero length, got {X.shape[0]} and {Y.shape[0]}"
        )
    if X.shape[1] == 0:
        raise ValueError(f"X must have d >= 1 features, got shape {X.shape}")
    check_size(X.shape[0] ** 2 * X.shape[1], "the pairwise differences of X")
    n_restarts = positive_int(n_restarts, "n_restarts", minimum=0, maximum=10_000)
    rng = check_rng(rng)
    try:
        b_lo, b_hi = bounds
    except (TypeError, ValueError) as err:
        raise ArgumentTypeError(f"bounds must be a pair (low, high), got {bounds!r}") from err
    b_lo = positive_scalar(b_lo, "bounds[0]")
    b_hi = positive_scalar(b_hi, "bounds[1]")
    if not b_lo < b_hi:
        raise ValueError(f"bounds must satisfy 0 < low < high, got {bounds!r}")
    d = X.shape[1]
    lo, hi = np.log(b_lo), np.log(b_hi)
    starts = [np.zeros(d + 2)] + [
        rng.uniform(np.log(0.05), np.log(5.0), size=d + 2) for _ in range(n_restarts)
    ]
    fits = (
        scipy.optimize.minimize(
            _neg_lml_and_grad,
            x0,
            args=(X, Y),
            jac=True,
            method="L-BFGS-B",
            bounds=[(lo, hi)] * (d + 2),
        )
        for x0 in starts
    )
    best = min(fits, key=lambda res: res.fun)  # the first of the lowest, as the starts are listed
    p = np.exp(best.x)
    return EBFit(
        alpha=float(p[0]),
        lengthscales=tuple(float(v) for v in p[1 : 1 + d]),
        noise_std=float(p[1 + d]),
        log_marginal_likelihood=float(-best.fun),
    )
