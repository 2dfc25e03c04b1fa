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
``result.json``. Every file is written atomically (temporary file + ``os.replace``), so a killed
sweep leaves complete files only, and re-running the sweep does only what is missing.

Executors: ``local`` runs the missing runs in worker processes on this machine (one torch thread
per worker); ``slurm`` submits them as one job array through ``submitit`` (optional extra
``pfntheory[slurm]``, imported only then). Both show a tqdm bar over runs.

Robustness
----------
* One sweep at a time per runs root: :func:`sweep` holds :func:`pfntheory.runs.root_lock`; a second
  sweep waits ``wait_lock_s`` seconds, then refuses naming the holder's pid.
* Ctrl-C (SIGINT) or SIGTERM stops the sweep within seconds: the parent sends SIGTERM to every
  worker (SIGKILL after :data:`STOP_GRACE_S`), each worker's atomic writes leave complete files
  only, and the interrupted runs resume from their last checkpoint on the next sweep. Workers ignore
  SIGINT (the parent decides) and die with their parent (``PR_SET_PDEATHSIG`` on Linux, plus a
  watchdog thread), so ``kill -9`` of the sweep leaves no orphans.
* Orphan temporary files of killed writes are deleted when a sweep starts; a corrupt
  ``weights.pt``/``metrics.json``/``checkpoint.pt``/``config.json`` is detected and redone.
* ``executor="slurm"`` refuses on a machine without SLURM unless submitit's ``local``/``debug``
  cluster is asked for explicitly.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import os
import shutil
import signal
import threading
import time
import traceback
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import runs as runfiles
from .._checks import choice, positive_int, positive_scalar
from ..cli import add_run_options, int_in, nonnegative_float
from ..config import LEARNING_CURVE_FILE, curve_file
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
    "partial_progress",
    "sweep",
    "sweep_many",
    "run_sweep",
    "register",
]

#: Seconds a worker gets to exit after SIGTERM before it is killed.
STOP_GRACE_S = 10.0

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


def _weights_readable(path: Path) -> bool:
    """Cheap torch-free check of a ``torch.save`` file: a zip archive whose CRCs all match."""
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def _trained(run_dir: Path, spec: RunSpec) -> bool:
    m = run_dir / runfiles.METRICS
    w = run_dir / runfiles.WEIGHTS
    if not (m.is_file() and w.is_file()):
        return False
    try:
        doc = runfiles.load_json(m)
    except runfiles.CorruptFileError:
        return False
    if not isinstance(doc, dict) or not (doc.get("completed") and doc.get("steps") == spec.steps):
        return False
    if doc.get("standin"):  # stand-in runs (plumbing tests, --dry-run): placeholder bytes
        return True
    if spec.curve_n_eval:  # the learning curves that gate its verdicts, finished and schema 1
        names = [curve_file(c) for c in (None, *spec.curve_covariates)]
        if any(not (run_dir / n).is_file() for n in names) or runfiles.curve_problems(run_dir):
            return False
    return _weights_readable(w)


def is_complete(spec, run_dir) -> bool:
    """Whether ``run_dir`` holds the finished run ``spec`` (trained and every evaluation
    on disk)."""
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
    evaluate(
        run_dir,
        list(ev.n_eval),
        n_instances=ev.n_instances,
        seed=ev.seed,
        covariates=ev.covariates,
        device=device,
    )


def _backend(name: str):
    choice(name, "backend", BACKENDS)
    if name == "nn":
        return _train_nn, _evaluate_nn
    from . import _standin

    return _standin.train, _standin.evaluate


def _adopt(spec: RunSpec, run_dir: Path, root: Path) -> bool:
    """Copy an identical finished run from another experiment's directory instead of retraining:
    its config, metrics, weights and learning curves (``learning_curve*.json``, one per covariate
    design: the curve belongs to the training, which the shared name fixes), and each evaluation
    this experiment asks for that the other run already has."""
    curves = LEARNING_CURVE_FILE.replace(".json", "*.json")
    for other in sorted(root.glob(f"*/{spec.name}")):
        if other.resolve() == run_dir.resolve() or not _trained(other, spec):
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        names = [runfiles.CONFIG, runfiles.METRICS, runfiles.WEIGHTS]
        names += sorted(p.name for p in other.glob(curves))
        for f in names:
            runfiles.atomic_write_bytes(run_dir / f, (other / f).read_bytes())
        for ev in spec.evals:
            if _eval_complete(other, ev) and not (run_dir / ev.filename).exists():
                runfiles.atomic_write_bytes(
                    run_dir / ev.filename, (other / ev.filename).read_bytes()
                )
        return True
    return False


