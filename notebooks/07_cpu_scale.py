# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 7. The paper's tasks on a CPU budget
#
# Paper results: **fig:exp1** (`E[TV]` falls with depth `L` and with the number of bins `C`), the
# covariate shift of **supp-fig:exp2 d4-1 uni** in the paper's claimed regime, and **fig:exp2-1**
# and the other trained experiments as their runs arrive.
#
# The `cpu` scale keeps every task setting of the paper (dimensions, pretraining ranges, the full
# `5 x 5` grid of fig:exp1, the evaluation sizes) and shortens only training (1000-2000 steps
# instead of `10^4`-`10^5`). Its sweeps run for hours, so this page reads the `cpu` runs that are
# **complete** under `reports/runs/<experiment>/`, whatever the report's own scale, and says which
# are not: a cell not on disk is hatched, and a claim rests only on the cells named in its row.
# Every run records a learning curve, and every claim goes through one gate
# (`pfntheory.claims.gating.decide`, docs/verdicts.md): *worse with training* when a run it reads
# got worse (diverging, or worse than its initialisation at step 0 at some n'); *holds* / *does not
# hold* where all its runs have plateaued; while they still improve, *holds at budget* / *fails at
# budget* when its check has one outcome at every step of the last log-half of their curves (the
# steps are stated), *undecided* when the outcome changes there. A check that fails while the
# interval of its effect still holds the claimed effect (the paper's, where printed) is *undecided
# (underpowered)*, with the smallest effect it can detect. Missing runs are made by
# `pfntheory sweep <experiment> --scale cpu` (resumable).

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from pfntheory import report
from pfntheory.claims import gating as xgate
from pfntheory.claims import pretraining_range as xrange
from pfntheory.experiments import definitions as xdefs
from pfntheory.experiments import published
from pfntheory.experiments import state as xrun
from pfntheory.report import breakdown_plots as rbd
from pfntheory.report import cpu as rcpu
from pfntheory.report import cpu_tables as rtab
from pfntheory.report import exp1_budget as rbud
from pfntheory.report import family as rfam
from pfntheory.report import first_layer as rfirst
from pfntheory.report import trained_rows as rrows

report.setup_plots()
rec = report.Recorder("07_cpu_scale")
SCALE = rcpu.CPU


def available(name):
    """The complete cpu runs of ``name``, the names of the others, and the declared design."""
    return rrows.cpu_available(name)


def trained(runs):
    return [r for r in runs if hasattr(r.spec, "model")]


def pending(name, label, missing, declared):
    rrows.cpu_pending(name, label, missing, declared).record(rec)


# %% [markdown]
# ## The cpu runs on disk
#
# Complete runs out of those each experiment declares at the `cpu` scale (a chart of the same at the
# end of the page), the training hours the complete runs took (wall time on one core of a shared
# 2-core machine, learning curves included, final evaluation not) and the cost model's estimate for
# the whole design (`pfntheory sweep --list`).

# %%
EXPERIMENTS = xdefs.experiment_names()
loaded = {name: available(name) for name in EXPERIMENTS}
counts = {name: (len(runs), len(decl)) for name, (runs, _, decl) in loaded.items()}
display(
    report.table(
        [
            {
                "experiment": n,
                "complete": d,
                "declared": t,
                "training h (measured)": round(rcpu.training_hours(loaded[n][0]), 2),
                "estimated h (design)": round(xdefs.estimated_cpu_seconds(n, SCALE) / 3600, 2),
                "command": rcpu.sweep_command(n),
            }
            for n, (d, t) in counts.items()
        ]
    )
)
columns, cells = report.pretraining_beside(
    [xdefs.get_experiment(n) for n in ("fig_exp1", "fig_exp2_1", "fig_exp2_2")]
)
display(
    report.paper_table(
        "07_cpu_scale",
        "pretraining",
        "Pretraining hyperparameters: base learning rate (ours in natural units, per element), "
        "steps N and batch size",
        report.paper_number("supp-tab:pretraining hyperparameters"),
        columns,
        cells,
    )
)

# %% [markdown]
# ## fig:exp1: TV against depth L and bins C
#
# On fig:exp1's strongest runs: the weight-averaged grid of `fig_exp1_budget` at `2S` steps (2000
# BLR, 4000 RBF; how it was trained: *fig:exp1 at budget* below), the grid its claims are decided
# on. `ln E[TV(p_(a,b], q_theta)]` (the natural log, as on the paper's axes) averaged over the
# evaluation sizes `n'`, for BLR (`d = 5`) and RBF (`d = 2`), theory and learnable
# parameterisations, all four panels on **one colour scale**; cells whose run is not complete are
# hatched. Below: the two slices the paper plots, the largest `C` across `L` and the largest `L`
# across `C` (±2 SE), the `2S` cells solid and their `S` runs dashed: the `S` run of a cell is the
# replay of the committed last-iterate cell of `fig_exp1` (same data stream, initialisation and
# schedule), weight-averaged.

# %%
runs1 = loaded["fig_exp1"][0]  # the committed last-iterate cells (the averaging table)
runs_b, missing_b, declared_b = loaded["fig_exp1_budget"]
statuses_b, panels, panels_s = rrows.exp1_inputs(runs_b, declared_b)
n_2s = sum(len(p.cells) for p in panels)
n_2s_declared = sum(p.n_declared for p in panels)
display(
    Markdown(
        f"**{n_2s} of {n_2s_declared} cells** of fig_exp1_budget [cpu] at 2S are complete, and "
        f"{sum(len(p.cells) for p in panels_s)} at S"
        + (
            f"; the rest are made by `{rcpu.sweep_command('fig_exp1_budget')}`."
            if missing_b
            else "."
        )
    )
)
fig = plt.figure(figsize=(3.4 * len(panels) + 1, 7.4))
sub = fig.subfigures(2, 1, height_ratios=[1, 0.95])
axs = sub[0].subplots(1, len(panels), squeeze=False)[0]
im = rcpu.plot_exp1_heatmaps(axs, panels)
if im is not None:
    sub[0].colorbar(im, ax=list(axs), label="ln E[TV]", shrink=0.9)
