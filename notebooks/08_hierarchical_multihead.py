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
# # 8. Beyond the paper: hierarchical GPs
#
# The paper's remark "Extension to hierarchical GPs" (sec. 3; again in its discussion) proposes,
# and leaves for future work, a transformer for a prior that mixes finitely many GP components
# (supp-tab:hierarchical-gp: lengthscale in {0.4, 0.8, 1.2} x noise std in {0.1, 0.2, 0.3},
# uniform): a wider token and one attention head per component, each running thm:TFdoPPD's
# Richardson recursion for its component, and a readout of the mixture weights. The single-head
# TF^pr cannot select a component per context (one kernel, one noise level), and its 50%
# intervals over-cover on the table. This page builds the extension and checks it
# (docs/multihead.md):
#
# 1. **The construction** (`pfntheory.maths.multihead_construction`): each head equals its
#    component's Richardson iterate; with the exact weights the mixture PPD converges at the
#    per-component rate; the TV error obeys `TV(w, w') + sum_h w'_h TV(p_h, q_h)`; heads sharing one
#    component fail.
# 2. **Trained** (`pfntheory.nn.multihead_model.MixturePFN`, experiment `supp_tab_hier_multihead`,
#    cpu scale): the multi-head model beside the single head at the same number of steps and at the
#    same CPU time, and the exact mixture PPD, on the table's cells.
# 3. **Selecting the component** (issue 38, `pfntheory.nn.selector`, `claims.multihead_select`):
#    the ceiling (exact weights plugged into the heads at L = 8, 16, 32), the Bayes top-component
#    accuracy, a selector from statistics one attention layer computes, a positive control, and
#    the multi-head model that beats the single head (hand-set heads at L = 32 + the selector).
#
# Trained verdicts follow the rules of the trained claims (docs/verdicts.md). The page renders with
# whatever runs are complete and says which are pending.

# %%
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from pfntheory import report
from pfntheory.claims import gating as xgate
from pfntheory.claims import multihead_exact as cmh
from pfntheory.claims import multihead_trained as tmh
from pfntheory.infra.config import TaskSpec, prior_components
from pfntheory.infra.convergence import curve_points
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.kernels import RBFKernel
from pfntheory.pipelines import multihead_run as mrun
from pfntheory.report import trained_rows

report.setup_plots()
rec = report.Recorder("08_hierarchical_multihead")
VARIANT = trained_rows.MULTIHEAD_VARIANT

# %% [markdown]
# ## 1. The construction
#
# A context of the table's grid shrunk to `d = 2`, `n = 12` (so that depths of thousands of layers
# run in seconds), three components of different lengthscale and noise. Each check is the one
# `verify/test_multihead_hier.py` runs on hypothesis draws.

# %%
rng = np.random.default_rng(8)
kernels = [RBFKernel(1.0, ell) for ell in (0.4, 0.8, 1.2)]
nv = np.array([0.1, 0.2, 0.3]) ** 2
X = rng.normal(size=(12, 2)) / np.sqrt(2)
x = rng.normal(size=2) / np.sqrt(2)
Y = np.linalg.cholesky(kernels[1](X) + nv[1] * np.eye(12)) @ rng.normal(size=12)
eta = [0.9 / (np.linalg.eigvalsh(k(X))[-1] + s2) for k, s2 in zip(kernels, nv, strict=True)]
eta_pr = [0.45 / (1.0 + s2) for s2 in nv]

rows = cmh.check_heads_richardson(kernels, nv, X, Y, x, eta, 30)
rows_pr = cmh.check_heads_richardson(kernels, nv, X, Y, x, eta_pr, 30, normalised=True)
shared = cmh.check_heads_richardson(kernels, nv, X, Y, x, eta, 30, encode=(0, 0, 0))
Ls = [2, 50, 100, 200, 400, 800, 1600]
rate = cmh.check_mixture_rate(kernels, nv, X, Y, x, eta, Ls)
h_weak = int(np.argmin(rate.details["weights"]))
rate_shared = cmh.check_mixture_rate(kernels, nv, X, Y, x, eta, Ls, encode=(h_weak,) * 3)
fit = mh.fit_logdet_readout(kernels, nv, 2, np.random.default_rng(0), ns=(6, 8, 10, 12, 16))
bound = cmh.check_tv_bound(kernels, nv, X, Y, x, eta, 200, fit)
for r, variant in (
    (rows, "multi-head TF (beyond the paper)"),
    (rows_pr, "multi-head TF^pr (beyond the paper)"),
    (rate, VARIANT),
    (bound, VARIANT + ", fitted log-det readout"),
):
    rec.add(r, variant=variant)
