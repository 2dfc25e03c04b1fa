"""The run tree: one frozen dataclass per node of a trained run, and its identity (torch-free).

:class:`RunSpec` is the root: the prior (:class:`pfntheory.infra.config.TaskSpec`), the model
(:class:`pfntheory.infra.config.ModelSpec`), the training settings as its own fields, and the
evaluations (:class:`EvalSpec`). :func:`pfntheory.nn.train.train` takes it; the CLI, the experiment
definitions and the case studies build only it. A run's directory name is :attr:`RunSpec.name`, a
hash of :meth:`RunSpec.identity`; ``config.json`` is :meth:`RunSpec.to_config` and reads back with
:meth:`RunSpec.from_config` (which migrates the layout written before the tree). Implements the
settings of sec:sims and supp-sec:exp details; the layout is explained in docs/design.md,
"The run tree".
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from dataclasses import dataclass

from pfntheory.base._checks import (
    ArgumentTypeError,
    choice,
    instance_of,
    int_tuple,
    interval,
    positive_int,
    positive_scalar,
    probability,
    seed_int,
    sequence,
)
from pfntheory.base._checks import context_groups as check_context_groups

from . import runs
from .config import (
    BATCH_SIZE,
    CLIP_NORM,
    COVARIATES,
    LEARNING_CURVE_SEED,
    LR_UNITS,
    MIN_LR_RATIO,
    WARMUP_FRAC,
    ModelSpec,
    TaskSpec,
)

__all__ = [
    "EVAL_ORACLES",
    "EVAL_SEED",
    "EvalSpec",
    "RunSpec",
    "canonical_json",
    "spec_hash",
    "task_identity",
]

#: Oracles of an evaluation (:attr:`EvalSpec.oracle`): how the instances and their exact PPD are
#: computed (docs/speed.md, "Fast numerics").
EVAL_ORACLES = ("float64", "float32")
#: Seed of the evaluation instances of every run (:attr:`EvalSpec.seed`), shared by all runs so
#: that the runs of one task are scored on the same instances.
EVAL_SEED = 12345


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


def _defaults(cls, names: tuple[str, ...]) -> dict:
    """``{name: default}`` of the fields ``names`` of the dataclass ``cls``: the late-default
    tables below name fields, and their values are the dataclasses' own defaults (stated once)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = {}
    for name in names:
        f = fields[name]
        if f.default is dataclasses.MISSING:  # pragma: no cover - a table names a required field
            raise TypeError(f"{cls.__name__}.{name} has no default to leave out")
        out[name] = f.default
    return out


def _drop_defaults(node: dict, defaults: dict) -> None:
    """Remove from ``node`` the keys of ``defaults`` that hold their default value."""
    for name, default in defaults.items():
        if name in node and node[name] == default:
            node.pop(name)


