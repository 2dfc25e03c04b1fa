"""Unit tests of pfntheory.experiments: definitions, run naming, sweeps, published tables,
claim checks.

Nothing here trains: every sweep uses ``backend="standin"`` (seconds-long fake runs with the real
files, :mod:`pfntheory.experiments._standin`) under ``tmp_path``, never ``reports/runs``. The claim
checks are run on stand-in runs built to satisfy each claim, and on deliberately inverted copies, to
show that the checks of ``verify/test_trained_claims.py`` can fail.
"""

import dataclasses
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from pfntheory import cli
from pfntheory.claims import pretraining_range as xrange
from pfntheory.claims import trained as xclaims
from pfntheory.experiments import _standin, definitions, pool, reference, runner, state
from pfntheory.experiments.definitions import (
    CPU_SUBSET,
    EXP2_1_CURVE_N_EVAL,
    EXPERIMENT_SCALES,
    EXPERIMENTS,
    Design,
    Experiment,
    experiment_names,
    get_experiment,
)
from pfntheory.experiments.execute import execute
from pfntheory.experiments.published import (
    HIERARCHICAL_GP,
    LENGTHSCALE_CRPS,
    PUBLISHED_DEPTHS,
    PUBLISHED_METRICS,
    published_rows,
)
from pfntheory.experiments.results import LoadedRun, MissingRunsError, load_experiment
from pfntheory.experiments.runner import sweep
from pfntheory.experiments.specs import ExactPPDSpec, StepsizeSpec
from pfntheory.experiments.state import SPEC_FILE, is_complete, plan
from pfntheory.infra import runs as runfiles
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import EvalSpec, RunSpec, canonical_json, spec_hash

PAPER_TEX = Path(__file__).resolve().parents[2] / "shared" / "paper" / "paper.tex"
ALL = [(name, scale) for name in EXPERIMENTS for scale in EXPERIMENT_SCALES]


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    """The machine is shared: keep every worker (and submitit's local jobs) on one thread."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("PFNTHEORY_STANDIN_CRASH", raising=False)


def _sweep(name, root, **kw):
    kw = {"backend": "standin", "workers": 1, "progress": False, **kw}
    return sweep(name, "quick", root=root, **kw)


def _statuses(summary) -> dict:
    return {r["name"]: r["status"] for r in summary["runs"]}


def _tiny() -> Experiment:
    """One run of each kind (trained, fig:stepsize, exact PPD), small enough for a second."""
    task = TaskSpec(kind="rbf", d=2)
    design = Design(
        runs=(
            RunSpec(
                task=task,
                model=ModelSpec(score="rbf", L=2, C=8, normalised=True),
                n_min=4,
                n_max=8,
                steps=4,
                lr=1e-3,
                evals=(
                    EvalSpec(n_eval=(4, 8), n_instances=4),
                    EvalSpec(n_eval=(8,), n_instances=4, covariates="uniform"),
                ),
            ),
            StepsizeSpec(task=task, ns=(10, 20, 40), n_trials=2),
            ExactPPDSpec(task=task, n_eval=(4, 8), n_instances=4),
        ),
        shrunk="tiny",
    )
    return Experiment(
        name="tiny",
        labels=("none",),
        title="plumbing",
        claims=(),
        quick=design,
        paper=design,
        cpu=design,
    )


@pytest.fixture
def tiny(monkeypatch) -> str:
    monkeypatch.setitem(definitions.EXPERIMENTS, "tiny", _tiny())
    return "tiny"


# --------------------------------------------------------------------------------------------------
# definitions and run naming
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,scale", ALL, ids=[f"{n}-{s}" for n, s in ALL])
def test_every_experiment_builds(name, scale):
    exp = get_experiment(name)
    runs = exp.runs(scale)
    assert exp.name == name and exp.labels and exp.title and exp.claims
    assert len(runs) > 0
    for spec in runs:
        assert isinstance(spec, (RunSpec, StepsizeSpec, ExactPPDSpec))
        if isinstance(spec, RunSpec):
            assert spec.evals, f"{spec.name} is never evaluated"


def _all_runs():
    for name in EXPERIMENTS:
        for scale in EXPERIMENT_SCALES:
            for spec in get_experiment(name).runs(scale):
                yield name, scale, spec


def test_run_names_derive_from_config_and_never_collide():
    """Over every run of every experiment at both scales: the directory name ends in the hash of the
    training config, and one name never stands for two different training configs (the same config
    in two experiments -- fig_exp2_2 and supp_exp2_d4 at quick scale -- shares a name on
    purpose)."""
    by_name: dict[str, str] = {}
    n = 0
    for _, _, spec in _all_runs():
        config = canonical_json(spec.identity())
        assert spec.name.endswith("-" + spec_hash(spec.identity())), spec.name
        assert by_name.setdefault(spec.name, config) == config, f"two configs share {spec.name}"
        n += 1
    hashes = {name.rsplit("-", 1)[1] for name in by_name}
    assert len(hashes) == len(by_name)  # distinct configs, distinct hashes
    assert n > len(by_name) >= 100  # some configs are shared between experiments, and many exist


def test_run_name_follows_training_not_evaluation():
    spec = get_experiment("fig_exp2_1").runs("quick")[0]
    assert dataclasses.replace(spec, evals=()).name == spec.name
    changed = [
        dataclasses.replace(spec, lr=spec.lr / 2),
        dataclasses.replace(spec, seed=1),
        dataclasses.replace(spec, steps=spec.steps + 1),
        dataclasses.replace(spec, model=dataclasses.replace(spec.model, L=2)),
        # not in the readable prefix: only the hash tells these apart
        dataclasses.replace(spec, task=dataclasses.replace(spec.task, hier_noise_stds=(0.5,))),
        dataclasses.replace(spec, batch_size=64),
    ]
    names = {spec.name} | {c.name for c in changed}
    assert len(names) == len(changed) + 1


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_quick_design_states_what_was_shrunk(name):
    exp = get_experiment(name)
    assert exp.paper.shrunk == ""
    assert len(exp.quick.shrunk) > 20, f"{name}: quick design does not say what was shrunk"
    assert exp.quick.runs != exp.paper.runs
    quick, paper = exp.quick.runs, exp.paper.runs
    q_cost = sum(
        getattr(s, "steps", 0) * getattr(s, "n_max", 1) ** 2 + getattr(s, "n_trials", 0)
        for s in quick
    )
    p_cost = sum(
        getattr(s, "steps", 0) * getattr(s, "n_max", 1) ** 2 + getattr(s, "n_trials", 0)
        for s in paper
    )
    assert q_cost < p_cost, f"{name}: the quick design is not cheaper ({q_cost} vs {p_cost})"


def test_design_rejects_shared_directory():
    spec = get_experiment("fig_exp2_1").runs("quick")[0]
    with pytest.raises(ValueError, match="share a directory"):
        Design(runs=(spec, dataclasses.replace(spec, evals=())))


# --------------------------------------------------------------------------------------------------
# sweeps: files, idempotence, adoption, resumption, executors
# --------------------------------------------------------------------------------------------------


def _files(root: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_sweep_creates_files_and_is_idempotent(tmp_path, tiny):
    s = _sweep("supp_exp2_d4", tmp_path, workers=2)  # the process pool
    assert s["n_failed"] == 0 and s["n_runs"] == 4 and set(_statuses(s).values()) == {"done"}
    exp_dir = tmp_path / "supp_exp2_d4"
    assert (exp_dir / ".gitignore").read_text().startswith("checkpoint.pt")
    assert runfiles.load_json(exp_dir / "sweep-quick.json") == s
    for spec, rd, done in plan("supp_exp2_d4", "quick", tmp_path):
        assert done and rd == exp_dir / spec.name
        assert {p.name for p in rd.iterdir()} == {  # one spec file: config.json, no spec.json
            runfiles.CONFIG,
            runfiles.METRICS,
            runfiles.WEIGHTS,
            "eval.json",
            "eval_uniform.json",
        }
        assert RunSpec.from_config(runfiles.load_json(rd / runfiles.CONFIG)) == dataclasses.replace(
            spec, evals=()
        )

    before = _files(tmp_path)
    again = _sweep("supp_exp2_d4", tmp_path)
    assert set(_statuses(again).values()) == {"skipped"} and again["n_failed"] == 0
    assert _files(tmp_path) == before  # nothing rewritten, not even the summary

    # exact-side runs write result.json; a second sweep skips them too
    s = _sweep(tiny, tmp_path)
    assert s["n_failed"] == 0 and set(_statuses(s).values()) == {"done"}
    for spec, rd, done in plan(tiny, "quick", tmp_path):
        assert done
        if not isinstance(spec, RunSpec):
            assert (
                runfiles.load_json(rd / "result.json")["spec"]
                == runfiles.load_json(rd / SPEC_FILE)["spec"]
            )
    assert set(_statuses(_sweep(tiny, tmp_path)).values()) == {"skipped"}
    loaded = load_experiment(tiny, "quick", tmp_path)
    assert [r.spec for r in loaded] == list(_tiny().quick.runs)


def test_identical_run_of_another_experiment_is_adopted(tmp_path):
    """fig_exp2_2 and supp_exp2_d4 share their trained runs at quick scale (d=4): the second sweep
    copies the weights and the learning curves (both designs' files; the stand-in writes none, so
    the test plants them: without them an adopted run would read as "no learning curve") and only
    adds the covariate-shift evaluation."""
    _sweep("fig_exp2_2", tmp_path)
    curves = ("learning_curve.json", "learning_curve_uniform.json")
    for spec, rd, _ in plan("fig_exp2_2", "quick", tmp_path):
        for i, f in enumerate(curves):
            runfiles.save_json(rd / f, {"planted": spec.name, "design": i})
        # a weight-averaged run's last iterate (the stand-in writes none): copied with the weights,
        # or the adopted run reads as unfinished and is trained again (seen on the cpu sweep)
        runfiles.atomic_write_bytes(rd / runfiles.WEIGHTS_LAST, spec.name.encode())
    s = _sweep("supp_exp2_d4", tmp_path)
    assert set(_statuses(s).values()) == {"adopted"}
    for spec, rd, done in plan("supp_exp2_d4", "quick", tmp_path):
        assert done and (rd / "eval_uniform.json").is_file()
        for f in (runfiles.WEIGHTS, runfiles.WEIGHTS_LAST, *curves):
            assert (rd / f).read_bytes() == (tmp_path / "fig_exp2_2" / spec.name / f).read_bytes()


def test_the_first_layer_experiment_adopts_our_reading_from_the_family(tmp_path):
    """supp_exp2_first_layer's runs in our reading are the family budget runs of the same names: a
    sweep after supp_exp2_d8_budget's copies (adopts) the d = 8 ones instead of training them, and
    trains the d = 4 one (its grid not swept here) and every run of the public code's reading."""
    _sweep("supp_exp2_d8_budget", tmp_path)
    s = _sweep("supp_exp2_first_layer", tmp_path)
    got = _statuses(s)
    assert s["n_failed"] == 0 and len(got) == 8
    for spec in get_experiment("supp_exp2_first_layer").runs("quick"):
        want = "adopted" if spec.task.d == 8 and not spec.model.normalise_first else "done"
        assert got[spec.name] == want, spec.name


