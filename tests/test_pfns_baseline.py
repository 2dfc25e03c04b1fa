"""The PFNs library's transformer beside TF / TF^pr (issue 50, items 3-4): the row builders of
:mod:`pfntheory.claims.pfns_baseline` on the committed run directory and on synthetic ones (no
pfns needed), their refusals of malformed inputs, and the pipeline
(:mod:`pfntheory.pipelines.pfns_baseline`) end to end on a tiny run where pfns is installed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pfntheory.claims import VERDICT_KINDS
from pfntheory.claims import pfns_baseline as pb
from pfntheory.pipelines.pfns_baseline import AUDIT_N, CONFIG, PfnsSetting

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs" / "pfns_baseline"
N_INST = 64


def _audit(tv_by_n, cov=0.9, ratio=1.0, seed=12345, rng=None, label=None, d=8):
    """A synthetic audit document: per n' TVs spread around ``tv_by_n[n]``."""
    rng = rng or np.random.default_rng(0)
    res = {}
    for n, tv in tv_by_n.items():
        inst = np.clip(tv + 0.01 * rng.standard_normal(N_INST), 0, 1)
        res[str(n)] = {
            "n_instances": N_INST,
            "tv": float(inst.mean()),
            "tv_se": float(inst.std(ddof=1) / math.sqrt(N_INST)),
            "tv_instances": [float(v) for v in inst],
            "coverage_90": cov,
            "coverage_90_exact": 0.9,
            "width_90_ratio": ratio,
            "range": "inside" if 64 <= n <= 128 else ("below" if n < 64 else "beyond"),
        }
    doc = {"seed": seed, "n_instances": N_INST, "results": res, "pretraining_range": [64, 128]}
    doc["task"] = {"d": d}
    if label is not None:
        doc["reference_label"] = label
    return doc


def _tree(tmp_path, grow=0.3, shift_cov=0.9, shift_ratio=1.0, fall=0.0):
    """A root with pfns runs at d = 8 for S = 100 and 2S = 200 and one reference run."""
    root = tmp_path / "pfns_baseline"
    for steps, extra in ((100, fall), (200, 0.0)):
        rd = root / f"pfns-d8-s{steps}"
        rd.mkdir(parents=True)
        setting = {"d": 8, "steps": steps, "n_min": 64, "n_max": 128}
        (rd / "pfns_config.json").write_text(json.dumps({"setting": setting, "n_parameters": 1000}))
        tvs = {n: 0.1 + extra + (grow if n > 128 else 0.0) for n in AUDIT_N}
        rng = np.random.default_rng(steps)  # S and 2S: other models, the same instances
        (rd / "audit.json").write_text(json.dumps(_audit(tvs, rng=rng)))
        (rd / "audit_uniform.json").write_text(
            json.dumps(_audit(tvs, cov=shift_cov, ratio=shift_ratio, rng=rng))
        )
    ref = root / "reference" / "rbf-d8-tf-x"
    ref.mkdir(parents=True)
    tvs = {n: 0.05 + (0.9 if n > 128 else 0.0) for n in AUDIT_N}
    (ref / "audit.json").write_text(json.dumps(_audit(tvs, label="TF L=32")))
    return root


# --------------------------------------------------------------------------------------------------
# the committed results


@pytest.mark.skipif(not ROOT.is_dir(), reason="no committed pfns baseline runs")
def test_committed_rows_are_decided_by_the_gate():
    rows = pb.claims(ROOT)
    keys = {r.key for r in rows}
    assert {
        "pfns.growth.d2",
        "pfns.growth.d8",
        "pfns.growth_vs_tf.d2",
        "pfns.growth_vs_tf.d8",
        "pfns.shift.coverage.d8",
    } <= keys
    for r in rows:
        assert r.verdict in VERDICT_KINDS, r
        assert r.decision is not None and r.decision.test == "doubling", r
        assert "beyond the paper" in r.statement
        assert r.ci is not None and r.ci[0] <= r.observed <= r.ci[1]
        conv = r.details["convergence"]
        # the pfns 2S run, and for the comparison with TF the TF run too, each with its partner
        assert len(conv) == (2 if "vs_tf" in r.key else 1), r.key
        assert all(st["half_run"] for st in conv.values())


@pytest.mark.skipif(not ROOT.is_dir(), reason="no committed pfns baseline runs")
def test_claims_read_the_pipelines_settings_file():
    assert CONFIG == pb._CONFIG != "config.json"


def test_committed_paired_table_pairs_the_instances():
    res = pb.load_results(ROOT)
    for d in sorted(res["pfns"]):
        rows = pb.paired_table(res, d)
        assert rows, d
        assert {r["n"] for r in rows} == set(AUDIT_N)
        for r in rows:  # per-instance TVs are recorded on both sides: the paired SE exists
            assert math.isfinite(r["diff_se_paired"]) and r["diff_se_paired"] >= 0
            assert r["diff"] == pytest.approx(r["tv_pfns"] - r["tv_ref"], abs=1e-5)
    cfg = res["pfns"][8][max(res["pfns"][8])]["config"]
    assert cfg["versions"]["pfns"] == "0.4.2"
    assert cfg["n_parameters"] > 0 and cfg["train_cpu_s"] > 0