ax_L, ax_C = sub[1].subplots(1, 2)
rbud.plot_replay_slices(ax_L, ax_C, panels, panels_s)
fig.suptitle(
    f"fig:exp1 at the cpu scale, weight-averaged, 2S steps: {n_2s} of {n_2s_declared} cells"
)
report.save_figure(fig, "07_exp1")
plt.show()

# %% [markdown]
# <div class="pfn-fold" data-summary="The same numbers as a table, per 2S cell, with its
# budget-doubling state; and why each cell has its state (figure)"></div>

# %% [markdown]
# The same numbers as a table: `ln E[TV]` per `2S` cell (rows `C`, columns `L`, one block per
# panel) with its budget-doubling state (`pfntheory.infra.convergence.doubling_status`: the 90%
# interval of the paired fall of `E[TV]` from `S` to `2S` steps over the same held-out instances,
# against ±10% of its value: **plateaued** inside, **still improving** above 0, **diverging**
# below 0, **too noisy to tell** straddling 0 and leaving the band), and after `|` the `S` cell's
# `ln E[TV]` (its replay); `-` where the run is not on disk. The doubling state is the status the
# fig:exp1 rows are gated on.

# %%
display(report.table(rbud.cell_frame(panels, panels_s, statuses_b)))
words = pd.Series(
    [statuses_b[r.run_dir.name].state for p in panels for r in p.cells.values()], dtype=object
)
display(
    Markdown(
        "Cells of the 2S grid by budget-doubling state (every cell on disk; the plateau tally of "
        "the runs this page's rows read is in the summary at the end of the page, as on the "
        "index): "
        + (
            ", ".join(f"{w}: {n}" for w, n in words.value_counts().items())
            if len(words)
            else "none on disk"
        )
    )
)

# %% [markdown]
# Why each cell has its state: the paired fall of `E[TV]` bought by doubling the budget with its
# 90% interval, both divided by the cell's tolerance (10% of its `E[TV]` at `2S`), so the band
# `[-1, 1]` is **plateaued** for every cell. The axis is linear within ±1 and logarithmic outside.

# %%
if any(p.cells for p in panels):
    fig, axs = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 7.5), squeeze=False)
    handles = rbud.plot_doubling_intervals(axs[0], panels, statuses_b)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
    fig.suptitle("fig:exp1 at the cpu scale: budget doubling per 2S cell")
    report.save_figure(fig, "07_exp1_plateau")
    plt.show()

# %% [markdown]
# <div class="pfn-fold-end"></div>

# %% [markdown]
# ### Could the test decide at all?
#
# A curve is **resolvable** when the 90% interval of its fitted fall is no wider than its tolerance
# (`halfwidth <= tol` in `plateau_status`); otherwise no trend, not even a perfectly flat one, could
# put the interval inside the band, and the curve cannot be called plateaued however long its run.
# The half-width is `t_(m-2)(0.95)` times the fall's standard error, and that error is about
# `1.2 x` the residual SD about the trend for the `m = 6` points in the last log-half of a 12-point
# curve (half-width `2.5 x` the SD), `0.92 x` for the 12 points of a 24-point curve (half-width
# `1.7 x`). The residuals hold the optimiser's jitter between evaluations and, on a curve still
# bending, the misfit of the straight trend. Per experiment, the E[TV] curves
# (each run's own design) by state, how many are resolvable, and the median half-width in units of
# the tolerance: where most curves are not resolvable, "undecided" says as much about how densely
# the curves were evaluated as about how long the runs trained.

# %%
with report.fold("Per experiment: the curves by state, how many are resolvable, the half-widths"):
    display(report.table(rtab.resolution_frame({n: trained(loaded[n][0]) for n in EXPERIMENTS})))

# %% [markdown]
# ### Learning curves of the fig:exp1 runs
#
# Held-out `E[TV]` (weight average) against the training step at the largest held-out `n'` of
# each curve (±2 SE), one panel per task and parameterisation, one line per depth at the largest
# `C` (the depth slice), for the `2S` runs.

# %%
curves = {
    p.title: {
        f"L={L}": doc
        for (L, C), r in sorted(p.cells.items())
        if C == p.C[-1] and (doc := report.read_learning_curve(r.run_dir)) is not None
    }
    for p in panels
}
curves = {k: v for k, v in curves.items() if v}
if curves:
    fig, axs = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 4.4), squeeze=False)
    for ax, (title, cs) in zip(axs[0], curves.items(), strict=True):
        report.plot_learning_curves(ax, cs, metric="tv")
        ax.set_title(f"{title}, C={panels[0].C[-1]}, 2S")
    # one legend for the figure (the depths are the same in every panel, in the same colours)
    handles, labels = max(
        (ax.get_legend_handles_labels() for ax in axs[0]), key=lambda h: len(h[1])
    )
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6))
    report.save_figure(fig, "07_exp1_learning_curves")
    plt.show()
else:
    display(Markdown("*No fig_exp1_budget cpu run with a learning curve is on disk yet.*"))

# %% [markdown]
# fig:exp1's claims are recorded once, on the `2S` grid, gated by budget doubling (*fig:exp1 at
# budget* below); the committed last-iterate `fig_exp1` cells are replayed by the `S` runs.

# %% [markdown]
# ## fig:exp1 at budget: weight averaging and budget doubling
#
# `fig_exp1_budget` retrains fig:exp1's cells with an exponential average of the weights (decay
# 0.99) and 48 learning-curve points, each at the cpu steps `S` (1000 BLR, 2000 RBF) and at `2S`,
# each with its own schedule: first the cells the claims rest on (the `C = 256` row and the
# `L = 32` column of each panel, all committed), then the other cells, for the test's resolution
# over the whole grid (those committed so far are in the tables below). The data stream,
# initialisation and schedule are those of the fig:exp1 runs, so the
# last iterate of an `S` run is a replay of the committed cell.
#
# **Averaging, before and after.** Per run, from one learning curve (the same held-out instances at
# every step): the optimiser's jitter (residual SD of `E[TV]` about its trend over the last
# log-half, in held-out SEs) and the final `E[TV]`, for the last iterate and for the average; the
# committed last-iterate cell (12 curve points) beside them.

