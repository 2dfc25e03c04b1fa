"""The solver layers of the PFN transformer: eqn:l attn with mask ``M_ij = 1{i <= n}`` and the skip
term ``S^(l) Z^(l)``, ``L-1`` of them (thm:TFdoPPD; TF^pr of sec:generalization).

:func:`solver_layers` runs them on the two channels a solver layer writes (rows ``f, g``) from the
context's ``(y, k)`` rows, as :class:`~pfntheory.nn.model.PFNTransformer`'s fast forward needs
them: through the fused stack of :mod:`pfntheory.nn.fused` (every layer of one instance in one
C++ loop, one autograd node for all of them) when it is available, else through the eager
per-layer loop below (the reference: :func:`~pfntheory.nn.attention.scaled_kernel_attention` and
:func:`skip` per layer), the same numbers to float round-off (tests/test_fused_attention.py).
"""

from __future__ import annotations

import torch

from . import fused as _fused
from .attention import scaled_kernel_attention

#: Nothing exported: internal to :class:`~pfntheory.nn.model.PFNTransformer` (its arguments are
#: checked there; the parity tests drive these functions directly).
__all__: list[str] = []


def skip(H, att, s, S_l, normalised: bool):
    """``Z + Attn + S Z`` on the (f, g) rows (B, T, 2); TF^pr: ``S Z / s_{x_j}`` (eqn:l attn)."""
    if normalised:
        return H + att + H * S_l / s.unsqueeze(-1)
    return torch.addcmul(H + att, H, S_l)


def solver_layers(xa, R, scales, V, S, score: str, normalised: bool, budget: int):
    """The ``L-1`` solver layers from ``H = 0`` (rows f, g): returns ``H`` (B, T, 2).

    Parameters
    ----------
    xa : Tensor of shape (B, T, d)
        Token inputs (the ``n`` context points, then the query; no gradient).
    R : Tensor of shape (B, n, 2)
        The context's ``(y, k)`` rows.
    scales : Tensor of shape (L-1, d)
        Diagonal of ``K^(l) = Q^(l)`` per solver layer.
    V : Tensor of shape (L-1, 4)
        ``V_fy, V_ff, V_gk, V_gg`` per layer.
    S : Tensor of shape (L-1, 2)
        ``S_ff, S_gg`` per layer.
    score : {'rbf', 'softmax'}
    normalised : bool
        TF^pr.
    budget : int
        Bytes of kernels the eager path may keep for the backward pass (first layers first); the
        others are recomputed there. The fused stack keeps none.
    """
    if _fused.stack_supports(xa, scales, R, V, S, score):
        return _fused.solver_stack(xa, scales, R, V, S, score == "rbf", normalised)
    B, T, _ = xa.shape
    n = R.shape[1]
    H = xa.new_zeros(B, T, 2)
    for layer in range(scales.shape[0]):
        v, S_l = V[layer], S[layer]
        # (V z_i)_{f,g} = (V_fy y_i + V_ff f_i, V_gk k_i + V_gg g_i) for the keys i <= n
        vals = torch.addcmul(R * v[0::2], H[:, :n], v[1::2])  # (B, n, 2)
        size = B * T * n * xa.element_size()
        keep = size <= budget  # keep P for backward
        budget -= size if keep else 0
        att, s = scaled_kernel_attention(
            xa, scales[layer], vals, score, normalised, save_kernel=keep
        )
        H = skip(H, att, s, S_l, normalised)
    return H
