"""Binary GP classification, the paper's first "beyond" model (sec. Discussion: latent GP models
for non-Gaussian data): the Laplace approximation, expectation propagation and an elliptical
slice sampler on the same context, and the predictive ``P(y* = 1 | D)`` of each.

The model: ``f ~ GP(0, kappa)``, ``y_i in {-1, +1}``, ``p(y_i | f_i) = Phi(y_i f_i)`` (probit) or
``sigma(y_i f_i)`` (logistic). The context's latent Gram is ``K + jitter I``; the same ``K`` is used
by every method, so the three approximate one posterior (docs/latent.md, "The exact side").

Implements
----------
* R&W Algorithm 3.1 (:func:`laplace_mode`, one step :func:`newton_step`), Algorithm 3.2
  (:func:`laplace_predict`); the probit derivatives of R&W eq. 3.16, the logistic ones of eq. 3.15.
* R&W Algorithms 3.5 and 3.6 (:func:`ep_fit`, :func:`ep_predict`), probit only.
* Elliptical slice sampling (Murray, Adams & MacKay 2010; :func:`ess_predict`): several chains in
  lockstep, the predictive Rao-Blackwellised over ``f* | f`` and its Monte-Carlo standard error
  from the spread of the chains' means.

For the probit link the Gaussian approximations' predictive is exact given their latent moments:
``int Phi(f) N(f | mu, s^2) df = Phi(mu / sqrt(1 + s^2))``; for the logistic link it is a
Gauss-Hermite quadrature of ``sigma`` against the latent Gaussian (:func:`logistic_gauss`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.special import expit, log_ndtr, ndtr

from pfntheory.base._checks import (
    as_float_array,
    check_rng,
    check_size,
    choice,
    named_broadcast,
    positive_int,
    positive_scalar,
)

__all__ = [
    "LINKS",
    "JITTER",
    "log_likelihood",
    "likelihood_derivatives",
    "LaplaceFit",
    "newton_step",
    "laplace_mode",
    "laplace_predict",
    "EPFit",
    "ep_fit",
    "ep_predict",
    "ESSResult",
    "ess_predict",
    "probit_predictive",
    "logistic_gauss",
]

LINKS = ("probit", "logistic")
#: Latent nugget added to the context Gram for every method (``K + JITTER alpha^2 I``): keeps the
#: sampler's Cholesky and ``K^{-1}`` finite for near-coincident inputs; its effect on a predictive
#: is of order ``JITTER`` (far below every tolerance that compares methods).
JITTER = 1e-6
_GH = np.polynomial.hermite_e.hermegauss(64)  # nodes/weights for E[g(Z)], Z ~ N(0, 1)


def _labels(y, n: int | None = None) -> np.ndarray:
    y = as_float_array(y, "y", ndim=1, non_empty=True)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}")
    if n is not None and y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) to match K, got {y.shape}")
    return y


def _gram(K) -> np.ndarray:
    K = as_float_array(K, "K", ndim=2)
    n = K.shape[0]
    if K.shape != (n, n) or n == 0:
        raise ValueError(f"K must be a non-empty square matrix, got shape {K.shape}")
    scale = max(float(np.max(np.abs(K))), 1e-300)
    if not np.allclose(K, K.T, rtol=0.0, atol=1e-12 * scale):
        raise ValueError("K must be symmetric")
    # positive semi-definite up to round-off: a symmetric eigensolve is accurate to ~n eps ||K||
    # <= n^2 eps max|K|; 1e-10 n max|K| leaves ~1e6 eps of margin per row (a Gram matrix of
    # coincident points passes, a Gram matrix minus a multiple of I that turns an eigenvalue
    # negative does not). O(n^3), as the factorisations every caller runs on K.
    lam_min = float(np.linalg.eigvalsh(K)[0])
    if lam_min < -1e-10 * n * scale:
        raise ValueError(
            f"K must be positive semi-definite (a Gram matrix), got an eigenvalue {lam_min:.3g}"
        )
    return K


def _latent(f, n: int) -> np.ndarray:
    f = as_float_array(f, "f", ndim=1)
    if f.shape != (n,):
        raise ValueError(f"f must have shape ({n},), got {f.shape}")
    return f


def _pointwise(a, b, name_a: str, name_b: str, *, labels: bool = False):
    """Two finite arrays of broadcastable shapes (``a`` labels in {-1, +1} when ``labels``): the
    checks of the elementwise public functions (their private twins run unchecked in loops)."""
    a, b = as_float_array(a, name_a), as_float_array(b, name_b)
    if labels and not np.all(np.isin(a, (-1.0, 1.0))):
        raise ValueError(f"{name_a} must hold labels in {{-1, +1}}")
    named_broadcast((name_a, a.shape), (name_b, b.shape))
    return a, b


def log_likelihood(y, f, link: str = "probit") -> np.ndarray:
    """``log p(y_i | f_i)`` per point: ``log Phi(y f)`` or ``-log(1 + exp(-y f))``."""
    y, f = _pointwise(y, f, "y", "f", labels=True)
    return _log_likelihood(y, f, choice(link, "link", LINKS))


def _log_likelihood(y, f, link):
    z = y * f
    return log_ndtr(z) if link == "probit" else -np.logaddexp(0.0, -z)


def likelihood_derivatives(y, f, link: str = "probit") -> tuple[np.ndarray, np.ndarray]:
    """``grad_i = d log p(y_i|f_i) / d f_i`` and ``W_i = -d^2 log p(y_i|f_i) / d f_i^2``.

    Probit (R&W eq. 3.16): with ``z = y f`` and ``r = N(z) / Phi(z)``, ``grad = y r`` and
    ``W = r^2 + z r`` (in (0, 1)). Logistic (R&W eq. 3.15): ``pi = sigma(f)``, ``grad = t - pi``
    with ``t = (y + 1) / 2``, ``W = pi (1 - pi)`` (in (0, 1/4]). Elementwise, any shape.
    """
    y, f = _pointwise(y, f, "y", "f", labels=True)
    return _likelihood_derivatives(y, f, choice(link, "link", LINKS))


def _likelihood_derivatives(y, f, link):
    y, f = np.asarray(y, float), np.asarray(f, float)
    if link == "probit":
        z = y * f
        r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))  # N(z)/Phi(z), stable
        return y * r, r * r + z * r
    pi = expit(f)
    return (y + 1) / 2 - pi, pi * (1 - pi)


# --------------------------------------------------------------------------------------------------
# Laplace (R&W Algorithms 3.1, 3.2)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LaplaceFit:
    """The Laplace approximation at the mode ``f_hat`` (R&W Algorithm 3.1's outputs).

    ``path`` holds the Newton iterates ``f^(0) = 0, f^(1), ..., f_hat`` (shape ``(T + 1, n)``),
    ``log_q`` the approximate log marginal likelihood ``log q(y | X)`` (R&W eq. 3.32).
    """

    K: np.ndarray
    y: np.ndarray
    link: str
    f_hat: np.ndarray
    grad: np.ndarray
    W: np.ndarray
    L: np.ndarray
    log_q: float
    path: np.ndarray


def newton_step(K, y, f, link: str = "probit") -> np.ndarray:
    """One Newton step of R&W Algorithm 3.1 from ``f`` (lines 4-8):
    ``f_new = K a``, ``a = b - W^1/2 B^-1 W^1/2 K b``, ``b = W f + grad``,
    ``B = I + W^1/2 K W^1/2``; i.e. ``f_new = (K^-1 + W)^-1 (W f + grad)``."""
    K = _gram(K)
    y = _labels(y, K.shape[0])
    return _newton(K, y, _latent(f, K.shape[0]), choice(link, "link", LINKS))[0]


def _newton(K, y, f, link):
    grad, W = _likelihood_derivatives(y, f, link)
    sW = np.sqrt(W)
    B = np.eye(len(y)) + sW[:, None] * K * sW[None, :]  # line 5: B = I + W^1/2 K W^1/2
    L = np.linalg.cholesky(B)  # line 5: L = cholesky(B)
    b = W * f + grad  # line 6: b = W f + grad log p(y|f)
    c = scipy.linalg.cho_solve((L, True), sW * (K @ b))
    a = b - sW * c  # line 7: a = b - W^1/2 L^T \ (L \ (W^1/2 K b))
    return K @ a, a  # line 8: f = K a


def laplace_mode(
    K, y, link: str = "probit", *, tol: float = 1e-12, max_iter: int = 100
) -> LaplaceFit:
    """Mode-finding for binary Laplace GPC, R&W Algorithm 3.1, from ``f = 0``.

    Stops when the objective ``Psi(f) = -a^T f / 2 + sum log p(y|f)`` rises by less than
    ``tol (1 + |Psi|)``; raises if that takes more than ``max_iter`` steps (plain Newton with no
    line search; the probit and logistic objectives are strictly concave).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Latent Gram at the context (with the caller's jitter).
    y : ndarray of shape (n,), labels in {-1, +1}
    link : {"probit", "logistic"}
    """
    K = _gram(K)
    y = _labels(y, K.shape[0])
    link = choice(link, "link", LINKS)
    tol = positive_scalar(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    f = np.zeros(len(y))
    path, psi = [f], -np.inf
    for _ in range(max_iter):
        f_new, a = _newton(K, y, f, link)
        psi_new = -0.5 * a @ f_new + float(np.sum(_log_likelihood(y, f_new, link)))  # line 9
        path.append(f_new)
        done = abs(psi_new - psi) <= tol * (1 + abs(psi_new))
        f, psi = f_new, psi_new
        if done:
            break
    else:
        raise RuntimeError(f"Newton's iteration did not converge in max_iter={max_iter} steps")
    grad, W = _likelihood_derivatives(y, f, link)
    sW = np.sqrt(W)
    L = np.linalg.cholesky(np.eye(len(y)) + sW[:, None] * K * sW[None, :])
    log_q = psi - float(np.sum(np.log(np.diag(L))))  # line 10 (eq. 3.32)
    return LaplaceFit(K, y, link, f, grad, W, L, log_q, np.stack(path))


def _query(k_star, kss, n: int) -> tuple[np.ndarray, np.ndarray]:
    k_star = as_float_array(k_star, "k_star", ndim=2)
    if k_star.shape[0] != n:
        raise ValueError(f"k_star must have shape ({n}, m), got {k_star.shape}")
    kss = as_float_array(kss, "kss", ndim=1)
    if kss.shape != (k_star.shape[1],):
        raise ValueError(f"kss must have shape ({k_star.shape[1]},), got {kss.shape}")
    if np.any(kss < 0):  # prior variances kappa(x*, x*): a negative one is no kernel's
        raise ValueError(f"kss must be non-negative (prior variances), got min {kss.min()}")
    return k_star, kss


def _moments(mu, s2):
    mu, s2 = _pointwise(mu, s2, "mu", "s2")
    if np.any(s2 < 0):
        raise ValueError(f"s2 must be non-negative (a variance), got min {s2.min()}")
    return mu, s2


def probit_predictive(mu, s2) -> np.ndarray:
    """``int Phi(f) N(f | mu, s^2) df = Phi(mu / sqrt(1 + s^2))`` (R&W eq. 3.82)."""
    return _probit_predictive(*_moments(mu, s2))


def _probit_predictive(mu, s2):
    return ndtr(np.asarray(mu, float) / np.sqrt(1.0 + np.asarray(s2, float)))


def logistic_gauss(mu, s2) -> np.ndarray:
    """``int sigma(f) N(f | mu, s^2) df`` by 64-point Gauss-Hermite quadrature (error below 1e-10
    for ``s^2 <= 100``: the integrand is analytic and the rule exact to degree 127)."""
    return _logistic_gauss(*_moments(mu, s2))


def _logistic_gauss(mu, s2):
    mu, s = np.asarray(mu, float)[..., None], np.sqrt(np.asarray(s2, float))[..., None]
    z, w = _GH
    return np.sum(w * expit(mu + s * z), axis=-1) / np.sqrt(2 * np.pi)


def laplace_predict(fit: LaplaceFit, k_star, kss) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R&W Algorithm 3.2: latent mean ``k*^T grad log p(y|f_hat)``, variance
    ``k** - v^T v`` with ``v = L \\ (W^1/2 k*)``, and ``P(y* = 1 | D)``.

    Parameters
    ----------
    fit : LaplaceFit
    k_star : ndarray of shape (n, m)
        ``kappa(x_i, x*_j)``.
    kss : ndarray of shape (m,)
        ``kappa(x*_j, x*_j)``.

    Returns
    -------
    mu, s2, p : ndarray of shape (m,)
    """
    if not isinstance(fit, LaplaceFit):
        raise ValueError(f"fit must be a LaplaceFit, got {type(fit).__name__}")
    k_star, kss = _query(k_star, kss, len(fit.y))
    mu = k_star.T @ fit.grad  # line 4: f* = k*^T grad log p(y|f_hat)
    v = scipy.linalg.solve_triangular(fit.L, np.sqrt(fit.W)[:, None] * k_star, lower=True)
    s2 = np.maximum(kss - np.sum(v * v, axis=0), 0.0)  # lines 5-6: V[f*] = k** - v^T v
    p = _probit_predictive(mu, s2) if fit.link == "probit" else _logistic_gauss(mu, s2)
    return mu, s2, p


# --------------------------------------------------------------------------------------------------
# Expectation propagation (R&W Algorithms 3.5, 3.6), probit
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EPFit:
    """Site parameters ``tau~, nu~`` of EP at convergence, with ``L = chol(I + S~^1/2 K S~^1/2)``,
    the posterior moments ``mu, Sigma`` and the number of sweeps it took."""

    K: np.ndarray
    y: np.ndarray
    tau: np.ndarray
    nu: np.ndarray
    mu: np.ndarray
    Sigma: np.ndarray
    L: np.ndarray
    sweeps: int


def _ep_refresh(K, tau, nu):
    sS = np.sqrt(tau)
    L = np.linalg.cholesky(np.eye(len(tau)) + sS[:, None] * K * sS[None, :])  # line 15
    V = scipy.linalg.solve_triangular(L, sS[:, None] * K, lower=True)  # line 16
    Sigma = K - V.T @ V  # line 17: Sigma = K - V^T V
    return Sigma, Sigma @ nu, L  # line 17: mu = Sigma nu~


def ep_fit(K, y, *, tol: float = 1e-10, max_sweeps: int = 200) -> EPFit:
    """EP for binary probit GPC, R&W Algorithm 3.5 (sequential updates, rank-one refresh of
    ``Sigma``, full recomputation after every sweep). Converged when the largest change of a site
    parameter over a sweep is below ``tol``; raises after ``max_sweeps`` sweeps."""
    K = _gram(K)
    n = K.shape[0]
    y = _labels(y, n)
    tol = positive_scalar(tol, "tol")
    max_sweeps = positive_int(max_sweeps, "max_sweeps")
    tau, nu = np.zeros(n), np.zeros(n)  # line 2: nu~ = tau~ = 0
    Sigma, mu = K.copy(), np.zeros(n)  # Sigma = K, mu = 0
    for sweep in range(1, max_sweeps + 1):
        tau_old, nu_old = tau.copy(), nu.copy()
        for i in range(n):
            tau_c = 1.0 / Sigma[i, i] - tau[i]  # line 6: cavity tau_-i = sigma_i^-2 - tau~_i
            nu_c = mu[i] / Sigma[i, i] - nu[i]  #         nu_-i = sigma_i^-2 mu_i - nu~_i
            m_c, s2_c = nu_c / tau_c, 1.0 / tau_c
            z = y[i] * m_c / np.sqrt(1.0 + s2_c)  # eq. 3.58
            r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))  # N(z)/Phi(z)
            mu_hat = m_c + y[i] * s2_c * r / np.sqrt(1.0 + s2_c)
            s2_hat = s2_c - s2_c**2 * r * (z + r) / (1.0 + s2_c)
            d_tau = 1.0 / s2_hat - tau_c - tau[i]  # line 8
            tau[i] += d_tau
            nu[i] = mu_hat / s2_hat - nu_c
            s = Sigma[:, i].copy()
            Sigma -= (1.0 / (1.0 / d_tau + s[i])) * np.outer(s, s) if d_tau != 0 else 0.0  # l. 10
            mu = Sigma @ nu  # line 11
        Sigma, mu, L = _ep_refresh(K, tau, nu)  # lines 15-17
        if max(np.max(np.abs(tau - tau_old)), np.max(np.abs(nu - nu_old))) < tol:
            return EPFit(K, y, tau, nu, mu, Sigma, L, sweep)
    raise RuntimeError(f"EP did not converge in max_sweeps={max_sweeps} sweeps")


