"""The hand-set weights of thm:TFdoPPD loaded into the PyTorch transformer: the NumPy construction
(:func:`pfntheory.maths.construction.handset_weights`) checked against the sparsity pattern of
supp-eqn:weights and copied into a :class:`~pfntheory.nn.model.PFNTransformer`."""

from __future__ import annotations

import numpy as np
import torch

from pfntheory.base._checks import ArgumentTypeError, as_float_array, keys

from .model import PFNTransformer

__all__ = ["load_handset"]


def _layers(obj, name: str) -> list[np.ndarray]:
    arr = getattr(obj, name) if not isinstance(obj, dict) else obj[name]
    if isinstance(arr, (str, bytes, dict)) or not hasattr(arr, "__iter__"):
        raise ArgumentTypeError(f"weights.{name} must be a sequence of arrays, got {arr!r:.60}")
    return [as_float_array(a, f"weights.{name}[{i}]") for i, a in enumerate(arr)]


def _arrays(weights, d: int, L: int) -> tuple[list, list, list, list, np.ndarray]:
    """``V, K, Q, S`` (L arrays of shape (d+4, d+4) each; ``S^(0) = 0`` added when only the solver
    layers' are given) and ``W`` (2, d+4), shapes checked."""
    if isinstance(weights, dict):
        keys("V", "K", "Q", "S", "W")(weights, "weights")
    elif not all(hasattr(weights, nm) for nm in ("V", "K", "Q", "S", "W")):
        raise ArgumentTypeError(
            "weights must be a pfntheory.maths.construction.HandsetWeights or a dict with V, K, Q, "
            "S "
            f"and W, got {type(weights).__name__}"
        )
    D = d + 4
    V, K, Q, S = (_layers(weights, nm) for nm in ("V", "K", "Q", "S"))
    W = as_float_array(weights["W"] if isinstance(weights, dict) else weights.W, "weights.W")
    if len(S) == L - 1:
        S = [np.zeros((D, D))] + S
    for nm, arr in (("V", V), ("K", K), ("Q", Q), ("S", S)):
        if len(arr) != L or any(a.shape != (D, D) for a in arr):
            raise ValueError(
                f"weights.{nm} must hold L = {L} arrays of shape {(D, D)}, got "
                f"{len(arr)} of shapes {sorted({a.shape for a in arr})}"
            )
    if W.shape != (2, D):
        raise ValueError(f"weights.W must have shape {(2, D)}, got {W.shape}")
    return V, K, Q, S, W


def _scales(K: list, Q: list, d: int) -> np.ndarray:
    """The diagonals ``scale_l`` of ``K^(l) = Q^(l) = diag(scale_l, 0_4)``, shape (L, d)."""
    scale = np.zeros((len(K), d))
    for layer, (Kl, Ql) in enumerate(zip(K, Q, strict=True)):
        if not np.array_equal(Kl, Ql):
            raise ValueError(f"weights: K^({layer}) != Q^({layer}); the model ties K = Q")
        diag = np.diag(Kl)
        if not np.array_equal(Kl, np.diag(diag)) or np.any(diag[d:] != 0):
            raise ValueError(f"weights: K^({layer}) must be diag(scale, 0_4)")
        scale[layer] = diag[:d]
    return scale


def _outside(A: np.ndarray, allowed: set, nm: str) -> None:
    mask = np.ones(A.shape, dtype=bool)
    for ij in allowed:
        mask[ij] = False
    if np.any(A[mask] != 0):
        raise ValueError(f"weights: {nm} has non-zero entries outside supp-eqn:weights")


def _coefficients(V: list, S: list, W: np.ndarray, d: int) -> tuple:
    """The non-zero entries of supp-eqn:weights, refusing any other: ``amp = V^(0)_{k,y}``,
    ``Vc`` (L-1, 4), ``Sc`` (L-1, 2), ``Wc`` (4,) (as ``PFNTransformer.coefficients``)."""
    y, k, f, g = d, d + 1, d + 2, d + 3
    _outside(V[0], {(k, y)}, "V^(0)")
    _outside(S[0], set(), "S^(0)")
    for layer in range(1, len(V)):
        _outside(V[layer], {(f, y), (f, f), (g, k), (g, g)}, f"V^({layer})")
        _outside(S[layer], {(f, f), (g, g)}, f"S^({layer})")
    _outside(W, {(0, f), (1, y), (1, k), (1, g)}, "W")
    Vc = np.array([[v[f, y], v[f, f], v[g, k], v[g, g]] for v in V[1:]]).reshape(-1, 4)
    Sc = np.array([[s[f, f], s[g, g]] for s in S[1:]]).reshape(-1, 2)
    Wc = np.array([W[0, f], W[1, y], W[1, k], W[1, g]])
    return V[0][k, y], Vc, Sc, Wc


