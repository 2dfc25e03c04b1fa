"""The records of an experiment (:class:`Experiment`, one :class:`Design` per scale) and the
builders its definitions share (evaluation grids, trained cells, the RBF task).

The scales and what each keeps of the paper are described in docs/scales.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfntheory.base._checks import choice
from pfntheory.infra.config import EXPERIMENT_SCALES, TaskSpec
from pfntheory.infra.tree import EvalSpec, RunSpec

from .. import DEFAULT_NOISE_VAR

__all__ = ["EXPERIMENT_SCALES", "Design", "Experiment"]

PAPER_EVAL_INSTANCES = 4096  # supp-sec:exp details: "evaluated on 4096 evaluation samples"


@dataclass(frozen=True)
class Design:
    """One scale of one experiment.

    Attributes
    ----------
    runs : tuple of RunSpec / StepsizeSpec / ExactPPDSpec
    shrunk : str
        What differs from the paper and why ("" at paper scale).
    """

    runs: tuple
    shrunk: str = ""

    def __post_init__(self):
        names = [r.name for r in self.runs]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"two runs of one design share a directory: {dup}")


@dataclass(frozen=True)
class Experiment:
    """A figure or table of the paper.

    Attributes
    ----------
    name : str
        Directory name under ``reports/runs/``.
    labels : tuple of str
        The paper's LaTeX labels it reproduces.
    title : str
    claims : tuple of str
        The claims (in the paper's words, abridged) that ``verify/test_trained_claims.py`` checks.
    quick, cpu, paper : Design
    """

    name: str
    labels: tuple[str, ...]
    title: str
    claims: tuple[str, ...]
    quick: Design
    paper: Design
    cpu: Design

    def design(self, scale: str) -> Design:
        choice(scale, "scale", EXPERIMENT_SCALES)
        return getattr(self, scale)

    def runs(self, scale: str) -> tuple:
        return self.design(scale).runs


def range_grid(n_min: int, n_max: int, k: int = 8) -> tuple[int, ...]:
    """``k`` evaluation sizes spread evenly over ``[n_min, n_max]`` (stands in for n' ~ Unif)."""
    return tuple(sorted({int(round(v)) for v in np.linspace(n_min, n_max, k)}))


def eval_spec(n_eval, per_n: int, covariates: str | None = None) -> EvalSpec:
    """An evaluation at each n' of ``n_eval`` on ``per_n`` instances (``covariates``: the law of
    the inputs, the task's own when None)."""
    return EvalSpec(n_eval=tuple(int(n) for n in n_eval), n_instances=per_n, covariates=covariates)


def trained_cells(cells, n_min: int, steps: int, lr: float, evals) -> tuple[RunSpec, ...]:
    """One RunSpec per ``(task, model, n_max)`` in ``cells``, all with the same pretraining
    ``n_min``, budget (``steps`` at ``lr``) and evaluations."""
    return tuple(
        RunSpec(task=t, model=m, n_min=n_min, n_max=n_max, steps=steps, lr=lr, evals=evals)
        for t, m, n_max in cells
    )


def rbf_task(d: int, lengthscale: float = 0.8) -> TaskSpec:
    """The RBF task of the paper's experiments: noise variance :data:`DEFAULT_NOISE_VAR`
    (docs/findings.md, "Noise"), alpha 1."""
    return TaskSpec(
        kind="rbf", d=d, noise_var=DEFAULT_NOISE_VAR, alpha=1.0, lengthscale=lengthscale
    )
