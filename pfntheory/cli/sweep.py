"""The ``pfntheory sweep`` command: run, resume or list the runs of the paper's experiments and of
the studies beyond it (the registry, :data:`pfntheory.experiments.definitions.REGISTRY`), and list
(and run, where it drives them) the studies outside it (:mod:`pfntheory.pipelines.studies`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from pfntheory.cli.options import add_run_options, int_in, nonnegative_float
from pfntheory.experiments import slurm as slurm_jobs
from pfntheory.experiments.definitions import (
    EXPERIMENT_SCALES,
    EXPERIMENTS,
    STUDIES,
    get_experiment,
)
from pfntheory.experiments.pool import EXECUTORS, slurm_available
from pfntheory.experiments.runner import sweep_many
from pfntheory.experiments.state import default_root, partial_progress, plan
from pfntheory.infra.tree import EVAL_ORACLES

__all__ = ["register", "main"]

#: argparse types of ``pfntheory sweep``: a count in [1, 10**6]; a finite number of seconds >= 0
_count = int_in(1, 10**6)
#: The scale of ``sweep`` without ``--scale``.
DEFAULT_SCALE = "quick"
_seconds = nonnegative_float


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "experiments",
        nargs="*",
        metavar="EXPERIMENT",
        help="experiments and studies to run (default: every experiment and study of the "
        f"registry): {', '.join([*EXPERIMENTS, *STUDIES])}; or a study outside it: "
        f"{', '.join(_listed())}",
    )
    p.add_argument(
        "--read-root",
        action="append",
        default=[],
        metavar="DIR",
        help="a further runs root a study reads (shift_cause; repeatable)",
    )
    p.add_argument(
        "--scale",
        choices=EXPERIMENT_SCALES,
        default=None,
        help="quick (the default: minutes on a laptop, shrunk tasks), cpu (the paper's tasks, "
        "fewer steps; hours on one core; the committed runs the report reads) or paper "
        "(supp-tab:pretraining hyperparameters; a GPU or a cluster)",
    )
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local process pool (default) or a SLURM job array via submitit",
    )
    p.add_argument(
        "--workers", type=_count, default=None, help="local worker processes (default min(2, CPUs))"
    )
    p.add_argument(
        "--threads", type=_count, default=1, help="torch/BLAS threads per run (default 1)"
    )
    p.add_argument(
        "--wait-lock",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help="wait this long for another sweep on the same root (default: refuse at once)",
    )
    p.add_argument(
        "--root", default=None, help="runs root (default reports/runs of the repository)"
    )
    p.add_argument(
        "--eval-oracle",
        choices=EVAL_ORACLES,
        default=None,
        help="exact PPD of the evaluations this sweep runs (the oracle of their EvalSpec): "
        "float32 refined to float64 accuracy, or float64 (default: as declared, float64, as "
        "the committed runs); an evaluation already on disk is not redone",
    )
    p.add_argument(
        "--oracle-store",
        default=None,
        metavar="DIR|off",
        help="directory where evaluations keep the instances and exact PPD they draw, so the "
        "runs of a grid compute them once (byte-identical results; default "
        "$PFNTHEORY_ORACLE_STORE, else ~/.cache/pfntheory/oracle); 'off': recompute per run",
    )
    p.add_argument("--list", action="store_true", help="list the runs and their state; run nothing")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="use a seconds-long stand-in instead of training (checks the plumbing); with "
        "--executor slurm: print the job arrays that would be submitted, submit nothing",
    )
    add_run_options(p, seed=None, device=None)
    g = p.add_argument_group("slurm executor (submitit)")
    g.add_argument("--partition", default=None, help="slurm partition")
    g.add_argument("--timeout-min", type=_count, default=240, help="time limit per run (minutes)")
    g.add_argument("--gpus-per-node", type=_count, default=None)
    g.add_argument("--mem-gb", type=_seconds, default=None)
    g.add_argument(
        "--array-parallelism",
        type=_count,
        default=None,
        help="at most this many array tasks at once",
    )
    g.add_argument(
        "--submitit-cluster",
        choices=("slurm", "local", "debug"),
        default=None,
        help="force submitit's executor (local/debug run the array on this machine)",
    )
    p.set_defaults(func=_cmd)


def _listed() -> dict:
    from pfntheory.pipelines.studies import LISTED_STUDIES

    return LISTED_STUDIES


def _print_studies(root, names) -> None:
    """``sweep --list``: the studies outside the registry (:mod:`pfntheory.pipelines.studies`),
    with their files on disk, how each is run and its cost."""
    for name in names:
        st = _listed()[name]
        found = st.found(root)
        print(f"{name} [study] on disk: {len(found)} files -- {st.title}")
        print(f"    run by: {st.how}")
        print(f"    cost: {st.cost}")
        for path in found[:3]:
            print(f"    done  {_shown(path)}")
        if len(found) > 3:
            print(f"    ... and {len(found) - 3} more")


def _run_studies(args, names) -> int:
    """Run the studies ``names`` that the sweep drives (:attr:`Study.run`), each under the runs
    root's lock; one it does not drive is refused, naming how it is run."""
    from pfntheory.infra import runs as runfiles

    root = Path(args.root or default_root())
    for name in names:
        st = _listed()[name]
        if st.run is None:
            raise ValueError(f"{name} is not run by pfntheory sweep: {st.how}")
    with runfiles.root_lock(root, wait_s=args.wait_lock):
        for name in names:
            path = _listed()[name].run(root, *map(Path, args.read_root))
            print(f"{name}: wrote {_shown(path)}")
    return 0


