"""The verification report: executed notebooks, one per part of the paper, and an index.

``pfntheory report`` executes every notebook under ``notebooks/`` (jupytext percent-format ``.py``
sources, run with nbclient), writes one HTML page per notebook and ``reports/index.html``: one row
per paper result with what was measured, the tolerance, our number beside what it is compared with
and the paper's number, and a verdict of one of :data:`VERDICTS`. Any cell error fails the command.

One module per job:

- :mod:`.spec` -- the notebooks of the report, the output folder and the scale;
- :mod:`.labels` -- the paper's ``\\label{}``s, the only names a row may carry, and the numbers
  LaTeX prints for them (:mod:`.numbering` derives those from ``paper.tex``);
- :mod:`.rows` -- a row of the report: the verdicts it can carry and what each means;
- :mod:`.recorder` -- the notebooks' API: :class:`Recorder` and how a verdict is decided;
- :mod:`.plots` -- figure style, saving and showing, learning curves; a figure that would not
  read (an axes under 15% of its width, colliding tick labels, maths as plain text) is refused;
- :mod:`.cpu` -- the ``cpu``-scale runs of designs still being swept: grids with holes, plateau
  status per run, fig:exp1 claims on the cells present (the page ``07_cpu_scale``);
- :mod:`.mathtext` -- ASCII maths typeset as plain HTML (offline), and with mathtext in figures;
- :mod:`.fold` -- per-run tables, figures and long derivations collapsed under ``<details>``;
- :mod:`.screens` -- a page's length in screens at 1024 x 768 in headless Chromium (a developer's
  tool: ``pfntheory screens reports/*.html``; its tests skip without Chromium);
- :mod:`.tables` -- tables as a reader sees them (labelled columns, rounded numbers, no index);
- :mod:`.citation` -- the paper's BibTeX and the commit the report was built from;
- :mod:`.html` -- a row as HTML (the inline cards), number formatting, the pages' style;
- :mod:`.summary` -- the findings box at the top of the index;
- :mod:`.index` -- the index page: one line per result, details one click away;
- :mod:`.paper_tables` -- the paper's printed tables beside ours, cell by cell;
- :mod:`.guard` -- a rebuild into the committed ``reports/`` that would lose rows refuses;
- :mod:`.tallies` -- the counts README.md and docs/findings.md state, generated from the rows;

Executing the notebooks, exporting their pages and retraining is the pipelines layer's
(:mod:`pfntheory.pipelines.report_run`), above this package; the ``report`` subcommand is
:mod:`pfntheory.cli.report`.

Layout of the output folder (``reports/`` by default)::

    index.html                 one row per paper result, verdicts counted by kind
    <notebook>.html            one page per notebook, every figure inline
    figures/<notebook>_*.png   every figure as a file
    results/<notebook>.json    the rows of one notebook (written by its Recorder)
    results/_status.json       per-notebook execution status (no times)
"""

from pfntheory.infra.convergence import read_learning_curve

from . import plots
from .fold import FOLD_END, fold, fold_start_md
from .index import build_index
from .labels import PAPER_LABELS, PAPER_NUMBERS, check_label, paper_number
from .mathtext import markdown_math, math_html
from .paper_tables import paper_table, pretraining_beside, published_beside
from .plots import (  # noqa: F401 (re-exported through plots.__all__ below)
    log_axis,
    plot_learning_curves,
    save_figure,
    setup_plots,
    show_png,
)
from .recorder import Recorder, convergence_of, decide_verdict, verdict_of
from .rows import PENDING, VERDICT_DEFINITIONS, VERDICTS, Row, experiment_tallies
from .spec import (
    DEFAULT_OUT,
    ENV_OUT,
    ENV_SCALE,
    NOTEBOOKS,
    NOTEBOOKS_DIR,
    ROOT,
    NotebookSpec,
    find_spec,
    output_dir,
    scale,
)
from .tables import Note, Table, note, table

__all__ = [
    "fold",
    "fold_start_md",
    "FOLD_END",
    "experiment_tallies",
    "NOTEBOOKS",
    "NOTEBOOKS_DIR",
    "DEFAULT_OUT",
    "ROOT",
    "ENV_OUT",
    "ENV_SCALE",
    "NotebookSpec",
    "find_spec",
    "output_dir",
    "scale",
    "PAPER_LABELS",
    "PAPER_NUMBERS",
    "paper_number",
    "check_label",
    "Recorder",
    "Row",
    "VERDICTS",
    "VERDICT_DEFINITIONS",
    "PENDING",
    "verdict_of",
    "decide_verdict",
    "convergence_of",
    "read_learning_curve",
    "math_html",
    "markdown_math",
    "build_index",
    "table",
    "note",
    "Note",
    "paper_table",
    "published_beside",
    "pretraining_beside",
    "Table",
]
# The plotting helpers, named once in plots.__all__.
__all__ += plots.__all__
