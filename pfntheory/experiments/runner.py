"""Idempotent, resumable sweeps over the runs of an experiment, locally or on a SLURM cluster.

A run lands in ``<root>/<experiment>/<run name>/`` (``root`` defaults to ``reports/runs`` of the
repository; the name is a readable prefix plus a hash of the training config, see
:mod:`.specs`). Executing a run

1. writes ``spec.json`` (the full spec, evaluations included);
2. trains with :func:`pfntheory.nn.train.train`, which skips a finished run and resumes a killed one
   from its ``checkpoint.pt``; an identical finished run of another experiment is adopted (copied)
   instead of retrained;
3. evaluates every :class:`~.specs.EvalSpec` not yet on disk with
   :func:`pfntheory.nn.evaluate.evaluate` (which records mean and standard error per n');
4. deletes ``checkpoint.pt`` (weights, config, metrics and evaluations are small enough to commit).

Exact-side runs (:class:`~.specs.StepsizeSpec`, :class:`~.specs.ExactPPDSpec`) write
``result.json``. Every file is written atomically (temporary file + ``os.replace``), so a killed sweep
leaves complete files only, and re-running the sweep does only what is missing.

Executors: ``local`` runs the missing runs in a process pool on this machine (one torch thread per
worker); ``slurm`` submits them as one job array through ``submitit`` (optional extra
``pfntheory[slurm]``, imported only then). Both show a tqdm bar over runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import os
import time
import traceback
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from .. import runs as runfiles
from .._checks import choice, positive_int
from .definitions import EXPERIMENTS, SCALES, get_experiment
from .specs import ExactPPDSpec, RunSpec, StepsizeSpec, canonical_json

__all__ = [
    "SPEC_FILE",
    "RESULT_FILE",
    "BACKENDS",
    "EXECUTORS",
    "default_root",
    "run_dir_of",
    "is_complete",
    "execute",
    "plan",
    "sweep",
    "run_sweep",
    "register",
]

SPEC_FILE = "spec.json"
RESULT_FILE = "result.json"
BACKENDS = ("nn", "standin")
EXECUTORS = ("local", "slurm")
_GITIGNORE = "checkpoint.pt\n.*.tmp\n.submitit/\n"


def default_root() -> Path:
    """``$PFNTHEORY_RUNS`` if set, else ``reports/runs`` of the repository holding this package
    (an editable install), else ``./reports/runs``."""
    env = os.environ.get("PFNTHEORY_RUNS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").is_file():
        return repo / "reports" / "runs"
    return Path.cwd() / "reports" / "runs"


def run_dir_of(experiment: str, spec, root=None) -> Path:
    """``<root>/<experiment>/<spec.name>``."""
    return Path(root if root is not None else default_root()) / experiment / spec.name


def _spec_doc(spec) -> dict:
    return {"type": type(spec).__name__, "name": spec.name, "spec": dataclasses.asdict(spec)}


def _eval_complete(run_dir: Path, ev) -> bool:
    path = run_dir / ev.filename
    if not path.is_file():
        return False
    try:
        doc = runfiles.load_json(path)
    except runfiles.CorruptFileError:
        return False
    if doc.get("seed") != ev.seed or doc.get("n_instances") != ev.n_instances:
        return False
    return all(str(n) in doc.get("results", {}) for n in ev.n_eval)


def _trained(run_dir: Path, spec: RunSpec) -> bool:
    m = run_dir / runfiles.METRICS
    if not (m.is_file() and (run_dir / runfiles.WEIGHTS).is_file()):
        return False
    try:
        doc = runfiles.load_json(m)
    except runfiles.CorruptFileError:
        return False
    return bool(doc.get("completed")) and doc.get("steps") == spec.steps


def is_complete(spec, run_dir) -> bool:
    """Whether ``run_dir`` holds the finished run ``spec`` (trained and every evaluation on disk)."""
    run_dir = Path(run_dir)
    if isinstance(spec, RunSpec):
        return _trained(run_dir, spec) and all(_eval_complete(run_dir, ev) for ev in spec.evals)
    path = run_dir / RESULT_FILE
    if not path.is_file():
        return False
    try:
        return runfiles.load_json(path).get("spec") == _jsonable(dataclasses.asdict(spec))
    except runfiles.CorruptFileError:
        return False


def _jsonable(d):
    import json
    return json.loads(canonical_json(d))


# --------------------------------------------------------------------------------------------------
# backends: how a RunSpec is trained and evaluated
# --------------------------------------------------------------------------------------------------

def _train_nn(spec: RunSpec, run_dir: Path) -> None:
    from pfntheory.nn.train import train

    train(spec.train_config(), run_dir, progress=False)


def _evaluate_nn(run_dir: Path, ev) -> None:
    import torch

    from pfntheory.nn.evaluate import evaluate

    device = "cuda" if torch.cuda.is_available() else "cpu"
    evaluate(run_dir, list(ev.n_eval), n_instances=ev.n_instances, seed=ev.seed,
             covariates=ev.covariates, device=device)


def _backend(name: str):
    choice(name, "backend", BACKENDS)
    if name == "nn":
        return _train_nn, _evaluate_nn
    from . import _standin
    return _standin.train, _standin.evaluate


def _adopt(spec: RunSpec, run_dir: Path, root: Path) -> bool:
    """Copy an identical finished run from another experiment's directory instead of retraining."""
    for other in sorted(root.glob(f"*/{spec.name}")):
        if other.resolve() == run_dir.resolve() or not _trained(other, spec):
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        for f in (runfiles.CONFIG, runfiles.METRICS, runfiles.WEIGHTS):
            runfiles.atomic_write_bytes(run_dir / f, (other / f).read_bytes())
        for ev in spec.evals:
            if _eval_complete(other, ev) and not (run_dir / ev.filename).exists():
                runfiles.atomic_write_bytes(run_dir / ev.filename, (other / ev.filename).read_bytes())
        return True
    return False