def _estimate_line(name: str, scale: str) -> str | None:
    """The CPU-time estimate of an experiment by part (:func:`~pfntheory.experiments.cost.
    experiment_parts`), with the evaluation's oracle computed and read from a store."""
    from pfntheory.experiments import cost

    try:
        exp = get_experiment(name)
        parts = cost.experiment_parts(exp, scale)
        cached = cost.experiment_parts(exp, scale, oracle_cached=True)["evaluation"]
    except Exception as err:  # noqa: BLE001 - an estimate must never break --list
        return f"    estimate: unavailable ({err})"
    secs = sum(parts.values())
    shown = ", ".join(f"{k} {v / 3600:.2f} h" for k, v in parts.items() if v > 0) or "none"
    line = f"    estimated CPU time: {secs / 3600:.2f} h ({secs:.0f} s, one core: {shown})"
    if parts["evaluation"] > 0:
        line += f"; evaluation {cached / 3600:.2f} h with its oracle cached"
    return line


def _run_estimate(spec) -> str:
    """`` (est. N s)`` of a trained run (its three parts, oracle not cached) or of a latent-GP
    study's run; empty otherwise."""
    from pfntheory.experiments import cost
    from pfntheory.infra.latent_spec import LatentReferenceSpec, LatentRunSpec
    from pfntheory.infra.tree import RunSpec

    if isinstance(spec, (LatentRunSpec, LatentReferenceSpec)):
        return f"  (est. {cost.cpu_seconds(spec):.0f} s)"
    if not isinstance(spec, RunSpec):
        return ""
    p = cost.run_parts(spec)
    return (
        f"  (est. {sum(p.values()):.0f} s: training {p['training']:.0f}, curves "
        f"{p['curves']:.0f}, evaluation {p['evaluation']:.0f})"
    )


def _shown(path) -> str:
    """``path`` as a reader types it: relative to the working directory when inside it."""
    from pathlib import Path

    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def _scale_line(scale: str | None) -> str:
    """The first line of ``--list``: the scale listed, and whether it is the default."""
    if scale is None:
        return (
            f"scale {DEFAULT_SCALE} (the default; --scale cpu lists the committed runs the report "
            "reads, --scale paper the paper's own settings)"
        )
    return f"scale {scale} (--scale {scale}; the default is {DEFAULT_SCALE})"


def _print_list(args: argparse.Namespace, names: list[str], given_scale: str | None) -> None:
    """``sweep --list``: each experiment's runs, their state, estimates and SLURM jobs."""
    print(_scale_line(given_scale))
    for n in names:
        exp = get_experiment(n)
        items = plan(n, args.scale, args.root, eval_oracle=args.eval_oracle)
        print(
            f"{n} [{args.scale}] {sum(d for *_, d in items)}/{len(items)} complete -- {exp.title}"
        )
        jobs = slurm_jobs.listed_states(
            Path(args.root or default_root()) / n, [s.name for s, _, d in items if not d]
        )
        shrunk = exp.design(args.scale).shrunk
        if shrunk:
            print(f"    shrunk: {shrunk}")
        line = _estimate_line(n, args.scale)
        if line:
            print(line)
        for spec, rd, done in items:
            part = None if done else partial_progress(spec, rd)
            state = "done" if done else ("part" if part else "todo")
            est = "" if done else _run_estimate(spec)
            job = f"  [{jobs[spec.name]}]" if spec.name in jobs else ""
            print(f"    {state}  {_shown(rd)}" + (f"  ({part})" if part else "") + job + est)


