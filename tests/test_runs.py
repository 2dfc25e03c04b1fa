"""Unit tests of pfntheory.runs: atomic writes, JSON round trips of frozen configs, corrupt files."""

import json
import os
from dataclasses import dataclass

import pytest
import torch

from pfntheory import runs
from pfntheory.nn.model import ModelConfig
from pfntheory.nn.priors import TaskConfig
from pfntheory.nn.train import TrainConfig


@dataclass
class Evil:
    x: int = 1


def _config():
    return TrainConfig(task=TaskConfig(kind="ard_rbf", d=2, lengthscales=(0.5, 2.0)),
                       model=ModelConfig(score="rbf", d=2, L=3, C=8), n_min=4, n_max=9, steps=5,
                       lr=1e-3, interval=(-2.0, 2.5))


def test_config_json_round_trip(tmp_path):
    """asdict -> JSON -> TrainConfig gives an equal frozen config (tuples restored, nesting kept)."""
    cfg = _config()
    runs.save_json(tmp_path / runs.CONFIG, runs.config_to_dict(cfg))
    back = TrainConfig.from_dict(runs.load_json(tmp_path / runs.CONFIG))
    assert back == cfg
    assert isinstance(back.task.lengthscales, tuple) and isinstance(back.interval, tuple)


def test_from_dict_rejects_unknown_fields():
    d = runs.config_to_dict(_config())
    d["task"]["colour"] = "red"
    with pytest.raises(ValueError, match="unknown TaskConfig fields"):
        TrainConfig.from_dict(d)


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
    """A pickle of an arbitrary class is refused by weights_only loading (clear error, no code run)."""
    torch.save({"e": Evil()}, tmp_path / "e.pt")
    with pytest.raises(runs.CorruptFileError, match="e.pt"):
        runs.load_torch(tmp_path / "e.pt")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupted_torch_file_raises_clear_error(tmp_path, damage):
    p = tmp_path / "checkpoint.pt"
    runs.save_torch(p, {"w": torch.randn(50, 50)})
    data = p.read_bytes()
    p.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00garbage" * 10,
                   "empty": b""}[damage])
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