def _execute_exact(spec, run_dir: Path) -> None:
    import numpy as np

    t0 = time.perf_counter()
    if isinstance(spec, StepsizeSpec):
        from ..kernels import LinearKernel, RBFKernel, blr_sigma_diag
        from ..spectral import admissible_step_curve

        kernel = (
            RBFKernel(spec.alpha, spec.lengthscale)
            if spec.kernel == "rbf"
            else LinearKernel(blr_sigma_diag(spec.d))
        )
        c = admissible_step_curve(
            kernel, spec.ns, spec.d, spec.noise_var, spec.n_trials, np.random.default_rng(spec.seed)
        )
        body = {
            "ns": c.ns,
            "mean": c.mean,
            "std": c.std,
            "se": c.std / np.sqrt(spec.n_trials),
            "reference_1_over_n": c.reference,
            "limit": c.limit,
            "steps": c.steps,
        }
    elif isinstance(spec, ExactPPDSpec):
        from .reference import exact_ppd_reference

        body = exact_ppd_reference(
            spec.task,
            spec.n_eval,
            spec.n_instances,
            np.random.default_rng(spec.seed),
            levels=spec.levels,
        )
    else:  # pragma: no cover - guarded by execute
        raise ValueError(f"not an exact-side spec: {type(spec).__name__}")
    runfiles.save_json(
        run_dir / RESULT_FILE,
        {
            "spec": _jsonable(dataclasses.asdict(spec)),
            "wall_time_s": time.perf_counter() - t0,
            **body,
        },
    )


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
        Runs root searched for an identical finished run to adopt (default: ``run_dir``'s
        grandparent).

    Returns
    -------
    dict
        ``{"name", "status": "skipped"|"done"|"adopted", "seconds"}``.
    """
    if not isinstance(spec, (RunSpec, StepsizeSpec, ExactPPDSpec)):
        raise ValueError(
            f"spec must be a RunSpec, StepsizeSpec or ExactPPDSpec, got {type(spec).__name__}"
        )
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
    runfiles.clean_orphan_temps(run_dir)
    runfiles.save_json(spec_path, _spec_doc(spec))
    status = "done"
    if isinstance(spec, RunSpec):
        train_fn, eval_fn = _backend(backend)
        if backend == "nn":  # corrupt artefacts are removed, so that training redoes them
            for msg in runfiles.remove_corrupt_artefacts(run_dir):
                print(f"pfntheory sweep: {msg}; redoing it", flush=True)
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
    """Worker entry point (worker process or SLURM array task): reports an error instead of raising
    it; KeyboardInterrupt and SystemExit (SIGTERM) propagate, so that a stopped sweep stops."""
    _limit_threads(threads)
    t0 = time.perf_counter()
    try:
        return execute(spec, run_dir, backend=backend, root=root)
    except Exception as err:  # noqa: BLE001 - reported to the sweep, which fails at the end
        return {
            "name": spec.name,
            "status": "failed",
            "seconds": time.perf_counter() - t0,
            "error": f"{type(err).__name__}: {err}\n{traceback.format_exc()[-3000:]}",
        }


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker receive SIGTERM when its parent dies (even by SIGKILL)."""
    try:  # Linux: the kernel signals us when the parent thread exits
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)

    def watch():  # portable fallback: poll the parent pid
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="pfntheory-parent-watch", daemon=True).start()


