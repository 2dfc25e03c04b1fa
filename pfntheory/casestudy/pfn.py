"""The PFN of the real-data case studies: TF^pr pretrained on the fitted EB prior (PyTorch).

Implements
----------
* supp-sec:real data: "we pretrain the normalized transformer ``TF^pr_{theta,L}`` on synthetic data
  generated from the fitted prior", ``C = 256`` bins, depth ``L = 32``, context sizes
  ``n' ~ Unif[128, 552]`` (Sacramento) and ``Unif[128, 384]`` (Walker Lake), the truncation
  interval ``(a, b]`` by Monte-Carlo calibration under the fitted prior (as in sec:sims). Training
  itself is :func:`pfntheory.nn.train.train` (resumable, atomic run directory); this module only
  builds its run tree, a :class:`~pfntheory.infra.tree.RunSpec` (:func:`pretraining_config`).
* fig:sacramento, fig:walker (top rows): the PFN's PPD on a grid given the observed data as context,
  summarised by its mean and 5%/95% quantiles computed from the binned predictive distribution
  (:func:`pfntheory.maths.metrics.histogram_moments`,
  :func:`pfntheory.maths.metrics.histogram_quantile`).

Choices the paper leaves open (documented, and recorded in every run's ``config.json``)
--------------------------------------------------------------------------------------
* Covariates of the pretraining prior. supp-sec:real data does not say how the inputs of the
  synthetic data sets are drawn. The preprocessing gives every standardised coordinate mean 0 and
  standard deviation exactly ``1/0.3`` on the observed data, and the evaluation grids are
  rectangles over the data, so we draw ``x ~ Unif[-sqrt(3)/0.3, sqrt(3)/0.3]^2``
  (``TaskSpec(covariates='uniform', x_scale=sqrt(3)/0.3)``): the uniform design of
  supp-sec:exp additional with the per-coordinate variance ``1/0.3^2`` of the standardised inputs.
  Resampling the observed inputs would need a covariate sampler that :mod:`pfntheory.nn.priors`
  does not have.
  The variance-matched *Gaussian* design ``N(0, (1/0.3)^2 I)`` was tried first and rejected: its
  tail queries are isolated, and TF^pr's query-token recursion (eqn:recursion prec at ``x``, skip
  scaled by ``1/s_x``; the paper includes the query token) multiplies the query row by
  ``1 - eta sigma^2 / (alpha^2 s_x)`` per layer, which is ``< -1`` once the kernel mass
  ``s_x < eta sigma^2 / (2 alpha^2)`` (about 0.47 for the Sacramento fit, whose noise dominates:
  ``sigma^2 / alpha^2 = 1.58``). At initialisation (Sacramento fit, L = 8, 1024 instances with
  n in {128, 256, 384, 552}) 2.6% of Gaussian-design instances had a loss above 10 and 0.3% a
  non-finite one (so most batches of 32 carried one, and 6 of the first 20 training steps were
  skipped for non-finite gradients), against none under the uniform design. The design does not
  remove the effect at inference: grid cells far from every observation still expand (the
  south-west corner of fig:sacramento). :func:`pfn_forward_shared` reports the factor per query
  (``skip_factor_max``) so that such cells can be counted.
* Initial attention scale. :class:`~pfntheory.infra.config.ModelSpec` has one scalar ``scale_init``;
  we use ``1 / sqrt(ell_1 ell_2)`` (geometric mean of the fitted lengthscales) and let training
  learn the per-coordinate diagonal of ``K = Q`` (mode ``learnable``). ``amp_init = alpha^2`` is
  the fitted value, and the model's ``sigma^2`` is the fitted prior's ``noise_var``.
* Learning rate and steps at paper scale: supp-tab:pretraining hyperparameters has no row for the
  fitted prior; :data:`pfntheory.nn.train.PAPER_SCHEDULE` uses the RBF learnable row
  (``LR_base = 2e-4``, 100,000 steps, batch 128).

Quick scale (:data:`SCALES` ``['quick']``, one CPU core, a few minutes): ``L = 8`` instead of 32,
``C = 64`` bins instead of 256, batch 32 instead of 128, 300 steps at ``LR_base = 3e-3`` instead of
100,000 at 2e-4; the context-size range stays the paper's, so the PFN is pretrained on the context
sizes it is used at. Every scale records a learning curve (E[TV] to the exact PPD of the fitted
prior at ``n' = n_min`` and ``n_max``, 256 held-out instances each, 12 log-spaced steps), so the
case study's claims are gated on convergence like every trained result
(:mod:`pfntheory.infra.convergence`).

Fast inference with one shared context
--------------------------------------
:meth:`~pfntheory.nn.model.PFNTransformer.forward` takes one query per instance, so ``m`` grid
points with the same ``n`` context points would form ``m`` kernels of size ``(n+1) x n`` per layer.
:func:`pfn_forward_shared` computes exactly the same function once for all queries: the context
tokens' ``f`` row does not depend on the query, and their ``g`` row is the same linear recursion for
every query driven by ``k_x`` (eqn:1st attn), so per solver layer it needs one ``n x n`` kernel
among the context tokens, one ``m x n`` query-context kernel and one ``(m, n) @ (n, n)`` product.
``tests/test_casestudy.py`` checks it against ``model.forward`` to round-off.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    choice,
    int_tuple,
    nonneg_int,
    positive_int,
    positive_scalar,
)
from pfntheory.infra.config import LR_UNITS, ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.maths import metrics as M
from pfntheory.maths.gp import EBFit

from ..experiments.scales import BUDGET_CURVE_POINTS, BUDGET_EMA_DECAY, CPU_LR, CPU_LR_UNITS
from ..nn.attention import score_matrix
from ..nn.model import PFNTransformer
from ..nn.solver import LayerAttention, solver_recursion
from ..nn.train import PAPER_SCHEDULE, load_trained, train
from .data import COORD_DIVISOR, DATASETS

__all__ = [
    "CONTEXT_RANGES",
    "PFNScale",
    "SCALES",
    "budget_scales",
    "QUANTILES",
    "PFNPrediction",
    "scale_settings",
    "pretraining_task",
    "pretraining_config",
    "pretrain",
    "load_pfn",
    "pfn_forward_shared",
    "pfn_predict",
]

#: supp-sec:real data: pretraining context sizes ``n' ~ Unif[n_min, n_max]``.
CONTEXT_RANGES = {"sacramento": (128, 552), "walker": (128, 384)}
#: fig:sacramento, fig:walker: the PPD summaries (5% and 95% quantiles; the mean separately).
QUANTILES = (0.05, 0.95)


@dataclass(frozen=True)
class PFNScale:
    """Sizes of one scale of the case-study PFN.

    Attributes
    ----------
    L, C : int
        Depth (attention layers incl. the first) and number of bins.
    steps : int
        Optimiser steps.
    lr : float
        ``LR_base`` (warm-up and cosine decay as in supp-sec:exp details).
    batch_size : int
    lr_units : str
        Units of ``lr`` (:data:`pfntheory.infra.config.LR_UNITS`): ``"absolute"`` (plain Adam) or
        ``"elementwise"`` (each weight's step in its natural units, the experiments' cpu scale).
    checkpoint_every : int
    n_range : (int, int) or None
        Pretraining context sizes; ``None`` is the paper's :data:`CONTEXT_RANGES` for the data set.
    curve_instances : int
        Held-out instances per n' of the learning curve (``learning_curve.json``, E[TV] to the exact
        GP PPD at the two ends of the context-size range, as the experiments' runs); 0: none. The
        curve decides whether a claim on the run may say "holds" / "does not hold" (plateaued) or
        only "undecided" (still improving), :mod:`pfntheory.infra.convergence`.
    ema_decay : float
        Exponential weight average of the run (``RunSpec.ema_decay``; 0: the last iterate).
    curve_points : int
        Log-spaced learning-curve steps (``RunSpec.curve_points``).
    """

    L: int
    C: int
    steps: int
    lr: float
    batch_size: int
    checkpoint_every: int = 100
    n_range: tuple[int, int] | None = None
    curve_instances: int = 256
    lr_units: str = "absolute"
    ema_decay: float = 0.0
    curve_points: int = 12

    def __post_init__(self):
        counts = {"L": 1, "C": 2, "steps": 1, "batch_size": 1, "checkpoint_every": 1}
        for name, least in counts.items():
            value = positive_int(getattr(self, name), name, minimum=least)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "lr", positive_scalar(self.lr, "lr"))
        object.__setattr__(
            self, "curve_instances", nonneg_int(self.curve_instances, "curve_instances")
        )
        choice(self.lr_units, "lr_units", LR_UNITS)
        if not 0 <= positive_scalar(self.ema_decay, "ema_decay", allow_zero=True) < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {self.ema_decay}")
        positive_int(self.curve_points, "curve_points", minimum=2)
        if self.n_range is not None:
            rng = int_tuple(self.n_range, "n_range")
            if len(rng) != 2 or rng[0] > rng[1]:
                raise ValueError(
                    f"n_range must be (n_min, n_max), n_min <= n_max, got {self.n_range}"
                )
            object.__setattr__(self, "n_range", rng)


_PAPER_LR, _PAPER_STEPS = PAPER_SCHEDULE[("ard_rbf", "learnable")]
#: ``paper``: supp-sec:real data (C = 256, L = 32) with the schedule of supp-tab:pretraining
#: hyperparameters; ``cpu``: the paper's model (L = 32, C = 256) and context-size range, trained
#: for 1000 steps in batches of 32 with the experiments' cpu optimiser (Adam in natural units at
#: 3e-2, :data:`pfntheory.experiments.definitions.CPU_LR`): about half an hour of one core;
#: ``quick``: what one CPU core trains in a few minutes (see the module docstring).
SCALES = {
    "paper": PFNScale(
        L=32, C=256, steps=_PAPER_STEPS, lr=_PAPER_LR, batch_size=128, checkpoint_every=500
    ),
    "cpu": PFNScale(L=32, C=256, steps=1000, lr=CPU_LR, batch_size=32, lr_units=CPU_LR_UNITS),
    "quick": PFNScale(L=8, C=64, steps=300, lr=3e-3, batch_size=32, checkpoint_every=50),
}


def budget_scales(scale: str = "cpu", factor: int = 2) -> dict[int, PFNScale]:
    """The budget-doubling pair of ``scale`` (docs/verdicts.md, "Budget doubling"): its PFN at its
    steps S and at ``factor`` S, each with its own schedule, weight-averaged and with a dense
    learning curve as fig:exp1's budget runs (:data:`pfntheory.experiments.scales.
    BUDGET_EMA_DECAY`, ``BUDGET_CURVE_POINTS``). Keyed by steps. ``factor`` is a power of 2:
    budget doubling pairs a run only with the run at half its steps."""
    sc = scale_settings(scale)
    factor = positive_int(factor, "factor", minimum=2)
    if factor & (factor - 1):  # the page pairs S -> 2S -> 4S ...: doublings only
        raise ValueError(f"factor must be a power of 2 (a doubling: 2, 4, ...), got {factor}")
    return {
        steps: dataclasses.replace(
            sc, steps=steps, ema_decay=BUDGET_EMA_DECAY, curve_points=BUDGET_CURVE_POINTS
        )
        for steps in (sc.steps, factor * sc.steps)
    }


def scale_settings(scale: str) -> PFNScale:
    """The :class:`PFNScale` of ``scale`` (a key of :data:`SCALES`)."""
    return SCALES[choice(scale, "scale", tuple(SCALES))]


def pretraining_task(fit: EBFit, coord_divisor: float = COORD_DIVISOR) -> TaskSpec:
    """The fitted ARD RBF prior of supp-sec:real data with covariates
    ``Unif[-sqrt(3)/coord_divisor, sqrt(3)/coord_divisor]^d`` (per-coordinate variance
    ``1/coord_divisor^2``, that of the standardised inputs; see the module docstring)."""
    if not isinstance(fit, EBFit):
        raise ArgumentTypeError(f"fit must be an EBFit, got {type(fit).__name__}")
    coord_divisor = positive_scalar(coord_divisor, "coord_divisor")
    return TaskSpec.from_fit(fit, covariates="uniform", x_scale=math.sqrt(3.0) / coord_divisor)


def pretraining_config(
    fit: EBFit,
    dataset: str,
    scale: str | PFNScale = "quick",
    *,
    seed: int = 0,
    coord_divisor: float = COORD_DIVISOR,
) -> RunSpec:
    """The run tree (:class:`~pfntheory.infra.tree.RunSpec`) of the case-study PFN ``TF^pr``
    (normalised, learnable, rbf score, psi head) on the prior ``fit`` of ``dataset``.

    Parameters
    ----------
    fit : EBFit
        The empirical-Bayes fit (the pretraining prior).
    dataset : {'sacramento', 'walker'}
        Selects the context-size range :data:`CONTEXT_RANGES` (unless the scale sets one).
    scale : {'quick', 'cpu', 'paper'} or PFNScale
    seed : int
        Model initialisation and data stream of :func:`pfntheory.nn.train.train`.
    """
    choice(dataset, "dataset", DATASETS)
    coord_divisor = positive_scalar(coord_divisor, "coord_divisor")
    sc = scale if isinstance(scale, PFNScale) else scale_settings(scale)
    task = pretraining_task(fit, coord_divisor)
    n_min, n_max = sc.n_range if sc.n_range is not None else CONTEXT_RANGES[dataset]
    model = ModelSpec(
        score="rbf",
        L=sc.L,
        C=sc.C,
        mode="learnable",
        normalised=True,
        head="psi",
        amp_init=fit.alpha**2,
        scale_init=1.0 / float(np.exp(np.mean(np.log(fit.lengthscales)))),
    )  # 1/geomean(ell)
    curve: dict[str, Any] = {}
    if positive_int(sc.curve_instances, "curve_instances", minimum=0):
        curve = {
            "curve_n_eval": (n_min, n_max),
            "curve_instances": sc.curve_instances,
            "curve_points": sc.curve_points,
        }
    return RunSpec(
        task=task,
        model=model,
        n_min=n_min,
        n_max=n_max,
        steps=sc.steps,
        lr=sc.lr,
        batch_size=sc.batch_size,
        lr_units=sc.lr_units,
        ema_decay=sc.ema_decay,
        seed=positive_int(seed, "seed", minimum=0),
        **curve,
    )


def pretrain(
    spec: RunSpec,
    run_dir,
    *,
    checkpoint_every: int = 100,
    device: str = "auto",
    progress: bool = True,
) -> Path:
    """Train (resume, or skip when finished) the case-study PFN in ``run_dir``
    (:func:`pfntheory.nn.train.train`; ``checkpoint_every`` from the scale, :class:`PFNScale`)."""
    return train(spec, run_dir, device=device, checkpoint_every=checkpoint_every, progress=progress)


def load_pfn(run_dir, device: str = "cpu"):
    """``(model, config, metrics)`` of a finished run (:func:`pfntheory.nn.train.load_trained`)."""
    return load_trained(run_dir, device=device)


@torch.no_grad()
def pfn_forward_shared(
    model: PFNTransformer, X, Y, Xq, *, chunk: int = 4096, dtype: torch.dtype = torch.float64
) -> dict[str, np.ndarray]:
    """``model`` applied to every query of ``Xq`` with the same context ``(X, Y)``.

    Equals ``model(X[None].expand(m, n, d), Y[None].expand(m, n), Xq)`` (see the module docstring),
    evaluated in ``dtype`` (float64 by default: the float32 weights are used exactly, the arithmetic
    is more accurate than the float32 forward).

    Parameters
    ----------
    model : PFNTransformer
    X : array_like of shape (n, d)
        Context inputs (standardised).
    Y : array_like of shape (n,)
        Context labels (standardised).
    Xq : array_like of shape (m, d)
        Queries.
    chunk : int
        Queries processed at once (memory ``O(chunk n)``).

    Returns
    -------
    dict with ``logits`` (m, C), ``mu_L`` (m,), ``tau_L`` (m,) as float64 NumPy arrays, and
    ``skip_factor_max`` (m,): the largest ``|1 + S_ff^(l) / s_x^(l)|`` over the solver layers
    (TF^pr; ``|1 + S_ff^(l)|`` for TF), the per-layer factor of the query's own ``f`` row; above 1
    the query recursion expands (see the module docstring).
    """
    if not isinstance(model, PFNTransformer):
        raise ArgumentTypeError(f"model must be a PFNTransformer, got {type(model).__name__}")
    if dtype not in (torch.float32, torch.float64):
        raise ArgumentTypeError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    cfg = model.config
    X = torch.as_tensor(as_float_array(X, "X", ndim=2, non_empty=True), dtype=dtype)
    Y = torch.as_tensor(as_float_array(Y, "Y", ndim=1), dtype=dtype)
    Xq_all = torch.as_tensor(as_float_array(Xq, "Xq", ndim=2, non_empty=True), dtype=dtype)
    n, d = X.shape
    if d != model.d or Xq_all.shape[1] != model.d:
        raise ValueError(
            f"X and Xq must have d = {model.d} columns, got {tuple(X.shape)} and "
            f"{tuple(Xq_all.shape)}"
        )
    if Y.shape != (n,):
        raise ValueError(f"Y must have shape ({n},), got {tuple(Y.shape)}")
    chunk = positive_int(chunk, "chunk")
    dev = model.scale.device
    c = {k: v.detach().to(dev, dtype) for k, v in model.coefficients().items()}
    scale, amp, V, S, W = c["scale"], c["amp"], c["V"], c["S"], c["W"]
    X, Y = X.to(dev), Y.to(dev)
    edges = model.edges.to(dev)
    head = model.head.to(dtype) if cfg.head == "psi" else model.head
    # the context-context kernels and the query-independent f row: once for all queries
    P_cc = [
        score_matrix(X * scale[layer], X * scale[layer], cfg.score) for layer in range(1, cfg.L)
    ]
    out: dict[str, list] = {"logits": [], "mu_L": [], "tau_L": [], "skip_factor_max": []}
    for start in range(0, Xq_all.shape[0], chunk):
        xq = Xq_all[start : start + chunk].to(dev)  # (m, d)
        m = xq.shape[0]
        # eqn:1st attn: row k of token j is amp * kappa(x_{n+1}, x_j)
        a0, aq0 = X * scale[0], xq * scale[0]
        k_c = amp * score_matrix(aq0, a0, cfg.score)  # (m, n) k_x at context
        k_q = amp * score_matrix(aq0[:, None, :], aq0[:, None, :], cfg.score)[:, 0, 0]  # (m,)
        # eqn:l attn (nn.solver.solver_recursion) on two token groups: the context tokens with
        # the channels (f, g_1 .. g_m) (f is the same for every query, g_q is driven by query
        # q's k_x) and the m queries with their own (f, g)
        attend = _SharedContext(P_cc, X, xq, scale[1:], S[:, 0], cfg.score, cfg.normalised)
        f_q, g_q = solver_recursion(
            (Y.new_zeros(n, 1 + m), Y.new_zeros(m, 2)),
            torch.cat([Y[:, None], k_c.T], 1),  # rows y, k_{x_q} of the context
            torch.cat([V[:, :1], V[:, 2:3].expand(-1, m)], 1),  # V_fy, V_gk per channel
            torch.cat([V[:, 1:2], V[:, 3:].expand(-1, m)], 1),  # V_ff, V_gg
            (torch.cat([S[:, :1], S[:, 1:].expand(-1, m)], 1), S),  # S_ff, S_gg per group
            attend,
            cfg.normalised,
        )[1].unbind(-1)
        growth = attend.growth  # max_l |1 + S_ff / s_x|
        mu = W[0] * f_q  # readout W [Z^(L)]_{:, n+1}
        tau = W[1] + W[2] * k_q + W[3] * g_q
        if cfg.head == "psi":
            logits = head(mu, tau, edges)
        else:
            zq = torch.cat([xq, xq.new_ones(m, 1), k_q[:, None], f_q[:, None], g_q[:, None]], -1)
            p = next(model.head.parameters())
            logits = model.head(zq.to(p.dtype)).to(dtype)
        out["logits"].append(logits.cpu())
        out["mu_L"].append(mu.cpu())
        out["tau_L"].append(tau.cpu())
        out["skip_factor_max"].append(growth.cpu())
    if cfg.head == "psi":
        model.head.to(next(model.parameters()).dtype)  # undo the cast
    return {k: torch.cat(v).double().numpy() for k, v in out.items()}


class _SharedContext(LayerAttention):
    """The solver layers' attention with one context for ``m`` queries: per layer the
    ``n x n`` context kernel (given, ``P_cc``) and the ``m x n`` query-context kernel; tracks the
    query's skip factor ``max_l |1 + S_ff^(l) / s_x|`` (:func:`pfn_forward_shared`)."""

    def __init__(self, P_cc, X, xq, scales, S_ff, score: str, normalised: bool):
        self.P_cc, self.X, self.xq, self.scales = P_cc, X, xq, scales
        self.S_ff, self.score, self.normalised = S_ff, score, normalised
        self.s_cc = [P.sum(-1) for P in P_cc] if normalised else []  # s_j of context tokens
        self.growth = xq.new_zeros(xq.shape[0])

    def __call__(self, layer, vals, H):
        P = self.P_cc[layer]  # (n, n) [j, i]
        sc = self.scales[layer]
        P_q = score_matrix(self.xq * sc, self.X * sc, self.score)  # (m, n)
        att_c = P @ vals  # (n, 1 + m): f and every query's g at the context
        att_q = torch.stack([P_q @ vals[:, 0], (P_q * vals[:, 1:].T).sum(-1)], -1)  # (m, 2)
        s_c = s_q = None
        if self.normalised:  # Attn^na: the attention and the skip term divided by s_x
            s_c, s_q = self.s_cc[layer], P_q.sum(-1)
            att_c, att_q = att_c / s_c[:, None], att_q / s_q[:, None]
            factor = (1 + self.S_ff[layer] / s_q).abs()
        else:
            factor = (1 + self.S_ff[layer]).abs().expand(len(self.growth))
        self.growth = torch.maximum(self.growth, factor)
        return (att_c, s_c), (att_q, s_q)


@dataclass(frozen=True)
class PFNPrediction:
    """The PFN's binned PPD summarised at ``m`` queries (standardised response scale).

    Attributes
    ----------
    mean : ndarray of shape (m,)
        ``m_1`` of the histogram distribution (:func:`pfntheory.maths.metrics.histogram_moments`).
    quantiles : ndarray of shape (len(levels), m)
        Generalised inverse of the histogram CDF
        (:func:`pfntheory.maths.metrics.histogram_quantile`).
    levels : tuple of float
    mu_L, tau_L : ndarray of shape (m,)
        The transformer's readout ``(mu_L, tau_L)`` before the head.
    skip_factor_max : ndarray of shape (m,)
        See :func:`pfn_forward_shared` (> 1: the query recursion expands there).
    edges : ndarray of shape (C + 1,)
    """

    mean: np.ndarray
    quantiles: np.ndarray
    levels: tuple[float, ...]
    mu_L: np.ndarray
    tau_L: np.ndarray
    skip_factor_max: np.ndarray
    edges: np.ndarray

    def quantile(self, q: float) -> np.ndarray:
        """The stored quantile of level ``q`` (one of ``levels``)."""
        for i, lv in enumerate(self.levels):
            if math.isclose(lv, float(q)):
                return self.quantiles[i]
        raise ValueError(f"q={q} is not one of the stored levels {self.levels}")


def pfn_predict(
    model: PFNTransformer, X, Y, Xq, levels=QUANTILES, *, chunk: int = 4096
) -> PFNPrediction:
    """PFN predictive mean and quantiles at ``Xq`` given the context ``(X, Y)`` (standardised).

    Parameters
    ----------
    model : PFNTransformer
    X : array_like of shape (n, d)
    Y : array_like of shape (n,)
    Xq : array_like of shape (m, d)
    levels : sequence of float in (0, 1)
        Quantile levels (default 5% and 95%, fig:sacramento).
    chunk : int
        Queries per forward chunk.

    Returns
    -------
    PFNPrediction
    """
    levels = tuple(float(v) for v in as_float_array(levels, "levels", ndim=(0, 1)).ravel())
    if not levels or any(not 0.0 < v < 1.0 for v in levels):
        raise ValueError(f"levels must lie in (0, 1), got {levels}")
    raw = pfn_forward_shared(model, X, Y, Xq, chunk=chunk)
    edges = model.edges.detach().double().cpu().numpy()
    lg = raw["logits"]
    probs = np.exp(lg - lg.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)  # softmax, (m, C)
    m1, _ = M.histogram_moments(edges, probs)
    Q = np.stack([M.histogram_quantile(edges, probs, q) for q in levels])  # (len(levels), m)
    return PFNPrediction(
        mean=m1,
        quantiles=Q,
        levels=levels,
        mu_L=raw["mu_L"],
        tau_L=raw["tau_L"],
        skip_factor_max=raw["skip_factor_max"],
        edges=edges,
    )
