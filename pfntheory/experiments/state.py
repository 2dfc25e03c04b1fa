"""The state of a run directory: where a run lives, whether it is finished, how far it got.

A run lands in ``<root>/<experiment>/<run name>/`` (``root`` defaults to ``reports/runs`` of the
repository; the name is a readable prefix plus a hash of the training config, :mod:`.specs`).
The files of a run and what "complete" means are in docs/design.md, "Runs: tree, identity,
artefacts".
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

from pfntheory.base._checks import ArgumentTypeError, instance_of
from pfntheory.infra import runs as runfiles
from pfntheory.infra.config import curve_file
from pfntheory.infra.latent_spec import LatentReferenceSpec, LatentRunSpec
from pfntheory.infra.tree import RunSpec, canonical_json

from .cost import PARTS, _seconds, curve_terms, eval_terms, training_terms
from .definitions import get_experiment
from .latent import latent_complete, reference_complete
from .specs import ExactPPDSpec, StepsizeSpec

__all__ = [
    "Spec",
    "SPEC_TYPES",
    "COMPLETE",
    "SPEC_FILE",
    "RESULT_FILE",
    "default_root",
    "run_dir_of",
    "spec_doc",
    "read_spec_doc",
    "jsonable",
    "eval_complete",
    "is_trained",
    "is_complete",
    "plan",
    "with_eval_oracle",
    "partial_progress",
    "remaining_parts",
]

#: A run of an experiment: trained (RunSpec) or exact-side (StepsizeSpec, ExactPPDSpec), or of a
#: study (LatentRunSpec, LatentReferenceSpec: :data:`.definitions.STUDIES`).
Spec = RunSpec | StepsizeSpec | ExactPPDSpec | LatentRunSpec | LatentReferenceSpec
#: The spec classes by the name ``spec.json`` records as its ``type``.
SPEC_TYPES = {c.__name__: c for c in (RunSpec, StepsizeSpec, ExactPPDSpec)}

SPEC_FILE = "spec.json"
RESULT_FILE = "result.json"


def default_root() -> Path:
    """``$PFNTHEORY_RUNS`` if set, else ``reports/runs`` of the repository holding this package
    (an editable install), else ``./reports/runs``."""
    env = os.environ.get("PFNTHEORY_RUNS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").is_file():
        return repo / "reports" / "runs"
    return Path.cwd() / "reports" / "runs"


def run_dir_of(experiment: str, spec, root=None) -> Path:
    """``<root>/<experiment>/<spec.name>``."""
    if not isinstance(experiment, str) or not experiment:
        raise ArgumentTypeError(f"experiment must be an experiment's name, got {experiment!r}")
    if not isinstance(getattr(spec, "name", None), str):
        raise ArgumentTypeError(f"spec must be a run's spec (with a name), got {spec!r}")
    return Path(root if root is not None else default_root()) / experiment / spec.name


def spec_doc(spec) -> dict:
    """What ``spec.json`` holds: the spec's type, name and fields."""
    return {"type": type(spec).__name__, "name": spec.name, "spec": spec.record()}


def eval_complete(run_dir: Path, ev) -> bool:
    """Whether ``run_dir`` holds the evaluation ``ev`` (a :class:`~pfntheory.infra.tree.EvalSpec`):
    its file, readable, with the same seed and number of instances and a result for every n'. The
    oracle is not compared: both compute the same PPD (mu and tau within 1e-10; docs/speed.md), the
    file records which one made it, and a sweep with another oracle (``--eval-oracle``) never redoes
    a committed evaluation."""
    path = run_dir / ev.filename
    if not path.is_file():
        return False
    try:
        doc = runfiles.load_json(path)
    except runfiles.CorruptFileError:
        return False
    if doc.get("seed") != ev.seed or doc.get("n_instances") != ev.n_instances:
        return False
    return all(str(n) in doc.get("results", {}) for n in ev.n_eval)


