"""Input validation shared by the exact side.

Every public function of :mod:`pfntheory` validates its arguments with these helpers so that bad
input (wrong shapes, NaN, non-positive variances, ``a >= b``, ``C < 2``, ``n = 0``) raises a
``ValueError`` that names the offending argument. Nothing is clipped or dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def as_float_array(x, name: str, *, ndim: int | Sequence[int] | None = None,
                   min_ndim: int | None = None, allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a float64 array, checking its dimension and finiteness.

    Raises
    ------
    ValueError
        If ``x`` cannot be converted, has the wrong number of dimensions, or holds NaN/inf.
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real array, got {type(x).__name__}") from err
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if a.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}, got shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {a.shape}")
    if not allow_nan and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def positive_scalar(x, name: str, *, allow_zero: bool = False) -> float:
    """Return ``x`` as a float, checking it is finite and positive (or non-negative)."""
    try:
        v = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real scalar, got {x!r}") from err
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if allow_zero:
        if v < 0:
            raise ValueError(f"{name} must be non-negative, got {v}")
    elif v <= 0:
        raise ValueError(f"{name} must be positive, got {v}")
    return v


def positive_array(x, name: str, **kw) -> np.ndarray:
    """Return ``x`` as a float64 array whose entries are all strictly positive."""
    a = as_float_array(x, name, **kw)
    if np.any(a <= 0):
        raise ValueError(f"{name} must be strictly positive, got min {a.min()}")
    return a


def positive_int(x, name: str, *, minimum: int = 1) -> int:
    """Return ``x`` as an int, checking ``x >= minimum``."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        if isinstance(x, (float, np.floating)) and float(x).is_integer():
            x = int(x)
        else:
            raise ValueError(f"{name} must be an integer, got {x!r}")
    if int(x) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    return int(x)


def interval(a, b, name_a: str = "a", name_b: str = "b") -> tuple[float, float]:
    """Return ``(a, b)`` as floats, checking both finite and ``a < b``."""
    fa, fb = float(a), float(b)
    if not (np.isfinite(fa) and np.isfinite(fb)):
        raise ValueError(f"{name_a} and {name_b} must be finite, got ({fa}, {fb})")
    if not fa < fb:
        raise ValueError(f"{name_a} < {name_b} is required, got {name_a}={fa}, {name_b}={fb}")
    return fa, fb


def choice(x, name: str, options: Sequence[str]) -> str:
    """Return ``x`` if it is one of ``options``; otherwise raise naming the argument."""
    if x not in options:
        raise ValueError(f"unknown {name} {x!r}; expected one of {sorted(options)}")
    return x
