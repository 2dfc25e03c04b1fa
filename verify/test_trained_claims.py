"""The paper's trained claims, checked on the committed runs in ``reports/runs/`` (no
training here).

Results: fig:exp1 (sec:exp1), fig:exp2-1 (sec:exp2), fig:exp2-2 and supp-fig:exp2-3 (sec:exp3) with
their d=4 and d=8 companions (supp-fig:exp2 d4-1 ... supp-fig:exp2 d8-2), supp-tab:lengthscale-crps,
supp-tab:hierarchical-gp, and fig:stepsize (exact side, no training).

The runs are those that :mod:`pfntheory.experiments.definitions` declares at ``--scale`` (default
``quick``; ``cpu``: the paper's tasks with fewer steps; each design's ``shrunk`` note says how it
differs from the paper), produced by ``pfntheory sweep <experiment> --scale <scale>`` and read with
:func:`~pfntheory.experiments.results.load_experiment`. Every measurement is
:mod:`pfntheory.claims.trained`; this module picks each :class:`~pfntheory.claims.ClaimResult` by
its stable ``key``, asserts on it and prints it (observed value beside its bound, and its verdict:
"undecided" where a run it rests on is still improving).

Statistical margin: a difference of two means over evaluation instances counts only when it exceeds
``Z_MARGIN = 3`` standard errors (unpaired SE, conservative since all runs of one task share their
evaluation instances; one-sided normal tail 0.13% per comparison). Coverage may deviate from nominal
by ``COVERAGE_SLACK = 0.05`` plus ``Z_MARGIN`` binomial SEs. Rates are fitted slopes with a 95% CI.

A run that is missing or incomplete FAILS its test (it is a defect, never a reason to skip); so does
a stand-in run (``pfntheory sweep --dry-run``) found where a trained run should be. How each check
can fail is shown in ``tests/test_experiments.py``, which runs the same checks on stand-in runs
built to satisfy the claim and on inverted copies that must fail it.
"""

from functools import cache

import pytest

from pfntheory.claims import FAILS_AT_BUDGET, UNDECIDED, UNDERPOWERED, WORSE
from pfntheory.claims import gating as xg
from pfntheory.claims import pretraining_range as xr
from pfntheory.claims import trained as xc
from pfntheory.experiments.definitions import get_experiment
from pfntheory.experiments.results import MissingRunsError, load_experiment
from pfntheory.experiments.specs import StepsizeSpec
from pfntheory.infra.config import EXPERIMENT_SCALES
from pfntheory.infra.tree import RunSpec

Z, SLACK = xg.Z_MARGIN, xg.COVERAGE_SLACK


@cache
def _load(experiment: str, scale: str):
    return load_experiment(experiment, scale)


def _runs(experiment: str, scale: str):
    """The runs of ``experiment`` at ``scale``; fails the test when any is missing or a stand-in."""
    try:
        runs = _load(experiment, scale)
    except MissingRunsError as err:
        pytest.fail(
            f"{err}\n(a missing run is a defect: this check cannot be made without it)",
            pytrace=False,
        )
    fake = [r.run_dir.name for r in runs if (r.train_metrics or {}).get("standin")]
    if fake:
        pytest.fail(
            f"{experiment} [{scale}]: {len(fake)} stand-in run(s) (sweep --dry-run) where "
            f"trained runs belong, e.g. {fake[:3]}",
            pytrace=False,
        )
    return runs


def _pick(results, key: str):
    """The one ClaimResult whose ``key`` is ``key``."""
    found = [r for r in results if r.key == key]
    if len(found) != 1:
        pytest.fail(f"expected one claim with key {key!r}, got keys {[r.key for r in results]}")
    return found[0]


