"""The hand-set transformer of thm:TFdoPPD and its normalised variant TF^pr (float64 NumPy).

The explicit MLP head lives in :mod:`pfntheory.maths.mlp`, the composed bound of thm:PPD convergence
in :mod:`pfntheory.maths.ppd_bound`.

Implements
----------
* thm:TFdoPPD, supp-eqn:weights, eqn:1st attn, eqn:l attn, eqn:std attn: the token layout ``Z^(0)``
  (``d + 4`` rows), the masks ``M^(0)_{ij} = 1{i > n}`` and ``M_{ij} = 1{i <= n}``, the weights
  ``K = Q, V^(l), S^(l), W`` and the literal forward pass with dense matrix products.
* sec:generalization (``Attn^na``, ``TF^pr``, eqn:recursion prec): normalised attention in the
  solver layers, with the skip term ``S Z`` scaled token-wise by ``1 / s_{x_j}``. The first layer
  stays unnormalised: it has a single key per query, so normalising it makes every weight 1 and
  turns the ``k_x`` row into a constant (docs/design.md, "Known ambiguities").
* "MLP for natural parameter conversion" (sec. From Moments to PPD) and supp-sec:thrm4.1: an
  explicit one-hidden-layer ReLU MLP ``psi~`` approximating ``psi(mu, tau) = (mu/tau, -1/(2 tau))``
  on a box, built deterministically (fixed ReLU ridge features + least-squares readout), its
  measured ``delta_MLP`` and a Lipschitz bound ``L_psi~``.
* supp-sec:thrm4.1 (proof of thm:PPD convergence): the logits ``l1 = Xi psi~(mu_L, tau_L)``,
  ``l2 = Xi psi~(mu, tau)``, ``l3 = Xi psi(mu, tau)`` and every term of the bound next to the
  measured ``TV(p_n, q_theta)``.

Index conventions (0-based token rows) and how the kernels are folded into the weights:
docs/exact-side.md, "The hand-set transformer".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    choice,
    positive_int,
    positive_scalar,
)

from . import richardson as rich
from .kernels import ARDRBFKernel, LinearKernel, RBFKernel

__all__ = [
    "HandsetWeights",
    "handset_weights",
    "build_Z0",
    "attention_scores",
    "tf_forward",
    "expected_rows",
    "ROW_Y",
    "ROW_KX",
    "ROW_F",
    "ROW_G",
    "MAX_ELEMENTS",
]

SCORES = ("rbf", "linear")
#: Largest number of float64 values one array of the construction may hold (1e8 values, 800 MB):
#: the per-layer weights ``L (d+4)^2``, the score tensor ``batch (d+4) (n+1)^2`` of a layer and a
#: returned path ``(L+1) batch (d+4) (n+1)``. Larger requests are refused before allocating.
MAX_ELEMENTS = 10**8


def _check_size(count: int, what: str, name: str) -> None:
    if count > MAX_ELEMENTS:
        raise ValueError(
            f"{name}: {what} would hold {count:.3g} values, above MAX_ELEMENTS={MAX_ELEMENTS:.0e}"
        )


def ROW_Y(d: int) -> int:
    """0-based row of the labels (paper row ``d+1``)."""
    return positive_int(d, "d")


def ROW_KX(d: int) -> int:
    """0-based row of ``k_x`` written by the first layer (paper row ``d+2``)."""
    return positive_int(d, "d") + 1


def ROW_F(d: int) -> int:
    """0-based row of the mean recursion ``f`` (paper row ``d+3``)."""
    return positive_int(d, "d") + 2


def ROW_G(d: int) -> int:
    """0-based row of the variance recursion ``g`` (paper row ``d+4``)."""
    return positive_int(d, "d") + 3


# --------------------------------------------------------------------------------------------------
# supp-eqn:weights
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HandsetWeights:
    """The parameters ``vartheta`` of thm:TFdoPPD as given in supp-eqn:weights.

    Attributes
    ----------
    d : int
        Input dimension; tokens have ``d + 4`` rows.
    L : int
        Number of attention layers (layer 0 = eqn:1st attn, layers 1..L-1 = eqn:l attn).
    eta : tuple of float, length L - 1
        Step sizes ``eta^(1), ..., eta^(L-1)`` of the solver layers.
    noise_var : float
        ``sigma^2``.
    score : {"rbf", "linear"}
        Attention score ``kappa`` of eqn:std attn (unit RBF or dot product).
    normalised : bool
        Whether the solver weights are set for TF^pr (``Attn^na`` + skip scaled by ``1/s_{x_j}``).
    alpha2 : float
        Kernel amplitude ``alpha^2`` folded into ``V`` (1 for the linear kernel).
    K, Q, V, S : ndarray of shape (L, d + 4, d + 4)
        Per-layer matrices; ``S[0]`` is zero (eqn:1st attn has no skip term).
    W : ndarray of shape (2, d + 4)
        Readout of the query column.
    kernel : object
        The kernel the weights encode (for reference).
    """

    d: int
    L: int
    eta: tuple[float, ...]
    noise_var: float
    score: str
    normalised: bool
    alpha2: float
    K: np.ndarray = field(repr=False)
    Q: np.ndarray = field(repr=False)
    V: np.ndarray = field(repr=False)
    S: np.ndarray = field(repr=False)
    W: np.ndarray = field(repr=False)
    kernel: object = None

    @property
    def d_token(self) -> int:
        return self.d + 4

    def masks(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``M^(0)_{ij} = 1{i > n}`` and ``M_{ij} = 1{i <= n}`` (1-based; thm:TFdoPPD).

        Returns
        -------
        M0, M : ndarray of shape (n + 1, n + 1)
        """
        n = positive_int(n, "n")
        i = np.arange(1, n + 2)[:, None] * np.ones((1, n + 1))
        return (i > n).astype(float), (i <= n).astype(float)


