"""fig:exp1 (sec:exp1, thm:PPD convergence): E[TV] against depth L and bin count C, BLR d=5 and
RBF d=2, theory and learnable TF; and its claim-carrying cells at S and 2S steps, weight-averaged
(convergence by budget doubling), also in the other reading of theory mode (``theory_shared``).
"""

from __future__ import annotations

import dataclasses
import itertools

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec

from .. import DEFAULT_NOISE_VAR
from .design import (
    PAPER_EVAL_INSTANCES,
    Design,
    Experiment,
    eval_spec,
    range_grid,
    rbf_task,
    trained_cells,
)
from .order import order_seconds
from .scales import (
    BUDGET_CURVE_POINTS,
    BUDGET_EMA_DECAY,
    CPU_OPT,
    budget_runs,
    cpu_design,
    paper_curves,
)


def _exp1(Ls, Cs, settings, per_n: int, k_eval: int) -> tuple:
    """``settings``: (task, score, mode, n_min, n_max, lr, steps) per panel."""
    runs: tuple = ()
    for task, score, mode, n_min, n_max, lr, steps in settings:
        cells = (
            (task, ModelSpec(score=score, L=L, C=C, mode=mode), n_max)
            for L, C in itertools.product(Ls, Cs)
        )
        runs += trained_cells(
            cells, n_min, steps, lr, (eval_spec(range_grid(n_min, n_max, k_eval), per_n),)
        )
    return runs


_BLR5 = TaskSpec(kind="blr", d=5, noise_var=DEFAULT_NOISE_VAR)
_RBF2 = rbf_task(2)

_FIG_EXP1_PAPER = Design(
    _exp1(
        Ls=(2, 4, 8, 16, 32),
        Cs=(16, 32, 64, 128, 256),
        # supp-tab:pretraining hyperparameters: (lr, N) per task and mode
        settings=(
            (_BLR5, "linear", "theory", 128, 512, 2e-4, 10_000),
            (_BLR5, "linear", "learnable", 128, 512, 2e-4, 20_000),
            (_RBF2, "rbf", "theory", 64, 128, 1e-3, 50_000),
            (_RBF2, "rbf", "learnable", 64, 128, 2e-4, 100_000),
        ),
        per_n=PAPER_EVAL_INSTANCES // 8,
        k_eval=8,
    )
)


def _on_slice(r: RunSpec) -> bool:
    """A cell the paper's fig:exp1 claims rest on (and plots): the C = 256 row and the L = 32
    column."""
    return r.model.C == 256 or r.model.L == 32


def _exp1_priority(r: RunSpec) -> tuple:
    """Sweep order of fig:exp1 at the cpu scale: the plotted slices first, then the rest; within
    each, the cheapest first."""
    return (not _on_slice(r), order_seconds(r), r.name)


FIG_EXP1 = Experiment(
    name="fig_exp1",
    labels=("fig:exp1", "sec:exp1", "thm:PPD convergence"),
    title="E[TV] against depth L and bin count C (BLR d=5, RBF d=2; theory and learnable TF)",
    claims=(
        "log TV decreases linearly as log C increases (at large L)",
        "log TV decreases with depth L",
    ),
    paper=paper_curves(_FIG_EXP1_PAPER),
    quick=Design(
        _exp1(
            Ls=(2, 8, 32),
            Cs=(16, 64, 256),
            settings=(
                (_BLR5, "linear", "theory", 32, 64, 5e-3, 300),
                (_BLR5, "linear", "learnable", 32, 64, 5e-3, 300),
                (_RBF2, "rbf", "theory", 32, 64, 5e-3, 300),
                (_RBF2, "rbf", "learnable", 32, 64, 5e-3, 300),
            ),
            per_n=128,
            k_eval=4,
        ),
        shrunk=(
            "3x3 sub-grid L in {2,8,32} x C in {16,64,256} (keeps both ends of both axes); "
            "n in [32,64] for both tasks (BLR [128,512] and RBF [64,128] in the paper: the cost is "
            "quadratic in n); 300 Adam steps at lr 5e-3 instead of 1e4-1e5 at 2e-4-1e-3 (a tiny "
            "model converges in few steps at a larger rate); 4 n' x 128 = 512 evaluation "
            "instances instead of 4096."
        ),
    ),
    cpu=cpu_design(
        _FIG_EXP1_PAPER,
        steps=lambda r: 1000 if r.task.kind == "blr" else 2000,
        order=_exp1_priority,
        shrunk=(
            "Every task setting of the paper (full 5x5 L x C grid, BLR d=5 n in [128,512], RBF "
            "d=2 n in [64,128], both modes, 8 n' x 512 = 4096 evaluation instances); "
            "2000 steps (RBF) and 1000 (BLR; fixed before the weight-space sampler made a BLR "
            f"cell 30-150 s) with {CPU_OPT} instead of 1e4-1e5 steps at 2e-4-1e-3. Runs are "
            "ordered cheapest and most informative first: the slices the paper plots "
            "(C = 256 across L, L = 32 across C), then the rest, each by estimated cost."
        ),
    ),
)


