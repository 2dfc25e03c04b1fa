"""A real one-node SLURM cluster for the tests: ``munged``, ``slurmctld`` and ``slurmd`` from
Debian's ``slurm-wlm`` and ``munge`` (``.ci/install-slurm`` installs them), started in a temporary
directory with a ``slurm.conf`` of its own and stopped afterwards.

Everything lives under the directory given (key, sockets, state, logs, spool); nothing in
``/etc`` is used or changed. The daemons listen on two free loopback ports, run as root (the
user of this project's machines and CI), and are pinned to one core (``taskset -c CORE``; the
node is declared with one CPU, and with ``TaskPlugin=task/none`` every job inherits ``slurmd``'s
affinity), so a test job never runs on the other core. Client commands (``sbatch``, ``squeue``,
``scontrol``, ``scancel``) find this cluster through ``$SLURM_CONF``, which :meth:`Cluster.env`
gives. The cluster keeps no accounting database (``sacct`` answers that accounting is disabled):
the sweep reads the jobs' states from ``scontrol`` instead.

Used by ``tests/test_slurm_real.py`` (its session fixture) and runnable by hand::

    python tests/slurm_cluster.py /tmp/slurm-up     # start, print the SLURM_CONF line, wait
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["BINARIES", "Cluster", "missing_binaries"]

#: The programs the cluster needs (packages slurm-wlm, slurm-client and munge).
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "scancel")
#: Seconds to wait for the node to come up (idle in ``sinfo``) before giving up.
START_TIMEOUT_S = 30.0


def missing_binaries() -> list[str]:
    """The programs of :data:`BINARIES` not on the PATH (``/usr/sbin`` included)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _which(name: str) -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    found = shutil.which(name, path=path)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed (run .ci/install-slurm)")
    return found


class Cluster:
    """One SLURM node, ``node``, with one partition, ``debug``, under ``workdir``.

    Parameters
    ----------
    workdir : path
        An empty directory for the configuration, state and logs.
    core : int
        The CPU core the daemons and every job run on.
    """

    PARTITION = "debug"

    def __init__(self, workdir, core: int = 1) -> None:
        self.dir = Path(workdir).resolve()
        self.core = int(core)
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}

    # ---------------------------------------------------------------------------------- config
    def _write_config(self) -> None:
        d = self.dir
        for sub in ("munge", "state", "spool", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d / "munge", 0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(128))
        os.chmod(key, 0o400)
        ctl, node = _free_port(), _free_port()
        lines = [
            "ClusterName=pfntheory-test",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={ctl}",
            f"SlurmdPort={node}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",  # jobs inherit slurmd's affinity: the one core
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides",  # the node is what this file says: one CPU
            "ReturnToService=2",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=300",  # scontrol remembers a finished job (and its exit code) 5 minutes
            "KillWait=5",
            "MessageTimeout=10",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=1 RealMemory=2048 State=UNKNOWN",
            f"PartitionName={self.PARTITION} Nodes={self.node} Default=YES MaxTime=60 State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")

    def env(self) -> dict[str, str]:
        """Environment variables that point SLURM's client commands at this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    # ---------------------------------------------------------------------------------- life
    def _start(self, name: str, argv: list[str]) -> None:
        log = (self.dir / "log" / f"{name}.out").open("wb")
        env = {**os.environ, **self.env()}
        self.procs[name] = subprocess.Popen(
            ["taskset", "-c", str(self.core), *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C of pytest does not reach them: stop() does
        )
        log.close()

    def start(self) -> Cluster:
        """Write the configuration, start the three daemons and wait until the node is idle.

        Raises RuntimeError with the daemons' last log lines when it does not come up within
        :data:`START_TIMEOUT_S`."""
        self._write_config()
        d = self.dir / "munge"
        self._start(
            "munged",
            [
                _which("munged"),
                "--foreground",
                "--force",
                f"--key-file={d / 'munge.key'}",
                f"--socket={self.munge_socket}",
                f"--pid-file={d / 'munged.pid'}",
                f"--log-file={d / 'munged.log'}",
                f"--seed-file={d / 'munged.seed'}",
            ],
        )
        self._wait(lambda: self.munge_socket.exists(), "munged's socket")
        self._start("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._ok(["scontrol", "ping"], "UP"), "slurmctld")
        self._start("slurmd", [_which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(lambda: self._ok(["sinfo", "-h", "-o", "%t"], "idle"), "the node to be idle")
        return self

    def _ok(self, argv: list[str], word: str) -> bool:
        try:
            out = subprocess.run(
                argv,
                env={**os.environ, **self.env()},
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        return word in out

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                break
            time.sleep(0.2)
        tail = self.logs()
        self.stop()
        raise RuntimeError(f"SLURM test cluster: no {what} within {START_TIMEOUT_S:.0f} s\n{tail}")

    def logs(self, lines: int = 15) -> str:
        """The last ``lines`` lines of each daemon's log (for error messages)."""
        out = []
        for f in sorted((self.dir / "log").glob("*")) + [self.dir / "munge" / "munged.log"]:
            if f.is_file():
                text = f.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {f.name}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel every job, then stop the daemons (SIGTERM, SIGKILL after 10 s), slurmd first."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    ["scancel", "--user=root"],
                    env={**os.environ, **self.env()},
                    capture_output=True,
                    timeout=10,
                )
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.pop(name, None)
            if p is None:
                continue
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - by hand
    import sys

    with Cluster(sys.argv[1] if len(sys.argv) > 1 else "/tmp/pfntheory-slurm") as c:
        print(f"export SLURM_CONF={c.conf}  # Ctrl-C stops the cluster", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
