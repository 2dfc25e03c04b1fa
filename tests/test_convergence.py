"""Tests of the plateau criterion (pfntheory.convergence) on synthetic learning curves."""

import numpy as np
import pytest

from pfntheory.convergence import MIN_POINTS, curve_means, plateau_status, trend_text
from pfntheory.nn.train import curve_steps

STEPS = curve_steps(2000, 12)


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


def test_flat_curve_has_plateaued():
    st = plateau_status(_curve([0.1] * len(STEPS), se=0.003))
    assert st["plateaued"] and st["last_step"] == 2000 and st["change"] == 0.0


def test_still_falling_curve_has_not():
    # TV falling like step^-0.3: the fall over the last half-decade is many standard errors
    v = [0.5] + [0.5 * s**-0.3 for s in STEPS[1:]]
    st = plateau_status(_curve(v, se=0.002))
    assert not st["plateaued"] and st["change"] > 2 * st["se"], st
    assert "still improving at 2000" in trend_text(st)


def test_noisy_flat_curves_rarely_called_improving():
    """Flat curves whose per-step means scatter by exactly their standard error (0.004/sqrt(2) for
    the mean over two n'): a false "still improving" has probability P(Z > 2) = 2.3% per curve at
    k = 2. Over 400 curves (fixed seed) the rate must stay below 5%: the binomial standard error of
    the rate is 0.75%, so 5% is 3.6 standard errors above 2.3%."""
    rng = np.random.default_rng(2024)
    wrong = 0
    for _ in range(400):
        v = 0.1 + 0.004 / np.sqrt(2) * rng.standard_normal(len(STEPS))
        wrong += not plateau_status(_curve(v, se=0.004))["plateaued"]
    assert wrong / 400 < 0.05, wrong


def test_noisy_falling_curve_is_still_improving():
    rng = np.random.default_rng(0)
    v = np.array([0.5 * s**-0.5 if s else 0.5 for s in STEPS]) + 0.001 * rng.standard_normal(
        len(STEPS)
    )
    assert not plateau_status(_curve(v, se=0.001))["plateaued"]


def test_too_few_points_and_errors():
    pts = [p for p in _curve([0.1] * len(STEPS), 0.01) if p["step"] in STEPS[:MIN_POINTS]]
    assert not plateau_status(pts)["plateaued"]
    with pytest.raises(ValueError, match="k"):
        plateau_status(_curve([0.1] * len(STEPS), 0.01), k=0)
    with pytest.raises(ValueError, match="metric"):
        plateau_status(_curve([0.1] * len(STEPS), 0.01), metric="loss")
    with pytest.raises(ValueError, match=r"points\[0\]"):
        plateau_status([{"step": 1}])


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
    assert not plateau_status(pts, metric="coverage90")["plateaued"]


def test_rising_curve_is_diverging_not_plateaued():
    """A curve that gets significantly worse over the last half (the trained TF^pr under the covariate
    shift: TV 0.30 at step 196, 0.81 from step 414 on) is still moving, so never "plateaued"."""
    v = [0.3] * 7 + [0.3 + 0.1 * i for i in range(1, len(STEPS) - 6)]
    st = plateau_status(_curve(v, se=0.01))
    assert not st["plateaued"] and st["diverging"] and st["change"] < -2 * st["se"], st
    assert "getting worse at 2000" in trend_text(st)
    flat = plateau_status(_curve([0.1] * len(STEPS), se=0.003))
    assert not flat["diverging"]
