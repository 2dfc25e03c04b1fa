"""The sweep order of the experiments' designs (the cheapest run first): the cost model of
2026-11-25, kept as the order key when :mod:`.cost` was measured again (issue 45), so that every
design keeps the order of ``tests/experiment_runs.txt`` and a sweep in progress keeps its plan.
It is a key, not an estimate: :func:`.cost.run_parts` estimates a run.
"""

from __future__ import annotations

import numpy as np

from pfntheory.infra.tree import RunSpec

from .specs import ExactPPDSpec, StepsizeSpec

__all__: list[str] = []  # order_seconds: used by .scales and .exp1

#: The coefficients of 2026-11-25 (benchmarks/cost_model.py's fit to wall times of committed runs;
#: the forms: docs/scales.md at that date). Not to be refitted: they fix the order.
_ORDER_COST = {
    "DATA_S": 7.9e-3,
    "DATA_N3_S": 1.26e-8,
    "HIER_DATA_N3_S": 1.48e-7,
    "RBF_N_S": 7.5e-5,
    "RBF_N2_S": 2.9e-7,
    "LINEAR_N_S": 9.3e-6,
    "EVAL_FRACTION": 0.35,
    "RUN_S": 20.0,
    "EXACT_N2D_S": 5.0e-9,
    "EXACT_N3_S": 3.7e-11,
}


def _mean_pow(n_min: int, n_max: int, k: int) -> float:
    n = np.arange(n_min, n_max + 1, dtype=float)
    return float(np.mean(n**k))


def _step(spec: RunSpec, n1: float, n2: float, n3: float, batch: int) -> float:
    c, m, b = _ORDER_COST, spec.model, batch / 128
    layers: float = max(m.L - 1, 0)
    s = c["DATA_S"] * b
    if spec.task.kind != "blr":
        s += c["DATA_N3_S"] * b * n3
    if spec.task.kind == "hier_rbf":
        s += c["HIER_DATA_N3_S"] * b * n3
    if m.mixture:
        t = spec.task
        layers *= len(set(t.hier_lengthscales)) * (2 * len(t.hier_noise_stds) + 1) / 3
    if m.score == "linear":
        s += c["LINEAR_N_S"] * b * layers * n1
    else:
        s += c["RBF_N_S"] * b * layers * n1 + c["RBF_N2_S"] * b * layers * n2
    return s


def order_seconds(spec) -> float:
    """The order key of a run's spec (a trained run, an exact-PPD reference or fig:stepsize's)."""
    c = _ORDER_COST
    if isinstance(spec, ExactPPDSpec):
        grams = spec.task.n_components * spec.task.d * sum(n * n for n in spec.n_eval)
        draws = sum(n**3 for n in spec.n_eval)
        return float(spec.n_instances * (c["EXACT_N2D_S"] * grams + c["EXACT_N3_S"] * draws))
    if isinstance(spec, StepsizeSpec):
        return 0.0
    if not isinstance(spec, RunSpec):
        raise TypeError(f"spec must be a run's spec, got {type(spec).__name__}")
    n1, n2, n3 = (_mean_pow(spec.n_min, spec.n_max, k) for k in (1, 2, 3))
    train = c["RUN_S"] + spec.steps * _step(spec, n1, n2, n3, spec.batch_size)
    ev = 0.0
    for e in spec.evals:
        for n in e.n_eval:
            ev += _step(spec, n, n**2, n**3, e.n_instances) * c["EVAL_FRACTION"] * 2
    if spec.curve_n_eval:
        n_pts = (spec.curve_points + 1) * (1 + len(spec.curve_covariates))
        for n in spec.curve_n_eval:
            ev += n_pts * _step(spec, n, n**2, 0.0, spec.curve_instances) * c["EVAL_FRACTION"]
    return float(train + ev)