@pytest.mark.parametrize("scale", EXPERIMENT_SCALES)
def test_the_first_layer_experiment_pairs_both_readings(scale):
    """supp_exp2_first_layer declares, at every scale, each deciding cell (d, L, n_max) at S and
    2S steps in both readings of TF^pr: the run of our reading is the family budget run of that
    name (so it is adopted, never trained twice), the public code's reading the same spec with
    ``normalise_first=True`` (its own name, ``-pr-nf-``); at the cpu scale the cells are issue 46's
    (d = 8: (4, 128), (8, 128), (32, 512); d = 4: (16, 512)) at 1000 and 2000 steps with the
    shifted learning curve, the cheapest first; at the cpu and paper scales the public code's
    reading of FIRST_LAYER_LONG_CELLS also at 4S (and only those, only that reading). Fails if a
    cell, a budget or a reading is missing, or if our reading's run stopped matching the family's
    (it would be trained again)."""
    from pfntheory.experiments.exp2 import (
        FIRST_LAYER_CELLS,
        FIRST_LAYER_LONG_CELLS,
        FIRST_LAYER_QUICK_CELLS,
    )
    from pfntheory.experiments.scales import by_cost

    every = get_experiment("supp_exp2_first_layer").runs(scale)
    two_s = 2 * min(r.steps for r in every)
    runs = [r for r in every if r.steps <= two_s]
    four = [r for r in every if r.steps > two_s]
    want = set() if scale == "quick" else set(FIRST_LAYER_LONG_CELLS)
    assert {(r.task.d, r.model.L, r.n_max) for r in four} == want
    assert all(r.model.normalise_first and r.steps == 2 * two_s for r in four)
    assert len(four) == len(want)
    ours = [r for r in runs if not r.model.normalise_first]
    code = [r for r in runs if r.model.normalise_first]
    family = {
        r.name
        for n in ("supp_exp2_d8_budget", "supp_exp2_d4_budget")
        for r in get_experiment(n).runs(scale)
    }
    assert len(ours) == len(code) == len(runs) // 2 and {r.name for r in ours} <= family
    flipped = {
        dataclasses.replace(r, model=dataclasses.replace(r.model, normalise_first=True)).name
        for r in ours
    }
    assert flipped == {r.name for r in code} and all("-pr-nf-" in r.name for r in code)
    cells = {(r.task.d, r.model.L, r.n_max) for r in runs}
    assert cells == set(FIRST_LAYER_QUICK_CELLS if scale == "quick" else FIRST_LAYER_CELLS)
    for cell in cells:
        steps = sorted(r.steps for r in ours if (r.task.d, r.model.L, r.n_max) == cell)
        assert len(steps) == 2 and steps[1] == 2 * steps[0], (cell, steps)
    if scale == "cpu":
        assert {r.steps for r in runs} == {1000, 2000}
        assert all(r.curve_covariates == ("uniform",) and r.ema_decay > 0 for r in every)
        assert list(every) == sorted(every, key=by_cost)


