"""The shift-cause study's committed file: the decompositions of the complete cpu TF^pr runs.

``pfntheory sweep shift_cause [--root ROOT] [--read-root DIR ...]`` (:func:`run_shift_cause`)
decomposes each run
(:func:`pfntheory.claims.shift_cause.decompose_run`) into
:data:`~pfntheory.claims.shift_findings.SHIFT_CAUSE_FILE` beside the d = 8 companion's runs;
:mod:`pfntheory.claims.shift_findings` reads the file and decides (docs/findings.md, "The d = 8
shift: its cause").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pfntheory.claims.shift_cause import decompose_run, design_contexts
from pfntheory.claims.shift_findings import EXPERIMENTS, SETTINGS, SHIFT_CAUSE_FILE
from pfntheory.experiments import state as xrun
from pfntheory.experiments.results import load_available
from pfntheory.infra import runs as runfiles
from pfntheory.infra.tree import RunSpec

__all__ = ["run_shift_cause"]


def run_shift_cause(roots: Sequence | None = None) -> Path:
    """Decompose the complete cpu TF^pr runs (C = 256) of :data:`EXPERIMENTS` found under every
    runs root of ``roots`` (default: the repository's; a run found twice is read once) into
    :data:`SHIFT_CAUSE_FILE` beside the d = 8 companion's runs of the first root. Incremental: a
    run already in the file (same name, same settings) is kept, and the file is saved after each
    new run. Run by ``pfntheory sweep shift_cause`` (:mod:`pfntheory.pipelines.studies`)."""
    given = [Path(r) for r in (roots or [])]
    missing = [str(r) for r in given if not r.is_dir()]
    if missing:
        raise ValueError(f"roots must be existing runs roots, got {', '.join(missing)}")
    for root in given:
        if not any((root / name).is_dir() for name in EXPERIMENTS):
            raise ValueError(
                f"root {root} holds none of the experiments {', '.join(EXPERIMENTS)} (is it a "
                "runs root, such as reports/runs?)"
            )
    roots = given or [xrun.default_root()]
    dirs: dict[tuple[str, str], Any] = {}
    for root in roots:
        for name in EXPERIMENTS:
            loaded, _ = load_available(name, "cpu", root=root)
            for r in loaded:
                spec = r.spec
                if not isinstance(spec, RunSpec):  # an exact-side run
                    continue
                if spec.model.normalised and spec.model.C == 256 and spec.task.kind == "rbf":
                    dirs.setdefault((name, r.run_dir.name), r)
    if not dirs:
        raise ValueError(
            f"no complete cpu-scale TF^pr run (C = 256) under {', '.join(map(str, roots))}; "
            "nothing to decompose, nothing written"
        )
    out = roots[0] / "supp_exp2_d8" / SHIFT_CAUSE_FILE
    settings = dict(SETTINGS)
    old = runfiles.load_json(out) if out.is_file() else {}
    have = {
        (d["run"]["experiment"], d["run"]["name"]): d
        for d in old.get("runs", [])
        if old.get("settings") == settings
    }
    docs = [have[k] for k in dirs if k in have]
    cache: dict = {}
    for key, r in dirs.items():
        if key in have:
            continue
        task = r.spec.task
        if task.d not in cache:
            cache[task.d] = design_contexts(
                task.d,
                n_eval=SETTINGS["n_eval"],
                n_instances=SETTINGS["n_instances"],
                seed=SETTINGS["seed"],
                path_scales=SETTINGS["path_scales"],
                noise_var=task.noise_var,
                lengthscale=task.lengthscale,
            )
        docs.append(decompose_run(r.run_dir, cache[task.d]))
        runfiles.save_json(out, {"settings": settings, "runs": docs})
    runfiles.save_json(out, {"settings": settings, "runs": docs})
    return out
