"""``sweep --executor slurm`` against a real one-node SLURM (issue 51).

A module fixture starts ``munged``, ``slurmctld`` and ``slurmd`` (Debian's ``slurm-wlm`` and
``munge``; ``.ci/install-slurm`` installs them) in a temporary directory, pinned to core 1
(:mod:`slurm_cluster`), and stops them after this module's last test; without the programs, or
without root, the tests that need them skip and say why. The sweep submits through submitit, as
a user's would, and the jobs train real (tiny) PFN runs with the ``nn`` backend; the cluster
keeps no accounting database, so the sweep also shows that it follows its jobs without ``sacct``.

What is checked: the files of runs trained through SLURM are byte-identical to those of the local
executor (``metrics.json`` up to its wall-clock seconds); ``sweep --list`` shows the state of the
jobs while they run; a job preempted with submitit's signal (``scancel --signal=USR2``, what
SLURM itself sends 90 s before a time limit) is requeued, resumes from its checkpoint and ends
bitwise identical; a job killed outright leaves one line naming the job, its exit and its log.
The dry run (``--executor slurm --dry-run``: the job array printed, nothing submitted) and the
parsing of the scheduler's answers are checked without a cluster.

All of it takes about 40 s on one core.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
import slurm_cluster

from pfntheory import cli
from pfntheory.experiments import definitions, pool
from pfntheory.experiments import slurm as slurm_jobs
from pfntheory.experiments.definitions import Design, Experiment
from pfntheory.experiments.runner import sweep
from pfntheory.experiments.state import plan
from pfntheory.infra import runs as runfiles
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import EvalSpec, RunSpec

#: One one-node cluster at a time (its daemons bind fixed ports): under `pytest -n` these tests
#: share one worker (`--dist loadgroup`, README), and their module fixtures start it once.
pytestmark = pytest.mark.xdist_group("slurm_cluster")

#: Seconds any one sweep through the test cluster may take before the test fails (a hang, not a
#: slow machine: each takes 3-15 s on one core).
SWEEP_LIMIT_S = 120.0
#: metrics.json keys that measure wall-clock time, the only bytes allowed to differ between two
#: trainings of the same run (everything else, the weights and evaluations included, is bitwise).
TIMING_KEYS = ("wall_time_s", "curve_eval_s")


def _run(steps: int, seed: int = 0) -> RunSpec:
    return RunSpec(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8, normalised=True),
        n_min=4,
        n_max=8,
        steps=steps,
        lr=1e-3,
        seed=seed,
        evals=(EvalSpec(n_eval=(4, 8), n_instances=4),),
    )


def _experiment(name: str, runs: tuple) -> Experiment:
    design = Design(runs=runs, shrunk="a few tiny PFN runs")
    return Experiment(
        name=name,
        labels=("none",),
        title="SLURM plumbing",
        claims=(),
        quick=design,
        paper=design,
        cpu=design,
    )


#: Two tiny runs (about a second each); one long enough (800 steps, checkpoints every 200, about
#: 2 s) to be preempted part way; one to be killed part way.
TWO = _experiment("slurm_two", (_run(40, seed=1), _run(60, seed=2)))
LONG = _experiment("slurm_long", (_run(800, seed=3),))
KILLED = _experiment("slurm_killed", (_run(20000, seed=4),))


@pytest.fixture(scope="module")
def experiments():
    with pytest.MonkeyPatch.context() as mp:
        for exp in (TWO, LONG, KILLED):
            mp.setitem(definitions.EXPERIMENTS, exp.name, exp)
        # the jobs inherit this environment (sbatch --export=ALL): one thread, no oracle cache
        mp.setenv("OMP_NUM_THREADS", "1")
        mp.setenv("PFNTHEORY_ORACLE_STORE", "off")
        mp.delenv("PFNTHEORY_STANDIN_CRASH", raising=False)
        yield


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The one-node SLURM of :mod:`slurm_cluster`, up while this module's tests run (stopped
    after its last), its ``SLURM_CONF`` in this process's environment (which the sweep's
    ``sbatch`` and the jobs inherit)."""
    missing = slurm_cluster.missing_binaries()
    if missing:
        pytest.skip(f"SLURM is not installed ({', '.join(missing)} missing): run .ci/install-slurm")
    if os.geteuid() != 0:
        pytest.skip("the test SLURM cluster runs its daemons as root; this is not root")
    c = slurm_cluster.Cluster(tmp_path_factory.mktemp("slurm"), core=1)
    c.start()
    old = os.environ.get("SLURM_CONF")
    os.environ.update(c.env())
    try:
        yield c
    finally:
        c.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def _slurm_sweep(name: str, root: Path, **kw) -> dict:
    slurm = {"cluster": "slurm", "poll_s": 0.3, "timeout_min": 30, "slurm_partition": "debug"}
    return sweep(name, "quick", root=root, executor="slurm", progress=False, slurm=slurm, **kw)