def _weights_readable(path: Path) -> bool:
    """Cheap torch-free check of a ``torch.save`` file: a zip archive whose CRCs all match."""
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def is_trained(run_dir: Path, spec: RunSpec) -> bool:
    """Whether ``run_dir`` holds the finished training of ``spec``: metrics of all its steps,
    readable, finite weights (both files of a weight-averaged run) and, when the spec asks for
    them, finished learning curves; every artefact passes
    :func:`pfntheory.infra.runs.check_artefacts` (the check training applies before it calls a run
    finished)."""
    m = run_dir / runfiles.METRICS
    w = run_dir / runfiles.WEIGHTS
    if not (m.is_file() and w.is_file()):
        return False
    try:
        doc = runfiles.load_json(m)
    except runfiles.CorruptFileError:
        return False
    if not isinstance(doc, dict) or not (doc.get("completed") and doc.get("steps") == spec.steps):
        return False
    if doc.get("standin"):  # stand-in runs (plumbing tests, --dry-run): placeholder bytes
        return True
    if spec.curve_n_eval:  # the learning curves that gate its verdicts, finished and schema 1
        names = [curve_file(c) for c in (None, *spec.curve_covariates)]
        if any(not (run_dir / n).is_file() for n in names):
            return False
    if spec.ema_decay > 0 and not (run_dir / runfiles.WEIGHTS_LAST).is_file():
        return False  # a weight-averaged run ships its last iterate too
    # the one artefact check of a finished run (as training's): finite weights in both weight
    # files, curves in range and ending at the run's steps, a checkpoint within its steps
    # (the torch-free zip check first: a corrupt archive needs no torch loads)
    return _weights_readable(w) and not runfiles.check_artefacts(run_dir)


def _trained_complete(spec: RunSpec, run_dir: Path) -> bool:
    return is_trained(run_dir, spec) and all(eval_complete(run_dir, ev) for ev in spec.evals)


def _exact_complete(spec, run_dir: Path) -> bool:
    path = run_dir / RESULT_FILE
    if not path.is_file():
        return False
    try:
        return runfiles.load_json(path).get("spec") == jsonable(spec.identity())
    except runfiles.CorruptFileError:
        return False


#: What "complete" means, by spec type (the executors are :data:`.execute.EXECUTORS`, by the same
#: types): a trained run is trained with every evaluation on disk; an exact-side run has the
#: ``result.json`` of its spec; a latent run (:func:`.latent.latent_complete`) its finished files;
#: the latent evaluation set (one file: its "run directory" is the file's path) the draws of its
#: spec.
COMPLETE: dict[type, Callable[..., bool]] = {
    RunSpec: _trained_complete,
    StepsizeSpec: _exact_complete,
    ExactPPDSpec: _exact_complete,
    LatentRunSpec: latent_complete,
    LatentReferenceSpec: reference_complete,
}


def is_complete(spec, run_dir) -> bool:
    """Whether ``run_dir`` holds the finished run ``spec`` (:data:`COMPLETE` of its type: trained
    and every evaluation on disk, or the result of its spec)."""
    check = next((COMPLETE[c] for c in type(spec).__mro__ if c in COMPLETE), None)
    if check is None:
        names = ", ".join(c.__name__ for c in COMPLETE)
        raise ArgumentTypeError(f"spec must be one of {names}, got {type(spec).__name__}")
    return check(spec, Path(run_dir))


def jsonable(d):
    """``d`` as it reads back from a JSON file (the canonical form
    :func:`pfntheory.infra.tree.canonical_json` writes)."""
    return json.loads(canonical_json(d))


def read_spec_doc(path: Path) -> dict | None:
    """``spec.json`` of a run directory, or None when it is absent or unreadable (a corrupt file is
    rewritten from the spec, like any other corrupt file of a run; the directory name, which is the
    spec's hash, already identifies the run)."""
    if not path.is_file():
        return None
    try:
        return runfiles.load_json(path)
    except runfiles.CorruptFileError:
        return None


