"""The PFNs library's own transformer on the paper's RBF task, audited beside TF / TF^pr (issue 50,
item 3; beyond the paper, extends fig:exp2-1).

Optional: needs the ``pfns`` package (``pip install 'pfntheory[audit-pfns]'``), imported lazily;
nothing in the main job imports this module (tests/test_contract.py skips it).

What it trains
--------------
A standard PFN (``pfns.model.transformer.TableTransformer`` with ``attention_between_features =
False``: the PFN architecture of "Transformers can do Bayesian inference", softmax attention,
layer norm, MLPs) with a ``FullSupportBarDistribution`` head, by ``pfns.train.train`` (the
library's own loop, optimiser and cosine schedule), on batches from ``pfns.priors.fast_gp`` (the
library's GP prior, gpytorch) set to the project's RBF task (:func:`task_of`, read from
:class:`~pfntheory.infra.config.TaskSpec` defaults): ``k(x, x') = alpha^2 exp(-||x - x'||^2 / (2
ell^2))`` with ``alpha = 1`` (``outputscale`` 1) and ``ell = 0.8`` (sec:sims; the project's
default, not 1), noise variance ``sigma^2 = 0.04`` (sd 0.2), covariates ``N(0, I/d)`` (fast_gp's
``sampling`` = ``1/sqrt(d)``: ``x = randn * sampling``). The context size ``n`` of each batch is
drawn from the pretraining range ``[n_min, n_max]`` by pfns's batch-shape sampler (seeded per
epoch and step; uniform but for ``n_max`` at half weight, ``RangeShapeSampler``), followed by
``n_test`` query points whose noisy labels are the targets.

The bars: ``K`` equal bars whose inner ``K - 2`` tile exactly the project's truncation interval
``(a, b]`` for the task and range (:func:`pfntheory.nn.priors.calibrate_task_interval`, the
interval the project's runs train and are scored on), plus one bar of the same width on each side
carrying the full-support criterion's half-normal tails; the audit scores on the inner bars, where
the conversion is exact (:mod:`pfntheory.nn.audit_pfns`).

Budget doubling as the project's runs: each setting is trained for ``S`` and ``2S`` steps, each
with its own schedule, both audited on the same instances (per-instance TV recorded), so that the
claims (:mod:`pfntheory.claims.pfns_baseline`) are gated as the project's rows.

Run directory ``<root>/<name>/``: ``pfns_config.json`` (every setting, the pfns and torch
versions, the parameter count, CPU seconds of training and of each audit), ``weights.pt`` (the
state_dict), ``audit.json`` (N(0, I/d)) and, where asked, ``audit_uniform.json`` (the covariate
shift). The project's own runs audited on the same instances go to ``<root>/reference/<run
name>/audit*.json``. Each file is written atomically; a rerun skips what is there.

Command: ``python -m pfntheory.pipelines.pfns_baseline --root reports/runs/pfns_baseline --steps
S`` (``--help``).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from pfntheory.base._checks import positive_int
from pfntheory.base._entry import OneLineParser, run_entry
from pfntheory.infra.config import TaskSpec
from pfntheory.infra.runs import load_json, save_json, save_torch
from pfntheory.infra.tree import EVAL_SEED, EvalSpec

__all__ = [
    "PfnsSetting",
    "CONFIG",
    "AUDIT_N",
    "AUDIT_INSTANCES",
    "REFERENCE_RUNS",
    "task_of",
    "borders_of",
    "audit_spec",
    "train_run",
    "audit_run",
    "audit_reference",
    "load_model",
    "main",
]

#: A pfns run's settings file: not ``config.json``, which under ``reports/`` is a project run's
#: (tests/test_run_tree.py reads every one as a RunSpec).
CONFIG = "pfns_config.json"
#: fig:exp2-1's axis of n' (40 to 200), inside and beyond the pretraining range [64, 128].
AUDIT_N = (40, 64, 96, 128, 160, 200)
#: Instances per n' (the budget of issue 50: 256, as the project's learning curves).
AUDIT_INSTANCES = 256

#: The project's committed runs audited beside the pfns models, on the same instances, by d:
#: (label, run directory relative to the repository). d = 2 has TF only (fig:exp1's grid; no
#: TF^pr run at d = 2 is committed); d = 8 has fig:exp2-1's TF and TF^pr (L = 32) and
#: supp-fig:exp2-3's TF^pr at L = 4 and 8, all with n_max = 128.
REFERENCE_RUNS: dict[int, tuple[tuple[str, str], ...]] = {
    2: (("TF L=16", "reports/runs/fig_exp1_budget/rbf-d2-tf-learn-L16-C256-n64-128-s4000-"),),
    8: (
        ("TF L=32", "reports/runs/fig_exp2_1_budget/rbf-d8-tf-learn-L32-C256-n64-128-s8000-"),
        ("TF^pr L=32", "reports/runs/fig_exp2_1_budget/rbf-d8-pr-learn-L32-C256-n64-128-s8000-"),
        ("TF^pr L=8", "reports/runs/supp_exp2_d8_budget/rbf-d8-pr-learn-L8-C256-n64-128-s2000-"),
        ("TF^pr L=4", "reports/runs/supp_exp2_d8_budget/rbf-d8-pr-learn-L4-C256-n64-128-s2000-"),
    ),
}


def _need_pfns():
    try:
        import pfns
    except ImportError as e:  # pragma: no cover - exercised where pfns is absent
        raise ImportError(
            "pfntheory.pipelines.pfns_baseline needs the optional pfns package: "
            "pip install 'pfntheory[audit-pfns]'"
        ) from e
    return pfns


@dataclasses.dataclass(frozen=True)
class PfnsSetting:
    """One pfns training run.

    ``d``: input dimension; ``steps``: optimiser steps (``epochs x steps_per_epoch``);
    ``n_min, n_max``: the pretraining range; ``emsize, nhid, nlayers, nhead``: the transformer;
    ``bars``: K of the bar distribution (inner ``K - 2`` on the task's interval); ``batch_size``
    datasets per step, each with ``n_test`` query points; ``lr`` (Adam, pfns's cosine schedule
    with ``warmup_frac`` of the epochs warming up); ``seed``: torch's seed (the prior's draws and
    the initialisation) and the batch-shape sampler's."""

    d: int
    steps: int
    n_min: int = 64
    n_max: int = 128
    emsize: int = 64
    nhid: int = 128
    nlayers: int = 4
    nhead: int = 4
    bars: int = 130
    batch_size: int = 16
    n_test: int = 16
    lr: float = 1e-3
    warmup_frac: float = 0.1
    steps_per_epoch: int = 50
    seed: int = 0

    def __post_init__(self):
        for f in ("d", "steps", "n_min", "n_max", "emsize", "nhid", "nlayers", "nhead"):
            object.__setattr__(self, f, positive_int(getattr(self, f), f))
        for f in ("batch_size", "n_test", "steps_per_epoch"):
            object.__setattr__(self, f, positive_int(getattr(self, f), f))
        if self.n_min > self.n_max:
            raise ValueError(f"n_min must be <= n_max, got {self.n_min} > {self.n_max}")
        if self.bars < 4:
            raise ValueError(f"bars must be >= 4 (two tail bars and two inner), got {self.bars}")
        if self.steps % self.steps_per_epoch:
            raise ValueError(
                f"steps ({self.steps}) must be a multiple of steps_per_epoch "
                f"({self.steps_per_epoch}): pfns trains whole epochs"
            )
        if self.emsize % self.nhead:
            raise ValueError(f"emsize ({self.emsize}) must be a multiple of nhead ({self.nhead})")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"lr must be in (0, 1), got {self.lr!r}")
        if not (isinstance(self.warmup_frac, (int, float)) and 0 <= self.warmup_frac < 1):
            raise ValueError(f"warmup_frac must be in [0, 1), got {self.warmup_frac!r}")

    @property
    def name(self) -> str:
        return (
            f"pfns-rbf-d{self.d}-L{self.nlayers}-e{self.emsize}-K{self.bars}"
            f"-n{self.n_min}-{self.n_max}-s{self.steps}-seed{self.seed}"
        )

    @property
    def epochs(self) -> int:
        return self.steps // self.steps_per_epoch