def test_a_sweep_of_several_experiments_shares_one_pool(tmp_path, monkeypatch):
    """``sweep_many`` (and ``pfntheory sweep A B``) hands the missing runs of all its experiments to
    one worker pool, so a worker freed by one experiment takes the next experiment's run instead of
    idling through the other's last run; a spec declared by two experiments (fig_exp2_2 and
    supp_exp2_d4 share their quick runs) is trained once, in a first pass, and adopted by the
    second copy in a second pass. Each experiment keeps its own summary. Fails if the experiments
    are swept one after another (one pool call per experiment) or a shared run is trained twice."""
    calls = []
    real = pool.run_local

    def spy(todo, *a, **kw):
        calls.append([rd.parent.name for _, rd in todo])
        return real(todo, *a, **kw)

    monkeypatch.setattr(pool, "run_local", spy)
    names = ["fig_exp2_1", "fig_exp2_2", "supp_exp2_d4"]
    out = runner.sweep_many(
        names, "quick", root=tmp_path, backend="standin", workers=2, progress=False
    )
    n = {k: len(get_experiment(k).runs("quick")) for k in names}
    assert calls[0] == ["fig_exp2_1"] * n["fig_exp2_1"] + ["fig_exp2_2"] * n["fig_exp2_2"]
    assert calls[1:] == [["supp_exp2_d4"] * n["supp_exp2_d4"]]  # the copies of fig_exp2_2's runs
    assert [s["experiment"] for s in out] == names
    assert set(_statuses(out[0]).values()) == set(_statuses(out[1]).values()) == {"done"}
    assert set(_statuses(out[2]).values()) == {"adopted"}
    for k, s in zip(names, out, strict=True):
        assert runfiles.load_json(tmp_path / k / "sweep-quick.json") == s
        assert s["n_runs"] == n[k] and s["n_failed"] == 0
    again = runner.sweep_many(names, "quick", root=tmp_path, backend="standin", progress=False)
    assert all(set(_statuses(s).values()) == {"skipped"} for s in again) and len(calls) == 2
    with pytest.raises(ValueError, match="repeat"):
        runner.sweep_many(["fig_exp2_1", "fig_exp2_1"], "quick", root=tmp_path)
    with pytest.raises(ValueError, match="at least one"):
        runner.sweep_many([], "quick", root=tmp_path)


def test_killed_run_resumes_from_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("PFNTHEORY_STANDIN_CRASH", "1")
    s = _sweep("fig_exp2_1", tmp_path)
    assert s["n_failed"] == 2 and all("killed" in r["error"] for r in s["runs"])
    items = plan("fig_exp2_1", "quick", tmp_path)
    assert not any(done for *_, done in items)
    assert all((rd / runfiles.CHECKPOINT).is_file() for _, rd, _ in items)
    with pytest.raises(MissingRunsError) as err:
        load_experiment("fig_exp2_1", "quick", tmp_path)
    assert len(err.value.missing) == 2

    monkeypatch.delenv("PFNTHEORY_STANDIN_CRASH")
    s = _sweep("fig_exp2_1", tmp_path)
    assert s["n_failed"] == 0 and set(_statuses(s).values()) == {"done"}
    assert runfiles.load_json(tmp_path / "fig_exp2_1" / "sweep-quick.json")["n_failed"] == 0
    for spec, rd, done in plan("fig_exp2_1", "quick", tmp_path):
        assert done and not (rd / runfiles.CHECKPOINT).exists()
        assert runfiles.load_json(rd / runfiles.METRICS)["resumed_from"] == spec.steps // 2
    runs = load_experiment("fig_exp2_1", "quick", tmp_path)
    assert len(runs) == 2 and all(set(r.eval.n_eval) == {40, 64, 96, 128, 160, 200} for r in runs)


@pytest.mark.parametrize("cluster,name", [("debug", "tiny"), ("local", "fig_exp2_1")])
def test_slurm_executor_through_submitit(tmp_path, tiny, cluster, name):
    """The job-array path of ``executor="slurm"``, run by submitit's in-process (debug) or
    subprocess (local: one Python per run, hence the two-run experiment) executor instead of a
    cluster; the runs end complete and a second sweep submits nothing."""
    pytest.importorskip("submitit")
    slurm = {"cluster": cluster, "poll_s": 0.2, "timeout_min": 5}
    s = _sweep(name, tmp_path, executor="slurm", slurm=slurm)
    assert s["executor"] == "slurm" and s["workers"] is None
    assert s["n_failed"] == 0, [r.get("error") for r in s["runs"]]
    assert set(_statuses(s).values()) == {"done"}
    assert (tmp_path / name / ".submitit").is_dir()
    assert all(done for *_, done in plan(name, "quick", tmp_path))
    assert len(load_experiment(name, "quick", tmp_path)) == len(get_experiment(name).runs("quick"))
    again = _sweep(name, tmp_path, executor="slurm", slurm=slurm)
    assert set(_statuses(again).values()) == {"skipped"}


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"experiment": "fig_exp9"}, "experiment"),
        ({"scale": "huge"}, "scale"),
        ({"executor": "pbs"}, "executor"),
        ({"workers": 0}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"threads": 0}, "threads"),
        ({"backend": "magic"}, "backend"),
    ],
)
def test_sweep_rejects_bad_input(tmp_path, kw, match):
    kw = {"experiment": "fig_exp2_1", "scale": "quick", "backend": "standin", **kw}
    with pytest.raises(ValueError, match=match):
        sweep(kw.pop("experiment"), kw.pop("scale"), root=tmp_path, progress=False, **kw)
    assert list(tmp_path.iterdir()) == []  # rejected before anything was written


def test_other_entry_points_reject_bad_names(tmp_path):
    with pytest.raises(ValueError, match="experiment"):
        load_experiment("nope", "quick", tmp_path)
    with pytest.raises(ValueError, match="scale"):
        load_experiment("fig_exp1", "huge", tmp_path)
    with pytest.raises(ValueError, match="experiment"):
        plan("nope", "quick", tmp_path)
    with pytest.raises(ValueError, match="spec"):
        execute("not a spec", tmp_path / "x")
    with pytest.raises(ValueError, match="experiment"):
        published_rows("fig_exp1")
    with pytest.raises(MissingRunsError, match="fig_exp1"):
        load_experiment("fig_exp1", "quick", tmp_path)


def _corrupt(path: Path) -> None:
    path.write_text(path.read_text()[:10])  # a truncated copy


@pytest.mark.parametrize(
    "kind,file,breaks",
    [
        ("run", "eval.json", True),
        ("run", "eval_uniform.json", True),
        ("run", "metrics.json", True),
        ("run", SPEC_FILE, False),  # a legacy spec.json: breaks neither completeness nor a redo
        ("stepsize", SPEC_FILE, False),
        ("stepsize", "result.json", True),
        ("exact", "result.json", True),
    ],
)
def test_corrupt_json_is_redone(tmp_path, tiny, kind, file, breaks):
    _sweep(tiny, tmp_path)
    spec, rd = next(
        (s, rd)
        for s, rd, _ in plan(tiny, "quick", tmp_path)
        if type(s).__name__.lower().startswith(kind)
    )
    legacy = isinstance(spec, RunSpec) and file == SPEC_FILE
    if legacy:  # a trained run's spec.json exists only in directories made before
        (rd / file).write_text(json.dumps(state.spec_doc(spec)))
    _corrupt(rd / file)
    if not breaks:  # give the run some work to do alongside the corrupt file
        (rd / ("eval.json" if isinstance(spec, RunSpec) else "result.json")).unlink()
    assert not is_complete(spec, rd)
    s = _sweep(tiny, tmp_path)
    assert s["n_failed"] == 0, [r.get("error") for r in s["runs"]]
    assert _statuses(s)[spec.name] == "done"
    assert sorted(_statuses(s).values()) == ["done", "skipped", "skipped"]
    assert is_complete(spec, rd)
    if legacy:  # unreadable, and no longer written: removed
        assert not (rd / file).exists()
    else:
        runfiles.load_json(rd / file)  # readable again
    assert len(load_experiment(tiny, "quick", tmp_path)) == 3


def test_cli_sweep_list_and_dry_run(tmp_path, capsys):
    root = str(tmp_path)
    assert cli.main(["sweep", "fig_exp2_1", "--list", "--root", root]) == 0
    out = capsys.readouterr().out
    assert "fig_exp2_1 [quick] 0/2 complete" in out and "shrunk:" in out and out.count("todo") == 2
    assert (
        cli.main(
            ["sweep", "fig_exp2_1", "--dry-run", "--root", root, "--no-progress", "--workers", "1"]
        )
        == 0
    )
    assert "2 runs, 0 failed" in capsys.readouterr().out
    assert cli.main(["sweep", "fig_exp2_1", "--list", "--root", root]) == 0
    assert "2/2 complete" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["sweep", "fig_exp9", "--list", "--root", root])
    assert e.value.code == 2 and "unknown experiment" in capsys.readouterr().err


def test_sweep_list_shows_how_far_an_unfinished_run_got(tmp_path, capsys):
    """``sweep --list`` marks a run with a checkpoint ``part`` and gives its step (what the next
    session resumes from); an unreadable checkpoint is named, not taken for progress."""
    pytest.importorskip("torch")
    root = str(tmp_path)
    spec, rd, _ = plan("fig_exp2_1", "quick", tmp_path)[0]
    rd.mkdir(parents=True)
    runfiles.save_torch(rd / runfiles.CHECKPOINT, {"step": 200, "wall_time": 600.0})
    assert (
        state.partial_progress(spec, rd)
        == f"checkpoint at step 200 of {spec.steps}, 10 min trained"
    )
    assert cli.main(["sweep", "fig_exp2_1", "--list", "--root", root]) == 0
    out = capsys.readouterr().out
    assert out.count("part") == 1 and out.count("todo") == 1 and "step 200 of" in out
    (rd / runfiles.CHECKPOINT).write_bytes(b"truncated")
    assert "checkpoint unreadable" in state.partial_progress(spec, rd)
    (rd / runfiles.CHECKPOINT).unlink()
    assert state.partial_progress(spec, rd) is None


# --------------------------------------------------------------------------------------------------
# the published tables
# --------------------------------------------------------------------------------------------------


def test_published_tables_shape():
    assert PUBLISHED_DEPTHS == (8, 16, 32) and PUBLISHED_METRICS == (
        "crps",
        "cov50",
        "cov90",
        "cov95",
    )
    assert sorted(LENGTHSCALE_CRPS) == [(ell, n) for ell in (0.4, 0.8, 1.6) for n in (256, 1024)]
    assert sorted(HIERARCHICAL_GP) == [256, 512, 1024]
    for table in (LENGTHSCALE_CRPS, HIERARCHICAL_GP):
        for cell in table.values():
            assert set(cell) == set(PUBLISHED_METRICS)
            for values in cell.values():
                assert len(values) == 3 and all(0 < v < 1 for v in values)
    assert len(published_rows("supp_tab_lengthscale")) == 6 * 3
    assert len(published_rows("supp_tab_hier")) == 3 * 3
    row = published_rows("supp_tab_lengthscale")[0]
    assert row == {
        "lengthscale": 0.4,
        "n_prime": 256,
        "L": 8,
        "crps": 0.538,
        "cov50": 0.504,
        "cov90": 0.904,
        "cov95": 0.953,
    }


