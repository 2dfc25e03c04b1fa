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

Exact resumption (the data of step ``s`` is a function of ``(seed, s)``), mixed context sizes
(``context_groups``), skipped non-finite gradients (:data:`MAX_NONFINITE`) and the ``lr_units``
measurements are explained in docs/design.md, "Training".
"""

from __future__ import annotations

import functools
import math
import operator
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from pfntheory.base._checks import (
    ArgumentTypeError,
    instance_of,
    nonneg_int,
    pair,
    positive_int,
    probability,
    seed_int,
)
from pfntheory.infra import runs
from pfntheory.infra.config import (
    LR_UNITS,
    PAPER_SCHEDULE,
    QUICK_SCHEDULE,
    schedule_for,  # torch-free, for the command line; re-exported
)
from pfntheory.infra.tree import RunSpec
from pfntheory.maths.discretize import bin_edges

from .arithmetic import (
    DRAW_KEY,
    SEGMENTS_KEY,
    arithmetic,
    arithmetic_change,
    continue_segments,
    fused_draw_max_n,
    resumed_segments,
)
from .curve import (
    CURVE_METRICS,
    LEARNING_CURVE,
    LearningCurves,
    curve_file,
    curve_steps,
    format_learning_curve,
    read_learning_curve,
)
from .device import select_device
from .head import check_edges
from .model import PFNTransformer
from .priors import Batch, calibrate_task_interval, sample_batch, sample_context_size
from .state import (
    WEIGHTS_LAST,
    build_model,
    finished,
    load_trained,
    read_config,
    refuse_other_config,
    weights_problem,
)

__all__ = [
    "CURVE_METRICS",
    "WEIGHTS_LAST",
    "ema_decay_at",
    "weight_average",
    "PAPER_SCHEDULE",
    "QUICK_SCHEDULE",
    "schedule_for",
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
    "refuse_other_config",
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
    spec: RunSpec,
    generator: torch.Generator,
    device,
    dtype,
    interval,
    fused_max_n: int | None = None,
) -> list[Batch]:
    """The data of one step: ``spec.context_groups`` dense batches, group ``g`` with
    ``n_g ~ Unif{n_min..n_max}`` and ``B_g`` instances (:func:`group_sizes`), all drawn in order
    from ``generator`` (with one group this is the draw of a step before groups existed).

    A fast-numerics run draws a group of ``n_g <= fused_max_n`` with the fused GP draw and a larger
    one by the exact path (the same random numbers either way). None: the fused draw wherever it
    applies, the draw of every run trained before the choice per ``n``; :func:`train` passes the
    run's recorded choice (:func:`pfntheory.nn.arithmetic.fused_draw_max_n`)."""
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(
            f"spec must be a pfntheory.infra.tree.RunSpec, got {type(spec).__name__}"
        )
    device = select_device(device)
    interval = pair(interval, "interval")
    if fused_max_n is not None:
        fused_max_n = nonneg_int(fused_max_n, "fused_max_n")
    kw = dict(device=device, dtype=dtype, interval=interval)
    out = []
    for size in group_sizes(spec.batch_size, spec.context_groups):
        n = sample_context_size(spec.n_min, spec.n_max, generator)
        fast = spec.fast_numerics and (fused_max_n is None or n <= fused_max_n)
        out.append(sample_batch(spec.task, size, n, generator, fast=fast, **kw))
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
    return _accumulate(model, batches, edges, check=True)


def _accumulate(model, batches: list[Batch], edges: torch.Tensor, check: bool) -> torch.Tensor:
    """:func:`accumulate_gradients` on arguments checked once (the training loop's: ``edges``
    from its interval, batches of its own prior draws, so ``check=False`` skips the model's
    per-forward input check)."""
    total_size, losses = sum(b.X.shape[0] for b in batches), []
    for b in batches:
        out = model(b.X, b.Y, b.xq) if check else model(b.X, b.Y, b.xq, check=False)
        loss = _truncated_nll(out.logits, b.y, edges).mean() * (b.X.shape[0] / total_size)
        loss.backward()
        losses.append(loss.detach())
    return functools.reduce(operator.add, losses)  # l_1 + l_2 + ..., in group order


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


def _ema_beta(beta, name: str) -> float:
    return probability(beta, name, open_low=False, open_high=True)


