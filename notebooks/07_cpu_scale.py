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
from pfntheory.claims import trained as xclaims
from pfntheory.experiments import definitions as xdefs
from pfntheory.experiments import published
from pfntheory.experiments import results as xres
from pfntheory.experiments import state as xrun
from pfntheory.report import breakdown_plots as rbd
from pfntheory.report import cpu as rcpu
from pfntheory.report import cpu_tables as rtab
from pfntheory.report import exp1_budget as rbud
from pfntheory.report import family as rfam

report.setup_plots()
rec = report.Recorder("07_cpu_scale")
SCALE = rcpu.CPU


def available(name):
    """The complete cpu runs of ``name``, the names of the others, and the declared design."""
    runs, missing = xres.load_available(name, SCALE)
    return runs, missing, xdefs.get_experiment(name).runs(SCALE)


def trained(runs):
    return [r for r in runs if hasattr(r.spec, "model")]


def pending(name, label, missing, declared):
    exp = xdefs.get_experiment(name)
    rec.pending(
        label,
        exp.title,
        f"{len(missing)} of {len(declared)} runs of {name} [cpu] are not on disk; run "
        f"`{rcpu.sweep_command(name)}`",
        variant="cpu scale",
    )


def add_all(results, runs, name, measured="", variant="cpu scale", **kw):
    """Record trained claims, gated by the runs' learning curves, as cpu-scale rows."""
    tr = trained(runs)
    for r in results:
        rec.add(
            r,
            measured=r.details.get("measured") or measured,
            compare="threshold",
            variant=variant,
            runs=[x.run_dir for x in tr] if tr else None,
            run_dir=None if tr else runs[0].run_dir.parent,
            command=rcpu.sweep_command(name),
            **kw,
        )


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
statuses_b = xgate.doubling_statuses(trained(runs_b))
panels, panels_s = rbud.budget_panels(trained(runs_b), declared_b)
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
# The same numbers as a table: `ln E[TV]` per `2S` cell (rows `C`, columns `L`, one block per
# panel) with its budget-doubling state (`pfntheory.convergence.doubling_status`: the 90%
# interval of the paired fall of `E[TV]` from `S` to `2S` steps over the same held-out instances,
# against +-10% of its value: **plateaued** inside, **still improving** above 0, **diverging**
# below 0, **too noisy to tell** straddling 0 and leaving the band), and after `|` the `S` cell's
# `ln E[TV]` (its replay); `-` where the run is not on disk. The doubling state is the status the
# fig:exp1 rows are gated on.

