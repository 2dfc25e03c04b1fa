"""Executing the notebooks (jupytext sources, nbclient) and writing their pages (nbconvert).

Each page is self-contained and offline: figures are embedded PNGs (the kernel runs matplotlib's
inline backend, so every ``plt.show()`` leaves an image beside its claim), maths is plain HTML
(:mod:`.mathtext`), and no script or style sheet is fetched from the network. Code cells and the
kernel's stderr are folded under ``<details>``; each page opens with a table of contents. A page's
bytes depend only on the notebook and what it reads (no wall times, time stamps or random cell ids),
so rebuilding from the same runs changes nothing.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pfntheory.report.spec as spec
from pfntheory.infra.runs import CorruptFileError, temporary_environ
from pfntheory.report.citation import build_stamp, stamp_html
from pfntheory.report.fold import FOLD_CSS, apply_folds
from pfntheory.report.guard import committed_rows, degraded, rebuild_blockers, writes_committed
from pfntheory.report.html import CSS
from pfntheory.report.index import build_index
from pfntheory.report.mathtext import markdown_math
from pfntheory.report.tallies import page_commits
from pfntheory.report.tallies import write as write_generated

__all__ = [
    "NotebookRun",
    "RebuildRefused",
    "execute_notebook",
    "export_html",
    "run_report",
    "retrain",
    "KERNEL_ENV",
]

#: Environment of the notebook kernel besides the output folder and the scale: the inline backend
#: (``plt.show()`` emits the figure into the page) and no progress bars (a static page cannot
#: animate them; without ipywidgets tqdm.auto would print a TqdmWarning instead).
#: ``PYTHONWARNINGS`` silences the one warning tqdm.auto prints on import without ipywidgets
#: (matched by its message, so that no module is imported to parse the filter).
KERNEL_ENV = {
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "TQDM_DISABLE": "1",
    "PYTHONWARNINGS": "ignore:IProgress not found",
}

_TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block extra_css %}<style type="text/css">{{ resources.pfn_css }}</style>{% endblock extra_css %}
{% block input_group -%}
<details class="code"><summary>code</summary>
{{ super() }}
</details>
{%- endblock input_group %}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
alt="{{ output | get_metadata('alt', 'image/png') | escape_html }}"
{%- set width=output | get_metadata('width', 'image/png') -%}
{%- if width is not none %}
width={{ width | escape_html }}
{%- endif %}
{%- set height=output | get_metadata('height', 'image/png') -%}
{%- if height is not none %}
height={{ height | escape_html }}
{%- endif %}
>
</div>
{%- endblock data_png %}
{% block stream_stderr -%}
<details class="log"><summary>log (stderr)</summary>
{{ super() }}
</details>
{%- endblock stream_stderr %}
"""


@dataclass
class NotebookRun:
    """The outcome of executing one notebook (``seconds`` is for the console, never written)."""

    name: str
    ok: bool
    seconds: float
    html: str | None = None
    error: str = ""


def _read_notebook(path: Path):
    import jupytext

    nb = jupytext.read(path)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"  # jupytext draws random ids; the page must not change between builds
        if cell.cell_type == "code":  # sources are committed without outputs; make sure of it
            cell.outputs = []
            cell.execution_count = None
    return nb


#: Kernel starts tried before a notebook fails for a kernel that never answered: jupyter_client
#: picks free TCP ports and the kernel binds them afterwards, so a kernel started at the same
#: moment by another process (two notebooks under ``pytest -n``, a render beside the tests) can
#: take one in between ("Address already in use", the kernel dies before its first reply). Only
#: a kernel that ran no cell is started again; a notebook's own failure is never retried.
KERNEL_START_TRIES = 3


def _kernel_never_started(err: Exception, nb) -> bool:
    """Whether ``err`` is a kernel that died before its first reply, with no cell of ``nb`` run."""
    ran = any(c.get("execution_count") for c in nb.cells if c.get("cell_type") == "code")
    return not ran and "Kernel died before replying to kernel_info" in str(err)


