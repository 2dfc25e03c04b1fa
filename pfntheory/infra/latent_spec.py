"""The specs of the latent-GP classification study (docs/latent.md, "The trained PFN"),
torch-free so that the experiment registry (:mod:`pfntheory.experiments.latent`) can declare
them: :class:`LatentTask` (the prior), :class:`LatentRunSpec` (one trained run),
:class:`LatentReferenceSpec` (the evaluation set: Laplace, EP and the sampling reference) and
:data:`DESIGN` (the committed runs).

A run's spec is its ``latent_config.json`` (:data:`LATENT_CONFIG`; not ``config.json``, which
holds a paper :class:`~pfntheory.infra.tree.RunSpec`), whose ``kind`` field is the spec's type tag
(:data:`KIND`); :func:`latent_doc` writes it and :func:`latent_spec_of` reads it back. The model
and the trainer are :mod:`pfntheory.nn.latent`, the reference builder
:mod:`pfntheory.nn.latent_eval`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pfntheory.base._checks import (
    int_tuple,
    positive_int,
    positive_scalar,
    probability,
    seed_int,
)
from pfntheory.infra import runs

__all__ = [
    "KIND",
    "EXPERIMENT",
    "DESIGN",
    "LATENT_CONFIG",
    "HELDOUT_FILE",
    "REFERENCE_FILE",
    "LatentTask",
    "LatentRunSpec",
    "LatentReferenceSpec",
    "latent_doc",
    "latent_spec_of",
]

#: The experiment's name (its runs live in ``reports/runs/<EXPERIMENT>/<spec.name>``).
EXPERIMENT = "latent_gpc"
#: The type tag of a run's spec: the ``kind`` field of its ``latent_config.json``.
KIND = EXPERIMENT
#: The run's spec (not ``config.json``: that name holds a ``RunSpec`` of the paper's PFN, and the
#: tests read every committed one as such).
LATENT_CONFIG = "latent_config.json"
#: The learning curve's held-out set with its EP references, cached under the experiment's root
#: (every run of :data:`DESIGN` shares ``curve_seed``, ``curve_instances`` and ``curve_n_eval``).
HELDOUT_FILE = "heldout_curve.json"
#: The evaluation set (:class:`LatentReferenceSpec`) under the experiment's root.
REFERENCE_FILE = "reference.json"


@dataclass(frozen=True)
class LatentTask:
    """The classification prior (:mod:`pfntheory.nn.latent`'s docstring); ``alpha = 2`` makes the
    labels informative enough that Laplace and EP differ."""

    d: int = 2
    alpha: float = 2.0
    lengthscale: float = 0.8
    n_min: int = 32
    n_max: int = 64
    n_query: int = 16

    def __post_init__(self):
        positive_int(self.d, "d")
        positive_scalar(self.alpha, "alpha")
        positive_scalar(self.lengthscale, "lengthscale")
        if not 1 <= positive_int(self.n_min, "n_min") <= positive_int(self.n_max, "n_max"):
            raise ValueError(f"need 1 <= n_min <= n_max, got {self.n_min}, {self.n_max}")
        positive_int(self.n_query, "n_query")


@dataclass(frozen=True)
class LatentRunSpec:
    """One training run: the prior, the model (``L`` blocks, ``width`` channels, MLP ``hidden``)
    and the schedule; :attr:`name` is its directory."""

    task: LatentTask = LatentTask()
    L: int = 4
    width: int = 16
    hidden: int = 32
    steps: int = 400
    batch_size: int = 32
    lr: float = 3e-3
    warmup_frac: float = 0.05
    min_lr_ratio: float = 0.1
    clip_norm: float = 1.0
    seed: int = 0
    curve_points: int = 8
    curve_instances: int = 48
    curve_n_eval: tuple[int, ...] = (32, 64)
    curve_seed: int = 1234

    def __post_init__(self):
        for name in ("L", "width", "hidden", "steps", "batch_size", "curve_points"):
            positive_int(getattr(self, name), name)
        positive_int(self.curve_instances, "curve_instances", minimum=3)
        positive_scalar(self.lr, "lr")
        positive_scalar(self.clip_norm, "clip_norm")
        probability(self.warmup_frac, "warmup_frac", open_low=False)
        probability(self.min_lr_ratio, "min_lr_ratio", open_low=False, open_high=False)
        seed_int(self.seed, "seed")
        seed_int(self.curve_seed, "curve_seed")
        int_tuple(self.curve_n_eval, "curve_n_eval")
        if not isinstance(self.task, LatentTask):
            raise TypeError(f"task must be a LatentTask, got {type(self.task).__name__}")

    @property
    def name(self) -> str:
        """The run's directory name (``gpc-d2-L4-w16-s500-seed0``)."""
        return f"gpc-d{self.task.d}-L{self.L}-w{self.width}-s{self.steps}-seed{self.seed}"

    @property
    def evals(self) -> tuple:
        """No evaluation files: the study's evaluation is the shared reference
        (:class:`LatentReferenceSpec`)."""
        return ()

    def heldout_key(self) -> tuple:
        """What the learning curve's held-out set depends on: runs with equal keys share it."""
        return (self.task, self.curve_seed, self.curve_instances, tuple(self.curve_n_eval))


@dataclass(frozen=True)
class LatentReferenceSpec:
    """The evaluation set of the study (:func:`pfntheory.nn.latent_eval.build_reference`):
    ``contexts`` contexts per n' of ``n_eval`` drawn from ``task`` with ``seed``, Laplace, EP and
    the elliptical-slice reference (``chains`` chains of ``samples`` draws). It is one file,
    :data:`REFERENCE_FILE`, under the experiment's folder: :attr:`name` is that file's name."""

    task: LatentTask = LatentTask()
    n_eval: tuple[int, ...] = (32, 64)
    contexts: int = 64
    seed: int = 20261127
    chains: int = 8
    samples: int = 600

    def __post_init__(self):
        if not isinstance(self.task, LatentTask):
            raise TypeError(f"task must be a LatentTask, got {type(self.task).__name__}")
        int_tuple(self.n_eval, "n_eval")
        positive_int(self.contexts, "contexts", minimum=3)
        seed_int(self.seed, "seed")
        positive_int(self.chains, "chains")
        positive_int(self.samples, "samples")

    @property
    def name(self) -> str:
        return REFERENCE_FILE

    @property
    def evals(self) -> tuple:
        return ()


#: Depths L = 4 and 16, each at S = 500 and 2S = 1000 steps (budget doubling) at seed 0, and at
#: 2S with seed 1 (the spread over training seeds).
DESIGN = tuple(LatentRunSpec(L=L, steps=s) for s in (500, 1000) for L in (4, 16)) + tuple(
    LatentRunSpec(L=L, steps=1000, seed=1) for L in (4, 16)
)


def latent_doc(spec: LatentRunSpec) -> dict:
    """The JSON document of ``latent_config.json`` for ``spec`` (as read back: lists, not
    tuples), its type tag :data:`KIND` first."""
    if not isinstance(spec, LatentRunSpec):
        raise TypeError(f"spec must be a LatentRunSpec, got {type(spec).__name__}")
    doc = {"kind": KIND, **asdict(spec)}
    doc["curve_n_eval"] = list(spec.curve_n_eval)
    return doc


def latent_spec_of(doc, where) -> LatentRunSpec:
    """The :class:`LatentRunSpec` of a ``latent_config.json`` document; a document that is not
    one (another type tag, missing or unknown fields) is a
    :class:`~pfntheory.infra.runs.CorruptFileError` naming ``where``."""
    try:
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise ValueError(f"not a {KIND} run spec")
        cfg = {k: v for k, v in doc.items() if k != "kind"}
        task = LatentTask(**cfg.pop("task"))
        cfg["curve_n_eval"] = tuple(cfg["curve_n_eval"])
        return LatentRunSpec(task=task, **cfg)
    except (KeyError, TypeError, ValueError) as err:
        raise runs.CorruptFileError(f"{where} is not a latent run spec: {err}") from None
