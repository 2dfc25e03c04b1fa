"""A run record that cannot lie (issue 52, items 3 and 4): each corruption case the issue names is
built here and must be refused or redone, never accepted.

- ``train_latent`` returned a finished directory of another spec as done, resumed a checkpoint of
  another seed and learning rate, and rewrote ``latent_config.json`` as if the whole run used the
  new spec;
- a checkpoint whose ``arithmetic`` record is missing or damaged resumed on other arithmetic (exit
  0); a run resumed across an arithmetic change recorded only its last segment;
  ``PFNTHEORY_FUSED_ISA`` was recorded as typed; ``PFNTHEORY_FUSED=no`` left the fused path on;
- ``evaluate(save=True)`` with the other oracle replaced the run's ``eval.json``; ``compare --out``
  overwrote an ``evaluate --out`` file.

The legacy case stays accepted: a checkpoint written before ``fused_draw_max_n`` (and before the
segments) resumes bitwise with 512 (tests/test_draw_per_n.py), and a ``metrics.json`` without
segments reads as one segment.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
import torch

from pfntheory import cli
from pfntheory.infra import runs
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import EvalSpec, RunSpec
from pfntheory.nn import arithmetic as arith
from pfntheory.nn import fused
from pfntheory.nn import train as train_mod
from pfntheory.nn.train import train


def tiny(**kw) -> RunSpec:
    base = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8, tau_min=0.02),
        n_min=4,
        n_max=6,
        steps=6,
        lr=1e-2,
        batch_size=4,
        interval=(-2.0, 2.0),
    )
    base.update(kw)
    return RunSpec(**base)


def _kill_at(k):
    def kill(step, loss):
        if step == k:
            raise KeyboardInterrupt

    return kill


def _killed(spec, rd, k=3):
    with pytest.raises(KeyboardInterrupt):
        train(spec, rd, progress=False, callback=_kill_at(k), checkpoint_every=1)
    return runs.load_torch(rd / runs.CHECKPOINT)


def _weights(rd):
    return runs.load_torch(rd / runs.WEIGHTS)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """An uninterrupted run of ``tiny()``."""
    rd = tmp_path_factory.mktemp("whole") / "run"
    train(tiny(), rd, progress=False)
    return rd


# ------------------------------------------------------------------------------------------------
# the arithmetic record of a checkpoint: missing or damaged is refused unless allowed
# ------------------------------------------------------------------------------------------------


def _damage(record: dict, how: str):
    rec = dict(record)
    if how == "missing":
        return None
    if how == "not a dict":
        return "fused"
    if how == "no path":
        rec.pop("path")
    elif how == "path wrong type":
        rec["path"] = 5
    elif how == "empty torch":
        rec["torch"] = ""
    elif how == "unknown field":
        rec["extra"] = 1
    elif how == "fast_numerics other":
        rec["fast_numerics"] = not rec["fast_numerics"]
    elif how == "draw in a non-fast run":
        rec[arith.DRAW_KEY] = 352
    return rec


DAMAGE = [
    "missing",
    "not a dict",
    "no path",
    "path wrong type",
    "empty torch",
    "unknown field",
    "fast_numerics other",
    "draw in a non-fast run",
]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_checkpoint_without_a_readable_record_is_refused_unless_allowed(tmp_path, whole, how):
    spec = tiny()
    rd = tmp_path / "r"
    ck = _killed(spec, rd)
    ck["arithmetic"] = _damage(ck["arithmetic"], how)
    ck.pop(arith.SEGMENTS_KEY)  # as a checkpoint of the code before segments
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    with pytest.raises(ValueError, match="arithmetic record is .*allow-arithmetic-change"):
        train(spec, rd, progress=False)
    assert not (rd / runs.METRICS).exists()
    train(spec, rd, progress=False, allow_arithmetic_change=True)
    seg = runs.load_json(rd / runs.METRICS)[arith.SEGMENTS_KEY]
    # recorded as it is: steps 0..3 of unknown arithmetic, then 3..6 on this process's
    assert seg[0] == {"steps": [0, 3], "arithmetic": None}
    assert seg[1]["steps"] == [3, 6] and seg[1]["arithmetic"]["path"] in ("fused", "eager")


def test_a_damaged_draw_record_is_refused_unless_allowed(tmp_path):
    spec = tiny(fast_numerics=True, n_max=8)
    rd = tmp_path / "r"
    ck = _killed(spec, rd)
    ck["arithmetic"][arith.DRAW_KEY] = "many"
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    with pytest.raises(ValueError, match="fused_draw_max_n='many'.*allow-arithmetic-change"):
        train(spec, rd, progress=False)
    train(spec, rd, progress=False, allow_arithmetic_change=True)
    seg = runs.load_json(rd / runs.METRICS)[arith.SEGMENTS_KEY]
    assert seg[0]["arithmetic"] is None and seg[1]["arithmetic"][arith.DRAW_KEY] == (
        arith.FUSED_DRAW_MAX_N
    )


@pytest.mark.parametrize(
    "segments",
    [
        "x",
        [],
        [{"steps": [0, 2], "arithmetic": None}],  # ends before the checkpoint's step
        [{"steps": [1, 3], "arithmetic": None}],  # not from step 0
        [{"steps": [0, 3], "arithmetic": None}],  # the last has no record
        [{"steps": [0, 3], "arithmetic": {"path": "eager"}}],
        [{"steps": [0, 3]}],
    ],
)
def test_damaged_segments_are_refused_unless_allowed(tmp_path, segments):
    spec = tiny()
    rd = tmp_path / "r"
    ck = _killed(spec, rd)
    ck[arith.SEGMENTS_KEY] = segments
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    with pytest.raises(ValueError, match="segments are damaged"):
        train(spec, rd, progress=False)
    train(spec, rd, progress=False, allow_arithmetic_change=True)
    assert runs.load_json(rd / runs.METRICS)[arith.SEGMENTS_KEY][0]["arithmetic"] is None


def test_last_segment_other_than_the_record_is_refused(tmp_path):
    spec = tiny()
    rd = tmp_path / "r"
    ck = _killed(spec, rd)
    ck[arith.SEGMENTS_KEY][-1]["arithmetic"] = {**ck["arithmetic"], "cpu_capability": "OTHER"}
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    with pytest.raises(ValueError, match="last segment's record is not"):
        train(spec, rd, progress=False)


# ------------------------------------------------------------------------------------------------
# segments
# ------------------------------------------------------------------------------------------------


def test_one_segment_uninterrupted_and_resumed_on_the_same_arithmetic(tmp_path, whole):
    m = runs.load_json(whole / runs.METRICS)
    assert m[arith.SEGMENTS_KEY] == [{"steps": [0, 6], "arithmetic": m["arithmetic"]}]
    rd = tmp_path / "r"
    _killed(tiny(), rd)
    train(tiny(), rd, progress=False)
    assert runs.load_json(rd / runs.METRICS)[arith.SEGMENTS_KEY] == m[arith.SEGMENTS_KEY]
    a, b = _weights(whole), _weights(rd)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_of_the_code_before_segments_resumes_bitwise(tmp_path, whole):
    """The running sweep's checkpoints (main's code before issue 52): no segments, a record."""
    rd = tmp_path / "r"
    ck = _killed(tiny(), rd)
    ck.pop(arith.SEGMENTS_KEY)
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    train(tiny(), rd, progress=False)
    m = runs.load_json(rd / runs.METRICS)
    assert m[arith.SEGMENTS_KEY] == [{"steps": [0, 6], "arithmetic": m["arithmetic"]}]
    a, b = _weights(whole), _weights(rd)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_resume_across_an_arithmetic_change_records_every_segment(tmp_path, monkeypatch):
    spec = tiny()
    rd = tmp_path / "r"
    ck = _killed(spec, rd, k=2)
    first = ck["arithmetic"]
    real = train_mod.arithmetic
    other = {"path": "eager", "fused_isa": None, "cpu_capability": "OTHER"}
    monkeypatch.setattr(train_mod, "arithmetic", lambda s, d: {**real(s, d), **other})
    with pytest.raises(KeyboardInterrupt):
        train(spec, rd, progress=False, callback=_kill_at(4), checkpoint_every=1,
              allow_arithmetic_change=True)  # fmt: skip
    monkeypatch.setattr(train_mod, "arithmetic", real)
    train(spec, rd, progress=False, allow_arithmetic_change=True)
    m = runs.load_json(rd / runs.METRICS)
    seg = m[arith.SEGMENTS_KEY]
    assert [s["steps"] for s in seg] == [[0, 2], [2, 4], [4, 6]]
    assert seg[0]["arithmetic"] == first and seg[2]["arithmetic"] == first
    assert seg[1]["arithmetic"]["path"] == "eager"
    assert seg[1]["arithmetic"]["cpu_capability"] == "OTHER"
    assert m["arithmetic"] == first  # the last segment's


def test_old_metrics_read_as_one_segment(tmp_path):
    old = {"completed": True, "steps": 6, "arithmetic": {"path": "fused"}}
    assert arith.segments_of(old) == [{"steps": [0, 6], "arithmetic": {"path": "fused"}}]
    assert arith.segments_of({"steps": 6}) == [{"steps": [0, 6], "arithmetic": None}]
    with pytest.raises(TypeError, match="metrics"):
        arith.segments_of([])


def test_every_committed_metrics_reads_its_segments():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "reports" / "runs"
    for path in sorted(root.glob("*/*/metrics.json")):
        seg = arith.segments_of(runs.load_json(path))
        assert seg and seg[0]["steps"][0] == 0, path


# ------------------------------------------------------------------------------------------------
# the instruction set as built; environment switches: documented values only
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["PFNTHEORY_FUSED", "PFNTHEORY_FUSED_ISA"])
@pytest.mark.parametrize("value", ["no", "false", "bogus", "avx2", " 0"])
def test_switches_refuse_undocumented_values(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}=.*not one of"):
        fused.available(build=False)
    with pytest.raises(ValueError, match=name):
        arith.arithmetic(tiny(), torch.device("cpu"))
    with pytest.raises(ValueError, match=name):
        train(tiny(), "/nonexistent/never/written", progress=False)


def test_switches_accept_documented_values(monkeypatch):
    monkeypatch.setenv("PFNTHEORY_FUSED", "0")
    assert fused.available(build=False) is False
    assert arith.arithmetic(tiny(), torch.device("cpu"))["path"] == "eager"
    for value in ("", "1"):
        monkeypatch.setenv("PFNTHEORY_FUSED", value)
        fused.check_environment()


@pytest.mark.parametrize("typed", ["", None])
def test_isa_recorded_as_built(monkeypatch, typed):
    if typed is None:
        monkeypatch.delenv("PFNTHEORY_FUSED_ISA", raising=False)
    else:
        monkeypatch.setenv("PFNTHEORY_FUSED_ISA", typed)
    cap = str(torch.backends.cpu.get_cpu_capability())
    assert fused.built_isa() == fused.isa_of(cap) and fused.built_isa() in fused.ISAS
    monkeypatch.setattr(fused, "available", lambda build=True: True)
    assert arith.arithmetic(tiny(), torch.device("cpu"))["fused_isa"] == fused.isa_of(cap)
    monkeypatch.setenv("PFNTHEORY_FUSED_ISA", "DEFAULT")
    assert arith.arithmetic(tiny(), torch.device("cpu"))["fused_isa"] == "DEFAULT"


def test_records_written_as_typed_read_as_the_build_they_made():
    rec = {"path": "fused", "cpu_capability": "AVX512", "fused_isa": "AVX512",
           "fast_numerics": False, "torch": "2", "numpy": "2"}  # fmt: skip
    assert arith.canonical({**rec, "fused_isa": "avx2"})["fused_isa"] == "DEFAULT"
    assert arith.canonical({**rec, "fused_isa": "bogus"})["fused_isa"] == "DEFAULT"
    assert arith.canonical({**rec, "fused_isa": ""})["fused_isa"] == "AVX512"
    assert arith.canonical(rec) == rec
    fast = {**rec, "fast_numerics": True}
    assert arith.canonical(fast)[arith.DRAW_KEY] == arith.LEGACY_FUSED_DRAW_MAX_N
    assert arith.arithmetic_change({**rec, "fused_isa": ""}, rec) is None


# ------------------------------------------------------------------------------------------------
# the latent trainer: a directory or checkpoint of another spec is refused
# ------------------------------------------------------------------------------------------------


def _latent(**kw):
    from pfntheory.nn.latent import LatentRunSpec, LatentTask

    base = dict(
        task=LatentTask(n_min=6, n_max=6, n_query=2),
        L=1,
        width=4,
        hidden=4,
        steps=4,
        batch_size=4,
        curve_points=2,
        curve_instances=3,
        curve_n_eval=(6,),
    )
    base.update(kw)
    return LatentRunSpec(**base)


@pytest.fixture(scope="module")
def latent_run(tmp_path_factory):
    from pfntheory.nn.latent import heldout_set, train_latent

    spec = _latent()
    held = heldout_set(spec)
    rd = train_latent(spec, tmp_path_factory.mktemp("latent") / "run", held=held)
    return spec, rd, held


def test_latent_finished_run_of_another_spec_is_refused(tmp_path, latent_run):
    from pfntheory.nn.latent import LATENT_CONFIG, train_latent

    spec, src, held = latent_run
    rd = shutil.copytree(src, tmp_path / "r")
    before = (rd / LATENT_CONFIG).read_bytes()
    assert train_latent(spec, rd, held=held) == rd  # its own spec: finished
    for other in (_latent(seed=1), _latent(lr=1e-2), _latent(L=2)):
        with pytest.raises(ValueError, match="holds the latent run .*differs in"):
            train_latent(other, rd, held=held)
    assert (rd / LATENT_CONFIG).read_bytes() == before  # never rewritten


def test_latent_checkpoint_of_another_spec_is_refused(tmp_path, latent_run):
    from pfntheory.nn.latent import LATENT_CONFIG, train_latent

    spec, _, held = latent_run

    def stop(msg):
        raise KeyboardInterrupt

    rd = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        train_latent(spec, rd, held=held, checkpoint_every=2, log=stop)
    (rd / LATENT_CONFIG).unlink()  # only the checkpoint tells
    with pytest.raises(ValueError, match="no latent_config.json"):
        train_latent(_latent(seed=3, lr=1e-2), rd, held=held)
    runs.save_json(rd / LATENT_CONFIG, {"kind": "latent_gpc", **_asdict(_latent(seed=3))})
    with pytest.raises(ValueError, match="checkpoint of the latent run .*seed 0 -> 3"):
        train_latent(_latent(seed=3), rd, held=held)
    # a checkpoint written before the spec was recorded: its learning rate and schedule tell
    ck = runs.load_torch(rd / runs.CHECKPOINT)
    ck.pop("spec")
    runs.save_torch(rd / runs.CHECKPOINT, ck)
    runs.save_json(rd / LATENT_CONFIG, {"kind": "latent_gpc", **_asdict(_latent(lr=1e-2))})
    with pytest.raises(ValueError, match="checkpoint of another run"):
        train_latent(_latent(lr=1e-2), rd, held=held)
    runs.save_json(rd / LATENT_CONFIG, {"kind": "latent_gpc", **_asdict(spec)})
    train_latent(spec, rd, held=held)  # its own spec resumes


def _asdict(spec):
    from dataclasses import asdict

    d = asdict(spec)
    d["curve_n_eval"] = list(d["curve_n_eval"])
    return d


def test_latent_damaged_records_are_refused(tmp_path, latent_run):
    from pfntheory.nn.latent import LATENT_CONFIG, train_latent

    spec, src, held = latent_run
    rd = shutil.copytree(src, tmp_path / "r")
    runs.save_json(rd / LATENT_CONFIG, {"kind": "other"})
    with pytest.raises(runs.CorruptFileError, match="not a latent run spec"):
        train_latent(spec, rd, held=held)
    runs.save_json(rd / LATENT_CONFIG, {"kind": "latent_gpc", **_asdict(spec)})
    runs.save_json(rd / runs.METRICS, {"completed": True, "steps": 99})
    with pytest.raises(runs.CorruptFileError, match="not the record of a finished run"):
        train_latent(spec, rd, held=held)


# ------------------------------------------------------------------------------------------------
# the teacher-forced trainer refuses another spec's directory
# ------------------------------------------------------------------------------------------------


def test_teacher_forced_refuses_another_spec(tmp_path):
    from pfntheory.nn.multihead_train import train_teacher_forced

    rd = tmp_path / "r"
    rd.mkdir()
    runs.save_json(rd / runs.CONFIG, tiny().to_config())
    spec = tiny(
        task=TaskSpec(kind="hier_rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8, tau_min=0.02, mixture=True),
    )
    with pytest.raises(ValueError, match="different config"):
        train_teacher_forced(spec, rd, (-2.0, 2.0))


# ------------------------------------------------------------------------------------------------
# item 4: nothing replaced silently
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, whole):
    from pfntheory.nn.evaluate import evaluate

    rd = shutil.copytree(whole, tmp_path_factory.mktemp("ev") / "run")
    evaluate(rd, EvalSpec((4,), n_instances=4), save=True)
    return rd


@pytest.mark.parametrize(
    "other",
    [
        EvalSpec((4,), n_instances=4, oracle="float32"),
        EvalSpec((4, 6), n_instances=4, oracle="float32"),
        EvalSpec((4,), n_instances=6),
        EvalSpec((6,), n_instances=4, seed=3),
    ],
)
def test_evaluate_never_saves_over_another_oracle_or_settings(tmp_path, evaluated, other):
    from pfntheory.nn.evaluate import evaluate

    rd = shutil.copytree(evaluated, tmp_path / "r")
    before = (rd / runs.EVAL).read_bytes()
    with pytest.raises(FileExistsError, match="eval.json holds an evaluation with other"):
        evaluate(rd, other, save=True)
    assert (rd / runs.EVAL).read_bytes() == before
    evaluate(rd, other, save=False)  # reading is fine
    assert (rd / runs.EVAL).read_bytes() == before
    evaluate(rd, EvalSpec((4, 6), n_instances=4), save=True)  # the same settings extend it
    doc = json.loads((rd / runs.EVAL).read_text())
    assert sorted(doc["results"]) == ["4", "6"]
    assert doc["results"]["4"] == json.loads(before)["results"]["4"]


def _cli(argv) -> int:
    try:
        return cli.main(argv)
    except SystemExit as err:
        return int(err.code)


def test_compare_and_evaluate_never_share_an_out_file(tmp_path, evaluated, capsys):
    out = tmp_path / "out.json"
    common = ["--n-instances", "4", "--json"]
    assert _cli(["evaluate", str(evaluated), "--n-eval", "4", *common, "--out", str(out)]) == 0
    before = out.read_bytes()
    assert _cli(["compare", str(evaluated), *common, "--out", str(out)]) == 2
    assert "another producer" in capsys.readouterr().err and out.read_bytes() == before
    cmp = tmp_path / "cmp.json"
    assert _cli(["compare", str(evaluated), *common, "--out", str(cmp)]) == 0
    assert json.loads(cmp.read_text())["producer"]["command"] == "compare"
    assert _cli(["compare", str(evaluated), *common, "--out", str(cmp)]) == 0  # its own
    cmp_before = cmp.read_bytes()
    assert _cli(["evaluate", str(evaluated), "--n-eval", "4", *common, "--out", str(cmp)]) == 2
    assert cmp.read_bytes() == cmp_before
    other = tmp_path / "notes.json"
    other.write_text('{"mine": 1}')
    assert _cli(["compare", str(evaluated), *common, "--out", str(other)]) == 2
    assert json.loads(other.read_text()) == {"mine": 1}


def test_committed_latent_runs_are_still_finished():
    """Every committed run of the latent design is found finished, as its own spec (read only)."""
    from pathlib import Path

    from pfntheory.nn.latent import DESIGN, EXPERIMENT, _refuse_other_latent

    root = Path(__file__).resolve().parents[1] / "reports" / "runs" / EXPERIMENT
    if not root.is_dir():
        pytest.skip("no committed latent runs")
    for spec in DESIGN:
        assert _refuse_other_latent(spec, root / spec.name), spec.name
    other = dataclasses.replace(DESIGN[0], seed=1)
    with pytest.raises(ValueError, match="differs in seed 0 -> 1"):
        _refuse_other_latent(other, root / DESIGN[0].name)