display(
    Markdown(
        f"Fault injection, every head carrying one component: rows check observed "
        f"{shared.observed:.3g} x its tolerance (holds = {shared.holds}); rate check with the "
        f"weakest component ({h_weak}) shared: TV / bound up to {rate_shared.observed:.3g} "
        f"(holds = {rate_shared.holds}). Both must fail, and do when `holds = False`."
    )
)

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
for res, name in ((rate, "multi-head, exact weights"), (rate_shared, "heads share one component")):
    d = res.details["rows"]
    ax.semilogy([r["L"] for r in d], [max(r["tv"], 1e-17) for r in d], "o-", label=f"TV: {name}")
ax.semilogy(
    [r["L"] for r in rate.details["rows"]],
    [r["bound"] for r in rate.details["rows"]],
    "k--",
    label="bound sum_h w_h B_h(L) (thm:TFdoPPD per head)",
)
ax.axhline(rate.details["do_nothing_tv"], color="grey", lw=0.8, label="do-nothing model")
ax.set_xlabel("depth L")
ax.set_ylabel("TV(exact mixture PPD, model)")
ax.legend()
ax.set_title("Mixture PPD of the hand-set multi-head model (d=2, n=12, 3 components)")
report.save_figure(fig, "08_construction_rate")
plt.show()

display(
    report.table(
        [
            {
                "component": h,
                "exact TV(p_h, q_h)": t,
                "bound B(moment errors)": b,
                "w_h exact": w,
            }
            for h, (t, b, w) in enumerate(
                zip(
                    bound.details["tv_components"],
                    bound.details["bound_components"],
                    rate.details["weights"],
                    strict=True,
                )
            )
        ],
        caption=(
            f"L=200, fitted log-det readout: TV = {bound.details['tv']:.3g} <= TV(w, w') "
            f"({bound.details['tv_weights']:.3g}) + sum_h w'_h TV(p_h, q_h) = "
            f"{bound.details['bound_exact_components']:.3g} <= "
            f"{bound.details['bound_moments']:.3g} (moment bound)"
        ),
    )
)

# %% [markdown]
# ### The log-determinant readout on the table's prior
#
# The quadratic term `Y^T (G_h + sigma_h^2 I)^{-1} Y` comes exactly from the heads' rows; the
# log-determinant does not, and is fitted as a linear function of `(log det D_h, n)` features
# (`log det D_h = sum_i log s_{h,i}`, the normaliser of head `h`'s attention) on Monte-Carlo designs
# of the table's prior (d = 16). Its residuals are log-weight errors: a residual `r` moves a weight
# ratio by up to `e^r`. The trained model starts from this fit and learns it further.

# %%
task = TaskSpec(kind="hier_rbf", d=16)
kh, nvh = prior_components(task)
fit16 = mh.fit_logdet_readout(kh, nvh, 16, np.random.default_rng(0), ns=(32, 64, 128, 256))
display(
    report.table(
        [
            {
                "lengthscale": k.lengthscale,
                "noise std": float(np.sqrt(s2)),
                "rms residual": r,
                "max |residual|": m,
            }
            for k, s2, r, m in zip(kh, nvh, fit16.rms, fit16.max_abs, strict=True)
        ],
        caption="least-squares fit of log det(G_h + sigma_h^2 I), 2 designs per n in 32..256",
    )
)

# %% [markdown]
# ### How deep must the heads be for the weights?
#
# The quadratic term needs the training recursion's fixed point: at depth `L` it reads
# `sigma_h^{-2} sum_i y_i (y_i - f_{h,i}^(L))`. On the table's prior (d = 16, n = 64), TF^pr heads
# with the trained model's initial step `1/(1 + sigma_h^2)`, and the exact log-determinant (so
# that only the recursion's convergence shows): `TV(w, w')` to the exact posterior weights against
# `L`. The trained model has `L = 8`.

# %%
depth = cmh.readout_weights_against_depth(
    task, 64, (8, 32, 128, 512, 2048), 3, np.random.default_rng(1)
)
fig, ax = plt.subplots(figsize=(6, 3.6))
ax.semilogx(depth["L"], np.asarray(depth["tv_w"]).T, color="grey", lw=0.8)
ax.semilogx(depth["L"], depth["mean"], "ko-", label="mean over contexts")
ax.set_xlabel("depth L")
ax.set_ylabel("TV(exact weights, readout weights)")
ax.set_title("Weight readout of the hand-set heads (exact log-det), d=16, n=64")
ax.legend()
report.save_figure(fig, "08_weights_depth")
plt.show()

