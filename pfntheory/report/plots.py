"""Plotting helpers of the notebooks: the report's style, saving, showing a saved image, log axes,
and the learning curves of trained runs (read by
:func:`pfntheory.infra.convergence.read_learning_curve`).

Figures are shown inline by the kernel (the runner executes with the inline backend), so a page
holds every figure beside the claim it supports; :func:`save_figure` also keeps a PNG under
``figures/`` for readers who want the file.
"""

from __future__ import annotations

import base64
import io
import os
import re
import weakref
from collections.abc import Sequence
from pathlib import Path

from .spec import output_dir

__all__ = [
    "setup_plots",
    "save_figure",
    "show_png",
    "log_axis",
    "plot_learning_curves",
    "legible",
    "layout_problems",
    "typeset_math",
    "FigureLayoutError",
    "MIN_AXES_WIDTH",
]


def describe_figure(fig, limit: int = 400) -> str:
    """Alt text for a matplotlib figure, from what it says about itself: its suptitle, then per
    panel "title: y-label against x-label" (panels without a title or an x-label, such as colour
    bars, are skipped; repeated descriptions once); "" for a figure that says nothing."""
    parts: list[str] = []
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text():
        parts.append(sup.get_text())
    for ax in fig.axes:
        title = " ".join(
            t for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t
        )
        x, y = ax.get_xlabel(), ax.get_ylabel()
        if not (title or x):
            continue
        desc = ": ".join(p for p in (title, f"{y} against {x}" if y and x else (y or x)) if p)
        if desc not in parts:
            parts.append(desc)
    text = _plain("; ".join(parts))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plain(text: str) -> str:
    """Matplotlib's mathtext (``$\\sigma^2$``, ``$E[\\mathrm{TV}]$``) as words a screen reader
    can say: no dollar signs, backslashes or braces (``sigma^2``, ``E[TV]``)."""
    text = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)
    return re.sub(r"[${}]", "", text).replace("\\", "")


#: The PNG bytes :func:`save_figure` wrote, per figure (at the inline backend's resolution), and
#: the figures about to be shown that have not changed since (:func:`_describe_inline_figures`).
_SAVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHOW_SAVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: The resolution of the inline backend's PNG (the figure's dpi, set by :func:`setup_plots`) and
#: of :func:`legible`'s default: the saved file is that PNG only at this dpi.
_INLINE_DPI = 100


def _describe_inline_figures() -> None:
    """Make the inline backend send :func:`describe_figure` as each figure's alt text (the page
    exporter writes it into the ``<img>``), and enlarge its small texts (:func:`legible`) before
    it is drawn. A figure saved by :func:`save_figure` and unchanged since is shown as the PNG
    it saved (the same pixels as the inline backend's own render: the same dpi, tight bounding
    box and colours; only the file's "Software" text chunk differs), so that it is drawn once
    rather than again for the page; a figure changed after saving (matplotlib marks it stale) is
    drawn by the backend as before. A backend without the hooks is left as it is."""
    try:
        from matplotlib_inline import backend_inline
    except ImportError:  # pragma: no cover - installed with the report extra
        return
    original = getattr(backend_inline, "_fetch_figure_metadata", None)
    show = getattr(backend_inline, "display", None)
    if original is None or show is None or getattr(original, "_pfn_alt", False):
        return

    def with_alt(fig):  # called just before the figure is drawn for the page
        saved = _SAVED.get(fig)
        if saved is not None and not fig.stale and fig.dpi == _INLINE_DPI:
            _SHOW_SAVED[fig] = saved  # before legible(), whose tick update marks the figure stale
        else:
            _SHOW_SAVED.pop(fig, None)
        legible(fig)
        md = dict(original(fig) or {})
        alt = describe_figure(fig)
        if alt:
            md["alt"] = alt
        return md or None

    def show_saved(obj, *args, **kwargs):  # the backend's display(figure, metadata=...)
        try:
            png = _SHOW_SAVED.pop(obj, None)
        except TypeError:  # not weak-referenceable: not a figure
            png = None
        if png is None or args:
            return show(obj, *args, **kwargs)
        data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": repr(obj)}
        return show(data, raw=True, **kwargs)

    with_alt._pfn_alt = True  # type: ignore[attr-defined]
    backend_inline._fetch_figure_metadata = with_alt
    backend_inline.display = show_saved  # type: ignore[assignment]


