"""Fuzz suite of the command line's error contract (issue 12).

Contract: a bad command line -- for every subcommand: unknown choices, out-of-range or malformed
numbers (0 included: never silently replaced by a default), sizes beyond the stated limits, devices
the machine lacks, unreadable or unwritable paths, damaged run directories -- ends as exactly one
line on stderr and a non-zero exit status, promptly, with no traceback and without starting work.

Each line of :data:`BAD_LINES` runs through :func:`pfntheory.cli.main` in this process (with a
time limit, so one that starts training is caught as "accepted", not waited for); a few also run
through the installed ``pfntheory`` script in a subprocess, to see exactly what a user sees.
Hypothesis adds random garbage values for every numeric option of ``train``.

Run ``python tests/test_fuzz_cli.py`` for the tally (tried / one-line errors / other).
"""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from _cli_args import train_argv
from hypothesis import given, settings
from hypothesis import strategies as st

from pfntheory import cli
from pfntheory.infra import runs as runfiles

UNWRITABLE = "/proc/pfntheory-cannot-write-here"  # no one, not even root, creates files in /proc

TRAIN = train_argv("{tmp}/run")


def _train(**changes) -> list[str]:
    """The valid ``TRAIN`` line with options replaced (value None removes the option)."""
    argv = list(TRAIN)
    for opt, val in changes.items():
        flag = "--" + opt.replace("_", "-")
        if flag in argv:
            i = argv.index(flag)
            if val is None:
                del argv[i : i + 2]
            else:
                argv[i + 1] = val
        elif val is not None:
            argv += [flag, val]
    return argv