def _check(scale: str, result) -> None:
    """Assert the claim, except where the rule of the report forbids a refutation: at the ``cpu``
    and ``paper`` scales a claim that does not hold on runs still improving is *undecided* (its
    outcome changes within the last log-half of the curves) or *fails at budget* (it fails at
    every point there: a finding about the stated budget, not a refutation of the paper), *undecided
    (underpowered)* (its interval still holds the claimed effect) or *worse with training* (a run it
    reads got worse), and the test says so as an xfail carrying the measurement (never a pass). At
    the ``quick`` scale the committed runs (no learning curves) are a fixed fixture and every claim
    is asserted as measured, so a change that breaks one fails."""
    print(result)  # observed beside bound, shown by pytest -rA / on failure
    if (
        not result.holds
        and scale != "quick"
        and result.verdict in (UNDECIDED, FAILS_AT_BUDGET, UNDERPOWERED, WORSE)
    ):
        pytest.xfail(f"{result.verdict}, not refuted: {result}")
    assert result.holds, str(result)


def _panels(experiment: str) -> list[tuple[str, str]]:
    runs = [
        r for sc in EXPERIMENT_SCALES for r in get_experiment(experiment).runs(sc)
    ]  # same panels at every scale
    return sorted({(r.task.kind, r.model.mode) for r in runs if isinstance(r, RunSpec)})


# --------------------------------------------------------------------------------------------------
# fig:exp1 -- TV against depth L and bin count C
# --------------------------------------------------------------------------------------------------

EXP1_PANELS = _panels("fig_exp1")
_EXP1_IDS = [f"{k}-{m}" for k, m in EXP1_PANELS]


@pytest.mark.parametrize("kind,mode", EXP1_PANELS, ids=_EXP1_IDS)
def test_exp1_tv_falls_with_depth(scale, kind, mode):
    """fig:exp1 / thm:PPD convergence: "log TV ... decreases ... with respect to the log
    of the depth".

    Per panel (task x theory/learnable), at the largest C: E[TV] over the evaluation n' at the
    smallest L minus that at the largest L must exceed Z_MARGIN = 3 SE. Prints the log-log slope in
    L with its 95% CI. Fails when depth does not help (shown on stand-in runs with mirrored depths).
    """
    _check(
        scale,
        _pick(xc.check_exp1(_runs("fig_exp1", scale)), f"fig_exp1.{kind}.{mode}.tv_falls_with_L"),
    )


@pytest.mark.parametrize("kind,mode", EXP1_PANELS, ids=_EXP1_IDS)
def test_exp1_tv_falls_with_bins(scale, kind, mode):
    """fig:exp1 / thm:PPD convergence: "log TV decreases linearly as the log of the bin size
    increases" (at large depth, where the solver error no longer dominates).

    Per panel, at the largest L: E[TV](C_min) - E[TV](C_max) > Z_MARGIN = 3 SE. Prints the log-log
    slope in C with its 95% CI. Fails when bins do not help (stand-in runs with mirrored C).
    """
    _check(
        scale,
        _pick(xc.check_exp1(_runs("fig_exp1", scale)), f"fig_exp1.{kind}.{mode}.tv_falls_with_C"),
    )


# --------------------------------------------------------------------------------------------------
# fig:exp2-1 -- normalised vs unnormalised attention
# --------------------------------------------------------------------------------------------------


def test_exp2_1_unnormalised_tv_rises_beyond_pretraining_range(scale):
    """fig:exp2-1 / sec:exp2: "the unnormalized model's TV errors spike outside the
    pretraining range".

    E[TV] of the unnormalised TF at the largest n' minus its mean over n' in [n_min, n_max] must
    exceed Z_MARGIN = 3 SE. Fails for a model whose error does not grow beyond n_max.
    """
    _check(
        scale,
        _pick(xc.check_exp2_1(_runs("fig_exp2_1", scale)), "fig_exp2_1.tf_rises_beyond_range"),
    )


def test_exp2_1_normalised_attention_stays_flatter(scale):
    """fig:exp2-1 / sec:exp2: "Normalization yields stable performance across n'".

    The rise of log E[TV] from the pretraining range to the largest n' must be smaller for TF^pr
    than for TF by Z_MARGIN = 3 SE (delta-method SE of each log ratio). Fails when normalisation
    does not flatten the curve (stand-in runs with the two curves swapped).
    """
    _check(scale, _pick(xc.check_exp2_1(_runs("fig_exp2_1", scale)), "fig_exp2_1.pr_flatter"))


