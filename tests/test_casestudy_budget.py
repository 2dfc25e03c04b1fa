"""The case studies decided by budget doubling (pfntheory.casestudy.pfn.budget_scales,
pfntheory.pipelines.casestudy_run.run_casestudy_budget,
pfntheory.pipelines.casestudy_results.budget_claims, pfntheory.claims.casestudy.doubling_gate;
docs/verdicts.md, "Budget doubling")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pfntheory import cli
from pfntheory.casestudy import pfn as cpfn
from pfntheory.claims import ClaimResult
from pfntheory.claims import casestudy as cclaims
from pfntheory.experiments.definitions import BUDGET_CURVE_POINTS, BUDGET_EMA_DECAY
from pfntheory.infra import runs
from pfntheory.maths.gp import EBFit
from pfntheory.pipelines import casestudy_run as crun
from pfntheory.pipelines.casestudy_results import budget_claims

FIT = EBFit(
    alpha=0.666, lengthscales=(1.226, 0.770), noise_std=0.836, log_marginal_likelihood=float("nan")
)


def test_budget_scales_are_the_scale_at_s_and_2s_weight_averaged():
    """Only the steps, the weight average and the curve density change; the training config of
    each carries them (so the pair differs from the plain cpu run only where it must)."""
    sc = cpfn.SCALES["cpu"]
    pair = cpfn.budget_scales("cpu")
    assert sorted(pair) == [sc.steps, 2 * sc.steps]
    for steps, b in pair.items():
        assert b == dataclasses.replace(
            sc, steps=steps, ema_decay=BUDGET_EMA_DECAY, curve_points=BUDGET_CURVE_POINTS
        )
        cfg = cpfn.pretraining_config(FIT, "walker", b)
        plain = cpfn.pretraining_config(FIT, "walker", "cpu")
        assert (cfg.steps, cfg.ema_decay, cfg.curve_points) == (
            steps,
            BUDGET_EMA_DECAY,
            BUDGET_CURVE_POINTS,
        )
        assert cfg == dataclasses.replace(
            plain, steps=steps, ema_decay=BUDGET_EMA_DECAY, curve_points=BUDGET_CURVE_POINTS
        )
    assert sorted(cpfn.budget_scales("quick", factor=4)) == [300, 1200]
    with pytest.raises(ValueError, match="factor"):
        cpfn.budget_scales("cpu", factor=1)
    with pytest.raises(ValueError, match="scale"):
        cpfn.budget_scales("huge")


@pytest.mark.parametrize("bad", ["", "Run/x", "../up", 3])
def test_scale_name_must_be_a_plain_name(bad, tmp_path):
    with pytest.raises(ValueError, match="scale_name"):
        crun.run_casestudy("sacramento", "quick", tmp_path, scale_name=bad, progress=False)
    assert not (tmp_path / "results.json").exists()


def test_budget_dir_and_the_cli_flag(tmp_path):
    assert crun.budget_dir("walker", 1000, tmp_path) == tmp_path / "budget-s1000"
    with pytest.raises(ValueError, match="dataset"):
        crun.budget_dir("boston", 1000)
    with pytest.raises(ValueError, match="steps"):
        crun.budget_dir("walker", 0)
    args = cli.build_parser().parse_args(
        ["casestudy", "walker", "--scale", "cpu", "--budget-doubling"]
    )
    # the factor is None unless given (the command then uses 2), so that a factor given without
    # --budget-doubling can be refused (issue 41)
    assert args.budget_doubling and args.scale == "cpu" and args.budget_factor is None
    with pytest.raises(ValueError, match="factor"):
        crun.run_casestudy_budget("walker", "cpu", tmp_path, factor=1, progress=False)
    assert not any(tmp_path.iterdir())


# ----------------------------------------------------------------------------------------------
# the gate
# ----------------------------------------------------------------------------------------------
def _claim(holds: bool, key: str = "coverage") -> ClaimResult:
    return ClaimResult(
        label="fig:walker", statement="s", holds=holds, observed=0.5, bound=0.2, key=key
    )


def _status(state: str) -> dict:
    return {
        "state": state,
        "plateaued": state == "plateaued",
        "criterion": "budget doubling (test)",
        "short_step": 1000,
        "last_step": 2000,
    }


@pytest.mark.parametrize(
    "state,short,long,verdict",
    [
        ("plateaued", False, True, "holds"),
        ("plateaued", True, False, "does not hold"),
        ("still improving", True, True, "holds at budget"),
        ("still improving", False, False, "fails at budget"),
        ("diverging", True, True, "holds at budget"),
        ("diverging", False, True, "worse with training"),
        ("still improving", True, False, "undecided"),
        ("too noisy to tell", False, True, "undecided"),
    ],
)
def test_doubling_gate_decides_by_the_pair(state, short, long, verdict):
    """Every branch of the rule, each with the outcome that tells it apart from the others (a
    plateaued pair follows the 2S measurement even when S disagrees; an improving pair needs the
    same outcome at both ends; a diverging pair, the doubled budget worse, is *worse with
    training* only where the check's outcome differs between S and 2S: with one outcome at both
    the worsening cannot change the answer and is the row's caveat, docs/verdicts.md)."""
    g = cclaims.doubling_gate(_claim(short), _claim(long), _status(state))
    assert g.verdict == verdict and g.holds is long
    assert g.details["holds_at_S"] is short
    assert "budget doubling" in g.details["convergence"]["criterion"]
    assert g.decision.kind == verdict and g.decision.text()


def test_doubling_gate_refuses_another_claim_or_a_status_without_its_keys():
    with pytest.raises(ValueError, match="short and long"):
        cclaims.doubling_gate(_claim(True), _claim(True, key="near_close"), _status("plateaued"))
    with pytest.raises(ValueError, match="status"):
        cclaims.doubling_gate(_claim(True), _claim(True), {"state": "plateaued"})


# ----------------------------------------------------------------------------------------------
# budget_claims on two synthetic budget directories
# ----------------------------------------------------------------------------------------------
def _write_budget(case_dir, steps: int, tv: np.ndarray, holds: bool) -> None:
    d = case_dir / f"budget-s{steps}"
    run = d / "run-cpu-ema"
    run.mkdir(parents=True)
    points = [{"step": 0, "n": 8, "tv": 0.9, "tv_se": 0.01}] + [
        {"step": steps, "n": 8, "tv": float(tv.mean()), "tv_se": 0.01, "tv_instances": tv.tolist()}
    ]
    runs.save_json(run / "learning_curve.json", {"schema": 1, "points": points})
    doc = runs._jsonable(_claim(holds))
    runs.save_json(d / "results.json", {"pfn": {"run_dir": "run-cpu-ema"}, "claims": [doc]})


@pytest.mark.parametrize(
    "fall,state,verdict",
    [(0.0, "plateaued", "holds"), (0.05, "still improving", "holds at budget")],
)
def test_budget_claims_pairs_the_two_runs(tmp_path, fall, state, verdict):
    """Identical per-instance E[TV] at S and 2S is a plateau; a fall of 0.05 on a mean of 0.1
    (50%, far beyond the 10% tolerance, with a paired SE near 0) is still improving: the gate reads
    the pair, not either run alone."""
    rng = np.random.default_rng(0)
    tv_long = 0.1 + 0.01 * rng.standard_normal(200)
    _write_budget(tmp_path, 1000, tv_long + fall + 1e-4 * rng.standard_normal(200), True)
    _write_budget(tmp_path, 2000, tv_long, True)
    out = budget_claims(tmp_path)
    assert out["status"].state == state
    assert [c.verdict for c in out["claims"]] == [verdict]
    assert [p.name for p in out["run_dirs"]] == ["run-cpu-ema", "run-cpu-ema"]


def test_budget_claims_needs_both_ends(tmp_path):
    assert budget_claims(tmp_path) is None
    _write_budget(tmp_path, 1000, np.full(10, 0.1), True)
    assert budget_claims(tmp_path) is None  # S without 2S decides nothing
    _write_budget(tmp_path, 3000, np.full(10, 0.1), True)
    assert budget_claims(tmp_path) is None  # 1000 and 3000 are not a doubling
