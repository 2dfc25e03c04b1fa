"""The PFN transformer of the paper: ``TF_{theta,L}`` and ``TF^pr_{theta,L}`` with a psi
or MLP head.

Paper results implemented here
------------------------------
* eqn:tabPFN attn / thm:TFdoPPD: token matrix ``Z^(0)`` in ``R^{(d+4) x (n+1)}`` (rows ``x``, ``y``
  (1 at the query), ``k``, ``f``, ``g``), the first layer eqn:1st attn with mask
  ``M^(0)_ij = 1{i > n}`` (one key: the query) that writes ``k_x`` into row ``d+2``, then ``L-1``
  solver layers eqn:l attn with mask ``M_ij = 1{i <= n}`` and the skip term ``S^(l) Z^(l)``; readout
  ``TF = W [Z^(L)]_{:, n+1}`` = ``(mu_L, tau_L)``.
* supp-eqn:weights: the sparsity pattern of ``V, K = Q, S, W`` (mode ``theory`` constrains the
  weights to it with learned step sizes; mode ``learnable`` learns every non-zero entry freely).
* sec:generalization: ``TF^pr`` (``normalised=True``) replaces the *solver* layers' attention by
  ``Attn^na`` and scales their skip term token-wise by ``1/s_{x_j}``. The first layer stays
  unnormalised: it has a single key per query, so normalising it would make every weight 1 and turn
  the ``k_x`` row into a constant (docs/design.md, "Known ambiguities"). ``normalise_first=True``
  is that other reading, the authors' public code's: the first layer normalised too, its row ``k``
  holding ``amp`` for every token.
* Sec. 4 / supp-sec:exp details / eqn:tabPFN mlp: the head, see :mod:`pfntheory.nn.head`.

Parameterisation (per solver layer ``l = 1..L-1``; 0-based token rows ``x = 0..d-1``, ``y = d``,
``k = d+1``, ``f = d+2``, ``g = d+3``)
---------------------------------------------------------------------------------------------
``theory``  ``K^(l) = Q^(l) = diag(scale_l, 0_4)`` learned per layer (``scale_0`` for the first
            layer); ``V^(l)_{f,y} = V^(l)_{g,k} = eta_l``, ``V^(l)_{f,f} = V^(l)_{g,g} = -eta_l``,
            ``S^(l)_{f,f} = S^(l)_{g,g} = -eta'_l sigma^2`` with ``eta'_l = eta_l``
            (supp-eqn:weights), except for the ``rbf`` score where ``eta'_l`` is a second learned
            step size (supp-sec:exp details: separate step sizes for the ridge drift and the
            attention residual; it absorbs the amplitude ``alpha^2`` that the kernel folds into
            ``V``). ``V^(0)_{k,y} = amp`` (``alpha^2``) is learned for ``rbf`` and fixed at
            ``amp_init`` otherwise; ``sigma^2`` (the prior's ``noise_var``) and ``W``
            (supp-eqn:weights) are fixed; the psi head's ``s1 = s2 = 1`` are fixed.
``theory_shared`` the reading of theory mode in the authors' public code (docs/design.md, "Known
            ambiguities"): one ``K = Q = diag(scale, 0_4)`` for every layer (the first included),
            the noise ``sigma`` learned (``sigma^2`` enters ``S`` and ``W_{2,y}``), and two step
            sizes per solver layer for every score: ``eta_k`` in ``V`` (as ``eta_l`` above) and
            ``eta_r`` in ``S = -eta_r sigma^2``; ``amp`` as in ``theory`` (learned for ``rbf``),
            ``W_{1,f}, W_{2,k}, W_{2,g}`` and the psi head's ``s1 = s2 = 1`` fixed. At
            initialisation it is the construction of supp-eqn:weights.
``learnable`` every non-zero entry of supp-eqn:weights is a free parameter per layer: ``scale_l``
            (the diagonal of ``K = Q``), ``V^(0)_{k,y}``, ``V^(l)_{f,y}, V^(l)_{f,f}, V^(l)_{g,k},
            V^(l)_{g,g}``, ``S^(l)_{f,f}, S^(l)_{g,g}``, ``W_{1,f}, W_{2,y}, W_{2,k}, W_{2,g}``; the
            psi head's ``s1, s2`` are learned. Initialised at the ``theory`` values.

Every forward runs the solver layers through the one recursion
:func:`pfntheory.nn.solver.solver_recursion`: :meth:`PFNTransformer.forward` in the *channel form*
(only the rows ``f, g`` a layer writes; its attention chosen once per call: a kernel per layer,
the fused stack when it applies, one shared kernel, or the linear score in feature space) and the
dense parity reference (:meth:`PFNTransformer.forward_dense`, :class:`DenseTransformer`) in the
*literal form* (full matrices); docs/design.md, "The model's forward".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pfntheory.base._checks import MAX_ELEMENTS, ArgumentTypeError, instance_of
from pfntheory.infra.config import MODES, ModelSpec, TaskSpec
from pfntheory.maths.construction import solver_step_sizes

from . import fused as _fused
from .attention import masked_attention_dense, score_matrix, score_vector
from .device import select_device
from .head import MLPHead, PsiHead, check_edges
from .solver import DenseMasked, FeatureSpace, SharedKernel, solver_layers, solver_recursion

__all__ = [
    "PFNOutput",
    "PFNTransformer",
    "DenseTransformer",
    "select_device",
    "default_eta",
    "MODES",
]

_REAL_INT_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


#: Bytes of solver-layer kernels one training forward keeps for its backward pass (first layers
#: first); the others are recomputed in the backward pass. 1 GiB holds every layer of (a) and 23 of
#: the 31 of (b) at its mean n (benchmarks/train_step.py) and saves one exp per kernel entry there.
SAVE_KERNEL_BUDGET_BYTES = 1 << 30

#: Kernel elements per instance chunk of the shared-kernel evaluation path (4 MiB in float32: one
#: chunk's kernel stays in the last-level cache across the L-1 layers that reuse it).
SHARED_KERNEL_CHUNK_ELEMENTS = 1 << 20


def _check_kernel_size(size: int, what: str, B: int, n: int) -> None:
    """Refuse a kernel matrix beyond ``MAX_ELEMENTS`` before allocating it."""
    if size > MAX_ELEMENTS:
        raise ValueError(
            f"X of batch B={B} with n={n} context points needs {what} of {size:.3g} "
            f"elements, more than the limit MAX_ELEMENTS = {MAX_ELEMENTS:.3g}; use "
            f"smaller batches"
        )


def default_eta(config: ModelSpec, task: TaskSpec, noise_var=None):
    """The initial step size of every solver layer: ``config.eta_init``, or when it is None
    ``1 / (1 + noise_var)`` for ``normalised`` (the Jacobi-preconditioned spectrum lies in
    ``[lambda_n, 1 + sigma^2/alpha^2]``, sec:generalization, so this is admissible for every n) and
    ``0.005`` otherwise (admissible, ``eta < 2/(lambda_1 + sigma^2)``, for ``lambda_1 <= 400``,
    which covers the paper's tasks up to n = 512: BLR d = 5 has ``lambda_1 ~ 2n/5 * 1.2``, RBF
    ``lambda_1 ~ n rho`` with ``rho <= 0.4``). ``sigma^2`` is the prior's ``task.noise_var``, or
    ``noise_var`` when given (a tensor of the mixture heads' ``sigma_h^2``: a tensor of steps)."""
    if not isinstance(config, ModelSpec):
        raise ArgumentTypeError(
            f"config must be a pfntheory.infra.config.ModelSpec, got {type(config).__name__}"
        )
    if not isinstance(task, TaskSpec):
        raise ArgumentTypeError(
            f"task must be a pfntheory.infra.config.TaskSpec, got {type(task).__name__}"
        )
    if config.eta_init is not None:
        return float(config.eta_init)
    noise_var = task.noise_var if noise_var is None else noise_var
    return 1.0 / (1.0 + noise_var) if config.normalised else 0.005


@dataclass
class PFNOutput:
    """Output of :class:`PFNTransformer`.

    Attributes
    ----------
    logits : Tensor of shape (B, C)
    mu : Tensor of shape (B,)
        Readout row 1, the mean estimate ``mu_L``.
    tau : Tensor of shape (B,)
        Readout row 2, the variance estimate ``tau_L`` (raw: may be <= 0 in training).
    """

    logits: torch.Tensor
    mu: torch.Tensor
    tau: torch.Tensor


def check_batch(X, Y, xq, scale: torch.Tensor, d: int):
    """``(X, Y, xq)`` as tensors of the model's dtype and device, checked: real, finite, of the
    right shapes (``d`` features), and ``X``, ``xq`` small enough that the kernel's arguments
    (squared distances and inner products of ``x * scale``, ``d`` terms) stay finite in the
    model's dtype: ``max|x| * max scale <= sqrt(finfo.max / (4 d))`` (about ``6.5e18`` in
    float32 for ``d = 2``). The check costs one reduction per tensor, as a finiteness check
    does."""
    p = scale
    lim = math.sqrt(torch.finfo(p.dtype).max / (4 * d))
    out = []
    for name, t, nd in (("X", X, 3), ("Y", Y, 2), ("xq", xq, 2)):
        if not isinstance(t, torch.Tensor):
            try:
                t = torch.as_tensor(np.asarray(t, dtype=np.float64))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{name} must be a real array, got {type(t).__name__}") from err
        if t.dim() != nd:
            raise ValueError(f"{name} must have {nd} dimensions, got shape {tuple(t.shape)}")
        if t.is_complex() or not (t.is_floating_point() or t.dtype in _REAL_INT_DTYPES):
            raise ValueError(f"{name} must be real (float, int or bool), got dtype {t.dtype}")
        t = t.to(device=p.device, dtype=p.dtype)
        ok: torch.Tensor | bool
        if name == "Y":
            ok = torch.isfinite(t).all()
        else:  # one reduction, as the finiteness check alone: NaN and inf fail it too
            ok = t.abs().amax() * p.detach().abs().amax() <= lim if t.numel() else True
        if not bool(ok):
            if not bool(torch.isfinite(t).all()):  # no NaN in, NaN out
                raise ValueError(
                    f"{name} contains NaN or infinite values (after the cast to {p.dtype})"
                )
            big = float(t.abs().amax()) * float(p.detach().abs().amax())
            raise ValueError(
                f"{name} is too large for the kernel: max |{name}| * max scale = {big:.3g} "
                f"exceeds {lim:.3g}, where the kernel's squared distances and inner "
                f"products overflow {p.dtype} (the priors' inputs are of order 1)"
            )
        out.append(t)
    X, Y, xq = out
    B, n, _ = X.shape
    if X.shape[2] != d:
        raise ValueError(f"X must have d = {d} features, got shape {tuple(X.shape)}")
    if n < 1 or B < 1:
        raise ValueError(
            f"X must have n >= 1 context points and B >= 1, got shape {tuple(X.shape)}"
        )
    if Y.shape != (B, n):
        raise ValueError(f"Y must have shape (B, n) = {(B, n)}, got {tuple(Y.shape)}")
    if xq.shape != (B, d):
        raise ValueError(f"xq must have shape (B, d) = {(B, d)}, got {tuple(xq.shape)}")
    return X, Y, xq


class PFNTransformer(nn.Module):
    """``TF_{theta,L}`` / ``TF^pr_{theta,L}`` (thm:TFdoPPD, sec:generalization) with its head.

    Parameters
    ----------
    config : ModelSpec
    edges : Tensor of shape (C + 1,)
        Bin edges ``gamma`` (registered buffer ``edges``; kept in the dtype it is given in, so
        float64 edges stay exact in a float32 model, and cast to the model's dtype in ``forward``).
    task : TaskSpec
        The prior: the input dimension ``d = task.d`` and ``sigma^2 = task.noise_var`` (the fixed
        value in theory mode, the initial value in learnable mode; supp-eqn:weights).
    numerics : {'replay', 'pairwise', 'symmetric'}
        The fused solver stack's order of summation (:data:`pfntheory.nn.fused.NUMERICS`; attribute
        ``numerics``, the default of :meth:`forward`'s argument): ``replay``, every committed run's
        arithmetic; the training loop sets ``pairwise`` for a ``RunSpec.fast_numerics`` run.
        Not part of the weights or the run's identity.
    """

    dense: bool = False
    # buffers and parameters set per mode, typed for mypy (nn.Module's __getattr__ is untyped)
    edges: torch.Tensor
    amp: torch.Tensor
    noise_var: torch.Tensor
    W: torch.Tensor
    head: nn.Module

    def __init__(
        self, config: ModelSpec, edges: torch.Tensor, task: TaskSpec, *, numerics: str = "replay"
    ):
        super().__init__()
        instance_of(ModelSpec)(config, "config")
        instance_of(TaskSpec)(task, "task")
        self.numerics = _fused.check_numerics(numerics)
        self.config = cfg = config
        self.d = d = task.d
        cfg.check_size(d)
        self.register_buffer("edges", check_edges(edges, cfg.C).clone())
        L = cfg.L
        dt = torch.get_default_dtype()
        noise_var, amp = task.noise_var, cfg.amp_init
        # supp-eqn:weights: the step in V (attention) and in S (ridge drift)
        eta_a, eta_d = solver_step_sizes(default_eta(cfg, task), amp, cfg.normalised)
        rbf = cfg.score == "rbf"
        n_scale = 1 if cfg.one_scale else L
        self.scale = nn.Parameter(torch.full((n_scale, d), cfg.scale_init, dtype=dt))  # diag K=Q
        if cfg.mode == "learnable" or rbf:
            self.amp = nn.Parameter(torch.tensor(amp, dtype=dt))  # V^(0)_{k,y}
        else:
            self.register_buffer("amp", torch.tensor(amp, dtype=dt))
        if cfg.mode == "theory":
            if not rbf and not math.isclose(eta_a, eta_d):
                raise ValueError(
                    "amp_init must be 1 in theory mode for the "
                    f"{cfg.score} score (one tied step size), got {amp}"
                )
            self.register_buffer("noise_var", torch.tensor(noise_var, dtype=dt))  # sigma^2
            self.eta = nn.Parameter(torch.full((L - 1,), eta_a, dtype=dt))  # eta_l
            if rbf:
                self.eta_drift = nn.Parameter(torch.full((L - 1,), eta_d, dtype=dt))  # eta'_l
            self.register_buffer("W", torch.tensor([1.0, noise_var, 1.0, -1.0], dtype=dt))
        elif cfg.mode == "theory_shared":
            self.noise_std = nn.Parameter(torch.tensor(math.sqrt(noise_var), dtype=dt))  # sigma
            self.eta = nn.Parameter(torch.full((L - 1,), eta_a, dtype=dt))  # eta_k per layer
            self.eta_drift = nn.Parameter(torch.full((L - 1,), eta_d, dtype=dt))  # eta_r per layer
        else:
            V = torch.tensor([eta_a, -eta_a, eta_a, -eta_a], dtype=dt)  # V_fy V_ff V_gk V_gg
            self.V = nn.Parameter(V.repeat(L - 1, 1))  # (L-1, 4)
            self.S = nn.Parameter(torch.full((L - 1, 2), -eta_d * noise_var, dtype=dt))  # S_ff S_gg
            self.W = nn.Parameter(
                torch.tensor([1.0, noise_var, 1.0, -1.0], dtype=dt)
            )  # W_1f W_2y W_2k W_2g
        if cfg.head == "psi":
            self.head = PsiHead(learn_scales=cfg.mode == "learnable", tau_min=cfg.tau_min)
        else:
            self.head = MLPHead(d + 4, cfg.mlp_width, cfg.C)
        self.head.to(dt)

    # ------------------------------------------------------------------------------------------
    # weights
    # ------------------------------------------------------------------------------------------
    def coefficients(self) -> dict[str, torch.Tensor]:
        """Non-zero weights of supp-eqn:weights as tensors.

        Returns
        -------
        dict with
            ``scale`` (L, d) diagonal of ``K^(l) = Q^(l)`` (expanded if shared);
            ``amp`` () ``V^(0)_{k,y}``;
            ``V`` (L-1, 4) ``V^(l)_{f,y}, V^(l)_{f,f}, V^(l)_{g,k}, V^(l)_{g,g}``;
            ``S`` (L-1, 2) ``S^(l)_{f,f}, S^(l)_{g,g}``;
            ``W`` (4,) ``W_{1,f}, W_{2,y}, W_{2,k}, W_{2,g}``.
        """
        cfg = self.config
        scale = self.scale.expand(cfg.L, self.d)
        if cfg.mode == "theory_shared":
            eta, noise_var = self.eta, self.noise_std * self.noise_std  # eta_k, sigma^2
            one = noise_var.new_ones(())
            V = torch.stack([eta, -eta, eta, -eta], -1)  # supp-eqn:weights
            S = (-self.eta_drift * noise_var).unsqueeze(-1).expand(-1, 2)  # -eta_r sigma^2
            W = torch.stack([one, noise_var, one, -one])  # (1, sigma^2, 1, -1)
            return {"scale": scale, "amp": self.amp, "V": V, "S": S, "W": W}
        if cfg.mode == "theory":
            eta = self.eta
            eta_d = self.eta_drift if cfg.score == "rbf" else eta
            V = torch.stack([eta, -eta, eta, -eta], -1)  # supp-eqn:weights
            S = (-eta_d * self.noise_var).unsqueeze(-1).expand(-1, 2)  # -eta sigma^2
            return {"scale": scale, "amp": self.amp, "V": V, "S": S, "W": self.W}
        return {"scale": scale, "amp": self.amp, "V": self.V, "S": self.S, "W": self.W}

    def dense_weights(self) -> dict[str, torch.Tensor]:
        """Full matrices of eqn:tabPFN attn: ``K`` (L, d+4, d+4) (``= Q``), ``V`` (L, d+4, d+4),
        ``S`` (L, d+4, d+4) (``S^(0) = 0``) and ``W`` (2, d+4)."""
        c = self.coefficients()
        d, L = self.d, self.config.L
        D = d + 4
        y, k, f, g = d, d + 1, d + 2, d + 3
        ref = c["scale"]
        K = torch.diag_embed(torch.cat([c["scale"], ref.new_zeros(L, 4)], -1))  # diag(scale, 0_4)
        V = ref.new_zeros(L, D, D)
        S = ref.new_zeros(L, D, D)
        V[0, k, y] = c["amp"]  # V^(0)_{d+2,d+1}
        V[1:, f, y], V[1:, f, f] = c["V"][:, 0], c["V"][:, 1]
        V[1:, g, k], V[1:, g, g] = c["V"][:, 2], c["V"][:, 3]
        S[1:, f, f], S[1:, g, g] = c["S"][:, 0], c["S"][:, 1]
        W = ref.new_zeros(2, D)
        W[0, f], W[1, y], W[1, k], W[1, g] = c["W"][0], c["W"][1], c["W"][2], c["W"][3]
        return {"K": K, "V": V, "S": S, "W": W}

    # ------------------------------------------------------------------------------------------
    # forward
    # ------------------------------------------------------------------------------------------
    def _check_inputs(self, X, Y, xq, check: bool = True):
        """:func:`check_batch` with the model's scales and ``d`` (``check=False``: inputs the
        caller has checked once, e.g. the training loop's own draws, are trusted)."""
        return check_batch(X, Y, xq, self.scale, self.d) if check else (X, Y, xq)

    def forward(self, X, Y, xq, *, check: bool = True, numerics: str | None = None) -> PFNOutput:
        """Run the transformer and the head.

        Parameters
        ----------
        X : Tensor of shape (B, n, d)
            Context inputs (same ``n`` within a batch).
        Y : Tensor of shape (B, n)
            Context labels.
        xq : Tensor of shape (B, d)
            Query inputs.
        check : bool
            Validate ``X, Y, xq`` (:func:`check_batch`); ``False`` only for inputs already checked
            at the boundary (the training loop's draws of the prior, which it trusts).
        numerics : {'replay', 'pairwise', 'symmetric'}, optional
            The fused solver stack's order of summation (:data:`pfntheory.nn.fused.NUMERICS`);
            default the model's ``numerics``. :func:`pfntheory.nn.evaluate.predict` passes
            ``symmetric``.

        Returns
        -------
        PFNOutput
            ``logits`` (B, C), ``mu`` (B,), ``tau`` (B,).
        """
        numerics = self.numerics if numerics is None else _fused.check_numerics(numerics)
        if self.dense:
            return self.forward_dense(X, Y, xq, check=check)
        X, Y, xq = self._check_inputs(X, Y, xq, check)
        cfg = self.config
        B, n, d = X.shape
        c = self.coefficients()
        scale, V, S, W = c["scale"], c["V"], c["S"], c["W"]
        xa = torch.cat([X, xq.unsqueeze(1)], 1)  # (B, n+1, d) x rows of Z
        # eqn:1st attn: mask M^(0) leaves one key, the query token n+1, so the layer writes
        # row k of token j as V^(0)_{k,y} * 1 * kappa(x_{n+1}, x_j): k_x and kappa(x, x).
        if cfg.normalise_first:
            # Attn^na over that one key: kappa(x_{n+1}, x_j) / s_j with s_j = kappa(x_{n+1}, x_j)
            # is 1 (wherever the score is non-zero; the dense reference divides), so row k holds
            # V^(0)_{k,y} for every token: the public code's reading of TF^pr
            k = c["amp"] * xa.new_ones(B, n + 1)  # (B, n+1) row d+2
        else:
            a = xa * scale[0]  # (B, n+1, d) K^(0) z_j
            k = c["amp"] * score_vector(a, a[:, n], cfg.score)  # (B, n+1) row d+2
        R = torch.stack([Y, k[:, :n]], -1)  # (B, n, 2) rows y, k
        H = xa.new_zeros(B, n + 1, 2)  # rows d+3, d+4: f, g
        grad = torch.is_grad_enabled()
        # eqn:l attn, mask M, K^(l) = Q^(l) = diag(scale_l): one recursion (nn.solver), its
        # attention chosen here once
        if cfg.L == 1:
            pass
        elif cfg.score == "linear":  # in feature space
            H = self._solve(H, R, V, S, FeatureSpace(xa, scale[1:], cfg.normalised))
        elif (
            cfg.shared_scale
            or (not grad and bool((scale[1:] == scale[1]).all()))
            or (cfg.one_scale and not _fused.stack_supports(xa, scale[1:], R, V, S, cfg.score))
        ):
            # one kernel for every solver layer: shared K = Q, or equal per-layer scales without
            # autograd (evaluation of a theory-mode or hand-set model): the exp is paid once.
            # theory_shared trains through the fused stack (one scale expanded over the layers:
            # 4x faster than this path at L = 32, n ~ 100) and falls back here without it
            a = xa * scale[1]  # (B, n+1, d)
            if grad:
                _check_kernel_size(B * (n + 1) * n, "the shared (B, n+1, n) kernel", B, n)
                P = score_matrix(a, a[:, :n], cfg.score)
                H = self._solve(H, R, V, S, SharedKernel(P, cfg.normalised))
            else:  # instance chunks in cache
                step = max(1, SHARED_KERNEL_CHUNK_ELEMENTS // ((n + 1) * n))
                H = torch.cat(
                    [
                        self._solve(
                            H[i : i + step],
                            R[i : i + step],
                            V,
                            S,
                            SharedKernel(
                                score_matrix(a[i : i + step], a[i : i + step, :n], cfg.score),
                                cfg.normalised,
                            ),
                        )
                        for i in range(0, B, step)
                    ]
                )
        else:  # a kernel per layer; the fused stack when available
            H = solver_layers(
                xa,
                R,
                scale[1:],
                V,
                S,
                cfg.score,
                cfg.normalised,
                SAVE_KERNEL_BUDGET_BYTES,
                numerics,
            )
        f, g = H[..., 0], H[..., 1]
        # readout W [Z^(L)]_{:, n+1}; the query's y-row holds 1 (thm:TFdoPPD)
        mu = W[0] * f[:, n]
        tau = W[1] + W[2] * k[:, n] + W[3] * g[:, n]
        if cfg.head == "psi":
            logits = self.head(mu, tau, self.edges)
        else:
            ones = xq.new_ones(B, 1)
            zq = torch.cat([xq, ones, k[:, n:], f[:, n:], g[:, n:]], -1)  # [Z^(L)]_{:, n+1}
            logits = self.head(zq)
        return PFNOutput(logits=logits, mu=mu, tau=tau)

    def _solve(self, H, R, V, S, attend):
        """The ``L-1`` solver layers on the (f, g) rows (:func:`~pfntheory.nn.solver.
        solver_recursion`, channel form: ``vals = R (V_fy, V_gk) + H (V_ff, V_gg)``)."""
        return solver_recursion(H, R, V[:, 0::2], V[:, 1::2], S, attend, self.config.normalised)

    def forward_dense(self, X, Y, xq, *, check: bool = True) -> PFNOutput:
        """The literal eqn:tabPFN attn: full ``(d+4) x (d+4)`` ``V, K, Q, S`` over every channel,
        masked ``(n+1) x (n+1)`` attention, per-layer gradient checkpointing. Parity reference.

        Same arguments and return as :meth:`forward` (without ``numerics``: no fused operator).
        """
        X, Y, xq = self._check_inputs(X, Y, xq, check)
        cfg = self.config
        B, n, d = X.shape
        T = n + 1
        _check_kernel_size(B * T * T, "the dense (B, n+1, n+1) attention matrix", B, n)
        w = self.dense_weights()
        Z = X.new_zeros(B, d + 4, T)  # Z^(0), thm:TFdoPPD
        Z[:, :d, :n] = X.transpose(1, 2)
        Z[:, :d, n] = xq
        Z[:, d, :n] = Y
        Z[:, d, n] = 1.0
        idx = torch.arange(T, device=X.device)
        M0 = (idx >= n).to(X.dtype).unsqueeze(1).expand(T, T)  # M^(0)_ij = 1{i > n}
        M = (idx < n).to(X.dtype).unsqueeze(1).expand(T, T)  # M_ij = 1{i <= n}
        att, _ = masked_attention_dense(
            Z, w["V"][0], w["K"][0], w["K"][0], M0, cfg.score, cfg.normalise_first
        )
        Z = Z + att  # eqn:1st attn (Attn^na with normalise_first: no skip term to scale)
        # eqn:l attn, literal form: tokens as rows (B, T, d+4), full V^(l), S^(l)
        Zt = solver_recursion(
            Z.transpose(1, 2),
            None,
            None,
            w["V"][1:],
            w["S"][1:],
            DenseMasked(w["K"][1:], M, cfg.score, cfg.normalised),
            cfg.normalised,
            checkpoint_layers=True,
        )
        zq = Zt[:, n, :]  # (B, d+4)
        mu_tau = zq @ w["W"].T  # TF = W [Z^(L)]_{:, n+1}
        mu, tau = mu_tau[:, 0], mu_tau[:, 1]
        logits = self.head(mu, tau, self.edges) if cfg.head == "psi" else self.head(zq)
        return PFNOutput(logits=logits, mu=mu, tau=tau)


class DenseTransformer(PFNTransformer):
    """:class:`PFNTransformer` whose ``forward`` is the dense reference :meth:`forward_dense`.

    Same parameters and state dict, so ``DenseTransformer(cfg, edges, task).load_state_dict(
    fast.state_dict())`` compares the two paths on identical weights.
    """

    dense = True
