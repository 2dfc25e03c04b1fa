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

from ._checks import as_float_array, positive_array, positive_int, positive_scalar
from .kernels import ARDRBFKernel

__all__ = [
    "posterior_predictive",
    "log_marginal_likelihood",
    "MixturePPD",
    "mixture_ppd",
    "EBFit",
    "fit_empirical_bayes",
]


def _context(X, Y, Xq):
    X = as_float_array(X, "X", min_ndim=2)
    Y = as_float_array(Y, "Y", min_ndim=1)
    if X.shape[-2] == 0:
        raise ValueError("X must hold at least one context point (n = 0 given)")
    if Y.shape != X.shape[:-1]:
        raise ValueError(f"Y must have shape {X.shape[:-1]} to match X {X.shape}, got {Y.shape}")
    if Xq is not None:
        Xq = as_float_array(Xq, "Xq", min_ndim=2)
        if Xq.shape[-1] != X.shape[-1] or Xq.shape[:-2] != X.shape[:-2]:
            raise ValueError(f"Xq must have shape {X.shape[:-2]} + (m, {X.shape[-1]}), got {Xq.shape}")
    return X, Y, Xq


def _chol(A: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError as err:  # pragma: no cover - noise_var > 0 makes A SPD
        raise ValueError("G + noise_var I is not numerically positive definite") from err


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
        A kernel of :mod:`pfntheory.kernels` (``kernel(X1, X2)`` and ``kernel.diag(X)``).
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
        ``mu = k_x^T (G + sigma^2 I)^{-1} Y``, ``tau = kappa(x,x) + sigma^2 - k_x^T (G+sigma^2 I)^{-1} k_x``.
    """
    X, Y, Xq = _context(X, Y, Xq)
    s2 = positive_scalar(noise_var, "noise_var")
    n = X.shape[-2]
    G = kernel(X)  # (..., n, n)
    Kq = kernel(X, Xq)  # (..., n, m)
    L = _chol(G + s2 * np.eye(n))  # Alg 2.1 (R&W p.19) line 2: L = chol(K + sigma^2 I)
    a = _trisolve(L, Y[..., None])  # L \ y
    V = _trisolve(L, Kq)  # line 5: v = L \ k_*
    mu = np.sum(V * a, axis=-2)  # line 4: mu = k_*^T alpha = (L\k)^T (L\y)
    tau = kernel.diag(Xq) + s2 - np.sum(V * V, axis=-2)  # line 6 + noise
    return mu, tau


def log_marginal_likelihood(kernel, X, Y, noise_var: float) -> np.ndarray:
    """``log N(Y; 0, G + sigma^2 I)`` for each context, shape ``X.shape[:-2]``."""
    X, Y, _ = _context(X, Y, None)
    s2 = positive_scalar(noise_var, "noise_var")
    n = X.shape[-2]
    L = _chol(kernel(X) + s2 * np.eye(n))
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

    def cdf(self, y) -> np.ndarray:
        """Mixture CDF at ``y`` (shape broadcastable to ``(..., m)``)."""
        y = np.asarray(y, dtype=float)[..., None, :]
        comp = scipy.stats.norm.cdf((y - self.mu) / np.sqrt(self.tau))
        return np.sum(self.weights[..., :, None] * comp, axis=-2)

    def pdf(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)[..., None, :]
        comp = scipy.stats.norm.pdf(y, loc=self.mu, scale=np.sqrt(self.tau))
        return np.sum(self.weights[..., :, None] * comp, axis=-2)

    def mean(self) -> np.ndarray:
        return np.sum(self.weights[..., :, None] * self.mu, axis=-2)

    def second_moment(self) -> np.ndarray:
        return np.sum(self.weights[..., :, None] * (self.tau + self.mu**2), axis=-2)


def mixture_ppd(kernels, noise_vars, prior_weights, X, Y, Xq) -> MixturePPD:
    """PPD of the hierarchical GP prior of supp-sec:exp additional.

    ``theta ~ sum_h pi_h delta_{theta_h}``; given ``theta_h = (kernel_h, noise_var_h)`` the PPD is the
    GP predictive ``N(mu_h, tau_h)``, and the posterior weight of component ``h`` is
    ``pi_h p(Y | X, theta_h) / sum_h' pi_h' p(Y | X, theta_h')``.
    """
    kernels = list(kernels)
    H = len(kernels)
    if H == 0:
        raise ValueError("kernels must hold at least one component")
    nv = positive_array(noise_vars, "noise_vars", ndim=1)
    pw = positive_array(prior_weights, "prior_weights", ndim=1)
    if nv.shape != (H,) or pw.shape != (H,):
        raise ValueError(f"noise_vars and prior_weights must have shape ({H},), got {nv.shape}, {pw.shape}")
    X, Y, Xq = _context(X, Y, Xq)
    mus, taus, lml = [], [], []
    for k, s2 in zip(kernels, nv, strict=True):
        mu, tau = posterior_predictive(k, X, Y, Xq, s2)
        mus.append(mu)
        taus.append(tau)
        lml.append(log_marginal_likelihood(k, X, Y, s2))
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
    ls = np.exp(log_params[1:1 + d])
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


def fit_empirical_bayes(X, Y, *, n_restarts: int = 10, rng: np.random.Generator,
                        bounds: tuple[float, float] = (1e-3, 1e3)) -> EBFit:
    """Maximise the log marginal likelihood of an ARD RBF GP with amplitude and Gaussian noise.

    L-BFGS-B on log-parameters with the analytic gradient (R&W Sec. 5.4.1); ``n_restarts`` random
    starts drawn log-uniformly within ``bounds`` plus one start at all-ones. Returns the best optimum.
    """
    X = as_float_array(X, "X", ndim=2)
    Y = as_float_array(Y, "Y", ndim=1)
    if X.shape[0] != Y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"X and Y must have the same non-zero length, got {X.shape[0]} and {Y.shape[0]}")
    n_restarts = positive_int(n_restarts, "n_restarts", minimum=0)
    d = X.shape[1]
    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    starts = [np.zeros(d + 2)] + [rng.uniform(np.log(0.05), np.log(5.0), size=d + 2)
                                  for _ in range(n_restarts)]
    best = None
    for x0 in starts:
        res = scipy.optimize.minimize(_neg_lml_and_grad, x0, args=(X, Y), jac=True,
                                      method="L-BFGS-B", bounds=[(lo, hi)] * (d + 2))
        if best is None or res.fun < best.fun:
            best = res
    p = np.exp(best.x)
    return EBFit(alpha=float(p[0]), lengthscales=tuple(float(v) for v in p[1:1 + d]),
                 noise_std=float(p[1 + d]), log_marginal_likelihood=float(-best.fun))
