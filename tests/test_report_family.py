"""The n-generalisation family's page section (``pfntheory.report.family``): each cell reads its
strongest run and says which, and the paper-layout figure takes what is on disk."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from pfntheory.report import family  # noqa: E402


@pytest.fixture(scope="module")
def d8():
    return family.strongest_cells(8, budget_runs=[])


def test_original_grid_is_read_as_last_iterate(d8):
    """With no budget run on disk every cell of the committed d = 8 grid is its 1000-step
    last-iterate run, named as such (a figure must never pass it for a converged one)."""
    assert set(d8) == {(L, n) for L in family.FAMILY_LS for n in family.FAMILY_NMAX}
    assert all(c.source == "last iterate, 1000 steps" for c in d8.values())
    assert all(c.doubling == "no doubling" for c in d8.values())


def test_a_longer_budget_run_replaces_its_cell_and_other_seeds_do_not(d8):
    """A complete budget run of a cell (seed 0) is read instead of the original; a seed replicate
    is not (the grid is seed 0). Fails if the choice ignored steps or seeds."""
    base = d8[(4, 128)].run
    spec = dataclasses.replace(base.spec, steps=2000, ema_decay=0.99)
    other_seed = dataclasses.replace(spec, steps=4000, seed=1)
    runs = [
        dataclasses.replace(base, spec=spec),
        dataclasses.replace(base, spec=other_seed),
    ]
    cells = family.strongest_cells(8, budget_runs=runs)
    assert cells[(4, 128)].source == "weight-averaged, 2000 steps"
    assert cells[(8, 128)].source == "last iterate, 1000 steps"


def test_plot_family_draws_every_cell_and_the_exact_baseline(d8):
    fig, axs = plt.subplots(3, 3)
    family.plot_family(axs, d8, "uniform")
    # one line per L and one exact-PPD line per panel
    assert all(len(ax.get_lines()) == len(family.FAMILY_LS) + 2 for ax in axs.ravel())
    plt.close(fig)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d"):
        family.strongest_cells(5)
    fig, axs = plt.subplots(2, 3)
    with pytest.raises(ValueError, match="axs"):
        family.plot_family(axs, {})
    with pytest.raises(ValueError, match="design"):
        family.plot_family(axs, {}, "cauchy")
    plt.close(fig)


def test_coverage_frame_has_both_designs(d8):
    f = family.coverage_frame({8: d8}, n_eval=(64,))
    assert len(f) == 12
    assert {"N(0,I/d) n'=64", "shift n'=64"} <= set(f.columns)
    assert f.iloc[0]["shift n'=64"].count("exact") == 1
    # the width beside the coverage: the ratio of the run's mean 90% width to the exact PPD's
    cell = d8[(f.iloc[0]["L"], f.iloc[0]["n_max"])]
    e = cell.run.evals["eval_uniform.json"]
    k = e.at(64)
    ratio = e.mean["width_90"][k] / e.mean["width_90_exact"][k]
    assert f.iloc[0]["shift n'=64"].endswith(f"width {ratio:.2f}x")
