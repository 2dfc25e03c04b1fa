"""Tests of the plateau criterion (pfntheory.infra.convergence) on synthetic learning curves: flat,
still falling, jittery, rising, too short; and the size of the equivalence test by simulation."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pfntheory.infra.convergence import (
    ALPHA,
    MIN_POINTS,
    STATES,
    all_plateaued,
    curve_means,
    curve_points,
    curve_status,
    doubling_status,
    plateau_status,
    read_learning_curve,
    trend_text,
)
from pfntheory.infra.runs import CorruptFileError
from pfntheory.nn.train import curve_steps

STEPS = curve_steps(2000, 12)
#: The last log-half of STEPS (steps >= sqrt(10 * 2000) = 141): 180 ... 2000, six points.
HALF = [s for s in STEPS if s > 0 and s >= math.sqrt(STEPS[1] * STEPS[-1])]


def _curve(values, se, ns=(64, 128)):
    return [
        {
            "step": s,
            "n": n,
            "tv": float(v),
            "tv_se": float(se),
            "nll": 0.0,
            "nll_se": 0.0,
            "coverage90": 0.9,
            "coverage90_se": 0.01,
            "crps": 0.1,
            "crps_se": 0.0,
        }
        for s, v in zip(STEPS, values, strict=True)
        for n in ns
    ]


def _linear_tail(fall, level=0.1, jitter=0.0, rng=None):
    """Values that are ``level`` up to the last log-half, then fall linearly in log-step by ``fall``
    over it (ending at ``level - fall``), plus Gaussian jitter of SD ``jitter`` at every step."""
    x0, x1 = math.log(HALF[0]), math.log(HALF[-1])
    v = np.array(
        [level if s < HALF[0] else level - fall * (math.log(s) - x0) / (x1 - x0) for s in STEPS]
    )
    if jitter:
        v = v + jitter * rng.standard_normal(len(v))
    return v


def test_half_is_six_points():
    assert len(HALF) == 6 and HALF[-1] == 2000


def test_flat_curve_has_plateaued():
    st = plateau_status(_curve([0.1] * len(STEPS), se=0.003))
    assert st.state == "plateaued" and st.plateaued and not st.diverging, st
    assert st.last_step == 2000 and st.n_points == 6 and st.change == pytest.approx(0.0)
    # a perfectly smooth curve has no jitter: the instance error floors the trend's error
    assert st.jitter == pytest.approx(0.0, abs=1e-15)
    assert st.se > 0 and st.instance_se == pytest.approx(0.003 * math.sqrt(2) / 2)
    assert "plateaued at 2000 steps" in trend_text(st)


def test_still_falling_curve_has_not():
    # TV falling like step^-0.3: it falls by 40% over the last log-half
    v = [0.5] + [0.5 * s**-0.3 for s in STEPS[1:]]
    st = plateau_status(_curve(v, se=0.002))
    assert st.state == "still improving" and st.ci[0] > 0, st
    assert "still improving at 2000" in trend_text(st)


def test_false_plateau_rate_at_the_tolerance_is_at_most_alpha():
    """Size of the equivalence test: curves whose true fall over the last log-half is exactly the
    tolerance (10% of the end value 0.09 for a fall of 0.01 from 0.1, i.e. 0.009 < 0.01: a fall
    above the tolerance), with jitter of SD 0.003 (3x an instance se of 0.001, the median
    jitter-to-se ratio of the fig:exp1 curves), must be called plateaued in at most alpha = 5% of
    cases. 2000 curves with a fixed seed: the binomial SE of a 5% rate is 0.49%, so the bound
    checked is 5% + 3 SE = 6.5%. Fails if the fit ignored the jitter (e.g. used the instance se
    alone: then the rate is 23% in this draw)."""
    rng = np.random.default_rng(7)
    calls = [
        plateau_status(_curve(_linear_tail(0.01, jitter=0.003, rng=rng), se=0.001)).plateaued
        for _ in range(2000)
    ]
    rate = float(np.mean(calls))
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 2000), rate


def test_flat_jittery_curves_usually_plateau():
    """Power: flat curves at 0.1 with jitter SD 0.0015 (1.5% of the value). The 90% CI half-width
    is t_4(0.95) * se(fall) = 2.13 * 1.2 * 0.0015 = 0.0038 on average, well inside the tolerance
    0.01, so the test should call nearly all of them plateaued (99.5% in this draw); 400 curves
    (fixed seed), at least 90%."""
    rng = np.random.default_rng(11)
    calls = [
        plateau_status(_curve(_linear_tail(0.0, jitter=0.0015, rng=rng), se=0.001)).plateaued
        for _ in range(400)
    ]
    assert np.mean(calls) >= 0.9, np.mean(calls)


def test_two_lucky_points_do_not_make_a_plateau():
    """The criterion this one replaced compared two points (first of the last half, last) against
    the instance se: on this curve, whose four inner points of the last half fall by 30%, its two
    end points happen to be equal (0.085), so it said "plateaued". The trend test does not: the
    inner points leave a fall of up to 0.023 (over twice the tolerance) inside the 90% CI."""
    v = list(_linear_tail(0.03, level=0.1))
    i_half = STEPS.index(HALF[0])
    v[i_half] = v[-1] = 0.085  # the two points the old test read
    st = plateau_status(_curve(v, se=0.001))
    assert not st.plateaued and st.ci[1] > 2 * st.tol, st


def test_noisy_flat_curve_is_too_noisy_to_tell():
    """Jitter of 20% of the value (e.g. BLR theory C=16 L=2 at the cpu scale: 0.56 -> 0.64 -> 0.56)
    leaves the CI far wider than the tolerance either way: neither plateaued nor a trend."""
    v = [0.6] * (len(STEPS) - 6) + [0.56, 0.64, 0.56, 0.58, 0.66, 0.57]
    st = plateau_status(_curve(v, se=0.01))
    assert st.state == "too noisy to tell", st
    assert st.ci[0] < 0 < st.ci[1] and st.ci[1] - st.ci[0] > 2 * st.tol


def test_an_unresolvable_curve_says_so():
    """``resolvable`` is whether the interval's half-width ``t se`` fits inside the tolerance,
    whatever the fitted fall. Flat curves at 0.1 (tolerance 0.01) with residuals of SD ``s`` about
    the trend: the half-width is ``t_4(0.95) se``, with ``se`` about 1.2 ``s`` for these six
    log-spaced points, so s = 0.001 resolves and s = 0.008 does not (half-width about 0.02). The
    second, although its fitted fall is exactly 0, is not plateaued, and its trend line says why.
    Fails if the half-width is not t se, or if resolvable ignores it."""
    x = np.log(HALF)
    xc = x - x.mean()
    # residuals orthogonal to (1, log s): the fitted fall is exactly 0 and the residual SD is s
    r = np.array([1, -1, 1, -1, 1, -1], float)
    r -= r.mean() + (r @ xc) / (xc @ xc) * xc
    r /= np.sqrt(r @ r / (len(HALF) - 2))
    t = float(stats.t.ppf(1 - ALPHA, len(HALF) - 2))
    for s, ok in ((0.001, True), (0.008, False)):
        v = [0.1] * (len(STEPS) - len(HALF)) + list(0.1 + s * r)
        st = plateau_status(_curve(v, se=0.0001))
        assert abs(st.change) < 1e-12 and st.jitter == pytest.approx(s, rel=1e-9)
        assert st.halfwidth == pytest.approx(t * st.se, rel=1e-12)
        assert st.halfwidth == pytest.approx((st.ci[1] - st.ci[0]) / 2, rel=1e-12)
        assert st.resolvable is ok and st.plateaued is ok, st
        assert ("even a flat curve could not be called plateaued" in trend_text(st)) is (not ok)


def test_rising_curve_is_diverging_not_plateaued():
    """A curve that gets significantly worse over the last half (the trained TF^pr under the
    covariate shift: TV 0.30 at step 196, 0.81 from step 414 on) is still moving, so never
    "plateaued"."""
    v = [0.3] * 7 + [0.3 + 0.1 * i for i in range(1, len(STEPS) - 6)]
    st = plateau_status(_curve(v, se=0.01))
    assert st.state == "diverging" and st.diverging and st.ci[1] < 0, st
    assert "diverging at 2000" in trend_text(st)


def test_too_short_and_errors():
    pts = [p for p in _curve([0.1] * len(STEPS), 0.01) if p["step"] in STEPS[:MIN_POINTS]]
    st = plateau_status(pts)
    assert st.state == "too short" and not st.plateaued, st
    assert "needs >= 4" in trend_text(st)
    flat = _curve([0.1] * len(STEPS), 0.01)
    for bad in (0, 0.5, True, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            plateau_status(flat, alpha=bad)
    for bad in (("rel", 0), ("rel", -1), ("abs", float("inf")), ("pct", 5), ("rel", True)):
        with pytest.raises(ValueError, match="tol"):
            plateau_status(flat, tol=bad)
    with pytest.raises(ValueError, match="metric"):
        plateau_status(flat, metric="loss")
    with pytest.raises(ValueError, match=r"points\[0\]"):
        plateau_status([{"step": 1}])


def test_non_finite_value_is_never_plateaued():
    v = [0.1] * len(STEPS)
    v[-2] = float("nan")
    st = plateau_status(_curve(v, se=0.003))
    assert st.state == "too noisy to tell" and "non-finite" in st.criterion, st


def test_tolerance_is_stated_and_changeable():
    v = _linear_tail(0.008, level=0.1)  # 8.7% of the end value 0.092
    strict = plateau_status(_curve(v, se=0.0005), tol=("rel", 0.05))
    loose = plateau_status(_curve(v, se=0.0005), tol=("rel", 0.5))
    assert not strict.plateaued and loose.plateaued, (strict, loose)
    assert "5% of the value" in strict.criterion and strict.tol == pytest.approx(0.0046)


def test_states_are_the_declared_ones():
    rng = np.random.default_rng(3)
    for _ in range(50):
        v = _linear_tail(rng.uniform(-0.02, 0.02), jitter=rng.uniform(0, 0.01), rng=rng)
        assert plateau_status(_curve(v, se=0.001)).state in STATES


def test_curve_means_averages_over_n():
    pts = _curve([0.1] * len(STEPS), se=0.004)
    pts[0]["tv"] = 0.3  # step 0, n=64
    step, m, se = curve_means(pts)[0]
    assert step == 0 and m == pytest.approx(0.2) and se == pytest.approx(np.sqrt(2) * 0.004 / 2)


def test_coverage_plateau_is_distance_to_nominal():
    pts = _curve([0.1] * len(STEPS), se=0.003)
    for p in pts:
        p["coverage90"] = 0.5 if p["step"] < 400 else 0.89
        p["coverage90_se"] = 0.01
    assert not plateau_status(pts, metric="coverage90").plateaued
    # on either side of 0.9 at the same distance: no trend in the distance, so plateaued
    for p in pts:
        p["coverage90"] = 0.89 if p["step"] % 2 else 0.91
        p["coverage90_se"] = 0.001
    assert plateau_status(pts, metric="coverage90").plateaued


# --------------------------------------------------------------------------------------------------
# budget doubling
# --------------------------------------------------------------------------------------------------


def _final(tv_by_n: dict[int, np.ndarray], step: int) -> list[dict]:
    """A learning curve's final points with per-instance TV (as a weight-averaged run writes)."""
    return [
        {"step": step, "n": n, "tv": float(v.mean()), "tv_se": 0.0, "tv_instances": list(v)}
        for n, v in tv_by_n.items()
    ]


