"""The paper's own numbers for the two tables of supp-sec:exp additional, kept as data.

Transcribed from the .tex of the paper (``supp-tab:lengthscale-crps`` and
``supp-tab:hierarchical-gp``). In both tables every cell lists three values, ordered by attention
depth ``L = 8, 16, 32``; the columns are CRPS and the empirical coverage of the central 50%, 90% and
95% intervals. ``tests/test_experiments.py`` checks the shape of this transcription and, where the
.tex is on disk, every number against it.

Use :func:`published_rows` for a long table (one row per cell and depth) that a reproduced table
can be joined with.
"""

from __future__ import annotations

from typing import Any

from pfntheory.base._checks import choice

__all__ = [
    "PUBLISHED_DEPTHS",
    "PUBLISHED_METRICS",
    "LENGTHSCALE_CRPS",
    "HIERARCHICAL_GP",
    "PUBLISHED",
    "published_rows",
]

#: Depths of the three values in every cell, in order.
PUBLISHED_DEPTHS: tuple[int, int, int] = (8, 16, 32)
#: Metric columns of both tables: CRPS, then coverage of the 50%, 90%, 95% central intervals.
PUBLISHED_METRICS: tuple[str, ...] = ("crps", "cov50", "cov90", "cov95")


def _table(text: str) -> dict:
    """A transcribed table as ``{key: {metric: (L8, L16, L32)}}``.

    Each line of ``text`` is one cell: its key columns (a decimal point makes a float, else an int;
    one key column gives a scalar key), then the three values of every metric of
    :data:`PUBLISHED_METRICS`, in depth order. Everything after ``#`` is a comment.
    """
    k = len(PUBLISHED_DEPTHS)
    width = len(PUBLISHED_METRICS) * k
    table: dict = {}
    for line in text.splitlines():
        cols = line.partition("#")[0].split()
        if not cols:
            continue
        key = tuple(float(c) if "." in c else int(c) for c in cols[:-width])
        values = [float(c) for c in cols[-width:]]
        table[key if len(key) > 1 else key[0]] = {
            m: tuple(values[k * i : k * (i + 1)]) for i, m in enumerate(PUBLISHED_METRICS)
        }
    return table


#: supp-tab:lengthscale-crps (d=16, n_max=256): key (lengthscale, n'), value metric ->
#: (L8, L16, L32).
LENGTHSCALE_CRPS: dict[tuple[float, int], dict[str, tuple[float, float, float]]] = _table(
    """
    # ell  n'    CRPS                 cov50                cov90                cov95
    0.4  256    0.538 0.547 0.539    0.504 0.487 0.505    0.904 0.899 0.904    0.953 0.946 0.953
    0.4  1024   0.540 0.540 0.538    0.495 0.485 0.499    0.896 0.887 0.894    0.947 0.943 0.947
    0.8  256    0.318 0.310 0.307    0.488 0.499 0.509    0.890 0.901 0.905    0.942 0.951 0.954
    0.8  1024   0.271 0.262 0.258    0.444 0.478 0.505    0.848 0.877 0.897    0.908 0.932 0.950
    1.6  256    0.157 0.151 0.149    0.500 0.498 0.506    0.901 0.900 0.908    0.950 0.948 0.952
    1.6  1024   0.147 0.137 0.135    0.481 0.479 0.503    0.883 0.884 0.908    0.938 0.943 0.952
    """
)

#: supp-tab:hierarchical-gp (d=16, n_max=256, uniform prior on {0.4,0.8,1.2} x noise std
#: {0.1,0.2,0.3}): key n', value metric -> (L8, L16, L32).
HIERARCHICAL_GP: dict[int, dict[str, tuple[float, float, float]]] = _table(
    """
    # n'   CRPS                 cov50                cov90                cov95
    256    0.380 0.378 0.377    0.573 0.575 0.590    0.895 0.897 0.901    0.937 0.937 0.942
    512    0.374 0.371 0.367    0.570 0.568 0.590    0.889 0.891 0.903    0.926 0.925 0.932
    1024   0.358 0.353 0.346    0.560 0.563 0.598    0.887 0.887 0.902    0.930 0.929 0.940
    """
)

#: Experiment name -> its published table.
PUBLISHED: dict[str, dict[Any, dict[str, tuple[float, float, float]]]] = {
    "supp_tab_lengthscale": LENGTHSCALE_CRPS,
    "supp_tab_hier": HIERARCHICAL_GP,
}


def published_rows(experiment: str) -> list[dict]:
    """The published table of ``experiment`` in long form.

    Returns
    -------
    list of dict
        One dict per (cell, depth) with keys ``lengthscale`` (lengthscale table only), ``n_prime``,
        ``L``, and one key per metric of :data:`PUBLISHED_METRICS`.
    """
    choice(experiment, "experiment", tuple(PUBLISHED))
    rows = []
    for key, cell in PUBLISHED[experiment].items():
        base = (
            {"lengthscale": key[0], "n_prime": key[1]}
            if isinstance(key, tuple)
            else {"n_prime": key}
        )
        for i, L in enumerate(PUBLISHED_DEPTHS):
            rows.append({**base, "L": L, **{m: cell[m][i] for m in PUBLISHED_METRICS}})
    return rows