# %% [markdown]
# ### Chebyshev steps: the same readout at depth ~ sqrt(kappa)
#
# **Finding.** Per-layer steps at the Chebyshev nodes of the spectrum's range of each head's
# Jacobi-preconditioned system (`pfntheory.maths.chebyshev`, Leja order; `verify/test_chebyshev.py`
# checks the bound `2 rho^L / (1 + rho^{2L})`, the depth `~ sqrt(kappa)` against `~ kappa`, and
# that monotone orders and nodes outside the range fail) find the weights with far fewer layers
# than the constant step: TV(w, w') 0.001 at L = 512 on the proven range `[sigma^2/n, 1 + sigma^2]`,
# 0.000 at 256 on a range from 32 prior designs (both fixed weights), against 0.20 at 512 and 0.06
# at 2048 for the constant step. At the table's depths (L <= 32) no rule finds them: the hardest
# component needs about 144 Chebyshev steps. Below `sqrt(kappa)` layers, Chebyshev steps are no
# better than the constant step. Three choices below, on the same contexts as the constant-step
# curve (mean over contexts; committed in
# `reports/runs/supp_tab_hier_multihead_chebyshev/depth-n64.json`): the proven range, the smallest
# `lambda_min` over 32 prior designs with the proven top (fixed weights), and each context's own
# spectrum (an oracle: one eigensolve per context).

# %%
from pfntheory.base.stats import mean_se
from pfntheory.experiments.state import default_root
from pfntheory.infra import runs as runfiles

cheb_path = default_root() / "supp_tab_hier_multihead_chebyshev" / "depth-n64.json"
if not cheb_path.is_file():
    rec.pending(
        "supp-tab:hierarchical-gp",
        "depth of the weight readout with Chebyshev steps",
        f"{cheb_path} not committed",
        variant=VARIANT,
    )
else:
    cheb = runfiles.load_json(cheb_path)
    labels = {
        "stationary": "constant step 1/(1 + sigma^2) (page 08's heads)",
        "chebyshev": "Chebyshev, proven range [sigma^2/n, 1 + sigma^2]",
        "chebyshev-prior": "Chebyshev, range from 32 prior designs",
        "chebyshev-context": "Chebyshev, each context's own range (oracle)",
    }
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for key, r in cheb["by_steps"].items():
        ax.semilogx(r["L"], r["mean"], "o-", label=labels.get(key, key))
    ax.set_xlabel("depth L")
    ax.set_ylabel("mean TV(exact weights, readout weights)")
    ax.set_title(
        f"Weight readout by step rule, d=16, n={cheb['n']}, {cheb['n_instances']} contexts"
    )
    ax.legend(fontsize=7)
    report.save_figure(fig, "08_weights_depth_chebyshev")
    plt.show()
    display(
        report.table(
            [
                {
                    "steps": labels.get(k, k),
                    **{f"L={L}": v for L, v in zip(r["L"], r["mean"], strict=True)},
                }
                for k, r in cheb["by_steps"].items()
            ],
            caption="mean TV(w, w') over the contexts (the same contexts for every row)",
        )
    )

# %% [markdown]
# ## 2. Trained: single head, multi-head and the exact mixture PPD
#
# cpu scale: d = 16, C = 256, n in [64, 256], n' in {256, 512, 1024} with 1024 instances per n'
# (supp_tab_hier's cpu runs). The multi-head model (L = 8) trains 1000 steps, as the single heads of
# supp_tab_hier (L = 8, 16, 32); a single head L = 8 trains for the multi-head run's CPU time
# (1600 steps: a multi-head step measured 1.57x a single-head step, data drawing included).

# %%
cmp = tmh.load_comparison()
if cmp.missing:
    rec.pending(
        "supp-tab:hierarchical-gp",
        "multi-head model beside the single head on the table's cells",
        f"{len(cmp.missing)} run(s) of supp_tab_hier_multihead [cpu] not finished: "
        f"{', '.join(cmp.missing)}; run `pfntheory sweep supp_tab_hier_multihead --scale cpu`",
        variant=VARIANT,
    )
rows_sbs = tmh.side_by_side(cmp)
display(
    report.table(
        rows_sbs,
        columns={
            "n'": "n'",
            "model": "model",
            "steps": "steps",
            "tv": "E[TV]",
            "crps": "CRPS",
            "coverage_50": "cov 50%",
            "coverage_90": "cov 90%",
            "coverage_95": "cov 95%",
        },
        caption="eval.json of each run (1024 instances per n'); exact rows: the true mixture PPD",
    )
)

# %%
models = sorted({r["model"] for r in rows_sbs})
fig, axs = plt.subplots(1, 5, figsize=(22, 4.2))
for name in models:
    rr = [r for r in rows_sbs if r["model"] == name]
    ns = [r["n'"] for r in rr]
    style = "k--" if name.startswith("exact") else ("o-" if "multi" in name else "s:")
    for ax, key in zip(
        axs, ("coverage_50", "coverage_90", "coverage_95", "crps", "tv"), strict=True
    ):
        if key in rr[0]:
            ax.errorbar(
                ns,
                [r[key] for r in rr],
                [3 * r[key + "_se"] for r in rr],
                fmt=style,
                label=name,
                capsize=2,
            )
