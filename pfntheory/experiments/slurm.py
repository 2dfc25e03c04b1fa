"""What the SLURM executor asks the scheduler, and what it shows: job states, failures, dry runs.

:func:`.pool.run_slurm` submits one job array per experiment through submitit and records which
array task runs which run in ``<root>/<experiment>/.submitit/jobs.json`` (:func:`record_jobs`).
This module reads the scheduler for it:

* :func:`job_states` -- the state and exit code of array tasks, from ``scontrol show job`` (which
  every SLURM answers, accounting or not, for ``MinJobAge`` seconds after a job ends; default
  300 s), then ``sacct`` for the rest. submitit reads ``sacct`` only, and on a cluster without
  accounting storage it never learns that a job died without writing its result: the sweep then
  waited for ever. With these states the sweep stops waiting for a task the scheduler calls
  finished (:data:`FINISHED`).
* :func:`failure_line` -- the one line a failed task leaves in the sweep's summary: the job, its
  state and exit code, and the path of its log.
* :func:`listed_states` -- the ``[slurm 12_3 RUNNING]`` that ``sweep --list`` prints beside an
  unfinished run whose task the scheduler still knows.
* :func:`describe_array` -- ``sweep --executor slurm --dry-run``: the job array that would be
  submitted (array size, partition, GPUs, CPUs, memory, time limit), submitting nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from pfntheory.infra import runs as runfiles

__all__ = [
    "FINISHED",
    "JOBS_FILE",
    "job_states",
    "record_jobs",
    "recorded_jobs",
    "failure_line",
    "listed_states",
    "describe_array",
]

#: Where :func:`record_jobs` keeps the job id of each run, under ``<root>/<experiment>/``.
JOBS_FILE = Path(".submitit") / "jobs.json"
#: SLURM states after which a task runs no more (a requeued task is ``REQUEUED``, then
#: ``PENDING``; ``PREEMPTED`` is final: a cluster that requeues preempted jobs never shows it).
FINISHED = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "PREEMPTED",
        "SPECIAL_EXIT",
    }
)
#: Seconds a scheduler command may take before its answer is treated as missing.
QUERY_TIMEOUT_S = 30


def _query(argv: list[str]) -> str | None:
    """stdout of a scheduler command, or None when it is absent, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _task_ids(array_id: str, tasks: str) -> list[str]:
    """``12_0``, ``12_1``... of ``ArrayTaskId=0-2,5%2`` (a pending array's record covers many)."""
    tasks = tasks.split("%")[0]
    out = []
    for part in tasks.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out += [f"{array_id}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def _from_scontrol(text: str) -> dict[str, dict]:
    states: dict[str, dict] = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "JobState" not in fields:
            continue
        info = {"state": fields["JobState"], "exit_code": fields.get("ExitCode", "")}
        array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
        ids = _task_ids(array, task) if array and task else [fields.get("JobId", "")]
        for i in ids:
            states[i] = info
    return states


def _from_sacct(text: str) -> dict[str, dict]:
    states: dict[str, dict] = {}
    for line in text.splitlines():
        job, _, rest = line.partition("|")
        state, _, code = rest.partition("|")
        if not job or "." in job or not state:
            continue
        info = {"state": state.split()[0], "exit_code": code.strip()}
        m = re.fullmatch(r"(\d+)_\[(.+)\]", job)
        for i in _task_ids(m.group(1), m.group(2)) if m else [job]:
            states[i] = info
    return states


def job_states(job_ids: Iterable[str]) -> dict[str, dict]:
    """``{job id: {"state", "exit_code"}}`` of the SLURM jobs (``12_3`` for an array task) that
    the scheduler still knows: ``scontrol show job`` first, then ``sacct`` for the rest (absent
    without accounting storage). ``exit_code`` is SLURM's ``status:signal``; a job id the
    scheduler has forgotten is left out."""
    wanted = list(dict.fromkeys(job_ids))
    arrays = sorted({j.split("_")[0] for j in wanted})
    states: dict[str, dict] = {}
    for a in arrays:
        out = _query(["scontrol", "show", "job", "-o", a])
        if out:
            states.update(_from_scontrol(out))
    rest = sorted({j.split("_")[0] for j in wanted if j not in states})
    if rest:
        argv = ["sacct", "-n", "-P", "-o", "JobID,State,ExitCode"]
        for a in rest:
            argv += ["-j", a]
        out = _query(argv)
        if out:
            states.update({k: v for k, v in _from_sacct(out).items() if k not in states})
    return {j: states[j] for j in wanted if j in states}


def _exit_text(code: str) -> str:
    status, _, sig = code.partition(":")
    if sig.isdigit() and int(sig):
        return f"killed by signal {sig}"
    return f"exit code {status}" if status else "exit code unknown"


def failure_line(job_id: str, info: dict | None, log) -> str:
    """The one line of a task that ended without a result: job, state, exit code, log path, and
    the log's last line (where the error usually is)."""
    if info is None:
        what = "ended without a result (the scheduler no longer knows it)"
    else:
        what = f"ended {info['state']} with {_exit_text(info.get('exit_code', ''))}"
    line = f"SLURM job {job_id} {what}; log: {log}"
    with contextlib.suppress(OSError):
        last = [s for s in Path(log).read_text(errors="replace").splitlines() if s.strip()]
        if last:
            line += f"; its last line: {last[-1].strip()[:300]}"
    return line + "; the run resumes from its checkpoint on re-run"


def record_jobs(exp_dir, jobs: dict[str, str]) -> None:
    """Add ``{run name: job id}`` to ``<exp_dir>/.submitit/jobs.json`` (a later submission of a
    run replaces its earlier job)."""
    path = Path(exp_dir) / JOBS_FILE
    runfiles.save_json(path, {**recorded_jobs(exp_dir), **jobs})


def recorded_jobs(exp_dir) -> dict[str, str]:
    """``{run name: job id}`` recorded by :func:`record_jobs` (empty when none or unreadable)."""
    path = Path(exp_dir) / JOBS_FILE
    if not path.is_file():
        return {}
    try:
        doc = runfiles.load_json(path)
    except (runfiles.CorruptFileError, OSError):
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def listed_states(exp_dir, names: Iterable[str]) -> dict[str, str]:
    """``{run name: "slurm 12_3 RUNNING"}`` for the runs among ``names`` whose recorded job the
    scheduler still knows (``sweep --list``); empty without SLURM or without recorded jobs."""
    jobs = {n: j for n, j in recorded_jobs(exp_dir).items() if n in set(names)}
    if not jobs:
        return {}
    states = job_states(jobs.values())
    return {n: f"slurm {j} {states[j]['state']}" for n, j in jobs.items() if j in states}


def describe_array(
    experiment: str,
    scale: str,
    todo: Sequence[tuple[object, Path]],
    root: Path,
    threads: int,
    slurm: dict | None,
) -> str:
    """The job array ``sweep --executor slurm`` would submit for ``experiment``: one task per
    missing run of ``todo``, with the submitit parameters of ``slurm`` (what ``--dry-run``
    prints)."""
    p = {k: v for k, v in (slurm or {}).items() if v is not None}
    n = len(todo)
    head = f"{experiment} [{scale}]: "
    if not n:
        return head + "nothing to submit (every run is complete)"
    gpus = p.get("gpus_per_node")
    mem = p.get("mem_gb")
    par = p.get("slurm_array_parallelism")
    lines = [
        head + f"1 job array of {n} task{'s' * (n != 1)} (one per missing run), "
        f"job name pfntheory-{experiment}",
        f"    partition: {p.get('slurm_partition') or '(the cluster default)'}",
        f"    per task: {gpus if gpus else 'no'} GPU{'s' * (gpus != 1)}, {threads} CPU"
        f"{'s' * (threads != 1)}, memory {f'{mem:g} GB' if mem else '(the partition default)'}, "
        f"time limit {p.get('timeout_min', 240)} min (SIGUSR2 90 s before it: the task is "
        "requeued and resumes from its checkpoint)",
        f"    array: --array=0-{n - 1}"
        + (f"%{par}" if par else "")
        + (f" (at most {par} at once)" if par else " (no limit on tasks at once)"),
        f"    logs: {Path(root) / experiment / '.submitit'}/<job id>/",
    ]
    for i, (_spec, rd) in enumerate(todo):
        lines.append(f"    task {i}: {_shown(rd)}")
    lines.append("    (dry run: nothing submitted)")
    return "\n".join(lines)


def _shown(path) -> str:
    p = Path(path)
    with contextlib.suppress(ValueError):
        return str(p.resolve().relative_to(Path(os.getcwd()).resolve()))
    return str(p)
