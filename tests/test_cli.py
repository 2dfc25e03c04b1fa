"""Unit tests of pfntheory.cli: train / evaluate end to end, bad input, extensibility."""

import json
import os

import pytest
from _cli_args import train_argv, train_shape

from pfntheory import cli
from pfntheory.cli import train as train_cmd
from pfntheory.infra import runs
from pfntheory.nn import attention, model, priors


def test_parser_choices_match_library():
    """The CLI takes its choices from pfntheory.infra.config (torch-free); the library uses the
    same."""
    assert train_cmd.TASK_KINDS == priors.TASK_KINDS and train_cmd.COVARIATES == priors.COVARIATES
    assert train_cmd.SCORES == attention.SCORES and train_cmd.MODES == model.MODES


def _train_args(rd, *extra):
    return train_argv(rd, *extra)


def test_train_then_evaluate(tmp_path, capsys):
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    cfg = runs.load_json(rd / runs.CONFIG)
    assert cfg["task"]["kind"] == "rbf" and cfg["model"]["score"] == "rbf" and cfg["steps"] == 2
    assert (rd / runs.WEIGHTS).is_file()
    capsys.readouterr()
    argv = ["evaluate", str(rd), "--n-eval", "4", "6", "--n-instances", "16", "--json"]
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"4", "6"} and 0 <= printed["4"]["tv"] <= 1
    assert not (rd / runs.EVAL).exists()  # inspection writes nothing unless --out is given
    capsys.readouterr()
    assert cli.main(["evaluate", str(rd), "--curve-only", "--curve", "nll"]) == 0
    out = capsys.readouterr().out
    # the run's learning curve (if training recorded one) or a plain statement that it has none
    from pfntheory.infra.convergence import STATES

    assert ("step" in out and any(state in out for state in STATES)) or "no learning curve" in out
    # the curve on another covariate design: none was recorded for this run, and it says so
    assert cli.main(["evaluate", str(rd), "--curve-only", "--covariates", "uniform"]) == 0
    assert "no learning curve on the uniform design" in capsys.readouterr().out
    # without --curve-only the evaluation sizes are required, and the error names the option
    with pytest.raises(SystemExit) as err:
        cli.main(["evaluate", str(rd)])
    assert err.value.code == 2 and "--n-eval is required" in capsys.readouterr().err
    assert cli.main(["compare", str(rd), "--n", "6", "--n-instances", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n"] == 6 and len(printed["scale"]["learned"][0]) == cfg["task"]["d"]
    assert not (rd / "construction.json").exists()


def _snapshot(rd):
    return {f.name: f.read_bytes() for f in sorted(rd.iterdir())}


def test_inspecting_a_run_never_rewrites_it(tmp_path, capsys):
    """Issue 25: `compare RUN` with its defaults rewrote the run's committed construction.json
    (16 instances became 32). evaluate and compare now read the run and print rounded, labelled
    tables; every file of the run directory keeps its bytes."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    runs.save_json(rd / "construction.json", {"n_instances": 16, "committed": True})
    runs.save_json(rd / runs.EVAL, {"seed": 12345, "n_instances": 4096, "results": {}})
    before = _snapshot(rd)
    capsys.readouterr()
    assert cli.main(["compare", str(rd), "--n", "6", "--n-instances", "3"]) == 0
    out = capsys.readouterr().out
    assert "readout distances" in out and "trained and exact PPD" in out and "{" not in out
    assert "prescribed (supp-eqn:weights)" in out and "eta (attention)" in out
    assert cli.main(["evaluate", str(rd), "--n-eval", "4", "6", "--n-instances", "8"]) == 0
    out = capsys.readouterr().out
    table = out.splitlines()
    assert "8 instances per n'" in table[0] and table[1].split()[:2] == ["n'", "E[TV]"]
    assert [r.split()[0] for r in table[3:5]] == ["4", "6"]  # one row per n', after the rule
    assert "{" not in out and "e-0" not in table[3]  # rounded: no raw float reprs
    assert _snapshot(rd) == before


def test_out_writes_only_where_asked(tmp_path, capsys):
    """--out FILE writes the document there (evaluate keeps results of other n' under the same
    settings); the run directory is untouched."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    before = _snapshot(rd)
    ev, cmp = tmp_path / "inspect" / "eval.json", tmp_path / "inspect" / "construction.json"
    base = ["evaluate", str(rd), "--n-instances", "8", "--out", str(ev)]
    assert cli.main([*base, "--n-eval", "4"]) == 0
    assert cli.main([*base, "--n-eval", "6"]) == 0
    doc = runs.load_json(ev)
    assert set(doc["results"]) == {"4", "6"} and doc["n_instances"] == 8 and "run_dir" not in doc
    assert "wrote" in capsys.readouterr().err
    assert cli.main(["compare", str(rd), "--n-instances", "2", "--out", str(cmp)]) == 0
    assert runs.load_json(cmp)["n_instances"] == 2
    assert _snapshot(rd) == before


def test_evaluate_that_cannot_write_still_prints(tmp_path, capsys):
    """An --out that cannot be written is a one-line error after the numbers were printed."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    capsys.readouterr()
    argv = ["evaluate", str(rd), "--n-eval", "4", "--n-instances", "8"]
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--out", str(blocker / "eval.json")])
    captured = capsys.readouterr()
    assert e.value.code == 2
    assert "E[TV]" in captured.out and any(r.startswith("4 ") for r in captured.out.splitlines())
    err = captured.err.strip().splitlines()[-1]
    assert "could not be written" in err and "not saved" in err and "Traceback" not in captured.err
    with pytest.raises(SystemExit):
        cli.main(["compare", str(rd), "--n-instances", "2", "--out", str(blocker / "c.json")])
    assert "readout distances" in capsys.readouterr().out


def test_train_options_reach_the_config(tmp_path, capsys):
    """--context-groups and --lr-units land in config.json; a value above --batch-size is refused
    with the option's name."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd, "--context-groups", "2", "--lr-units", "elementwise")) == 0
    cfg = runs.load_json(rd / runs.CONFIG)
    assert cfg["context_groups"] == 2 and cfg["lr_units"] == "elementwise"
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(tmp_path / "bad", "--context-groups", "5"))
    assert e.value.code == 2
    assert "--context-groups must be <= --batch-size=4" in capsys.readouterr().err  # as typed


def test_every_subcommand_is_registered():
    """The README's commands all exist: train, evaluate, compare, sweep, report, casestudy."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"train", "evaluate", "compare", "sweep", "report", "casestudy"} <= set(sub.choices)


def test_readme_runs_what_ci_runs():
    """The README's whole-suite command is the last line of .ci/run, byte for byte, on its first
    screen, after the CPU-only torch install; the README stays short and its links, and those of
    docs/, resolve to files of the repository."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text().splitlines()
    ci = [ln for ln in (root / ".ci" / "run").read_text().splitlines() if ln.strip()]
    assert ci[-1] in readme, "README.md lost .ci/run's test command"
    first_screen = readme[:40]
    assert ci[-1] in first_screen and 'python -m pip install -e ".[test,data]"' in "\n".join(
        first_screen
    )
    torch_line = next(i for i, ln in enumerate(readme) if "pip install torch" in ln)
    assert torch_line < min(i for i, ln in enumerate(readme) if "pip install -e" in ln)
    assert len(readme) <= 150
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


@pytest.mark.parametrize(
    "argv,match",
    [
        (["train", "--task", "gp"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
        (["evaluate"], "required"),
    ],
)
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
    assert e.value.code == 2 and "--n-min 9 is larger than --n-max 6" in capsys.readouterr().err


def test_evaluate_missing_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["evaluate", str(tmp_path / "nope"), "--n-eval", "4"])
    assert e.value.code == 2 and "not a run directory" in capsys.readouterr().err


def test_corrupted_checkpoint_is_redone(tmp_path, capsys):
    """A corrupt checkpoint cannot be resumed from: re-running train says so on stderr, removes it
    and trains from step 0 (the contract: a corrupt artefact is redone by the command that
    made it)."""
    rd = tmp_path / "run"
    rd.mkdir()
    cli.main(_train_args(rd, "--checkpoint-every", "1"))
    (rd / runs.WEIGHTS).unlink()
    (rd / runs.METRICS).unlink()
    (rd / runs.CHECKPOINT).write_bytes(b"\x00" * 10)
    capsys.readouterr()
    assert cli.main(_train_args(rd, "--checkpoint-every", "1")) == 0
    err = capsys.readouterr().err
    assert "checkpoint.pt" in err and "truncated or corrupted" in err
    assert runs.check_artefacts(rd) == {} and runs.load_json(rd / runs.METRICS)["completed"]


def test_truncated_weights_are_redone(tmp_path, capsys):
    """Issue 12: a truncated weights.pt plus re-running train used to exit 0 leaving it corrupt.
    Now train detects it, retrains, and evaluate works again; before that, evaluate refuses in one
    line naming the file."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    w = rd / runs.WEIGHTS
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main(["evaluate", str(rd), "--n-eval", "4", "--n-instances", "4"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "weights.pt" in err and len(err.strip().splitlines()) == 1
    assert cli.main(_train_args(rd)) == 0
    assert "weights.pt" in capsys.readouterr().err
    assert runs.check_artefacts(rd) == {}
    assert cli.main(["evaluate", str(rd), "--n-eval", "4", "--n-instances", "4"]) == 0


def test_metrics_without_interval_is_one_line(tmp_path, capsys):
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    doc = runs.load_json(rd / runs.METRICS)
    del doc["interval"]
    runs.save_json(rd / runs.METRICS, doc)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main(["evaluate", str(rd), "--n-eval", "4"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "interval" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "flag,value",
    [
        ("--steps", "0"),
        ("--lr", "0"),
        ("--batch-size", "0"),
        ("--seed", str(2**64)),
        ("--seed", "-1"),
        ("--d", "0"),
        ("--lr", "nan"),
        ("--checkpoint-every", "0"),
    ],
)
def test_explicit_values_are_refused_not_replaced(tmp_path, flag, value, capsys):
    """Issue 12: --steps 0 and --lr 0 were silently replaced by the defaults (args.steps
    or steps)."""
    argv = _train_args(tmp_path / "r")
    i = argv.index(flag) if flag in argv else None
    if i is None:
        argv += [flag, value]
    else:
        argv[i + 1] = value
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and flag in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_explicit_values_are_honoured(tmp_path):
    rd = tmp_path / "r"
    argv = _train_args(rd, "--seed", str(2**63 - 1))
    argv[argv.index("--steps") + 1] = "1"
    argv[argv.index("--lr") + 1] = "0.5"
    assert cli.main(argv) == 0
    cfg = runs.load_json(rd / runs.CONFIG)
    assert (cfg["steps"], cfg["lr"], cfg["seed"]) == (1, 0.5, 2**63 - 1)


@pytest.mark.parametrize(
    "argv", [["train", "--device", "tpu"], ["evaluate", "x", "--n-eval", "4", "--device", "cuda:x"]]
)
def test_device_is_validated_by_the_parser(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and "--device" in capsys.readouterr().err


def test_device_checked_before_work(tmp_path, capsys, monkeypatch):
    """A CUDA request without CUDA fails at once, for subcommands registered elsewhere too
    (casestudy used to fail only after 30 s of work)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for argv in (
        _train_args(tmp_path / "r")[:-1] + ["cuda"],
        ["casestudy", "sacramento", "--device", "cuda", "--out-dir", str(tmp_path / "o")],
    ):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and "CUDA is not available" in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


def test_run_dir_that_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(f))
    err = capsys.readouterr().err
    assert e.value.code == 2 and "not a directory" in err and "Traceback" not in err


def test_normalised_linear_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(_train_args(tmp_path / "r") + ["--normalised", "--score", "linear"])
    assert e.value.code == 2 and "--normalised" in capsys.readouterr().err


def test_attention_size_limit(tmp_path, capsys):
    argv = _train_args(tmp_path / "r")
    argv[argv.index("--n-max") + 1] = "16384"
    argv[argv.index("--batch-size") + 1] = "65536"
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and "attention" in capsys.readouterr().err


def test_unexpected_error_is_one_line_and_debug_shows_it(monkeypatch, capsys):
    """The boundary turns any exception into one line (status 1 for non-input errors); --debug
    re-raises it with its traceback."""
    import sys
    import types

    mod = types.ModuleType("pfntheory_boom")

    def register(sub):
        p = sub.add_parser("boom")
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(RuntimeError("kaput\nsecond line")))

    mod.register = register
    monkeypatch.setitem(sys.modules, "pfntheory_boom", mod)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.SUBCOMMAND_MODULES + ("pfntheory_boom",))
    with pytest.raises(SystemExit) as e:
        cli.main(["boom"])
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1 and "error: kaput second line (run" in err
    assert "RuntimeError" not in err
    with pytest.raises(RuntimeError, match="kaput"):
        cli.main(["boom", "--debug"])


