"""PFN pretraining of the transformer on a GP prior (resumable, atomic run directories).

Implements
----------
* sec:sims (Pretraining): per step, ``n ~ Unif[n_min, n_max]``, a batch of prior instances with
  ``y`` drawn from the PPD truncated to the calibrated ``(a, b]``, and the truncated NLL
  ``-log q(y) = -log sm(ell)_{c(y)} + log Delta_c`` (eqn:TF piece ppd).
* supp-sec:exp details (Pretraining details): Adam without weight decay, linear warm-up over the
  first 5% of steps, cosine decay to ``0.1 x LR_base``, gradient clipping at global norm 1, batch
  128; the learning rates and step counts of supp-tab:pretraining hyperparameters
  (:data:`PAPER_SCHEDULE`).

Exact resumption
----------------
The data of step ``s`` is a deterministic function of ``(seed, s)`` (its own ``torch.Generator``
seeded from both), so a run killed after its last checkpoint and resumed from it replays the same
batches and reaches bitwise the same weights as an uninterrupted run. A checkpoint (model,
optimiser, scheduler, RNG states, step, loss history) is written atomically every
``checkpoint_every`` steps.

Mixed context sizes
-------------------
``context_groups = G > 1`` mixes ``G`` context sizes in every step without padding: the batch is
split into ``G`` groups, each a dense ``(B_g, n_g)`` batch with its own
``n_g ~ Unif{n_min..n_max}``, and the gradients of ``(B_g / B) mean_g NLL`` are accumulated group by
group before the one optimiser step (:func:`accumulate_gradients`). The step computes exactly
``sum_g B_g (n_g + 1) n_g`` kernel entries (padding every instance to the step's largest ``n`` would
compute ``B (n_max + 1) n_max``) and holds one group's graph at a time. The gradient averages over
``G`` context sizes instead of one, at the price of ``G`` smaller matrix products
(``benchmarks/train_step.py --context-groups`` measures it).

Non-finite gradients
--------------------
A batch whose gradient is not finite (e.g. a transient ``tau_L <= 0`` that the head's positivity map
turns into an astronomically large loss) is skipped, as a mixed-precision ``GradScaler`` would skip
it: the weights are not updated, the step still counts (so the schedule and the data stream stay
aligned), its loss is recorded as NaN, and ``metrics.json`` reports ``skipped_steps``.
:data:`MAX_NONFINITE` consecutive skips stop the run with an error.

Sample efficiency (issue 10, item 4)
------------------------------------
The early loss spikes of the learnable mode have one cause: plain Adam moves every coordinate by
about ``lr`` per step whatever its size, while the solver weights live on very different scales
(the paper states no initial weights; ours start at the theory values: ``V ~ eta = 1/(lambda_1 +
sigma^2) ~ 5e-3`` and the ridge weight ``S_ff = -eta sigma^2 ~ 2e-4`` for TF, ``W_2y = sigma^2 =
0.04``, scales and ``W`` ~ 1). At lr 1e-3 the ridge weight flips sign within a few steps (RBF d=2,
L=32: ``S_ff`` -2e-4 -> +0.027 by step 130), ``tau_L`` turns negative on some instances and the
truncated NLL jumps to 10-1000. The paper's ``LR_base = 2e-4`` for the learnable rows is the size of
that smallest weight. ``lr_units="elementwise"`` trains in each weight's natural unit
(``theta = theta_0 (1 + u)``, Adam on ``u``), so a step changes every weight by about ``lr`` of its
own size. Measured at RBF d=2, L=8, C=64, n in [64,128], 600 steps, batch 128, seed 0 (max and count
of 3-step windows of the training loss above 2; E[TV] +- SE at step 600 on 256 held-out contexts):

    lr_units     lr     max window loss  windows > 2   E[TV] n'=64     E[TV] n'=128
    absolute     1e-3   1443             19            0.277 +- 0.009  0.278 +- 0.011
    elementwise  1e-2   37               3             0.355 +- 0.010  0.339 +- 0.012
    elementwise  3e-2   4.4              3             0.259 +- 0.010  0.230 +- 0.009
    elementwise  1e-1   162              5             0.193 +- 0.008  0.166 +- 0.007
    relative     1e-2   56               5             0.354 +- 0.010  0.338 +- 0.012
    relative     3e-2   62               5             0.263 +- 0.009  0.233 +- 0.009
    relative     1e-1   352              7             0.195 +- 0.008  0.173 +- 0.008
    elementwise  3e-2   35 (warm-up 20%) 4             0.257 +- 0.010  0.228 +- 0.009
    elementwise  1e-1   23 (warm-up 20%) 5             0.203 +- 0.008  0.173 +- 0.007

A longer warm-up moves the remaining spikes rather than removing them: they come from transient
``tau_L <= tau_min`` (the head's positivity map then gives a density of variance <= tau_min = 1e-3,
and a label a few tenths away costs ``(y - mu)^2 / (2 tau_min)`` ~ 10-500 nats).
None of them removes every spike, so the default stays plain Adam ("absolute", the paper's
wording); "elementwise" at 3e-2 cuts the largest spike 300x at equal or better E[TV], and 1e-1
reaches a 30-40% lower E[TV] in the same 600 steps (with larger transient spikes).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import metrics as M
from .. import runs
from .._checks import (
    ArgumentTypeError,
    choice,
    keys,
    nonneg_int,
    pair,
    positive_int,
    positive_scalar,
    probability,
    seed_int,
)
from .._checks import context_groups as check_context_groups
from .._checks import interval as check_interval
from ..config import (
    BATCH_SIZE,
    CLIP_NORM,
    LEARNING_CURVE_FILE,
    LEARNING_CURVE_SEED,
    LR_UNITS,
    MIN_LR_RATIO,
    MODES,
    PAPER_SCHEDULE,
    QUICK_SCHEDULE,
    SCALES,
    TASK_KINDS,
    WARMUP_FRAC,
    curve_file,
)
from ..convergence import METRICS
from ..discretize import bin_edges
from ..stats import mean_se
from .head import check_edges
from .model import ModelConfig, PFNTransformer, select_device
from .multihead import MixturePFN
from .priors import (
    COVARIATES,
    Batch,
    TaskConfig,
    calibrate_task_interval,
    sample_batch,
    sample_context_size,
)

__all__ = [
    "TrainConfig",
    "CURVE_METRICS",
    "WEIGHTS_LAST",
    "ema_decay_at",
    "weight_average",
    "PAPER_SCHEDULE",
    "QUICK_SCHEDULE",
    "schedule_for",
    "resolve_device",
    "lr_factor",
    "truncated_nll",
    "step_generator",
    "group_sizes",
    "step_batches",
    "accumulate_gradients",
    "build_model",
    "train",
    "load_trained",
    "read_config",
    "weights_problem",
    "LR_UNITS",
    "LEARNING_CURVE",
    "curve_steps",
    "curve_file",
    "read_learning_curve",
    "format_learning_curve",
]

#: Consecutive steps with non-finite gradients (skipped) after which training stops with an error.
MAX_NONFINITE = 50
#: File of the learning curve in a run directory (schema 1, see :func:`read_learning_curve`).
LEARNING_CURVE = LEARNING_CURVE_FILE


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def refuse_other_config(
    config: TrainConfig, run_dir, hint: str = "use another run directory or delete it"
) -> None:
    """Raise a one-line ``ValueError`` naming the differing fields when ``run_dir`` holds a
    ``config.json`` of another run (a file written before a field existed reads back with that
    field's default, so it is not "different" for the fields it lacks)."""
    run_dir = Path(run_dir)
    path = run_dir / runs.CONFIG
    if not path.is_file():
        return
    try:
        doc = runs.load_json(path)
        if doc == runs.config_to_dict(config):
            return
        old = _flat(runs.config_to_dict(TrainConfig.from_dict(doc)))
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{run_dir} holds a run whose config.json cannot be read ({err}); {hint}"
        ) from err
    new = _flat(runs.config_to_dict(config))
    fields = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if fields:
        shown = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
        raise ValueError(
            f"{run_dir} holds a run trained with a different config (differs in {shown}); {hint}"
        )


