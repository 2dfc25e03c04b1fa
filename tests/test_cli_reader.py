"""What a new user meets at the command line: the version, errors in words (no Python class
names), a clear message for an output path under a file, the Walker Lake option named as typed,
paths shown relative, and the README's success line pinned to what ``pytest verify/`` collects."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from pfntheory import __version__, cli

ROOT = Path(__file__).resolve().parents[1]


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    return e.value.code, capsys.readouterr()


def test_version(capsys):
    code, out = _run(["--version"], capsys)
    assert code == 0 and out.out.strip() == f"pfntheory {__version__}"


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError("walker.csv not found at /x; pass --walker-csv PATH"),
        RuntimeError("kaput"),
        KeyError("missing"),
        FileNotFoundError(2, "No such file or directory", "/nowhere/file.json"),
    ],
    ids=["os-error-message", "runtime", "lookup", "os-error-with-path"],
)
def test_errors_are_words_without_class_names(exc, monkeypatch, capsys):
    mod = types.ModuleType("pfntheory_raise")

    def register(sub):
        p = sub.add_parser("boom")
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(exc))

    mod.register = register
    monkeypatch.setitem(sys.modules, "pfntheory_raise", mod)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.SUBCOMMAND_MODULES + ("pfntheory_raise",))
    code, out = _run(["boom"], capsys)
    assert code in (1, 2) and out.err.count("\n") == 1
    assert type(exc).__name__ not in out.err and "Error:" not in out.err
    if exc.filename if isinstance(exc, OSError) else False:
        assert "/nowhere/file.json: no such file or directory" in out.err


def test_out_under_a_file_names_the_file(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    code, out = _run(["report", "--only", "01", "--out", str(blocker / "sub" / "dir")], capsys)
    assert code == 2 and f"{blocker} is a file" in out.err and "File exists" not in out.err


def test_report_scale_cpu_says_why(capsys):
    code, out = _run(["report", "--scale", "cpu"], capsys)
    assert code == 2 and "committed cpu runs" in out.err


def test_report_walker_csv_must_exist(tmp_path, capsys):
    code, out = _run(["report", "--walker-csv", str(tmp_path / "nope.csv")], capsys)
    assert code == 2 and "--walker-csv" in out.err and "no such file" in out.err


def test_walker_error_names_the_option(tmp_path):
    from pfntheory.casestudy.data import walker_csv_path

    with pytest.raises(FileNotFoundError, match=r"pass --walker-csv PATH .*PFNTHEORY_WALKER_CSV"):
        walker_csv_path(tmp_path / "missing.csv")


def test_evaluate_has_no_progress_and_no_bar_off_a_terminal(monkeypatch):
    from pfntheory.cli.options import show_progress

    args = cli.build_parser().parse_args(["evaluate", "run", "--n-eval", "4", "--no-progress"])
    assert args.no_progress and not show_progress(args)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not show_progress(types.SimpleNamespace(no_progress=False))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert show_progress(types.SimpleNamespace(no_progress=False))


def test_sweep_list_shows_relative_paths(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli.main(["sweep", "fig_exp1", "--list", "--scale", "quick"]) == 0
    out = capsys.readouterr().out
    assert "reports/runs/fig_exp1/" in out and str(ROOT) not in out


def test_runs_folder_of_the_readme_is_ignored():
    ignore = (ROOT / ".gitignore").read_text().splitlines()
    assert "/runs/" in ignore
    assert "--run-dir" in (ROOT / "README.md").read_text()


def _verify_counts(monkeypatch, walker: bool) -> dict[str, int]:
    """What ``pytest verify/`` selects, deselects and skips by marker at collection, by running
    its collection in this process (with the Walker Lake data present or hidden)."""
    import pfntheory.casestudy.data as data

    class Collect:
        items: list = []
        deselected = 0

        def pytest_collection_finish(self, session):
            Collect.items = list(session.items)

        def pytest_deselected(self, items):
            Collect.deselected += len(items)

    if not walker:  # a path that does not exist hides the data from every check
        monkeypatch.setenv(data.WALKER_CSV_ENV, str(ROOT / "no-such-dir" / "walker.csv"))
    for name, mod in list(sys.modules.items()):  # skip markers are evaluated at import
        if str(getattr(mod, "__file__", "") or "").startswith(str(ROOT / "verify")):
            monkeypatch.delitem(sys.modules, name)
    code = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", str(ROOT / "verify")],
        plugins=[Collect()],
    )
    assert code == 0
    skipped = 0
    for item in Collect.items:
        for m in item.iter_markers("skipif"):
            if m.args and bool(m.args[0]):
                skipped += 1
                break
    return {"selected": len(Collect.items), "deselected": Collect.deselected, "skipped": skipped}


def test_readme_success_line_is_what_pytest_verify_prints(monkeypatch):
    """The README's success line: its outcomes add up to the tests ``pytest verify/`` selects,
    its deselected count is the slow ones, and the line without the Walker Lake data skips
    exactly the checks that need it. Fails when a verify test is added or removed and the README
    is not updated (xfails are decided at run time, so the split of passed and xfailed is the
    README's, measured by running the suite)."""
    from pfntheory.casestudy.data import walker_data_available

    text = (ROOT / "README.md").read_text()
    with_data = re.search(r"^(\d+) passed, (\d+) deselected, (\d+) xfailed$", text, re.M)
    without = re.search(
        r"^(\d+) passed, (\d+) skipped, (\d+) deselected, (\d+) xfailed$", text, re.M
    )
    assert with_data and without, "README lost its success lines"
    passed, deselected, xfailed = map(int, with_data.groups())
    p2, skipped, d2, x2 = map(int, without.groups())
    if walker_data_available():
        c = _verify_counts(monkeypatch, walker=True)
        assert (passed + xfailed, deselected) == (c["selected"], c["deselected"])
    hidden = _verify_counts(monkeypatch, walker=False)
    assert (p2 + skipped + x2, d2, skipped) == (
        hidden["selected"],
        hidden["deselected"],
        hidden["skipped"],
    )
    assert p2 + skipped == passed and x2 == xfailed and d2 == deselected


def test_casestudy_at_another_scale_does_not_replace_the_committed_results(capsys):
    """The committed case studies are at the cpu scale: a quick run into their folder refuses
    (before any work) and names --out-dir."""
    code, out = _run(["casestudy", "sacramento", "--scale", "quick"], capsys)
    assert code == 2 and "--out-dir DIR" in out.err and "committed cpu-scale" in out.err