def test_exp2_1_tf_breaks_down_where_its_solver_stops_contracting():
    """fig:exp2-1 / sec:generalization: "the unnormalized model's TV errors spike outside the
    pretraining range", where its learned solver stops contracting.

    Read on the runs the row reads, the 8000-step weight-averaged pair of ``fig_exp2_1_budget``
    at the cpu scale (the only scale with the breakdown analysis, ``breakdown.json``; gated by
    budget doubling). The predicted breakdown n* is the first n' where the median context's
    ``log ||prod_l M_l||_2`` (mean channel, context block) exceeds 0, its onset where the 90%
    quantile does; E[TV] + 3 SE must stay below twice the in-range level at every evaluated n'
    below the onset, and E[TV] - 3 SE above it at every n' from n* on. Fails for a solver that does
    not break down (no n*: tests/test_breakdown.py runs the same check on TF^pr, and on curves
    that jump too early, too late or not at all)."""
    runs = _runs("fig_exp2_1_budget", "cpu")
    statuses = xg.doubling_statuses(xg.trained_runs(runs))
    _check(
        "cpu",
        _pick(xc.check_exp2_1(runs, statuses=statuses), "fig_exp2_1.tf_spikes_beyond_breakdown"),
    )


# --------------------------------------------------------------------------------------------------
# fig:exp2-2, supp-fig:exp2-3 and the d=4, d=8 companions -- depth and n_max against n'
# --------------------------------------------------------------------------------------------------

EXP2 = ["fig_exp2_2", "supp_exp2_d4", "supp_exp2_d8"]


@pytest.mark.parametrize("experiment", EXP2)
def test_exp2_deeper_models_generalise_better(scale, experiment):
    """fig:exp2-2 (and supp-fig:exp2 d4/d8): "generalization improves with larger L".

    For every n_max: E[TV] averaged over the evaluation n' (which extend to 2-4x n_max) at the
    smallest L minus that at the largest L exceeds Z_MARGIN = 3 SE. Prints the worst n_max. Fails
    when depth does not help at some n_max.
    """
    _check(scale, _pick(xr.check_exp2_2(_runs(experiment, scale)), "exp2_2.depth_helps"))


@pytest.mark.parametrize("experiment", EXP2)
def test_exp2_wider_pretraining_range_generalises_better(scale, experiment):
    """fig:exp2-2 (and supp-fig:exp2 d4/d8): "generalization improves with larger ... n_max".

    At the largest depth (a depth-starved model is limited by its truncated solver, not by the range
    it saw; the smaller depths are recorded in the details): E[TV] averaged over the n' beyond the
    smaller n_max, for the smaller n_max minus for the larger one, exceeds Z_MARGIN = 3 SE. Fails
    when the wider range does not help (stand-in runs with mirrored n_max).
    """
    _check(scale, _pick(xr.check_exp2_2(_runs(experiment, scale)), "exp2_2.n_max_helps"))


@pytest.mark.parametrize("experiment", EXP2)
def test_exp2_solver_error_grows_with_n(scale, experiment):
    """supp-fig:exp2-3 / thm:L growth: "for fixed L and n_max, the error of the finite-iteration
    solver increases as the evaluation sample size grows".

    In every (L, n_max) cell the slope of log E[TV] on n' has a 95% CI above 0. Prints the worst
    cell and the moment MSEs. Fails for a cell whose error is flat or falling in n' (stand-in runs
    with TV frozen in n').
    """
    _check(scale, _pick(xr.check_exp2_2(_runs(experiment, scale)), "exp2_2.tv_grows_with_n"))


@pytest.mark.parametrize("experiment", EXP2)
def test_exp2_coverage_near_nominal(scale, experiment):
    """fig:exp2-2 (90% interval coverage against the nominal level, red dashed line): the deepest,
    widest-range model's 90% coverage is near nominal at every n'.

    |coverage - 0.9| <= COVERAGE_SLACK = 0.05 + Z_MARGIN = 3 binomial SE at each n'. Fails for a
    miscalibrated model (stand-in runs with coverage 0.2 short).
    """
    _check(scale, _pick(xr.check_exp2_2(_runs(experiment, scale)), "exp2_2.coverage_near_nominal"))