def setup_plots() -> None:
    """The report's matplotlib style: constrained layout, small legends, light grid, fixed PNG
    metadata (no software version in the file, so that a rebuild writes the same bytes); in a
    notebook kernel, every figure shown inline carries alt text (:func:`describe_figure`)."""
    import matplotlib as mpl

    _describe_inline_figures()

    mpl.rcParams.update(
        {
            "figure.constrained_layout.use": True,
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.25,
            "legend.fontsize": 8,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "xtick.labelsize": 9,
            "ytick.labelsize": 9,
            "savefig.dpi": 100,
        }
    )


#: Width in CSS pixels that a page gives a figure at a 1024-px window, and the smallest text
#: height a reader should meet there: a wider PNG is scaled down to the page, its text with it.
PAGE_WIDTH_PX, MIN_TEXT_PX = 940, 9.5


def legible(fig, *, dpi: int = 100) -> None:
    """Enlarge every text of ``fig`` (titles, labels, tick labels, legends) that would be under
    :data:`MIN_TEXT_PX` pixels once the figure, rendered at ``dpi``, is scaled to
    :data:`PAGE_WIDTH_PX`."""
    import matplotlib.text as mtext

    width_px = fig.get_size_inches()[0] * dpi
    px_per_pt = dpi / 72 * min(1.0, PAGE_WIDTH_PX / width_px)
    need = MIN_TEXT_PX / px_per_pt
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            size = labels[0].get_fontsize() if labels else 0.0
            if size < need:
                ax.tick_params(axis="x" if axis is ax.xaxis else "y", labelsize=need)
    for t in fig.findobj(mtext.Text):
        if t.get_text() and t.get_fontsize() < need:
            t.set_fontsize(need)


#: The narrowest an axes may be, as a share of its figure's width (issue 49: four per-axes legends
#: once squeezed each panel of a 4-panel figure to about 45 of 1,700 px, under 3%). A panel of a
#: 5-wide grid with its labels gets about 17%; colorbars are exempt.
MIN_AXES_WIDTH = 0.15
#: Two tick labels collide when their boxes overlap by more than this many pixels (at 100 dpi):
#: one pixel of anti-aliasing at the glyphs' edges is not a collision.
_TICK_OVERLAP_PX = 1.0
#: Maths written as plain text in a figure (outside ``$...$``): a raw caret, ``sqrt``, ``+-``.
_RAW_MATH = re.compile(r"\^|\bsqrt\b|\+-")


class FigureLayoutError(ValueError):
    """A figure that would not read on the page (:func:`layout_problems`)."""


def _overlap(a, b) -> bool:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w > _TICK_OVERLAP_PX and h > _TICK_OVERLAP_PX


def layout_problems(fig) -> list[str]:
    """What keeps ``fig`` from reading, measured on its drawn layout: an axes narrower than
    :data:`MIN_AXES_WIDTH` of the figure, two tick labels of one axis that overlap, maths typed as
    plain text (``sigma^2``, ``sqrt d``, ``+-``) where mathtext would typeset it. Empty if none."""
    fig.draw_without_rendering()  # constrained layout and tick labels as they will be saved
    return _drawn_layout_problems(fig)


def _drawn_layout_problems(fig) -> list[str]:
    """:func:`layout_problems` of a figure just drawn at its own dpi (nothing drawn again)."""
    import matplotlib.text as mtext

    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    out = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        name = ax.get_title() or f"axes {i}"
        share = ax.get_window_extent(renderer).width / width
        if share < MIN_AXES_WIDTH:
            out.append(f"{name!r}: {share:.0%} of the figure's width (< {MIN_AXES_WIDTH:.0%})")
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            boxes = [
                (t.get_text(), t.get_window_extent(renderer))
                for t in axis.get_ticklabels()
                if t.get_visible() and t.get_text()
            ]
            for (ta, a), (tb, b) in zip(boxes, boxes[1:], strict=False):
                if _overlap(a, b):
                    out.append(f"{name!r}: {which} tick labels {ta!r} and {tb!r} overlap")
    for t in fig.findobj(mtext.Text):
        text = t.get_text()
        if t.get_visible() and _RAW_MATH.search(re.sub(r"\$[^$]*\$", "", text)):
            out.append(f"text {text!r}: maths as plain text (typeset it as $...$)")
    return out


def typeset_math(fig) -> None:
    """Typeset the ASCII maths of every text of ``fig`` (titles, labels, legends, annotations)
    with mathtext (:func:`~pfntheory.report.mathtext.figure_math`: ``sigma^2`` -> σ², ``TF^pr``,
    ``sqrt d``, ``+-``)."""
    import matplotlib.text as mtext

    from .mathtext import figure_math

    for t in fig.findobj(mtext.Text):
        text = t.get_text()
        if text:
            new = figure_math(text)
            if new != text:
                t.set_text(new)


