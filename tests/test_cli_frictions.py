"""The command-line frictions of issue 49 (item 4), one test each, and the ``python -m`` entry
points outside :mod:`pfntheory.cli` (issue 52): each fails on the behaviour the issue reported.

* ``train`` into a log or a pipe printed nothing for minutes: it now prints a line when it starts
  and one every ``--progress-every`` seconds (``test_train_prints_progress_lines_into_a_log``).
* ``evaluate --json`` wrote its learning curve to stderr: stdout is one JSON document and stderr
  empty unless ``--curve`` asks (``test_evaluate_json_keeps_stderr_empty``).
* ``--n-min > --n-max`` was refused after the torch import: every check of the run tree now comes
  before it (``test_train_refuses_a_bad_run_tree_before_importing_torch``).
* ``report --only 99`` said "only": messages name options as typed
  (``test_messages_name_options_as_typed``).
* ``casestudy walker`` without the data reported the overwrite guard first
  (``test_casestudy_walker_reports_missing_data_first``).
* ``sweep --list`` did not say its default scale (``test_sweep_list_says_its_scale``).
* ``compare``'s "eta (drift)" was unexplained (``test_compare_explains_its_step_sizes``).
* the README's CPU-torch line gave no hint when its index is unreachable
  (``test_readme_torch_line_has_a_fallback_hint``).
* ``python -m`` entry points gave tracebacks on bad command lines
  (``test_entry_point_bad_line_is_one_line``, ``test_entry_points_run_as_modules``).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfntheory import cli
from pfntheory.cli import train as train_cmd

ROOT = Path(__file__).resolve().parents[1]


def _train_args(rd, *extra, progress: bool = False) -> list[str]:
    argv = "--task rbf --d 2 --L 2 --C 8 --n-min 4 --n-max 6 --steps 2 --lr 1e-3 --batch-size 4"
    return [
        "train",
        "--run-dir",
        str(rd),
        *argv.split(),
        "--device",
        "cpu",
        "--curve-instances",
        "4",
        "--curve-points",
        "2",
        *([] if progress else ["--no-progress"]),
        *extra,
    ]


def _error(capsys, argv) -> str:
    """The one line ``pfntheory ARGV`` refuses with (exit status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    rd = tmp_path_factory.mktemp("frictions") / "run"
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(_train_args(rd)) == 0
    return rd


# --------------------------------------------------------------------------------------------------
# train: progress lines into a log, checks before torch
# --------------------------------------------------------------------------------------------------


def test_train_prints_progress_lines_into_a_log(tmp_path, capsys):
    """stderr is not a terminal under capsys (as in a log or a pipe): a line when training starts,
    one per ``--progress-every`` interval (here every step) and one at the last step; a finished
    run says so; ``--no-progress`` prints none of them. Before: nothing until the end."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd, "--progress-every", "1e-9", progress=True)) == 0
    err = capsys.readouterr().err
    assert f"pfntheory train: {rd}: starting 2 steps" in err
    assert "step 1/2 (50%)" in err and "step 2/2 (100%), loss" in err and "elapsed" in err
    assert cli.main(_train_args(rd, progress=True)) == 0
    assert "already finished (2 steps); nothing was trained" in capsys.readouterr().err
    assert cli.main(_train_args(tmp_path / "quiet")) == 0
    assert "pfntheory train: " not in capsys.readouterr().err.replace("next:", "")
    line = _error(capsys, _train_args(tmp_path / "x", "--progress-every", "5"))
    assert "--progress-every does not apply with --no-progress" in line


def test_progress_lines_come_every_n_seconds():
    """The lines follow the clock: none between two intervals, one per interval with the mean loss
    of the steps since the line before and the time left, and always one at the last step."""
    now = [0.0]
    out = io.StringIO()
    lines = train_cmd.ProgressLines("run", 100, 10.0, clock=lambda: now[0], file=out)
    for step in range(1, 101):
        now[0] = step * 1.0  # one step per second
        lines(step, 2.0 if step <= 10 else 1.0)
    text = out.getvalue().splitlines()
    assert len(text) == 10  # at 10, 20, ..., 100 s
    assert "step 10/100 (10%), loss 2 (mean of 10 steps since the last line)" in text[0]
    assert "about 90 s left" in text[0] and text[-1].endswith("100 s elapsed")
    resumed = io.StringIO()
    lines = train_cmd.ProgressLines("run", 100, 10.0, clock=lambda: 0.0, file=resumed)
    lines(51, 1.0)
    assert "resumed at step 50 of 100" in resumed.getvalue()


_IMPORTS_TORCH = """
import sys
from pfntheory.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("torch imported" if "torch" in sys.modules else "torch not imported")
"""


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--n-min", "9"], "--n-min 9 is larger than --n-max 6"),
        (["--ema-decay", "1"], "--ema-decay must lie in [0, 1)"),
        (["--context-groups", "8"], "--context-groups must be <= --batch-size"),
    ],
)
def test_train_refuses_a_bad_run_tree_before_importing_torch(tmp_path, extra, needle):
    """The whole run tree is built and checked before torch is imported (seconds on a loaded
    machine): before, ``--n-min > --n-max`` was refused only after the import, as ``n_min``."""
    argv = _train_args(tmp_path / "run", *extra)
    res = subprocess.run(
        [sys.executable, "-c", _IMPORTS_TORCH, *argv], capture_output=True, text=True, timeout=120
    )
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert res.stdout.strip() == "torch not imported"
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------------------------------
# evaluate --json, compare's step sizes
# --------------------------------------------------------------------------------------------------


def test_evaluate_json_keeps_stderr_empty(trained, tmp_path, capsys):
    """``--json``: stdout is one JSON document, stderr empty (no learning curve, no "wrote FILE");
    ``--curve`` asks for the curve, which then goes to stderr. Before: the curve on stderr."""
    out = tmp_path / "eval.json"
    argv = ["evaluate", str(trained), "--n-eval", "4", "--n-instances", "8", "--json"]
    capsys.readouterr()
    assert cli.main([*argv, "--out", str(out)]) == 0
    got = capsys.readouterr()
    assert set(json.loads(got.out)) == {"4"} and got.err == "" and out.is_file()
    assert cli.main([*argv, "--curve", "tv"]) == 0
    got = capsys.readouterr()
    json.loads(got.out)
    assert "step" in got.err or "no learning curve" in got.err
    assert cli.main(argv[:-1]) == 0  # the table: its curve follows on stdout
    got = capsys.readouterr()
    assert "E[TV]" in got.out and ("step" in got.out or "no learning curve" in got.out)


def test_compare_explains_its_step_sizes(trained, capsys):
    """The table's "eta (attention)" and "eta (drift)" are explained under it and in ``--help``:
    the steps on the kernel part G and on the ridge part sigma^2 I of A = G + sigma^2 I."""
    capsys.readouterr()
    assert cli.main(["compare", str(trained), "--n", "6", "--n-instances", "3"]) == 0
    out = capsys.readouterr().out
    assert "eta (drift): the step on the ridge part sigma^2 I" in out
    assert "eta (attention): the step on the kernel part G" in out
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "'eta (drift)' the step on the ridge part" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------
# messages, case study, sweep, README
# --------------------------------------------------------------------------------------------------


def test_messages_name_options_as_typed(tmp_path, capsys):
    """A message names the option as typed, never its Python name: ``report --only 99`` said
    "only must name one notebook"; the library's ``n_min`` or ``ema_decay`` read as ``--n-min``,
    ``--ema-decay`` (whole words only: ``curve_n_eval`` stays)."""
    out = str(tmp_path / "rep")
    assert _error(capsys, ["report", "--only", "99", "--out", out]).startswith(
        "pfntheory report: error: --only 99: no notebook name is or starts with '99'"
    )
    assert "--only 0: 9 notebook names start with '0'" in _error(
        capsys, ["report", "--only", "0", "--out", out]
    )
    assert "--only must not be empty" in _error(capsys, ["report", "--only", "", "--out", out])
    line = _error(capsys, _train_args(tmp_path / "r", "--run-dir", "/proc/pfntheory-no/run"))
    assert "--run-dir /proc/pfntheory-no/run" in line
    options = {"n_min": "--n-min", "n_eval": "--n-eval", "walker_csv": "--walker-csv"}
    text = "n_min=3; curve_n_eval; $PFNTHEORY_WALKER_CSV; cli.n_min; --n-min; n_eval."
    assert cli._as_typed(text, options) == (
        "--n-min=3; curve_n_eval; $PFNTHEORY_WALKER_CSV; cli.n_min; --n-min; --n-eval."
    )


def test_casestudy_walker_reports_missing_data_first(tmp_path, monkeypatch, capsys):
    """Without the Walker Lake data, ``casestudy walker`` says so first (before: the guard against
    replacing the committed results, whose fix, --out-dir, could not help); a missing
    ``--walker-csv`` names the option; the Walker options are refused for sacramento."""
    from pfntheory.casestudy.data import WALKER_CSV_ENV, WALKER_EXH_CSV_ENV

    monkeypatch.setenv(WALKER_CSV_ENV, str(tmp_path / "walker.csv"))
    monkeypatch.delenv(WALKER_EXH_CSV_ENV, raising=False)
    line = _error(capsys, ["casestudy", "walker", "--device", "cpu"])
    assert "Walker Lake sample CSV not found" in line and "would replace" not in line
    line = _error(capsys, ["casestudy", "walker", "--walker-csv", str(tmp_path / "no.csv")])
    assert f"--walker-csv {tmp_path / 'no.csv'}: no such file" in line
    line = _error(capsys, ["casestudy", "sacramento", "--walker-csv", str(tmp_path / "w.csv")])
    assert "--walker-csv applies only to the walker case study" in line


def test_sweep_list_says_its_scale(tmp_path, capsys):
    """``sweep --list`` starts with the scale it lists and whether that is the default (before:
    only "[quick]" on each line, the default unstated); ``--help`` says it too."""
    capsys.readouterr()
    assert cli.main(["sweep", "fig_exp2_1", "--list", "--root", str(tmp_path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("scale quick (the default;") and "--scale cpu" in first
    assert (
        cli.main(["sweep", "fig_exp2_1", "--list", "--root", str(tmp_path), "--scale", "cpu"]) == 0
    )
    assert capsys.readouterr().out.startswith("scale cpu (--scale cpu; the default is quick)")
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--help"])
    assert "quick (the default" in " ".join(capsys.readouterr().out.split())


def test_readme_torch_line_has_a_fallback_hint():
    """The README's CPU-torch install line is followed by what to do when its index cannot be
    reached (pip otherwise retries for minutes without a word)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if "download.pytorch.org/whl/cpu" in ln)
    hint = lines[i + 1]
    assert hint.startswith("#") and "--retries 0" in hint and "--timeout" in hint


