"""Input validation shared by the library and the command line.

Every public function of :mod:`pfntheory` validates its arguments up front with these helpers, so
that bad input (wrong shapes, NaN, complex numbers, non-positive variances, ``a >= b``, ``C < 2``,
``n = 0``, ``d = 0``, a missing ``rng``, sizes beyond :data:`MAX_ELEMENTS`) raises an error that
names the offending argument. Nothing is clipped, replaced or dropped silently.

Errors
------
* :class:`ValueError` for a value out of range (NaN, ``-1``, a shape mismatch);
* :class:`ArgumentTypeError` -- a subclass of both :class:`TypeError` and :class:`ValueError` --
  for a value of the wrong kind (a string, ``None``, a complex array), so callers that catch either
  get it.

Every message names the argument and the accepted range (docs/reliability.md states the contract;
tests/test_contract.py checks it on every public callable it can find).

Declaring the checks
--------------------
A function checks each argument either in its body (``n = positive_int(n, "n")``) or, for a
function with many arguments, by declaring a *rule* per argument with :func:`checked`::

    @checked(n=positive_int, noise_var=positive_scalar, seeds=seed_tuple, kernel=check_kernel)
    def check_tf_rate(kernel, n, d, noise_var, seeds=(0, 1)): ...

A rule is a callable ``rule(value, name) -> value`` that returns the checked (converted) value or
raises; the validators below are rules, and :func:`ints`, :func:`floats`, :func:`pair`,
:func:`one_of`, :func:`instance_of`, :func:`optional` and :func:`array` make rules.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

__all__ = [
    "MAX_ELEMENTS",
    "context_groups",
    "MAX_DIM",
    "ArgumentTypeError",
    "as_float_array",
    "finite_scalar",
    "finite_or_nan",
    "positive_scalar",
    "positive_array",
    "positive_int",
    "probability",
    "interval",
    "choice",
    "check_rng",
    "check_callable",
    "check_size",
    "spd_matrix",
    "Rule",
    "checked",
    "nonneg_int",
    "nonneg_scalar",
    "seed_int",
    "seed_tuple",
    "int_tuple",
    "float_tuple",
    "ints",
    "at_least",
    "floats",
    "pair",
    "one_of",
    "instance_of",
    "optional",
    "array",
    "mapping",
    "sequence",
    "check_kernel",
    "text",
    "keys",
    "square_matrix",
    "symmetric_matrix",
    "shaped",
]

#: Largest array (in elements) a public function will allocate or accept: 10**8 float64 values are
#: 800 MB, the most a laptop can hold a few of. Larger requests are refused before allocating.
MAX_ELEMENTS = 10**8

#: Largest input dimension ``d`` accepted (the paper's largest is 16; Gram-concentration checks use
#: a few hundred).
MAX_DIM = 100_000


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong kind (string, None, complex...). Both a TypeError and a
    ValueError."""


def _describe(x) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def check_size(n_elements, name: str, limit: int = MAX_ELEMENTS) -> int:
    """Refuse a request for more than ``limit`` elements (before allocating them)."""
    n = int(n_elements)
    if n > limit:
        raise ValueError(
            f"{name} would need {n:.3g} elements, more than the limit {limit:.3g} "
            f"(pfntheory.base._checks.MAX_ELEMENTS)"
        )
    return n


