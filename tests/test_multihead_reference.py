"""Page 08's four rows against the single L = 32, re-scored with the doubled reference (issue 47):
the single head L = 32 trained weight-averaged at 2S = 2000 steps (``supp_tab_hier_budget``), on
exactly the confirmation's draws (``supp_tab_hier_multihead_confirm/single-L32-s2000/``), gated
on its budget doubling against the 1000-step partner.

How these tests fail: a row that reads the 1000-step head, is gated on another status than the
reference's doubling, or whose kind is not the gate's on its evidence, fails
:func:`test_the_four_rows_read_the_doubled_reference_through_the_gate`; numbers that do not follow
from the committed cell files fail :func:`test_the_rows_numbers_are_the_committed_cells`; a
reference cell or batch of other draws, another run or another size that is not refused fails the
``refuses`` tests; a reference missing at some n' that still gets a verdict fails
:func:`test_a_partial_reference_is_pending_never_the_1000_step_head`.
"""

from __future__ import annotations

import copy
import json
import shutil

import numpy as np
import pytest

from pfntheory.base.stats import mean_se
from pfntheory.claims import HOLDS, UNDECIDED
from pfntheory.claims import gating as xgate
from pfntheory.claims import multihead_cells as mcells
from pfntheory.claims import multihead_fair as mf
from pfntheory.claims import multihead_select as msel
from pfntheory.claims import multihead_trained as tmh
from pfntheory.experiments.state import default_root
from pfntheory.infra.status import as_status
from pfntheory.pipelines import multihead_fair as pfair
from pfntheory.pipelines import multihead_run as mrun
from pfntheory.report import trained_rows as rrows

ROOT = default_root()
REF = mcells.REFERENCE
REF_DIR = ROOT / mcells.FOLDER / mcells.REFERENCE_FOLDER
#: The 1000-step single L = 32 without averaging (supp_tab_hier), the rows' old reference.
OLD = "hier_rbf-d16-pr-learn-L32-C256-n64-256-s1000-4246a26429"


def _verdict() -> dict:
    verdict = msel.load_select()["verdict"]
    if verdict is None or mcells.reference_runs() is None:
        pytest.skip("the confirmation or the reference runs are not committed here")
    v = mcells.with_cells(verdict)
    if any(str(n) not in v["tv"].get(REF, {}) for n in v["n_eval"]):
        pytest.skip("the reference's cells are not all committed here")
    return v


def _four_rows():
    """The four rows, from the builders the page records: (document, RowSpec)."""
    verdict = _verdict()
    cmp = tmh.load_comparison()
    cdoc = mcells.chebyshev_confirmation(verdict)
    fdoc = mf.fair_confirmation(verdict)
    assert cdoc is not None and fdoc is not None
    fair = [
        s
        for s in pfair.fair_rows(verdict, cmp)
        if s.result is not None and s.result.statement.split(": E[TV] below ")[-1].startswith(REF)
    ]
    cheb = [s for s in rrows.chebyshev_rows(cdoc, cmp) if REF in s.options["variant"]]
    sel = [s for s in rrows.selector_rows(verdict, cmp) if REF in s.options["variant"]]
    out = [(verdict, s) for s in sel] + [(cdoc, s) for s in cheb] + [(fdoc, s) for s in fair]
    assert len(out) == 4, [s.options["variant"] for _, s in out]
    return out


def test_the_four_rows_read_the_doubled_reference_through_the_gate():
    short, long = mcells.reference_runs()
    assert long.spec.steps == 2 * short.spec.steps == 2000
    assert long.spec.ema_decay and long.spec.model.L == 32
    for _, spec in _four_rows():
        r = spec.result
        name = spec.options["variant"]
        assert r is not None and r.decision is not None and r.verdict == r.decision.kind, name
        assert name.endswith(f"vs {REF}") or f"vs {REF}, n' = " in name, name
        assert r.statement.split(": E[TV] below ")[1].startswith(REF + "'s at every n'")
        # gated on the reference's doubling status (the 2S run paired with the S run) only
        sts = {k: as_status(v) for k, v in r.details["convergence"].items()}
        assert set(sts) == {long.run_dir.name}, name
        st = sts[long.run_dir.name]
        assert st.test == "doubling" and st.half_run == short.run_dir.name
        want = mcells.reference_statuses()[long.run_dir.name]
        assert (st.state, st.fall, tuple(st.ci)) == (want.state, want.fall, tuple(want.ci))
        assert list(spec.options["runs"]) == [long.run_dir], name
        assert OLD not in json.dumps(r.details) and OLD not in str(spec.options), name
        # the kind is the gate's, on that status and the check's power; no replay
        again = xgate.decide(r.holds, sts, power=r.power, model=r.decision.model)
        assert r.decision.replay is None and again.kind == r.verdict, name
        assert r.decision.test == "doubling"
        if st.plateaued:  # decided by the check: holds / does not hold / underpowered
            assert r.verdict != UNDECIDED and (r.verdict == HOLDS) == r.holds, name


