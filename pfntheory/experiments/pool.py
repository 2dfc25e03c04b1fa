"""Running many runs at once: a local pool of worker processes, or a SLURM job array.

``local`` runs each missing run in its own worker process on this machine (one torch thread per
worker by default); ``slurm`` submits them as one job array through ``submitit`` (the optional
extra ``pfntheory[slurm]``, imported only then). Both show a tqdm bar over runs.

Ctrl-C (SIGINT) or SIGTERM stops the pool within seconds: the parent sends SIGTERM to every worker
(SIGKILL after :data:`STOP_GRACE_S`), each worker's atomic writes leave complete files only, and
the interrupted runs resume from their last checkpoint on the next sweep. Workers ignore SIGINT
(the parent decides) and die with their parent (``PR_SET_PDEATHSIG`` on Linux, plus a watchdog
thread), so ``kill -9`` of the sweep leaves no orphans.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
import traceback
from collections.abc import Iterable
from pathlib import Path

from pfntheory.base._checks import choice
from pfntheory.infra import runs as runfiles
from pfntheory.infra.tree import RunSpec

from .execute import BACKENDS, execute
from .specs import ExactPPDSpec, StepsizeSpec

__all__ = [
    "EXECUTORS",
    "STOP_GRACE_S",
    "execute_job",
    "worker_modules",
    "run_local",
    "run_slurm",
    "slurm_available",
]

#: Seconds a worker gets to exit after SIGTERM before it is killed.
STOP_GRACE_S = 10.0
EXECUTORS = ("local", "slurm")


def execute_job(spec, run_dir: str, backend: str, root: str, threads: int) -> dict:
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
    result = execute_job(spec, run_dir, backend, root, threads)
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
        names += ["pfntheory.maths.kernels", "pfntheory.maths.spectral"]
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


def run_local(todo, backend, root, workers, threads, progress, desc):
    from tqdm.auto import tqdm

    _preload(backend, (spec for spec, _ in todo))
    results = []
    if workers == 1:
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
        with _restored_threads(threads), _sigterm_as_interrupt():  # caller's thread settings kept
            for spec, rd in todo:
                results.append(execute_job(spec, str(rd), backend, str(root), threads))
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


def run_slurm(todo, backend, root, threads, progress, desc, experiment, slurm):
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
        execute_job,
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