# --------------------------------------------------------------------------------------------------
# python -m entry points outside pfntheory.cli
# --------------------------------------------------------------------------------------------------


#: Bad command lines of the subcommands that were ``python -m`` entry points before issue 48
#: (the latent trainer and reference builder, now ``pfntheory sweep latent_gpc``; the shift-cause
#: and breakdown studies, now ``pfntheory sweep shift_cause|breakdown``; the label numbering, now
#: ``pfntheory numbering``); {tmp}: a folder of the files below.
ENTRY_LINES: list[list[str]] = [
    ["sweep", "latent_gpc", "--threads", "0"],
    ["sweep", "latent_gpc", "--threads", "-1"],
    ["sweep", "latent_gpc", "--threads", "x"],
    ["sweep", "latent_gpc", "nope"],
    ["sweep", "shift_cause", "--read-root", "{tmp}/nowhere"],
    ["sweep", "shift_cause", "--read-root", "{tmp}/a_file"],
    ["sweep", "shift_cause", "--read-root", "{tmp}/empty_root"],
    ["sweep", "shift_cause", "--bogus"],
    ["sweep", "breakdown", "fig_exp9"],
    ["sweep", "breakdown", "fig_exp2_1"],
    ["sweep", "multihead_confirm"],
    ["numbering"],
    ["numbering", "{tmp}/nope.tex"],
    ["numbering", "{tmp}"],
    ["numbering", "{tmp}/binary.tex"],
    ["numbering", "{tmp}/plain.tex"],
    ["numbering", "a.tex", "b.tex"],
]


