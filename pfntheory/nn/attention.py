"""Kernel attention of the paper in PyTorch: unnormalised ``Attn`` and normalised ``Attn^na``.

Paper results implemented here
------------------------------
* eqn:std attn -- ``Attn_{M,kappa}(Z; V, K, Q) = V Z h_{M,kappa}(KZ, QZ)`` with
  ``[h]_{ij} = kappa(K z_i, Q z_j) M_ij``: :func:`masked_attention_dense` (the literal, dense form,
  the parity reference) and :func:`kernel_attention` (the fast form used in training).
* sec:generalization -- normalised attention ``Attn^na``: the weights of query ``j`` are divided by
  ``s_j = sum_i kappa(K z_i, Q z_j) M_ij``; both functions return ``s_j`` so that the caller can
  scale the skip term token-wise by ``1/s_j`` (``TF^pr``).
* Score functions (Sec. 3): ``linear`` ``kappa(a, b) = a.b``, ``rbf`` ``kappa(a, b) =
  exp(-||a - b||^2 / 2)`` and ``softmax`` ``kappa(a, b) = exp(a.b)`` (normalised: the usual softmax
  attention; unnormalised: its exponential kernel).

Fast form
---------
Tokens are rows here (``(B, T, channels)``), the transpose of the paper's columns. A mask of the
paper's kind (a set of key tokens shared by every query) is applied by *selecting the keys*, so the
``(B, T_q, T_k)`` score matrix is never built for masked-out keys. For the ``linear`` score it is
not built at all: ``sum_i (a_j.b_i) v_i = a_j^T (B^T V)`` costs ``O(T d m)``. For ``rbf`` and
``softmax`` the kernel matrix is formed by :class:`_ExpKernelMatVec`, a custom autograd function:
one matmul of augmented features gives ``log kappa`` (``-||a-b||^2/2 = [a, -|a|^2/2, 1].[b, 1,
-|b|^2/2]``), an in-place ``exp`` gives ``kappa``, and the product with the values follows, chunk by
chunk over the batch so that each chunk of the kernel stays in cache; only ``(a, b, v)`` are saved
and the kernel is recomputed in the backward pass (gradient checkpointing at the level of one
matrix). Memory is ``O(chunk T_q T_k)`` transient, independent of depth.

Numerics: ``softmax`` is evaluated without the usual max-shift, because the normaliser ``s_j`` is
part of the model (the ``1/s_j`` skip scaling of TF^pr), so it must be the true sum; it overflows in
float32 once ``a.b > 88``. ``rbf`` weights never overflow (``kappa <= 1``) but ``s_j`` underflows to
0 in float32 when every key is more than ~14 lengthscales from the query, giving ``inf``; nothing is
clipped, such values propagate as ``inf``/``nan``.
"""

from __future__ import annotations

import torch

import pfntheory.nn.fused as _fused
from pfntheory.base._checks import choice
from pfntheory.infra.config import SCORES

__all__ = [
    "SCORES",
    "score_matrix",
    "score_vector",
    "kernel_attention",
    "scaled_kernel_attention",
    "masked_attention_dense",
]


def _check_score(score: str) -> str:
    return choice(score, "score", SCORES)


def score_matrix(a: torch.Tensor, b: torch.Tensor, score: str) -> torch.Tensor:
    """Kernel matrix ``[kappa(a_i, b_j)]_{ij}`` over leading batch dimensions.

    Parameters
    ----------
    a : Tensor of shape (..., Ta, p)
    b : Tensor of shape (..., Tb, p)
    score : {'linear', 'rbf', 'softmax'}

    Returns
    -------
    Tensor of shape (..., Ta, Tb)
        ``a_i.b_j``, ``exp(-||a_i - b_j||^2/2)`` (expanded as ``a.b - |a|^2/2 - |b|^2/2`` so the
        work is one matmul) or ``exp(a_i.b_j)``.
    """
    _check_score(score)
    ab = a @ b.transpose(-1, -2)  # (..., Ta, Tb)
    if score == "linear":
        return ab
    if score == "softmax":
        return torch.exp(ab)
    half_a = 0.5 * (a * a).sum(-1, keepdim=True)  # (..., Ta, 1)
    half_b = 0.5 * (b * b).sum(-1).unsqueeze(-2)  # (..., 1, Tb)
    # exp(-||a-b||^2/2) = exp(a.b - |a|^2/2 - |b|^2/2); the exponent is clamped at 0 from above
    # because the expansion can round to tiny positive values where the true value is <= 0.
    return torch.exp(torch.clamp(ab - half_a - half_b, max=0.0))


