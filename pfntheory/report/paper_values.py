"""The paper's printed number for a trained claim, where the claim measures the same quantity.

A row's ``paper`` column holds the number the paper prints *for the quantity the row reports*,
never a threshold and never a number of another design. For most claims the notebook says it
(``paper_value=``); the claims below take it from the printed tables
(:mod:`pfntheory.experiments.published`) or from a stated rate, whichever notebook records them:

- ``table.crps_falls_with_L``: the paper's CRPS at the smallest minus at the largest depth, averaged
  over the same cells (ell, n') as ours;
- ``table.coverage_near_nominal``: the paper's coverage of the very cell, level and depth that is
  our worst;
- none stated at present: ``fig_stepsize.<kernel>.slope`` reports the fitted limit ``c0`` of
  ``lambda_1/(n lambda_inf)`` (issue 47), a number the paper does not print; thm:lambda1's exponent
  -1 was the row's quantity before and is now stated in the row's tolerance beside the slope.

A table value is given only when every cell and depth the claim rests on is one the paper prints
(the paper's design); a shrunk design (the quick scale) gets none.
"""

from __future__ import annotations

from typing import Any

# Called by the Recorder for every row (not a public entry point of its own).
__all__: list[str] = []

_TABLES = {
    "supp-tab:lengthscale-crps": "supp_tab_lengthscale",
    "supp-tab:hierarchical-gp": "supp_tab_hier",
}
#: Stated rates, by claim key (value; the comment says where the paper states it).
_STATED: dict[str, float] = {}


def _paper_cells(label: str) -> dict[tuple[Any, int, int], dict]:
    from pfntheory.experiments.published import published_rows

    return {
        (p.get("lengthscale"), int(p["n_prime"]), int(p["L"])): p
        for p in published_rows(_TABLES[label])
    }


def published_value(result) -> float | None:
    """The paper's number for ``result`` (a :class:`~pfntheory.claims.ClaimResult`) by the rules
    of the module docstring, or None."""
    key = getattr(result, "key", "") or ""
    if key in _STATED:
        return _STATED[key]
    label = getattr(result, "label", "")
    details = getattr(result, "details", None) or {}
    rows, Ls = details.get("rows"), details.get("L")
    if label not in _TABLES or not rows or not isinstance(rows, list):
        return None
    if key == "table.crps_falls_with_L" and Ls:
        from pfntheory.claims.trained import table_paper_fall

        return table_paper_fall(label, rows, Ls)
    if key == "table.coverage_near_nominal":
        cells = _paper_cells(label)
        depths = sorted(
            {int(k.rsplit("_L", 1)[1]) for r in rows for k in r if k.startswith("cov90_L")}
        )
        if not depths:
            return None
        top = depths[-1]
        for r in rows:
            for lv in (90, 95):
                if r.get(f"cov{lv}_L{top}") == result.observed:
                    p = cells.get((r.get("lengthscale"), int(r["n_prime"]), top))
                    return float(p[f"cov{lv}"]) if p else None
    return None
