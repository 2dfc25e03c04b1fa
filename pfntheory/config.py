"""Choices and defaults shared by the PyTorch layer, the experiment specs and the CLI (torch-free).

One place for the tuples of allowed values and the schedule tables, so that ``pfntheory.nn``,
``pfntheory.experiments`` and ``pfntheory.cli`` import them instead of keeping copies.

Implements the settings of supp-sec:exp details and supp-tab:pretraining hyperparameters; the
``cpu`` and ``quick`` scales are this project's (see :mod:`pfntheory.experiments.definitions`).
"""

from __future__ import annotations

from . import DEFAULT_NOISE_VAR

__all__ = [
    "CASESTUDY_SCALES",
    "DEFAULT_NOISE_VAR",
    "TASK_KINDS",
    "SPEC_TASK_KINDS",
    "COVARIATES",
    "SCORES",
    "MODES",
    "HEADS",
    "SCALES",
    "PAPER_SCHEDULE",
    "QUICK_SCHEDULE",
    "BATCH_SIZE",
    "WARMUP_FRAC",
    "MIN_LR_RATIO",
    "CLIP_NORM",
    "LEARNING_CURVE_SEED",
    "LEARNING_CURVE_FILE",
]

#: Prior families of :class:`pfntheory.nn.priors.TaskConfig` (sec:sims, supp-sec:real data).
TASK_KINDS = ("blr", "rbf", "hier_rbf", "ard_rbf")
#: The families an experiment of the paper pretrains on (the fitted ARD prior belongs to the case
#: studies, which build their own configs).
SPEC_TASK_KINDS = ("blr", "rbf", "hier_rbf")
#: Covariate laws: ``N(0, I/d)`` or ``Unif[-1/sqrt(d), 1/sqrt(d)]^d`` (supp-sec:exp additional).
COVARIATES = ("gaussian", "uniform")
#: Attention scores kappa (Sec. 3).
SCORES = ("linear", "rbf", "softmax")
#: Parameterisation modes of sec:sims.
MODES = ("theory", "learnable")
#: Heads: the analytic psi head (Sec. 4) or the MLP of eqn:tabPFN mlp.
HEADS = ("psi", "mlp")
#: Experiment scales: ``quick`` (CI minutes), ``cpu`` (the paper's tasks, fewer steps), ``paper``.
SCALES = ("quick", "cpu", "paper")

#: supp-tab:pretraining hyperparameters: (task kind, mode) -> (LR_base, N steps). TF and TF^pr on
#: the RBF task share the row; the hierarchical and fitted-ARD priors (no row of their own) use the
#: RBF learnable row, which the paper uses for every normalised model.
PAPER_SCHEDULE = {
    ("blr", "theory"): (2e-4, 10_000),
    ("blr", "learnable"): (2e-4, 20_000),
    ("rbf", "theory"): (1e-3, 50_000),
    ("rbf", "learnable"): (2e-4, 100_000),
    ("hier_rbf", "learnable"): (2e-4, 100_000),
    ("ard_rbf", "learnable"): (2e-4, 100_000),
}
#: Quick scale (CPU minutes): fewer steps, so a larger base learning rate.
QUICK_SCHEDULE = {"lr": 3e-3, "steps": 1_000}

#: How the learning rate applies to each parameter: "absolute" (plain Adam, every coordinate moves
#: about ``lr`` per step), "relative" (each tensor's rate is ``lr`` times the largest magnitude of its
#: initial values) or "elementwise" (Adam on ``u`` with ``theta = theta_0 * (1 + u)`` per entry: every
#: weight moves about ``lr`` of its own initial size per step; "Sample efficiency" in
#: :mod:`pfntheory.nn.train`).
LR_UNITS = ("absolute", "relative", "elementwise")
#: Scales of the case-study PFN (the keys of ``pfntheory.casestudy.pfn.SCALES``, named here so that
#: the CLI lists them without importing torch).
CASESTUDY_SCALES = ("quick", "cpu", "paper")

#: supp-sec:exp details: batch 128, linear warm-up over 5% of the steps, cosine decay to 0.1 x LR_base,
#: gradient clipping at global norm 1.
BATCH_SIZE = 128
WARMUP_FRAC = 0.05
MIN_LR_RATIO = 0.1
CLIP_NORM = 1.0

#: Seed of the held-out set of every learning curve (drawn once per run, the same for every run of
#: one task, so curves of different runs are comparable).
LEARNING_CURVE_SEED = 777
#: File of the learning curve in a run directory (schema 1, :func:`pfntheory.nn.train.read_learning_curve`).
LEARNING_CURVE_FILE = "learning_curve.json"
