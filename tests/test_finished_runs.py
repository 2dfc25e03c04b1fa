"""Nothing wrong is ever written or merged (issue 41): the one check of a finished run, corrupt
artefacts of any encoding, the arithmetic record of a run and its resume, the file-system errors
of the command line, and the hot paths that validate once.

Each test below fails without its fix: it builds the defect the issue names (a checkpoint with NaN
weights, a step beyond the run, a missing ``weights_last.pt``, non-UTF-8 bytes, a resume on other
arithmetic, a disk-full write...) and asserts the refusal or the redo.
"""

from __future__ import annotations

import errno
import json
import os
import time
import warnings

import numpy as np
import pytest
import torch

from pfntheory import cli
from pfntheory.experiments.state import is_trained
from pfntheory.infra import runs
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.convergence import read_learning_curve
from pfntheory.infra.tree import RunSpec
from pfntheory.nn import train as train_mod
from pfntheory.nn.train import train


def tiny(**kw) -> RunSpec:
    base = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8, tau_min=0.02),
        n_min=4,
        n_max=6,
        steps=4,
        lr=1e-2,
        batch_size=4,
        interval=(-2.0, 2.0),
    )
    base.update(kw)
    return RunSpec(**base)


@pytest.fixture(scope="module")
def averaged(tmp_path_factory):
    """A finished weight-averaged run with a learning curve (4 steps), trained once."""
    rd = tmp_path_factory.mktemp("avg") / "run"
    spec = tiny(ema_decay=0.9, curve_n_eval=(4, 6), curve_points=2, curve_instances=4)
    train(spec, rd, progress=False)
    return spec, rd


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


# ------------------------------------------------------------------------------------------------
# one check of a finished run
# ------------------------------------------------------------------------------------------------


def test_the_committed_layout_passes(averaged):
    spec, rd = averaged
    assert runs.check_artefacts(rd) == {}
    assert is_trained(rd, spec)
    assert (rd / runs.WEIGHTS_LAST).is_file()


def test_nonfinite_weights_or_last_iterate_are_not_finished(averaged, tmp_path):
    """issue 41: a run could finish "completed" with all-NaN weights; weights_last.pt was never
    checked. Both files must hold finite weights, for the sweep and for training."""
    spec, src = averaged
    for name in (runs.WEIGHTS, runs.WEIGHTS_LAST):
        rd = _copy(src, tmp_path / name)
        state = runs.load_torch(rd / name)
        runs.save_torch(rd / name, {k: torch.full_like(v, float("nan")) for k, v in state.items()})
        assert "non-finite" in runs.check_artefacts(rd)[name]
        assert not is_trained(rd, spec)
        with pytest.warns(RuntimeWarning, match=f"{name}.*training redoes the run"):
            train(spec, rd, progress=False)
        assert runs.check_artefacts(rd) == {} and is_trained(rd, spec)


def test_missing_last_iterate_is_not_finished(averaged, tmp_path):
    spec, src = averaged
    rd = _copy(src, tmp_path / "r")
    (rd / runs.WEIGHTS_LAST).unlink()
    assert not is_trained(rd, spec)
    with pytest.warns(RuntimeWarning, match="weights_last.pt is missing"):
        train(spec, rd, progress=False)
    assert (rd / runs.WEIGHTS_LAST).is_file() and is_trained(rd, spec)


def test_checkpoint_beyond_the_steps_or_nonfinite_is_refused(tmp_path):
    """issue 41: a checkpoint step beyond the run's steps was accepted (the run "finished" at once);
    a checkpoint with NaN averaged weights made NaN weights."""
    spec = tiny(ema_decay=0.9)
    rd = tmp_path / "r"
    train(spec, rd, progress=False)
    ck = runs.load_torch(rd / runs.CHECKPOINT)
    for name in (runs.WEIGHTS, runs.METRICS, runs.WEIGHTS_LAST):
        (rd / name).unlink()
    runs.save_torch(rd / runs.CHECKPOINT, {**ck, "step": spec.steps + 5})
    assert "outside the run's 0..4 steps" in runs.check_artefacts(rd)[runs.CHECKPOINT]
    with pytest.raises(runs.CorruptFileError, match="step 9 is outside 0..4"):
        train(spec, rd, progress=False)
    ema = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
           for k, v in ck["ema"].items()}  # fmt: skip
    runs.save_torch(rd / runs.CHECKPOINT, {**ck, "ema": ema})
    assert "non-finite ema" in runs.check_artefacts(rd)[runs.CHECKPOINT]
    msgs = runs.remove_corrupt_artefacts(rd)
    assert any("checkpoint.pt" in m for m in msgs) and not (rd / runs.CHECKPOINT).exists()


