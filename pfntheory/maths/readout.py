"""The exponential-family readout of Sec. 4 "From Moments to PPD": the natural parameters ``psi``
and statistics ``T`` of a Gaussian, the matrix ``Xi`` and the logits ``Xi psi + log Delta_c`` whose
softmax is the binned PPD (eqn:TF piece ppd), and the inverse-Gaussian example at the end of
supp-sec:thrm4.1.

Float64 NumPy; functions broadcast over leading batch dimensions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pfntheory.base._checks import (
    as_float_array,
    check_callable,
    named_broadcast,
    positive_array,
    positive_int,
)

from .discretize import _mu_tau, bin_widths, midpoints

__all__ = [
    "psi_gaussian",
    "gaussian_T",
    "readout_Xi",
    "logits_from_natural",
    "softmax",
    "inverse_gaussian_pdf",
    "inverse_gaussian_psi",
    "inverse_gaussian_T",
    "inverse_gaussian_log_normaliser",
]


# --------------------------------------------------------------------------------------------
# exponential-family readout (Sec. 4 "From Moments to PPD")
# --------------------------------------------------------------------------------------------


def psi_gaussian(mu, tau) -> np.ndarray:
    """Natural parameters ``psi(mu, tau) = (mu / tau, -1 / (2 tau))`` of ``N(mu, tau)`` (Sec. 4).

    Returns
    -------
    psi : ndarray of shape (..., 2)
    """
    mu, tau = _mu_tau(mu, tau)
    return np.stack([mu / tau, -0.5 / tau], axis=-1)  # psi(mu,tau), Sec. 4


def gaussian_T(y) -> np.ndarray:
    """Sufficient statistic ``T(y) = (y, y^2)`` of the Gaussian family; shape (..., 2)."""
    y = as_float_array(y, "y")
    if np.any(np.abs(y) > 1e150):
        raise ValueError("y must satisfy |y| <= 1e150 (y^2 would overflow float64)")
    return np.stack([y, y * y], axis=-1)


def readout_Xi(edges, T: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Readout matrix ``Xi`` with rows ``Xi_{c,:} = T(xi_c)`` at the bin midpoints (Sec. 4).

    Parameters
    ----------
    edges : array_like of shape (C + 1,)
    T : callable, optional
        Sufficient statistic map ``(C,) -> (C, p')``; default Gaussian ``T(y) = (y, y^2)``.

    Returns
    -------
    Xi : ndarray of shape (C, p')
        For the Gaussian default, rows ``[xi_c, xi_c^2]``.
    """
    xi = midpoints(edges)
    if T is not None:
        check_callable(T, "T")
    Xi = as_float_array((gaussian_T if T is None else T)(xi), "T(midpoints)")  # Xi_{c,:} = T(xi_c)
    if Xi.ndim != 2 or Xi.shape[0] != xi.shape[0] or Xi.shape[1] == 0:
        raise ValueError(f"T must map (C,) to (C, p') with p' >= 1, got shape {Xi.shape}")
    return Xi


