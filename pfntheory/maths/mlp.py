"""The explicit one-hidden-layer ReLU MLP ``psi~`` that converts moments to natural parameters
(float64 NumPy).

Implements
----------
* "MLP for natural parameter conversion" (sec. From Moments to PPD) and supp-sec:thrm4.1: an
  explicit ReLU MLP ``psi~`` approximating ``psi(mu, tau) = (mu/tau, -1/(2 tau))`` on a box ``K``,
  built deterministically (fixed ReLU ridge features + least-squares readout, no SGD);
* its ``delta_MLP = sup_K ||psi - psi~||_2`` as a *certified* upper bound (grid maximum plus a
  per-cell Lipschitz constant times the half-diagonal of the cell), and a Lipschitz
  bound ``L_psi~``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfntheory.base._checks import ArgumentTypeError, as_float_array, positive_int, positive_scalar

from .readout import psi_gaussian

__all__ = ["ReLUMLP", "fit_psi_mlp", "delta_mlp", "delta_mlp_interval", "MAX_GRID_CELLS"]

#: Largest ``4 x cells x width`` (corners times hidden units) :func:`delta_mlp_interval` will
#: allocate at once (3e7 booleans/floats, at most 240 MB per array); a larger initial grid is
#: refused naming ``n_grid``, and refinement stops before it.
MAX_GRID_CELLS = 3 * 10**7


def _box(box) -> tuple[tuple[float, float], tuple[float, float]]:
    b = as_float_array(box, "box")
    if b.shape != (2, 2):
        raise ValueError(f"box must be ((mu_lo, mu_hi), (tau_lo, tau_hi)), got shape {b.shape}")
    if not (b[0, 0] < b[0, 1] and b[1, 0] < b[1, 1]):
        raise ValueError(f"box must have lo < hi on both axes, got {b.tolist()}")
    if b[1, 0] <= 0:
        raise ValueError(f"box must have tau_lo > 0 (psi needs tau > 0), got tau_lo={b[1, 0]}")
    return (float(b[0, 0]), float(b[0, 1])), (float(b[1, 0]), float(b[1, 1]))


def _grid(box, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Axes of an ``n x n`` grid on ``box``."""
    (m0, m1), (t0, t1) = box
    return np.linspace(m0, m1, n), np.linspace(t0, t1, n)


@dataclass(frozen=True, eq=False)
class ReLUMLP:
    """``psi~(theta) = W2 relu(W1 theta + h1) + h2`` (one hidden layer of width ``C'``).

    Attributes
    ----------
    W1 : ndarray of shape (C', 2)
    h1 : ndarray of shape (C',)
    W2 : ndarray of shape (2, C')
    h2 : ndarray of shape (2,)
    box : tuple
        ``((mu_lo, mu_hi), (tau_lo, tau_hi))``, the compact set ``K`` it was fitted on.
    """

    W1: np.ndarray
    h1: np.ndarray
    W2: np.ndarray
    h2: np.ndarray
    box: tuple

    @property
    def width(self) -> int:
        return int(self.W1.shape[0])

    def __call__(self, theta) -> np.ndarray:
        """Evaluate at ``theta = (mu, tau)`` of shape (..., 2); returns shape (..., 2)."""
        theta = as_float_array(theta, "theta", min_ndim=1)
        if theta.shape[-1] != 2:
            raise ValueError(f"theta must have last dimension 2 (mu, tau), got {theta.shape}")
        hidden = np.maximum(theta @ self.W1.T + self.h1, 0.0)  # act(W1 theta + h1), (..., C')
        return hidden @ self.W2.T + self.h2

    def lipschitz_bound(self) -> float:
        """``||W2||_2 ||W1||_2 >= L_psi~`` (ReLU is 1-Lipschitz), in the Euclidean norm."""
        return float(np.linalg.norm(self.W2, 2) * np.linalg.norm(self.W1, 2))


