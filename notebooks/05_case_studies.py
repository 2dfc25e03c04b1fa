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
# # 5. Real-data case studies
#
# Paper results: **fig:sacramento** and **fig:walker** (supp-sec:real data): a `TF^pr` pretrained on
# the empirical-Bayes (EB) GP prior fitted to the data gives predictive means and 5%/95% quantiles
# close to those of the EB GP itself, except far from the observations.
#
# First the EB fits against the hyperparameters printed in the paper (NumPy only), then the
# PFN-vs-GP maps and numbers from `reports/casestudy/` (written by `pfntheory casestudy`).

# %%
import dataclasses
import json

import numpy as np
from IPython.display import Markdown, display

from pfntheory import report
from pfntheory.casestudy import baseline, load_dataset
from pfntheory.casestudy.data import walker_data_available
from pfntheory.claims import real_data_eb as eb_claims
from pfntheory.pipelines.casestudy_results import budget_claims
from pfntheory.report import trained_rows

report.setup_plots()
rec = report.Recorder("05_case_studies")
SCALE = report.scale()
CASE_DIR = report.ROOT / "reports" / "casestudy"
LABELS = trained_rows.CASE_LABELS


def available(name):
    """Whether the data of case study ``name`` is on this machine (Walker Lake is read from a path,
    never copied into the repository); a pending row says what is missing otherwise."""
    if name == "walker" and not walker_data_available():
        rec.pending(
            LABELS[name],
            "Walker Lake case study",
            "walker.csv not found: set $PFNTHEORY_WALKER_CSV or put it at ../shared/data/",
        )
        return False
    return True


# %% [markdown]
# ## Empirical-Bayes fits against the paper's printed hyperparameters
#
# A maximiser of the log marginal likelihood (LML) cannot do worse than the paper's parameters on
# the same standardised data; the table shows both fits and whether ours reproduces the
# printed digits.

# %%
datasets, eb_rows = {}, []
for name in ("sacramento", "walker"):
    if not available(name):
        continue
    data = datasets[name] = load_dataset(name)
    idx = baseline.walker_splits(data.n)["eb"] if name == "walker" else None
    r = eb_claims.check_printed_fit(data, idx, n_restarts=2)
    det = r.details
    tag = name if name == "sacramento" else f"{name}, text: / {det['coord_divisor']:g}"
    for pname, ours, paper in zip(det["param_names"], det["ours"], det["paper"], strict=True):
        eb_rows.append({"data": tag, "parameter": pname, "ours": ours, "paper": paper})
    eb_rows.append(
        {"data": tag, "parameter": "LML", "ours": det["lml_ours"], "paper": det["lml_paper"]}
    )
    if name == "sacramento":
        rec.add(
            r,
            label=LABELS[name],
            variant="empirical-Bayes fit",
            compare="threshold",
            measured="largest |ours - paper| over (alpha, ell_1, ell_2, sigma), standardised data",
        )
        continue
    # Walker Lake: the same 200 points in the authors' code's coordinates (standardised / sqrt 2)
    code_data = load_dataset(name, coord_divisor=eb_claims.WALKER_CODE_DIVISOR)
    rc = eb_claims.check_printed_fit(code_data, idx, n_restarts=2)
    dc = rc.details
    tag_c = f"{name}, code: / sqrt 2"
    for pname, ours, paper in zip(dc["param_names"], dc["ours"], dc["paper"], strict=True):
        eb_rows.append({"data": tag_c, "parameter": pname, "ours": ours, "paper": paper})
    eb_rows.append(
        {"data": tag_c, "parameter": "LML", "ours": dc["lml_ours"], "paper": dc["lml_paper"]}
    )
    # the paper's subset is random and unprinted: its digits are tested against the optima of
    # random subsets (what another subset would give), in each convention
    sub_code = eb_claims.check_walker_subset_optimum(code_data, eb_claims.WALKER_CODE_DIVISOR)
    sub_text = eb_claims.check_walker_subset_optimum(data, det["coord_divisor"])
    sc, st_ = sub_code.details, sub_text.details
    rec.add(
        dataclasses.replace(sub_code, key="printed_fit"),
        label=LABELS[name],
        variant="empirical-Bayes fit",
        compare="reference",
        measured="median LML gap of the printed fit over 8 random 200-subsets (reference: median "
        "gap between two subsets' own optima), coordinates standardised / sqrt 2",
        caveat="in the authors' code's coordinates (standardised / sqrt 2; the text says / 0.3, "
        "next row). On the one subset of our split the digits are not reproduced in either "
        f"convention (largest |ours - paper| {rc.observed:.3f} at / sqrt 2, LML gap "
        f"{dc['lml_gap']:.2f} nats; {r.observed:.3f} and {det['lml_gap']:.1f} nats at / "
        f"{det['coord_divisor']:g}), as expected of a random subset the paper does not print: "
        "every printed parameter lies in the range of 8 subsets' optima ("
        + ", ".join(
            f"{n} {lo:.3f}-{hi:.3f}"
            for n, lo, hi in zip(sc["param_names"], sc["optima_min"], sc["optima_max"], strict=True)
        )
        + f"), and its LML gap (at most {sc['lml_gap_printed_max']:.2f} nats) is no larger than "
        f"what one subset's optimum loses on another (up to {sc['lml_gap_cross_subset_max']:.2f})",
    )
    rec.add(
        sub_text,
        label=LABELS[name],
        variant="coordinate convention of the printed fit",
        statement="Walker Lake: the printed fit is in the text's coordinates (standardised / 0.3)",
        measured="median LML gap of the printed fit over 8 random 200-subsets, text's coordinates "
        "(reference: median gap between two subsets' own optima)",
        compare="reference",
        holds=not sub_text.holds and sub_code.holds,  # the text's reading refuted, the code's fits
        caveat="an ambiguity of the text, resolved by the authors' code: the printed fit is in "
        "coordinates standardised / sqrt 2, not / 0.3. At / 0.3 it loses "
        f"{np.min(st_['lml_gap_printed']):.1f}-{st_['lml_gap_printed_max']:.1f} nats on every "
        "subset, more than any subset's optimum loses on another "
        f"({st_['lml_gap_cross_subset_max']:.1f}), "
        "and its lengthscales lie outside the subsets' optima; at / sqrt 2 it loses "
        f"{np.min(sc['lml_gap_printed']):.1f}-{sc['lml_gap_printed_max']:.1f} nats, inside that "
        "spread (standardised only, / 1, leaves ell_x and ell_y outside the optima's range)",
    )
