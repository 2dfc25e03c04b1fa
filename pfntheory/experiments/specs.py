"""The experiments' specs: a trained run is a :class:`pfntheory.tree.RunSpec` (re-exported here
with its nodes), an exact-side run (fig:stepsize, no training) a :class:`StepsizeSpec`, the
exact-PPD reference of a table an :class:`ExactPPDSpec`; :func:`run_name` names the directory of
each.

A directory is ``<readable prefix>-<hash>``: the first 10 hex digits of the SHA-256 of the canonical
JSON of the spec's :meth:`identity` (docs/design.md, "The run tree").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .. import DEFAULT_NOISE_VAR
from .._checks import (
    ArgumentTypeError,
    choice,
    float_tuple,
    instance_of,
    int_tuple,
    positive_int,
    positive_scalar,
    seed_int,
)
from ..config import SPEC_TASK_KINDS, ModelSpec, TaskSpec
from ..tree import EvalSpec, RunSpec, canonical_json, spec_hash, task_identity

__all__ = [
    "TaskSpec",
    "ModelSpec",
    "EvalSpec",
    "RunSpec",
    "StepsizeSpec",
    "ExactPPDSpec",
    "canonical_json",
    "spec_hash",
    "run_name",
]


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


@dataclass(frozen=True)
class StepsizeSpec(_ExactSide):
    """fig:stepsize (exact side, no training): ``2/(lambda_1(G) + sigma^2)`` against ``n``.

    Computed by :func:`pfntheory.spectral.admissible_step_curve`, averaged over
    ``n_trials`` designs.
    """

    kernel: str
    d: int
    ns: tuple[int, ...]
    n_trials: int
    noise_var: float = DEFAULT_NOISE_VAR
    alpha: float = 1.0
    lengthscale: float = 0.8
    seed: int = 0

    def __post_init__(self):
        choice(self.kernel, "kernel", ("linear", "rbf"))
        positive_int(self.d, "d")
        positive_int(self.n_trials, "n_trials")
        positive_scalar(self.noise_var, "noise_var")
        positive_scalar(self.alpha, "alpha")
        positive_scalar(self.lengthscale, "lengthscale")
        seed_int(self.seed, "seed")
        int_tuple(self.ns, "ns")

    @property
    def name(self) -> str:
        return f"stepsize-{self.kernel}-d{self.d}-t{self.n_trials}-{spec_hash(self.identity())}"


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
    levels: tuple[float, ...] = (0.5, 0.9, 0.95)
    seed: int = 2024

    def identity(self) -> dict:
        """The hashed identity: the whole spec, the prior's late fields left out at their
        defaults (:func:`pfntheory.tree.task_identity`)."""
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