def ep_predict(fit: EPFit, k_star, kss) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R&W Algorithm 3.6: latent mean ``k*^T (nu~ - z)``, variance ``k** - v^T v`` and
    ``P(y* = 1 | D) = Phi(mu / sqrt(1 + s^2))``. Shapes as in :func:`laplace_predict`."""
    if not isinstance(fit, EPFit):
        raise ValueError(f"fit must be an EPFit, got {type(fit).__name__}")
    k_star, kss = _query(k_star, kss, len(fit.y))
    sS = np.sqrt(fit.tau)
    z = sS * scipy.linalg.cho_solve((fit.L, True), sS * (fit.K @ fit.nu))  # line 4
    mu = k_star.T @ (fit.nu - z)  # line 5: f* = k*^T (nu~ - z)
    v = scipy.linalg.solve_triangular(fit.L, sS[:, None] * k_star, lower=True)  # line 6
    s2 = np.maximum(kss - np.sum(v * v, axis=0), 0.0)  # line 7
    return mu, s2, _probit_predictive(mu, s2)  # line 8


# --------------------------------------------------------------------------------------------------
# Elliptical slice sampling: the reference
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ESSResult:
    """The sampling reference at ``m`` queries of each of ``B`` contexts: ``p`` (mean of the
    chains' Rao-Blackwellised predictives, ``(B, m)``), ``se`` (standard deviation of the
    ``chains`` chain means over ``sqrt(chains)``), the chain means (``(B, chains, m)``) and the mean
    number of likelihood evaluations per ESS step."""

    p: np.ndarray
    se: np.ndarray
    chain_means: np.ndarray
    evals_per_step: float


def _site_gaussian(K, tau, nu):
    """``Sigma = (K^-1 + diag tau)^-1`` (as ``K - V^T V``, R&W Alg. 3.5 lines 15-17) and
    ``mu = Sigma nu``, batched over the leading axis."""
    sT = np.sqrt(tau)
    n = K.shape[-1]
    L = np.linalg.cholesky(np.eye(n) + sT[:, :, None] * K * sT[:, None, :])
    V = np.linalg.solve(L, sT[:, :, None] * K)
    Sigma = K - np.swapaxes(V, -1, -2) @ V
    return np.einsum("bij,bj->bi", Sigma, nu), 0.5 * (Sigma + np.swapaxes(Sigma, -1, -2))


def _ess_inputs(K, y, k_star, kss, sites, single):
    """The sampler's arrays, batched (a leading axis added when ``single``) and checked."""
    if single:
        K, y, k_star = np.asarray(K)[None], np.asarray(y)[None], np.asarray(k_star)[None]
        kss = np.asarray(kss)[None]
        sites = None if sites is None else tuple(np.asarray(s)[None] for s in sites)
    K = as_float_array(K, "K", ndim=3)
    B, n = K.shape[0], K.shape[1]
    for b in range(B):
        _gram(K[b])
    if np.ndim(y) != 2:
        raise ValueError(f"y must have shape {(B, n)} to match K of shape {K.shape}")
    y = as_float_array(y, "y", ndim=2)
    if y.shape != (B, n) or not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"y must have shape {(B, n)} with labels in {{-1, +1}}")
    k_star = as_float_array(k_star, "k_star", ndim=3)
    kss = as_float_array(kss, "kss", ndim=2)
    if k_star.shape[:2] != (B, n) or kss.shape != (B, k_star.shape[2]):
        raise ValueError(f"k_star must be (B={B}, n={n}, m) and kss (B, m)")
    if sites is None:
        return K, y, k_star, kss, np.zeros((B, n)), np.zeros((B, n))
    tau = as_float_array(sites[0], "sites[0]", ndim=2)
    nu_s = as_float_array(sites[1], "sites[1]", ndim=2)
    if tau.shape != (B, n) or nu_s.shape != (B, n) or np.any(tau < 0):
        raise ValueError(f"sites must be (tau, nu) of shape {(B, n)} with tau >= 0")
    return K, y, k_star, kss, tau, nu_s


