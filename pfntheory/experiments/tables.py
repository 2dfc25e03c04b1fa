"""fig:stepsize (the admissible Richardson step against n, exact), supp-tab:lengthscale-crps and
supp-tab:hierarchical-gp (trained TF^pr beside the exact PPD), and, beyond the paper, the multi-head
model of the remark "Extension to hierarchical GPs" beside the single head.
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
    rbf_task,
    trained_cells,
)
from .scales import (
    BUDGET_CURVE_POINTS,
    BUDGET_EMA_DECAY,
    CPU_OPT,
    budget_runs,
    by_cost,
    cpu_design,
    paper_curves,
)
from .specs import ExactPPDSpec, StepsizeSpec

# --------------------------------------------------------------------------------------------------
# fig:stepsize: admissible Richardson step against n (exact, no training)
# --------------------------------------------------------------------------------------------------


def _stepsize(n_trials: int) -> tuple:
    """Both kernels of fig:stepsize at d = 16, n in {100, ..., 1000}, ``n_trials`` draws per n."""
    return tuple(
        StepsizeSpec(
            task=TaskSpec(kind, d=16, noise_var=DEFAULT_NOISE_VAR),
            ns=tuple(100 * i for i in range(1, 11)),
            n_trials=n_trials,
        )
        for kind in ("rbf", "blr")
    )


_STEPSIZE_PAPER = Design(_stepsize(n_trials=100))

FIG_STEPSIZE = Experiment(
    name="fig_stepsize",
    labels=("fig:stepsize", "thm:lambda1", "eqn:convg cond"),
    title="Admissible Richardson step 2/(lambda_1(G)+sigma^2) against n (d=16)",
    claims=("the admissible step size decreases like 1/n",),
    paper=_STEPSIZE_PAPER,
    cpu=Design(_STEPSIZE_PAPER.runs, shrunk="Exact side: the paper's design as is."),
    quick=Design(_stepsize(n_trials=10), shrunk="10 trials per n instead of 100."),
)

# --------------------------------------------------------------------------------------------------
# supp-tab:lengthscale-crps and supp-tab:hierarchical-gp
# --------------------------------------------------------------------------------------------------


def _table(tasks, Ls, n_max, n_eval, steps, lr, per_n, ref_instances, C=256, n_min=64) -> tuple:
    cells = (
        (t, ModelSpec(score="rbf", L=L, C=C, normalised=True), n_max)
        for t, L in itertools.product(tasks, Ls)
    )
    trained = trained_cells(cells, n_min, steps, lr, (eval_spec(n_eval, per_n),))
    return trained + tuple(
        ExactPPDSpec(task=t, n_eval=tuple(n_eval), n_instances=ref_instances) for t in tasks
    )


_TABLE_CLAIMS = (
    "CRPS improves with depth L",
    "90% and 95% coverage reasonably close to nominal, also at n' > n_max, "
    "especially for larger depths",
    "no model beats the exact PPD's expected CRPS",
)
_QUICK_TABLE_SHRINK = (
    "d=4 instead of 16, n in [32,96] instead of [64,256] and n' in {96,384} "
    "(both ends: inside and 4x beyond n_max, like 256 and 1024 vs 256); L in {2,8} "
    "instead of {8,16,32}; C=64; 400 steps at lr 5e-3 instead of 1e5 at 2e-4; 512 "
    "instances per n'; exact-PPD reference on 512 contexts per n'. The CRPS values "
    "are therefore not comparable with the published d=16 table; compare each row "
    "with its exact-PPD reference instead."
)


def _table_paper(tasks, n_eval) -> Design:
    """The paper scale of the tables: L in {8,16,32}, n in [64,256], 1e5 steps at 2e-4, 4096
    instances per n' (trained models and exact-PPD reference)."""
    return Design(
        _table(
            tasks=tasks,
            Ls=(8, 16, 32),
            n_max=256,
            n_eval=n_eval,
            steps=100_000,
            lr=2e-4,
            per_n=PAPER_EVAL_INSTANCES,
            ref_instances=PAPER_EVAL_INSTANCES,
        )
    )


def _table_quick(tasks, n_eval) -> tuple:
    """The quick scale of the tables (see :data:`_QUICK_TABLE_SHRINK`)."""
    return _table(
        tasks=tasks,
        Ls=(2, 8),
        n_max=96,
        n_min=32,
        n_eval=n_eval,
        steps=400,
        lr=5e-3,
        per_n=512,
        ref_instances=512,
        C=64,
    )