# --------------------------------------------------------------------------------------------------
# the row builders on synthetic trees


def test_growth_row_holds_when_beyond_range_tv_rises(tmp_path):
    res = pb.load_results(_tree(tmp_path, grow=0.3))
    r = pb.check_growth(res, 8)
    assert r.holds and r.observed == pytest.approx(0.3, abs=0.01)
    assert r.details["reference"]["TF L=32"]["grows"]
    assert r.details["holds_at"] == {"100": True, "200": True}
    # S and 2S score alike: plateaued by budget doubling, so the check holds outright
    assert next(iter(r.details["convergence"].values()))["state"] == "plateaued"
    assert r.verdict == "holds"


def test_growth_row_fails_when_flat_and_interval_excludes_the_minimal_effect(tmp_path):
    res = pb.load_results(_tree(tmp_path, grow=0.0))
    r = pb.check_growth(res, 8)
    assert not r.holds
    assert r.power is not None and r.power.ci[1] < r.power.threshold
    assert r.verdict == "does not hold"


def test_still_improving_pair_is_not_a_plateau(tmp_path):
    res = pb.load_results(_tree(tmp_path, grow=0.3, fall=0.1))
    r = pb.check_growth(res, 8)
    conv = next(iter(r.details["convergence"].values()))
    assert conv["state"] == "still improving"
    assert r.verdict == "holds at budget"  # the check holds at both budgets


def test_shift_row_needs_coverage_and_width(tmp_path):
    ok = pb.check_shift_calibration(pb.load_results(_tree(tmp_path / "a")), 8)
    assert ok.holds
    wide = pb.check_shift_calibration(pb.load_results(_tree(tmp_path / "b", shift_ratio=1.5)), 8)
    assert not wide.holds and "width outside" in wide.tolerance
    low = pb.check_shift_calibration(pb.load_results(_tree(tmp_path / "c", shift_cov=0.6)), 8)
    assert not low.holds and "coverage outside" in low.tolerance
    assert low.verdict == "does not hold"


def test_width_band_is_the_shift_rows_band(tmp_path):
    from pfntheory.claims.pretraining_range import width_band

    r = pb.check_shift_calibration(pb.load_results(_tree(tmp_path)), 8)
    assert r.details["width_band"] == list(width_band())


# --------------------------------------------------------------------------------------------------
# hostile inputs


def test_missing_or_empty_root_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="root"):
        pb.load_results(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no pfns run"):
        pb.load_results(tmp_path / "empty")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["results"]["64"].update(tv=float("nan")), "finite number"),
        (lambda d: d["results"]["64"].update(tv="0.1"), "finite number"),
        (lambda d: d["results"]["64"].update(tv_instances=[2.0] * N_INST), "TVs in"),
        (lambda d: d["results"]["64"].update(tv_instances=[0.1]), "TVs in"),
        (lambda d: d.update(results={}), "non-empty 'results'"),
        (lambda d: d["results"].update({"n64": d["results"]["64"]}), "is not an n'"),
    ],
)
def test_malformed_audit_is_refused_naming_the_file(tmp_path, edit, match):
    root = _tree(tmp_path)
    path = root / "pfns-d8-s200" / "audit.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=match) as e:
        pb.load_results(root)
    assert "audit.json" in str(e.value)


