"""The cost model of ``sweep --list``, of the sweep's report of each finished run and of the
sweep order: estimated single-core CPU seconds of a run's training, learning curves and evaluation
(:func:`run_parts`), of a run or of an experiment's design (:func:`cpu_seconds`), measured on the
project's machine class (:data:`COST_MEASURED`; docs/scales.md, "Hours: measured against the cost
model").
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    MAX_ELEMENTS,
    ArgumentTypeError,
    choice,
    instance_of,
    positive_int,
    positive_scalar,
)
from pfntheory.infra.config import EXPERIMENT_SCALES, FUSED_DRAW_MAX_N
from pfntheory.infra.latent_spec import LatentReferenceSpec, LatentRunSpec
from pfntheory.infra.tree import RunSpec

from .design import Experiment
from .latent import latent_seconds
from .specs import ExactPPDSpec, StepsizeSpec

__all__ = [
    "COST",
    "COST_MEASURED",
    "PARTS",
    "draw_terms",
    "step_terms",
    "training_terms",
    "training_seconds",
    "curve_terms",
    "eval_terms",
    "run_parts",
    "experiment_parts",
    "cpu_seconds",
]

#: The three parts of a trained run's estimate (:func:`run_parts`).
PARTS = ("training", "curves", "evaluation")

#: Where and how :data:`COST` was measured. CPU seconds (``time.process_time``) of one process
#: with one torch/BLAS thread pinned to a free core, each piece timed on its own by
#: ``benchmarks/cost_calibration.py`` (record ``benchmarks/results/cost_calibration.json``) and
#: the coefficients fitted to it (relative least squares); checked against whole runs in
#: docs/scales.md.
COST_MEASURED = {
    "date": "2026-11-28",
    "machine": "2-core x86 (AVX2) CPU, torch 2.13, float32 model, one thread per run",
    "how": "benchmarks/cost_calibration.py: process CPU time of each piece on a pinned core",
}

#: CPU seconds on :data:`COST_MEASURED`'s machine class. The pieces:
#:
#: * a training step on a batch of 128 contexts of size ``n`` (:func:`step_terms`): its data,
#:   drawn by the exact float64 path, ``DATA_S + DATA_N2_S n^2 + DATA_N2D_S n^2 d + DATA_N3_S n^3``
#:   (Gram matrix, Cholesky factor, ``Y = L z``; ``HIER_DATA_N3_S n^3`` more for the hierarchical
#:   prior, whose contexts each have a Gram matrix per component) or, for a fast-numerics run at
#:   ``n <= FUSED_DRAW_MAX_N`` (the draw a run started now takes; :mod:`pfntheory.nn.arithmetic`),
#:   by the fused GP draw, the same form in ``FUSED_*`` (fitted up to n = 384 only: the fused
#:   draw grows faster above, where no run started now takes it); and its model step,
#:   ``STEP_S + STEP_N_S n + (L - 1)(RBF_N_S n + RBF_N2_S n^2 + RBF_N2D_S n^2 d)`` (embedding,
#:   head, loss, Adam, the weight average; forward and backward of each solver layer's
#:   ``(n+1) x n`` kernel), ``LINEAR_N_S n`` per layer for the linear score; ``RUN_S`` once per run
#:   (the interval's calibration, 0.2-0.3 s measured, building the model, the checkpoints: set,
#:   not fitted);
#: * a forward of the model without gradients, per context, ``FWD0_N2_S n^2 + (L - 1)(FWD_N_S n +
#:   FWD_N2_S n^2 + FWD_N2D_S n^2 d)`` (the context's kernel, formed once, then each layer), plus
#:   ``CURVE_S`` (a learning-curve point's metrics: :func:`curve_terms`, one forward per curve
#:   point, design and weights evaluated, two with a weight average: the average and the last
#:   iterate) or ``EVAL_S`` (the evaluation's metrics: :func:`eval_terms`, whose oracle is the exact
#:   draw of its contexts unless cached);
#: * an exact-PPD reference (:class:`ExactPPDSpec`, float64 NumPy), per context, ``EXACT_N2D_S``
#:   per mixture component and ``n'^2 d`` plus ``EXACT_N3_S`` per ``n'^3``.
#:
#: Fitted by ``benchmarks/cost_calibration.py --fit`` to its record of the pieces (within
#: 0.8-1.2 of each timing but the exact draw's, 0.86-1.2); the forwards timed on trained weights
#: (two finished d = 8 runs, L = 8 and 32: the forward of an initialisation was 3.6-6x slower).
#: ``HIER_DATA_N3_S``, ``LINEAR_N_S``, ``EXACT_N2D_S`` and ``EXACT_N3_S`` were not measured again:
#: they are the fit of 2026-11-25 to the wall times of committed runs on a loaded machine
#: (``benchmarks/cost_model.py``), likely high by its load.
COST = {
    "DATA_S": 1.03e-3,
    "DATA_N2_S": 1.38e-6,
    "DATA_N2D_S": 1.94e-8,
    "DATA_N3_S": 1.3e-9,
    "FUSED_DATA_S": 1.75e-3,
    "FUSED_N2_S": 0.0,
    "FUSED_N2D_S": 2.16e-8,
    "FUSED_N3_S": 3.74e-9,
    "HIER_DATA_N3_S": 1.48e-7,
    "STEP_S": 2.4e-3,
    "STEP_N_S": 1.47e-5,
    "RBF_N_S": 5.98e-6,
    "RBF_N2_S": 1.52e-8,
    "RBF_N2D_S": 1.14e-8,
    "LINEAR_N_S": 9.3e-6,
    "RUN_S": 2.0,
    "FWD0_N2_S": 3.41e-10,
    "FWD_N_S": 3.09e-8,
    "FWD_N2_S": 2.93e-11,
    "FWD_N2D_S": 2.2e-11,
    "CURVE_S": 4.39e-5,
    "EVAL_S": 4.23e-5,
    "EXACT_N2D_S": 5.0e-9,
    "EXACT_N3_S": 3.7e-11,
}


def _run_spec(spec, name: str = "spec") -> RunSpec:
    if not isinstance(spec, RunSpec):
        raise ArgumentTypeError(f"{name} must be a RunSpec (a trained run), got {spec!r}"[:200])
    return spec


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


def _layers(spec: RunSpec) -> float:
    """Solver layers weighted by their kernels: ``L - 1``, times the kernels of a mixture model."""
    m = spec.model
    layers: float = max(m.L - 1, 0)
    if m.mixture:  # a kernel per lengthscale group on 2 H_g + 1 value channels (measured 7.7x
        # the single head's 3 at d = 16, 3 x 3 grid; pfntheory.nn.multihead_model)
        t = spec.task
        layers *= len(set(t.hier_lengthscales)) * (2 * len(t.hier_noise_stds) + 1) / 3
    return layers


def draw_terms(spec: RunSpec, n: int, contexts: float, fused: bool = False) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of drawing ``contexts``
    contexts of size ``n`` of ``spec``'s prior with their exact PPD (``fused``: by the fused GP
    draw, which applies to a one-component rbf prior only)."""
    n = positive_int(n, "n", maximum=MAX_ELEMENTS)
    contexts = positive_scalar(contexts, "contexts")
    if contexts > MAX_ELEMENTS:  # a batch no run could hold: refused, as the trainer refuses it
        raise ValueError(f"contexts must be <= {MAX_ELEMENTS}, got {contexts:g}")
    instance_of(bool)(fused, "fused")
    t, b = _run_spec(spec).task, contexts / 128
    if t.kind == "blr":  # drawn in weight space (O(n d^2), no Cholesky of an n x n Gram matrix)
        return {"DATA_S": b}
    pre = "FUSED_" if fused and t.kind == "rbf" else ""
    terms = {
        f"{pre}DATA_S": b,
        f"{pre}{'N2_S' if pre else 'DATA_N2_S'}": b * n * n,
        f"{pre}{'N2D_S' if pre else 'DATA_N2D_S'}": b * n * n * t.d,
        f"{pre}{'N3_S' if pre else 'DATA_N3_S'}": b * n**3,
    }
    if pre:
        return terms
    if t.kind == "hier_rbf":
        terms["HIER_DATA_N3_S"] = b * n**3
    return terms


