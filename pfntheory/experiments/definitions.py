"""The registry of the paper's experiments: one :class:`Experiment` per figure and table, at the
``quick``, ``cpu`` and ``paper`` scales (docs/scales.md), by name.

The definitions live in :mod:`.exp1` (fig:exp1 and its budget runs), :mod:`.exp2` (fig:exp2-1,
fig:exp2-2, supp-fig:exp2-3, the d=4/d=8 companions, the covariate shift, the two readings of
TF^pr's first layer) and :mod:`.tables`
(fig:stepsize, supp-tab:lengthscale-crps, supp-tab:hierarchical-gp, the multi-head design); the
records in :mod:`.design`, the scale rules in :mod:`.scales`, the cost model in :mod:`.cost`.
"""

from __future__ import annotations

from pfntheory.base._checks import choice

from .cost import COST, cpu_seconds, step_terms, training_seconds, training_terms  # noqa: F401
from .design import EXPERIMENT_SCALES, PAPER_EVAL_INSTANCES, Design, Experiment  # noqa: F401
from .exp1 import FIG_EXP1, FIG_EXP1_BUDGET, FIG_EXP1_THEORY_SHARED
from .exp2 import (  # noqa: F401
    EXP2_1_CURVE_N_EVAL,
    FIG_EXP2_1,
    FIG_EXP2_1_BUDGET,
    FIG_EXP2_2,
    FIG_EXP2_2_BUDGET,
    SHIFT_CPU_LONG_CURVE,
    SHIFT_CPU_LONG_POINTS,
    SHIFT_CPU_LONG_STEPS,
    SHIFT_CPU_STEPS,
    SUPP_EXP2_D4,
    SUPP_EXP2_D4_BUDGET,
    SUPP_EXP2_D8,
    SUPP_EXP2_D8_BUDGET,
    SUPP_EXP2_D8_SEEDS,
    SUPP_EXP2_FIRST_LAYER,
    SUPP_EXP2_SHIFT_REGIME,
)
from .latent import LATENT_GPC
from .scales import (  # noqa: F401
    BUDGET_CURVE_POINTS,
    BUDGET_EMA_DECAY,
    CPU_CURVE_INSTANCES,
    CPU_LR,
    CPU_LR_UNITS,
    PAPER_CURVE_INSTANCES,
    PAPER_CURVE_POINTS,
)
from .tables import (  # noqa: F401
    FIG_STEPSIZE,
    HIER_EQUAL_TIME_STEPS,
    SUPP_TAB_HIER,
    SUPP_TAB_HIER_BUDGET,
    SUPP_TAB_HIER_MULTIHEAD,
    SUPP_TAB_HIER_MULTIHEAD_BUDGET,
    SUPP_TAB_LENGTHSCALE,
)

__all__ = [
    "EXPERIMENT_SCALES",
    "Design",
    "Experiment",
    "EXPERIMENTS",
    "STUDIES",
    "REGISTRY",
    "get_experiment",
    "experiment_names",
    "estimated_cpu_seconds",
    "CPU_SUBSET",
    "SHIFT_CPU_STEPS",
]

#: Experiments whose cpu design is a declared subset of the paper's (fewer runs or n'; the rest of
#: every task setting kept), because the paper's design does not fit a CPU budget at all.
CPU_SUBSET = ("supp_exp2_shift_regime", "supp_tab_hier_multihead", "supp_tab_hier_multihead_budget")

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        FIG_EXP1,
        FIG_EXP1_BUDGET,
        FIG_EXP2_1,
        FIG_EXP2_1_BUDGET,
        FIG_EXP2_2,
        SUPP_EXP2_D4,
        SUPP_EXP2_D8,
        SUPP_EXP2_SHIFT_REGIME,
        SUPP_EXP2_D8_BUDGET,
        SUPP_EXP2_D8_SEEDS,
        SUPP_EXP2_D4_BUDGET,
        FIG_EXP2_2_BUDGET,
        FIG_STEPSIZE,
        SUPP_TAB_LENGTHSCALE,
        SUPP_TAB_HIER,
        SUPP_TAB_HIER_MULTIHEAD,
        FIG_EXP1_THEORY_SHARED,
        SUPP_EXP2_FIRST_LAYER,
        SUPP_TAB_HIER_BUDGET,
        SUPP_TAB_HIER_MULTIHEAD_BUDGET,
    )
}


#: Studies beyond the paper's figures and tables that the sweep runs like an experiment, whose specs
#: are not the paper's (each spec type has its executor, :mod:`.execute`): the latent-GP
#: classification PFN (:mod:`.latent`). The tests over :data:`EXPERIMENTS` (the paper's labels,
#: tasks and scales) do not apply to them.
STUDIES: dict[str, Experiment] = {LATENT_GPC.name: LATENT_GPC}
#: Everything ``pfntheory sweep`` runs, by name: :data:`EXPERIMENTS` then :data:`STUDIES`.
REGISTRY: dict[str, Experiment] = {**EXPERIMENTS, **STUDIES}


def experiment_names() -> tuple[str, ...]:
    return tuple(EXPERIMENTS)


def get_experiment(name: str) -> Experiment:
    """The experiment or study called ``name`` (see :data:`REGISTRY`); unknown names raise
    ValueError."""
    if isinstance(name, str) and name in EXPERIMENTS:  # read at call time (tests add to it)
        return EXPERIMENTS[name]
    choice(name, "experiment name", (*EXPERIMENTS, *STUDIES))
    return STUDIES[name]


def estimated_cpu_seconds(spec_or_experiment, scale: str = "cpu") -> float:
    """Estimated single-core CPU seconds of a run (a spec), of an experiment or of the experiment
    of that name at ``scale``, from the cost model :data:`~.cost.COST` (:func:`~.cost.cpu_seconds`:
    training steps, learning-curve and final evaluations; an exact-PPD reference counts its Gram
    matrices; fig:stepsize counts as 0)."""
    if isinstance(spec_or_experiment, str):
        spec_or_experiment = get_experiment(spec_or_experiment)
    return cpu_seconds(spec_or_experiment, scale)
