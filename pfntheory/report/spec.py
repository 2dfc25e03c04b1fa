"""Where the report lives and which notebooks make it up.

The runner passes the output folder and the scale to the notebook kernel through the environment
variables :data:`ENV_OUT` and :data:`ENV_SCALE`; :func:`output_dir` and :func:`scale`
read them back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pfntheory.base._checks import ArgumentTypeError

__all__ = [
    "ROOT",
    "NOTEBOOKS_DIR",
    "DEFAULT_OUT",
    "ENV_OUT",
    "ENV_SCALE",
    "REPORT_SCALES",
    "NotebookSpec",
    "NOTEBOOKS",
    "reading_order",
    "find_spec",
    "output_dir",
    "scale",
]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "reports"
ENV_OUT = "PFNTHEORY_REPORT_DIR"
ENV_SCALE = "PFNTHEORY_SCALE"
#: Sizes of the notebooks' own computations (``pfntheory report --scale``); not the experiments'
#: scales (:data:`pfntheory.infra.config.EXPERIMENT_SCALES`): every notebook reads the committed
#: runs.
REPORT_SCALES = ("quick", "paper")


@dataclass(frozen=True)
class NotebookSpec:
    """One notebook of the report.

    Attributes
    ----------
    name : str
        File stem under ``notebooks/`` (also the stem of its HTML page and JSON results).
    title : str
        Title shown in the index.
    labels : tuple of str
        The paper results (LaTeX labels) the notebook covers.
    needs_training : bool
        Whether it reads trained runs (``reports/runs/``) or case-study results.
    appendix : bool
        Whether it is an appendix off the main path (a check of the pipeline, not a result page):
        the index lists it after every main page, under "Appendix", and its pages are read after
        them (:func:`reading_order`).
    """

    name: str
    title: str
    labels: tuple[str, ...]
    needs_training: bool = False
    appendix: bool = False

    @property
    def beyond_paper(self) -> bool:
        """Whether the page extends the paper rather than checking it (its title says so:
        "Beyond the paper: ..."); the index folds such a part's rows that hold."""
        return self.title.startswith("Beyond the paper")


NOTEBOOKS: tuple[NotebookSpec, ...] = (
    NotebookSpec(
        "01_richardson_construction",
        "Richardson iteration and the construction",
        ("supp-sec:richardson", "supp-thm:KRR", "thm:TFdoPPD", "eqn:recursion prec"),
    ),
    NotebookSpec(
        "02_discretisation_ppd",
        "Discretisation and the PPD bound",
        (
            "supp-lem:discretization error",
            "supp-lem:smax quad",
            "supp-thm:popmini",
            "thm:PPD convergence",
        ),
    ),
    NotebookSpec(
        "03_spectra_generalisation",
        "Gram spectra and generalisation in n",
        (
            "supp-lem:lienar kernel Gram",
            "supp-lem:rbf kernel Gram",
            "supp-lem:rbf kernel Gram ridge",
            "supp-lem:rbf kernel Gram ridge prec",
            "thm:lambda1",
            "thm:cond number",
            "thm:L growth",
            "fig:stepsize",
        ),
    ),
    NotebookSpec(
        "04_trained_experiments",
        "Appendix: pipeline smoke runs (quick scale)",
        (
            "fig:exp1",
            "fig:exp2-1",
            "fig:exp2-2",
            "supp-fig:exp2-3",
            "supp-tab:lengthscale-crps",
            "supp-tab:hierarchical-gp",
        ),
        needs_training=True,
        appendix=True,
    ),
    NotebookSpec(
        "05_case_studies",
        "Real-data case studies",
        ("fig:sacramento", "fig:walker"),
        needs_training=True,
    ),
    NotebookSpec("06_errata", "Errata and ambiguities", ()),
    NotebookSpec(
        "07_cpu_scale",
        "The paper's tasks on a CPU budget",
        ("fig:exp1", "fig:exp2-1", "supp-fig:exp2 d4-1", "supp-fig:exp2 d4-1 uni"),
        needs_training=True,
    ),
    NotebookSpec(
        "08_hierarchical_multihead",
        "Beyond the paper: hierarchical GPs",
        ("thm:TFdoPPD", "supp-tab:hierarchical-gp"),
        needs_training=True,
    ),
    NotebookSpec(
        "09_latent_gp",
        "Beyond the paper: latent GP models",
        ("thm:TFdoPPD", "thm:PPD convergence"),
        needs_training=True,
    ),
    NotebookSpec(
        "10_pfns_baseline",
        "Beyond the paper: a standard PFN under the paper's diagnostics",
        ("fig:exp2-1", "supp-fig:exp2 d8-1 uni"),
        needs_training=True,
    ),
)


def reading_order(specs: Sequence[NotebookSpec] = NOTEBOOKS) -> list[NotebookSpec]:
    """``specs`` (a sequence of :class:`NotebookSpec`) as a reader meets them: the main pages in
    their order, then the appendices."""
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, NotebookSpec) for s in specs):
        raise ArgumentTypeError(f"specs must be a sequence of NotebookSpec, got {specs!r:.80}")
    return [s for s in specs if not s.appendix] + [s for s in specs if s.appendix]


def find_spec(name: str) -> NotebookSpec:
    """The notebook whose name is ``name``, or starts with it (``"01"``, ``"01_richardson"``)."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"name must be a str (a notebook name or prefix), got {name!r}")
    hits = [s for s in NOTEBOOKS if s.name == name] or [
        s for s in NOTEBOOKS if s.name.startswith(name)
    ]
    if len(hits) != 1:
        names = ", ".join(s.name for s in NOTEBOOKS)
        raise ValueError(f"only must name one notebook ({names}), got {name!r}")
    return hits[0]


def output_dir() -> Path:
    """The report's output folder: ``$PFNTHEORY_REPORT_DIR``, else ``reports/`` of the
    repository."""
    return Path(os.environ.get(ENV_OUT) or DEFAULT_OUT)


def scale() -> str:
    """``"quick"`` (default; CPU minutes) or ``"paper"``, from ``$PFNTHEORY_SCALE``."""
    s = os.environ.get(ENV_SCALE) or "quick"
    if s not in REPORT_SCALES:
        raise ValueError(f"{ENV_SCALE} must be 'quick' or 'paper', got {s!r}")
    return s