def _local_sweep(name: str, root: Path) -> dict:
    return sweep(name, "quick", root=root, executor="local", workers=1, progress=False)


def _in_background(fn):
    """Run ``fn`` in a thread; returns a function that joins it (with :data:`SWEEP_LIMIT_S`) and
    returns what ``fn`` returned or raises what it raised."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the joining test
            out["error"] = err

    t = threading.Thread(target=target, daemon=True)
    t.start()

    def join():
        t.join(SWEEP_LIMIT_S)
        assert not t.is_alive(), f"the sweep did not end within {SWEEP_LIMIT_S:.0f} s"
        if "error" in out:
            raise out["error"]
        return out["value"]

    return join


def _wait_for(cond, what: str, limit: float = SWEEP_LIMIT_S, step: float = 0.05):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"no {what} within {limit:.0f} s")


def _files(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}


def _assert_same_results(name: str, a: Path, b: Path) -> None:
    """Every file of every run of ``name`` under roots ``a`` and ``b`` is byte-identical, except
    metrics.json, which is identical once its wall-clock keys are removed."""
    runs = [
        (rd_a, plan(name, "quick", b)[i][1])
        for i, (_, rd_a, _) in enumerate(plan(name, "quick", a))
    ]
    for rd_a, rd_b in runs:
        fa, fb = _files(rd_a), _files(rd_b)
        assert sorted(fa) == sorted(fb), (rd_a.name, sorted(fa), sorted(fb))
        for f in fa:
            if f == runfiles.METRICS:
                ma, mb = (runfiles.load_json(rd / f) for rd in (rd_a, rd_b))
                for k in TIMING_KEYS:
                    ma.pop(k, None), mb.pop(k, None)
                assert ma == mb, f"{rd_a.name}/{f} differs beyond its wall-clock seconds"
            else:
                assert fa[f] == fb[f], f"{rd_a.name}/{f} differs between the executors"


@pytest.fixture(scope="module")
def two(cluster, experiments, tmp_path_factory):
    """fig-style sweep of :data:`TWO` locally and through SLURM, with a ``sweep --list`` taken
    while the array is in the scheduler."""
    local, remote = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("slurm")
    _local_sweep(TWO.name, local)
    join = _in_background(lambda: _slurm_sweep(TWO.name, remote))
    jobs = remote / TWO.name / slurm_jobs.JOBS_FILE
    _wait_for(jobs.is_file, "jobs.json")
    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):
        assert cli.main(["sweep", TWO.name, "--list", "--root", str(remote)]) == 0
    summary = join()
    return {"local": local, "slurm": remote, "summary": summary, "listing": listing.getvalue()}


def test_slurm_sweep_is_byte_identical_to_local(two):
    """Both runs of the experiment, trained as array tasks of a real SLURM, end complete with
    files byte-identical to the local executor's. Fails with the name of the first file that
    differs (or the error of a failed task) when the SLURM path trains, evaluates or writes
    anything differently, or when the sweep loses track of its jobs (sacct is absent here)."""
    s = two["summary"]
    assert s["executor"] == "slurm"
    assert s["n_failed"] == 0, [r.get("error") for r in s["runs"]]
    assert {r["status"] for r in s["runs"]} == {"done"}
    assert all(done for *_, done in plan(TWO.name, "quick", two["slurm"]))
    _assert_same_results(TWO.name, two["local"], two["slurm"])
    # a second sweep finds them complete and submits nothing
    again = _slurm_sweep(TWO.name, two["slurm"])
    assert {r["status"] for r in again["runs"]} == {"skipped"}


def test_list_shows_the_slurm_jobs_state(two):
    """``sweep --list`` during the sweep names each unfinished run's array task and its SLURM
    state (``[slurm 12_0 RUNNING]``). Fails when the job ids are not recorded or the states not
    read from the scheduler."""
    recorded = slurm_jobs.recorded_jobs(two["slurm"] / TWO.name)
    assert sorted(recorded) == sorted(s.name for s in TWO.runs("quick"))
    shown = [line for line in two["listing"].splitlines() if "[slurm " in line]
    assert shown, two["listing"]
    for line in shown:
        job = line.split("[slurm ")[1].split("]")[0]
        jid, state = job.split()
        assert jid in recorded.values() and state in {"PENDING", "RUNNING", "COMPLETING"}, line


def test_preempted_job_resumes_from_its_checkpoint_bitwise(cluster, experiments, tmp_path):
    """The task is sent submitit's preemption signal (``scancel --signal=USR2``) once it has
    written a checkpoint: submitit requeues it, the requeued task resumes from the checkpoint,
    and the run ends bitwise the run trained straight through locally (SLURM holds a requeued
    job 120 s before it may start again: the test lifts the hold with ``scontrol update``).
    Fails when the signal kills the task (a failed run), when it is not requeued (no restart in
    ``scontrol``), when the requeued task starts from step 0 (as much training left as a fresh
    run), or when the resumed run differs from the straight one."""
    local, remote = tmp_path / "local", tmp_path / "slurm"
    straight = _local_sweep(LONG.name, local)
    join = _in_background(lambda: _slurm_sweep(LONG.name, remote))
    ((spec, rd, _),) = plan(LONG.name, "quick", remote)
    _wait_for((rd / runfiles.CHECKPOINT).is_file, "checkpoint")
    job = slurm_jobs.recorded_jobs(remote / LONG.name)[spec.name]
    subprocess.run(["scancel", "--signal=USR2", job], check=True, timeout=30)
    # SLURM holds a requeued job for 120 s (Reason=BeginTime); release it, as an admin may
    _wait_for(lambda: _squeue(job) == "PENDING BeginTime", "the requeued job", step=0.2)
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
    summary = join()
    assert summary["n_failed"] == 0, [r.get("error") for r in summary["runs"]]
    log = next((remote / LONG.name / ".submitit").rglob("*_log.err")).read_text()
    assert "this job is preempted" in log and "DUE TO JOB REQUEUE" in log, log[-2000:]
    assert (
        "Restarts=1 "
        in subprocess.run(
            ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, check=True
        ).stdout
    )
    # the requeued task started from the checkpoint: less training was left than from step 0
    left = summary["runs"][0]["estimate_s"]["training"]
    assert 0 < left < straight["runs"][0]["estimate_s"]["training"], (left, straight)
    _assert_same_results(LONG.name, local, remote)


def test_killed_job_fails_in_one_line_with_exit_and_log(cluster, experiments, tmp_path, capsys):
    """A task killed outright (``scancel --signal=KILL``) leaves a failed run whose error is one
    line: the SLURM job, its state and exit, and the path of its log; ``sweep`` (the command)
    prints it and exits 1. Fails when the sweep waits for ever for the dead task (no sacct here:
    only scontrol knows it ended) or reports it without the job, exit or log."""
    root = tmp_path / "slurm"
    argv = ["sweep", KILLED.name, "--executor", "slurm", "--root", str(root), "--no-progress"]
    argv += ["--partition", "debug", "--timeout-min", "5"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pool, "run_slurm", _fast_poll(pool.run_slurm))
        join = _in_background(lambda: cli.main(argv))
        ((spec, rd, _),) = plan(KILLED.name, "quick", root)
        _wait_for((rd / runfiles.CHECKPOINT).is_file, "checkpoint")
        job = slurm_jobs.recorded_jobs(root / KILLED.name)[spec.name]
        subprocess.run(["scancel", "--signal=KILL", job], check=True, timeout=30)
        assert join() == 1
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if line.startswith("  FAILED")]
    assert len(failed) == 1, out
    line = failed[0]
    assert f"SLURM job {job} ended" in line, line
    assert re.search(r"ended [A-Z_]+ with (killed by signal \d+|exit code \d+)", line), line
    log = line.split("log: ")[1].split(";")[0]
    assert Path(log).is_file() and log.endswith("_log.err"), line


def _squeue(job: str) -> str:
    """``STATE REASON`` of ``job`` in ``squeue`` (empty once it has left the queue)."""
    argv = ["squeue", "-h", "-j", job, "-o", "%T %r"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()


def _fast_poll(run_slurm):
    """``run_slurm`` polling every 0.3 s (the CLI's default is 10 s)."""

    def wrapped(todo, backend, root, threads, progress, desc, experiment, slurm):
        return run_slurm(
            todo, backend, root, threads, progress, desc, experiment, {**slurm, "poll_s": 0.3}
        )

    return wrapped


# ------------------------------------------------------------------------------------------------
# without a cluster
# ------------------------------------------------------------------------------------------------


def test_dry_run_prints_the_job_array_and_submits_nothing(tmp_path, capsys, monkeypatch):
    """``sweep fig_exp1 --scale paper --executor slurm --dry-run`` prints the array fig:exp1's
    paper design would be (its size, the partition, GPUs, CPUs, memory, time limit, parallelism),
    needs no sbatch and writes no file. Fails when the dry run submits, writes into the root,
    refuses for want of SLURM, or leaves an asked-for option out of what it prints."""
    monkeypatch.setattr(pool.shutil, "which", lambda name: None)  # no SLURM here
    argv = ["sweep", "fig_exp1", "fig_exp2_2", "--scale", "paper", "--executor", "slurm"]
    argv += ["--dry-run", "--root", str(tmp_path / "runs"), "--partition", "gpu"]
    argv += ["--gpus-per-node", "1", "--mem-gb", "32", "--timeout-min", "720"]
    argv += ["--array-parallelism", "8", "--threads", "4"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    for name in ("fig_exp1", "fig_exp2_2"):
        n = len(definitions.get_experiment(name).runs("paper"))
        assert f"{name} [paper]: 1 job array of {n} tasks" in out, out
        assert f"--array=0-{n - 1}%8" in out
    assert "partition: gpu" in out and "1 GPU, 4 CPUs, memory 32 GB" in out
    assert "time limit 720 min" in out and "nothing submitted" in out
    # the command's check that --root is writable makes the folder; nothing goes into it
    assert not list((tmp_path / "runs").rglob("*")), "a dry run writes nothing"


def test_scheduler_answers_are_parsed():
    """The states of array tasks from ``scontrol show job -o`` (a pending array's record covers a
    range of tasks) and from ``sacct -P``. Fails when a task's state or exit code is lost or
    given to another task."""
    text = (
        "JobId=14 ArrayJobId=12 ArrayTaskId=2-3,5%2 JobState=PENDING ExitCode=0:0 Reason=None\n"
        "JobId=13 ArrayJobId=12 ArrayTaskId=1 JobState=RUNNING ExitCode=0:0\n"
        "JobId=12 ArrayJobId=12 ArrayTaskId=0 JobState=FAILED ExitCode=0:9\n"
        "JobId=20 JobName=x JobState=COMPLETED ExitCode=0:0\n"
    )
    s = slurm_jobs._from_scontrol(text)
    assert {k: v["state"] for k, v in s.items()} == {
        "12_0": "FAILED",
        "12_1": "RUNNING",
        "12_2": "PENDING",
        "12_3": "PENDING",
        "12_5": "PENDING",
        "20": "COMPLETED",
    }
    assert s["12_0"]["exit_code"] == "0:9"
    a = slurm_jobs._from_sacct(
        "12_0|CANCELLED by 0|0:15\n12_0.batch|CANCELLED|0:15\n12_[1-2]|PENDING|0:0\n"
    )
    assert a == {
        "12_0": {"state": "CANCELLED", "exit_code": "0:15"},
        "12_1": {"state": "PENDING", "exit_code": "0:0"},
        "12_2": {"state": "PENDING", "exit_code": "0:0"},
    }
    line = slurm_jobs.failure_line("12_0", s["12_0"], "/nowhere/12_0_0_log.err")
    assert (
        "SLURM job 12_0 ended FAILED with killed by signal 9; log: /nowhere/12_0_0_log.err" in line
    )
    assert "\n" not in line
