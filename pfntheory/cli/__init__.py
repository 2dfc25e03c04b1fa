"""Command-line interface: the ``pfntheory`` parser and the one error boundary of its subcommands.

Each subcommand lives in a module with a ``register(subparsers)`` function that adds its parser and
sets ``func`` (called with the parsed namespace, returns an exit code); :data:`SUBCOMMAND_MODULES`
names them, one line each. Modules are imported only when the parser is built, and heavy imports
(torch) happen inside ``func``, so ``pfntheory --help`` stays fast.

Errors
------
:func:`main` is the one error boundary: every failure -- a bad option, bad input found by the
library, an unreadable or unwritable path, a corrupt run file, Ctrl-C -- ends as one line on stderr
(``pfntheory COMMAND: error: ...``; the library's names of the command's options written as typed,
``n_min`` as ``--n-min``) and ``SystemExit`` with a non-zero status (2: bad input or
files, 1: anything else, 130: interrupted), never as a traceback; ``--debug`` (anywhere on the line)
or ``PFNTHEORY_DEBUG=1`` re-raises to show it. ``--device`` is checked before any work starts.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from pfntheory import __version__
from pfntheory.base._entry import OneLineParser
from pfntheory.cli.options import LIMITS, check_device, path_problem

__all__ = ["SUBCOMMAND_MODULES", "build_parser", "main"]

#: Modules whose ``register(subparsers)`` adds a subcommand, in the order ``--help`` lists them.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "pfntheory.cli.train",
    "pfntheory.cli.inspection",
    "pfntheory.cli.sweep",
    "pfntheory.cli.report",
    "pfntheory.cli.casestudy",
    "pfntheory.cli.audit",
    "pfntheory.cli.tools",
)

#: Exit statuses of :func:`main`.
EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130
#: Exit status after the reader of stdout closed the pipe: 128 + SIGPIPE, as a shell reports a
#: command killed by it.
EXIT_BROKEN_PIPE = 141


#: The parser of ``pfntheory`` and its subcommands: errors are one line pointing at ``--help``.
_Parser = OneLineParser


# --------------------------------------------------------------------------------------------------
# the parser and the error boundary
# --------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pfntheory",
        description="Executable supplement to 'Transformers Can Learn Posterior Predictive "
        "Distributions In-Context'.",
    )
    parser.add_argument("--version", action="version", version=f"pfntheory {__version__}")
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
        raise ValueError(f"{path_problem(p, option, err)} (not a writable directory)") from None


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


#: errno of the failures of the machine, not of the input: the run is not at fault, exit 1.
_MACHINE_ERRNO = {28: "the disk is full", 122: "the disk quota is exceeded", 5: "an I/O error"}
#: errno of a path that cannot be written (exit 2, bad input: another path is the fix).
_PATH_ERRNO = {
    30: "the file system is read-only",
    21: "a directory is in the way",
    13: "no write access",
}


def _os_error_line(err: OSError) -> str | None:
    """One line for a file-system failure naming the real file (runs' atomic writes re-raise with
    it) and what to do; None when ``err`` has no errno."""
    if err.errno is None:
        return None
    where = err.filename2 if err.filename2 is not None else err.filename
    what = _MACHINE_ERRNO.get(err.errno) or _PATH_ERRNO.get(err.errno) or err.strerror
    fix = (
        "free space and re-run (finished runs and checkpoints are kept)"
        if err.errno in _MACHINE_ERRNO
        else "use another path or fix its permissions"
    )
    return f"cannot write {where}: {what} ({err.strerror}); {fix}"


def _one_line(err: BaseException) -> str:
    """The error in words, on one line: its message (an OS error: the reason and the path), never
    the Python class name (``--debug`` shows that, with the traceback)."""
    from pfntheory.infra import runs

    if isinstance(err, OSError) and err.errno in {**_MACHINE_ERRNO, **_PATH_ERRNO}:
        return _os_error_line(err) or str(err)

    text = " ".join(str(err).split()) or "(no message)"
    if isinstance(err, (ValueError, TypeError, runs.CorruptFileError)) and not isinstance(
        err, (UnicodeError,)
    ):
        return text
    if isinstance(err, OSError) and err.filename is not None:
        reason = err.strerror or "cannot be used"
        return f"{err.filename}: {reason[:1].lower()}{reason[1:]}"
    if isinstance(err, UnicodeError):
        return f"a file or argument is not valid text ({text})"
    return text or "an unexpected error with no message"


def _options_of(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """``{dest: option as typed}`` of the subcommand ``command``'s options whose Python name holds
    an underscore (``n_min`` -> ``--n-min``): the names a library message may use for them."""
    sub = next(
        (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
        None,
    )
    p = None if sub is None else sub.choices.get(command)
    if p is None:
        return {}
    return {
        a.dest: max(a.option_strings, key=len)
        for a in p._actions
        if a.option_strings and "_" in a.dest
    }


def _as_typed(text: str, options: dict[str, str]) -> str:
    """``text`` with the Python names of ``options`` (``n_min``, ``ema_decay``: the library's
    argument names) replaced by the options as typed (``--n-min``), as whole words only
    (``curve_n_eval`` and ``$PFNTHEORY_WALKER_CSV`` stay)."""
    import re

    for dest, opt in sorted(options.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![\w.$-]){re.escape(dest)}(?![\w-])", opt, text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pfntheory`` script: the one error boundary (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("PFNTHEORY_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    command, options = "pfntheory", {}
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = f"pfntheory {args.command}"
        options = _options_of(parser, args.command)
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
        bad_input = isinstance(err, (ValueError, TypeError, LookupError, OSError)) and not (
            isinstance(err, OSError) and err.errno in _MACHINE_ERRNO
        )
        hint = "" if bad_input else " (run with --debug for the traceback)"
        sys.stderr.write(f"{command}: error: {_as_typed(_one_line(err), options)}{hint}\n")
        raise SystemExit(EXIT_BAD_INPUT if bad_input else EXIT_FAILURE) from None
