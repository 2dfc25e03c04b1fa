"""The multi-head TF^pr of the remark "Extension to hierarchical GPs", trainable (PyTorch).

The NumPy construction and its readout are :mod:`pfntheory.maths.multihead_construction`; this is
its trainable counterpart (``ModelSpec(mixture=True)``), tied to it by the float64 parity test of
``tests/test_multihead.py``.

* One head per component ``h`` of the prior (:func:`pfntheory.infra.config.prior_components`): its
  own ``V^(0)_{k,y}`` (``amp``), solver weights ``V^(l)_{f,y}, V_{f,f}, V_{g,k}, V_{g,g}``,
  ``S^(l)_{f,f}, S_{g,g}`` and readout ``W``, initialised at supp-eqn:weights for that component
  (its noise, the step ``1/(1 + sigma_h^2)`` of TF^pr).
* Heads with the same lengthscale share one kernel (``K = Q = diag(scale)`` per lengthscale
  group and layer, initialised at ``1/ell``): one ``(B, n+1, n)`` kernel per group and layer is
  applied to the ``2 H_g`` value channels of its heads, so the 3 x 3 grid of
  supp-tab:hierarchical-gp costs about 3 single-head kernels per layer, not 9.
* Mixture-weight readout: ``log w_h = log pi_h - q_h/2 - c_h . phi`` normalised over ``h``, with
  ``q_h = beta_h sum_i y_i (y_i - f_{h,i})`` (``beta_h`` initialised at ``1/sigma_h^2``: the exact
  ``Y^T (G_h + sigma_h^2 I)^{-1} Y`` at the solver's fixed point) and ``phi`` the log-determinant
  features :func:`pfntheory.maths.multihead_construction.logdet_features` of ``log det D_g = sum_i
  log s_{g,i}`` (the first solver layer's normaliser) and ``n``, ``c_h`` initialised at half the
  least-squares fit :func:`pfntheory.maths.multihead_construction.fit_logdet_readout`; every
  coefficient is learned.
* Output: the mixture of the per-head bar distributions, ``logits = log sum_h w_h softmax(ell_h)``
  with ``ell_h`` the psi head of Sec. 4 on ``(mu_h, tau_h)`` with its own learned ``(s1, s2)``;
  ``mu, tau`` of the output are the mixture's moments (the evaluation compares them with the exact
  mixture's).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pfntheory.base._checks import ArgumentTypeError, instance_of
from pfntheory.infra.config import ModelSpec, TaskSpec, prior_components
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.construction import solver_step_sizes
from pfntheory.maths.kernels import RBFKernel

from .attention import scaled_kernel_attention, score_vector
from .head import check_edges, psi_logits
from .model import PFNOutput, check_batch, default_eta
from .solver import LayerAttention, solver_recursion

__all__ = ["MixtureOutput", "MixturePFN", "load_multihead_handset"]

#: Seed of the Monte-Carlo designs of the log-determinant fit that initialises the readout.
LOGDET_FIT_SEED = 0


@dataclass
class MixtureOutput(PFNOutput):
    """:class:`~pfntheory.nn.model.PFNOutput` (``mu, tau``: the mixture's moments) plus

    Attributes
    ----------
    weights : Tensor of shape (B, H)
        Readout mixture weights ``w_h``.
    mu_h, tau_h : Tensor of shape (B, H)
        Per-head moments ``(mu_h, tau_h)`` (raw readouts).
    """

    weights: torch.Tensor | None = None
    mu_h: torch.Tensor | None = None
    tau_h: torch.Tensor | None = None


@functools.lru_cache(maxsize=16)
def _logdet_coef(ells: tuple, noise_var: tuple, alpha: float, d: int, covariates: str):
    kernels = [RBFKernel(alpha, ell) for ell in ells]
    fit = mh.fit_logdet_readout(
        kernels, np.asarray(noise_var), d, np.random.default_rng(LOGDET_FIT_SEED),
        covariates=covariates,
    )  # fmt: skip
    return fit.coef


def _groups(ells) -> tuple[list[float], list[list[int]]]:
    """Distinct lengthscales (first-appearance order) and the heads of each."""
    uniq: list[float] = []
    for e in ells:
        if e not in uniq:
            uniq.append(e)
    return uniq, [[h for h, e in enumerate(ells) if e == u] for u in uniq]


class MixturePFN(nn.Module):
    """Multi-head ``TF^pr`` (or ``TF``) with a mixture-weight readout (module docstring).

    Parameters
    ----------
    config : ModelSpec
        With ``mixture=True``: ``score='rbf'``, ``mode='learnable'``, ``head='psi'``, ``L >= 2``
        (checked by :class:`~pfntheory.infra.config.ModelSpec`).
    edges : Tensor of shape (C + 1,)
    task : TaskSpec
        The prior: its components (RBF kernels and noise variances) give the heads, and ``d``.
    """

    edges: torch.Tensor  # buffers, typed for mypy (nn.Module's __getattr__ is untyped)
    log_prior: torch.Tensor

    def __init__(self, config: ModelSpec, edges: torch.Tensor, task: TaskSpec):
        super().__init__()
        instance_of(ModelSpec)(config, "config")
        instance_of(TaskSpec)(task, "task")
        if not config.mixture:  # ModelSpec checked what mixture=True needs (score, mode, head, L)
            raise ValueError("config must have mixture=True for a MixturePFN")
        config.check_size(task.d)
        kernels, noise_var_h = prior_components(task)  # sigma_h^2, (H,)
        if not all(isinstance(k, RBFKernel) for k in kernels):
            raise ValueError(f"MixturePFN needs RBF components, task kind {task.kind!r} has not")
        self.config = cfg = config
        self.d = d = task.d
        self.register_buffer("edges", check_edges(edges, cfg.C).clone())
        dt = torch.get_default_dtype()
        H, L = len(kernels), cfg.L
        ells, self.groups = _groups([k.lengthscale for k in kernels])
        amp = kernels[0].alpha ** 2
        n_scale = 1 if cfg.shared_scale else L
        self.scale = nn.Parameter(
            torch.tensor([[[1.0 / e] * d] * n_scale for e in ells], dtype=dt)
        )  # (G, L or 1, d): diag K = Q per lengthscale group
        self.amp = nn.Parameter(torch.full((H,), amp, dtype=dt))  # V^(0)_{k,y} per head
        noise_var = torch.as_tensor(noise_var_h, dtype=dt)  # (H,) sigma_h^2
        eta = default_eta(cfg, task, noise_var)  # per head (a float: the same for every head)
        eta = eta if isinstance(eta, torch.Tensor) else torch.full((H,), eta, dtype=dt)
        eta_a, eta_d = solver_step_sizes(eta, amp, cfg.normalised)  # steps in V and S
        V = torch.stack([eta_a, -eta_a, eta_a, -eta_a], -1)  # (H, 4): V_fy V_ff V_gk V_gg
        self.V = nn.Parameter(V[:, None].repeat(1, L - 1, 1))  # (H, L-1, 4)
        self.S = nn.Parameter((-eta_d * noise_var)[:, None, None].repeat(1, L - 1, 2))  # S_ff S_gg
        ones = torch.ones(H, dtype=dt)
        self.W = nn.Parameter(
            torch.stack([ones, noise_var, ones, -ones], -1)
        )  # W_1f W_2y W_2k W_2g
        self.psi_scale = nn.Parameter(torch.ones(H, 2, dtype=dt))  # (s1, s2) per head
        self.q_scale = nn.Parameter(1.0 / noise_var)  # beta_h
        coef = _logdet_coef(
            tuple(k.lengthscale for k in kernels), tuple(float(v) for v in noise_var),
            float(kernels[0].alpha), d, task.covariates,
        )  # fmt: skip
        self.ld_coef = nn.Parameter(torch.as_tensor(0.5 * coef, dtype=dt))  # (H, 6)
        self.register_buffer("log_prior", torch.full((H,), -math.log(H), dtype=dt))
        self.H = H

    def _check_inputs(self, X, Y, xq, check: bool = True):
        """:func:`pfntheory.nn.model.check_batch` with the heads' scales (``check=False``:
        trusted inputs, as :meth:`PFNTransformer.forward`)."""
        return check_batch(X, Y, xq, self.scale, self.d) if check else (X, Y, xq)

    def _group(self, xa, Y, g: int, hs: list[int]):
        """The heads ``hs`` of lengthscale group ``g``: per-head ``mu, tau, q`` (B, H_g) and
        ``log det D`` (B,)."""
        cfg = self.config
        n = Y.shape[1]
        Hg = len(hs)
        scale = self.scale[g].expand(cfg.L, self.d)
        a = xa * scale[0]
        k = score_vector(a, a[:, n], "rbf")[..., None] * self.amp[hs]  # (B, n+1, Hg): eqn:1st attn
        # eqn:l attn on the 2 Hg channels (f_h..., g_h...): one kernel for the group's heads
        V, S = self.V[hs], self.S[hs]  # (Hg, L-1, 4), (Hg, L-1, 2)
        R = torch.cat([Y[..., None].expand(-1, -1, Hg), k[:, :n]], -1)  # rows y, k_h (B, n, 2Hg)
        attend = _GroupKernel(xa, scale[1:], cfg.normalised)
        Hs = solver_recursion(
            xa.new_zeros(xa.shape[0], n + 1, 2 * Hg),
            R,
            torch.cat([V[..., 0], V[..., 2]], 0).T,  # (L-1, 2Hg): V_fy, V_gk
            torch.cat([V[..., 1], V[..., 3]], 0).T,  # V_ff, V_gg
            torch.cat([S[..., 0], S[..., 1]], 0).T,  # S_ff, S_gg
            attend,
            cfg.normalised,
        )
        F, Gr = Hs[..., :Hg], Hs[..., Hg:]  # rows f_h, g_h
        W = self.W[hs]  # (Hg, 4)
        mu = W[:, 0] * F[:, n]
        tau = W[:, 1] + W[:, 2] * k[:, n] + W[:, 3] * Gr[:, n]
        Yc = Y[..., None]
        q = self.q_scale[hs] * (Yc * (Yc - F[:, :n])).sum(1)  # beta_h sum_i y_i (y_i - f_{h,i})
        return mu, tau, q, attend.log_det_D

    def forward(self, X, Y, xq, log_weights=None, *, check: bool = True) -> MixtureOutput:
        """Same arguments as :meth:`pfntheory.nn.model.PFNTransformer.forward`; returns
        :class:`MixtureOutput` (``logits`` (B, C) of the mixture of the heads' bar
        distributions). ``log_weights`` (B, H), optional: mixture log-weights that replace the
        readout's (an external selector, or the exact ``log p(h | D)`` of the ceiling; normalised
        here)."""
        X, Y, xq = self._check_inputs(X, Y, xq, check)
        if log_weights is not None:
            if not isinstance(log_weights, torch.Tensor):
                raise ArgumentTypeError(
                    f"log_weights must be a Tensor, got {type(log_weights).__name__}"
                )
            if log_weights.shape != (X.shape[0], self.H):
                raise ValueError(
                    f"log_weights must have shape {(X.shape[0], self.H)}, "
                    f"got {tuple(log_weights.shape)}"
                )
        B, n, _ = X.shape
        xa = torch.cat([X, xq.unsqueeze(1)], 1)  # (B, n+1, d)
        mu_h = xa.new_empty(B, self.H)
        tau_h, logit_w = torch.empty_like(mu_h), torch.empty_like(mu_h)
        ln = math.log(n)
        for g, hs in enumerate(self.groups):
            mu, tau, q, ldD = self._group(xa, Y, g, hs)
            phi = torch.stack(
                [ldD, ldD * ln, *(ldD.new_full((B,), v) for v in (n, n * ln, ln, 1.0))], -1
            )
            mu_h[:, hs], tau_h[:, hs] = mu, tau
            logit_w[:, hs] = self.log_prior[hs] - 0.5 * q - phi @ self.ld_coef[hs].T
        if log_weights is not None:
            logit_w = log_weights.to(logit_w.dtype)
        log_w = torch.log_softmax(logit_w, -1)  # (B, H)
        ell = psi_logits(mu_h, tau_h, self.psi_scale, self.edges, self.config.tau_min)  # (B, H, C)
        logits = torch.logsumexp(log_w[..., None] + torch.log_softmax(ell, -1), 1)  # (B, C)
        w = log_w.exp()
        mu = (w * mu_h).sum(-1)
        tau = (w * (tau_h + mu_h**2)).sum(-1) - mu**2
        return MixtureOutput(logits=logits, mu=mu, tau=tau, weights=w, mu_h=mu_h, tau_h=tau_h)


class _GroupKernel(LayerAttention):
    """The per-layer kernel of one lengthscale group, applied to its heads' ``2 H_g`` channels;
    keeps ``log det D = sum_i log s_i`` of the first solver layer's normaliser (computed on an
    extra channel of ones for TF)."""

    def __init__(self, xa, scales, normalised: bool):
        self.xa, self.scales, self.normalised = xa, scales, normalised
        self.log_det_D = None

    def values(self, layer, R, Hk, vR, vH):
        # R vR + H vH in two products and a sum (not solver's one fused multiply-add): the
        # rounding every committed mixture run was trained with
        return R * vR + Hk * vH

    def __call__(self, layer, vals, H):
        n = vals.shape[1]
        if not self.normalised and layer == 0:  # the normaliser s for log det D only
            vals = torch.cat([vals, torch.ones_like(vals[..., :1])], -1)
        att, s = scaled_kernel_attention(self.xa, self.scales[layer], vals, "rbf", self.normalised)
        if layer == 0:
            if s is None:
                att, s1 = att[..., :-1], att[..., -1]
                self.log_det_D = torch.log(s1[:, :n]).sum(-1)
            else:
                self.log_det_D = torch.log(s[:, :n]).sum(-1)  # sum_i log s_i = log det D
        return att, s


def load_multihead_handset(model: MixturePFN, weights, logdet) -> MixturePFN:
    """Copy the NumPy hand-set multi-head weights into ``model`` (in place; returns it).

    Parameters
    ----------
    model : MixturePFN
    weights : pfntheory.maths.multihead_construction.MultiHeadWeights
        Heads in the model's order; heads of one lengthscale group must share ``K``.
    logdet : pfntheory.maths.multihead_construction.LogdetReadout
        The log-determinant readout (``ld_coef = coef / 2``).
    """
    if not isinstance(model, MixturePFN):
        raise ArgumentTypeError(f"model must be a MixturePFN, got {type(model).__name__}")
    if not isinstance(weights, mh.MultiHeadWeights):
        raise ArgumentTypeError(f"weights must be MultiHeadWeights, got {type(weights).__name__}")
    if not isinstance(logdet, mh.LogdetReadout):
        raise ArgumentTypeError(f"logdet must be a LogdetReadout, got {type(logdet).__name__}")
    cfg = model.config
    if weights.H != model.H or weights.d != model.d or weights.L != cfg.L:
        raise ValueError(
            f"weights have H={weights.H}, d={weights.d}, L={weights.L}; the model "
            f"H={model.H}, d={model.d}, L={cfg.L}"
        )
    if logdet.coef.shape != (model.H, mh.N_LOGDET_FEATURES):
        raise ValueError(f"logdet.coef must have shape {(model.H, mh.N_LOGDET_FEATURES)}")
    d = model.d
    y, k, f, g = d, d + 1, d + 2, d + 3
    scale = np.zeros(tuple(model.scale.shape))
    for gi, hs in enumerate(model.groups):
        K = weights.heads[hs[0]].K
        if any(not np.array_equal(weights.heads[h].K, K) for h in hs):
            raise ValueError(f"weights: heads {hs} share a lengthscale in the model but not K")
        diag = np.stack([np.diag(K[layer])[:d] for layer in range(cfg.L)])
        scale[gi] = diag[:1] if cfg.shared_scale else diag
    w = weights.heads
    V = np.stack(
        [
            [[x.V[m][f, y], x.V[m][f, f], x.V[m][g, k], x.V[m][g, g]] for m in range(1, cfg.L)]
            for x in w
        ]
    )
    S = np.stack([[[x.S[m][f, f], x.S[m][g, g]] for m in range(1, cfg.L)] for x in w])
    W = np.stack([[x.W[0, f], x.W[1, y], x.W[1, k], x.W[1, g]] for x in w])
    values = {
        "scale": scale,
        "amp": [x.V[0][k, y] for x in w],
        "V": V,
        "S": S,
        "W": W,
        "q_scale": 1.0 / weights.noise_var,
        "ld_coef": 0.5 * logdet.coef,
    }
    with torch.no_grad():
        for name, value in values.items():
            p = getattr(model, name)
            p.copy_(torch.as_tensor(np.asarray(value), dtype=p.dtype).reshape(p.shape))
        model.log_prior.copy_(torch.as_tensor(weights.log_prior, dtype=model.log_prior.dtype))
    return model
