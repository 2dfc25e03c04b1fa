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
import errno
import json
import math
import numbers
import os
import re
import tempfile
import time
import types
import typing
from pathlib import Path

from pfntheory.base._checks import ArgumentTypeError

__all__ = [
    "temporary_environ",
    "SIGNIFICANT",
    "round_significant",
    "CONFIG",
    "METRICS",
    "WEIGHTS",
    "WEIGHTS_LAST",
    "CHECKPOINT",
    "EVAL",
    "CorruptFileError",
    "atomic_write_bytes",
    "atomic_write_stream",
    "save_json",
    "load_json",
    "save_torch",
    "load_torch",
    "config_to_dict",
    "dataclass_from_dict",
    "clean_orphan_temps",
    "check_artefacts",
    "curve_problems",
    "curve_problem",
    "CURVE_METRICS",
    "remove_corrupt_artefacts",
    "LockHeldError",
    "root_lock",
]


#: Significant digits of the floats written into committed JSON artefacts (results, config.json):
#: the last digits of a float differ between machines, so a rerun elsewhere changes no byte.
SIGNIFICANT = 6


def round_significant(x) -> float:
    """``x`` (a real number) to :data:`SIGNIFICANT` significant digits; inf and NaN unchanged."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ArgumentTypeError(f"x must be a real number, got {type(x).__name__}")
    x = float(x)
    return float(f"{x:.{SIGNIFICANT}g}") if math.isfinite(x) else x


CONFIG = "config.json"
METRICS = "metrics.json"
WEIGHTS = "weights.pt"
#: The last iterate of a weight-averaged run (``weights.pt`` then holds the average).
WEIGHTS_LAST = "weights_last.pt"
CHECKPOINT = "checkpoint.pt"
EVAL = "eval.json"
#: Metrics of every learning-curve point (``learning_curve*.json``), each with its ``_se``.
CURVE_METRICS = ("tv", "nll", "coverage90", "crps")


class CorruptFileError(ValueError):
    """A run file exists but cannot be read (truncated, corrupted, or not what it claims to be)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Mode of the files written by :func:`_atomic_write`: 0666 less the process's umask (read once).
FILE_MODE = 0o666 & ~_umask()


def _atomic_write(path, write) -> Path:
    path = Path(path)
    try:
        _write_replace(path, write)
    except OSError as err:  # name the real file, not the temporary one (disk full, read-only...)
        if err.errno is None:
            raise
        raise type(err)(err.errno, err.strerror, str(path)) from err
    return path


def _write_replace(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; a run's files get the mode of any other file the user writes
        os.fchmod(fd, FILE_MODE)
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


def atomic_write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + ``os.replace``)."""
    return _atomic_write(path, lambda fh: fh.write(data))


def atomic_write_stream(path, write) -> Path:
    """Write ``path`` atomically by calling ``write(fh)`` on a binary file handle (temporary file
    in the same directory, fsync, ``os.replace``): large binary files without a copy in memory."""
    if not callable(write):
        raise ArgumentTypeError(f"write must be callable, got {type(write).__name__}")
    return _atomic_write(path, write)


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
        return json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CorruptFileError(
            f"{path} is not valid JSON (truncated or corrupted?): {err}"
        ) from err


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
        why = " ".join(str(err).split())
        why = why if len(why) <= 120 else why[:117] + "..."
        raise CorruptFileError(
            f"cannot read {path} ({type(err).__name__}: {why}); the file is truncated or "
            f"corrupted; re-running the command that wrote it redoes it"
        ) from err


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
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and dataclasses.is_dataclass(args[0]):
            return tuple(_convert(args[0], v) for v in value)  # e.g. RunSpec.evals
        return tuple(value)
    return value


def dataclass_from_dict(cls, data: dict):
    """Rebuild a (nested) frozen dataclass from its ``asdict`` form; unknown keys raise
    ValueError. A class whose record is not its ``asdict`` form (it defines ``from_record``, e.g.
    :class:`pfntheory.experiments.specs.StepsizeSpec`) reads its own."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a dict for {cls.__name__}, got {type(data).__name__}")
    if hasattr(cls, "from_record"):
        return cls.from_record(data)
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


