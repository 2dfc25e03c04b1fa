"""fig:stepsize's spec takes its prior from the run tree and keeps its committed names.

:class:`pfntheory.experiments.specs.StepsizeSpec` holds a :class:`pfntheory.infra.config.TaskSpec`
node; its identity (and ``spec.json``) is the flat layout the committed runs were named by
(docs/design.md, "The run tree"). Every committed ``reports/runs/fig_stepsize`` spec reads back to
the new spec, is named as its directory, and is declared by the experiment; a changed field
renames it; and the kernel and noise the computation takes from the prior reproduce the committed
curve.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from pfntheory.experiments.definitions import EXPERIMENT_SCALES, EXPERIMENTS
from pfntheory.experiments.execute import execute
from pfntheory.experiments.specs import StepsizeSpec
from pfntheory.experiments.state import RESULT_FILE, jsonable, spec_doc
from pfntheory.infra import runs
from pfntheory.infra.config import TaskSpec

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs" / "fig_stepsize"
SPEC_FILES = sorted(ROOT.glob("*/spec.json"))
_IDS = [p.parent.name for p in SPEC_FILES]


def _load(path: Path) -> tuple[dict, StepsizeSpec]:
    doc = json.loads(path.read_text())
    return doc, StepsizeSpec.from_record(doc["spec"])


def test_there_are_committed_stepsize_runs():
    """Guards the tests below against an empty glob (two kernels at two scales)."""
    assert len(SPEC_FILES) == 4


@pytest.mark.parametrize("path", SPEC_FILES, ids=_IDS)
def test_committed_stepsize_spec_rebuilds_to_its_name(path):
    """The committed record reads back (``from_record`` and ``runs.dataclass_from_dict``, what
    ``tests/test_run_identity.py`` uses) to a spec named as its directory, recording the same
    ``spec.json``, and declared by fig_stepsize at some scale."""
    doc, spec = _load(path)
    assert runs.dataclass_from_dict(StepsizeSpec, doc["spec"]) == spec
    assert spec.task.kind == {"linear": "blr", "rbf": "rbf"}[doc["spec"]["kernel"]]
    assert spec.name == doc["name"] == path.parent.name
    assert jsonable(spec_doc(spec)) == doc
    declared = {r for sc in EXPERIMENT_SCALES for r in EXPERIMENTS["fig_stepsize"].runs(sc)}
    assert spec in declared


#: One changed field per case: each is part of the identity, so each must rename the run.
FAULTS = {
    "kind": lambda s: dataclasses.replace(
        s, task=dataclasses.replace(s.task, kind="rbf" if s.task.kind == "blr" else "blr")
    ),
    "d": lambda s: dataclasses.replace(s, task=dataclasses.replace(s.task, d=s.task.d + 1)),
    "noise_var": lambda s: dataclasses.replace(
        s, task=dataclasses.replace(s.task, noise_var=2 * s.task.noise_var)
    ),
    "alpha": lambda s: dataclasses.replace(s, task=dataclasses.replace(s.task, alpha=2.0)),
    "lengthscale": lambda s: dataclasses.replace(
        s, task=dataclasses.replace(s.task, lengthscale=0.4)
    ),
    "ns": lambda s: dataclasses.replace(s, ns=s.ns[:-1]),
    "n_trials": lambda s: dataclasses.replace(s, n_trials=s.n_trials + 1),
    "seed": lambda s: dataclasses.replace(s, seed=s.seed + 1),
}


@pytest.mark.parametrize("field", FAULTS)
def test_a_changed_field_changes_the_name(field):
    """Fault injection: every committed spec with one field changed is named otherwise than its
    directory (the name check above would see the change)."""
    for path in SPEC_FILES:
        _, spec = _load(path)
        changed = FAULTS[field](spec)
        assert changed != spec
        assert changed.name != path.parent.name, field


def test_the_record_round_trips_in_both_layouts():
    """``from_record`` reads the flat record and the nested ``asdict`` form to the same spec."""
    spec = StepsizeSpec(TaskSpec("blr", d=3, noise_var=0.1), ns=(4, 8), n_trials=2, seed=5)
    assert StepsizeSpec.from_record(jsonable(spec.record())) == spec
    assert StepsizeSpec.from_record(jsonable(dataclasses.asdict(spec))) == spec


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: StepsizeSpec(TaskSpec("hier_rbf", 2), ns=(4,), n_trials=2), "task kind"),
        (
            lambda: StepsizeSpec(TaskSpec("rbf", 2, covariates="uniform"), ns=(4,), n_trials=2),
            "task.covariates",
        ),
        (
            lambda: StepsizeSpec(TaskSpec("blr", 2, sigma_diag=(1.0, 2.0)), ns=(4,), n_trials=2),
            "task.sigma_diag",
        ),
        (lambda: StepsizeSpec({"kind": "rbf", "d": 2}, ns=(4,), n_trials=2), "task"),
        (lambda: StepsizeSpec(TaskSpec("rbf", 2), ns=(), n_trials=2), "ns"),
        (lambda: StepsizeSpec.from_record({"kernel": "rbf", "d": 2, "ns": [4]}), "n_trials"),
        (
            lambda: StepsizeSpec.from_record(
                {"kernel": "rbf", "d": 2, "ns": [4], "n_trials": 2, "sigma": 0.2}
            ),
            "sigma",
        ),
        (
            lambda: StepsizeSpec.from_record(
                {"kernel": "matern", "d": 2, "ns": [4], "n_trials": 2}
            ),
            "kernel",
        ),
    ],
)
def test_bad_specs_are_refused(make, match):
    """A prior fig:stepsize cannot compute or name (another kind, a field its identity does not
    carry), a non-TaskSpec, and a record with a missing, unknown or bad key raise an error naming
    it."""
    with pytest.raises((ValueError, TypeError), match=match):
        make()


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_the_sweep_computes_the_committed_curve_from_the_prior(kernel, tmp_path):
    """The sweep's ``execute``, which takes the kernel and ``sigma^2`` from the prior node,
    reproduces the committed quick run's first two rows of draws (n = 100, 200: the draws are made
    n by n, so a shorter ``ns`` reproduces a prefix). Tolerance: rtol 1e-10, atol 0, round-off of
    the top Gram eigenvalue (observed <= 2e-15) with room for another BLAS. Fault injection: with
    ``noise_var`` doubled the same draws differ by more than 1e-4 relative, far outside it."""
    (path,) = [p for p in SPEC_FILES if p.parent.name.startswith(f"stepsize-{kernel}-d16-t10-")]
    _, spec = _load(path)
    stored = np.asarray(json.loads((path.parent / "result.json").read_text())["steps"])[:2]

    def draws(s: StepsizeSpec) -> np.ndarray:
        s = dataclasses.replace(s, ns=s.ns[:2])
        execute(s, tmp_path / s.name)
        return np.asarray(json.loads((tmp_path / s.name / RESULT_FILE).read_text())["steps"])

    np.testing.assert_allclose(draws(spec), stored, rtol=1e-10, atol=0)
    faulty = draws(FAULTS["noise_var"](spec))
    assert np.max(np.abs(faulty / stored - 1)) > 1e-4