def _kernel_geometry(kernel, d: int) -> tuple[str, np.ndarray, float]:
    """Score name, diagonal of ``K = Q`` on the x rows, and ``alpha^2``."""
    if isinstance(kernel, RBFKernel):
        return "rbf", np.full(d, 1.0 / kernel.lengthscale), kernel.alpha**2
    if isinstance(kernel, ARDRBFKernel):
        ls = np.asarray(kernel.lengthscales)
        if ls.shape != (d,):
            raise ValueError(f"kernel has {ls.size} lengthscales, expected d={d}")
        return "rbf", 1.0 / ls, kernel.alpha**2
    if isinstance(kernel, LinearKernel):
        if kernel.d != d:
            raise ValueError(f"kernel has d={kernel.d}, expected d={d}")
        return "linear", np.sqrt(np.asarray(kernel.sigma_diag)), 1.0
    raise ArgumentTypeError(
        f"kernel must be LinearKernel, RBFKernel or ARDRBFKernel, got {type(kernel).__name__}"
    )


def _layer_steps(eta, L: int) -> tuple[float, ...]:
    e = as_float_array(eta, "eta", ndim=(0, 1))
    if e.ndim == 0:
        e = np.full(L - 1, float(e))
    elif e.shape != (L - 1,):
        raise ValueError(
            f"eta must be a scalar or have length L-1={L - 1} (one per solver layer), "
            f"got shape {e.shape}"
        )
    if np.any(e <= 0):
        raise ValueError(f"eta must be positive, got min {e.min()}")
    return tuple(float(v) for v in e)


def solver_step_sizes(eta, alpha2, normalised: bool):
    """``(eta_V, eta_S)``: the step of solver layer ``l`` as it enters ``V`` and ``S`` of
    supp-eqn:weights, ``V^(l)_{f,y} = V^(l)_{g,k} = eta_V``, ``V^(l)_{f,f} = V^(l)_{g,g} = -eta_V``,
    ``S^(l)_{f,f} = S^(l)_{g,g} = -eta_S sigma^2``, for the kernel amplitude ``alpha2``
    (``alpha^2``, folded into ``V^(0)_{k,y}``). TF (``normalised=False``): ``(eta alpha^2, eta)``;
    TF^pr: the normalised weights ``kappa/s`` are free of ``alpha``, so ``(eta, eta / alpha^2)``
    and the skip scaled by ``1/s_unit = alpha^2/s_x`` gives eqn:recursion prec's
    ``-eta sigma^2 / s_x``.

    The one initialisation of the solver layers: :func:`handset_weights` (NumPy),
    :class:`pfntheory.nn.model.PFNTransformer` and :class:`pfntheory.nn.multihead_model.MixturePFN`
    (torch; ``eta``, ``alpha2`` floats or tensors, element-wise) all take their steps here.
    """
    return (eta, eta / alpha2) if normalised else (eta * alpha2, eta)


