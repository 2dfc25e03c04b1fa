"""The verification report: executed notebooks, one per part of the paper, and an index.

``pfntheory report`` (or ``python -m pfntheory.report``) executes every notebook under
``notebooks/`` (jupytext percent-format ``.py`` sources, read with jupytext, run with nbclient),
writes one HTML page per notebook (nbconvert ``HTMLExporter``) and ``reports/index.html``: one row per
paper result with its statement, what was measured, the bound or the paper's number beside ours, and a
verdict, linking to the page that shows it. Any cell error fails the command (nonzero exit).

Notebooks hold no math of their own. They call the claim functions of :mod:`pfntheory.claims`
(the very numbers ``verify/`` asserts on) and hand each :class:`~pfntheory.claims.ClaimResult` to a
:class:`Recorder`, which shows it inline and saves it as JSON into ``reports/results/<notebook>.json``;
the index is built from those JSON files only.

Layout of the output folder (``reports/`` by default)::

    index.html                 one row per paper result
    <notebook>.html            one page per notebook
    figures/<notebook>_*.png   every figure, also embedded in the page
    results/<notebook>.json    the rows of one notebook (written by its Recorder)
    results/_status.json       per-notebook execution status and wall time (written by the runner)

The runner passes the output folder and the scale to the notebook kernel through the environment
variables ``PFNTHEORY_REPORT_DIR`` and ``PFNTHEORY_SCALE``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import html
import importlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .runs import temporary_environ

__all__ = [
    "NOTEBOOKS",
    "NotebookSpec",
    "NotebookRun",
    "Recorder",
    "VERDICTS",
    "verdict_of",
    "output_dir",
    "scale",
    "save_figure",
    "setup_plots",
    "log_axis",
    "optional_import",
    "execute_notebook",
    "build_index",
    "run_report",
    "register",
    "main",
]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "reports"
ENV_OUT = "PFNTHEORY_REPORT_DIR"
ENV_SCALE = "PFNTHEORY_SCALE"

#: The verdicts a row can carry, from best to worst; "pending" means the part is not yet available.
VERDICTS = ("holds", "holds with a caveat", "does not hold", "pending")
_VERDICT_CLASS = {"holds": "ok", "holds with a caveat": "caveat", "does not hold": "fail",
                  "pending": "pending"}


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
    """

    name: str
    title: str
    labels: tuple[str, ...]
    needs_training: bool = False


NOTEBOOKS: tuple[NotebookSpec, ...] = (
    NotebookSpec("01_richardson_construction", "Richardson iteration and the construction",
                 ("supp-sec:richardson", "supp-thm:KRR", "thm:TFdoPPD", "TF^pr")),
    NotebookSpec("02_discretisation_ppd", "Discretisation and the PPD bound",
                 ("supp-lem:discretization error", "supp-lem:smax quad", "supp-thm:popmini",
                  "thm:PPD convergence")),
    NotebookSpec("03_spectra_generalisation", "Gram spectra and generalisation in n",
                 ("supp-lem:lienar kernel Gram", "supp-lem:rbf kernel Gram",
                  "supp-lem:rbf kernel Gram ridge", "supp-lem:rbf kernel Gram ridge prec",
                  "thm:lambda1", "thm:cond number", "thm:L growth", "fig:stepsize")),
    NotebookSpec("04_trained_experiments", "Trained experiments",
                 ("fig:exp1", "fig:exp2-1", "fig:exp2-2", "supp-fig:exp2-3",
                  "supp-tab:lengthscale-crps", "supp-tab:hierarchical-gp"), needs_training=True),
    NotebookSpec("05_case_studies", "Real-data case studies",
                 ("fig:sacramento", "fig:walker"), needs_training=True),
    NotebookSpec("06_errata", "Errata and ambiguities", ()),
)