# %%
avg = rtab.averaging_frame(runs_b, trained(runs1))
if len(avg):
    with report.fold(f"Averaging, before and after: the table, {len(avg)} runs"):
        display(report.table(avg))
    display(
        Markdown(
            f"Over {len(avg)} runs: the median jitter ratio is "
            f"{avg['jitter/SE last'].median():.2f} for the last iterate and "
            f"{avg['jitter/SE avg'].median():.2f} for the average; the average's final `E[TV]` "
            f"is lower in {int((avg['E[TV] avg'] < avg['E[TV] last']).sum())} of {len(avg)}."
        )
    )
else:
    display(Markdown("*No weight-averaged run is complete yet.*"))

# %% [markdown]
# **Has it stopped improving? Budget doubling.** A cell has plateaued when doubling its budget
# (a complete new schedule, not a longer tail of the same one) changes its final `E[TV]` by less
# than 10%: the 90% interval of the paired fall `E[TV_S] - E[TV_2S]` over the same 512 held-out
# instances lies within `+-0.1 E[TV_2S]` (`pfntheory.infra.convergence.doubling_status`). An
# annealing rate cannot pass for a plateau here, as the bend of a cosine-scheduled curve can in the
# log-half test, and the pairing makes the interval narrow: a cell is **resolvable** when its
# interval is no wider than its tolerance. The test's size (a true change of 10% called plateaued)
# is at most 5%, simulated in `tests/test_convergence.py`.

# %%
dbl = rtab.doubling_frame(runs_b)
if len(dbl):
    with report.fold(f"Budget doubling: the table, {len(dbl)} doubled cells"):
        display(report.table(dbl))
    display(
        Markdown(
            f"**{int(dbl['resolvable'].sum())} of {len(dbl)}** doubled cells are resolvable by "
            f"this test (the log-half test on the committed 12-point curves: see *Could the test "
            f"decide at all?* above); states: "
            + ", ".join(f"{k}: {v}" for k, v in dbl["state"].value_counts().items())
        )
    )
else:
    display(Markdown("*No cell has both its S and 2S runs complete yet.*"))

# %% [markdown]
# The fig:exp1 claims on the `2S` runs present, gated by budget doubling: *holds* / *does not hold*
# when every cell of the slice has plateaued; otherwise *holds at budget* / *fails at budget* when
# the comparison has one outcome at every step of the last log-half of the weight-averaged curves
# and in the final evaluation. A slice with a cell that doubling made worse is *worse with
# training* only where the comparison's outcome differs between the `S` and the `2S` runs;
# where it has one outcome at both budgets, the row keeps its kind and names the worsening, per
# `n'`, as its caveat (docs/verdicts.md). The last row states where the worsening sits.


# %%
for spec in rrows.exp1_rows(runs_b, declared_b):  # the 2S panels above, beside their S panels
    spec.record(rec)

# %% [markdown]
# ## fig:exp1's theory panels in both readings of theory mode
#
# The paper's text learns "the nonzero entries of `K = Q` per layer" in theory mode (the runs
# above, mode `theory`). The authors' public code reads it otherwise: one feature-scale vector
# (`K = Q`) shared by every layer, the noise `sigma` learned, and separate attention and ridge
# steps (`eta_k`, `eta_r`) per layer for both tasks (mode `theory_shared`, experiment
# `fig_exp1_theory_shared`; docs/design.md, "Known ambiguities"). Both are trained the same way
# (S and 2S steps, weight-averaged, the same data stream and held-out instances) on the cells the
# claims rest on: `E[TV]` of the final evaluation at the largest budget on disk, with each run's
# budget-doubling status (hollow markers: not plateaued).

# %%
from pfntheory.report import theory_readings as rread

readings = rread.reading_cells(trained(runs_b) + trained(loaded["fig_exp1_theory_shared"][0]))
with report.fold("The readings' cells as a table and a figure (both tasks)"):
    display(report.table(rread.readings_frame(readings)))
    fig, axs = plt.subplots(2, 2, figsize=(11, 7.5), squeeze=False)
    rread.plot_readings(axs, readings)
    fig.tight_layout()
    report.save_figure(fig, "07_exp1_theory_readings")
    plt.show()
for spec in rrows.theory_shared_rows(loaded):  # fig:exp1's slices in the shared reading
    spec.record(rec)

# %% [markdown]
# ## The covariate shift in the claimed regime (supp-fig:exp2 d4-1 uni)
#
# `supp_exp2_shift_regime` trains `d = 4` `TF^pr` models in the regime where the paper claims
# robustness to the covariate shift (`L = 16`, `n_max = 512`; 2000 steps with 128 held-out
# instances per curve point, and 8000 steps with 1024) and evaluates them on the pretraining design
# `N(0, I/d)` and under the shift `Unif[-1/sqrt d, 1/sqrt d]^d`. Their learning curves (held-out
# `E[TV]` and 90% coverage against the training step, at each held-out `n'`) decide whether the
# claim can be judged yet; the longest complete run decides it. A run still training shows the
# curve it has so far (marked "in progress"): it decides nothing until it is complete.

# %%
runs_s, missing_s, declared_s = loaded["supp_exp2_shift_regime"]
DESIGNS = {"pretraining N(0, I/d)": None, "shift Unif[-1/sqrt d, 1/sqrt d]^d": "uniform"}