def handset_weights(
    d: int, L: int, eta, noise_var: float, kernel, *, normalised: bool = False
) -> HandsetWeights:
    """Build the weights of supp-eqn:weights for ``L`` layers.

    Parameters
    ----------
    d : int
        Input dimension.
    L : int
        Depth (>= 1). Layer 0 writes ``k_x``; layers 1..L-1 perform Richardson steps.
    eta : float or sequence of length L - 1
        Solver step sizes ``eta^(1..L-1)`` (> 0). With ``normalised=True`` this is the step of the
        preconditioned recursion eqn:recursion prec.
    noise_var : float
        ``sigma^2 > 0``.
    kernel : LinearKernel, RBFKernel or ARDRBFKernel
        The GP kernel to encode (see the module docstring for how it is folded in).
    normalised : bool
        Set the solver weights for TF^pr. The normalised weights ``kappa/s`` are free of ``alpha``,
        so ``V`` carries ``eta`` and ``S`` carries ``-eta sigma^2 / alpha^2``; then the skip scaled
        by ``1/s_unit = alpha^2/s_x`` gives the ``-eta sigma^2 / s_x`` of eqn:recursion prec.

    Returns
    -------
    HandsetWeights
    """
    d = positive_int(d, "d")
    L = positive_int(L, "L")
    noise_var = positive_scalar(noise_var, "noise_var")
    _check_size(L * (d + 4) ** 2, "the per-layer weights L (d+4)^2", "L")
    steps = _layer_steps(eta, L)
    score, kq, alpha2 = _kernel_geometry(kernel, d)
    if normalised and score != "rbf":
        raise ValueError(
            "normalised=True needs a strictly positive score (RBF kernel); "
            "TF^pr is defined for such kernels only (sec:generalization)"
        )
    dt = d + 4
    yr, kr, fr, gr = ROW_Y(d), ROW_KX(d), ROW_F(d), ROW_G(d)
    Kl = np.zeros((dt, dt))
    Kl[np.arange(d), np.arange(d)] = (
        kq  # supp-eqn:weights: K = Q = diag(1_d, 0_4) (kernel folded in)
    )
    K = np.repeat(Kl[None], L, axis=0)
    V = np.zeros((L, dt, dt))
    S = np.zeros((L, dt, dt))
    V[0, kr, yr] = alpha2  # supp-eqn:weights: V^(0)_{d+2,d+1} = 1 (times alpha^2)
    for l in range(1, L):
        v, eta_s = solver_step_sizes(steps[l - 1], alpha2, normalised)
        V[l, fr, yr] = V[l, gr, kr] = v  # V^(l)_{d+3,d+1} = V^(l)_{d+4,d+2} = eta^(l)
        V[l, fr, fr] = V[l, gr, gr] = -v  # V^(l)_{d+3,d+3} = V^(l)_{d+4,d+4} = -eta^(l)
        sk = -eta_s * noise_var
        S[l, fr, fr] = S[l, gr, gr] = sk  # S^(l)_{d+3,d+3} = S^(l)_{d+4,d+4} = -eta^(l) sigma^2
    W = np.zeros((2, dt))
    W[0, fr] = 1.0  # mu_L = row d+3
    W[1, yr], W[1, kr], W[1, gr] = noise_var, 1.0, -1.0  # tau_L = sigma^2 * 1 + kappa(x,x) - g
    return HandsetWeights(
        d=d,
        L=L,
        eta=steps,
        noise_var=noise_var,
        score=score,
        normalised=bool(normalised),
        alpha2=float(alpha2),
        K=K,
        Q=K.copy(),
        V=V,
        S=S,
        W=W,
        kernel=kernel,
    )


# --------------------------------------------------------------------------------------------------
# forward pass (eqn:1st attn, eqn:l attn)
# --------------------------------------------------------------------------------------------------


def build_Z0(X, Y, x_query) -> np.ndarray:
    """Input tokens of thm:TFdoPPD: ``[[X^T, x], [Y^T, 1], [0_{3 x n}, 0_3]]``.

    Parameters
    ----------
    X : ndarray of shape (..., n, d)
    Y : ndarray of shape (..., n)
    x_query : ndarray of shape (..., d)

    Returns
    -------
    Z0 : ndarray of shape (..., d + 4, n + 1)
    """
    X = as_float_array(X, "X", min_ndim=2)
    Y = as_float_array(Y, "Y", min_ndim=1)
    x_query = as_float_array(x_query, "x_query", min_ndim=1)
    *batch, n, d = X.shape
    if n == 0:
        raise ValueError("X must hold at least one context point (n = 0 given)")
    if d == 0:
        raise ValueError("X must have at least one feature (d = 0 given)")
    if Y.shape != X.shape[:-1]:
        raise ValueError(f"Y must have shape {X.shape[:-1]} to match X {X.shape}, got {Y.shape}")
    if x_query.shape != tuple(batch) + (d,):
        raise ValueError(f"x_query must have shape {tuple(batch) + (d,)}, got {x_query.shape}")
    Z = np.zeros(tuple(batch) + (d + 4, n + 1))
    Z[..., :d, :n] = np.swapaxes(X, -1, -2)
    Z[..., :d, n] = x_query
    Z[..., d, :n] = Y
    Z[..., d, n] = 1.0
    return Z