def _spec(name: str) -> NotebookSpec:
    """The notebook whose name is ``name``, or starts with it (``"01"``, ``"01_richardson"``)."""
    hits = [s for s in NOTEBOOKS if s.name == name] or [s for s in NOTEBOOKS if s.name.startswith(name)]
    if len(hits) != 1:
        names = ", ".join(s.name for s in NOTEBOOKS)
        raise ValueError(f"only must name one notebook ({names}), got {name!r}")
    return hits[0]


# --------------------------------------------------------------------------------------------------
# used inside the notebooks
# --------------------------------------------------------------------------------------------------

def output_dir() -> Path:
    """The report's output folder: ``$PFNTHEORY_REPORT_DIR``, else ``reports/`` of the repository."""
    return Path(os.environ.get(ENV_OUT) or DEFAULT_OUT)


def scale() -> str:
    """``"quick"`` (default; CPU minutes) or ``"paper"``, from ``$PFNTHEORY_SCALE``."""
    s = os.environ.get(ENV_SCALE) or "quick"
    if s not in ("quick", "paper"):
        raise ValueError(f"{ENV_SCALE} must be 'quick' or 'paper', got {s!r}")
    return s


def save_figure(fig, name: str, *, dpi: int = 110) -> Path:
    """Save a matplotlib figure as ``figures/<name>.png`` under :func:`output_dir` and return the path.

    The figure stays open so that the notebook also shows it inline.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name must be a plain file stem, got {name!r}")
    path = output_dir() / "figures" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def setup_plots() -> None:
    """The report's matplotlib style: constrained layout, small legends, light grid."""
    import matplotlib as mpl

    mpl.rcParams.update({
        "figure.constrained_layout.use": True, "figure.dpi": 100, "axes.grid": True,
        "grid.alpha": 0.25, "legend.fontsize": 8, "axes.titlesize": 11, "axes.labelsize": 10,
        "xtick.labelsize": 9, "ytick.labelsize": 9,
    })


def log_axis(ax, which: str = "x", ticks: Sequence[float] | None = None) -> None:
    """Log scale on ``ax``'s ``which`` axis (``"x"``, ``"y"`` or ``"xy"``) with plain-number labels
    (``ticks`` if given) instead of crowded minor labels such as ``2x10^2``."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for w in which:
        axis = {"x": ax.xaxis, "y": ax.yaxis}[w]
        (ax.set_xscale if w == "x" else ax.set_yscale)("log")
        if ticks is not None:
            (ax.set_xticks if w == "x" else ax.set_yticks)(list(ticks))
        fmt = ScalarFormatter()
        fmt.set_scientific(False)
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(NullFormatter())


def optional_import(module: str):
    """Import ``module`` if it exists; return ``None`` if it (or a parent package) is missing.

    Only a missing *module of that name* counts as missing: an error raised while importing a
    module that exists (a bug) propagates, so a broken module fails the notebook instead of being
    reported as pending.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and (module == err.name or module.startswith(err.name + ".")):
            return None
        raise


def verdict_of(holds: bool | None, caveat: str | None = None, verdict: str | None = None) -> str:
    """The verdict of a row.

    An explicit ``verdict`` wins (a notebook may judge that a check which confirms the *true*
    behaviour shows the paper's statement does not hold). Otherwise: ``holds is None`` gives
    ``"pending"``; a false ``holds`` gives ``"does not hold"``; a true one gives ``"holds"``, or
    ``"holds with a caveat"`` when a caveat is given.
    """
    if verdict is not None:
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        return verdict
    if holds is None:
        return "pending"
    if not holds:
        return "does not hold"
    return "holds with a caveat" if caveat else "holds"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "row"