_TAB_LS_PAPER = _table_paper(
    tuple(rbf_task(16, lengthscale=ell) for ell in (0.4, 0.8, 1.6)), n_eval=(256, 1024)
)
_CPU_TABLE_SHRINK = (
    "The paper's tables (d=16, C=256, L in {8,16,32}, n in [64,256], the paper's n', "
    f"exact-PPD reference on 4096 contexts); 1000 steps with {CPU_OPT} instead of 1e5 at "
    "2e-4; 1024 instances per n' for the trained models."
)

SUPP_TAB_LENGTHSCALE = Experiment(
    name="supp_tab_lengthscale",
    labels=("supp-tab:lengthscale-crps",),
    title="Sensitivity to the RBF lengthscale: CRPS and 50/90/95% coverage (TF^pr, n_max=256)",
    claims=_TABLE_CLAIMS,
    paper=paper_curves(_TAB_LS_PAPER),
    cpu=cpu_design(_TAB_LS_PAPER, steps=1000, per_n=1024, order=by_cost, shrunk=_CPU_TABLE_SHRINK),
    quick=Design(
        _table_quick(tuple(rbf_task(4, lengthscale=ell) for ell in (0.4, 0.8, 1.6)), (96, 384)),
        shrunk=_QUICK_TABLE_SHRINK,
    ),
)

_HIER16 = TaskSpec(kind="hier_rbf", d=16, noise_var=DEFAULT_NOISE_VAR)
_TAB_HIER_PAPER = _table_paper((_HIER16,), n_eval=(256, 512, 1024))

SUPP_TAB_HIER = Experiment(
    name="supp_tab_hier",
    labels=("supp-tab:hierarchical-gp",),
    title=(
        "Hierarchical GP prior, uniform over lengthscale {0.4,0.8,1.2} x noise std {0.1,0.2,0.3}: "
        "CRPS and 50/90/95% coverage (TF^pr, n_max=256)"
    ),
    claims=_TABLE_CLAIMS,
    paper=paper_curves(_TAB_HIER_PAPER),
    cpu=cpu_design(
        _TAB_HIER_PAPER, steps=1000, per_n=1024, order=by_cost, shrunk=_CPU_TABLE_SHRINK
    ),
    quick=Design(
        _table_quick(
            (TaskSpec(kind="hier_rbf", d=4, noise_var=DEFAULT_NOISE_VAR),), (96, 192, 384)
        ),
        shrunk=_QUICK_TABLE_SHRINK.replace("n' in {96,384}", "n' in {96,192,384}"),
    ),
)


def _table_ends(r) -> bool:
    """The table's shallowest and deepest single heads (L = 8, 32): the runs its rows read (the
    CRPS fall compares the two ends, coverage reads the deepest)."""
    return r.model.L in (8, 32)


SUPP_TAB_HIER_BUDGET = Experiment(
    name="supp_tab_hier_budget",
    labels=("supp-tab:hierarchical-gp",),
    title=(
        "supp_tab_hier's single-head runs at the table's end depths (L = 8, 32), weight-averaged, "
        "at S and 2S steps (the table's depth rows and the reference page 08's multi-head rows "
        "compare with, gated by budget doubling)"
    ),
    claims=_TABLE_CLAIMS,
    paper=Design(budget_runs(SUPP_TAB_HIER.paper, _table_ends)),
    cpu=Design(
        budget_runs(SUPP_TAB_HIER.cpu, _table_ends),
        shrunk=(
            "supp_tab_hier's cpu runs L in {8, 32} (the ends its depth row compares; d=16, "
            f"C=256, n in [64,256]) at S = 1000 and 2S = 2000 steps with {CPU_OPT}, an "
            f"exponential weight average (decay {BUDGET_EMA_DECAY}) and {BUDGET_CURVE_POINTS} "
            "learning-curve points; 1024 instances per n'."
        ),
    ),
    quick=Design(
        budget_runs(SUPP_TAB_HIER.quick, lambda r: r.model.L == 8),
        shrunk="supp_tab_hier's quick L = 8 run at S and 2S steps, weight-averaged: "
        + _QUICK_TABLE_SHRINK,
    ),
)