def score_vector(a: torch.Tensor, b: torch.Tensor, score: str) -> torch.Tensor:
    """``kappa(a_i, b)`` of every token against one token (the first layer's single key).

    Parameters
    ----------
    a : Tensor of shape (B, T, p)
    b : Tensor of shape (B, p)

    Returns
    -------
    Tensor of shape (B, T)
    """
    _check_score(score)
    if score == "rbf":
        diff = a - b.unsqueeze(-2)  # (B, T, p)
        return torch.exp(-0.5 * (diff * diff).sum(-1))  # exp(-||a-b||^2/2)
    ab = (a * b.unsqueeze(-2)).sum(-1)  # (B, T)
    return ab if score == "linear" else torch.exp(ab)


#: Elements of the kernel matrix ``P`` formed at once: the batch is processed in chunks of
#: ``max(1, CHUNK_ELEMENTS // (T_q T_k))`` instances so that each chunk of ``P`` (1 MiB in float32)
#: stays in cache between the matmul that forms it, the ``exp`` and the products that read it.
CHUNK_ELEMENTS = 1 << 18

#: :class:`_ScaledKernelMatVec` keeps the kernel matrix of a layer for the backward pass when it
#: takes at most this many bytes (16 MiB: ``n <= 180`` at batch 128 in float32; about 0.5 GiB for
#: 32 layers); larger ones are recomputed chunk by chunk, so memory stays bounded in ``n``. The
#: model (:class:`~pfntheory.nn.model.PFNTransformer`) instead passes ``save_kernel`` per layer from
#: a budget for the whole forward pass (``SAVE_KERNEL_BUDGET_BYTES`` there).
SAVE_KERNEL_MAX_BYTES = 1 << 24


