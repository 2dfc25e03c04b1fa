"""Per-instance scores of a run's evaluation (:func:`pfntheory.nn.evaluate.score_instances`) and
the tables' CRPS comparison paired on them (:func:`pfntheory.claims.trained.check_table`; issue 47).

On copies of the committed quick-scale runs of ``supp_tab_lengthscale`` (d = 4, 512 instances per
n', about 9 s of CPU in all): the per-instance CRPS reproduce each run's ``eval.json`` mean to 1e-5
relative (the function refuses otherwise; 4e-9 measured), and the paired comparison has the same
effect as the unpaired one and a smaller standard error (the runs share the instances, so the
per-instance differences cancel the instance-to-instance spread). The checks would fail if the
instances were not the evaluation's (another seed or batch size: the means differ by about their
SE) or if the pairing were not used.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pfntheory.claims import trained as xt  # noqa: E402
from pfntheory.experiments.results import load_available  # noqa: E402
from pfntheory.infra.tree import RunSpec  # noqa: E402
from pfntheory.nn.evaluate import INSTANCES, score_instances  # noqa: E402


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """The quick-scale table runs copied to a temporary root, each scored per instance."""
    runs, missing = load_available("supp_tab_lengthscale", "quick")
    assert not missing
    root = tmp_path_factory.mktemp("instances")
    out = []
    for r in runs:
        if isinstance(r.spec, RunSpec):
            dst = root / r.run_dir.name
            shutil.copytree(r.run_dir, dst)
            score_instances(dst, _own_eval(r))
            r = dataclasses.replace(r, run_dir=dst)
        out.append(r)
    return runs, out


def _own_eval(r):
    return next(e for e in r.spec.evals if e.covariates is None)


def _fall(runs):
    return next(c for c in xt.check_table(runs) if c.key == "table.crps_falls_with_L")


def test_the_instances_reproduce_eval_json(copied):
    _, runs = copied
    for r in runs:
        if not isinstance(r.spec, RunSpec):
            continue
        doc = json.loads((r.run_dir / INSTANCES).read_text())
        ev = json.loads((r.run_dir / "eval.json").read_text())
        assert doc["seed"] == ev["seed"] and doc["n_instances"] == ev["n_instances"]
        for n, vals in doc["values"].items():
            for m in ("crps", "crps_exact"):
                assert len(vals[m]) == ev["n_instances"]
                assert np.mean(vals[m]) == pytest.approx(ev["results"][n][m], rel=1e-5)


def test_the_paired_fall_has_the_same_effect_and_a_smaller_se(copied):
    original, scored = copied
    before, after = _fall(original), _fall(scored)
    assert "unpaired" in before.tolerance and "paired over the 512" in after.tolerance
    assert after.observed == pytest.approx(before.observed, rel=1e-5)
    assert after.bound < 0.8 * before.bound  # 3 SE: 0.0118 against 0.0188 measured
    assert after.details["paired"] and not before.details["paired"]


def test_a_missing_or_damaged_instances_file(copied, tmp_path):
    _, scored = copied
    trained = [r for r in scored if isinstance(r.spec, RunSpec)]
    moved = []
    for r in scored:
        if isinstance(r.spec, RunSpec):
            dst = tmp_path / r.run_dir.name
            shutil.copytree(r.run_dir, dst)
            r = dataclasses.replace(r, run_dir=dst)
        moved.append(r)
    victim = next(r for r in moved if isinstance(r.spec, RunSpec))
    doc = json.loads((victim.run_dir / INSTANCES).read_text())
    n = next(iter(doc["values"]))
    doc["values"][n]["crps"][3] = float("nan")
    (victim.run_dir / INSTANCES).write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="do not pair"):
        _fall(moved)
    (victim.run_dir / INSTANCES).unlink()  # one run without the file: unpaired, as before
    assert "unpaired" in _fall(moved).tolerance
    assert len(trained) == 6


def test_bad_arguments_are_refused(copied, tmp_path):
    original, scored = copied
    r = next(x for x in scored if isinstance(x.spec, RunSpec))
    ev = _own_eval(r)
    with pytest.raises(ValueError, match="metrics: unknown metric 'tv'"):
        score_instances(r.run_dir, ev, metrics=("tv",), save=False)
    with pytest.raises(ValueError, match="metrics must name"):
        score_instances(r.run_dir, ev, metrics=(), save=False)
    with pytest.raises(ValueError, match="spec.covariates must be None"):
        score_instances(r.run_dir, dataclasses.replace(ev, covariates="uniform"), save=False)
    with pytest.raises(ValueError, match="other settings \\(seed\\)"):
        score_instances(r.run_dir, dataclasses.replace(ev, seed=ev.seed + 1), save=False)
    with pytest.raises(FileNotFoundError, match="run_dir: .* has no eval.json"):
        score_instances(tmp_path, ev, save=False)
    doc = json.loads((r.run_dir / INSTANCES).read_text())
    doc["n_instances"] = 7
    bad = tmp_path / "other"
    shutil.copytree(r.run_dir, bad)
    (bad / INSTANCES).write_text(json.dumps(doc))
    with pytest.raises(FileExistsError, match="other settings"):
        score_instances(bad, ev)
    # an eval.json of other instances (its CRPS moved by 1%, about one SE): refused
    moved = tmp_path / "moved"
    shutil.copytree(r.run_dir, moved)
    (moved / INSTANCES).unlink()
    ev_doc = json.loads((moved / "eval.json").read_text())
    n = str(ev.n_eval[0])
    ev_doc["results"][n]["crps"] *= 1.01
    (moved / "eval.json").write_text(json.dumps(ev_doc))
    with pytest.raises(ValueError, match="not the instances or the model"):
        score_instances(moved, ev, save=False)
    assert original
