"""Runs trained with ``--fast-numerics`` against the same runs without (issue 28).

Config (a) of benchmarks/train_step.py at the cpu scale (RBF d = 2, n in [64, 128], L = 32,
C = 256, learnable, elementwise Adam, weight average 0.99), ``--steps`` steps, for each seed twice:
the arithmetic of every committed run, and fast numerics (the fused GP draw of the training
batches and the pairwise solver stack). Both runs of a seed start from the same weights and draw the
same random numbers; they differ by round-off, which training amplifies. The claim checked: at every
learning-curve point (step, n') the two runs' held-out E[TV] differ by at most ``k`` standard errors
of the held-out estimate (``tv_se`` of the replay run, ``--k-se``, default 2), on the same held-out
instances. One torch thread, as a sweep's worker trains. Also printed: each run's training
seconds (``train_seconds``) and their ratio.

Usage::

    python benchmarks/fast_numerics_parity.py                     # 3 seeds, 2000 steps
    python benchmarks/fast_numerics_parity.py --seeds 0 --steps 200 --root /tmp/parity

The runs resume when re-run (``pfntheory train``); the record is written to
``<root>/parity.json``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from pfntheory.cli import main as cli
from pfntheory.infra import runs
from pfntheory.infra.convergence import read_learning_curve

CONFIG_A = (
    "--task rbf --d 2 --L 32 --C 256 --mode learnable --n-min 64 --n-max 128 --scale cpu "
    "--no-progress"
).split()


def _train(root: Path, seed: int, steps: int, fast: bool) -> Path:
    run_dir = root / f"seed{seed}-{'fast' if fast else 'replay'}"
    argv = ["train", "--run-dir", str(run_dir), *CONFIG_A, "--steps", str(steps)]
    argv += ["--seed", str(seed)] + (["--fast-numerics"] if fast else [])
    if cli(argv) != 0:
        raise SystemExit(f"pfntheory {' '.join(argv)} failed")
    return run_dir


def compare(replay: Path, fast: Path, k: float) -> dict:
    """Per curve point: |E[TV] fast - E[TV] replay| in units of the replay run's tv_se."""
    a, b = read_learning_curve(replay), read_learning_curve(fast)
    if a is None or b is None:
        raise SystemExit(f"no learning curve in {replay if a is None else fast}")
    pa = {(p["step"], p["n"]): p for p in a["points"]}
    pb = {(p["step"], p["n"]): p for p in b["points"]}
    if pa.keys() != pb.keys():
        raise SystemExit(f"{replay} and {fast} were evaluated at different points")
    z = {key: abs(pb[key]["tv"] - pa[key]["tv"]) / pa[key]["tv_se"] for key in pa}
    last = max(s for s, _ in pa)
    return {
        "max_z": max(z.values()),
        "median_z": statistics.median(z.values()),
        "points": len(z),
        "within": all(v <= k for v in z.values()),
        "last_step": last,
        "last_tv": {str(n): (pa[(last, n)]["tv"], pb[(last, n)]["tv"]) for s, n in pa if s == last},
        "last_tv_se": {str(n): pa[(last, n)]["tv_se"] for s, n in pa if s == last},
        "train_s": (a["train_seconds"], b["train_seconds"]),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=Path("benchmarks/results/fast_numerics_parity"))
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--k-se", type=float, default=2.0, help="allowed |dTV| in tv_se (default 2)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # as the sweeps' workers train (one core each)
    seeds = [int(s) for s in args.seeds.split(",")]
    record = {"config": CONFIG_A, "steps": args.steps, "k_se": args.k_se, "seeds": {}}
    for seed in seeds:
        replay = _train(args.root, seed, args.steps, False)
        fast = _train(args.root, seed, args.steps, True)
        record["seeds"][str(seed)] = compare(replay, fast, args.k_se)
    print(f"{'seed':>4} {'points':>6} {'max z':>6} {'median z':>8}  last E[TV] replay / fast (SE)")
    for seed, r in record["seeds"].items():
        last = ", ".join(
            f"n'={n}: {t[0]:.4f} / {t[1]:.4f} ({r['last_tv_se'][n]:.4f})"
            for n, t in r["last_tv"].items()
        )
        print(f"{seed:>4} {r['points']:>6} {r['max_z']:6.2f} {r['median_z']:8.2f}  {last}")
    ratios = [r["train_s"][0] / r["train_s"][1] for r in record["seeds"].values()]
    record["train_ratio"] = ratios
    record["all_within"] = all(r["within"] for r in record["seeds"].values())
    print(
        f"training seconds replay / fast: {', '.join(f'{x:.2f}' for x in ratios)}; every point "
        f"within {args.k_se:g} SE: {record['all_within']}"
    )
    runs.save_json(args.root / "parity.json", record)
    return 0 if record["all_within"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