def _execute_exact(spec, run_dir: Path) -> None:
    import numpy as np

    t0 = time.perf_counter()
    if isinstance(spec, StepsizeSpec):
        from ..kernels import LinearKernel, RBFKernel, blr_sigma_diag
        from ..spectral import admissible_step_curve

        kernel = (RBFKernel(spec.alpha, spec.lengthscale) if spec.kernel == "rbf"
                  else LinearKernel(blr_sigma_diag(spec.d)))
        c = admissible_step_curve(kernel, spec.ns, spec.d, spec.noise_var, spec.n_trials,
                                  np.random.default_rng(spec.seed))
        body = {"ns": c.ns, "mean": c.mean, "std": c.std, "se": c.std / np.sqrt(spec.n_trials),
                "reference_1_over_n": c.reference, "limit": c.limit, "steps": c.steps}
    elif isinstance(spec, ExactPPDSpec):
        from .reference import exact_ppd_reference

        body = exact_ppd_reference(spec.task, spec.n_eval, spec.n_instances,
                                   np.random.default_rng(spec.seed), levels=spec.levels)
    else:  # pragma: no cover - guarded by execute
        raise ValueError(f"not an exact-side spec: {type(spec).__name__}")
    runfiles.save_json(run_dir / RESULT_FILE, {"spec": _jsonable(dataclasses.asdict(spec)),
                                               "wall_time_s": time.perf_counter() - t0, **body})


def execute(spec, run_dir, backend: str = "nn", root=None) -> dict:
    """Bring ``run_dir`` to the finished state of ``spec`` (idempotent, resumable).

    Parameters
    ----------
    spec : RunSpec, StepsizeSpec or ExactPPDSpec
    run_dir : path
    backend : {"nn", "standin"}
        ``nn``: :mod:`pfntheory.nn` training and evaluation; ``standin``: a seconds-long fake with
        the same files (plumbing tests, ``pfntheory sweep --dry-run``).
    root : path, optional
        Runs root searched for an identical finished run to adopt (default: ``run_dir``'s grandparent).

    Returns
    -------
    dict
        ``{"name", "status": "skipped"|"done"|"adopted", "seconds"}``.
    """
    if not isinstance(spec, (RunSpec, StepsizeSpec, ExactPPDSpec)):
        raise ValueError(f"spec must be a RunSpec, StepsizeSpec or ExactPPDSpec, got {type(spec).__name__}")
    run_dir = Path(run_dir)
    root = Path(root) if root is not None else run_dir.parent.parent
    t0 = time.perf_counter()
    spec_path = run_dir / SPEC_FILE
    old = _read_spec_doc(spec_path)
    if old is not None and old.get("name") != spec.name:
        raise ValueError(f"{run_dir} holds the run {old.get('name')!r}, not {spec.name!r}")
    if is_complete(spec, run_dir):
        if old != _jsonable(_spec_doc(spec)):
            runfiles.save_json(spec_path, _spec_doc(spec))
        return {"name": spec.name, "status": "skipped", "seconds": 0.0}
    run_dir.mkdir(parents=True, exist_ok=True)
    runfiles.save_json(spec_path, _spec_doc(spec))
    status = "done"
    if isinstance(spec, RunSpec):
        train_fn, eval_fn = _backend(backend)
        if not _trained(run_dir, spec) and _adopt(spec, run_dir, root):
            status = "adopted"
        if not _trained(run_dir, spec):
            train_fn(spec, run_dir)
        for ev in spec.evals:
            if not _eval_complete(run_dir, ev):
                eval_fn(run_dir, ev)
        (run_dir / runfiles.CHECKPOINT).unlink(missing_ok=True)
        if not is_complete(spec, run_dir):
            raise RuntimeError(f"{run_dir}: training/evaluation returned but the run is incomplete")
    else:
        _execute_exact(spec, run_dir)
    return {"name": spec.name, "status": status, "seconds": time.perf_counter() - t0}


