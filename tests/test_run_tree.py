"""Migration test of ``config.json``: every committed run directory reads back as a run tree.

The committed ``config.json`` files were written before the run tree
(``pfntheory.infra.tree.RunSpec``) replaced ``TrainConfig``: they hold the process settings
``device`` and ``checkpoint_every`` and the model's copies ``model.d`` / ``model.noise_var_init`` of
the prior's ``d`` / ``noise_var``. :meth:`RunSpec.from_config` drops the first two and checks the
copies against the prior; the run directories are not rewritten. A run with a ``spec.json`` beside
its ``config.json`` must read back to the tree whose name is its directory (so the migrated config
and the hashed spec agree field by field), and resuming it must not be refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfntheory.infra import runs
from pfntheory.infra.tree import RunSpec

REPORTS = Path(__file__).resolve().parents[1] / "reports"
CONFIG_FILES = sorted(REPORTS.rglob(runs.CONFIG))


def test_there_are_committed_configs_to_check():
    """Guards the tests below against an empty glob (a moved reports folder would make them
    vacuous): 313 committed runs, 6 of them case studies (no spec.json)."""
    assert len(CONFIG_FILES) >= 300
    assert sum((p.parent / "spec.json").is_file() for p in CONFIG_FILES) >= 290


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.parent.relative_to(REPORTS)))
def test_committed_config_reads_back_as_its_run(path):
    """The migrated config.json is a RunSpec; in an experiment's folder (with a spec.json beside it,
    or without one: a run made after config.json became a trained run's one spec file), the tree is
    named as the directory (fails if the migration dropped or renamed a hashed field), and the
    library's readers (``read_config`` and the resume check ``refuse_other_config``) accept the
    directory."""
    from pfntheory.experiments.definitions import EXPERIMENTS
    from pfntheory.nn.state import read_config, refuse_other_config

    doc = json.loads(path.read_text())
    spec = RunSpec.from_config(doc)
    assert read_config(path.parent) == spec
    if (path.parent / "spec.json").is_file() or path.parent.parent.name in EXPERIMENTS:
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


def _one_run_per_folder() -> list[Path]:
    """The first finished run of each experiment folder and case study (weights.pt present), and
    the first of each folder in theory mode (``-theor-`` in the name)."""
    firsts: dict[tuple[Path, bool], Path] = {}
    for p in CONFIG_FILES:
        if (p.parent / runs.WEIGHTS).is_file():
            firsts.setdefault((p.parent.parent, "-theor-" in p.parent.name), p.parent)
    assert any(theory for _, theory in firsts), "no committed theory-mode run to check"
    return sorted(firsts.values())


@pytest.mark.parametrize("run_dir", _one_run_per_folder(), ids=lambda p: p.parent.name)
def test_committed_weights_load_into_the_tree_model(run_dir):
    """``load_trained`` builds the model of the migrated tree and loads the committed weights into
    it (a missing or extra tensor, or a wrong shape, raises); the model's ``d`` is the prior's, and
    in theory mode its fixed ``sigma^2`` buffer holds the prior's ``noise_var`` (to float32
    round-off, rtol 1e-6), the value the old config's ``model.noise_var_init`` copied."""
    from pfntheory.nn.train import load_trained

    model, spec, metrics = load_trained(run_dir)
    assert metrics["completed"] and model.d == spec.task.d
    if spec.model.mode == "theory" and not spec.model.mixture:
        # the committed weights were trained with W_2y = sigma^2 fixed: equal to the prior's
        assert float(model.noise_var) == pytest.approx(spec.task.noise_var, rel=1e-6)


#: Where the root of the run tree and its helpers are defined: the one module they are imported
#: from. (``TaskSpec`` is still re-exported by ``pfntheory.nn.priors``, which the layer refactor
#: owns.)
_HOMES = {
    "RunSpec": "pfntheory.infra.tree",
    "EvalSpec": "pfntheory.infra.tree",
    "EVAL_ORACLES": "pfntheory.infra.tree",
    "EVAL_SEED": "pfntheory.infra.tree",
    "canonical_json": "pfntheory.infra.tree",
    "spec_hash": "pfntheory.infra.tree",
    "task_identity": "pfntheory.infra.tree",
}


def _foreign_imports(path: Path, root: Path) -> list[str]:
    """``from X import NAME`` statements of ``path`` that take a run-tree name from a module other
    than its home (relative imports resolved against ``path``'s package)."""
    import ast

    parts = list(path.relative_to(root).with_suffix("").parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = parts[: len(parts) - node.level]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        for alias in node.names:
            home = _HOMES.get(alias.name)
            if home is not None and module != home:
                out.append(f"{path.relative_to(root)}:{node.lineno}: {alias.name} from {module}")
    return out


def test_the_run_tree_has_one_import_path():
    """``RunSpec``, ``EvalSpec`` and the tree's helpers are imported from ``pfntheory.infra.tree``
    only (docs/design.md, "One import path per class"). How it can fail: a file importing
    ``RunSpec`` through ``pfntheory.experiments.specs`` (as 12 files did) is listed; the checker
    itself is run on such a line below."""
    root = REPORTS.parent
    files = [
        p
        for d in ("pfntheory", "tests", "verify", "benchmarks", "notebooks")
        for p in sorted((root / d).rglob("*.py"))
    ]
    assert len(files) > 200
    foreign = [line for p in files for line in _foreign_imports(p, root)]
    assert not foreign, foreign


def test_the_import_path_check_sees_a_foreign_path(tmp_path):
    pkg = tmp_path / "pfntheory" / "report"
    pkg.mkdir(parents=True)
    (pkg / "x.py").write_text(
        "from ..experiments.specs import RunSpec\nfrom pfntheory.infra.tree import EvalSpec\n"
        "from ..config import TaskSpec\n"
    )
    got = _foreign_imports(pkg / "x.py", tmp_path)
    assert got == ["pfntheory/report/x.py:1: RunSpec from pfntheory.experiments.specs"]
