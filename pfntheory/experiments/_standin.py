"""A seconds-long stand-in for training and evaluation with the same files as :mod:`pfntheory.nn`.

Used by ``tests/test_experiments.py`` and ``pfntheory sweep --dry-run`` to exercise the sweep
machinery (naming, skipping, resuming, executors) without training. Its metrics are a made-up smooth
function of the spec (``TV ~ exp(-L/8) (n'/n_max) + 1/C``), deterministic, with standard errors,
so that the trained-claim checks can be run on it too. Never used to produce reported numbers.

Resumption is simulated: with ``PFNTHEORY_STANDIN_CRASH=1`` in the environment, a fresh run writes a
checkpoint at half its steps and raises; the next call resumes from it and records ``resumed_from``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from pfntheory.infra import runs as runfiles

__all__ = ["train", "evaluate", "fake_metrics", "train_latent", "latent_reference"]


def train(spec, run_dir: Path) -> None:
    run_dir = Path(run_dir)
    runfiles.save_json(run_dir / runfiles.CONFIG, spec.to_config())
    ckpt = run_dir / runfiles.CHECKPOINT
    start = 0
    if ckpt.is_file():
        start = int(ckpt.read_text())
    elif os.environ.get("PFNTHEORY_STANDIN_CRASH") == "1":
        runfiles.atomic_write_bytes(ckpt, str(spec.steps // 2).encode())
        raise RuntimeError("stand-in killed after its checkpoint")
    runfiles.atomic_write_bytes(run_dir / runfiles.WEIGHTS, b"stand-in weights")
    runfiles.save_json(
        run_dir / runfiles.METRICS,
        {"completed": True, "steps": spec.steps, "resumed_from": start, "standin": True},
    )


def fake_metrics(spec, n: int, covariates: str) -> dict:
    """Made-up metrics of a run at n' (see the module docstring)."""
    L, C = spec.model.L, spec.model.C
    shift = 1.5 if covariates != spec.task.covariates else 1.0
    tv = shift * (
        math.exp(-L / 8) * (n / spec.n_max) * (1 if spec.model.normalised else n / spec.n_max)
        + 1.0 / C
    )
    out: dict[str, float] = {"n_instances": 0}
    for name, v in (
        ("tv", tv),
        ("mse_mean", tv**2),
        ("mse_second_moment", 2 * tv**2),
        ("mse_y", 0.1 + tv**2),
        ("crps", 0.3 + tv / 10),
        ("crps_exact", 0.3),
        ("nll", 0.5 + tv),
    ):
        out[name], out[name + "_se"] = v, v / 50
    for lv in (50, 90, 95):
        out[f"coverage_{lv}"] = lv / 100 - tv / 20
        out[f"coverage_{lv}_exact"] = lv / 100
        out[f"width_{lv}"] = 1.0 + tv / 10  # within the shift rows' width band while tv < 1.9
        out[f"width_{lv}_exact"] = 1.0
    return out


def evaluate(run_dir: Path, ev) -> None:
    from pfntheory.infra.tree import RunSpec

    run_dir = Path(run_dir)
    spec = RunSpec.from_config(runfiles.load_json(run_dir / runfiles.CONFIG))
    cov = ev.covariates or spec.task.covariates
    results = {}
    for n in ev.n_eval:
        m = fake_metrics(spec, n, cov)
        m["n_instances"] = ev.n_instances
        results[str(n)] = m
    runfiles.save_json(
        run_dir / ev.filename,
        {
            "seed": ev.seed,
            "n_instances": ev.n_instances,
            "covariates": cov,
            "standin": True,
            "results": results,
        },
    )


def train_latent(spec, run_dir: Path) -> None:
    """A stand-in latent-GP run: its ``latent_config.json``, placeholder weights and finished
    metrics marked ``standin`` (no learning curve)."""
    from pfntheory.infra.latent_spec import LATENT_CONFIG, latent_doc

    run_dir = Path(run_dir)
    runfiles.save_json(run_dir / LATENT_CONFIG, latent_doc(spec))
    runfiles.atomic_write_bytes(run_dir / runfiles.WEIGHTS, b"stand-in weights")
    runfiles.save_json(
        run_dir / runfiles.METRICS, {"completed": True, "steps": spec.steps, "standin": True}
    )


def latent_reference(spec, path: Path) -> None:
    """A stand-in evaluation set of the latent study: the records of ``spec`` and, per n', zero
    inputs of ``spec.contexts`` contexts (no Laplace, EP or sampler)."""
    from dataclasses import asdict

    doc = {
        "schema": 1,
        "task": asdict(spec.task),
        "seed": spec.seed,
        "chains": spec.chains,
        "samples": spec.samples,
        "standin": True,
        "by_n": [{"n": n, "X": [[0.0]] * spec.contexts} for n in spec.n_eval],
    }
    runfiles.save_json(Path(path), doc)