@pytest.mark.parametrize("name", [runs.METRICS, runs.CONFIG, "learning_curve.json"])
def test_non_utf8_json_is_corruption(averaged, tmp_path, name):
    """issue 41: non-UTF-8 bytes raised UnicodeDecodeError past load_json; they are corruption,
    named with the file, and the run is redone."""
    spec, src = averaged
    rd = _copy(src, tmp_path / "r")
    (rd / name).write_bytes(b'{"schema": 1, "x": "\xff\xfe"}')
    with pytest.raises(runs.CorruptFileError, match=name):
        runs.load_json(rd / name)
    assert name in runs.check_artefacts(rd)
    assert not is_trained(rd, spec)
    assert runs.remove_corrupt_artefacts(rd)


def test_curve_values_are_checked_by_the_reader(averaged, tmp_path):
    """issue 41: the reader checked the schema, not the values (tv = 5, NaN, per-instance TVs
    outside [0, 1], negative steps, a point without step); each is refused naming file and field."""
    _, src = averaged
    doc = runs.load_json(src / "learning_curve.json")
    last = max(i for i, p in enumerate(doc["points"]) if "tv_instances" in p)
    cases = {
        "tv": ({"tv": 5.0}, "'tv' = 5.0 outside"),
        "nan": ({"tv": float("nan")}, "non-finite 'tv'"),
        "neg step": ({"step": -1}, "no valid 'step'"),
        "instances": ({"tv_instances": [0.1, 1.5]}, "tv_instances"),
    }
    for what, (change, msg) in cases.items():
        rd = tmp_path / what.replace(" ", "_")
        rd.mkdir()
        points = [dict(p) for p in doc["points"]]
        points[last].update(change)
        (rd / "learning_curve.json").write_text(json.dumps({**doc, "points": points}))
        with pytest.raises(runs.CorruptFileError, match=f"learning_curve.json points.*{msg}"):
            read_learning_curve(rd)
    points = [dict(p) for p in doc["points"]]
    del points[0]["step"]
    (tmp_path / "tv" / "learning_curve.json").write_text(json.dumps({**doc, "points": points}))
    with pytest.raises(runs.CorruptFileError, match=r"points\[0\] has no valid 'step'"):
        read_learning_curve(tmp_path / "tv")


def test_orphan_temporaries_of_a_finished_run_are_removed(averaged, tmp_path):
    """issue 41: .tmp files of a late kill stayed in finished runs."""
    spec, src = averaged
    rd = _copy(src, tmp_path / "r")
    orphan = rd / ".weights.pt.abc123.tmp"
    orphan.write_bytes(b"half")
    old = time.time() - 120
    os.utime(orphan, (old, old))
    train(spec, rd, progress=False)  # finished: nothing trained
    assert not orphan.exists()


def test_redo_warning_has_no_source_line(averaged, tmp_path):
    """issue 41: the redo warning ended with the caller's source line (``out = train(``)."""
    spec, src = averaged
    rd = _copy(src, tmp_path / "r")
    runs.save_torch(rd / runs.WEIGHTS, {"x": torch.zeros(1)})
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        train(spec, rd, progress=False)
    text = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
                   for w in got)  # fmt: skip
    assert "training redoes the run" in text and "train(" not in text
    assert len(text.strip().splitlines()) == len(got)


# ------------------------------------------------------------------------------------------------
# the arithmetic of a run
# ------------------------------------------------------------------------------------------------


