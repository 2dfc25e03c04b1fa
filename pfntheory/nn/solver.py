"""The solver layers of the PFN transformer: eqn:l attn with mask ``M_ij = 1{i <= n}`` and the skip
term ``S^(l) Z^(l)``, ``L-1`` of them (thm:TFdoPPD; TF^pr of sec:generalization).

:func:`solver_recursion` is the one torch function that holds the layer recursion

    vals_i = V^(l) z_i (the keys i <= n),  Z <- Z + Attn(vals) + S^(l) Z  (TF^pr: S^(l) Z / s_x),

and every torch forward calls it: the fast model (:class:`~pfntheory.nn.model.PFNTransformer`: per
layer kernel, one shared kernel, the linear score in feature space), its dense parity reference
(the literal ``(d+4) x (d+4)`` matrices), the mixture heads (:mod:`pfntheory.nn.multihead_model`)
and the case studies' shared-context forward (:func:`pfntheory.casestudy.pfn.pfn_forward_shared`).
What differs between them is only how a layer's attention is computed, a :class:`LayerAttention`
chosen once per forward (the *strategy*); the fused C++ stack of :mod:`pfntheory.nn.fused` (every
layer of one instance in one loop, one autograd node) sits behind the same call as the strategy's
:meth:`LayerAttention.whole`, the same numbers to float round-off (tests/test_fused_attention.py).

Two forms of the weights: the *channel* form (``R`` given: each written channel ``c`` reads its
own read-only row ``R_c`` and itself, ``vals = R vR + H vH``, ``S`` diagonal; what the fast
forwards use, supp-eqn:weights' sparsity), and the *literal* form (``R`` None: ``V``, ``S`` full
matrices over every channel of the token, the dense reference).
"""

from __future__ import annotations

import functools

import torch
from torch.utils.checkpoint import checkpoint

from . import fused as _fused
from .attention import masked_attention_weights, scaled_kernel_attention

#: Nothing exported: internal to the torch forwards (their arguments are checked there; the parity
#: tests drive these functions directly).
__all__: list[str] = []


def skip(H, att, s, S_l, normalised: bool):
    """The layer update ``Z + Attn + S Z`` on the written channels (..., T, C); TF^pr:
    ``S Z / s_{x_j}`` (eqn:l attn). ``S_l`` (C,) is diagonal (channel form) or (C, C) a full
    matrix (literal form)."""
    if S_l.dim() == 2:  # literal: S^(l) Z with the full matrix
        SH = H @ S_l.T
        return H + att + (SH / s.unsqueeze(-1) if normalised else SH)
    if normalised:
        return H + att + H * S_l / s.unsqueeze(-1)
    return torch.addcmul(H + att, H, S_l)


class LayerAttention:
    """How :func:`solver_recursion` computes one solver layer's attention (the strategy).

    :meth:`__call__` gets the layer index ``l`` (0 for the first solver layer), the values of the
    key tokens and the state, and returns ``(att, s)``: the attention of every token (the shape of
    the state) and the normaliser ``s_x`` (TF^pr) or None. :meth:`values` forms the values (the
    channel form's ``R vR + H vH`` by default); :meth:`whole` may run every layer at once (the
    fused stack) and returns None where it does not apply.
    """

    def values(self, layer: int, R, Hk, vR, vH):
        """``V^(l) z_i`` of the keys: ``R vR + H_k vH`` (channel form), ``H_k V^T`` (literal)."""
        if R is None:
            return Hk @ vH.T
        return torch.addcmul(R * vR, Hk, vH)

    def whole(self, H, R, VR, VH, S):
        """Every layer at once, or None (then the recursion runs layer by layer)."""
        return None

    def __call__(self, layer: int, vals, H):
        raise NotImplementedError


