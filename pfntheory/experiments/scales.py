"""How the ``cpu`` and ``paper`` designs derive from the paper's sizes: the cpu optimiser and
steps, the learning curves every trained run records (so that its verdicts can be gated on
convergence, :mod:`pfntheory.infra.convergence`), and the budget-doubling runs (docs/scales.md).
"""

from __future__ import annotations

import dataclasses

from pfntheory.base._checks import ArgumentTypeError
from pfntheory.infra.tree import RunSpec

from .design import Design
from .order import order_seconds


def _design(design, name: str) -> Design:
    if not isinstance(design, Design):
        raise ArgumentTypeError(f"{name} must be a Design, got {design!r}"[:200])
    return design


#: cpu scale: Adam in each weight's natural unit (``lr_units="elementwise"``, see "Sample
#: efficiency" in :mod:`pfntheory.nn.train`) at one base learning rate for every run. Plain Adam
#: ("absolute", the paper's optimiser) moves every weight by ~lr per step whatever its size, so at
#: the paper's largest lr (1e-3) the small solver weights (eta ~ 5e-3, the ridge weight ~ 2e-4) jump
#: past the stable range, the held-out E[TV] of a run swings by 0.1-0.8 between log-spaced curve
#: points, and a run of 1-2e3 steps ends wherever the last swing left it; the paper's 2e-4 rows are
#: tuned for 1e4-1e5 steps. Measured at fig:exp1's C = 256 cells (1000 steps, BLR d=5, n in
#: [128,512], 4096 evaluation instances; the absolute-lr runs are kept under
#: ``reports/runs/lr_units_comparison/``): mean E[TV] at L = 8 theory 0.0265 -> 0.0220, learnable
#: 0.0327 -> 0.0223 with elementwise 3e-2; RBF d=2, n in [64,128], 2000 steps, L = 4 theory
#: 0.421 -> 0.257.
CPU_LR = 3e-2
#: Units of :data:`CPU_LR` (``pfntheory.nn.train.LR_UNITS``).
CPU_LR_UNITS = "elementwise"
CPU_OPT = f"{CPU_LR_UNITS}-unit Adam at lr {CPU_LR:g}"
#: Held-out instances per n' of every cpu-scale learning curve.
CPU_CURVE_INSTANCES = 256


def cpu_design(
    paper: Design, steps, per_n: int | None = None, shrunk: str = "", order=None
) -> Design:
    """The ``cpu`` design of an experiment: its paper design with only ``steps`` (an int, or a
    function of the RunSpec) and the learning rate (:data:`CPU_LR`) changed, a learning curve at
    ``(n_min, n_max)`` added, and optionally fewer evaluation instances per n' (``per_n``);
    ``order`` (a key function) sorts the runs so that a sweep does the cheapest, most informative
    ones first."""
    runs = []
    for r in _design(paper, "paper").runs:
        if not isinstance(r, RunSpec):
            runs.append(r)
            continue
        evals = (
            r.evals
            if per_n is None
            else tuple(
                dataclasses.replace(e, n_instances=min(per_n, e.n_instances)) for e in r.evals
            )
        )
        runs.append(
            dataclasses.replace(
                r,
                steps=steps(r) if callable(steps) else int(steps),
                lr=CPU_LR,
                lr_units=CPU_LR_UNITS,
                evals=evals,
                curve_n_eval=tuple(sorted({r.n_min, r.n_max})),
                curve_instances=CPU_CURVE_INSTANCES,
            )
        )
    if order is not None:
        runs.sort(key=order)
    return Design(tuple(runs), shrunk=shrunk)


#: paper scale: log-spaced learning-curve points per run. Every trained verdict is gated on its
#: runs' learning curves (:mod:`pfntheory.infra.convergence`), so a paper-scale run without one
#: could never be decided. 48 points put 24 in the last log-half, where the 90% interval of the
#: fitted fall reaches about 1.2x the residual SD about the trend on each side (2.5x with the cpu
#: scale's 12 points, which left 83 of fig:exp1's 100 cpu curves unable to fit their tolerance:
#: ``report.cpu.resolution_frame``). The curves add under 1% to the cost model's estimate of a
#: paper-scale design (fig:exp1: 209.0 -> 210.0 h of one core, by the cost model of that day).
PAPER_CURVE_POINTS = 48
#: paper scale: held-out instances per n' of a learning curve (coverage SE about 0.01, so that the
#: coverage tolerance of 0.02 can be resolved).
PAPER_CURVE_INSTANCES = 1024


def paper_curves(paper: Design) -> Design:
    """The paper design with a learning curve on every trained run: at ``(n_min, n_max)``,
    :data:`PAPER_CURVE_POINTS` points of :data:`PAPER_CURVE_INSTANCES` instances, on the run's own
    design and on every other covariate law one of its evaluations uses (the covariate shift), so
    that each claim can be gated on the design it is about. The tasks, steps and evaluations are
    the paper's, unchanged."""
    runs = []
    for r in _design(paper, "paper").runs:
        if isinstance(r, RunSpec):
            other = sorted(
                {e.covariates for e in r.evals if e.covariates not in (None, r.task.covariates)}
            )
            r = dataclasses.replace(
                r,
                curve_n_eval=tuple(sorted({r.n_min, r.n_max})),
                curve_instances=PAPER_CURVE_INSTANCES,
                curve_points=PAPER_CURVE_POINTS,
                curve_covariates=tuple(other),
            )
        runs.append(r)
    return Design(tuple(runs), shrunk=paper.shrunk)


#: Decay of the weight average of the budget runs (``RunSpec.ema_decay``): measured on replays
#: of committed fig:exp1 runs (BLR learnable L=8 C=256, 1000 steps, 48 curve points) it cut the
#: jitter between curve points from 13x to 6.8x the held-out SE and the final E[TV] from 0.037 to
#: 0.026; 0.998 cut the jitter further (4.4x) but lagged a curve still falling (0.030).
BUDGET_EMA_DECAY = 0.99
#: Learning-curve points of the budget runs: 24 in the last log-half (docs/verdicts.md).
BUDGET_CURVE_POINTS = 48


def budget_runs(design: Design, keep, factors: tuple[int, ...] = (2,), **fields) -> tuple:
    """The runs of ``design`` that ``keep`` accepts with a weight average and 48 curve points
    (``fields`` overrides these or sets other RunSpec fields), each at its own steps S and at
    ``f S`` for each ``f`` of ``factors`` (each with its own cosine schedule; the doubling test of
    :func:`pfntheory.infra.convergence.doubling_status` pairs a run with the one at half its steps
    on the same held-out instances, so ``factors = (2, 4)`` gives two doublings)."""
    if not callable(keep):
        raise ArgumentTypeError(f"keep must be a function of a RunSpec, got {keep!r}"[:200])
    fields = {"ema_decay": BUDGET_EMA_DECAY, "curve_points": BUDGET_CURVE_POINTS, **fields}
    out = []
    for r in _design(design, "design").runs:
        if isinstance(r, RunSpec) and keep(r):
            for steps in (r.steps, *(f * r.steps for f in factors)):
                out.append(dataclasses.replace(r, steps=steps, **fields))
    return tuple(sorted(out, key=lambda r: (r.task.kind != "blr", order_seconds(r), r.name)))


def by_cost(r) -> tuple:
    """Sweep order: the cheapest run first (by :func:`~.order.order_seconds`, the cost model the
    designs were ordered by), then by name."""
    if not hasattr(r, "name"):
        raise ArgumentTypeError(f"r must be a run's spec, got {r!r}"[:200])
    return (order_seconds(r), r.name)
