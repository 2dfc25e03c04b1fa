"""Argument checks of the gate's public entry points (:mod:`pfntheory.claims.gating`): loaded runs,
run statuses and replays, refused up front naming the argument (never a KeyError or an
AttributeError from inside)."""

from __future__ import annotations

from collections.abc import Mapping

from pfntheory.base._checks import ArgumentTypeError


def loaded_run(run, name: str = "run"):
    """``run`` if it is a loaded run (a ``spec`` and a ``run_dir``, e.g.
    :class:`pfntheory.experiments.results.LoadedRun`)."""
    if not (hasattr(run, "spec") and hasattr(run, "run_dir")):
        raise ArgumentTypeError(
            f"{name} must be a loaded run (with .spec and .run_dir), got {run!r}"[:200]
        )
    return run


def loaded_runs(runs, name: str = "runs") -> list:
    """``runs`` as a list of loaded runs (a list or tuple; a dict, None or a string is refused)."""
    if isinstance(runs, (str, bytes, Mapping)) or not hasattr(runs, "__iter__"):
        raise ArgumentTypeError(f"{name} must be a list of loaded runs, got {runs!r}"[:200])
    runs = list(runs)
    for i, r in enumerate(runs):
        loaded_run(r, f"{name}[{i}]")
    return runs


def statuses_of(statuses, runs: list, name: str = "statuses") -> None:
    """``statuses`` (or None) must map the name of every trained run of ``runs`` to a status."""
    if statuses is None:
        return
    if not isinstance(statuses, Mapping):
        raise ArgumentTypeError(f"{name} must map run names to statuses, got {statuses!r}"[:200])
    from pfntheory.infra.tree import RunSpec

    missing = [
        r.run_dir.name
        for r in runs
        if isinstance(r.spec, RunSpec) and statuses.get(r.run_dir.name) is None
    ]
    if missing:
        raise ValueError(f"{name} has no status for the run(s) {missing[:3]}")


def replay_of(replay, name: str = "replay", *, optional: bool = False):
    """``replay`` if callable (or None when ``optional``)."""
    if replay is None and optional:
        return None
    if not callable(replay):
        raise ArgumentTypeError(f"{name} must be a function (a replay), got {replay!r}"[:200])
    return replay
