"""CPU milliseconds of the fused solver stack's training ops against their pairwise versions.

``stack_forward`` (save=True) and ``stack_backward`` (the default training stack, every kernel
entry computed per order) against ``stack_forward_pairs`` and ``stack_backward_pairs``
(numerics ``"pairwise"`` of :func:`pfntheory.nn.fused.solver_stack`: each context-context rbf
entry computed once), float32, one thread, at the shapes of a training step:

    a  B = 128, n = 89 context points + 1 query, d = 2, m = 2 (unnormalised), 31 solver layers
    b  B = 128, n = 298, d = 16, m = 3 (TF^pr), 31 solver layers

The four ops run in turn, ``--rounds`` times, each timed by ``time.process_time`` (the machine is
shared: CPU time, not wall time); printed: the median and the best per op, and the ratios of the
medians (default / pairs). The two paths' outputs are compared once (largest relative difference).

Usage::

    PYTHONPATH=. python benchmarks/stack_pairs.py
    PYTHONPATH=. python benchmarks/stack_pairs.py --configs a --rounds 30
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pfntheory.nn import fused

CONFIGS = {"a": (128, 89, 2, False, 31), "b": (128, 298, 16, True, 31)}


def _inputs(B: int, n: int, d: int, layers: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(B, n + 1, d, generator=g)
    scales = (1.0 + 2.0 * torch.rand(layers, d, generator=g)) / d**0.5
    R = torch.randn(B, n, 2, generator=g)
    V = 0.05 * torch.randn(layers, 4, generator=g)
    S = -0.01 * torch.rand(layers, 2, generator=g)
    gH = torch.randn(B, n + 1, 2, generator=g)
    return x, scales, R, V, S, gH


def _cpu_ms(fn) -> float:
    t0 = time.process_time()
    fn()
    return 1e3 * (time.process_time() - t0)


def bench(name: str, rounds: int) -> dict[str, float]:
    B, n, d, norm, layers = CONFIGS[name]
    x, scales, R, V, S, gH = _inputs(B, n, d, layers)
    ops = fused._ops()
    args = (x, scales, R, V, S)
    _, Hs, outs = ops.stack_forward(*args, True, norm, True)
    _, Hp, outp = ops.stack_forward_pairs(*args, norm, True)
    runs = {
        "forward": lambda: ops.stack_forward(*args, True, norm, True),
        "forward_pairs": lambda: ops.stack_forward_pairs(*args, norm, True),
        "backward": lambda: ops.stack_backward(*args, Hs, outs, gH, True, norm),
        "backward_pairs": lambda: ops.stack_backward_pairs(*args, Hp, outp, gH, norm),
    }
    a = ops.stack_forward(*args, True, norm, False)[0]
    b = ops.stack_forward_pairs(*args, norm, False)[0]
    ga = ops.stack_backward(*args, Hs, outs, gH, True, norm)
    gb = ops.stack_backward_pairs(*args, Hp, outp, gH, norm)
    diffs = [
        float((u - w).abs().max() / w.abs().max()) for u, w in zip((a, *ga), (b, *gb), strict=True)
    ]
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            times[k].append(_cpu_ms(fn))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"({name}) B {B}, n {n}, d {d}, m {3 if norm else 2}, {layers} layers, float32; "
        f"largest relative difference H/dscales/dR/dV/dS: " + "/".join(f"{e:.1e}" for e in diffs)
    )
    for k, v in times.items():
        print(f"  {k:15s} median {med[k]:8.2f} ms CPU   best {min(v):8.2f}")
    fb, fbp = med["forward"] + med["backward"], med["forward_pairs"] + med["backward_pairs"]
    print(
        f"  ratios (default / pairs): forward {med['forward'] / med['forward_pairs']:.2f}x, "
        f"backward {med['backward'] / med['backward_pairs']:.2f}x, "
        f"forward+backward {fb:.2f} -> {fbp:.2f} ms, {fb / fbp:.2f}x"
    )
    return med


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="a,b", help="comma-separated: a, b")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if not fused.available():
        raise SystemExit(f"the fused extension is unavailable: {fused.unavailable_reason()}")
    for name in args.configs.split(","):
        bench(name.strip(), args.rounds)


if __name__ == "__main__":
    main()
