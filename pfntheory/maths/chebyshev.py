"""Chebyshev step sizes for the (Jacobi-preconditioned) Richardson recursion (beyond the paper,
issue 38): per-layer steps at the Chebyshev nodes of the spectrum's range, so that a head of
thm:TFdoPPD needs depth of order ``sqrt(kappa)`` instead of ``kappa``.

With steps ``eta_1, ..., eta_L`` the error of ``u <- u + eta_l D^{-1} (b - A u)`` after ``L``
steps is ``e_L = p_L(D^{-1} A) e_0`` with the residual polynomial
``p_L(lam) = prod_l (1 - eta_l lam)``, ``p_L(0) = 1``. Taking ``1 / eta_l`` at the ``L`` roots of
the Chebyshev polynomial mapped onto ``[lo, hi]`` (:func:`chebyshev_nodes`) gives

    p_L(lam) = T_L((hi + lo - 2 lam) / (hi - lo)) / T_L((hi + lo) / (hi - lo)),

the polynomial of least maximum on ``[lo, hi]`` among those with ``p(0) = 1``; its maximum there is

    1 / T_L((kappa + 1) / (kappa - 1)) = 2 rho^L / (1 + rho^(2L)),
    rho = (sqrt(kappa) - 1) / (sqrt(kappa) + 1),  kappa = hi / lo

(:func:`chebyshev_bound`; attained at ``lam = lo`` and ``lam = hi``). Since ``D^{-1} A`` is similar
to the symmetric ``S = D^{-1/2} A D^{-1/2}``, ``|D^{1/2} e_L| <= max_[lo, hi] |p_L| |D^{1/2} e_0|``
whenever the spectrum lies in ``[lo, hi]``. Reaching a relative error ``eps`` takes
:func:`chebyshev_depth` ``~ sqrt(kappa) / 2 log(2 / eps)`` steps against
:func:`richardson_depth` ``~ kappa / 2 log(1 / eps)`` for the best constant step
``2 / (lo + hi)``.

Order of the steps. In exact arithmetic ``p_L`` does not depend on the order; in floating point
it does: a round-off error made after step ``j`` is multiplied by the partial polynomial
``prod_{l > j} (1 - eta_l lam)``, whose maximum over ``[lo, hi]`` (:func:`amplification`) can reach
``kappa^(L/2)`` when the large steps (small nodes) come together. :func:`leja_order` (each next
node maximises the product of its distances to the nodes already taken) keeps these partial
products moderate; the nodes in monotone order (``order="decreasing"`` / ``"increasing"``) are the
unstable variants (checked in ``verify/test_chebyshev.py``).

The range of a head's system. For the Jacobi-preconditioned KRR system of eqn:richardson prec,
``A = G + sigma^2 I`` and ``D = diag(G 1)`` with a kernel of unit amplitude and positive values
(RBF), ``lambda(D^{-1} A)`` lies in ``[sigma^2 / n, 1 + sigma^2]`` for every design of ``n`` points
(:func:`prior_range`): ``D^{-1} G`` is row-stochastic and positive semi-definite in the ``D``
inner product, so its eigenvalues lie in ``[0, 1]``, and ``1 <= s_i <= n``. This range needs no
eigensolve and holds for every context, so hand-set steps built on it are weights of a fixed
model (for each ``n``).
"""

from __future__ import annotations

import math

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_size,
    positive_array,
    positive_int,
    positive_scalar,
)

__all__ = [
    "ORDERS",
    "chebyshev_nodes",
    "leja_order",
    "chebyshev_steps",
    "chebyshev_bound",
    "residual_polynomial",
    "amplification",
    "chebyshev_depth",
    "richardson_depth",
    "prior_range",
    "spectrum_range",
]

#: Orders of the steps: "leja" (stable), "decreasing" / "increasing" nodes (monotone: unstable).
ORDERS = ("leja", "decreasing", "increasing")


def _range(lo, hi) -> tuple[float, float]:
    lo, hi = positive_scalar(lo, "lo"), positive_scalar(hi, "hi")
    if not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo!r}, hi={hi!r}")
    return lo, hi


def chebyshev_nodes(lo, hi, L: int) -> np.ndarray:
    """The ``L`` roots of the Chebyshev polynomial ``T_L`` mapped onto ``[lo, hi]``
    (``0 < lo < hi``), in decreasing order: ``(hi + lo)/2 + (hi - lo)/2 cos((2k - 1) pi / (2L))``,
    ``k = 1..L``."""
    lo, hi = _range(lo, hi)
    L = positive_int(L, "L")
    check_size(L, "L")
    k = np.arange(1, L + 1)
    return 0.5 * (hi + lo) + 0.5 * (hi - lo) * np.cos((2 * k - 1) * np.pi / (2 * len(k)))


def leja_order(points) -> np.ndarray:
    """Indices of ``points`` (distinct reals) in Leja order: first the point of largest modulus,
    then each next one maximising the product of its distances to those already taken (sums of
    logarithms, so that no product overflows)."""
    x = as_float_array(points, "points", ndim=1, non_empty=True)
    if np.unique(x).size != x.size:
        raise ValueError("points must be distinct (a repeated point has distance 0)")
    order = [int(np.argmax(np.abs(x)))]
    with np.errstate(divide="ignore"):  # log 0 at the points taken, set to -inf anyway
        score = np.log(np.abs(x - x[order[0]]))
        score[order[0]] = -np.inf
        for _ in range(x.size - 1):
            j = int(np.argmax(score))
            order.append(j)
            score = score + np.log(np.abs(x - x[j]))
            score[order] = -np.inf
    return np.asarray(order)


