"""The report names results only by the paper's ``\\label{}``s (``pfntheory.report.labels``).

The constant list must equal the labels of ``paper.tex`` (so a typo in the list, or a label the
paper renames, fails here), and every row of the committed report, every notebook and every
experiment definition (``Experiment.labels``) must carry one of them (variants such as a dimension
or a design go in the row's ``variant`` field)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from pfntheory import report
from pfntheory.experiments.definitions import EXPERIMENTS

PAPER = Path(__file__).resolve().parents[2] / "shared" / "paper" / "paper.tex"
needs_paper = pytest.mark.skipif(
    not PAPER.is_file(), reason=f"{PAPER} not found (paper not shipped)"
)


def _paper_labels() -> list[str]:
    return re.findall(r"\\label\{([^}]*)\}", PAPER.read_text())


@needs_paper
def test_label_constants_are_the_papers():
    assert list(report.PAPER_LABELS) == _paper_labels()


@needs_paper
def test_every_committed_row_label_is_a_paper_label():
    labels = set(_paper_labels())
    files = sorted((report.DEFAULT_OUT / "results").glob("[0-9]*.json"))
    assert files, "no committed report results (run `pfntheory report`)"
    bad = {
        (f.stem, r["label"])
        for f in files
        for r in json.loads(f.read_text())["rows"]
        if r["label"] not in labels
    }
    assert not bad, f"rows whose label is not a \\label{{}} of paper.tex: {sorted(bad)}"


def test_notebook_labels_are_paper_labels():
    """The labels each notebook declares it covers are paper labels too."""
    for spec in report.NOTEBOOKS:
        for lab in spec.labels:
            assert lab in report.PAPER_LABELS, (spec.name, lab)


def test_check_label_refuses_free_text():
    with pytest.raises(ValueError, match="label"):
        report.check_label("TF^pr")
    assert report.check_label("thm:TFdoPPD") == "thm:TFdoPPD"


def _non_paper_labels(experiments) -> list[tuple[str, str]]:
    """``(experiment, label)`` for every label of ``experiments`` that is not a paper label."""
    return [
        (e.name, lab) for e in experiments for lab in e.labels if lab not in report.PAPER_LABELS
    ]


def test_experiment_labels_are_paper_labels():
    """Every label an experiment says it reproduces (``Experiment.labels``) is a paper label."""
    assert EXPERIMENTS and all(e.labels for e in EXPERIMENTS.values())
    assert _non_paper_labels(EXPERIMENTS.values()) == []


def test_experiment_label_check_rejects_an_unknown_label():
    """The check above can fail: an experiment carrying a label the paper lacks is named."""
    exp = next(iter(EXPERIMENTS.values()))
    bad = dataclasses.replace(exp, labels=(*exp.labels, "fig:no such figure"))
    assert _non_paper_labels([bad]) == [(exp.name, "fig:no such figure")]


# -- the numbers LaTeX prints -------------------------------------------------------------------


@needs_paper
def test_paper_numbers_are_what_latex_prints_for_the_paper():
    """The committed map (the report never reads the paper) equals a fresh numbering of paper.tex,
    and spot checks against the paper's own cross-references hold."""
    from pfntheory.report.numbering import number_labels

    assert report.PAPER_NUMBERS == number_labels(PAPER.read_text())
    assert set(report.PAPER_NUMBERS) == set(report.PAPER_LABELS)
    assert report.PAPER_NUMBERS["thm:TFdoPPD"] == "Theorem 3.1"
    assert report.PAPER_NUMBERS["supp-lem:lienar kernel Gram"] == "Lemma B.3"
    assert report.PAPER_NUMBERS["supp-tab:lengthscale-crps"] == "Table 2"
    assert report.PAPER_NUMBERS["fig:walker"] == "Figure 15"


def test_numbering_follows_latex_rules():
    """Theorem counter per section and shared with lemmas, lettered appendix, figures and tables by
    their caption, align rows without \\nonumber, a nested split as one row, starred sections and
    environments unnumbered."""
    from pfntheory.report.numbering import number_labels

    tex = r"""
\newtheorem{theorem}{Theorem}[section]
\newtheorem{lemma}[theorem]{Lemma}
\begin{document}
\section{One}\label{s1}
\begin{theorem}\label{t1} x \end{theorem}
\begin{lemma}[named]\label{l1} x \end{lemma}
\begin{equation}\label{e1} a \end{equation}
\begin{align}
a \nonumber \\
b \label{e2} \\
\begin{split} c \\ d \label{e3} \end{split}
\end{align}
\begin{align*} x \\ y \end{align*}
\begin{figure}\label{fbefore}\caption{A {nested} caption}\label{f1}\end{figure}
\section*{Unnumbered}
\section{Two}\label{s2}
\subsection{Sub}\label{ss}
\begin{theorem}\label{t2} x \end{theorem}
\begin{table}\caption{T}\label{tab1}\end{table}
\appendix
\section{Supp}\label{a}
\subsection{Supp sub}\label{ab}
\begin{lemma}\label{la} % \label{commented}
x \end{lemma}
\begin{figure*}\caption{F}\label{f2}\end{figure*}
\begin{align}\label{e4} z \end{align}
\end{document}
"""
    assert number_labels(tex) == {
        "s1": "Section 1",
        "t1": "Theorem 1.1",
        "l1": "Lemma 1.2",
        "e1": "Equation (1)",
        "e2": "Equation (2)",
        "e3": "Equation (3)",
        "fbefore": "Section 1",
        "f1": "Figure 1",
        "s2": "Section 2",
        "ss": "Section 2.1",
        "t2": "Theorem 2.1",
        "tab1": "Table 1",
        "a": "Appendix A",
        "ab": "Appendix A.1",
        "la": "Lemma A.1",
        "f2": "Figure 2",
        "e4": "Equation (4)",
    }


def test_numbering_refuses_unbalanced_environments():
    from pfntheory.report.numbering import number_labels

    with pytest.raises(ValueError, match="closes"):
        number_labels(r"\begin{theorem}\end{lemma}")


def test_paper_number_of_every_label():
    """Every label has a number (rows show it beside the label); unknown labels give ""."""
    assert all(report.paper_number(lab) for lab in report.PAPER_LABELS)
    assert report.paper_number("no such label") == ""
