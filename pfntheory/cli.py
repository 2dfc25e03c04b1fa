"""Command-line interface: ``pfntheory train ...``, ``pfntheory evaluate RUN_DIR --n-eval ...``,
``pfntheory compare RUN_DIR``, and the subcommands other modules register (sweep,
report, casestudy).

Each subcommand lives in a module with a ``register(subparsers)`` function that adds its parser and
sets ``func`` (called with the parsed namespace, returns an exit code). To add a subcommand, write
``register`` in its module and add the module's name to :data:`SUBCOMMAND_MODULES`: one line each.
Modules are imported only when the parser is built, and heavy imports (torch) happen inside
``func``, so ``pfntheory --help`` stays fast.

Errors
------
:func:`main` is the one error boundary: every failure -- a bad option, bad input found by the
library, an unreadable or unwritable path, a corrupt run file, Ctrl-C -- ends as one line on stderr
(``pfntheory COMMAND: error: ...``) and ``SystemExit`` with a non-zero status (2: bad input or
files, 1: anything else, 130: interrupted), never as a traceback; ``--debug`` (anywhere on the line)
or ``PFNTHEORY_DEBUG=1`` re-raises to show it. Values given explicitly, 0 included, are used or
refused, never replaced by a default. ``--device`` is checked before any work starts.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
from collections.abc import Sequence

from pfntheory.config import COVARIATES, HEADS, LR_UNITS, MODES, SCORES, TASK_KINDS
from pfntheory.convergence import METRICS

__all__ = ["SUBCOMMAND_MODULES", "LIMITS", "build_parser", "main", "register"]

#: Modules whose ``register(subparsers)`` adds a subcommand. This module registers train/evaluate.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "pfntheory.cli",
    "pfntheory.experiments.cli",
    "pfntheory.report",
    "pfntheory.casestudy",
)

#: Stated limits of the command line (larger values are refused before any allocation). The
#: paper's largest settings are d = 16, n' = 1024, batch 128, C = 256, L = 32, 1e5 steps.
LIMITS = {
    "d": 1024,
    "L": 1024,
    "C": 65536,
    "n": 16384,
    "batch_size": 65536,
    "steps": 10**9,
    "n_instances": 10**7,
    "seed": 2**63 - 1,
    # one layer's attention scores hold batch x (n+1) x n floats: 2^31 of them are 8 GB in float32
    "attention_elements": 2**31,
}

#: Exit statuses of :func:`main`.
EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130
#: Exit status after the reader of stdout closed the pipe: 128 + SIGPIPE, as a shell reports a
#: command killed by it.
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) pointing at ``--help``."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# --------------------------------------------------------------------------------------------------
# argparse types: explicit values are checked here, once, and never replaced later
# --------------------------------------------------------------------------------------------------


def int_in(lo: int, hi: int):
    """argparse type: an integer in ``[lo, hi]``."""

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in [{lo}, {hi}], got {v}")
        return v

    parse.__name__ = "integer"
    return parse


def _finite_float(text: str, what: str, ok, unparsed: str) -> float:
    """A finite number for which ``ok(v)`` holds; ``what`` names it in the error message."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {unparsed}, got {text!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise argparse.ArgumentTypeError(f"expected a finite {what} number, got {text!r}")
    return v


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _finite_float(text, "positive", lambda v: v > 0, unparsed="a number")


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _finite_float(text, "non-negative", lambda v: v >= 0, unparsed="a non-negative number")


def _floats(text: str) -> tuple[float, ...]:
    vals = tuple(positive_float(v) for v in text.split(","))
    if not vals:  # pragma: no cover - split always gives one item
        raise argparse.ArgumentTypeError("expected at least one number")
    return vals


_DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def device_spec(text: str) -> str:
    """argparse type: ``auto``, ``cpu``, ``cuda`` or ``cuda:<k>`` (availability checked in main)."""
    if not _DEVICE_RE.match(text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:<k>, got {text!r}")
    return text


def check_device(device) -> None:
    """Refuse a device this machine does not have, before any work starts (torch imported only
    for a CUDA request)."""
    if not isinstance(device, str) or not _DEVICE_RE.match(device):
        raise ValueError(f"--device must be auto, cpu, cuda or cuda:<k>, got {device!r}")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device}: CUDA is not available on this machine "
                f"(use --device cpu or auto)"
            )
        k = int(device.partition(":")[2] or 0)
        if k >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s)")