def ess_predict(
    K,
    y,
    k_star,
    kss,
    rng: np.random.Generator,
    *,
    sites=None,
    link: str = "probit",
    chains: int = 8,
    samples: int = 500,
    burn_in: int = 100,
    thin: int = 2,
) -> ESSResult:
    """``P(y* = 1 | D)`` by elliptical slice sampling of ``f | y``.

    The posterior ``N(f | 0, K) prod_i p(y_i | f_i)`` is written as ``N(f | mu, Sigma) g(f)``
    with Gaussian sites ``exp(-tau_i f_i^2 / 2 + nu_i f_i)`` (``Sigma = (K^-1 + diag tau)^-1``,
    ``mu = Sigma nu``) and ``log g(f) = sum_i log p(y_i|f_i) + tau_i f_i^2 / 2 - nu_i f_i``;
    ESS draws its ellipses from ``N(mu, Sigma)`` (generalised ESS, Nishihara et al. 2014). With
    ``sites=None`` the sites are zero: plain ESS under the prior (Murray, Adams & MacKay 2010).
    Any sites give the same stationary law, the exact posterior; sites close to it (EP's) only
    make the chains mix faster.

    ``chains`` chains per context start from ``N(mu, Sigma)``; the chains of all ``B`` contexts
    run in lockstep (each ESS step shrinks its own bracket until acceptance). After ``burn_in``
    steps every ``thin``-th state contributes ``E[p(y*=1 | f*)]`` over
    ``f* | f ~ N(k*^T K^-1 f, k** - k*^T K^-1 k*)``: for the probit link ``Phi(m / sqrt(1 + v))``
    exactly, for the logistic link by quadrature.

    Parameters
    ----------
    K : ndarray of shape (B, n, n) or (n, n)
        Latent Grams (with the caller's jitter).
    y : ndarray of shape (B, n) or (n,)
    k_star : ndarray of shape (B, n, m) or (n, m)
    kss : ndarray of shape (B, m) or (m,)
    rng : numpy.random.Generator
    sites : None or (tau, nu), each of the shape of ``y``, ``tau >= 0``

    Returns
    -------
    ESSResult
        With a leading ``B`` axis, or without one when ``K`` is a single ``(n, n)`` Gram.
    """
    single = np.ndim(K) == 2
    K, y, k_star, kss, tau, nu_s = _ess_inputs(K, y, k_star, kss, sites, single)
    B, n = y.shape
    rng = check_rng(rng)
    link = choice(link, "link", LINKS)
    chains = positive_int(chains, "chains", minimum=2)
    samples = positive_int(samples, "samples")
    burn_in = positive_int(burn_in, "burn_in", minimum=0)
    thin = positive_int(thin, "thin")
    # the chains' work before any of it: B x chains x n latent values per step
    check_size(B * chains * n * (burn_in + samples * thin), "the chains (burn_in + samples x thin)")
    mu, Sigma = _site_gaussian(K, tau, nu_s)
    scale = np.max(np.abs(np.diagonal(K, axis1=1, axis2=2)), axis=1)[:, None, None]
    Ls = np.linalg.cholesky(Sigma + JITTER * scale * np.eye(n))  # (B, n, n)
    A = np.linalg.solve(K, k_star)  # K^-1 k*, (B, n, m)
    v = np.maximum(kss - np.sum(k_star * A, axis=1), 0.0)[:, None, :]  # var f* | f, (B, 1, m)
    yb, tb, nb = y[:, None, :], tau[:, None, :], nu_s[:, None, :]

    def log_g(yy, ff, tt, nn):
        return np.sum(_log_likelihood(yy, ff, link) + 0.5 * tt * ff * ff - nn * ff, axis=-1)

    def draw():
        return np.einsum("bij,bcj->bci", Ls, rng.standard_normal((B, chains, n)))

    f = mu[:, None, :] + draw()  # (B, chains, n)
    lg = log_g(yb, f, tb, nb)  # (B, chains)
    acc = np.zeros((B, chains, k_star.shape[2]))
    evals, kept = 0, 0
    for step in range(burn_in + samples * thin):
        e = draw()  # the ellipse through f - mu and e
        log_t = lg + np.log(rng.uniform(size=(B, chains)))  # slice height
        theta = rng.uniform(0.0, 2 * np.pi, size=(B, chains))
        lo, hi = theta - 2 * np.pi, theta.copy()
        todo = np.ones((B, chains), bool)
        while np.any(todo):
            bi, ci = np.nonzero(todo)
            th = theta[bi, ci][:, None]
            prop = mu[bi] + (f[bi, ci] - mu[bi]) * np.cos(th) + e[bi, ci] * np.sin(th)
            lg_p = log_g(y[bi], prop, tau[bi], nu_s[bi])
            evals += bi.size
            ok = lg_p > log_t[bi, ci]
            f[bi[ok], ci[ok]], lg[bi[ok], ci[ok]] = prop[ok], lg_p[ok]
            rb, rc = bi[~ok], ci[~ok]  # shrink the bracket towards 0 and redraw
            t_r = theta[rb, rc]
            lo[rb, rc] = np.where(t_r < 0, t_r, lo[rb, rc])
            hi[rb, rc] = np.where(t_r < 0, hi[rb, rc], t_r)
            theta[rb, rc] = rng.uniform(lo[rb, rc], hi[rb, rc])
            todo[bi[ok], ci[ok]] = False
        if step >= burn_in and (step - burn_in) % thin == 0:
            m = np.einsum("bcn,bnm->bcm", f, A)  # E[f* | f]
            acc += _probit_predictive(m, v) if link == "probit" else _logistic_gauss(m, v)
            kept += 1
    means = acc / kept  # (B, chains, m)
    p, se = means.mean(axis=1), means.std(axis=1, ddof=1) / np.sqrt(chains)
    per_step = evals / (B * chains * (burn_in + samples * thin))
    if single:
        return ESSResult(p[0], se[0], means[0], per_step)
    return ESSResult(p, se, means, per_step)