def _shift_run(run_dir, spec, state, docs):
    """One shift-regime run: its table, learning curves (E[TV], coverage) and plateau status."""
    if state == "complete":
        display(report.table(rtab.runs_frame([r for r in runs_s if r.run_dir == run_dir])))
    if docs:
        last = max(p["step"] for doc in docs.values() for p in doc["points"])
        fig, axs = plt.subplots(1, 2, figsize=(11, 3.8))
        for ax, metric in zip(axs, ("tv", "coverage90"), strict=True):
            report.plot_learning_curves(ax, docs, metric=metric)
            if metric == "coverage90":
                ax.axhline(0.9, color="r", ls="--", lw=1, label="nominal 0.9")
            ax.legend(fontsize=7)
        fig.suptitle(
            f"{run_dir.name}: d={spec.task.d}, L={spec.model.L}, C={spec.model.C}, "
            f"n in [{spec.n_min}, {spec.n_max}], {spec.curve_instances} held-out instances per "
            f"point; {state} (step {last} of {spec.steps})"
        )
        report.save_figure(fig, f"07_shift_regime_learning_curves_s{spec.steps}")
        plt.show()
    if state == "complete":
        r = next(r for r in runs_s if r.run_dir == run_dir)
        display(
            Markdown("Plateau status of each curve (`pfntheory.infra.convergence.plateau_status`):")
        )
        display(report.table(rtab.curve_status_frame(r, DESIGNS)))


if missing_s:
    pending("supp_exp2_shift_regime", "supp-fig:exp2 d4-1 uni", missing_s, declared_s)
shift_dirs = [(r.run_dir, r.spec, "complete") for r in trained(runs_s)]
shift_dirs += [
    (xrun.run_dir_of("supp_exp2_shift_regime", s, xrun.default_root()), s, "in progress")
    for s in declared_s
    if s.name in missing_s
]
for run_dir, spec, state in shift_dirs:
    docs = {design: report.read_learning_curve(run_dir, cov) for design, cov in DESIGNS.items()}
    docs = {k: v for k, v in docs.items() if v is not None}
    if state != "complete" and not docs:
        continue
    with report.fold(
        f"{run_dir.name} ({spec.steps} steps, {state}): "
        + ("its table, learning curves and plateau status" if state == "complete" else "its curve")
    ):
        _shift_run(run_dir, spec, state, docs)
for spec in rrows.shift_regime_rows(runs_s):
    c, reg = spec.result, spec.result.details["regime"]
    display(
        Markdown(
            f"**{c.key}** ({reg['steps']} steps): {c.verdict}; measured worst 90% coverage "
            f"{c.observed:.3f} over n' = {c.details['n_eval']} (exact PPD on the same instances: "
            f"{min(c.details['coverage_90_exact']):.3f}-{max(c.details['coverage_90_exact']):.3f})"
            f"; {c.tolerance}"
        )
    )
    spec.record(rec)  # gated on the run the claim rests on (the longest complete one)

# %% [markdown]
# ## Why the learned TF^pr loses calibration under the shift at d = 8 (supp-fig:exp2 d8-1 uni)
#
# The hand-set `TF^pr` is calibrated under the covariate shift
# (`verify/test_shift_construction.py`), so what the trained models lose sits in their learned
# weights. The decomposition below (folded: its method, the findings cause by cause with their
# verdicts, the per-run table and the figure) locates it in the variance readout; what that means
# for the paper's statement follows it.

# %% [markdown]
# <div class="pfn-fold" data-summary="The decomposition of the d = 8 (and d = 4) runs: method,
# findings cause by cause, per-run table and figure"></div>

# %% [markdown]
# `pfntheory.claims.shift_cause`
# decomposes each trained `TF^pr` (C = 256) of the d = 4 and d = 8 companions, and of the seed and
# budget replicates present, on 128 fresh GP contexts per design at `n' = 64` (and 128; the same
# contexts for every run of one `d`), against the exact PPD (coverage exact per context):
#
# - **mean or variance**: coverage of the learned interval with the exact mean, or the exact
#   variance, swapped in;
# - **scale or shape of the inputs**: `N(0, I/(3d))` (the shift's variance, the pretraining
#   shape), a uniform law of the pretraining variance `1/d`, the shifted inputs rescaled by
#   `sqrt 3` before the model sees them, and a path of designs `N(0, c^2 I/d)` from `c = 1` to
#   `c = 0.2` (the shift sits at `c = 1/sqrt 3`);
# - **the readout**: the learned prior variance `(W_2y + W_2k amp)/s_2` against
#   `sigma^2 + alpha^2 = 1.04`, the share of predicted variances below the noise variance 0.04, and
#   the *collapsed limit*, the variance predicted when all inputs coincide (exact
#   `sigma^2 (1 + 1/n) = 0.041`);
# - **the solver**: the norm of the product of the learned variance-channel layer maps on the
#   context points, beside the hand-set Jacobi-Richardson map; and the hand-set `TF^pr` of the same
#   depth on the same contexts.
#
# The decompositions are computed once (`pfntheory sweep shift_cause [--read-root DIR ...]`,
# a few CPU-minutes) into `reports/runs/supp_exp2_d8/shift_cause.json`; the findings
# are decided on that file by `pfntheory.claims.shift_findings.findings` (rules in each
# tolerance).

# %%
from pfntheory.claims import shift_findings as xfind
from pfntheory.infra import runs as runfiles

cause_path = xrun.default_root() / "supp_exp2_d8" / xfind.SHIFT_CAUSE_FILE
cause_docs = runfiles.load_json(cause_path)["runs"] if cause_path.is_file() else []


def verdict_of(c):
    return c.verdict or ("holds" if c.holds else "does not hold")


if not cause_docs:
    display(Markdown("*No decomposition on disk: `pfntheory sweep shift_cause`.*"))
