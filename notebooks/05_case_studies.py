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
# First the EB fits against the hyperparameters printed in the paper (NumPy only), then the PFN-vs-GP
# maps and numbers from `reports/casestudy/` (written by `pfntheory casestudy`).

# %%
import json

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from pfntheory import report

report.setup_plots()
rec = report.Recorder("05_case_studies")
SCALE = report.scale()
cs = report.optional_import("pfntheory.casestudy")
baseline = report.optional_import("pfntheory.casestudy.baseline")
CASE_DIR = report.ROOT / "reports" / "casestudy"

# %% [markdown]
# ## Empirical-Bayes fits against the paper's printed hyperparameters
#
# A maximiser of the log marginal likelihood (LML) cannot do worse than the paper's parameters on the
# same standardised data; the table shows both fits and whether ours reproduces the printed digits.

# %%
datasets = {}
if cs is None or baseline is None:
    for lab in ("fig:sacramento", "fig:walker"):
        rec.pending(lab, "EB GP fit of supp-sec:real data", "pfntheory.casestudy is not available yet")
else:
    for name, label in (("sacramento", "fig:sacramento"), ("walker", "fig:walker")):
        try:
            data = cs.load_dataset(name)
        except (FileNotFoundError, ImportError, ValueError) as err:
            rec.pending(label, f"{name}: the EB fit reproduces the paper's hyperparameters",
                        f"data not available: {err}")
            continue
        datasets[name] = data
        idx = baseline.walker_splits(data.n)["eb"] if name == "walker" else None
        r = baseline.check_eb_optimum(data, idx, n_restarts=2)
        rec.add(r, label=label, measured="LML(ours) - LML(paper's printed fit)", compare="reference",
                statement=f"{name}: the EB optimum is at least as good as the paper's printed fit")
        display(pd.DataFrame({k: v for k, v in r.details.items() if np.isscalar(v)},
                             index=[name]).T)

# %%
if "walker" in datasets:
    r = baseline.check_walker_coordinate_convention(datasets["walker"])
    rec.add(r, label="fig:walker", verdict="holds with a caveat" if r.holds else None,
            statement="Walker Lake: the printed fit is in the text's coordinates (standardised / 0.3)",
            measured="LML gap of the printed fit, text's scaling vs standardised only",
            caveat="the printed lengthscales fit the coordinates standardised *without* the /0.3"
            if r.holds else "")

# %% [markdown]
# ## PFN against the EB GP (fig:sacramento, fig:walker)

# %%
for name, label in (("sacramento", "fig:sacramento"), ("walker", "fig:walker")):
    res_file = CASE_DIR / name / "results.json"
    if not res_file.exists():
        rec.pending(label, f"{name}: the PFN's PPD mean and 5%/95% quantiles track the EB GP's",
                    f"{res_file.relative_to(report.ROOT)} not found; run `pfntheory casestudy {name}`")
        continue
    res = json.loads(res_file.read_text())
    display(Markdown(f"### {name}"))
    for fig_file in sorted((CASE_DIR / name).glob("*.png")):
        display(Markdown(f"![{fig_file.name}](data:image/png;base64,"
                         + __import__("base64").b64encode(fig_file.read_bytes()).decode() + ")"))
    display(pd.DataFrame([res.get("summary", res)]).T)
    for c in res.get("claims", []):
        from pfntheory.claims import ClaimResult

        rec.add(ClaimResult(**c), label=label)

# %% [markdown]
# ## Summary of this part

# %%
rec.table()
