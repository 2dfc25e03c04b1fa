"""Run directories: configs as JSON, atomic writes, safe loading of torch files.

A run directory (one trained model) holds

* ``config.json``  -- ``dataclasses.asdict`` of the frozen run configuration;
* ``metrics.json`` -- training summary (loss curve, wall time, device, ...);
* ``weights.pt``   -- the model's ``state_dict`` (loaded with ``weights_only=True``);
* ``checkpoint.pt``-- while training: model, optimiser, scheduler, RNG states and step;
* ``eval*.json``   -- evaluation results.

Every file is written to a temporary file in the same directory and moved into place with
``os.replace`` (atomic on POSIX), so a killed process leaves either the old or the new file, never a
truncated one. A file that is nevertheless corrupted (truncated by a copy, edited by hand) raises
:class:`CorruptFileError` naming the file, instead of an unpickling traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import types
import typing
from pathlib import Path

__all__ = [
    "temporary_environ",
    "CONFIG",
    "METRICS",
    "WEIGHTS",
    "CHECKPOINT",
    "EVAL",
    "CorruptFileError",
    "atomic_write_bytes",
    "save_json",
    "load_json",
    "save_torch",
    "load_torch",
    "config_to_dict",
    "dataclass_from_dict",
]

CONFIG = "config.json"
METRICS = "metrics.json"
WEIGHTS = "weights.pt"
CHECKPOINT = "checkpoint.pt"
EVAL = "eval.json"


class CorruptFileError(ValueError):
    """A run file exists but cannot be read (truncated, corrupted, or not what it claims to be)."""


def _atomic_write(path, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + ``os.replace``)."""
    return _atomic_write(path, lambda fh: fh.write(data))


def _jsonable(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist"):  # numpy / torch scalars and arrays
        return obj.tolist()
    return obj


def save_json(path, obj) -> Path:
    """Write ``obj`` (dicts, lists, dataclasses, numpy values) as indented JSON, atomically."""
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=False, allow_nan=True)
    return atomic_write_bytes(path, (text + "\n").encode())


def load_json(path) -> dict:
    """Read a JSON file; a malformed one raises :class:`CorruptFileError`."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise CorruptFileError(f"{path} is not valid JSON (truncated or corrupted?): {err}") from err


def save_torch(path, obj) -> Path:
    """``torch.save(obj)`` to ``path`` atomically."""
    import torch

    return _atomic_write(path, lambda fh: torch.save(obj, fh))


def load_torch(path, map_location="cpu"):
    """``torch.load(path, weights_only=True)``; unreadable files raise :class:`CorruptFileError`.

    ``weights_only=True`` restricts unpickling to tensors and plain containers, so loading a run
    directory from elsewhere cannot execute code.
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # zipfile.BadZipFile, RuntimeError, EOFError, UnpicklingError, ...
        raise CorruptFileError(
            f"cannot read {path} ({type(err).__name__}: {err}); the file is truncated or corrupted. "
            f"Delete it to retrain (a checkpoint) or rerun training (weights).") from err


def config_to_dict(cfg) -> dict:
    """``dataclasses.asdict`` of a (frozen) config, JSON-ready."""
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        raise ValueError(f"cfg must be a dataclass instance, got {type(cfg).__name__}")
    return _jsonable(cfg)


def _convert(tp, value):
    """Convert a JSON value to type ``tp`` (nested dataclasses, tuples, optionals)."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        for a in args:
            if dataclasses.is_dataclass(a) and isinstance(value, dict):
                return dataclass_from_dict(a, value)
        if any(typing.get_origin(a) is tuple for a in args) and isinstance(value, list):
            return tuple(value)
        return value
    if dataclasses.is_dataclass(tp):
        return dataclass_from_dict(tp, value)
    if origin is tuple or tp is tuple:
        return tuple(value)
    return value


def dataclass_from_dict(cls, data: dict):
    """Rebuild a (nested) frozen dataclass from its ``asdict`` form; unknown keys raise ValueError."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a dict for {cls.__name__}, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = set(data) - fields
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}")
    return cls(**{k: _convert(hints[k], v) for k, v in data.items()})


@contextlib.contextmanager
def temporary_environ(values: dict[str, str]):
    """Set environment variables for the duration of a block, then restore (or remove) them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
