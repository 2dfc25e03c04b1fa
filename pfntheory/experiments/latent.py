"""The latent-GP classification study (beyond the paper: its Discussion, "latent GP models";
docs/latent.md) in the experiment registry: :data:`LATENT_GPC` declares the trained runs
(:class:`~pfntheory.infra.latent_spec.LatentRunSpec`) and the evaluation set
(:class:`~pfntheory.infra.latent_spec.LatentReferenceSpec`) at each scale, and this module says
when each is complete (:func:`latent_complete`, :func:`reference_complete`) and what it costs
(:func:`latent_seconds`). The executors are :mod:`.execute`'s (by spec type); the trainer is
:func:`pfntheory.nn.latent.train_latent`, the reference builder
:func:`pfntheory.nn.latent_eval.build_reference`.

The committed runs (``reports/runs/latent_gpc/``) are the cpu design: their directories, their
``latent_config.json`` (whose ``kind`` is the spec's type tag) and the shared ``reference.json``
and ``heldout_curve.json`` are read as they are; a sweep finds them complete and writes nothing.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from pfntheory.infra import runs as runfiles
from pfntheory.infra.latent_spec import (
    DESIGN,
    EXPERIMENT,
    LATENT_CONFIG,
    LatentReferenceSpec,
    LatentRunSpec,
    LatentTask,
    latent_spec_of,
)

from .design import Design, Experiment

__all__ = [
    "LATENT_GPC",
    "LATENT_COST",
    "latent_complete",
    "reference_complete",
    "latent_seconds",
]

#: Single-core seconds of the study (measured: the least-squares fit of the six committed runs'
#: ``wall_time_s``, 498-1683 s, to ``FIXED_S + steps * (STEP_S + STEP_L_S * L)``, within 13% of
#: each; the reference's 481 s for 64 contexts at n' = 32 and 64, 8 chains of 600 draws, over
#: ``contexts * chains * samples * sum(n'^2)``). An estimate for ``sweep --list``, not a bound.
LATENT_COST = {
    "FIXED_S": 274.7,
    "STEP_S": 0.1458,
    "STEP_L_S": 0.0669,
    "REFERENCE_S": 481.2 / (64 * 8 * 600 * (32**2 + 64**2)),
}

_QUICK_RUN = LatentRunSpec(
    task=LatentTask(n_min=8, n_max=16, n_query=4),
    L=2,
    width=8,
    hidden=8,
    steps=20,
    batch_size=8,
    curve_points=2,
    curve_instances=4,
    curve_n_eval=(16,),
)

#: The cpu design: :data:`~pfntheory.infra.latent_spec.DESIGN` (the six committed runs) and the
#: evaluation set they are scored on.
_CPU = Design(runs=(*DESIGN, LatentReferenceSpec()))

LATENT_GPC = Experiment(
    name=EXPERIMENT,
    labels=(),
    title=(
        "Beyond the paper (its Discussion, latent GP models): a PFN for binary GP classification "
        "against Laplace, EP and an elliptical-slice reference, at depths 4 and 16"
    ),
    claims=(
        "the trained PFN's E[TV] to the sampling reference below Laplace's",
        "depth 16 no worse than depth 4, each gated by budget doubling",
    ),
    quick=Design(
        runs=(_QUICK_RUN,),
        shrunk="one 20-step run of a 2-block model on contexts of 8-16 points; no evaluation set "
        "(the cpu design's takes about 8 minutes and lives in the one reference.json of the "
        "experiment's folder)",
    ),
    cpu=_CPU,
    paper=Design(
        runs=_CPU.runs,
        shrunk="the paper trains no latent-GP PFN; its scale is the cpu design",
    ),
)


def latent_complete(spec: LatentRunSpec, run_dir) -> bool:
    """Whether ``run_dir`` holds the finished run ``spec``: its ``latent_config.json`` reads back
    as ``spec``, ``metrics.json`` records all its steps as completed, and ``weights.pt`` and
    ``learning_curve.json`` are there (a stand-in run, ``standin`` in its metrics, needs no
    curve). An unreadable file is not complete (training then refuses or redoes it)."""
    run_dir = Path(run_dir)
    try:
        if latent_spec_of(runfiles.load_json(run_dir / LATENT_CONFIG), run_dir) != spec:
            return False
        done = runfiles.load_json(run_dir / runfiles.METRICS)
    except (runfiles.CorruptFileError, OSError):
        return False
    if not (isinstance(done, dict) and done.get("completed") and done.get("steps") == spec.steps):
        return False
    if not (run_dir / runfiles.WEIGHTS).is_file():
        return False
    return bool(done.get("standin")) or (run_dir / "learning_curve.json").is_file()


def _reference_record(spec: LatentReferenceSpec) -> dict:
    """What a reference file of ``spec`` records of it (the fields
    :func:`~pfntheory.nn.latent_eval.build_reference` writes, as read back)."""
    return {
        "task": asdict(spec.task),
        "seed": spec.seed,
        "chains": spec.chains,
        "samples": spec.samples,
    }


def reference_complete(spec: LatentReferenceSpec, path) -> bool:
    """Whether ``path`` is the evaluation set ``spec``: readable, of ``spec``'s task, seed, chains
    and draws, with ``spec.contexts`` contexts at every n' of ``spec.n_eval`` in order."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        doc = runfiles.load_json(path)
        if any(doc.get(k) != v for k, v in _reference_record(spec).items()):
            return False
        by_n = doc["by_n"]
        return [e["n"] for e in by_n] == list(spec.n_eval) and all(
            len(e["X"]) == spec.contexts for e in by_n
        )
    except (runfiles.CorruptFileError, KeyError, TypeError, AttributeError):
        return False


def latent_seconds(spec) -> float:
    """Estimated single-core seconds of a latent run or of the evaluation set
    (:data:`LATENT_COST`)."""
    c = LATENT_COST
    if isinstance(spec, LatentRunSpec):
        return c["FIXED_S"] + spec.steps * (c["STEP_S"] + c["STEP_L_S"] * spec.L)
    if isinstance(spec, LatentReferenceSpec):
        n2 = sum(n * n for n in spec.n_eval)
        return c["REFERENCE_S"] * spec.contexts * spec.chains * spec.samples * n2
    raise TypeError(f"spec must be a LatentRunSpec or LatentReferenceSpec, got {spec!r}"[:200])