def test_the_rows_numbers_are_the_committed_cells():
    """Each row's worst-cell difference and its 3 SE follow from the committed per-instance files:
    the reference's cells against the confirmation's, Chebyshev's and fair batches' rows."""
    n_eval = sorted(mcells.REFERENCE_BATCHES)
    ref = {}
    for n in n_eval:
        p = REF_DIR / mcells.CELL_FILE.format(n=n)
        if not p.is_file():
            pytest.skip(f"{p} not committed here")
        ref[n] = np.asarray(json.loads(p.read_text())["tv"][REF][str(n)])
    for doc, spec in _four_rows():
        r = spec.result
        model = r.statement.split(": E[TV] below ")[0]
        ratios = {}
        for n in n_eval:
            t = np.asarray(doc["tv"][model][str(n)])
            size, count = mcells.REFERENCE_BATCHES[n]
            assert len(t) == len(ref[n]) == size * count
            f, se = mean_se(ref[n] - t)
            ratios[n] = (f / se, f, se)
        worst = min(ratios, key=lambda n: ratios[n][0])
        _, f, se = ratios[worst]
        assert r.observed == pytest.approx(f, rel=1e-12), spec.options["variant"]
        assert r.bound == pytest.approx(3 * se, rel=1e-12)
        assert r.holds == all(v[1] > 3 * v[2] for v in ratios.values())


def test_the_batches_are_the_confirmations_draws():
    """The reference's batch sizes and seeds are the confirmation's (and the fair variant's)."""
    assert mcells.REFERENCE_BATCHES == mf.BATCHES
    verdict = _verdict()
    assert {int(k): int(v) for k, v in verdict["n_instances"].items()} == {
        n: s * c for n, (s, c) in mcells.REFERENCE_BATCHES.items()
    }
    for n, (size, count) in mcells.REFERENCE_BATCHES.items():
        cell = json.loads((REF_DIR / mcells.CELL_FILE.format(n=n)).read_text())
        assert cell["seeds"] == [mf.SEED0 + b for b in range(count)]
        assert cell["n_instances"] == size * count
        assert cell["dtype"] == "float32"


def _cell(n: int = 256) -> dict:
    p = REF_DIR / mcells.CELL_FILE.format(n=n)
    if not p.is_file():
        pytest.skip(f"{p} not committed here")
    return json.loads(p.read_text())


@pytest.mark.parametrize("shift,ok", [(4e-6, True), (3e-5, False)])
def test_join_refuses_a_cell_of_other_draws(shift, ok):
    """The pairing row (the selector on the L = 32 heads, scored again in every batch) must equal
    the confirmation's within 1e-5 (6-digit storage): a shift below it joins, one above it is
    other draws."""
    verdict = mcells.with_cells(msel.load_select()["verdict"])
    verdict = {**verdict, "tv": {k: v for k, v in verdict["tv"].items() if k != REF}}
    cell = _cell()
    cell["tv"][mcells.PAIRING_ROW]["256"][5] += shift
    if ok:
        out = mcells.join_reference(verdict, cell)
        assert out["tv"][REF]["256"] == cell["tv"][REF]["256"]
    else:
        with pytest.raises(ValueError, match="not on the confirmation's draws"):
            mcells.join_reference(verdict, cell)