# %%
display(report.table(rbud.cell_frame(panels, panels_s, statuses_b)))
words = pd.Series(
    [statuses_b[r.run_dir.name]["state"] for p in panels for r in p.cells.values()], dtype=object
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
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
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
# instances lies within `+-0.1 E[TV_2S]` (`pfntheory.convergence.doubling_status`). An annealing
# rate cannot pass for a plateau here, as the bend of a cosine-scheduled curve can in the log-half
# test, and the pairing makes the interval narrow: a cell is **resolvable** when its interval is
# no wider than its tolerance. The test's size (a true change of 10% called plateaued) is at most
# 5%, simulated in `tests/test_convergence.py`.

# %%
dbl = rtab.doubling_frame(runs_b)
if len(dbl):
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
# and in the final evaluation.


# %%
for p in panels:  # the 2S panels of the heatmaps above
    for c in rcpu.exp1_slice_claims(p, statuses=statuses_b):
        variant = f"cpu scale, weight-averaged, 2S steps, {p.title}, {c.cells_text}"
        if c.result is None:
            rec.pending(
                "fig:exp1",
                f"{p.kind}/{p.mode}: E[TV] falls with {c.axis} at "
                f"{'C' if c.axis == 'L' else 'L'}={c.at} (weight-averaged, budget doubling)",
                f"{len(c.present)} of {len(c.declared)} cells of this slice are on disk at 2S (two "
                f"are needed); run `{rcpu.sweep_command('fig_exp1_budget')}`",
                variant=variant,
            )
        else:
            add_all([c.result], c.runs, "fig_exp1_budget", variant=variant)

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
    if state == "complete":
        display(report.table(rtab.runs_frame([r for r in runs_s if r.run_dir == run_dir])))
    elif not docs:
        continue
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
        display(Markdown("Plateau status of each curve (`pfntheory.convergence.plateau_status`):"))
        display(report.table(rtab.curve_status_frame(r, DESIGNS)))
for c in xrange.check_shift_regime(runs_s) if trained(runs_s) else []:
    reg = c.details["regime"]
    display(
        Markdown(
            f"**{c.key}** ({reg['steps']} steps): {c.verdict}; measured worst 90% coverage "
            f"{c.observed:.3f} over n' = {c.details['n_eval']} (exact PPD on the same instances: "
            f"{min(c.details['coverage_90_exact']):.3f}-{max(c.details['coverage_90_exact']):.3f})"
            f"; {c.tolerance}"
        )
    )
    # the run the claim rests on (the longest complete one), not every run on disk
    deciding = [r for r in runs_s if r.run_dir.name == reg["run"]]
    add_all(
        [c],
        deciding,
        "supp_exp2_shift_regime",
        "worst 90% coverage over n'",
        label="supp-fig:exp2 d4-1 uni"
        if c.details["covariates"] == "uniform"
        else "supp-fig:exp2 d4-1",
        variant=f"cpu scale, d={reg['d']}, L={reg['L']}, n_max={reg['n_max']}, "
        f"{reg['steps']} steps, {c.details['covariates']} design",
        outside=""
        if reg["in_claimed_regime"]
        else f"outside the claimed regime ({reg['claimed_regime']})",
    )

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
# `n' <= 200` with 256 instances per `n'`. (`python -m pfntheory.claims.breakdown` writes
# `reports/runs/fig_exp2_1_budget/breakdown.json`.)

# %%
runs21b = loaded["fig_exp2_1_budget"][0]
bd_path = xrun.default_root() / "fig_exp2_1_budget" / "breakdown.json"
if trained(runs21b) and bd_path.is_file():
    from pfntheory import runs as runfiles

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
    display(
        Markdown(
            "*The breakdown analysis has not been run: `python -m pfntheory.claims.breakdown`.*"
        )
    )

# %% [markdown]
# ## fig:exp2-1 and the other experiments
#
# Where every cpu sweep stands (complete runs out of those declared), then, for each other
# experiment with complete cpu runs, `E[TV]` (±2 SE) against the evaluation size `n'` per run with
# its learning-curve status. An experiment whose design is complete gets the claims of notebook 4
# (`pfntheory.claims.trained`, gated by convergence); otherwise a pending row says what to run.


# %%
def claims_of(name, runs):
    """The trained-claim checks notebook 4 applies to ``name`` (its complete design), with the
    label each row carries."""
    exp = xdefs.get_experiment(name)
    if name == "fig_exp2_1":
        if not loaded["fig_exp2_1_budget"][1]:  # one row per claim: the budget runs decide it
            display(
                Markdown(
                    "*Its claims are recorded once, on `fig_exp2_1_budget` below (the same runs "
                    "weight-averaged at 2000 and 4000 steps, curves beyond the range).*"
                )
            )
            return []
        return [(c, None) for c in xclaims.check_exp2_1(runs)]
    if name == "fig_exp2_1_budget":  # the 2S runs, gated by budget doubling, replayed on curves
        statuses = xgate.doubling_statuses(trained(runs))
        return [(c, None) for c in xclaims.check_exp2_1(runs, statuses=statuses)]
    if name == "fig_exp2_2":
        return [(c, None) for c in xrange.check_exp2_2(runs)]
    if name in ("supp_exp2_d4", "supp_exp2_d8"):
        out = [(c, exp.labels[0]) for c in xrange.check_exp2_2(runs)]
        return out + [
            (c, exp.labels[2]) for c in xrange.check_exp2_2(runs, eval_file="eval_uniform.json")
        ]
    if name in ("supp_tab_lengthscale", "supp_tab_hier"):
        return [(c, None) for c in xclaims.check_table(runs)]
    if name == "fig_stepsize":
        return [(c, None) for c in xclaims.check_stepsize(runs)]
    return []


FAMILY_BUDGETS = {b for _, b in rfam.FAMILY.values()} | {"supp_exp2_d8_seeds"}
OTHERS = [
    n
    for n in EXPERIMENTS
    if n not in {"fig_exp1", "fig_exp1_budget", "supp_exp2_shift_regime"} | FAMILY_BUDGETS
]
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
    if tr:
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
        display(report.table(rtab.table_frame(runs, name)))
    if missing:
        pending(name, exp.labels[0], missing, declared)
        continue
    for c, label in claims_of(name, runs):
        kw = {"label": label} if label else {}
        add_all([c], runs, name, variant=f"cpu scale, {name}", **kw)

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
for d in rfam.FAMILY:
    designs = ("gaussian",) if d == 16 else ("gaussian", "uniform")
    for design in designs:
        fig, axs = plt.subplots(3, 3, figsize=(12, 8.5))
        rfam.plot_family(axs, family_cells[d], design)
        where = "N(0, I/d) inputs" if design == "gaussian" else "covariate shift"
        fig.suptitle(f"d = {d}, {where}")
        fig.tight_layout()
        report.save_figure(fig, f"07_family_d{d}_{design}")
        plt.show()
display(
    Markdown(
        "90% coverage of every cell on both designs (the exact PPD's on the same instances in "
        "brackets), the run it reads and its budget-doubling state:"
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
