"""supp-sec:exp additional (covariate shift), for the architecture itself: the hand-set TF^pr.

Statement examined: "Despite the shift in covariates [x ~ Unif[-1/sqrt d, 1/sqrt d]^d], the
generalization performance is comparable to the true baseline for n_max = 512 and L >= 16" (d = 4).
A trained model can miss this through its weights or through the architecture; this module tests
the architecture with no training: the hand-set TF^pr (exact weights of thm:TFdoPPD with normalised
solver layers, float64, step 0.9 x 2/(1+sigma^2), the paper's n-independent step for
eqn:richardson prec) at the paper's d = 4 and L in {16, 32}, on the shifted design and on the
pretraining design N(0, I/d) (:mod:`pfntheory.claims.shift`).

Generated cases: GP contexts (RBF alpha = 1, lengthscale 0.8, noise variance 0.04) on each design,
the query from the same design; per cell 32 contexts x 3 seeds at n in {64, 256} (default) or 64 x 4
(``--scale cpu`` / ``paper``, n up to 512). Coverage is exact per context (the label draw integrated
out), so only the contexts are Monte Carlo.

Tolerances: coverage within COVERAGE_SLACK = 0.05 (the paper's own "reasonably close to nominal",
.848 at 90%) plus 3 standard errors over contexts (fixed seeds; one-sided normal tail 0.13% per
cell). Parity of the batched recursion with the literal forward pass (checked at n <= 128, where the
dense literal pass is cheap): round-off, see PARITY_ATOL.

How we know it can fail: the same check at depth L = 2 (one solver layer) reports coverage 0.05
under the shift and 0.64 on the pretraining design (``test_check_detects_an_unconverged_solver``); a
miscalibrated architecture at L >= 16 would fail the same way.
"""

import pytest

from pfntheory.claims.shift import check_shift_construction

#: |recursion - literal forward| at the query: each of L <= 32 layers adds n <= 512 products of
#: magnitude <= max|Y| (~4) at relative round-off EPS = 2.2e-16, so |error| <= L n 4 EPS ~ 1.5e-11;
#: 1e-10 leaves a margin for the normaliser s_x and kappa(x, x).
PARITY_ATOL = 1e-10


def _grid(scale):
    if scale == "quick":
        return dict(ns=(64, 256), Ls=(16, 32), n_instances=32, seeds=(0, 1, 2))
    return dict(ns=(64, 128, 256, 512), Ls=(16, 32), n_instances=64, seeds=(0, 1, 2, 3))


@pytest.fixture(scope="module")
def claims(scale):
    return {r.key: r for r in check_shift_construction(**_grid(scale))}


def test_batched_recursion_is_the_handset_transformer(claims):
    """The moments measured are those of the literal hand-set TF^pr forward pass (round-off)."""
    for key in ("shift_construction.coverage.gaussian", "shift_construction.coverage.uniform"):
        p = claims[key].details["parity_max_abs"]
        assert p <= PARITY_ATOL, p  # NaN (never checked) fails too


def test_handset_tfpr_calibrated_on_pretraining_design(claims):
    """Control: the hand-set TF^pr at L in {16, 32} is calibrated on N(0, I/d) (else the shift test
    would say nothing about the shift)."""
    r = claims["shift_construction.coverage.gaussian"]
    assert r.holds, (
        str(r)
        + " cells: "
        + str([(c["L"], c["n"], round(c["coverage90"], 3)) for c in r.details["cells"]])
    )


def test_handset_tfpr_calibrated_under_covariate_shift(claims):
    """The architecture itself is calibrated under the shift: 90% coverage near nominal at every
    L in {16, 32} and n (the intervals are wider than the exact PPD's -- width ratio > 1 -- since
    the truncated solver underestimates k_x'(G + sigma^2 I)^-1 k_x; recorded in the details)."""
    r = claims["shift_construction.coverage.uniform"]
    assert r.holds, (
        str(r)
        + " cells: "
        + str([(c["L"], c["n"], round(c["coverage90"], 3)) for c in r.details["cells"]])
    )


def test_shift_does_not_move_handset_tfpr_away_from_the_ppd(claims):
    """The architecture is not hurt by the shift: its mean distance to the exact PPD under the shift
    is at most 3 SE above the one on the pretraining design in every (L, n) (measured: below it; the
    shifted inputs are more concentrated, s_x larger, and the truncated solver closer)."""
    r = claims["shift_construction.shift_not_worse"]
    assert r.holds, str(r) + " " + str(r.details["differences"])


def test_check_detects_an_unconverged_solver():
    """Fault injection: at depth L = 2 (one solver layer) the check must report miscalibration."""
    res = {
        r.key: r
        for r in check_shift_construction(ns=(64,), Ls=(2,), n_instances=32, seeds=(0, 1, 2))
    }
    assert not res["shift_construction.coverage.uniform"].holds
    assert not res["shift_construction.coverage.gaussian"].holds
