"""The selectors, the teacher-forced training and the ceiling's bookkeeping of the multi-head model
(issue 38; pfntheory.nn.selector, pfntheory.nn.multihead_train, pfntheory.claims.multihead_select).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pfntheory.claims import FAILS, HOLDS, UNDECIDED, UNDERPOWERED
from pfntheory.claims import multihead_select as ms
from pfntheory.infra.config import ModelSpec, TaskSpec, prior_components
from pfntheory.infra.tree import RunSpec
from pfntheory.nn import selector as S
from pfntheory.nn.multihead_train import TEACHER_FORCED, train_teacher_forced
from pfntheory.nn.state import build_model, load_trained

TASK = TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.5, 1.0), hier_noise_stds=(0.2, 0.3))


def test_sample_with_component_names_the_drawing_component():
    """``Y = chol(G_h* + sigma_h*^2 I) z`` with the replayed ``z``: the component is the one that
    drew the labels (a wrong ``h*`` gives another factor, so the labels differ)."""
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    bt, h0 = S.sample_with_component(TASK, 6, 10, g)
    g2 = torch.Generator()
    g2.set_state(state)
    X_all = TASK.scale * torch.randn(6, 11, 2, generator=g2, dtype=torch.float64)
    z = torch.randn(6, 10, generator=g2, dtype=torch.float64)
    kernels, nv = prior_components(TASK)
    X = X_all[:, :10].numpy()
    for b in range(6):
        for h, (k, s2) in enumerate(zip(kernels, nv, strict=True)):
            Y = np.linalg.cholesky(k(X[b]) + s2 * np.eye(10)) @ z[b].numpy()
            same = np.allclose(Y, bt.Y[b].numpy(), rtol=0, atol=1e-12)
            assert same == (h == int(h0[b])), (b, h, int(h0[b]))


def test_draw_contexts_shapes_and_reproducible():
    X, Y, h = S.draw_contexts(TASK, 5, 7, torch.Generator().manual_seed(0))
    X2, Y2, h2 = S.draw_contexts(TASK, 5, 7, torch.Generator().manual_seed(0))
    assert X.shape == (5, 7, 2) and Y.shape == (5, 7) and h.shape == (5,)
    assert torch.equal(Y, Y2) and torch.equal(h, h2) and int(h.max()) < TASK.n_components
    with pytest.raises(ValueError, match="hier_rbf"):
        S.draw_contexts(TaskSpec(kind="rbf", d=2), 2, 3, torch.Generator())


def test_summary_stats_and_a_uniform_selector_at_init():
    X, Y, _ = S.draw_contexts(TASK, 4, 9, torch.Generator().manual_seed(1))
    F = S.summary_stats(X, Y, (0.5, 1.0))
    assert F.shape == (4, 6) and torch.isfinite(F).all()
    assert torch.allclose(F[:, -1], torch.full((4,), math.log(9.0), dtype=F.dtype))
    sel = S.StatSelector((0.5, 1.0), TASK.n_components)
    lw = sel(F)
    assert torch.allclose(lw, torch.full_like(lw, -math.log(TASK.n_components)))
    with pytest.raises(ValueError, match="n >= 2"):
        S.summary_stats(X[:, :1], Y[:, :1])
    with pytest.raises(ValueError, match="bank"):
        S.summary_stats(X, Y, (0.5, -1.0))


def test_train_selector_learns_two_far_components():
    """Two lengthscales far apart (0.3 and 2.0, d = 2): after a short training the selection loss
    falls below chance (log 2) and the top weight is right in most held-out contexts."""
    task = TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.3, 2.0), hier_noise_stds=(0.1,))
    sel, log = S.train_selector(task, n_contexts=256, n_range=(32, 64), epochs=40, chunk=32)
    assert log["loss"][-1] < 0.5 * log["chance_loss"]
    X, Y, h = S.draw_contexts(task, 200, 48, torch.Generator().manual_seed(9))
    with torch.no_grad():
        acc = float((sel(S.summary_stats(X, Y, sel.bank)).argmax(-1) == h).double().mean())
    assert acc > 0.9  # 200 contexts: a chance selector (0.5) is 11 binomial SE below


def test_teacher_forced_run_writes_a_loadable_run(tmp_path):
    spec = RunSpec(
        task=TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.5,), hier_noise_stds=(0.2, 0.3)),
        model=ModelSpec(score="rbf", L=3, C=8, normalised=True, mixture=True),
        n_min=4,
        n_max=8,
        steps=2,
        lr=1e-2,
        batch_size=4,
    )
    run = train_teacher_forced(spec, tmp_path / "run", (-3.0, 3.0), log_every=1)
    model, spec2, met = load_trained(run)
    assert spec2 == spec and met["kind"] == TEACHER_FORCED and len(met["losses"]) == 2
    assert met["cpu_time_s"] > 0
    fresh = build_model(spec, (-3.0, 3.0), "cpu")
    moved = any(
        not torch.equal(a, b) for a, b in zip(model.parameters(), fresh.parameters(), strict=True)
    )
    assert moved
    with pytest.raises(FileExistsError):
        train_teacher_forced(spec, run, (-3.0, 3.0))


def _doc(tv_single, tv_exact):
    return {
        "n_eval": [256],
        "n_instances": 4,
        "seed": 1,
        "multi_run": "m",
        "single_runs": {},
        "bayes_acc": {"p(h|D)": {"256": [1.0, 0.0, 1.0, 1.0]}},
        "tv": {"single": {"256": tv_single}, "exact": {"256": tv_exact}},
        "sel_acc": {},
        "sel_tv_w": {},
    }


def test_ceiling_claim_decides_on_paired_differences():
    low = _doc([0.30, 0.31, 0.29, 0.30], [0.10, 0.12, 0.11, 0.10])
    r = ms.ceiling_claim(low, [("single", "exact")], statuses={})
    assert r.holds and r.verdict == HOLDS
    high = _doc([0.30, 0.31, 0.29, 0.30], [0.31, 0.20, 0.30, 0.32])
    r = ms.ceiling_claim(high, [("single", "exact")], statuses={})
    # 0.0175 +- 3 x 0.031 holds the minimal effect of interest, 10% of E[TV] (0.028)
    assert not r.holds and r.verdict == UNDERPOWERED
    level = _doc([0.30, 0.31, 0.29, 0.30], [0.31, 0.30, 0.30, 0.32])
    r = ms.ceiling_claim(level, [("single", "exact")], statuses={})
    # -0.0075 +- 3 x 0.0075 lies below 0.031: no gain that matters (docs/verdicts.md)
    assert not r.holds and r.verdict == FAILS and r.power.minimal == pytest.approx(0.03075)
    worse = _doc([0.30, 0.31, 0.29, 0.30], [0.40, 0.41, 0.40, 0.39])
    assert ms.ceiling_claim(worse, [("single", "exact")], statuses={}).verdict == FAILS
    from pfntheory.infra.status import as_status

    improving = as_status({"state": "still improving", "criterion": "synthetic", "last_step": 10})
    r = ms.ceiling_claim(low, [("single", "exact")], statuses={"run": improving})
    assert r.holds and r.verdict == UNDECIDED  # the single head may still improve
    merged = ms.merge_ceilings([low, dict(high, n_eval=[512], tv={
        "single": {"512": [0.3] * 4}, "exact": {"512": [0.2] * 4}},
        bayes_acc={"p(h|D)": {"512": [1.0] * 4}})])  # fmt: skip
    assert merged["n_eval"] == [256, 512] and set(merged["tv"]["exact"]) == {"256", "512"}
    json.dumps(merged)


def test_control_claim_needs_every_n():
    doc = {
        "task": {"hier_lengthscales": [0.4, 1.2], "hier_noise_stds": [0.1]},
        "accuracy": {
            "64": {"acc": 0.99, "acc_se": 0.01, "n_instances": 256},
            "256": {"acc": 0.94, "acc_se": 0.01, "n_instances": 256},
        },
    }
    r = ms.control_claim(doc)
    assert not r.holds and r.verdict == UNDERPOWERED  # 0.94 + 3 x 0.01 reaches 0.95
    doc["accuracy"]["256"]["acc"] = 0.90
    assert ms.control_claim(doc).verdict == FAILS
    doc["accuracy"]["256"]["acc"] = 0.97
    assert ms.control_claim(doc).verdict == HOLDS


def test_tv_and_coverage_claims():
    doc = _doc([0.30, 0.31, 0.29, 0.30], [0.10, 0.12, 0.11, 0.10])
    assert ms.tv_claim(doc, "exact", "single", statuses={}).verdict == HOLDS
    r = ms.tv_claim(doc, "single", "exact", statuses={})
    assert not r.holds and r.verdict == FAILS and r.power is not None and r.power.refutes
    with pytest.raises(ValueError, match="no rows"):
        ms.tv_claim(doc, "missing", "single", statuses={})
    half = [1, 0] * 50  # 100 instances, coverage 0.5
    doc["n_instances"], doc["tv"] = 100, {}
    doc["bayes_acc"] = {"p(h|D)": {"256": [1.0] * 100}}
    doc["coverage"] = {"50": {"m": {"256": half}}, "90": {"m": {"256": [1] * 90 + [0] * 10}}}
    assert ms.coverage_claim(doc, "m").verdict == HOLDS
    doc["coverage"]["90"]["m"]["256"] = [1] * 70 + [0] * 30  # 0.70: 6.7 SE below 0.9
    r = ms.coverage_claim(doc, "m")
    assert not r.holds and r.bound == 0.9 and r.verdict == FAILS


def test_cells_join_batches_and_replace_one_n_keeping_the_pairing():
    from pfntheory.claims import multihead_cells as mc

    def batch(seed, vals):
        d = _doc(vals, [v - 0.1 for v in vals])
        d["n_eval"], d["seed"], d["n_instances"] = [1024], seed, len(vals)
        d["bayes_acc"] = {"p(h|D)": {"1024": [1.0] * len(vals)}}
        d["tv"] = {k: {"1024": v["256"]} for k, v in d["tv"].items()}
        d["coverage"] = {"50": {"exact": {"1024": [1] * len(vals)}}}
        return d

    cell = mc.concat_batches([batch(1, [0.3, 0.4]), batch(2, [0.5, 0.6, 0.7])])
    assert cell["n_instances"] == 5 and cell["seeds"] == [1, 2]
    assert cell["tv"]["single"]["1024"] == [0.3, 0.4, 0.5, 0.6, 0.7]
    assert len(cell["coverage"]["50"]["exact"]["1024"]) == 5
    verdict = _doc([0.3] * 4, [0.2] * 4)
    verdict["n_eval"], verdict["n_instances"] = [256, 1024], {"256": 4, "1024": 1}
    for k in ("single", "exact"):
        verdict["tv"][k]["1024"] = [0.9]
    verdict["coverage"] = {"50": {"exact": {"256": [1] * 4, "1024": [0]}}}
    out = mc.with_cell(verdict, cell)
    assert out["n_instances"] == {"256": 4, "1024": 5}
    assert out["tv"]["exact"]["1024"] == cell["tv"]["exact"]["1024"]
    assert out["tv"]["exact"]["256"] == verdict["tv"]["exact"]["256"]
    assert verdict["tv"]["exact"]["1024"] == [0.9]  # the input is not modified
    verdict["tv"]["other"] = {"1024": [0.1]}  # a row the cell lacks would lose its pairing
    with pytest.raises(ValueError, match="paired"):
        mc.with_cell(verdict, cell)
    with pytest.raises(ValueError, match="instances"):
        mc.concat_batches([dict(batch(1, [0.3]), n_instances=2)])
    with pytest.raises(ValueError, match="share"):
        b = batch(3, [0.1])
        del b["tv"]["exact"]
        mc.concat_batches([batch(1, [0.3]), b])
