"""Training the multi-head PFN's heads with the exact component weights (issue 38, beyond the
paper).

The committed multi-head run (``supp_tab_hier_multihead``) trains heads and readout together, and
its readout collapses onto one head in every context: the other heads get gradients of size
``w_h ~ 0`` and stay at their initialisation. Here the heads train *teacher-forced*: the mixture
uses the exact posterior weights ``p(h | D)`` of each training context (the prior's draw computes
them anyway, :func:`pfntheory.nn.priors.sample_batch`), so head ``h`` learns from the contexts that
component ``h`` explains. At test time a selector (:mod:`pfntheory.nn.selector`) supplies the
weights, through ``MixturePFN.forward(..., log_weights=...)``.

Everything else is :func:`pfntheory.nn.train.train`'s step: the same data stream (seed, step
generator, context sizes, truncation interval), truncated NLL, Adam with ``spec.lr_units``, the
schedule of :func:`~pfntheory.nn.train.lr_factor`, gradient clipping. The run directory holds
``config.json`` (the spec), ``weights.pt`` and ``metrics.json`` (interval, losses, CPU and wall
time of the training loop).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from pfntheory.base._checks import ArgumentTypeError, pair, positive_int
from pfntheory.infra import runs
from pfntheory.infra.tree import RunSpec
from pfntheory.maths.discretize import bin_edges

from .arithmetic import DRAW_KEY, LEGACY_FUSED_DRAW_MAX_N, SEGMENTS_KEY, arithmetic
from .state import build_model, refuse_other_config
from .train import _truncated_nll, lr_factor, step_batches, step_generator

__all__ = ["train_teacher_forced", "load_teacher_forced", "TEACHER_FORCED"]

#: ``metrics.json`` marker of a teacher-forced run.
TEACHER_FORCED = "teacher_forced_exact_weights"


def train_teacher_forced(spec: RunSpec, run_dir, interval, *, log_every: int = 50) -> Path:
    """Train ``spec``'s :class:`~pfntheory.nn.multihead_model.MixturePFN` for ``spec.steps`` steps
    with the exact weights plugged in (module docstring) and write the run directory.

    Parameters
    ----------
    spec : RunSpec
        With ``model.mixture=True`` and a 'hier_rbf' task.
    run_dir : path
        Created; must not hold a finished run (``weights.pt``) nor another spec's
        ``config.json``.
    interval : (a, b)
        Truncation interval (the committed runs' calibrated one, so the bins are shared).
    log_every : int
        Steps between progress lines on stdout.
    """
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(f"spec must be a RunSpec, got {type(spec).__name__}")
    if not spec.model.mixture:
        raise ValueError("spec.model.mixture must be True (teacher-forced multi-head training)")
    interval = pair(interval, "interval")
    log_every = positive_int(log_every, "log_every")
    run_dir = Path(run_dir)
    if (run_dir / runs.CONFIG).is_file():  # another spec's directory is never reused
        refuse_other_config(spec, run_dir)
    if (run_dir / runs.WEIGHTS).exists():
        raise FileExistsError(f"{run_dir} already holds a finished run")
    run_dir.mkdir(parents=True, exist_ok=True)
    record = arithmetic(spec, torch.device("cpu"))  # one segment: this trainer does not resume
    if spec.fast_numerics:  # step_batches without a choice per n: the fused draw wherever it can
        record[DRAW_KEY] = LEGACY_FUSED_DRAW_MAX_N
    model = build_model(spec, interval, "cpu")
    dtype = next(model.parameters()).dtype
    units = [
        torch.where(p.detach() != 0, p.detach().abs(), torch.ones_like(p))
        for p in model.parameters()
    ]
    elementwise = spec.lr_units == "elementwise"
    if spec.lr_units not in ("elementwise", "absolute"):
        raise ValueError(f"lr_units {spec.lr_units!r} not supported here")
    edges = torch.as_tensor(bin_edges(interval[0], interval[1], spec.model.C), dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_factor(s, spec.steps, spec.warmup_frac, spec.min_lr_ratio)
    )
    losses, skipped = [], 0
    c0, w0 = time.process_time(), time.perf_counter()
    for step in range(spec.steps):
        g = step_generator(spec.seed, step, "cpu")
        batches = step_batches(spec, g, device="cpu", dtype=dtype, interval=interval)
        opt.zero_grad(set_to_none=True)
        total = sum(b.X.shape[0] for b in batches)
        loss_v = 0.0
        for b in batches:
            assert b.weights is not None
            lw = torch.log(b.weights.clamp_min(1e-300))
            out = model(b.X, b.Y, b.xq, log_weights=lw)
            loss = _truncated_nll(out.logits, b.y, edges).mean() * (b.X.shape[0] / total)
            loss.backward()
            loss_v += float(loss.detach())
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip_norm)
        if bool(torch.isfinite(gnorm)):
            params = list(model.parameters())
            before = [p.detach().clone() for p in params]
            opt.step()
            if elementwise:
                with torch.no_grad():
                    for p, b0, u in zip(params, before, units, strict=True):
                        p.copy_(b0 + u * (p - b0))
        else:
            skipped += 1
        sched.step()
        losses.append(loss_v)
        if (step + 1) % log_every == 0:
            print(f"step {step + 1}/{spec.steps} loss {sum(losses[-log_every:]) / log_every:.4f} "
                  f"cpu {time.process_time() - c0:.0f}s", flush=True)  # fmt: skip
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    runs.save_json(run_dir / runs.CONFIG, spec.to_config())
    runs.save_torch(run_dir / runs.WEIGHTS, model.state_dict())
    runs.save_json(
        run_dir / runs.METRICS,
        {
            "kind": TEACHER_FORCED,
            "interval": list(interval),
            "steps": spec.steps,
            "cpu_time_s": cpu,
            "wall_time_s": wall,
            "skipped": skipped,
            "arithmetic": record,
            SEGMENTS_KEY: [{"steps": [0, spec.steps], "arithmetic": record}],
            "losses": [float(f"{v:.6g}") for v in losses],
        },
    )
    return run_dir


def load_teacher_forced(run_dir):
    """``(model in eval mode, spec, metrics)`` of a :func:`train_teacher_forced` run."""
    from .state import load_trained

    return load_trained(run_dir)