def as_float_array(
    x,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    min_ndim: int | None = None,
    allow_nan: bool = False,
    non_empty: bool = False,
) -> np.ndarray:
    """Return ``x`` as a float64 array, checking kind, dimension, size and finiteness.

    Parameters
    ----------
    x : array_like
        Real numbers (bool, integer or floating dtype). Complex, string and object input is refused
        (a complex array would otherwise lose its imaginary part silently).
    name : str
        Argument name used in error messages.
    ndim, min_ndim : int, optional
        Allowed number(s) of dimensions / the least number of dimensions.
    allow_nan : bool
        Accept NaN and inf (default: refuse).
    non_empty : bool
        Refuse an array with zero elements.

    Raises
    ------
    ArgumentTypeError
        ``x`` is not an array of real numbers.
    ValueError
        Wrong number of dimensions, empty (when ``non_empty``), larger than :data:`MAX_ELEMENTS`,
        or NaN/inf.
    """
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise ArgumentTypeError(f"{name} must be an array of real numbers, got {_describe(x)}")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged lists
        raise ArgumentTypeError(
            f"{name} must be an array of real numbers, got {type(x).__name__} ({err})"
        ) from err
    if raw.dtype.kind not in "biuf":
        what = "complex" if raw.dtype.kind == "c" else f"dtype {raw.dtype}"
        raise ArgumentTypeError(f"{name} must be real (bool, integer or float), got {what}")
    check_size(raw.size, name)
    a = raw.astype(np.float64, copy=False)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if a.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}, got shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {a.shape}")
    if non_empty and a.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not allow_nan and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def finite_scalar(x, name: str) -> float:
    """Return ``x`` as a finite float; strings, None, bools and complex numbers are refused."""
    if getattr(x, "ndim", None) == 0 and hasattr(x, "item"):  # 0-d numpy array or torch tensor
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {_describe(x)}")
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def finite_or_nan(x, name: str, *, nonneg: bool = False, allow_inf: bool = False) -> float:
    """A real number that is finite or NaN (NaN: a quantity not computed, e.g. a trend a curve too
    short could not fit); ``nonneg``: a number ``>= 0`` unless NaN; ``allow_inf``: +-inf too (a
    value read as it was, e.g. a curve's last value)."""
    if getattr(x, "ndim", None) == 0 and hasattr(x, "item"):
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number (or NaN), got {_describe(x)}")
    v = float(x)
    if np.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite or NaN (not computed), got {v}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0 (or NaN, not computed), got {v}")
    return v


def positive_scalar(x, name: str, *, allow_zero: bool = False) -> float:
    """Return ``x`` as a float, checking it is finite and positive (or non-negative)."""
    v = finite_scalar(x, name)
    if allow_zero:
        if v < 0:
            raise ValueError(f"{name} must be non-negative, got {v}")
    elif v <= 0:
        raise ValueError(f"{name} must be positive, got {v}")
    return v


def probability(x, name: str, *, open_low: bool = True, open_high: bool = True) -> float:
    """Return ``x`` as a float in ``(0, 1)`` (or with closed ends as asked)."""
    v = finite_scalar(x, name)
    lo_ok = v > 0 if open_low else v >= 0
    hi_ok = v < 1 if open_high else v <= 1
    if not (lo_ok and hi_ok):
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {v}")
    return v


def positive_array(x, name: str, **kw) -> np.ndarray:
    """Return ``x`` as a float64 array whose entries are all strictly positive."""
    a = as_float_array(x, name, **kw)
    if a.size and np.any(a <= 0):
        raise ValueError(f"{name} must be strictly positive, got min {a.min()}")
    return a