def task_of(d: int) -> TaskSpec:
    """The paper's RBF task at ``d`` with the project's defaults (sec:sims): ``alpha = 1``,
    ``ell = 0.8``, ``sigma^2 = 0.04``, covariates ``N(0, I/d)``."""
    return TaskSpec("rbf", positive_int(d, "d"))


def borders_of(setting: PfnsSetting) -> tuple[np.ndarray, tuple[float, float]]:
    """The bars' borders (K + 1) and the task's interval ``(a, b]``: the inner ``K - 2`` bars tile
    ``(a, b]`` exactly, one bar of the same width beyond each end."""
    from pfntheory.nn.priors import calibrate_task_interval

    a, b = calibrate_task_interval(task_of(setting.d), setting.n_min, setting.n_max)
    inner = setting.bars - 2
    w = (b - a) / inner
    borders = np.concatenate([[a - w], np.linspace(a, b, inner + 1), [b + w]])
    return borders, (float(a), float(b))


def _hyperparameters(task: TaskSpec) -> dict[str, Any]:
    """fast_gp's hyperparameters of the task (its kernel is ``outputscale x exp(-r^2 / (2
    lengthscale^2))``, gpytorch's RBF; ``noise`` is a variance). gpytorch's fast computations
    are left at pfns's default (on): at n <= n_max + 1 + n_test, far below gpytorch's
    ``max_cholesky_size`` (800), the prior's draws still go through a Cholesky factor."""
    if task.kind != "rbf" or task.covariates != "gaussian":
        raise ValueError(f"the pfns prior is set for the RBF task on N(0, I/d), got {task}")
    return {
        "noise": float(task.noise_var),
        "outputscale": float(task.alpha) ** 2,
        "lengthscale": float(task.lengthscale),
        "sampling": float(task.scale),
        "observation_noise": True,
    }


