"""The decision rules of the trained claims: the statistical margin, and the one gate that turns a
measurement on trained runs into a verdict kind (docs/verdicts.md).

``holds`` is the measurement. :func:`decide` is the gate every trained and case-study row goes
through (claims here, :mod:`pfntheory.claims.casestudy`, and the report's recorder): from the
runs' :class:`~pfntheory.infra.status.Status` (either convergence test), the check replayed along
the curves or at the two budgets (:class:`Replay`) and the check's power (:class:`~pfntheory.claims.
Power`), first rule that applies: *worse with training* when a run got worse (diverging, or worse
than its initialisation at some n') where the worsening could change the answer (the check at S and
2S, and the check with the runs credited with their initialisation, :class:`Counterfactual`, say
which worsenings cannot); else, when every run has plateaued, *holds*, or *does not
hold* if the interval of the effect excludes the claimed one (*undecided (underpowered)* if not);
else *holds / fails at budget* when the replayed check has one outcome throughout (with the same
power rule for *fails*); else *undecided*. :func:`gate` applies it to a claim and its runs.

A difference ``D = a - b`` of two means counts as real when ``D > Z_MARGIN * SE_D`` with
``SE_D = sqrt(SE_a^2 + SE_b^2)``: runs of one task share their evaluation instances, so this
unpaired SE over-states the paired one and the test is conservative; ``Z_MARGIN = 3`` is a
one-sided normal tail of 0.13% per comparison.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    checked,
    choice,
    finite_scalar,
    float_tuple,
    instance_of,
    mapping,
    nonneg_scalar,
    optional,
    positive_scalar,
    text,
)
from pfntheory.base.stats import Z_MARGIN
from pfntheory.infra.config import COVARIATES
from pfntheory.infra.convergence import (
    curve_points,
    curve_status,
    doubling_status,
    last_half_values,
)
from pfntheory.infra.status import Status, as_status, doubling_where, no_curve
from pfntheory.infra.tree import RunSpec

from . import (
    FAILS,
    FAILS_AT_BUDGET,
    HOLDS,
    HOLDS_AT_BUDGET,
    MINIMAL_EFFECT,
    UNDECIDED,
    UNDERPOWERED,
    WORSE,
    ClaimResult,
    Power,
)
from ._inputs import loaded_run, loaded_runs, replay_of, statuses_of
from .decision import Counterfactual, Decision, Replay, _flag

__all__ = [
    "Z_MARGIN",
    "COVERAGE_SLACK",
    "run_convergence",
    "budget_outcomes",
    "tv_beats",
    "doubling_statuses",
    "gate",
    "decide",
    "decided",
    "Decision",
    "Replay",
    "Counterfactual",
    "initialisation_counterfactual",
    "MAX_CREDITED",
    "SHARED_REASONS",
    "plateau_tally",
    "diff_se",
    "exceeds",
    "minimal_effect",
    "at_both_budgets",
]

#: Allowed |coverage - nominal| beyond Z_MARGIN standard errors: the largest deviation that the
#: paper itself calls "reasonably close to nominal" (.848 at the 90% level,
#: supp-tab:lengthscale-crps, L=8).
COVERAGE_SLACK = 0.05


def diff_se(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """``(a - b, SE)`` of two (mean, SE) pairs (unpaired SE; conservative, see module docstring).

    Each pair holds a finite mean and a finite SE ``>= 0``.
    """
    a, b = _mean_se(a, "a"), _mean_se(b, "b")
    return a[0] - b[0], float(np.hypot(a[1], b[1]))


def _mean_se(x, name: str) -> tuple[float, float]:
    """``x`` as a ``(mean, SE)`` pair: two finite numbers, the SE ``>= 0``."""
    t = float_tuple(x, name)
    if len(t) != 2:
        raise ValueError(f"{name} must be a (mean, SE) pair, got {len(t)} values")
    nonneg_scalar(t[1], f"{name}[1] (the SE)")
    return t[0], t[1]


def exceeds(
    D: float,
    se: float,
    z: float,
    paper: float | None = None,
    paired: bool = False,
    minimal: float | None = None,
    **claim,
) -> ClaimResult:
    """The claim that a difference ``D`` with standard error ``se`` exceeds ``z`` standard errors
    (the decision rule of the module docstring), with its :class:`~pfntheory.claims.Power`: the
    interval ``D -+ z se`` against the claimed effect (``paper``, the paper's printed effect, where
    it prints one; else 0, raised to ``minimal``, the minimal effect of interest, where given:
    :func:`minimal_effect`), so that the gate calls it *does not hold* only when the interval
    excludes that effect. ``claim``: the other ClaimResult fields.

    ``D`` is finite, ``se >= 0``, ``z > 0`` and ``minimal`` (where given) ``>= 0``.
    """
    D = finite_scalar(D, "D")
    se = nonneg_scalar(se, "se")
    z = positive_scalar(z, "z")
    target = 0.0 if paper is None else max(finite_scalar(paper, "paper"), 0.0)
    power = Power(
        D,
        (D - z * se, D + z * se),
        target,
        z * se,
        paper=paper,
        paired=paired,
        minimal=minimal,
        z=z,
    )
    return ClaimResult(holds=bool(D > z * se), observed=D, bound=z * se, power=power, **claim)


def minimal_effect(value: float) -> float:
    """The minimal effect of interest of a comparison without a paper effect
    (docs/verdicts.md, "A minimal effect of interest"): :data:`~pfntheory.claims.MINIMAL_EFFECT`
    (10%) of ``value``, the E[TV] (CRPS, error) the claim says is the lower one -- the plateau
    test's tolerance, 10% of the lower, later E[TV]. ``value`` finite and ``>= 0``."""
    return MINIMAL_EFFECT * nonneg_scalar(value, "value")