#: A table's 1000-step experiment -> its budget grid: the report and ``verify/`` read the table's
#: rows on the grid (2S runs, gated by budget doubling) wherever it is complete at the scale.
TABLE_BUDGET = {"supp_tab_hier": "supp_tab_hier_budget"}


# --------------------------------------------------------------------------------------------------
# beyond the paper: the multi-head model of the remark "Extension to hierarchical GPs"
# --------------------------------------------------------------------------------------------------

#: Steps of the single-head run at the multi-head run's CPU time (1000 steps): a training step of
#: the multi-head L = 8 model took 1.57x the single head's (1.35 s vs 0.86 s, hier_rbf d = 16, batch
#: 128, one thread, data included: the prior's Cholesky factors dominate both).
HIER_EQUAL_TIME_STEPS = 1600


def _trained_runs(design: Design, mixture: bool, Ls=(8, 16, 32)) -> tuple:
    return tuple(
        dataclasses.replace(r, model=dataclasses.replace(r.model, mixture=mixture))
        for r in design.runs
        if isinstance(r, RunSpec) and r.model.L in Ls
    )


def _beside(design: Design, Ls=(8, 16, 32)) -> Design:
    """The multi-head runs of ``design``'s trained cells beside its single-head ones."""
    return Design(_trained_runs(design, True, Ls) + _trained_runs(design, False, Ls))


SUPP_TAB_HIER_MULTIHEAD = Experiment(
    name="supp_tab_hier_multihead",
    labels=("supp-tab:hierarchical-gp",),
    title=(
        "Beyond the paper: multi-head TF^pr (one head per (lengthscale, noise) component, learned "
        "mixture weights) beside the single head on supp-tab:hierarchical-gp"
    ),
    claims=(
        "multi-head 50/90/95% coverage within 3 binomial SE of nominal",
        "multi-head E[TV] to the exact mixture PPD below the single head's at every n'",
    ),
    paper=paper_curves(_beside(_TAB_HIER_PAPER)),
    cpu=cpu_design(
        _beside(_TAB_HIER_PAPER, Ls=(8,)),
        steps=lambda r: 1000 if r.model.mixture else HIER_EQUAL_TIME_STEPS,
        per_n=1024,
        order=lambda r: (not r.model.mixture, r.name),
        shrunk=(
            f"L=8 only; the multi-head model at 1000 steps (the single head's committed "
            f"supp_tab_hier runs are its equal-step comparison) and a single head at "
            f"{HIER_EQUAL_TIME_STEPS} steps (equal CPU time), {CPU_OPT}; 1024 instances per n'."
        ),
    ),
    quick=Design(
        _trained_runs(SUPP_TAB_HIER.quick, True, (8,))
        + _trained_runs(SUPP_TAB_HIER.quick, False, (8,)),
        shrunk=SUPP_TAB_HIER.quick.shrunk + " L=8 only, multi-head beside single-head.",
    ),
)


SUPP_TAB_HIER_MULTIHEAD_BUDGET = Experiment(
    name="supp_tab_hier_multihead_budget",
    labels=("supp-tab:hierarchical-gp",),
    title=(
        "Beyond the paper: the multi-head TF^pr run of supp_tab_hier_multihead, weight-averaged, "
        "at S and 2S steps (its page-08 rows gated by budget doubling)"
    ),
    claims=SUPP_TAB_HIER_MULTIHEAD.claims,
    paper=Design(budget_runs(SUPP_TAB_HIER_MULTIHEAD.paper, lambda r: r.model.mixture)),
    cpu=Design(
        budget_runs(SUPP_TAB_HIER_MULTIHEAD.cpu, lambda r: r.model.mixture),
        shrunk=(
            f"supp_tab_hier_multihead's cpu multi-head run (L=8, d=16, C=256, n in [64,256]) at "
            f"S = 1000 and 2S = 2000 steps with {CPU_OPT}, an exponential weight average (decay "
            f"{BUDGET_EMA_DECAY}) and {BUDGET_CURVE_POINTS} learning-curve points; 1024 instances "
            "per n'."
        ),
    ),
    quick=Design(
        budget_runs(SUPP_TAB_HIER_MULTIHEAD.quick, lambda r: r.model.mixture),
        shrunk="supp_tab_hier_multihead's quick multi-head run at S and 2S steps, weight-averaged: "
        + SUPP_TAB_HIER_MULTIHEAD.quick.shrunk,
    ),
)