def test_join_refuses_other_sizes_runs_and_rows():
    verdict = mcells.with_cells(msel.load_select()["verdict"])
    base = _cell()
    fewer = copy.deepcopy(base)
    for key in ("bayes_acc", "tv", "sel_acc", "sel_tv_w"):
        for row in fewer[key].values():
            row["256"] = row["256"][:-1]
    for by in fewer["coverage"].values():
        for row in by.values():
            row["256"] = row["256"][:-1]
    fewer["n_instances"] -= 1
    with pytest.raises(ValueError, match="instances"):
        mcells.join_reference(verdict, fewer)
    other = copy.deepcopy(base)
    other["multi_run"] = "reports/runs/x/another-multi-head-0123456789"
    with pytest.raises(ValueError, match="multi_run"):
        mcells.join_reference(verdict, other)
    norow = copy.deepcopy(base)
    del norow["tv"][REF]
    with pytest.raises(ValueError, match="holds no"):
        mcells.join_reference(verdict, norow)
    drawn = copy.deepcopy(base)
    b = drawn["bayes_acc"]["p(h|D)"]["256"]
    b[0] = 1.0 - b[0]
    with pytest.raises(ValueError, match="bayes_acc"):
        mcells.join_reference(verdict, drawn)


def _root(tmp_path):
    """A runs root holding the committed inputs of the reference (linked) and a copy of its
    batches and cells (so that they can be altered)."""
    for name in (msel.FOLDER, mcells.REFERENCE_EXPERIMENT):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    shutil.copytree(REF_DIR, tmp_path / mcells.FOLDER / mcells.REFERENCE_FOLDER)
    return tmp_path


def test_the_cache_refuses_a_mismatched_entry(tmp_path):
    """``run_reference`` resuming on a complete n' scores nothing: it checks each batch against the
    one it stands for and the cell against their join. A batch of another run, seed or size, or a
    cell that is not the join of its batches, is refused naming the file."""
    if not (REF_DIR / mcells.CELL_FILE.format(n=256)).is_file():
        pytest.skip("the reference's n' = 256 cell is not committed here")
    root = _root(tmp_path)
    ref_dir = root / mcells.FOLDER / mcells.REFERENCE_FOLDER
    assert mrun.run_reference(root, n_eval=(256,)) == {256: ref_dir / "cell-n256.json"}
    batch = ref_dir / "batches" / f"n256-seed{mf.SEED0}.json"
    held = batch.read_text()
    for key, value in (
        ("single_runs", {REF: "reports/runs/supp_tab_hier/" + OLD}),  # the 1000-step head
        ("seed", mf.SEED0 + 1),
        ("selector_sha256", "0" * 64),
    ):
        doc = json.loads(held)
        doc[key] = value
        batch.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="is not the batch it stands for"):
            mrun.run_reference(root, n_eval=(256,))
    batch.write_text(held)
    cell = ref_dir / "cell-n256.json"
    doc = json.loads(cell.read_text())
    doc["tv"][REF]["256"][0] += 0.01
    cell.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="differs from the join of its batches"):
        mrun.run_reference(root, n_eval=(256,))
    with pytest.raises(ValueError, match="n_eval"):
        mrun.run_reference(root, n_eval=(128,))


def test_with_reference_refuses_a_cell_of_another_run(tmp_path):
    if not (REF_DIR / mcells.CELL_FILE.format(n=256)).is_file():
        pytest.skip("the reference's n' = 256 cell is not committed here")
    root = _root(tmp_path)
    joined = mcells.with_cells(msel.load_select()["verdict"])
    verdict = {**joined, "tv": {k: v for k, v in joined["tv"].items() if k != REF}}
    assert mcells.with_reference(verdict, root)["tv"][REF] == joined["tv"][REF]
    cell = root / mcells.FOLDER / mcells.REFERENCE_FOLDER / "cell-n256.json"
    doc = json.loads(cell.read_text())
    doc["single_runs"][REF] = "reports/runs/supp_tab_hier/" + OLD
    cell.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="not the reference"):
        mcells.with_reference(verdict, root)


def test_a_partial_reference_is_pending_never_the_1000_step_head():
    """With the reference missing at one n', the row is pending (it names what is missing); the
    1000-step head, still in the document, decides nothing."""
    verdict = _verdict()
    partial = {**verdict, "tv": {**verdict["tv"], REF: dict(verdict["tv"][REF])}}
    del partial["tv"][REF]["1024"]
    assert "single L=32" in partial["tv"]
    rows = rrows.selector_rows(partial, tmh.load_comparison())
    (spec,) = [s for s in rows if REF in s.options["variant"]]
    assert spec.result is None and "n' = [1024]" in spec.options["missing"]
    assert "multihead_reference" in spec.options["missing"]