def execute_notebook(
    name: str,
    out_dir: str | os.PathLike | None = None,
    *,
    timeout: int = 600,
    scale_: str = "quick",
    notebooks_dir: str | os.PathLike | None = None,
    write_html: bool = True,
) -> NotebookRun:
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

    out_dir = Path(out_dir) if out_dir is not None else spec.DEFAULT_OUT
    if notebooks_dir is None:
        nbdir = spec.NOTEBOOKS_DIR
        name = spec.find_spec(name).name if not (nbdir / f"{name}.py").exists() else name
    else:
        nbdir = Path(notebooks_dir)
    src = nbdir / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook source {src}")
    if scale_ not in spec.REPORT_SCALES:
        raise ValueError(f"scale_ must be 'quick' or 'paper', got {scale_!r}")
    if not (isinstance(timeout, int) and timeout > 0):
        raise ValueError(f"timeout must be a positive integer, got {timeout!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in (
        out_dir / "results" / f"{name}.json",
        out_dir / "results" / f"_paper_{name}.json",
    ):
        if stale.exists():
            stale.unlink()  # a failing notebook must not leave the rows of an earlier run behind

    ok, error = True, ""
    t0 = time.perf_counter()
    with temporary_environ(
        {spec.ENV_OUT: str(out_dir.resolve()), spec.ENV_SCALE: scale_, **KERNEL_ENV}
    ):
        for attempt in range(1, KERNEL_START_TRIES + 1):
            nb = _read_notebook(src)
            client = nbclient.NotebookClient(
                nb,
                timeout=timeout,
                # a cell's last outputs can reach the client after its reply on a loaded machine:
                # wait for them as long as for the cell, and fail rather than write a page
                # without them
                iopub_timeout=timeout,
                raise_on_iopub_timeout=True,
                kernel_name="python3",
                allow_errors=False,
                resources={"metadata": {"path": str(nbdir)}},
            )
            ok, error = True, ""
            try:
                client.execute()
            except CellExecutionError as err:
                ok, error = False, str(err)
            except (
                Exception
            ) as err:  # kernel died, timeout: a failure of this notebook all the same
                ok, error = False, f"{type(err).__name__}: {err}"
                if _kernel_never_started(err, nb) and attempt < KERNEL_START_TRIES:
                    continue  # a port another process took between pick and bind: start again
            break
    seconds = time.perf_counter() - t0
    html_path = export_html(nb, out_dir / f"{name}.html", ok=ok) if write_html else None
    return NotebookRun(
        name=name, ok=ok, seconds=seconds, html=str(html_path) if html_path else None, error=error
    )


_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$", re.M)


def _anchored(nb):
    """A copy of ``nb`` with typeset maths in its Markdown, an anchor before every heading, and a
    header cell (link to the index, failure notice, table of contents) after the title."""
    import nbformat

    nb = nbformat.from_dict(nb)
    toc, k = [], 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        src = markdown_math(cell.source)

        def anchor(m):
            nonlocal k
            k += 1
            level, text = len(m.group(1)), m.group(2)
            if level > 1:
                toc.append((level, f"sec-{k}", text))
            return f'<a id="sec-{k}"></a>\n\n{m.group(0)}'

        cell.source = _HEADING.sub(anchor, src)
    return nb, toc


