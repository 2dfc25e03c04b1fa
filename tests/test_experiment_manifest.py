"""Every experiment declares the same runs, in the same order, as the committed manifest.

``tests/experiment_runs.txt`` lists, per experiment and scale, the directory name of every run in
the order ``pfntheory sweep NAME --scale SCALE --list`` prints them. A change to the experiment
definitions (or to the modules they are split over) that renames, drops, adds or reorders a run
fails here, at every scale, including the runs not yet committed under ``reports/runs/``
(``tests/test_run_identity.py`` covers those that are). A deliberate change rewrites the manifest:
``python tests/test_experiment_manifest.py --write``, and the diff shows what moved.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from pfntheory.experiments.definitions import EXPERIMENT_SCALES, EXPERIMENTS

MANIFEST = Path(__file__).resolve().parent / "experiment_runs.txt"


def manifest(experiments=EXPERIMENTS) -> list[str]:
    """``"experiment scale run-name"`` per run, in declaration order."""
    return [
        f"{n} {s} {r.name}"
        for n, e in experiments.items()
        for s in EXPERIMENT_SCALES
        for r in e.runs(s)
    ]


def test_declared_runs_match_the_manifest():
    expected = MANIFEST.read_text(encoding="utf-8").splitlines()
    got = manifest()
    assert len(got) == len(expected) >= 500  # the manifest is not empty or truncated
    changed = [(a, b) for a, b in zip(expected, got, strict=True) if a != b]
    assert not changed, changed[:5]


def test_the_check_catches_a_changed_run():
    """Fault injection: one cpu run of fig:exp1 with one more step renames that run, and the
    manifest comparison sees exactly that line."""
    exp = EXPERIMENTS["fig_exp1"]
    runs = list(exp.cpu.runs)
    runs[0] = dataclasses.replace(runs[0], steps=runs[0].steps + 1)
    changed = {
        **EXPERIMENTS,
        "fig_exp1": dataclasses.replace(exp, cpu=dataclasses.replace(exp.cpu, runs=tuple(runs))),
    }
    diff = set(manifest(changed)) ^ set(manifest())
    assert len(diff) == 2 and any(exp.cpu.runs[0].name in line for line in diff)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    MANIFEST.write_text("\n".join(manifest()) + "\n", encoding="utf-8")
