"""Unit tests of pfntheory.infra.runs: atomic writes, JSON round trips of frozen configs,
corrupt files."""

import json
import os
from dataclasses import dataclass

import pytest
import torch

from pfntheory.infra import runs
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.nn.state import config_doc


@dataclass
class Evil:
    x: int = 1


def _config():
    return RunSpec(
        task=TaskSpec(kind="ard_rbf", d=2, lengthscales=(0.5, 2.0)),
        model=ModelSpec(score="rbf", L=3, C=8),
        n_min=4,
        n_max=9,
        steps=5,
        lr=1e-3,
        interval=(-2.0, 2.5),
    )


def test_config_json_round_trip(tmp_path):
    """config.json -> RunSpec gives an equal frozen run tree (tuples restored, nesting kept)."""
    cfg = _config()
    runs.save_json(tmp_path / runs.CONFIG, config_doc(cfg))
    back = RunSpec.from_config(runs.load_json(tmp_path / runs.CONFIG))
    assert back == cfg
    assert isinstance(back.task.lengthscales, tuple) and isinstance(back.interval, tuple)


def test_from_dict_rejects_unknown_fields():
    d = config_doc(_config())
    d["task"]["colour"] = "red"
    with pytest.raises(ValueError, match="unknown TaskSpec fields"):
        RunSpec.from_config(d)


def test_atomic_write_leaves_no_temporaries_and_replaces(tmp_path):
    p = tmp_path / "sub" / "x.json"
    runs.save_json(p, {"a": 1})
    runs.save_json(p, {"a": 2})
    assert json.loads(p.read_text()) == {"a": 2}
    assert os.listdir(p.parent) == ["x.json"]


def test_atomic_write_failure_keeps_old_file(tmp_path):
    """An exception while writing leaves the previous file intact and no temporary file behind."""
    p = tmp_path / "w.pt"
    runs.save_torch(p, {"w": torch.ones(3)})

    class Boom:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        runs.save_torch(p, {"w": Boom()})
    assert torch.equal(runs.load_torch(p)["w"], torch.ones(3))
    assert os.listdir(tmp_path) == ["w.pt"]


def test_torch_round_trip_weights_only(tmp_path):
    sd = {"a": torch.arange(4.0), "b": [1, 2.5, "x"], "c": None}
    runs.save_torch(tmp_path / "s.pt", sd)
    back = runs.load_torch(tmp_path / "s.pt")
    assert torch.equal(back["a"], sd["a"]) and back["b"] == sd["b"]


def test_weights_only_refuses_arbitrary_objects(tmp_path):
    """A pickle of an arbitrary class is refused by weights_only loading (clear error, no
    code run)."""
    torch.save({"e": Evil()}, tmp_path / "e.pt")
    with pytest.raises(runs.CorruptFileError, match="e.pt"):
        runs.load_torch(tmp_path / "e.pt")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupted_torch_file_raises_clear_error(tmp_path, damage):
    p = tmp_path / "checkpoint.pt"
    runs.save_torch(p, {"w": torch.randn(50, 50)})
    data = p.read_bytes()
    p.write_bytes(
        {"truncate": data[: len(data) // 2], "garbage": b"\x00garbage" * 10, "empty": b""}[damage]
    )
    with pytest.raises(runs.CorruptFileError, match="truncated or corrupted"):
        runs.load_torch(p)


def test_corrupted_json_raises_clear_error(tmp_path):
    p = tmp_path / "metrics.json"
    p.write_text('{"a": [1, 2')
    with pytest.raises(runs.CorruptFileError, match="not valid JSON"):
        runs.load_json(p)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        runs.load_torch(tmp_path / "nope.pt")


# --------------------------------------------------------------------------------------------------
# hygiene: orphan temporary files, corrupt artefacts, the runs-root lock (issue 12)
# --------------------------------------------------------------------------------------------------


def test_clean_orphan_temps_removes_only_ours(tmp_path):
    ours = tmp_path / ".weights.pt.ab12cd34.tmp"
    ours.write_bytes(b"half")
    theirs = tmp_path / "data.tmp"
    theirs.write_text("x")
    assert runs.clean_orphan_temps(tmp_path, min_age_s=3600) == []  # too young
    assert runs.clean_orphan_temps(tmp_path) == [ours]
    assert theirs.exists() and not ours.exists()


def test_check_and_remove_corrupt_artefacts(tmp_path):
    runs.save_json(tmp_path / runs.CONFIG, {"a": 1})
    runs.save_json(
        tmp_path / runs.METRICS, {"completed": True, "steps": 3, "interval": [-1.0, 1.0]}
    )
    runs.save_torch(tmp_path / runs.WEIGHTS, {"w": torch.zeros(2)})
    assert runs.check_artefacts(tmp_path) == {}
    (tmp_path / runs.WEIGHTS).write_bytes((tmp_path / runs.WEIGHTS).read_bytes()[:50])
    assert set(runs.check_artefacts(tmp_path)) == {runs.WEIGHTS}
    msgs = runs.remove_corrupt_artefacts(tmp_path)
    assert len(msgs) == 2 and not (tmp_path / runs.WEIGHTS).exists()
    assert not (tmp_path / runs.METRICS).exists() and (tmp_path / runs.CONFIG).exists()


def test_metrics_without_interval_is_a_problem(tmp_path):
    runs.save_json(tmp_path / runs.METRICS, {"completed": True, "steps": 3})
    assert "interval" in runs.check_artefacts(tmp_path)[runs.METRICS]


def test_root_lock_is_exclusive_and_released(tmp_path):
    with runs.root_lock(tmp_path):
        with pytest.raises(runs.LockHeldError, match=f"pid {os.getpid()}"):
            with runs.root_lock(tmp_path):
                pass
    with runs.root_lock(tmp_path):  # released on exit
        pass


def test_atomic_writes_get_the_usual_file_mode(tmp_path):
    """mkstemp creates 0600; a run's files must be readable like any other file the user writes
    (0666 less the umask), so that a shared runs root or a committed run is readable by others."""
    p = runs.save_json(tmp_path / "a.json", {"x": 1})
    q = runs.atomic_write_bytes(tmp_path / "b.bin", b"1")
    mask = os.umask(0)
    os.umask(mask)
    for f in (p, q):
        assert f.stat().st_mode & 0o777 == 0o666 & ~mask, oct(f.stat().st_mode)


def test_round_significant_keeps_six_digits_and_refuses_non_numbers():
    """One home for the rounding of committed JSON: 6 significant digits, inf/NaN unchanged, an
    array or text refused naming ``x`` (fails if an array were silently reduced)."""
    import numpy as np

    assert runs.round_significant(1.23456789) == 1.23457
    assert runs.round_significant(np.float64(-2.5e-9)) == -2.5e-9
    assert runs.round_significant(float("inf")) == float("inf")
    for bad in (np.array([1.0, 2.0]), "1.0", None, True):
        with pytest.raises(TypeError, match="x must be a real number"):
            runs.round_significant(bad)