def step_terms(
    spec: RunSpec, n: int, batch: int, fused_max_n: int | None = None
) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of one training step of
    ``spec`` on a batch of ``batch`` contexts of size ``n``: the data (by the fused draw at
    ``n <= fused_max_n`` for a fast-numerics run; None: :data:`FUSED_DRAW_MAX_N`, the draw of a
    run started now) and the model's step. The model is linear in its coefficients, so that
    ``benchmarks/cost_model.py`` can refit them to timed runs."""
    spec = _run_spec(spec)
    n = positive_int(n, "n", maximum=MAX_ELEMENTS)
    batch = positive_int(batch, "batch", maximum=MAX_ELEMENTS)
    limit = FUSED_DRAW_MAX_N if fused_max_n is None else positive_int(fused_max_n, "fused_max_n")
    terms = draw_terms(spec, n, batch, fused=spec.fast_numerics and n <= limit)
    b, layers = batch / 128, _layers(spec)
    terms["STEP_S"], terms["STEP_N_S"] = b, b * n
    if spec.model.score == "linear":  # the linear score never forms the kernel
        terms["LINEAR_N_S"] = b * layers * n
    else:  # the (n+1) x n kernel (exp-bound, distances ~ d) plus per-row work
        terms["RBF_N_S"] = b * layers * n
        terms["RBF_N2_S"] = b * layers * n * n
        terms["RBF_N2D_S"] = b * layers * n * n * spec.task.d
    return terms


def _add(total: dict[str, float], terms: dict[str, float], weight: float = 1.0) -> None:
    for k, v in terms.items():
        total[k] = total.get(k, 0.0) + weight * v


def training_terms(spec: RunSpec, fused_max_n: int | None = None) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of training ``spec`` (its
    steps, with ``n ~ Unif{n_min..n_max}`` per step, and ``RUN_S`` once); the learning curves and
    the evaluations are :func:`curve_terms` and :func:`eval_terms`."""
    _run_spec(spec)
    ns = range(spec.n_min, spec.n_max + 1)
    terms = {"RUN_S": 1.0}
    for n in ns:
        _add(terms, step_terms(spec, n, spec.batch_size, fused_max_n), spec.steps / len(ns))
    return terms


