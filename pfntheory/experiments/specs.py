"""Frozen specifications of one run of an experiment, and how a run's directory is named.

A trained run is a :class:`RunSpec`: the prior it is pretrained on (:class:`TaskSpec`), the
transformer (:class:`ModelSpec`), the optimisation budget, and the evaluations to perform once it is
trained (:class:`EvalSpec`). An exact-side run (fig:stepsize, no training) is a
:class:`StepsizeSpec`.

The directory of a run is ``<readable prefix>-<hash>``, where the hash is the first 10 hex digits of
the SHA-256 of the canonical JSON (sorted keys, no whitespace) of the *training* part of the spec.
Two different training configurations therefore never share a directory; the evaluations are stored
beside the weights, each file recording the :class:`EvalSpec` it was computed with, so changing an
evaluation re-evaluates without retraining.

The prior and the architecture are :class:`pfntheory.config.TaskSpec` and
:class:`pfntheory.config.ModelSpec`, the torch-free bases of the nn layer's ``TaskConfig`` and
``ModelConfig`` (one definition each, no mirror); :meth:`RunSpec.train_config` builds the
``TrainConfig`` lazily, so this module imports without torch. Every field the paper fixes is a field
of the spec (never left to a default of the training loop), so the hash identifies the experiment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
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
    sequence,
)
from .._checks import context_groups as check_context_groups
from ..config import (
    BATCH_SIZE,
    COVARIATES,
    LEARNING_CURVE_SEED,
    LR_UNITS,
    SPEC_TASK_KINDS,
    ModelSpec,
    TaskSpec,
)

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


def _exact_type(value, name: str, cls: type) -> None:
    """Refuse anything but ``cls`` itself: a subclass (the nn layer's TaskConfig / ModelConfig)
    carries more fields, which would enter the hashed identity of the run."""
    if type(value) is not cls:
        raise ArgumentTypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")


def _spec_task(task) -> None:
    """An experiment's prior: a :class:`TaskSpec` of one of the paper's families."""
    _exact_type(task, "task", TaskSpec)
    choice(task.kind, "task kind", SPEC_TASK_KINDS)


def canonical_json(obj) -> str:
    """Canonical JSON of a (nested) dataclass: sorted keys, no whitespace, tuples as lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = dataclasses.asdict(obj)
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:  # an object JSON cannot hold, a NaN, unsortable keys
        raise ArgumentTypeError(
            f"obj must be a JSON-serialisable value (finite numbers, str keys), got: {err}"
        ) from err


def spec_hash(obj, length: int = 10) -> str:
    """First ``length`` hex digits (1 to 64) of the SHA-256 of :func:`canonical_json`."""
    length = positive_int(length, "length", maximum=64)
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


@dataclass(frozen=True)
class EvalSpec:
    """One evaluation of a trained run (:func:`pfntheory.nn.evaluate.evaluate`).

    Written to ``eval.json`` (covariates as trained) or ``eval_<covariates>.json`` (covariate shift)
    in the run directory; the file records its settings, and per n' the mean and standard error of
    every metric.

    Attributes
    ----------
    n_eval : tuple of int
        Evaluation context sizes n'.
    n_instances : int
        Evaluation instances per n'.
    seed : int
        Seed of the evaluation set. The instances depend only on (seed, n'), so every run of one
        task is scored on the same instances.
    covariates : str or None
        Override of the task's covariate law at evaluation (covariate shift); None keeps it.
    """

    n_eval: tuple[int, ...]
    n_instances: int
    seed: int = 12345
    covariates: str | None = None

    def __post_init__(self):
        int_tuple(self.n_eval, "n_eval")  # non-empty, each >= 1
        positive_int(self.n_instances, "n_instances", minimum=2)
        seed_int(self.seed, "seed")
        if self.covariates is not None:
            choice(self.covariates, "covariates", COVARIATES)

    @property
    def filename(self) -> str:
        """``eval.json``, or ``eval_<covariates>.json`` under a covariate override."""
        return "eval.json" if self.covariates is None else f"eval_{self.covariates}.json"


@dataclass(frozen=True)
class RunSpec:
    """One trained run: prior, model, pretraining range and budget (supp-tab:pretraining
    hyperparameters), and its evaluations.

    Only :meth:`training` (everything but ``evals``) enters the directory hash.
    """

    task: TaskSpec
    model: ModelSpec
    n_min: int
    n_max: int
    steps: int
    lr: float
    batch_size: int = BATCH_SIZE
    seed: int = 0
    evals: tuple[EvalSpec, ...] = ()
    lr_units: str = "absolute"
    curve_n_eval: tuple[int, ...] = ()
    curve_instances: int = 256
    curve_covariates: tuple[str, ...] = ()
    context_groups: int = 1
    curve_points: int = 12
    ema_decay: float = 0.0

    def __post_init__(self):
        _spec_task(self.task)
        _exact_type(self.model, "model", ModelSpec)
        positive_int(self.n_min, "n_min")
        positive_int(self.n_max, "n_max")
        if self.n_min > self.n_max:
            raise ValueError(f"n_min <= n_max is required, got {self.n_min} > {self.n_max}")
        positive_int(self.steps, "steps")
        positive_scalar(self.lr, "lr")
        positive_int(self.batch_size, "batch_size")
        check_context_groups(self.context_groups, self.batch_size)
        choice(self.lr_units, "lr_units", LR_UNITS)
        seed_int(self.seed, "seed")
        int_tuple(self.curve_n_eval, "curve_n_eval", non_empty=False)
        for c in sequence(self.curve_covariates, "curve_covariates", non_empty=False):
            choice(c, "curve_covariates", COVARIATES)
        for e in sequence(self.evals, "evals", non_empty=False):
            instance_of(EvalSpec)(e, "evals")
        positive_int(self.curve_instances, "curve_instances", minimum=2)
        positive_int(self.curve_points, "curve_points", minimum=2)
        if not 0 <= positive_scalar(self.ema_decay, "ema_decay", allow_zero=True) < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {self.ema_decay}")
        names = [e.filename for e in self.evals]
        if len(set(names)) != len(names):
            raise ValueError(f"evals must write distinct files, got {names}")
        if any(e.covariates == self.task.covariates for e in self.evals):
            raise ValueError("an eval's covariates override must differ from the task's (use None)")

    def training(self) -> dict:
        """The training part of the spec (the hashed identity of the run directory)."""
        d = dataclasses.asdict(self)
        d.pop("evals")
        # fields added after the first runs: left out of the hash at their old default, so the
        # directories of those runs keep their names
        for name, default in _LATE_DEFAULTS.items():
            if d[name] == default:
                d.pop(name)
        for name, default in _LATE_MODEL_DEFAULTS.items():
            if d["model"][name] == default:
                d["model"].pop(name)
        return d

    @property
    def name(self) -> str:
        """``<task>-<model>-n<n_min>-<n_max>-s<steps>-<hash>`` (see the module docstring)."""
        return (
            f"{self.task.slug()}-{self.model.slug()}-n{self.n_min}-{self.n_max}"
            f"-s{self.steps}-{spec_hash(self.training())}"
        )

    def train_config(self, device: str = "auto", checkpoint_every: int = 200):
        """The ``pfntheory.nn.train.TrainConfig`` of this run (imports torch)."""
        from pfntheory.nn.train import TrainConfig

        model = self.model.to_nn(self.task.d, self.task.noise_var)
        curve: dict[str, Any] = {}
        if self.curve_n_eval:
            curve = dict(
                curve_n_eval=tuple(self.curve_n_eval),
                curve_instances=self.curve_instances,
                curve_points=self.curve_points,
                curve_seed=LEARNING_CURVE_SEED,
                curve_covariates=tuple(self.curve_covariates),
            )
        return TrainConfig(
            task=self.task.to_nn(),
            model=model,
            n_min=self.n_min,
            n_max=self.n_max,
            steps=self.steps,
            lr=self.lr,
            batch_size=self.batch_size,
            seed=self.seed,
            checkpoint_every=checkpoint_every,
            device=device,
            lr_units=self.lr_units,
            context_groups=self.context_groups,
            ema_decay=self.ema_decay,
            **curve,
        )


#: RunSpec fields that are omitted from the hashed identity when they hold these values.
_LATE_DEFAULTS = {
    "lr_units": "absolute",
    "curve_n_eval": (),
    "curve_instances": 256,
    "curve_covariates": (),
    "context_groups": 1,
    "curve_points": 12,
    "ema_decay": 0.0,
}
#: ModelSpec fields omitted from the hashed identity when they hold these values.
_LATE_MODEL_DEFAULTS = {"mixture": False}


class _ExactSide:
    """Exact-side specs (no training): no evaluations; the whole spec is the "training" config that
    the run name hashes."""

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def evals(self) -> tuple:
        return ()

    def training(self) -> dict:
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
        return f"stepsize-{self.kernel}-d{self.d}-t{self.n_trials}-{spec_hash(self.training())}"


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

    def __post_init__(self):
        _spec_task(self.task)
        int_tuple(self.n_eval, "n_eval")
        positive_int(self.n_instances, "n_instances")
        float_tuple(self.levels, "levels", unit=True)
        seed_int(self.seed, "seed")

    @property
    def name(self) -> str:
        return f"exact-ppd-{self.task.slug()}-i{self.n_instances}-{spec_hash(self.training())}"