report.paper_table(
    "05_case_studies",
    "eb_fits",
    "Empirical-Bayes fits on the standardised data, (alpha, ell, sigma) and the log marginal "
    "likelihood (LML) each attains; Walker Lake in the text's coordinates (/ 0.3) and in the "
    "authors' code's (/ sqrt 2), on the same 200 points",
    report.paper_number("supp-sec:real data"),
    ["data", "parameter", "paper", "ours"],
    [[r["data"], r["parameter"], round(r["paper"], 3), round(r["ours"], 3)] for r in eb_rows],
)

# %% [markdown]
# ## PFN against the EB GP (fig:sacramento, fig:walker)
#
# Maps as in the paper's figures (PFN top row, GP bottom row; PPD mean, 5% and 95% quantiles; the
# context points marked on every panel), the PFN-minus-GP differences with the near/far boundary,
# and the claims of the captions (`pfntheory casestudy NAME` writes all of it).

# %%
#: The case-study summary, grouped for a reader (results.json's `summary`; other keys stay there).
SUMMARY_ROWS = (
    ("setting", "L", "depth L"),
    ("setting", "C", "bins C"),
    ("setting", "steps", "pretraining steps"),
    ("setting", "n_pretrain_range", "pretraining n"),
    ("setting", "n_context", "context size"),
    ("setting", "n_grid", "grid cells"),
    ("near / far", "frac_near", "share of near cells (within 1 lengthscale)"),
    ("near / far", "mad_mean_near_sd", "near: mean |PFN - GP| of the PPD mean, in GP sd"),
    ("near / far", "mad_q05_near_sd", "near: mean |PFN - GP| of the 5% quantile, in GP sd"),
    ("near / far", "mad_q95_near_sd", "near: mean |PFN - GP| of the 95% quantile, in GP sd"),
    ("near / far", "mad_mean_near", "near: mean |PFN - GP| of the PPD mean"),
    ("near / far", "mad_mean_far", "far: mean |PFN - GP| of the PPD mean"),
    ("maps", "corr_mean", "correlation of the PFN and GP maps: mean"),
    ("maps", "corr_q05", "correlation: 5% quantile"),
    ("maps", "corr_q95", "correlation: 95% quantile"),
    ("maps", "frac_far_query_expanding", "share of cells where TF^pr's query factor exceeds 1"),
    ("coverage", "coverage90_pfn", "held-out 90% coverage, PFN"),
    ("coverage", "coverage90_gp", "held-out 90% coverage, GP"),
    ("coverage", "n_heldout", "held-out points"),
    ("claims", "claims_holding", "caption claims whose check holds"),
)