def _config(setting: PfnsSetting, borders: np.ndarray):
    """pfns's MainConfig of ``setting`` (its own classes; the prior is pfns's ``AdhocPriorConfig``
    of ``fast_gp.get_batch``, a callable, so the config is not reusable as YAML and is trained
    with ``reusable_config=False``)."""
    _need_pfns()
    from pfns.batch_shape_sampler import BatchShapeSamplerConfig
    from pfns.model.bar_distribution import BarDistributionConfig
    from pfns.model.transformer_config import TransformerConfig
    from pfns.optimizer import OptimizerConfig
    from pfns.priors import fast_gp
    from pfns.priors.prior import AdhocPriorConfig
    from pfns.train import MainConfig

    @dataclasses.dataclass(frozen=True)
    class RangeShapeSampler(BatchShapeSamplerConfig):
        """pfns's sampler with the context size moved into [n_min, n_max]: pfns draws ``j``
        uniformly from [0, max_seq_len - 1 - n_test] = [0, n_max], and the context size is
        ``n_min + j mod (n_max - n_min + 1)``; for [64, 128] that is uniform on 64..127 and half
        as likely at 128 (j = 64 alone maps there)."""

        min_single_eval_pos: int = 0

        def sample_batch_shape(self, epoch: int, step: int):
            shape = super().sample_batch_shape(epoch, step)
            span = self.max_seq_len - self.fixed_num_test_instances - self.min_single_eval_pos
            sep = self.min_single_eval_pos + shape.single_eval_pos % span
            shape.single_eval_pos = sep
            shape.seq_len = sep + self.fixed_num_test_instances
            return shape

    task = task_of(setting.d)
    prior = AdhocPriorConfig(
        get_batch_methods=fast_gp.get_batch,
        prior_kwargs={"hyperparameters": _hyperparameters(task), "device": "cpu"},
    )
    return MainConfig(
        priors=[prior],
        optimizer=OptimizerConfig("adam", lr=setting.lr),
        model=TransformerConfig(
            criterion=BarDistributionConfig(borders=[float(v) for v in borders], full_support=True),
            emsize=setting.emsize,
            nhid=setting.nhid,
            nlayers=setting.nlayers,
            nhead=setting.nhead,
            features_per_group=setting.d,
            attention_between_features=False,
        ),
        batch_shape_sampler=RangeShapeSampler(
            batch_size=setting.batch_size,
            max_seq_len=setting.n_max + 1 + setting.n_test,
            min_num_features=setting.d,
            max_num_features=setting.d,
            fixed_num_test_instances=setting.n_test,
            seed=setting.seed,
            min_single_eval_pos=setting.n_min,
        ),
        epochs=setting.epochs,
        steps_per_epoch=setting.steps_per_epoch,
        train_mixed_precision=False,
        scheduler="cosine_decay",
        warmup_epochs=max(1, round(setting.warmup_frac * setting.epochs)),
        verbose=False,
        progress_bar=False,
        num_workers=0,
    )


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    import torch

    return {"pfns": md.version("pfns"), "torch": torch.__version__}