def fit_psi_mlp(
    box,
    width: int,
    rng: np.random.Generator | None = None,
    *,
    n_fit: int | None = None,
    ridge: float = 1e-12,
) -> ReLUMLP:
    """Explicit one-hidden-layer ReLU MLP for ``psi(mu, tau) = (mu/tau, -1/(2 tau))`` on a box.

    The hidden layer is fixed, not trained: inputs are mapped affinely to ``t in [-1, 1]^2`` and
    feature ``j`` is the ridge function ``relu(a_j . t + b_j)``. Deterministically (``rng=None``),
    the directions ``a_j`` take ``m = floor(sqrt(C'))`` angles equally spaced on ``[0, 2 pi)`` and
    the offsets ``b_j`` take ``k = ceil(C'/m)`` equally spaced levels inside ``(-sqrt 2, sqrt 2)``
    (the range of ``a . t`` on the square), a discrete Radon-type grid; with ``rng`` the angles and
    offsets are uniform draws. The readout ``(W2, h2)`` is the least-squares fit to ``psi`` on an
    ``n_fit x n_fit`` grid, solved by the normal equations with a relative Tikhonov term ``ridge``
    (only to keep nearly collinear features solvable). No SGD.

    Parameters
    ----------
    box : array_like of shape (2, 2)
        ``((mu_lo, mu_hi), (tau_lo, tau_hi))`` with ``tau_lo > 0``.
    width : int
        Hidden width ``C'`` (>= 1).
    rng : numpy.random.Generator, optional
        Draw the features at random; ``None`` gives the deterministic grid of ridge features.
    n_fit : int, optional
        Fitting-grid resolution per axis (default ``max(40, 3 sqrt(C'))``: >= 9 points per feature).
    ridge : float
        Relative Tikhonov weight (times ``tr(Phi^T Phi)/C'``).

    Returns
    -------
    ReLUMLP
    """
    (m0, m1), (t0, t1) = _box(box)
    width = positive_int(width, "width", maximum=MAX_GRID_CELLS)
    if n_fit is None:
        n_fit = max(40, int(np.ceil(3.0 * np.sqrt(width))))
    n_fit = positive_int(n_fit, "n_fit", minimum=2)
    if n_fit**2 * (width + 1) > MAX_GRID_CELLS:
        raise ValueError(
            f"width={width} with n_fit={n_fit} needs a {n_fit**2} x {width + 1} feature "
            f"matrix, above MAX_GRID_CELLS={MAX_GRID_CELLS:.0e}"
        )
    ridge = positive_scalar(ridge, "ridge", allow_zero=True)
    if rng is None:
        m = max(1, int(np.floor(np.sqrt(width))))
        k = int(np.ceil(width / m))
        j = np.arange(width)
        ang = 2 * np.pi * ((j % m) + 0.5) / m
        b = np.sqrt(2.0) * (2.0 * ((j // m) + 1) / (k + 1) - 1.0)
    else:
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        ang = rng.uniform(0.0, 2 * np.pi, size=width)
        b = rng.uniform(-np.sqrt(2.0), np.sqrt(2.0), size=width)
    A = np.stack([np.cos(ang), np.sin(ang)], axis=1)  # (C', 2) unit directions
    c = np.array([(m0 + m1) / 2, (t0 + t1) / 2])
    half = np.array([(m1 - m0) / 2, (t1 - t0) / 2])
    W1 = A / half[None, :]  # a . t with t = (theta - c) / half
    h1 = b - W1 @ c
    mu_ax, tau_ax = _grid(((m0, m1), (t0, t1)), n_fit)
    theta = np.stack(np.meshgrid(mu_ax, tau_ax, indexing="ij"), axis=-1).reshape(-1, 2)
    Phi = np.maximum(theta @ W1.T + h1, 0.0)  # (N, C'), act(W1 theta + h1)
    Phi1 = np.concatenate([Phi, np.ones((Phi.shape[0], 1))], axis=1)  # readout bias h2
    target = psi_gaussian(theta[:, 0], theta[:, 1])  # (N, 2)
    M = Phi1.T @ Phi1
    M[np.diag_indices_from(M)] += ridge * np.trace(M) / M.shape[0]
    coef = np.linalg.solve(M, Phi1.T @ target)  # least-squares readout (W2, h2)
    return ReLUMLP(
        W1=W1, h1=h1, W2=coef[:-1].T.copy(), h2=coef[-1].copy(), box=((m0, m1), (t0, t1))
    )


def _cell_bounds(mlp: ReLUMLP, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest corner value of ``||psi - psi~||_2`` and a certified upper bound on each cell.

    Cells are rectangles ``[lo, hi]`` (arrays of shape (m, 2), columns ``(mu, tau)``).
    """
    corners = np.stack(
        [lo, np.stack([hi[:, 0], lo[:, 1]], 1), np.stack([lo[:, 0], hi[:, 1]], 1), hi], axis=1
    )  # (m, 4, 2)
    z = corners @ mlp.W1.T + mlp.h1  # (m, 4, C') pre-activations, affine in theta
    out = np.maximum(z, 0.0) @ mlp.W2.T + mlp.h2  # psi~ at the corners
    f = np.linalg.norm(psi_gaussian(corners[..., 0], corners[..., 1]) - out, axis=-1)  # (m, 4)
    corner_max = f.max(axis=1)
    r = 0.5 * np.hypot(hi[:, 0] - lo[:, 0], hi[:, 1] - lo[:, 1])  # farthest distance to a corner
    # Lip(psi): Frobenius norm of the Jacobian at the cell's smallest tau and largest |mu|
    mu_abs = np.maximum(np.abs(lo[:, 0]), np.abs(hi[:, 0]))
    t_lo = lo[:, 1]
    lip_psi = np.sqrt(1.0 / t_lo**2 + mu_abs**2 / t_lo**4 + 0.25 / t_lo**4)
    # Lip(psi~): units active (inactive) at all four corners are so on the whole cell (affine z)
    pos = z > 0
    on = pos.all(axis=1)
    amb = pos.any(axis=1) & ~on
    onf = on.astype(float)
    J = np.stack(
        [(onf * mlp.W2[k]) @ mlp.W1 for k in range(2)], axis=1
    )  # (m, 2, 2), W2 diag(on) W1
    unit = np.linalg.norm(mlp.W2, axis=0) * np.linalg.norm(mlp.W1, axis=1)  # ||W2[:, j]|| ||W1[j]||
    # spectral norm of each 2 x 2 Jacobian in closed form: sqrt((F + sqrt(F^2 - 4 det^2)) / 2)
    fro2 = np.sum(J * J, axis=(-2, -1))
    det = J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0]
    spec = np.sqrt(0.5 * (fro2 + np.sqrt(np.maximum(fro2**2 - 4.0 * det**2, 0.0))))
    lip_mlp = spec + amb.astype(float) @ unit
    return corner_max, corner_max + r * (lip_psi + lip_mlp)


def delta_mlp_interval(
    mlp: ReLUMLP, box=None, n_grid: int = 51, *, rtol: float = 0.05, max_rounds: int = 40
) -> tuple[float, float]:
    """``delta_MLP = sup_K ||psi(theta) - psi~(theta)||_2`` enclosed in ``[lower, upper]``.

    ``lower`` is the largest value found at a grid node. ``upper`` is certified: every point of a
    rectangular cell lies within the half-diagonal ``r`` of a corner, so on that cell
    ``||f|| <= max_corners ||f|| + r (Lip_cell(psi) + Lip_cell(psi~))`` with ``f = psi - psi~``:

    * ``Lip_cell(psi)``: the Frobenius norm of the Jacobian
      ``[[1/tau, -mu/tau^2], [0, 1/(2 tau^2)]]`` at the cell's smallest ``tau`` and largest ``|mu|``
      (every entry is largest there);
    * ``Lip_cell(psi~)``: ``psi~`` is piecewise linear with Jacobian ``W2 diag(a) W1``, ``a`` the
      active units. A unit whose pre-activation (affine) has one sign at all four corners has that
      activity on the whole cell; the others are bounded one by one:
      ``||W2 diag(a_sure) W1||_2 + sum_ambiguous ||W2[:, j]|| ||W1[j]||``.

    Branch and bound: starting from an ``n_grid x n_grid`` grid of nodes, a cell is dropped once its
    bound is at most ``(1 + rtol) lower``; of the others, those with the largest bounds are split in
    four (at most ``MAX_GRID_CELLS / (64 width)`` a round), for at most ``max_rounds`` rounds.
    ``upper`` is the largest bound of a dropped or remaining cell, so it is always a valid upper
    bound; it is within ``rtol`` of ``lower`` unless the rounds run out.

    Parameters
    ----------
    mlp : ReLUMLP
    box : array_like of shape (2, 2), optional
        The set ``K`` (default ``mlp.box``).
    n_grid : int
        Initial nodes per axis (>= 2).
    rtol : float
        Relative gap at which refinement stops.
    max_rounds : int
        Most refinement rounds (0: the bound of the initial grid).

    Returns
    -------
    lower, upper : float
    """
    if not isinstance(mlp, ReLUMLP):
        raise ArgumentTypeError(f"mlp must be a ReLUMLP, got {type(mlp).__name__}")
    box = _box(mlp.box if box is None else box)
    n_grid = positive_int(n_grid, "n_grid", minimum=2)
    rtol = positive_scalar(rtol, "rtol")
    max_rounds = positive_int(max_rounds, "max_rounds", minimum=0)
    if 4 * (n_grid - 1) ** 2 * mlp.width > MAX_GRID_CELLS:
        raise ValueError(
            f"n_grid={n_grid} with width {mlp.width} needs {4 * (n_grid - 1) ** 2 * mlp.width:.3g}"
            f" values, above MAX_GRID_CELLS={MAX_GRID_CELLS:.0e}"
        )
    mu_ax, tau_ax = _grid(box, n_grid)
    M_lo, T_lo = np.meshgrid(mu_ax[:-1], tau_ax[:-1], indexing="ij")
    M_hi, T_hi = np.meshgrid(mu_ax[1:], tau_ax[1:], indexing="ij")
    lo = np.stack([M_lo.ravel(), T_lo.ravel()], axis=1)  # (m, 2) cell corners (mu_lo, tau_lo)
    hi = np.stack([M_hi.ravel(), T_hi.ravel()], axis=1)
    found, up = _cell_bounds(mlp, lo, hi)
    lower, upper_dropped = float(found.max()), 0.0
    budget = max(1, MAX_GRID_CELLS // (64 * mlp.width))  # cells split per round
    for _ in range(max_rounds):
        keep = up > (1.0 + rtol) * lower
        if np.any(~keep):
            upper_dropped = max(upper_dropped, float(up[~keep].max()))
        lo, hi, up = lo[keep], hi[keep], up[keep]
        if lo.shape[0] == 0:
            break
        split = np.zeros(lo.shape[0], dtype=bool)  # best first: the cells with the largest bounds
        split[np.argsort(up)[::-1][:budget]] = True
        pl, ph = lo[split], hi[split]
        mid = 0.5 * (pl + ph)  # split each chosen cell in four
        cl = np.concatenate(
            [pl, np.stack([mid[:, 0], pl[:, 1]], 1), np.stack([pl[:, 0], mid[:, 1]], 1), mid]
        )
        ch = np.concatenate(
            [mid, np.stack([ph[:, 0], mid[:, 1]], 1), np.stack([mid[:, 0], ph[:, 1]], 1), ph]
        )
        found, cu = _cell_bounds(mlp, cl, ch)
        lower = max(lower, float(found.max()))
        lo, hi, up = (
            np.concatenate([lo[~split], cl]),
            np.concatenate([hi[~split], ch]),
            np.concatenate([up[~split], cu]),
        )
    upper = max(upper_dropped, float(up.max()) if up.size else 0.0)
    return lower, upper


def delta_mlp(mlp: ReLUMLP, box=None, n_grid: int = 51) -> float:
    """Certified upper bound on ``delta_MLP = sup_K ||psi - psi~||_2`` (the ``upper`` of
    :func:`delta_mlp_interval`), so that the ``delta_MLP`` term of thm:PPD convergence is an
    upper bound and not a grid estimate."""
    return delta_mlp_interval(mlp, box, n_grid)[1]
