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