def _split_names(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """The names asked for (each once, in order), the registry's among them (all when none is
    asked) and the studies outside it; checks ``--read-root`` before the runs root's lock."""
    asked = list(dict.fromkeys(args.experiments))  # each once, in order
    studies = [n for n in asked if n in _listed()]
    names = [n for n in asked if n not in _listed()] or ([] if asked else [*EXPERIMENTS, *STUDIES])
    for n in names:
        get_experiment(n)
    if args.read_root and (args.list or not studies):
        raise ValueError("--read-root: only when running a study that reads runs (shift_cause)")
    for r in args.read_root:  # checked before the runs root's lock is taken
        if not Path(r).is_dir():
            raise ValueError(f"--read-root {r}: not an existing runs root")
        if not any((Path(r) / n).is_dir() for n in (*EXPERIMENTS, *STUDIES)):
            raise ValueError(
                f"--read-root {r} holds no experiment's folder (is it a runs root, such as "
                "reports/runs?)"
            )
    if studies and names and not args.list:
        raise ValueError(
            f"run the studies {', '.join(studies)} apart from the experiments "
            f"{', '.join(names)} (one pfntheory sweep each)"
        )
    return asked, names, studies


def _cmd(args: argparse.Namespace) -> int:
    given_scale, args.scale = args.scale, args.scale or DEFAULT_SCALE
    asked, names, studies = _split_names(args)
    if studies and not args.list:
        return _run_studies(args, studies)
    slurm_dry = args.executor == "slurm" and args.dry_run  # prints the arrays, submits nothing
    if (
        args.executor == "slurm"
        and not args.list
        and not slurm_dry
        and args.submitit_cluster in (None, "slurm")
        and not slurm_available()
    ):
        raise ValueError(
            "--executor slurm: SLURM is not available on this machine (no sbatch on the "
            "PATH); use --executor local, or --submitit-cluster local to run the job "
            "array on this machine through submitit"
        )
    if (
        args.dry_run
        and not args.list
        and not slurm_dry
        and args.root is None
        and not os.environ.get("PFNTHEORY_RUNS")
    ):
        # stand-in runs in the real runs root would count as complete and be served as trained runs
        raise ValueError(
            "--dry-run needs --root (or $PFNTHEORY_RUNS): stand-in runs must not land "
            f"in {default_root()}"
        )
    if args.list:
        _print_list(args, names, given_scale)
        _print_studies(args.root or default_root(), studies if asked else list(_listed()))
        return 0
    if args.oracle_store is not None:
        # read by the evaluations of this process and of the workers it starts
        # (pfntheory.nn.oracle_store.from_environment)
        if not args.oracle_store.strip():
            raise ValueError("--oracle-store: give a directory, or 'off'")
        os.environ["PFNTHEORY_ORACLE_STORE"] = args.oracle_store
    slurm = {
        "cluster": args.submitit_cluster,
        "slurm_partition": args.partition,
        "timeout_min": args.timeout_min,
        "gpus_per_node": args.gpus_per_node,
        "mem_gb": args.mem_gb,
        "slurm_array_parallelism": args.array_parallelism,
    }
    if slurm_dry:
        for n in names:
            items = plan(n, args.scale, args.root, eval_oracle=args.eval_oracle)
            todo = [(s, rd) for s, rd, done in items if not done]
            root = Path(args.root or default_root())
            print(slurm_jobs.describe_array(n, args.scale, todo, root, args.threads, slurm))
        return 0
    failed = 0
    summaries = sweep_many(
        names,
        args.scale,
        executor=args.executor,
        root=args.root,
        workers=args.workers,
        threads=args.threads,
        backend="standin" if args.dry_run else "nn",
        progress=not args.no_progress,
        slurm=slurm,
        wait_lock_s=args.wait_lock,
        eval_oracle=args.eval_oracle,
    )
    for n, s in zip(names, summaries, strict=True):
        print(
            f"{n} [{args.scale}]: {s['n_runs']} runs, {s['n_failed']} failed, "
            f"{s['wall_time_s']:.0f} s"
        )
        for r in s["runs"]:
            if r["status"] == "failed":
                print(f"  FAILED {r['name']}: {r.get('error', '')[:2000]}")
        failed += s["n_failed"]
    return 1 if failed else 0


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` sub-command to a CLI's ``subparsers`` (sets ``func``; returns an
    exit code)."""
    p = subparsers.add_parser(
        "sweep",
        help="run an experiment's runs (idempotent, resumable)",
        description="Run every missing run of the paper's experiments, at quick, "
        "cpu or paper scale, locally or as a SLURM job array.",
    )
    _add_arguments(p)
    return p


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m pfntheory.cli.sweep [options]``: ``pfntheory sweep``, with the same options and
    the same error boundary (one line, never a traceback: :func:`pfntheory.cli.main`)."""
    import sys

    from pfntheory.cli import main as cli_main

    return cli_main(["sweep", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