def logits_from_natural(
    psi,
    edges,
    T: Callable[[np.ndarray], np.ndarray] | None = None,
    log_h: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Softmax-discretisation logits ``ell_c = <psi, T(xi_c)> + log h(xi_c) + log Delta_c``.

    supp-lem:smax quad. On an equidistant grid ``log Delta_c`` is a constant and cancels in the
    softmax (Sec. 4 writes ``sm(Xi psi)``); on a non-uniform grid it is needed.

    Parameters
    ----------
    psi : array_like of shape (..., p')
        Natural parameters (e.g. :func:`psi_gaussian`).
    edges : array_like of shape (C + 1,)
    T, log_h : callable, optional
        Sufficient statistic (default Gaussian) and log base density at the midpoints (default 0).

    Returns
    -------
    ell : ndarray of shape (..., C)
    """
    psi = as_float_array(psi, "psi", min_ndim=1)
    Xi = readout_Xi(edges, T)  # (C, p')
    if psi.shape[-1] != Xi.shape[1]:
        raise ValueError(f"psi must have last dimension {Xi.shape[1]}, got shape {psi.shape}")
    ell = psi @ Xi.T + np.log(bin_widths(edges))  # Xi psi + log Delta_c
    if log_h is not None:
        check_callable(log_h, "log_h")
        lh = as_float_array(log_h(midpoints(edges)), "log_h(midpoints)")
        if lh.shape != (Xi.shape[0],):
            raise ValueError(f"log_h must map (C,) to (C,), got shape {lh.shape}")
        ell = ell + lh
    return ell


def softmax(ell, axis: int = -1) -> np.ndarray:
    """``sm(ell)_c = exp(ell_c) / sum_c' exp(ell_c')`` (Sec. 2), shifted by the max for
    stability."""
    ell = as_float_array(ell, "ell", min_ndim=1)
    axis = positive_int(axis, "axis", minimum=-ell.ndim, maximum=ell.ndim - 1)
    if ell.shape[axis] == 0:
        raise ValueError(
            f"ell must have at least one logit along axis {axis}, got shape {ell.shape}"
        )
    z = ell - np.max(ell, axis=axis, keepdims=True)
    w = np.exp(z)
    return w / np.sum(w, axis=axis, keepdims=True)


# --------------------------------------------------------------------------------------------
# inverse-Gaussian example (end of supp-sec:thrm4.1)
# --------------------------------------------------------------------------------------------


def _ig_params(mu, tau):
    mu = positive_array(mu, "mu")
    tau = positive_array(tau, "tau")
    try:
        return np.broadcast_arrays(mu, tau)
    except ValueError as err:
        raise ValueError(f"mu and tau must broadcast, got shapes {mu.shape}, {tau.shape}") from err


def inverse_gaussian_pdf(y, mu, tau) -> np.ndarray:
    """The inverse-Gaussian density *as written* at the end of supp-sec:thrm4.1.

    ``f(y) = sqrt(mu^3 / tau / (2 pi y^3)) exp(-mu (y - mu)^2 / (2 y tau)) 1{y > 0}``,
    the IG law with mean ``mu`` and variance ``tau`` (shape ``lambda = mu^3 / tau``).
    """
    mu, tau = _ig_params(mu, tau)
    y = as_float_array(y, "y")
    named_broadcast(("y", y.shape), ("mu and tau", mu.shape))
    pos = y > 0
    ys = np.where(pos, y, 1.0)
    logf = 0.5 * (np.log(mu**3 / tau) - np.log(2 * np.pi) - 3 * np.log(ys)) - mu * (
        ys - mu
    ) ** 2 / (2 * ys * tau)
    return np.where(pos, np.exp(logf), 0.0)


def inverse_gaussian_psi(mu, tau) -> np.ndarray:
    """Expanded natural parameters of the paper: ``psi = (-mu/(2 tau), -mu^3/(2 tau), -3/2)``;
    (..., 3)."""
    mu, tau = _ig_params(mu, tau)
    return np.stack([-mu / (2 * tau), -(mu**3) / (2 * tau), np.full_like(mu, -1.5)], axis=-1)


def inverse_gaussian_T(y) -> np.ndarray:
    """Expanded sufficient statistic ``T(y) = (y, 1/y, log y)`` for ``y > 0``; shape (..., 3)."""
    y = positive_array(y, "y")
    return np.stack([y, 1.0 / y, np.log(y)], axis=-1)


def inverse_gaussian_log_normaliser(mu, tau) -> np.ndarray:
    """The paper's additive term ``-A = mu^2/tau + (log(mu^3/tau) - log(2 pi)) / 2``, so that
    ``f = exp(<psi, T> - A) h`` with ``h = 1{y > 0}``."""
    mu, tau = _ig_params(mu, tau)
    return mu**2 / tau + 0.5 * (np.log(mu**3 / tau) - np.log(2 * np.pi))