def _on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def _worker_main(
    conn, spec, run_dir: str, backend: str, root: str, threads: int, parent_pid: int
) -> None:
    """Body of a local worker process: one run, its result sent through ``conn``."""
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # Ctrl-C reaches the whole group; the parent decides
    signal.signal(signal.SIGTERM, _on_sigterm)  # unwinds: atomic writes delete their temp files
    _die_with_parent(parent_pid)
    result = _execute_job(spec, run_dir, backend, root, threads)
    conn.send(result)
    conn.close()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Within the block, SIGTERM raises KeyboardInterrupt in the main thread (like Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _stop_workers(procs, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM every live worker, wait up to ``grace_s`` in all, then SIGKILL the rest."""
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


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
    return [
        (s, run_dir_of(exp.name, s, root), is_complete(s, run_dir_of(exp.name, s, root)))
        for s in exp.runs(scale)
    ]


def worker_modules(backend: str, specs: Iterable) -> list[str]:
    """The modules that running ``specs`` with ``backend`` imports (see :func:`_preload`)."""
    choice(backend, "backend", BACKENDS)
    names = []
    specs = list(specs)
    if any(isinstance(s, RunSpec) for s in specs):
        if backend == "nn":
            names += ["pfntheory.nn.train", "pfntheory.nn.evaluate"]
        else:
            names.append("pfntheory.experiments._standin")
    if any(isinstance(s, StepsizeSpec) for s in specs):
        names += ["pfntheory.kernels", "pfntheory.spectral"]
    if any(isinstance(s, ExactPPDSpec) for s in specs):
        names.append("pfntheory.experiments.reference")
    return names


def _preload(backend: str, specs: Iterable) -> None:
    """Import in this process everything the runs will import, before any worker starts.

    Forked workers then run the code the sweep started with, whatever happens to the source tree
    during a sweep of hours. Without it a worker imports the rest of the package from disk at its
    first run, beside the parent's copies imported earlier: an edit made meanwhile (a constant moved
    from one module to another) once failed every remaining run of a sweep with an ImportError.
    """
    import importlib

    for name in worker_modules(backend, specs):
        importlib.import_module(name)


def _run_local(todo, backend, root, workers, threads, progress, desc):
    from tqdm.auto import tqdm

    _preload(backend, (spec for spec, _ in todo))
    results = []
    if workers == 1:
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
        with _restored_threads(threads), _sigterm_as_interrupt():  # caller's thread settings kept
            for spec, rd in todo:
                results.append(_execute_job(spec, str(rd), backend, str(root), threads))
                bar.update()
                bar.set_postfix_str(f"{results[-1]['status']} {spec.name[:40]}")
        bar.close()
        return results
    import multiprocessing as mp
    from multiprocessing.connection import wait

    # fork (POSIX): the workers need nothing from the parent but the specs, and unlike spawn it
    # works from any __main__ (a notebook, ``python -``). One process per run, at most ``workers``
    # at once: the parent can then stop each of them (and learn how each ended) on its own.
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    pending = list(todo)
    running: dict = {}  # reader connection -> (process, spec)
    bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
    try:
        with _sigterm_as_interrupt():
            while pending or running:
                while pending and len(running) < workers:
                    spec, rd = pending.pop(0)
                    reader, writer = ctx.Pipe(duplex=False)
                    proc = ctx.Process(
                        target=_worker_main,
                        daemon=True,
                        args=(writer, spec, str(rd), backend, str(root), threads, os.getpid()),
                    )
                    proc.start()
                    writer.close()  # the worker holds the write end: EOF when it exits
                    running[reader] = (proc, spec)
                for reader in wait(list(running), timeout=1.0):
                    proc, spec = running.pop(reader)
                    try:
                        res = reader.recv()
                    except (EOFError, OSError):
                        res = None
                    reader.close()
                    proc.join()
                    if res is None:
                        res = {
                            "name": spec.name,
                            "status": "failed",
                            "seconds": float("nan"),
                            "error": f"worker process exited with code {proc.exitcode} "
                            f"before reporting (killed?); the run resumes on re-run",
                        }
                    results.append(res)
                    bar.update()
                    bar.set_postfix_str(f"{res['status']} {res['name'][:40]}")
    finally:
        _stop_workers([proc for proc, _ in running.values()])
        for reader in running:
            reader.close()
        bar.close()
    return results


def _run_slurm(todo, backend, root, threads, progress, desc, experiment, slurm):
    try:
        import submitit
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise RuntimeError(
            "the slurm executor needs submitit: pip install 'pfntheory[slurm]'"
        ) from err
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
    jobs = ex.map_array(
        _execute_job,
        specs,
        [str(rd) for _, rd in todo],
        [backend] * len(todo),
        [str(root)] * len(todo),
        [threads] * len(todo),
    )
    bar = tqdm(total=len(jobs), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
    results: dict[int, dict] = {}
    try:
        with _sigterm_as_interrupt():
            _poll_jobs(jobs, specs, results, bar, poll)
    except KeyboardInterrupt:  # stop the array too: its runs resume from their checkpoints
        for job in jobs:
            with contextlib.suppress(Exception):
                job.cancel(check=False)
        raise
    finally:
        bar.close()
    return [results[i] for i in range(len(jobs))]


def _poll_jobs(jobs, specs, results: dict, bar, poll: float) -> None:
    while len(results) < len(jobs):
        for i, job in enumerate(jobs):
            if i not in results and job.done():
                try:
                    results[i] = job.result()
                except Exception as err:  # noqa: BLE001 - job killed, timed out, node failure
                    results[i] = {
                        "name": specs[i].name,
                        "status": "failed",
                        "seconds": float("nan"),
                        "error": f"{type(err).__name__}: {err}"[-3000:],
                        "job_id": job.job_id,
                    }
                bar.update()
        if len(results) < len(jobs):
            time.sleep(poll)


def slurm_available() -> bool:
    """Whether this machine can submit SLURM jobs (``sbatch`` on the PATH)."""
    return shutil.which("sbatch") is not None


def sweep(experiment: str, scale: str = "quick", **options) -> dict:
    """Run every missing run of ``experiment`` at ``scale``: :func:`sweep_many` of one experiment.

    Parameters
    ----------
    experiment : str
        A name of :data:`~.definitions.EXPERIMENTS`.
    scale : {"quick", "cpu", "paper"}
    **options
        ``executor``, ``root``, ``workers``, ``threads``, ``backend``, ``progress``, ``slurm``,
        ``wait_lock_s``, as in :func:`sweep_many`.

    Returns
    -------
    dict
        Summary written to ``<root>/<experiment>/sweep-<scale>.json``: per-run status and seconds,
        total wall time, and the number of failures. A failed run does not stop the others; the CLI
        exits non-zero when any failed.
    """
    return sweep_many([experiment], scale, **options)[0]


def sweep_many(
    experiments: Sequence[str],
    scale: str = "quick",
    *,
    executor: str = "local",
    root=None,
    workers: int | None = None,
    threads: int = 1,
    backend: str = "nn",
    progress: bool = True,
    slurm: dict | None = None,
    wait_lock_s: float = 0.0,
) -> list[dict]:
    """Run every missing run of several experiments under one lock, with **one** local worker pool.

    With ``executor="local"`` the missing runs of all ``experiments`` share the pool (in the order
    of ``experiments``, each design's order within), so no worker idles while another experiment
    still has runs: one experiment at a time left all but one worker idle during each
    experiment's last, longest run. A run declared by two experiments (the same spec, e.g. the
    d = 16 runs of fig:exp2-2 and the lengthscale table) is trained once: its second copy waits
    for a second pass over the pool, where it adopts the first. ``executor="slurm"`` submits one
    array per experiment.

    Parameters
    ----------
    experiments : list of str
        Names of :data:`~.definitions.EXPERIMENTS`, each once.
    scale : {"quick", "cpu", "paper"}
    executor : {"local", "slurm"}
        ``local``: a process pool of ``workers`` (default: ``min(2, cpu count)``; 1 runs in this
        process). ``slurm``: submitit job arrays; ``slurm`` holds the submitit parameters
        (``slurm_partition``, ``timeout_min``, ``gpus_per_node``, ``cpus_per_task``, ``mem_gb``,
        ``slurm_array_parallelism``, ...) plus ``cluster`` (None = detect; ``"local"``/``"debug"``
        run the same array on this machine, for testing) and ``poll_s``.
    root : path, optional
        Runs root (default :func:`default_root`).
    threads : int
        Torch/BLAS threads per run.
    backend : {"nn", "standin"}
    wait_lock_s : float
        How long to wait for another sweep holding the runs root's lock before refusing
        (:class:`pfntheory.runs.LockHeldError`).

    Returns
    -------
    list of dict
        One summary per experiment, as :func:`sweep` returns and writes; with a shared pool
        ``wall_time_s`` is the wall time of the whole sweep.
    """
    if isinstance(experiments, str) or not isinstance(experiments, Sequence):
        raise ValueError(f"experiments must be a list of names, got {experiments!r}")
    if not experiments:
        raise ValueError("experiments must name at least one experiment")
    exps = [get_experiment(e) for e in experiments]
    if len({e.name for e in exps}) != len(exps):
        raise ValueError(f"experiments must not repeat a name, got {list(experiments)}")
    choice(scale, "scale", SCALES)
    choice(executor, "executor", EXECUTORS)
    choice(backend, "backend", BACKENDS)
    root = Path(root) if root is not None else default_root()
    threads = positive_int(threads, "threads", maximum=1024)
    workers = (
        positive_int(workers, "workers", maximum=1024)
        if workers is not None
        else min(2, os.cpu_count() or 1)
    )
    wait_lock_s = positive_scalar(wait_lock_s, "wait_lock_s", allow_zero=True)
    if slurm is not None and not isinstance(slurm, dict):
        raise ValueError(f"slurm must be a dict of submitit parameters, got {type(slurm).__name__}")
    if executor == "slurm":
        cluster = (slurm or {}).get("cluster")
        choice(cluster, "slurm['cluster']", (None, "slurm", "local", "debug"))
        if cluster in (None, "slurm") and not slurm_available():
            raise ValueError(
                "executor 'slurm': SLURM is not available on this machine (no sbatch "
                "on the PATH); use --executor local, or ask for submitit's local mode "
                "explicitly with --submitit-cluster local"
            )
    with runfiles.root_lock(root, wait_s=wait_lock_s):
        return _sweep_locked(
            exps, scale, executor, root, workers, threads, backend, progress, slurm
        )


def _sweep_locked(exps, scale, executor, root, workers, threads, backend, progress, slurm) -> list:
    plans = {}
    for exp in exps:
        exp_dir = root / exp.name
        exp_dir.mkdir(parents=True, exist_ok=True)
        runfiles.clean_orphan_temps(exp_dir, recursive=True)
        gi = exp_dir / ".gitignore"
        if not gi.is_file():
            runfiles.atomic_write_bytes(gi, _GITIGNORE.encode())
        plans[exp.name] = plan(exp.name, scale, root)
    todo = {n: [(s, rd) for s, rd, done in items if not done] for n, items in plans.items()}
    t0 = time.perf_counter()
    results: dict[str, list[dict]] = {n: [] for n in plans}
    if executor == "local":
        # pass k holds the k-th copy of each spec name: a later copy adopts the first one's run
        passes: list[list[tuple[str, RunSpec, Path]]] = []
        seen: dict[str, int] = {}
        for n, items in todo.items():
            for spec, rd in items:
                k = seen.get(spec.name, 0)
                seen[spec.name] = k + 1
                if k == len(passes):
                    passes.append([])
                passes[k].append((n, spec, rd))
        desc = f"{'+'.join(plans)} [{scale}]"
        for batch in passes:
            owner = {spec.name: n for n, spec, _ in batch}
            jobs = [(spec, rd) for _, spec, rd in batch]
            for res in _run_local(
                jobs, backend, root, min(workers, len(jobs)), threads, progress, desc
            ):
                results[owner[res["name"]]].append(res)
    else:
        for n, items in todo.items():
            if items:
                desc = f"{n} [{scale}]"
                results[n] = _run_slurm(items, backend, root, threads, progress, desc, n, slurm)
    wall = time.perf_counter() - t0
    summaries = []
    for exp in exps:
        items, res = plans[exp.name], results[exp.name]
        done_names = {r["name"] for r in res}
        res = res + [
            {"name": s.name, "status": "skipped", "seconds": 0.0}
            for s, _, done in items
            if done and s.name not in done_names
        ]
        summary = {
            "experiment": exp.name,
            "scale": scale,
            "executor": executor,
            "backend": backend,
            "workers": workers if executor == "local" else None,
            "threads": threads,
            "finished": _dt.datetime.now().isoformat(timespec="seconds"),
            "wall_time_s": wall,
            "n_runs": len(items),
            "n_failed": sum(r["status"] == "failed" for r in res),
            "runs": sorted(res, key=lambda r: r["name"]),
        }
        if todo[exp.name]:  # a no-op sweep keeps the record of the sweep that did the work
            runfiles.save_json(root / exp.name / f"sweep-{scale}.json", summary)
        summaries.append(summary)
    return summaries


def run_sweep(experiments: Sequence[str] | None = None, scale: str = "quick", **kw) -> list[dict]:
    """:func:`sweep_many` over ``experiments`` (all of them by default); returns their
    summaries."""
    names = list(experiments) if experiments else list(EXPERIMENTS)
    return sweep_many(names, scale, **kw)


# --------------------------------------------------------------------------------------------------
# command line: ``pfntheory sweep``
# --------------------------------------------------------------------------------------------------


#: argparse types of ``pfntheory sweep``: a count in [1, 10**6]; a finite number of seconds >= 0
_count = int_in(1, 10**6)
_seconds = nonnegative_float


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "experiments",
        nargs="*",
        metavar="EXPERIMENT",
        help=f"experiments to run (default: all): {', '.join(EXPERIMENTS)}",
    )
    p.add_argument(
        "--scale",
        choices=SCALES,
        default="quick",
        help="quick (minutes on a laptop, shrunk tasks), cpu (the paper's tasks, fewer steps; "
        "hours on one core) or paper (supp-tab:pretraining hyperparameters; a GPU or a cluster)",
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
    p.add_argument("--list", action="store_true", help="list the runs and their state; run nothing")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="use a seconds-long stand-in instead of training (checks the plumbing)",
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


def partial_progress(spec, run_dir) -> str | None:
    """How far an unfinished trained run has got, from its ``checkpoint.pt`` (None: no checkpoint,
    or not a trained run). A checkpoint committed at the end of one session lets the next resume
    the run bitwise (docs/scales.md, "Runs longer than a session"); ``sweep --list`` shows it as
    ``part``."""
    ckpt = Path(run_dir) / "checkpoint.pt"
    if not isinstance(spec, RunSpec) or not ckpt.is_file():
        return None
    try:
        doc = runfiles.load_torch(ckpt)
        step, wall = int(doc["step"]), float(doc["wall_time"])
    except (runfiles.CorruptFileError, KeyError, TypeError, ValueError) as err:
        return f"checkpoint unreadable, the run restarts: {err}"
    return f"checkpoint at step {step} of {spec.steps}, {wall / 60:.0f} min trained"


def _estimate_line(name: str, scale: str) -> str | None:
    """The CPU-time estimate of an experiment, when :mod:`.definitions` provides one."""
    from . import definitions

    est = getattr(definitions, "estimated_cpu_seconds", None)
    if est is None:
        return None
    try:
        secs = float(est(name, scale))
    except Exception as err:  # noqa: BLE001 - an estimate must never break --list
        return f"    estimate: unavailable ({type(err).__name__}: {err})"
    return f"    estimated CPU time: {secs / 3600:.2f} h ({secs:.0f} s, one core)"


def _cmd(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.experiments)) or list(EXPERIMENTS)  # each once, in order
    for n in names:
        get_experiment(n)
    if (
        args.executor == "slurm"
        and not args.list
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
        and args.root is None
        and not os.environ.get("PFNTHEORY_RUNS")
    ):
        # stand-in runs in the real runs root would count as complete and be served as trained runs
        raise ValueError(
            "--dry-run needs --root (or $PFNTHEORY_RUNS): stand-in runs must not land "
            f"in {default_root()}"
        )
    if args.list:
        for n in names:
            exp = get_experiment(n)
            items = plan(n, args.scale, args.root)
            print(
                f"{n} [{args.scale}] {sum(d for *_, d in items)}/{len(items)} "
                f"complete -- {exp.title}"
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
                print(f"    {state}  {rd}" + (f"  ({part})" if part else ""))
        return 0
    slurm = {
        "cluster": args.submitit_cluster,
        "slurm_partition": args.partition,
        "timeout_min": args.timeout_min,
        "gpus_per_node": args.gpus_per_node,
        "mem_gb": args.mem_gb,
        "slurm_array_parallelism": args.array_parallelism,
    }
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
    parser = argparse.ArgumentParser(prog="python -m pfntheory.experiments.runner")
    _add_arguments(parser)
    args = parser.parse_args(None if argv is None else list(argv))
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
