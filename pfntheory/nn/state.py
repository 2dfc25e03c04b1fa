"""The state of a run directory: its ``config.json`` (the run tree,
:class:`pfntheory.infra.tree.RunSpec`), the model it builds and its weights (the resumable training
of sec:sims)."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import torch

from pfntheory.base._checks import ArgumentTypeError, pair
from pfntheory.infra import runs
from pfntheory.infra.tree import RunSpec
from pfntheory.maths.discretize import bin_edges
from pfntheory.nn.multihead_model import MixturePFN

from .device import select_device
from .model import PFNTransformer

__all__ = [
    "WEIGHTS_LAST",
    "build_model",
    "config_doc",
    "finished",
    "finished_problem",
    "load_trained",
    "read_config",
    "refuse_other_config",
    "weights_problem",
]

#: Weights of the last iterate of a weight-averaged run (``weights.pt`` holds the average).
WEIGHTS_LAST = runs.WEIGHTS_LAST


def _check_spec(spec) -> None:
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(
            f"spec must be a pfntheory.infra.tree.RunSpec, got {type(spec).__name__}"
        )


def config_doc(spec: RunSpec) -> dict:
    """The JSON document of ``config.json`` for ``spec`` (:meth:`RunSpec.to_config`)."""
    _check_spec(spec)
    doc = runs.config_to_dict(dataclasses.replace(spec, evals=()))
    doc.pop("evals")
    return doc


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def refuse_other_config(
    spec: RunSpec, run_dir, hint: str = "use another run directory or delete it"
) -> None:
    """Raise a one-line ``ValueError`` naming the differing fields when ``run_dir`` holds a
    ``config.json`` of another run (a file written before a field existed reads back with that
    field's default, so it is not "different" for the fields it lacks; a file of the layout before
    the run tree is migrated, :meth:`RunSpec.from_config`)."""
    run_dir = Path(run_dir)
    path = run_dir / runs.CONFIG
    if not path.is_file():
        return
    new = config_doc(spec)
    try:
        doc = runs.load_json(path)
        if doc == new:
            return
        old = _flat(config_doc(RunSpec.from_config(doc)))
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{run_dir} holds a run whose config.json cannot be read ({err}); {hint}"
        ) from err
    flat = _flat(new)
    fields = sorted(k for k in old.keys() | flat.keys() if old.get(k) != flat.get(k))
    if fields:
        shown = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
        raise ValueError(
            f"{run_dir} holds a run trained with a different config (differs in {shown}); {hint}"
        )


def build_model(spec: RunSpec, interval: tuple[float, float], device) -> torch.nn.Module:
    """A freshly initialised model of ``spec`` (initialisation seeded by ``spec.seed``) on
    ``device``: the model node built on the prior node (``d`` and ``sigma^2`` are the prior's)."""
    _check_spec(spec)
    interval = pair(interval, "interval")
    device = select_device(device)
    edges = torch.as_tensor(bin_edges(*interval, spec.model.C), dtype=torch.float64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        if spec.model.mixture:  # one head per prior component (pfntheory.nn.multihead_model)
            model: torch.nn.Module = MixturePFN(spec.model, edges, spec.task)
        else:
            model = PFNTransformer(spec.model, edges, spec.task)
    return model.to(device)


def weights_problem(spec: RunSpec, run_dir, metrics: dict) -> str | None:
    """What is wrong with a finished run's ``weights.pt`` for ``spec`` (None: nothing): it must
    load into the model ``spec`` builds (same tensors and shapes) and hold finite values only."""
    path = Path(run_dir) / runs.WEIGHTS
    try:
        state = runs.load_torch(path)
        model = build_model(spec, tuple(metrics["interval"]), "cpu")
        model.load_state_dict(state)
    except (runs.CorruptFileError, RuntimeError, KeyError, TypeError, ValueError) as err:
        return f"{path} does not fit the run's config: {str(err).splitlines()[0]}"
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return f"{path} holds non-finite weights"
    return None


def finished_problem(spec: RunSpec, run_dir, metrics: dict) -> str | None:
    """What keeps a run whose ``metrics.json`` says "completed" from being finished (None:
    nothing). One check for every artefact a finished run ships: ``weights.pt`` fits ``spec`` with
    finite values (:func:`weights_problem`), so does ``weights_last.pt`` of a weight-averaged run
    (it must be there), the learning curves end at the run's steps with values in range
    (:func:`pfntheory.infra.runs.curve_problems`), and the artefacts read
    (:func:`pfntheory.infra.runs. check_artefacts`: finite weights; the checkpoint is left to the
    resume that reads it)."""
    problem = weights_problem(spec, run_dir, metrics)
    if problem is None and spec.ema_decay > 0:
        run_dir = Path(run_dir)
        last = run_dir / WEIGHTS_LAST
        if not last.is_file():
            return f"{last} is missing (a weight-averaged run ships its last iterate too)"
        try:
            model = build_model(spec, tuple(metrics["interval"]), "cpu")
            model.load_state_dict(runs.load_torch(last))
        except (runs.CorruptFileError, RuntimeError, KeyError, TypeError, ValueError) as err:
            return f"{last} does not fit the run's config: {str(err).splitlines()[0]}"
        if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
            return f"{last} holds non-finite weights"
    problems = runs.check_artefacts(run_dir)
    problems.pop(runs.CHECKPOINT, None)  # not needed by a finished run (read by a resume)
    return problem or (next(iter(problems.values())) if problems else None)


def finished(spec: RunSpec, run_dir) -> bool:
    """Write (or check) ``config.json``; True when the run is finished and every artefact passes
    :func:`finished_problem`. Otherwise the weights and metrics are deleted (with a one-line
    :class:`RuntimeWarning` naming the file at fault), so that the training is redone; orphan
    temporary files of a killed write (older than a minute) are removed either way. (A corrupt
    checkpoint raises when read; the commands delete corrupt artefacts first,
    :func:`pfntheory.infra.runs.remove_corrupt_artefacts`.)"""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / runs.CONFIG
    if cfg_path.is_file():
        refuse_other_config(spec, run_dir)
    else:
        runs.save_json(cfg_path, config_doc(spec))
    runs.clean_orphan_temps(run_dir, min_age_s=60.0)
    if not ((run_dir / runs.WEIGHTS).is_file() and (run_dir / runs.METRICS).is_file()):
        return False
    done = runs.load_json(run_dir / runs.METRICS)
    if not (done.get("completed") and done.get("steps") == spec.steps):
        return False
    problem = finished_problem(spec, run_dir, done)
    if problem is None:
        return True
    # artefacts that do not fit the spec (another architecture, non-finite values, a missing last
    # iterate) do not make a finished run: they and the metrics go, and the training is redone
    for name in (runs.WEIGHTS, runs.METRICS, WEIGHTS_LAST):
        (run_dir / name).unlink(missing_ok=True)
    _redo_warning(run_dir, f"{problem}; training redoes the run")
    return False


def _redo_warning(run_dir: Path, message: str) -> None:
    """A one-line warning: attributed to the run directory, so no source line is printed."""
    warnings.warn_explicit(message, RuntimeWarning, str(run_dir), 0, module="pfntheory")


def read_config(run_dir) -> RunSpec:
    """The :class:`~pfntheory.infra.tree.RunSpec` of a run directory (either layout of
    ``config.json``, :meth:`RunSpec.from_config`)."""
    path = Path(run_dir) / runs.CONFIG
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {runs.CONFIG})")
    return RunSpec.from_config(runs.load_json(path))


def load_trained(run_dir, device="cpu") -> tuple[torch.nn.Module, RunSpec, dict]:
    """Load a finished run: ``(model in eval mode, spec, metrics)``; weights via
    ``weights_only``."""
    run_dir = Path(run_dir)
    spec = read_config(run_dir)
    if not (run_dir / runs.WEIGHTS).is_file() or not (run_dir / runs.METRICS).is_file():
        raise FileNotFoundError(
            f"{run_dir} holds no finished training (weights.pt / metrics.json missing)"
        )
    metrics = runs.load_json(run_dir / runs.METRICS)
    device = select_device(device)
    model = build_model(spec, tuple(metrics["interval"]), device)
    state = runs.load_torch(run_dir / runs.WEIGHTS, map_location=device)
    try:
        model.load_state_dict(state)
    except (RuntimeError, KeyError) as err:
        raise runs.CorruptFileError(
            f"{run_dir / runs.WEIGHTS} does not match the model of config.json: {err}"
        ) from err
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise runs.CorruptFileError(f"{run_dir / runs.WEIGHTS} holds non-finite weights")
    model.eval()
    return model, spec, metrics