def _pair(rng, fall_rel: float, n: int = 256, spread: float = 0.3, noise: float = 0.05):
    """Instances with E[TV] 0.1 at 2S, TV_S = TV_2S (1 + fall_rel) plus independent noise."""
    base = 0.1 * np.exp(spread * rng.standard_normal((2, n)))
    long = base * (1 + noise * rng.standard_normal((2, n)))
    short = base * (1 + fall_rel) * (1 + noise * rng.standard_normal((2, n)))
    return (
        _final({64: short[0], 128: short[1]}, 1000),
        _final({64: long[0], 128: long[1]}, 2000),
    )


def test_doubling_false_plateau_rate_at_the_tolerance_is_at_most_alpha():
    """The size of the doubling test: runs whose doubled budget still buys a 10% fall (the
    tolerance) are called plateaued in at most alpha = 5% of 400 simulated pairs (+3 binomial SE:
    0.05 + 3 sqrt(0.05 0.95 / 400) = 0.083); fails if the interval were one-sided or unpaired-wide
    in the wrong direction."""
    rng = np.random.default_rng(7)
    hits = sum(doubling_status(*_pair(rng, 0.10)).plateaued for _ in range(400))
    assert hits / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400), hits


def test_doubling_decides_flat_and_falling_runs():
    """A run whose doubled budget changes nothing is plateaued (and resolvable) in >= 95% of pairs
    (the pairing removes the instance spread); one that still falls 30% is still improving; one
    that gets 30% worse is diverging (fails if the states were swapped or the pairing lost)."""
    rng = np.random.default_rng(8)
    flat = [doubling_status(*_pair(rng, 0.0)) for _ in range(200)]
    assert sum(s.plateaued for s in flat) >= 190
    assert all(s.resolvable for s in flat)
    assert doubling_status(*_pair(rng, 0.3)).state == "still improving"
    assert doubling_status(*_pair(rng, -0.3)).state == "diverging"