for ax, key, nominal in zip(
    axs, ("50%", "90%", "95%", "CRPS", "E[TV]"), (0.5, 0.9, 0.95, None, None), strict=True
):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n'")
    ax.set_title(key if nominal is None else f"coverage {key} (± 3 SE)")
    if nominal is not None:
        ax.axhline(nominal, color="grey", lw=0.8)
axs[0].legend(fontsize=7)
fig.suptitle("supp-tab:hierarchical-gp cells: single head, multi-head and exact mixture PPD")
report.save_figure(fig, "08_table_cells")
plt.show()

# %% [markdown]
# ### Learning curves
#
# Held-out E[TV] and 90% coverage (256 instances at n' = 64 and 256, the same for every run of the
# task) against steps.

# %%
curves = tmh.models(cmp)
fig, axs = plt.subplots(1, 2, figsize=(12, 4))
for name, run in curves.items():
    pts = curve_points(run.run_dir) or []
    for n, ls in ((64, "--"), (256, "-")):
        p = [q for q in pts if q["n"] == n and q["step"] > 0]
        if p:
            axs[0].plot([q["step"] for q in p], [q["tv"] for q in p], ls, label=f"{name}, n'={n}")
            axs[1].plot(
                [q["step"] for q in p], [q["coverage90"] for q in p], ls, label=f"{name}, n'={n}"
            )
for ax, t in zip(axs, ("E[TV]", "90% coverage"), strict=True):
    ax.set_xscale("log")
    ax.set_xlabel("step")
    ax.set_title(t)
axs[1].axhline(0.9, color="grey", lw=0.8)
axs[0].legend(fontsize=6)
report.save_figure(fig, "08_learning_curves")
plt.show()

# %% [markdown]
# ### Paired E[TV] and the learned mixture weights
#
# Every model on the same 256 prior draws per n' (and the multi-head construction at its
# initialisation: hand-set heads, fitted log-det readout); the learned mixture weights against the
# exact posterior weights (mean over the instances, and the mean of `TV(w, w')`).

# %%
paired = mrun.cached_paired_tv(cmp)
if paired is None:
    display(Markdown("*Pending: the multi-head run is not finished.*"))
else:
    display(
        report.table(
            [
                {"n'": int(n), "model": name, "E[TV] (paired)": float(np.mean(v[str(n)]))}
                for name, v in paired["tv"].items()
                for n in paired["n_eval"]
            ],
            caption=f"{paired['n_instances']} instances per n', the same for every model",
        )
    )
    fig, axs = plt.subplots(
        1, len(paired["weights"]), figsize=(5 * len(paired["weights"]), 3.6), squeeze=False
    )
    for ax, (n, wd) in zip(axs[0], paired["weights"].items(), strict=True):
        H = len(wd["mean_exact"])
        ax.bar(np.arange(H) - 0.2, wd["mean_exact"], 0.4, label="exact")
        ax.bar(np.arange(H) + 0.2, wd["mean_learned"], 0.4, label="learned")
        ax.set_title(
            f"n'={n}: E TV(w, w') = {np.mean(wd['tv_w']):.3f}, top agrees {wd['top_agree']:.2f}"
        )
        ax.set_xticks(
            range(H),
            [f"l{k.lengthscale}/s{np.sqrt(s):.1f}" for k, s in zip(kh, nvh, strict=True)],
            rotation=60,
            fontsize=7,
        )
    axs[0][0].legend()
    report.save_figure(fig, "08_weights")
    plt.show()

# %% [markdown]
# ### Verdicts

# %%
for spec in trained_rows.multihead_rows(cmp, paired):
    spec.record(rec)