def schedule_for(kind: str, mode: str, scale: str = "paper") -> tuple[float, int]:
    """``(LR_base, steps)`` for a task kind and parameterisation mode at ``scale`` 'paper' or
    'quick' (the ``cpu`` scale chooses its steps per experiment, see
    :mod:`pfntheory.experiments.definitions`)."""
    choice(kind, "task kind", TASK_KINDS)
    choice(mode, "mode", MODES)
    choice(scale, "scale", tuple(x for x in SCALES if x != "cpu"))
    if scale == "quick":
        return QUICK_SCHEDULE["lr"], int(QUICK_SCHEDULE["steps"])
    key = (kind, mode) if (kind, mode) in PAPER_SCHEDULE else (kind, "learnable")
    if key not in PAPER_SCHEDULE:
        raise ValueError(
            f"unknown task kind {kind!r}; expected one of {sorted({k for k, _ in PAPER_SCHEDULE})}"
        )
    return PAPER_SCHEDULE[key]


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a trained run (written to ``config.json``).

    Parameters
    ----------
    task : TaskConfig
    model : ModelConfig
    n_min, n_max : int
        Pretraining context sizes ``n ~ Unif{n_min..n_max}`` per batch (per group, see
        ``context_groups``).
    steps : int
        Optimiser steps ``N``.
    lr : float
        ``LR_base``.
    batch_size, warmup_frac, min_lr_ratio, clip_norm
        supp-sec:exp details: 128, 5%, 0.1, 1.0.
    seed : int
        Seeds the model initialisation and the data stream.
    checkpoint_every : int
        Steps between checkpoints.
    device : str
        'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:1', ...
    interval : (a, b), optional
        Truncation interval; ``None`` calibrates it (sec:sims) with ``calib_instances`` instances,
        ``outside_mass`` and ``calib_seed`` (fixed across runs, so runs on one task share
        ``(a, b]``).
    lr_units : {"absolute", "relative", "elementwise"}
        See :data:`LR_UNITS`. "absolute" is plain Adam (the paper's wording); "relative" scales each
        parameter tensor's rate by the magnitude of its initial values; "elementwise" trains each
        weight in its own unit (the fix of the early loss spikes, module docstring).
    context_groups : int
        ``G``: each step splits its batch into ``G`` near-equal groups, each with its own context
        size ``n_g ~ Unif{n_min..n_max}`` (see "Mixed context sizes" in the module docstring). ``1``
        (the default) is one ``n`` per step, the paper's sec:sims, bitwise as before the
        option existed.
    curve_n_eval : tuple of int
        Held-out context sizes n' of the learning curve; empty: no learning curve.
    curve_instances : int
        Held-out instances per n' (drawn once, from ``curve_seed``).
    curve_points : int
        Number of log-spaced evaluation steps (the final step is always one; step 0 is added).
    curve_seed : int
        Seed of the held-out set (the same for every run of one task).
    curve_covariates : tuple of str
        Further covariate laws (:data:`pfntheory.nn.priors.COVARIATES`, each different from the
        task's) at which the learning curve is also evaluated, on a held-out set drawn the same way
        with only the covariates replaced (e.g. ``("uniform",)``: the covariate shift of
        supp-sec:exp additional). Each is written to ``learning_curve_<covariates>.json``
        (:func:`curve_file`), same schema.
    ema_decay : float
        ``0`` (the default): the run is its last iterate. ``beta in (0, 1)``: an exponential
        average of the weights, ``bar theta <- d_t bar theta + (1 - d_t) theta`` with
        ``d_t = min(beta, (1 + t) / (10 + t))`` after the ``t``-th update, is kept beside them;
        the learning curve and ``weights.pt`` are the average's, and the last iterate's curve
        values (keys ``last_<metric>``) and weights (``weights_last.pt``) are kept beside them
        (docs/verdicts.md, "Weight averaging").
    """

    task: TaskConfig
    model: ModelConfig
    n_min: int
    n_max: int
    steps: int
    lr: float
    batch_size: int = BATCH_SIZE
    warmup_frac: float = WARMUP_FRAC
    min_lr_ratio: float = MIN_LR_RATIO
    clip_norm: float = CLIP_NORM
    seed: int = 0
    checkpoint_every: int = 200
    device: str = "auto"
    interval: tuple[float, float] | None = None
    outside_mass: float = 0.002
    calib_instances: int = 2000
    calib_seed: int = 0
    lr_units: str = "absolute"
    curve_n_eval: tuple[int, ...] = ()
    curve_instances: int = 256
    curve_points: int = 12
    curve_seed: int = LEARNING_CURVE_SEED
    curve_covariates: tuple[str, ...] = ()
    context_groups: int = 1
    ema_decay: float = 0.0

    def __post_init__(self):
        if not isinstance(self.task, TaskConfig):
            raise ValueError(f"task must be a TaskConfig, got {type(self.task).__name__}")
        if not isinstance(self.model, ModelConfig):
            raise ValueError(f"model must be a ModelConfig, got {type(self.model).__name__}")
        if self.model.d != self.task.d:
            raise ValueError(f"model.d={self.model.d} must equal task.d={self.task.d}")
        n_min, n_max = positive_int(self.n_min, "n_min"), positive_int(self.n_max, "n_max")
        if n_min > n_max:
            raise ValueError(f"n_min <= n_max is required, got n_min={n_min}, n_max={n_max}")
        for name in ("steps", "batch_size", "checkpoint_every", "calib_instances"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        object.__setattr__(
            self, "context_groups", check_context_groups(self.context_groups, self.batch_size)
        )
        choice(self.lr_units, "lr_units", LR_UNITS)
        if not isinstance(self.curve_n_eval, (tuple, list)):
            raise ValueError(f"curve_n_eval must be a tuple of ints, got {self.curve_n_eval!r}")
        object.__setattr__(
            self, "curve_n_eval", tuple(positive_int(n, "curve_n_eval") for n in self.curve_n_eval)
        )
        if not isinstance(self.curve_covariates, (tuple, list)):
            raise ValueError(
                f"curve_covariates must be a tuple of str, got {self.curve_covariates!r}"
            )
        covs = tuple(choice(c, "curve_covariates", COVARIATES) for c in self.curve_covariates)
        if self.task.covariates in covs or len(set(covs)) != len(covs):
            raise ValueError(
                f"curve_covariates must be distinct and differ from the task's "
                f"covariates {self.task.covariates!r}, got {covs}"
            )
        if covs and not self.curve_n_eval:
            raise ValueError("curve_covariates needs curve_n_eval (the learning curve's n')")
        object.__setattr__(self, "curve_covariates", covs)
        object.__setattr__(
            self,
            "curve_instances",
            positive_int(self.curve_instances, "curve_instances", minimum=2),
        )
        object.__setattr__(
            self, "curve_points", positive_int(self.curve_points, "curve_points", minimum=2)
        )
        for name in ("seed", "calib_seed", "curve_seed"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name, minimum=0))
        object.__setattr__(self, "lr", positive_scalar(self.lr, "lr"))
        object.__setattr__(self, "clip_norm", positive_scalar(self.clip_norm, "clip_norm"))
        for name in ("warmup_frac", "min_lr_ratio"):
            v = positive_scalar(getattr(self, name), name, allow_zero=True)
            if v > 1:
                raise ValueError(f"{name} must lie in [0, 1], got {v}")
            object.__setattr__(self, name, v)
        ema = positive_scalar(self.ema_decay, "ema_decay", allow_zero=True)
        if ema >= 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {ema}")
        object.__setattr__(self, "ema_decay", ema)
        m = positive_scalar(self.outside_mass, "outside_mass")
        if m >= 1:
            raise ValueError(f"outside_mass must be < 1, got {m}")
        if self.interval is not None:
            object.__setattr__(
                self, "interval", check_interval(*self.interval, "interval a", "interval b")
            )
        if not isinstance(self.device, str) or not (
            self.device in ("auto", "cpu") or self.device.startswith("cuda")
        ):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:k]', got {self.device!r}")

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        """Inverse of ``dataclasses.asdict`` (reads ``config.json``)."""
        return runs.dataclass_from_dict(cls, data)


def resolve_device(device: str = "auto") -> torch.device:
    """'auto' -> CUDA when available, else CPU (:func:`pfntheory.nn.model.select_device`)."""
    return select_device(device)


def lr_factor(step: int, steps: int, warmup_frac: float = 0.05, min_lr_ratio: float = 0.1) -> float:
    """Learning-rate multiplier at ``step`` (0-based) (supp-sec:exp details).

    Linear warm-up from ``1/W`` to 1 over the first ``W = ceil(warmup_frac * steps)`` steps, then
    cosine decay from 1 to ``min_lr_ratio`` at the last step (and after it: a scheduler asks for
    ``step = steps`` after the last update). ``step >= 0``, ``steps >= 1``, ``warmup_frac`` and
    ``min_lr_ratio`` in ``[0, 1]``.
    """
    step = nonneg_int(step, "step")
    steps = positive_int(steps, "steps")
    warmup_frac = probability(warmup_frac, "warmup_frac", open_low=False, open_high=False)
    min_lr_ratio = probability(min_lr_ratio, "min_lr_ratio", open_low=False, open_high=False)
    W = math.ceil(warmup_frac * steps)
    if step < W:
        return (step + 1) / W
    T = max(steps - W - 1, 1)
    t = min((step - W) / T, 1.0)
    return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * t))


def truncated_nll(logits: torch.Tensor, y: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """Per-instance truncated NLL ``-log q(y) = -log sm(ell)_{c(y)} + log Delta_c``
    (eqn:TF piece ppd).

    Parameters
    ----------
    logits : Tensor of shape (B, C)
    y : Tensor of shape (B,), in ``(a, b]`` (right-closed bins ``(gamma_c, gamma_{c+1}]``); a NaN,
        infinite or out-of-range label raises ValueError (it has no bin).
    edges : Tensor of shape (C + 1,)

    Returns
    -------
    Tensor of shape (B,)

    ``logits`` must be finite and ``edges`` finite and increasing (:func:`check_edges`); the
    training step (:func:`accumulate_gradients`) calls the unchecked core, where a non-finite
    logit gives a non-finite loss and the step is skipped (:func:`train`).
    """
    for name, t in (("logits", logits), ("y", y), ("edges", edges)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise ArgumentTypeError(f"{name} must be a floating-point torch.Tensor, got {t!r:.60}")
    if logits.dim() != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must have shape (B, C), B >= 1, got {tuple(logits.shape)}")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits contains NaN or infinite values")
    check_edges(edges)
    return _truncated_nll(logits, y, edges)


def _truncated_nll(logits: torch.Tensor, y: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """:func:`truncated_nll` without the checks of its arguments' kinds (the labels are checked)."""
    if logits.dim() != 2 or edges.dim() != 1 or logits.shape[1] + 1 != edges.numel():
        raise ValueError(
            f"logits (B, C) and edges (C+1,) required, got {tuple(logits.shape)} and "
            f"{tuple(edges.shape)}"
        )
    if y.shape != logits.shape[:1]:
        raise ValueError(f"y must have shape ({logits.shape[0]},), got {tuple(y.shape)}")
    e = edges.to(device=y.device, dtype=y.dtype)
    if not bool(torch.isfinite(y).all()):
        raise ValueError("y contains NaN or infinite labels")
    outside = (y <= e[0]) | (y > e[-1])
    if bool(outside.any()):  # the truncated NLL is undefined there: never put it in an end bin
        bad = y[outside]
        raise ValueError(
            f"y must lie in the bins' range (a, b] = ({float(e[0])}, {float(e[-1])}]; "
            f"{int(outside.sum())} label(s) outside, e.g. {float(bad[0])}"
        )
    c = torch.searchsorted(e, y.contiguous(), right=False) - 1  # y in (g_c, g_c+1]
    log_delta = torch.log(e[1:] - e[:-1]).to(logits.dtype)
    logq = torch.log_softmax(logits, dim=-1).gather(1, c[:, None])[:, 0]
    return -logq + log_delta[c]


def step_generator(seed: int, step: int, device) -> torch.Generator:
    """The generator of the data of step ``step``: a deterministic function of ``(seed, step)``
    (seed and step integers >= 0; device as :func:`pfntheory.nn.model.select_device`)."""
    seed, step = seed_int(seed, "seed"), nonneg_int(step, "step")
    device = select_device(device)
    s = np.random.SeedSequence([int(seed), int(step)]).generate_state(2, dtype=np.uint32)
    g = torch.Generator(device=device)
    g.manual_seed(int(s[0]) << 31 | int(s[1]) >> 1)
    return g


def group_sizes(batch_size: int, groups: int) -> list[int]:
    """``batch_size`` split into ``groups`` near-equal positive parts (the first ``B mod G`` one
    larger), e.g. ``group_sizes(128, 3) == [43, 43, 42]``."""
    batch_size = positive_int(batch_size, "batch_size")
    groups = positive_int(groups, "groups")
    if groups > batch_size:
        raise ValueError(
            f"groups must be <= batch_size={batch_size} (every group needs an instance), "
            f"got {groups}"
        )
    q, r = divmod(batch_size, groups)
    return [q + 1] * r + [q] * (groups - r)


def step_batches(
    config: TrainConfig, generator: torch.Generator, device, dtype, interval
) -> list[Batch]:
    """The data of one step: ``config.context_groups`` dense batches, group ``g`` with
    ``n_g ~ Unif{n_min..n_max}`` and ``B_g`` instances (:func:`group_sizes`), all drawn in order
    from ``generator`` (with one group this is the draw of a step before groups existed)."""
    _check_config(config)
    device = select_device(device)
    interval = pair(interval, "interval")
    out = []
    for size in group_sizes(config.batch_size, config.context_groups):
        n = sample_context_size(config.n_min, config.n_max, generator)
        out.append(
            sample_batch(
                config.task, size, n, generator, device=device, dtype=dtype, interval=interval
            )
        )
    return out


def accumulate_gradients(
    model: torch.nn.Module, batches: list[Batch], edges: torch.Tensor
) -> torch.Tensor:
    """Backpropagate the mean truncated NLL over every instance of ``batches`` and return it.

    Group ``g`` contributes ``(B_g / B) mean_g NLL``, backpropagated on its own, so the gradients
    add up to the gradient of the mean over all ``B`` instances while only one group's graph is
    alive at a time; no instance is padded. One group is ``loss.mean()`` exactly (the
    factor is 1.0).
    """
    if not isinstance(model, torch.nn.Module):
        raise ArgumentTypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(batches, (str, bytes, dict)) or not isinstance(batches, (list, tuple)):
        raise ArgumentTypeError(f"batches must be a list of Batch, got {type(batches).__name__}")
    if not batches or not all(isinstance(b, Batch) for b in batches):
        raise ArgumentTypeError("batches must be a non-empty list of Batch (step_batches)")
    if not isinstance(edges, torch.Tensor) or not edges.is_floating_point():
        raise ArgumentTypeError(f"edges must be a floating-point torch.Tensor, got {edges!r:.60}")
    if edges.dim() != 1 or not bool(
        (torch.isfinite(edges).all() & (edges[1:] > edges[:-1]).all()).item()
    ):  # one synchronisation
        raise ValueError("edges must be a finite, strictly increasing 1-d tensor")
    total_size = sum(b.X.shape[0] for b in batches)
    total: torch.Tensor | None = None
    for b in batches:
        out = model(b.X, b.Y, b.xq)
        loss = _truncated_nll(out.logits, b.y, edges).mean() * (b.X.shape[0] / total_size)
        loss.backward()
        total = loss.detach() if total is None else total + loss.detach()
    if total is None:
        raise ValueError("batches must hold at least one group")
    return total


def _check_config(config) -> None:
    if not isinstance(config, TrainConfig):
        raise ArgumentTypeError(
            f"config must be a pfntheory.nn.train.TrainConfig, got {type(config).__name__}"
        )


def build_model(config: TrainConfig, interval: tuple[float, float], device) -> torch.nn.Module:
    """A freshly initialised model (initialisation seeded by ``config.seed``) on ``device``."""
    _check_config(config)
    interval = pair(interval, "interval")
    device = select_device(device)
    edges = torch.as_tensor(bin_edges(*interval, config.model.C), dtype=torch.float64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        if config.model.mixture:  # one head per prior component (pfntheory.nn.multihead)
            model: torch.nn.Module = MixturePFN(config.model, edges, config.task)
        else:
            model = PFNTransformer(config.model, edges)
    return model.to(device)


def weights_problem(config: TrainConfig, run_dir, metrics: dict) -> str | None:
    """What is wrong with a finished run's ``weights.pt`` for ``config`` (None: nothing): it must
    load into the model ``config`` builds (same tensors and shapes) and hold finite values only."""
    path = Path(run_dir) / runs.WEIGHTS
    try:
        state = runs.load_torch(path)
        model = build_model(config, tuple(metrics["interval"]), "cpu")
        model.load_state_dict(state)
    except (runs.CorruptFileError, RuntimeError, KeyError, TypeError, ValueError) as err:
        return f"{path} does not fit the run's config: {str(err).splitlines()[0]}"
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return f"{path} holds non-finite weights"
    return None


def read_config(run_dir) -> TrainConfig:
    """The :class:`TrainConfig` of a run directory."""
    path = Path(run_dir) / runs.CONFIG
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {runs.CONFIG})")
    return TrainConfig.from_dict(runs.load_json(path))


def load_trained(run_dir, device="cpu") -> tuple[torch.nn.Module, TrainConfig, dict]:
    """Load a finished run: ``(model in eval mode, config, metrics)``; weights via
    ``weights_only``."""
    run_dir = Path(run_dir)
    config = read_config(run_dir)
    if not (run_dir / runs.WEIGHTS).is_file() or not (run_dir / runs.METRICS).is_file():
        raise FileNotFoundError(
            f"{run_dir} holds no finished training (weights.pt / metrics.json missing)"
        )
    metrics = runs.load_json(run_dir / runs.METRICS)
    device = torch.device(device)
    model = build_model(config, tuple(metrics["interval"]), device)
    state = runs.load_torch(run_dir / runs.WEIGHTS, map_location=device)
    try:
        model.load_state_dict(state)
    except (RuntimeError, KeyError) as err:
        raise runs.CorruptFileError(
            f"{run_dir / runs.WEIGHTS} does not match the model of config.json: {err}"
        ) from err
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise runs.CorruptFileError(f"{run_dir / runs.WEIGHTS} holds non-finite weights")
    model.eval()
    return model, config, metrics


def _loss_summary(losses: list[float], n_points: int = 200) -> dict:
    """Loss curve averaged over windows (at most ``n_points`` points) and the final-5% mean."""
    L = np.asarray(losses, dtype=float)
    w = max(1, len(L) // n_points)
    m = len(L) // w
    with np.errstate(invalid="ignore"):
        curve = np.nanmean(L[: m * w].reshape(m, w), axis=1)  # skipped steps are NaN
        final = float(np.nanmean(L[-max(1, len(L) // 20) :]))
    return {
        "window": w,
        "step": [int((i + 1) * w) for i in range(m)],
        "loss": curve.tolist(),
        "final_loss": final,
        "first_loss": float(L[0]),
    }


# --------------------------------------------------------------------------------------------------
# learning curves
# --------------------------------------------------------------------------------------------------


def curve_steps(steps: int, n_points: int) -> list[int]:
    """Evaluation steps of a learning curve: 0 (the initialisation), ``n_points`` log-spaced steps
    from 10 (or 1 for short runs) to ``steps``, rounded and de-duplicated; always ends at
    ``steps``."""
    steps, n_points = positive_int(steps, "steps"), positive_int(n_points, "n_points")
    first = 10 if steps >= 100 else 1
    grid = np.unique(np.round(np.geomspace(first, steps, n_points)).astype(int))
    return [0] + sorted({int(v) for v in grid} | {steps})


def _curve_generator(seed: int, n: int, chunk: int) -> torch.Generator:
    s = np.random.SeedSequence([int(seed), int(n), int(chunk), 0xC0FE]).generate_state(
        2, dtype=np.uint32
    )
    return torch.Generator().manual_seed(int(s[0]) << 31 | int(s[1]) >> 1)


def _heldout_set(
    config: TrainConfig, interval, chunk_size: int = 256, covariates: str | None = None
) -> list[tuple[int, list]]:
    """The held-out instances of the learning curve, per n': drawn once per run from
    ``(curve_seed, n', chunk)`` only, so a resumed run (and every run of one task) sees the same
    set. ``covariates`` replaces the task's covariate law (the covariate-shift curve)."""
    task = (
        config.task
        if covariates is None
        else dataclasses.replace(config.task, covariates=covariates)
    )
    out = []
    for n in config.curve_n_eval:
        batches = []
        for chunk, start in enumerate(range(0, config.curve_instances, chunk_size)):
            m = min(chunk_size, config.curve_instances - start)
            batches.append(
                sample_batch(
                    task,
                    m,
                    n,
                    _curve_generator(config.curve_seed, n, chunk),
                    dtype=torch.float64,
                    interval=interval,
                )
            )
        out.append((n, batches))
    return out


def _tv_per_instance(bt, edges: np.ndarray, probs: np.ndarray) -> np.ndarray:
    if bt.weights is None:
        return M.tv_truncnorm_histogram(bt.mu.numpy(), bt.tau.numpy(), edges, probs)
    return M.tv_mixture_histogram(
        bt.weights.numpy(),
        bt.mu_h.numpy(),
        bt.tau_h.numpy(),
        edges,
        probs,
        float(edges[0]),
        float(edges[-1]),
    )


#: Metrics of a learning-curve point (each with ``<metric>_se``).
CURVE_METRICS = ("tv", "nll", "coverage90", "crps")
#: Weights of the last iterate of a weight-averaged run (``weights.pt`` holds the average).
WEIGHTS_LAST = "weights_last.pt"


def _ema_beta(beta, name: str) -> float:
    return probability(beta, name, open_low=False, open_high=True)


def ema_decay_at(beta: float, updates: int) -> float:
    """Decay of the weight average at its ``updates``-th update (1-based):
    ``min(beta, (1 + t) / (10 + t))`` with ``t = updates - 1``, so the first updates follow the
    weights closely instead of holding on to the initialisation (see ``TrainConfig.ema_decay``).
    ``beta`` in ``[0, 1)``, ``updates >= 1``."""
    beta = _ema_beta(beta, "beta")
    t = positive_int(updates, "updates") - 1
    return min(float(beta), (1.0 + t) / (10.0 + t))


def weight_average(model: torch.nn.Module, beta: float) -> torch.optim.swa_utils.AveragedModel:
    """The exponential weight average of ``model`` (torch's ``AveragedModel``) at decay ``beta``
    (:func:`ema_decay_at`); ``update_parameters(model)`` after each optimiser update."""
    if not isinstance(model, torch.nn.Module):
        raise ArgumentTypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    beta = _ema_beta(beta, "beta")

    def avg_fn(avg: torch.Tensor, new: torch.Tensor, num_averaged) -> torch.Tensor:
        d = ema_decay_at(beta, int(num_averaged) + 1)
        return avg * d + new * (1.0 - d)

    return torch.optim.swa_utils.AveragedModel(model, avg_fn=avg_fn)


@torch.no_grad()
def _curve_points(
    model, heldout, edges: np.ndarray, step: int, instances: bool = False
) -> list[dict]:
    """One learning-curve point per n' at ``step``: E[TV], truncated NLL, 90% coverage, CRPS, each
    with its standard error over the held-out instances (:func:`pfntheory.stats.mean_se`);
    ``instances``: also each instance's TV (``tv_instances``, 6 significant digits), for comparisons
    paired on the held-out instances (:func:`pfntheory.convergence.doubling_status`)."""
    was_training = model.training
    model.eval()
    p = next(model.parameters())
    pts = []
    for n, batches in heldout:
        cols: dict[str, list] = {"tv": [], "nll": [], "cov": [], "crps": []}
        for bt in batches:
            out = model(
                bt.X.to(p.device, p.dtype), bt.Y.to(p.device, p.dtype), bt.xq.to(p.device, p.dtype)
            )
            probs = torch.softmax(out.logits.double(), -1).cpu().numpy()
            y = bt.y.numpy()
            lo, hi = M.central_interval(edges, probs, 0.9)
            cols["tv"].append(_tv_per_instance(bt, edges, probs))
            cols["nll"].append(M.histogram_nll(edges, probs, y))
            cols["cov"].append(((lo <= y) & (y <= hi)).astype(float))  # closed, as metrics.coverage
            cols["crps"].append(M.histogram_crps(edges, probs, y))
        pt: dict[str, Any] = {"step": int(step), "n": int(n)}
        for key, name in (("tv", "tv"), ("nll", "nll"), ("cov", "coverage90"), ("crps", "crps")):
            # an NLL may be infinite (a bin of zero mass under the label): mean inf, se NaN
            pt[name], pt[name + "_se"] = mean_se(np.concatenate(cols[key]), allow_inf=key == "nll")
        if instances:
            pt["tv_instances"] = [float(f"{v:.6g}") for v in np.concatenate(cols["tv"])]
        pts.append(pt)
    model.train(was_training)
    return pts


def read_learning_curve(run_dir, covariates: str | None = None) -> dict | None:
    """The learning curve of a run directory (``learning_curve.json``; with ``covariates``, the
    curve on that covariate law, :func:`curve_file`), or None if it has none.

    Schema 1: ``{"schema": 1, "eval_seed", "n_instances", "n_eval": [n'...], "points": [{"step",
    "n", "tv", "tv_se", "nll", "nll_se", "coverage90", "coverage90_se", "crps", "crps_se"}, ...],
    "eval_seconds", "train_seconds"}``; one point per evaluated step and n'.
    """
    if covariates is not None:
        choice(covariates, "covariates", COVARIATES)
    path = Path(run_dir) / curve_file(covariates)
    if not path.is_file():
        return None
    doc = runs.load_json(path)
    if doc.get("schema") != 1 or not isinstance(doc.get("points"), list):
        raise runs.CorruptFileError(f"{path} is not a schema-1 learning curve")
    return doc


def format_learning_curve(doc: dict, metric: str = "tv") -> str:
    """A text table of a learning curve: one row per step, one column per n' (``metric +- se``)."""
    doc = keys("n_eval", "points")(doc, "doc")
    choice(metric, "metric", METRICS)
    ns = list(doc["n_eval"])
    by = {(p["step"], p["n"]): p for p in doc["points"]}
    steps = sorted({p["step"] for p in doc["points"]})
    head = f"{'step':>8} " + " ".join(f"{metric} n'={n:<6}".rjust(22) for n in ns)
    lines = [head]
    for st in steps:
        cells = []
        for n in ns:
            p = by.get((st, n))
            cells.append(f"{p[metric]:.4g} +- {p[metric + '_se']:.2g}".rjust(22) if p else " " * 22)
        lines.append(f"{st:>8} " + " ".join(cells))
    return "\n".join(lines)


def _param_groups(model: torch.nn.Module, lr: float, units: str) -> list[dict]:
    """Adam parameter groups. "relative": rate ``lr * max|theta_0|`` per tensor, so every weight
    moves by about ``lr`` of its own initial size per step (Adam's update is scale-free per
    coordinate)."""
    if units in ("absolute", "elementwise"):  # elementwise: scaled after the step (train())
        return [{"params": list(model.parameters()), "lr": lr}]
    groups = []
    for _, p in sorted(model.named_parameters()):
        size = float(p.detach().abs().max()) if p.numel() else 1.0
        groups.append({"params": [p], "lr": lr * (size if size > 0 else 1.0)})
    return groups


def train(
    config: TrainConfig,
    run_dir,
    progress: bool = True,
    callback: Callable[[int, float], None] | None = None,
) -> Path:
    """Train (or resume, or skip if finished) the run ``config`` in ``run_dir``.

    Parameters
    ----------
    config : TrainConfig
    run_dir : path
        Created if needed. If it holds a ``config.json`` it must equal ``config``.
    progress : bool
        Show a tqdm progress bar.
    callback : callable(step, loss), optional
        Called after every optimiser step with the 1-based step count (e.g. to log, or to interrupt
        a run in a test; an exception propagates after the last checkpoint was written).

    Returns
    -------
    Path of the run directory, holding ``config.json``, ``metrics.json`` and ``weights.pt``.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / runs.CONFIG
    if cfg_path.is_file():
        refuse_other_config(config, run_dir)
    else:
        runs.save_json(cfg_path, runs.config_to_dict(config))
    if (run_dir / runs.WEIGHTS).is_file() and (run_dir / runs.METRICS).is_file():
        done = runs.load_json(run_dir / runs.METRICS)
        if done.get("completed") and done.get("steps") == config.steps:
            problem = weights_problem(config, run_dir, done)
            if problem is None:
                return run_dir
            # weights that do not fit the config (another architecture, non-finite values) do
            # not make a finished run: they and the metrics go, and the training is redone
            for name in (runs.WEIGHTS, runs.METRICS, WEIGHTS_LAST):
                (run_dir / name).unlink(missing_ok=True)
            warnings.warn(f"{problem}; training redoes the run", RuntimeWarning, stacklevel=2)

    device = resolve_device(config.device)
    ckpt_path = run_dir / runs.CHECKPOINT
    ckpt = runs.load_torch(ckpt_path, map_location=device) if ckpt_path.is_file() else None
    if ckpt is not None:
        a, b = ckpt["interval"]
        interval = (float(a), float(b))
    elif config.interval is not None:
        interval = config.interval
    else:
        interval = calibrate_task_interval(
            config.task,
            config.n_min,
            config.n_max,
            config.calib_instances,
            config.outside_mass,
            seed=config.calib_seed,
        )
    model = build_model(config, interval, device)
    ema = weight_average(model, config.ema_decay) if config.ema_decay > 0 else None
    # "elementwise": per-entry units |theta_0| (from the seeded initialisation, so
    # identical on resume)
    units = (
        [
            torch.where(p.detach() != 0, p.detach().abs(), torch.ones_like(p))
            for p in model.parameters()
        ]
        if config.lr_units == "elementwise"
        else None
    )
    edges = torch.as_tensor(
        bin_edges(*interval, config.model.C), dtype=torch.float64, device=device
    )
    opt = torch.optim.Adam(
        _param_groups(model, config.lr, config.lr_units), lr=config.lr, weight_decay=0.0
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_factor(s, config.steps, config.warmup_frac, config.min_lr_ratio)
    )
    dtype = next(model.parameters()).dtype
    start, losses, wall, skipped, bad = 0, [], 0.0, 0, 0
    if ckpt is not None:
        try:
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["optimizer"])
            sched.load_state_dict(ckpt["scheduler"])
            torch.set_rng_state(ckpt["rng_cpu"].cpu())
            if device.type == "cuda" and ckpt.get("rng_cuda") is not None:
                torch.cuda.set_rng_state(ckpt["rng_cuda"].cpu(), device)
            start, losses, wall = int(ckpt["step"]), list(ckpt["losses"]), float(ckpt["wall_time"])
            skipped, bad = int(ckpt["skipped"]), int(ckpt["bad"])
            if ema is not None:
                ema.load_state_dict(ckpt["ema"])
        except (KeyError, RuntimeError, ValueError, TypeError) as err:
            raise runs.CorruptFileError(
                f"{ckpt_path} is not a checkpoint of this run: {err}"
            ) from err

    # learning curve: held-out set drawn once; a resumed run keeps the points up to its checkpoint
    # (later ones are recomputed, identically, since evaluation touches neither weights nor RNG)
    curve_at = set(curve_steps(config.steps, config.curve_points)) if config.curve_n_eval else set()
    # one curve per covariate law: the task's own (None) and each of config.curve_covariates
    designs = (None, *config.curve_covariates) if curve_at else ()
    curves: dict[str | None, dict[str, Any]] = {
        cov: {
            "schema": 1,
            "eval_seed": config.curve_seed,
            "n_instances": config.curve_instances,
            "n_eval": list(config.curve_n_eval),
            "covariates": config.task.covariates if cov is None else cov,
            "points": [],
            "eval_seconds": 0.0,
            **({"weights": "average", "ema_decay": config.ema_decay} if ema is not None else {}),
        }
        for cov in designs
    }
    heldout, np_edges = {}, None
    if curve_at:
        np_edges = bin_edges(*interval, config.model.C)
        for cov in designs:
            heldout[cov] = _heldout_set(config, interval, covariates=cov)
            old_curve = read_learning_curve(run_dir, cov) if start > 0 else None
            if old_curve is not None:
                curves[cov]["points"] = [p for p in old_curve["points"] if p["step"] <= start]
                curves[cov]["eval_seconds"] = float(old_curve.get("eval_seconds", 0.0))

    def eval_seconds() -> float:
        return sum(c["eval_seconds"] for c in curves.values())

    def record_curve(step):
        for cov, curve in curves.items():
            te = time.perf_counter()
            final = step == config.steps
            if ema is None:
                curve["points"] += _curve_points(model, heldout[cov], np_edges, step, final)
            else:  # the average's metrics, the last iterate's beside them as last_<metric>
                pts = _curve_points(ema.module, heldout[cov], np_edges, step, final)
                last = _curve_points(model, heldout[cov], np_edges, step)
                for p, q in zip(pts, last, strict=True):
                    p.update({f"last_{k}": q[k] for k in q if k not in ("step", "n")})
                curve["points"] += pts
            curve["eval_seconds"] += time.perf_counter() - te
        for cov, curve in curves.items():
            curve["train_seconds"] = wall + time.perf_counter() - t0 - eval_seconds()
            runs.save_json(run_dir / curve_file(cov), curve)

    def save_checkpoint(step):
        runs.save_torch(
            ckpt_path,
            {
                "step": step,
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "rng_cpu": torch.get_rng_state(),
                "rng_cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                "losses": losses,
                "wall_time": wall + time.perf_counter() - t0,
                "skipped": skipped,
                "bad": bad,
                "interval": list(interval),
                "ema": ema.state_dict() if ema is not None else None,
            },
        )

    model.train()
    t0 = time.perf_counter()
    if start == 0 and 0 in curve_at:
        record_curve(0)
    bar = tqdm(
        range(start, config.steps),
        initial=start,
        total=config.steps,
        disable=not progress,
        desc=run_dir.name,
        dynamic_ncols=True,
    )
    for step in bar:
        g = step_generator(config.seed, step, device)
        batches = step_batches(config, g, device=device, dtype=dtype, interval=interval)
        opt.zero_grad(set_to_none=True)
        loss = accumulate_gradients(model, batches, edges)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        if torch.isfinite(gnorm):
            if units is None:
                opt.step()
            else:
                # Adam in u = theta/theta_0 - 1: Adam is invariant to a fixed per-coordinate scale
                # of the gradient, so its step in u is its step in theta; theta then moves by
                # theta_0 times it
                before = [p.detach().clone() for p in model.parameters()]
                opt.step()
                with torch.no_grad():
                    for p, b, u in zip(model.parameters(), before, units, strict=True):
                        p.copy_(b + u * (p - b))
            if ema is not None:
                ema.update_parameters(model)
            bad = 0
        else:  # skip the update (as a GradScaler would), so one pathological batch cannot poison
            skipped += 1  # the weights; a model that keeps producing such batches is an error
            bad += 1
            if bad >= MAX_NONFINITE:
                raise FloatingPointError(
                    f"non-finite gradients in {bad} consecutive steps (last "
                    f"loss {float(loss)}) at step {step + 1} of {run_dir}"
                )
        sched.step()
        losses.append(float(loss) if torch.isfinite(gnorm) else float("nan"))
        if progress and (step + 1) % 20 == 0:
            bar.set_postfix(
                loss=f"{np.nanmean(losses[-20:]):.4f}",
                n=",".join(str(b.X.shape[1]) for b in batches),
            )
        if step + 1 in curve_at:
            record_curve(step + 1)
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            save_checkpoint(step + 1)
        if callback is not None:
            callback(step + 1, losses[-1])
    bar.close()
    wall += time.perf_counter() - t0

    if ema is not None:
        runs.save_torch(run_dir / WEIGHTS_LAST, model.state_dict())
    runs.save_torch(run_dir / runs.WEIGHTS, (ema.module if ema is not None else model).state_dict())
    metrics = {
        "completed": True,
        "steps": config.steps,
        "interval": list(interval),
        "device": str(device),
        "device_name": (torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"),
        "wall_time_s": wall,
        "curve_eval_s": eval_seconds(),
        "skipped_steps": skipped,
        "n_params": int(sum(p.numel() for p in model.parameters())),
        "torch_version": torch.__version__,
        "loss": _loss_summary(losses),
        **({"weights": "average", "ema_decay": config.ema_decay} if ema is not None else {}),
    }
    runs.save_json(run_dir / runs.METRICS, metrics)
    return run_dir
