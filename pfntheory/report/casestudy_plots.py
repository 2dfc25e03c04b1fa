"""The maps of the real-data case studies (fig:sacramento, fig:walker): PFN and GP predictive maps
side by side, and their differences with the near/far boundary.

Each function takes arrays on a grid and writes one PNG (no software tag, so the bytes depend on
the figure only); :func:`pfntheory.pipelines.casestudy_run.draw_maps` chooses the coordinates,
labels and titles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["MAP_TITLES", "plot_maps", "plot_differences"]

#: The quantities of a predictive map, in the order of the figures' columns, and their titles.
MAP_TITLES = {"mean": "PPD mean", "q05": "5% quantile", "q95": "95% quantile"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _panel(ax, values, shape, axes_xy, ctx_xy, *, title: str, labels: tuple, equal: bool, **imshow):
    """One map of a figure: ``values`` on the grid ``axes_xy`` (``shape`` (ny, nx)), the context
    points as white dots with a black rim (visible on any colour map). Returns the image."""
    gx, gy = axes_xy
    ext = (gx[0], gx[-1], gy[0], gy[-1])
    im = ax.imshow(
        np.asarray(values).reshape(shape),
        origin="lower",
        extent=ext,
        aspect="equal" if equal else "auto",
        interpolation="nearest",
        **imshow,
    )
    ax.scatter(
        ctx_xy[:, 0], ctx_xy[:, 1], s=7, c="white", edgecolors="black", linewidths=0.4, zorder=3
    )
    ax.set_xlim(ext[:2])
    ax.set_ylim(ext[2:])
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    return im


def _save(fig, path: Path, title: str) -> None:
    """Title, write (no software tag: the bytes depend on the figure only) and close."""
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _pyplot().close(fig)


def plot_maps(
    path: Path, axes_xy, shape, rows: dict, ctx_xy, *, labels: tuple, unit: str, title: str, equal
) -> None:
    """``maps.png``: one row per model of ``rows`` (name -> maps), one column per quantity, a shared
    colour scale per column (0.5% to 99.5% percentiles of the finite values)."""
    plt = _pyplot()
    fig, axs = plt.subplots(
        len(rows), 3, figsize=(13, 4.0 * len(rows)), squeeze=False, constrained_layout=True
    )
    for j, q in enumerate(MAP_TITLES):
        vals = np.concatenate([np.asarray(r[q])[np.isfinite(r[q])] for r in rows.values()])
        vmin, vmax = (np.percentile(vals, 0.5), np.percentile(vals, 99.5)) if vals.size else (0, 1)
        for i, (rname, r) in enumerate(rows.items()):
            im = _panel(
                axs[i, j],
                r[q],
                shape,
                axes_xy,
                ctx_xy,
                title=f"{rname}: {MAP_TITLES[q]}",
                labels=labels,
                equal=equal,
                cmap="viridis",
                vmin=vmin,
                vmax=vmax,
            )
        fig.colorbar(im, ax=axs[:, j], shrink=0.8, label=unit)
    _save(fig, path, title)


def plot_differences(
    path: Path,
    axes_xy,
    shape,
    diffs: dict,
    dist,
    threshold,
    ctx_xy,
    *,
    labels: tuple,
    unit: str,
    title: str,
    equal: bool,
) -> None:
    """``differences.png``: PFN - GP per quantity on a symmetric scale (99th percentile of the
    finite |differences|), the near/far boundary ``dist = threshold`` as a black contour."""
    plt = _pyplot()
    fig, axs = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    for ax, q in zip(axs, MAP_TITLES, strict=True):
        d = np.asarray(diffs[q])
        fin = d[np.isfinite(d)]
        v = float(np.percentile(np.abs(fin), 99)) if fin.size else 1.0
        im = _panel(
            ax,
            d,
            shape,
            axes_xy,
            ctx_xy,
            title=f"PFN - GP: {MAP_TITLES[q].replace('PPD ', '')}",
            labels=labels,
            equal=equal,
            cmap="RdBu_r",
            vmin=-v,
            vmax=v,
        )
        ax.contour(
            *axes_xy,
            np.asarray(dist).reshape(shape),
            levels=[threshold],
            colors="k",
            linewidths=0.8,
        )
        fig.colorbar(im, ax=ax, shrink=0.8, label=unit)
    _save(fig, path, title)
