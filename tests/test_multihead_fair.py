"""Page 08's fair multi-head comparison (issue 47, item 5): the one-head baseline, the fair
document's pairing and fixed counts, and its rows through the one gate.

How these tests fail: a one-head model that is not head ``h`` of the multi-head model (other
weights copied, another component) fails :func:`test_one_head_is_the_multi_head_model_on_one_head`
(its fault half checks that another component differs by far more than the tolerance); a fair
document joined from other draws, or from more or fewer instances than fixed before looking,
fails the ``fair_confirmation`` tests; a row that decides its own verdict, or is gated on runs it
does not read, fails :func:`test_fair_rows_go_through_the_gate_on_the_runs_they_read`.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from pfntheory.base._checks import ArgumentTypeError
from pfntheory.claims import multihead_cells as mcells
from pfntheory.claims import multihead_fair as mf
from pfntheory.claims import multihead_select as msel
from pfntheory.experiments.state import default_root
from pfntheory.infra import runs as runfiles
from pfntheory.pipelines import multihead_fair as pfair
from pfntheory.pipelines.multihead_run import _handset

ROOT = default_root()

#: one_head against the multi-head model with all the weight on head h, float64: the same
#: operations, except that the group's kernel is applied to 2 value channels instead of 6 (the
#: matrix product may block its sums differently), so round-off only; measured 1.7e-17 on
#: probabilities up to 0.013. The fault (another component) differs by more than 1e-3.
PARITY_ATOL = 1e-12


def _multi():
    from pfntheory.nn.state import read_config

    verdict = msel.load_select()["verdict"]
    if verdict is None:
        pytest.skip("verdict-cpu.json not committed here")
    run = verdict["multi_run"]
    spec = read_config(run)
    interval = tuple(runfiles.load_json(f"{run}/{runfiles.METRICS}")["interval"])
    return spec, interval


@pytest.mark.parametrize("steps", ["constant", "chebyshev"])
def test_one_head_is_the_multi_head_model_on_one_head(steps):
    from pfntheory.nn.chebyshev_heads import chebyshev_hook
    from pfntheory.nn.priors import sample_batch

    spec, interval = _multi()
    task = spec.task
    hook = None
    if steps == "chebyshev":
        ranges = runfiles.load_json(ROOT / mcells.CHEBYSHEV_FOLDER / "ranges-n1024.json")
        hook = chebyshev_hook(ranges["ranges"], mf.EPS)
    model = _handset(spec, interval, (8,), torch.float64, hook)[8]
    h = pfair.head_index(task)
    assert h == 4  # (0.8, 0.2): lengthscale outer, noise std inner
    g = torch.Generator().manual_seed(3)
    bt = sample_batch(task, 6, 48, g, dtype=torch.float64, interval=interval)

    def probs(m, lw=None):
        with torch.no_grad():
            return torch.softmax(m(bt.X, bt.Y, bt.xq, log_weights=lw).logits, -1)

    lw = torch.full((6, 9), -1e4, dtype=torch.float64)  # exp(-1e4) = 0 in float64
    lw[:, h] = 0.0
    want = probs(model, lw)
    got = probs(pfair.one_head(model, task, h))
    assert float((want - got).abs().max()) <= PARITY_ATOL
    other = probs(pfair.one_head(model, task, 0))  # the fault: another component
    assert float((want - other).abs().max()) > 1e3 * PARITY_ATOL


def test_bad_input_is_refused_naming_the_argument():
    spec, interval = _multi()
    model = _handset(spec, interval, (2,), torch.float64, None)[2]
    with pytest.raises(ValueError, match="head"):
        pfair.head_index(spec.task, (0.5, 0.2))
    with pytest.raises(ValueError, match="head"):
        pfair.head_index(spec.task, (0.8, 0.2, 0.1))
    with pytest.raises(ValueError, match="h"):
        pfair.one_head(model, spec.task, 9)
    with pytest.raises(ArgumentTypeError, match="model"):
        pfair.one_head("model", spec.task, 0)
    import dataclasses

    small = dataclasses.replace(spec.task, hier_noise_stds=(0.1,))
    with pytest.raises(ValueError, match="task"):
        pfair.one_head(model, small, 0)
    with pytest.raises(ArgumentTypeError, match="root"):
        mf.batch_file(3, 256, 5151)
    with pytest.raises(ValueError, match="n_range"):
        pfair.train_fair_selector(spec.task, (256, 64))


def test_the_counts_are_the_confirmations_fixed_ones():
    """The fixed counts equal the batches' (size x count) and the committed confirmation's
    final counts, so the fair rows read exactly its instances."""
    assert {n: s * c for n, (s, c) in mf.BATCHES.items()} == mf.FIXED_INSTANCES
    verdict = msel.load_select()["verdict"]
    if verdict is None:
        pytest.skip("verdict-cpu.json not committed here")
    v = mcells.with_cells(verdict)
    assert {int(k): int(c) for k, c in v["n_instances"].items()} == mf.FIXED_INSTANCES


def _fair_root(tmp_path):
    src = ROOT / mf.FOLDER
    verdict = msel.load_select()["verdict"]
    if verdict is None or mf.fair_confirmation(mcells.with_cells(verdict)) is None:
        pytest.skip("the fair batches are not complete here")
    shutil.copytree(src, tmp_path / mf.FOLDER)
    return mcells.with_cells(verdict)


def test_fair_confirmation_pairs_and_counts(tmp_path):
    verdict = _fair_root(tmp_path)
    doc = mf.fair_confirmation(verdict, tmp_path)
    assert doc is not None
    assert {int(k): v for k, v in doc["n_instances"].items()} == mf.FIXED_INSTANCES
    msel.check_document(doc)
    for multi_name, one_name in mf.row_names().values():
        assert multi_name in doc["tv"] and one_name in doc["tv"]
    batches = tmp_path / mf.FOLDER / "batches"
    # a batch missing: the cell is partial, and a partial cell is never decided
    p = batches / f"n512-seed{mf.SEED0 + 2}.json"
    held = p.read_text()
    p.unlink()
    assert mf.fair_confirmation(verdict, tmp_path) is None
    # one batch more than fixed: refused
    p.write_text(held)
    extra = json.loads(held)
    extra["seed"] = mf.SEED0 + 3
    (batches / f"n512-seed{mf.SEED0 + 3}.json").write_text(json.dumps(extra))
    with pytest.raises(ValueError, match="more than the 384 fixed"):
        mf.fair_confirmation(verdict, tmp_path)
    (batches / f"n512-seed{mf.SEED0 + 3}.json").unlink()


@pytest.mark.parametrize("shift,ok", [(2e-6, True), (2e-5, False)])
def test_fair_confirmation_refuses_other_draws(tmp_path, shift, ok):
    """The committed selector's TV(w, p(h|D)) is the pairing key, within PAIRING_ATOL (6-digit
    storage): a shift below it passes, one above it is other draws."""
    verdict = _fair_root(tmp_path)
    p = tmp_path / mf.FOLDER / "batches" / f"n256-seed{mf.SEED0}.json"
    d = json.loads(p.read_text())
    v = d["sel_tv_w"]["statistics selector (committed)"]["256"]
    v[7] = v[7] + shift
    p.write_text(json.dumps(d))
    if ok:
        assert mf.fair_confirmation(verdict, tmp_path) is not None
    else:
        with pytest.raises(ValueError, match="not the confirmation's draws"):
            mf.fair_confirmation(verdict, tmp_path)


def test_fair_rows_go_through_the_gate_on_the_runs_they_read(tmp_path):
    from pfntheory.claims import gating as xgate
    from pfntheory.claims import multihead_trained as tmh
    from pfntheory.infra.status import as_status

    verdict = _fair_root(tmp_path)
    cmp = tmh.load_comparison()
    specs = pfair.fair_rows(verdict, cmp, tmp_path)
    assert len(specs) == 5 + len(mf.row_names()) + 1
    models = tmh.models(cmp)
    for s in specs:
        r = s.result
        assert r is not None and r.decision is not None and r.verdict == r.decision.kind
        sts = {k: as_status(v) for k, v in r.details.get("convergence", {}).items()}
        again = xgate.decide(r.holds, sts, power=r.power, model=r.decision.model)
        assert again.kind == r.verdict, s.options["variant"]
        ref = r.statement.split(": E[TV] below ")[-1].split("'s at every")[0]
        if "coverage" in r.key:
            ref = ""
        if ref == mcells.REFERENCE:  # the single L = 32 at 2S steps, gated by its doubling
            read = [mcells.reference_runs()[1].run_dir]
            assert {st["test"] for st in r.details["convergence"].values()} == {"doubling"}
        else:
            read = [models[ref].run_dir] if ref in models else []
        assert (
            ref in models
            or ref == mcells.REFERENCE
            or ref.startswith(mf.BASELINE)
            or r.key.endswith("coverage")
        )
        assert list(s.options.get("runs", [])) == read, s.options["variant"]
        assert set(sts) == {p.name for p in read}
    # a partial fair folder: one pending row
    (tmp_path / mf.FOLDER / "batches" / f"n1024-seed{mf.SEED0}.json").unlink()
    pend = pfair.fair_rows(verdict, cmp, tmp_path)
    assert len(pend) == 1 and pend[0].result is None and "incomplete" in pend[0].options["missing"]


def test_the_one_head_rows_state_the_minimal_effect(tmp_path):
    """Rows against the one-head baseline read no trained run, so their power decides; each
    carries the minimal effect of interest (10% of the candidate's E[TV] in its worst cell)."""
    from pfntheory.claims import MINIMAL_EFFECT
    from pfntheory.claims import multihead_trained as tmh

    verdict = _fair_root(tmp_path)
    specs = pfair.fair_rows(verdict, tmh.load_comparison(), tmp_path)
    one = [s.result for s in specs if s.result is not None and mf.BASELINE in s.result.statement]
    assert len(one) == len(mf.row_names())
    for r in one:
        worst = min(r.details["rows"], key=lambda x: x["fall"] / x["fall_se"])
        assert r.power.minimal == pytest.approx(MINIMAL_EFFECT * worst["tv"])
        assert r.decision.model == "no trained run"
        assert np.isfinite(r.power.detectable80)
