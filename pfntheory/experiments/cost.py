"""The cost model of ``sweep --list`` and of the sweep order: estimated single-core CPU seconds of
a run or of an experiment's design, refitted by ``benchmarks/cost_model.py`` (docs/scales.md,
"Hours: measured against the cost model").
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import ArgumentTypeError, choice
from pfntheory.infra.config import EXPERIMENT_SCALES
from pfntheory.infra.tree import RunSpec

from .design import Experiment
from .specs import ExactPPDSpec, StepsizeSpec

__all__ = ["COST"]


#: Seconds on one core of the development machine (2-core x86 laptop, torch 2.13, float32, one
#: thread, two workers sharing the machine). Training (:func:`training_terms`): drawing a batch of
#: 128 costs ``DATA_S + DATA_N3_S * n^3`` (one Cholesky per context; ``HIER_DATA_N3_S * n^3`` more
#: for the hierarchical prior, whose contexts each have their own Gram matrix); the
#: forward+backward of one solver layer ``RBF_N_S * n + RBF_N2_S * n^2`` (kernel scores over
#: (n+1) x n) or ``LINEAR_N_S * n`` (the linear score never forms the kernel); ``RUN_S`` is what a
#: run costs besides its steps (building the model and the oracle; ~20 s at L = 2). The training
#: coefficients are refitted by ``benchmarks/cost_model.py`` to the 148 cpu-scale runs committed on
#: 2026-11-25 (relative least squares): per experiment the estimate is 0.70-1.14x the measured
#: training hours (0.68-2.32x with the previous pure-n^2 model, which overestimated every TF^pr
#: design at n_max = 512 about 2x), per run 0.70-1.24x (10%-90%). An exact-PPD reference
#: (:class:`ExactPPDSpec`, float64 NumPy, one thread) costs, per context, ``EXACT_N2D_S`` per
#: mixture component and ``n'^2 d`` (forming each ``n' x n'`` RBF Gram matrix, which dominates its
#: Cholesky factor up to ``n' = 1024``) plus ``EXACT_N3_S`` per ``n'^3`` (the draw of the
#: context); fitted to two references at d = 16, 4096 contexts: the 9-component hierarchical prior
#: at n' = 256/512/1024 (4252 s) and the RBF prior at n' = 256/1024 (521-536 s).
COST = {
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


def _run_spec(spec, name: str = "spec") -> RunSpec:
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(f"{name} must be a RunSpec (a trained run), got {spec!r}"[:200])
    return spec


def _mean_pow(n_min: int, n_max: int, k: int) -> float:
    n = np.arange(n_min, n_max + 1, dtype=float)
    return float(np.mean(n**k))


def step_terms(spec: RunSpec, n1: float, n2: float, n3: float, batch: int) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of one forward+backward step
    of ``spec`` on a batch of ``batch`` contexts with mean ``n``, ``n^2``, ``n^3`` equal to ``n1``,
    ``n2``, ``n3`` (the cost model is linear in its coefficients, so that
    ``benchmarks/cost_model.py`` can refit them to timed runs)."""
    m, b = _run_spec(spec).model, batch / 128
    layers: float = max(m.L - 1, 0)
    terms = {"DATA_S": b}
    # BLR tasks are drawn in weight space (O(n d^2), no Cholesky of an n x n Gram matrix); the
    # hierarchical prior builds a Gram matrix per context's own (lengthscale, noise)
    if spec.task.kind != "blr":
        terms["DATA_N3_S"] = b * n3
    if spec.task.kind == "hier_rbf":
        terms["HIER_DATA_N3_S"] = b * n3
    # the RBF layer's cost is its n x n kernel (exp-bound) plus per-row work; the inner dimension d
    # adds little (a sqrt(d/2) factor overestimated d = 8 and d = 16 runs 2-5x); the linear score
    # never forms the kernel
    if m.mixture:  # a kernel per lengthscale group on 2 H_g + 1 value channels (measured 7.7x
        # the single head's 3 at d = 16, 3 x 3 grid; pfntheory.nn.multihead_model)
        t = spec.task
        layers *= len(set(t.hier_lengthscales)) * (2 * len(t.hier_noise_stds) + 1) / 3
    if m.score == "linear":
        terms["LINEAR_N_S"] = b * layers * n1
    else:
        terms["RBF_N_S"] = b * layers * n1
        terms["RBF_N2_S"] = b * layers * n2
    return terms


