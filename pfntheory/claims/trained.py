"""Checks of the paper's trained claims on committed runs (read-only; no training).

Every function takes the runs of one experiment
(:func:`pfntheory.experiments.results.load_experiment`) and returns
:class:`pfntheory.claims.ClaimResult` objects, each with a stable ``key``;
``verify/test_trained_claims.py`` picks them by key and asserts on them.

Convergence gate
----------------
``holds`` is the measurement. The *verdict* is "undecided" unless every run a claim rests on has a
learning curve that has plateaued (:func:`pfntheory.convergence.plateau_status`, metric E[TV]); the
status of each run is in ``details["convergence"]``. Runs without a learning curve (the quick scale
predates them) count as not known to have plateaued.

Statistical margin
------------------
Each comparison is between means over evaluation instances, with their standard errors (SE) from the
eval files. A difference ``D = a - b`` counts as real when ``D > Z_MARGIN * SE_D`` with
``SE_D = sqrt(SE_a^2 + SE_b^2)``. All runs of one task are evaluated on the *same* instances (the
instances depend only on the evaluation seed and n'), so the two means are positively correlated and
this unpaired ``SE_D`` over-states the paired one: the test is conservative. ``Z_MARGIN = 3`` is a
one-sided normal tail of 0.13% per comparison. A mean over several n' has SE ``sqrt(sum SE^2)/k``
(independent instances at different n').

Claims (labels)
---------------
* fig:exp1 / thm:PPD convergence: E[TV] falls with C (at the largest depth, where the solver error
  no longer dominates) and falls with depth L (at the largest C).
* fig:exp2-1: the unnormalised TF's E[TV] rises beyond the pretraining range of n; the normalised
  TF^pr's relative rise is smaller (its curve is flatter).
* fig:exp2-2 / supp-fig:exp2-3 / thm:L growth: E[TV] over n' falls with L (each n_max) and with
  n_max (each L); for fixed (L, n_max) it grows with n' (fitted slope of log E[TV] on n', 95% CI
  above 0); 90% coverage of the deepest, widest-range model near nominal.
* supp-tab:lengthscale-crps, supp-tab:hierarchical-gp: CRPS falls with L; 90/95% coverage of the
  deepest model near nominal at every n'; no model beats the exact PPD's CRPS.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from .._checks import finite_scalar, float_tuple, nonneg_scalar, positive_scalar
from ..config import curve_file
from ..convergence import (
    MIN_POINTS,
    curve_status,
    last_half_start,
    last_half_values,
    read_curve_points,
)
from ..experiments.specs import ExactPPDSpec, RunSpec, StepsizeSpec
from . import FAILS, FAILS_AT_BUDGET, HOLDS, HOLDS_AT_BUDGET, UNDECIDED, ClaimResult, slope_ci

__all__ = [
    "Z_MARGIN",
    "COVERAGE_SLACK",
    "curve_file",
    "run_convergence",
    "budget_outcomes",
    "tv_beats",
    "doubling_statuses",
    "gate",
    "diff_se",
    "exceeds",
    "check_exp1",
    "check_exp2_1",
    "check_exp2_2",
    "check_shift_regime",
    "coverage_along_curve",
    "check_table",
    "check_stepsize",
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


def _trained(runs):
    return [r for r in runs if isinstance(r.spec, RunSpec)]


def run_convergence(run, covariates: str | None = None, metric: str = "tv") -> dict:
    """Plateau status (``metric``, E[TV] by default) of one loaded run from its
    ``learning_curve.json`` (with ``covariates``: its curve on that covariate law, e.g. the
    covariate shift); a run without one gets ``{"state": "no curve", "plateaued": False,
    "criterion": "no learning curve"}``."""
    st = curve_status(run.run_dir / curve_file(covariates), metric=metric)
    if st["state"] == "no curve":
        st["last_step"] = int(run.spec.steps)
        st["trend"] += f" (trained {run.spec.steps} steps)"
    return st


def doubling_statuses(runs) -> dict:
    """Budget-doubling convergence (:func:`pfntheory.convergence.doubling_status`) of every run of
    ``runs`` that has a partner trained for half its steps (same spec otherwise), by run name;
    runs without one get ``{"state": "no half-budget run", "plateaued": False, ...}``."""
    from ..convergence import doubling_status

    tr = _trained(runs)

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
        st = doubling_status(
            read_curve_points(half.run_dir / curve_file(None)) or [],
            read_curve_points(r.run_dir / curve_file(None)) or [],
        )
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
    vals = {}
    for r in _trained(runs):
        points = read_curve_points(r.run_dir / curve_file(covariates))
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
    conv = (
        {r.run_dir.name: statuses[r.run_dir.name] for r in _trained(runs)}
        if statuses is not None
        else {
            r.run_dir.name
            + ("" if cov is None else f" [{cov}]")
            + ("" if metric == "tv" else f" {metric}"): run_convergence(r, cov, metric)
            for r in _trained(runs)
            for cov in curves
            for metric in metrics
        }
    )
    verdict = result.verdict
    if conv and not all(c["plateaued"] for c in conv.values()) and replay is not None:
        b = budget_outcomes(runs, replay, replay_curve)
        steps = max(c["last_step"] for c in conv.values())
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
                f"{sum(not c['plateaued'] for c in conv.values())} of {len(conv)} runs "
                "not plateaued ("
                + ", ".join(
                    f"{v} {k}"
                    for k, v in sorted(
                        Counter(c["state"] for c in conv.values() if not c["plateaued"]).items()
                    )
                )
                + ")",
                details={**result.details, "convergence": conv, "at_budget": b},
            )
        result = dataclasses.replace(result, details={**result.details, "at_budget": b})
    if conv and not all(c["plateaued"] for c in conv.values()):
        steps = max(c["last_step"] for c in conv.values())
        states: dict[str, int] = defaultdict(int)
        for c in conv.values():
            if not c["plateaued"]:
                states[c["state"]] += 1
        verdict = UNDECIDED
        result = dataclasses.replace(
            result,
            tolerance=result.tolerance
            + (
                f"; undecided: {sum(not c['plateaued'] for c in conv.values())} of {len(conv)} "
                f"{'runs' if (curves, metrics) == ((None,), ('tv',)) else 'learning curves'} "
                f"have not plateaued at {steps} steps ("
                + ", ".join(f"{v} {k}" for k, v in sorted(states.items()))
                + ")"
                + _budget_note(result.details.get("at_budget"))
            ),
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


def _beats(a: tuple[float, float], b: tuple[float, float], z: float) -> bool:
    """``a - b > z SE`` for two (mean, SE) pairs (:func:`exceeds`'s rule on curve values)."""
    D, se = diff_se(a, b)
    return bool(D > z * se)


def tv_beats(a, b, z: float):
    """The replay "run ``a``'s E[TV] exceeds run ``b``'s by ``z`` SE" (:func:`gate`)."""
    return lambda v: _beats(v(a)["tv"], v(b)["tv"], z)


def _coverage_ok(v: dict, z: float, slack: float = COVERAGE_SLACK) -> bool:
    """The coverage claim's rule at every n' of one curve point."""
    return all(
        abs(c["coverage90"][0] - 0.9) - z * c["coverage90"][1] <= slack for c in v["by_n"].values()
    )


# --------------------------------------------------------------------------------------------------
# fig:exp1
# --------------------------------------------------------------------------------------------------


def check_exp1(runs, z: float = Z_MARGIN, statuses: dict | None = None) -> list[ClaimResult]:
    """Per panel (task, mode): TV falls with C at the largest L, and with L at the largest C.
    ``statuses``: convergence statuses by run name to gate on instead of the curves' own (the
    budget-doubling statuses of :func:`check_exp1_budget`)."""
    panels: defaultdict[tuple[str, str], dict[tuple[int, int], Any]] = defaultdict(dict)
    for r in _trained(runs):
        panels[(r.spec.task.kind, r.spec.model.mode)][(r.spec.model.L, r.spec.model.C)] = r.eval
    out = []
    by_panel = defaultdict(list)
    run_of = {}
    for r in _trained(runs):
        by_panel[(r.spec.task.kind, r.spec.model.mode)].append(r)
        run_of[(r.spec.task.kind, r.spec.model.mode, r.spec.model.L, r.spec.model.C)] = r
    for (kind, mode), cells in sorted(panels.items()):
        prefix = f"fig_exp1.{kind}.{mode}"
        Ls = sorted({L for L, _ in cells})
        Cs = sorted({C for _, C in cells})
        tv = {k: e.average("tv") for k, e in cells.items()}
        grid = [[tv[(L, C)][0] for C in Cs] for L in Ls]
        details = {
            "L": Ls,
            "C": Cs,
            "tv_mean_grid": grid,
            "tv_se_grid": [[tv[(L, C)][1] for C in Cs] for L in Ls],
        }
        # the two slices the figure plots: C at the largest L, and L at the largest C
        for axis, values, at, line in (
            ("C", Cs, f"L={Ls[-1]}", [(Ls[-1], C) for C in Cs]),
            ("L", Ls, f"C={Cs[-1]}", [(L, Cs[-1]) for L in Ls]),
        ):
            slope = slope_ci(np.log(values), np.log([tv[cell][0] for cell in line]))
            D, se = diff_se(tv[line[0]], tv[line[-1]])
            out.append(
                gate(
                    exceeds(
                        D,
                        se,
                        z,
                        key=f"{prefix}.tv_falls_with_{axis}",
                        label="fig:exp1",
                        statement=f"{kind}/{mode}: E[TV] falls with {axis} at {at} "
                        f"({axis}={values[0]} -> {values[-1]})",
                        tolerance=f"TV({axis}_min) - TV({axis}_max) > {z:g} SE (SE={se:.2g}); "
                        f"log-log slope in {axis} {slope[0]:.3f} "
                        f"(95% CI {slope[1][0]:.2f} to {slope[1][1]:.2f}, 3 points)",
                        details={
                            **details,
                            f"slope_log{axis}": slope[0],
                            f"slope_log{axis}_ci": list(slope[1]),
                        },
                    ),
                    by_panel[(kind, mode)],
                    replay=tv_beats(
                        run_of[(kind, mode, *line[0])], run_of[(kind, mode, *line[-1])], z
                    ),
                    statuses=statuses,
                )
            )
    return out


# --------------------------------------------------------------------------------------------------
# fig:exp2-1
# --------------------------------------------------------------------------------------------------


def _log_rise(top: tuple[float, float], inside: tuple[float, float]) -> tuple[float, float]:
    """``log(top / inside)`` of two (mean, SE) E[TV] values, with its delta-method SE."""
    return (
        float(np.log(top[0] / inside[0])),
        float(np.hypot(top[1] / top[0], inside[1] / inside[0])),
    )


def _exp2_1_replays(tf, pr, z: float) -> dict:
    """fig:exp2-1's two checks on one learning-curve point, when the curves carry an n' beyond the
    pretraining range (the ``fig_exp2_1_budget`` runs): the mean E[TV] over the curve's n' inside
    [n_min, n_max] (unpaired SE of the mean) against that at its largest n'. Empty otherwise."""
    n_min, n_max = tf.spec.n_min, tf.spec.n_max
    ns = sorted(set(tf.spec.curve_n_eval) & set(pr.spec.curve_n_eval))
    inside = [n for n in ns if n_min <= n <= n_max]
    if not inside or not ns or ns[-1] <= n_max:
        return {}

    def ends(point) -> tuple[tuple[float, float], tuple[float, float]]:
        by = point["by_n"]
        vals = [by[n]["tv"] for n in inside]
        mean = float(np.mean([m for m, _ in vals]))
        se = float(np.sqrt(np.sum([e**2 for _, e in vals])) / len(vals))
        return by[ns[-1]]["tv"], (mean, se)

    return {
        "fig_exp2_1.tf_rises_beyond_range": lambda v: _beats(*ends(v(tf)), z),
        "fig_exp2_1.pr_flatter": lambda v: _beats(
            _log_rise(*ends(v(tf))), _log_rise(*ends(v(pr))), z
        ),
    }


def check_exp2_1(runs, z: float = Z_MARGIN, statuses: dict | None = None) -> list[ClaimResult]:
    """Unnormalised TF rises beyond n_max; the normalised model's relative rise is smaller.
    ``statuses``: convergence statuses by run name to gate on (budget doubling,
    :func:`doubling_statuses`); with several budgets present, the longest runs are checked."""
    longest = max(r.spec.steps for r in _trained(runs))
    runs = [r for r in _trained(runs) if r.spec.steps == longest]
    by = {r.spec.model.normalised: r for r in runs}
    tf, pr = by[False], by[True]
    n_min, n_max = tf.spec.n_min, tf.spec.n_max
    ns = tf.eval.n_eval
    inside = (ns >= n_min) & (ns <= n_max)
    top = ns == ns.max()
    low = ns == ns.min()

    def parts(r):
        e = r.eval
        tin, tout, tlow = e.average("tv", inside), e.average("tv", top), e.average("tv", low)
        # delta method: SE(log m) = SE(m) / m
        lr = (np.log(tout[0] / tin[0]), float(np.hypot(tout[1] / tout[0], tin[1] / tin[0])))
        return tin, tout, tlow, lr, e.mean["tv"].tolist()

    tin, tout, tlow, lr_tf, curve_tf = parts(tf)
    pin, pout, plow, lr_pr, curve_pr = parts(pr)
    details = {
        "n_eval": ns.tolist(),
        "n_range": [n_min, n_max],
        "tv_tf": curve_tf,
        "tv_pr": curve_pr,
        "tv_tf_se": tf.eval.se["tv"].tolist(),
        "tv_pr_se": pr.eval.se["tv"].tolist(),
        "log_rise_tf": lr_tf[0],
        "log_rise_pr": lr_pr[0],
        "tv_tf_low_minus_inside": tlow[0] - tin[0],
        "tv_pr_low_minus_inside": plow[0] - pin[0],
    }
    D, se = diff_se(tout, tin)
    r1 = exceeds(
        D,
        se,
        z,
        key="fig_exp2_1.tf_rises_beyond_range",
        label="fig:exp2-1",
        statement=f"unnormalised TF: E[TV] at n'={ns.max()} exceeds its mean over "
        f"the pretraining range [{n_min},{n_max}]",
        tolerance=f"TV(n'_max) - TV(inside) > {z:g} SE (SE={se:.2g})",
        details=details,
    )
    D, se = diff_se(lr_tf, lr_pr)
    r2 = exceeds(
        D,
        se,
        z,
        key="fig_exp2_1.pr_flatter",
        label="fig:exp2-1",
        statement="normalised TF^pr stays flatter: its log TV rise from the "
        "pretraining range to the largest n' is smaller than TF's",
        tolerance=f"log-rise(TF) - log-rise(TF^pr) > {z:g} SE (delta method, SE={se:.2g})",
        details=details,
    )
    replays = _exp2_1_replays(tf, pr, z)
    gated_on = {"fig_exp2_1.tf_spikes_beyond_breakdown": [tf]}  # the others rest on both runs
    return [
        gate(r, gated_on.get(r.key, runs), replay=replays.get(r.key), statuses=statuses)
        for r in (r1, r2, *_exp2_1_breakdown(tf, pr, inside, z))
    ]


def _exp2_1_breakdown(tf, pr, inside, z: float) -> list[ClaimResult]:
    """fig:exp2-1 as the paper states it (sec:generalization): beyond the n' where a learned solver
    stops contracting, the unnormalised TF's E[TV] spikes while TF^pr stays stable. Reads
    ``breakdown.json`` beside the runs (:mod:`pfntheory.claims.breakdown`: each run's solver growth
    ``G(n')`` from its learned weights and the Gram spectrum, its predicted breakdown, and its
    E[TV] evaluated beyond n' = 200); none when the analysis has not been run."""
    from pathlib import Path

    from .. import runs as runfiles
    from .breakdown import BREAKDOWN_FILE

    path = Path(tf.run_dir).parent / BREAKDOWN_FILE
    if not path.is_file():
        return []
    doc = runfiles.load_json(path)
    if tf.run_dir.name not in doc or pr.run_dir.name not in doc:
        return []
    a, b = doc[tf.run_dir.name], doc[pr.run_dir.name]
    ns = a["beyond"]["n_eval"]
    t_in, p_in = tf.eval.average("tv", inside), pr.eval.average("tv", inside)
    t_out = (a["beyond"]["tv"][-1], a["beyond"]["tv_se"][-1])
    p_out = (b["beyond"]["tv"][-1], b["beyond"]["tv_se"][-1])
    n_star = a["predicted_breakdown"]
    details = {
        "n_beyond": ns,
        "tv_tf_beyond": a["beyond"]["tv"],
        "tv_pr_beyond": b["beyond"]["tv"],
        "tv_tf_beyond_se": a["beyond"]["tv_se"],
        "tv_pr_beyond_se": b["beyond"]["tv_se"],
        "growth_n": a["trained"]["n"],
        "growth_tf_mean_channel": a["trained"]["growth_f"],
        "growth_pr_mean_channel": b["trained"]["growth_f"],
        "growth_tf_init": a["init"]["growth_f"],
        "predicted_breakdown_tf": n_star,
        "predicted_breakdown_pr": b["predicted_breakdown"],
        "measured": "E[TV] at the largest n' beyond the evaluated range minus its mean over the "
        "pretraining range",
    }
    D, se = diff_se(t_out, t_in)
    spike = ClaimResult(
        key="fig_exp2_1.tf_spikes_beyond_breakdown",
        label="fig:exp2-1",
        statement=f"unnormalised TF: its learned solver stops contracting at a predicted n' = "
        f"{n_star} and its E[TV] spikes beyond (n' = {ns[-1]})",
        holds=bool(D > z * se and n_star is not None and n_star <= ns[-1]),
        observed=D,
        bound=z * se,
        tolerance=f"TV(n'={ns[-1]}) - TV(inside) > {z:g} SE (SE={se:.2g}), with the predicted "
        f"breakdown (sum over layers of log spectral radius > 0) at or below n'={ns[-1]}",
        details=details,
    )
    # TF^pr stays stable: its log-rise to the largest n' is smaller than TF's by z SE
    lr_tf = (np.log(t_out[0] / t_in[0]), float(np.hypot(t_out[1] / t_out[0], t_in[1] / t_in[0])))
    lr_pr = (np.log(p_out[0] / p_in[0]), float(np.hypot(p_out[1] / p_out[0], p_in[1] / p_in[0])))
    D, se = diff_se(lr_tf, lr_pr)
    stable = ClaimResult(
        key="fig_exp2_1.pr_stable_beyond_breakdown",
        label="fig:exp2-1",
        statement=f"normalised TF^pr stays stable where TF breaks down: its log E[TV] rise to "
        f"n' = {ns[-1]} is smaller than TF's",
        holds=bool(D > z * se),
        observed=D,
        bound=z * se,
        tolerance=f"log-rise(TF) - log-rise(TF^pr) > {z:g} SE (delta method, SE={se:.2g})",
        details={**details, "log_rise_tf": lr_tf[0], "log_rise_pr": lr_pr[0]},
    )
    return [spike, stable]


# --------------------------------------------------------------------------------------------------
# fig:exp2-2, supp-fig:exp2-3 and companions
# --------------------------------------------------------------------------------------------------


def check_exp2_2(runs, eval_file: str = "eval.json", z: float = Z_MARGIN) -> list[ClaimResult]:
    """Depth and n_max help; the solver error grows with n'; coverage near nominal
    (deepest, widest)."""
    cells = {(r.spec.model.L, r.spec.n_max): r.evals[eval_file] for r in _trained(runs)}
    run_of = {(r.spec.model.L, r.spec.n_max): r for r in _trained(runs)}
    Ls = sorted({L for L, _ in cells})
    Nm = sorted({m for _, m in cells})
    tv = {k: e.average("tv") for k, e in cells.items()}
    grid = {
        "L": Ls,
        "n_max": Nm,
        "tv_mean": [[tv[(L, m)][0] for m in Nm] for L in Ls],
        "tv_se": [[tv[(L, m)][1] for m in Nm] for L in Ls],
        "eval_file": eval_file,
    }
    out = []
    # depth, for each n_max
    comps = {m: diff_se(tv[(Ls[0], m)], tv[(Ls[-1], m)]) for m in Nm}
    worst = min(comps, key=lambda m: comps[m][0] / comps[m][1])
    out.append(
        ClaimResult(
            key="exp2_2.depth_helps",
            label="fig:exp2-2",
            statement=f"E[TV] over n' falls from L={Ls[0]} to L={Ls[-1]} for every n_max",
            holds=all(D > z * se for D, se in comps.values()),
            observed=comps[worst][0],
            bound=z * comps[worst][1],
            tolerance=f"TV(L_min) - TV(L_max) > {z:g} SE at each n_max (worst n_max={worst})",
            details={**grid, "diff_by_n_max": {str(m): v for m, v in comps.items()}},
        )
    )
    # n_max: generalisation beyond the shorter pretraining range, at the largest depth (a depth-
    # starved model is limited by its truncated solver, not by the range it saw: the smaller depths
    # are reported in the details, not tested)
    beyond = {L: cells[(L, Nm[0])].n_eval > Nm[0] for L in Ls}
    comps = {
        L: diff_se(
            cells[(L, Nm[0])].average("tv", beyond[L]), cells[(L, Nm[-1])].average("tv", beyond[L])
        )
        for L in Ls
    }
    D, se = comps[Ls[-1]]
    out.append(
        exceeds(
            D,
            se,
            z,
            key="exp2_2.n_max_helps",
            label="fig:exp2-2",
            statement=(
                f"E[TV] over n' > {Nm[0]} falls from n_max={Nm[0]} to n_max={Nm[-1]} (L={Ls[-1]})"
            ),
            tolerance=f"TV(n_max small) - TV(n_max large), mean over n' > {Nm[0]}, > {z:g} SE",
            details={**grid, "diff_by_L": {str(L): v for L, v in comps.items()}},
        )
    )
    # growth with n', for each (L, n_max)
    slopes = {}
    for (L, m), e in cells.items():
        s, ci, _ = slope_ci(e.n_eval, np.log(e.mean["tv"]))
        slopes[f"L{L}-nmax{m}"] = (s, ci)
    worst = min(slopes, key=lambda k: slopes[k][1][0])
    out.append(
        ClaimResult(
            key="exp2_2.tv_grows_with_n",
            label="supp-fig:exp2-3",
            statement="for fixed L and n_max, E[TV] grows with n' (every cell)",
            holds=all(ci[0] > 0 for _, ci in slopes.values()),
            observed=slopes[worst][0],
            bound=0.0,
            tolerance="95% CI of the slope of log E[TV] on n' lies above 0 in every cell "
            f"(worst {worst})",
            ci=slopes[worst][1],
            details={
                "slopes": {k: [s, list(ci)] for k, (s, ci) in slopes.items()},
                "mse_mean": {
                    f"L{L}-nmax{m}": e.mean["mse_mean"].tolist() for (L, m), e in cells.items()
                },
            },
        )
    )
    # coverage of the deepest, widest model
    out.append(
        _coverage_claim(
            cells[(Ls[-1], Nm[-1])],
            Ls[-1],
            Nm[-1],
            eval_file,
            z,
            "fig:exp2-2",
            "exp2_2.coverage_near_nominal",
        )
    )
    # the checks replayed on the learning curves (n' in {n_min, n_max} of each run), on the curve of
    # the design the eval file is about
    cov = None if eval_file == "eval.json" else eval_file[len("eval_") : -len(".json")]
    replays = {
        "exp2_2.depth_helps": lambda v: all(
            _beats(v(run_of[(Ls[0], m)])["tv"], v(run_of[(Ls[-1], m)])["tv"], z) for m in Nm
        ),
        "exp2_2.tv_grows_with_n": lambda v: all(
            _beats(v(r)["by_n"][max(v(r)["by_n"])]["tv"], v(r)["by_n"][min(v(r)["by_n"])]["tv"], z)
            for r in run_of.values()
        ),
        "exp2_2.coverage_near_nominal": lambda v: _coverage_ok(v(run_of[(Ls[-1], Nm[-1])]), z),
    }
    return [gate(r, runs, replay=replays.get(r.key), replay_curve=cov) for r in out]


def _coverage_claim(
    e, L: int, n_max: int, eval_file: str, z: float, label: str, key: str
) -> ClaimResult:
    """90% coverage of one run within COVERAGE_SLACK + z SE of nominal at every n'."""
    dev = np.abs(e.mean["coverage_90"] - 0.9) - z * e.se["coverage_90"]
    i = int(np.argmax(dev))
    return ClaimResult(
        key=key,
        label=label,
        statement=f"90% coverage near nominal for L={L}, n_max={n_max} at every n'",
        holds=bool(np.all(dev <= COVERAGE_SLACK)),
        observed=float(e.mean["coverage_90"][i]),
        bound=0.9,
        tolerance=f"|coverage - 0.9| <= {COVERAGE_SLACK} + {z:g} SE (worst n'={e.n_eval[i]})",
        details={
            "n_eval": e.n_eval.tolist(),
            "coverage_90": e.mean["coverage_90"].tolist(),
            "coverage_90_exact": e.mean.get("coverage_90_exact", np.array([])).tolist(),
            "width_90": e.mean["width_90"].tolist(),
            "width_90_exact": e.mean.get("width_90_exact", np.array([])).tolist(),
            "eval_file": eval_file,
        },
    )


def coverage_along_curve(
    run, covariates: str | None = None, z: float = Z_MARGIN, slack: float = COVERAGE_SLACK
) -> dict:
    """The coverage claim's own test applied at every point of a run's learning curve.

    A claim gated on a curve that is still improving is "undecided" (:func:`gate`); this says how
    the *measurement* behaved meanwhile, which the gate does not: at each evaluated step ``s > 0``
    of ``learning_curve*.json`` (``covariates`` as in :func:`run_convergence`) the claim "90%
    coverage near nominal" is tested as in :func:`_coverage_claim`, ``|coverage - 0.9| <= slack +
    z SE`` at every curve n'. It decides nothing (the curve's n' and instances are not the eval
    file's); it shows whether the measured verdict was stable while the run trained.

    Returns
    -------
    dict
        ``steps`` (list of int), ``held`` (list of bool, per step), ``worst`` (per step, the
        largest ``|coverage - 0.9| - z SE`` over n'), ``held_since`` (the first step from which the
        claim held at every later step, or None when it fails at the last step), ``points_held``
        (how many of the steps from ``held_since`` on), ``last_half_step`` (first step of the
        last log-half, :mod:`pfntheory.convergence`) and ``held_over_last_half`` (bool); a run
        without that curve gives ``{"steps": [], "held_since": None, ...}`` with ``file`` named.
    """
    path = run.run_dir / curve_file(covariates)
    empty = {
        "file": path.name,
        "steps": [],
        "held": [],
        "worst": [],
        "held_since": None,
        "points_held": 0,
        "last_half_step": None,
        "held_over_last_half": False,
    }
    points = read_curve_points(path)
    if points is None:
        return empty
    worst_by_step: dict[int, float] = {}
    for i, p in enumerate(points):
        try:
            step, cov, se = int(p["step"]), float(p["coverage90"]), float(p["coverage90_se"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: points[{i}] lacks step/coverage90/coverage90_se") from err
        if step <= 0:
            continue
        dev = abs(cov - 0.9) - z * se if np.isfinite(cov) and np.isfinite(se) else np.inf
        worst_by_step[step] = max(worst_by_step.get(step, -np.inf), dev)
    steps = sorted(worst_by_step)
    if not steps:
        return empty
    worst = [float(worst_by_step[s]) for s in steps]
    held = [w <= slack for w in worst]
    k = len(held)
    while k > 0 and held[k - 1]:
        k -= 1
    half = last_half_start(steps)
    return {
        "file": path.name,
        "steps": steps,
        "held": held,
        "worst": worst,
        "held_since": steps[k] if k < len(steps) else None,
        "points_held": len(steps) - k,
        "last_half_step": half,
        "held_over_last_half": all(h for s, h in zip(steps, held, strict=True) if s >= half),
    }


def _along_text(a: dict, covariates: str) -> str:
    """One line on :func:`coverage_along_curve`'s result ``a`` (a curve with at least one step)."""
    design = "N(0, I/d)" if covariates == "gaussian" else covariates
    if a["held_since"] is None:
        return (
            f"along its {design} learning curve the measurement fails at the last step "
            f"{a['steps'][-1]}"
        )
    return (
        f"along its {design} learning curve the measurement held at each of the last "
        f"{a['points_held']} of {len(a['steps'])} evaluated steps ({a['held_since']} to "
        f"{a['steps'][-1]}; last log-half from step {a['last_half_step']}: "
        f"{'held throughout' if a['held_over_last_half'] else 'not throughout'})"
    )


def check_shift_regime(runs, z: float = Z_MARGIN) -> list[ClaimResult]:
    """supp-sec:exp additional, covariate shift: in the claimed regime (n_max=512, L>=16) the
    deepest model's 90% coverage on the shifted inputs (``eval_uniform.json``) is near nominal, and
    so is its coverage on the pretraining design (``eval.json``), for reference. Of several runs
    the one with the largest (n_max, L, steps) decides: the longest-trained in the regime.

    ``details["covariates"]`` names the design a claim is measured on and ``details["regime"]`` the
    run's (d, L, C, n range, steps) with ``in_claimed_regime`` (d=4, n_max >= 512, L >= 16; the
    quick design is not). The shifted claim is gated on both learning curves
    (``learning_curve.json`` and ``learning_curve_uniform.json``): "undecided" unless the run has
    plateaued on the design the claim is about as well as on its own, in E[TV] and in 90% coverage
    (the quantity the claim is about; ``convergence.TOLERANCES``: within 0.02 over the last
    log-half, which curves of 1024 held-out instances per point can resolve and curves of 128,
    per-point SE 0.02-0.04, cannot)."""
    tr = _trained(runs)
    r = max(tr, key=lambda r: (r.spec.n_max, r.spec.model.L, r.spec.steps))
    in_regime = bool(r.spec.task.d == 4 and r.spec.n_max >= 512 and r.spec.model.L >= 16)
    regime = {
        "d": r.spec.task.d,
        "L": r.spec.model.L,
        "C": r.spec.model.C,
        "n_min": r.spec.n_min,
        "n_max": r.spec.n_max,
        "steps": r.spec.steps,
        "lr": r.spec.lr,
        "in_claimed_regime": in_regime,
        "claimed_regime": "d=4, TF^pr, n_max=512, L>=16 (supp-sec:exp additional)",
        "run": r.run_dir.name,
    }
    out = []
    for eval_file, what, key, cov, curves in (
        (
            "eval_uniform.json",
            "shifted inputs Unif[-1/sqrt d, 1/sqrt d]^d",
            "shifted",
            "uniform",
            (None, "uniform"),
        ),
        ("eval.json", "pretraining design N(0, I/d)", "pretraining", "gaussian", (None,)),
    ):
        c = _coverage_claim(
            r.evals[eval_file],
            r.spec.model.L,
            r.spec.n_max,
            eval_file,
            z,
            "supp-fig:exp2 d4-1 (covariate shift)",
            f"shift_regime.coverage.{key}",
        )
        along = {k or "own": coverage_along_curve(r, k, z) for k in curves}  # by curve's design
        c = dataclasses.replace(
            c,
            statement=f"{what}: {c.statement}",
            details={**c.details, "covariates": cov, "regime": regime, "along_curve": along},
        )
        c = gate(
            c,
            [r],
            curves=curves,
            metrics=("tv", "coverage90"),
            replay=lambda v, r=r: _coverage_ok(v(r), z),
            replay_curve=curves[-1],
        )
        followed = along[curves[-1] or "own"]
        if c.verdict == UNDECIDED and followed["steps"]:  # the measurement while the run trained
            c = dataclasses.replace(c, tolerance=c.tolerance + "; " + _along_text(followed, cov))
        out.append(c)
    return out


# --------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------


def check_table(runs, z: float = Z_MARGIN) -> list[ClaimResult]:
    """CRPS falls with L (averaged over the table's rows); deepest-L coverage near nominal;
    CRPS floor."""
    label = (
        "supp-tab:hierarchical-gp"
        if any(r.spec.task.kind == "hier_rbf" for r in runs)
        else "supp-tab:lengthscale-crps"
    )
    trained = _trained(runs)
    refs = {r.spec.task: r.result for r in runs if isinstance(r.spec, ExactPPDSpec)}
    run_of = {(r.spec.task, r.spec.model.L): r for r in trained}
    Ls = sorted({r.spec.model.L for r in trained})
    tasks = sorted({r.spec.task for r in trained}, key=lambda t: t.lengthscale)
    cell = {(r.spec.task, r.spec.model.L): r.eval for r in trained}
    rows = []
    for t in tasks:
        for j, n in enumerate(cell[(t, Ls[0])].n_eval):
            row: dict[str, Any] = {
                "lengthscale": t.lengthscale if t.kind == "rbf" else None,
                "n_prime": int(n),
            }
            for L in Ls:
                e = cell[(t, L)]
                row[f"crps_L{L}"] = float(e.mean["crps"][j])
                row[f"crps_se_L{L}"] = float(e.se["crps"][j])
                for lv in (50, 90, 95):
                    row[f"cov{lv}_L{L}"] = float(e.mean[f"coverage_{lv}"][j])
            if t in refs:
                k = refs[t]["n_eval"].index(int(n))
                row["crps_exact_ppd"] = refs[t]["metrics"]["crps"]["mean"][k]
                row["crps_exact_ppd_se"] = refs[t]["metrics"]["crps"]["se"][k]
            rows.append(row)
    out = []
    # CRPS falls with depth, averaged over all rows
    k = len(rows)
    a = (
        np.mean([r[f"crps_L{Ls[0]}"] for r in rows]),
        np.sqrt(np.sum([r[f"crps_se_L{Ls[0]}"] ** 2 for r in rows])) / k,
    )
    b = (
        np.mean([r[f"crps_L{Ls[-1]}"] for r in rows]),
        np.sqrt(np.sum([r[f"crps_se_L{Ls[-1]}"] ** 2 for r in rows])) / k,
    )
    D, se = diff_se(a, b)
    out.append(
        exceeds(
            D,
            se,
            z,
            key="table.crps_falls_with_L",
            label=label,
            statement=f"CRPS (averaged over the table's rows) falls from L={Ls[0]} to L={Ls[-1]}",
            tolerance=f"CRPS(L_min) - CRPS(L_max) > {z:g} SE (unpaired, conservative; SE={se:.2g})",
            details={"rows": rows, "L": Ls},
        )
    )
    # coverage near nominal at the deepest L, 90% and 95%
    devs: list[tuple[float, float, int, int, float]] = []
    for t in tasks:
        e = cell[(t, Ls[-1])]
        for lv in (90, 95):
            dev = np.abs(e.mean[f"coverage_{lv}"] - lv / 100) - z * e.se[f"coverage_{lv}"]
            for j, n in enumerate(e.n_eval):
                devs.append(
                    (float(dev[j]), t.lengthscale, lv, int(n), float(e.mean[f"coverage_{lv}"][j]))
                )
    worst_cov = max(devs)
    out.append(
        ClaimResult(
            key="table.coverage_near_nominal",
            label=label,
            statement=f"90% and 95% coverage near nominal at L={Ls[-1]} for every row "
            f"(including n' > n_max)",
            holds=bool(worst_cov[0] <= COVERAGE_SLACK),
            observed=worst_cov[4],
            bound=worst_cov[2] / 100,
            tolerance=f"|coverage - nominal| <= {COVERAGE_SLACK} + {z:g} SE (worst: "
            f"lengthscale={worst_cov[1]}, level={worst_cov[2]}%, n'={worst_cov[3]})",
            details={"rows": rows},
        )
    )
    # no model beats the exact PPD (same instances: crps_exact in the eval file)
    gaps = []
    for (t, L), e in cell.items():
        for j, n in enumerate(e.n_eval):
            D, se = diff_se(
                (e.mean["crps"][j], e.se["crps"][j]),
                (e.mean["crps_exact"][j], e.se["crps_exact"][j]),
            )
            gaps.append((D / se if se > 0 else np.inf, D, se, t.lengthscale, L, int(n)))
    worst_gap = min(gaps)
    out.append(
        ClaimResult(
            key="table.crps_not_below_exact",
            label=label,
            statement="no trained model's CRPS is below the exact PPD's on the same instances",
            holds=bool(worst_gap[1] > -z * worst_gap[2]),
            observed=worst_gap[1],
            bound=-z * worst_gap[2],
            tolerance=f"CRPS(model) - CRPS(exact) > -{z:g} SE (worst: "
            f"lengthscale={worst_gap[3]}, L={worst_gap[4]}, n'={worst_gap[5]}); not gated on "
            "convergence: the CRPS is a proper scoring rule, so the exact PPD is the floor at "
            "every budget",
            details={"gaps": [list(g[1:]) for g in gaps]},
            # explicit, so that the recorder does not gate it on the runs' curves either
            verdict=HOLDS if worst_gap[1] > -z * worst_gap[2] else FAILS,
        )
    )

    def crps_falls(v) -> bool:  # mean over the table's tasks of the curves' CRPS, as above
        ends = []
        for L in (Ls[0], Ls[-1]):
            vals = [v(run_of[(t, L)])["crps"] for t in tasks]
            se = np.sqrt(np.sum([e**2 for _, e in vals])) / len(vals)
            ends.append((np.mean([m for m, _ in vals]), se))
        return _beats(ends[0], ends[1], z)

    replays = {
        "table.crps_falls_with_L": crps_falls,
        "table.coverage_near_nominal": lambda v: all(
            _coverage_ok(v(run_of[(t, Ls[-1])]), z) for t in tasks
        ),
    }
    # "no model beats the exact PPD" is not gated: the CRPS is a proper scoring rule, so every
    # model, at every budget, scores at least the exact PPD's CRPS in expectation; training longer
    # cannot change what the check expects, only how close the model comes
    return [
        r if r.key == "table.crps_not_below_exact" else gate(r, runs, replay=replays.get(r.key))
        for r in out
    ]


# --------------------------------------------------------------------------------------------------
# fig:stepsize
# --------------------------------------------------------------------------------------------------


def check_stepsize(runs) -> list[ClaimResult]:
    """The admissible step ``2/(lambda_1 + sigma^2)`` is of order 1/n: the log-log slope is -1.

    ``lambda_1(G) = n lambda_inf + O(sqrt(n))`` (thm:lambda1), so the slope of log step on log n
    over n in [100, 1000] is -1 up to the O(n^-1/2) relative correction; the band
    [-1.1, -0.9] holds it.
    """
    out = []
    for r in runs:
        if not isinstance(r.spec, StepsizeSpec):
            continue
        ns = np.asarray(r.result["ns"], float)
        s, ci, _ = slope_ci(np.log(ns), np.log(r.result["mean"]))
        out.append(
            ClaimResult(
                key=f"fig_stepsize.{r.spec.kernel}.slope",
                label="fig:stepsize",
                statement=f"{r.spec.kernel} d={r.spec.d}: admissible step ~ 1/n",
                holds=bool(-1.1 <= s <= -0.9),
                observed=s,
                bound=-1.0,
                tolerance=(
                    "fitted log-log slope in [-1.1, -0.9] (O(n^-1/2) finite-n bias of lambda_1/n)"
                ),
                ci=ci,
                details={"ns": ns.tolist(), "mean": r.result["mean"], "limit": r.result["limit"]},
            )
        )
    return out