_SEED = int_in(0, LIMITS["seed"])
_N = int_in(1, LIMITS["n"])


def add_run_options(
    p, *, seed: int | None = 0, device: str | None = "auto", progress: bool = True
) -> None:
    """Add the options that commands starting work share, each with its checked type: ``--seed``
    (an integer in ``[0, LIMITS["seed"]]``, default ``seed``), ``--device`` (:func:`device_spec`,
    default ``device``) and ``--no-progress``; ``None`` (``False``) leaves one out."""
    if seed is not None:
        p.add_argument("--seed", type=_SEED, default=seed)
    if device is not None:
        p.add_argument(
            "--device", type=device_spec, default=device, help="auto, cpu, cuda or cuda:<k>"
        )
    if progress:
        p.add_argument("--no-progress", action="store_true")


def pick(args, *names: str, given: bool = False) -> dict:
    """``{name: args.name}`` for the parsed options ``names`` (with ``given``, only those not None):
    how a command hands its options on to the function that does the work."""
    values = {name: getattr(args, name) for name in names}
    return {k: v for k, v in values.items() if v is not None} if given else values


def _check_attention_size(batch: int, n: int, what: str) -> None:
    elements = batch * (n + 1) * n
    if elements > LIMITS["attention_elements"]:
        raise ValueError(
            f"{what}: batch {batch} x n {n} needs {elements:.3g} attention scores per "
            f"layer, more than the limit {LIMITS['attention_elements']:.3g}; lower the "
            f"batch size"
        )


# --------------------------------------------------------------------------------------------------
# train / evaluate / compare
# --------------------------------------------------------------------------------------------------


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
    g.add_argument("--n-min", type=_N, required=True)
    g.add_argument("--n-max", type=_N, required=True)
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
        "--curve-points",
        type=int_in(2, 1000),
        default=12,
        help="log-spaced learning-curve points, evaluated at n' = n_min and n_max (default 12)",
    )
    g.add_argument(
        "--curve-instances",
        type=int_in(2, 100_000),
        default=256,
        help="held-out instances per n' of the learning curve (default 256)",
    )
    g.add_argument(
        "--no-curve", action="store_true", help="record no learning curve (faster, undecidable)"
    )
    g.add_argument("--checkpoint-every", type=int_in(1, LIMITS["steps"]), default=200)
    add_run_options(g)
    p.set_defaults(func=_run_train)


def _prepare_run_dir(run_dir: str):
    """Refuse a RUN_DIR that is a file; delete orphan temporary files (older than a minute) and
    corrupt artefacts of an existing run, reporting each on stderr, so that training redoes them."""
    from pathlib import Path

    from pfntheory import runs

    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--run-dir {path} exists and is not a directory")
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
    for opt, kinds in _TASK_OPTIONS.items():
        if getattr(args, opt, None) is not None and args.task not in kinds:
            raise ValueError(
                f"--{opt.replace('_', '-')} does not apply to --task {args.task} "
                f"(only to {', '.join(kinds)})"
            )
    if args.n_min > args.n_max:
        raise ValueError(
            f"n_min <= n_max is required, got --n-min {args.n_min} --n-max {args.n_max}"
        )
    score = args.score or ("linear" if args.task == "blr" else "rbf")
    if args.normalised and score == "linear":
        raise ValueError(
            "--normalised needs a positive attention score (--score rbf or softmax): "
            "the linear score can be zero or negative, so its row sums can vanish"
        )
    _check_attention_size(args.batch_size, args.n_max, "--batch-size/--n-max")
    run_dir = _prepare_run_dir(args.run_dir)

    from pfntheory.config import ModelConfig, TaskConfig
    from pfntheory.nn.train import TrainConfig, schedule_for, train

    task_options = ("noise_var", "alpha", "lengthscale", "lengthscales", "covariates")
    task = TaskConfig(kind=args.task, d=args.d, **pick(args, *task_options, given=True))
    model = ModelConfig(
        score=score,
        noise_var_init=task.noise_var,
        **pick(args, "d", "L", "C", "mode", "normalised", "head"),
        **pick(args, "tau_min", "eta_init", "scale_init", given=True),
    )
    if args.scale == "cpu":  # the cpu scale's optimiser (pfntheory.experiments.definitions)
        from pfntheory.experiments import definitions as xdefs

        lr, steps = xdefs.CPU_LR, 1000 if args.task == "blr" else 2000
        units, ema = xdefs.CPU_LR_UNITS, xdefs.BUDGET_EMA_DECAY
    else:
        lr, steps = schedule_for(args.task, args.mode, args.scale)
        units, ema = "absolute", 0.0
    curve = (
        {}
        if args.no_curve
        else dict(
            curve_n_eval=tuple(sorted({args.n_min, args.n_max})),
            curve_points=args.curve_points,
            curve_instances=args.curve_instances,
        )
    )
    cfg = TrainConfig(
        task=task,
        model=model,
        steps=steps if args.steps is None else args.steps,
        lr=lr if args.lr is None else args.lr,
        lr_units=units if args.lr_units is None else args.lr_units,
        ema_decay=ema if args.ema_decay is None else args.ema_decay,
        **pick(args, "n_min", "n_max", "batch_size", "context_groups", "seed"),
        **pick(args, "checkpoint_every", "device"),
        **curve,
    )
    out = train(cfg, run_dir, progress=not args.no_progress)
    print(out)
    return 0