def test_doubling_needs_per_instance_values_on_the_same_instances():
    """Curves without per-instance values give "too short"; different instance counts or a long run
    no longer than the short one are refused, naming the argument."""
    rng = np.random.default_rng(9)
    short, long = _pair(rng, 0.0)
    bare = [{k: v for k, v in p.items() if k != "tv_instances"} for p in long]
    assert doubling_status(short, bare).state == "too short"
    with pytest.raises(ValueError, match="same held-out instances"):
        doubling_status(short, long[:1])
    with pytest.raises(ValueError, match="more steps"):
        doubling_status(long, long)
    with pytest.raises(ValueError, match="tol"):
        doubling_status(short, long, tol=0.0)


# --------------------------------------------------------------------------------------------------
# the one learning-curve reader and the all-plateaued gate
# --------------------------------------------------------------------------------------------------


def _write_curve(run_dir, points, name="learning_curve.json", schema=1):
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {"schema": schema, "n_eval": [64, 128], "points": points}
    (run_dir / name).write_text(json.dumps(doc))
    return doc


def test_read_learning_curve_reads_each_design_and_refuses_bad_files(tmp_path):
    """The reader returns the document of the run's own curve and of a covariate curve, None for a
    run without one, and refuses (naming the file) a truncated file, another schema and a point
    without its E[TV]; fault injection: each corrupted file below was read before it was broken."""
    own = _write_curve(tmp_path / "a", _curve([0.3] * len(STEPS), 0.01))
    shift = _write_curve(
        tmp_path / "a", _curve([0.5] * len(STEPS), 0.01), "learning_curve_uniform.json"
    )
    assert read_learning_curve(tmp_path / "a") == own
    assert read_learning_curve(tmp_path / "a", "uniform") == shift
    assert curve_points(tmp_path / "a", "uniform") == shift["points"]
    assert read_learning_curve(tmp_path / "none") is None and curve_points(tmp_path) is None
    with pytest.raises(ValueError, match="covariates"):
        read_learning_curve(tmp_path / "a", "sideways")
    path = tmp_path / "a" / "learning_curve.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # truncated mid-write
    with pytest.raises(CorruptFileError, match="learning_curve.json"):
        read_learning_curve(tmp_path / "a")
    _write_curve(tmp_path / "a", own["points"], schema=2)
    with pytest.raises(CorruptFileError, match="schema"):
        read_learning_curve(tmp_path / "a")
    _write_curve(tmp_path / "a", [{k: v for k, v in p.items() if k != "tv"} for p in own["points"]])
    with pytest.raises(
        CorruptFileError, match=r"learning_curve.json points\[0\] has no numeric 'tv'"
    ):
        curve_status(tmp_path / "a")  # the reader names the file and the field (issue 41)