def _setting_of(run_dir: Path) -> PfnsSetting:
    cfg = load_json(run_dir / CONFIG)
    return PfnsSetting(**cfg["setting"])


def load_model(run_dir):
    """The trained pfns model of a run directory (its config's setting, the state_dict)."""
    import torch

    run_dir = Path(run_dir)
    setting = _setting_of(run_dir)
    borders, _ = borders_of(setting)
    model = _config(setting, borders).model.create_model()
    state = torch.load(run_dir / "weights.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    model.eval()
    return model, setting


def train_run(setting: PfnsSetting, root) -> Path:
    """Train ``setting`` with ``pfns.train.train`` into ``root / setting.name`` (skipped when its
    ``weights.pt`` and :data:`CONFIG` are there)."""
    import torch

    pfns = _need_pfns()
    run_dir = Path(root) / setting.name
    if (run_dir / "weights.pt").is_file() and (run_dir / CONFIG).is_file():
        return run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    borders, interval = borders_of(setting)
    c = _config(setting, borders)
    torch.manual_seed(setting.seed)
    threads = torch.get_num_threads()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = pfns.train.train(c, device="cpu", reusable_config=False)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    model = out["model"]
    save_torch(run_dir / "weights.pt", model.state_dict())
    save_json(
        run_dir / CONFIG,
        {
            "setting": dataclasses.asdict(setting),
            "name": setting.name,
            "task": dataclasses.asdict(task_of(setting.d)),
            "fast_gp_hyperparameters": _hyperparameters(task_of(setting.d)),
            "interval": list(interval),
            "borders": [float(v) for v in borders],
            "architecture": "pfns TableTransformer, attention_between_features=False "
            "(the PFN of Mueller et al. 2022), FullSupportBarDistribution head",
            "optimizer": "adam, pfns cosine_decay schedule",
            "versions": _versions(),
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "train_cpu_s": round(cpu, 2),
            "train_wall_s": round(wall, 2),
            "torch_threads": threads,
            "final_loss": float(out["total_loss"]),
        },
    )
    return run_dir


def audit_spec(covariates: str | None = None, n_instances: int = AUDIT_INSTANCES) -> EvalSpec:
    """The audit's instances: fig:exp2-1's n' (:data:`AUDIT_N`), ``n_instances`` per n', the
    committed evaluations' seed, on the task's design or under the shift ("uniform")."""
    return EvalSpec(AUDIT_N, n_instances, EVAL_SEED, covariates)


def _audit_file(covariates: str | None) -> str:
    return "audit.json" if covariates is None else f"audit_{covariates}.json"


def audit_run(run_dir, covariates: str | None = None, n_instances: int = AUDIT_INSTANCES) -> Path:
    """Audit a trained pfns run against the exact PPD (``audit.json`` / ``audit_<cov>.json``,
    skipped when there), on the interval's C = K - 2 inner bars, per-instance values kept."""
    from pfntheory.nn.audit import audit
    from pfntheory.nn.audit_pfns import pfns_model

    run_dir = Path(run_dir)
    path = run_dir / _audit_file(covariates)
    if path.is_file():
        return path
    model, setting = load_model(run_dir)
    # the inner bars, as the criterion holds them (float32): (a, b] in K - 2 equal bins
    edges = model.criterion.borders.detach().double().numpy()[1:-1]
    cpu0 = time.process_time()
    doc = audit(
        pfns_model(model, edges=edges),
        task_of(setting.d),
        audit_spec(covariates, n_instances),
        edges=edges,
        pretraining_range=(setting.n_min, setting.n_max),
        label=setting.name,
        instances=True,
    )
    doc["audit_cpu_s"] = round(time.process_time() - cpu0, 2)
    save_json(path, doc)
    return path


def _resolve(prefix: str, repo: Path) -> Path:
    p = repo / prefix
    found = sorted(p.parent.glob(p.name + "*"))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one committed run matching {prefix}*, found {found}")
    return found[0]


def audit_reference(
    d: int,
    root,
    repo=".",
    covariates: str | None = None,
    n_instances: int = AUDIT_INSTANCES,
) -> list[Path]:
    """Audit the project's committed runs of :data:`REFERENCE_RUNS` at ``d`` on the same instances
    (:func:`pfntheory.nn.audit.run_model`), into ``root / "reference" / <run> / audit*.json``."""
    from pfntheory.nn.audit import run_model

    out = []
    for label, prefix in REFERENCE_RUNS[d]:
        run = _resolve(prefix, Path(repo))
        dest = Path(root) / "reference" / run.name / _audit_file(covariates)
        if not dest.is_file():
            cpu0 = time.process_time()
            doc = run_model(run).audit(audit_spec(covariates, n_instances), instances=True)
            doc["audit_cpu_s"] = round(time.process_time() - cpu0, 2)
            doc["reference_label"] = label
            doc["run_dir"] = str(run.relative_to(Path(repo)))
            save_json(dest, doc)
        out.append(dest)
    return out


def main(argv=None) -> int:
    ap = OneLineParser(
        prog="python -m pfntheory.pipelines.pfns_baseline", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--root", default="reports/runs/pfns_baseline")
    ap.add_argument("--repo", default=".")
    ap.add_argument("--d", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--steps", type=int, required=True, help="S: trained for S and 2S steps")
    ap.add_argument("--instances", type=int, default=AUDIT_INSTANCES)
    ap.add_argument("--shift-d", type=int, nargs="*", default=[8])
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--only", choices=["train", "audit", "all"], default="all")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    for d in args.d:
        for steps in (args.steps, 2 * args.steps):
            s = PfnsSetting(d=d, steps=steps)
            run = train_run(s, args.root)
            print(f"trained {run}", flush=True)
            if args.only == "train":
                continue
            audit_run(run, None, args.instances)
            if d in args.shift_d:
                audit_run(run, "uniform", args.instances)
            print(f"audited {run}", flush=True)
        if args.only != "train" and not args.no_reference:
            audit_reference(d, args.root, args.repo, None, args.instances)
            if d in args.shift_d:
                audit_reference(d, args.root, args.repo, "uniform", args.instances)
            print(f"audited reference runs at d={d}", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_entry(main, "python -m pfntheory.pipelines.pfns_baseline")