def _bad_lines() -> list[tuple[str, list[str]]]:
    L = []

    def add(name, argv):
        L.append((name, argv))

    # top level
    add("no command", [])
    add("unknown command", ["frobnicate"])
    add("debug alone", ["--debug"])
    # train: every option
    for opt, vals in {
        "task": ["gp"],
        "d": ["0", "-1", "1000000", "x", "2.5"],
        "L": ["0", "-2", "100000"],
        "C": ["1", "0", "10000000"],
        "n_min": ["0"],
        "n_max": ["100000", "0"],
        "steps": ["0", "-5", "1.5", "10000000000"],
        "lr": ["0", "-1", "nan", "inf", "x"],
        "batch_size": ["0", "1000000000"],
        "seed": ["-1", str(2**64), "abc"],
        "checkpoint_every": ["0"],
        "device": ["tpu", "cuda:x", "gpu0"],
        "noise_var": ["0", "-1", "nan"],
        "alpha": ["0"],
        "lengthscale": ["nan", "-0.8"],
        "lengthscales": ["1,-1", "a,b", ""],
        "tau_min": ["0"],
        "eta_init": ["-1"],
        "scale_init": ["0"],
        "mode": ["magic"],
        "head": ["foo"],
        "score": ["foo"],
        "covariates": ["foo"],
        "scale": ["huge"],
    }.items():
        for v in vals:
            add(f"train --{opt.replace('_', '-')} {v}", _train(**{opt: v}))
    add("train n_min > n_max", _train(n_min="9"))
    add("train missing --task", _train(task=None))
    add("train --normalised --score linear", _train(score="linear") + ["--normalised"])
    add("train attention too large", _train(n_max="16384", batch_size="65536"))
    add("train --run-dir is a file", _train(run_dir="{tmp}/a_file"))
    add("train --run-dir unwritable", _train(run_dir=UNWRITABLE + "/run"))
    add("train --run-dir of another config", _train(run_dir="{tmp}/other_run"))
    # evaluate
    add("evaluate no RUN_DIR", ["evaluate", "--n-eval", "4"])
    add("evaluate missing run", ["evaluate", "{tmp}/nope", "--n-eval", "4"])
    add("evaluate RUN_DIR is a file", ["evaluate", "{tmp}/a_file", "--n-eval", "4"])
    add("evaluate truncated weights", ["evaluate", "{tmp}/truncated", "--n-eval", "4"])
    add("evaluate metrics without interval", ["evaluate", "{tmp}/no_interval", "--n-eval", "4"])
    for opt, v in (
        ("--n-eval", "0"),
        ("--n-eval", "-3"),
        ("--n-eval", "x"),
        ("--n-eval", "100000"),
        ("--n-instances", "0"),
        ("--batch-size", "0"),
        ("--device", "tpu"),
        ("--seed", str(2**64)),
        ("--covariates", "foo"),
    ):
        add(
            f"evaluate {opt} {v}",
            ["evaluate", "{tmp}/other_run", "--n-eval", "4", opt, v]
            if opt != "--n-eval"
            else ["evaluate", "{tmp}/other_run", opt, v],
        )
    add(
        "evaluate batch too large",
        ["evaluate", "{tmp}/other_run", "--n-eval", "16384", "--batch-size", "65536"],
    )
    # compare
    add("compare missing run", ["compare", "{tmp}/nope"])
    add("compare truncated weights", ["compare", "{tmp}/truncated"])
    for opt, v in (("--n", "0"), ("--n-instances", "0"), ("--seed", "-1")):
        add(f"compare {opt} {v}", ["compare", "{tmp}/other_run", opt, v])
    # sweep
    add("sweep unknown experiment", ["sweep", "fig_exp9", "--dry-run", "--root", "{tmp}/r"])
    add("sweep --list unknown experiment", ["sweep", "fig_exp9", "--list"])
    add("sweep --scale huge", ["sweep", "fig_exp2_1", "--scale", "huge"])
    add("sweep --executor foo", ["sweep", "fig_exp2_1", "--executor", "foo"])
    add(
        "sweep --executor slurm without SLURM",
        ["sweep", "fig_exp2_1", "--root", "{tmp}/r", "--executor", "slurm"],
    )
    for opt, v in (
        ("--workers", "0"),
        ("--workers", "-1"),
        ("--threads", "0"),
        ("--wait-lock", "-1"),
        ("--wait-lock", "nan"),
        ("--timeout-min", "0"),
        ("--submitit-cluster", "foo"),
        ("--mem-gb", "-1"),
        ("--array-parallelism", "0"),
    ):
        add(f"sweep {opt} {v}", ["sweep", "fig_exp2_1", "--dry-run", "--root", "{tmp}/r", opt, v])
    add("sweep --dry-run without --root", ["sweep", "fig_exp2_1", "--dry-run"])
    add("sweep --root unwritable", ["sweep", "fig_exp2_1", "--dry-run", "--root", UNWRITABLE])
    add("sweep --root is a file", ["sweep", "fig_exp2_1", "--dry-run", "--root", "{tmp}/a_file"])
    # report
    add("report --scale foo", ["report", "--scale", "foo"])
    add("report --timeout 0", ["report", "--timeout", "0"])
    add("report --timeout x", ["report", "--timeout", "x"])
    add("report --out unwritable", ["report", "--out", UNWRITABLE])
    add("report --out is a file", ["report", "--out", "{tmp}/a_file"])
    # casestudy
    add("casestudy unknown dataset", ["casestudy", "boston"])
    add("casestudy --device tpu", ["casestudy", "sacramento", "--device", "tpu"])
    add("casestudy --scale foo", ["casestudy", "sacramento", "--scale", "foo"])
    add("casestudy --seed -1", ["casestudy", "sacramento", "--seed", "-1"])
    add("casestudy --grid-stride 0", ["casestudy", "walker", "--grid-stride", "0"])
    add("casestudy --out-dir unwritable", ["casestudy", "sacramento", "--out-dir", UNWRITABLE])
    add(
        "casestudy --walker-csv missing",
        ["casestudy", "walker", "--walker-csv", "{tmp}/nope.csv", "--out-dir", "{tmp}/o"],
    )
    # issue 41: options that would not apply, or would train what nothing reads, are refused
    add(
        "casestudy --budget-factor without doubling",
        ["casestudy", "sacramento", "--budget-factor", "2"],
    )
    add(
        "casestudy --budget-factor 3",
        ["casestudy", "sacramento", "--budget-doubling", "--budget-factor", "3"],
    )
    add(
        "train --no-curve --curve-points",
        _train(run_dir="{tmp}/nc") + ["--no-curve", "--curve-points", "8"],
    )
    add(
        "train --no-curve --curve-instances",
        _train(run_dir="{tmp}/nc") + ["--no-curve", "--curve-instances", "8"],
    )
    add(
        "train --fast-numerics on blr", _train(run_dir="{tmp}/fb", task="blr") + ["--fast-numerics"]
    )
    add(
        "evaluate --curve-only --n-eval",
        ["evaluate", "{tmp}/other_run", "--curve-only", "--n-eval", "8"],
    )
    add(
        "evaluate --curve-only --out",
        ["evaluate", "{tmp}/other_run", "--curve-only", "--out", "{tmp}/e.json"],
    )
    add(
        "evaluate --out of another producer",
        ["evaluate", "{tmp}/other_run", "--n-eval", "4", "--n-instances", "8", "--out",
         "{tmp}/foreign_eval.json"],
    )  # fmt: skip
    add("train checkpoint is a directory", _train(run_dir="{tmp}/ckdir"))
    return L


