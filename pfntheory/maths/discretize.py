"""Output discretisation of the PFN head: partitions of ``(a, b]``, Gaussian bin masses, the
piecewise-constant density of a histogram (eqn:TF piece ppd, eqn:true piece ppd), the minimiser of
supp-thm:popmini, and the bounds of supp-lem:discretization error, supp-lem:smax quad and of the
softmax perturbation step of thm:PPD convergence. The logits of the readout are in
:mod:`pfntheory.maths.readout`. Bins are right-closed; why either convention serves:
docs/exact-side.md#discretisation. Float64; functions broadcast over leading batch dimensions.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.optimize
import scipy.special
from scipy.special import log_ndtr, ndtr

from pfntheory.base._checks import (
    MAX_ELEMENTS,
    as_float_array,
    choice,
    interval,
    named_broadcast,
    positive_array,
    positive_int,
    positive_scalar,
    probability,
)

__all__ = [
    "bin_edges",
    "midpoints",
    "bin_widths",
    "mesh",
    "check_edges",
    "check_probs",
    "calibrate_interval",
    "gaussian_interval_mass",
    "gaussian_tail_mass",
    "gaussian_bin_masses",
    "truncnorm_bin_masses",
    "histogram_density",
    "truncated_nll_histogram",
    "population_nll_minimizer",
    "discretization_bound",
    "smax_quad_bound",
    "smax_quad_bound_modulus",
    "softmax_perturbation_bound",
    "softmax_perturbation_sharp",
    "gaussian_lipschitz",
]


# --------------------------------------------------------------------------------------------
# partitions
# --------------------------------------------------------------------------------------------


def bin_edges(a, b, C) -> np.ndarray:
    """Equidistant partition ``Gamma`` of ``(a, b]`` into ``C`` bins (Sec. 4, "Softmax
    discretization").

    Parameters
    ----------
    a, b : float
        Interval end points, ``a < b``.
    C : int
        Number of bins, ``C >= 2``.

    Returns
    -------
    edges : ndarray of shape (C + 1,)
        ``gamma_1 = a < gamma_2 < ... < gamma_{C+1} = b``.
    """
    a, b = interval(a, b)
    C = positive_int(C, "C", minimum=2, maximum=MAX_ELEMENTS - 1)
    edges = np.linspace(a, b, C + 1)
    edges[0], edges[-1] = a, b
    if np.any(np.diff(edges) <= 0):
        raise ValueError(f"(a, b] = ({a}, {b}] is too narrow for C={C} distinct float64 edges")
    return edges


def check_edges(edges, name: str = "edges") -> np.ndarray:
    """Validate a partition: 1-D, finite, strictly increasing, at least 2 bins."""
    e = as_float_array(edges, name, ndim=1)
    if e.shape[0] < 3:
        raise ValueError(f"{name} must hold C + 1 >= 3 points (C >= 2 bins), got {e.shape[0]}")
    if np.any(np.diff(e) <= 0):
        raise ValueError(f"{name} must be strictly increasing")
    return e


def midpoints(edges) -> np.ndarray:
    """Bin midpoints ``xi_c = (gamma_c + gamma_{c+1}) / 2``; shape (C,)."""
    e = check_edges(edges)
    return 0.5 * (e[:-1] + e[1:])


def bin_widths(edges) -> np.ndarray:
    """Bin widths ``Delta_c = gamma_{c+1} - gamma_c``; shape (C,)."""
    e = check_edges(edges)
    return np.diff(e)


def mesh(edges) -> float:
    """Mesh size ``|Gamma| = max_c Delta_c``."""
    return float(np.max(bin_widths(edges)))


def check_probs(probs, C: int, name: str = "probs", *, sum_tol: float | None = None) -> np.ndarray:
    """Validate bin probabilities of shape (..., C): finite, non-negative, summing to 1.

    The default tolerance on ``|sum - 1|`` is ``C * 2**-23``: the worst-case round-off of a float32
    softmax summed over ``C`` bins (PyTorch outputs are accepted after casting to float64).
    """
    C = positive_int(C, "C", minimum=1)
    p = as_float_array(probs, name, min_ndim=1, non_empty=True)
    if p.shape[-1] != C:
        raise ValueError(f"{name} must have last dimension C={C}, got shape {p.shape}")
    if np.any(p < 0):
        raise ValueError(f"{name} must be non-negative, got min {p.min()}")
    tol = C * 2.0**-23 if sum_tol is None else positive_scalar(sum_tol, "sum_tol", allow_zero=True)
    s = p.sum(axis=-1)
    if np.any(np.abs(s - 1.0) > tol):
        worst = s.flat[np.argmax(np.abs(s - 1.0))]
        raise ValueError(f"{name} must sum to 1 over the last axis (tol {tol:.2g}), got {worst}")
    return p


_broadcast = named_broadcast  # metrics' name for it


def _mu_tau(mu, tau):
    mu = as_float_array(mu, "mu")
    tau = positive_array(tau, "tau")
    try:
        mu, tau = np.broadcast_arrays(mu, tau)
    except ValueError as err:
        raise ValueError(f"mu and tau must broadcast, got shapes {mu.shape}, {tau.shape}") from err
    return mu, tau


# --------------------------------------------------------------------------------------------
# Gaussian masses (stable in the tails)
# --------------------------------------------------------------------------------------------


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0`` without cancellation (Maechler 2012)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(
            x > -np.log(2.0),
            np.log(-np.expm1(np.minimum(x, 0.0))),
            np.log1p(-np.exp(np.minimum(x, -np.log(2.0)))),
        )


def _log_norm_mass(z1, z2):
    """``log(Phi(z2) - Phi(z1))`` for ``z1 < z2``, accurate far in either tail.

    Uses ``Phi(z2) - Phi(z1) = Phi(-z1) - Phi(-z2)`` to keep both arguments on the left side when
    ``z1 > 0``; then ``log Phi(z2) + log(1 - Phi(z1)/Phi(z2))``.
    """
    z1, z2 = np.broadcast_arrays(np.asarray(z1, float), np.asarray(z2, float))
    flip = z1 > 0
    lo = np.where(flip, -z2, z1)
    hi = np.where(flip, -z1, z2)
    lhi = log_ndtr(hi)
    return lhi + _log1mexp(log_ndtr(lo) - lhi)


def _norm_mass(z1, z2):
    """``Phi(z2) - Phi(z1)`` for ``z1 <= z2`` via the same tail-symmetric trick (no logs)."""
    z1, z2 = np.broadcast_arrays(np.asarray(z1, float), np.asarray(z2, float))
    flip = z1 > 0
    return np.where(flip, ndtr(-z1) - ndtr(-z2), ndtr(z2) - ndtr(z1))


def gaussian_interval_mass(mu, tau, a, b) -> np.ndarray:
    """``P(y in (a, b])`` for ``y ~ N(mu, tau)`` (= ``1 - eps_tail``); shape of
    ``broadcast(mu, tau)``."""
    mu, tau = _mu_tau(mu, tau)
    a, b = interval(a, b)
    s = np.sqrt(tau)
    return _norm_mass((a - mu) / s, (b - mu) / s)


def gaussian_tail_mass(mu, tau, a, b) -> np.ndarray:
    """``eps_tail = P(y not in (a, b])`` for ``y ~ N(mu, tau)`` (thm:PPD convergence), computed
    directly as ``Phi(z_a) + Phi(-z_b)`` (no cancellation when it is tiny)."""
    mu, tau = _mu_tau(mu, tau)
    a, b = interval(a, b)
    s = np.sqrt(tau)
    return ndtr((a - mu) / s) + ndtr(-(b - mu) / s)


def gaussian_bin_masses(mu, tau, edges) -> np.ndarray:
    """Untruncated bin masses ``g_c = int_{gamma_c}^{gamma_{c+1}} N(t; mu, tau) dt``.

    Returns
    -------
    ndarray of shape (..., C)
        Sums to ``1 - eps_tail`` (the notation ``g_c`` of the proof of supp-lem:smax quad).
    """
    mu, tau = _mu_tau(mu, tau)
    e = check_edges(edges)
    z = (e - mu[..., None]) / np.sqrt(tau)[..., None]  # (..., C+1)
    return _norm_mass(z[..., :-1], z[..., 1:])


def truncnorm_bin_masses(mu, tau, edges) -> np.ndarray:
    """Bin masses of the PPD ``N(mu, tau)`` truncated to ``(a, b]``: ``q*_c`` of supp-thm:popmini.

    ``q*_c = int_{gamma_c}^{gamma_{c+1}} p_(a,b](t) dt`` with ``p_(a,b] = p 1_(a,b] / int_a^b p``
    (eqn:true piece ppd with ``1 - eps`` the *per-instance* mass ``int_a^b p_n``). Computed in log
    space, so bins far in the tails keep full relative accuracy.

    Parameters
    ----------
    mu, tau : array_like of shape (...)
        Predictive mean and variance (``tau > 0``), broadcastable.
    edges : array_like of shape (C + 1,)

    Returns
    -------
    q : ndarray of shape (..., C)
        Non-negative, summing to 1 over the last axis.

    Raises
    ------
    ValueError
        If ``(a, b]`` carries no representable mass for some instance.
    """
    mu, tau = _mu_tau(mu, tau)
    e = check_edges(edges)
    z = (e - mu[..., None]) / np.sqrt(tau)[..., None]  # (..., C+1)
    logm = _log_norm_mass(z[..., :-1], z[..., 1:])  # (..., C)
    logZ = scipy.special.logsumexp(logm, axis=-1, keepdims=True)  # log(1 - eps_tail)
    if not np.all(np.isfinite(logZ)):
        raise ValueError(
            "edges: the interval (a, b] has zero mass under N(mu, tau) for some instance"
        )
    return np.exp(logm - logZ)  # eqn:true piece ppd


def calibrate_interval(mu, tau, outside_mass: float = 0.002) -> tuple[float, float]:
    """Truncation interval ``(a, b]`` calibrated over prior instances (sec:sims).

    sec:sims sets ``(a, b]`` "based on Monte Carlo calibration over 2000 instances so that the
    probability outside the interval is 0.002". Given the exact PPD moments ``(mu_i, tau_i)`` of
    ``N`` instances drawn from the prior, the marginal law of the query label is the mixture
    ``(1/N) sum_i N(mu_i, tau_i)``. We choose **equal tails**:

        (1/N) sum_i Phi((a - mu_i)/sqrt(tau_i)) = outside_mass / 2
                                                = (1/N) sum_i Phi((mu_i - b)/sqrt(tau_i)),

    solved by Brent's method on the (monotone) averaged CDF. Averaging the exact Gaussian CDFs
    (Rao-Blackwellisation) rather than taking empirical quantiles of sampled labels targets the same
    interval with far less Monte-Carlo noise: with ``N = 2000`` and ``outside_mass = 0.002`` the
    empirical 0.1% quantile would be the second order statistic. The paper does not say whether
    its tails are equal; this is our documented choice.

    Parameters
    ----------
    mu, tau : array_like of shape (N,)
        PPD means and variances of the calibration instances.
    outside_mass : float in (0, 1)
        Target average mass outside ``(a, b]``.

    Returns
    -------
    (a, b) : tuple of float
    """
    mu, tau = _mu_tau(mu, tau)
    mu, tau = mu.ravel(), tau.ravel()
    if mu.size == 0:
        raise ValueError("mu must hold at least one instance")
    m = probability(outside_mass, "outside_mass")
    s = np.sqrt(tau)
    lo, hi = float(np.min(mu - 40 * s)), float(np.max(mu + 40 * s))
    scale = hi - lo
    xtol = 1e-13 * max(scale, 1.0)

    def lower_tail(t):
        return float(np.mean(ndtr((t - mu) / s))) - m / 2

    def upper_tail(t):
        return float(np.mean(ndtr((mu - t) / s))) - m / 2

    a = scipy.optimize.brentq(lower_tail, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps)
    b = scipy.optimize.brentq(upper_tail, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps)
    return float(a), float(b)


# --------------------------------------------------------------------------------------------
# histogram densities and the population NLL (supp-thm:popmini)
# --------------------------------------------------------------------------------------------


def _bin_index(edges: np.ndarray, y: np.ndarray, closed: str) -> np.ndarray:
    """0-based bin index of ``y`` (``-1`` or ``C`` outside), right- or left-closed bins."""
    side: Literal["left", "right"] = "left" if closed == "right" else "right"
    return np.searchsorted(edges, y, side=side) - 1


def histogram_density(edges, probs, y, closed: str = "right") -> np.ndarray:
    """Piecewise-constant density ``q(y) = probs_c / Delta_c`` on bin ``c`` (eqn:TF piece ppd).

    Parameters
    ----------
    edges : array_like of shape (C + 1,)
    probs : array_like of shape (..., C)
        Bin probabilities (e.g. ``sm(ell)``), summing to 1.
    y : array_like of shape broadcastable to (...)
    closed : {"right", "left"}
        ``"right"``: bins ``(gamma_c, gamma_{c+1}]`` as in eqn:TF piece ppd (support ``(a, b]``);
        ``"left"``: bins ``[gamma_c, gamma_{c+1})`` as in supp-lem:discretization error and
        supp-thm:popmini (support ``[a, b)``). They differ only at the edges.

    Returns
    -------
    q : ndarray of shape broadcast(y, probs[..., 0])
        Zero outside the support.
    """
    e = check_edges(edges)
    C = e.shape[0] - 1
    p = check_probs(probs, C)
    y = as_float_array(y, "y")
    choice(closed, "closed", ("right", "left"))
    shape = _broadcast(("y", y.shape), ("probs[..., 0]", p.shape[:-1]))
    y = np.broadcast_to(y, shape)
    p = np.broadcast_to(p, shape + (C,))
    idx = _bin_index(e, y, closed)
    inside = (idx >= 0) & (idx < C)
    k = np.clip(idx, 0, C - 1)
    dens = np.take_along_axis(p, k[..., None], axis=-1)[..., 0] / np.diff(e)[k]
    return np.where(inside, dens, 0.0)


def truncated_nll_histogram(bin_mass, probs, edges) -> np.ndarray:
    """Exact conditional truncated NLL of a histogram ``q`` (proof of supp-thm:popmini).

    ``E_{y ~ p_(a,b]}[-log q(y)] = sum_c p_c (-log q_c + log Delta_c)`` where ``p_c`` is the mass of
    bin ``c`` under ``p_(a,b]``. Equals ``H(p) + KL(p || q) + sum_c p_c log Delta_c``, so it is
    minimised exactly at ``q = p`` (:func:`population_nll_minimizer`).

    Parameters
    ----------
    bin_mass : array_like of shape (..., C)
        ``p_c`` (e.g. :func:`truncnorm_bin_masses`), summing to 1.
    probs : array_like of shape (..., C)
        ``q_c`` of the histogram, summing to 1.
    edges : array_like of shape (C + 1,)

    Returns
    -------
    ndarray of shape (...)
        ``+inf`` where ``q_c = 0 < p_c``.
    """
    e = check_edges(edges)
    C = e.shape[0] - 1
    pc = check_probs(bin_mass, C, "bin_mass")
    qc = check_probs(probs, C)
    _broadcast(("bin_mass", pc.shape), ("probs", qc.shape))
    with np.errstate(divide="ignore"):
        logq = np.log(qc)
    terms = np.where(pc > 0, pc * (np.log(np.diff(e)) - np.where(pc > 0, logq, 0.0)), 0.0)
    return np.sum(terms, axis=-1)


def population_nll_minimizer(mu, tau, edges) -> np.ndarray:
    """The population minimiser ``q*`` of the truncated NLL over histograms (supp-thm:popmini).

    Alias of :func:`truncnorm_bin_masses` for a Gaussian PPD: ``q*_c = int_bin c p_(a,b]``.
    """
    return truncnorm_bin_masses(mu, tau, edges)


# --------------------------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------------------------


def discretization_bound(L_lip, edges, eps) -> float:
    """Right-hand side of supp-lem:discretization error: ``L |Gamma| (b - a) / 2 + eps``.

    Bounds ``TV(p, p~)`` between an ``L``-Lipschitz density ``p`` with mass ``eps`` outside
    ``(a, b]`` and its bin-average ``p~`` normalised by ``1 - eps``.
    """
    L = positive_scalar(L_lip, "L_lip", allow_zero=True)
    e = check_edges(edges)
    eps = positive_scalar(eps, "eps", allow_zero=True)
    if not eps < 1:
        raise ValueError(f"eps must be < 1, got {eps}")
    return L * mesh(e) * (e[-1] - e[0]) / 2 + eps  # supp-lem:discretization error


def smax_quad_bound(L_lip, edges, eps) -> float:
    """Lipschitz form of supp-lem:smax quad:
    ``TV(p_C, p^_C) <= (b - a) L |Gamma| / (4 (1 - eps))``."""
    L = positive_scalar(L_lip, "L_lip", allow_zero=True)
    e = check_edges(edges)
    eps = positive_scalar(eps, "eps", allow_zero=True)
    if not eps < 1:
        raise ValueError(f"eps must be < 1, got {eps}")
    return (e[-1] - e[0]) * L * mesh(e) / (4 * (1 - eps))  # supp-lem:smax quad


def smax_quad_bound_modulus(omega_half_mesh, edges, eps) -> float:
    """Modulus form of supp-lem:smax quad: ``(b - a) omega_p(|Gamma| / 2) / (1 - eps)``.

    Parameters
    ----------
    omega_half_mesh : float
        The modulus of continuity ``omega_p(|Gamma| / 2)`` of ``p`` on ``(a, b]``.
    """
    w = positive_scalar(omega_half_mesh, "omega_half_mesh", allow_zero=True)
    e = check_edges(edges)
    eps = positive_scalar(eps, "eps", allow_zero=True)
    if not eps < 1:
        raise ValueError(f"eps must be < 1, got {eps}")
    return (e[-1] - e[0]) * w / (1 - eps)  # supp-lem:smax quad


def softmax_perturbation_bound(Delta) -> np.ndarray:
    """Proof of thm:PPD convergence: ``||ell_1 - ell_3||_inf <= Delta`` implies
    ``||sm(ell_1) - sm(ell_3)||_1 <= e^{2 Delta} - 1``."""
    D = as_float_array(Delta, "Delta")
    if np.any(D < 0):
        raise ValueError("Delta must be non-negative")
    with np.errstate(over="ignore"):  # e^{2 Delta} - 1 = +inf beyond Delta ~ 355: the bound is void
        return np.expm1(2 * D)  # e^{2 Delta} - 1


def softmax_perturbation_sharp(Delta) -> np.ndarray:
    """Sharp value of ``sup ||sm(l + d) - sm(l)||_1`` over ``||d||_inf <= Delta``:
    ``2 tanh(Delta / 2)``.

    With ``d = +Delta`` on a set ``A`` of mass ``P`` and ``-Delta`` off it, the TV is
    ``P k / (P k + 1 - P) - P`` with ``k = e^{2 Delta}``, maximised at ``P = 1 / (1 + sqrt k)`` with
    value ``tanh(Delta / 2)``; so ``||.||_1 <= 2 tanh(Delta / 2) <= min(Delta, 2)``, attained in the
    limit. The paper's ``e^{2 Delta} - 1`` is valid but 2x loose as ``Delta -> 0`` (``2 Delta`` vs
    ``Delta``) and unbounded while the truth is below 2.
    """
    D = as_float_array(Delta, "Delta")
    if np.any(D < 0):
        raise ValueError("Delta must be non-negative")
    return 2 * np.tanh(D / 2)


def gaussian_lipschitz(tau) -> np.ndarray:
    """Lipschitz constant of the ``N(mu, tau)`` density: ``sup |p'| = 1 / (tau sqrt(2 pi e))``
    (attained at ``mu +- sqrt(tau)``)."""
    tau = positive_array(tau, "tau")
    return 1.0 / (tau * np.sqrt(2 * np.pi * np.e))
