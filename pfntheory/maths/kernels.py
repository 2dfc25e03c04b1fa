"""Covariance kernels of the paper and their Gram matrices (float64 NumPy).

Implements
----------
* Sec. 2 / sec:sims: the BLR kernel ``kappa_blr(x, x') = x' Sigma x`` with diagonal ``Sigma`` and
  the RBF kernel ``kappa_rbf(x, x') = alpha^2 exp(-||x - x'||^2 / (2 ell^2))``.
* supp-sec:real data: the anisotropic (ARD) RBF kernel.
* supp-lem:rbf kernel Gram, supp-lem:rbf kernel Gram ridge prec: the closed forms of
  ``rho = E[k(x, x')]`` and ``E_x[k(x_i, x)]`` for Gaussian inputs.
* supp-sec:exp details: the BLR ``Sigma`` "by thirds of d" (2.0, 1.0, 0.4).

All kernels take inputs of shape ``(..., n, d)`` and broadcast over leading batch dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.spatial.distance

from pfntheory.base._checks import (
    MAX_DIM,
    as_float_array,
    check_size,
    choice,
    positive_array,
    positive_int,
    positive_scalar,
)

__all__ = [
    "LinearKernel",
    "RBFKernel",
    "ARDRBFKernel",
    "blr_sigma_diag",
    "make_kernel",
    "expected_rbf_gaussian",
    "expected_rbf_gaussian_given",
    "KERNEL_NAMES",
]


def _inputs(X, name: str) -> np.ndarray:
    """Inputs of shape ``(..., n, d)`` with ``n >= 1`` and ``1 <= d <= MAX_DIM``, finite
    and real."""
    X = as_float_array(X, name, min_ndim=2)
    if X.shape[-1] == 0 or X.shape[-1] > MAX_DIM:
        raise ValueError(f"{name} must have 1 <= d <= {MAX_DIM} features, got shape {X.shape}")
    if X.shape[-2] == 0:
        raise ValueError(f"{name} must hold at least one point (n >= 1), got shape {X.shape}")
    return X


def _pair(X1, X2):
    X1 = _inputs(X1, "X1")
    X2 = X1 if X2 is None else _inputs(X2, "X2")
    if X1.shape[-1] != X2.shape[-1]:
        raise ValueError(
            f"X1 and X2 must share the feature dimension, got {X1.shape} and {X2.shape}"
        )
    try:
        batch = np.broadcast_shapes(X1.shape[:-2], X2.shape[:-2])
    except ValueError as err:
        raise ValueError(
            f"X1 and X2 must have broadcastable batch dimensions, got {X1.shape} and {X2.shape}"
        ) from err
    check_size(int(np.prod(batch)) * X1.shape[-2] * X2.shape[-2], "the Gram matrix of X1 and X2")
    return X1, X2


def _sqdist(X1: np.ndarray, X2: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``||x1_i - x2_j||^2``, shape ``(..., n1, n2)``.

    Computed from the differences ``x1_ik - x2_jk`` (``scipy.spatial.distance.cdist`` per batch
    element, or a loop over the few coordinates), which are exact to one rounding, so the relative
    error is a few ulps wherever the points lie. The expansion ``||a||^2 + ||b||^2 - 2 a.b`` cancels
    catastrophically for points far from the origin (relative error 2e-5 at offset 1e5) and is not
    used. Memory stays ``(..., n1, n2)``.
    """
    batch = np.broadcast_shapes(X1.shape[:-2], X2.shape[:-2])
    n1, n2, d = X1.shape[-2], X2.shape[-2], X1.shape[-1]
    if not batch:
        return scipy.spatial.distance.cdist(X1, X2, "sqeuclidean")
    D = np.zeros(batch + (n1, n2))
    if d <= 8:  # vectorised over the batch, one pass per coordinate
        for k in range(d):
            diff = X1[..., :, None, k] - X2[..., None, :, k]  # (..., n1, n2)
            D += diff * diff
        return D
    A = np.broadcast_to(X1, batch + X1.shape[-2:])
    B = np.broadcast_to(X2, batch + X2.shape[-2:])
    for idx in np.ndindex(batch):
        D[idx] = scipy.spatial.distance.cdist(A[idx], B[idx], "sqeuclidean")
    return D


