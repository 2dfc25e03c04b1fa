"""The cost model of ``sweep --list`` (issue 45): training, learning curves and evaluation
estimated apart, the cached evaluation oracle an explicit switch, what is left of a half-done run,
and the sweep's line of measured CPU time beside the estimate."""

from __future__ import annotations

import dataclasses

import pytest

from pfntheory.experiments import cost, pool
from pfntheory.experiments.definitions import get_experiment
from pfntheory.experiments.execute import execute
from pfntheory.experiments.state import remaining_parts
from pfntheory.infra.config import FUSED_DRAW_MAX_N


def _cell(name="supp_exp2_d8_budget", L=4, n_max=128, steps=1000):
    return next(
        r
        for r in get_experiment(name).runs("cpu")
        if r.model.L == L and r.n_max == n_max and r.steps == steps
    )


def test_a_run_is_estimated_in_three_parts_and_a_cached_oracle_lowers_evaluation():
    spec = _cell()
    parts = cost.run_parts(spec)
    assert tuple(parts) == cost.PARTS == ("training", "curves", "evaluation")
    assert all(v > 0 for v in parts.values())
    cached = cost.run_parts(spec, oracle_cached=True)
    assert cached["training"] == parts["training"] and cached["curves"] == parts["curves"]
    assert 0 < cached["evaluation"] < parts["evaluation"] / 3  # the oracle dominates it
    assert cost.cpu_seconds(spec) == pytest.approx(sum(parts.values()))
    assert cost.cpu_seconds(spec, oracle_cached=True) == pytest.approx(sum(cached.values()))
    exp = get_experiment("supp_exp2_d8_budget")
    by_part = cost.experiment_parts(exp, "cpu")
    assert by_part["exact"] == 0 and sum(by_part.values()) == pytest.approx(cost.cpu_seconds(exp))
    with pytest.raises(TypeError, match="oracle_cached"):
        cost.run_parts(spec, oracle_cached="yes")
    with pytest.raises(TypeError, match="oracle_cached"):
        cost.cpu_seconds(spec, oracle_cached=1)
    with pytest.raises(TypeError, match="spec"):
        cost.run_parts(None)


def test_the_parts_grow_with_what_they_count():
    small, deep, wide = _cell(), _cell(L=32), _cell(n_max=512)
    assert cost.run_parts(deep)["training"] > cost.run_parts(small)["training"]
    assert cost.run_parts(wide)["training"] > cost.run_parts(small)["training"]
    # the model's forward is part of the evaluation, not its oracle: L raises it either way
    assert (
        cost.run_parts(deep, oracle_cached=True)["evaluation"]
        > cost.run_parts(small, oracle_cached=True)["evaluation"]
    )
    # a weight-averaged run evaluates two weights per curve point (the average and the last)
    last = dataclasses.replace(small, ema_decay=0.0)
    assert cost.curve_terms(small)["CURVE_S"] == 2 * cost.curve_terms(last)["CURVE_S"]
    # the fast draw where a run started now takes it (n <= the crossover), the exact path above
    t = cost.training_terms(wide)
    n = range(wide.n_min, wide.n_max + 1)
    assert t["FUSED_DATA_S"] == pytest.approx(
        wide.steps * sum(k <= FUSED_DRAW_MAX_N for k in n) / len(n)
    )
    assert t["DATA_S"] == pytest.approx(wide.steps * sum(k > FUSED_DRAW_MAX_N for k in n) / len(n))


def test_the_curve_grid_is_the_curve_steps():
    from pfntheory.nn.curve import curve_steps

    for steps, points in ((1000, 48), (2000, 48), (4000, 12), (50, 7), (10, 48)):
        assert cost._curve_grid(steps, points) == curve_steps(steps, points)


def test_what_is_left_of_a_run(tmp_path):
    """Nothing of a finished run; its evaluation alone once that file is gone; all of a run not
    started (the stand-in backend writes a finished run's files)."""
    spec = _cell()
    rd = tmp_path / spec.name
    assert remaining_parts(spec, rd) == pytest.approx(cost.run_parts(spec))
    execute(spec, rd, backend="standin")
    assert sum(remaining_parts(spec, rd).values()) == 0
    (rd / spec.evals[1].filename).unlink()
    left = remaining_parts(spec, rd, oracle_cached=True)
    assert left["training"] == left["curves"] == 0
    assert left["evaluation"] == pytest.approx(
        cost.run_parts(spec, oracle_cached=True)["evaluation"] / 2
    )


def test_the_sweep_reports_measured_cpu_beside_the_estimate(tmp_path, monkeypatch):
    spec = _cell()
    monkeypatch.setenv("PFNTHEORY_ORACLE_STORE", "off")  # the estimate without the oracle store
    res = pool.execute_job(spec, str(tmp_path / spec.name), "standin", str(tmp_path), 1)
    assert res["status"] == "done" and res["cpu_s"] >= 0 and "estimate_s" not in res
    res["estimate_s"] = {"training": 30.0, "curves": 10.0, "evaluation": 60.0}
    res["cpu_s"] = 120.0
    line = pool.report_line(res)
    assert line is not None
    assert "120 s of CPU, estimate 100 s (training 30, curves 10, evaluation 60" in line
    assert line.endswith("measured/estimate 1.20")
    assert pool.report_line({"status": "skipped", "name": "x", "cpu_s": 0.0}) is None
    est = pool._estimate(spec, str(tmp_path / "fresh"), "nn")
    assert est == pytest.approx(cost.run_parts(spec))
    assert "oracle not cached" in line
    monkeypatch.delenv("PFNTHEORY_ORACLE_STORE")  # the sweep's default: the store is on
    est = pool._estimate(spec, str(tmp_path / "fresh"), "nn")
    assert est == pytest.approx(cost.run_parts(spec, oracle_cached=True))
    assert "oracle cached" in pool.report_line(res)