else:
    cause = {c.key: c for c in xfind.findings(cause_docs)}
    rows64 = pd.DataFrame(xfind.table(cause_docs, 64))
    d8, d4 = rows64[rows64.d == 8], rows64[rows64.d == 4]
    v, sc_, ro = (
        cause[f"shift_cause.{k}"] for k in ("variance", "input_scale", "unanchored_readout")
    )
    bud, sd, dim = (cause[f"shift_cause.{k}"] for k in ("budget", "seeds", "dimension"))
    rf = cause["shift_cause.readout_refit"]
    deep_rf = rows64[rows64.run.isin(list(rf.details)) & (rows64.L >= xfind.DEEP)]
    share = v.details["share_var_mean"]  # run -> (share removed by exact variance, by exact mean)
    L_of = dict(zip(rows64.run, rows64.L, strict=True))
    deep = [s for r, s in share.items() if L_of[r] >= xfind.DEEP]
    shallow = [s for r, s in share.items() if L_of[r] < xfind.DEEP]
    anchored = d4[d4.collapsed_variance >= 0.035]
    series = "; ".join(
        f"{k}: " + ", ".join(f"{c:.2f} at {s} steps" for s, c in pts)
        for k, pts in bud.details["series"].items()
    )
    seeds = ", ".join(
        f"{r['cov_shift']:.2f} (seed {r['seed']}, {r['steps']} steps, "
        f"{'averaged' if r['averaged'] else 'last iterate'})"
        for r in sd.details["runs"]
    )
    lines = [
        "**Finding: the learned variance readout is not anchored at the noise floor. The shift "
        "moves contexts towards nearly coinciding inputs, where such a readout predicts too "
        "little variance; how far a run's readout is off there orders its loss, and the d = 8 "
        f"runs are further off (collapsed-limit variance {d8.collapsed_variance.min():.2f} to "
        f"{d8.collapsed_variance.max():.3f}, d = 4: {d4.collapsed_variance.min():.3f} to "
        f"{d4.collapsed_variance.max():.3f}, exact 0.041).** At `n' = 64`:",
        f"- **Variance, not mean** ({verdict_of(v)}): in the {len(deep)} runs with `L >= 16` that "
        f"lose coverage under the shift, the exact variance under the learned mean removes "
        f"{min(s[0] for s in deep):.2f}-{max(s[0] for s in deep):.2f} of the deficit "
        f"`0.9 - coverage`, the exact mean under the learned variance "
        f"{min(s[1] for s in deep):.2f}-{max(s[1] for s in deep):.2f}"
        + (
            f" (at `L <= 8` the mean shares the loss: up to {max(s[1] for s in shallow):.2f})."
            if shallow
            else "."
        )
        + f" The learned variance is a median {d8.var_ratio_shift.median():.2f} of the exact one "
        f"under the shift at d = 8 (d = 4: {d4.var_ratio_shift.median():.2f}), and "
        f"{d8.below_noise_shift.min():.0%}-{d8.below_noise_shift.max():.0%} of the d = 8 "
        "predictions lie below the noise variance 0.04.",
        f"- **Input scale, not shape** ({verdict_of(sc_)}): `N(0, I/(3d))` loses at least "
        f"{sc_.observed:.0%} of the coverage the shift takes from each collapsing run; the "
        "uniform law of the "
        f"pretraining variance moves coverage by at most "
        f"{max(abs(x) for x in sc_.details['shape_effect'].values()):.3f}. The shifted inputs "
        f"rescaled by `sqrt 3` give {rows64.cov_shift_rescaled_inputs.min():.2f}-"
        f"{rows64.cov_shift_rescaled_inputs.max():.2f}, over-wide: the model then predicts its "
        "pretraining-level variance. The variance is read off the Gram statistics of the inputs "
        "as fitted on `N(0, I/d)` (learned kernel scales: first layer "
        f"{min(d['scale_first'] for d in cause_docs):.2f}-"
        f"{max(d['scale_first'] for d in cause_docs):.2f}, "
        f"solver layers {min(d['scale_solver'] for d in cause_docs):.2f}-"
        f"{max(d['scale_solver'] for d in cause_docs):.2f}, against `1/ell = 1.25`).",
        f"- **The readout is not anchored** ({verdict_of(ro)}): the learned prior variance is "
        f"{rows64.prior_variance.min():.2f}-{rows64.prior_variance.max():.2f} against "
        f"`sigma^2 + alpha^2 = 1.04`, and the collapsed-limit variance lies below "
        f"`sigma^2 = 0.04` in every collapsing run (d = 8: {d8.collapsed_variance.min():.2f} to "
        f"{d8.collapsed_variance.max():.3f}). The runs at the exact limit (d = 4, L = 8: "
        f"{', '.join(f'{x:.3f}' for x in anchored.collapsed_variance)}) are the ones calibrated "
        f"under the shift ({', '.join(f'{x:.2f}' for x in anchored.cov_shift)}); over all "
        f"{len(rows64)} runs the collapsed-limit variance ranks the coverage under the shift with "
        f"Spearman `rho = {ro.details['rho']:.2f}`. Pretraining on `N(0, I/d)` holds no contexts "
        "whose inputs nearly coincide, so nothing pins the readout there.",
        f"- **Why d = 8 and not d = 4** ({verdict_of(dim)}): the shift takes the exact PPD "
        f"variance to a median {dim.details['tau_ratio'][8]:.2f} of its pretraining value at "
        f"d = 8 ({d8.tau_gauss.median():.3f} -> {d8.tau_shift.median():.3f}) against "
        f"{dim.details['tau_ratio'][4]:.2f} at d = 4 ({d4.tau_gauss.median():.3f} -> "
        f"{d4.tau_shift.median():.3f}): in d = 8 distances concentrate, the pretraining design "
        "holds few near neighbours, and the shift leaves its range further. On the path "
        f"`N(0, c^2 I/d)` every d = 8 run falls below 0.85 at `c` = "
        f"{d8.breaking_scale.min():.2f}-{d8.breaking_scale.max():.2f}, before the shift's 0.58; "
        f"mean coverage under the shift: {dim.details['coverage_shift_mean'][8]:.2f} at d = 8, "
        f"{dim.details['coverage_shift_mean'][4]:.2f} at d = 4. The difference is the shallow "
        f"models': at `L >= 16` the two dimensions lose alike "
        f"({d8[d8.L >= 16].cov_shift.min():.2f}-{d8[d8.L >= 16].cov_shift.max():.2f} at d = 8, "
        f"{d4[d4.L >= 16].cov_shift.min():.2f}-{d4[d4.L >= 16].cov_shift.max():.2f} at d = 4; "
        f"at `L = 4`: {d8[d8.L == 4].cov_shift.min():.2f}-{d8[d8.L == 4].cov_shift.max():.2f} "
        f"against {d4[d4.L == 4].cov_shift.min():.2f}-{d4[d4.L == 4].cov_shift.max():.2f}), "
        "so 'benign at d = 4' holds for the shallow models, not for the paper's regime.",
        "- **The readout refitted on the pretraining law** (what a PFN sees): refitting only the "
        "two numbers of the variance readout (`v = a + b g_L`, least squares on the exact "
        "variance) on `N(0, I/d)` alone, solver and mean untouched, gives "
        f"{deep_rf.refit_pretraining_shift.min():.2f}-{deep_rf.refit_pretraining_shift.max():.2f}"
        " under the shift in the collapsing runs with `L >= 16` (learned: "
        f"{deep_rf.cov_shift.min():.2f}-{deep_rf.cov_shift.max():.2f}); "
        f"{int((deep_rf.refit_pretraining_shift >= 0.9 - xgate.COVERAGE_SLACK).sum())} of "
        f"{len(deep_rf)} reach {0.9 - xgate.COVERAGE_SLACK:.2f}: the pretraining design alone "
        "does not pin the readout where the shift goes.",
        f"- **The learned solver has what the shift needs** ({verdict_of(rf)}), an in-sample "
        "fit, not a prediction: refitted on `N(0, c^2 I/d)` for `c` from 1 to 0.4, a path that "
        "contains the shift's scale `1/sqrt 3`, the same two numbers give "
        f"{deep_rf.refit_scales_shift.min():.2f}-{deep_rf.refit_scales_shift.max():.2f} under the "
        f"shift and {deep_rf.refit_scales_gauss.min():.2f}-{deep_rf.refit_scales_gauss.max():.2f} "
        "on `N(0, I/d)`: the solver's feature carries the information, the readout is what is "
        "not anchored.",
        "- **Not the solver's contraction**: on shifted Grams the learned variance-channel maps "
        f"contract less (median norm of their product {d8.map_norm_gauss.median():.2f} -> "
        f"{d8.map_norm_shift.median():.2f} at d = 8), as the hand-set maps do "
        f"({d8.map_norm_handset_gauss.median():.2f} -> {d8.map_norm_handset_shift.median():.2f}), "
        "and the hand-set model of the same depth is calibrated on the same contexts at `L >= 8` "
        f"({d8[d8.L >= 8].cov_shift_handset.min():.2f}-{d8[d8.L >= 8].cov_shift_handset.max():.2f};"
        f" at `L = 4` it is not either: {d8[d8.L == 4].cov_shift_handset.iloc[0]:.2f}).",
        f"- **Seeds** ({verdict_of(sd)}): d = 8, L = 4, `n_max = 128` under the shift: {seeds}.",
        f"- **Budget** ({verdict_of(bud)}): "
        + (series or "no cell has two weight-averaged budgets on disk yet")
        + ".",
    ]
    display(Markdown("\n".join(lines)))
    display(
        report.table(
            rows64.sort_values(["d", "L", "n_max", "seed", "steps"]),
            {
                "d": "d",
                "L": "L",
                "n_max": "n_max",
                "seed": "seed",
                "steps": "steps",
                "averaged": "averaged",
                "cov_gauss": "cov N(0,I/d)",
                "cov_shift": "cov shift",
                "cov_shift_exact_var": "shift, exact var",
                "cov_shift_exact_mean": "shift, exact mean",
                "cov_gauss_at_shift_scale": "N(0,I/(3d))",
                "cov_uniform_at_pretraining_scale": "Unif var 1/d",
                "cov_shift_handset": "hand-set, shift",
                "var_ratio_shift": "var/tau shift",
                "below_noise_shift": "var < sigma^2",
                "prior_variance": "prior var",
                "collapsed_variance": "collapsed var",
                "breaking_scale": "c at cov < 0.85",
            },
            digits=3,
            caption="90% coverage at n' = 64 (128 contexts per design) and the readout of each "
            "run; exact PPD 0.9; exact collapsed variance 0.041",
        )
    )