@dataclass(frozen=True)
class LinearKernel:
    """``kappa(x, x') = x^T diag(sigma_diag) x'`` (BLR kernel of sec:sims).

    Parameters
    ----------
    sigma_diag : tuple of float, shape (d,)
        Diagonal of the prior covariance ``Sigma`` of the regression weights (all > 0).
    """

    sigma_diag: tuple[float, ...]
    name: str = field(default="linear", init=False)

    def __post_init__(self):
        s = positive_array(self.sigma_diag, "sigma_diag", ndim=1, non_empty=True)
        if s.shape[0] > MAX_DIM:
            raise ValueError(
                f"sigma_diag must have at most MAX_DIM={MAX_DIM} entries, got {s.shape[0]}"
            )
        object.__setattr__(self, "sigma_diag", tuple(float(v) for v in s))

    @property
    def d(self) -> int:
        return len(self.sigma_diag)

    def __call__(self, X1, X2=None) -> np.ndarray:
        """Gram matrix ``G[..., i, j] = x1_i^T Sigma x2_j``, shape ``(..., n1, n2)``."""
        X1, X2 = _pair(X1, X2)
        if X1.shape[-1] != self.d:
            raise ValueError(f"X1 has {X1.shape[-1]} features, kernel expects d={self.d}")
        return (X1 * np.asarray(self.sigma_diag)) @ np.swapaxes(X2, -1, -2)

    def diag(self, X) -> np.ndarray:
        """``kappa(x, x)`` for each row, shape ``(..., n)``."""
        X = _inputs(X, "X")
        if X.shape[-1] != self.d:
            raise ValueError(f"X has {X.shape[-1]} features, kernel expects d={self.d}")
        return np.sum(X * X * np.asarray(self.sigma_diag), axis=-1)


@dataclass(frozen=True)
class RBFKernel:
    """``kappa(x, x') = alpha^2 exp(-||x - x'||^2 / (2 lengthscale^2))`` (sec:sims).

    Parameters
    ----------
    alpha : float
        Amplitude (> 0); ``kappa(x, x) = alpha^2``.
    lengthscale : float
        Lengthscale ``ell`` (> 0).
    """

    alpha: float = 1.0
    lengthscale: float = 1.0
    name: str = field(default="rbf", init=False)

    def __post_init__(self):
        object.__setattr__(self, "alpha", positive_scalar(self.alpha, "alpha"))
        object.__setattr__(self, "lengthscale", positive_scalar(self.lengthscale, "lengthscale"))

    def __call__(self, X1, X2=None) -> np.ndarray:
        X1, X2 = _pair(X1, X2)
        return self.alpha**2 * np.exp(-0.5 * _sqdist(X1, X2) / self.lengthscale**2)

    def diag(self, X) -> np.ndarray:
        X = _inputs(X, "X")
        return np.full(X.shape[:-1], self.alpha**2)


@dataclass(frozen=True)
class ARDRBFKernel:
    """``kappa(x, x') = alpha^2 exp(-0.5 sum_k (x_k - x'_k)^2 / ell_k^2)`` (supp-sec:real data)."""

    alpha: float = 1.0
    lengthscales: tuple[float, ...] = (1.0,)
    name: str = field(default="ard_rbf", init=False)

    def __post_init__(self):
        object.__setattr__(self, "alpha", positive_scalar(self.alpha, "alpha"))
        ls = positive_array(self.lengthscales, "lengthscales", ndim=1, non_empty=True)
        if ls.shape[0] > MAX_DIM:
            raise ValueError(
                f"lengthscales must have at most MAX_DIM={MAX_DIM} entries, got {ls.shape[0]}"
            )
        object.__setattr__(self, "lengthscales", tuple(float(v) for v in ls))

    def __call__(self, X1, X2=None) -> np.ndarray:
        X1, X2 = _pair(X1, X2)
        if X1.shape[-1] != len(self.lengthscales):
            raise ValueError(
                f"X1 has {X1.shape[-1]} features, kernel has {len(self.lengthscales)} lengthscales"
            )
        ls = np.asarray(self.lengthscales)
        return self.alpha**2 * np.exp(-0.5 * _sqdist(X1 / ls, X2 / ls))

    def diag(self, X) -> np.ndarray:
        X = _inputs(X, "X")
        if X.shape[-1] != len(self.lengthscales):
            raise ValueError(
                f"X has {X.shape[-1]} features, kernel has {len(self.lengthscales)} lengthscales"
            )
        return np.full(X.shape[:-1], self.alpha**2)


