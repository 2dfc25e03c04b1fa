"""supp-tab:lengthscale-crps and supp-tab:hierarchical-gp: the printed coverages against nominal
(pfntheory.claims.published_tables).

A calibrated predictive (the exact PPD first of all) covers its central l-interval with probability
exactly l under the prior, so a cell computed on the paper's 4096 instances can be compared with l
through the binomial standard error sqrt(l(1-l)/4096) (0.0078 at 50%, 0.0047 at 90%, 0.0034 at
95%). The tolerance is 3 such SE (K_SE). The published numbers are transcribed data, so these tests
are deterministic; they fail if the transcription or the finding changes.
"""

import dataclasses
from pathlib import Path

import pytest

from pfntheory.claims.published_tables import (
    check_published_coverage,
    check_reference_calibrated,
    check_single_kernel_signature,
)
from pfntheory.infra import runs

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs"


def _by_level(experiment):
    return {r.key.rsplit(".", 1)[1]: r for r in check_published_coverage(experiment)}


def test_lengthscale_table_is_calibrated_at_the_deepest_L():
    """ "Reasonably close to nominal even at n' = 1024 > n_max, especially for larger depths": at
    L = 32 every cell of every level lies within 3 binomial SE of nominal (measured: at most 1.7),
    while shallower cells do not (the ell = 0.8, n' = 1024, L = 8 cell covers 0.848 at 90%: 11 SE).
    Fails if a deepest-L cell leaves the band, or if no shallow cell does (the depth effect the
    paper describes would then be absent)."""
    res = _by_level("supp_tab_lengthscale")
    for r in res.values():
        assert r.details["worst_abs_z_deepest_L"] <= 3, str(r)
    assert sum(r.details["n_beyond"] for r in res.values()) >= 1


def test_hierarchical_table_over_covers_at_50_percent():
    """ "Coverage remains reasonably calibrated ..., especially at the 90% and 95% levels": precise
    at 90% (every cell within 3 SE; worst -2.8), but every one of the nine 50% cells lies more than
    3 SE above 0.5 (0.56-0.60, 8-12.5 SE), the deepest L included, and most 95% cells lie more than
    3 SE below 0.95 (0.925-0.942). Fails if the 90% level leaves the band or if the 50%
    over-coverage (a finding: the exact PPD covers 0.50-0.52 on the same prior, see the next test)
    is not in every cell."""
    res = _by_level("supp_tab_hier")
    assert res["cov90"].holds, str(res["cov90"])
    c50 = res["cov50"]
    assert not c50.holds and all(c["z"] > 3 for c in c50.details["cells"]), str(c50)
    assert c50.details["worst_abs_z_deepest_L"] > 3
    assert res["cov95"].details["n_beyond"] >= 5, str(res["cov95"])


def _references():
    return sorted(ROOT.glob("supp_tab_*/exact-ppd-*/result.json"))


def test_exact_ppd_references_are_calibrated():
    """The premise, on our committed exact-PPD reference runs (every one: the quick-scale d=4 ones,
    512 contexts per n', and the cpu-scale d=16 ones, 4096): each level's coverage lies within 3
    binomial SE of nominal at every n'. Fails if the exact mixture PPD's intervals were mis-computed
    (e.g. a component's variance without the noise) or if fewer than the four quick-scale
    references are on disk."""
    paths = _references()
    assert len(paths) >= 4, paths
    for p in paths:
        r = check_reference_calibrated(runs.load_json(p))
        assert r.holds, f"{p.parent.name}: {r}"


def test_a_miscalibrated_reference_is_caught():
    """Fault injection: the hierarchical reference with its 50% coverage moved up by 0.03 (4 SE
    at 4096 contexts) fails the check; a wrong experiment name is refused."""
    p = next(q for q in _references() if "hier" in q.parent.name)
    doc = runs.load_json(p)
    doc["metrics"]["cov50"]["mean"] = [v + 0.03 for v in doc["metrics"]["cov50"]["mean"]]
    doc["n_instances"] = 4096
    assert not check_reference_calibrated(doc).holds
    with pytest.raises(ValueError, match="experiment"):
        check_published_coverage("fig_exp1")


def _hier_task(**kw):
    from pfntheory.experiments.definitions import get_experiment
    from pfntheory.experiments.specs import ExactPPDSpec

    spec = next(
        s for s in get_experiment("supp_tab_hier").runs("cpu") if isinstance(s, ExactPPDSpec)
    )
    return dataclasses.replace(spec.task, **kw)


def test_a_single_kernel_predictive_shows_the_hierarchical_tables_pattern():
    """Why the hierarchical table over-covers at 50%: the paper's TF / TF^pr computes one kernel
    attention with one noise level, so it cannot select (ell, sigma) per context. The NLL-best
    single-kernel predictive of the grid (one fixed component's GP posterior, variance rescaled
    NLL-optimally) on the d=16 hierarchical prior, 256 contexts at n'=128 (seed 0; coverage given a
    context exact): its 50% coverage lies more than 3 SE above 0.5 (measured 0.588, 7.6 SE), its
    90% within 3 SE of 0.9 and its 95% below 0.95: the published pattern (0.56-0.60 / 0.89-0.90 /
    0.93-0.94). Fault injection: with a one-component grid the single kernel is the true one and
    the 50% excess vanishes (the check then fails)."""
    r = check_single_kernel_signature(_hier_task(), n=128, n_instances=256)
    best = r.details["best"]
    print(r, best)
    assert r.holds, str(r)
    assert abs(best["cov90"] - 0.9) <= 3 * best["cov90_se"], best
    assert best["cov95"] < 0.95, best
    one = _hier_task(hier_lengthscales=(0.8,), hier_noise_stds=(0.2,))
    r1 = check_single_kernel_signature(one, n=128, n_instances=256)
    assert not r1.holds and abs(r1.details["best"]["cov50"] - 0.5) < 0.03, r1.details["best"]
