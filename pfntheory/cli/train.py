"""``pfntheory train``: pretrain one PFN transformer on a prior of sec:sims (resumable)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pfntheory.infra.config import COVARIATES, HEADS, LR_UNITS, MODES, SCORES, TASK_KINDS

from .options import (
    LIMITS,
    add_run_options,
    check_attention_size,
    context_size,
    int_in,
    path_problem,
    pick,
    positive_float,
    show_progress,
)

__all__ = ["register"]

#: Default seconds between the progress lines of ``train`` when stderr is not a terminal.
PROGRESS_EVERY_S = 30.0


def _floats(text: str) -> tuple[float, ...]:
    vals = tuple(positive_float(v) for v in text.split(","))
    if not vals:  # pragma: no cover - split always gives one item
        raise argparse.ArgumentTypeError("expected at least one number")
    return vals


def _add_train(sub) -> None:
    p = sub.add_parser(
        "train",
        help="pretrain a PFN transformer on a GP prior (resumable)",
        description="Pretrain a PFN transformer (sec:sims); re-running the same "
        "command resumes from the last checkpoint, and redoes any "
        "artefact found corrupt.",
    )
    p.add_argument("--run-dir", required=True, help="run directory (created; resumed if present)")
    g = p.add_argument_group("task (prior)")
    g.add_argument("--task", required=True, choices=TASK_KINDS)
    g.add_argument("--d", type=int_in(1, LIMITS["d"]), required=True, help="input dimension")
    g.add_argument(
        "--noise-var",
        type=positive_float,
        default=None,
        help="sigma^2 (default pfntheory.DEFAULT_NOISE_VAR)",
    )
    g.add_argument("--alpha", type=positive_float, default=None)
    g.add_argument("--lengthscale", type=positive_float, default=None)
    g.add_argument("--lengthscales", type=_floats, default=None, help="ARD lengthscales, a,b,...")
    g.add_argument("--covariates", choices=COVARIATES, default=None)
    g = p.add_argument_group("model")
    g.add_argument(
        "--score",
        choices=SCORES,
        default=None,
        help="attention score (default: 'linear' for blr, else 'rbf')",
    )
    g.add_argument(
        "--L", type=int_in(1, LIMITS["L"]), required=True, help="attention layers incl. the first"
    )
    g.add_argument("--C", type=int_in(2, LIMITS["C"]), required=True, help="number of bins")
    g.add_argument("--mode", default="learnable", choices=MODES)
    g.add_argument("--normalised", action="store_true", help="TF^pr (normalised attention)")
    g.add_argument("--head", default="psi", choices=HEADS)
    g.add_argument(
        "--tau-min", type=positive_float, default=None, help="head's positivity threshold of tau"
    )
    g.add_argument(
        "--eta-init", type=positive_float, default=None, help="initial step size (model default)"
    )
    g.add_argument(
        "--scale-init",
        type=positive_float,
        default=None,
        help="initial diagonal of K = Q (e.g. 1/lengthscale)",
    )
    g = p.add_argument_group("training")
    g.add_argument("--n-min", type=context_size, required=True)
    g.add_argument("--n-max", type=context_size, required=True)
    g.add_argument(
        "--scale",
        choices=("quick", "cpu", "paper"),
        default="paper",
        help="default steps and LR: supp-tab:pretraining hyperparameters (paper), the cpu "
        "scale's (1000 steps BLR / 2000 otherwise, elementwise Adam at lr 3e-2, weight "
        "average 0.99), or quick",
    )
    g.add_argument(
        "--steps",
        type=int_in(1, LIMITS["steps"]),
        default=None,
        help="optimiser steps (default: from --scale)",
    )
    g.add_argument(
        "--lr", type=positive_float, default=None, help="LR_base (default: from --scale)"
    )
    g.add_argument("--batch-size", type=int_in(1, LIMITS["batch_size"]), default=128)
    g.add_argument(
        "--context-groups",
        type=int_in(1, LIMITS["batch_size"]),
        default=1,
        help="context sizes mixed per step, one dense group each (default 1: one n per step)",
    )
    g.add_argument(
        "--lr-units",
        choices=LR_UNITS,
        default=None,
        help="absolute: plain Adam (the paper's; default at quick and paper scale); "
        "elementwise: each weight in its own unit (default at cpu scale)",
    )
    g.add_argument(
        "--ema-decay",
        type=float,
        default=None,
        help="decay of the exponential weight average evaluated and saved (0: the last iterate; "
        "default 0.99 at cpu scale, else 0)",
    )
    g.add_argument(
        "--fast-numerics",
        action="store_true",
        help="the same maths in a faster rounding order (fused GP draw of the training batches, "
        "pairwise solver stack); off: the arithmetic of every committed run, bit for bit",
    )
    g.add_argument(
        "--curve-points",
        type=int_in(2, 1000),
        default=None,
        help="log-spaced learning-curve points, evaluated at n' = n_min and n_max (default 12)",
    )
    g.add_argument(
        "--curve-instances",
        type=int_in(2, 100_000),
        default=None,
        help="held-out instances per n' of the learning curve (default 256)",
    )
    g.add_argument(
        "--no-curve", action="store_true", help="record no learning curve (faster, undecidable)"
    )
    g.add_argument("--checkpoint-every", type=int_in(1, LIMITS["steps"]), default=200)
    g.add_argument(
        "--allow-arithmetic-change",
        action="store_true",
        help="resume a checkpoint written with other arithmetic (fused/eager path, instruction "
        "set, library versions: metrics.json 'arithmetic'), or one whose record is missing or "
        "damaged; refused by default, as the result then differs by round-off from an "
        "uninterrupted run; each segment's arithmetic is recorded ('arithmetic_segments')",
    )
    add_run_options(g)
    g.add_argument(
        "--progress-every",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="when stderr is not a terminal (a log file, a pipe), where no bar is drawn: one "
        f"progress line on stderr every SECONDS of training (default {PROGRESS_EVERY_S:g}) and "
        "at the last step; --no-progress: none",
    )
    p.set_defaults(func=_run_train)


def _prepare_run_dir(run_dir: str):
    """Refuse a RUN_DIR that is a file; delete orphan temporary files (older than a minute) and
    corrupt artefacts of an existing run, reporting each on stderr, so that training redoes them."""
    from pathlib import Path

    from pfntheory.infra import runs

    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--run-dir {path} exists and is not a directory")
    try:  # created here (training would), so that a path that cannot be made names the option
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{path_problem(path, '--run-dir', err)}; nothing was trained") from None
    if path.is_dir():
        runs.clean_orphan_temps(path, min_age_s=60.0)
        for msg in runs.remove_corrupt_artefacts(path):
            print(f"pfntheory train: {msg}; training redoes it", file=sys.stderr)
    return path


#: The prior options of `train` and the task kinds each applies to (others are refused: an option
#: that does not apply would otherwise be stored in config.json and mean nothing).
_TASK_OPTIONS = {
    "lengthscale": ("rbf",),
    "lengthscales": ("ard_rbf",),
    "alpha": ("rbf", "ard_rbf", "hier_rbf"),
    "noise_var": ("blr", "rbf", "ard_rbf"),
}


def _run_train(args) -> int:
    """Check the whole command line and build its run tree before importing torch (seconds on a
    loaded machine), then train."""
    if args.n_min > args.n_max:
        raise ValueError(
            f"--n-min {args.n_min} is larger than --n-max {args.n_max} (the context sizes "
            "trained on are drawn between the two)"
        )
    for opt, kinds in _TASK_OPTIONS.items():
        if getattr(args, opt, None) is not None and args.task not in kinds:
            raise ValueError(
                f"--{opt.replace('_', '-')} does not apply to --task {args.task} "
                f"(only to {', '.join(kinds)})"
            )
    score = args.score or ("linear" if args.task == "blr" else "rbf")
    if args.normalised and score == "linear":
        raise ValueError(
            "--normalised needs a positive attention score (--score rbf or softmax): "
            "the linear score can be zero or negative, so its row sums can vanish"
        )
    check_attention_size(args.batch_size, args.n_max, "--batch-size/--n-max")
    _refuse_unused(args, score)
    spec = _run_tree(args, score)
    run_dir = _prepare_run_dir(args.run_dir)

    bar = show_progress(args)
    lines = None
    if not bar and not args.no_progress:  # a log or a pipe: lines, not a bar
        every = PROGRESS_EVERY_S if args.progress_every is None else args.progress_every
        lines = ProgressLines(str(run_dir), spec.steps, every)
        lines.start(spec)

    from pfntheory.nn.train import train

    out = train(
        spec,
        run_dir,
        device=args.device,
        checkpoint_every=args.checkpoint_every,
        progress=bar,
        callback=lines,
        allow_arithmetic_change=args.allow_arithmetic_change,
    )
    if lines is not None and lines.first_step is None:
        lines.finished_before()
    print(out)
    from pfntheory.nn import fused

    why = (fused.unavailable_reason() or "").split(": ", 1)[-1]  # the reason, not its class
    if why:
        print(
            f"pfntheory train: the fused attention operator was not used ({why}); training took "
            "the slower eager path (the nn extra installs ninja; a C++ compiler is needed too)",
            file=sys.stderr,
        )
    n_eval = " ".join(str(n) for n in sorted({args.n_min, args.n_max}))
    print(
        f"next: pfntheory evaluate {out} --n-eval {n_eval}  (its E[TV] against the exact PPD)",
        file=sys.stderr,
    )
    return 0


def _refuse_unused(args, score: str) -> None:
    """Options that would not apply are refused, not stored in config.json (a new run name that
    changes nothing)."""
    if args.no_progress and args.progress_every is not None:
        raise ValueError(
            "--progress-every does not apply with --no-progress (no progress is shown)"
        )
    given = [o for o in ("curve_points", "curve_instances") if getattr(args, o) is not None]
    if args.no_curve and given:
        raise ValueError(
            f"--{given[0].replace('_', '-')} does not apply with --no-curve (no curve is recorded)"
        )
    if args.fast_numerics and args.task == "blr" and score == "linear":
        raise ValueError(
            "--fast-numerics changes nothing for --task blr with the linear score (its batches "
            "are drawn in weight space and the linear score has no fused solver stack); it "
            "would only rename the run"
        )


def _run_tree(args, score: str):
    """The run tree of the command line (:class:`pfntheory.infra.tree.RunSpec`): the one object
    built here; it checks every value it holds (e.g. ``n_min <= n_max``)."""
    from pfntheory.infra.config import ModelSpec, TaskSpec, schedule_for
    from pfntheory.infra.tree import RunSpec

    task_options = ("noise_var", "alpha", "lengthscale", "lengthscales", "covariates")
    task = TaskSpec(kind=args.task, d=args.d, **pick(args, *task_options, given=True))
    model = ModelSpec(
        score=score,
        **pick(args, "L", "C", "mode", "normalised", "head"),
        **pick(args, "tau_min", "eta_init", "scale_init", given=True),
    )
    if args.scale == "cpu":  # the cpu scale's optimiser (pfntheory.experiments.definitions)
        from pfntheory.experiments import definitions as xdefs

        lr, steps = xdefs.CPU_LR, 1000 if args.task == "blr" else 2000
        units, ema = xdefs.CPU_LR_UNITS, xdefs.BUDGET_EMA_DECAY
    else:
        lr, steps = schedule_for(args.task, args.mode, args.scale)
        units, ema = "absolute", 0.0
    curve: dict[str, Any] = (
        {}
        if args.no_curve
        else dict(
            curve_n_eval=tuple(sorted({args.n_min, args.n_max})),
            curve_points=12 if args.curve_points is None else args.curve_points,
            curve_instances=256 if args.curve_instances is None else args.curve_instances,
        )
    )
    return RunSpec(
        task=task,
        model=model,
        steps=steps if args.steps is None else args.steps,
        lr=lr if args.lr is None else args.lr,
        lr_units=units if args.lr_units is None else args.lr_units,
        ema_decay=ema if args.ema_decay is None else args.ema_decay,
        fast_numerics=bool(args.fast_numerics),
        **pick(args, "n_min", "n_max", "batch_size", "context_groups", "seed"),
        **curve,
    )


def _duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``2.1 h``."""
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _steps(k: int) -> str:
    return "1 step" if k == 1 else f"{k} steps"