def _pager(name: str) -> str:
    """Links to the index, the part of the index that lists this page, and the previous and next
    pages of the report in reading order (:func:`~pfntheory.report.spec.reading_order`: the
    appendices last; none for a notebook that is not one of :data:`NOTEBOOKS`)."""
    order = spec.reading_order()
    names = [s.name for s in order]
    links = ['<a href="index.html">&uarr; verification index</a>']
    if name in names:
        links.append(f'<a href="index.html#part-{name}">this part&#x27;s rows</a>')
    left = right = ""
    if name in names:
        i = names.index(name)
        if i > 0:
            p = order[i - 1]
            left = f'<a href="{p.name}.html" rel="prev">&larr; {html.escape(p.title)}</a>'
        if i + 1 < len(names):
            n = order[i + 1]
            right = f'<a href="{n.name}.html" rel="next">{html.escape(n.title)} &rarr;</a>'
    return (
        f'<nav class="pager"><span>{left}</span><span>{" · ".join(links)}</span>'
        f"<span>{right}</span></nav>"
    )


def _figure_alt(nb) -> None:
    """Give every PNG output alt text: the kernel's (a figure's titles and axes, set by
    :func:`~pfntheory.report.plots.setup_plots`, or an image's ``alt=``), else the section it
    appears in."""
    heading = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.findall(r"^#{1,3}\s+(.+?)\s*#*\s*$", cell.source, re.M)
            if found:
                heading = re.sub(r"<[^>]+>", "", found[-1])
            continue
        for out in cell.get("outputs", []):
            if "image/png" not in out.get("data", {}):
                continue
            md = out.setdefault("metadata", {})
            alt = (md.get("image/png") or {}).get("alt") or md.get("alt")
            if not alt:
                alt = f"Figure in the section '{html.unescape(heading)}'" if heading else "Figure"
            md.setdefault("image/png", {})["alt"] = alt


#: The file name IPython gives a cell's code (``/tmp/ipykernel_<pid>/<hash>.py``): it changes with
#: every kernel, so a warning that quotes it would change the page on every rebuild.
_KERNEL_FILE = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s:'\"]*ipykernel_\d+[/\\]\d+\.py")


def _stable_text(text: str) -> str:
    """``text`` without this machine's paths: the kernel's cell files become "<cell>", the Python
    installation "<python>", the repository's root is dropped (paths stay relative to it)."""
    text = _KERNEL_FILE.sub("<cell>", text)
    for prefix, name in ((sys.prefix, "<python>"), (sys.base_prefix, "<python>")):
        text = text.replace(prefix.rstrip("/") + "/", name + "/")
    return text.replace(str(spec.ROOT) + "/", "")


def _stable_outputs(nb) -> None:
    """:func:`_stable_text` on every stream and error output (what a warning quotes)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                out["text"] = _stable_text(out.get("text", ""))
            elif out.get("output_type") == "error":
                out["traceback"] = [_stable_text(t) for t in out.get("traceback", [])]


def export_html(nb, path: Path, *, ok: bool) -> Path:
    """Write the executed notebook ``nb`` as a self-contained, offline HTML page at ``path``:
    links to the index and to the previous and next pages at the top and at the bottom, a table of
    contents, alt text on every figure, the folds of :mod:`pfntheory.report.fold` collapsed."""
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    nb, toc = _anchored(nb)
    _stable_outputs(nb)
    _figure_alt(nb)
    status = "" if ok else "<p><b>This notebook failed; see the traceback below.</b></p>\n\n"
    name = Path(path).stem
    pager = _pager(name)
    stamp = stamp_html(build_stamp())
    header = nbformat.v4.new_markdown_cell(
        f'{pager}\n\n{status}<nav class="toc"><b>Contents</b>{_toc_html(toc)}</nav>'
    )
    header.id = "pfn-header"
    first_md = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    nb.cells.insert(first_md + 1, header)
    titles = {s.name: s.title for s in spec.NOTEBOOKS}
    nb.metadata["title"] = f"{titles.get(name, name)} — pfntheory verification report"
    footer = nbformat.v4.new_markdown_cell(f"{stamp}\n\n{pager}")
    footer.id = "pfn-footer"
    nb.cells.append(footer)
    exporter = HTMLExporter(
        template_name="lab", extra_loaders=[jinja2.DictLoader({"pfn_page.html.j2": _TEMPLATE})]
    )
    exporter.template_file = "pfn_page.html.j2"
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb, resources={"pfn_css": CSS + FOLD_CSS})
    path.write_text(apply_folds(body))
    return path


_NUMBERED = re.compile(r"^\s*\d+[.)]\s+")


def _toc_html(toc: list[tuple[int, str, str]]) -> str:
    """The contents as nested numbered lists: sections 1, 2, 3 and their subsections 1.1, 1.2
    under them (a heading's own leading number is dropped: the list numbers it)."""
    out, open_sub = ["<ol>"], False
    for level, anchor, text in toc:
        item = f'<a href="#{anchor}">{_strip_md(_NUMBERED.sub("", text))}</a>'
        if level == 3 and len(out) > 1:
            if not open_sub:
                out[-1] = out[-1].removesuffix("</li>") + "<ol>"
                open_sub = True
            out.append(f"<li>{item}</li>")
            continue
        if open_sub:
            out.append("</ol></li>")
            open_sub = False
        out.append(f"<li>{item}</li>")
    if open_sub:
        out.append("</ol></li>")
    return "".join(out) + "</ol>"


def _strip_md(text: str) -> str:
    """A heading's text for the table of contents: typeset maths kept, Markdown emphasis dropped."""
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)
    return text if "<span" in text else html.escape(text)


