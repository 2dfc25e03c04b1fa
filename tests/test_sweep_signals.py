"""Stopping a sweep: Ctrl-C, SIGTERM and kill -9 of a two-worker sweep; the runs-root lock; orphan
temporary files; corrupt artefacts; the SLURM executor without SLURM (issue 12).

The sweeps here run in a child Python process (a new session, so that a signal can go to its whole
process group as a terminal's Ctrl-C does) with a slow stand-in backend: each run writes its worker
pid, then a checkpoint every 0.1 s for up to 60 s. A sweep that ignored the signal would therefore
still be running 60 s later; the tests require it gone within :data:`STOP_S` seconds, with no
worker left alive, and every interrupted run resumable (the next, normal sweep completes it from its
checkpoint). Nothing here trains a network except the corrupt-weights check (4 steps).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pfntheory.experiments import execute, pool
from pfntheory.experiments.runner import sweep
from pfntheory.experiments.state import is_complete, plan
from pfntheory.infra import runs as runfiles

#: Seconds allowed between the signal and the end of every process of the sweep. The workers get
#: SIGTERM at once and SIGKILL after pool.STOP_GRACE_S (10 s); a stand-in worker exits within
#: one 0.1 s sleep, so 15 s is a generous bound on a loaded 2-core machine.
STOP_S = 15.0
EXPERIMENT = "fig_exp2_1"  # two runs at the quick scale: one per worker

SLOW_SWEEP = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from pfntheory.infra import runs as runfiles
    from pfntheory.experiments import _standin, execute, runner

    def slow_train(spec, run_dir):
        run_dir = Path(run_dir)
        runfiles.save_json(run_dir / runfiles.CONFIG, {"standin": True, **spec.identity()})
        (run_dir / "worker.pid").write_text(str(os.getpid()))
        for step in range(600):  # 60 s unless stopped
            runfiles.atomic_write_bytes(run_dir / runfiles.CHECKPOINT, str(step).encode())
            time.sleep(0.1)
        _standin.train(spec, run_dir)

    execute._backend = lambda name: (slow_train, _standin.evaluate)
    runner.sweep(sys.argv[1], "quick", root=sys.argv[2], workers=2, backend="standin",
                 progress=False)
""")


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _start_slow_sweep(root: Path) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SWEEP, EXPERIMENT, str(root)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = [
            int(p.read_text())
            for p in root.glob(f"{EXPERIMENT}/*/worker.pid")
            if p.read_text().strip()
        ]
        if len(pids) == 2 and all(
            (p.parent / runfiles.CHECKPOINT).is_file()
            for p in root.glob(f"{EXPERIMENT}/*/worker.pid")
        ):
            return proc, pids
        if proc.poll() is not None:
            raise AssertionError(f"sweep ended early: {proc.communicate()}")
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the two workers did not start within 120 s")


def _wait_gone(pids, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not any(_alive(p) for p in pids):
            return time.monotonic() - t0
        time.sleep(0.05)
    return float("inf")


def _resumes(root: Path) -> None:
    """A normal sweep afterwards completes every run, each from the checkpoint the stop left."""
    ckpts = {
        rd.name: int((rd / runfiles.CHECKPOINT).read_text())
        for _, rd, _ in plan(EXPERIMENT, "quick", root)
        if (rd / runfiles.CHECKPOINT).is_file()
    }
    assert len(ckpts) == 2, f"every interrupted run keeps a checkpoint, got {ckpts}"
    # wait_lock_s: a worker's last thread may close the lock's descriptor a moment after the
    # worker shows as exited (a zombie thread-group leader)
    s = sweep(
        EXPERIMENT,
        "quick",
        root=root,
        workers=1,
        backend="standin",
        progress=False,
        wait_lock_s=5.0,
    )
    assert s["n_failed"] == 0
    assert all(done for *_, done in plan(EXPERIMENT, "quick", root))
    assert not list(root.rglob(".*.tmp")), "no temporary file survives"


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_stop_two_worker_sweep(tmp_path, how):
    """Ctrl-C (SIGINT to the process group) or SIGTERM (to the parent only) ends the parent and
    both workers within STOP_S seconds, exit status non-zero, and the runs resume."""
    proc, pids = _start_slow_sweep(tmp_path)
    t0 = time.monotonic()
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"sweep still running {STOP_S} s after {how}")
    parent_s = time.monotonic() - t0
    gone_s = _wait_gone(pids, STOP_S)
    assert gone_s < STOP_S, f"workers {[p for p in pids if _alive(p)]} outlived the sweep"
    assert proc.returncode != 0
    print(f"{how}: parent exited after {parent_s:.2f} s, workers gone {gone_s:.2f} s later")
    _resumes(tmp_path)


