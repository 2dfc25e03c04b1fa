"""Richardson iteration, plain and Jacobi-preconditioned, and the KRR recursions built on it.

Implements
----------
* supp-sec:richardson: ``u^{l+1} = u^l + eta_l D^{-1} (b - A u^l)``; admissible step ``2/lambda_1``,
  optimal step ``eta* = 2/(lambda_1 + lambda_n)``, convergence factor ``max_i |1 - eta lambda_i|``,
  optimal factor ``rho* = 1 - 2/(cond + 1)``; all in terms of ``D^{-1/2} A D^{-1/2}`` (similar to
  ``D^{-1} A``).
* supp-thm:KRR: the training recursion (supp-eqn:grad train), the testing recursion
  (supp-eqn:grad test), the closed form of the test error
  ``e^(l)(x) = -k_x^T (I - eta (G + sigma^2 I))^l (G + sigma^2 I)^{-1} Y`` and the two bounds.
* eqn:recursion, eqn:richardson (``(G + sigma^2 I) u = G v``), eqn:richardson prec and
  eqn:recursion prec: the preconditioned recursions with ``D = diag(G 1)`` at the training points
  and ``s_x = sum_i kappa(x_i, x)`` at a query.

Divergence: a step above the admissible ``2 / lambda_1(D^{-1} A)`` makes :func:`richardson` diverge
(the "only if" of supp-sec:richardson): the iterates grow geometrically and eventually overflow to
inf/NaN. Such a step is flagged with a :class:`RuntimeWarning` naming ``eta`` and the bound (an
error under the test suite's warning filter) unless the caller passes ``allow_divergence=True``,
as the checks that measure divergence on purpose do. Iterates that overflow raise a ValueError
naming ``eta`` and the step (``allow_divergence=True``: returned as they are, the documented
non-finite result).

Validation cost (validate once at the boundary, then trust): :func:`richardson` checks ``A`` in
O(n^2) (finite, square, symmetric, positive diagonal; Gershgorin's discs certify positive
definiteness and the admissible step without an eigensolve in the usual case). The O(n^3)
certificates (a Cholesky factorisation, an eigensolve for the step) run only when they cost no
more than the iteration itself (:func:`_affordable`), or always with ``check_spd=True``; with
``check_spd=False`` the caller vouches for ``A``. The loop itself (:func:`_iterate`) trusts its
inputs.

Conventions: ``sigma^2`` is ``noise_var`` (a variance). Paths have shape ``(L + 1, ...)`` with the
initial iterate ``u^(0) = 0`` first. ``eta`` is a positive scalar or a length-``L`` sequence
``(eta^(0), ..., eta^(L-1))``. A returned path may hold at most :data:`MAX_PATH_ELEMENTS` floats;
larger requests are refused before anything is allocated.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    positive_array,
    positive_int,
    positive_scalar,
)

from ._richardson_checks import (
    _affordable,
    _gram,
    _krr_inputs,
    _precond,
    _query,
    _required,
    _spd,
    _spd_cheap,
    _steps,
    _sym,
    _vec,
)

__all__ = [
    "richardson",
    "spectrum",
    "admissible_step",
    "safe_step",
    "optimal_step",
    "convergence_factor",
    "optimal_convergence_factor",
    "krr_solution",
    "krr_training_recursion",
    "krr_testing_recursion",
    "krr_test_error_closed_form",
    "krr_convergence_factor",
    "krr_training_bound",
    "krr_testing_bound",
    "jacobi_preconditioner",
    "krr_training_recursion_prec",
    "krr_testing_recursion_prec",
    "MAX_PATH_ELEMENTS",
    "MAX_ITERATIONS",
]

#: Largest number of float64 values a returned path may hold (``(L + 1) x size of one iterate``):
#: 1e8 values are 800 MB. A larger request is refused with a ValueError naming ``L``.
MAX_PATH_ELEMENTS = 10**8
#: Most iterations (``L``, or the power ``l`` of the closed form) one call runs: 1e7 steps of even a
#: 10 x 10 system take minutes; the depths of the paper are at most a few thousand.
MAX_ITERATIONS = 10**7


def _path_size(L: int, per_step: int, name: str = "L") -> None:
    if (L + 1) * per_step > MAX_PATH_ELEMENTS:
        raise ValueError(
            f"{name}={L} would make a path of {(L + 1) * per_step:.3g} values, above "
            f"MAX_PATH_ELEMENTS={MAX_PATH_ELEMENTS:.0e}; lower {name} or do not ask for the path"
        )


# --------------------------------------------------------------------------------------------------
# supp-sec:richardson
# --------------------------------------------------------------------------------------------------


def _apply_Dinv(P, r: np.ndarray) -> np.ndarray:
    if P is None:
        return r
    if P.ndim == 1:
        return r / (P if r.ndim == 1 else P[:, None])
    return scipy.linalg.cho_solve((P, True), r)


def _check_admissible(A: np.ndarray, D, P, eta: np.ndarray, *, exact: bool = True) -> None:
    """Warn when a step exceeds the admissible ``2 / lambda_1(D^{-1} A)`` (the iteration then
    diverges). Gershgorin's bound on ``lambda_1`` clears the usual case without an eigensolve; the
    eigensolve runs only with ``exact`` (when affordable, :func:`_affordable`), else Rayleigh
    quotients bound ``lambda_1`` from below (a step above ``2 /`` that bound surely diverges); an
    overflowing iteration is still caught by :func:`richardson` after the fact."""
    top = float(np.max(eta))
    row = np.sum(np.abs(A), axis=1)
    if P is None:
        gersh = float(np.max(row))
    elif P.ndim == 1:
        gersh = float(np.max(row / P))  # rows of D^{-1} A
    else:
        gersh = np.inf
    if top * gersh <= 2.0:
        return
    if exact:
        bound, how = admissible_step(A, D), "="
    elif P is None or P.ndim == 1:  # Rayleigh quotients (e_i, 1) bound lambda_1 from below: O(n^2)
        p = np.ones(A.shape[0]) if P is None else P
        lam_low = max(float(np.max(np.diag(A) / p)), float(np.sum(A) / np.sum(p)))
        bound, how = 2.0 / lam_low, "<="
    else:
        return  # caught after the fact if the iterates overflow
    if top > bound:
        warnings.warn(
            f"eta={top:.6g} exceeds the admissible step 2/lambda_1(D^-1 A) {how} {bound:.6g}: the "
            "Richardson iteration diverges (supp-sec:richardson) and its iterates may overflow "
            "to inf/NaN; pass allow_divergence=True to run a divergent step on purpose",
            RuntimeWarning,
            stacklevel=3,
        )


def _iterate(A, b, eta, P, u, L: int, return_path: bool):
    """The trusted loop of :func:`richardson` (inputs already checked): ``(u^(L), path or None,
    first step whose iterate is not finite or None)``; it stops there (the path is NaN after)."""
    path = np.empty(((L + 1) if return_path else 0,) + b.shape)  # (L + 1, ...) iterates, if asked
    if return_path:
        path[0] = u
    bad = None
    with np.errstate(over="ignore", invalid="ignore"):
        for l in range(L):
            u = u + eta[l] * _apply_Dinv(P, b - A @ u)  # supp-sec:richardson, preconditioned update
            if return_path:
                path[l + 1] = u
            if not np.isfinite(u).all():  # O(n) beside the O(n^2) product
                bad = l + 1
                if return_path:
                    path[l + 2 :] = np.nan
                break
    return u, path, bad


def richardson(
    A,
    b,
    eta,
    L: int,
    D=None,
    u0=None,
    return_path: bool = False,
    *,
    allow_divergence: bool = False,
    check_spd: bool | None = None,
):
    """Preconditioned Richardson iteration ``u^{l+1} = u^l + eta_l D^{-1} (b - A u^l)``.

    Parameters
    ----------
    A : ndarray of shape (n, n)
        Symmetric positive definite system matrix.
    b : ndarray of shape (n,) or (n, k)
        Right-hand side(s).
    eta : float or sequence of length L
        Step sizes ``eta^(0), ..., eta^(L-1)`` (all > 0).
    L : int
        Number of iterations (>= 1).
    D : ndarray of shape (n,) or (n, n), optional
        Preconditioner: a positive diagonal (vector or diagonal matrix) or an SPD matrix.
        ``None`` is the plain iteration (``D = I``).
    u0 : ndarray like ``b``, optional
        Initial iterate (default 0).
    return_path : bool
        Also return the iterates ``u^(0), ..., u^(L)``.
    allow_divergence : bool
        Run steps above the admissible ``2 / lambda_1(D^{-1} A)`` without the
        :class:`RuntimeWarning` (the iterates then grow geometrically and may overflow to inf/NaN:
        the documented non-finite result of a divergent step; the path is NaN after the first
        non-finite iterate). Without it, overflowing iterates raise a ValueError naming ``eta``.
    check_spd : bool or None
        Certify that ``A`` is positive definite (Cholesky) and the step admissible (eigensolve),
        O(n^3): None (default) when Gershgorin's discs do not already and it costs at most the
        iteration (``3 n <= 2 L k`` for ``k`` right-hand sides); True always; False never (the
        caller vouches for ``A``; the O(n^2) checks still run). Documented limit: for a large
        ``A`` and few iterations, an indefinite ``A`` with a positive diagonal is not refused (the
        result is still ``L`` exact Richardson steps).

    Returns
    -------
    u_L : ndarray like ``b``
    path : ndarray of shape (L + 1,) + b.shape, only if ``return_path``
    """
    A = _sym(A)
    n = A.shape[0]
    b = _vec(b, "b", n, allow_matrix=True)
    L = positive_int(L, "L")
    if return_path:
        _path_size(L, b.size)
    if L > MAX_ITERATIONS:
        raise ValueError(f"L={L} is above MAX_ITERATIONS={MAX_ITERATIONS:.0e}")
    if check_spd is not None and not isinstance(check_spd, (bool, np.bool_)):
        raise ArgumentTypeError(f"check_spd must be True, False or None, got {check_spd!r}")
    k = 1 if b.ndim == 1 else b.shape[1]
    exact = _affordable(n, L, k) if check_spd is None else bool(check_spd)
    if not _spd_cheap(A) and exact:
        _spd(A)  # O(n^3): affordable here, or asked for
    eta = _steps(eta, L)
    P = _precond(D, n)
    if not allow_divergence:
        _check_admissible(A, D, P, eta, exact=exact)
    u = np.zeros_like(b) if u0 is None else as_float_array(u0, "u0")
    if u.shape != b.shape:
        raise ValueError(f"u0 must have the shape of b {b.shape}, got {u.shape}")
    u, path, bad = _iterate(A, b, eta, P, u, L, return_path)
    if bad is not None and not allow_divergence:
        raise ValueError(
            f"eta={float(np.max(eta)):.6g} made the Richardson iteration diverge: its iterate "
            f"u^({bad}) overflowed to inf/NaN (supp-sec:richardson: a step must stay below "
            "2/lambda_1(D^-1 A)); pass allow_divergence=True to get the non-finite iterates"
        )
    return (u, path) if return_path else u


def spectrum(A, D=None) -> np.ndarray:
    """Eigenvalues of ``D^{-1} A`` in decreasing order, from the similar symmetric matrix.

    ``D^{-1} A`` is similar to ``D^{-1/2} A D^{-1/2}`` (supp-sec:richardson, Preconditioning), so
    the spectrum comes from :func:`numpy.linalg.eigvalsh` of a symmetric matrix. ``A`` must be
    symmetric positive definite (the iteration's standing assumption; checked by a Cholesky
    factorisation).

    Returns
    -------
    lam : ndarray of shape (n,)
        ``lambda_1 >= ... >= lambda_n``.
    """
    A = _spd(A)
    P = _precond(D, A.shape[0])
    if P is None:
        B = A
    elif P.ndim == 1:
        r = 1.0 / np.sqrt(P)
        B = r[:, None] * A * r[None, :]  # D^{-1/2} A D^{-1/2}
    else:
        T = scipy.linalg.solve_triangular(P, A, lower=True)  # C^{-1} A, D = C C^T
        B = scipy.linalg.solve_triangular(P, T.T, lower=True)  # C^{-1} A C^{-T}
        B = 0.5 * (B + B.T)
    return np.linalg.eigvalsh(B)[::-1]


def _pd_spectrum(A, D=None) -> np.ndarray:
    lam = spectrum(A, D)
    if lam[-1] <= 0:
        raise ValueError(
            f"A must be positive definite (smallest eigenvalue of D^-1 A is {lam[-1]:.3g})"
        )
    return lam


def admissible_step(A, D=None) -> float:
    """Supremum of convergent constant steps, ``2 / lambda_1(D^{-1} A)`` (supp-sec:richardson)."""
    return float(2.0 / _pd_spectrum(A, D)[0])


def safe_step(A, D=None, fraction: float = 0.9) -> float:
    """``fraction / lambda_1(D^{-1} A) = fraction * admissible_step / 2``, with
    ``0 < fraction < 1``.

    Inside the rate condition of supp-thm:KRR and thm:TFdoPPD (``eta < 1/(lambda_1(G) + sigma^2)``
    for ``A = G + sigma^2 I``), which is half the convergence range ``2/lambda_1``; the default 0.9
    keeps a 10% margin from its edge.
    """
    fraction = positive_scalar(fraction, "fraction")
    if fraction >= 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    return fraction * admissible_step(A, D) / 2.0


def optimal_step(A, D=None) -> float:
    """``eta* = 2 / (lambda_1 + lambda_n)`` of ``D^{-1} A`` (supp-sec:richardson, Optimal
    Step Size)."""
    lam = _pd_spectrum(A, D)
    return float(2.0 / (lam[0] + lam[-1]))


def convergence_factor(A, eta, D=None) -> float:
    """``max_i |1 - eta lambda_i(D^{-1} A)|`` (supp-sec:richardson); < 1 iff the iteration
    converges."""
    eta = positive_scalar(eta, "eta")
    lam = _pd_spectrum(A, D)
    return float(np.max(np.abs(1.0 - eta * lam)))


def optimal_convergence_factor(A, D=None) -> float:
    """``rho* = 1 - 2 / (cond(D^{-1} A) + 1)`` (supp-sec:richardson, Optimal Step Size)."""
    lam = _pd_spectrum(A, D)
    return float(1.0 - 2.0 / (lam[0] / lam[-1] + 1.0))


# --------------------------------------------------------------------------------------------------
# supp-thm:KRR
# --------------------------------------------------------------------------------------------------


def krr_solution(G, k_x, Y, noise_var: float) -> tuple[np.ndarray, np.ndarray]:
    """Fixed points ``u*_X = G (G + sigma^2 I)^{-1} Y`` (supp-eqn:f X ast) and
    ``u*(x) = k_x^T (G + sigma^2 I)^{-1} Y`` (supp-eqn:f ast).

    Parameters
    ----------
    G : ndarray of shape (n, n)
    k_x : ndarray of shape (n,) or (m, n)
    Y : ndarray of shape (n,)
    noise_var : float

    Returns
    -------
    u_X : ndarray of shape (n,)
    u_x : float or ndarray of shape (m,)
    """
    G, noise_var, k_x, Y = _krr_inputs(G, k_x, Y, noise_var)
    n = G.shape[0]
    alpha = np.linalg.solve(G + noise_var * np.eye(n), Y)
    return G @ alpha, k_x @ alpha


def _krr_recursion(G, k_x, Y, noise_var, eta, L, *, preconditioned: bool):
    """The one KRR recursion behind the four public ones, ``u^(0) = 0``.

    With ``s = 1`` (plain: supp-eqn:grad train / supp-eqn:grad test) or ``s = G 1`` and
    ``s_x = sum_i kappa(x_i, x)`` (preconditioned: eqn:recursion prec), every token follows
    ``u^{l+1} = (1 - eta_l sigma^2 / s) u^l + (eta_l / s) k^T (Y - u_X^l)`` with ``k``
    its kernel row.

    Returns the training path of shape (L + 1, n) and, if ``k_x`` is given, the query path of shape
    (L + 1,) or (L + 1, m).
    """
    G, noise_var = _gram(G, noise_var)
    n = G.shape[0]
    Y = _vec(Y, "Y", n)
    L = positive_int(L, "L")
    k_x = None if k_x is None else _query(k_x, n)
    m = 0 if k_x is None else int(np.prod(k_x.shape[:-1]))
    _path_size(L, n + m)  # the paths are returned: (L + 1)(n + m) values
    eta = _steps(eta, L)
    s = jacobi_preconditioner(G) if preconditioned else np.ones(n)  # D = diag(G 1) or I
    if k_x is not None:
        s_x = (
            positive_array(k_x.sum(axis=-1), "s_x = sum of k_x")
            if preconditioned
            else np.ones(k_x.shape[:-1])
        )
    train = np.zeros((L + 1, n))
    test = None if k_x is None else np.zeros((L + 1,) + k_x.shape[:-1])
    for l in range(L):
        r = Y - train[l]  # Y - u_X^l
        train[l + 1] = (1.0 - eta[l] * noise_var / s) * train[l] + (eta[l] / s) * (
            G @ r
        )  # supp-eqn:grad train
        if test is not None:
            test[l + 1] = (1.0 - eta[l] * noise_var / s_x) * test[l] + (eta[l] / s_x) * (
                k_x @ r
            )  # supp-eqn:grad test
    return train, test


def krr_training_recursion(G, Y, noise_var: float, eta, L: int) -> np.ndarray:
    """Training recursion (supp-eqn:grad train), ``u^(0) = 0``.

    ``u_X^{l+1} = (1 - eta_l sigma^2) u_X^l + eta_l G (Y - u_X^l)``.

    Parameters
    ----------
    G : ndarray of shape (n, n)
    Y : ndarray of shape (n,)
    noise_var : float
    eta : float or sequence of length L
    L : int

    Returns
    -------
    path : ndarray of shape (L + 1, n)
    """
    return _krr_recursion(G, None, Y, noise_var, eta, L, preconditioned=False)[0]


def krr_testing_recursion(G, k_x, Y, noise_var: float, eta, L: int) -> np.ndarray:
    """Testing recursion (supp-eqn:grad test) at one or several queries, ``u^(0)(x) = 0``.

    ``u^{l+1}(x) = (1 - eta_l sigma^2) u^l(x) + eta_l k_x^T (Y - u_X^l)`` with ``u_X^l`` from
    :func:`krr_training_recursion`.

    Parameters
    ----------
    G, Y, noise_var, eta, L
        As :func:`krr_training_recursion`.
    k_x : ndarray of shape (n,) or (m, n)
        Kernel row(s) ``kappa(X, x)`` of one or ``m`` queries.

    Returns
    -------
    path : ndarray of shape (L + 1,) or (L + 1, m)
    """
    return _krr_recursion(G, _required(k_x, "k_x"), Y, noise_var, eta, L, preconditioned=False)[1]


def krr_test_error_closed_form(G, k_x, Y, noise_var: float, eta: float, l: int):
    """``e^(l)(x) = -k_x^T (I - eta (G + sigma^2 I))^l (G + sigma^2 I)^{-1} Y`` (proof of
    supp-thm:KRR).

    Parameters
    ----------
    G, k_x, Y, noise_var
        As :func:`krr_solution`.
    eta : float
        Constant step size.
    l : int
        Iteration index (>= 0).

    Returns
    -------
    e : float or ndarray of shape (m,)
    """
    G, noise_var, k_x, Y = _krr_inputs(G, k_x, Y, noise_var)
    n = G.shape[0]
    eta = positive_scalar(eta, "eta")
    l = positive_int(l, "l", minimum=0, maximum=MAX_ITERATIONS)
    A = G + noise_var * np.eye(n)
    c = np.linalg.solve(A, Y)  # (G + sigma^2 I)^{-1} Y
    c = np.linalg.matrix_power(np.eye(n) - eta * A, l) @ c
    return -(k_x @ c)


def _depths(L) -> np.ndarray:
    """``L`` (an int or an array of ints) as a float array of non-negative whole depths."""
    if isinstance(L, (bool, np.bool_)) or L is None or isinstance(L, (str, bytes)):
        raise ArgumentTypeError(f"L must be a non-negative integer or an array of them, got {L!r}")
    a = as_float_array(L, "L")
    if np.any(a < 0) or np.any(a != np.round(a)):
        raise ValueError(f"L must hold non-negative integers, got {L!r}")
    return a


def _extremes(G) -> tuple[float, float]:
    lam = np.linalg.eigvalsh(G)
    # G is PSD; an eigenvalue below 0 is round-off (|.| <= n eps ||G||), so it is read as 0.
    return float(lam[-1]), float(max(lam[0], 0.0))


def krr_convergence_factor(G, noise_var: float, eta: float) -> float:
    """The theorem's ``rho = 1 - eta (lambda_n(G) + sigma^2)`` (supp-thm:KRR, thm:TFdoPPD)."""
    G, noise_var = _gram(G, noise_var)
    eta = positive_scalar(eta, "eta")
    _, lam_n = _extremes(G)
    return 1.0 - eta * (lam_n + noise_var)


