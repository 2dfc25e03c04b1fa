"""The decision rules of the trained claims: the statistical margin, and the gate that turns a
measurement on runs still training into a verdict kind (docs/verdicts.md).

``holds`` is the measurement. :func:`gate` decides the verdict: the measurement's own when every
run it rests on has plateaued (its learning curve, or budget doubling, :func:`doubling_statuses`);
otherwise *holds / fails at budget* when the check, replayed on the curves, has one outcome over the
whole last log-half (:func:`budget_outcomes`), else *undecided*.

A difference ``D = a - b`` of two means counts as real when ``D > Z_MARGIN * SE_D`` with
``SE_D = sqrt(SE_a^2 + SE_b^2)``: runs of one task share their evaluation instances, so this
unpaired SE over-states the paired one and the test is conservative; ``Z_MARGIN = 3`` is a
one-sided normal tail of 0.13% per comparison.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import finite_scalar, float_tuple, nonneg_scalar, positive_scalar
from ..convergence import (
    MIN_POINTS,
    all_plateaued,
    curve_points,
    curve_status,
    last_half_values,
)
from ..experiments.specs import RunSpec
from . import FAILS, FAILS_AT_BUDGET, HOLDS, HOLDS_AT_BUDGET, UNDECIDED, ClaimResult
from ._inputs import loaded_run, loaded_runs, replay_of, statuses_of

__all__ = [
    "Z_MARGIN",
    "COVERAGE_SLACK",
    "run_convergence",
    "budget_outcomes",
    "tv_beats",
    "doubling_statuses",
    "gate",
    "diff_se",
    "exceeds",
]

#: Standard errors a difference must exceed to count (one-sided normal tail 0.13%).
Z_MARGIN = 3.0
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


def exceeds(D: float, se: float, z: float, **claim) -> ClaimResult:
    """The claim that a difference ``D`` with standard error ``se`` exceeds ``z`` standard errors
    (the decision rule of the module docstring); ``claim``: the other ClaimResult fields.

    ``D`` is finite, ``se >= 0`` and ``z > 0``.
    """
    D = finite_scalar(D, "D")
    se = nonneg_scalar(se, "se")
    z = positive_scalar(z, "z")
    return ClaimResult(holds=bool(D > z * se), observed=D, bound=z * se, **claim)


def trained_runs(runs):
    return [r for r in runs if isinstance(r.spec, RunSpec)]


def run_convergence(run, covariates: str | None = None, metric: str = "tv") -> dict:
    """Plateau status (``metric``, E[TV] by default) of one loaded run from its
    ``learning_curve.json`` (with ``covariates``: its curve on that covariate law, e.g. the
    covariate shift); a run without one gets ``{"state": "no curve", "plateaued": False,
    "criterion": "no learning curve"}``."""
    loaded_run(run)
    st = curve_status(run.run_dir, covariates, metric=metric)
    if st["state"] == "no curve":
        st["last_step"] = int(run.spec.steps)
        st["trend"] += f" (trained {run.spec.steps} steps)"
    return st


def doubling_statuses(runs) -> dict:
    """Budget-doubling convergence (:func:`pfntheory.convergence.doubling_status`) of every run of
    ``runs`` that has a partner trained for half its steps (same spec otherwise), by run name;
    runs without one get ``{"state": "no half-budget run", "plateaued": False, ...}``."""
    from ..convergence import doubling_status

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
            out[r.run_dir.name] = {
                "state": "no half-budget run",
                "plateaued": False,
                "diverging": False,
                "last_step": int(r.spec.steps),
                "criterion": "budget doubling needs the run at half the steps",
                "trend": f"no half-budget run ({r.spec.steps} steps)",
            }
            continue
        st = doubling_status(curve_points(half.run_dir) or [], curve_points(r.run_dir) or [])
        out[r.run_dir.name] = {**st, "trend": doubling_text(st), "half_run": half.run_dir.name}
    return out


def doubling_text(st: dict) -> str:
    """One line on a :func:`pfntheory.convergence.doubling_status`."""
    if not np.isfinite(st["change"]):
        return f"{st['state']} ({st['criterion']})"
    lo, hi = st["ci"]
    return (
        f"{st['state']} by budget doubling: E[TV] {st['value']:.4g} at {st['last_step']} steps, "
        f"fall from {st['short_step']} steps {st['change']:.3g} (90% CI [{lo:.3g}, {hi:.3g}], "
        f"paired over {st['n_instances']} held-out instances), tolerance {st['tol']:.3g}"
    )


def budget_outcomes(runs, replay, covariates: str | None = None) -> dict:
    """A claim's check re-decided at every step of the last log-half of its runs' learning curves.

    ``replay(value_of)`` returns the check's outcome (bool) from ``value_of(run)``, the run's curve
    values at one step (:func:`pfntheory.convergence.last_half_values`: ``{metric: (mean, se),
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


def gate(
    result: ClaimResult,
    runs,
    curves: tuple = (None,),
    metrics: tuple = ("tv",),
    replay=None,
    statuses: dict | None = None,
    replay_curve: str | None = None,
) -> ClaimResult:
    """Attach the convergence of every run ``result`` rests on, and decide its verdict kind
    (docs/verdicts.md): the measurement's verdict when all of them have plateaued; otherwise
    "holds at budget" / "fails at budget" when ``replay`` (see :func:`budget_outcomes`) gives the
    measured outcome at every one of at least ``MIN_POINTS`` steps of the last log-half of the
    curves on ``replay_curve`` (None: the task's own design), and "undecided" when the outcome
    changes there (or cannot be replayed). ``curves``: the learning curves that must have
    plateaued, by covariate law (None: the task's own; "uniform": the shift curve); ``metrics``:
    the curves' metrics that must have plateaued (E[TV]; a coverage claim whose curves are
    precise enough to decide adds ``"coverage90"``); ``statuses``: convergence statuses to use
    instead (run name -> status, e.g. :func:`pfntheory.convergence.doubling_status`)."""
    runs, replay = loaded_runs(runs), replay_of(replay, optional=True)
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
    verdict = result.verdict
    summary = all_plateaued(conv)
    open_runs = bool(conv) and not summary["plateaued"]
    not_plateaued = f"{len(summary['not_plateaued'])} of {len(conv)}"
    if open_runs and replay is not None:
        b = budget_outcomes(runs, replay, replay_curve)
        steps = summary["last_step"]
        b["final_held"] = bool(result.holds)
        if len(b["steps"]) >= MIN_POINTS and all(h == result.holds for h in b["held"]):
            kind = HOLDS_AT_BUDGET if result.holds else FAILS_AT_BUDGET
            word = "holds" if result.holds else "fails"
            return dataclasses.replace(
                result,
                verdict=kind,
                tolerance=result.tolerance
                + f"; {word} at budget: at each of the {len(b['steps'])} steps "
                f"{b['steps'][0]}-{b['steps'][-1]} of the last log-half of the learning "
                f"curves and in the final evaluation, at {steps} steps; "
                f"{not_plateaued} runs not plateaued ({summary['counts']})",
                details={**result.details, "convergence": conv, "at_budget": b},
            )
        result = dataclasses.replace(result, details={**result.details, "at_budget": b})
    if open_runs:
        verdict = UNDECIDED
        result = dataclasses.replace(
            result,
            tolerance=result.tolerance + f"; undecided: {not_plateaued} "
            f"{'runs' if (curves, metrics) == ((None,), ('tv',)) else 'learning curves'} "
            f"have not plateaued at {summary['last_step']} steps ({summary['counts']})"
            + _budget_note(result.details.get("at_budget")),
        )
    elif statuses is not None and conv and verdict is None:
        # plateaued by the statuses given (budget doubling): the measurement decides, and the
        # verdict is explicit so that the report does not re-gate it on the curves' log-half test
        verdict = HOLDS if result.holds else FAILS
        result = dataclasses.replace(
            result,
            tolerance=result.tolerance + f"; all {len(conv)} runs plateaued (budget doubling: "
            "doubling the steps changes the final E[TV] by less than 10%)",
        )
    return dataclasses.replace(
        result, verdict=verdict, details={**result.details, "convergence": conv}
    )


def _budget_note(b: dict | None) -> str:
    """Why a replayed check did not decide at budget (empty when it was not replayed)."""
    if b is None:
        return ""
    if len(b["steps"]) < MIN_POINTS:
        return (
            f"; the check could not be replayed on the curves ({len(b['steps'])} common steps in "
            f"the last log-half, {MIN_POINTS} needed)"
        )
    return (
        f"; the check's outcome changes within the last log-half: it holds at "
        f"{sum(b['held'])} of {len(b['held'])} steps ({b['steps'][0]}-{b['steps'][-1]}) and "
        f"{'holds' if b['final_held'] else 'fails'} in the final evaluation"
    )


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