def _read_spec_doc(path: Path) -> dict | None:
    """``spec.json`` of a run directory, or None when it is absent or unreadable (a corrupt file is
    rewritten from the spec, like any other corrupt file of a run; the directory name, which is the
    spec's hash, already identifies the run)."""
    if not path.is_file():
        return None
    try:
        return runfiles.load_json(path)
    except runfiles.CorruptFileError:
        return None


def _execute_job(spec, run_dir: str, backend: str, root: str, threads: int) -> dict:
    """Worker entry point (process pool or SLURM array task): never raises, reports the error."""
    _limit_threads(threads)
    t0 = time.perf_counter()
    try:
        return execute(spec, run_dir, backend=backend, root=root)
    except BaseException as err:  # noqa: BLE001 - reported to the sweep, which fails at the end
        return {"name": spec.name, "status": "failed", "seconds": time.perf_counter() - t0,
                "error": f"{type(err).__name__}: {err}\n{traceback.format_exc()[-3000:]}"}


@contextlib.contextmanager
def _restored_threads(threads: int):
    """Run a block with ``threads`` threads per run and restore the thread environment variables
    and torch's thread count on exit (in-process sweeps must not change the caller's settings)."""
    import torch

    n_torch = torch.get_num_threads()
    with runfiles.temporary_environ({v: str(threads) for v in _THREAD_VARS}):
        try:
            yield
        finally:
            torch.set_num_threads(n_torch)


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _limit_threads(threads: int) -> None:
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    try:
        import torch
        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass


# --------------------------------------------------------------------------------------------------
# sweeps
# --------------------------------------------------------------------------------------------------

def plan(experiment: str, scale: str = "quick", root=None) -> list[tuple[object, Path, bool]]:
    """``(spec, run_dir, complete)`` for every run of ``experiment`` at ``scale``."""
    exp = get_experiment(experiment)
    root = Path(root) if root is not None else default_root()
    return [(s, run_dir_of(exp.name, s, root), is_complete(s, run_dir_of(exp.name, s, root)))
            for s in exp.runs(scale)]


def _run_local(todo, backend, root, workers, threads, progress, desc):
    from tqdm.auto import tqdm

    results = []
    if workers == 1:
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
        with _restored_threads(threads):  # in this process: leave the caller's thread settings as found
            for spec, rd in todo:
                results.append(_execute_job(spec, str(rd), backend, str(root), threads))
            bar.update()
            bar.set_postfix_str(f"{results[-1]['status']} {spec.name[:40]}")
        bar.close()
        return results
    import multiprocessing as mp

    # fork (POSIX): the workers need nothing from the parent but the specs, and unlike spawn it works
    # from any __main__ (a notebook, ``python -``); the pool is created before any tqdm thread.
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futs = [pool.submit(_execute_job, spec, str(rd), backend, str(root), threads)
                for spec, rd in todo]
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
        for fut in as_completed(futs):
            results.append(fut.result())
            bar.update()
            bar.set_postfix_str(f"{results[-1]['status']} {results[-1]['name'][:40]}")
        bar.close()
    return results