class ProgressLines:
    """The progress of ``train`` as lines on stderr, for a log file or a pipe (where a redrawn bar
    would be a stream of carriage returns): one when training starts, then, as the training
    callback (``callback(step, loss)``), one every ``every_s`` seconds and one at the last step,
    each with the step, the mean loss since the line before, the time taken and an estimate of the
    time left. ``clock`` and ``file`` are for tests."""

    def __init__(self, name: str, total: int, every_s: float, *, clock=None, file=None) -> None:
        import time

        self.name, self.total, self.every_s = name, int(total), float(every_s)
        self.clock = clock or time.monotonic
        self.file = file
        self.t0 = self.last = self.clock()
        self.first_step: int | None = None
        self.t_first = self.t0
        self.losses: list[float] = []

    def _print(self, text: str) -> None:
        print(f"pfntheory train: {self.name}: {text}", file=self.file or sys.stderr, flush=True)

    def start(self, spec) -> None:
        """The line before training (and before the torch import, the calibration, the learning
        curve's first point): what runs, and how often a line follows."""
        self._print(
            f"starting {spec.steps} steps (batch {spec.batch_size}, n in [{spec.n_min}, "
            f"{spec.n_max}]), or resuming from the run's checkpoint; a progress line every "
            f"{_duration(self.every_s)} (--progress-every)"
        )

    def finished_before(self) -> None:
        """The line for a run found finished: nothing was trained."""
        self._print(f"already finished ({self.total} steps); nothing was trained")

    def __call__(self, step: int, loss: float) -> None:
        import math

        now = self.clock()
        if self.first_step is None:
            self.first_step, self.t_first = step, now
            if step > 1:
                self._print(f"resumed at step {step - 1} of {self.total}")
        if math.isfinite(loss):
            self.losses.append(float(loss))
        if now - self.last < self.every_s and step < self.total:
            return
        since = step - self.first_step  # steps timed since the first callback
        left = ""
        if since and step < self.total:
            per_step = (now - self.t_first) / since
            left = f", about {_duration(per_step * (self.total - step))} left"
        mean = f"{sum(self.losses) / len(self.losses):.4g}" if self.losses else "nan"
        self._print(
            f"step {step}/{self.total} ({100 * step / self.total:.0f}%), loss {mean} (mean of "
            f"{_steps(len(self.losses))} since the last line), {_duration(now - self.t0)} "
            f"elapsed{left}"
        )
        self.last, self.losses = now, []


def register(subparsers) -> None:
    """Add ``train``."""
    _add_train(subparsers)