KERNEL_NAMES = ("linear", "rbf", "ard_rbf")


def blr_sigma_diag(d: int) -> tuple[float, ...]:
    """Diagonal of the BLR prior covariance ``Sigma`` (supp-sec:exp details).

    ``Sigma_kk = 2.0`` for ``k < floor(d/3)``, ``1.0`` for ``floor(d/3) <= k < floor(2d/3)``,
    ``0.4`` otherwise (0-based ``k``).
    """
    d = positive_int(d, "d", maximum=MAX_DIM)
    out = []
    for k in range(d):
        if k < d // 3:
            out.append(2.0)
        elif k < (2 * d) // 3:
            out.append(1.0)
        else:
            out.append(0.4)
    return tuple(out)


def make_kernel(name: str, **params):
    """Build a kernel by name: ``linear`` (sigma_diag), ``rbf`` (alpha, lengthscale),
    ``ard_rbf`` (alpha, lengthscales)."""
    choice(name, "kernel name", KERNEL_NAMES)
    fields = {
        "linear": ("sigma_diag",),
        "rbf": ("alpha", "lengthscale"),
        "ard_rbf": ("alpha", "lengthscales"),
    }[name]
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for kernel {name!r}; expected {list(fields)}"
        )
    if name == "linear":
        return LinearKernel(**params)
    if name == "rbf":
        return RBFKernel(**params)
    return ARDRBFKernel(**params)


def expected_rbf_gaussian(
    alpha: float, lengthscale: float, d: int, var: float | None = None
) -> float:
    """``rho = E[kappa(x, x')]`` for ``x, x' iid N(0, var I_d)`` and the RBF kernel.

    ``x - x' ~ N(0, 2 var I_d)`` so ``E exp(-||z||^2/(2 ell^2)) = (1 + 2 var / ell^2)^(-d/2)``.
    ``var`` defaults to ``1/d`` (the design of the paper). This is the constant ``rho`` of the
    proofs of supp-lem:rbf kernel Gram and supp-lem:rbf kernel Gram ridge.
    """
    alpha = positive_scalar(alpha, "alpha")
    ell = positive_scalar(lengthscale, "lengthscale")
    d = positive_int(d, "d", maximum=MAX_DIM)
    var = 1.0 / d if var is None else positive_scalar(var, "var")
    return float(alpha**2 * (1.0 + 2.0 * var / ell**2) ** (-d / 2.0))


def expected_rbf_gaussian_given(
    x, alpha: float, lengthscale: float, var: float | None = None
) -> np.ndarray:
    """``E_{x'}[kappa(x, x')]`` for fixed ``x`` (shape ``(..., d)``) and ``x' ~ N(0, var I_d)``.

    Gaussian integral: ``alpha^2 (1 + var/ell^2)^(-d/2) exp(-||x||^2 / (2 (ell^2 + var)))``; the
    limit of ``s_i / n`` in the proof of supp-lem:rbf kernel Gram ridge prec.
    """
    x = as_float_array(x, "x", min_ndim=1)
    d = x.shape[-1]
    if d == 0 or d > MAX_DIM:
        raise ValueError(f"x must have 1 <= d <= {MAX_DIM} features, got shape {x.shape}")
    alpha = positive_scalar(alpha, "alpha")
    ell = positive_scalar(lengthscale, "lengthscale")
    var = 1.0 / d if var is None else positive_scalar(var, "var")
    r2 = np.sum(x * x, axis=-1)
    return alpha**2 * (1.0 + var / ell**2) ** (-d / 2.0) * np.exp(-0.5 * r2 / (ell**2 + var))