def _run_slurm(todo, backend, root, threads, progress, desc, experiment, slurm):
    try:
        import submitit
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise RuntimeError("the slurm executor needs submitit: pip install 'pfntheory[slurm]'") from err
    from tqdm.auto import tqdm

    slurm = dict(slurm or {})
    cluster = slurm.pop("cluster", None)
    poll = float(slurm.pop("poll_s", 10.0))
    folder = Path(root) / experiment / ".submitit"
    ex = submitit.AutoExecutor(folder=folder / "%j", cluster=cluster)
    params = {"name": f"pfntheory-{experiment}", "timeout_min": 240, "cpus_per_task": threads}
    params.update({k: v for k, v in slurm.items() if v is not None})
    ex.update_parameters(**params)
    specs = [s for s, _ in todo]
    jobs = ex.map_array(_execute_job, specs, [str(rd) for _, rd in todo], [backend] * len(todo),
                        [str(root)] * len(todo), [threads] * len(todo))
    bar = tqdm(total=len(jobs), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
    results: dict[int, dict] = {}
    while len(results) < len(jobs):
        for i, job in enumerate(jobs):
            if i not in results and job.done():
                try:
                    results[i] = job.result()
                except Exception as err:  # noqa: BLE001 - job killed, timed out, node failure
                    results[i] = {"name": specs[i].name, "status": "failed", "seconds": float("nan"),
                                  "error": f"{type(err).__name__}: {err}"[-3000:],
                                  "job_id": job.job_id}
                bar.update()
        if len(results) < len(jobs):
            time.sleep(poll)
    bar.close()
    return [results[i] for i in range(len(jobs))]


def sweep(experiment: str, scale: str = "quick", *, executor: str = "local", root=None,
          workers: int | None = None, threads: int = 1, backend: str = "nn", progress: bool = True,
          slurm: dict | None = None) -> dict:
    """Run every missing run of ``experiment`` at ``scale``.

    Parameters
    ----------
    experiment : str
        A name of :data:`~.definitions.EXPERIMENTS`.
    scale : {"quick", "paper"}
    executor : {"local", "slurm"}
        ``local``: a process pool of ``workers`` (default: ``min(2, cpu count)``; 1 runs in this
        process). ``slurm``: one submitit job array; ``slurm`` holds the submitit parameters
        (``slurm_partition``, ``timeout_min``, ``gpus_per_node``, ``cpus_per_task``, ``mem_gb``,
        ``slurm_array_parallelism``, ...) plus ``cluster`` (None = detect; ``"local"``/``"debug"``
        run the same array on this machine, for testing) and ``poll_s``.
    root : path, optional
        Runs root (default :func:`default_root`).
    threads : int
        Torch/BLAS threads per run.
    backend : {"nn", "standin"}

    Returns
    -------
    dict
        Summary written to ``<root>/<experiment>/sweep-<scale>.json``: per-run status and seconds,
        total wall time, and the number of failures. A failed run does not stop the others; the CLI
        exits non-zero when any failed.
    """
    exp = get_experiment(experiment)
    choice(scale, "scale", SCALES)
    choice(executor, "executor", EXECUTORS)
    choice(backend, "backend", BACKENDS)
    root = Path(root) if root is not None else default_root()
    threads = positive_int(threads, "threads")
    workers = positive_int(workers, "workers") if workers is not None else min(2, os.cpu_count() or 1)
    exp_dir = root / exp.name
    exp_dir.mkdir(parents=True, exist_ok=True)
    gi = exp_dir / ".gitignore"
    if not gi.is_file():
        runfiles.atomic_write_bytes(gi, _GITIGNORE.encode())
    items = plan(exp.name, scale, root)
    todo = [(s, rd) for s, rd, done in items if not done]
    t0 = time.perf_counter()
    desc = f"{exp.name} [{scale}]"
    if not todo:
        results = []
    elif executor == "local":
        results = _run_local(todo, backend, root, min(workers, len(todo)), threads, progress, desc)
    else:
        results = _run_slurm(todo, backend, root, threads, progress, desc, exp.name, slurm)
    done_names = {r["name"] for r in results}
    results += [{"name": s.name, "status": "skipped", "seconds": 0.0}
                for s, _, done in items if done and s.name not in done_names]
    summary = {
        "experiment": exp.name, "scale": scale, "executor": executor, "backend": backend,
        "workers": workers if executor == "local" else None, "threads": threads,
        "finished": _dt.datetime.now().isoformat(timespec="seconds"),
        "wall_time_s": time.perf_counter() - t0, "n_runs": len(items),
        "n_failed": sum(r["status"] == "failed" for r in results),
        "runs": sorted(results, key=lambda r: r["name"]),
    }
    if todo:  # a no-op sweep keeps the record of the sweep that did the work
        runfiles.save_json(exp_dir / f"sweep-{scale}.json", summary)
    return summary


def run_sweep(experiments: Sequence[str] | None = None, scale: str = "quick", **kw) -> list[dict]:
    """:func:`sweep` over several experiments (all of them by default); returns their summaries."""
    names = list(experiments) if experiments else list(EXPERIMENTS)
    return [sweep(name, scale, **kw) for name in names]


# --------------------------------------------------------------------------------------------------
# command line: ``pfntheory sweep``
# --------------------------------------------------------------------------------------------------

def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help=f"experiments to run (default: all): {', '.join(EXPERIMENTS)}")
    p.add_argument("--scale", choices=SCALES, default="quick",
                   help="quick (CPU, shrunk) or paper (supp-tab:pretraining hyperparameters)")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local process pool (default) or a SLURM job array via submitit")
    p.add_argument("--workers", type=int, default=None, help="local pool size (default min(2, CPUs))")
    p.add_argument("--threads", type=int, default=1, help="torch/BLAS threads per run (default 1)")
    p.add_argument("--root", default=None, help="runs root (default reports/runs of the repository)")
    p.add_argument("--list", action="store_true", help="list the runs and their state; run nothing")
    p.add_argument("--dry-run", action="store_true",
                   help="use a seconds-long stand-in instead of training (checks the plumbing)")
    p.add_argument("--no-progress", action="store_true")
    g = p.add_argument_group("slurm executor (submitit)")
    g.add_argument("--partition", default=None, help="slurm partition")
    g.add_argument("--timeout-min", type=int, default=240, help="time limit per run (minutes)")
    g.add_argument("--gpus-per-node", type=int, default=None)
    g.add_argument("--mem-gb", type=float, default=None)
    g.add_argument("--array-parallelism", type=int, default=None,
                   help="at most this many array tasks at once")
    g.add_argument("--submitit-cluster", choices=("slurm", "local", "debug"), default=None,
                   help="force submitit's executor (local/debug run the array on this machine)")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    names = args.experiments or list(EXPERIMENTS)
    for n in names:
        get_experiment(n)
    if args.dry_run and not args.list and args.root is None and not os.environ.get("PFNTHEORY_RUNS"):
        # stand-in runs in the real runs root would count as complete and be served as trained runs
        raise ValueError("--dry-run needs --root (or $PFNTHEORY_RUNS): stand-in runs must not land "
                         f"in {default_root()}")
    if args.list:
        for n in names:
            exp = get_experiment(n)
            items = plan(n, args.scale, args.root)
            print(f"{n} [{args.scale}] {sum(d for *_, d in items)}/{len(items)} complete -- {exp.title}")
            shrunk = exp.design(args.scale).shrunk
            if shrunk:
                print(f"    shrunk: {shrunk}")
            for _spec, rd, done in items:
                print(f"    {'done' if done else 'todo'}  {rd}")
        return 0
    slurm = {"cluster": args.submitit_cluster, "slurm_partition": args.partition,
             "timeout_min": args.timeout_min, "gpus_per_node": args.gpus_per_node,
             "mem_gb": args.mem_gb, "slurm_array_parallelism": args.array_parallelism}
    failed = 0
    for n in names:
        s = sweep(n, args.scale, executor=args.executor, root=args.root, workers=args.workers,
                  threads=args.threads, backend="standin" if args.dry_run else "nn",
                  progress=not args.no_progress, slurm=slurm)
        print(f"{n} [{args.scale}]: {s['n_runs']} runs, {s['n_failed']} failed, "
              f"{s['wall_time_s']:.0f} s")
        for r in s["runs"]:
            if r["status"] == "failed":
                print(f"  FAILED {r['name']}: {r.get('error', '')[:2000]}")
        failed += s["n_failed"]
    return 1 if failed else 0


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` sub-command to a CLI's ``subparsers`` (sets ``func``; returns an exit code)."""
    p = subparsers.add_parser("sweep", help="run an experiment's runs (idempotent, resumable)",
                              description="Run every missing run of the paper's experiments, at quick "
                                          "or paper scale, locally or as a SLURM job array.")
    _add_arguments(p)
    return p


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pfntheory.experiments.runner")
    _add_arguments(parser)
    args = parser.parse_args(None if argv is None else list(argv))
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