def _set(param: torch.Tensor, value) -> None:
    with torch.no_grad():
        param.copy_(torch.as_tensor(np.asarray(value), dtype=param.dtype).reshape(param.shape))


def _theory_steps(model: PFNTransformer, amp, Vc, Sc, Wc) -> tuple:
    """``(sigma^2, eta, eta')`` of theory-mode weights (``theory`` and ``theory_shared``):
    ``V = eta (1, -1, 1, -1)``, ``S = -eta' sigma^2 (1, 1)``, ``W = (1, sigma^2, 1, -1)``
    (supp-eqn:weights)."""
    cfg = model.config
    noise_var = Wc[1]
    if not (Wc[0] == 1 and Wc[2] == 1 and Wc[3] == -1 and noise_var > 0):
        raise ValueError("weights: W is not the readout of supp-eqn:weights (1, sigma^2, 1, -1)")
    eta = Vc[:, 0]
    if not (
        np.array_equal(Vc[:, 2], eta)
        and np.array_equal(Vc[:, 1], -eta)
        and np.array_equal(Vc[:, 3], -eta)
        and np.array_equal(Sc[:, 0], Sc[:, 1])
    ):
        raise ValueError("weights: V, S do not have the theory structure of supp-eqn:weights")
    eta_d = -Sc[:, 0] / noise_var
    separate = cfg.score == "rbf" or cfg.mode == "theory_shared"  # eta' learned apart from eta
    if not separate and not np.allclose(eta_d, eta, rtol=1e-12, atol=0):
        raise ValueError(
            "weights: separate drift / attention step sizes need the rbf score in theory mode"
        )
    if cfg.score != "rbf" and amp != cfg.amp_init:
        raise ValueError(
            f"weights: V^(0)_(k,y) = {amp} but theory mode fixes it at amp_init = "
            f"{cfg.amp_init} for the {cfg.score} score"
        )
    return noise_var, eta, eta_d


def load_handset(model: PFNTransformer, weights) -> PFNTransformer:
    """Copy the NumPy hand-set weights of thm:TFdoPPD into ``model`` (in place; returns it).

    Parameters
    ----------
    model : PFNTransformer
        Target, mode ``theory``, ``theory_shared`` (every ``K^(l)`` equal) or ``learnable``; its
        ``d`` and ``L`` must match.
    weights : HandsetWeights or dict
        From :func:`pfntheory.maths.construction.handset_weights`: per-layer ``V, K, Q, S`` (L
        arrays of shape (d+4, d+4); ``S`` may have ``L-1`` entries for the solver layers only) and
        ``W`` (2, d+4).

    Raises
    ------
    ValueError
        Naming ``weights`` when a shape differs, ``K != Q``, ``K`` is not ``diag(scale, 0_4)``, a
        non-zero entry falls outside the model's sparsity pattern (supp-eqn:weights), or (theory
        mode) the entries do not have the theory structure (tied step sizes, fixed ``W``).
    """
    if not isinstance(model, PFNTransformer):
        raise ArgumentTypeError(f"model must be a PFNTransformer, got {type(model).__name__}")
    cfg, d = model.config, model.d
    V, K, Q, S, W = _arrays(weights, d, cfg.L)
    scale = _scales(K, Q, d)
    amp, Vc, Sc, Wc = _coefficients(V, S, W, d)
    if cfg.one_scale and not np.all(scale == scale[0]):
        raise ValueError(
            "weights: K^(l) differ across layers but the model shares one K = Q "
            f"(mode={cfg.mode!r}, shared_scale={cfg.shared_scale})"
        )
    steps = _theory_steps(model, amp, Vc, Sc, Wc) if cfg.mode != "learnable" else None
    _set(model.scale, scale[:1] if cfg.one_scale else scale)
    _set(model.amp, amp)
    if steps is None:  # learnable
        _set(model.W, Wc)
        _set(model.V, Vc)
        _set(model.S, Sc)
        return model
    noise_var, eta, eta_d = steps
    if cfg.mode == "theory_shared":  # sigma learned: W_{2,y} = sigma^2 is its square
        _set(model.noise_std, np.sqrt(noise_var))
    else:
        _set(model.W, Wc)
        _set(model.noise_var, noise_var)
    _set(model.eta, eta)
    if cfg.score == "rbf" or cfg.mode == "theory_shared":
        _set(model.eta_drift, eta_d)
    return model