def with_eval_oracle(spec: Spec, oracle: str | None) -> Spec:
    """``spec`` with every evaluation's :attr:`~pfntheory.infra.tree.EvalSpec.oracle` set to
    ``oracle`` (None: ``spec`` as declared). The run's name and ``spec.json`` do not change (neither
    records the oracle); an exact-side spec has no evaluations and is returned as is."""
    if oracle is None or not isinstance(spec, RunSpec):
        return spec
    evals = tuple(dataclasses.replace(ev, oracle=oracle) for ev in spec.evals)
    return dataclasses.replace(spec, evals=evals)


def plan(
    experiment: str, scale: str = "quick", root=None, *, eval_oracle: str | None = None
) -> list[tuple[Spec, Path, bool]]:
    """``(spec, run_dir, complete)`` for every run of ``experiment`` at ``scale``; with
    ``eval_oracle``, the evaluations of each spec use that oracle (:func:`with_eval_oracle`)."""
    exp = get_experiment(experiment)
    root = Path(root) if root is not None else default_root()
    specs = [with_eval_oracle(s, eval_oracle) for s in exp.runs(scale)]
    return [
        (s, run_dir_of(exp.name, s, root), is_complete(s, run_dir_of(exp.name, s, root)))
        for s in specs
    ]


def partial_progress(spec, run_dir) -> str | None:
    """How far an unfinished trained run has got, from its ``checkpoint.pt`` (None: no checkpoint,
    or not a trained run). A checkpoint committed at the end of one session lets the next resume
    the run bitwise (docs/scales.md, "Runs longer than a session"); ``sweep --list`` shows it as
    ``part``."""
    ckpt = Path(run_dir) / "checkpoint.pt"
    if not isinstance(spec, (RunSpec, LatentRunSpec)) or not ckpt.is_file():
        return None
    try:
        doc = runfiles.load_torch(ckpt)
        step, wall = int(doc["step"]), float(doc["wall_time"])
    except (runfiles.CorruptFileError, KeyError, TypeError, ValueError) as err:
        return f"checkpoint unreadable, the run restarts: {err}"
    return f"checkpoint at step {step} of {spec.steps}, {wall / 60:.0f} min trained"


def remaining_parts(spec: RunSpec, run_dir, *, oracle_cached: bool = False) -> dict[str, float]:
    """:func:`.cost.run_parts` of what is left to do of ``spec`` in ``run_dir``: nothing of a
    trained run's training and curves, the steps and curve points after a checkpoint's step, and
    the evaluations not on disk (what a sweep's worker is about to spend; ``oracle_cached`` as in
    :func:`.cost.run_parts`)."""
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(f"spec must be a RunSpec (a trained run), got {spec!r}"[:200])
    if not isinstance(run_dir, (str, os.PathLike)):
        raise ArgumentTypeError(f"run_dir must be a path, got {type(run_dir).__name__}")
    run_dir = Path(run_dir)
    instance_of(bool)(oracle_cached, "oracle_cached")
    parts = dict.fromkeys(PARTS, 0.0)
    if not is_trained(run_dir, spec):
        start = 0
        ckpt = run_dir / runfiles.CHECKPOINT
        if ckpt.is_file():
            try:
                start = min(max(int(runfiles.load_torch(ckpt)["step"]), 0), spec.steps)
            except (runfiles.CorruptFileError, KeyError, TypeError, ValueError):
                start = 0  # unreadable: training restarts
        steps = dict(training_terms(spec))
        run_s = steps.pop("RUN_S")
        parts["training"] = _seconds({"RUN_S": run_s}) + _seconds(steps) * (1 - start / spec.steps)
        parts["curves"] = _seconds(curve_terms(spec, after=start if start else None))
    for e in spec.evals:
        if not eval_complete(run_dir, e):
            one = dataclasses.replace(spec, evals=(e,))
            parts["evaluation"] += _seconds(eval_terms(one, oracle_cached=oracle_cached))
    return parts
