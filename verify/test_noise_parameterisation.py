"""Which noise convention reproduces supp-tab:lengthscale-crps (supp-sec:exp details,
sigma^2 = 0.2)?

Statement checked: supp-sec:exp details says "we fix the noise variance at sigma^2 = 0.2", and
supp-tab:lengthscale-crps reports the CRPS of trained models on the RBF task (d = 16, alpha = 1,
x ~ N(0, I/d), n_max = 256, lengthscale in {0.4, 0.8, 1.6}).

A trained model cannot beat the exact PPD in expected CRPS (CRPS is proper), and the exact PPD's
expected CRPS is E sqrt(tau / pi) (:mod:`pfntheory.claims.noise`). So every published CRPS must be
at least that lower bound, up to Monte-Carlo error. The tests measure the bound under both
conventions: noise variance 0.2 (the text) and noise standard deviation 0.2 (variance 0.04).

Tolerance: a published value is "consistent" when it is >= exact - 4 combined standard errors:
those of our Monte-Carlo mean (fixed seed, 200 instances per cell) and of the paper's own cell, a
mean over 4096 instances (its SE from the exact PPD's CRPS spread, 0.002-0.007). An earlier
version left the paper's error out; it then called the (0.4, 256) row "impossible under the stated
design", a refutation that the paper's own sampling error does not support.
"""

import numpy as np
import pytest

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.noise import check_noise_parameterisation
from pfntheory.experiments.published import LENGTHSCALE_CRPS

K_SE = 4.0


def _table(ns):
    return {key: v["crps"] for key, v in LENGTHSCALE_CRPS.items() if key[1] in ns}


@pytest.fixture(scope="module")
def both_conventions():
    tab = _table({256})
    return {
        nv: check_noise_parameterisation(tab, nv, n_instances=200, k_se=K_SE, seed=0)
        for nv in (0.2, 0.04)
    }


def test_text_noise_variance_contradicts_table(both_conventions):
    """Erratum: with noise variance 0.2 the exact PPD's expected CRPS exceeds every published CRPS.

    Can fail: if the table had been produced with variance 0.2, the published values would sit at or
    above the exact bound and the deficits would be below 4 standard errors.
    """
    r = both_conventions[0.2]
    assert not r.holds, str(r)
    deficits = [row["deficit_in_se"] for row in r.details["rows"]]
    assert min(deficits) > K_SE, f"some cell is consistent with variance 0.2: {r.details['rows']}"


def test_noise_std_convention_fits_better(both_conventions):
    """With noise std 0.2 (variance 0.04) the bound sits at or just below the published values.

    Measured (seed 0, 200 instances): under variance 0.2 every published CRPS is 7-50% below the
    exact PPD's expected CRPS (9.6-41 combined SE); under variance 0.04 the deficit is at most 3.2%
    ((0.4, 256)) and every cell is within 4 combined SE (worst 3.1).

    Can fail: the relative gap |paper(L=32) - exact| / exact must be smaller under 0.04 than under
    0.2 in every cell; every relative deficit (exact - best paper) / exact must exceed 5% under 0.2
    and stay below 5% under 0.04; the inconsistent cells under 0.04 must be among the two
    named above.
    """
    gaps, deficits = {}, {}
    for nv, r in both_conventions.items():
        gaps[nv] = [
            abs(row["paper"][-1] - row["exact_mean"]) / row["exact_mean"]
            for row in r.details["rows"]
        ]
        deficits[nv] = [
            (row["exact_mean"] - min(row["paper"])) / row["exact_mean"] for row in r.details["rows"]
        ]
    assert all(a < b for a, b in zip(gaps[0.04], gaps[0.2], strict=True)), gaps
    assert min(deficits[0.2]) > 0.05, deficits[0.2]
    assert max(deficits[0.04]) < 0.05, deficits[0.04]
    bad = {
        (row["lengthscale"], row["n"])
        for row in both_conventions[0.04].details["rows"]
        if not row["consistent"]
    }
    assert not bad, both_conventions[0.04].details["rows"]
    assert both_conventions[0.04].holds
    assert DEFAULT_NOISE_VAR == 0.04


def test_lengthscale_04_row_is_low_but_within_the_papers_error(both_conventions):
    """At lengthscale 0.4, n' = 256 the published CRPS (.538-.547) lies below the exact PPD's
    expected CRPS (~0.555) even with noise std 0.2, but by at most 4 combined SE (measured 3.1 with
    200 contexts; 2.8 against the 4096-context cpu reference, verify/test_crps_slip.py): the
    paper's own 4096-instance error (0.006) covers it, the more so as the best of three depths is
    the one compared. So the row is no evidence of an undisclosed setting.

    Can fail: if the best published value at (0.4, 256) were above the exact bound (no deficit
    left to explain) or more than 4 combined SE below it.
    """
    row = next(
        r
        for r in both_conventions[0.04].details["rows"]
        if r["lengthscale"] == 0.4 and r["n"] == 256
    )
    assert 0 < row["deficit_in_se"] <= K_SE, row


@pytest.mark.slow
def test_full_table_both_conventions():
    """All six cells (n' = 256 and 1024) with 400 instances: variance 0.2 is inconsistent
    everywhere; variance 0.04 is consistent in every cell within 4 combined SE (seed 1)."""
    tab = _table({256, 1024})
    r2 = check_noise_parameterisation(tab, 0.2, n_instances=400, k_se=K_SE, seed=1)
    r04 = check_noise_parameterisation(tab, 0.04, n_instances=400, k_se=K_SE, seed=1)
    assert not r2.holds and all(row["deficit_in_se"] > K_SE for row in r2.details["rows"]), str(r2)
    assert r04.holds, r04.details["rows"]
    assert np.isfinite(r04.observed)