def _chunks(nb: int, Tq: int, Tk: int):
    step = max(1, CHUNK_ELEMENTS // max(1, Tq * Tk))
    return [(i, min(i + step, nb)) for i in range(0, nb, step)]


class _ExpKernelMatVec(torch.autograd.Function):
    """``out = exp(A B^T) @ v`` for augmented features ``A`` (B, Tq, p), ``B^T`` (B, p, Tk).

    rbf: ``A = [a, -|a|^2/2, 1]``, ``B = [b, 1, -|b|^2/2]`` so ``A B^T = -||a - b||^2/2`` in one
    matmul; softmax: ``A = a``, ``B = b``. Autograd maps the gradients of ``A, B^T`` back
    to ``a, b``.

    Only ``(A, B^T, v)`` are saved: ``P = exp(A B^T)`` is recomputed in the backward pass, chunk by
    chunk over the batch (gradient checkpointing at the level of one matrix), so memory is
    ``O(chunk T_q T_k)`` whatever the depth, and ``P`` never leaves the cache. Every product puts
    ``P`` on the right (``v^T P^T``, ``g^T P``): MKL's batched GEMM is several times faster that way
    round than with a thin right operand.

    Backward, with ``g = dL/dout`` (B, Tq, m) and ``E = P * (g v^T)`` the gradient of ``A B^T``:
    ``dA = E B``, ``dB = E^T A``, ``dv = P^T g``, all formed per chunk. (Using the rank-``m``
    structure of ``g v^T`` to avoid forming ``E`` needs products of width ``m p`` and
    measured slower.)
    """

    @staticmethod
    def forward(ctx, A, BT, v):
        nb, Tq, _ = A.shape
        Tk, m = v.shape[1], v.shape[2]
        vT = v.transpose(1, 2).contiguous()  # (B, m, Tk)
        outT = A.new_empty(nb, m, Tq)
        for i, j in _chunks(nb, Tq, Tk):
            P = torch.bmm(A[i:j], BT[i:j]).exp_()  # (b, Tq, Tk) kappa
            torch.bmm(vT[i:j], P.transpose(1, 2), out=outT[i:j])  # (P v)^T = v^T P^T
        ctx.save_for_backward(A, BT, v)
        return outT.transpose(1, 2)  # (B, Tq, m)

    @staticmethod
    def backward(ctx, g):
        A, BT, v = ctx.saved_tensors
        nb, Tq, p = A.shape
        Tk, m = v.shape[1], v.shape[2]
        chunks = _chunks(nb, Tq, Tk)
        gT = g.transpose(1, 2).contiguous()  # (B, m, Tq)
        gc = g.contiguous()
        vT = v.transpose(1, 2).contiguous()  # (B, m, Tk)
        AT = A.transpose(1, 2).contiguous()  # (B, p, Tq)
        dvT = A.new_empty(nb, m, Tk)
        dAT = A.new_empty(nb, p, Tq)
        dBT = A.new_empty(nb, p, Tk)
        for i, j in chunks:
            P = torch.bmm(A[i:j], BT[i:j]).exp_()  # recomputed
            torch.bmm(gT[i:j], P, out=dvT[i:j])  # (P^T g)^T = g^T P
            E = torch.bmm(gc[i:j], vT[i:j]).mul_(P)  # P * (g v^T)
            torch.bmm(BT[i:j], E.transpose(1, 2), out=dAT[i:j])  # (E B)^T = B^T E^T
            torch.bmm(AT[i:j], E, out=dBT[i:j])  # (E^T A)^T = A^T E
        return dAT.transpose(1, 2), dBT, dvT.transpose(1, 2)


class _ScaledKernelMatVec(torch.autograd.Function):
    """``out = P v`` with ``P_ij = kappa(s * x_i, s * x_j)`` over keys ``j < n``, gradients
    for ``s, v``.

    The layer form of the model: queries are all tokens ``x`` (B, T, d), keys their first ``n``
    (``n = v.shape[1]``), ``K = Q = diag(s)``. Forward as :class:`_ExpKernelMatVec`. Backward uses
    that ``log P`` depends on ``s`` only through ``s_k^2``:

    rbf ``log P_ij = -1/2 sum_k s_k^2 (x_ik - x_jk)^2``, so with ``E = P * (g v^T)``
        ``ds_k = -s_k [sum_i x_ik^2 rowsum(E)_i + sum_j x_jk^2 colsum(E)_j -
                       2 sum_i x_ik (E X)_ik]``
    softmax ``log P_ij = sum_k s_k^2 x_ik x_jk``, so ``ds_k = 2 s_k sum_i x_ik (E X)_ik``,

    where ``rowsum(E)_i = g_i . out_i``, ``colsum(E)_j = v_j . dv_j`` (free) and
    ``E X = sum_r g_r * (P (v_r * X))``: one product of width ``m d`` besides ``dv = P^T g``, so the
    backward pass reads ``P`` twice and never forms ``E``. ``P`` is kept from the forward pass when
    it is small (``SAVE_KERNEL_MAX_BYTES``), else recomputed per chunk. No gradient flows to ``x``
    (the data).
    """

    @staticmethod
    def forward(ctx, x, s, v, rbf: bool, keep: bool | None = None):
        nb, T, d = x.shape
        n, m = v.shape[1], v.shape[2]
        A, BT = _features(x, s, n, rbf)
        vT = v.transpose(1, 2).contiguous()  # (B, m, n)
        outT = x.new_empty(nb, m, T)
        if keep is None:
            keep = nb * T * n * x.element_size() <= SAVE_KERNEL_MAX_BYTES
        Pall = x.new_empty(nb, T, n) if keep else None
        for i, j in _chunks(nb, T, n):
            if Pall is None:
                P = torch.bmm(A[i:j], BT[i:j])
            else:
                P = torch.bmm(A[i:j], BT[i:j], out=Pall[i:j])
            P.exp_()  # (b, T, n) kappa
            torch.bmm(vT[i:j], P.transpose(1, 2), out=outT[i:j])  # (P v)^T = v^T P^T
        ctx.save_for_backward(x, s, v, outT, A, BT, Pall)
        ctx.rbf = rbf
        return outT.transpose(1, 2)  # (B, T, m)

    @staticmethod
    def backward(ctx, g):
        x, s, v, outT, A, BT, Pall = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("no gradient with respect to the token inputs x is implemented")
        nb, T, d = x.shape
        n, m = v.shape[1], v.shape[2]
        xk = x[:, :n]  # keys (B, n, d)
        gT = g.transpose(1, 2).contiguous()  # (B, m, T)
        # [v_r * X]^T, row r d + k = v_r * x_k over the keys; formed from the transposed (B, m, n)
        # and (B, d, n) factors so the broadcast runs along the contiguous key axis (15x faster than
        # the (B, n, m, 1) * (B, n, 1, d) outer product followed by a transposed copy)
        vT = v.transpose(1, 2).contiguous()  # (B, m, n)
        xkT = xk.transpose(1, 2).contiguous()  # (B, d, n)
        Xl = (vT.unsqueeze(2) * xkT.unsqueeze(1)).reshape(nb, m * d, n)  # (B, m d, n)
        dvT = x.new_empty(nb, m, n)
        leftT = x.new_empty(nb, m * d, T)
        for i, j in _chunks(nb, T, n):
            P = Pall[i:j] if Pall is not None else torch.bmm(A[i:j], BT[i:j]).exp_()  # recomputed
            torch.bmm(gT[i:j], P, out=dvT[i:j])  # (P^T g)^T = g^T P
            torch.bmm(Xl[i:j], P.transpose(1, 2), out=leftT[i:j])  # [v_r X]^T P^T
        dv = dvT.transpose(1, 2)  # (B, n, m)
        EX = (gT.unsqueeze(2) * leftT.reshape(nb, m, d, T)).sum(1)  # (E X)^T (B, d, T)
        cross = (x.transpose(1, 2) * EX).sum((0, 2))  # sum_i x_ik (E X)_ik
        if ctx.rbf:
            row = (gT * outT).sum(1)  # rowsum(E) (B, T)
            col = (v * dv).sum(-1)  # colsum(E) (B, n)
            sq_q = (x * x * row.unsqueeze(-1)).sum((0, 1))  # (d,)
            sq_k = (xk * xk * col.unsqueeze(-1)).sum((0, 1))  # (d,)
            ds = -s * (sq_q + sq_k - 2.0 * cross)
        else:
            ds = 2.0 * s * cross
        return None, ds, dv, None, None


def _features(x: torch.Tensor, s: torch.Tensor, n: int, rbf: bool):
    """Augmented features ``A`` (B, T, p) and ``B^T`` (B, p, n) with ``A B^T = log kappa``."""
    a = x * s  # (B, T, d)
    A, B = _augment(a, a[:, :n], "rbf" if rbf else "softmax")
    return A.contiguous(), B.transpose(1, 2).contiguous()


def scaled_kernel_attention(
    x: torch.Tensor,
    scale: torch.Tensor,
    v: torch.Tensor,
    score: str,
    normalised: bool = False,
    save_kernel: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention of one solver layer: queries ``diag(scale) x_j`` for every token, keys the first
    ``n = v.shape[1]`` tokens (mask ``M_ij = 1{i <= n}``), ``K = Q = diag(scale)``.

    Same result as ``kernel_attention(x * scale, (x * scale)[:, :n], v, score, normalised)``, with
    a backward pass specialised to the gradients the model needs (``scale`` and ``v``; none for
    ``x``), see :class:`_ScaledKernelMatVec`.

    Parameters
    ----------
    x : Tensor of shape (B, T, d)
        Token inputs (data; no gradient).
    scale : Tensor of shape (d,)
        Diagonal of ``K = Q``.
    v : Tensor of shape (B, n, m)
        Values of the ``n`` key tokens.
    score : {'linear', 'rbf', 'softmax'}
    normalised : bool
    save_kernel : bool, optional
        Eager path: keep the ``(B, T, n)`` kernel for the backward pass (True) or recompute it
        there (False); default: keep it when it takes at most ``SAVE_KERNEL_MAX_BYTES``. Either way
        the result and the gradients are the same numbers; without autograd nothing is kept. The
        fused path ignores it: it never stores the kernel and always recomputes it.

    For the ``rbf`` and ``softmax`` scores on CPU in float32/float64 the fused operator of
    :mod:`pfntheory.nn.fused` is used when it is available (compiled on first use; disabled by
    ``PFNTHEORY_FUSED=0``): the same numbers to float round-off, without the kernel in memory.
    Otherwise, or when it cannot be built, the eager :class:`_ScaledKernelMatVec` (the reference).

    Returns
    -------
    out : Tensor of shape (B, T, m)
    s : Tensor of shape (B, T) or None
    """
    _check_score(score)
    if not (torch.is_grad_enabled() and (scale.requires_grad or v.requires_grad)):
        save_kernel = False  # no backward pass
    if score == "linear":
        a = x * scale
        return kernel_attention(a, a[:, : v.shape[1]], v, score, normalised)
    m = v.shape[-1]
    if normalised:
        v = torch.cat([v, torch.ones_like(v[..., :1])], -1)  # s_j = P @ 1
    if _fused.supports(x, scale, v, score):  # tile by tile, nothing saved (pfntheory.nn.fused)
        out = _fused.kernel_matvec(x, scale, v, score == "rbf")
    else:
        out = _ScaledKernelMatVec.apply(x.detach(), scale, v, score == "rbf", save_kernel)
    if not normalised:
        return out, None
    s = out[..., m]
    return out[..., :m] / s.unsqueeze(-1), s  # Attn^na


def _augment(a: torch.Tensor, b: torch.Tensor, score: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Features with ``A B^T = log kappa(a_i, b_j)``: rbf ``-||a-b||^2/2``, softmax ``a.b``."""
    if score == "softmax":
        return a, b
    half_a = 0.5 * (a * a).sum(-1, keepdim=True)  # (B, Tq, 1)
    half_b = 0.5 * (b * b).sum(-1, keepdim=True)  # (B, Tk, 1)
    A = torch.cat([a, -half_a, torch.ones_like(half_a)], -1)  # [a, -|a|^2/2, 1]
    B = torch.cat([b, torch.ones_like(half_b), -half_b], -1)  # [b, 1, -|b|^2/2]
    return A, B


def kernel_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, score: str, normalised: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Kernel attention of every query over a set of unmasked keys (fast form of eqn:std attn).

    ``out_j = sum_i kappa(k_i, q_j) v_i`` over the keys passed (the mask is applied by the caller
    choosing the keys); with ``normalised=True`` (``Attn^na``, sec:generalization) the sum is
    divided by ``s_j = sum_i kappa(k_i, q_j)``.

    Parameters
    ----------
    q : Tensor of shape (B, Tq, p)
        Projected queries ``Q z_j``.
    k : Tensor of shape (B, Tk, p)
        Projected keys ``K z_i`` (the unmasked ones only).
    v : Tensor of shape (B, Tk, m)
        Values ``V z_i`` restricted to the channels they write.
    score : {'linear', 'rbf', 'softmax'}
    normalised : bool

    Returns
    -------
    out : Tensor of shape (B, Tq, m)
    s : Tensor of shape (B, Tq) or None
        The normaliser ``s_j`` when ``normalised`` (needed for the ``1/s_j`` skip of TF^pr).
    """
    _check_score(score)
    if q.dim() != 3 or k.dim() != 3 or v.dim() != 3:
        raise ValueError(
            f"q, k, v must be 3-d (B, T, channels), got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if k.shape[:2] != v.shape[:2] or q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2]:
        raise ValueError(
            f"incompatible q, k, v shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    m = v.shape[-1]
    if normalised:  # s_j = P @ 1
        v = torch.cat([v, torch.ones_like(v[..., :1])], -1)  # (B, Tk, m+1)
    if score == "linear":
        out = torch.bmm(q, torch.bmm(k.transpose(1, 2), v))  # a_j^T (K^T V), O(T p m)
    else:
        A, B = _augment(q, k, score)
        out = _ExpKernelMatVec.apply(
            A.contiguous(), B.transpose(1, 2).contiguous(), v
        )  # (B, Tq, m[+1])
    if not normalised:
        return out, None
    s = out[..., m]  # (B, Tq)
    return out[..., :m] / s.unsqueeze(-1), s  # Attn^na


def masked_attention_dense(
    Z: torch.Tensor,
    V: torch.Tensor,
    K: torch.Tensor,
    Q: torch.Tensor,
    M: torch.Tensor,
    score: str,
    normalised: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Literal eqn:std attn (and ``Attn^na``) in the paper's column layout, dense over all channels.

    Parameters
    ----------
    Z : Tensor of shape (B, d', T)
        Tokens as columns.
    V, K, Q : Tensor of shape (d', d')
    M : Tensor of shape (T, T)
        Binary mask, ``M[i, j] = 1`` when key ``i`` is visible to query ``j``.
    score : {'linear', 'rbf', 'softmax'}
    normalised : bool
        Divide column ``j`` of ``h`` by ``s_j = sum_i h_ij`` (``Attn^na``).

    Returns
    -------
    out : Tensor of shape (B, d', T)
        ``V Z h_{M,kappa}(KZ, QZ)`` with ``[h]_ij = kappa(K z_i, Q z_j) M_ij``.
    s : Tensor of shape (B, T) or None
        ``s_j`` when ``normalised``.
    """
    h, s = masked_attention_weights(Z, K, Q, M, score, normalised)
    return V @ Z @ h, s  # V Z h, eqn:std attn


def masked_attention_weights(
    Z: torch.Tensor, K: torch.Tensor, Q: torch.Tensor, M: torch.Tensor, score: str, normalised: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The weights ``h_{M,kappa}(KZ, QZ)`` (B, T, T) of :func:`masked_attention_dense`
    (``[h]_ij = kappa(K z_i, Q z_j) M_ij``, divided by ``s_j`` for ``Attn^na``) and ``s`` (B, T) or
    None; the values ``V Z`` are the caller's (:class:`pfntheory.nn.solver.DenseMasked`)."""
    _check_score(score)
    KZ = (K @ Z).transpose(1, 2)  # (B, T, d') rows k_i
    QZ = (Q @ Z).transpose(1, 2)  # (B, T, d') rows q_j
    h = score_matrix(KZ, QZ, score) * M  # [h]_ij, eqn:std attn
    s = None
    if normalised:
        s = h.sum(1)  # s_j, (B, T)
        h = h / s.unsqueeze(1)  # Attn^na weights
    return h, s
