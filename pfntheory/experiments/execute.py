"""Executing one run: bring its directory to the finished state of its spec.

A trained run (:class:`~pfntheory.infra.tree.RunSpec`; its one spec file is ``config.json``, which
training writes; a ``spec.json`` beside it is read in directories made before), trains with
:func:`pfntheory.nn.train.train` (which skips a finished run and resumes a killed one from its
``checkpoint.pt``), or adopts an identical finished run of another experiment, evaluates every
:class:`~pfntheory.infra.tree.EvalSpec` not yet on disk with :func:`pfntheory.nn.evaluate.evaluate`
(which takes the spec whole), and deletes ``checkpoint.pt``. An exact-side run
(:class:`~.specs.StepsizeSpec`, :class:`~.specs.ExactPPDSpec`; fig:stepsize and the tables'
exact-PPD references) writes ``spec.json``, then ``result.json``. A latent-GP run
(:class:`~pfntheory.infra.latent_spec.LatentRunSpec`, whose spec file is ``latent_config.json``)
trains with :func:`pfntheory.nn.latent.train_latent`; the latent study's evaluation set
(:class:`~pfntheory.infra.latent_spec.LatentReferenceSpec`) is one file, built by
:func:`pfntheory.nn.latent_eval.build_reference`. The executor is looked up by the spec's type
(:data:`EXECUTORS`), as "complete" is (:data:`.state.COMPLETE`). Every file is written atomically
(temporary file + ``os.replace``), so a killed run leaves complete files only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pfntheory.base._checks import choice
from pfntheory.infra import runs as runfiles
from pfntheory.infra.config import LEARNING_CURVE_FILE
from pfntheory.infra.latent_spec import DESIGN, HELDOUT_FILE, LatentReferenceSpec, LatentRunSpec
from pfntheory.infra.tree import EvalSpec, RunSpec

from .specs import ExactPPDSpec, StepsizeSpec
from .state import (
    RESULT_FILE,
    SPEC_FILE,
    eval_complete,
    is_complete,
    is_trained,
    jsonable,
    read_spec_doc,
    spec_doc,
)

__all__ = ["BACKENDS", "EXECUTORS", "execute"]

BACKENDS = ("nn", "standin")


def _train_nn(spec: RunSpec, run_dir: Path) -> None:
    from pfntheory.nn.train import train

    train(spec, run_dir, progress=False)


def _evaluate_nn(run_dir: Path, ev: EvalSpec) -> None:
    import torch

    from pfntheory.nn.evaluate import evaluate
    from pfntheory.nn.oracle_store import from_environment

    # the instances and exact PPD computed once per grid (byte-identical results; issue 45)
    store = from_environment()
    evaluate(run_dir, ev, device="cuda" if torch.cuda.is_available() else "cpu", store=store)


def _config_name(run_dir: Path) -> str | None:
    """The name of the trained run whose ``config.json`` ``run_dir`` holds (None: no readable
    run tree there; a corrupt file is redone, and training refuses a readable one of another run
    naming the fields that differ)."""
    path = run_dir / runfiles.CONFIG
    if not path.is_file():
        return None
    try:
        return RunSpec.from_config(runfiles.load_json(path)).name
    except (runfiles.CorruptFileError, ValueError, TypeError):
        return None


def _backend(name: str):
    choice(name, "backend", BACKENDS)
    if name == "nn":
        return _train_nn, _evaluate_nn
    from . import _standin

    return _standin.train, _standin.evaluate


def _adopt(spec: RunSpec, run_dir: Path, root: Path) -> bool:
    """Copy an identical finished run from another experiment's directory instead of retraining:
    its config, metrics, weights (with the last iterate of a weight-averaged run, which a finished
    run must ship: without it the copy reads as unfinished and is trained again) and learning
    curves (``learning_curve*.json``, one per covariate design: the curve belongs to the
    training, which the shared name fixes), and each evaluation this experiment asks for that the
    other run already has."""
    curves = LEARNING_CURVE_FILE.replace(".json", "*.json")
    for other in sorted(root.glob(f"*/{spec.name}")):
        if other.resolve() == run_dir.resolve() or not is_trained(other, spec):
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        names = [runfiles.CONFIG, runfiles.METRICS, runfiles.WEIGHTS]
        if (other / runfiles.WEIGHTS_LAST).is_file():  # a weight-averaged run's last iterate
            names.append(runfiles.WEIGHTS_LAST)
        names += sorted(p.name for p in other.glob(curves))
        for f in names:
            runfiles.atomic_write_bytes(run_dir / f, (other / f).read_bytes())
        for ev in spec.evals:
            if eval_complete(other, ev) and not (run_dir / ev.filename).exists():
                runfiles.atomic_write_bytes(
                    run_dir / ev.filename, (other / ev.filename).read_bytes()
                )
        return True
    return False


def _execute_exact(spec, run_dir: Path) -> None:
    import numpy as np

    t0 = time.perf_counter()
    if isinstance(spec, StepsizeSpec):
        from pfntheory.infra.config import prior_components
        from pfntheory.maths.spectral import admissible_step_curve

        (kernel,), _ = prior_components(spec.task)
        task = spec.task
        c = admissible_step_curve(
            kernel, spec.ns, task.d, task.noise_var, spec.n_trials, np.random.default_rng(spec.seed)
        )
        body = {
            "ns": c.ns,
            "mean": c.mean,
            "std": c.std,
            "se": c.std / np.sqrt(spec.n_trials),
            "reference_1_over_n": c.reference,
            "limit": c.limit,
            "steps": c.steps,
        }
    elif isinstance(spec, ExactPPDSpec):
        from .reference import exact_ppd_reference

        body = exact_ppd_reference(
            spec.task,
            spec.n_eval,
            spec.n_instances,
            np.random.default_rng(spec.seed),
            levels=spec.levels,
        )
    else:  # pragma: no cover - guarded by execute
        raise ValueError(f"not an exact-side spec: {type(spec).__name__}")
    runfiles.save_json(
        run_dir / RESULT_FILE,
        {
            "spec": jsonable(spec.identity()),
            "wall_time_s": time.perf_counter() - t0,
            **body,
        },
    )


def _execute_trained(spec: RunSpec, run_dir: Path, backend: str, root: Path) -> str:
    """A trained run: train (or adopt) and evaluate (module docstring)."""
    old = read_spec_doc(run_dir / SPEC_FILE)  # only in directories made before config.json
    run_dir.mkdir(parents=True, exist_ok=True)
    runfiles.clean_orphan_temps(run_dir)
    if old is None:  # an unreadable spec.json of an earlier layout: nothing reads it again
        (run_dir / SPEC_FILE).unlink(missing_ok=True)
    status = "done"
    train_fn, eval_fn = _backend(backend)
    if backend == "nn":  # corrupt artefacts are removed, so that training redoes them
        for msg in runfiles.remove_corrupt_artefacts(run_dir):
            print(f"pfntheory sweep: {msg}; redoing it", flush=True)
    if not is_trained(run_dir, spec) and _adopt(spec, run_dir, root):
        status = "adopted"
    if not is_trained(run_dir, spec):
        train_fn(spec, run_dir)
    for ev in spec.evals:
        if not eval_complete(run_dir, ev):
            eval_fn(run_dir, ev)
    (run_dir / runfiles.CHECKPOINT).unlink(missing_ok=True)
    return status


def _execute_exact_run(spec, run_dir: Path, backend: str, root: Path) -> str:
    """An exact-side run: ``spec.json``, then ``result.json``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    runfiles.clean_orphan_temps(run_dir)
    runfiles.save_json(run_dir / SPEC_FILE, spec_doc(spec))
    _execute_exact(spec, run_dir)
    return "done"