def save_figure(fig, name: str, *, dpi: int = 100) -> Path:
    """Save a matplotlib figure as ``figures/<name>.png`` under the report folder; return the path.

    The figure stays open so that the notebook also shows it inline; its small texts are enlarged
    first (:func:`legible`) and its ASCII maths typeset (:func:`typeset_math`), so that both read
    at a 1024-px window; a figure with a layout problem (:func:`layout_problems`) is refused with
    :class:`FigureLayoutError` naming it. Shown inline unchanged, it is shown as the saved PNG
    (:func:`_describe_inline_figures`).
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name must be a plain file stem, got {name!r}")
    typeset_math(fig)
    legible(fig, dpi=dpi)
    options = {"dpi": dpi, "bbox_inches": "tight", "metadata": {"Software": None}}
    png = None
    if dpi == fig.dpi:
        # laid out once: saving draws the figure (constrained layout, then the file), and the
        # check measures that drawn layout, the one the file holds, before the file is written
        buf = io.BytesIO()
        fig.savefig(buf, format="png", **options)
        png = buf.getvalue()
        problems = _drawn_layout_problems(fig)
    else:
        problems = layout_problems(fig)
    if problems:
        raise FigureLayoutError(f"figure {name}: " + "; ".join(problems))
    path = output_dir() / "figures" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    if png is None:
        fig.savefig(path, **options)
    else:
        path.write_bytes(png)
    if dpi == _INLINE_DPI and png is not None:  # the page shows these bytes unless it changes
        _SAVED[fig] = png
        fig.stale = False  # saving leaves it stale; a later change of any artist marks it again
    return path


def show_png(path: str | os.PathLike, alt: str = "") -> None:
    """Show a PNG file inline (e.g. a case study's maps, written by ``pfntheory casestudy``)."""
    from IPython.display import Image, display

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: no such image {path}")
    display(Image(filename=str(path), alt=alt or path.name))


def log_axis(ax, which: str = "x", ticks: Sequence[float] | None = None) -> None:
    """Log scale on ``ax``'s ``which`` axis (``"x"``, ``"y"`` or ``"xy"``) with plain-number labels
    (``ticks`` if given) instead of crowded minor labels such as ``2x10^2``."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    if which not in ("x", "y", "xy"):
        raise ValueError(f"which must be 'x', 'y' or 'xy', got {which!r}")
    for w in which:
        axis = {"x": ax.xaxis, "y": ax.yaxis}[w]
        (ax.set_xscale if w == "x" else ax.set_yscale)("log")
        if ticks is not None:
            (ax.set_xticks if w == "x" else ax.set_yticks)(list(ticks))
        else:  # 1, 2, 5 per decade: an axis spanning less than a decade still gets several ticks
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        fmt = ScalarFormatter()
        fmt.set_scientific(False)
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(NullFormatter())


def plot_learning_curves(ax, curves: dict[str, dict], metric: str = "tv", n: int | None = None):
    """Plot held-out ``metric`` against training step (log-log), ±2 SE bands, one line per run.

    Parameters
    ----------
    ax : matplotlib Axes
    curves : dict of str to dict
        Run name -> learning-curve document
        (:func:`pfntheory.infra.convergence.read_learning_curve`).
    metric : str
        A metric of the points (``tv``, ``nll``, ``coverage90``, ``crps``).
    n : int, optional
        The evaluation size n' to plot (default: the largest n' of each curve).

    Returns
    -------
    dict
        Run name -> (steps, values) as plotted.
    """
    import numpy as np

    if not curves:
        raise ValueError("curves must hold at least one learning curve")
    plotted = {}
    for name, doc in curves.items():
        pts = doc["points"]
        if metric not in pts[0]:
            raise ValueError(f"metric {metric!r} is not in the learning curve of {name}")
        n_sel = max(p["n"] for p in pts) if n is None else n
        sel = sorted((p for p in pts if p["n"] == n_sel), key=lambda p: p["step"])
        if not sel:
            raise ValueError(f"n={n_sel} is not an evaluated size of {name}")
        steps = np.array([max(p["step"], 1) for p in sel], dtype=float)
        y = np.array([p[metric] for p in sel], dtype=float)
        se = np.array([p.get(f"{metric}_se", 0.0) for p in sel], dtype=float)
        (line,) = ax.plot(steps, y, "o-", ms=3, label=f"{name} (n'={n_sel})")
        ax.fill_between(steps, y - 2 * se, y + 2 * se, color=line.get_color(), alpha=0.15, lw=0)
        plotted[name] = (steps, y)
    ax.set_xscale("log")
    if metric in ("tv", "crps"):
        ax.set_yscale("log")
    ax.set(xlabel="training step", ylabel=f"held-out {metric} (±2 SE)")
    return plotted