def training_seconds(spec: RunSpec, cost: dict[str, float] | None = None) -> float:
    """Estimated seconds of training ``spec`` (:func:`training_terms`) under the coefficients
    ``cost`` (default :data:`COST`)."""
    return _seconds(training_terms(spec), cost)


def _forward_terms(spec: RunSpec, n: int, contexts: float, fixed: str) -> dict[str, float]:
    """A forward without gradients of ``contexts`` contexts of size ``n``, and their metrics
    (``fixed``: ``CURVE_S`` or ``EVAL_S``)."""
    c, layers = contexts, _layers(spec)
    return {
        fixed: c,
        "FWD0_N2_S": c * n * n,
        "FWD_N_S": c * layers * n,
        "FWD_N2_S": c * layers * n * n,
        "FWD_N2D_S": c * layers * n * n * spec.task.d,
    }


def _curve_grid(steps: int, points: int) -> list[int]:
    """The steps of a learning curve (:func:`pfntheory.nn.curve.curve_steps`, which imports
    torch; tests/test_cost.py holds the two equal)."""
    first = 10 if steps >= 100 else 1
    grid = np.unique(np.round(np.geomspace(first, steps, points)).astype(int))
    return [0] + sorted({int(v) for v in grid} | {steps})


def curve_terms(spec: RunSpec, after: int | None = None) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of ``spec``'s learning
    curves: at each curve point, each design (the task's and ``curve_covariates``) and each
    weights evaluated (the average and the last iterate of a weight-averaged run), a forward and
    the metrics of ``curve_instances`` held-out contexts per ``n'``; the held-out sets drawn
    once per design. ``after``: only the points after that step (a resumed run's; None: every
    point, step 0 included)."""
    spec = _run_spec(spec)
    first = -1 if after is None else positive_int(after, "after", minimum=0)
    terms: dict[str, float] = {}
    if not spec.curve_n_eval:
        return terms
    designs = 1 + len(spec.curve_covariates)
    forwards = sum(s > first for s in _curve_grid(spec.steps, spec.curve_points)) * designs
    forwards *= 2 if spec.ema_decay > 0 else 1
    for n in spec.curve_n_eval:
        _add(terms, _forward_terms(spec, n, spec.curve_instances, "CURVE_S"), forwards)
        _add(terms, draw_terms(spec, n, spec.curve_instances), designs)
    return terms


def eval_terms(spec: RunSpec, *, oracle_cached: bool) -> dict[str, float]:
    """The multipliers of the :data:`COST` coefficients in the seconds of ``spec``'s evaluations:
    per evaluation and ``n'``, the exact oracle of its contexts (unless ``oracle_cached``: read
    from a store computed once per grid) and the model's forward and metrics."""
    spec = _run_spec(spec)
    instance_of(bool)(oracle_cached, "oracle_cached")
    terms: dict[str, float] = {}
    for e in spec.evals:
        for n in e.n_eval:
            _add(terms, _forward_terms(spec, n, e.n_instances, "EVAL_S"))
            if not oracle_cached:
                _add(terms, draw_terms(spec, n, e.n_instances))
    return terms