def _execute_latent(spec: LatentRunSpec, run_dir: Path, backend: str, root: Path) -> str:
    """A latent-GP run (:func:`pfntheory.nn.latent.train_latent`: resumable from its checkpoint,
    refusing a directory of another spec); the learning curve's held-out set is read from (or
    written once to) the experiment folder's ``heldout_curve.json`` when the run's held-out draws
    are those of the committed design (:meth:`~pfntheory.infra.latent_spec.LatentRunSpec.
    heldout_key`), else drawn for the run. ``standin``: placeholder files, no training."""
    run_dir.mkdir(parents=True, exist_ok=True)
    runfiles.clean_orphan_temps(run_dir)
    if backend == "standin":
        from . import _standin

        _standin.train_latent(spec, run_dir)
        return "done"
    from pfntheory.nn import latent as nl

    held = None
    if spec.heldout_key() == DESIGN[0].heldout_key():
        cache = run_dir.parent / HELDOUT_FILE
        held = (
            nl.load_heldout(cache)
            if cache.is_file()
            else nl.save_heldout(nl.heldout_set(spec), cache)
        )
    nl.train_latent(spec, run_dir, held=held)
    (run_dir / runfiles.CHECKPOINT).unlink(missing_ok=True)
    return "done"


def _execute_latent_reference(
    spec: LatentReferenceSpec, path: Path, backend: str, root: Path
) -> str:
    """The latent study's evaluation set, one file at ``path``
    (:func:`pfntheory.nn.latent_eval.build_reference`); a file there of another spec is refused,
    never overwritten (delete it to rebuild)."""
    if path.exists():
        raise ValueError(
            f"{path} holds another evaluation set than {spec} (or is unreadable); delete it to "
            "build this one there"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    if backend == "standin":
        from . import _standin

        _standin.latent_reference(spec, path)
        return "done"
    from pfntheory.nn.latent_eval import build_reference

    build_reference(
        spec.task,
        path,
        n_eval=spec.n_eval,
        contexts=spec.contexts,
        seed=spec.seed,
        chains=spec.chains,
        samples=spec.samples,
    )
    return "done"


#: The executor of each spec type: ``fn(spec, run_dir, backend, root) -> status`` brings an
#: incomplete run to its finished state (:func:`execute` has already skipped a complete one).
EXECUTORS: dict[type, Callable[..., str]] = {
    RunSpec: _execute_trained,
    StepsizeSpec: _execute_exact_run,
    ExactPPDSpec: _execute_exact_run,
    LatentRunSpec: _execute_latent,
    LatentReferenceSpec: _execute_latent_reference,
}


def _executor_of(spec):
    fn = next((EXECUTORS[c] for c in type(spec).__mro__ if c in EXECUTORS), None)
    if fn is None:
        names = ", ".join(c.__name__ for c in EXECUTORS)
        raise ValueError(f"spec must be one of {names}, got {type(spec).__name__}")
    return fn


def execute(spec, run_dir, backend: str = "nn", root=None) -> dict:
    """Bring ``run_dir`` to the finished state of ``spec`` (idempotent, resumable).

    Parameters
    ----------
    spec : a spec type of :data:`EXECUTORS`
        RunSpec, StepsizeSpec, ExactPPDSpec (the paper's experiments), LatentRunSpec or
        LatentReferenceSpec (the latent-GP study; the latter's ``run_dir`` is its file's path).
    run_dir : path
    backend : {"nn", "standin"}
        ``nn``: :mod:`pfntheory.nn` training and evaluation; ``standin``: a seconds-long fake with
        the same files (plumbing tests, ``pfntheory sweep --dry-run``).
    root : path, optional
        Runs root searched for an identical finished run to adopt (default: ``run_dir``'s
        grandparent).

    Returns
    -------
    dict
        ``{"name", "status": "skipped"|"done"|"adopted", "seconds"}``; a complete run is skipped
        and nothing is written (an exact-side run's ``spec.json`` is rewritten when it differs).
    """
    run_fn = _executor_of(spec)
    choice(backend, "backend", BACKENDS)
    run_dir = Path(run_dir)
    root = Path(root) if root is not None else run_dir.parent.parent
    t0 = time.perf_counter()
    exact = isinstance(spec, (StepsizeSpec, ExactPPDSpec))
    if isinstance(spec, (RunSpec, StepsizeSpec, ExactPPDSpec)):
        spec_path = run_dir / SPEC_FILE
        old = read_spec_doc(spec_path)  # a trained run's spec.json: only in older directories
        held = old.get("name") if old is not None else _config_name(run_dir)
        if held is not None and held != spec.name:
            raise ValueError(f"{run_dir} holds the run {held!r}, not {spec.name!r}")
        if is_complete(spec, run_dir):
            if exact and old != jsonable(spec_doc(spec)):
                runfiles.save_json(spec_path, spec_doc(spec))
            return {"name": spec.name, "status": "skipped", "seconds": 0.0}
    elif is_complete(spec, run_dir):
        return {"name": spec.name, "status": "skipped", "seconds": 0.0}
    status = run_fn(spec, run_dir, backend, root)
    if not is_complete(spec, run_dir):
        raise RuntimeError(f"{run_dir}: the run returned but is incomplete")
    return {"name": spec.name, "status": status, "seconds": time.perf_counter() - t0}
