"""supp-tab:lengthscale-crps: the histogram-CRPS slip of the authors' code, and whether it explains
the table's cells below the exact PPD (pfntheory.claims.crps_slip).

The slip subtracts ``w F(y)^2`` in the bin holding ``y`` and never adds it back; on a calibrated
forecast ``F(Y)`` is uniform, so the mean CRPS is biased by ``-w/3``. Both checks are Monte-Carlo
with fixed seeds and state their standard errors; they fail when the measured bias is not ``-w/3``,
resp. when a cell stays below the exact PPD after the slip is undone.
"""

from pfntheory.claims import ERRATUM, HOLDS
from pfntheory.claims.crps_slip import check_crps_slip, check_slip_bias, slipped_histogram_crps
from pfntheory.experiments.published import LENGTHSCALE_CRPS


def test_slip_bias_is_minus_a_third_of_the_bin_width():
    """Mean of (slipped - exact) CRPS over 20000 exact discretised Gaussian PPDs (C = 256) within
    4 Monte-Carlo SE of -w/3 (fixed seed 0). Fails for a slip of another size (e.g. w F(y), bias
    -w/2) or none."""
    r = check_slip_bias()
    print(r)
    assert r.holds, str(r)


def test_slip_is_the_only_difference():
    """The slipped formula equals the exact histogram CRPS minus w F(y)^2 and refuses labels outside
    the bins (they have no bin to slip in)."""
    import numpy as np
    import pytest

    from pfntheory.maths.metrics import histogram_cdf, histogram_crps

    edges = np.linspace(-1, 1, 5)
    P = np.full((2, 4), 0.25)
    y = np.array([0.1, -0.7])
    F = histogram_cdf(edges, P, y)
    np.testing.assert_allclose(
        slipped_histogram_crps(edges, P, y),
        histogram_crps(edges, P, y) - 0.5 * F**2,
        rtol=1e-12,
        atol=1e-15,
    )
    with pytest.raises(ValueError, match="y"):
        slipped_histogram_crps(edges, P, np.array([0.1, 1.5]))


def test_crps_slip_against_the_lengthscale_table():
    """supp-tab:lengthscale-crps: every cell (lengthscale, n', L) against the exact PPD's expected
    CRPS E sqrt(tau/pi) (d=16, sigma^2 = 0.04, 60 contexts per cell, seed 0), with the combined SE
    of our reference and the paper's 4096-instance mean; K_SE = 3 SE. The recorded verdict is
    "erratum" if the slip explains the cells below the exact PPD, "holds" if none is below beyond
    the Monte-Carlo error; the test fails if a cell stays below after undoing the slip."""
    r = check_crps_slip({k: v["crps"] for k, v in LENGTHSCALE_CRPS.items()}, n_instances=60)
    print(r)
    print(
        {
            k: r.details[k]
            for k in ("w", "worst_z_raw", "worst_z_corrected", "n_below_raw", "n_below_corrected")
        }
    )
    assert r.verdict in (ERRATUM, HOLDS)
    assert r.holds, str(r)


def _cpu_references() -> dict:
    """The exact PPD's expected CRPS per (lengthscale, n') from the committed cpu-scale reference
    runs of supp_tab_lengthscale (d=16, 4096 contexts per n')."""
    from pathlib import Path

    from pfntheory.claims.crps_slip import reference_floors
    from pfntheory.infra import runs

    root = Path(__file__).resolve().parents[1] / "reports" / "runs" / "supp_tab_lengthscale"
    return reference_floors(runs.load_json(p) for p in root.glob("exact-ppd-*/result.json"))


def test_crps_slip_against_the_cpu_references():
    """The same check against our committed cpu-scale exact-PPD references (4096 contexts per n',
    SE 0.0002-0.001, a tenth of the paper's own SE): no cell lies more than K_SE = 3 combined SE
    below the exact PPD even before undoing the slip (measured: worst 2.8 SE, ell = 0.4, n' = 256,
    L = 8: 0.538 vs 0.5555), so the recorded verdict is "holds" (the slip is consistent with the
    low cells but not needed). Fails if a cell lies below beyond 3 SE (verdict erratum or does not
    hold) or if a reference run is missing; a reference lacking a cell is refused."""
    import pytest

    exact = _cpu_references()
    paper = {k: v["crps"] for k, v in LENGTHSCALE_CRPS.items()}
    assert set(paper) <= set(exact), sorted(set(paper) - set(exact))
    r = check_crps_slip(paper, exact=exact)
    print(r)
    assert r.verdict == HOLDS and r.holds, str(r)
    assert r.details["worst_z_raw"] > 2  # the low cells are there, within the paper's own error
    with pytest.raises(ValueError, match="exact lacks"):
        check_crps_slip(paper, exact={k: v for k, v in exact.items() if k != (0.4, 256)})