def test_keyboard_interrupt_is_one_line(monkeypatch, capsys):
    import sys
    import types

    mod = types.ModuleType("pfntheory_int")

    def register(sub):
        p = sub.add_parser("intr")
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(KeyboardInterrupt()))

    mod.register = register
    monkeypatch.setitem(sys.modules, "pfntheory_int", mod)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.SUBCOMMAND_MODULES + ("pfntheory_int",))
    with pytest.raises(SystemExit) as e:
        cli.main(["intr"])
    assert e.value.code == 130 and "interrupted" in capsys.readouterr().err


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


def test_train_records_a_learning_curve_by_default_and_takes_the_cpu_scale(tmp_path):
    """Issue 24 item 7: `pfntheory train` writes learning_curve.json at n' in {n_min, n_max}
    unless --no-curve; --scale cpu selects the cpu scale's optimiser (elementwise Adam at 3e-2,
    weight average 0.99: weights_last.pt beside weights.pt); explicit options win (fails if the
    README's demo trained without a curve, or --scale cpu were refused)."""
    from pfntheory.experiments.definitions import BUDGET_EMA_DECAY, CPU_LR, CPU_LR_UNITS
    from pfntheory.nn.train import WEIGHTS_LAST

    small = ("--curve-instances", "4", "--curve-points", "2")
    rd = tmp_path / "default"
    assert cli.main(_train_args(rd, *small)) == 0
    curve = runs.load_json(rd / "learning_curve.json")
    assert curve["n_eval"] == [4, 6] and {p["step"] for p in curve["points"]} >= {0, 2}
    assert runs.load_json(rd / runs.CONFIG)["ema_decay"] == 0.0
    rd = tmp_path / "none"
    assert cli.main(_train_args(rd, "--no-curve")) == 0
    assert not (rd / "learning_curve.json").exists()
    rd = tmp_path / "cpu"
    args = [a for a in _train_args(rd, *small, "--scale", "cpu") if a not in ("--lr", "1e-3")]
    assert cli.main(args) == 0
    cfg = runs.load_json(rd / runs.CONFIG)
    assert cfg["lr"] == CPU_LR and cfg["lr_units"] == CPU_LR_UNITS
    assert cfg["ema_decay"] == BUDGET_EMA_DECAY and (rd / WEIGHTS_LAST).is_file()
    assert "last_tv" in runs.load_json(rd / "learning_curve.json")["points"][-1]
    rd = tmp_path / "cpu-abs"
    assert cli.main(_train_args(rd, "--scale", "cpu", "--lr-units", "absolute", "--no-curve")) == 0
    assert runs.load_json(rd / runs.CONFIG)["lr_units"] == "absolute"