FIG_EXP1_BUDGET = Experiment(
    name="fig_exp1_budget",
    labels=("fig:exp1", "sec:exp1", "thm:PPD convergence"),
    title="fig:exp1's cells, weight-averaged, at S and 2S steps (convergence by budget doubling)",
    claims=FIG_EXP1.claims,
    paper=Design(tuple(sorted(budget_runs(FIG_EXP1.paper, bool), key=_exp1_priority))),
    quick=Design(
        budget_runs(FIG_EXP1.quick, _on_slice),
        shrunk="fig:exp1's quick design restricted to its C = 256 row and L = 32 column, at S and "
        "2S steps, weight-averaged: " + FIG_EXP1.quick.shrunk,
    ),
    cpu=Design(
        tuple(sorted(budget_runs(FIG_EXP1.cpu, bool), key=_exp1_priority)),
        shrunk=(
            "fig:exp1's cpu design (all 100 cells), each trained twice, at the cpu steps S (1000 "
            "BLR, 2000 RBF) and at 2S, with an exponential weight average (decay "
            f"{BUDGET_EMA_DECAY}) and {BUDGET_CURVE_POINTS} learning-curve points; the cells the "
            "claims rest on (C = 256 across L, L = 32 across C) first, the others for the "
            "test's resolution over the whole grid."
        ),
    ),
)


def _theory_shared(design: Design) -> Design:
    """The theory cells of fig:exp1's C = 256 row and L = 32 column in ``design``, with the model
    in mode ``theory_shared`` (docs/design.md, "Known ambiguities"), at S and 2S steps,
    weight-averaged (:func:`~.scales.budget_runs`); the RBF runs with fast numerics."""
    cells = tuple(
        dataclasses.replace(r, model=dataclasses.replace(r.model, mode="theory_shared"))
        for r in design.runs
        if isinstance(r, RunSpec) and r.model.mode == "theory" and _on_slice(r)
    )
    runs = budget_runs(Design(cells), bool)
    return Design(
        tuple(dataclasses.replace(r, fast_numerics=r.task.kind == "rbf") for r in runs),
        shrunk=design.shrunk,
    )


#: Sweep order of fig_exp1_theory_shared's cells at the cpu scale, per task (BLR first): the ends of
#: the C = 256 row (each claim compares the ends of its slice; L = 32 is also the L = 32 column's
#: end), the row's cheap cells, the other end of the column, then the rest; each cell's S run just
#: before its 2S run, so that a sweep cut short leaves complete doubling pairs.
_SHARED_ORDER = ((2, 256), (32, 256), (4, 256), (8, 256), (32, 16), (16, 256), (32, 32), (32, 64))


def _shared_priority(r: RunSpec) -> tuple:
    cell = (r.model.L, r.model.C)
    rank = _SHARED_ORDER.index(cell) if cell in _SHARED_ORDER else len(_SHARED_ORDER)
    return (r.task.kind != "blr", rank, r.model.L, r.model.C, r.steps)


FIG_EXP1_THEORY_SHARED = Experiment(
    name="fig_exp1_theory_shared",
    labels=("fig:exp1", "sec:exp1", "thm:PPD convergence"),
    title=(
        "fig:exp1's theory panels in the other reading of theory mode (one K = Q for all layers, "
        "learned sigma, separate steps per layer), C = 256 row and L = 32 column, at S and 2S"
    ),
    claims=FIG_EXP1.claims,
    paper=_theory_shared(FIG_EXP1.paper),
    quick=_theory_shared(FIG_EXP1.quick),
    cpu=Design(
        tuple(sorted(_theory_shared(FIG_EXP1.cpu).runs, key=_shared_priority)),
        shrunk=(
            "fig:exp1's cpu theory cells on the slices the claims rest on (C = 256 across L, "
            "L = 32 across C; 9 per task), the model in mode theory_shared, each at the cpu steps "
            "S (1000 BLR, 2000 RBF) and 2S, weight-averaged (decay "
            f"{BUDGET_EMA_DECAY}), {BUDGET_CURVE_POINTS} learning-curve points, the RBF runs with "
            "fast numerics; the side-by-side reading of fig_exp1_budget's theory cells. Order: "
            "BLR first; the ends of the C = 256 row, its other cells, the other end of the L = 32 "
            "column, then the rest, each cell at S then 2S."
        ),
    ),
)
