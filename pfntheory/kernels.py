"""Covariance kernels of the paper and their Gram matrices (float64 NumPy).

Implements
----------
* Sec. 2 / sec:sims: the BLR kernel ``kappa_blr(x, x') = x' Sigma x`` with diagonal ``Sigma`` and the
  RBF kernel ``kappa_rbf(x, x') = alpha^2 exp(-||x - x'||^2 / (2 ell^2))``.
* supp-sec:real data: the anisotropic (ARD) RBF kernel.
* supp-lem:rbf kernel Gram, supp-lem:rbf kernel Gram ridge prec: the closed forms of
  ``rho = E[k(x, x')]`` and ``E_x[k(x_i, x)]`` for Gaussian inputs.
* supp-sec:exp details: the BLR ``Sigma`` "by thirds of d" (2.0, 1.0, 0.4).

All kernels take inputs of shape ``(..., n, d)`` and broadcast over leading batch dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import as_float_array, choice, positive_array, positive_int, positive_scalar

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


def _pair(X1, X2):
    X1 = as_float_array(X1, "X1", min_ndim=2)
    X2 = X1 if X2 is None else as_float_array(X2, "X2", min_ndim=2)
    if X1.shape[-1] != X2.shape[-1]:
        raise ValueError(f"X1 and X2 must share the feature dimension, got {X1.shape} and {X2.shape}")
    return X1, X2


def _sqdist(X1: np.ndarray, X2: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, shape ``(..., n1, n2)``, clamped at exact zero from below.

    The expansion ||a||^2 + ||b||^2 - 2 a.b can round to tiny negatives; those are round-off, not
    data, so they are set to 0 (the true value is >= 0).
    """
    n1 = np.sum(X1 * X1, axis=-1)[..., :, None]
    n2 = np.sum(X2 * X2, axis=-1)[..., None, :]
    D = n1 + n2 - 2.0 * X1 @ np.swapaxes(X2, -1, -2)
    return np.maximum(D, 0.0)


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
        s = positive_array(self.sigma_diag, "sigma_diag", ndim=1)
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
        X = as_float_array(X, "X", min_ndim=2)
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
        X = as_float_array(X, "X", min_ndim=2)
        return np.full(X.shape[:-1], self.alpha**2)


@dataclass(frozen=True)
class ARDRBFKernel:
    """``kappa(x, x') = alpha^2 exp(-0.5 sum_k (x_k - x'_k)^2 / ell_k^2)`` (supp-sec:real data)."""

    alpha: float = 1.0
    lengthscales: tuple[float, ...] = (1.0,)
    name: str = field(default="ard_rbf", init=False)

    def __post_init__(self):
        object.__setattr__(self, "alpha", positive_scalar(self.alpha, "alpha"))
        ls = positive_array(self.lengthscales, "lengthscales", ndim=1)
        object.__setattr__(self, "lengthscales", tuple(float(v) for v in ls))

    def __call__(self, X1, X2=None) -> np.ndarray:
        X1, X2 = _pair(X1, X2)
        if X1.shape[-1] != len(self.lengthscales):
            raise ValueError(
                f"X1 has {X1.shape[-1]} features, kernel has {len(self.lengthscales)} lengthscales")
        ls = np.asarray(self.lengthscales)
        return self.alpha**2 * np.exp(-0.5 * _sqdist(X1 / ls, X2 / ls))

    def diag(self, X) -> np.ndarray:
        X = as_float_array(X, "X", min_ndim=2)
        return np.full(X.shape[:-1], self.alpha**2)


KERNEL_NAMES = ("linear", "rbf", "ard_rbf")


def blr_sigma_diag(d: int) -> tuple[float, ...]:
    """Diagonal of the BLR prior covariance ``Sigma`` (supp-sec:exp details).

    ``Sigma_kk = 2.0`` for ``k < floor(d/3)``, ``1.0`` for ``floor(d/3) <= k < floor(2d/3)``, ``0.4``
    otherwise (0-based ``k``).
    """
    d = positive_int(d, "d")
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
    if name == "linear":
        return LinearKernel(**params)
    if name == "rbf":
        return RBFKernel(**params)
    return ARDRBFKernel(**params)


def expected_rbf_gaussian(alpha: float, lengthscale: float, d: int, var: float | None = None) -> float:
    """``rho = E[kappa(x, x')]`` for ``x, x' iid N(0, var I_d)`` and the RBF kernel.

    ``x - x' ~ N(0, 2 var I_d)`` so ``E exp(-||z||^2/(2 ell^2)) = (1 + 2 var / ell^2)^(-d/2)``.
    ``var`` defaults to ``1/d`` (the design of the paper). This is the constant ``rho`` of the proofs
    of supp-lem:rbf kernel Gram and supp-lem:rbf kernel Gram ridge.
    """
    alpha = positive_scalar(alpha, "alpha")
    ell = positive_scalar(lengthscale, "lengthscale")
    d = positive_int(d, "d")
    var = 1.0 / d if var is None else positive_scalar(var, "var")
    return float(alpha**2 * (1.0 + 2.0 * var / ell**2) ** (-d / 2.0))


def expected_rbf_gaussian_given(x, alpha: float, lengthscale: float,
                                var: float | None = None) -> np.ndarray:
    """``E_{x'}[kappa(x, x')]`` for fixed ``x`` (shape ``(..., d)``) and ``x' ~ N(0, var I_d)``.

    Gaussian integral: ``alpha^2 (1 + var/ell^2)^(-d/2) exp(-||x||^2 / (2 (ell^2 + var)))``; the limit
    of ``s_i / n`` in the proof of supp-lem:rbf kernel Gram ridge prec.
    """
    x = as_float_array(x, "x", min_ndim=1)
    d = x.shape[-1]
    alpha = positive_scalar(alpha, "alpha")
    ell = positive_scalar(lengthscale, "lengthscale")
    var = 1.0 / d if var is None else positive_scalar(var, "var")
    r2 = np.sum(x * x, axis=-1)
    return alpha**2 * (1.0 + var / ell**2) ** (-d / 2.0) * np.exp(-0.5 * r2 / (ell**2 + var))