# %%
if cause_docs:
    fig, (ax_p, ax_c) = plt.subplots(1, 2, figsize=(12, 4.2))
    for doc in cause_docs:
        r = doc["run"]
        if r["ema_decay"] > 0:
            continue  # the grid's runs; replicates are in the table
        cs = [p["c"] for p in doc["path"]]
        cov = [p["coverage90"] for p in doc["path"]]
        ax_p.plot(
            cs,
            cov,
            color="C3" if doc["d"] == 8 else "C0",
            alpha=0.3 + 0.7 * (doc["L"] >= 16),
            lw=1,
            marker="o",
            ms=2,
        )
    ax_p.axvline(3**-0.5, color="k", ls=":", lw=1)
    ax_p.axhline(0.9, color="r", ls="--", lw=1)
    ax_p.set_xlabel("input scale c: x ~ N(0, c^2 I/d); the shift's variance at c = 1/sqrt 3")
    ax_p.set_ylabel("90% coverage, n' = 64")
    ax_p.set_title("coverage along the scale path (red d = 8, blue d = 4; faint L < 16)")
    for d, col in ((8, "C3"), (4, "C0")):
        sub = rows64[rows64.d == d]
        ax_c.scatter(sub.collapsed_variance, sub.cov_shift, color=col, s=14, label=f"d = {d}")
    ax_c.axvline(0.04, color="k", ls=":", lw=1, label="sigma^2 (exact limit 0.041)")
    ax_c.axhline(0.9, color="r", ls="--", lw=1)
    ax_c.set_xlabel("collapsed-limit variance (all inputs coincide)")
    ax_c.set_ylabel("90% coverage under the shift, n' = 64")
    ax_c.set_title("an unanchored readout predicts the loss")
    ax_c.legend(fontsize=7)
    report.save_figure(fig, "07_shift_cause")
    plt.show()

