"""Page 07's side-by-side of fig:exp1's two theory-mode readings
(:mod:`pfntheory.report.theory_readings`): each cell at its largest budget with the doubling status
of :func:`pfntheory.claims.gating.doubling_statuses`, blanks where a reading lacks the cell."""

from __future__ import annotations

import math

import pytest

from pfntheory.claims import gating as xgate
from pfntheory.experiments import results as xres
from pfntheory.report import theory_readings as rr


def _cell(tv, state="plateaued", steps=2000):
    return {
        "steps": steps,
        "E[TV]": tv,
        "SE": 0.001,
        "state": state,
        "value": tv,
        "fall": 0.002,
        "ci": (0.001, 0.003),
        "run": "x",
    }


def test_frame_puts_the_readings_side_by_side():
    """One row per (task, L, C), each reading's number and state, the ratio shared / per layer;
    a cell one reading lacks is blank and says so. Fails if a reading's cell landed in the other's
    columns or the ratio were inverted."""
    cells = {
        ("theory", "blr", 32, 256): _cell(0.02),
        ("theory_shared", "blr", 32, 256): _cell(0.03, "still improving"),
        ("theory", "blr", 32, 16): _cell(0.2),
    }
    f = rr.readings_frame(cells)
    assert list(zip(f["task"], f["L"], f["C"], strict=True)) == [("blr", 32, 256), ("blr", 32, 16)]
    per, shared = (rr.READINGS[m][0] for m in ("theory", "theory_shared"))
    row = f.iloc[0]
    assert row[f"{per}: E[TV]"] == 0.02 and row[f"{shared}: E[TV]"] == 0.03
    assert row[f"{shared}: doubling"].startswith("still improving")
    assert row["shared / per layer"] == pytest.approx(1.5)
    assert math.isnan(f.iloc[1][f"{shared}: E[TV]"])
    assert f.iloc[1][f"{shared}: doubling"] == "not on disk"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(2, 2, squeeze=False)
    rr.plot_readings(axs, cells)  # draws both readings where present, blank panels elsewhere
    assert len(axs[0][0].lines) > 0 and len(axs[1][0].lines) == 0
    plt.close(fig)


def test_cells_read_the_largest_budget_with_its_doubling_status():
    """On the committed fig_exp1_budget runs of one cell (BLR theory L = 32, C = 256 at 1000 and
    2000 steps) the cell is the 2000-step run, with the final evaluation's E[TV] and the status
    doubling_statuses gives it; learnable runs and cells off the slices are left out."""
    runs, _ = xres.load_available("fig_exp1_budget", "cpu")
    pick = [
        r
        for r in runs
        if r.spec.task.kind == "blr" and r.spec.model.L == 32 and r.spec.model.C in (256, 128)
    ]
    pick += [r for r in runs if r.spec.model.L == 4 and r.spec.model.C == 16][:1]  # off the slices
    if not any(r.spec.model.mode == "theory" and r.spec.model.C == 256 for r in pick):
        pytest.skip("the committed fig_exp1_budget runs are not on disk")
    cells = rr.reading_cells(pick)
    assert {k[0] for k in cells} == {"theory"}
    assert {(k[2], k[3]) for k in cells} == {(32, 256), (32, 128)}
    c = cells[("theory", "blr", 32, 256)]
    long = next(
        r
        for r in pick
        if r.spec.model.mode == "theory" and r.spec.model.C == 256 and r.spec.steps == 2000
    )
    assert c["steps"] == 2000 and c["run"] == long.run_dir.name
    assert c["E[TV]"] == pytest.approx(float(long.eval.average("tv")[0]), rel=1e-12)
    st = xgate.doubling_statuses(pick)[long.run_dir.name]
    assert c["state"] == st.state and c["fall"] == st.fall
