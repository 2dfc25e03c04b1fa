"""The tables of the cpu-scale page (``notebooks/07_cpu_scale.py``): the runs on disk, their
learning-curve status and resolution, weight averaging before/after, budget doubling per cell, and
the tables' cells beside the paper's. Figures and the fig:exp1 panels are in
:mod:`pfntheory.report.cpu`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pfntheory.claims import gating as xgate
from pfntheory.experiments import published
from pfntheory.experiments.specs import ExactPPDSpec
from pfntheory.infra.convergence import curve_points, curve_status, plateau_status
from pfntheory.infra.tree import RunSpec

from .cpu import STATUS_WORDS, plateau_word

__all__ = [
    "runs_frame",
    "curve_status_frame",
    "resolution_frame",
    "averaging_frame",
    "doubling_frame",
    "table_frame",
]


def runs_frame(runs: Sequence, eval_file: str = "eval.json"):
    """One row per trained run: its settings, E[TV] averaged over n' (± SE) and its
    plateau status."""
    import pandas as pd

    rows = []
    for r in runs:
        if not isinstance(r.spec, RunSpec) or eval_file not in r.evals:
            continue
        m, se = r.evals[eval_file].average("tv")
        rows.append(
            {
                "run": r.run_dir.name,
                "task": r.spec.task.kind,
                "d": r.spec.task.d,
                "TF^pr": r.spec.model.normalised,
                "mode": r.spec.model.mode,
                "L": r.spec.model.L,
                "C": r.spec.model.C,
                "n range": f"[{r.spec.n_min}, {r.spec.n_max}]",
                "steps": r.spec.steps,
                "E[TV] over n'": float(m),
                "SE": float(se),
                "learning curve": plateau_word(r),
            }
        )
    return pd.DataFrame(rows)


def curve_status_frame(run, curves: dict[str, str | None], metrics=("tv", "coverage90")):
    """The plateau status of each learning curve of ``run`` (``curves``: design name -> covariates,
    None for the run's own curve) in each metric of ``metrics``; missing curves say so."""
    import pandas as pd

    rows = []
    for design, cov in curves.items():
        for metric in metrics:
            st = curve_status(run.run_dir, cov, metric=metric)
            trend = st.trend if st.state != "no curve" else ""
            rows.append({"design": design, "metric": metric, "status": st.state, "trend": trend})
    return pd.DataFrame(rows)


def resolution_frame(runs_by_experiment: dict[str, Sequence]):
    """Could the plateau test decide at all? Per experiment, its trained runs' own E[TV] learning
    curves counted by state, and how many of them are *resolvable*: the 90% interval of the fitted
    fall is no wider than the tolerance (``halfwidth <= tol``,
    :func:`pfntheory.infra.convergence.plateau_status`). An unresolvable curve cannot be called
    plateaued whatever its trend: its undecided verdict says as much about the curve's evaluation
    density and the optimiser's jitter as about training. ``median halfwidth / tol`` over the curves
    with a fitted trend; experiments without a trained run are left out."""
    import pandas as pd

    rows = []
    for name, runs in runs_by_experiment.items():
        tr = [r for r in runs if isinstance(r.spec, RunSpec)]
        if not tr:
            continue
        sts = [xgate.run_convergence(r) for r in tr]
        fitted = [st for st in sts if st.resolvable is not None]
        row: dict = {"experiment": name, "curves": len(tr)}
        for w in STATUS_WORDS:
            row[w] = sum(st.state == w for st in sts)
        row["resolvable"] = sum(st.resolvable for st in fitted)
        row["median halfwidth / tol"] = (
            float(np.median([st.halfwidth / st.tol for st in fitted])) if fitted else float("nan")
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _jitter_ratio(points: list, key: str) -> tuple[float, float]:
    """(residual SD about the trend over the last log-half / held-out SE, value at the last step)
    of a curve read at ``key`` (``"tv"``: the weight average, ``"last_tv"``: the last iterate)."""
    alt = [{**p, "tv": p[key], "tv_se": p[key + "_se"]} for p in points]
    st = plateau_status(alt)
    return st.jitter / st.instance_se, st.value


def averaging_frame(runs: Sequence, before: Sequence = ()):
    """Weight averaging, before and after, per weight-averaged run (issue 24 item 1): the jitter
    ratio (residual SD of E[TV] about its trend over the last log-half / held-out SE) and the final
    E[TV] of the last iterate and of the average, both read from the same run's learning curve
    (same held-out instances, same steps), and the committed last-iterate run of the same cell
    (``before``: runs of the design without averaging, 12 curve points) for reference."""
    import pandas as pd

    ref = {
        (r.spec.task.kind, r.spec.model.mode, r.spec.model.L, r.spec.model.C, r.spec.steps): r
        for r in before
        if isinstance(r.spec, RunSpec)
    }
    rows = []
    for r in runs:
        if not isinstance(r.spec, RunSpec) or r.spec.ema_decay == 0:
            continue
        pts = curve_points(r.run_dir)
        if pts is None or not all("last_tv" in p for p in pts):
            continue
        j_last, tv_last = _jitter_ratio(pts, "last_tv")
        j_avg, tv_avg = _jitter_ratio(pts, "tv")
        s = r.spec
        row = {
            "task": s.task.kind,
            "mode": s.model.mode,
            "L": s.model.L,
            "C": s.model.C,
            "steps": s.steps,
            "jitter/SE last": j_last,
            "jitter/SE avg": j_avg,
            "E[TV] last": tv_last,
            "E[TV] avg": tv_avg,
        }
        old = ref.get((s.task.kind, s.model.mode, s.model.L, s.model.C, s.steps))
        od = None if old is None else curve_points(old.run_dir)
        if od is not None:
            row["committed: jitter/SE"], row["committed: E[TV]"] = _jitter_ratio(od, "tv")
        rows.append(row)
    return pd.DataFrame(rows)


def doubling_frame(runs: Sequence):
    """Budget doubling per cell (:func:`pfntheory.claims.gating.doubling_statuses`): E[TV] at S and
    2S steps, the paired fall with its 90% interval, the tolerance, the state and whether the
    interval is narrow enough to fit the tolerance at all (resolvable)."""
    import pandas as pd

    sts = xgate.doubling_statuses(runs)
    rows = []
    for r in runs:
        st = sts.get(r.run_dir.name)
        if not isinstance(r.spec, RunSpec) or st is None or not st.half_run:
            continue
        s = r.spec
        rows.append(
            {
                "task": s.task.kind,
                "mode": s.model.mode,
                "L": s.model.L,
                "C": s.model.C,
                "S -> 2S": f"{st.short_step} -> {st.last_step}",
                "E[TV] at 2S": st.value,
                "fall": st.fall,
                "90% CI": f"[{st.ci[0]:.4f}, {st.ci[1]:.4f}]",
                "tol": st.tol,
                "state": st.state,
                "resolvable": bool(st.resolvable),
            }
        )
    return pd.DataFrame(rows)


def table_frame(runs: Sequence, experiment: str):
    """The runs of a table design that are on disk, cell by cell, beside the paper's numbers.

    At the ``cpu`` scale the tables keep the paper's tasks (d = 16, n in [64, 256], the paper's
    n'), so the published cells are comparable as they stand. One row per (lengthscale, n', model),
    ``model`` being ``"exact PPD"`` (the reference run: the lower bound of every model's CRPS on its
    task) or ``"L=<L>"`` (a trained run, with its steps and E[TV] learning-curve status). Columns:
    our CRPS (± SE) and 50/90/95% coverages, the paper's CRPS and 90% coverage at that (lengthscale,
    n', L) (empty for the exact PPD, which the paper does not list) and, for a trained run, its CRPS
    minus the exact PPD's on the same task and n' (empty while the reference is missing). Cells not
    on disk have no row.

    Parameters
    ----------
    runs : sequence of LoadedRun
        Complete runs of ``experiment`` (e.g. from ``load_available``).
    experiment : str
        ``"supp_tab_lengthscale"`` or ``"supp_tab_hier"``.
    """
    import pandas as pd

    pub = {
        (row.get("lengthscale"), row["n_prime"], row["L"]): row
        for row in published.published_rows(experiment)
    }

    def ell(task):
        return task.lengthscale if task.kind == "rbf" else None

    exact = {}
    for r in runs:
        if isinstance(r.spec, ExactPPDSpec):
            m = r.result["metrics"]
            for j, n in enumerate(r.result["n_eval"]):
                exact[(ell(r.spec.task), int(n))] = {
                    "CRPS": m["crps"]["mean"][j],
                    "SE": m["crps"]["se"][j],
                    **{f"cov{lv}": m[f"cov{lv}"]["mean"][j] for lv in (50, 90, 95)},
                }
    rows = [
        {"lengthscale": k[0], "n'": k[1], "model": "exact PPD", "steps": None, **v}
        for k, v in exact.items()
    ]
    for r in runs:
        if not isinstance(r.spec, RunSpec):
            continue
        e, L, key = r.eval, r.spec.model.L, ell(r.spec.task)
        status = plateau_word(r)
        for j, n in enumerate(e.n_eval.tolist()):
            p = pub.get((key, int(n), L), {})
            ref = exact.get((key, int(n)))
            crps = float(e.mean["crps"][j])
            rows.append(
                {
                    "lengthscale": key,
                    "n'": int(n),
                    "model": f"L={L}",
                    "steps": r.spec.steps,
                    "CRPS": crps,
                    "SE": float(e.se["crps"][j]),
                    **{f"cov{lv}": float(e.mean[f"coverage_{lv}"][j]) for lv in (50, 90, 95)},
                    "paper CRPS": p.get("crps"),
                    "paper cov90": p.get("cov90"),
                    "CRPS - exact": None if ref is None else crps - ref["CRPS"],
                    "learning curve": status,
                }
            )
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["steps"] = df["steps"].astype("Int64")
    if experiment != "supp_tab_lengthscale":
        df = df.drop(columns="lengthscale")
    order = [c for c in ("lengthscale", "n'") if c in df]
    df["_exact_last"] = df["model"] == "exact PPD"
    df["_L"] = df["model"].str.extract(r"L=(\d+)", expand=False).astype(float)
    return (
        df.sort_values([*order, "_exact_last", "_L"])
        .drop(columns=["_exact_last", "_L"])
        .reset_index(drop=True)
    )