# %% [markdown]
# <div class="pfn-fold-end"></div>

# %% [markdown]
# **What this means for the paper's statement** ("despite the shift in covariates, the
# generalization performance is comparable to the true baseline for `n_max = 512` and `L >= 16`,
# with the `L = 16` model at `d = 8` being an exception"). The architecture can meet it: the
# hand-set `TF^pr` is calibrated under the shift. Whether a *trained* model meets it is not a
# property of `L` and `n_max`: it depends on whether training happened to anchor the variance
# readout at the noise floor, which the pretraining design `N(0, I/d)` does not require, because it
# never shows the nearly coinciding inputs the shift moves towards. At d = 8 every trained model
# with `L >= 8` loses coverage in the same way (the table), `L = 16` no more than `L = 32`: we see
# no single exception but a shared deficit whose size follows the collapsed-limit variance, a
# property of the learned weights that can differ between seeds and runs; a single exceptional
# cell in the paper is what such a readout would produce. A claim of robustness to this shift needs
# a pretraining prior whose covariate law reaches the shifted region (the refit above: the same
# solver with its readout fitted on `N(0, c^2 I/d)` down to `c = 0.4` is calibrated under the
# shift), or a readout fixed to `sigma^2 + kappa(x, x) - g` as in theory mode; not more depth.

# %% [markdown]
# ## fig:exp2-1: where the learned solver stops contracting
#
# The paper: "the unnormalized model's TV errors spike outside the pretraining range, while the
# normalized model remains stable", by the mechanism of sec:generalization: the largest Gram
# eigenvalue grows like `n mu_0` (thm:lambda1), so a step learned on `n <= n_max` violates
# eqn:convg cond on a long enough context. Read on the runs fig:exp2-1's rows read: the longest
# pair of `fig_exp2_1_budget` (TF and TF^pr, weight-averaged; 8000 steps). Each solver layer maps
# the mean row of the tokens by `h <- M_l h + b_l`; `pfntheory.claims.breakdown` multiplies the
# learned layers' maps on actual contexts of size `n'` (16 per `n'` up to 300, 4 at 400 and 600,
# each with its query; the learned per-layer kernel scales, `V` and `S`) and takes
# `log ||prod_l M_l||_2`. Its context block is the recursion: below 0 the stack contracts every
# residual of the context; the query row is the read-out (the weights the query gives the
# context), bounded where the block contracts. The **predicted breakdown** `n*` is the first `n'`
# where the median context's block expands, its **onset** where 10% do. The check: `E[TV]` is
# low (below twice the in-range level by 3 SE) at every evaluated `n'` below the onset and high
# (above it by 3 SE) at every `n'` from `n*` on, the runs evaluated beyond the paper's
# `n' <= 200` with 256 instances per `n'`. (`pfntheory sweep breakdown` writes
# `reports/runs/fig_exp2_1_budget/breakdown.json`.)

# %%
runs21b = loaded["fig_exp2_1_budget"][0]
bd_path = xrun.default_root() / "fig_exp2_1_budget" / "breakdown.json"
if trained(runs21b) and bd_path.is_file():
    from pfntheory.infra import runs as runfiles

    bd = runfiles.load_json(bd_path)
    fig, (ax_tv, ax_g) = plt.subplots(1, 2, figsize=(12, 4.2))
    rbd.plot_breakdown(ax_tv, ax_g, trained(runs21b), bd)
    steps = sorted({r.spec.steps for r in rbd.breakdown_runs(trained(runs21b), bd)})
    ax_tv.set_title("E[TV] against n', with TF's predicted onset and breakdown")
    ax_g.set_title("log ||prod_l M_l||_2 (median, 10-90%): > 0 expands")
    fig.suptitle(
        f"fig:exp2-1 at the cpu scale, weight-averaged, {'/'.join(map(str, steps))} steps, "
        "extended beyond n' = 200"
    )
    report.save_figure(fig, "07_exp2_1_breakdown")
    plt.show()
    display(Markdown("\n".join(rbd.breakdown_lines(trained(runs21b), bd))))
elif trained(runs21b):
    display(Markdown("*The breakdown analysis has not been run: `pfntheory sweep breakdown`.*"))

# %% [markdown]
# ## fig:exp2-1 and the other experiments
#
# Where every cpu sweep stands (complete runs out of those declared), then, for each other
# experiment with complete cpu runs, `E[TV]` (±2 SE) against the evaluation size `n'` per run with
# its learning-curve status. An experiment whose design is complete gets the claims of notebook 4
# (`pfntheory.claims.trained`, gated by convergence); otherwise a pending row says what to run.


