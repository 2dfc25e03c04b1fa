"""On-disk store of evaluation instances and their exact PPD: the oracle computed once per grid.

Why
---
The instances of an evaluation depend only on the task, the seed, ``n'``, the chunk and the
truncation interval, never on the run (:func:`pfntheory.nn.evaluate.evaluate`), so every run of a
grid is scored on the same instances, and before this store every run recomputed them: 94% of the
evaluation of a d = 8 run was the exact GP oracle (Gram matrices, Cholesky, ``Y = L z``), 4.4x the
run's training (issue 45; docs/speed.md, "The oracle store"). With the store, the first run of a
grid draws them and the others read them back. The query labels are drawn from the PPD truncated to
the run's interval ``(a, b]``, which training calibrates per pretraining range, so a grid has one
set of entries per ``n_max`` and design (six for the d = 8 budget grid's 26 runs).

What an entry is
----------------
One call of a draw function (``sample_batch`` or ``sample_batch_fast``) with its arguments, stored
as an uncompressed ``.npz`` of the :class:`~pfntheory.nn.priors.Batch` fields, the generator's state
after the draw, and a ``_meta`` document: the inputs the entry was made from and a SHA-256 of its
arrays. The entry's file name is the SHA-256 of those inputs, which are

* the draw function's qualified name, the task (every field), batch size, ``n``, dtype, the
  interval (as ``float.hex``), and a SHA-256 of the generator's state before the draw;
* a stamp of the code and arithmetic that computes the oracle: the source of the modules that draw
  (:data:`CODE_MODULES` and the fused extension's sources), the torch and NumPy versions and the CPU
  capability torch dispatches to. A change to any of them makes new entries; old ones are not read.

Every hit is checked: the stored inputs must equal the requested ones and the arrays must hash to
the stored checksum. An entry that fails either check (a damaged file, or one whose inputs differ:
copied or edited by hand) is *refused*: the batch is recomputed, returned, and written over it.
Writes are atomic (temporary file + ``os.replace``), so workers of one sweep in separate processes
can share a store; two that miss at once both compute the same bytes and the last rename wins.

Hits return the same float64 values in contiguous arrays; tests/test_oracle_store.py checks that an
evaluation through the store writes a byte-identical ``eval*.json`` on both covariate designs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pfntheory.base._checks import ArgumentTypeError, positive_int
from pfntheory.infra import runs as runfiles
from pfntheory.infra.config import TaskSpec

from .priors import Batch

__all__ = [
    "OracleStore",
    "STORE_ENV",
    "STORE_OFF",
    "default_store_root",
    "from_environment",
    "code_stamp",
]

#: Environment variable naming the store's directory (default: :func:`default_store_root`), or
#: :data:`STORE_OFF` for none (``pfntheory sweep --oracle-store``).
STORE_ENV = "PFNTHEORY_ORACLE_STORE"
#: The value of :data:`STORE_ENV` that turns the store off.
STORE_OFF = "off"
#: Layout version of an entry; part of its inputs.
FORMAT = 1
#: Modules whose source computes the oracle (their bytes are part of every entry's inputs).
CODE_MODULES = (
    "pfntheory.nn.priors",
    "pfntheory.nn.fast_oracle",
    "pfntheory.nn.fused",
    "pfntheory.nn.attention",
    "pfntheory.maths.kernels",
    "pfntheory.infra.config",
)
_FIELDS = ("X", "Y", "xq", "y", "mu", "tau", "weights", "mu_h", "tau_h")


def default_store_root() -> Path:
    """``$PFNTHEORY_ORACLE_STORE``, else ``$XDG_CACHE_HOME/pfntheory/oracle`` (``~/.cache``): a
    per-machine cache outside the repository (entries are large: about 0.3 GB per d = 8 design)."""
    env = os.environ.get(STORE_ENV)
    if env == STORE_OFF:
        raise ValueError(f"{STORE_ENV}={STORE_OFF}: the oracle store is turned off")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pfntheory" / "oracle"


def from_environment() -> OracleStore | None:
    """The store the sweep's evaluations use: none when ``$PFNTHEORY_ORACLE_STORE`` is ``off``,
    else :class:`OracleStore` at :func:`default_store_root`."""
    if os.environ.get(STORE_ENV) == STORE_OFF:
        return None
    return OracleStore()


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """SHA-256 of the oracle's code and arithmetic (see the module docstring)."""
    import importlib

    h = hashlib.sha256()
    for name in CODE_MODULES:
        mod = importlib.import_module(name)
        h.update(name.encode() + b"\0" + Path(str(mod.__file__)).read_bytes())
    src = Path(__file__).with_name("_fused_src")
    for p in sorted(src.rglob("*")) if src.is_dir() else []:
        if p.is_file() and p.suffix in {".cpp", ".h", ".hpp", ".c", ".py"}:
            h.update(str(p.relative_to(src)).encode() + b"\0" + p.read_bytes())
    cap = torch.backends.cpu.get_cpu_capability()
    h.update(f"torch={torch.__version__};numpy={np.__version__};cpu={cap}".encode())
    return h.hexdigest()


def _array_digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for k in _FIELDS:
        if k in arrays:
            a = np.ascontiguousarray(arrays[k])
            h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
    return h.hexdigest()


# Stamped when this module is imported (beside the modules it names, which it imports), so that a
# long-lived process (a sweep's forked workers) stamps the code it loaded, not a later edit on disk.
code_stamp()