def test_metrics_record_the_arithmetic_and_the_name_is_unchanged(averaged):
    spec, rd = averaged
    ar = runs.load_json(rd / runs.METRICS)["arithmetic"]
    assert ar["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert ar["path"] in ("fused", "eager") and ar["fast_numerics"] is False
    assert ar["torch"] == str(torch.__version__) and ar["numpy"] == np.__version__
    assert "arithmetic" not in runs.load_json(rd / runs.CONFIG)  # not the run's identity
    assert spec.name == tiny(ema_decay=0.9, curve_n_eval=(4, 6), curve_points=2,
                             curve_instances=4).name  # fmt: skip


def test_resume_on_other_arithmetic_is_refused_unless_asked(tmp_path, monkeypatch):
    """issue 41: a run killed with the extension and resumed without it finished silently
    different; the resume now says what changed and refuses unless asked."""
    spec = tiny(steps=6)
    rd = tmp_path / "r"

    def kill(step, loss):
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(spec, rd, progress=False, callback=kill, checkpoint_every=1)
    real = train_mod.arithmetic
    monkeypatch.setattr(
        train_mod, "arithmetic", lambda s, d: {**real(s, d), "cpu_capability": "OTHER"}
    )
    with pytest.raises(ValueError, match="cpu_capability .* -> 'OTHER'.*allow-arithmetic-change"):
        train(spec, rd, progress=False)
    train(spec, rd, progress=False, allow_arithmetic_change=True)
    assert runs.load_json(rd / runs.METRICS)["arithmetic"]["cpu_capability"] == "OTHER"
    with pytest.raises(TypeError, match="allow_arithmetic_change"):
        train(spec, tmp_path / "x", progress=False, allow_arithmetic_change="yes")


# ------------------------------------------------------------------------------------------------
# file-system errors: one line naming the real file, the right exit status
# ------------------------------------------------------------------------------------------------


def test_write_errors_name_the_real_file(tmp_path, monkeypatch):
    (tmp_path / "checkpoint.pt").mkdir()
    with pytest.raises(IsADirectoryError) as err:
        runs.save_json(tmp_path / "checkpoint.pt", {})
    assert err.value.filename == str(tmp_path / "checkpoint.pt")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runs.os, "fsync", full)
    with pytest.raises(OSError) as err:
        runs.save_json(tmp_path / "m.json", {})
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(tmp_path / "m.json")
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file is gone


@pytest.mark.parametrize(
    "code,status,words",
    [(errno.ENOSPC, 1, "the disk is full"), (errno.EROFS, 2, "the file system is read-only"),
     (errno.EISDIR, 2, "a directory is in the way")],
)  # fmt: skip
def test_cli_maps_file_system_errors(tmp_path, monkeypatch, capsys, code, status, words):
    """issue 41: disk full was exit 2 ("bad input") with no file named; read-only and
    checkpoint-is-a-directory named the temporary file."""
    target = tmp_path / "run" / "config.json"

    def fail(path, obj):
        raise OSError(code, os.strerror(code), str(target))

    monkeypatch.setattr(runs, "save_json", fail)
    argv = ["train", "--run-dir", str(tmp_path / "run"), "--task", "rbf", "--d", "2", "--L", "2",
            "--C", "8", "--n-min", "4", "--n-max", "6", "--steps", "2", "--batch-size", "4",
            "--no-progress", "--device", "cpu", "--no-curve"]  # fmt: skip
    with pytest.raises(SystemExit) as ex:
        cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert ex.value.code == status and len(err.splitlines()) == 1
    assert f"cannot write {target}: {words}" in err and ".tmp" not in err


# ------------------------------------------------------------------------------------------------
# validate once: the hot paths trust what the boundary checked
# ------------------------------------------------------------------------------------------------


def test_training_forward_does_not_recheck_its_batches(tmp_path, monkeypatch):
    """issue 40: check_batch ran on every training forward and accumulate_gradients re-validated
    edges every step; the loop now checks once (the public entry still checks)."""
    from pfntheory.nn import model as model_mod

    calls = []
    real = model_mod.check_batch
    monkeypatch.setattr(model_mod, "check_batch", lambda *a: calls.append(1) or real(*a))
    train(tiny(), tmp_path / "r", progress=False)
    assert calls == []
    # the public boundaries still refuse bad input, naming it
    from pfntheory.nn.state import build_model

    m = build_model(tiny(), (-2.0, 2.0), "cpu")
    X, Y, xq = torch.zeros(1, 3, 2), torch.zeros(1, 3), torch.zeros(1, 2)
    with pytest.raises(ValueError, match="X contains NaN"):
        m(X.fill_(float("nan")), Y, xq)
    from pfntheory.nn.priors import sample_batch

    batch = sample_batch(TaskSpec(kind="rbf", d=2), 2, 3, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="edges"):
        train_mod.accumulate_gradients(m, [batch], torch.tensor([1.0, 0.0]))