def run_parts(
    spec: RunSpec, *, oracle_cached: bool = False, cost: dict[str, float] | None = None
) -> dict[str, float]:
    """Estimated CPU seconds of the trained run ``spec`` on one core, by part (:data:`PARTS`):
    ``training`` (its steps and fixed cost), ``curves`` (the learning curves) and ``evaluation``
    (the final evaluations; ``oracle_cached``: their exact oracle read from a store instead of
    computed, which leaves the forward and the metrics), under the coefficients ``cost`` (default
    :data:`COST`)."""
    spec = _run_spec(spec)
    return {
        "training": _seconds(training_terms(spec), cost),
        "curves": _seconds(curve_terms(spec), cost),
        "evaluation": _seconds(eval_terms(spec, oracle_cached=oracle_cached), cost),
    }


def experiment_parts(experiment: Experiment, scale: str = "cpu", *, oracle_cached: bool = False):
    """:func:`run_parts` summed over the trained runs of ``experiment`` at ``scale``, plus
    ``exact`` (its exact-side runs, :func:`cpu_seconds`) and ``latent`` (a latent-GP study's runs
    and evaluation set, :func:`.latent.latent_seconds`)."""
    instance_of(Experiment)(experiment, "experiment")
    choice(scale, "scale", EXPERIMENT_SCALES)
    out = dict.fromkeys((*PARTS, "exact", "latent"), 0.0)
    for r in experiment.runs(scale):
        if isinstance(r, RunSpec):
            for k, v in run_parts(r, oracle_cached=oracle_cached).items():
                out[k] += v
        elif isinstance(r, (LatentRunSpec, LatentReferenceSpec)):
            out["latent"] += latent_seconds(r)
        else:
            out["exact"] += cpu_seconds(r, scale)
    return out


def cpu_seconds(spec_or_experiment, scale: str = "cpu", *, oracle_cached: bool = False) -> float:
    """Estimated single-core CPU seconds of a run (a spec) or of every run of an experiment at
    ``scale``: the sum of :func:`run_parts` (``oracle_cached``: the evaluations' oracle read from
    a store). An exact-PPD reference counts its Gram matrices (``EXACT_N2D_S``) and draws;
    fig:stepsize counts as 0 (seconds of NumPy)."""
    choice(scale, "scale", EXPERIMENT_SCALES)
    instance_of(bool)(oracle_cached, "oracle_cached")
    if isinstance(spec_or_experiment, Experiment):
        return float(
            sum(
                cpu_seconds(r, scale, oracle_cached=oracle_cached)
                for r in spec_or_experiment.runs(scale)
            )
        )
    spec = spec_or_experiment
    if not isinstance(spec, RunSpec):
        if isinstance(spec, ExactPPDSpec):
            grams = spec.task.n_components * spec.task.d * sum(n * n for n in spec.n_eval)
            draws = sum(n**3 for n in spec.n_eval)
            per_context = COST["EXACT_N2D_S"] * grams + COST["EXACT_N3_S"] * draws
            return float(spec.n_instances * per_context)
        if isinstance(spec, StepsizeSpec):
            return 0.0
        if isinstance(spec, (LatentRunSpec, LatentReferenceSpec)):
            return float(latent_seconds(spec))
        raise TypeError(
            f"spec_or_experiment must be an Experiment, its name or a spec, got "
            f"{type(spec).__name__}"
        )
    return float(sum(run_parts(spec, oracle_cached=oracle_cached).values()))
