"""Every ``python -m pfntheory...`` entry point parses its arguments and fails a bad command line
with one line of error and a non-zero exit, never a traceback (issue 52, item 5).

The entry points are found, not listed: every module of the package whose source holds an
``if __name__ == "__main__"`` block, plus ``python -m pfntheory`` itself. Each runs in a
subprocess (what a user types) with an option no parser knows; ``pfntheory tallies`` (formerly
``python -m pfntheory.report.tallies``) also with contradictory modes and an ``--out`` that is no
report folder (before issue 52 the first two printed argparse's usage block and the last exited 0
with "stale passages"). Outside ``pfntheory/cli/`` at most one entry point remains, named in
docs/design.md with its reason (issue 48: the others became ``pfntheory`` subcommands or
sweep studies). Only cheap lines:
each fails before any work, so the whole test costs the interpreter starts (about 2 s each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pfntheory

PKG = Path(pfntheory.__file__).resolve().parent
ROOT = PKG.parent


def _entry_modules() -> list[str]:
    """``pfntheory`` and every module with a ``__main__`` block, by dotted name."""
    out = ["pfntheory"]
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8"):
            rel = path.relative_to(ROOT).with_suffix("")
            out.append(".".join(rel.parts))
    return out


ENTRY_MODULES = _entry_modules()

#: Bad command lines: ``(module, argv)``.
BAD_LINES: list[tuple[str, list[str]]] = [
    *[(m, ["--no-such-option-52"]) for m in ENTRY_MODULES],
    ("pfntheory", ["tallies", "--write", "--check"]),
    ("pfntheory", ["tallies", "--out", "/nonexistent/pfntheory-52"]),
    ("pfntheory", ["tallies", "extra"]),
]


def test_entry_points_are_found():
    """The discovery sees the entry points the docs name (a broken scan would test nothing)."""
    for m in ("pfntheory.pipelines.pfns_baseline", "pfntheory.cli.sweep"):
        assert m in ENTRY_MODULES, (m, ENTRY_MODULES)


def test_at_most_one_entry_point_outside_the_cli_each_named_in_the_design():
    """Issue 48: the command lines outside ``pfntheory/cli/`` (``python -m`` entry points of the
    library's modules) are at most one, and docs/design.md names each (with its reason). Fails
    on a new ``__main__`` block below cli/, or on one the design does not name."""
    outside = [m for m in ENTRY_MODULES if m != "pfntheory" and not m.startswith("pfntheory.cli")]
    assert len(outside) <= 1, outside
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    for m in outside:
        assert f"python -m {m}" in design, f"docs/design.md does not name {m}"


@pytest.mark.parametrize(
    "module, argv", BAD_LINES, ids=[f"{m} {' '.join(a)}" for m, a in BAD_LINES]
)
def test_bad_command_line_is_one_line_and_nonzero(module, argv, tmp_path):
    """Fails when a bad line exits 0, prints a traceback or more than one line on stderr, or
    starts work (a file appears in the working folder)."""
    env = {k: v for k, v in os.environ.items() if k != "PFNTHEORY_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    res = subprocess.run(
        [sys.executable, "-m", module, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    err = res.stderr.strip()
    assert res.returncode != 0, f"{module} {argv}: exit 0 on a bad line; stdout: {res.stdout!r}"
    assert "Traceback" not in err, f"{module} {argv}: a traceback:\n{err}"
    assert len(err.splitlines()) == 1, f"{module} {argv}: not one line:\n{err}"
    assert "error" in err, err
    assert not any(tmp_path.iterdir()), f"{module} {argv} wrote {list(tmp_path.iterdir())}"