def solver_recursion(
    H,
    R,
    VR,
    VH,
    S,
    attend: LayerAttention,
    normalised: bool,
    *,
    checkpoint_layers: bool = False,
):
    """The ``L-1`` solver layers (eqn:l attn) from the state ``H``; returns the final state.

    Parameters
    ----------
    H : Tensor of shape (..., T, C), or a tuple of such
        The written channels of every token (the keys first). A tuple holds token groups with
        their own channel layout (the case study's queries, each with its own ``g`` channel):
        the values come from the first group's keys, ``attend`` returns one ``(att, s)`` per group
        and ``S`` is a tuple, one per group.
    R : Tensor of shape (..., n, C) or None
        The keys' read-only rows (``y``, ``k_x``), channel form; None: the literal form, whose
        keys are the first group's every token (the mask is the strategy's).
    VR, VH : Tensor of shape (L-1, C), or VR None and VH (L-1, C, C)
        Channel form ``vals = R VR[l] + H VH[l]``; literal form ``vals = H VH[l]^T``.
    S : Tensor of shape (L-1, C) or (L-1, C, C), or a tuple of them (token groups)
    attend : LayerAttention
    normalised : bool
        TF^pr: the skip term divided by ``s_x``.
    checkpoint_layers : bool
        Recompute each layer in the backward pass (torch.utils.checkpoint; the dense reference).
    """
    whole = attend.whole(H, R, VR, VH, S)
    if whole is not None:
        return whole
    grouped = isinstance(H, tuple)
    n = R.shape[-2] if R is not None else (H[0] if grouped else H).shape[-2]

    def layer_step(layer: int, *state):
        keys = state[0][..., :n, :]
        vR = VR[layer] if VR is not None else None
        vals = attend.values(layer, R, keys, vR, VH[layer])
        if not grouped:
            att, s = attend(layer, vals, state[0])
            return (skip(state[0], att, s, S[layer], normalised),)
        out = attend(layer, vals, state)
        return tuple(
            skip(h, att, s, Sg[layer], normalised)
            for h, (att, s), Sg in zip(state, out, S, strict=True)
        )

    state = H if grouped else (H,)
    for layer in range(VH.shape[0]):
        if checkpoint_layers:
            state = checkpoint(functools.partial(layer_step, layer), *state, use_reentrant=False)
        else:
            state = layer_step(layer, *state)
    return state if grouped else state[0]


class KernelPerLayer(LayerAttention):
    """Per-layer kernels ``P_ij = kappa(s_l x_i, s_l x_j)`` (rbf, softmax), every token against the
    ``n`` keys: the fused stack of :mod:`pfntheory.nn.fused` for all layers at once when it applies,
    else :func:`~pfntheory.nn.attention.scaled_kernel_attention` layer by layer (keeping kernels for
    the backward pass within ``budget`` bytes, first layers first)."""

    def __init__(self, xa, scales, score: str, normalised: bool, budget: int, numerics: str):
        self.xa, self.scales, self.score = xa, scales, score
        self.normalised, self.budget, self.numerics = normalised, budget, numerics

    def whole(self, H, R, VR, VH, S):
        xa, scales = self.xa, self.scales
        if not _fused.stack_supports(xa, scales, R, VR, S, self.score):
            return None
        V = torch.stack([VR[:, 0], VH[:, 0], VR[:, 1], VH[:, 1]], -1)  # V_fy V_ff V_gk V_gg
        return _fused.solver_stack(
            xa, scales, R, V, S, self.score == "rbf", self.normalised, self.numerics
        )

    def __call__(self, layer, vals, H):
        xa = self.xa
        B, T, _ = xa.shape
        size = B * T * vals.shape[1] * xa.element_size()
        keep = size <= self.budget  # keep P for backward
        self.budget -= size if keep else 0
        return scaled_kernel_attention(
            xa, self.scales[layer], vals, self.score, self.normalised, save_kernel=keep
        )


class SharedKernel(LayerAttention):
    """One kernel ``P`` (B, n+1, n) for every solver layer (a shared ``K = Q``, or equal per-layer
    scales without autograd)."""

    def __init__(self, P, normalised: bool):
        self.s = P.sum(-1) if normalised else None  # s_j, (B, n+1)
        self.PT = P.transpose(1, 2)  # (B, n, n+1) view

    def __call__(self, layer, vals, H):
        # (P v)^T = v^T P^T: MKL's batched GEMM is ~4x faster with the kernel on the right
        att = torch.bmm(vals.transpose(1, 2).contiguous(), self.PT).transpose(1, 2)  # (B, n+1, 2)
        if self.s is not None:
            att = att / self.s.unsqueeze(-1)  # Attn^na
        return att, self.s