def test_invalid_json_and_bad_config_are_refused(tmp_path):
    root = _tree(tmp_path)
    (root / "pfns-d8-s200" / "audit.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        pb.load_results(root)
    root = _tree(tmp_path / "x")
    (root / "pfns-d8-s200" / "pfns_config.json").write_text(json.dumps({"setting": {"d": 8}}))
    with pytest.raises(ValueError, match="setting"):
        pb.load_results(root)


def test_reference_without_label_is_refused(tmp_path):
    root = _tree(tmp_path)
    path = root / "reference" / "rbf-d8-tf-x" / "audit.json"
    doc = json.loads(path.read_text())
    del doc["reference_label"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="reference_label"):
        pb.load_results(root)


def test_budget_pair_needs_the_half_budget_run(tmp_path):
    root = _tree(tmp_path)
    import shutil

    shutil.rmtree(root / "pfns-d8-s100")
    res = pb.load_results(root)
    with pytest.raises(ValueError, match="half-budget partner"):
        pb.check_growth(res, 8)
    with pytest.raises(ValueError, match="no pfns run at d=2"):
        pb.check_growth(res, 2)


def test_growth_needs_n_inside_and_beyond():
    doc = _audit({64: 0.1, 96: 0.1})
    with pytest.raises(ValueError, match="beyond"):
        pb.growth(doc, 64, 128)


def test_shift_row_without_shift_audit_is_refused(tmp_path):
    root = _tree(tmp_path)
    (root / "pfns-d8-s200" / "audit_uniform.json").unlink()
    with pytest.raises(ValueError, match="no audit_uniform.json"):
        pb.check_shift_calibration(pb.load_results(root), 8)


def test_paired_table_refuses_other_instances(tmp_path):
    root = _tree(tmp_path)
    path = root / "reference" / "rbf-d8-tf-x" / "audit.json"
    doc = json.loads(path.read_text())
    doc["seed"] = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="other instances"):
        pb.paired_table(pb.load_results(root), 8)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"d": 0}, "d"),
        ({"steps": 120, "steps_per_epoch": 50}, "multiple of steps_per_epoch"),
        ({"n_min": 200}, "n_min must be <= n_max"),
        ({"bars": 3}, "bars"),
        ({"emsize": 65}, "multiple of nhead"),
        ({"lr": 2.0}, "lr"),
        ({"warmup_frac": 1.0}, "warmup_frac"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_setting_refuses_bad_values(kw, match):
    base = {"d": 2, "steps": 100}
    with pytest.raises((ValueError, TypeError), match=match):
        PfnsSetting(**{**base, **kw})


# --------------------------------------------------------------------------------------------------
# the pipeline, where pfns is installed


def test_pipeline_trains_and_audits_a_tiny_run(tmp_path):
    pytest.importorskip("pfns")
    from pfntheory.pipelines import pfns_baseline as pp

    s = PfnsSetting(
        d=2, steps=4, steps_per_epoch=2, emsize=16, nhid=16, nlayers=1, nhead=2, bars=10,
        batch_size=2, n_test=2,
    )  # fmt: skip
    run = pp.train_run(s, tmp_path)
    cfg = json.loads((run / "pfns_config.json").read_text())
    assert cfg["versions"]["pfns"] and cfg["n_parameters"] > 0 and cfg["train_cpu_s"] >= 0
    borders = np.asarray(cfg["borders"])
    assert borders[1] == pytest.approx(cfg["interval"][0])
    assert borders[-2] == pytest.approx(cfg["interval"][1])
    mtime = (run / "weights.pt").stat().st_mtime_ns
    assert pp.train_run(s, tmp_path) == run  # a rerun skips the finished run
    assert (run / "weights.pt").stat().st_mtime_ns == mtime
    path = pp.audit_run(run, None, n_instances=4)
    doc = json.loads(path.read_text())
    assert set(doc["results"]) == {str(n) for n in AUDIT_N}
    assert len(doc["results"]["200"]["tv_instances"]) == 4
    assert doc["results"]["200"]["range"] == "beyond"


def _with_tf_reference(root, **edits):
    path = root / "reference" / "rbf-d8-tf-x" / "audit.json"
    doc = json.loads(path.read_text())
    doc.update(edits)
    path.write_text(json.dumps(doc))


def test_growth_vs_tf_refuses_a_reference_it_cannot_compare(tmp_path):
    root = _tree(tmp_path)
    _with_tf_reference(root, pretraining_range=[64, 256])
    with pytest.raises(ValueError, match="pretraining range"):
        pb.check_growth_vs_tf(pb.load_results(root), 8)
    root = _tree(tmp_path / "b")
    with pytest.raises(ValueError, match="run_dir"):  # no run directory to gate the TF run on
        pb.check_growth_vs_tf(pb.load_results(root), 8)
    with pytest.raises(ValueError, match="no reference 'TF L=8'"):
        pb.check_growth_vs_tf(pb.load_results(root), 8, reference="TF L=8")


def test_growth_vs_tf_pairs_the_instances(tmp_path):
    """The gap's paired SE is far below the unpaired one when the two models err alike on each
    instance (here: the TF audit is the PFN's plus a constant beyond the range)."""
    mine = _audit({n: 0.1 for n in AUDIT_N})
    other = json.loads(json.dumps(mine))
    for n, r in other["results"].items():
        if int(n) > 128:
            r["tv_instances"] = [min(1.0, v + 0.5) for v in r["tv_instances"]]
            r["tv"] = float(np.mean(r["tv_instances"]))
    gap, se = pb._paired_growth_gap(mine, other, 64, 128)
    assert gap == pytest.approx(0.5, abs=1e-9)
    assert se < 1e-9
    other["seed"] = 7
    with pytest.raises(ValueError, match="other instances"):
        pb._paired_growth_gap(mine, other, 64, 128)


def test_reference_status_without_partner_is_never_plateaued(tmp_path):
    rd = tmp_path / "rbf-d8-tf-learn-L32-C256-n64-128-s8000-abc"
    rd.mkdir()
    (rd / "config.json").write_text(json.dumps({"steps": 8000, "n_min": 64, "n_max": 128}))
    st = pb.reference_status(rd)
    assert st.state == "no half-budget run" and not st.plateaued