BAD_LINES = _bad_lines()


def make_workdir(tmp: Path) -> Path:
    """A folder with a plain file, a trained run, a copy with truncated weights, and one whose
    metrics.json lacks its interval (trained once, 2 steps)."""
    import shutil

    (tmp / "a_file").write_text("not a directory")
    argv = [a.replace("{tmp}", str(tmp)) for a in _train(run_dir="{tmp}/other_run", d="3")]
    assert cli.main(argv) == 0
    shutil.copytree(tmp / "other_run", tmp / "truncated")
    w = tmp / "truncated" / runfiles.WEIGHTS
    w.write_bytes(w.read_bytes()[:200])
    # issue 41: a JSON of another producer (no producer record) at an evaluate --out path; a
    # directory where a run writes its checkpoint
    runfiles.save_json(tmp / "foreign_eval.json", {"seed": 12345, "results": {"4": {"tv": 0.5}}})
    (tmp / "ckdir" / runfiles.CHECKPOINT).mkdir(parents=True)
    shutil.copytree(tmp / "other_run", tmp / "no_interval")
    doc = runfiles.load_json(tmp / "no_interval" / runfiles.METRICS)
    del doc["interval"]
    runfiles.save_json(tmp / "no_interval" / runfiles.METRICS, doc)
    return tmp


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return make_workdir(tmp_path_factory.mktemp("cli"))


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run_line(argv: list[str], timeout_s: int = 60) -> tuple[str, str, float]:
    """``(kind, stderr, seconds)``; kind in one-line error / multi-line error / traceback /
    accepted / hang."""
    err, out = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    t0 = time.monotonic()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = cli.main(argv)
        kind = "accepted" if code == 0 else "returned non-zero"
    except SystemExit as e:
        text = err.getvalue().strip()
        if e.code in (0, None):
            kind = "accepted"
        elif "Traceback" in text:
            kind = "traceback"
        else:
            kind = "one-line error" if text and len(text.splitlines()) == 1 else "multi-line error"
    except _Hang:
        kind = "hang"
    except BaseException as e:  # noqa: BLE001 - a traceback is what we measure
        kind, err = "traceback", io.StringIO(f"{type(e).__name__}: {e}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return kind, err.getvalue().strip(), time.monotonic() - t0


def _argv(line, tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in line]


@pytest.fixture(autouse=True)
def _no_slurm_no_cuda(monkeypatch):
    """The checks must not depend on the machine: no SLURM, no CUDA."""
    import torch

    from pfntheory.experiments import pool

    monkeypatch.setattr(pool.shutil, "which", lambda name: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("PFNTHEORY_RUNS", raising=False)


#: Seconds a refusal may take: it must come before any work (torch import and one checkpoint read
#: on a loaded 2-core machine take a few seconds; training or a notebook would take far longer).
PROMPT_S = 30.0


@pytest.mark.parametrize("name,line", BAD_LINES, ids=[n for n, _ in BAD_LINES])
def test_bad_line_is_one_line_error(name, line, workdir):
    kind, err, secs = run_line(_argv(line, workdir))
    assert kind == "one-line error", f"{name}: {kind}: {err[-500:]}"
    assert secs < PROMPT_S, f"{name}: refused only after {secs:.0f} s"


def test_cuda_request_without_cuda(workdir):
    for line in (
        _train(device="cuda"),
        ["casestudy", "sacramento", "--device", "cuda:0"],
        ["evaluate", "{tmp}/other_run", "--n-eval", "4", "--device", "cuda"],
    ):
        kind, err, secs = run_line(_argv(line, workdir))
        assert kind == "one-line error" and "CUDA is not available" in err, err
        assert secs < PROMPT_S


_INT_OPTS = ["d", "L", "C", "n_min", "n_max", "steps", "batch_size", "seed", "checkpoint_every"]
_FLOAT_OPTS = ["lr", "noise_var", "alpha", "lengthscale", "tau_min", "eta_init", "scale_init"]
_GARBAGE = st.one_of(
    st.sampled_from(
        [
            "0",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e400",
            "",
            " ",
            "0x10",
            "1_000",
            "٣",
            "1e-400",
            str(2**70),
            "--",
            "None",
        ]
    ),
    st.integers(max_value=0).map(str),
    st.text(alphabet="abc-+.eE ", min_size=1, max_size=6),
)


@settings(max_examples=40)
@given(opt=st.sampled_from(_INT_OPTS + _FLOAT_OPTS), value=_GARBAGE)
def test_random_garbage_values(opt, value, tmp_path_factory):
    """40 random (option, garbage) pairs on ``train``: either refused in one line, or (for a value
    that parses to a valid number, e.g. '1_000') accepted -- never a traceback. Every accepted one
    is a valid number in range, so it is not replaced by a default either."""
    from pfntheory.nn import train as train_mod

    def fake_train(cfg, run_dir, progress=True):  # records the config instead of training
        runfiles.save_json(Path(run_dir) / runfiles.CONFIG, runfiles.config_to_dict(cfg))
        return run_dir

    tmp = tmp_path_factory.mktemp("g")
    argv = _argv(_train(**{"steps": "1", opt: value}), tmp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(train_mod, "train", fake_train)
        kind, err, _ = run_line(argv, timeout_s=120)
    assert kind in ("one-line error", "accepted"), f"--{opt} {value!r}: {kind}: {err[-300:]}"
    if kind == "accepted":
        cfg = runfiles.load_json(tmp / "run" / runfiles.CONFIG)
        flat = {**cfg, **cfg["task"], **cfg["model"]}
        assert float(
            flat[opt if opt not in ("tau_min", "eta_init", "scale_init") else opt]
        ) == float(value.replace("_", "")), (opt, value)


@pytest.mark.parametrize(
    "line",
    [
        ["train", "--d", "0"],
        ["evaluate", "/nonexistent", "--n-eval", "4"],
        ["sweep", "fig_exp2_1", "--workers", "0"],
    ],
)
def test_installed_script_shows_no_traceback(line):
    """What a user sees from the real script: one line, status 2."""
    p = subprocess.run(
        [sys.executable, "-m", "pfntheory", *line], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_debug_shows_the_traceback():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfntheory",
            "--debug",
            "evaluate",
            "/nonexistent",
            "--n-eval",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0 and "Traceback" in p.stderr


if __name__ == "__main__":  # the figures of the report
    import tempfile

    import torch

    from pfntheory.experiments import pool

    pool.shutil.which = lambda name: None  # as the autouse fixture: no SLURM, no CUDA
    torch.cuda.is_available = lambda: False
    with tempfile.TemporaryDirectory() as d:
        tmp = make_workdir(Path(d))
        counts: Counter = Counter()
        for name, line in BAD_LINES:
            kind, err, secs = run_line(_argv(line, tmp))
            counts[kind] += 1
            if kind != "one-line error" or secs > PROMPT_S:
                print(f"  {kind:16s} {name} ({secs:.1f} s): {err[-200:]}")
        print(
            f"{len(BAD_LINES)} bad CLI lines: "
            + ", ".join(f"{v} {k}" for k, v in counts.most_common())
        )
