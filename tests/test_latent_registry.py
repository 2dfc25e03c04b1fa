"""The latent-GP study and the multi-head runs through the experiment registry (issue 48, item 2):
no committed run changes name or result.

* Every committed latent run (``reports/runs/latent_gpc/gpc-*``) and the evaluation set
  (``reference.json``) is a run of the registry's ``latent_gpc`` cpu design, under the same name;
  each ``latent_config.json`` is exactly the document the spec writes (same JSON, its type tag
  ``kind`` included); :func:`~pfntheory.experiments.state.plan` finds every one complete, and
  :func:`~pfntheory.experiments.execute.execute` skips each, writing nothing (a copy of the folder
  is hashed before and after).
* The same for the trained multi-head runs (``supp_tab_hier_multihead``), and every committed file
  of the multi-head studies outside the registry is listed by ``sweep --list``
  (:data:`pfntheory.pipelines.studies.LISTED_STUDIES`).

How these tests fail: a renamed run or a changed spec (a name or a config no longer matches),
a completeness check that no longer recognises a committed run (``plan`` says incomplete,
``execute`` runs it), an executor that writes into a complete run (the hashes differ), a
committed multi-head file no study lists; and the negative cases below: a run directory of a
changed spec is not complete, a reference of another seed is not complete and is refused, never
overwritten.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pfntheory.experiments.definitions import REGISTRY, STUDIES
from pfntheory.experiments.execute import execute
from pfntheory.experiments.state import is_complete, plan
from pfntheory.infra import runs
from pfntheory.infra.latent_spec import (
    DESIGN,
    LATENT_CONFIG,
    REFERENCE_FILE,
    LatentReferenceSpec,
    LatentRunSpec,
    latent_doc,
    latent_spec_of,
)

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs"
LATENT = ROOT / "latent_gpc"


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_every_committed_latent_run_is_a_registry_run_of_the_same_name_and_json():
    committed = sorted(p.name for p in LATENT.iterdir() if p.is_dir())
    assert committed and committed == sorted(s.name for s in DESIGN)
    assert "latent_gpc" in STUDIES and REGISTRY["latent_gpc"] is STUDIES["latent_gpc"]
    cpu = STUDIES["latent_gpc"].runs("cpu")
    assert {s.name for s in cpu} == {*committed, REFERENCE_FILE}
    for spec in DESIGN:
        doc = json.loads((LATENT / spec.name / LATENT_CONFIG).read_text())
        assert doc == latent_doc(spec) and doc["kind"] == "latent_gpc"
        assert latent_spec_of(doc, spec.name) == spec


def test_plan_finds_every_committed_latent_and_multihead_run_complete():
    for name in ("latent_gpc", "supp_tab_hier_multihead"):
        items = plan(name, "cpu", ROOT)
        assert items and all(done for *_, done in items), [
            str(rd) for _, rd, done in items if not done
        ]


@pytest.mark.parametrize("name", ["latent_gpc", "supp_tab_hier_multihead"])
def test_execute_skips_every_committed_run_and_writes_nothing(name, tmp_path):
    shutil.copytree(ROOT / name, tmp_path / name)
    before = _hashes(tmp_path / name)
    items = plan(name, "cpu", tmp_path)
    assert items
    for spec, rd, done in items:
        assert done, rd
        res = execute(spec, rd, root=tmp_path)
        assert res["status"] == "skipped" and res["name"] == spec.name == rd.name
    assert _hashes(tmp_path / name) == before


def test_every_committed_multihead_study_file_is_listed():
    from pfntheory.pipelines.studies import LISTED_STUDIES

    listed = {p for s in LISTED_STUDIES.values() for p in s.found(ROOT)}
    for folder in ("select", "confirm", "chebyshev", "fair"):
        files = [p for p in (ROOT / f"supp_tab_hier_multihead_{folder}").rglob("*.json")]
        assert files, folder
        assert set(files) <= listed, sorted(map(str, set(files) - listed))[:3]


def test_a_changed_spec_or_reference_is_not_complete_and_is_refused(tmp_path):
    """Negative cases: another seed's run in a committed directory is not complete; a reference
    of another seed is not complete, and its executor refuses to overwrite the file."""
    spec = DESIGN[0]
    other = LatentRunSpec(L=spec.L, steps=spec.steps, seed=7)
    assert is_complete(spec, LATENT / spec.name)
    assert not is_complete(other, LATENT / spec.name)
    ref = LatentReferenceSpec()
    assert is_complete(ref, LATENT / REFERENCE_FILE)
    moved = LatentReferenceSpec(seed=ref.seed + 1)
    assert not is_complete(moved, LATENT / REFERENCE_FILE)
    copy = tmp_path / REFERENCE_FILE
    shutil.copyfile(LATENT / REFERENCE_FILE, copy)
    with pytest.raises(ValueError, match="another evaluation set"):
        execute(moved, copy, root=tmp_path)
    assert copy.read_bytes() == (LATENT / REFERENCE_FILE).read_bytes()
    with pytest.raises(runs.CorruptFileError, match="not a latent run spec"):
        latent_spec_of({"kind": "other"}, "x")


def test_standin_sweep_of_the_quick_design_then_skips(tmp_path):
    """The quick design runs through the sweep's executor (stand-in backend, seconds) and a
    second pass skips it."""
    from pfntheory.experiments.runner import sweep

    first = sweep("latent_gpc", "quick", root=tmp_path, backend="standin", progress=False)
    assert first["n_failed"] == 0 and {r["status"] for r in first["runs"]} == {"done"}
    again = sweep("latent_gpc", "quick", root=tmp_path, backend="standin", progress=False)
    assert {r["status"] for r in again["runs"]} == {"skipped"}