# %%
def _other_runs(name, exp, runs, tr):
    """One other experiment's runs: their table, E[TV] against n' (for supp_exp2_first_layer the
    two readings side by side), the paper's table beside."""
    if tr and name == "supp_exp2_first_layer":  # the two readings side by side
        display(report.table(rfirst.readings_frame(tr)))
        ncell = len({(r.spec.task.d, r.spec.model.L, r.spec.n_max) for r in tr})
        fig, axs = plt.subplots(2, ncell, figsize=(3.6 * ncell, 6.4), squeeze=False, sharex="col")
        rfirst.plot_readings(axs, tr)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        report.save_figure(fig, f"07_{name}")
        plt.show()
    elif tr:
        display(report.table(rtab.runs_frame(tr)))
        k = len(rcpu.eval_files(tr))
        fig, axs = plt.subplots(1, k, figsize=(6.5 * k, 4.2), squeeze=False, sharey=True)
        rcpu.plot_tv_against_n(axs[0], tr)
        fig.suptitle(name)
        report.save_figure(fig, f"07_{name}")
        plt.show()
    if name in published.PUBLISHED and runs:
        display(
            Markdown(
                "The table's cells on disk beside the paper's (same tasks: d=16, n in [64, 256], "
                "the paper's n'; our runs are shorter), each model's CRPS minus the exact PPD's on "
                "the same task and n' (the exact PPD's CRPS is the floor of every model's), and "
                "the run's learning-curve status:"
            )
        )
        frame = rtab.table_frame(runs, name)
        display(report.table(frame))
        label = exp.labels[0]
        columns, cells = report.published_beside(frame, published.published_rows(name))
        display(
            report.paper_table(
                "07_cpu_scale",
                name,
                f"{label}, cell by cell (ours: the cpu runs, "
                f"{'/'.join(sorted({str(r.spec.steps) for r in tr}))} steps)",
                report.paper_number(label),
                columns,
                cells,
            )
        )


OTHERS = rrows.other_experiments()
with report.fold("Where every cpu sweep stands: the table at the top of the page as a chart"):
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(counts) + 1))
    rcpu.plot_progress(ax, counts)
    ax.set_title("cpu sweeps: complete runs")
    report.save_figure(fig, "07_progress")
    plt.show()
for name in OTHERS:
    runs, missing, declared = loaded[name]
    exp = xdefs.get_experiment(name)
    display(Markdown(f"### {name}: {len(runs)} of {len(declared)} cpu runs complete"))
    tr = trained(runs)
    if tr or (name in published.PUBLISHED and runs):
        with report.fold(
            f"{name}: the per-run table and E[TV] against n'"
            + (", the table beside the paper's" if name in published.PUBLISHED and runs else "")
        ):
            _other_runs(name, exp, runs, tr)
    specs, note = rrows.other_rows(name, loaded)  # pending while its design is incomplete
    if note:
        display(Markdown(note))
    if name == "supp_exp2_first_layer" and tr:  # the rows' reading of the cells so far
        try:
            fl_rows = (
                [s.result for s in specs] if not missing else xrange.check_first_layer_readings(tr)
            )
        except ValueError:  # no cell complete at S and 2S yet
            fl_rows = []
        if fl_rows:
            display(
                Markdown(
                    "**Which reading reproduces the figure.** "
                    + rfirst.which_reading(fl_rows)
                    + (
                        ""
                        if not missing
                        else " *(Measured on the cells complete at S and 2S so far; the rows "
                        "wait for the whole grid.)*"
                    )
                )
            )
    for spec in specs:
        spec.record(rec)

# %% [markdown]
# ## The n-generalisation family at budget (fig:exp2-2, supp-fig:exp2 d4 / d8, the shift)
#
# The paper's layout (prediction MSE, 90% coverage and 90% width against `n'`, one row per
# `n_max`, one line per `L`, the exact PPD dashed red) for `d = 16`, `8` and `4`, each cell read
# from its **strongest run on disk**: the longest weight-averaged budget run (solid; `*_budget`
# experiments, 1000 / 2000 steps, 4000 for two `d = 8` cells) where it is complete, else the
# original 1000-step last-iterate run (dotted). The budget grids are trained in the background
# over several sessions (`pfntheory sweep supp_exp2_d8_budget supp_exp2_d4_budget
# fig_exp2_2_budget --scale cpu`); the family's claims (rows above) switch to them once a grid
# is complete, so these figures decide nothing on their own.

# %%
family_cells = {d: rfam.strongest_cells(d, SCALE) for d in rfam.FAMILY}
FAMILY_FIGURES = [
    (d, design)
    for d in rfam.FAMILY
    for design in (("gaussian",) if d == 16 else ("gaussian", "uniform"))
]


def _family_figure(d, design):
    fig, axs = plt.subplots(3, 3, figsize=(12, 8.5))
    rfam.plot_family(axs, family_cells[d], design)
    where = "N(0, I/d) inputs" if design == "gaussian" else "covariate shift"
    fig.suptitle(f"d = {d}, {where}")
    fig.tight_layout()
    report.save_figure(fig, f"07_family_d{d}_{design}")
    plt.show()


_family_figure(*FAMILY_FIGURES[0])  # the first (fig:exp2-2, d = 16) shown, the others folded
with report.fold(
    "The other dimensions and the covariate shift ("
    + ", ".join(
        f"d = {d} {'N(0, I/d)' if g == 'gaussian' else 'shift'}" for d, g in FAMILY_FIGURES[1:]
    )
    + ") and the coverage table of every cell"
):
    for d, design in FAMILY_FIGURES[1:]:
        _family_figure(d, design)
    display(
        Markdown(
            "90% coverage of every cell on both designs (the exact PPD's on the same instances "
            "in brackets) and its mean 90% width as a multiple of the exact PPD's (the shift rows "
            "pass with a width in [{:.3f}, {:.3f}]x, `width_band`), the run it reads and its "
            "budget-doubling state:".format(*xrange.width_band())
        )
    )
    display(report.table(rfam.coverage_frame(family_cells)))

# %% [markdown]
# ## Summary of this part
#
# One plateau tally per experiment, over the runs this page's rows read, each with the status
# its row's gate read (budget doubling where the row is gated on it, else the log-half test): the
# index prints the same numbers (`pfntheory.report.experiment_tallies`).

# %%
display(
    report.table(
        [
            {
                "experiment": exp,
                "runs": t["n"],
                "plateaued": t["plateaued"],
                "got worse": t["worse"],
                "tally": t["text"],
            }
            for exp, t in report.experiment_tallies(rec.rows).items()
        ],
        caption="Plateau tally per experiment (the index shows the same)",
    )
)
rec.table()