def test_kill_9_of_the_parent_takes_the_workers(tmp_path):
    """kill -9 of the sweep parent cannot be handled by it: the workers notice (PR_SET_PDEATHSIG,
    or their watchdog) and exit within seconds; the runs resume."""
    proc, pids = _start_slow_sweep(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    gone_s = _wait_gone(pids, STOP_S)
    assert gone_s < STOP_S, f"orphan workers {[p for p in pids if _alive(p)]} after kill -9"
    print(f"kill -9: workers gone {gone_s:.2f} s after the parent")
    _resumes(tmp_path)


def test_second_sweep_on_the_same_root_refuses(tmp_path, capsys):
    """While one sweep runs, a second on the same root refuses at once naming the holder's pid (or
    waits with wait_lock_s); the CLI says so in one line."""
    from pfntheory import cli

    proc, pids = _start_slow_sweep(tmp_path)
    try:
        with pytest.raises(runfiles.LockHeldError, match=f"pid {proc.pid}"):
            sweep(EXPERIMENT, "quick", root=tmp_path, workers=1, backend="standin", progress=False)
        t0 = time.monotonic()
        with pytest.raises(runfiles.LockHeldError):
            sweep(
                EXPERIMENT,
                "quick",
                root=tmp_path,
                workers=1,
                backend="standin",
                progress=False,
                wait_lock_s=1.0,
            )
        assert time.monotonic() - t0 >= 1.0
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            cli.main(["sweep", EXPERIMENT, "--dry-run", "--root", str(tmp_path), "--no-progress"])
        err = capsys.readouterr().err
        assert e.value.code == 1 and "another sweep" in err and len(err.strip().splitlines()) == 1
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=STOP_S)
        _wait_gone(pids, STOP_S)


def test_orphan_temp_files_are_cleaned(tmp_path):
    """Temporary files left by writes that a kill interrupted are deleted by the next sweep."""
    s = sweep(EXPERIMENT, "quick", root=tmp_path, workers=1, backend="standin", progress=False)
    assert s["n_failed"] == 0
    rd = plan(EXPERIMENT, "quick", tmp_path)[0][1]
    orphan = rd / ".weights.pt.k3j2h1ab.tmp"
    orphan.write_bytes(b"half a file")
    other = rd / "notes.tmp"  # not ours: kept
    other.write_text("x")
    sweep(EXPERIMENT, "quick", root=tmp_path, workers=1, backend="standin", progress=False)
    assert not orphan.exists() and other.exists()


def test_truncated_weights_are_detected_and_redone(tmp_path):
    """A finished run whose weights.pt was truncated counts as not done, and execute retrains it."""
    from pfntheory.infra.config import ModelSpec, TaskSpec
    from pfntheory.infra.tree import EvalSpec, RunSpec

    spec = RunSpec(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8),
        n_min=4,
        n_max=8,
        steps=4,
        lr=1e-3,
        batch_size=4,
        evals=(EvalSpec(n_eval=(4,), n_instances=4),),
    )
    rd = tmp_path / "x" / spec.name
    assert execute.execute(spec, rd, backend="nn")["status"] == "done"
    assert is_complete(spec, rd)
    w = rd / runfiles.WEIGHTS
    w.write_bytes(w.read_bytes()[:100])
    assert not is_complete(spec, rd)
    assert execute.execute(spec, rd, backend="nn")["status"] == "done"
    assert is_complete(spec, rd) and runfiles.check_artefacts(rd) == {}


def test_slurm_executor_refuses_without_slurm(tmp_path, monkeypatch, capsys):
    """Issue 12: --executor slurm used to fall back silently to local jobs. Without sbatch it
    refuses unless submitit's local mode is asked for explicitly."""
    from pfntheory import cli

    monkeypatch.setattr(pool.shutil, "which", lambda name: None)
    with pytest.raises(ValueError, match="SLURM is not available"):
        sweep(
            EXPERIMENT, "quick", root=tmp_path, executor="slurm", backend="standin", progress=False
        )
    with pytest.raises(SystemExit) as e:
        cli.main(["sweep", EXPERIMENT, "--root", str(tmp_path), "--executor", "slurm"])
    assert e.value.code == 2 and "--submitit-cluster local" in capsys.readouterr().err
    assert not list(tmp_path.rglob("spec.json")), "nothing ran"