#: The subcommands that read a trained run in their positional ``RUN_DIR``: (help, description).
_RUN_DIR_COMMANDS = {
    "evaluate": (
        "evaluate a trained run against the exact PPD",
        "Evaluate a run at evaluation sizes n' (sec:sims, Inference) and print a table of the "
        "results. Read-only: nothing is written unless --out FILE is given (the sweeps write "
        "a run's eval.json).",
    ),
    "compare": (
        "trained weights beside the construction of thm:TFdoPPD",
        "Learned feature scales, step sizes and readout of a trained run beside the values "
        "supp-eqn:weights prescribes, and the distance of its (mu_L, tau_L) to the exact "
        "Richardson solver after the same depth, as a table. Read-only: nothing is written "
        "unless --out FILE is given.",
    ),
}


def _add_run_dir_command(sub, name: str):
    """A subcommand that reads the trained run in its positional ``RUN_DIR`` (evaluate, compare)."""
    help, description = _RUN_DIR_COMMANDS[name]
    p = sub.add_parser(name, help=help, description=description)
    p.add_argument("run_dir", metavar="RUN_DIR")
    return p


def _add_evaluate(sub) -> None:
    p = _add_run_dir_command(sub, "evaluate")
    p.add_argument(
        "--n-eval", type=_N, nargs="+", help="evaluation sizes n' (required unless --curve-only)"
    )
    p.add_argument("--n-instances", type=int_in(1, LIMITS["n_instances"]), default=4096)
    p.add_argument(
        "--covariates",
        choices=COVARIATES,
        default=None,
        help="covariate shift (with --curve-only: the run's learning curve on that design)",
    )
    p.add_argument("--batch-size", type=int_in(1, LIMITS["batch_size"]), default=512)
    add_run_options(p, seed=12345, device="cpu", progress=False)
    p.add_argument(
        "--curve",
        choices=METRICS,
        default="tv",
        help="metric of the run's learning curve printed after the evaluation",
    )
    p.add_argument(
        "--curve-only",
        action="store_true",
        help="print the learning curve and its convergence status; evaluate nothing",
    )
    _add_output_options(
        p,
        "the evaluation (eval.json format; results of other n' already in "
        "FILE under the same settings are kept)",
    )
    p.set_defaults(func=_run_evaluate)


def _add_output_options(p, what: str) -> None:
    """``--out FILE`` and ``--json`` of the read-only inspection commands (evaluate, compare)."""
    p.add_argument(
        "--out",
        dest="out_file",
        metavar="FILE",
        default=None,
        help=f"write {what} as JSON to FILE (default: write nothing)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of the table (stdout holds one JSON document)",
    )


def _write_out(path: str, doc: dict, *, keep_results: bool = False) -> None:
    """Write ``doc`` to ``--out`` ``path``; with ``keep_results``, results of other n' already in
    the file under the same settings are kept. The numbers have been printed before: a file that
    cannot be written is a one-line error that says so."""
    from pathlib import Path

    from pfntheory import runs

    p = Path(path)
    if keep_results and p.is_file():
        try:
            old = runs.load_json(p)
        except runs.CorruptFileError:
            old = None
        settings = {k: v for k, v in doc.items() if k != "results"}
        if isinstance(old, dict) and all(old.get(k) == v for k, v in settings.items()):
            merged = {**old.get("results", {}), **doc["results"]}
            doc = {**doc, "results": dict(sorted(merged.items(), key=lambda kv: int(kv[0])))}
    try:
        runs.save_json(p, doc)
    except OSError as err:
        raise ValueError(
            f"--out {p} could not be written ({err.strerror or err}); the numbers above were "
            "printed but not saved"
        ) from None
    print(f"wrote {p}", file=sys.stderr)


def _num(v, digits: int = 4) -> str:
    """A number rounded to ``digits`` significant digits for a table ("-" for none)."""
    if v is None:
        return "-"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "nan" if math.isnan(x) else f"{x:#.{digits}g}".rstrip(".")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns under a header and a rule."""
    cols = [header, *rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_evaluation(doc: dict, n_eval: Sequence[int], run_dir) -> str:
    """The table ``pfntheory evaluate`` prints: one row per n', each metric beside the exact
    PPD's on the same instances, standard errors in brackets."""

    def pair(r, key, digits=4):
        own, exact = r.get(key), r.get(f"{key}_exact")
        return (
            _num(own, digits) if exact is None else f"{_num(own, digits)} ({_num(exact, digits)})"
        )

    rows = []
    for n in n_eval:
        r = doc["results"][str(n)]
        rows.append(
            [
                str(n),
                f"{_num(r.get('tv'))} +- {_num(r.get('tv_se'), 2)}",
                _num(r.get("mse_mean")),
                pair(r, "coverage_90", 3),
                pair(r, "width_90", 3),
                pair(r, "crps"),
                pair(r, "nll", 3),
            ]
        )
    head = (
        f"{run_dir}: {doc['n_instances']} instances per n' (seed {doc['seed']}), covariates "
        f"{doc['covariates']}; in brackets: the exact PPD on the same instances"
    )
    header = ["n'", "E[TV] +- SE", "MSE of mean", "90% coverage", "90% width", "CRPS", "NLL"]
    return head + "\n" + _table(header, rows)


def _print_learning_curve(run_dir, metric: str, file=None, covariates: str | None = None) -> None:
    """The run's learning curve (learning_curve.json, or with ``covariates`` its curve on that
    covariate design, learning_curve_<covariates>.json) and whether it has plateaued, or a line
    saying that the run has none (runs trained before learning curves existed, or no curve was
    recorded on that design)."""
    import sys

    file = file or sys.stdout
    from pfntheory.convergence import plateau_status, trend_text
    from pfntheory.nn.train import format_learning_curve, read_learning_curve

    doc = read_learning_curve(run_dir, covariates)
    if doc is None:
        which = "" if covariates is None else f" on the {covariates} design"
        print(
            f"{run_dir}: no learning curve{which} (none was recorded in training): "
            "convergence unknown",
            file=file,
        )
        return
    print(format_learning_curve(doc, metric), file=file)
    print(trend_text(plateau_status(doc["points"], metric=metric)), file=file)


def _finished_run(run_dir: str):
    """A trained run directory whose artefacts are all readable; otherwise a one-line error."""
    from pathlib import Path

    from pfntheory import runs

    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a run directory")
    problems = runs.check_artefacts(path)
    if problems:
        raise runs.CorruptFileError(
            f"{path} is damaged ({'; '.join(problems.values())}); re-run the `pfntheory train` "
            f"command that made it, which redoes corrupt files"
        )
    return path


def _run_evaluate(args) -> int:
    import json
    import sys

    run_dir = _finished_run(args.run_dir)
    if args.curve_only:
        _print_learning_curve(run_dir, args.curve, covariates=args.covariates)
        return 0
    if args.n_eval is None:
        raise ValueError("--n-eval is required unless --curve-only is given")
    _check_attention_size(args.batch_size, max(args.n_eval), "--batch-size/--n-eval")
    from pfntheory.nn.evaluate import evaluate

    doc = evaluate(
        run_dir,
        args.n_eval,
        args.n_instances,
        args.seed,
        progress=True,
        save=False,  # read-only: the run's committed eval.json is never rewritten
        **pick(args, "covariates", "batch_size", "device"),
    )
    n_eval = sorted(set(args.n_eval))
    if args.json:
        summary = {
            str(n): {
                k: round(v, 5)
                for k, v in doc["results"][str(n)].items()
                if k in ("tv", "tv_se", "mse_mean", "coverage_90", "crps", "crps_exact")
            }
            for n in n_eval
        }
        print(json.dumps(summary, indent=1))
    else:
        print(format_evaluation(doc, n_eval, run_dir))
    sys.stdout.flush()
    # stdout stays one JSON document under --json
    _print_learning_curve(run_dir, args.curve, file=sys.stderr if args.json else sys.stdout)
    if args.out_file is not None:
        _write_out(args.out_file, doc, keep_results=True)
    return 0


def _add_compare(sub) -> None:
    p = _add_run_dir_command(sub, "compare")
    p.add_argument("--n", type=_N, default=None, help="context size (default (n_min+n_max)//2)")
    p.add_argument("--n-instances", type=int_in(1, 100_000), default=32)
    add_run_options(p, device=None, progress=False)
    _add_output_options(p, "the whole comparison (the format of a run's construction.json)")
    p.set_defaults(func=_run_compare)


def format_comparison(doc: dict, run_dir) -> str:
    """The tables ``pfntheory compare`` prints: per layer the learned feature scales and step
    sizes beside the construction's, then the readout's distances to the solver and the PPD."""
    import numpy as np

    eta = doc["eta"]
    scale = np.atleast_2d(np.asarray(doc["scale"]["learned"], dtype=float))
    prescribed = np.asarray(doc["scale"]["prescribed"], dtype=float)

    def spread(v) -> str:
        v = np.asarray(v, dtype=float)
        if v.size == 1 or np.ptp(v) == 0:
            return _num(v.flat[0], 3)
        return f"{_num(np.median(v), 3)} [{_num(v.min(), 3)}, {_num(v.max(), 3)}]"

    solver = doc["solver_eta"]
    step = "the optimal step eta* of each draw" if solver == "optimal" else f"step {solver}"
    variant = "TF^pr (normalised)" if doc.get("normalised") else "TF"
    out = [
        f"{run_dir}: {variant}, {doc.get('mode')} mode, L = {scale.shape[0]}; context size "
        f"n = {doc['n']}, {doc['n_instances']} prior draws",
        "",
        _table(
            ["weight", "learned", "prescribed (supp-eqn:weights)"],
            [
                [
                    "amplitude V_ky",
                    _num(doc["amp"]["learned"], 3),
                    _num(doc["amp"]["prescribed"], 3),
                ],
                [
                    "readout W",
                    "(" + ", ".join(_num(v, 3) for v in doc["W"]["learned"]) + ")",
                    "(" + ", ".join(_num(v, 3) for v in doc["W"]["prescribed"]) + ")",
                ],
                ["feature scale", "per layer below", spread(prescribed)],
            ],
        ),
        "",
        "step sizes per layer (the construction uses one step in every layer; the optimal",
        f"Richardson step eta* = 2/(lambda_1 + lambda_n) at n = {doc['n']}: median "
        f"{_num(eta['optimal_median'], 3)} over the draws, range {_num(eta['optimal_min'], 3)} "
        f"to {_num(eta['optimal_max'], 3)})",
    ]
    rows = []
    for layer in range(scale.shape[0]):
        i = layer - 1  # step sizes exist from layer 1 on
        has = 0 <= i < len(eta["learned_attention"])
        rows.append(
            [
                str(layer),
                spread(scale[layer]),
                _num(eta["learned_attention"][i], 3) if has else "-",
                _num(eta["learned_drift"][i], 3) if has else "-",
            ]
        )
    out.append(
        _table(
            ["layer", "feature scale: median [min, max] over d", "eta (attention)", "eta (drift)"],
            rows,
        )
    )
    rms = doc["readout_rms"]
    out += [
        "",
        f"readout distances, RMS over {doc['n_instances']} draws (solver: Richardson after the",
        f"same depth with {step})",
        _table(
            ["between", "mu", "tau"],
            [
                [a, _num(rms[f"{k}_mu"], 3), _num(rms[f"{k}_tau"], 3)]
                for a, k in (
                    ("trained and solver", "trained_vs_solver"),
                    ("trained and exact PPD", "trained_vs_exact"),
                    ("solver and exact PPD", "solver_vs_exact"),
                )
            ],
        ),
    ]
    return "\n".join(out)


def _run_compare(args) -> int:
    import json

    run_dir = _finished_run(args.run_dir)
    from pfntheory.nn.evaluate import compare_to_construction

    # read-only: nothing is written in the run directory (its construction.json is committed)
    doc = compare_to_construction(run_dir, n=args.n, n_instances=args.n_instances, seed=args.seed)
    print(json.dumps(doc, indent=1) if args.json else format_comparison(doc, run_dir))
    if args.out_file is not None:
        sys.stdout.flush()
        _write_out(args.out_file, doc)
    return 0