def _finite_or_none(x):
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _scalars(details: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly scalar entries of ``details`` (arrays stay in the notebook, not the index)."""
    out = {}
    for k, v in details.items():
        if isinstance(v, bool) or v is None or isinstance(v, str):
            out[str(k)] = v
        elif isinstance(v, (int, float)) or type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0:
            f = float(v)
            out[str(k)] = f if math.isfinite(f) else str(f)
    return out


@dataclass
class Row:
    """One line of the index: a measured paper result."""

    label: str
    statement: str
    verdict: str
    observed: float | None = None
    bound: float | None = None
    measured: str = ""
    compare: str = "bound"       # what ``bound`` is: "bound" | "paper" | "reference"
    caveat: str = ""
    tolerance: str = ""
    ci: tuple[float, float] | None = None
    notebook: str = ""
    anchor: str = ""
    missing: str = ""            # for pending rows: what is not yet available
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["observed"] = _finite_or_none(self.observed) if self.observed is not None else None
        d["bound"] = _finite_or_none(self.bound) if self.bound is not None else None
        d["ci"] = [float(c) for c in self.ci] if self.ci is not None else None
        return d


class Recorder:
    """Collects the measured rows of one notebook, shows each inline, and saves them as JSON.

    Parameters
    ----------
    notebook : str
        The notebook's name (its file stem); the rows go to ``results/<notebook>.json``.

    Examples
    --------
    >>> rec = Recorder("01_richardson_construction")                      # doctest: +SKIP
    >>> r = rec.check("pfntheory.claims.richardson", "check_admissible_step", rng=rng)
    >>> rec.add(result, caveat="needs eta < 1/(lambda_1 + sigma^2)")
    """

    def __init__(self, notebook: str):
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", notebook):
            raise ValueError(f"notebook must be a plain file stem, got {notebook!r}")
        self.notebook = notebook
        self.rows: list[Row] = []
        self._anchors: set[str] = set()
        self.save()  # an empty file from the start: a notebook that records nothing says so

    # -- adding rows -------------------------------------------------------------------------------
    def _anchor(self, label: str) -> str:
        base = "r-" + _slug(label)
        a, k = base, 2
        while a in self._anchors:
            a, k = f"{base}-{k}", k + 1
        self._anchors.add(a)
        return a

    def add(self, result, *, verdict: str | None = None, caveat: str = "", measured: str = "",
            compare: str = "bound", label: str | None = None, statement: str | None = None,
            show: bool = True):
        """Record one :class:`~pfntheory.claims.ClaimResult` (or a list of them).

        Parameters
        ----------
        result : ClaimResult or sequence of ClaimResult
        verdict : str, optional
            Overrides the verdict derived from ``result.holds`` (see :func:`verdict_of`).
        caveat : str
            Shown beside the verdict; a true ``holds`` with a caveat reads "holds with a caveat".
        measured : str
            What ``result.observed`` is, in a few words (default: ``details["measured"]`` if present).
        compare : {"bound", "paper", "reference"}
            What ``result.bound`` is: the claim's bound, the paper's own number, or a reference value.
        label, statement : str, optional
            Override the result's label / statement (e.g. for an erratum row).

        Returns
        -------
        result
            The argument, unchanged, so that a cell can keep using it.
        """
        if isinstance(result, (list, tuple)):
            for r in result:
                self.add(r, verdict=verdict, caveat=caveat, measured=measured, compare=compare,
                         label=label, statement=statement, show=show)
            return result
        if compare not in ("bound", "paper", "reference"):
            raise ValueError(f"compare must be 'bound', 'paper' or 'reference', got {compare!r}")
        details = dict(getattr(result, "details", {}) or {})
        lab = label or result.label
        row = Row(
            label=lab,
            statement=statement or result.statement,
            verdict=verdict_of(bool(result.holds), caveat, verdict),
            observed=_finite_or_none(result.observed),
            bound=_finite_or_none(result.bound),
            measured=measured or str(details.get("measured", "")),
            compare=compare,
            caveat=caveat,
            tolerance=result.tolerance or "",
            ci=tuple(result.ci) if result.ci is not None else None,
            notebook=self.notebook,
            anchor=self._anchor(lab),
            details=_scalars(details),
        )
        self.rows.append(row)
        self.save()
        if show:
            _display_html(_row_card(row))
        return result

    def pending(self, label: str, statement: str, missing: str, *, show: bool = True) -> None:
        """Record a result that cannot be measured yet, saying plainly what is missing."""
        row = Row(label=label, statement=statement, verdict="pending", missing=missing,
                  notebook=self.notebook, anchor=self._anchor(label))
        self.rows.append(row)
        self.save()
        if show:
            _display_html(_row_card(row))

    def note(self, label: str, statement: str, *, verdict: str, caveat: str = "",
             measured: str = "", observed: float | None = None, bound: float | None = None,
             compare: str = "bound", show: bool = True) -> None:
        """Record a row that is not a single ClaimResult (e.g. an erratum judged from several)."""
        row = Row(label=label, statement=statement, verdict=verdict_of(None, caveat, verdict),
                  observed=_finite_or_none(observed), bound=_finite_or_none(bound),
                  measured=measured, compare=compare, caveat=caveat, notebook=self.notebook,
                  anchor=self._anchor(label))
        self.rows.append(row)
        self.save()
        if show:
            _display_html(_row_card(row))

    def check(self, module: str, function: str, *args, label: str, statement: str,
              verdict: str | None = None, caveat: str = "", measured: str = "",
              compare: str = "bound", show: bool = True, **kwargs):
        """Call ``module.function(*args, **kwargs)`` and record what it returns.

        If the module or the function does not exist yet, record a pending row for ``label``
        (``statement`` is what the paper claims) and return ``None``; errors raised *by* the
        function propagate and fail the notebook.
        """
        mod = optional_import(module)
        fn = getattr(mod, function, None) if mod is not None else None
        if fn is None:
            what = f"{module}.{function}" if mod is not None else module
            self.pending(label, statement, f"{what} is not available yet", show=show)
            return None
        result = fn(*args, **kwargs)
        self.add(result, verdict=verdict, caveat=caveat, measured=measured, compare=compare,
                 show=show)
        return result

    # -- output ------------------------------------------------------------------------------------
    def save(self) -> Path:
        """Write ``results/<notebook>.json`` under :func:`output_dir` (atomically)."""
        path = output_dir() / "results" / f"{self.notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"notebook": self.notebook, "scale": scale(),
                   "rows": [r.to_dict() for r in self.rows]}
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1, allow_nan=False))
        tmp.replace(path)
        return path

    def table(self):
        """The rows so far as a :class:`pandas.DataFrame` (for display at the end of a notebook)."""
        import pandas as pd

        return pd.DataFrame([{"result": r.label, "verdict": r.verdict, "measured": r.measured,
                              "observed": r.observed, "bound / paper": r.bound,
                              "is": r.compare,
                              "caveat / missing": r.caveat or r.missing} for r in self.rows])


def _display_html(markup: str) -> None:
    try:
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover - IPython is installed with the report extra
        print(re.sub(r"<[^>]+>", " ", markup))
        return
    display(HTML(markup))


# --------------------------------------------------------------------------------------------------
# HTML rendering
# --------------------------------------------------------------------------------------------------

def _fmt(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:.4g}"


def _ci_brackets(observed, ci) -> bool:
    """Show a CI beside ``observed`` only if it brackets it (a check may attach the CI of a
    different statistic, e.g. of a mean slope beside a worst-case ratio)."""
    if not ci or observed is None:
        return False
    return float(ci[0]) <= float(observed) <= float(ci[1])


_COMPARE_WORD = {"bound": "bound", "paper": "paper", "reference": "ref."}


def _badge(verdict: str) -> str:
    cls = _VERDICT_CLASS.get(verdict, "pending")
    return f'<span class="verdict v-{cls}">{html.escape(verdict)}</span>'


def _row_card(row: Row) -> str:
    """The inline card a Recorder shows in the notebook (its id is the index's link target)."""
    colour = {"ok": "#1a7f37", "caveat": "#9a6700", "fail": "#cf222e", "pending": "#57606a"}[
        _VERDICT_CLASS[row.verdict]]
    parts = [f'<b>{html.escape(row.label)}</b> &mdash; {html.escape(row.statement)}']
    if row.verdict == "pending":
        parts.append(f"<i>pending: {html.escape(row.missing)}</i>")
    else:
        meas = html.escape(row.measured) if row.measured else "observed"
        ci = (f" (CI {_fmt(row.ci[0])} to {_fmt(row.ci[1])})"
              if _ci_brackets(row.observed, row.ci) else "")
        parts.append(f"{meas}: <b>{_fmt(row.observed)}</b>{ci}; "
                     f"{_COMPARE_WORD[row.compare]}: <b>{_fmt(row.bound)}</b>")
        if row.tolerance:
            parts.append(f"<small>tolerance: {html.escape(row.tolerance)}</small>")
    if row.caveat:
        parts.append(f"<i>caveat: {html.escape(row.caveat)}</i>")
    body = "<br>".join(parts)
    return (f'<div id="{row.anchor}" style="border-left:5px solid {colour};padding:4px 10px;'
            f'margin:6px 0;background:#f6f8fa;font-family:sans-serif;font-size:13px">'
            f'<span style="color:{colour};font-weight:bold;text-transform:uppercase">'
            f'{html.escape(row.verdict)}</span><br>{body}</div>')


_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px 32px;color:#1f2328;
     max-width:1400px}
h1{font-size:24px;margin-bottom:4px} h2{font-size:18px;margin-top:28px}
.sub{color:#57606a;margin-top:0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #d0d7de;padding:5px 8px;vertical-align:top;text-align:left}
th{background:#f6f8fa;position:sticky;top:0}
tr.part td{background:#eef2f6;font-weight:600;font-size:14px;border-top:2px solid #8c959f}
td.num{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;white-space:nowrap}
td.label{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;white-space:nowrap}
.verdict{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;font-weight:600;
         white-space:nowrap}
.v-ok{background:#dafbe1;color:#116329} .v-caveat{background:#fff8c5;color:#7d4e00}
.v-fail{background:#ffebe9;color:#a40e26} .v-pending{background:#eaeef2;color:#57606a}
.caveat{color:#7d4e00;font-size:12px} .missing{color:#57606a;font-size:12px;font-style:italic}
.summary span{margin-right:14px}
.failed{background:#ffebe9;border:1px solid #cf222e;padding:8px 12px;border-radius:6px}
small{color:#57606a}
"""


def _load_results(out_dir: Path) -> dict[str, dict]:
    res = {}
    for p in sorted((out_dir / "results").glob("*.json")):
        if p.name.startswith("_"):
            continue
        data = json.loads(p.read_text())
        res[data.get("notebook", p.stem)] = data
    return res


def _load_status(out_dir: Path) -> dict[str, dict]:
    p = out_dir / "results" / "_status.json"
    return json.loads(p.read_text()) if p.exists() else {}


def build_index(out_dir: str | os.PathLike | None = None) -> Path:
    """Write ``index.html`` from ``results/*.json`` (and ``results/_status.json``) in ``out_dir``.

    Parameters
    ----------
    out_dir : path, optional
        The report folder (default :func:`output_dir`).

    Returns
    -------
    Path
        The path of ``index.html``.
    """
    out_dir = Path(out_dir) if out_dir is not None else output_dir()
    results = _load_results(out_dir)
    status = _load_status(out_dir)
    specs = list(NOTEBOOKS) + [NotebookSpec(n, n, ()) for n in results
                               if n not in {s.name for s in NOTEBOOKS}]

    counts = dict.fromkeys(VERDICTS, 0)
    body_rows: list[str] = []
    failed: list[str] = []
    for spec in specs:
        st = status.get(spec.name, {})
        page = f"{spec.name}.html"
        has_page = (out_dir / page).exists()
        title = html.escape(spec.title)
        link = f'<a href="{page}">{title}</a>' if has_page else title
        extra = ""
        if st.get("ok") is False:
            failed.append(spec.name)
            extra = ' &mdash; <span class="verdict v-fail">notebook failed</span>'
        elif st.get("seconds") is not None:
            extra = f' <small>({st["seconds"]:.0f} s)</small>'
        body_rows.append(f'<tr class="part"><td colspan="6">{link}{extra}</td></tr>')
        rows = results.get(spec.name, {}).get("rows", [])
        if spec.name not in results:
            body_rows.append('<tr><td colspan="6" class="missing">not executed yet: run '
                             f'<code>pfntheory report --only {spec.name}</code></td></tr>')
            continue
        if not rows:
            body_rows.append('<tr><td colspan="6" class="missing">no results recorded</td></tr>')
        for r in rows:
            v = r.get("verdict", "pending")
            counts[v] = counts.get(v, 0) + 1
            anchor = r.get("anchor") or ""
            lab = html.escape(r["label"])
            lab = f'<a href="{page}#{anchor}">{lab}</a>' if has_page and anchor else lab
            if v == "pending":
                meas = f'<span class="missing">{html.escape(r.get("missing", ""))}</span>'
                ours = theirs = ""
            else:
                meas = html.escape(r.get("measured") or "")
                ours = _fmt(r.get("observed"))
                if _ci_brackets(r.get("observed"), r.get("ci")):
                    ours += f'<br><small>CI [{_fmt(r["ci"][0])}, {_fmt(r["ci"][1])}]</small>'
                theirs = _fmt(r.get("bound"))
                if r.get("bound") is not None:
                    theirs += f' <small>{_COMPARE_WORD.get(r.get("compare", "bound"), "")}</small>'
            cav = (f'<br><span class="caveat">{html.escape(r["caveat"])}</span>'
                   if r.get("caveat") else "")
            body_rows.append(
                f'<tr><td class="label">{lab}</td><td>{html.escape(r["statement"])}</td>'
                f'<td>{meas}</td><td class="num">{ours}</td><td class="num">{theirs}</td>'
                f'<td>{_badge(v)}{cav}</td></tr>')

    summary = " ".join(f'<span>{_badge(v)} {counts.get(v, 0)}</span>' for v in VERDICTS)
    banner = ""
    if failed:
        banner = ('<p class="failed"><b>Some notebooks failed:</b> '
                  + ", ".join(f'<a href="{n}.html">{n}</a>' for n in failed)
                  + ". Their rows may be incomplete.</p>")
    when = status.get("_meta", {}).get("finished") or _dt.datetime.now().isoformat(timespec="seconds")
    sc = status.get("_meta", {}).get("scale", "quick")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>pfntheory — verification report</title><style>{_CSS}</style></head>
<body>
<h1>Transformers Can Learn Posterior Predictive Distributions In-Context — verification report</h1>
<p class="sub">Each row is one result of the paper (by its LaTeX label), measured by
<code>pfntheory.claims</code> (the numbers <code>verify/</code> asserts on) or read from the trained runs.
“ours” is the measured quantity, beside it the bound it must respect or the paper's own number.
Click a label to see the figure or table that shows it. Scale: <b>{html.escape(sc)}</b>; built {html.escape(when)}.</p>
<p class="summary">{summary}</p>
{banner}
<table>
<thead><tr><th>result</th><th>statement</th><th>what was measured</th><th>ours</th>
<th>bound / paper</th><th>verdict</th></tr></thead>
<tbody>
{chr(10).join(body_rows)}
</tbody></table>
<p><small>Verdicts: <b>holds</b> — every measured instance satisfied the claim within the stated
tolerance; <b>holds with a caveat</b> — it holds, but only as qualified beside it; <b>does not hold</b>
— the claim as written fails (see the notebook and “Errata and ambiguities”); <b>pending</b> — the
code or the runs it needs are not available yet.</small></p>
</body></html>
"""
    path = out_dir / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path


# --------------------------------------------------------------------------------------------------
# executing notebooks
# --------------------------------------------------------------------------------------------------

@dataclass
class NotebookRun:
    """The outcome of executing one notebook."""

    name: str
    ok: bool
    seconds: float
    html: str | None = None
    error: str = ""


def _read_notebook(path: Path):
    import jupytext

    nb = jupytext.read(path)
    for cell in nb.cells:  # sources are committed without outputs; make sure of it
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def execute_notebook(name: str, out_dir: str | os.PathLike | None = None, *,
                     timeout: int = 600, scale_: str = "quick",
                     notebooks_dir: str | os.PathLike | None = None,
                     write_html: bool = True) -> NotebookRun:
    """Execute ``notebooks/<name>.py`` and write ``<out_dir>/<name>.html``.

    Parameters
    ----------
    name : str
        Notebook stem (or a unique prefix such as ``"01"``) when ``notebooks_dir`` is the default;
        any stem of a ``.py`` file in ``notebooks_dir`` otherwise.
    out_dir : path, optional
        Report folder (default ``reports/``).
    timeout : int
        Per-cell time limit in seconds (nbclient's ``timeout``).
    scale_ : {"quick", "paper"}
        Passed to the kernel as ``$PFNTHEORY_SCALE``.
    notebooks_dir : path, optional
        Where the ``.py`` sources are (default ``notebooks/`` of the repository).
    write_html : bool
        Whether to export the executed notebook to HTML (also done when a cell fails).

    Returns
    -------
    NotebookRun
        ``ok`` is false if any cell raised; ``error`` then holds the error's message.
    """
    import nbclient
    from nbclient.exceptions import CellExecutionError

    out_dir = Path(out_dir) if out_dir is not None else DEFAULT_OUT
    if notebooks_dir is None:
        nbdir = NOTEBOOKS_DIR
        name = _spec(name).name if not (nbdir / f"{name}.py").exists() else name
    else:
        nbdir = Path(notebooks_dir)
    src = nbdir / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook source {src}")
    if scale_ not in ("quick", "paper"):
        raise ValueError(f"scale_ must be 'quick' or 'paper', got {scale_!r}")
    if not (isinstance(timeout, int) and timeout > 0):
        raise ValueError(f"timeout must be a positive integer, got {timeout!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = out_dir / "results" / f"{name}.json"
    if stale.exists():
        stale.unlink()  # a failing notebook must not leave the rows of an earlier run behind

    nb = _read_notebook(src)
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=False,
        resources={"metadata": {"path": str(nbdir)}})
    ok, error = True, ""
    t0 = time.perf_counter()
    with temporary_environ({ENV_OUT: str(out_dir.resolve()), ENV_SCALE: scale_, "MPLBACKEND": "Agg"}):
        try:
            client.execute()
        except CellExecutionError as err:
            ok, error = False, str(err)
        except Exception as err:  # kernel died, timeout: a failure of this notebook all the same
            ok, error = False, f"{type(err).__name__}: {err}"
    seconds = time.perf_counter() - t0
    html_path = _export_html(nb, out_dir / f"{name}.html", ok=ok, seconds=seconds) if write_html else None
    return NotebookRun(name=name, ok=ok, seconds=seconds,
                       html=str(html_path) if html_path else None, error=error)


def _export_html(nb, path: Path, *, ok: bool, seconds: float) -> Path:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.from_dict(nb)  # a copy: the header cell is not part of the notebook
    status = "" if ok else " &mdash; **this notebook failed; see the traceback below**"
    header = nbformat.v4.new_markdown_cell(
        f"[&larr; verification index](index.html) &nbsp;·&nbsp; executed in {seconds:.0f} s{status}")
    nb.cells.insert(0, header)
    exporter = HTMLExporter(template_name="lab")
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb)
    path.write_text(body)
    return path


def _retrain(scale_: str) -> None:
    """Bring the trained runs up to date before the notebooks read them: every experiment's sweep
    (idempotent: it trains what is missing and resumes what was killed) and every case study whose
    ``results.json`` is missing. To redo a committed run, delete its directory first."""
    from pfntheory.casestudy.run import run_casestudy
    from pfntheory.experiments.runner import run_sweep

    run_sweep(scale=scale_)
    for name in ("sacramento", "walker"):
        if not (DEFAULT_OUT / "casestudy" / name / "results.json").is_file():
            run_casestudy(name, scale_)


def run_report(only: Sequence[str] | None = None, *, retrain: bool = False, timeout: int = 600,
               scale_: str = "quick", out_dir: str | os.PathLike | None = None,
               notebooks_dir: str | os.PathLike | None = None, progress: bool = True) -> int:
    """Execute the notebooks, write their pages and the index; return the exit status (0 = ok).

    Parameters
    ----------
    only : sequence of str, optional
        Names (or unique prefixes) of the notebooks to execute; the index is still built from every
        ``results/*.json`` present.
    retrain : bool
        First bring the trained runs up to date (:func:`_retrain`).
    timeout : int
        Per-cell time limit in seconds.
    scale_ : {"quick", "paper"}
    out_dir : path, optional
        Report folder (default ``reports/``).
    notebooks_dir : path, optional
        Folder of jupytext sources to execute instead of ``notebooks/`` (all of its ``.py`` files).
    """
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT
    if notebooks_dir is None:
        specs = [_spec(n) for n in only] if only else list(NOTEBOOKS)
    else:  # any folder of jupytext sources (used by the tests)
        stems = sorted(p.stem for p in Path(notebooks_dir).glob("*.py"))
        specs = [NotebookSpec(s, s, ()) for s in stems
                 if not only or any(s == o or s.startswith(o) for o in only)]
        if not specs:
            raise ValueError(f"notebooks_dir: no notebook matches {only!r} in {notebooks_dir}")
    if retrain:
        _retrain(scale_)
    status_path = out / "results" / "_status.json"
    status = _load_status(out)
    bad = 0
    t_all = time.perf_counter()
    for spec in specs:
        if progress:
            print(f"[report] {spec.name} ...", end=" ", flush=True)
        run = execute_notebook(spec.name, out, timeout=timeout, scale_=scale_,
                               notebooks_dir=notebooks_dir)
        status[spec.name] = {"ok": run.ok, "seconds": round(run.seconds, 1), "error": run.error[-2000:]}
        status_path.parent.mkdir(parents=True, exist_ok=True)
        status_path.write_text(json.dumps(status, indent=1))
        if progress:
            print(f"{'ok' if run.ok else 'FAILED'} ({run.seconds:.0f} s)", flush=True)
        if not run.ok:
            bad += 1
            print(run.error[-3000:], file=sys.stderr)
    status["_meta"] = {"finished": _dt.datetime.now().isoformat(timespec="seconds"),
                       "scale": scale_, "seconds": round(time.perf_counter() - t_all, 1)}
    status_path.write_text(json.dumps(status, indent=1))
    index = build_index(out)
    if progress:
        print(f"[report] index: {index}")
    return 1 if bad else 0


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------

def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--retrain", action="store_true",
                   help="first run every experiment's sweep and the case studies (trains what is "
                        "missing, resumes what was killed; delete a run directory to redo it)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="execute only this notebook (name or unique prefix, e.g. 01); repeatable")
    p.add_argument("--timeout", type=int, default=600, metavar="S",
                   help="per-cell time limit in seconds (default 600)")
    p.add_argument("--scale", choices=("quick", "paper"), default="quick",
                   help="sizes used by the notebooks and which runs they read (default quick)")
    p.add_argument("--out", default=None, metavar="DIR", help="report folder (default reports/)")
    p.add_argument("--notebooks", default=None, metavar="DIR",
                   help="execute the jupytext sources in DIR instead of notebooks/ (for testing)")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    return run_report(args.only, retrain=args.retrain, timeout=args.timeout, scale_=args.scale,
                      out_dir=args.out, notebooks_dir=args.notebooks)


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to a CLI's ``subparsers``; it sets ``func`` (returns exit code).

    Usage in a CLI: ``args = parser.parse_args(); sys.exit(args.func(args))``.
    """
    p = subparsers.add_parser("report", help="execute the notebooks and build reports/index.html",
                              description=__doc__.splitlines()[0])
    _add_arguments(p)
    return p


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pfntheory.report",
                                     description=__doc__.splitlines()[0])
    _add_arguments(parser)
    args = parser.parse_args(None if argv is None else list(argv))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
