"""Unit tests of pfntheory.cli: train / evaluate end to end, bad input, extensibility."""

import json

import pytest

from pfntheory import cli, runs
from pfntheory.nn import attention, model, priors


def test_parser_choices_match_library():
    """The CLI repeats the library's choices (to keep --help torch-free); they must agree."""
    assert cli.TASK_KINDS == priors.TASK_KINDS and cli.COVARIATES == priors.COVARIATES
    assert cli.SCORES == attention.SCORES and cli.MODES == model.MODES


def _train_args(rd, *extra):
    return ["train", "--run-dir", str(rd), "--task", "rbf", "--d", "2", "--L", "2", "--C", "8",
            "--n-min", "4", "--n-max", "6", "--steps", "2", "--lr", "1e-3", "--batch-size", "4",
            "--no-progress", "--device", "cpu", *extra]


def test_train_then_evaluate(tmp_path, capsys):
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    cfg = runs.load_json(rd / runs.CONFIG)
    assert cfg["task"]["kind"] == "rbf" and cfg["model"]["score"] == "rbf" and cfg["steps"] == 2
    assert (rd / runs.WEIGHTS).is_file()
    capsys.readouterr()
    assert cli.main(["evaluate", str(rd), "--n-eval", "4", "6", "--n-instances", "16"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"4", "6"} and 0 <= printed["4"]["tv"] <= 1
    assert set(runs.load_json(rd / runs.EVAL)["results"]) == {"4", "6"}
    capsys.readouterr()
    assert cli.main(["compare", str(rd), "--n", "6", "--n-instances", "3"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n"] == 6 and len(printed["scale"]["learned"]) == cfg["task"]["d"]
    assert (rd / "construction.json").is_file()


def test_every_subcommand_is_registered():
    """The README's commands all exist: train, evaluate, compare, sweep, report, casestudy."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"train", "evaluate", "compare", "sweep", "report", "casestudy"} <= set(sub.choices)


@pytest.mark.parametrize("argv,match", [
    (["train", "--task", "gp"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["evaluate"], "required"),
])
def test_argparse_errors(argv, match, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and match in capsys.readouterr().err


def test_mode_and_range_errors_are_clear(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(tmp_path / "a", "--mode", "magic"))
    assert e.value.code == 2 and "invalid choice: 'magic'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(tmp_path / "b")[:-2] + ["--n-min", "9", "--device", "cpu"])
    assert e.value.code == 2 and "n_min <= n_max" in capsys.readouterr().err


def test_evaluate_missing_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["evaluate", str(tmp_path / "nope"), "--n-eval", "4"])
    assert e.value.code == 2 and "not a run directory" in capsys.readouterr().err


def test_corrupted_checkpoint_via_cli(tmp_path, capsys):
    rd = tmp_path / "run"
    rd.mkdir()
    cli.main(_train_args(rd, "--checkpoint-every", "1"))
    (rd / runs.WEIGHTS).unlink()
    (rd / runs.METRICS).unlink()
    (rd / runs.CHECKPOINT).write_bytes(b"\x00" * 10)
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(rd, "--checkpoint-every", "1"))
    assert e.value.code == 2 and "truncated or corrupted" in capsys.readouterr().err


def test_subcommands_are_pluggable(monkeypatch):
    """A module with register(subparsers) adds a subcommand by one entry in SUBCOMMAND_MODULES."""
    import sys
    import types

    mod = types.ModuleType("pfntheory_fake_sub")

    def register(sub):
        p = sub.add_parser("fake")
        p.add_argument("--k", type=int, default=3)
        p.set_defaults(func=lambda args: args.k)

    mod.register = register
    monkeypatch.setitem(sys.modules, "pfntheory_fake_sub", mod)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.SUBCOMMAND_MODULES + ("pfntheory_fake_sub",))
    assert cli.main(["fake", "--k", "5"]) == 5
