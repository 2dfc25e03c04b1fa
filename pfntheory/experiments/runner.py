"""Idempotent, resumable sweeps over the runs of the paper's experiments.

:func:`sweep_many` plans every run of the experiments asked for (:func:`.state.plan`), executes the
missing ones (:mod:`.execute`) in a local worker pool or a SLURM job array (:mod:`.pool`), and
writes a summary per experiment. Re-running a sweep does only what is missing; a killed sweep
resumes. One sweep at a time per runs root: :func:`sweep_many` holds
:func:`pfntheory.infra.runs.root_lock`; a second sweep waits ``wait_lock_s`` seconds, then refuses
naming the holder's pid. Orphan temporary files of killed writes are deleted when a sweep starts.
The command is :mod:`pfntheory.cli.sweep` (``pfntheory sweep``).
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Sequence
from pathlib import Path

from pfntheory.base._checks import choice, positive_int, positive_scalar
from pfntheory.infra import runs as runfiles
from pfntheory.infra.tree import EVAL_ORACLES

from . import pool
from .definitions import EXPERIMENT_SCALES, EXPERIMENTS, get_experiment
from .execute import BACKENDS
from .state import Spec, default_root, plan

__all__ = ["sweep", "sweep_many", "run_sweep"]

_GITIGNORE = "checkpoint.pt\n.*.tmp\n.submitit/\n"


def sweep(experiment: str, scale: str = "quick", **options) -> dict:
    """Run every missing run of ``experiment`` at ``scale``: :func:`sweep_many` of one experiment.

    Parameters
    ----------
    experiment : str
        A name of :data:`~.definitions.EXPERIMENTS`.
    scale : {"quick", "cpu", "paper"}
    **options
        ``executor``, ``root``, ``workers``, ``threads``, ``backend``, ``progress``, ``slurm``,
        ``wait_lock_s``, ``eval_oracle``, as in :func:`sweep_many`.

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
    eval_oracle: str | None = None,
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
        (:class:`pfntheory.infra.runs.LockHeldError`).
    eval_oracle : {"float64", "float32"}, optional
        The :attr:`~pfntheory.infra.tree.EvalSpec.oracle` of every evaluation this sweep runs (None:
        as the experiments declare them, float64 like every committed evaluation); it travels in
        the specs to the workers (:func:`.state.with_eval_oracle`). An evaluation already on disk is
        complete under either oracle (:func:`.state.eval_complete`).

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
    choice(scale, "scale", EXPERIMENT_SCALES)
    choice(executor, "executor", pool.EXECUTORS)
    choice(backend, "backend", BACKENDS)
    root = Path(root) if root is not None else default_root()
    threads = positive_int(threads, "threads", maximum=1024)
    workers = (
        positive_int(workers, "workers", maximum=1024)
        if workers is not None
        else min(2, os.cpu_count() or 1)
    )
    wait_lock_s = positive_scalar(wait_lock_s, "wait_lock_s", allow_zero=True)
    if eval_oracle is not None:
        choice(eval_oracle, "eval_oracle", EVAL_ORACLES)
    if slurm is not None and not isinstance(slurm, dict):
        raise ValueError(f"slurm must be a dict of submitit parameters, got {type(slurm).__name__}")
    if executor == "slurm":
        cluster = (slurm or {}).get("cluster")
        if cluster is not None:  # None: detect
            choice(cluster, "slurm['cluster']", ("slurm", "local", "debug"))
        if cluster in (None, "slurm") and not pool.slurm_available():
            raise ValueError(
                "executor 'slurm': SLURM is not available on this machine (no sbatch "
                "on the PATH); use --executor local, or ask for submitit's local mode "
                "explicitly with --submitit-cluster local"
            )
    with runfiles.root_lock(root, wait_s=wait_lock_s):
        return _sweep_locked(
            exps, scale, executor, root, workers, threads, backend, progress, slurm, eval_oracle
        )


