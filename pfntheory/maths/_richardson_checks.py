"""Argument checks of :mod:`pfntheory.maths.richardson` (the validated boundary; its loops trust
them).

Everything here is O(n^2) except :func:`_spd` (a Cholesky factorisation), which
:func:`pfntheory.maths.richardson.richardson` runs only when :func:`_affordable` says it costs no
more than the iteration itself.
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    positive_array,
    positive_scalar,
)


def _sym(A, name: str = "A") -> np.ndarray:
    """``A`` as a non-empty, finite, symmetric float64 matrix."""
    A = as_float_array(A, name, ndim=2)
    n = A.shape[0]
    if A.shape != (n, n) or n == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {A.shape}")
    scale = max(np.max(np.abs(A)), np.finfo(float).tiny)
    if not np.allclose(A, A.T, rtol=0.0, atol=1e-12 * scale):
        raise ValueError(f"{name} must be symmetric")
    return A


def _spd(A, name: str = "A") -> np.ndarray:
    """``A`` as a symmetric positive definite matrix (a Cholesky factorisation must succeed)."""
    A = _sym(A, name)
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            f"{name} must be positive definite (its Cholesky factorisation failed)"
        ) from err
    return A


def _gram(G, noise_var) -> tuple[np.ndarray, float]:
    """A Gram matrix ``G`` and ``sigma^2 > 0`` with ``G + sigma^2 I`` positive definite."""
    G = _sym(G, "G")
    noise_var = positive_scalar(noise_var, "noise_var")
    _spd(G + noise_var * np.eye(G.shape[0]), "G + noise_var * I")
    return G, noise_var


def _precond(D, n: int) -> np.ndarray | None:
    """Return the Cholesky factor of ``D`` as a matrix, or the diagonal as a vector, or None."""
    if D is None:
        return None
    D = as_float_array(D, "D", ndim=(1, 2))
    if D.ndim == 1:
        if D.shape != (n,):
            raise ValueError(f"D must have shape ({n},) or ({n}, {n}), got {D.shape}")
        return positive_array(D, "D")
    if D.shape != (n, n):
        raise ValueError(f"D must have shape ({n},) or ({n}, {n}), got {D.shape}")
    d = np.diag(D)
    if np.array_equal(D, np.diag(d)):
        return positive_array(d, "D")
    try:
        return np.linalg.cholesky(_spd(D, "D"))
    except np.linalg.LinAlgError as err:
        raise ValueError("D must be positive definite") from err


def _steps(eta, L: int) -> np.ndarray:
    """``eta`` as a length-``L`` array of positive step sizes."""
    e = as_float_array(eta, "eta", ndim=(0, 1))
    if e.ndim == 0:
        e = np.full(L, float(e))
    elif e.shape != (L,):
        raise ValueError(f"eta must be a scalar or have length L={L}, got shape {e.shape}")
    if np.any(e <= 0):
        raise ValueError(f"eta must be positive, got min {e.min()}")
    return e


def _vec(v, name: str, n: int, *, allow_matrix: bool = False) -> np.ndarray:
    v = as_float_array(v, name, ndim=(1, 2) if allow_matrix else 1)
    if v.shape[0] != n:
        raise ValueError(f"{name} must have leading length n={n}, got shape {v.shape}")
    return v


def _required(x, name: str):
    if x is None:
        raise ArgumentTypeError(f"{name} must be given (an array), got None")
    return x


def _query(k_x, n: int) -> np.ndarray:
    k_x = as_float_array(k_x, "k_x", ndim=(1, 2))
    if k_x.shape[-1] != n:
        raise ValueError(f"k_x must have shape (n,) or (m, n) with n={n}, got {k_x.shape}")
    return k_x


def _krr_inputs(G, k_x, Y, noise_var) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """The checked ``(G, sigma^2, k_x, Y)`` of a query-side KRR function (G first: it
    sets ``n``)."""
    G, noise_var = _gram(G, noise_var)
    n = G.shape[0]
    return G, noise_var, _query(k_x, n), _vec(Y, "Y", n)


def _affordable(n: int, L: int, k: int) -> bool:
    """Whether an O(n^3) check (Cholesky ``n^3/3`` flops, an eigensolve a few times that) costs at
    most the ``L`` iterations on ``k`` right-hand sides (``2 L k n^2`` flops)."""
    return 3 * n <= 2 * L * k


def _spd_cheap(A: np.ndarray, name: str = "A") -> bool:
    """O(n^2) checks of a symmetric ``A``: a positive diagonal (necessary for positive
    definiteness: else a ValueError naming ``name``); returns whether Gershgorin's discs prove
    ``A`` positive definite (every ``A_ii > sum_{j != i} |A_ij|``)."""
    d = np.diag(A)
    if np.any(d <= 0):
        raise ValueError(
            f"{name} must be positive definite (its diagonal has an entry {d.min():.3g} <= 0)"
        )
    off = np.sum(np.abs(A), axis=1) - np.abs(d)
    return bool(np.all(d > off))
