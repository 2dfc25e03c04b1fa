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
from pfntheory.infra.latent_spec import LatentReferenceSpec, LatentRunSpec
from pfntheory.infra.tree import RunSpec

from . import slurm as _slurm
from .execute import BACKENDS, execute
from .specs import ExactPPDSpec, StepsizeSpec
from .state import remaining_parts

__all__ = [
    "EXECUTORS",
    "STOP_GRACE_S",
    "ResumableJob",
    "execute_job",
    "report_line",
    "worker_modules",
    "run_local",
    "run_slurm",
    "slurm_available",
]

#: Seconds a worker gets to exit after SIGTERM before it is killed.
STOP_GRACE_S = 10.0
EXECUTORS = ("local", "slurm")


def _oracle_cached() -> bool:
    """Whether the estimate beside each finished run (:func:`report_line`) takes the evaluations'
    exact oracle as read from the store computed once per grid (``oracle_cached`` of
    :func:`.cost.run_parts`): yes unless ``$PFNTHEORY_ORACLE_STORE`` is ``off``
    (:mod:`pfntheory.nn.oracle_store`; the first run of each n_max and design fills the store and
    costs the uncached figure)."""
    return os.environ.get("PFNTHEORY_ORACLE_STORE") != "off"


def execute_job(spec, run_dir: str, backend: str, root: str, threads: int) -> dict:
    """Worker entry point (worker process or SLURM array task): reports an error instead of raising
    it; KeyboardInterrupt and SystemExit (SIGTERM) propagate, so that a stopped sweep stops.

    The result also holds ``cpu_s``, the CPU seconds this process spent on the run (every thread;
    a local worker is one process per run), and, for a trained run of the ``nn`` backend,
    ``estimate_s``: the cost model's seconds of what was left to do of it, by part
    (:func:`.state.remaining_parts`; :func:`report_line` prints the two side by side)."""
    _limit_threads(threads)
    estimate = _estimate(spec, run_dir, backend)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        res = execute(spec, run_dir, backend=backend, root=root)
    except Exception as err:  # noqa: BLE001 - reported to the sweep, which fails at the end
        res = {
            "name": spec.name,
            "status": "failed",
            "seconds": time.perf_counter() - t0,
            "error": f"{type(err).__name__}: {err}\n{traceback.format_exc()[-3000:]}",
        }
    res["cpu_s"] = time.process_time() - c0
    if estimate is not None:
        res["estimate_s"] = estimate
    return res


def _estimate(spec, run_dir: str, backend: str) -> dict | None:
    """:func:`.state.remaining_parts` of a trained run (None for an exact-side run, a stand-in, or
    where the estimate fails: it must never fail the run)."""
    if backend != "nn" or not isinstance(spec, RunSpec):
        return None
    try:
        return remaining_parts(spec, run_dir, oracle_cached=_oracle_cached())
    except Exception:  # noqa: BLE001 - an estimate is a report, not part of the run
        return None


def report_line(res: dict) -> str | None:
    """The sweep's line for a finished run: its measured CPU seconds beside the cost model's
    estimate of what was left to do of it (None for a run skipped or without the measurement)."""
    if res.get("status") not in ("done", "adopted", "failed") or "cpu_s" not in res:
        return None
    line = f"{res['status']} {res['name']}: {res['cpu_s']:.0f} s of CPU"
    est = res.get("estimate_s")
    if isinstance(est, dict) and res["status"] == "done":
        total = sum(est.values())
        parts = ", ".join(f"{k} {v:.0f}" for k, v in est.items())
        ratio = f"; measured/estimate {res['cpu_s'] / total:.2f}" if total > 0 else ""
        oracle = "cached" if _oracle_cached() else "not cached"
        line += f", estimate {total:.0f} s ({parts}; oracle {oracle}){ratio}"
    return line


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
    if backend == "nn" and any(isinstance(s, LatentRunSpec) for s in specs):
        names.append("pfntheory.nn.latent")
    if backend == "nn" and any(isinstance(s, LatentReferenceSpec) for s in specs):
        names.append("pfntheory.nn.latent_eval")
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


def _report(bar, res: dict) -> None:
    line = report_line(res)
    if line is not None:
        bar.write(f"pfntheory sweep: {line}")


def run_local(todo, backend, root, workers, threads, progress, desc):
    from tqdm.auto import tqdm

    _preload(backend, (spec for spec, _ in todo))
    results = []
    if workers == 1:
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
        with _restored_threads(threads), _sigterm_as_interrupt():  # caller's thread settings kept
            for spec, rd in todo:
                results.append(execute_job(spec, str(rd), backend, str(root), threads))
                _report(bar, results[-1])
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
                    _report(bar, res)
                    bar.update()
                    bar.set_postfix_str(f"{res['status']} {res['name'][:40]}")
    finally:
        _stop_workers([proc for proc, _ in running.values()])
        for reader in running:
            reader.close()
        bar.close()
    return results