def ema_decay_at(beta: float, updates: int) -> float:
    """Decay of the weight average at its ``updates``-th update (1-based):
    ``min(beta, (1 + t) / (10 + t))`` with ``t = updates - 1``, so the first updates follow the
    weights closely instead of holding on to the initialisation (see ``RunSpec.ema_decay``).
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
    spec: RunSpec,
    run_dir,
    *,
    device: str = "auto",
    checkpoint_every: int = 200,
    progress: bool = True,
    callback: Callable[[int, float], None] | None = None,
    allow_arithmetic_change: bool = False,
) -> Path:
    """Train (or resume, or skip if finished) the run ``spec`` in ``run_dir``.

    Parameters
    ----------
    spec : RunSpec
        The run tree (everything that determines the result; written to ``config.json``).
    run_dir : path
        Created if needed. If it holds a ``config.json`` it must be ``spec``'s.
    device : str
        'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:1', ... (:func:`select_device`).
    checkpoint_every : int
        Steps between checkpoints.
    progress : bool
        Show a tqdm progress bar.
    callback : callable(step, loss), optional
        Called after every optimiser step with the 1-based step count (e.g. to log, or to interrupt
        a run in a test; an exception propagates after the last checkpoint was written).
    allow_arithmetic_change : bool
        Resume a checkpoint written with other arithmetic (:mod:`pfntheory.nn.arithmetic`: the
        fused or eager path, instruction set, numerics, versions), or one whose record is
        missing or damaged, which are refused by default (the result would differ by round-off
        from an uninterrupted run); the run then records each segment's arithmetic
        (``arithmetic_segments``, :mod:`pfntheory.nn.arithmetic`).

    Returns
    -------
    Path of the run directory, holding ``config.json``, ``metrics.json`` and ``weights.pt``.
    """
    if not isinstance(spec, RunSpec):
        raise ValueError(f"spec must be a RunSpec, got {type(spec).__name__}")
    checkpoint_every = positive_int(checkpoint_every, "checkpoint_every")
    instance_of(bool)(allow_arithmetic_change, "allow_arithmetic_change")
    dev = select_device(device)
    run_dir = Path(run_dir)
    if finished(spec, run_dir):
        return run_dir
    run = _Run(spec, run_dir, dev, allow_arithmetic_change)
    run.loop(checkpoint_every, progress, callback)
    run.finish()
    return run_dir


class _Run:
    """One training run in progress: model, optimiser, schedule, weight average, learning curves
    and the counters a checkpoint holds."""

    def __init__(self, spec: RunSpec, run_dir: Path, device: torch.device, allow: bool = False):
        self.spec, self.run_dir, self.device = spec, run_dir, device
        self.ckpt_path = run_dir / runs.CHECKPOINT
        ckpt = (
            runs.load_torch(self.ckpt_path, map_location=device)
            if self.ckpt_path.is_file()
            else None
        )
        # the checkpoint's record of its arithmetic, per segment (issue 52): missing or damaged
        # is refused unless allowed (a record without fused_draw_max_n is not damaged)
        self.segments: list[dict] = []
        problem = None
        if ckpt is not None:
            if not isinstance(ckpt, dict):
                raise runs.CorruptFileError(f"{self.ckpt_path} is not a checkpoint of this run")
            step = ckpt.get("step")
            if isinstance(step, bool) or not isinstance(step, int):
                raise runs.CorruptFileError(
                    f"{self.ckpt_path} is not a checkpoint of this run: its step is {step!r}"
                )
            if not 0 <= step <= spec.steps:
                raise runs.CorruptFileError(
                    f"{self.ckpt_path} is not a checkpoint of this run: its step {step} is "
                    f"outside 0..{spec.steps}"
                )
            self.segments, problem = resumed_segments(ckpt, step, spec.fast_numerics)
            if problem and not allow:
                raise ValueError(
                    f"{self.ckpt_path}: {problem}, so the arithmetic it was trained with is not "
                    "known: resuming could not be shown bitwise; pass --allow-arithmetic-change "
                    "(allow_arithmetic_change=True) to resume anyway (recorded as a segment of "
                    "unknown arithmetic), or delete the checkpoint to train from step 0"
                )
        # the training draw per n: this machine class's for a run from step 0, else the
        # checkpoint's, so that a resumed run draws what an uninterrupted one drew (issue 45)
        self.fused_max_n = fused_draw_max_n(spec, None if problem else ckpt)
        self.arithmetic = arithmetic(spec, device)
        if self.fused_max_n is not None:
            self.arithmetic[DRAW_KEY] = self.fused_max_n
        self.interval = self._interval(ckpt)
        self.model = model = build_model(spec, self.interval, device)
        if spec.fast_numerics and isinstance(model, PFNTransformer):  # the pairwise solver stack
            model.numerics = "pairwise"  # (the data: step_batches); the average copies it
        self.ema = weight_average(model, spec.ema_decay) if spec.ema_decay > 0 else None
        # "elementwise": per-entry units |theta_0| (from the seeded initialisation, so identical on
        # resume)
        self.units = (
            [
                torch.where(p.detach() != 0, p.detach().abs(), torch.ones_like(p))
                for p in model.parameters()
            ]
            if spec.lr_units == "elementwise"
            else None
        )
        self.edges = torch.as_tensor(
            bin_edges(*self.interval, spec.model.C), dtype=torch.float64, device=device
        )
        self.opt = torch.optim.Adam(
            _param_groups(model, spec.lr, spec.lr_units), lr=spec.lr, weight_decay=0.0
        )
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: lr_factor(s, spec.steps, spec.warmup_frac, spec.min_lr_ratio)
        )
        self.losses: list[float] = []
        self.start, self.wall, self.skipped, self.bad = 0, 0.0, 0, 0
        if ckpt is not None:
            self._restore(ckpt, allow)
        else:
            self.segments = continue_segments([], 0, self.arithmetic)
        self.curves = LearningCurves(spec, run_dir, self.interval, self.start, self.ema is not None)
        self.t0 = time.perf_counter()

    def _interval(self, ckpt) -> tuple[float, float]:
        """The truncation interval ``(a, b]``: the checkpoint's, the spec's, or calibrated."""
        spec = self.spec
        if ckpt is not None:
            a, b = ckpt["interval"]
            return float(a), float(b)
        if spec.interval is not None:
            return spec.interval
        return calibrate_task_interval(
            spec.task,
            spec.n_min,
            spec.n_max,
            spec.calib_instances,
            spec.outside_mass,
            seed=spec.calib_seed,
        )

    def _restore(self, ckpt: dict, allow: bool) -> None:
        # the draw was taken from the checkpoint (__init__): what differs is the machine's
        last = self.segments[-1]["arithmetic"]
        change = None if last is None else arithmetic_change(last, self.arithmetic)
        if change and not allow:
            raise ValueError(
                f"{self.ckpt_path} was written with other arithmetic ({change}): resuming would "
                "not be bitwise; pass --allow-arithmetic-change (allow_arithmetic_change=True) "
                "to resume anyway, or delete the checkpoint to train from step 0"
            )
        try:
            self.model.load_state_dict(ckpt["model"])
            self.opt.load_state_dict(ckpt["optimizer"])
            self.sched.load_state_dict(ckpt["scheduler"])
            torch.set_rng_state(ckpt["rng_cpu"].cpu())
            if self.device.type == "cuda" and ckpt.get("rng_cuda") is not None:
                torch.cuda.set_rng_state(ckpt["rng_cuda"].cpu(), self.device)
            self.start, self.losses = int(ckpt["step"]), list(ckpt["losses"])
            if not 0 <= self.start <= self.spec.steps:
                raise ValueError(f"its step {self.start} is outside 0..{self.spec.steps}")
            self.wall = float(ckpt["wall_time"])
            self.skipped, self.bad = int(ckpt["skipped"]), int(ckpt["bad"])
            if self.ema is not None:
                self.ema.load_state_dict(ckpt["ema"])
            self.segments = continue_segments(self.segments, self.start, self.arithmetic)
        except (KeyError, RuntimeError, ValueError, TypeError) as err:
            raise runs.CorruptFileError(
                f"{self.ckpt_path} is not a checkpoint of this run: {err}"
            ) from err

    def elapsed(self) -> float:
        """Seconds of this run so far, over every session (training and learning curves)."""
        return self.wall + time.perf_counter() - self.t0

    def save_checkpoint(self, step: int) -> None:
        self.segments[-1]["steps"][1] = step  # the current segment ends here
        dev = self.device
        runs.save_torch(
            self.ckpt_path,
            {
                "step": step,
                "model": self.model.state_dict(),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "rng_cpu": torch.get_rng_state(),
                "rng_cuda": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None,
                "losses": self.losses,
                "wall_time": self.elapsed(),
                "skipped": self.skipped,
                "bad": self.bad,
                "interval": list(self.interval),
                "ema": self.ema.state_dict() if self.ema is not None else None,
                "arithmetic": self.arithmetic,
                SEGMENTS_KEY: self.segments,
            },
        )

    def record_curves(self, step: int) -> None:
        average = self.ema.module if self.ema is not None else None
        self.curves.record(step, self.model, average, self.elapsed)

    def step(self, step: int) -> tuple[float, list[Batch]]:
        """One optimiser step (skipped when its gradient is not finite); its loss and data."""
        spec, model = self.spec, self.model
        g = step_generator(spec.seed, step, self.device)
        dtype = next(model.parameters()).dtype
        batches = step_batches(
            spec, g, self.device, dtype, self.interval, fused_max_n=self.fused_max_n
        )
        self.opt.zero_grad(set_to_none=True)
        loss = _accumulate(model, batches, self.edges, check=False)  # checked once: __init__
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip_norm)
        finite = bool(torch.isfinite(gnorm))
        if finite:
            self._update()
            self.bad = 0
        else:  # skip the update (as a GradScaler would), so one pathological batch cannot poison
            self.skipped += 1  # the weights; a model that keeps producing such batches is an error
            self.bad += 1
            if self.bad >= MAX_NONFINITE:
                raise FloatingPointError(
                    f"non-finite gradients in {self.bad} consecutive steps (last "
                    f"loss {float(loss)}) at step {step + 1} of {self.run_dir}"
                )
        self.sched.step()
        self.losses.append(float(loss) if finite else float("nan"))
        return self.losses[-1], batches

    def _update(self) -> None:
        if self.units is None:
            self.opt.step()
        else:
            # Adam in u = theta/theta_0 - 1: Adam is invariant to a fixed per-coordinate scale of
            # the gradient, so its step in u is its step in theta; theta then moves by theta_0
            # times it
            params = list(self.model.parameters())
            before = [p.detach().clone() for p in params]
            self.opt.step()
            with torch.no_grad():
                for p, b, u in zip(params, before, self.units, strict=True):
                    p.copy_(b + u * (p - b))
        if self.ema is not None:
            self.ema.update_parameters(self.model)

    def loop(self, checkpoint_every: int, progress: bool, callback) -> None:
        spec = self.spec
        if self.start == 0:
            self.record_curves(0)
        bar = tqdm(
            range(self.start, spec.steps),
            initial=self.start,
            total=spec.steps,
            disable=not progress,
            desc=self.run_dir.name,
            dynamic_ncols=True,
        )
        for step in bar:
            loss, batches = self.step(step)
            if progress and (step + 1) % 20 == 0:
                bar.set_postfix(
                    loss=f"{np.nanmean(self.losses[-20:]):.4f}",
                    n=",".join(str(b.X.shape[1]) for b in batches),
                )
            self.record_curves(step + 1)
            if (step + 1) % checkpoint_every == 0 or step + 1 == spec.steps:
                self.save_checkpoint(step + 1)
            if callback is not None:
                callback(step + 1, loss)
        bar.close()

    def finish(self) -> None:
        """Write ``weights.pt`` (the average's when averaging), ``weights_last.pt`` and
        ``metrics.json``."""
        spec, run_dir, ema, device = self.spec, self.run_dir, self.ema, self.device
        wall = self.elapsed()
        if ema is not None:
            runs.save_torch(run_dir / WEIGHTS_LAST, self.model.state_dict())
        final = ema.module if ema is not None else self.model
        runs.save_torch(run_dir / runs.WEIGHTS, final.state_dict())
        # a resume at the last step on other arithmetic trained nothing: no segment of its own
        segments = [s for s in self.segments if s["steps"][1] > s["steps"][0]] or self.segments
        last = segments[-1]["arithmetic"]
        metrics = {
            "completed": True,
            "steps": spec.steps,
            "interval": list(self.interval),
            "device": str(device),
            "device_name": (torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"),
            "wall_time_s": wall,
            "curve_eval_s": self.curves.eval_seconds(),
            "skipped_steps": self.skipped,
            "n_params": int(sum(p.numel() for p in self.model.parameters())),
            "torch_version": torch.__version__,
            # not part of the run's identity (nn/arithmetic.py): the last segment's record, and
            # every segment's (a run resumed across an arithmetic change has several)
            "arithmetic": self.arithmetic if last is None else last,
            SEGMENTS_KEY: segments,
            "loss": _loss_summary(self.losses),
            **({"weights": "average", "ema_decay": spec.ema_decay} if ema is not None else {}),
        }
        runs.save_json(run_dir / runs.METRICS, metrics)
