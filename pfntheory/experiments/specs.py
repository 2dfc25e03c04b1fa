"""The experiments' specs: a trained run is a :class:`pfntheory.infra.tree.RunSpec` (imported from
there, never through this module: one import path per class), an exact-side run (fig:stepsize, no
training) a :class:`StepsizeSpec`, the exact-PPD reference of a table an :class:`ExactPPDSpec`;
:func:`run_name` names the directory of each.

A directory is ``<readable prefix>-<hash>``: the first 10 hex digits of the SHA-256 of the canonical
JSON of the spec's :meth:`identity` (docs/design.md, "The run tree").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pfntheory.base._checks import (
    ArgumentTypeError,
    choice,
    float_tuple,
    instance_of,
    int_tuple,
    positive_int,
    seed_int,
)
from pfntheory.infra import runs
from pfntheory.infra.config import INTERVAL_LEVELS, SPEC_TASK_KINDS, TaskSpec
from pfntheory.infra.tree import RunSpec, spec_hash, task_identity

__all__ = ["StepsizeSpec", "ExactPPDSpec", "run_name"]


def _spec_task(task) -> None:
    """An experiment's prior: a :class:`TaskSpec` of one of the paper's families."""
    if not isinstance(task, TaskSpec):
        raise ArgumentTypeError(f"task must be a TaskSpec, got {type(task).__name__}")
    choice(task.kind, "task kind", SPEC_TASK_KINDS)


class _ExactSide:
    """Exact-side specs (no training): no evaluations; the whole spec is the identity that the run
    name hashes."""

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def evals(self) -> tuple:
        return ()

    def identity(self) -> dict:
        """The hashed identity of the directory: the whole spec."""
        return dataclasses.asdict(self)

    def record(self) -> dict:
        """What ``spec.json`` and ``result.json`` record: the identity."""
        return self.identity()


@dataclass(frozen=True)
class StepsizeSpec(_ExactSide):
    """fig:stepsize (exact side, no training): ``2/(lambda_1(G) + sigma^2)`` against ``n``.

    Computed by :func:`pfntheory.maths.spectral.admissible_step_curve` on the kernel and ``sigma^2``
    (``task.noise_var``) of the prior ``task`` (:func:`pfntheory.infra.config.prior_components`),
    averaged over ``n_trials`` designs ``x ~ N(0, I/d)``.

    Attributes
    ----------
    task : TaskSpec
        The prior: kind 'blr' (the linear kernel) or 'rbf', its ``d``, ``noise_var``, ``alpha`` and
        ``lengthscale``; its other fields at their defaults (the identity does not carry them).
    ns : tuple of int
        Context sizes ``n``.
    n_trials : int
        Designs drawn per ``n``.
    seed : int
        Seed of the designs.
    """

    task: TaskSpec
    ns: tuple[int, ...]
    n_trials: int
    seed: int = 0

    def __post_init__(self):
        instance_of(TaskSpec)(self.task, "task")
        choice(self.task.kind, "task kind", tuple(_STEPSIZE_KERNELS))
        for name, default in _STEPSIZE_FIXED_TASK.items():
            if getattr(self.task, name) != default:
                raise ValueError(
                    f"task.{name} must be {default!r} for fig:stepsize (its identity does not "
                    f"carry it), got {getattr(self.task, name)!r}"
                )
        object.__setattr__(self, "ns", int_tuple(self.ns, "ns"))
        positive_int(self.n_trials, "n_trials")
        seed_int(self.seed, "seed")

    @property
    def kernel(self) -> str:
        """The prior's kernel: 'linear' (task kind 'blr') or 'rbf'."""
        return _STEPSIZE_KERNELS[self.task.kind]

    def identity(self) -> dict:
        """The hashed identity, in the flat layout of the first runs (``kernel``, ``d``, ``ns``,
        ``n_trials``, ``noise_var``, ``alpha``, ``lengthscale``, ``seed``), so that their
        directories keep their names; also what ``spec.json`` and ``result.json`` record."""
        t = self.task
        return {
            "kernel": self.kernel,
            "d": t.d,
            "ns": self.ns,
            "n_trials": self.n_trials,
            "noise_var": t.noise_var,
            "alpha": t.alpha,
            "lengthscale": t.lengthscale,
            "seed": self.seed,
        }

    @classmethod
    def from_record(cls, doc: dict) -> StepsizeSpec:
        """Read :meth:`record` (the flat layout ``spec.json`` holds) back into the spec; the nested
        ``dataclasses.asdict`` form (a ``task`` dict) reads too."""
        if not isinstance(doc, dict):
            raise ArgumentTypeError(f"doc must be a dict, got {type(doc).__name__}")
        nested = isinstance(doc.get("task"), dict)
        keys = ("task", "ns", "n_trials", "seed") if nested else _STEPSIZE_RECORD_KEYS
        unknown = sorted(set(doc) - set(keys))
        missing = sorted({"kernel" if not nested else "task", "ns", "n_trials"} - set(doc))
        if unknown or missing:
            raise ValueError(
                f"doc must hold a StepsizeSpec record, got unknown keys {unknown} and missing "
                f"keys {missing}"
            )
        if nested:
            task = runs.dataclass_from_dict(TaskSpec, doc["task"])
        else:
            kinds = {k: kind for kind, k in _STEPSIZE_KERNELS.items()}
            prior = {k: doc[k] for k in ("d", "noise_var", "alpha", "lengthscale") if k in doc}
            task = TaskSpec(kind=kinds[choice(doc["kernel"], "kernel", tuple(kinds))], **prior)
        return cls(task, doc["ns"], doc["n_trials"], doc.get("seed", 0))

    @property
    def name(self) -> str:
        prefix = f"stepsize-{self.kernel}-d{self.task.d}-t{self.n_trials}"
        return f"{prefix}-{spec_hash(self.identity())}"