summaries, budgets = {}, {}
for name in ("sacramento", "walker"):
    if not available(name):
        continue
    # the strongest evidence: the budget-doubling pair (S and 2S steps, weight-averaged) when it is
    # there, else the single cpu run gated on its own learning curve
    budget = budget_claims(CASE_DIR / name)
    case = trained_rows.casestudy_case(name, budget, CASE_DIR)
    if case is None:
        rec.pending(
            LABELS[name],
            f"{name}: the PFN's PPD mean and 5%/95% quantiles track the EB GP's",
            f"{(CASE_DIR / name / 'results.json').relative_to(report.ROOT)} not found; run "
            f"`pfntheory casestudy {name}`",
        )
        continue
    if budget is not None:
        budgets[name] = budget
    res, res_dir, start = case["results"], case["res_dir"], case["start"]
    display(Markdown(f"### {name} ({res['summary']['steps']} steps)"))
    for fig in ("maps", "differences"):
        report.show_png(res_dir / res["figures"][fig], alt=f"{name} {fig}")
    summaries[name] = res["summary"]
    # held-out proper scores against step 0 at both curve n' (E[TV] alone does not show them)
    if start:
        display(
            report.table(
                start["rows"],
                digits={"step 0": 4, "end": 4, "end - step 0": 4, "unpaired SE": 3},
                caption=f"{name}: held-out NLL and CRPS (lower is better) at step 0 and at "
                "the end of each pretraining run, per curve n'",
            )
        )
    for spec in trained_rows.casestudy_rows(name, case):
        spec.record(rec)

# %%
if summaries:
    names = list(summaries)
    display(
        report.table(
            [
                {"": group, "quantity": text, **{n: summaries[n].get(key) for n in names}}
                for group, key, text in SUMMARY_ROWS
                if any(key in summaries[n] for n in names)
            ],
            digits={n: 3 for n in names},
            caption="The two case studies side by side (reports/casestudy/NAME/results.json)",
        )
    )

# %% [markdown]
# ## Has the PFN's pretraining converged?
#
# Each case-study run records a learning curve: E[TV] between the PFN's binned PPD and the exact PPD
# of the fitted prior on held-out synthetic data sets at the two ends of the pretraining
# context-size range. The claims are decided by budget doubling (docs/verdicts.md): the PFN is
# trained, weight-averaged, at S and at 2S steps, each with its own schedule, and the two final
# models are compared on the same held-out instances: the pair has plateaued when the 90% CI of
# the paired fall of E[TV] from S to 2S lies within +-10% of E[TV] at 2S (this criterion is shared
# by every claim below, so it is stated here once). Every claim goes through the one gate
# (`pfntheory.claims.gating.decide`): *worse with training* when the 2S model is worse than the
# S one (diverging) or than its initialisation (step 0 of the curve: the hand-set construction) at
# some n'; otherwise a plateaued pair gives *holds* / *does not hold*; a pair still improving gives
# *holds at budget* / *fails at budget* when the claim's check has the same outcome at S and 2S,
# and *undecided* when it changes. The table under each case study gives E[TV] per n' at step 0
# and at the end: where pretraining made the model worse, measured.

# %%
curves = {}
for name in ("sacramento", "walker"):
    if name in budgets:
        b = budgets[name]
        st = b["status"]
        display(report.note(f"{name}: {st.trend}"))
        if st.start:  # where training made the model read worse than its initialisation
            display(
                report.table(
                    [
                        {
                            "n'": n,
                            "E[TV] at step 0 (the construction's initialisation)": a,
                            f"E[TV] at {st.last_step} steps": b,
                            "worse than at step 0": n in st.worse_than_start,
                        }
                        for n, a, _, b, _ in st.start
                    ],
                    digits={
                        "E[TV] at step 0 (the construction's initialisation)": 4,
                        f"E[TV] at {st.last_step} steps": 4,
                    },
                    caption=f"{name}: held-out E[TV] to the exact PPD at each curve n', before "
                    "and after pretraining (the model the claims read)",
                )
            )
        for rd in b["run_dirs"]:
            doc = report.read_learning_curve(rd)
            if doc is not None:
                curves.setdefault(name, {})[f"{doc['points'][-1]['step']} steps"] = doc
        continue
    res_file = CASE_DIR / name / "results.json"
    if res_file.exists():
        res = json.loads(res_file.read_text())
        doc = report.read_learning_curve(CASE_DIR / name / res["pfn"]["run_dir"])
        if doc is not None:
            curves[name] = {"PFN": doc}
            display(Markdown(f"**{name}**: {res['summary']['pfn_learning_curve']}"))
if curves:
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 3.8), squeeze=False)
    for ax, (name, docs) in zip(axs[0], curves.items(), strict=True):
        for n in next(iter(docs.values()))["n_eval"]:
            report.plot_learning_curves(ax, docs, metric="tv", n=n)
        ax.set_title(f"{name}: held-out E[TV] to the exact PPD")
        ax.legend(fontsize=8)
    plt.show()

# %% [markdown]
# ## Summary of this part

# %%
rec.table()