def _quick_finding(request, scale: str, reason: str) -> None:
    """Mark the calling test a strict xfail at the ``quick`` scale only: its finding is about the
    quick runs. At ``cpu`` and ``paper`` the runs are others (the claim's own regime, learning
    curves) and the test asserts, or xfails as undecided through :func:`_check`; a strict marker
    there would turn a claim that holds as measured into a failure, and a missing run into an
    xfail instead of the failure it is."""
    if scale == "quick":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.parametrize("experiment", ["supp_exp2_d4", "supp_exp2_d8"])
def test_exp2_covariate_shift_coverage_near_nominal(request, scale, experiment):
    """supp-fig:exp2 d4-1 uni / supp-fig:exp2 d8-1 uni (supp-sec:exp additional, covariate shift):
    "Despite the shift in covariates ... the generalization performance is comparable to the true
    baseline for n_max=512 and L>=16" (with the d=8, L=16 model as the stated exception).

    On ``eval_uniform.json`` (evaluation inputs Unif[-1/sqrt d, 1/sqrt d]^d, pretraining on
    N(0, I/d)): the deepest, widest-range model's 90% coverage is within COVERAGE_SLACK = 0.05 +
    Z_MARGIN = 3 binomial SE of 0.9 at every n'. At quick scale the deepest, widest model is L=8,
    n_max=192, short of the claim's regime (L>=16, n_max=512). Fails for a miscalibrated model.
    """
    _quick_finding(
        request,
        scale,
        "finding at quick scale: under the uniform covariate shift the L=8, n_max=192 model's 90% "
        "coverage collapses to 0.27 (d=4) and 0.20 (d=8) against 0.88-0.90 for the exact PPD, and "
        "depth and n_max stop helping; the paper claims robustness only for L>=16, n_max=512, "
        "which the quick design does not reach. strict: an unexpected pass fails and must be "
        "re-examined",
    )
    _check(
        scale,
        _pick(
            xr.check_exp2_2(_runs(experiment, scale), eval_file="eval_uniform.json"),
            "exp2_2.coverage_near_nominal",
        ),
    )


def test_shift_regime_model_is_calibrated_on_its_own_design(scale):
    """Control for the next test (supp_exp2_shift_regime: d=4, TF^pr, L=16, n_max=512): on the
    pretraining design N(0, I/d) the model's 90% coverage is within COVERAGE_SLACK = 0.05 + 3 SE of
    nominal at every n' in {64, ..., 768}. Fails if the model is miscalibrated even without a shift
    (then the shift test would say nothing about the shift)."""
    _check(
        scale,
        _pick(
            xr.check_shift_regime(_runs("supp_exp2_shift_regime", scale)),
            "shift_regime.coverage.pretraining",
        ),
    )


def test_shift_regime_coverage_under_covariate_shift(request, scale):
    """supp-sec:exp additional (covariate shift): "the generalization performance is comparable to
    the true baseline for n_max=512 and L>=16". Checked on the one run of supp_exp2_shift_regime:
    90% coverage on ``eval_uniform.json`` within COVERAGE_SLACK = 0.05 + Z_MARGIN = 3 binomial SE of
    0.9 at every n'. Fails for a miscalibrated model: as measured on the quick run (see the xfail
    reason). At the cpu scale the 8000-step run holds as measured (worst 0.83) but is undecided:
    its E[TV] curves still fall."""
    _quick_finding(
        request,
        scale,
        "finding at quick scale: in the regime where the paper claims robustness (n_max=512, "
        "L=16; d=4, 400 steps at lr 5e-3), 90% coverage on Unif[-1/sqrt d, 1/sqrt d]^d inputs "
        "collapses to 0.23-0.53 (interval width 0.15-0.41 against 0.68-0.80 for the exact PPD) "
        "while the same model covers 0.90-0.92 on its pretraining design; the cpu-scale runs "
        "(2000 and 8000 steps, elementwise Adam) cover 0.83-0.90 under the shift. strict: an "
        "unexpected pass fails and must be re-examined",
    )
    _check(
        scale,
        _pick(
            xr.check_shift_regime(_runs("supp_exp2_shift_regime", scale)),
            "shift_regime.coverage.shifted",
        ),
    )


# --------------------------------------------------------------------------------------------------
# supp-tab:lengthscale-crps and supp-tab:hierarchical-gp
# --------------------------------------------------------------------------------------------------