# %% [markdown]
# ## 3. Selecting the component: the ceiling, a selector, a positive control (issue 38)
#
# **Findings.** With the exact weights plugged in, the committed L = 8 heads are *worse* than the
# single head (only the head the readout collapsed onto was trained), and the hand-set heads are
# worse at L = 8, level at L = 16 and better at L = 32: at the table's shallow depths the heads,
# not the selector, are the limit. The Bayes top-component accuracy is 0.71 / 0.83 / 0.84 at
# n' = 256 / 512 / 1024. A selector from one-attention-layer statistics reaches 0.32-0.40, but on
# the hand-set L = 32 heads it scores within 0.008 E[TV] of the exact weights, and that model
# (no head training, 113 s CPU of selector training) beats the single head L = 32 (at 2000 steps,
# weight-averaged) by 6.6 / 6.7 / 4.5 paired SE at n' = 256 / 512 / 1024 and the equal-time single
# head L = 8 by 8.2 / 9.6 / 8.5 SE, with coverage within 2.1 SE of nominal (n' = 512 / 1024 now on
# 384 / 512 instances, up from 128 / 32). The equal-time comparison *holds* (its single head has
# plateaued). The single L = 32 the rows compare with is supp_tab_hier's L = 32 trained
# weight-averaged at 2S = 2000 steps (`supp_tab_hier_budget`), plateaued by budget doubling (E[TV]
# fall from 1000 steps 0.0004, 90% CI [-0.0005, 0.0012]), scored on the confirmation's draws
# (`supp_tab_hier_multihead_confirm/single-L32-s2000/`, 349 s CPU): E[TV] 0.247 / 0.279 / 0.305, so
# the comparison *holds*. The 1000-step head without averaging (0.247 / 0.281 / 0.307), "too noisy
# to tell" by its learning curve, is still shown in the tables but decides no verdict. The
# positive control (lengthscale 0.4 vs 1.2) selects in 0.977 /
# 1.000 of contexts; the construction's own readout in 0.47 / 0.50 (chance). Every verdict of this
# section goes through the one gate (`claims.gating.decide`): a failing every-n' check whose worst
# interval still holds 0 is *undecided (underpowered)*, never *does not hold*.
#
# **Chebyshev heads: the "done when" at L = 8.** The same hand-set heads with depth-matched
# Chebyshev steps (below), on the confirmation's fresh draws (256 / 384 / 512 instances at
# n' = 256 / 512 / 1024), against the equal-time single head (E[TV] 0.254 / 0.288 / 0.317). At
# L = 8 they read 0.228 / 0.264 / 0.299, a win by 4.1 / 5.0 / 4.4 paired SE at every n'. Their
# coverage is within 2 binomial SE of nominal at 50 / 90 / 95%. At L = 16 they read 0.159 / 0.198 /
# 0.250 (15-22 SE). At L = 32 they read 0.113 / 0.146 / 0.182, against 0.247 / 0.279 / 0.305 for
# the single L = 32 at 2000 steps, weight-averaged (20-30 SE; *holds*).
# So "no selector can win at L = 8 / 16" holds for the constant-step heads only.
#
# The trained model above collapses onto one head. Before building a better selector, the
# **ceiling**: plug the *exact* posterior weights `p(h | D)` into the heads (the trained model's
# heads at L = 8, and the construction's hand-set heads at L = 8, 16, 32) and measure E[TV] to the
# exact mixture PPD, paired with the single heads of supp_tab_hier on the same prior draws (cells
# n' = 256 / 512 / 1024 of supp-tab:hierarchical-gp). No selector can do better with those heads
# than the exact weights do. Beside it the **Bayes top-component accuracy** (how often the largest
# `p(h | D)` is the component the prior drew), and a **selector that does not rest on the solved
# system** (`pfntheory.nn.selector`): statistics `Y^T (K_b - I) Y / (n (n - 1))` over a bank of
# kernels, `Y^T Y / n` and the design's kernel means, each computed by one attention layer and a
# linear summary head (checked in `verify/test_multihead_selector.py`), feeding a small MLP trained
# by the selection loss `-log w_{h*}(D)`; its last layer starts at zero (uniform weights), so the
# gate cannot collapse at initialisation. Results: `reports/runs/supp_tab_hier_multihead_select/`.

# %%
from pfntheory.claims import multihead_select as msel

sel_docs = msel.load_select()
ceil = sel_docs["ceiling"]
if ceil is None:
    rec.pending(
        "supp-tab:hierarchical-gp",
        "ceiling of the multi-head model's selector (exact weights plugged in)",
        "reports/runs/supp_tab_hier_multihead_select/ceiling-cpu.json not committed",
        variant=VARIANT,
    )