def retrain(scale_: str) -> None:
    """Bring the trained runs up to date before the notebooks read them: every experiment's sweep
    (idempotent: it trains what is missing and resumes what was killed) and every case study whose
    ``results.json`` is missing. To redo a committed run, delete its directory first."""
    from pfntheory.experiments.runner import run_sweep
    from pfntheory.pipelines.casestudy_run import run_casestudy

    run_sweep(scale=scale_)
    for name in ("sacramento", "walker"):
        if not (spec.DEFAULT_OUT / "casestudy" / name / "results.json").is_file():
            run_casestudy(name, scale_)


class RebuildRefused(ValueError):
    """A rebuild into the committed ``reports/`` that would lose committed rows (its message names
    what is missing and how to supply it)."""


def _snapshot(out: Path, name: str) -> tuple[list[dict], dict[Path, bytes | None]]:
    """The committed rows of notebook ``name`` and the bytes of its page and results file."""
    files = [out / f"{name}.html", out / "results" / f"{name}.json"]
    return committed_rows(out, name), {f: f.read_bytes() if f.exists() else None for f in files}


def _restore(files: dict[Path, bytes | None]) -> None:
    for f, data in files.items():
        if data is not None:
            f.write_bytes(data)


def run_report(
    only: Sequence[str] | None = None,
    *,
    retrain_runs: bool = False,
    timeout: int = 600,
    scale_: str = "quick",
    out_dir: str | os.PathLike | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> int:
    """Execute the notebooks, write their pages and the index; return the exit status (0 = ok).
    Writing into the committed ``reports/``, also rewrite the counts README.md and docs/findings.md
    state (:func:`pfntheory.report.tallies.write`) from the rows just written.

    Parameters
    ----------
    only : sequence of str, optional
        Names (or unique prefixes) of the notebooks to execute; the index is still built from every
        ``results/*.json`` present.
    retrain_runs : bool
        First bring the trained runs up to date (:func:`retrain`).
    timeout : int
        Per-cell time limit in seconds.
    scale_ : {"quick", "paper"}
    out_dir : path, optional
        Report folder (default ``reports/``).
    notebooks_dir : path, optional
        Folder of jupytext sources to execute instead of ``notebooks/`` (all of its ``.py`` files).
    progress : bool
        Print one line per notebook (with its wall time: printed, never written to a file).

    Raises
    ------
    RebuildRefused
        When ``out_dir`` is the committed ``reports/`` and the rebuild would turn measured rows
        into pending ones (:func:`~pfntheory.report.guard.rebuild_blockers`); nothing is written.
        A notebook that still measures fewer rows than its committed page is put back as it was
        and counted as failed.
    """
    out = Path(out_dir) if out_dir is not None else spec.DEFAULT_OUT
    if notebooks_dir is None:
        specs = [spec.find_spec(n) for n in only] if only else list(spec.NOTEBOOKS)
    else:  # any folder of jupytext sources (used by the tests)
        stems = sorted(p.stem for p in Path(notebooks_dir).glob("*.py"))
        specs = [
            spec.NotebookSpec(s, s, ())
            for s in stems
            if not only or any(s == o or s.startswith(o) for o in only)
        ]
        if not specs:
            raise ValueError(f"notebooks_dir: no notebook matches {only!r} in {notebooks_dir}")
    committed = notebooks_dir is None and writes_committed(out_dir)
    if committed:
        from pfntheory.casestudy.data import walker_data_available

        blockers = rebuild_blockers(
            out,
            [s.name for s in specs],
            walker_available=walker_data_available,
            runs=not retrain_runs,  # --retrain trains what is missing
        )
        if blockers:
            raise RebuildRefused(
                "refusing to rewrite the committed reports/: "
                + "; ".join(blockers)
                + "; or write the report elsewhere with --out DIR"
            )
    if retrain_runs:
        retrain(scale_)
    status_path = out / "results" / "_status.json"
    status = json.loads(status_path.read_text()) if status_path.exists() else {}
    bad = 0
    for s in specs:
        if progress:
            print(f"[report] {s.name} ...", end=" ", flush=True)
        kept = _snapshot(out, s.name) if committed else None
        run = execute_notebook(
            s.name, out, timeout=timeout, scale_=scale_, notebooks_dir=notebooks_dir
        )
        if kept is not None and run.ok:
            try:
                fewer = degraded(kept[0], committed_rows(out, s.name))
                why = "measured fewer rows than the committed page"
            except CorruptFileError as err:  # the notebook wrote no readable results file
                fewer, why = True, f"wrote a results file that cannot be read ({err})"
            if fewer:
                _restore(kept[1])
                run.ok = False
                run.error = (
                    f"{s.name} {why}; the committed page and rows are kept (write elsewhere "
                    "with --out DIR to see the new ones)"
                )
        status[s.name] = {"ok": run.ok, "error": run.error[-2000:]}
        status_path.parent.mkdir(parents=True, exist_ok=True)
        status_path.write_text(json.dumps(dict(sorted(status.items())), indent=1) + "\n")
        if progress:
            print(f"{'ok' if run.ok else 'FAILED'} ({run.seconds:.0f} s)", flush=True)
        if not run.ok:
            bad += 1
            print(run.error[-3000:], file=sys.stderr)
    _index_and_counts(out, committed=committed, progress=progress)
    return 1 if bad else 0


def _index_and_counts(out: Path, *, committed: bool, progress: bool) -> None:
    """Write the index of ``out``; where ``out`` is this checkout's committed ``reports/``, also
    the counts its README.md and docs/findings.md state (:func:`~pfntheory.report.tallies.write`;
    never from another folder's rows, a copy of ``reports/`` included)."""
    index = build_index(out)
    if progress:
        print(f"[report] index: {index}")
    ours = committed and out.resolve() == (spec.ROOT / "reports").resolve()
    changed = write_generated(out_dir=out) if ours else []
    if progress and changed:
        print(f"[report] generated counts: {', '.join(p.name for p in changed)}")
    by_commit: dict[str, list[str]] = {}
    for page, commits in page_commits(out).items():
        for c in commits:
            by_commit.setdefault(c, []).append(page.split("_")[0].removesuffix(".html"))
    if progress and len(by_commit) > 1:
        print(
            "[report] note: the pages name different commits ("
            + "; ".join(f"{c}: {', '.join(p)}" for c, p in sorted(by_commit.items()))
            + "); rebuild every page for one citation stamp"
        )