def attention_scores(KZ: np.ndarray, QZ: np.ndarray, score: str) -> np.ndarray:
    """``[h(KZ, QZ)]_{ij} = kappa(K z_i, Q z_j)`` before masking (eqn:std attn).

    Parameters
    ----------
    KZ, QZ : ndarray of shape (..., d', N)
    score : {"rbf", "linear"}
        ``exp(-||a - b||^2 / 2)`` or ``a^T b``.

    Returns
    -------
    H : ndarray of shape (..., N, N)
    """
    choice(score, "score", SCORES)
    KZ = as_float_array(KZ, "KZ", min_ndim=2)
    QZ = as_float_array(QZ, "QZ", min_ndim=2)
    if KZ.shape[-2] != QZ.shape[-2]:
        raise ValueError(
            f"KZ and QZ must have the same number of rows, got {KZ.shape} and {QZ.shape}"
        )
    if score == "linear":
        return np.swapaxes(KZ, -1, -2) @ QZ
    diff = (
        KZ[..., :, :, None] - QZ[..., :, None, :]
    )  # (..., d', N, N), differences: no cancellation
    return np.exp(-0.5 * np.sum(diff * diff, axis=-3))


def _layer(Z, K, Q, V, S, Mask, score, normalised: bool, scale_skip: bool):
    H = attention_scores(K @ Z, Q @ Z, score) * Mask  # (..., N, N), [h]_{ij} M_{ij}
    skip = S @ Z  # (..., d', N)
    if normalised:
        s = np.sum(H, axis=-2)  # (..., N): s_j = sum_i kappa(K z_i, Q z_j) M_ij
        H = H / s[..., None, :]  # Attn^na (sec:generalization)
        if scale_skip:
            skip = skip / s[..., None, :]  # token-wise 1/s_{x_j} on the skip term (TF^pr)
    return Z + V @ Z @ H + skip  # eqn:std attn: V Z h(KZ, QZ) (+ S Z)


def tf_forward(
    weights: HandsetWeights,
    X,
    Y,
    x_query,
    score: str | None = None,
    normalised: bool | None = None,
    return_path: bool = False,
    *,
    normalise_first_layer: bool = False,
    scale_skip: bool = True,
):
    """Literal forward pass of ``TF_{vartheta,L}`` (thm:TFdoPPD) or ``TF^pr`` (sec:generalization).

    Parameters
    ----------
    weights : HandsetWeights
    X : ndarray of shape (..., n, d)
    Y : ndarray of shape (..., n)
    x_query : ndarray of shape (..., d)
    score : {"rbf", "linear"}, optional
        Attention score; defaults to ``weights.score``.
    normalised : bool, optional
        Use ``Attn^na`` and the ``1/s_{x_j}``-scaled skip in the solver layers (TF^pr); defaults to
        ``weights.normalised``.
    return_path : bool
        Also return ``Z^(0), ..., Z^(L)``.
    normalise_first_layer, scale_skip : bool
        Deliberately wrong variants, for the fault-injection checks only: normalise eqn:1st attn as
        well, or drop the ``1/s_{x_j}`` on the skip term of TF^pr.

    Returns
    -------
    mu_L, tau_L : ndarray of shape (...)
        ``W [Z^(L)]_{:, n+1}``.
    path : ndarray of shape (L + 1, ..., d + 4, n + 1), only if ``return_path``
    """
    if not isinstance(weights, HandsetWeights):
        raise ValueError(f"weights must be HandsetWeights, got {type(weights).__name__}")
    score = weights.score if score is None else choice(score, "score", SCORES)
    normalised = weights.normalised if normalised is None else bool(normalised)
    if (normalised or normalise_first_layer) and score != "rbf":
        raise ValueError("normalised attention needs a strictly positive score ('rbf')")
    shape = np.shape(X)
    if len(shape) >= 2:  # sizes checked before anything is allocated (build_Z0 checks the rest)
        z_size = int(np.prod(shape[:-2], dtype=float)) * weights.d_token * (shape[-2] + 1)
        _check_size(z_size * (shape[-2] + 1), "the attention scores batch (d+4) (n+1)^2", "X")
        if return_path:
            _check_size((weights.L + 1) * z_size, "the path (L+1) batch (d+4) (n+1)", "return_path")
    Z = build_Z0(X, Y, x_query)
    if Z.shape[-2] != weights.d_token:
        raise ValueError(f"X has d={Z.shape[-2] - 4} features, weights expect d={weights.d}")
    n = Z.shape[-1] - 1
    M0, M = weights.masks(n)
    path = [Z]  # Z^(0), ..., Z^(L), kept only if return_path
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # a divergent step size may overflow: reported as inf/nan
        for l in range(weights.L):
            if l == 0:  # eqn:1st attn: mask M^(0), no skip term
                Z = _layer(
                    Z,
                    weights.K[0],
                    weights.Q[0],
                    weights.V[0],
                    weights.S[0],
                    M0,
                    score,
                    normalise_first_layer,
                    False,
                )
            else:  # eqn:l attn: mask M, skip S^(l)
                Z = _layer(
                    Z,
                    weights.K[l],
                    weights.Q[l],
                    weights.V[l],
                    weights.S[l],
                    M,
                    score,
                    normalised,
                    scale_skip,
                )
            if return_path:
                path.append(Z)
        out = Z[..., :, n] @ weights.W.T  # TF = W [Z^(L)]_{:, n+1}, (..., 2)
    mu_L, tau_L = out[..., 0], out[..., 1]
    if return_path:
        return mu_L, tau_L, np.stack(path)
    return mu_L, tau_L