def positive_int(x, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``x`` as an int, checking ``minimum <= x <= maximum``.

    Integral floats (``3.0``) are accepted; ``True``/``False``, ``3.5``, strings and None are not.
    """
    if isinstance(x, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be an integer, got {x!r}")
    if isinstance(x, (float, np.floating)) and np.isfinite(x) and float(x).is_integer():
        x = int(x)
    try:
        v = operator.index(x)
    except TypeError as err:
        raise ArgumentTypeError(f"{name} must be an integer, got {_describe(x)}") from err
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return int(v)


def context_groups(groups, batch_size: int) -> int:
    """Return ``groups`` (the context sizes mixed per training step) as an int in
    ``[1, batch_size]``: every group needs at least one instance."""
    groups = positive_int(groups, "context_groups")
    if groups > batch_size:
        raise ValueError(
            f"context_groups must be <= batch_size={batch_size} (every group needs an instance), "
            f"got {groups}"
        )
    return groups


def interval(a, b, name_a: str = "a", name_b: str = "b") -> tuple[float, float]:
    """Return ``(a, b)`` as floats, checking both finite, ``a < b`` and ``b - a`` finite."""
    fa, fb = finite_scalar(a, name_a), finite_scalar(b, name_b)
    if not fa < fb:
        raise ValueError(f"{name_a} < {name_b} is required, got {name_a}={fa}, {name_b}={fb}")
    with np.errstate(over="ignore"):
        width = np.float64(fb) - np.float64(fa)
    if not np.isfinite(width):
        raise ValueError(f"{name_b} - {name_a} must be finite, got {name_a}={fa}, {name_b}={fb}")
    return fa, fb


def choice(x, name: str, options: Sequence[str]) -> str:
    """Return ``x`` if it is one of ``options``; otherwise raise naming the argument."""
    try:
        ok = x in options
    except TypeError:  # unhashable x against a set/dict
        ok = False
    if not ok:
        raise ValueError(f"unknown {name} {x!r}; expected one of {sorted(options, key=str)}")
    return x


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator``; refuse None, seeds and legacy states.

    Randomness enters the exact side only through an explicit generator, so that every draw is
    reproducible from the caller's seed; pass ``np.random.default_rng(seed)``.
    """
    if not isinstance(rng, np.random.Generator):
        raise ArgumentTypeError(
            f"{name} must be a numpy.random.Generator "
            f"(np.random.default_rng(seed)), got {_describe(rng)}"
        )
    return rng


def check_callable(f, name: str):
    """Return ``f`` if it is callable."""
    if not callable(f):
        raise ArgumentTypeError(f"{name} must be callable, got {_describe(f)}")
    return f


def spd_matrix(A, name: str, *, batch: bool = False) -> np.ndarray:
    """Return ``A`` as a float64 symmetric positive-definite matrix (or a batch of them).

    Symmetry is checked to a relative round-off tolerance ``1e-10 max|A|`` (the matrices here are
    Gram matrices plus a ridge, symmetric up to summation order); positive definiteness by a
    Cholesky factorisation.
    """
    a = as_float_array(A, name, min_ndim=2) if batch else as_float_array(A, name, ndim=2)
    if a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {a.shape}")
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    if np.max(np.abs(a - np.swapaxes(a, -1, -2)), initial=0.0) > 1e-10 * max(scale, 1e-300):
        raise ValueError(f"{name} must be symmetric")
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError as err:
        raise ValueError(f"{name} must be positive definite (Cholesky failed)") from err
    return a


# ------------------------------------------------------------------------------------------------
# rules and the decorator that applies them
# ------------------------------------------------------------------------------------------------

#: A check of one argument: ``rule(value, name)`` returns the checked value or raises.
Rule = Callable[[Any, str], Any]

P = ParamSpec("P")
R = TypeVar("R")

#: Largest seed accepted (torch's generators take seeds below 2**64; NumPy's any non-negative int).
MAX_SEED = 2**63 - 1


def checked(**rules: Rule) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: check the named arguments with their rules where they enter.

    Only arguments the caller passes are checked (a default is valid by construction); each is
    replaced by what its rule returns (``3.0`` -> ``3`` for a count, a list -> a tuple...). A rule
    for a parameter the function does not have is a programming error, reported at import.
    """

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        sig = inspect.signature(fn)
        unknown = sorted(set(rules) - set(sig.parameters))
        if unknown:
            raise TypeError(f"checked(): {fn.__qualname__} has no parameter(s) {unknown}")

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = sig.bind(*args, **kwargs)
            for name, value in bound.arguments.items():
                rule = rules.get(name)
                if rule is not None:
                    bound.arguments[name] = rule(value, name)
            return fn(*bound.args, **bound.kwargs)

        return wrapper

    return decorate


def nonneg_int(x, name: str) -> int:
    """An integer ``>= 0`` (a count that may be zero: restarts, an iteration index...)."""
    return positive_int(x, name, minimum=0)


def nonneg_scalar(x, name: str) -> float:
    """A finite float ``>= 0``."""
    return positive_scalar(x, name, allow_zero=True)


def seed_int(x, name: str) -> int:
    """A seed: an integer in ``[0, 2**63 - 1]``."""
    return positive_int(x, name, minimum=0, maximum=MAX_SEED)


def _items(x, name: str, what: str) -> list:
    """The items of a sequence or 1-d array; None, strings, mappings, sets and scalars refused."""
    if x is None or isinstance(x, (str, bytes, Mapping, set, frozenset)):
        raise ArgumentTypeError(f"{name} must be a sequence of {what}, got {_describe(x)}")
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise ValueError(f"{name} must be a 1-d sequence of {what}, got shape {x.shape}")
        return list(x)
    try:
        return list(x)
    except TypeError as err:
        raise ArgumentTypeError(f"{name} must be a sequence of {what}, got {_describe(x)}") from err


def int_tuple(
    x, name: str, *, minimum: int = 1, maximum: int | None = None, non_empty: bool = True
) -> tuple[int, ...]:
    """A sequence of integers in ``[minimum, maximum]`` as a tuple (context sizes, seeds...)."""
    items = _items(x, name, "integers")
    if non_empty and not items:
        raise ValueError(f"{name} must not be empty")
    return tuple(positive_int(v, name, minimum=minimum, maximum=maximum) for v in items)


def seed_tuple(x, name: str) -> tuple[int, ...]:
    """A non-empty sequence of seeds."""
    return int_tuple(x, name, minimum=0, maximum=MAX_SEED)


def float_tuple(
    x,
    name: str,
    *,
    positive: bool = False,
    unit: bool = False,
    non_empty: bool = True,
) -> tuple[float, ...]:
    """A sequence of finite floats as a tuple; ``positive``: each ``> 0``; ``unit``: each in
    ``(0, 1)``."""
    items = _items(x, name, "real numbers")
    if non_empty and not items:
        raise ValueError(f"{name} must not be empty")
    if unit:
        return tuple(probability(v, name) for v in items)
    if positive:
        return tuple(positive_scalar(v, name) for v in items)
    return tuple(finite_scalar(v, name) for v in items)


def at_least(minimum: int) -> Rule:
    """Rule: an integer ``>= minimum`` (:func:`positive_int`)."""
    return functools.partial(positive_int, minimum=minimum)


def ints(minimum: int = 1, maximum: int | None = None, non_empty: bool = True) -> Rule:
    """Rule: :func:`int_tuple` with these bounds."""
    return functools.partial(int_tuple, minimum=minimum, maximum=maximum, non_empty=non_empty)


def floats(positive: bool = False, unit: bool = False, non_empty: bool = True) -> Rule:
    """Rule: :func:`float_tuple` with these conditions."""
    return functools.partial(float_tuple, positive=positive, unit=unit, non_empty=non_empty)


def pair(x, name: str) -> tuple[float, float]:
    """An increasing pair of finite floats ``(lo, hi)``, ``lo < hi`` (a band, an interval)."""
    items = _items(x, name, "two real numbers")
    if len(items) != 2:
        raise ValueError(f"{name} must be a pair (lo, hi), got {_describe(x)}")
    return interval(items[0], items[1], f"{name}[0]", f"{name}[1]")


def one_of(options: Sequence) -> Rule:
    """Rule: :func:`choice` among ``options``."""

    def rule(x, name: str):
        return choice(x, name, options)

    return rule


def instance_of(*types: type, what: str | None = None) -> Rule:
    """Rule: an instance of one of ``types`` (described as ``what`` in the message)."""
    desc = what or " or ".join(t.__name__ for t in types)

    def rule(x, name: str):
        if not isinstance(x, types):
            raise ArgumentTypeError(f"{name} must be a {desc}, got {_describe(x)}")
        return x

    return rule


def optional(rule: Rule) -> Rule:
    """Rule: None, or what ``rule`` accepts."""

    def opt(x, name: str):
        return None if x is None else rule(x, name)

    return opt


def array(**kw) -> Rule:
    """Rule: :func:`as_float_array` with these keywords (``ndim``, ``non_empty``...)."""

    def rule(x, name: str) -> np.ndarray:
        return as_float_array(x, name, **kw)

    return rule


def mapping(x, name: str, *, non_empty: bool = True) -> Mapping:
    """A mapping (a dict of results, a table of values); non-empty unless allowed."""
    if not isinstance(x, Mapping):
        raise ArgumentTypeError(f"{name} must be a mapping (dict), got {_describe(x)}")
    if non_empty and not x:
        raise ValueError(f"{name} must not be empty")
    return x


def text(x, name: str) -> str:
    """A string (a label, a statement, a prefix)."""
    if not isinstance(x, str):
        raise ArgumentTypeError(f"{name} must be a string, got {_describe(x)}")
    return x


def keys(*required: str) -> Rule:
    """Rule: a mapping holding the ``required`` keys (a result document, a table of values)."""

    def rule(x, name: str) -> Mapping:
        m = mapping(x, name, non_empty=False)
        missing = [k for k in required if k not in m]
        if missing:
            raise ValueError(
                f"{name} must hold the keys {list(required)}, "
                f"missing {', '.join(repr(k) for k in missing)}"
            )
        return m

    return rule


def sequence(x, name: str, *, non_empty: bool = True) -> list:
    """A sequence of items of any kind as a list (None, strings, mappings refused)."""
    items = _items(x, name, "items")
    if non_empty and not items:
        raise ValueError(f"{name} must not be empty")
    return items


def square_matrix(x, name: str) -> np.ndarray:
    """A finite, non-empty square matrix (a Gram matrix, a system matrix) as float64."""
    a = as_float_array(x, name, ndim=2)
    if a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {a.shape}")
    return a


def symmetric_matrix(x, name: str) -> np.ndarray:
    """A finite, non-empty symmetric matrix (a Gram or system matrix), symmetric to the round-off
    tolerance of :func:`spd_matrix` (``1e-10 max|A|``)."""
    a = square_matrix(x, name)
    scale = max(float(np.max(np.abs(a))), 1e-300)
    if np.max(np.abs(a - a.T)) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric (a Gram or system matrix)")
    return a


def shaped(a: np.ndarray, name: str, shape: tuple, why: str = "") -> np.ndarray:
    """``a`` if it has ``shape``; otherwise a ValueError naming ``name`` (and ``why``, e.g. "to
    match G")."""
    if a.shape != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)}{' ' + why if why else ''}, got {a.shape}"
        )
    return a


def check_kernel(kernel, name: str = "kernel"):
    """A kernel of :mod:`pfntheory.maths.kernels` (callable, with a ``diag`` method)."""
    if isinstance(kernel, type) or not (
        callable(kernel) and callable(getattr(kernel, "diag", None))
    ):
        raise ArgumentTypeError(
            f"{name} must be a kernel of pfntheory.maths.kernels (callable with a "
            f".diag method), got {_describe(kernel)}"
        )
    return kernel


def named_broadcast(*named_shapes) -> tuple[int, ...]:
    """``np.broadcast_shapes`` of ``(name, shape)`` pairs; a mismatch names the arguments."""
    try:
        return np.broadcast_shapes(*(shape for _, shape in named_shapes))
    except ValueError as err:
        desc = ", ".join(f"{n} {sh}" for n, sh in named_shapes)
        raise ValueError(f"shapes do not broadcast: {desc}") from err