TABLES = ["supp_tab_lengthscale", "supp_tab_hier"]


def _table_checks(experiment: str, scale: str):
    """The table's checks as the report decides them: on its budget grid (2S runs, gated by budget
    doubling) where that grid is complete at ``scale``, else on its own runs."""
    from pfntheory.experiments.results import load_available
    from pfntheory.experiments.specs import ExactPPDSpec
    from pfntheory.experiments.tables import TABLE_BUDGET

    runs = _runs(experiment, scale)
    budget = TABLE_BUDGET.get(experiment)
    if budget is not None:
        b_runs, missing = load_available(budget, scale)
        if b_runs and not missing:
            refs = [r for r in runs if isinstance(r.spec, ExactPPDSpec)]
            return xc.check_table_budget(list(b_runs) + refs)
    return xc.check_table(runs)


@pytest.mark.parametrize("experiment", TABLES)
def test_table_crps_falls_with_depth(scale, experiment):
    """supp-tab:lengthscale-crps ("increasing depth generally improves CRPS") and
    supp-tab:hierarchical-gp ("CRPS improves with depth L").

    CRPS averaged over the table's rows (lengthscale x n') at the smallest L minus that at the
    largest L exceeds Z_MARGIN = 3 SE (paired where the runs keep per-instance CRPS, else
    unpaired, conservative). Fails when depth does not help.
    """
    _check(scale, _pick(_table_checks(experiment, scale), "table.crps_falls_with_L"))


@pytest.mark.parametrize("experiment", TABLES)
def test_table_coverage_near_nominal(scale, experiment):
    """supp-tab:lengthscale-crps / supp-tab:hierarchical-gp: "coverage values remain reasonably
    close to nominal even at n' > n_max, especially for larger depths".

    At the largest L, every row's 90% and 95% coverage within COVERAGE_SLACK = 0.05 (the paper's own
    worst "reasonably close" cell, .848 at 90%) + Z_MARGIN = 3 binomial SE. Fails for a
    miscalibrated model (stand-in runs with coverage 0.2 short).
    """
    _check(scale, _pick(_table_checks(experiment, scale), "table.coverage_near_nominal"))


@pytest.mark.parametrize("experiment", TABLES)
def test_table_no_model_beats_exact_ppd(scale, experiment):
    """supp-tab:lengthscale-crps / supp-tab:hierarchical-gp: CRPS is strictly proper, so no trained
    model's expected CRPS lies below that of the exact PPD (the tables' floor).

    On the same instances, CRPS(model) - CRPS(exact PPD) > -Z_MARGIN = 3 SE in every cell (model,
    n'). Fails when a model scores better than the true posterior predictive -- which would mean a
    wrong reference PPD (e.g. the noise variance/std ambiguity) or a leak (stand-in runs
    built that way).
    """
    _check(scale, _pick(_table_checks(experiment, scale), "table.crps_not_below_exact"))


# --------------------------------------------------------------------------------------------------
# fig:stepsize (exact side)
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_stepsize_decreases_like_one_over_n(scale, kernel):
    """fig:stepsize ("Richardson step size varies with n without normalization"; thm:lambda1).

    The admissible step 2/(lambda_1(G) + sigma^2) of eqn:convg cond over the recorded trials for
    n in {100, ..., 1000} and d = 16, tested with its finite-n term: lambda_1 = 2/step - sigma^2 per
    trial, lambda_1/(n lambda_inf) fitted as c0 (1 + a n^-1/2), the 95% interval of c0 inside
    [0.9, 1.1] (n x step -> 2/lambda_inf). The log-log slope (about -0.91 for the linear kernel at
    these n, -0.99 for RBF) is reported beside it, not tested against -1. Fails for a 1/sqrt(n)
    curve and for a step of order n^-0.9 (tests/test_experiments.py).
    """
    runs = [
        r
        for r in _runs("fig_stepsize", scale)
        if isinstance(r.spec, StepsizeSpec) and r.spec.kernel == kernel
    ]
    assert len(runs) == 1, f"fig_stepsize declares {len(runs)} {kernel} runs"
    (result,) = xc.check_stepsize(runs)
    _check(scale, result)