def krr_training_bound(G, Y, noise_var: float, eta: float, L):
    """``exp(-(1 - rho) L) lambda_1 / (lambda_n + sigma^2) ||Y||_2`` (supp-thm:KRR,
    training points).

    Valid (by the theorem) for constant ``eta in (0, 1/(lambda_1 + sigma^2))``; computed for any
    ``eta > 0`` so that the hypothesis can be probed.

    Parameters
    ----------
    G : ndarray of shape (n, n)
    Y : ndarray of shape (n,)
    noise_var, eta : float
    L : int or ndarray of int

    Returns
    -------
    bound : float or ndarray like ``L``
    """
    G, noise_var = _gram(G, noise_var)
    Y = _vec(Y, "Y", G.shape[0])
    rho = krr_convergence_factor(G, noise_var, eta)
    lam_1, lam_n = _extremes(G)
    L = _depths(L)
    return np.exp(-(1.0 - rho) * L) * lam_1 / (lam_n + noise_var) * np.linalg.norm(Y)


def krr_testing_bound(G, k_x, Y, noise_var: float, eta: float, L):
    """``exp(-(1 - rho) L) ||k_x||_2 / (lambda_n + sigma^2) ||Y||_2`` (supp-thm:KRR, query).

    Parameters
    ----------
    G, k_x, Y, noise_var, eta, L
        ``k_x`` as :func:`krr_testing_recursion`, the others as :func:`krr_training_bound`.

    Returns
    -------
    bound : ndarray of shape ``np.shape(L) + k_x.shape[:-1]``
    """
    G, noise_var, k_x, Y = _krr_inputs(G, k_x, Y, noise_var)
    rho = krr_convergence_factor(G, noise_var, eta)
    _, lam_n = _extremes(G)
    L = _depths(L)
    fac = np.exp(-(1.0 - rho) * L)
    return np.multiply.outer(
        fac, np.linalg.norm(k_x, axis=-1) / (lam_n + noise_var) * np.linalg.norm(Y)
    )