#: Task kinds of fig:stepsize and the name of their kernel in the run's identity.
_STEPSIZE_KERNELS = {"blr": "linear", "rbf": "rbf"}
#: Keys of a StepsizeSpec record (:meth:`StepsizeSpec.identity`).
_STEPSIZE_RECORD_KEYS = (
    "kernel",
    "d",
    "ns",
    "n_trials",
    "noise_var",
    "alpha",
    "lengthscale",
    "seed",
)
#: TaskSpec fields fig:stepsize does not read: they must keep these defaults.
_STEPSIZE_FIXED_TASK = {
    f.name: f.default
    for f in dataclasses.fields(TaskSpec)
    if f.name not in ("kind", "d", "noise_var", "alpha", "lengthscale")
}


def run_name(spec) -> str:
    """Directory name of a run (``spec.name``)."""
    instance_of(RunSpec, StepsizeSpec, ExactPPDSpec, what="RunSpec, StepsizeSpec or ExactPPDSpec")(
        spec, "spec"
    )
    return spec.name


@dataclass(frozen=True)
class ExactPPDSpec(_ExactSide):
    """The exact-PPD reference of a table (supp-tab:lengthscale-crps, supp-tab:hierarchical-gp).

    CRPS and central-interval coverage of the *true* posterior predictive on contexts drawn from
    ``task``: what a perfectly trained model would score. Computed by
    :func:`pfntheory.experiments.reference.exact_ppd_reference` (float64 NumPy, no training).
    """

    task: TaskSpec
    n_eval: tuple[int, ...]
    n_instances: int
    levels: tuple[float, ...] = INTERVAL_LEVELS
    seed: int = 2024

    def identity(self) -> dict:
        """The hashed identity: the whole spec, the prior's late fields left out at their
        defaults (:func:`pfntheory.infra.tree.task_identity`)."""
        return dataclasses.asdict(self) | {"task": task_identity(self.task)}

    def __post_init__(self):
        _spec_task(self.task)
        int_tuple(self.n_eval, "n_eval")
        positive_int(self.n_instances, "n_instances")
        float_tuple(self.levels, "levels", unit=True)
        seed_int(self.seed, "seed")

    @property
    def name(self) -> str:
        return f"exact-ppd-{self.task.slug()}-i{self.n_instances}-{spec_hash(self.identity())}"