class OracleStore:
    """A directory of oracle entries (see the module docstring).

    Parameters
    ----------
    root : path, optional
        The store's directory (created on first write); default :func:`default_store_root`.

    Attributes
    ----------
    events : list of (str, str)
        ``(kind, key)`` per draw, ``kind`` one of ``"hit"``, ``"miss"`` (computed and written) and
        ``"refused: <reason>"`` (an entry that failed its check: recomputed and rewritten).
    """

    def __init__(self, root=None):
        if root is not None and not isinstance(root, (str, os.PathLike)):
            raise ArgumentTypeError(f"root must be a path, got {type(root).__name__}")
        self.root = Path(root) if root is not None else default_store_root()
        if self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(f"root: {self.root} exists and is not a directory")
        self.events: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        return f"OracleStore({str(self.root)!r})"

    # -- keys --------------------------------------------------------------------------------
    @staticmethod
    def inputs(
        draw: Callable,
        task: TaskSpec,
        batch_size: int,
        n: int,
        generator: torch.Generator,
        dtype: torch.dtype,
        interval: tuple[float, float] | None,
    ) -> dict[str, Any]:
        """The inputs an entry is made from (JSON-able; its key is their SHA-256)."""
        if not callable(draw):
            raise ArgumentTypeError(f"draw must be callable, got {type(draw).__name__}")
        if not isinstance(task, TaskSpec):
            raise ArgumentTypeError(f"task must be a TaskSpec, got {type(task).__name__}")
        if not isinstance(generator, torch.Generator):
            raise ArgumentTypeError(
                f"generator must be a torch.Generator, got {type(generator).__name__}"
            )
        if not isinstance(dtype, torch.dtype):
            raise ArgumentTypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
        state = generator.get_state().numpy().tobytes()
        return {
            "format": FORMAT,
            "draw": f"{draw.__module__}.{draw.__qualname__}",
            "task": json.loads(json.dumps(dataclasses.asdict(task))),
            "batch_size": positive_int(batch_size, "batch_size"),
            "n": positive_int(n, "n"),
            "generator": hashlib.sha256(state).hexdigest(),
            "generator_device": str(generator.device),
            "dtype": str(dtype),
            "interval": None if interval is None else [float(v).hex() for v in interval],
            "code": code_stamp(),
        }

    @staticmethod
    def key(inputs: dict) -> str:
        return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npz"

    # -- read / write ------------------------------------------------------------------------
    def _read(self, path: Path, inputs: dict) -> tuple[Batch, torch.Tensor] | str:
        """The entry's batch and generator state, or the reason it is refused."""
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(bytes(z["_meta"]).decode())
                arrays = {k: z[k] for k in _FIELDS if k in z.files}
                gstate = z["_generator_after"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            return f"unreadable ({type(err).__name__})"
        if meta.get("inputs") != inputs:
            diff = sorted(
                k
                for k in set(inputs) | set(meta.get("inputs") or {})
                if (meta.get("inputs") or {}).get(k) != inputs.get(k)
            )
            return f"made from other inputs ({', '.join(diff)})"
        if meta.get("checksum") != _array_digest(arrays):
            return "checksum mismatch"
        t = {k: torch.from_numpy(v) for k, v in arrays.items()}
        return Batch(**t), torch.from_numpy(gstate)

    def _write(self, path: Path, inputs: dict, batch: Batch, gstate: torch.Tensor) -> None:
        arrays = {
            k: getattr(batch, k).detach().cpu().numpy()
            for k in _FIELDS
            if getattr(batch, k) is not None
        }
        meta = {"inputs": inputs, "checksum": _array_digest(arrays)}
        payload = {
            **arrays,
            "_generator_after": gstate.numpy(),
            "_meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        }

        def write(fh: io.BufferedWriter) -> None:
            np.savez(fh, **payload)

        runfiles.atomic_write_stream(path, write)

    def draw(
        self,
        draw: Callable,
        task: TaskSpec,
        batch_size: int,
        n: int,
        generator: torch.Generator,
        *,
        dtype: torch.dtype = torch.float64,
        interval: tuple[float, float] | None = None,
    ) -> Batch:
        """``draw(task, batch_size, n, generator, dtype=dtype, interval=interval)`` through the
        store: read back when a checked entry exists, else computed and written. ``generator`` is
        left in the state the draw leaves it in either way. Only CPU generators are stored (a CUDA
        draw is computed as asked, without the store)."""
        if not isinstance(generator, torch.Generator):
            raise ArgumentTypeError(
                f"generator must be a torch.Generator, got {type(generator).__name__}"
            )
        if generator.device.type != "cpu":
            return draw(task, batch_size, n, generator, dtype=dtype, interval=interval)
        inputs = self.inputs(draw, task, batch_size, n, generator, dtype, interval)
        key = self.key(inputs)
        path = self.path(key)
        if path.is_file():
            got = self._read(path, inputs)
            if not isinstance(got, str):
                batch, gstate = got
                generator.set_state(gstate)
                self.events.append(("hit", key))
                return batch
            self.events.append((f"refused: {got}", key))
        else:
            self.events.append(("miss", key))
        batch = draw(task, batch_size, n, generator, dtype=dtype, interval=interval)
        if batch.X.device.type == "cpu":
            self._write(path, inputs, batch, generator.get_state())
        return batch
