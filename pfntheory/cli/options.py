"""Checked option types and limits shared by every subcommand of ``pfntheory``.

Explicit values are checked here, once, when argparse reads them, and never replaced later: a
value given on the command line, 0 included, is used or refused, never replaced by a default.
"""

from __future__ import annotations

import argparse
import math
import re

from pfntheory.base._entry import int_in  # shared with the python -m entry points

__all__ = [
    "LIMITS",
    "int_in",
    "positive_float",
    "nonnegative_float",
    "device_spec",
    "check_device",
    "context_size",
    "add_run_options",
    "pick",
    "check_attention_size",
    "show_progress",
    "path_problem",
]

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


_DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def device_spec(text: str) -> str:
    """argparse type: ``auto``, ``cpu``, ``cuda`` or ``cuda:<k>`` (availability checked in main)."""
    if not _DEVICE_RE.match(text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:<k>, got {text!r}")
    return text


def check_device(device) -> None:
    """Refuse a device this machine does not have, before any work starts: the syntax here, the
    machine by :func:`pfntheory.nn.device.select_device` (the one check; torch imported only for a
    CUDA request), its message prefixed with the option."""
    if not isinstance(device, str) or not _DEVICE_RE.match(device):
        raise ValueError(f"--device must be auto, cpu, cuda or cuda:<k>, got {device!r}")
    if device.startswith("cuda"):
        from pfntheory.nn.device import select_device

        try:
            select_device(device)
        except ValueError as err:
            raise ValueError(f"--device {device}: {err}") from None


_SEED = int_in(0, LIMITS["seed"])
#: argparse type of a context size or evaluation size n (n'): an integer in ``[1, LIMITS["n"]]``.
context_size = int_in(1, LIMITS["n"])


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
        p.add_argument(
            "--no-progress",
            action="store_true",
            help="no progress bar (none is drawn either when stderr is not a terminal)",
        )


def add_walker_options(p) -> None:
    """Add ``--walker-csv`` and ``--walker-exh-csv``, the Walker Lake data's paths (the case
    studies and the report read them)."""
    p.add_argument(
        "--walker-csv",
        default=None,
        metavar="PATH",
        help="Walker Lake sample CSV (default $PFNTHEORY_WALKER_CSV or ../shared/data/walker.csv)",
    )
    p.add_argument(
        "--walker-exh-csv",
        default=None,
        metavar="PATH",
        help="exhaustive Walker Lake CSV (default: walker_exh.csv beside the sample)",
    )


def show_progress(args) -> bool:
    """Whether to draw a progress bar: not with ``--no-progress``, and never into a log file or a
    pipe (a bar redrawn there is a stream of carriage returns)."""
    import sys

    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


def path_problem(path, option: str, err: OSError | None = None) -> str:
    """One line on why ``path`` (given as ``option``) cannot be created: an existing file where a
    folder is needed on its way names that file; otherwise the system's reason."""
    from pathlib import Path

    p = Path(path)
    for parent in (p, *p.parents):
        if parent.exists():
            if parent != p and not parent.is_dir():
                return f"{option} {p}: {parent} is a file, so nothing can be created under it"
            break
    reason = (err.strerror or str(err)) if err is not None else "cannot be written"
    return f"{option} {p}: {reason.lower() if reason[:1].isupper() else reason}"


def pick(args, *names: str, given: bool = False) -> dict:
    """``{name: args.name}`` for the parsed options ``names`` (with ``given``, only those not None):
    how a command hands its options on to the function that does the work."""
    values = {name: getattr(args, name) for name in names}
    return {k: v for k, v in values.items() if v is not None} if given else values


def check_attention_size(batch: int, n: int, what: str) -> None:
    """Refuse a batch whose attention scores (batch x (n+1) x n per layer) exceed
    ``LIMITS["attention_elements"]``, naming the options ``what`` that set them."""
    elements = batch * (n + 1) * n
    if elements > LIMITS["attention_elements"]:
        raise ValueError(
            f"{what}: batch {batch} x n {n} needs {elements:.3g} attention scores per "
            f"layer, more than the limit {LIMITS['attention_elements']:.3g}; lower the "
            f"batch size"
        )