def task_identity(task: TaskSpec) -> dict:
    """The prior's part of a hashed identity: its fields, those added after the first runs left out
    at their defaults (:data:`_LATE_TASK_FIELDS`)."""
    d = dataclasses.asdict(instance_of(TaskSpec)(task, "task"))
    _drop_defaults(d, _defaults(TaskSpec, _LATE_TASK_FIELDS))
    return d


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
    oracle : {"float64", "float32"}
        How the instances and their exact PPD are computed (:data:`EVAL_ORACLES`): ``sample_batch``
        in float64 (every committed evaluation), or the float32 factor refined to float64 accuracy
        (:func:`pfntheory.nn.fast_oracle.sample_batch_fast`; docs/speed.md, "Fast numerics").
        ``"float32"`` is recorded in the evaluation file's settings. ``spec.json`` does not record
        it: the evaluation file says how it was made, and either oracle's file completes the
        evaluation (:func:`pfntheory.experiments.state.eval_complete`).
    """

    n_eval: tuple[int, ...]
    n_instances: int
    seed: int = EVAL_SEED
    covariates: str | None = None
    oracle: str = "float64"

    def __post_init__(self):
        object.__setattr__(self, "n_eval", int_tuple(self.n_eval, "n_eval"))  # non-empty, >= 1
        positive_int(self.n_instances, "n_instances", minimum=2)
        seed_int(self.seed, "seed")
        if self.covariates is not None:
            choice(self.covariates, "covariates", COVARIATES)
        choice(self.oracle, "oracle", EVAL_ORACLES)

    @property
    def filename(self) -> str:
        """``eval.json``, or ``eval_<covariates>.json`` under a covariate override."""
        return "eval.json" if self.covariates is None else f"eval_{self.covariates}.json"


@dataclass(frozen=True)
class RunSpec:
    """One trained run: prior, model, pretraining range and budget (supp-tab:pretraining
    hyperparameters), the optimiser (supp-sec:exp details), the learning curve, and its
    evaluations.

    Attributes
    ----------
    task : TaskSpec
        The prior; the model takes ``d`` and ``sigma^2`` (``task.noise_var``) from it.
    model : ModelSpec
    n_min, n_max : int
        Pretraining context sizes ``n ~ Unif{n_min..n_max}`` per batch (per group).
    steps : int
        Optimiser steps ``N``.
    lr : float
        ``LR_base``.
    batch_size, warmup_frac, min_lr_ratio, clip_norm
        supp-sec:exp details: 128, 5%, 0.1, 1.0.
    seed : int
        Seeds the model initialisation and the data stream.
    evals : tuple of EvalSpec
        Evaluations of the trained run (not part of its identity).
    lr_units : {"absolute", "relative", "elementwise"}
        :data:`pfntheory.infra.config.LR_UNITS` (docs/design.md, "Sample efficiency").
    curve_n_eval, curve_instances, curve_points, curve_seed, curve_covariates
        The learning curve (:mod:`pfntheory.nn.curve`): held-out n' (empty: none), instances per
        n', log-spaced points, seed of the held-out set, further covariate laws.
    context_groups : int
        ``G`` context sizes per step (docs/design.md, "Mixed context sizes").
    ema_decay : float
        ``0``: the run is its last iterate; ``beta in (0, 1)``: an exponential weight average
        (:func:`pfntheory.nn.train.ema_decay_at`; docs/verdicts.md, "Weight averaging").
    fast_numerics : bool
        ``False``: the arithmetic of every committed run (bit for bit). ``True``: the same maths in
        a faster order of rounding: training batches drawn by the fused GP draw
        (:func:`pfntheory.nn.priors.sample_batch` ``fast=True``) and the fused solver stack's
        pairwise loops (each context-context kernel entry once); the held-out curve and the
        evaluations are drawn as before (docs/speed.md, "Fast numerics").
    interval : (a, b), optional
        Truncation interval; ``None`` calibrates it (sec:sims) with ``calib_instances`` instances,
        ``outside_mass`` and ``calib_seed`` (fixed across runs, so runs on one task share it).
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
    fast_numerics: bool = False
    warmup_frac: float = WARMUP_FRAC
    min_lr_ratio: float = MIN_LR_RATIO
    clip_norm: float = CLIP_NORM
    curve_seed: int = LEARNING_CURVE_SEED
    interval: tuple[float, float] | None = None
    outside_mass: float = 0.002
    calib_instances: int = 2000
    calib_seed: int = 0

    def __post_init__(self):
        instance_of(TaskSpec)(self.task, "task")
        instance_of(ModelSpec)(self.model, "model")
        positive_int(self.n_min, "n_min")
        positive_int(self.n_max, "n_max")
        if self.n_min > self.n_max:
            raise ValueError(
                f"n_min <= n_max is required, got n_min={self.n_min}, n_max={self.n_max}"
            )
        for name in ("steps", "batch_size", "calib_instances"):
            positive_int(getattr(self, name), name)
        for name in ("lr", "clip_norm", "outside_mass"):
            positive_scalar(getattr(self, name), name)
        if self.outside_mass >= 1:
            raise ValueError(f"outside_mass must be < 1, got {self.outside_mass}")
        for name in ("warmup_frac", "min_lr_ratio"):
            probability(getattr(self, name), name, open_low=False, open_high=False)
        check_context_groups(self.context_groups, self.batch_size)
        choice(self.lr_units, "lr_units", LR_UNITS)
        for name in ("seed", "calib_seed", "curve_seed"):
            seed_int(getattr(self, name), name)
        self._check_curve()
        if not 0 <= positive_scalar(self.ema_decay, "ema_decay", allow_zero=True) < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {self.ema_decay}")
        instance_of(bool)(self.fast_numerics, "fast_numerics")
        if self.interval is not None:
            object.__setattr__(
                self, "interval", interval(*self.interval, "interval a", "interval b")
            )
        for e in sequence(self.evals, "evals", non_empty=False):
            instance_of(EvalSpec)(e, "evals")
        names = [e.filename for e in self.evals]
        if len(set(names)) != len(names):
            raise ValueError(f"evals must write distinct files, got {names}")
        if any(e.covariates == self.task.covariates for e in self.evals):
            raise ValueError("an eval's covariates override must differ from the task's (use None)")

    def _check_curve(self) -> None:
        int_tuple(self.curve_n_eval, "curve_n_eval", non_empty=False)
        positive_int(self.curve_instances, "curve_instances", minimum=2)
        positive_int(self.curve_points, "curve_points", minimum=2)
        if not isinstance(self.curve_covariates, (tuple, list)):
            raise ArgumentTypeError(
                f"curve_covariates must be a tuple of str, got {self.curve_covariates!r}"
            )
        covs = [choice(c, "curve_covariates", COVARIATES) for c in self.curve_covariates]
        if self.task.covariates in covs or len(set(covs)) != len(covs):
            raise ValueError(
                f"curve_covariates must be distinct and differ from the task's "
                f"covariates {self.task.covariates!r}, got {tuple(covs)}"
            )
        if covs and not self.curve_n_eval:
            raise ValueError("curve_covariates needs curve_n_eval (the learning curve's n')")

    # ------------------------------------------------------------------------------------------
    # identity and config.json
    # ------------------------------------------------------------------------------------------
    def record(self) -> dict:
        """The spec as ``spec.json`` records it: every field, those the tree added to the
        experiments' spec (the former ``TrainConfig``'s, :data:`_TREE_FIELDS`,
        :data:`_TREE_MODEL_FIELDS`, :data:`_LATE_TASK_FIELDS`) left out at their defaults, and
        each evaluation without its ``oracle`` (:class:`EvalSpec`), so that the committed
        ``spec.json`` files read the same."""
        d = dataclasses.asdict(self)
        _drop_defaults(d, _defaults(RunSpec, _TREE_FIELDS))
        _drop_defaults(d["model"], _defaults(ModelSpec, _TREE_MODEL_FIELDS))
        for ev in d["evals"]:
            ev.pop("oracle")
        d["task"] = task_identity(self.task)
        return d

    def identity(self) -> dict:
        """The hashed identity of the run directory: :meth:`record` without ``evals``, the fields
        added after the first runs also left out at their defaults (:data:`_LATE_FIELDS`,
        :data:`_LATE_MODEL_FIELDS`), so that the directories of those runs keep their names."""
        d = self.record()
        d.pop("evals")
        _drop_defaults(d, _defaults(RunSpec, _LATE_FIELDS))
        _drop_defaults(d["model"], _defaults(ModelSpec, _LATE_MODEL_FIELDS))
        return d

    @property
    def name(self) -> str:
        """``<task>-<model>-n<n_min>-<n_max>-s<steps>-<hash of identity()>``."""
        return (
            f"{self.task.slug()}-{self.model.slug()}-n{self.n_min}-{self.n_max}"
            f"-s{self.steps}-{spec_hash(self.identity())}"
        )

    def to_config(self) -> dict:
        """What ``config.json`` holds: every field but ``evals`` (tuples kept as tuples)."""
        d = dataclasses.asdict(self)
        d.pop("evals")
        return d

    @classmethod
    def from_config(cls, doc: dict) -> RunSpec:
        """Read ``config.json`` (:meth:`to_config`), also in the layout written before the tree
        (a ``TrainConfig``: runtime keys ``device`` and ``checkpoint_every``, and the model's
        copies ``model.d`` and ``model.noise_var_init`` of the prior's ``d`` and ``noise_var``,
        which must equal them: a run whose model had another noise is refused)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
            raise ValueError("config.json must hold a run's task, model and training settings")
        doc = copy.deepcopy(doc)
        for key in _RUNTIME_KEYS:
            doc.pop(key, None)
        model, task = doc["model"], doc.get("task") or {}
        for old, new in _LEGACY_MODEL_COPIES.items():
            if old in model:
                value = model.pop(old)
                if value != task.get(new):
                    raise ValueError(
                        f"config.json has model.{old} = {value} but task.{new} = "
                        f"{task.get(new)}: the model now takes {new} from the prior, so this "
                        "run cannot be read as a run tree"
                    )
        return runs.dataclass_from_dict(cls, doc)


# The fields left out of spec.json and of the hashed identity at their defaults: names only, the
# defaults are the dataclasses' own (_defaults), so each default is stated once.
#: RunSpec fields the tree took over from ``TrainConfig``: left out of ``spec.json`` and of the
#: hashed identity at their defaults.
_TREE_FIELDS = (
    "warmup_frac",
    "min_lr_ratio",
    "clip_norm",
    "curve_seed",
    "interval",
    "outside_mass",
    "calib_instances",
    "calib_seed",
)
#: ModelSpec fields the tree took over from ``ModelConfig``, left out likewise.
_TREE_MODEL_FIELDS = ("mlp_width", "eta_init", "scale_init", "amp_init", "tau_min", "shared_scale")
#: RunSpec fields added after the first runs (recorded in ``spec.json``), omitted from the hashed
#: identity at their defaults.
_LATE_FIELDS = (
    "lr_units",
    "curve_n_eval",
    "curve_instances",
    "curve_covariates",
    "context_groups",
    "curve_points",
    "ema_decay",
    "fast_numerics",
)
#: ModelSpec fields omitted from the hashed identity at their defaults (``normalise_first``: the
#: public code's reading of TF^pr, added after every committed run).
_LATE_MODEL_FIELDS = ("mixture", "normalise_first")
#: TaskSpec fields omitted from the hashed identity at their defaults.
_LATE_TASK_FIELDS = ("lengthscales", "sigma_diag", "x_scale")
#: Keys of a pre-tree config.json that are settings of the process, not of the run.
_RUNTIME_KEYS = ("device", "checkpoint_every")
#: The model's copies of prior values in a pre-tree config.json: model key -> task key.
_LEGACY_MODEL_COPIES = {"d": "d", "noise_var_init": "noise_var"}