def chebyshev_steps(lo, hi, L: int, order: str = "leja") -> np.ndarray:
    """Steps ``eta_l = 1 / node_l`` at the Chebyshev nodes of ``[lo, hi]``, in ``order``
    (:data:`ORDERS`); ``L`` of them."""
    nodes = chebyshev_nodes(lo, hi, L)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if order == "leja":
        nodes = nodes[leja_order(nodes)]
    elif order == "increasing":
        nodes = nodes[::-1]
    return 1.0 / nodes


def chebyshev_bound(kappa, L: int) -> float:
    """``max_[lo, hi] |p_L| = 2 rho^L / (1 + rho^(2L))``, ``rho = (sqrt(kappa) - 1) /
    (sqrt(kappa) + 1)``, for ``kappa = hi / lo > 1``."""
    kappa = positive_scalar(kappa, "kappa")
    if kappa <= 1:
        raise ValueError(f"kappa must exceed 1, got {kappa!r}")
    rho = (math.sqrt(kappa) - 1.0) / (math.sqrt(kappa) + 1.0)
    L = positive_int(L, "L")
    return 2.0 * rho**L / (1.0 + rho ** (2 * L))


def _steps_points(eta, lam) -> tuple[np.ndarray, np.ndarray]:
    """Steps ``eta`` (a non-empty 1-d array of positive numbers) and points ``lam`` (finite, any
    shape, non-empty), checked; ``len(eta) * lam.size`` within the size limit."""
    eta = positive_array(eta, "eta", ndim=1, non_empty=True)
    lam = as_float_array(lam, "lam", non_empty=True)
    check_size(eta.size * lam.size, "eta x lam")
    return eta, lam


def residual_polynomial(eta, lam) -> np.ndarray:
    """``p(lam) = prod_l (1 - eta_l lam)`` at each of ``lam`` (the error factor of the steps
    ``eta`` on an eigenvalue ``lam`` of ``D^{-1} A``)."""
    eta, lam = _steps_points(eta, lam)
    return np.prod(1.0 - eta[:, None] * lam.reshape(-1)[None, :], axis=0).reshape(lam.shape)


def amplification(eta, lam) -> np.ndarray:
    """``a_j = (1 + eta_j lam_max H_j) T_j`` for ``j = 0..L-1`` over the points ``lam`` (a fine
    grid of ``[lo, hi]``, or the spectrum), with ``H_j = max_lam |prod_{l < j} (1 - eta_l lam)|``
    and ``T_j = max_lam |prod_{l > j} (1 - eta_l lam)|``: step ``j`` adds to an iterate of the size
    of the solution (relative to the initial error, 1) an update of size up to
    ``eta_j lam_max H_j``, so its round-off is ``eps`` times ``1 + eta_j lam_max H_j``, and the
    steps after it grow that error by up to ``T_j``. ``eps sum_j a_j`` bounds the round-off's
    growth by the end, relative to the initial error; it is moderate for :func:`leja_order` and of
    order ``kappa^(L/2)`` for monotone orders."""
    eta, lam = _steps_points(eta, lam)
    lam = lam.reshape(-1)
    f = np.abs(1.0 - eta[:, None] * lam[None, :])  # (L, m)
    with np.errstate(over="ignore", invalid="ignore"):
        head = np.ones(len(eta))
        head[1:] = np.cumprod(f, axis=0)[:-1].max(axis=1)  # prod_{l < j}
        tail = np.ones(len(eta))
        tail[:-1] = np.cumprod(f[::-1], axis=0)[::-1][1:].max(axis=1)  # prod_{l > j}
        return (1.0 + eta * lam.max() * head) * tail


def chebyshev_depth(kappa, eps) -> int:
    """Fewest Chebyshev steps with ``max_[lo, hi] |p_L| <= eps``:
    ``ceil(arccosh(1 / eps) / arccosh((kappa + 1) / (kappa - 1)))`` (``1 / T_L`` of the bound,
    exactly)."""
    kappa, eps = positive_scalar(kappa, "kappa"), positive_scalar(eps, "eps")
    if kappa <= 1 or eps >= 1:
        raise ValueError(f"need kappa > 1 and 0 < eps < 1, got {kappa!r}, {eps!r}")
    return math.ceil(math.acosh(1.0 / eps) / math.acosh((kappa + 1.0) / (kappa - 1.0)) - 1e-12)


def richardson_depth(kappa, eps) -> int:
    """Fewest steps of the best constant step ``2 / (lo + hi)`` with factor
    ``((kappa - 1) / (kappa + 1))^L <= eps``."""
    kappa, eps = positive_scalar(kappa, "kappa"), positive_scalar(eps, "eps")
    if kappa <= 1 or eps >= 1:
        raise ValueError(f"need kappa > 1 and 0 < eps < 1, got {kappa!r}, {eps!r}")
    return math.ceil(math.log(eps) / math.log((kappa - 1.0) / (kappa + 1.0)) - 1e-12)


def prior_range(noise_var, n: int) -> tuple[float, float]:
    """``[sigma^2 / n, 1 + sigma^2]``: a range holding ``lambda(D^{-1} (G + sigma^2 I))``,
    ``D = diag(G 1)``, for every design of ``n`` points of a positive kernel of unit amplitude
    (module docstring)."""
    s2 = positive_scalar(noise_var, "noise_var")
    return s2 / positive_int(n, "n"), 1.0 + s2


def spectrum_range(A, D=None) -> tuple[float, float]:
    """``(lambda_min, lambda_max)`` of ``D^{-1} A``
    (:func:`pfntheory.maths.richardson.spectrum`)."""
    from .richardson import spectrum

    if isinstance(A, (str, bytes)):
        raise ArgumentTypeError("A must be a matrix")
    lam = spectrum(A, D)
    return float(lam[-1]), float(lam[0])