def _sweep_locked(
    exps, scale, executor, root, workers, threads, backend, progress, slurm, eval_oracle
) -> list:
    plans = {exp.name: _plan_experiment(exp.name, scale, root, eval_oracle) for exp in exps}
    todo = {n: [(s, rd) for s, rd, done in items if not done] for n, items in plans.items()}
    t0 = time.perf_counter()
    results: dict[str, list[dict]] = {n: [] for n in plans}
    if executor == "local":
        desc = f"{'+'.join(plans)} [{scale}]"
        for batch in _passes(todo):
            owner = {spec.name: n for n, spec, _ in batch}
            jobs = [(spec, rd) for _, spec, rd in batch]
            for res in pool.run_local(
                jobs, backend, root, min(workers, len(jobs)), threads, progress, desc
            ):
                results[owner[res["name"]]].append(res)
    else:
        for n, items in todo.items():
            if items:
                desc = f"{n} [{scale}]"
                results[n] = pool.run_slurm(items, backend, root, threads, progress, desc, n, slurm)
    wall = time.perf_counter() - t0
    summaries = []
    for exp in exps:
        summary = {
            "experiment": exp.name,
            "scale": scale,
            "executor": executor,
            "backend": backend,
            "workers": workers if executor == "local" else None,
            "threads": threads,
            "finished": _dt.datetime.now().isoformat(timespec="seconds"),
            "wall_time_s": wall,
            **_run_statuses(plans[exp.name], results[exp.name]),
        }
        if todo[exp.name]:  # a no-op sweep keeps the record of the sweep that did the work
            runfiles.save_json(root / exp.name / f"sweep-{scale}.json", summary)
        summaries.append(summary)
    return summaries


def _plan_experiment(
    name: str, scale: str, root: Path, eval_oracle: str | None = None
) -> list[tuple[Spec, Path, bool]]:
    """:func:`.state.plan` of one experiment, after creating its folder (with the ``.gitignore``
    of run directories) and deleting the orphan temporary files of killed writes in it."""
    exp_dir = root / name
    exp_dir.mkdir(parents=True, exist_ok=True)
    runfiles.clean_orphan_temps(exp_dir, recursive=True)
    gi = exp_dir / ".gitignore"
    if not gi.is_file():
        runfiles.atomic_write_bytes(gi, _GITIGNORE.encode())
    return plan(name, scale, root, eval_oracle=eval_oracle)


def _passes(todo: dict[str, list[tuple[Spec, Path]]]) -> list[list[tuple[str, Spec, Path]]]:
    """The missing runs of all experiments as ``(experiment, spec, run_dir)`` in passes over one
    pool: pass k holds the k-th copy of each spec name, so a later copy adopts the first one's
    run instead of training it again."""
    passes: list[list[tuple[str, Spec, Path]]] = []
    seen: dict[str, int] = {}
    for n, items in todo.items():
        for spec, rd in items:
            k = seen.get(spec.name, 0)
            seen[spec.name] = k + 1
            if k == len(passes):
                passes.append([])
            passes[k].append((n, spec, rd))
    return passes


def _run_statuses(items: list[tuple[Spec, Path, bool]], res: list[dict]) -> dict:
    """The per-run part of an experiment's summary: the runs executed now, plus those found
    complete beforehand as ``skipped``."""
    done_names = {r["name"] for r in res}
    res = res + [
        {"name": s.name, "status": "skipped", "seconds": 0.0}
        for s, _, done in items
        if done and s.name not in done_names
    ]
    return {
        "n_runs": len(items),
        "n_failed": sum(r["status"] == "failed" for r in res),
        "runs": sorted(res, key=lambda r: r["name"]),
    }


def run_sweep(experiments: Sequence[str] | None = None, scale: str = "quick", **kw) -> list[dict]:
    """:func:`sweep_many` over ``experiments`` (all of them by default); returns their
    summaries."""
    names = list(experiments) if experiments else list(EXPERIMENTS)
    return sweep_many(names, scale, **kw)