@pytest.fixture(scope="module")
def entry_tmp(tmp_path_factory) -> Path:
    """A plain file, a binary and a label-free .tex, a root with a corrupt held-out set, and an
    empty folder."""
    tmp = tmp_path_factory.mktemp("entry")
    (tmp / "a_file").write_text("not a directory")
    (tmp / "binary.tex").write_bytes(b"\xff\xfe\x00 not text")
    (tmp / "plain.tex").write_text("no labels here\n")
    (tmp / "corrupt").mkdir()
    (tmp / "corrupt" / "heldout_curve.json").write_text("{truncated")
    (tmp / "empty_root").mkdir()
    return tmp


@pytest.mark.parametrize("line", ENTRY_LINES, ids=[" ".join(a) for a in ENTRY_LINES])
def test_entry_point_bad_line_is_one_line(line, entry_tmp, capsys):
    """Each bad command line of a former ``python -m`` entry point, now a ``pfntheory``
    subcommand, ends as one line on stderr and exit 2, without a traceback and without starting
    work (before: 11 tracebacks, issue 52)."""
    from pfntheory.cli import main

    argv = [a.replace("{tmp}", str(entry_tmp)) for a in line]
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2, f"{argv}: exit {e.value.code}: {err}"
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("pfntheory") and ": error: " in err, err  # argparse's or the command's
    assert not (entry_tmp / "r").exists()  # nothing was started
