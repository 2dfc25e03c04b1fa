"""Committed artefacts carry no absolute path of the machine that wrote them (issue 25).

A clone elsewhere must not show paths that do not exist there: every text file under ``reports/``
is scanned for this checkout's own location, the user's home directory and the usual absolute
prefixes, and a run written, evaluated and then moved to another directory still loads and
inspects.
"""

import json
import re
import shutil
from pathlib import Path

import pytest

from pfntheory import cli
from pfntheory.infra import runs
from pfntheory.infra.tree import EvalSpec

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
TEXT_SUFFIXES = {".json", ".html", ".md", ".csv", ".txt", ".svg", ".py", ".ipynb"}

#: An absolute POSIX path under a directory that exists only on the writing machine. The
#: lookbehind keeps URLs out (``https://host/home/...``, ``file:///tmp``) and relative paths
#: (``runs/tmp/x``).
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:work|root|tmp|home|Users|private|var/folders|mnt)/")


def _machine_paths() -> list[str]:
    """This checkout's absolute location and the home directory (when they are not ``/``)."""
    out = {str(ROOT), str(Path.home())}
    return sorted(p for p in out if len(p) > 1)


def _offences(text: str) -> list[str]:
    found = [m.group(0) for m in _ABSOLUTE.finditer(text)]
    found += [p for p in _machine_paths() if re.search(re.escape(p) + r"(?![\w.-])", text)]
    return found


def _report_files(suffixes) -> list[Path]:
    return sorted(
        p
        for p in REPORTS.rglob("*")
        if p.is_file() and p.suffix in suffixes and not p.name.startswith(".")
    )


def test_the_scan_finds_what_it_should():
    """The detector itself: absolute paths are found, URLs and relative paths are not."""
    assert _offences('"run_dir": "/work/main/reports/runs/x"')
    assert _offences("<pre>/tmp/ipykernel_27564/855954077.py:6: UserWarning")
    assert _offences("/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/tqdm")
    assert _offences(f'"path": "{ROOT}/reports"')
    assert not _offences('"run_dir": "reports/runs/fig_exp1/"')
    assert not _offences('<a href="https://example.org/home/page">')
    assert not _offences('"run_dir": "../runs/tmp/x"')


PAGES = {".html"}
DATA = TEXT_SUFFIXES - PAGES


@pytest.mark.parametrize(
    "suffixes",
    [
        pytest.param(DATA, id="data"),
        pytest.param(PAGES, id="pages"),
    ],
)
def test_no_absolute_path_in_committed_reports(suffixes):
    """No file under reports/ (runs' JSON, results, case studies; the HTML pages) names a path
    of the machine that wrote it."""
    files = _report_files(suffixes)
    assert files, "reports/ holds none of these files"
    bad = {}
    for p in files:
        hits = _offences(p.read_text(errors="replace"))
        if hits:
            bad[p.relative_to(ROOT).as_posix()] = sorted(set(hits))[:3]
    assert not bad, f"{len(bad)} files under reports/ hold absolute paths: " + "; ".join(
        f"{k}: {v}" for k, v in list(bad.items())[:10]
    )


def _train(rd: Path) -> None:
    argv = ["train", "--run-dir", str(rd), "--task", "rbf", "--d", "2", "--L", "2", "--C", "8"]
    argv += ["--n-min", "4", "--n-max", "6", "--steps", "2", "--lr", "1e-3", "--batch-size", "4"]
    assert cli.main([*argv, "--no-progress", "--device", "cpu"]) == 0


def test_a_run_moved_elsewhere_holds_no_path_and_still_loads(tmp_path, capsys):
    """The files a run's commands write name no directory, and a run moved to another place
    (a clone, a copied runs root) evaluates, compares and loads there."""
    from pfntheory.experiments.results import load_eval
    from pfntheory.nn.evaluate import evaluate
    from pfntheory.nn.train import load_trained

    first = tmp_path / "machine_a" / "run"
    _train(first)
    evaluate(first, EvalSpec((4, 6), 8))
    for f in sorted(first.glob("*.json")):
        text = f.read_text()
        assert str(tmp_path) not in text and "machine_a" not in text, f.name
        assert "run_dir" not in json.loads(text), f.name
    moved = tmp_path / "machine_b" / "clone"
    moved.parent.mkdir()
    shutil.move(str(first), str(moved))
    load_trained(moved)
    assert list(load_eval(moved / runs.EVAL).n_eval) == [4, 6]
    capsys.readouterr()
    assert cli.main(["evaluate", str(moved), "--n-eval", "4", "--n-instances", "4"]) == 0
    assert cli.main(["compare", str(moved), "--n", "6", "--n-instances", "2"]) == 0
    assert "machine_a" not in capsys.readouterr().out


@pytest.mark.parametrize("name", ["eval.json", "eval_uniform.json"])
def test_committed_evaluations_name_no_directory(name):
    """The committed eval*.json files (rewritten by issue 25) hold no ``run_dir`` at all: the
    file's own location is its run directory, wherever the runs root was copied to."""
    files = sorted((REPORTS / "runs").rglob(name))
    if not files:
        pytest.skip(f"no committed {name}")
    with_dir = [p.relative_to(ROOT).as_posix() for p in files if "run_dir" in runs.load_json(p)]
    assert not with_dir, f"{len(with_dir)} committed {name} still name a run_dir: {with_dir[:5]}"