# --------------------------------------------------------------------------------------------------
# hygiene of run directories: orphan temporary files, corrupt artefacts, a lock per runs root
# --------------------------------------------------------------------------------------------------

#: Name of the temporary files of :func:`atomic_write_bytes`: ``.<target name>.<random>.tmp``.
_TMP_RE = re.compile(r"^\..+\.[A-Za-z0-9_]{6,}\.tmp$")


def clean_orphan_temps(directory, *, recursive: bool = False, min_age_s: float = 0.0) -> list[Path]:
    """Delete the temporary files a killed atomic write left in ``directory``; return their paths.

    Only names of the form ``.<target>.<random>.tmp`` (those :func:`atomic_write_bytes` creates)
    older than ``min_age_s`` seconds are removed. Call it while no other process writes there (the
    sweep does so under :func:`root_lock`).
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    now = time.time()
    found = directory.rglob(".*.tmp") if recursive else directory.glob(".*.tmp")
    removed = []
    for f in found:
        try:
            if f.is_file() and _TMP_RE.match(f.name) and now - f.stat().st_mtime >= min_age_s:
                f.unlink()
                removed.append(f)
        except FileNotFoundError:  # removed meanwhile
            continue
    return removed


def _check_metrics(doc) -> str | None:
    if not isinstance(doc, dict):
        return "is not a JSON object"
    if doc.get("completed"):
        iv = doc.get("interval")
        ok = (
            isinstance(iv, list)
            and len(iv) == 2
            and all(isinstance(v, (int, float)) and math.isfinite(v) for v in iv)
            and iv[0] < iv[1]
        )
        if not ok:
            return f"has no valid 'interval' [a, b] (got {iv!r})"
        if not isinstance(doc.get("steps"), int):
            return f"has no integer 'steps' (got {doc.get('steps')!r})"
    return None


def check_artefacts(run_dir) -> dict[str, str]:
    """Problems of the artefacts present in a run directory: ``{file name: what is wrong}``.

    Reads ``config.json`` and ``metrics.json`` (valid UTF-8 JSON objects; a finished
    ``metrics.json`` holds ``interval`` and ``steps``) and loads ``weights.pt``,
    ``weights_last.pt`` and ``checkpoint.pt`` with ``weights_only=True`` (a weights file must hold
    a state dict of finite tensors; a checkpoint's step lies within the steps of ``config.json``
    and its weights are finite); the learning curves' values are checked by
    :func:`curve_problems`. Absent files are not
    problems. An empty dict means every present artefact is readable.
    """
    run_dir = Path(run_dir)
    problems: dict[str, str] = {}
    curve_problems(run_dir, problems)
    docs: dict = {}
    for names, load, problem in (
        ((CONFIG, METRICS), load_json, _json_problem),
        ((WEIGHTS, WEIGHTS_LAST, CHECKPOINT), load_torch, _torch_problem),
    ):
        for name in names:
            path = run_dir / name
            if not path.is_file():
                continue
            try:
                obj = docs[name] = load(path)
            except CorruptFileError as err:
                problems[name] = str(err)
                continue
            steps = (
                docs.get(CONFIG, {}).get("steps") if isinstance(docs.get(CONFIG), dict) else None
            )
            msg = problem(name, obj) if name != CHECKPOINT else _checkpoint_problem(obj, steps)
            if msg:
                problems[name] = f"{path} {msg}"
    return problems


def _tvs(values) -> bool:
    """Whether ``values`` is a list of numbers in [0, 1] (False for NaN)."""
    return isinstance(values, list) and all(
        not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v <= 1 for v in values
    )


def _point_problem(p, ns: list) -> str | None:
    """What is wrong with one learning-curve point (None: nothing)."""
    if not isinstance(p, dict):
        return "is not an object"
    step, n = p.get("step"), p.get("n")
    if not (isinstance(step, int) and not isinstance(step, bool) and step >= 0) or n not in ns:
        return f"has no valid step/n (got step={step!r}, n={n!r})"
    for m in CURVE_METRICS:
        for key in (m, m + "_se"):
            v = p.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"has no numeric {key!r} (got {v!r})"
            if m != "nll" and not math.isfinite(v):
                return f"has a non-finite {key!r}"
    if not (0 <= p["tv"] <= 1 and 0 <= p["coverage90"] <= 1):
        return "has tv or coverage90 outside [0, 1]"
    if not _tvs(p.get("tv_instances", [])):
        return "has 'tv_instances' that are not TVs in [0, 1]"
    return None


def curve_problem(doc, steps: int | None = None) -> str | None:
    """What is wrong with a learning-curve document (``learning_curve*.json``), or None.

    Schema 1: ``{"schema": 1, "n_eval": [n'...], "points": [{"step", "n", "tv", "tv_se", "nll",
    "nll_se", "coverage90", "coverage90_se", "crps", "crps_se", ...}, ...]}`` with integer steps
    >= 0, every point's ``n`` in ``n_eval``, numeric metrics (the NLL may be infinite, its SE
    NaN), ``tv`` and ``coverage90`` in [0, 1], per-instance ``tv_instances`` (when present) in
    [0, 1], and every n' at every step. ``steps``: the run's
    budget, which a finished run's curve must end at (a curve cut short by a kill is not finished).
    """
    if not isinstance(doc, dict):
        return "is not a JSON object"
    if doc.get("schema") != 1:
        return f"is not a schema-1 learning curve (schema {doc.get('schema')!r})"
    ns, points = doc.get("n_eval"), doc.get("points")
    if not (isinstance(ns, list) and ns and all(isinstance(n, int) and n > 0 for n in ns)):
        return f"has no valid 'n_eval' list of positive ints (got {ns!r})"
    if not isinstance(points, list) or not points:
        return "has no 'points'"
    seen: dict[int, set] = {}
    for i, p in enumerate(points):
        msg = _point_problem(p, ns)
        if msg:
            return f"points[{i}] {msg}"
        seen.setdefault(p["step"], set()).add(p["n"])
    incomplete = [s for s, got in seen.items() if got != set(ns)]
    if incomplete:
        return f"lacks some n' at step(s) {sorted(incomplete)[:3]}"
    if steps is not None and max(seen) != steps:
        return f"ends at step {max(seen)}, not at the run's {steps} steps"
    return None


def curve_problems(run_dir, problems: dict | None = None) -> dict[str, str]:
    """Problems of the learning curves (``learning_curve*.json``) of ``run_dir``, added to
    ``problems``: unreadable, not schema 1 (:func:`curve_problem`), or, for a
    finished run, not ending at its steps."""
    run_dir = Path(run_dir)
    problems = {} if problems is None else problems
    steps = None
    try:
        done = load_json(run_dir / METRICS) if (run_dir / METRICS).is_file() else {}
        if isinstance(done, dict) and done.get("completed") and isinstance(done.get("steps"), int):
            steps = done["steps"]
    except CorruptFileError:
        pass
    for path in sorted(run_dir.glob("learning_curve*.json")):
        try:
            msg = curve_problem(load_json(path), steps)
        except CorruptFileError as err:
            msg = str(err)
        if msg:
            problems[path.name] = msg if msg.startswith(str(path)) else f"{path} {msg}"
    return problems


def _json_problem(name: str, doc) -> str | None:
    """What is wrong with the loaded JSON artefact ``name`` (None: nothing)."""
    if not isinstance(doc, dict):
        return "is not a JSON object"
    return _check_metrics(doc) if name == METRICS else None


def _nonfinite(state) -> bool:
    """Whether a state dict holds a floating tensor with a NaN or an infinite entry."""
    import torch

    return any(
        isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all())
        for t in state.values()
    )


def _torch_problem(name: str, obj) -> str | None:
    """What is wrong with the loaded weights artefact ``name`` (None: nothing)."""
    if not (isinstance(obj, dict) and obj):
        return "does not hold a state dict"
    if _nonfinite(obj):
        return "holds non-finite weights"
    return None


def _checkpoint_problem(ckpt, steps) -> str | None:
    """What is wrong with a loaded checkpoint of a run of ``steps`` steps (None: nothing, or the
    steps unknown): its step must lie in [0, steps] and its model (and average) be finite."""
    if not isinstance(ckpt, dict):
        return "is not a checkpoint"
    step = ckpt.get("step")
    if isinstance(steps, int) and not (
        isinstance(step, int) and not isinstance(step, bool) and 0 <= step <= steps
    ):
        return f"is at step {step!r}, outside the run's 0..{steps} steps"
    for key in ("model", "ema"):
        if isinstance(ckpt.get(key), dict) and _nonfinite(ckpt[key]):
            return f"holds non-finite {key} weights"
    return None


def remove_corrupt_artefacts(run_dir) -> list[str]:
    """Delete the unreadable artefacts of ``run_dir`` and those that depend on them, so that
    re-running the command that made them redoes them; return one message per deletion.

    * a corrupt ``weights.pt`` or ``metrics.json`` removes both (a finished run is the pair);
    * a corrupt ``checkpoint.pt`` is removed (training restarts from step 0);
    * a corrupt ``config.json`` removes everything above as well (nothing can be matched to it);
    * a corrupt or unfinished learning curve of a finished run (:func:`curve_problems`) removes the
      curves, the weights, the metrics and the checkpoint: the curve records the training, whose
      intermediate weights are gone, so the training is redone.

    Evaluation files (``eval*.json``) are validated by their readers, which redo unreadable ones.
    """
    run_dir = Path(run_dir)
    problems = check_artefacts(run_dir)
    doomed: set[str] = set()
    if CONFIG in problems:
        doomed |= {CONFIG, METRICS, WEIGHTS, WEIGHTS_LAST, CHECKPOINT}
    if WEIGHTS in problems or METRICS in problems or WEIGHTS_LAST in problems:
        doomed |= {WEIGHTS, METRICS, WEIGHTS_LAST}
    if CHECKPOINT in problems:
        doomed.add(CHECKPOINT)
    curves = sorted(k for k in problems if k.startswith("learning_curve"))
    if curves:  # a curve is the record of a training: the training that wrote it is redone
        doomed |= {*curves, METRICS, WEIGHTS, WEIGHTS_LAST, CHECKPOINT}
    messages = []
    for name in (CONFIG, METRICS, WEIGHTS, WEIGHTS_LAST, CHECKPOINT, *curves):
        path = run_dir / name
        if name in doomed and path.is_file():
            path.unlink()
            why = problems.get(name, "depends on a corrupt file")
            messages.append(f"removed {path}: {why}")
    return messages


class LockHeldError(RuntimeError):
    """Another process holds the lock of a runs root."""


@contextlib.contextmanager
def root_lock(root, *, wait_s: float = 0.0, poll_s: float = 0.5):
    """Hold an exclusive lock on a runs root for the duration of a block.

    The lock is ``fcntl.flock`` on ``<root>/.lock`` (released by the kernel when the holder dies,
    even by ``kill -9``), which records the holder's pid. A second holder waits up to ``wait_s``
    seconds, then raises :class:`LockHeldError` naming the holder.
    """
    import fcntl

    for name, v in (("wait_s", wait_s), ("poll_s", poll_s)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < math.inf:
            raise ValueError(f"{name} must be a finite number of seconds >= 0, got {v!r}")
    if poll_s <= 0:
        raise ValueError(f"poll_s must be > 0 seconds, got {poll_s!r}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + float(wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    try:
                        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                    except OSError:
                        holder = "?"
                    raise LockHeldError(
                        f"another sweep (pid {holder}) is running on {root}; wait for it to finish "
                        f"(or pass --wait-lock SECONDS), or use another --root"
                    ) from None
                time.sleep(poll_s)
        mine = f"{os.getpid()}\n".encode()
        if os.pread(fd, 64, 0) != mine:  # (unchanged when rewritten by the same process)
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine, 0)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock
