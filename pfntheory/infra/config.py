"""The prior and the architecture nodes of the run tree, and the choices and defaults that the
PyTorch layer, the experiments and the CLI share (torch-free).

The pretraining prior (:class:`TaskSpec`) and its Gaussian-process components
(:func:`prior_components`), the transformer's architecture (:class:`ModelSpec`), the tuples of
allowed values, the schedule tables and the learning-curve file names (:func:`curve_file`); the
root of the tree is :class:`pfntheory.infra.tree.RunSpec` (docs/design.md, "The run tree").

Implements the settings of supp-sec:exp details and supp-tab:pretraining hyperparameters; the
``cpu`` and ``quick`` scales are this project's (see :mod:`pfntheory.experiments.definitions`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.base._checks import (
    MAX_DIM,
    MAX_ELEMENTS,
    ArgumentTypeError,
    choice,
    instance_of,
    positive_int,
    positive_scalar,
)
from pfntheory.maths.kernels import ARDRBFKernel, LinearKernel, RBFKernel, blr_sigma_diag
from pfntheory.maths.spectral import COVARIATES  # the laws of sample_design, re-exported

__all__ = [
    "TaskSpec",
    "ModelSpec",
    "CASESTUDY_SCALES",
    "DEFAULT_NOISE_VAR",
    "TASK_KINDS",
    "SPEC_TASK_KINDS",
    "COVARIATES",
    "SCORES",
    "MODES",
    "HEADS",
    "EXPERIMENT_SCALES",
    "PAPER_SCHEDULE",
    "QUICK_SCHEDULE",
    "schedule_for",
    "INTERVAL_LEVELS",
    "BATCH_SIZE",
    "FUSED_DRAW_MAX_N",
    "WARMUP_FRAC",
    "MIN_LR_RATIO",
    "CLIP_NORM",
    "LEARNING_CURVE_SEED",
    "LEARNING_CURVE_FILE",
    "curve_file",
    "prior_components",
]

#: Prior families of :class:`TaskSpec` (sec:sims, supp-sec:real data).
TASK_KINDS = ("blr", "rbf", "hier_rbf", "ard_rbf")
#: The families an experiment of the paper pretrains on (the fitted ARD prior belongs to the case
#: studies, which build their own trees).
SPEC_TASK_KINDS = ("blr", "rbf", "hier_rbf")
#: Attention scores kappa (Sec. 3).
SCORES = ("linear", "rbf", "softmax")
#: Parameterisation modes of sec:sims: ``theory`` (the paper's text: ``K = Q`` learned per layer),
#: ``learnable``, and ``theory_shared`` (the reading of the authors' public code: one ``K = Q`` for
#: every layer, a learned noise ``sigma``, separate attention and ridge steps per layer;
#: docs/design.md, "Known ambiguities").
MODES = ("theory", "learnable", "theory_shared")
#: Heads: the analytic psi head (Sec. 4) or the MLP of eqn:tabPFN mlp.
HEADS = ("psi", "mlp")
#: Scales of the paper's experiments (``pfntheory sweep --scale``): ``quick`` (CI minutes), ``cpu``
#: (the paper's tasks, fewer steps), ``paper``. Not the report's notebook sizes
#: (:data:`pfntheory.report.spec.REPORT_SCALES`) nor the case-study PFN's
#: (:data:`CASESTUDY_SCALES`).
EXPERIMENT_SCALES = ("quick", "cpu", "paper")

#: supp-tab:pretraining hyperparameters: (task kind, mode) -> (LR_base, N steps). TF and TF^pr on
#: the RBF task share the row; the hierarchical and fitted-ARD priors (no row of their own) use the
#: RBF learnable row, which the paper uses for every normalised model.
PAPER_SCHEDULE = {
    ("blr", "theory"): (2e-4, 10_000),
    ("blr", "learnable"): (2e-4, 20_000),
    ("rbf", "theory"): (1e-3, 50_000),
    ("blr", "theory_shared"): (2e-4, 10_000),
    ("rbf", "theory_shared"): (1e-3, 50_000),
    ("rbf", "learnable"): (2e-4, 100_000),
    ("hier_rbf", "learnable"): (2e-4, 100_000),
    ("ard_rbf", "learnable"): (2e-4, 100_000),
}
#: Quick scale (CPU minutes): fewer steps, so a larger base learning rate.
QUICK_SCHEDULE = {"lr": 3e-3, "steps": 1_000}


def schedule_for(kind: str, mode: str, scale: str = "paper") -> tuple[float, int]:
    """``(LR_base, steps)`` for a task kind and parameterisation mode at ``scale`` 'paper' or
    'quick' (the ``cpu`` scale chooses its steps per experiment, see
    :mod:`pfntheory.experiments.definitions`). Torch-free, so that the command line checks a whole
    run tree before it imports torch."""
    choice(kind, "task kind", TASK_KINDS)
    choice(mode, "mode", MODES)
    choice(scale, "scale", tuple(x for x in EXPERIMENT_SCALES if x != "cpu"))
    if scale == "quick":
        return QUICK_SCHEDULE["lr"], int(QUICK_SCHEDULE["steps"])
    key = (kind, mode) if (kind, mode) in PAPER_SCHEDULE else (kind, "learnable")
    if key not in PAPER_SCHEDULE:
        raise ValueError(
            f"unknown task kind {kind!r}; expected one of {sorted({k for k, _ in PAPER_SCHEDULE})}"
        )
    return PAPER_SCHEDULE[key]


#: How the learning rate applies to each parameter: "absolute" (plain Adam, every coordinate moves
#: about ``lr`` per step), "relative" (each tensor's rate is ``lr`` times the largest magnitude of
#: its initial values) or "elementwise" (Adam on ``u`` with ``theta = theta_0 * (1 + u)`` per entry:
#: every weight moves about ``lr`` of its own initial size per step; docs/design.md, "Sample
#: efficiency").
LR_UNITS = ("absolute", "relative", "elementwise")
#: Scales of the case-study PFN (the keys of ``pfntheory.casestudy.pfn.SCALES``, a table of
#: ``PFNScale``, named here so that the CLI lists them without importing torch).
CASESTUDY_SCALES = ("quick", "cpu", "paper")

#: Central-interval levels of the coverage and width metrics (supp-tab:lengthscale-crps: 50/90/95%),
#: of the trained runs' evaluations and the exact-PPD references alike.
INTERVAL_LEVELS = (0.5, 0.9, 0.95)

#: Largest ``n`` at which a fast-numerics run started from step 0 draws its training batches with
#: the fused GP draw (``sample_batch(..., fast=True)``); larger ``n`` take the exact float64 path,
#: which is faster there (issue 45). Measured 2026-11-28 on the project's machine class (2-core x86,
#: AVX2, torch 2.13, one thread pinned to a core; ``benchmarks/draw_per_n.py --crossover``): CPU
#: seconds per batch of 128, the fused draw is faster at n <= 352 at d = 4, 8 and 16, level with
#: the exact path at n = 368 for d <= 8 and slower from n = 368 at d = 16 and from 384 at every d
#: (docs/speed.md, "Issue 45: the training draw per n"). Recorded per run
#: (:func:`pfntheory.nn.arithmetic.fused_draw_max_n`); torch-free here for the cost model.
FUSED_DRAW_MAX_N = 352

#: supp-sec:exp details: batch 128, linear warm-up over 5% of the steps, cosine decay to 0.1 x
#: LR_base, gradient clipping at global norm 1.
BATCH_SIZE = 128
WARMUP_FRAC = 0.05
MIN_LR_RATIO = 0.1
CLIP_NORM = 1.0

#: Seed of the held-out set of every learning curve (drawn once per run, the same for every run of
#: one task, so curves of different runs are comparable).
LEARNING_CURVE_SEED = 777
#: File of the learning curve in a run directory (schema 1,
#: :func:`pfntheory.infra.convergence.read_learning_curve`).
LEARNING_CURVE_FILE = "learning_curve.json"


def curve_file(covariates: str | None = None) -> str:
    """File name of a learning curve: ``learning_curve.json`` (the task's own covariates, ``None``)
    or ``learning_curve_<covariates>.json`` (a covariate override, as ``eval_<covariates>.json``).

    Only names the file: a reader of an unknown covariate law finds no file ("no curve"); the
    trainer, which writes the files, checks its laws against :data:`COVARIATES`."""
    if covariates is None:
        return LEARNING_CURVE_FILE
    return LEARNING_CURVE_FILE.replace(".json", f"_{covariates}.json")


# --------------------------------------------------------------------------------------------------
# The prior and the architecture: the two leaf nodes of the run tree (pfntheory.infra.tree.RunSpec),
# one class each, torch-free. The model takes ``d`` and the noise variance from the prior node.
# --------------------------------------------------------------------------------------------------


def _float_tuple(x, name: str, length: int | None = None) -> tuple[float, ...] | None:
    if x is None:
        return None
    t = tuple(positive_scalar(v, name) for v in x)
    if len(t) == 0 or (length is not None and len(t) != length):
        want = f"{length}" if length is not None else "at least 1"
        raise ValueError(f"{name} must have {want} entries, got {len(t)}")
    return t


def _fmt(x: float) -> str:
    return f"{x:g}".replace(".", "p")


@dataclass(frozen=True)
class TaskSpec:
    """The pretraining prior (sec:sims, supp-sec:exp details, supp-sec:real data).

    Attributes
    ----------
    kind : {'blr', 'rbf', 'hier_rbf', 'ard_rbf'}
        The experiments of the paper use the first three (:data:`SPEC_TASK_KINDS`); the fitted ARD
        prior of the case studies needs ``lengthscales``.
    d : int
        Input dimension (the model's token width is ``d + 4``).
    noise_var : float
        Noise variance ``sigma^2`` (``DEFAULT_NOISE_VAR``, i.e. std 0.2; docs/findings.md,
        "Noise"). The model's ``sigma^2`` (fixed in theory mode, the initial value in learnable
        mode) is this value; 'hier_rbf' draws its noise from the grid instead.
    alpha, lengthscale : float
        RBF amplitude and lengthscale (sec:sims: 1 and 0.8).
    hier_lengthscales, hier_noise_stds : tuple of float
        The grid ``Theta = {ell_h} x {sigma_h}`` of the hierarchical prior (uniform prior over it);
        noise given as *standard deviations* ``sigma_h``, as the paper writes it
        (supp-tab:hierarchical-gp); the component's noise variance is ``sigma_h^2``.
    covariates : {'gaussian', 'uniform'}
        ``N(0, scale^2 I)`` or ``Unif[-scale, scale]^d`` inputs.
    lengthscales : tuple of float, shape (d,), optional
        ARD lengthscales ('ard_rbf', required there; supp-sec:real data).
    sigma_diag : tuple of float, shape (d,), optional
        BLR prior covariance diagonal; default :func:`pfntheory.maths.kernels.blr_sigma_diag`.
    x_scale : float, optional
        Covariate scale; default ``1/sqrt(d)`` (the paper's design, :attr:`scale`).
    """

    kind: str
    d: int
    noise_var: float = DEFAULT_NOISE_VAR
    alpha: float = 1.0
    lengthscale: float = 0.8
    hier_lengthscales: tuple[float, ...] = (0.4, 0.8, 1.2)
    hier_noise_stds: tuple[float, ...] = (0.1, 0.2, 0.3)
    covariates: str = "gaussian"
    lengthscales: tuple[float, ...] | None = None
    sigma_diag: tuple[float, ...] | None = None
    x_scale: float | None = None

    def __post_init__(self):
        choice(self.kind, "task kind", TASK_KINDS)
        choice(self.covariates, "covariates", COVARIATES)
        object.__setattr__(self, "d", positive_int(self.d, "d"))
        if self.d > MAX_DIM:
            raise ValueError(f"d must be <= MAX_DIM = {MAX_DIM}, got {self.d}")
        for name in ("noise_var", "alpha", "lengthscale"):
            object.__setattr__(self, name, positive_scalar(getattr(self, name), name))
        for name in ("hier_lengthscales", "hier_noise_stds"):
            value = getattr(self, name)
            if value is None:
                raise ArgumentTypeError(
                    f"{name} must be a non-empty sequence of positive numbers, got None"
                )
            object.__setattr__(self, name, _float_tuple(value, name))
        if self.x_scale is not None:
            object.__setattr__(self, "x_scale", positive_scalar(self.x_scale, "x_scale"))
        for name in ("lengthscales", "sigma_diag"):
            object.__setattr__(self, name, _float_tuple(getattr(self, name), name, self.d))
        if self.kind == "ard_rbf" and self.lengthscales is None:
            raise ValueError("task kind 'ard_rbf' requires lengthscales (one per input dimension)")
        # a value the prior would not read is refused, not dropped
        for name, kind in (("lengthscales", "ard_rbf"), ("sigma_diag", "blr")):
            if getattr(self, name) is not None and self.kind != kind:
                raise ValueError(
                    f"{name} applies to task kind {kind!r} only, got kind {self.kind!r}"
                )

    @classmethod
    def from_fit(cls, fit, **kw) -> TaskSpec:
        """The fitted ARD RBF prior of supp-sec:real data from a
        :class:`pfntheory.maths.gp.EBFit`."""
        return cls(
            kind="ard_rbf",
            d=len(fit.lengthscales),
            alpha=fit.alpha,
            lengthscales=tuple(fit.lengthscales),
            noise_var=fit.noise_var,
            **kw,
        )

    @property
    def scale(self) -> float:
        """Covariate scale: std of N(0, scale^2 I) or half-width of Unif[-scale, scale]^d."""
        return 1.0 / math.sqrt(self.d) if self.x_scale is None else self.x_scale

    def slug(self) -> str:
        """The readable prefix of a run directory (``rbf-d2``, ``rbf-d16-ell0p4-uniform``...)."""
        s = f"{self.kind}-d{self.d}"
        if self.kind == "rbf" and self.lengthscale != 0.8:
            s += f"-ell{_fmt(self.lengthscale)}"
        if self.covariates != "gaussian":
            s += f"-{self.covariates}"
        return s

    @property
    def n_components(self) -> int:
        """Components of the prior's mixture PPD (the grid size for 'hier_rbf', else 1)."""
        if self.kind != "hier_rbf":
            return 1
        return len(self.hier_lengthscales) * len(self.hier_noise_stds)


_check_task = instance_of(TaskSpec, what="pfntheory.infra.config.TaskSpec")


def prior_components(task: TaskSpec) -> tuple[list, np.ndarray]:
    """Kernels and noise variances of the prior's Gaussian-process components (the one definition:
    the exact references of :mod:`pfntheory.experiments.reference` and the samplers of
    :mod:`pfntheory.nn.priors` both read it).

    One component for 'blr' (``Sigma`` = ``sigma_diag``, default
    :func:`~pfntheory.maths.kernels.blr_sigma_diag`), 'rbf' and 'ard_rbf' (``lengthscales``); for
    'hier_rbf' the grid ``{ell_h} x {sigma_h}`` (lengthscale outer, noise standard deviation inner;
    noise variance ``sigma_h^2``, supp-tab:hierarchical-gp).

    Returns
    -------
    kernels : list of kernel, length H
    noise_var : ndarray of shape (H,)
        ``sigma^2`` of each component.
    """
    task = _check_task(task, "task")
    if task.kind == "blr":
        sig = task.sigma_diag or blr_sigma_diag(task.d)
        return [LinearKernel(sig)], np.array([task.noise_var])
    if task.kind == "rbf":
        return [RBFKernel(task.alpha, task.lengthscale)], np.array([task.noise_var])
    if task.kind == "ard_rbf":
        if task.lengthscales is None:  # pragma: no cover - refused by TaskSpec
            raise ValueError("task kind 'ard_rbf' requires lengthscales (one per input dimension)")
        return [ARDRBFKernel(task.alpha, task.lengthscales)], np.array([task.noise_var])
    kernels, noise_var = [], []
    for ell in task.hier_lengthscales:
        for sigma_h in task.hier_noise_stds:  # the grid lists noise STDs (supp-tab:hierarchical-gp)
            kernels.append(RBFKernel(task.alpha, ell))
            noise_var.append(sigma_h**2)
    return kernels, np.array(noise_var)


def _check_bool(x, name: str) -> None:
    if not isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {x!r}")


@dataclass(frozen=True)
class ModelSpec:
    """The transformer's architecture (sec:sims, supp-sec:exp details). Its input dimension ``d``
    and its noise variance ``sigma^2`` are the prior's (:class:`TaskSpec`): the model is built from
    both nodes (:func:`pfntheory.nn.model.PFNTransformer`), it holds no copy of them.

    Attributes
    ----------
    score : {'linear', 'rbf', 'softmax'}
        Attention score ``kappa`` (Sec. 3): ``linear`` for BLR, ``rbf`` for the RBF tasks.
    L : int
        Number of attention layers including the first (k_x-writing) layer (>= 1).
    C : int
        Number of bins (>= 2).
    mode : {'theory', 'learnable', 'theory_shared'}
        Parameterisation of sec:sims (see :mod:`pfntheory.nn.model`); ``theory_shared`` is the
        other reading of theory mode (one ``K = Q`` for all layers, learned ``sigma``, separate
        attention and ridge steps per layer; docs/design.md, "Known ambiguities").
    normalised : bool
        False: ``TF`` (eqn:std attn); True: ``TF^pr`` (``Attn^na`` in the solver layers and the
        ``1/s_x`` skip scaling). With the ``linear`` score ``s_x`` can vanish or change sign (the
        paper restricts ``TF^pr`` to positive kernels); it is computed as is, not guarded.
    head : {'psi', 'mlp'}
        The analytic psi head (Sec. 4, supp-sec:exp details) or the MLP of eqn:tabPFN mlp.
    mixture : bool
        One head per component of the prior and a mixture-weight readout (the remark "Extension to
        hierarchical GPs"; :class:`pfntheory.nn.multihead_model.MixturePFN`): needs ``score='rbf'``,
        ``mode='learnable'``, ``head='psi'`` and ``L >= 2``.
    mlp_width : int
        ``C'`` of the MLP head (>= 1).
    eta_init : float or None
        Initial step size ``eta`` of every solver layer; ``None`` gives
        :func:`pfntheory.nn.model.default_eta` (docs/design.md, "The run tree").
    scale_init : float
        Initial diagonal of ``K = Q`` (``1/lengthscale`` for rbf, ``sqrt(Sigma_kk)`` for linear).
    amp_init : float
        Initial ``V^(0)_{k,y}`` (``alpha^2`` for rbf). The step size enters ``V`` as
        ``eta * amp`` (unnormalised) or ``eta`` (normalised) and ``S`` as ``-eta sigma^2``
        (unnormalised) or ``-eta sigma^2 / amp`` (normalised), so that the layer is the Richardson
        step eqn:recursion / eqn:recursion prec for the kernel ``amp * kappa``.
    tau_min : float
        Threshold of the head's smooth positivity map of ``tau`` (see :mod:`pfntheory.nn.head`).
    shared_scale : bool
        One ``K = Q`` diagonal shared by every layer, so the kernel is computed once per forward
        (``theory_shared`` always shares it, :attr:`one_scale`).
    normalise_first : bool
        The first layer (eqn:1st attn, one key per query: the query token) normalised too, as the
        solver layers of ``TF^pr``: the reading of ``TF^pr`` in the authors' public code, where
        that layer's weight ``kappa / kappa`` is 1 and the ``k_x`` row holds ``amp`` for every
        token instead of ``amp kappa(x_j, x)`` (docs/design.md, "Known ambiguities"). Needs
        ``normalised=True`` and ``mixture=False``. A late field: at its default it enters neither
        a run's name nor its hash; set, the model slug reads ``pr-nf-...``.
    """

    score: str
    L: int
    C: int
    mode: str = "learnable"
    normalised: bool = False
    head: str = "psi"
    mixture: bool = False
    mlp_width: int = 64
    eta_init: float | None = None
    scale_init: float = 1.0
    amp_init: float = 1.0
    tau_min: float = 1e-3
    shared_scale: bool = False
    normalise_first: bool = False

    def __post_init__(self):
        choice(self.score, "score", SCORES)
        choice(self.mode, "mode", MODES)
        choice(self.head, "head", HEADS)
        object.__setattr__(self, "L", positive_int(self.L, "L"))
        object.__setattr__(self, "C", positive_int(self.C, "C", minimum=2))
        object.__setattr__(self, "mlp_width", positive_int(self.mlp_width, "mlp_width"))
        for name in ("normalised", "mixture", "shared_scale", "normalise_first"):
            _check_bool(getattr(self, name), name)
        if self.normalise_first and (not self.normalised or self.mixture):
            raise ValueError(
                "normalise_first=True (the first layer normalised too) needs normalised=True "
                f"(TF^pr) and mixture=False, got normalised={self.normalised}, "
                f"mixture={self.mixture}"
            )
        if self.mixture and (
            self.score != "rbf" or self.mode != "learnable" or self.head != "psi" or self.L < 2
        ):
            raise ValueError(
                "mixture=True needs score='rbf', mode='learnable', head='psi' and L >= 2, got "
                f"score={self.score!r}, mode={self.mode!r}, head={self.head!r}, L={self.L}"
            )
        for name in ("scale_init", "amp_init", "tau_min"):
            positive_scalar(getattr(self, name), name)
        if self.eta_init is not None:
            positive_scalar(self.eta_init, "eta_init")

    @property
    def one_scale(self) -> bool:
        """Whether every layer shares one ``K = Q`` diagonal (``shared_scale`` or mode
        ``theory_shared``)."""
        return self.shared_scale or self.mode == "theory_shared"

    def slug(self) -> str:
        """The model part of a run directory's name (``pr-learn-L32-C256``, with ``mixture``
        ``pr-mix-learn-L8-C256``, mode ``theory_shared`` ``tf-thsh-L32-C256``, with
        ``normalise_first`` ``pr-nf-learn-L4-C256``...)."""
        mix = "mix-" if self.mixture else ""
        nf = "-nf" if self.normalise_first else ""
        tag = "thsh" if self.mode == "theory_shared" else self.mode[:5]
        return f"{'pr' if self.normalised else 'tf'}{nf}-{mix}{tag}-L{self.L}-C{self.C}"

    def check_size(self, d: int) -> None:
        """Refuse, before any parameter is allocated, an architecture whose largest parameter
        block (the dense ``(L, d+4, d+4)`` matrices, or the MLP head's ``C' x C``) exceeds
        ``MAX_ELEMENTS`` for inputs of dimension ``d``."""
        for name, size in (
            ("L * (d + 4)^2", self.L * (d + 4) ** 2),
            ("C * mlp_width", self.C * self.mlp_width if self.head == "mlp" else 0),
        ):
            if size > MAX_ELEMENTS:
                raise ValueError(
                    f"{name} = {size:.3g} parameters exceeds the limit MAX_ELEMENTS = "
                    f"{MAX_ELEMENTS:.3g} (L={self.L}, d={d}, C={self.C}, "
                    f"mlp_width={self.mlp_width})"
                )