class FeatureSpace(LayerAttention):
    """The linear score in feature space.

    With ``a = x diag(s_l)``: ``sum_i (a_j . a_i) v_i = x_j^T diag(s_l^2) (X^T V)`` and
    ``X^T V = (X^T R) v_(y,k) + (X^T H) v_(f,g)`` (eqn:l attn), so the values are kept as
    ``X^T V`` (:meth:`values`) and each layer costs one ``(d, n) x (n, 2)`` and one
    ``(n+1, d) x (d, 2)`` product per instance, on the data ``x`` (no gradient to it, so autograd
    forms no ``(B, n+1, d)`` gradient), with the scale applied to ``d x 2`` numbers; TF^pr's
    ``s_j = x_j^T diag(s_l^2) X^T 1``. (Channel-leading ``(B, 2, T)`` layouts make the forward
    products 2-4x faster but the backward ones slower: no gain over a step, measured.)
    """

    def __init__(self, xa, scales, normalised: bool):
        self.xa, self.scales, self.normalised = xa, scales, normalised
        self.XR = None

    def values(self, layer, R, Hk, vR, vH):
        if self.XR is None:  # once: the keys and X^T [Y, k]
            n = R.shape[1]
            xk = self.xa[:, :n]  # keys (B, n, d)
            self.xkT = xk.transpose(1, 2)  # (B, d, n)
            self.XR = torch.bmm(self.xkT, R)  # X^T [Y, k], (B, d, 2)
            self.xsum = xk.sum(1) if self.normalised else None  # X^T 1, (B, d)
        return torch.addcmul(self.XR * vR, torch.bmm(self.xkT, Hk), vH)  # X^T V, (B, d, 2)

    def __call__(self, layer, XV, H):
        xa = self.xa
        sq = self.scales[layer] * self.scales[layer]  # diag(K^T Q), (d,)
        att = torch.bmm(xa, XV * sq.unsqueeze(-1))  # (B, n+1, 2)
        s = None
        if self.xsum is not None:
            s = (xa * (self.xsum * sq).unsqueeze(1)).sum(-1)  # s_j, (B, n+1)
            att = att / s.unsqueeze(-1)  # Attn^na
        return att, s


class DenseMasked(LayerAttention):
    """The literal masked attention of eqn:std attn over the full tokens (the dense reference):
    ``Attn = V Z h_{M,kappa}(K Z, K Z)`` with the values ``V Z`` of every token (the mask ``M``
    selects the keys); ``K`` (L-1, D, D)."""

    def __init__(self, K, M, score: str, normalised: bool):
        self.K, self.M, self.score, self.normalised = K, M, score, normalised

    def __call__(self, layer, vals, H):
        K = self.K[layer]
        h, s = masked_attention_weights(
            H.transpose(1, 2), K, K, self.M, self.score, self.normalised
        )
        return (vals.transpose(1, 2) @ h).transpose(1, 2), s  # (V Z h)^T


def solver_layers(
    xa, R, scales, V, S, score: str, normalised: bool, budget: int, numerics: str = "replay"
):
    """The ``L-1`` solver layers from ``H = 0`` (rows f, g) with a kernel per layer: returns ``H``
    (B, T, 2) (:func:`solver_recursion` with :class:`KernelPerLayer`).

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
    numerics : {'replay', 'pairwise', 'symmetric'}
        The fused stack's order of summation (:data:`pfntheory.nn.fused.NUMERICS`).
    """
    attend = KernelPerLayer(xa, scales, score, normalised, budget, numerics)
    H = xa.new_zeros(xa.shape[0], xa.shape[1], 2)
    return solver_recursion(H, R, V[:, 0::2], V[:, 1::2], S, attend, normalised)
