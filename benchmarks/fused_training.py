"""A run trained with the fused kernel attention against the same run trained on the eager path.

Issue 28's acceptance check: one small but real configuration (the cpu scale's fig:exp1 RBF cell
at L = 8: RBF d=2, n ~ Unif{64..128}, C = 64, learnable, elementwise-unit Adam at lr 3e-2, batch
128) is trained twice with :func:`pfntheory.nn.train.train`, once with the fused operator
(``pfntheory.nn.fused``) and once with it off (the eager reference), same seed, so the same
initial weights and batches. Both learning curves are evaluated on the same held-out instances at
the same steps. The runs agree when, at every curve point and for every metric,
``|fused - eager| <= K_SE * se`` with ``se`` the larger of the two runs' held-out standard errors
(K_SE = 1: "within the held-out SE"). Also recorded: the per-step training losses (largest
relative difference over the first steps, before float32 round-off has been amplified by
training) and the wall time of each run.

Writes ``benchmarks/results/fused_training.json`` (the committed record that
tests/test_fused_attention.py re-checks) unless ``--out`` says otherwise.

Usage::

    python benchmarks/fused_training.py                  # 1000 steps, about 2 x 1-3 min
    python benchmarks/fused_training.py --steps 200 --out /tmp/ft.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.nn import fused
from pfntheory.nn.train import CURVE_METRICS, read_learning_curve, train

#: Standard errors within which the two runs must agree at every curve point.
K_SE = 1.0
#: Steps over which the training losses are compared one by one.
EARLY_STEPS = 20
OUT = Path(__file__).parent / "results" / "fused_training.json"


def config(steps: int, curve_instances: int, seed: int = 0, **overrides) -> RunSpec:
    """The compared run tree (module docstring); ``overrides`` replace RunSpec fields."""
    kw = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=8, C=64, mode="learnable", scale_init=1.25),
        n_min=64,
        n_max=128,
        steps=steps,
        lr=3e-2,
        lr_units="elementwise",
        seed=seed,
        curve_n_eval=(64, 128),
        curve_instances=curve_instances,
        curve_points=8,
    )
    kw.update(overrides)
    return RunSpec(**kw)


def train_pair(cfg: RunSpec, root: Path) -> dict:
    """Train ``cfg`` with the fused operator and without it under ``root``; both curves, losses
    and times."""
    out = {}
    for name, flag in (("fused", True), ("eager", False)):
        losses: list[float] = []
        with fused.enabled(flag):
            if flag and not fused.available():
                raise RuntimeError(f"fused operator unavailable: {fused.unavailable_reason()}")
            t0 = time.perf_counter()
            run = train(
                cfg,
                root / name,
                device="cpu",
                checkpoint_every=10**9,
                progress=False,
                callback=lambda s, x, out=losses: out.append(x),
            )
            seconds = time.perf_counter() - t0
        out[name] = {"curve": read_learning_curve(run)["points"], "losses": losses, "s": seconds}
    return out


def compare(points_a: list[dict], points_b: list[dict], k_se: float = K_SE) -> dict:
    """Per curve point and metric, ``|a - b|`` in units of the larger held-out SE; ``agree`` when
    every one is at most ``k_se``."""
    key = {(p["step"], p["n"]): p for p in points_b}
    rows, worst = [], 0.0
    for p in points_a:
        q = key[(p["step"], p["n"])]
        for m in CURVE_METRICS:
            se = max(p[m + "_se"], q[m + "_se"])
            z = abs(p[m] - q[m]) / se if se > 0 else (0.0 if p[m] == q[m] else float("inf"))
            worst = max(worst, z)
            rows.append(
                {
                    "step": p["step"],
                    "n": p["n"],
                    "metric": m,
                    "a": p[m],
                    "b": q[m],
                    "se": se,
                    "z": z,
                }
            )
    return {"k_se": k_se, "worst_z": worst, "agree": worst <= k_se, "rows": rows}


def loss_gap(a: list[float], b: list[float], steps: int = EARLY_STEPS) -> float:
    """Largest relative difference of two runs' training losses over their first ``steps``."""
    return max(abs(x - y) / abs(y) for x, y in zip(a[:steps], b[:steps], strict=True))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--curve-instances", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = config(args.steps, args.curve_instances, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        runs = train_pair(cfg, Path(tmp))
    cmp = compare(runs["fused"]["curve"], runs["eager"]["curve"])
    doc = {
        "what": "fused vs eager training of one configuration (benchmarks/fused_training.py)",
        "config": {
            "task": "rbf d=2",
            "L": 8,
            "C": 64,
            "mode": "learnable",
            "n": [64, 128],
            "steps": args.steps,
            "lr": 3e-2,
            "lr_units": "elementwise",
            "batch": 128,
            "seed": args.seed,
            "curve_instances": args.curve_instances,
            "threads": args.threads,
        },
        "torch": torch.__version__,
        "seconds": {k: round(v["s"], 1) for k, v in runs.items()},
        "early_loss_rel_gap": loss_gap(runs["fused"]["losses"], runs["eager"]["losses"]),
        "final_loss": {k: v["losses"][-1] for k, v in runs.items()},
        "curves": {k: v["curve"] for k, v in runs.items()},
        "comparison": cmp,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(
        f"fused {doc['seconds']['fused']} s, eager {doc['seconds']['eager']} s; first "
        f"{EARLY_STEPS} losses within {doc['early_loss_rel_gap']:.1e} (relative)"
    )
    print(
        f"{'step':>5s} {'n':>4s} {'metric':>11s} {'fused':>9s} {'eager':>9s} {'se':>8s} "
        f"{'|d|/se':>6s}"
    )
    for r in cmp["rows"]:
        print(
            f"{r['step']:5d} {r['n']:4d} {r['metric']:>11s} {r['a']:9.4f} {r['b']:9.4f} "
            f"{r['se']:8.4f} {r['z']:6.2f}"
        )
    print(
        f"worst |fused - eager| / se = {cmp['worst_z']:.2f}: "
        f"{'agree' if cmp['agree'] else 'DIFFER'} within {K_SE:g} SE"
    )
    return doc


if __name__ == "__main__":
    main()