def _tex_table(label: str) -> list[list[str]]:
    """Rows (lists of cell strings) between \\midrule/\\toprule and \\bottomrule of the tabular that
    precedes ``\\label{label}``."""
    tex = PAPER_TEX.read_text()
    end = tex.index(f"\\label{{{label}}}")
    start = tex.rindex("\\begin{tabular}", 0, end)
    body = tex[start : tex.index("\\end{tabular}", start)]
    body = body.split("\\toprule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [r.replace("\\midrule", "").strip() for r in body.split("\\\\")]
    return [[c.strip().strip("$").strip() for c in r.split("&")] for r in rows if r]


def _triple(cell: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.split(r",\\?\s*", cell.replace("\\ ", " ")))


@pytest.mark.skipif(not PAPER_TEX.is_file(), reason=f"{PAPER_TEX} not on disk")
def test_published_tables_match_the_tex():
    """Every number of published.py against the LaTeX source (exact: both are the printed
    decimals)."""
    rows = _tex_table("supp-tab:lengthscale-crps")
    header, rows = rows[0], rows[1:]
    assert header[2:] == ["CRPS", "50\\%", "90\\%", "95\\%"]
    parsed, ell = {}, None
    for cells in rows:
        ell = float(cells[0]) if cells[0] else ell  # blank lengthscale: same block as above
        parsed[(ell, int(cells[1]))] = dict(
            zip(PUBLISHED_METRICS, map(_triple, cells[2:]), strict=True)
        )
    assert parsed == LENGTHSCALE_CRPS

    rows = _tex_table("supp-tab:hierarchical-gp")
    assert rows[0][1:] == ["CRPS", "50\\%", "90\\%", "95\\%"]
    parsed = {
        int(c[0]): dict(zip(PUBLISHED_METRICS, map(_triple, c[1:]), strict=True)) for c in rows[1:]
    }
    assert parsed == HIERARCHICAL_GP


# --------------------------------------------------------------------------------------------------
# the trained-claim checks, on stand-in runs: they hold where built to, and fail on inverted copies
# --------------------------------------------------------------------------------------------------

FAKE_METRICS = _standin.fake_metrics  # the unpatched stand-in metrics


def _patch_metrics(monkeypatch, transform):
    """Make the stand-in evaluate ``fake_metrics(transform(spec, n))`` (in-process sweep)."""

    def fake(spec, n, covariates):
        spec2, n2 = transform(spec, n)
        return FAKE_METRICS(spec2, n2, covariates)

    monkeypatch.setattr(_standin, "fake_metrics", fake)


def _by(results, *words):
    out = [r for r in results if all(w in r.key for w in words)]
    assert out, f"no claim with {words} in its key: {[r.key for r in results]}"
    return out


def test_check_exp1_holds_on_standin_and_fails_inverted(tmp_path, monkeypatch):
    """Stand-in TV = exp(-L/8) n/n_max + 1/C falls with L and with C: all 8 claims hold. With the
    depths mirrored (L -> 34 - L over {2, 8, 32}) TV rises with L: the four L-claims fail and the
    C-claims still hold; with the bin counts mirrored the C-claims fail."""
    _sweep("fig_exp1", tmp_path / "ok")
    res = xclaims.check_exp1(load_experiment("fig_exp1", "quick", tmp_path / "ok"))
    assert len(res) == 8 and all(r.holds for r in res), "\n".join(map(str, res))

    def mirror_L(spec, n):
        return dataclasses.replace(
            spec, model=dataclasses.replace(spec.model, L=34 - spec.model.L)
        ), n

    _patch_metrics(monkeypatch, mirror_L)
    _sweep("fig_exp1", tmp_path / "inv_L")
    res = xclaims.check_exp1(load_experiment("fig_exp1", "quick", tmp_path / "inv_L"))
    assert not any(r.holds for r in _by(res, "tv_falls_with_L")), "\n".join(map(str, res))
    assert all(r.holds for r in _by(res, "tv_falls_with_C"))
    assert all(r.observed < 0 for r in _by(res, "tv_falls_with_L"))

    def mirror_C(spec, n):
        return dataclasses.replace(
            spec, model=dataclasses.replace(spec.model, C=272 - spec.model.C)
        ), n

    _patch_metrics(monkeypatch, mirror_C)
    _sweep("fig_exp1", tmp_path / "inv_C")
    res = xclaims.check_exp1(load_experiment("fig_exp1", "quick", tmp_path / "inv_C"))
    assert not any(r.holds for r in _by(res, "tv_falls_with_C")), "\n".join(map(str, res))


def test_check_exp2_1_holds_on_standin_and_fails_swapped(tmp_path, monkeypatch):
    """Stand-in: the unnormalised TV grows like (n/n_max)^2, the normalised one linearly. Swapping
    which model gets which curve makes TF^pr the one that rises faster: the flatness claim fails."""
    _sweep("fig_exp2_1", tmp_path / "ok")
    res = xclaims.check_exp2_1(load_experiment("fig_exp2_1", "quick", tmp_path / "ok"))
    assert len(res) == 2 and all(r.holds for r in res), "\n".join(map(str, res))

    def swap(spec, n):
        m = spec.model
        return dataclasses.replace(
            spec, model=dataclasses.replace(m, normalised=not m.normalised)
        ), n

    _patch_metrics(monkeypatch, swap)
    _sweep("fig_exp2_1", tmp_path / "inv")
    res = xclaims.check_exp2_1(load_experiment("fig_exp2_1", "quick", tmp_path / "inv"))
    assert not _by(res, "pr_flatter")[0].holds, "\n".join(map(str, res))


@pytest.mark.parametrize("eval_file", ["eval.json", "eval_uniform.json"])
def test_check_exp2_2_holds_on_standin_and_fails_inverted(tmp_path, monkeypatch, eval_file):
    """Stand-in TV falls with L and n_max and grows with n': all four claims hold (also on the
    covariate-shift file). Each claim fails on its inverted copy: TV frozen in n' (growth), n_max
    mirrored, L mirrored, 90% coverage 0.2 short."""
    _sweep("supp_exp2_d4", tmp_path / "ok")
    runs = load_experiment("supp_exp2_d4", "quick", tmp_path / "ok")
    res = xrange.check_exp2_2(runs, eval_file=eval_file)
    assert len(res) == 4 and all(r.holds for r in res), "\n".join(map(str, res))

    _patch_metrics(monkeypatch, lambda spec, n: (spec, 64))
    _sweep("supp_exp2_d4", tmp_path / "flat")
    res = xrange.check_exp2_2(
        load_experiment("supp_exp2_d4", "quick", tmp_path / "flat"), eval_file=eval_file
    )
    assert not _by(res, "tv_grows_with_n")[0].holds, "\n".join(map(str, res))

    _patch_metrics(
        monkeypatch, lambda spec, n: (dataclasses.replace(spec, n_max=288 - spec.n_max), n)
    )
    _sweep("supp_exp2_d4", tmp_path / "inv")
    res = xrange.check_exp2_2(
        load_experiment("supp_exp2_d4", "quick", tmp_path / "inv"), eval_file=eval_file
    )
    assert not _by(res, "n_max_helps")[0].holds, "\n".join(map(str, res))

    def mirror_L(spec, n):  # L in {2, 8} -> {8, 2}
        return dataclasses.replace(
            spec, model=dataclasses.replace(spec.model, L=10 - spec.model.L)
        ), n

    _patch_metrics(monkeypatch, mirror_L)
    _sweep("supp_exp2_d4", tmp_path / "inv_L")
    res = xrange.check_exp2_2(
        load_experiment("supp_exp2_d4", "quick", tmp_path / "inv_L"), eval_file=eval_file
    )
    assert not _by(res, "depth_helps")[0].holds, "\n".join(map(str, res))

    def miscalibrated(spec, n, covariates):
        m = dict(FAKE_METRICS(spec, n, covariates))
        m["coverage_90"] -= 0.2
        return m

    monkeypatch.setattr(_standin, "fake_metrics", miscalibrated)
    _sweep("supp_exp2_d4", tmp_path / "cov")
    res = xrange.check_exp2_2(
        load_experiment("supp_exp2_d4", "quick", tmp_path / "cov"), eval_file=eval_file
    )
    assert not _by(res, "coverage_near_nominal")[0].holds, "\n".join(map(str, res))
    assert all(r.holds for r in res if "coverage" not in r.key)


@pytest.fixture
def fast_reference(monkeypatch):
    """The real exact-PPD reference on 8 contexts per n' instead of 512 (the hierarchical one takes
    about a minute at full size); only the plumbing and the check are under test here."""
    real = reference.exact_ppd_reference

    def fast(task, n_eval, n_instances, rng, **kw):
        return real(task, n_eval, 8, rng, **kw)

    monkeypatch.setattr(reference, "exact_ppd_reference", fast)


@pytest.mark.parametrize("name", ["supp_tab_lengthscale", "supp_tab_hier"])
def test_check_table_holds_on_standin_and_fails_inverted(
    tmp_path, monkeypatch, fast_reference, name
):
    """Stand-in CRPS = 0.3 + TV/10 above its exact 0.3, coverage nominal - TV/20: the three claims
    hold. A model whose CRPS is below the exact PPD's, and one whose coverage is 0.2 short, fail."""
    _sweep(name, tmp_path / "ok")
    res = xclaims.check_table(load_experiment(name, "quick", tmp_path / "ok"))
    assert len(res) == 3 and all(r.holds for r in res), "\n".join(map(str, res))
    label = "supp-tab:hierarchical-gp" if name == "supp_tab_hier" else "supp-tab:lengthscale-crps"
    assert {r.label for r in res} == {label}
    rows = res[0].details["rows"]
    assert all("crps_exact_ppd" in r for r in rows)

    def better_than_exact(spec, n, covariates):
        m = dict(FAKE_METRICS(spec, n, covariates))
        m["crps_exact"] = m["crps"] + 0.05
        for lv in (50, 90, 95):
            m[f"coverage_{lv}"] -= 0.2
        return m

    monkeypatch.setattr(_standin, "fake_metrics", better_than_exact)
    _sweep(name, tmp_path / "inv")
    res = xclaims.check_table(load_experiment(name, "quick", tmp_path / "inv"))
    assert not _by(res, "crps_not_below_exact")[0].holds, "\n".join(map(str, res))
    assert not _by(res, "coverage_near_nominal")[0].holds


def test_check_stepsize_accepts_one_over_n_only():
    """thm:lambda1 with its n^-1/2 term holds; a 1/sqrt(n) curve (lambda_1 ~ sqrt(n)) and a
    step of order n^-0.9 fail: the fitted limit c0 of lambda_1/(n lambda_inf) leaves [0.9, 1.1]."""
    from pfntheory.claims.stepsize import lambda_inf
    from pfntheory.infra.config import prior_components

    spec = StepsizeSpec(TaskSpec("rbf", d=16), ns=tuple(range(100, 1001, 100)), n_trials=20)
    ns = np.asarray(spec.ns, float)
    (kern,), _ = prior_components(spec.task)
    lam_inf = lambda_inf(kern, 16)
    s2 = spec.task.noise_var
    jitter = 1 + 0.01 * np.random.default_rng(0).standard_normal((ns.size, 20))

    def run(lam1):  # lam1: the mean lambda_1 per n; 1% trial-to-trial spread
        steps = 2 / (lam1[:, None] * jitter + s2)
        return LoadedRun(
            spec=spec,
            run_dir=Path("."),
            result={
                "ns": ns.tolist(),
                "mean": steps.mean(1).tolist(),
                "steps": steps.tolist(),
                "limit": 0.0,
            },
        )

    (ok,) = xclaims.check_stepsize([run(lam_inf * ns * (1 + 3 / np.sqrt(ns)))])
    (root,) = xclaims.check_stepsize([run(lam_inf * 10 * np.sqrt(ns))])
    (slow,) = xclaims.check_stepsize([run(lam_inf * ns**0.9)])
    assert ok.holds and ok.verdict is None and abs(ok.observed - 1) < 0.05, str(ok)
    assert not root.holds and root.verdict is None, str(root)
    assert not slow.holds and slow.verdict is None, str(slow)


def test_standin_is_never_taken_for_a_trained_run(tmp_path):
    """Stand-in runs are marked, so that verify/test_trained_claims.py can refuse them."""
    _sweep("fig_exp2_1", tmp_path)
    for r in load_experiment("fig_exp2_1", "quick", tmp_path):
        assert r.train_metrics.get("standin") is True
        assert runfiles.load_json(r.run_dir / "eval.json")["standin"] is True


def test_names_listed_once():
    assert experiment_names() == tuple(EXPERIMENTS)
    assert len(set(experiment_names())) == len(EXPERIMENTS) == 20


def test_dry_run_refuses_the_real_runs_root(monkeypatch):
    """Stand-in runs written into reports/runs would count as complete trained runs: the CLI refuses
    ``--dry-run`` without an explicit root, with an error naming the option."""
    monkeypatch.delenv("PFNTHEORY_RUNS", raising=False)
    with pytest.raises(SystemExit) as exc:
        cli.main(["sweep", "fig_exp2_1", "--dry-run", "--no-progress"])
    assert exc.value.code == 2


def test_in_process_sweep_restores_thread_settings(tmp_path, monkeypatch):
    """A sweep with workers=1 runs in the caller's process; it must not leave the caller (e.g. a
    notebook) limited to its per-run thread count."""
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    before = torch.get_num_threads()
    sweep(
        "fig_exp2_1",
        "quick",
        root=tmp_path,
        workers=1,
        threads=1,
        backend="standin",
        progress=False,
    )
    assert os.environ["OMP_NUM_THREADS"] == "7"
    assert torch.get_num_threads() == before


# --------------------------------------------------------------------------------------------------
# the cpu scale: the paper's tasks, fewer steps, learning curves; the cost model
# --------------------------------------------------------------------------------------------------


def _task_settings(spec):
    if not isinstance(spec, RunSpec):
        return dataclasses.asdict(spec)
    return (
        spec.task,
        spec.model,
        spec.n_min,
        spec.n_max,
        spec.batch_size,
        tuple((e.n_eval, e.covariates) for e in spec.evals),
    )


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_cpu_scale_keeps_every_task_setting_of_the_paper(name):
    """The cpu design differs from the paper design only in steps, lr, evaluation instances and the
    learning curve: same tasks, models (L x C grids), n ranges and evaluation n' (issue 10)."""
    exp = get_experiment(name)
    if name in CPU_SUBSET:  # a declared subset: every cpu run is a paper run with fewer n'
        paper_runs = {
            (r.task, r.model, r.n_min, r.n_max, r.batch_size): r for r in exp.runs("paper")
        }
        for r in exp.runs("cpu"):
            p = paper_runs[(r.task, r.model, r.n_min, r.n_max, r.batch_size)]
            assert [e.covariates for e in r.evals] == [e.covariates for e in p.evals]
            assert all(
                set(e.n_eval) <= set(q.n_eval) for e, q in zip(r.evals, p.evals, strict=True)
            )
        assert exp.cpu.shrunk
    else:
        paper = sorted(map(repr, map(_task_settings, exp.runs("paper"))))
        cpu = sorted(map(repr, map(_task_settings, exp.runs("cpu"))))
        assert paper == cpu
    for r in exp.runs("cpu"):
        if isinstance(r, RunSpec):
            assert r.curve_n_eval == _curve_n_eval(name, r) and r.steps < 10_000


def _curve_n_eval(name: str, r: RunSpec) -> tuple[int, ...]:
    """The learning curve's n' of a run: (n_min, n_max), or the declared n' beyond the
    pretraining range of fig:exp2-1's budget runs (its claims replay on them)."""
    if name == "fig_exp2_1_budget":
        assert {r.n_min, r.n_max} <= set(EXP2_1_CURVE_N_EVAL) and max(EXP2_1_CURVE_N_EVAL) > r.n_max
        return EXP2_1_CURVE_N_EVAL
    return tuple(sorted({r.n_min, r.n_max}))


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_paper_scale_run_records_the_curves_its_claims_are_gated_on(name):
    """Every trained verdict waits for its runs' learning curves, so a paper-scale run (a GPU
    user's) without one could never be decided: each records a curve at (n_min, n_max) on its own
    design and on every covariate law one of its evaluations uses (the covariate shift), dense
    enough that its interval can fit the tolerance (``PAPER_CURVE_POINTS``). The paper's own
    settings (steps, lr, evaluations) are untouched. Fails for a paper design built without
    ``_paper_curves``."""
    from pfntheory.experiments.definitions import PAPER_CURVE_INSTANCES, PAPER_CURVE_POINTS

    for r in get_experiment(name).runs("paper"):
        if not isinstance(r, RunSpec):
            continue
        shifted = {e.covariates for e in r.evals} - {None, r.task.covariates}
        assert r.curve_n_eval == _curve_n_eval(name, r), r.name
        assert r.curve_points == PAPER_CURVE_POINTS >= 48, r.name
        assert r.curve_instances == PAPER_CURVE_INSTANCES, r.name
        # every shifted law an evaluation uses (the family's budget runs add the shifted curve
        # at d = 16 too, where the paper evaluates no shift: extra curves decide nothing alone)
        assert set(r.curve_covariates) >= shifted, r.name
        if not name.endswith("_budget"):
            assert set(r.curve_covariates) == shifted, r.name
        assert r.steps >= 10_000 and r.lr_units != "elementwise", r.name
    if name == "supp_exp2_shift_regime":
        assert all(r.curve_covariates == ("uniform",) for r in get_experiment(name).runs("paper"))


def test_fig_exp1_cpu_covers_the_full_grid_in_priority_order():
    runs = get_experiment("fig_exp1").runs("cpu")
    cells = {(r.task.kind, r.model.mode, r.model.L, r.model.C) for r in runs}
    assert len(runs) == len(cells) == 100
    on_slice = [r.model.C == 256 or r.model.L == 32 for r in runs]
    assert on_slice == sorted(on_slice, reverse=True)  # the plotted slices first
    from pfntheory.experiments.order import order_seconds

    # within each group, cheapest first (by the sweep order's key, the cost model the designs were
    # ordered by; pfntheory/experiments/order.py)
    k = on_slice.count(True)
    for group in (runs[:k], runs[k:]):
        cost = [order_seconds(r) for r in group]
        assert cost == sorted(cost)
    assert runs[0].model.L == 2


def test_estimated_cpu_seconds():
    from pfntheory.experiments.definitions import estimated_cpu_seconds

    exp = get_experiment("fig_exp1")
    total = estimated_cpu_seconds(exp, "cpu")
    assert total == pytest.approx(sum(estimated_cpu_seconds(r, "cpu") for r in exp.runs("cpu")))
    assert estimated_cpu_seconds("fig_exp1", "quick") < total
    by_L = {
        r.model.L: estimated_cpu_seconds(r)
        for r in exp.runs("cpu")
        if r.task.kind == "rbf" and r.model.C == 256 and r.model.mode == "theory"
    }
    assert all(by_L[a] < by_L[b] for a, b in zip((2, 4, 8, 16), (4, 8, 16, 32), strict=True))
    assert estimated_cpu_seconds(get_experiment("fig_stepsize").runs("cpu")[0]) == 0.0
    # an exact-PPD reference counts its Gram matrices (one per component, ~ n'^2 d) and its draws
    # (~ n'^3): 9 components cost between 1 and 9 x one, n' doubled between 4 and 8 x
    ref = next(
        r for r in get_experiment("supp_tab_hier").runs("cpu") if isinstance(r, ExactPPDSpec)
    )
    one = dataclasses.replace(ref, task=TaskSpec(kind="rbf", d=ref.task.d))
    assert estimated_cpu_seconds(one) < estimated_cpu_seconds(ref) < 9 * estimated_cpu_seconds(one)
    small = dataclasses.replace(one, n_eval=(256,))
    ratio = estimated_cpu_seconds(
        dataclasses.replace(small, n_eval=(512,))
    ) / estimated_cpu_seconds(small)
    assert 4 < ratio < 8
    with pytest.raises(TypeError, match="spec_or_experiment"):
        estimated_cpu_seconds(3.0)
    with pytest.raises(ValueError, match="scale"):
        estimated_cpu_seconds(exp, "huge")


def test_cost_model_refit_recovers_known_coefficients():
    """benchmarks/cost_model.py refits COST to timed runs: on runs timed exactly by a known set of
    coefficients (each training coefficient scaled by its own factor) the fit returns those
    coefficients; it would not for a model whose estimate is not linear in COST, or a fit that
    ignored a term. The estimate of a run is sum(COST[k] * training_terms[k]) plus its
    evaluations."""
    import importlib.util

    from pfntheory.experiments import definitions as D

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "cost_model.py"
    loader = importlib.util.spec_from_file_location("cost_model", path)
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    specs = [
        s
        for name in ("fig_exp1", "fig_exp2_2", "supp_tab_hier")
        for s in D.get_experiment(name).runs("cpu")
        if isinstance(s, RunSpec)
    ]
    scale = {"DATA_S": 1.5, "DATA_N3_S": 0.5, "HIER_DATA_N3_S": 2.0, "DATA_N2D_S": 1.3}
    scale |= {"RBF_N_S": 0.8, "RBF_N2_S": 1.7, "LINEAR_N_S": 1.2, "RBF_N2D_S": 0.9}
    truth = {k: v * scale.get(k, 1.0) for k, v in D.COST.items()}
    runs = [("x", s, D.training_seconds(s, truth)) for s in specs]
    fitted = mod.fit(runs)
    for k in D.COST:
        assert fitted[k] == pytest.approx(truth[k], rel=1e-6), k
    spec = specs[0]
    train = D.training_seconds(spec)
    assert D.estimated_cpu_seconds(spec) > train > 0


def test_late_runspec_fields_keep_old_run_names():
    """Adding lr_units / curve / context_groups fields must not rename the committed runs: at their
    defaults they are left out of the hashed identity; set, they enter it."""
    r = get_experiment("fig_exp1").runs("quick")[0]
    assert "curve_n_eval" not in r.identity() and "lr_units" not in r.identity()
    r2 = dataclasses.replace(r, curve_n_eval=(32, 64))
    assert r2.name != r.name and r2.identity()["curve_n_eval"] == (32, 64)
    with pytest.raises(ValueError, match="lr_units"):
        dataclasses.replace(r, lr_units="fast")
    assert "context_groups" not in r.identity()
    r3 = dataclasses.replace(r, context_groups=4)
    assert r3.name != r.name and r3.context_groups == 4
    with pytest.raises(ValueError, match="context_groups must be <= batch_size"):
        dataclasses.replace(r, context_groups=r.batch_size + 1)
    assert "curve_points" not in r.identity()
    r4 = dataclasses.replace(r, curve_n_eval=(32,), curve_points=24)
    assert r4.name != dataclasses.replace(r, curve_n_eval=(32,)).name
    assert r4.curve_points == 24 and r4.identity()["curve_points"] == 24
    with pytest.raises(ValueError, match="curve_points"):
        dataclasses.replace(r, curve_points=1)


_PRELOAD_SCRIPT = """
import json, sys
from pathlib import Path
from pfntheory.experiments import execute, pool
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.experiments.specs import ExactPPDSpec, StepsizeSpec
from pfntheory.infra.tree import EvalSpec, RunSpec
root, backend = Path(sys.argv[1]), sys.argv[2]
task = TaskSpec(kind="rbf", d=2)
specs = [
    RunSpec(task=task, model=ModelSpec(score="rbf", L=2, C=8, normalised=True), n_min=4, n_max=8,
            steps=2, lr=1e-3, evals=(EvalSpec(n_eval=(4,), n_instances=4),)),
    StepsizeSpec(task=task, ns=(10, 20), n_trials=2),
    ExactPPDSpec(task=task, n_eval=(4,), n_instances=4),
]
pool._preload(backend, specs)
before = {m for m in sys.modules if m.startswith("pfntheory")}
for s in specs:
    execute.execute(s, root / "x" / s.name, backend=backend, root=root)
print(json.dumps(sorted({m for m in sys.modules if m.startswith("pfntheory")} - before)))
"""


@pytest.mark.parametrize("backend", ["nn", "standin"])
def test_sweep_workers_import_nothing_after_the_fork(tmp_path, backend):
    """A forked worker must run the code the sweep started with: after the parent's preload, running
    a trained, a fig:stepsize and an exact-PPD spec (in a fresh interpreter) imports no further
    pfntheory module from disk. Fails if a backend's modules are left out of ``worker_modules``
    (with an empty preload the worker imports nn.train, nn.evaluate, spectral, reference ...)."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PRELOAD_SCRIPT, str(tmp_path), backend],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_run_tree_has_one_class_per_node():
    """One definition of the prior and of the architecture (pfntheory.infra.config), no Spec/Config
    pairs: the experiments' RunSpec is the tree nn.train.train takes; the model holds no copy of the
    prior's ``d`` or noise (fails if ModelSpec grew a ``d`` / ``noise_var_init`` field again); the
    prior's fields added with the tree (lengthscales, sigma_diag, x_scale) and the model's
    (mlp_width, eta_init, ...) enter a run's identity only away from their defaults."""
    from pfntheory.infra import config, tree

    spec = next(s for s in get_experiment("supp_tab_hier").runs("cpu") if isinstance(s, RunSpec))
    assert RunSpec is tree.RunSpec and TaskSpec is config.TaskSpec and ModelSpec is config.ModelSpec
    assert not hasattr(config, "TaskConfig") and not hasattr(config, "ModelConfig")
    model_fields = {f.name for f in dataclasses.fields(ModelSpec)}
    assert not model_fields & {"d", "noise_var", "noise_var_init"}, model_fields
    ident = spec.identity()
    assert not {"lengthscales", "sigma_diag", "x_scale"} & set(ident["task"])
    assert not {"mlp_width", "eta_init", "scale_init", "tau_min"} & set(ident["model"])
    wider = dataclasses.replace(spec, model=dataclasses.replace(spec.model, scale_init=1.25))
    assert wider.identity()["model"]["scale_init"] == 1.25 and wider.name != spec.name
    with pytest.raises(TypeError, match="task must be a TaskSpec"):
        dataclasses.replace(spec, task=dataclasses.asdict(spec.task))
    with pytest.raises(TypeError, match="model must be a ModelSpec"):
        dataclasses.replace(spec, model=dataclasses.asdict(spec.model))
    with pytest.raises(ValueError, match="requires lengthscales"):
        dataclasses.replace(spec, task=TaskSpec(kind="ard_rbf", d=2))
    with pytest.raises(ValueError, match="task kind"):  # the exact references: the paper's priors
        ExactPPDSpec(
            task=TaskSpec(kind="ard_rbf", d=1, lengthscales=(1.0,)), n_eval=(4,), n_instances=4
        )


def test_a_run_with_a_corrupt_or_missing_learning_curve_is_not_complete(tmp_path):
    """Issue 29: `sweep --list` and the sweep count a run as done only when its learning curves are
    there, schema 1 and end at its steps (the curves gate every trained verdict); a truncated
    curve of a committed cpu run's shape makes it incomplete, so the sweep redoes it."""
    import torch

    spec = next(r for r in get_experiment("fig_exp1").runs("cpu") if isinstance(r, RunSpec))
    rd = tmp_path / spec.name
    rd.mkdir()
    runfiles.save_json(
        rd / runfiles.METRICS, {"completed": True, "steps": spec.steps, "interval": [-3.0, 3.0]}
    )
    torch.save({"w": torch.zeros(1)}, rd / runfiles.WEIGHTS)
    pts = [
        {
            "step": s,
            "n": n,
            **{k: 0.1 for k in ("tv", "nll", "coverage90", "crps")},
            **{k + "_se": 0.01 for k in ("tv", "nll", "coverage90", "crps")},
        }
        for s in (0, spec.steps // 2, spec.steps)
        for n in spec.curve_n_eval
    ]
    doc = {"schema": 1, "n_eval": list(spec.curve_n_eval), "points": pts}
    assert not state.is_trained(rd, spec)  # no curve
    runfiles.save_json(rd / "learning_curve.json", doc)
    assert state.is_trained(rd, spec)
    (rd / "learning_curve.json").write_text(json.dumps(doc)[:200])
    assert not state.is_trained(rd, spec)
    runfiles.save_json(rd / "learning_curve.json", {**doc, "points": pts[:-2]})  # stops early
    assert not state.is_trained(rd, spec)


def test_execute_hands_each_eval_spec_whole_to_evaluate(monkeypatch, tmp_path):
    """The nn backend passes the declared EvalSpec itself (its oracle included) to
    ``nn.evaluate.evaluate``, as ``train`` gets the RunSpec: nothing is unpacked; beside it only
    the device and the oracle store (``$PFNTHEORY_ORACLE_STORE``: a directory, or ``off`` for
    none; the store changes no byte of the result, tests/test_oracle_store.py). How it can fail: a
    backend that rebuilt the evaluation from loose fields would drop the oracle, and the float32
    spec below would reach evaluate as float64."""
    from pfntheory.experiments import execute as ex
    from pfntheory.nn import evaluate as nn_eval

    got = []
    monkeypatch.setattr(nn_eval, "evaluate", lambda rd, spec, **kw: got.append((rd, spec, kw)))
    ev = EvalSpec(n_eval=(4, 8), n_instances=4, oracle="float32")
    from pfntheory.nn.oracle_store import OracleStore

    monkeypatch.setenv("PFNTHEORY_ORACLE_STORE", str(tmp_path / "store"))
    ex._evaluate_nn(tmp_path, ev)
    assert len(got) == 1 and got[0][0] == tmp_path and got[0][1] is ev
    assert set(got[0][2]) == {"device", "store"}
    assert isinstance(got[0][2]["store"], OracleStore)
    assert got[0][2]["store"].root == tmp_path / "store"
    monkeypatch.setenv("PFNTHEORY_ORACLE_STORE", "off")
    ex._evaluate_nn(tmp_path, ev)
    assert got[1][2]["store"] is None