def _seconds(terms: dict[str, float], cost: dict[str, float] | None = None) -> float:
    cost = COST if cost is None else cost
    if not isinstance(cost, dict) or any(
        isinstance(cost.get(k), bool) or not isinstance(cost.get(k), (int, float)) for k in terms
    ):
        raise ArgumentTypeError(
            f"cost must map each of {sorted(terms)} to a number of seconds (see COST), got "
            f"{cost!r}"[:300]
        )
    return float(sum(cost[k] * v for k, v in terms.items()))


def _step_seconds(spec: RunSpec, n1: float, n2: float, n3: float, batch: int) -> float:
    return _seconds(step_terms(spec, n1, n2, n3, batch))


def training_terms(spec: RunSpec) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of training ``spec`` (its
    steps, with ``n ~ Unif{n_min..n_max}`` per step, and ``RUN_S`` once); the learning-curve and
    final evaluations are not included."""
    _run_spec(spec)
    n1, n2, n3 = (_mean_pow(spec.n_min, spec.n_max, k) for k in (1, 2, 3))
    terms = {"RUN_S": 1.0}
    for k, v in step_terms(spec, n1, n2, n3, spec.batch_size).items():
        terms[k] = spec.steps * v
    return terms


def training_seconds(spec: RunSpec, cost: dict[str, float] | None = None) -> float:
    """Estimated seconds of training ``spec`` (:func:`training_terms`) under the coefficients
    ``cost`` (default :data:`COST`)."""
    return _seconds(training_terms(spec), cost)


def cpu_seconds(spec_or_experiment, scale: str = "cpu") -> float:
    """Estimated single-core CPU seconds of a run (a spec) or of every run of an experiment at
    ``scale``: training steps, learning-curve evaluations and the final evaluations, from the cost
    model :data:`COST`. An exact-PPD reference counts its Gram matrices (``EXACT_N2D_S``);
    fig:stepsize counts as 0 (seconds of NumPy)."""
    choice(scale, "scale", EXPERIMENT_SCALES)
    if isinstance(spec_or_experiment, Experiment):
        return float(sum(cpu_seconds(r, scale) for r in spec_or_experiment.runs(scale)))
    spec = spec_or_experiment
    if not isinstance(spec, RunSpec):
        if isinstance(spec, ExactPPDSpec):
            grams = spec.task.n_components * spec.task.d * sum(n * n for n in spec.n_eval)
            draws = sum(n**3 for n in spec.n_eval)
            per_context = COST["EXACT_N2D_S"] * grams + COST["EXACT_N3_S"] * draws
            return float(spec.n_instances * per_context)
        if isinstance(spec, StepsizeSpec):
            return 0.0
        raise TypeError(
            f"spec_or_experiment must be an Experiment, its name or a spec, got "
            f"{type(spec).__name__}"
        )
    train = training_seconds(spec)
    # forward only ~ EVAL_FRACTION of a training step per instance; data drawn once per instance
    ev = 0.0
    for e in spec.evals:
        for n in e.n_eval:
            ev += _step_seconds(spec, n, n**2, n**3, e.n_instances) * COST["EVAL_FRACTION"] * 2
    if spec.curve_n_eval:
        # step 0 and curve_points log-spaced steps, on the task's design and each curve_covariates
        n_pts = (spec.curve_points + 1) * (1 + len(spec.curve_covariates))
        for n in spec.curve_n_eval:
            step = _step_seconds(spec, n, n**2, 0.0, spec.curve_instances)
            ev += n_pts * step * COST["EVAL_FRACTION"]
    return float(train + ev)
