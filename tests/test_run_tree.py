"""Migration test of ``config.json``: every committed run directory reads back as a run tree.

The committed ``config.json`` files were written before the run tree (``pfntheory.tree.RunSpec``)
replaced ``TrainConfig``: they hold the process settings ``device`` and ``checkpoint_every`` and the
model's copies ``model.d`` / ``model.noise_var_init`` of the prior's ``d`` / ``noise_var``.
:meth:`RunSpec.from_config` drops the first two and checks the copies against the prior; the run
directories are not rewritten. A run with a ``spec.json`` beside its ``config.json`` must read back
to the tree whose name is its directory (so the migrated config and the hashed spec agree field by
field), and resuming it must not be refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfntheory import runs
from pfntheory.tree import RunSpec

REPORTS = Path(__file__).resolve().parents[1] / "reports"
CONFIG_FILES = sorted(REPORTS.rglob(runs.CONFIG))


def test_there_are_committed_configs_to_check():
    """Guards the tests below against an empty glob (a moved reports folder would make them
    vacuous): 313 committed runs, 6 of them case studies (no spec.json)."""
    assert len(CONFIG_FILES) >= 300
    assert sum((p.parent / "spec.json").is_file() for p in CONFIG_FILES) >= 290


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.parent.relative_to(REPORTS)))
def test_committed_config_reads_back_as_its_run(path):
    """The migrated config.json is a RunSpec; with a spec.json beside it, the tree is named as the
    directory (fails if the migration dropped or renamed a hashed field), and the library's readers
    (``read_config`` and the resume check ``refuse_other_config``) accept the directory."""
    from pfntheory.nn.state import read_config, refuse_other_config

    doc = json.loads(path.read_text())
    spec = RunSpec.from_config(doc)
    assert read_config(path.parent) == spec
    if (path.parent / "spec.json").is_file():
        assert spec.name == path.parent.name
    refuse_other_config(spec, path.parent)  # resuming this run with its own tree is not refused


def test_the_migration_refuses_a_model_noise_other_than_the_prior():
    """Fault injection: an old config whose model noise differs from the prior's cannot be read as
    a tree (the model now takes sigma^2 from the prior), nor one whose model ``d`` differs; the
    error is one line naming both values."""
    doc = json.loads(CONFIG_FILES[0].read_text())
    assert "noise_var_init" in doc["model"], "the committed configs are of the old layout"
    for key, value in (
        ("noise_var_init", doc["task"]["noise_var"] * 2),
        ("d", doc["task"]["d"] + 1),
    ):
        bad = json.loads(json.dumps(doc))
        bad["model"][key] = value
        with pytest.raises(ValueError, match=f"model.{key} = {value} but task") as err:
            RunSpec.from_config(bad)
        assert "\n" not in str(err.value)


def test_the_migration_only_drops_what_it_names(tmp_path):
    """Only ``device``, ``checkpoint_every`` and the model's copies go: any other unknown key is
    still refused (``runs.dataclass_from_dict``), and a tree's own config.json round-trips."""
    from pfntheory.nn.state import config_doc

    doc = json.loads(CONFIG_FILES[0].read_text())
    doc["colour"] = "red"
    with pytest.raises(ValueError, match="unknown RunSpec fields"):
        RunSpec.from_config(doc)
    spec = RunSpec.from_config(json.loads(CONFIG_FILES[0].read_text()))
    runs.save_json(tmp_path / runs.CONFIG, config_doc(spec))
    new = runs.load_json(tmp_path / runs.CONFIG)
    assert RunSpec.from_config(new) == spec
    assert not {"device", "checkpoint_every"} & set(new) and "noise_var_init" not in new["model"]