def register(subparsers) -> None:
    """Add ``train``, ``evaluate`` and ``compare``."""
    _add_train(subparsers)
    _add_evaluate(subparsers)
    _add_compare(subparsers)


# --------------------------------------------------------------------------------------------------
# the parser and the error boundary
# --------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pfntheory",
        description="Executable supplement to 'Transformers Can Learn Posterior Predictive "
        "Distributions In-Context'.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the Python traceback of an error (also PFNTHEORY_DEBUG=1)",
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _check_writable_dir(path, option: str) -> None:
    """Create ``path`` (as the command would) and probe it with a temporary file, so that an
    unwritable output folder fails before any work instead of after it."""
    import tempfile
    from pathlib import Path

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{option} {p} exists and is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as err:
        raise ValueError(
            f"{option} {p} is not a writable directory ({err.strerror or err})"
        ) from None


def _check_common(args) -> None:
    """Checks of options many subcommands share, including those registered by other modules
    (sweep, report, casestudy): device, seed, positive timeouts and strides, writable outputs."""
    if getattr(args, "device", None) is not None:
        check_device(args.device)
    seed = getattr(args, "seed", None)
    if isinstance(seed, int) and not 0 <= seed <= LIMITS["seed"]:
        raise ValueError(f"--seed must be an integer in [0, {LIMITS['seed']}], got {seed}")
    for attr in ("timeout", "timeout_min", "grid_stride"):
        v = getattr(args, attr, None)
        if isinstance(v, (int, float)) and not v > 0:
            raise ValueError(f"--{attr.replace('_', '-')} must be positive, got {v}")
    for attr in ("run_dir", "root", "out", "out_dir"):  # '' would silently mean the current dir
        v = getattr(args, attr, None)
        if isinstance(v, str) and not v.strip():
            name = (
                "RUN_DIR"
                if attr == "run_dir" and args.command != "train"
                else f"--{attr.replace('_', '-')}"
            )
            raise ValueError(
                f"{name} must not be empty (an empty path would mean the "
                "current directory; pass '.' to mean it)"
            )
    if getattr(args, "executor", None) == "local":  # SLURM-only options are refused, not ignored
        slurm_only = ("partition", "gpus_per_node", "mem_gb", "array_parallelism")
        given = [a for a in slurm_only if getattr(args, a, None) is not None]
        if getattr(args, "timeout_min", 240) != 240:
            given.append("timeout_min")
        if given:
            opts = ", ".join(f"--{a.replace('_', '-')}" for a in given)
            raise ValueError(f"{opts}: only for --executor slurm, not for the local executor")
    if getattr(args, "list", False):
        return  # listing writes nothing
    for attr in ("root", "out", "out_dir"):
        v = getattr(args, attr, None)
        if isinstance(v, str):
            _check_writable_dir(v, f"--{attr.replace('_', '-')}")


def _one_line(err: BaseException) -> str:
    from pfntheory import runs

    text = " ".join(str(err).split()) or "(no message)"
    if isinstance(err, (ValueError, TypeError, runs.CorruptFileError)) and not isinstance(
        err, (UnicodeError,)
    ):
        return text
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.strerror or type(err).__name__}: {err.filename}"
    return f"{type(err).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pfntheory`` script: the one error boundary (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("PFNTHEORY_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    command = "pfntheory"
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = f"pfntheory {args.command}"
        _check_common(args)
        return int(args.func(args) or 0)
    except SystemExit:  # argparse (one line, see _Parser) and explicit exits
        raise
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head -1`): end quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the final flush at exit cannot fail
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except KeyboardInterrupt:
        if debug:
            raise
        sys.stderr.write(
            f"{command}: interrupted; finished runs and checkpoints are kept, and "
            f"re-running the command resumes\n"
        )
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as err:  # noqa: BLE001 - the boundary: one line, no traceback
        if debug:
            raise
        bad_input = isinstance(err, (ValueError, TypeError, LookupError, OSError))
        hint = "" if bad_input else " (run with --debug for the traceback)"
        sys.stderr.write(f"{command}: error: {_one_line(err)}{hint}\n")
        raise SystemExit(EXIT_BAD_INPUT if bad_input else EXIT_FAILURE) from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
