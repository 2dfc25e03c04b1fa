"""The paper's own numbers for the two tables of supp-sec:exp additional, kept as data.

Transcribed from the .tex of the paper (``supp-tab:lengthscale-crps`` and
``supp-tab:hierarchical-gp``). In both tables every cell lists three values, ordered by attention depth
``L = 8, 16, 32``; the columns are CRPS and the empirical coverage of the central 50%, 90% and 95%
intervals. ``tests/test_experiments.py`` checks the shape of this transcription and, where the .tex is
on disk, every number against it.

Use :func:`published_rows` for a long table (one row per cell and depth) that a reproduced table
can be joined with.
"""

from __future__ import annotations

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

#: supp-tab:lengthscale-crps (d=16, n_max=256): key (lengthscale, n'), value metric -> (L8, L16, L32).
LENGTHSCALE_CRPS: dict[tuple[float, int], dict[str, tuple[float, float, float]]] = {
    (0.4, 256): {"crps": (.538, .547, .539), "cov50": (.504, .487, .505),
                 "cov90": (.904, .899, .904), "cov95": (.953, .946, .953)},
    (0.4, 1024): {"crps": (.540, .540, .538), "cov50": (.495, .485, .499),
                  "cov90": (.896, .887, .894), "cov95": (.947, .943, .947)},
    (0.8, 256): {"crps": (.318, .310, .307), "cov50": (.488, .499, .509),
                 "cov90": (.890, .901, .905), "cov95": (.942, .951, .954)},
    (0.8, 1024): {"crps": (.271, .262, .258), "cov50": (.444, .478, .505),
                  "cov90": (.848, .877, .897), "cov95": (.908, .932, .950)},
    (1.6, 256): {"crps": (.157, .151, .149), "cov50": (.500, .498, .506),
                 "cov90": (.901, .900, .908), "cov95": (.950, .948, .952)},
    (1.6, 1024): {"crps": (.147, .137, .135), "cov50": (.481, .479, .503),
                  "cov90": (.883, .884, .908), "cov95": (.938, .943, .952)},
}

#: supp-tab:hierarchical-gp (d=16, n_max=256, uniform prior on {0.4,0.8,1.2} x noise std {0.1,0.2,0.3}):
#: key n', value metric -> (L8, L16, L32).
HIERARCHICAL_GP: dict[int, dict[str, tuple[float, float, float]]] = {
    256: {"crps": (.380, .378, .377), "cov50": (.573, .575, .590),
          "cov90": (.895, .897, .901), "cov95": (.937, .937, .942)},
    512: {"crps": (.374, .371, .367), "cov50": (.570, .568, .590),
          "cov90": (.889, .891, .903), "cov95": (.926, .925, .932)},
    1024: {"crps": (.358, .353, .346), "cov50": (.560, .563, .598),
           "cov90": (.887, .887, .902), "cov95": (.930, .929, .940)},
}

#: Experiment name -> its published table.
PUBLISHED = {
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
    if experiment not in PUBLISHED:
        raise ValueError(f"unknown experiment {experiment!r}; expected one of {sorted(PUBLISHED)}")
    rows = []
    for key, cell in PUBLISHED[experiment].items():
        base = ({"lengthscale": key[0], "n_prime": key[1]} if isinstance(key, tuple)
                else {"n_prime": key})
        for i, L in enumerate(PUBLISHED_DEPTHS):
            rows.append({**base, "L": L, **{m: cell[m][i] for m in PUBLISHED_METRICS}})
    return rows