def trained_runs(runs):
    return [r for r in runs if isinstance(r.spec, RunSpec)]


def run_convergence(run, covariates: str | None = None, metric: str = "tv") -> Status:
    """Plateau status (``metric``, E[TV] by default) of one loaded run from its
    ``learning_curve.json`` (with ``covariates``: its curve on that covariate law, e.g. the
    covariate shift); a run without one gets state "no curve" (never plateaued) at its steps."""
    loaded_run(run)
    st = curve_status(run.run_dir, covariates, metric=metric).within(run.spec.n_min, run.spec.n_max)
    if st.state == "no curve":
        st = st.replace(
            last_step=int(run.spec.steps),
            criterion=st.criterion + f" (trained {run.spec.steps} steps)",
        )
    return st


def doubling_statuses(runs, covariates: str | None = None) -> dict[str, Status]:
    """Budget-doubling convergence (:func:`pfntheory.infra.convergence.doubling_status`) of every
    run of ``runs`` that has a partner trained for half its steps (same spec otherwise), by run
    name; runs without one get state "no half-budget run" (never plateaued). ``covariates``: the
    learning curves compared (None: the task's own design; "uniform": the covariate-shift curves),
    so that a row about one design is gated on that design's curves."""
    if covariates is not None:
        choice(covariates, "covariates", COVARIATES)
    tr = trained_runs(loaded_runs(runs))

    def budgetless(spec):  # the spec with its budget and evaluations left out
        return dataclasses.replace(spec, steps=1, evals=())

    by_key = {(budgetless(r.spec), r.spec.steps): r for r in tr}
    out = {}
    for r in tr:
        half = (
            by_key.get((budgetless(r.spec), r.spec.steps // 2)) if r.spec.steps % 2 == 0 else None
        )
        if half is None:
            out[r.run_dir.name] = no_curve(
                f"budget doubling needs the run at half the steps ({r.spec.steps} steps)",
                int(r.spec.steps),
                state="no half-budget run",
            ).replace(run=r.run_dir.name)
            continue
        st = doubling_status(
            curve_points(half.run_dir, covariates) or [], curve_points(r.run_dir, covariates) or []
        )
        st = st.within(r.spec.n_min, r.spec.n_max)
        out[r.run_dir.name] = st.replace(run=r.run_dir.name, half_run=half.run_dir.name)
    return out


def doubling_text(st: Status) -> str:
    """One line on a :func:`pfntheory.infra.convergence.doubling_status` (its ``trend``)."""
    return st.trend


def budget_outcomes(runs, replay, covariates: str | None = None) -> dict:
    """A claim's check re-decided at every step of the last log-half of its runs' learning curves.

    ``replay(value_of)`` returns the check's outcome (bool) from ``value_of(run)``, the run's curve
    values at one step (:func:`pfntheory.infra.convergence.last_half_values`: ``{metric: (mean, se),
    "by_n": {n': {metric: (mean, se)}}}``). The steps are those of the last log-half common to all
    runs (runs of one claim share their curve steps when they share their budget). Runs of one
    task share their held-out instances, so comparisons between runs at one step are paired on
    them (the unpaired SE used is conservative). Returns ``{"steps": [...], "held": [bool...]}``;
    empty lists when a run has no curve or the runs share no step."""
    runs, replay = loaded_runs(runs), replay_of(replay)
    vals = {}
    for r in trained_runs(runs):
        points = curve_points(r.run_dir, covariates)
        vals[r.run_dir.name] = last_half_values(points) if points else {}
    if not vals or not all(vals.values()):
        return {"steps": [], "held": []}
    common = sorted(set.intersection(*(set(v) for v in vals.values())))
    held = [bool(replay(lambda r, s=s: vals[r.run_dir.name][s])) for s in common]
    return {"steps": common, "held": held}


# --------------------------------------------------------------------------------------------------
# the one gate
# --------------------------------------------------------------------------------------------------

#: Reasons shared by many rows, stated once on the page (docs/verdicts.md): the row names the key.
SHARED_REASONS = {
    "margin": f"a difference counts when it exceeds {Z_MARGIN:g} SE (one-sided normal tail "
    "0.13% per comparison); the unpaired SE over-states the paired one where both means are on "
    "the same instances, so the test is conservative",
    "coverage": f"|coverage - nominal| <= {COVERAGE_SLACK} + {Z_MARGIN:g} SE: {COVERAGE_SLACK} "
    "is the largest deviation the paper itself calls 'reasonably close to nominal' (0.848 at the "
    "90% level, supp-tab:lengthscale-crps, L=8)",
    "doubling": "budget doubling: the PFN is trained, weight-averaged, at S and at 2S steps, each "
    "with its own schedule; the run has plateaued when the 90% CI of the paired fall of E[TV] "
    "from S to 2S lies within +-10% of E[TV] at 2S (docs/verdicts.md, 'Budget doubling')",
}


def _statuses(x, name: str) -> dict[str, Status]:
    """Run name -> :class:`~pfntheory.infra.status.Status` (or a status mapping with a
    ``state``)."""
    mapping(x, name, non_empty=False)
    out = {}
    for k, st in x.items():
        if isinstance(st, Status):
            out[k] = st
        elif isinstance(st, Mapping):
            out[k] = as_status(st)
        else:
            raise ArgumentTypeError(f"{name}[{k!r}] must be a Status, got {type(st).__name__}")
    return out


def _doubling_replay(x, name: str) -> Replay | None:
    """An optional :class:`Replay` of source "doubling" (the check at S and at 2S)."""
    if x is None:
        return None
    instance_of(Replay)(x, name)
    if x.source != "doubling":
        raise ValueError(f"{name} must be a replay at the two budgets (source 'doubling')")
    return x


@checked(
    holds=_flag,
    statuses=_statuses,
    replay=optional(instance_of(Replay)),
    power=optional(instance_of(Power)),
    model=optional(text),
    doubling=_doubling_replay,
    counterfactual=optional(instance_of(Counterfactual)),
)
def decide(
    holds: bool,
    statuses: Mapping[str, Status],
    *,
    replay: Replay | None = None,
    power: Power | None = None,
    model: str | None = None,
    doubling: Replay | None = None,
    counterfactual: Counterfactual | None = None,
) -> Decision:
    """The one gate of every trained and case-study verdict (docs/verdicts.md, "The kinds").

    Parameters
    ----------
    holds : bool
        The check's outcome on the model read.
    statuses : mapping of str to Status
        The convergence status of every run the claim reads (either test), by name.
    replay : Replay, optional
        The check re-decided along the curves, or at the two budgets of a doubling pair.
    power : Power, optional
        What the check can detect; a failing check without one fails as measured.
    model : str, optional
        The model the measurement read (default: the statuses' ``model``).
    doubling : Replay, optional
        The check at the two budgets S and 2S (source "doubling"; default: ``replay`` when it is
        one). Where every run that got worse got worse by budget doubling alone (the 2S model
        worse than the S one, not worse than its initialisation) and the check has the row's
        outcome at S and at 2S, the worsening cannot change the answer: the row is decided by the
        rules below, with the worsening as its caveat (``Decision.caveat``, where it sits per
        n'). Where ``replay`` is absent or cannot decide, ``doubling`` is the replay.
    counterfactual : Counterfactual, optional
        The check re-decided with the runs worse than their initialisation credited with their
        step-0 values (:func:`initialisation_counterfactual`). A run worse than its
        initialisation is a caveat, not the kind, only where it is one of the credited runs, the
        check has the row's outcome under every crediting, and, where ``doubling`` is given, at
        S and 2S too (docs/verdicts.md, "Crediting the initialisation"); without one, such a run
        makes the row *worse with training*.

    Returns
    -------
    Decision
        First rule that applies: a run got worse (diverging, or worse than its initialisation at
        some n') where the worsening could change the answer -> *worse with training*; every run
        plateaued -> *holds*, or *does not hold* when
        ``power`` refutes the claimed effect (*undecided (underpowered)* otherwise); the replay
        decides with one outcome throughout -> *holds / fails at budget* (the same power rule for
        *fails*); otherwise *undecided*.

    Raises
    ------
    ValueError
        ``statuses`` empty without ``model`` (an empty input is no verdict: a claim that reads no
        trained run says so with ``model``, e.g. "no trained run", and its power decides), or a
        ``replay`` with a step beyond the last step of every run read (the check replayed on
        other runs). :class:`Replay`, :class:`~pfntheory.infra.status.Status` and
        :class:`~pfntheory.claims.Power` check their own fields.
    """
    sts = dict(statuses)
    if not sts and model is None:
        raise ValueError(
            "statuses must not be empty: the gate decides on the statuses of the runs a claim "
            "reads; a claim that reads no trained run passes model (e.g. 'no trained run')"
        )
    states = tuple(sorted(Counter(st.state for st in sts.values()).items()))
    steps = [st.last_step for st in sts.values() if st.last_step is not None]
    if replay is not None and replay.steps and steps and replay.steps[-1] > max(steps):
        raise ValueError(
            f"replay has steps up to {replay.steps[-1]}, beyond the last step {max(steps)} of "
            "the runs in statuses: it was replayed on other runs"
        )
    tests = {st.test for st in sts.values()} - {"none"}
    base = Decision(
        kind=UNDECIDED,
        holds=holds,
        rule="open",
        model=model or _model_of(sts),
        n_runs=len(sts),
        states=states,
        last_step=max(steps) if steps else None,
        replay=replay,
        power=power,
        test="doubling" if tests == {"doubling"} else "log-half",
    )
    refuted = power is None or power.refutes
    if doubling is None and replay is not None and replay.source == "doubling":
        doubling = replay
    got_worse = {n: st for n, st in sts.items() if st.got_worse}
    worse = tuple(_worse_text(n, st) for n, st in got_worse.items())
    at_both = doubling is not None and doubling.decides and all(h == holds for h in doubling.held)
    credited = (
        counterfactual is not None
        and counterfactual.agrees(holds)
        and (doubling is None or at_both)
    )

    def unchanged(name: str, st: Status) -> bool:
        """The worsening of run ``name`` cannot change the answer: diverging by budget doubling
        with the check's outcome at S and 2S; worse than its initialisation, credited with it by
        the counterfactual with the check's outcome (and at S and 2S where the row has them)."""
        if st.diverging and not (st.test == "doubling" and at_both):
            return False
        return not st.worse_than_start or (
            credited and counterfactual is not None and name in counterfactual.runs
        )

    if worse and not all(unchanged(n, st) for n, st in got_worse.items()):
        return dataclasses.replace(base, kind=WORSE, rule="worse", worse=worse)
    if worse:  # the check keeps its outcome where the worsening is undone: a caveat
        from_start = any(st.worse_than_start for st in got_worse.values())
        base = dataclasses.replace(
            base,
            caveat=worse,
            doubling=doubling,
            counterfactual=counterfactual if from_start else None,
        )
        if (replay is None or not replay.decides) and doubling is not None:
            replay = doubling
            base = dataclasses.replace(base, replay=doubling)
    if (replay is None or not replay.decides) and doubling is not None and doubling.decides:
        # the curves cannot replay the check (e.g. runs of different budgets share no curve
        # step): the check at the two budgets is the replay
        replay = doubling
        base = dataclasses.replace(base, replay=doubling)
    if all(st.plateaued for st in sts.values()):
        if holds or refuted:
            return dataclasses.replace(base, kind=HOLDS if holds else FAILS, rule="plateaued")
        return dataclasses.replace(base, kind=UNDERPOWERED, rule="underpowered")
    if replay is not None and replay.decides and all(h == holds for h in replay.held):
        if holds or refuted:
            kind = HOLDS_AT_BUDGET if holds else FAILS_AT_BUDGET
            return dataclasses.replace(base, kind=kind, rule="at budget")
        return dataclasses.replace(base, kind=UNDERPOWERED, rule="underpowered")
    return base


def _model_of(sts: Mapping[str, Status]) -> str:
    models = sorted({st.model for st in sts.values()})
    return models[0] if len(models) == 1 else "the runs' final weights"


def _worse_text(name: str, st: Status) -> str:
    """Where one run got worse, in words (by budget doubling: per n')."""
    parts = []
    if st.diverging:
        where = doubling_where(st)
        parts.append(
            "diverging by budget doubling (the doubled budget made E[TV] worse, fall "
            f"{st.fall:.3g}, 90% CI [{st.ci[0]:.3g}, {st.ci[1]:.3g}]"
            + (f"; per n': {where}" if where else "")
            + ")"
            if st.test == "doubling"
            else f"diverging (its E[TV] rose over the last log-half: fitted fall {st.fall:.3g})"
        )
    at = {row[0]: row for row in st.start}
    for n in st.worse_than_start:
        parts.append(
            f"worse than its initialisation at n'={n} (E[TV] {at[n][1]:.3g} at step 0, "
            f"{at[n][3]:.3g} at {st.last_step} steps)"
        )
    return f"{name}: " + " and ".join(parts)


@checked(statuses=lambda x, name: mapping(x, name, non_empty=False))
def plateau_tally(statuses: Mapping[str, Any]) -> dict[str, Any]:
    """One plateau tally of an experiment's runs, the numbers the index, page 07 and the runs
    table share. ``statuses``: run -> its :class:`~pfntheory.infra.status.Status` (or a status dict,
    or a row's ``run_states`` entry ``[state, last_step, got_worse]``). Returns ``n`` runs,
    ``plateaued``, ``worse`` (got worse with training), ``states`` (``{state: count}``) and
    ``text`` ("16 of 133 runs plateaued (...)")."""
    cells = []
    for name, st in statuses.items():
        if isinstance(st, Status):
            cells.append((st.state, st.got_worse))
        elif isinstance(st, Mapping):
            s2 = as_status(st)
            cells.append((s2.state, s2.got_worse))
        elif isinstance(st, (list, tuple)) and st and isinstance(st[0], str):
            cells.append((st[0], bool(st[2]) if len(st) > 2 else st[0] == "diverging"))
        else:
            raise ArgumentTypeError(f"statuses[{name!r}] must be a Status or [state, step, worse]")
    states = dict(sorted(Counter(c[0] for c in cells).items()))
    plateaued = states.get("plateaued", 0)
    worse = sum(w for _, w in cells)
    detail = ", ".join(f"{v} {k}" for k, v in states.items())
    return {
        "n": len(cells),
        "plateaued": plateaued,
        "worse": worse,
        "states": states,
        "text": f"{plateaued} of {len(cells)} runs plateaued ({detail}"
        + (f"; {worse} got worse with training" if worse else "")
        + ")",
    }


def gate(
    result: ClaimResult,
    runs,
    curves: tuple = (None,),
    metrics: tuple = ("tv",),
    replay=None,
    statuses: dict | None = None,
    replay_curve: str | None = None,
    doubling: Replay | None = None,
    recheck=None,
) -> ClaimResult:
    """Attach the convergence of every run ``result`` rests on, and decide its verdict kind with
    :func:`decide`. ``replay`` (see :func:`budget_outcomes`) re-decides the check at every step of
    the last log-half of the curves on ``replay_curve`` (None: the task's own design);
    ``curves``: the learning curves whose status is read, by covariate law (None: the task's own;
    "uniform": the shift curve); ``metrics``: the curves' metrics read (E[TV]; a coverage claim
    whose curves are precise enough to decide adds ``"coverage90"``); ``statuses``: convergence
    statuses to use instead (run name -> :class:`~pfntheory.infra.status.Status`, e.g.
    :func:`doubling_statuses`); ``doubling``: the check at the two budgets S and 2S (a
    :class:`Replay` of source "doubling", :func:`at_both_budgets`), which keeps a row whose runs
    got worse by budget doubling from *worse with training* where both outcomes are its own
    (:func:`decide`); ``recheck``: the claim's check on the runs' evaluations (``recheck(eval_of)``,
    :func:`initialisation_counterfactual`), re-decided with the runs worse than their
    initialisation credited with it, which keeps the row from *worse with training* where the
    outcome survives (:func:`decide`; without it such a run makes the row *worse with training*).
    A result whose verdict is already set (an explicit one) is returned with its statuses
    attached, undecided by the gate."""
    runs, replay = loaded_runs(runs), replay_of(replay, optional=True)
    recheck = replay_of(recheck, "recheck", optional=True)
    statuses_of(statuses, runs)
    conv = (
        {r.run_dir.name: statuses[r.run_dir.name] for r in trained_runs(runs)}
        if statuses is not None
        else {
            r.run_dir.name
            + ("" if cov is None else f" [{cov}]")
            + ("" if metric == "tv" else f" {metric}"): run_convergence(r, cov, metric)
            for r in trained_runs(runs)
            for cov in curves
            for metric in metrics
        }
    )
    details = {**result.details, "convergence": {k: v.to_dict() for k, v in conv.items()}}
    if result.verdict is not None or not conv:
        return dataclasses.replace(result, details=details)
    rep = None
    if replay is not None and not all(st.plateaued for st in conv.values()):
        b = budget_outcomes(runs, replay, replay_curve)
        rep = Replay(tuple(b["steps"]), tuple(b["held"]))
    cf = None if recheck is None else initialisation_counterfactual(recheck, runs, conv)
    return decided(result, conv, replay=rep, doubling=doubling, counterfactual=cf, details=details)


def decided(
    result: ClaimResult, statuses: Mapping[str, Status], *, details: dict | None = None, **how
) -> ClaimResult:
    """``result`` with the verdict and the :class:`Decision` of the one gate (:func:`decide`) on
    ``statuses``, its check's outcome (``result.holds``) and power (``result.power``); ``how``:
    :func:`decide`'s ``replay``, ``doubling``, ``counterfactual`` and ``model``, checked there.
    ``details``: the result's details after the decision (default: unchanged). The one wrapper of
    :func:`decide` for claims."""
    d = decide(result.holds, statuses, power=result.power, **how)
    return dataclasses.replace(
        result, verdict=d.kind, decision=d, details=result.details if details is None else details
    )


#: The most runs one counterfactual credits: its check is re-decided under every non-empty subset
#: of them (``2^k - 1`` checks), so the count is kept small; a claim with more runs worse than
#: their initialisation gets no counterfactual and stays *worse with training* (a fig:exp1 slice
#: reads at most 5 runs).
MAX_CREDITED = 6


def _credited_eval(ev, st: Status):
    """``(ev credited, where)``: the evaluation ``ev`` of a run whose status ``st`` is worse than
    its initialisation, with E[TV] (and its SE) at each n' of ``st.worse_than_start`` replaced by
    the learning curve's step-0 value there, and where, in words; None when such an n' is not
    among the evaluation's n' (the credit cannot be placed)."""
    at = {row[0]: row for row in st.start}
    mean = np.array(ev.mean["tv"], float)
    se = np.array(ev.se["tv"], float)
    parts = []
    for n in st.worse_than_start:
        idx = np.flatnonzero(np.asarray(ev.n_eval) == n)
        if idx.size == 0:
            return None
        j = int(idx[0])
        parts.append(f"n'={n}: E[TV] {mean[j]:.3g} -> {at[n][1]:.3g}, its value at step 0")
        mean[j], se[j] = at[n][1], at[n][2]
    credited = dataclasses.replace(ev, mean={**ev.mean, "tv": mean}, se={**ev.se, "tv": se})
    return credited, "at " + "; ".join(parts)


def initialisation_counterfactual(check, runs, statuses) -> Counterfactual | None:
    """The claim's check re-decided with every run of ``runs`` that training made worse than its
    initialisation credited with it (docs/verdicts.md, "Crediting the initialisation"): in the
    run's evaluation, E[TV] at each n' where its status is worse than at step 0 is replaced by
    the learning curve's step-0 value (and SE) there, the best the run has been shown to be; the
    check is re-decided under every non-empty subset of the credited runs, all of them last.

    ``check(eval_of)``: the claim's check on the runs' evaluations, ``eval_of(run)`` the run's
    :class:`~pfntheory.experiments.results.EvalTable` (credited, or as measured); it returns the
    check's :class:`~pfntheory.claims.ClaimResult` (``holds``, ``observed``, ``bound``).
    ``statuses``: run name -> :class:`~pfntheory.infra.status.Status` of E[TV] (either test) of
    the runs the claim is gated on; a run without one is not credited.

    Returns None (no counterfactual: a run worse than its initialisation then makes the row
    *worse with training*) when no run is worse than its initialisation, when such an n' is not
    among the run's evaluation n' (the credit cannot be placed), or when more than
    :data:`MAX_CREDITED` runs are."""
    check, runs = replay_of(check, "check"), loaded_runs(runs)
    sts = _statuses(statuses, "statuses")
    worse = [
        r
        for r in trained_runs(runs)
        if r.run_dir.name in sts and sts[r.run_dir.name].worse_than_start
    ]
    if not worse or len(worse) > MAX_CREDITED:
        return None
    credit = {}
    for r in worse:
        c = _credited_eval(r.eval, sts[r.run_dir.name])
        if c is None:
            return None
        credit[r.run_dir.name] = c
    names = list(credit)
    results = []
    for mask in range(1, 2 ** len(names)):  # every non-empty subset; all of them last
        chosen = {n for i, n in enumerate(names) if mask >> i & 1}
        res = check(
            lambda r, chosen=chosen: (
                credit[r.run_dir.name][0] if r.run_dir.name in chosen else r.eval
            )
        )
        instance_of(ClaimResult)(res, "check's result")
        results.append(res)
    full = results[-1]
    return Counterfactual(
        held=tuple(bool(r.holds) for r in results),
        observed=float(full.observed),
        bound=float(full.bound),
        credited=tuple((n, credit[n][1]) for n in names),
    )


@checked(short=instance_of(ClaimResult), long=instance_of(ClaimResult), statuses=_statuses)
def at_both_budgets(short: ClaimResult, long: ClaimResult, statuses: Mapping[str, Status]):
    """The :class:`Replay` of one check measured on the S runs (``short``) and on the 2S runs
    (``long``) of a budget-doubling grid: its outcomes at the two budgets, the steps read from
    ``statuses`` (the doubling statuses of the 2S runs the check reads: ``short_step`` and
    ``last_step``; every one the same pair). None when a status has no half-budget partner."""
    sts = list(statuses.values())
    if not sts or any(st.short_step is None or st.last_step is None for st in sts):
        return None
    pairs = {(int(st.short_step or 0), int(st.last_step or 0)) for st in sts}
    if len(pairs) != 1:
        raise ValueError(f"statuses must share one budget pair (S, 2S), got {sorted(pairs)}")
    ((a, b),) = pairs
    return Replay.at_budgets((a, b), (bool(short.holds), bool(long.holds)))


def beats(a: tuple[float, float], b: tuple[float, float], z: float) -> bool:
    """``a - b > z SE`` for two (mean, SE) pairs (:func:`exceeds`'s rule on curve values)."""
    D, se = diff_se(a, b)
    return bool(D > z * se)


def tv_beats(a, b, z: float):
    """The replay "run ``a``'s E[TV] exceeds run ``b``'s by ``z`` SE" (:func:`gate`)."""
    a, b, z = loaded_run(a, "a"), loaded_run(b, "b"), positive_scalar(z, "z")
    return lambda v: beats(v(a)["tv"], v(b)["tv"], z)


def coverage_cells(e, levels=(90, 95)):
    """``(level, n', coverage, SE)`` of every coverage level (in %) and n' of one evaluation (a
    loaded ``eval.json``: ``n_eval``, ``mean`` and ``se`` of ``coverage_<level>``)."""
    for lv in levels:
        for j, n in enumerate(e.n_eval):
            yield lv, int(n), float(e.mean[f"coverage_{lv}"][j]), float(e.se[f"coverage_{lv}"][j])


def coverage_ok(v: dict, z: float, slack: float = COVERAGE_SLACK) -> bool:
    """The coverage claim's rule at every n' of one curve point."""
    return all(
        abs(c["coverage90"][0] - 0.9) - z * c["coverage90"][1] <= slack for c in v["by_n"].values()
    )


# --------------------------------------------------------------------------------------------------
# fig:exp1
