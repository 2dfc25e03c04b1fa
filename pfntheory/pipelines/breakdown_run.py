"""The breakdown diagnostic of fig:exp2-1 over trained runs, and its committed file.

:func:`breakdown_analysis` measures each finished run with the solver-stack product of
:mod:`pfntheory.claims.breakdown` (which decides fig:exp2-1's breakdown claims from the file) and
evaluates its E[TV] beyond the paper's sizes; ``pfntheory sweep breakdown`` (:func:`run_breakdown`)
writes :data:`~pfntheory.claims.breakdown.BREAKDOWN_FILE` beside the cpu runs of fig:exp2-1's
budget runs (docs/exact-side.md, "Where a trained solver stops contracting").
"""

from __future__ import annotations

from pathlib import Path

from pfntheory.base._checks import ints, positive_int, sequence
from pfntheory.claims import checked_args
from pfntheory.claims.breakdown import (
    BREAKDOWN_FILE,
    PRODUCTS,
    certified_contraction,
    predicted_breakdown,
    solver_product,
)
from pfntheory.claims.gating import trained_runs
from pfntheory.experiments.results import load_experiment
from pfntheory.infra import runs as runfiles

__all__ = ["breakdown_analysis", "run_breakdown"]

#: Context sizes of the diagnostic: the evaluation's 40-200 (finer where the committed TF's E[TV]
#: jumps) and beyond, to 300, with :data:`BREAKDOWN_INSTANCES` contexts each; and the largest
#: sizes, with :data:`LARGE_INSTANCES` (a context of n' costs ~n'^3: 31 products of n' x n').
BREAKDOWN_NS = (40, 60, 80, 100, 120, 130, 140, 150, 160, 180, 200, 250, 300)
LARGE_NS = (400, 600)
#: Evaluation sizes beyond the paper's n' <= 200.
BEYOND_NS = (250, 300, 400, 600)
#: Contexts per n' of the diagnostic (the quantiles' resolution; cost grows like n'^3 per context).
BREAKDOWN_INSTANCES = 16
LARGE_INSTANCES = 4


def _merge(a: dict, b: dict | None) -> dict:
    """Two :func:`~pfntheory.claims.breakdown.solver_product` grids as one (``b``'s sizes after
    ``a``'s); ``instances`` becomes a list per n'."""
    per_n = [a["instances"]] * len(a["n"])
    if b is None:
        return {**a, "instances": per_n}
    out = {"n": a["n"] + b["n"], "instances": per_n + [b["instances"]] * len(b["n"])}
    for k in PRODUCTS:
        out[k] = {s: a[k][s] + b[k][s] for s in a[k]}
    return out


def _beyond(rd, beyond, n_instances: int, previous: dict | None) -> dict:
    """The run's E[TV] at the ``beyond`` sizes: from ``previous`` (an earlier analysis of the same
    run) when it was made with the same sizes, instances and evaluation seed, else evaluated
    (:func:`pfntheory.nn.evaluate.evaluate`, read-only, the seed of the run's own eval file)."""
    from pfntheory.infra.tree import EvalSpec
    from pfntheory.nn.evaluate import evaluate

    seed = runfiles.load_json(rd / "eval.json")["seed"]
    old = (previous or {}).get(rd.name, {}).get("beyond")
    if (
        old is not None
        and old.get("n_eval") == list(beyond)
        and old.get("n_instances") == int(n_instances)
        and old.get("seed", seed) == seed
    ):
        return {**old, "seed": seed}
    ev = evaluate(rd, EvalSpec(tuple(beyond), n_instances, seed), save=False)
    return {
        "n_eval": list(beyond),
        "n_instances": int(n_instances),
        "seed": seed,
        "tv": [float(ev["results"][str(n)]["tv"]) for n in beyond],
        "tv_se": [float(ev["results"][str(n)]["tv_se"]) for n in beyond],
    }


@checked_args(
    "n_instances",
    run_dirs=sequence,
    ns=ints(minimum=2),
    large=ints(minimum=2, non_empty=False),
    beyond=ints(minimum=2),
    instances=positive_int,
    large_instances=positive_int,
)
def breakdown_analysis(
    run_dirs,
    ns=BREAKDOWN_NS,
    beyond=BEYOND_NS,
    n_instances: int = 256,
    instances: int = BREAKDOWN_INSTANCES,
    previous: dict | None = None,
    large=LARGE_NS,
    large_instances: int = LARGE_INSTANCES,
) -> dict:
    """For each finished run: :func:`~pfntheory.claims.breakdown.solver_product` of the trained
    model on ``instances`` contexts per n' in ``ns`` and ``large_instances`` per n' in ``large``
    (larger sizes, after ``ns``), its predicted breakdown
    (:func:`~pfntheory.claims.breakdown.predicted_breakdown`, on the context block: see
    docs/exact-side.md), whether the whole stack is certified to contract
    (:func:`~pfntheory.claims.breakdown.certified_contraction`), and its E[TV] at the ``beyond``
    sizes (``n_instances`` per n'; reused from ``previous`` when made with the same settings)."""
    from pathlib import Path

    from pfntheory.nn.train import load_trained

    out = {}
    for rd in run_dirs:
        rd = Path(rd)
        model, cfg, _ = load_trained(rd)
        prod = _merge(
            solver_product(model, cfg.task, ns, instances=instances),
            solver_product(model, cfg.task, large, instances=large_instances) if large else None,
        )
        out[rd.name] = {
            "normalised": bool(cfg.model.normalised),
            "steps": int(cfg.steps),
            "product": prod,
            "predicted_breakdown": predicted_breakdown(prod),
            "predicted_onset": predicted_breakdown(prod, stat="q90"),
            "certified_contraction": certified_contraction(prod),
            "beyond": _beyond(rd, beyond, n_instances, previous),
        }
    return out


#: The experiments whose cpu runs :func:`run_breakdown` analyses (the first is the default, the
#: one ``pfntheory sweep breakdown`` analyses).
_MAIN_EXPERIMENTS = ("fig_exp2_1_budget", "fig_exp2_1")


def run_breakdown(experiment: str = _MAIN_EXPERIMENTS[0], root=None) -> Path:
    """Write the committed :data:`BREAKDOWN_FILE` beside the cpu runs of ``experiment`` (one of
    :data:`_MAIN_EXPERIMENTS`) under the runs root ``root`` (default the repository's), from its
    longest runs; incremental (:func:`breakdown_analysis`'s ``previous``). Run by
    ``pfntheory sweep breakdown`` (:mod:`pfntheory.pipelines.studies`)."""
    if experiment not in _MAIN_EXPERIMENTS:
        raise ValueError(
            f"experiment must be one of {', '.join(_MAIN_EXPERIMENTS)}, got {experiment!r}"
        )
    loaded = trained_runs(load_experiment(experiment, "cpu", root=root))
    if not loaded:
        raise ValueError(
            f"{experiment} has no trained cpu runs (run `pfntheory sweep {experiment} "
            "--scale cpu` first); nothing written"
        )
    longest = max(r.spec.steps for r in loaded)  # the runs fig:exp2-1's rows read
    out = loaded[0].run_dir.parent
    path = out / BREAKDOWN_FILE
    prev = runfiles.load_json(path) if path.is_file() else None
    doc = breakdown_analysis([r.run_dir for r in loaded if r.spec.steps == longest], previous=prev)
    runfiles.save_json(path, doc)
    return path
