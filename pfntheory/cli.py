"""Command-line interface: ``pfntheory train ...``, ``pfntheory evaluate RUN_DIR --n-eval ...``,
``pfntheory compare RUN_DIR``.

Each subcommand lives in a module with a ``register(subparsers)`` function that adds its parser and
sets ``func`` (called with the parsed namespace, returns an exit code). To add a subcommand (sweep,
report, casestudy, ...), write ``register`` in its module and add the module's name to
:data:`SUBCOMMAND_MODULES`: one line each. Modules are imported only when the parser is built, and
heavy imports (torch) happen inside ``func``, so ``pfntheory --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["SUBCOMMAND_MODULES", "build_parser", "main", "register"]

#: Modules whose ``register(subparsers)`` adds a subcommand. This module registers train/evaluate.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "pfntheory.cli",
    "pfntheory.experiments.runner",
    "pfntheory.report",
    "pfntheory.casestudy",
)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from err


# Choices repeated here (checked equal to the library's in tests/test_cli.py) so that building the
# parser does not import torch.
TASK_KINDS = ("blr", "rbf", "hier_rbf", "ard_rbf")
COVARIATES = ("gaussian", "uniform")
SCORES = ("linear", "rbf", "softmax")
MODES = ("theory", "learnable")
HEADS = ("psi", "mlp")


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="pretrain a PFN transformer on a GP prior (resumable)",
                       description="Pretrain a PFN transformer (sec:sims); re-running the same "
                                   "command resumes from the last checkpoint.")
    p.add_argument("--run-dir", required=True, help="run directory (created; resumed if present)")
    g = p.add_argument_group("task (prior)")
    g.add_argument("--task", required=True, choices=TASK_KINDS)
    g.add_argument("--d", type=int, required=True, help="input dimension")
    g.add_argument("--noise-var", type=float, default=None, help="sigma^2 (default 0.04)")
    g.add_argument("--alpha", type=float, default=None)
    g.add_argument("--lengthscale", type=float, default=None)
    g.add_argument("--lengthscales", type=_floats, default=None, help="ARD lengthscales, a,b,...")
    g.add_argument("--covariates", choices=COVARIATES, default=None)
    g = p.add_argument_group("model")
    g.add_argument("--score", choices=SCORES, default=None,
                   help="attention score (default: 'linear' for blr, else 'rbf')")
    g.add_argument("--L", type=int, required=True, help="attention layers incl. the first")
    g.add_argument("--C", type=int, required=True, help="number of bins")
    g.add_argument("--mode", default="learnable", choices=MODES)
    g.add_argument("--normalised", action="store_true", help="TF^pr (normalised attention)")
    g.add_argument("--head", default="psi", choices=HEADS)
    g.add_argument("--tau-min", type=float, default=None, help="head's positivity threshold of tau")
    g.add_argument("--eta-init", type=float, default=None, help="initial step size (model default)")
    g.add_argument("--scale-init", type=float, default=None,
                   help="initial diagonal of K = Q (e.g. 1/lengthscale)")
    g = p.add_argument_group("training")
    g.add_argument("--n-min", type=int, required=True)
    g.add_argument("--n-max", type=int, required=True)
    g.add_argument("--scale", choices=("quick", "paper"), default="paper",
                   help="default steps and LR: supp-tab:pretraining hyperparameters, or quick")
    g.add_argument("--steps", type=int, default=None)
    g.add_argument("--lr", type=float, default=None)
    g.add_argument("--batch-size", type=int, default=128)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--checkpoint-every", type=int, default=200)
    g.add_argument("--device", default="auto")
    g.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run_train)


def _run_train(args) -> int:
    from pfntheory.nn.model import ModelConfig
    from pfntheory.nn.priors import TaskConfig
    from pfntheory.nn.train import TrainConfig, schedule_for, train

    def given(**kw):
        return {k: v for k, v in kw.items() if v is not None}

    task = TaskConfig(kind=args.task, d=args.d, **given(
        noise_var=args.noise_var, alpha=args.alpha, lengthscale=args.lengthscale,
        lengthscales=args.lengthscales, covariates=args.covariates))
    score = args.score or ("linear" if args.task == "blr" else "rbf")
    model = ModelConfig(score=score, d=args.d, L=args.L, C=args.C, mode=args.mode,
                        normalised=args.normalised, head=args.head,
                        noise_var_init=task.noise_var,
                        **given(tau_min=args.tau_min, eta_init=args.eta_init, scale_init=args.scale_init))
    lr, steps = schedule_for(args.task, args.mode, args.scale)
    cfg = TrainConfig(task=task, model=model, n_min=args.n_min, n_max=args.n_max,
                      steps=args.steps or steps, lr=args.lr or lr, batch_size=args.batch_size,
                      seed=args.seed, checkpoint_every=args.checkpoint_every, device=args.device)
    run_dir = train(cfg, args.run_dir, progress=not args.no_progress)
    print(run_dir)
    return 0


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate a trained run against the exact PPD",
                       description="Evaluate a run at evaluation sizes n' (sec:sims, Inference); "
                                   "writes eval.json (or eval_<covariates>.json) in RUN_DIR.")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--n-eval", type=int, nargs="+", required=True, help="evaluation sizes n'")
    p.add_argument("--n-instances", type=int, default=4096)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--covariates", choices=COVARIATES, default=None, help="covariate shift")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=_run_evaluate)


def _run_evaluate(args) -> int:
    import json

    from pfntheory.nn.evaluate import evaluate

    doc = evaluate(args.run_dir, args.n_eval, args.n_instances, args.seed,
                   covariates=args.covariates, batch_size=args.batch_size, device=args.device,
                   progress=True)
    summary = {n: {k: round(v, 5) for k, v in r.items()
                   if k in ("tv", "mse_mean", "coverage_90", "crps", "crps_exact")}
               for n, r in doc["results"].items() if int(n) in args.n_eval}
    print(json.dumps(summary, indent=1))
    return 0


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="trained weights beside the construction of thm:TFdoPPD",
                       description="Learned feature scales, step sizes and readout of a trained run "
                                   "beside the values supp-eqn:weights prescribes, and the distance of "
                                   "its (mu_L, tau_L) to the exact Richardson solver after the same "
                                   "depth; writes construction.json in RUN_DIR.")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--n", type=int, default=None, help="context size (default (n_min+n_max)//2)")
    p.add_argument("--n-instances", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_run_compare)


def _run_compare(args) -> int:
    import json

    from pfntheory.nn.evaluate import compare_to_construction

    doc = compare_to_construction(args.run_dir, n=args.n, n_instances=args.n_instances,
                                  seed=args.seed)
    print(json.dumps({k: doc[k] for k in ("n", "scale", "amp", "W", "readout_rms")}, indent=1))
    return 0


def register(subparsers) -> None:
    """Add ``train``, ``evaluate`` and ``compare``."""
    _add_train(subparsers)
    _add_evaluate(subparsers)
    _add_compare(subparsers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pfntheory",
        description="Executable supplement to 'Transformers Can Learn Posterior Predictive "
                    "Distributions In-Context'.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pfntheory`` script. Bad input exits with status 2 and one clear line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        parser.exit(2, f"pfntheory {args.command}: error: {err}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