def expected_rows(
    kernel,
    X,
    Y,
    x_query,
    noise_var: float,
    eta,
    L: int,
    *,
    normalised: bool = False,
    normalise_first: bool = False,
):
    """Rows ``d+3`` and ``d+4`` of ``Z^(0..L)`` predicted by the Richardson recursions.

    Row ``d+3`` of ``Z^(l)`` (``l >= 1``) is ``f^(l-1)`` (eqn:recur mean, ``v = Y``) and row ``d+4``
    is ``g^(l-1)`` (eqn:recur var, ``v = k_x``) at the ``n`` context points and the query; with
    ``normalised=True`` the preconditioned recursion eqn:recursion prec. Computed with
    :mod:`pfntheory.maths.richardson` from the kernel's own Gram matrix, independently of the
    attention code. ``normalise_first=True`` (an RBF kernel): the first layer normalised too, so
    its row holds ``alpha^2`` for every token and the variance recursion runs on
    ``v = alpha^2 1`` (:mod:`pfntheory.maths.first_layer`).

    Parameters
    ----------
    kernel : kernel of :mod:`pfntheory.maths.kernels`
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n,)
    x_query : ndarray of shape (d,)
    noise_var : float
    eta : float or sequence of length L - 1
    L : int

    Returns
    -------
    F, Gv : ndarray of shape (L + 1, n + 1)
        Expected rows ``d+3`` and ``d+4``; column ``n`` is the query.
    """
    if not isinstance(kernel, (RBFKernel, ARDRBFKernel, LinearKernel)):
        raise ArgumentTypeError(
            f"kernel must be a LinearKernel, RBFKernel or ARDRBFKernel, got {kernel!r}"
        )
    Z0 = build_Z0(
        as_float_array(X, "X", ndim=2),
        as_float_array(Y, "Y", ndim=1),
        as_float_array(x_query, "x_query", ndim=1),
    )  # shapes, n >= 1, d >= 1
    X, Y, x_query = np.asarray(X, float), np.asarray(Y, float), np.asarray(x_query, float)
    L = positive_int(L, "L")
    _check_size((L + 1) * Z0.shape[-1] * 2, "the rows (L+1) (n+1) x 2", "L")
    steps = _layer_steps(eta, L)
    n = X.shape[0]
    G = kernel(X)  # (n, n)
    k_x = kernel(X, x_query[None, :])[:, 0]  # (n,)
    v_var = k_x  # eqn:recur var: v = k_x, the row eqn:1st attn writes
    if normalise_first:
        score, _, alpha2 = _kernel_geometry(kernel, X.shape[1])
        if score != "rbf":
            raise ValueError("normalise_first=True needs a strictly positive score (RBF kernel)")
        v_var = np.full(n, alpha2)  # the normalised first layer's row: V^(0)_{k,y} * 1
    F = np.zeros((L + 1, n + 1))
    Gv = np.zeros((L + 1, n + 1))
    if L == 1:
        return F, Gv
    tr, te = (
        (rich.krr_training_recursion_prec, rich.krr_testing_recursion_prec)
        if normalised
        else (rich.krr_training_recursion, rich.krr_testing_recursion)
    )
    for out, v in ((F, Y), (Gv, v_var)):
        out[1:, :n] = tr(G, v, noise_var, steps, L - 1)  # (L, n): iterates 0..L-1
        out[1:, n] = te(G, k_x, v, noise_var, steps, L - 1)  # (L,)
    return F, Gv