class ResumableJob:
    """:func:`execute_job` as an array task that submitit requeues when SLURM signals it (SIGUSR2,
    sent 90 s before the time limit, or by ``scancel --signal=USR2`` on preemption): its
    ``checkpoint`` hands back the same call, and the requeued task resumes the run from the
    checkpoint on disk. Without it submitit requeued a preempted task but not a timed-out one,
    so a run longer than the time limit never finished."""

    def __call__(self, spec, run_dir: str, backend: str, root: str, threads: int) -> dict:
        return execute_job(spec, run_dir, backend, root, threads)

    def checkpoint(self, *args, **kwargs):
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)


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
        ResumableJob(),
        specs,
        [str(rd) for _, rd in todo],
        [backend] * len(todo),
        [str(root)] * len(todo),
        [threads] * len(todo),
    )
    scheduler = ex.cluster == "slurm"  # not submitit's local/debug stand-ins for a cluster
    if scheduler:  # read by `sweep --list` (slurm.listed_states)
        _slurm.record_jobs(
            Path(root) / experiment, {s.name: j.job_id for s, j in zip(specs, jobs, strict=True)}
        )
    bar = tqdm(total=len(jobs), desc=desc, disable=not progress, unit="run", dynamic_ncols=True)
    results: dict[int, dict] = {}
    try:
        with _sigterm_as_interrupt():
            _poll_jobs(jobs, specs, results, bar, poll, scheduler)
    except KeyboardInterrupt:  # stop the array too: its runs resume from their checkpoints
        for job in jobs:
            with contextlib.suppress(Exception):
                job.cancel(check=False)
        raise
    finally:
        bar.close()
    return [results[i] for i in range(len(jobs))]


def _poll_jobs(jobs, specs, results: dict, bar, poll: float, scheduler: bool = False) -> None:
    """Wait for every array task. With submitit's local stand-ins a task is over when submitit
    says so; on a real scheduler, when SLURM (:func:`.slurm.job_states`: ``scontrol``, then
    ``sacct``) calls it finished, and its result file is read then. A task finished twice in a
    row without a result failed (killed, out of memory, timed out): :func:`.slurm.failure_line`."""
    unreported: set[int] = set()  # finished without a result at the last poll
    while len(results) < len(jobs):
        left = [i for i in range(len(jobs)) if i not in results]
        states = _slurm.job_states(jobs[i].job_id for i in left) if scheduler else {}
        for i in left:
            job, info = jobs[i], states.get(jobs[i].job_id)
            if not scheduler:
                if job.done():
                    results[i] = _job_result(job, specs[i], scheduler)
                    bar.update()
                continue
            # a task requeued (preempted, timed out) may leave the result of its first attempt:
            # read only once the scheduler calls it finished (or no longer answers for it)
            finished = info is not None and info["state"] in _slurm.FINISHED
            if (finished or info is None) and job.paths.result_pickle.exists():
                results[i] = _job_result(job, specs[i], scheduler)
            elif finished or (info is None and job.done()):
                if i in unreported:  # the result file had a poll's time to appear
                    line = _slurm.failure_line(job.job_id, info, job.paths.stderr)
                    results[i] = _failed(specs[i], line, job.job_id)
                unreported.add(i)
            if i in results:
                bar.update()
        if len(results) < len(jobs):
            time.sleep(poll)


def _failed(spec, error: str, job_id) -> dict:
    return {
        "name": spec.name,
        "status": "failed",
        "seconds": float("nan"),
        "error": error[-3000:],
        "job_id": job_id,
    }


def _job_result(job, spec, scheduler: bool) -> dict:
    """The result a task wrote; on a real scheduler a failure's first line names the job and the
    path of its log."""
    where = f" (SLURM job {job.job_id}; log: {job.paths.stderr})" if scheduler else ""
    try:
        res = job.result()
    except Exception as err:  # noqa: BLE001 - job killed, timed out, node failure
        first, _, rest = f"{type(err).__name__}: {err}".partition("\n")
        return _failed(spec, first + where + ("\n" + rest if rest else ""), job.job_id)
    if res.get("status") == "failed" and where:
        first, _, rest = str(res.get("error", "")).partition("\n")
        res["error"] = first + where + ("\n" + rest if rest else "")
        res["job_id"] = job.job_id
    return res


def slurm_available() -> bool:
    """Whether this machine can submit SLURM jobs (``sbatch`` on the PATH)."""
    return shutil.which("sbatch") is not None