else:
    rows_c = msel.summarise_ceiling(ceil, "single L=8")
    display(
        report.table(
            rows_c,
            columns={
                "n'": "n'",
                "model": "model (heads, weights)",
                "tv": "E[TV]",
                "tv_se": "SE",
                "fall": "single L=8 minus model",
                "fall_se": "paired SE",
            },
            caption=(
                f"the same prior draws for every row ({ceil['n_instances']} per n', seed "
                f"{ceil['seed']}, {ceil.get('dtype', 'float64')} models); exact weights: "
                "p(h | D) plugged into the heads"
            ),
        )
    )
    acc_rows = []
    for n in ceil["n_eval"]:
        row = {"n'": n}
        for name, v in [("Bayes p(h|D)", ceil["bayes_acc"]["p(h|D)"])] + list(
            ceil["sel_acc"].items()
        ):
            a = np.asarray(v[str(n)])
            row[name] = f"{a.mean():.3f} +- {np.sqrt(a.mean() * (1 - a.mean()) / len(a)):.3f}"
        for name, v in ceil["sel_tv_w"].items():
            row[f"TV(w, p(h|D)): {name}"] = float(np.mean(v[str(n)]))
        acc_rows.append(row)
    display(
        report.table(
            acc_rows,
            caption="top-component accuracy (the largest weight is the drawing component; "
            "binomial SE) and the weights' TV to p(h | D); chance 1/9",
        )
    )
    fig, axs = plt.subplots(1, len(ceil["n_eval"]), figsize=(5 * len(ceil["n_eval"]), 3.8))
    for ax, n in zip(np.atleast_1d(axs), ceil["n_eval"], strict=True):
        by = {r["model"]: r for r in rows_c if r["n'"] == n}
        for prefix, style, label in (
            ("single L=", "ks-", "single head (trained)"),
            ("hand-set heads L=", "o--", "hand-set heads, exact weights"),
        ):
            pts = sorted(
                (int(k[len(prefix) :].split(",")[0]), v)
                for k, v in by.items()
                if k.startswith(prefix) and (prefix != "single L=" or "," not in k)
            )
            if pts:
                ax.errorbar(
                    [p[0] for p in pts],
                    [p[1]["tv"] for p in pts],
                    [3 * p[1]["tv_se"] for p in pts],
                    fmt=style,
                    label=label,
                    capsize=2,
                )
        for name, mk in (
            ("multi-head L=8 trained heads, exact weights", "v"),
            ("multi-head L=8 trained, own readout", "^"),
        ):
            if name in by:
                ax.errorbar([8], [by[name]["tv"]], [3 * by[name]["tv_se"]], fmt=mk, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("depth L")
        ax.set_title(f"n' = {n}")
    np.atleast_1d(axs)[0].set_ylabel("E[TV] to the exact mixture PPD (+- 3 SE)")
    np.atleast_1d(axs)[0].legend(fontsize=7)
    fig.suptitle("The ceiling: exact component weights plugged into the heads")
    report.save_figure(fig, "08_ceiling")
    plt.show()
    for spec in trained_rows.ceiling_rows(ceil, cmp):
        spec.record(rec)

# %% [markdown]
# ### A multi-head model that beats the single head: hand-set heads at L = 32 + the selector
#
# The ceiling says where a selector can pay: with the trained L = 8 heads (collapsed: only one head
# trained) or the hand-set L = 8 heads, exact weights do not beat the single head; at L = 32 the
# hand-set heads with exact weights do. So the candidate is the construction's heads at L = 32
# (no training: thm:TFdoPPD per component) with the statistics selector's weights. Its only trained
# part is the selector (CPU time in `selector-table.json`, a few minutes against the single heads'
# 1000 steps, so the comparison is at *less* CPU time for the multi-head model). Confirmed on fresh
# prior draws (another seed than the ceiling's, on which the candidate was chosen): E[TV] paired
# with the single heads L = 32 and L = 8 (equal time), and the central intervals' coverage.

# %%
from pfntheory.claims import multihead_cells as mcells

verdict = sel_docs["verdict"]
if verdict is not None:  # the cells at more instances (n' = 512, 1024), where committed
    verdict = mcells.with_cells(verdict)
if verdict is None:
    rec.pending(
        "supp-tab:hierarchical-gp",
        "multi-head (hand-set heads L=32 + statistics selector) against the single head",
        "reports/runs/supp_tab_hier_multihead_select/verdict-cpu.json not committed",
        variant=VARIANT,
    )
else:
    vrows = []
    ni = verdict["n_instances"]
    for n in verdict["n_eval"]:
        for name in verdict["tv"]:
            if str(n) not in verdict["tv"][name]:  # the cell's exact-weight row: n' = 1024 only
                continue
            row = {"n'": n, "model": name, "E[TV]": float(np.mean(verdict["tv"][name][str(n)]))}
            for lv in (50, 90, 95):
                c = np.asarray(verdict["coverage"][str(lv)][name][str(n)])
                row[f"cov {lv}%"] = (
                    f"{c.mean():.3f} (SE {np.sqrt(lv / 100 * (1 - lv / 100) / len(c)):.3f})"
                )
            vrows.append(row)
    display(
        report.table(
            vrows,
            caption=f"fresh draws (seeds from {verdict['seed']}; instances per n' "
            f"{', '.join(f'{k}: {v}' for k, v in ni.items())}; n' = 1024 from "
            "supp_tab_hier_multihead_confirm when committed); coverage SE: binomial at the "
            "nominal level",
        )
    )
    sel_specs = trained_rows.selector_rows(verdict, cmp)  # replayed along the reference's curve
    for spec in sel_specs:
        spec.record(rec)
    # the sequential step (issue 47): the cells at n' = 512 / 1024 were re-drawn at more
    # instances (128 -> 384 and 32 -> 512; git log of supp_tab_hier_multihead_confirm) after a
    # 2.6 SE miss, so the sample size was not fixed before looking. Two looks, each at z, keep
    # the one-sided error within 2 Phi(-z) (Bonferroni): the one-look z of that level is the
    # margin a verdict needs to be immune to the extra look.
    from scipy.stats import norm

    z_two = float(norm.isf(2 * norm.sf(xgate.Z_MARGIN)))
    margins = {
        s.result.key + f" #{i}": s.result.observed / (s.result.bound / xgate.Z_MARGIN)
        for i, s in enumerate(sel_specs)
        if s.result is not None and s.result.key.endswith("tv_below_single") and s.result.bound
    }
    wins = {k: m for k, m in margins.items() if m > 0}
    display(
        Markdown(
            "**The sequential step, stated.** The confirmation's sizes at n' = 512 / 1024 were "
            "raised after looking (128 -> 384 and 32 -> 512 instances, after a 2.6 SE miss): "
            "optional stopping. "
            f"Two looks at z = {xgate.Z_MARGIN:g} keep the one-sided error within "
            f"2 Phi(-{xgate.Z_MARGIN:g}) = {2 * norm.sf(xgate.Z_MARGIN):.4f}, the level of "
            f"z = {z_two:.2f} at one look. The paired wins above stand at "
            + ", ".join(f"{m:.1f}" for m in sorted(wins.values()))
            + " SE: "
            + (
                "every one beyond it, so no verdict rests on the extra look."
                if wins and min(wins.values()) > z_two
                else "not every one beyond it: those rows rest on the extra look."
            )
        )
    )

# %% [markdown]
# ### Chebyshev steps in the heads, at the table's depths
#
# The hand-set heads with per-layer Chebyshev steps (`pfntheory.nn.chebyshev_heads`; fixed weights:
# the range of each component's preconditioned system from 4 prior designs at n = 1024,
# `ranges-n1024.json`). On the whole range, with kappa up to 7e4, the L - 1 nodes of a head of
# depth 8-32 spread over it and damp the top of the spectrum, where the prediction's mass lies,
# less than the constant step does: worse at every cell. With the range's bottom raised so that
# L - 1 steps reach 1e-2 on it (`depth_matched`, eps = 1e-2, one a-priori choice), they beat the
# constant step and the single head. Rows below: the ceiling's draws (seed 4242), and fresh draws
# (seed 5151, the confirmation's, paired with its single heads).

# %%
cheb_dir = default_root() / "supp_tab_hier_multihead_chebyshev"
# the single heads compared with; the doubled L = 32 (2000 steps, weight-averaged) decides the rows
# against L = 32, the 1000-step head beside it is shown only
REFS = ("single L=8, 1600 steps (equal time)", mcells.REFERENCE, "single L=32")
cdoc = None if verdict is None else mcells.chebyshev_confirmation(verdict)
sources = [(f"ceiling-chebyshev{m}", r, ceil, "ceiling's (4242)") for m, r in (("", "whole"),
           ("-matched", "depth-matched"))]  # fmt: skip
cheb_rows = []
for prefix, variant, ref_doc, draws in sources + [(None, "depth-matched", cdoc, "fresh (5151..)")]:
    for n in ref_doc["n_eval"] if ref_doc is not None else ():
        if prefix is None:
            d = ref_doc
        else:
            p = cheb_dir / f"{prefix}-n{n}.json"
            if not p.is_file():
                continue
            d = runfiles.load_json(p)
            if d["bayes_acc"]["p(h|D)"][str(n)] != ref_doc["bayes_acc"]["p(h|D)"][str(n)]:
                raise ValueError(f"{p}: not the draws of its reference document")
        for ref in REFS:
            if str(n) not in ref_doc["tv"].get(ref, {}):  # the ceiling's draws: no doubled L = 32
                continue
            base = np.asarray(ref_doc["tv"][ref][str(n)])
            for name, v in d["tv"].items():
                if name in REFS or str(n) not in v:
                    continue
                t = np.asarray(v[str(n)])
                f, fse = mean_se(base - t)
                cheb_rows.append(
                    {
                        "draws (seed)": draws,
                        "n'": n,
                        "instances": len(t),
                        "range": variant,
                        "heads, weights": name,
                        "E[TV]": float(t.mean()),
                        "reference": ref,
                        "reference minus model": f,
                        "paired SE": fse,
                    }
                )
if cheb_rows:
    display(report.table(cheb_rows, caption="Chebyshev heads, paired with the single heads"))
if cdoc is not None:
    for spec in trained_rows.chebyshev_rows(cdoc, cmp):
        spec.record(rec)

# %% [markdown]
# ### The fair comparison: selector and ranges from the pretraining range, one hand-set head beside
#
# **Findings.** Made fair, the comparison stands. With the selector trained on n in [64, 256] only
# and the Chebyshev ranges from n = 256 (at L = 8 the depth-matched steps are unchanged), the
# Chebyshev L = 8 model reads E[TV] 0.229 / 0.265 / 0.300 at n' = 256 / 512 / 1024 (committed:
# 0.228 / 0.264 / 0.299) and beats the equal-time single head by 4.0 / 4.8 / 4.4 paired SE:
# *holds*. One hand-set head (lengthscale 0.8, noise std 0.2) at the same depth and steps reads
# 0.269 / 0.309 / 0.340, worse than the trained single head; the multiple heads with the selector
# gain 0.040 / 0.045 / 0.040 over it (SE 0.005 / 0.004 / 0.003): *holds* at L = 8, 16, 32 and for
# the constant-step L = 32 heads. Against the single L = 32 at 2000 steps, weight-averaged
# (plateaued by budget doubling), the Chebyshev L = 32 model gains +0.129 / +0.121 / +0.098
# (19-26 paired SE) and the constant-step L = 32 model +0.039 / +0.032 / +0.019 (6.4 / 6.3 / 4.4
# SE): both *hold*.
#
# The rows above give the multi-head model two advantages the single heads lack: its selector was
# trained on contexts of n up to 1024 and its Chebyshev ranges were taken at n = 1024, while the
# single heads were pretrained on n in [64, 256]; and no hand-set single head is shown, so the
# rows cannot say what the *multiple* heads add. The fair variant
# (`pfntheory.claims.multihead_fair`, runner `pfntheory.pipelines.multihead_fair`, results
# `reports/runs/supp_tab_hier_multihead_fair/`): the same selector trained on n in [64, 256] only,
# the Chebyshev ranges from designs of n = 256, and beside every multi-head model the same
# construction with ONE head, the component of lengthscale 0.8 and noise std 0.2 (the centre of
# the grid: the prior mean of both), at the same depth and steps. The draws are the
# confirmation's, with the counts it ended with fixed in code before any fair row was scored
# (256 / 384 / 512 at n' = 256 / 512 / 1024); each batch recomputes the committed selector's
# weights, which must equal the confirmation's per instance (the pairing check).

# %%
from pfntheory.claims import multihead_fair as cfair
from pfntheory.pipelines import multihead_fair as pfair

fdoc = None if verdict is None else cfair.fair_confirmation(verdict)
if fdoc is not None:
    fair_tab = []
    for tag, (multi_name, one_name) in cfair.row_names().items():
        for n in fdoc["n_eval"]:
            t = np.asarray(fdoc["tv"][multi_name][str(n)])
            row = {"n'": n, "heads (steps, L)": tag, "E[TV] multi-head": float(t.mean())}
            for ref, short in ((one_name, "one head"), *((r, r) for r in REFS)):
                if str(n) not in fdoc["tv"].get(ref, {}):
                    continue
                f, fse = mean_se(np.asarray(fdoc["tv"][ref][str(n)]) - t)
                row[f"{short} minus multi (paired SE)"] = f"{f:+.4f} ({fse:.4f})"
            fair_tab.append(row)
    display(
        report.table(
            fair_tab,
            caption=f"fair variant, the confirmation's draws ({fdoc['n_instances']} per n'); one "
            f"head: {cfair.BASELINE}",
        )
    )
if verdict is not None:
    for spec in pfair.fair_rows(verdict, cmp):
        spec.record(rec)

# %% [markdown]
# ### Positive control: two components far apart
#
# Lengthscale 0.4 against 1.2 at the same noise std 0.1 (d = 16): a working selector must pick the
# drawing component in at least 95% of contexts. The statistics selector (trained on its own prior,
# n in [64, 256]) and, beside it, the construction's own readout at L = 8 (hand-set heads, fitted
# log-determinant).

# %%
ctrl = sel_docs["control"]
if ctrl is None:
    rec.pending(
        "supp-tab:hierarchical-gp",
        "positive control of the selector",
        "reports/runs/supp_tab_hier_multihead_select/positive-control.json not committed",
        variant=VARIANT,
    )
else:
    display(
        report.table(
            [{"n'": int(n), **v} for n, v in ctrl["accuracy"].items()],
            caption="accuracy: statistics selector; bayes: p(h | D); model_acc: the construction's "
            "readout (L = 8); tv_w: E TV(selector weights, p(h | D))",
        )
    )
    for spec in trained_rows.control_rows(ctrl):
        spec.record(rec)

# %%
display(rec.table())
