"""The paper's LaTeX labels: the only names a report row may carry as its result.

A row that is a variant of a result (a dimension, the covariate-shift design, the normalised
transformer) keeps the paper's label and says what varies in its own ``variant`` field.
``tests/test_labels.py`` checks this list against ``paper.tex``.
"""

from __future__ import annotations

__all__ = ["PAPER_LABELS", "check_label"]

#: Every ``\\label{...}`` of the paper, in the order they appear.
PAPER_LABELS: tuple[str, ...] = (
    "fig:sacramento",
    "eq:ppd1",
    "eqn:TF piece ppd",
    "eqn:true piece ppd",
    "eqn:tabPFN attn",
    "eqn:tabPFN mlp",
    "eqn:GPreg",
    "sec:attention-moments",
    "eqn:recursion",
    "eqn:std attn",
    "thm:TFdoPPD",
    "eqn:1st attn",
    "eqn:l attn",
    "fig:exp1",
    "thm:PPD convergence",
    "sec:generalization",
    "fig:stepsize",
    "eqn:richardson",
    "eqn:convg cond",
    "thm:lambda1",
    "fig:exp2-1",
    "eqn:richardson prec",
    "eqn:recursion prec",
    "fig:exp2-2",
    "thm:cond number",
    "thm:L growth",
    "sec:sims",
    "sec:exp1",
    "sec:exp2",
    "sec:exp3",
    "supp-sec:richardson",
    "supp-lem:discretization error",
    "supp-lem:smax quad",
    "supp-lem:lienar kernel Gram",
    "supp-lem:rbf kernel Gram",
    "supp-eqn:q",
    "supp-lem:rbf kernel Gram ridge",
    "supp-lem:rbf kernel Gram ridge prec",
    "supp-thm:popmini",
    "supp-thm:KRR",
    "supp-eqn:f X ast",
    "supp-eqn:f ast",
    "supp-eqn:grad train",
    "supp-eqn:grad train j",
    "supp-eqn:grad test",
    "supp-eqn:grad test fixed",
    "supp-eqn:grad test error",
    "supp-pf:TFdoPPD",
    "supp-eqn:weights",
    "eqn:recur mean",
    "eqn:recur var",
    "supp-sec:thrm4.1",
    "supp-sec:exp details",
    "supp-tab:pretraining hyperparameters",
    "supp-sec:exp additional",
    "supp-tab:lengthscale-crps",
    "supp-tab:hierarchical-gp",
    "supp-fig:exp2 d4-1",
    "supp-fig:exp2 d4-2",
    "supp-fig:exp2 d8-1",
    "supp-fig:exp2 d8-2",
    "supp-fig:exp2-3",
    "supp-fig:exp2 d4-1 uni",
    "supp-fig:exp2 d4-2 uni",
    "supp-fig:exp2 d8-1 uni",
    "supp-fig:exp2 d8-2 uni",
    "supp-sec:real data",
    "fig:walker",
)


def check_label(label: str) -> str:
    """``label`` if it is one of the paper's labels; a ValueError naming it otherwise."""
    if not isinstance(label, str) or label not in PAPER_LABELS:
        raise ValueError(
            f"label must be one of the paper's \\label{{}}s (pfntheory.report.labels), "
            f"got {label!r}; put what varies in variant="
        )
    return label