@pytest.mark.parametrize(
    "argv, needle",
    [
        (
            train_shape(""),
            "--run-dir must not be empty",
        ),
        (["evaluate", "", "--n-eval", "4"], "RUN_DIR must not be empty"),
        (["compare", " "], "RUN_DIR must not be empty"),
        (["sweep", "fig_exp1", "--root", "", "--list"], "--root must not be empty"),
        (["report", "--out", ""], "--out must not be empty"),
        (["casestudy", "sacramento", "--out-dir", ""], "--out-dir must not be empty"),
        (
            train_shape("x", "--lengthscales", "1,2"),
            "--lengthscales does not apply to --task rbf",
        ),
        (
            train_shape("x", "--lengthscale", "0.5", task="blr"),
            "--lengthscale does not apply to --task blr",
        ),
        (["sweep", "fig_exp1", "--partition", "gpu", "--dry-run"], "only for --executor slurm"),
    ],
)
def test_empty_paths_and_options_that_do_not_apply_are_refused(
    argv, needle, tmp_path, capsys, monkeypatch
):
    """Issue 29: an empty path would silently mean the current directory, and an option that does
    not apply would be stored and mean nothing: both end in one line on stderr and exit 2, before
    any work (fails on a zero exit or a traceback)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as err:
        cli.main(argv)
    assert err.value.code == 2
    out = capsys.readouterr().err
    assert needle in out and out.count("\n") == 1 and "Traceback" not in out
    assert list(tmp_path.iterdir()) == []


def test_a_closed_pipe_ends_quietly():
    """`pfntheory sweep --list | head -1` prints its first line and ends with no error message
    (exit 141, 128 + SIGPIPE); it used to end in "error: BrokenPipeError"."""
    import subprocess
    import sys

    r = subprocess.run(
        f"{sys.executable} -m pfntheory sweep --list | head -1; echo rc=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.stdout.splitlines()[0].startswith("scale quick (the default")
    assert "rc=141" in r.stdout and r.stderr == "", (r.stdout, r.stderr)


def test_evaluate_oracle_option(tmp_path, capsys):
    """`evaluate` computes the exact PPD with the float32 oracle by default (recorded in the
    document's settings) and with float64 under --oracle float64 (recorded as the committed
    evaluations are: no key). Same instances up to the labels' float32 round-off, so every metric
    agrees within 1e-4 (the labels differ by a relative 1e-5 at most, test_fast_oracle.py). How it
    can fail: an option not handed on leaves both documents without "oracle"."""
    rd = tmp_path / "run"
    assert cli.main(_train_args(rd)) == 0
    docs = {}
    for name, extra in (("f32", []), ("f64", ["--oracle", "float64"])):
        out = tmp_path / f"{name}.json"
        argv = ["evaluate", str(rd), "--n-eval", "6", "--n-instances", "8", "--out", str(out)]
        assert cli.main([*argv, *extra]) == 0
        docs[name] = runs.load_json(out)
    assert docs["f32"]["oracle"] == "float32" and "oracle" not in docs["f64"]
    a, b = docs["f32"]["results"]["6"], docs["f64"]["results"]["6"]
    for key in ("tv", "mse_mean", "crps", "nll"):
        assert abs(a[key] - b[key]) <= 1e-4, key
    capsys.readouterr()
    with pytest.raises(SystemExit) as err:
        cli.main(["evaluate", str(rd), "--n-eval", "6", "--oracle", "float16"])
    assert err.value.code == 2 and "--oracle" in capsys.readouterr().err


def test_sweep_eval_oracle_fills_the_eval_specs(tmp_path, monkeypatch):
    """`sweep --eval-oracle float32` sets the oracle of every EvalSpec the sweep hands its workers
    (no environment variable: the option fills the spec); without it the specs keep the declared
    float64. The run names and spec.json records do not change. How it can fail: an option not
    handed on leaves float64 in the specs that reach sweep_many's workers."""
    from pfntheory.cli import sweep as sweep_cli
    from pfntheory.experiments.runner import sweep_many
    from pfntheory.experiments.state import plan, spec_doc

    seen: dict = {}

    def fake_sweep_many(names, scale, **kw):
        seen.update(kw)
        return [{"n_runs": 0, "n_failed": 0, "wall_time_s": 0.0, "runs": []} for _ in names]

    monkeypatch.setattr(sweep_cli, "sweep_many", fake_sweep_many)
    root = str(tmp_path / "runs")
    for given, want in ((None, "float64"), ("float32", "float32")):
        argv = ["sweep", "fig_exp2_1", "--root", root]
        assert cli.main(argv + (["--eval-oracle", given] if given else [])) == 0
        assert seen["eval_oracle"] == given
        items = plan("fig_exp2_1", "quick", root, eval_oracle=seen["eval_oracle"])
        assert {ev.oracle for spec, _, _ in items for ev in spec.evals} == {want}
    base = plan("fig_exp2_1", "quick", root)
    fast = plan("fig_exp2_1", "quick", root, eval_oracle="float32")
    assert [spec_doc(s) for s, _, _ in fast] == [spec_doc(s) for s, _, _ in base]
    assert "PFNTHEORY_EVAL_ORACLE" not in os.environ
    with pytest.raises(ValueError, match="eval_oracle"):
        sweep_many(["fig_exp2_1"], root=root, eval_oracle="float16")