def test_read_learning_curve_agrees_with_the_trainers_reader():
    """On every committed learning curve of fig_exp2_1 (own design) and the shift regime (both
    designs), this torch-free reader returns the document pfntheory.nn.train's reader returns."""
    from pfntheory.nn.train import read_learning_curve as train_reader

    root = Path(__file__).resolve().parents[1] / "reports" / "runs"
    runs = sorted(root.glob("fig_exp2_1/*/learning_curve.json")) + sorted(
        root.glob("supp_exp2_shift_regime/*/learning_curve_uniform.json")
    )
    assert runs, "no committed learning curves to compare"
    for f in runs:
        cov = "uniform" if f.name.endswith("_uniform.json") else None
        assert read_learning_curve(f.parent, cov) == train_reader(f.parent, cov), f


def test_all_plateaued_is_the_gate():
    """Every status plateaued -> plateaued; one run still improving (fault injection) or without
    a curve flips it, and the summary names it, counts its state and keeps the largest step."""
    flat = plateau_status(_curve([0.1] * len(STEPS), 1e-4))
    falling = plateau_status(_curve(np.geomspace(1.0, 0.1, len(STEPS)), 1e-4))
    assert flat.plateaued and not falling.plateaued
    assert all_plateaued({"a": flat, "b": flat}) == {
        "plateaued": True,
        "n": 2,
        "not_plateaued": [],
        "no_curve": [],
        "worse": [],
        "states": {},
        "last_step": STEPS[-1],
        "counts": "",
    }
    none = {"state": "no curve", "plateaued": False, "last_step": None}
    g = all_plateaued({"a": flat, "b": falling, "c": none})
    assert not g["plateaued"] and g["not_plateaued"] == ["b", "c"] and g["no_curve"] == ["c"]
    assert g["states"] == {"no curve": 1, "still improving": 1}
    assert g["counts"] == "1 no curve, 1 still improving"
    assert all_plateaued({})["plateaued"]  # vacuous: a caller with no runs decides itself
    with pytest.raises(ValueError, match="statuses"):
        all_plateaued({"a": {"state": "plateaued"}})
    with pytest.raises(TypeError, match="statuses"):
        all_plateaued([flat])
