"""The error contract of every command line: one line on stderr and a non-zero exit, never a
traceback -- for ``pfntheory`` (:mod:`pfntheory.cli`, which uses :class:`OneLineParser` and
:func:`int_in`) and for the ``python -m`` entry points of the modules below it (the latent-GP
trainer, the reference builder, the analyses that write committed results files, the label
numbering), which run through :func:`run_entry`.

A bad command line exits 2 (argparse's status) with ``PROG: error: ... (see PROG --help)``; an error
of the work it starts exits 2 when it is one of bad input or files (ValueError, TypeError,
LookupError, OSError), else 1; Ctrl-C exits 130. ``PFNTHEORY_DEBUG=1`` re-raises, to show the
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

#: Exit statuses: bad input or files (argparse's), anything else, interrupted.
EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) pointing at ``--help``."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def output_root(parser: argparse.ArgumentParser, root, name: str = "ROOT"):
    """``root`` (a :class:`pathlib.Path`) as a folder results are written into: created if
    missing; one that is a file or cannot be created is a parser error naming ``name``."""
    if root.exists() and not root.is_dir():
        parser.error(f"{name} {root} exists and is not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"{name} {root}: {(err.strerror or str(err)).lower()}")
    if not os.access(root, os.W_OK):
        parser.error(f"{name} {root}: no write access")
    return root


def _line(err: BaseException) -> str:
    """The error in words, on one line (an OS error: its path and reason)."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror[:1].lower()}{err.strerror[1:]}"
    if isinstance(err, UnicodeDecodeError):
        return f"a file is not valid UTF-8 text ({err.reason} at byte {err.start})"
    return " ".join(str(err).split()) or type(err).__name__


def run_entry(main: Callable[[list[str]], object], prog: str, argv: Sequence[str] | None = None):
    """Run ``main(argv)`` (default ``sys.argv[1:]``) as a process: exit with its status (an int;
    anything else is 0), or with one line on stderr on an error (module docstring). Never
    returns."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("PFNTHEORY_DEBUG", "") not in ("", "0")
    try:
        code = main(args)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        if debug:
            raise
        sys.stderr.write(f"{prog}: interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as err:  # noqa: BLE001 - the boundary: one line, no traceback
        if debug:
            raise
        bad = isinstance(err, (ValueError, TypeError, LookupError, OSError))
        hint = "" if bad else " (PFNTHEORY_DEBUG=1 shows the traceback)"
        sys.stderr.write(f"{prog}: error: {_line(err)}{hint}\n")
        raise SystemExit(EXIT_BAD_INPUT if bad else EXIT_FAILURE) from None
    raise SystemExit(code if isinstance(code, int) else 0)
