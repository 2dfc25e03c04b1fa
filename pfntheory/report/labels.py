"""The paper's LaTeX labels: the only names a report row may carry as its result.

A row that is a variant of a result (a dimension, the covariate-shift design, the normalised
transformer) keeps the paper's label and says what varies in its own ``variant`` field. Beside
each label the report prints what LaTeX prints for it (:data:`PAPER_NUMBERS`: "Theorem 3.1",
"Lemma B.3", "Figure 2"), so that a reader can find the result in the paper without the source.
``tests/test_labels.py`` checks both against ``paper.tex`` where the paper is on disk; the report
itself never reads the paper.
"""

from __future__ import annotations

from pfntheory.base._checks import checked, instance_of

__all__ = ["PAPER_LABELS", "PAPER_NUMBERS", "paper_number", "check_label"]

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


#: What LaTeX prints for each label (:mod:`.numbering` run on ``paper.tex``; the theorem counter
#: is per section, appendix sections are lettered, figures, tables and equations are numbered
#: through; ``tests/test_labels.py`` regenerates it from the paper where the paper is on disk).
#: ``supp-eqn:grad test`` sits on an unnumbered (``\\nonumber``) row, so LaTeX resolves it to its
#: subsection, as printed here.
PAPER_NUMBERS: dict[str, str] = {
    "fig:sacramento": "Figure 1",
    "eq:ppd1": "Equation (1)",
    "eqn:TF piece ppd": "Equation (2)",
    "eqn:true piece ppd": "Equation (3)",
    "eqn:tabPFN attn": "Equation (4)",
    "eqn:tabPFN mlp": "Equation (5)",
    "eqn:GPreg": "Equation (6)",
    "sec:attention-moments": "Section 3",
    "eqn:recursion": "Equation (7)",
    "eqn:std attn": "Equation (8)",
    "thm:TFdoPPD": "Theorem 3.1",
    "eqn:1st attn": "Equation (9)",
    "eqn:l attn": "Equation (10)",
    "fig:exp1": "Figure 2",
    "thm:PPD convergence": "Theorem 4.1",
    "sec:generalization": "Section 5",
    "fig:stepsize": "Figure 3",
    "eqn:richardson": "Equation (11)",
    "eqn:convg cond": "Equation (12)",
    "thm:lambda1": "Theorem 5.1",
    "fig:exp2-1": "Figure 4",
    "eqn:richardson prec": "Equation (13)",
    "eqn:recursion prec": "Equation (14)",
    "fig:exp2-2": "Figure 5",
    "thm:cond number": "Theorem 5.2",
    "thm:L growth": "Theorem 5.3",
    "sec:sims": "Section 6",
    "sec:exp1": "Section 6.1",
    "sec:exp2": "Section 6.2",
    "sec:exp3": "Section 6.3",
    "supp-sec:richardson": "Appendix A",
    "supp-lem:discretization error": "Lemma B.1",
    "supp-lem:smax quad": "Lemma B.2",
    "supp-lem:lienar kernel Gram": "Lemma B.3",
    "supp-lem:rbf kernel Gram": "Lemma B.4",
    "supp-eqn:q": "Equation (15)",
    "supp-lem:rbf kernel Gram ridge": "Lemma B.5",
    "supp-lem:rbf kernel Gram ridge prec": "Lemma B.6",
    "supp-thm:popmini": "Theorem B.7",
    "supp-thm:KRR": "Theorem B.8",
    "supp-eqn:f X ast": "Equation (16)",
    "supp-eqn:f ast": "Equation (17)",
    "supp-eqn:grad train": "Equation (18)",
    "supp-eqn:grad train j": "Equation (19)",
    "supp-eqn:grad test": "Appendix B.4",
    "supp-eqn:grad test fixed": "Equation (21)",
    "supp-eqn:grad test error": "Equation (22)",
    "supp-pf:TFdoPPD": "Appendix C.1",
    "supp-eqn:weights": "Equation (23)",
    "eqn:recur mean": "Equation (24)",
    "eqn:recur var": "Equation (25)",
    "supp-sec:thrm4.1": "Appendix C.2",
    "supp-sec:exp details": "Appendix D",
    "supp-tab:pretraining hyperparameters": "Table 1",
    "supp-sec:exp additional": "Appendix E",
    "supp-tab:lengthscale-crps": "Table 2",
    "supp-tab:hierarchical-gp": "Table 3",
    "supp-fig:exp2 d4-1": "Figure 6",
    "supp-fig:exp2 d4-2": "Figure 7",
    "supp-fig:exp2 d8-1": "Figure 8",
    "supp-fig:exp2 d8-2": "Figure 9",
    "supp-fig:exp2-3": "Figure 10",
    "supp-fig:exp2 d4-1 uni": "Figure 11",
    "supp-fig:exp2 d4-2 uni": "Figure 12",
    "supp-fig:exp2 d8-1 uni": "Figure 13",
    "supp-fig:exp2 d8-2 uni": "Figure 14",
    "supp-sec:real data": "Appendix F",
    "fig:walker": "Figure 15",
}


@checked(label=instance_of(str))
def paper_number(label: str) -> str:
    """What the paper prints for ``label`` ("Theorem 3.1", "Figure 2", "Appendix A"), or "" for a
    label it does not number."""
    return PAPER_NUMBERS.get(label, "")


def check_label(label: str) -> str:
    """``label`` if it is one of the paper's labels; a ValueError naming it otherwise."""
    if not isinstance(label, str) or label not in PAPER_LABELS:
        raise ValueError(
            f"label must be one of the paper's \\label{{}}s (pfntheory.report.labels), "
            f"got {label!r}; put what varies in variant="
        )
    return label