# --------------------------------------------------------------------------------------------------
# eqn:richardson prec, eqn:recursion prec
# --------------------------------------------------------------------------------------------------


def jacobi_preconditioner(G) -> np.ndarray:
    """Row sums ``s_{x_j} = (G 1_n)_j``, the diagonal of ``D = diag(G 1_n)`` (eqn:richardson prec).

    Raises ``ValueError`` if a row sum is not positive (the preconditioner needs a positive kernel).
    """
    G = _sym(G, "G")
    return positive_array(G.sum(axis=1), "row sums of G")


def krr_training_recursion_prec(G, Y, noise_var: float, eta, L: int) -> np.ndarray:
    """Jacobi-preconditioned training recursion for eqn:richardson prec, ``u^(0) = 0``.

    ``u_X^{l+1} = (1 - eta_l sigma^2 / s) u_X^l + (eta_l / s) G (Y - u_X^l)`` with ``s = G 1``
    (eqn:recursion prec at ``x = x_j``), i.e. ``u + eta D^{-1} (G Y - (G + sigma^2 I) u)``.

    Returns
    -------
    path : ndarray of shape (L + 1, n)
    """
    return _krr_recursion(G, None, Y, noise_var, eta, L, preconditioned=True)[0]


def krr_testing_recursion_prec(G, k_x, Y, noise_var: float, eta, L: int) -> np.ndarray:
    """Preconditioned testing recursion (eqn:recursion prec) at queries,
    ``s_x = sum_i kappa(x_i, x)``.

    ``u^{l+1}(x) = (1 - eta_l sigma^2 / s_x) u^l(x) + (eta_l / s_x) k_x^T (Y - u_X^l)``.

    Returns
    -------
    path : ndarray of shape (L + 1,) or (L + 1, m)
    """
    return _krr_recursion(G, _required(k_x, "k_x"), Y, noise_var, eta, L, preconditioned=True)[1]
