"""Variants of one solver layer's kernel-matvec, timed side by side (ns per kernel entry).

The layer form of :class:`pfntheory.nn.attention._ScaledKernelMatVec`: ``out = P v`` with
``P_ij = exp(-||s (x_i - x_j)||^2 / 2)`` over ``B (n+1) n`` entries, forward and backward. Variants:

* ``eager f32``: the model's kernel (log-kernel GEMM of augmented features, in-place exp, matvec).
* ``eager bf16``: the same in bfloat16 (CPU has no bfloat16 exp of its own: it converts).
* ``threads 2``: the eager f32 kernel with two threads.
* ``compiled``: ``torch.compile`` of the fused expression ``sum_j exp(-|a_i - a_j|^2/2) v_j``
  (inductor's C++ backend; ``--compile``, it takes about a minute to compile).
* layouts of the linear score's thin products: ``(B, n, d)^T (B, n, 2)`` versus channels-first.

Each variant is timed in the same process on the same inputs; only ratios are meaningful on a
shared machine. Usage: ``python benchmarks/kernel_variants.py [--d 2 --n 96] [--compile]``.
"""

from __future__ import annotations

import argparse
import time

import torch

from pfntheory.nn.attention import scaled_kernel_attention


def _time(fn, reps: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def eager(x, s, v, backward: bool):
    def fn():
        sc = s.detach().requires_grad_(backward)
        vv = v.detach().requires_grad_(backward)
        out, _ = scaled_kernel_attention(x, sc, vv, "rbf", False, save_kernel=True)
        if backward:
            out.sum().backward()

    return fn


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--B", type=int, default=128)
    p.add_argument("--n", type=int, default=96)
    p.add_argument("--d", type=int, default=2)
    p.add_argument("--compile", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    B, n, d = args.B, args.n, args.d
    E = B * (n + 1) * n
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, n + 1, d, generator=g) / d**0.5
    s = torch.full((d,), 1.25)
    v = torch.randn(B, n, 2, generator=g)
    rows = []
    for bw in (False, True):
        tag = "fwd+bwd" if bw else "fwd"
        t32 = _time(eager(x, s, v, bw))
        rows.append((f"eager f32 {tag}", t32))
        rows.append(
            (f"eager bf16 {tag}", _time(eager(x.bfloat16(), s.bfloat16(), v.bfloat16(), bw)))
        )
        torch.set_num_threads(2)
        rows.append((f"eager f32 threads 2 {tag}", _time(eager(x, s, v, bw))))
        torch.set_num_threads(1)
    ex = -torch.rand(E)
    rows.append(("torch.exp alone f32", _time(lambda: torch.exp(ex))))
    if args.compile:

        def fused(a, v):
            D = (a[:, :, None, :] - a[:, None, :n, :]).pow(2).sum(-1)  # (B, n+1, n)
            return (torch.exp(-0.5 * D)[..., None] * v[:, None]).sum(2)  # (B, n+1, 2)

        cf = torch.compile(fused, dynamic=False)
        a = x * s
        t0 = time.perf_counter()
        cf(a, v)
        print(f"torch.compile: {time.perf_counter() - t0:.0f} s to compile")
        rows.append(("compiled fused fwd", _time(lambda: cf(a, v))))
    xk, H = x[:, :n], torch.randn(B, n + 1, 2, generator=g)
    HkT = H[:, :n].transpose(1, 2).contiguous()
    rows.append(
        ("linear X^T H (B,d,n)x(B,n,2)", _time(lambda: torch.bmm(xk.transpose(1, 2), H[:, :n])))
    )
    rows.append(("linear H^T X (B,2,n)x(B,n,d)", _time(lambda: torch.bmm(HkT, xk))))
    print(f"B={B} n={n} d={d}: {E / 1e6:.2f} M kernel entries per layer, one thread unless stated")
    for name, t in rows:
        print(f"{name:32s} {1e3 * t:9.2f} ms {1e9 * t / E:7.2f} ns/entry")


if __name__ == "__main__":
    main()
