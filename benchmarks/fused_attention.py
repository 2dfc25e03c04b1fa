"""The fused kernel-attention operator (pfntheory.nn.fused) against the eager path, one thread.

Measurements, each interleaving fused and eager in one process (the machine is shared, so
only ratios measured side by side mean anything):

1. the tile loop's limit: the fused forward and backward on a cache-resident batch (``--tile-batch``
   instances at n = 96), as exps/s and FLOP/s (counted per kernel entry: forward ``3d + 2m`` FLOPs
   and one exp, backward ``6d + 4m + 1`` FLOPs and one exp; rbf, m = 2 value channels);
2. one solver layer's attention call (forward + backward of ``scaled_kernel_attention``) at the
   training shapes of configuration (a) (B = 128, d = 2, n = 96) and (b) (d = 16, TF^pr, n = 288),
   eager (kernel kept for the backward pass, as the model does within its budget) and fused
   alternating: best times and the median of the per-round ratios;
3. training steps of configuration (a) of benchmarks/train_step.py (RBF d=2, n ~ Unif[64, 128],
   L=32, C=256, learnable, batch 128): two copies of one model see the same batches, one step fused
   then one step eager, alternating; data (``sample_batch``) timed apart;
4. the paper evaluation's model pass (n' = 1024, d = 16, TF^pr, no autograd), fused and eager;
5. (``--parts drift``, slow) fused float32, eager float32 and eager float64 copies of (a) trained
   on the same batches: their losses' distance from the float64 run and their held-out NLL.

Usage::

    python benchmarks/fused_attention.py                 # all three, float32
    python benchmarks/fused_attention.py --steps 20 --dtype float64
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pfntheory.nn import fused
from pfntheory.nn.attention import scaled_kernel_attention

BATCH = 128


def _min_time(fn, reps: int, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def tile_rates(dtype=torch.float32, batch: int = 4, n: int = 96, d: int = 2, m: int = 2) -> dict:
    """Fused forward and backward on ``batch`` cache-resident instances: s per kernel entry,
    exps/s and FLOP/s (counted as in the module docstring)."""
    if not fused.available():
        raise RuntimeError(f"fused operator unavailable: {fused.unavailable_reason()}")
    ops = torch.ops.pfntheory_fused
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, n + 1, d, generator=g, dtype=dtype)
    s = torch.full((d,), 1.25, dtype=dtype)
    v = torch.randn(batch, n, m, generator=g, dtype=dtype)
    gr = torch.randn(batch, n + 1, m, generator=g, dtype=dtype)
    entries = batch * (n + 1) * n
    tf = _min_time(lambda: ops.forward(x, s, v, True), 20, 7) / entries
    out = ops.forward(x, s, v, True)
    tb = _min_time(lambda: ops.backward(x, s, v, gr, out, True), 20, 7) / entries
    return {
        "fwd_s": tf,
        "bwd_s": tb,
        "fwd_exp": 1.0 / tf,
        "bwd_exp": 1.0 / tb,
        "fwd_flop": (3 * d + 2 * m) / tf,
        "bwd_flop": (6 * d + 4 * m + 1) / tb,
    }


def torch_exp_rate(dtype=torch.float32, elements: int = 1 << 14) -> float:
    """torch.exp on a cache-resident buffer (exps/s), for comparison."""
    x = -torch.rand(elements).to(dtype)
    y = torch.empty_like(x)
    return elements / _min_time(lambda: torch.exp(x, out=y), 50, 5)


def layer_call(dtype, d: int, n: int, normalised: bool, rounds: int) -> dict:
    """ms of one forward + backward of scaled_kernel_attention, fused and eager, alternating."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, n + 1, d, generator=g, dtype=dtype)
    s = torch.full((d,), 1.25, dtype=dtype, requires_grad=True)
    v = torch.randn(BATCH, n, 2, generator=g, dtype=dtype, requires_grad=True)
    out_g = torch.randn(BATCH, n + 1, 2, generator=g, dtype=dtype)
    keep = BATCH * (n + 1) * n * x.element_size() <= 1 << 24

    def call():
        out, _ = scaled_kernel_attention(x, s, v, "rbf", normalised, save_kernel=keep)
        torch.autograd.grad(out, (s, v), out_g)

    times: dict = {True: [], False: []}
    for _ in range(rounds):
        for flag in (True, False):
            with fused.enabled(flag):
                call()  # warm
                t0 = time.perf_counter()
                call()
                call()
                times[flag].append((time.perf_counter() - t0) / 2)
    ratios = sorted(e / f for f, e in zip(times[True], times[False], strict=True))
    return {
        True: 1e3 * min(times[True]),
        False: 1e3 * min(times[False]),
        "ratio": statistics.median(ratios),
        "lo": ratios[0],
        "hi": ratios[-1],
    }


def train_steps(dtype, steps: int, warmup: int, L: int, C: int, seed: int = 0) -> dict:
    """Configuration (a) training steps, fused and eager alternating on two copies of one model."""
    from pfntheory.infra.config import ModelSpec, TaskSpec
    from pfntheory.nn.model import PFNTransformer
    from pfntheory.nn.priors import sample_batch, sample_context_size
    from pfntheory.nn.train import accumulate_gradients

    interval = (-4.0, 4.0)
    edges = torch.linspace(*interval, C + 1, dtype=torch.float64)
    cfg = ModelSpec(score="rbf", L=L, C=C, mode="learnable", normalised=False, scale_init=1.0 / 0.8)
    task = TaskSpec(kind="rbf", d=2)
    torch.manual_seed(seed)
    models = {True: PFNTransformer(cfg, edges, task).to(dtype)}
    models[False] = PFNTransformer(cfg, edges, task).to(dtype)
    models[False].load_state_dict(models[True].state_dict())
    opts = {k: torch.optim.Adam(m.parameters(), lr=2e-4) for k, m in models.items()}
    gen = torch.Generator().manual_seed(seed)
    t: dict = {True: [], False: [], "data": []}
    losses: dict = {True: [], False: []}
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        n = sample_context_size(64, 128, gen)
        b = sample_batch(task, BATCH, n, gen, dtype=dtype, interval=interval)
        td = time.perf_counter() - t0
        for flag in (True, False) if i % 2 == 0 else (False, True):
            model, opt = models[flag], opts[flag]
            with fused.enabled(flag):
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                loss = accumulate_gradients(model, [b], edges)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                dt = time.perf_counter() - t0
            losses[flag].append(float(loss))
            if i >= warmup:
                t[flag].append(dt)
        if i >= warmup:
            t["data"].append(td)
    dloss = [abs(a - b) for a, b in zip(losses[True], losses[False], strict=True)]
    return {
        "fused_ms": 1e3 * statistics.mean(t[True]),
        "eager_ms": 1e3 * statistics.mean(t[False]),
        "fused_med": 1e3 * statistics.median(t[True]),
        "eager_med": 1e3 * statistics.median(t[False]),
        "data_ms": 1e3 * statistics.mean(t["data"]),
        "ratios": [e / f for f, e in zip(t[True], t[False], strict=True)],
        "dloss_first": dloss[0],
        "dloss_max": max(dloss),
    }


def eval_forward(instances: int, rounds: int, L: int, C: int) -> dict:
    """The paper's evaluation model pass (n' = 1024, d = 16, TF^pr, per-layer scales as in a trained
    model, no autograd) on ``instances`` instances, fused and eager alternating: seconds scaled to
    4096 instances (the work is linear in them)."""
    from pfntheory.infra.config import ModelSpec, TaskSpec
    from pfntheory.nn.model import PFNTransformer

    edges = torch.linspace(-4.0, 4.0, C + 1, dtype=torch.float64)
    cfg = ModelSpec(score="rbf", L=L, C=C, mode="learnable", normalised=True, scale_init=1.25)
    model = PFNTransformer(cfg, edges, TaskSpec(kind="rbf", d=16))
    with torch.no_grad():
        model.scale.add_(1e-3 * torch.arange(L, dtype=model.scale.dtype)[:, None])
    g = torch.Generator().manual_seed(0)
    X = torch.randn(instances, 1024, 16, generator=g) / 4.0
    Y = torch.randn(instances, 1024, generator=g)
    xq = torch.randn(instances, 16, generator=g) / 4.0
    times: dict = {True: [], False: []}
    out = {}
    for _ in range(rounds):
        for flag in (True, False):
            with torch.no_grad(), fused.enabled(flag):
                t0 = time.perf_counter()
                out[flag] = model(X, Y, xq).logits
                times[flag].append(time.perf_counter() - t0)
    f = 4096 / instances
    return {
        True: f * min(times[True]),
        False: f * min(times[False]),
        "dlogit": float((out[True] - out[False]).abs().max()),
    }


def drift(steps: int, L: int, C: int, heldout: int = 1024, seed: int = 0) -> dict:
    """Three copies of one configuration-(a) model trained on the same batches: fused float32,
    eager float32 and eager float64 (the reference). Per step, |loss - float64 loss|; after the last
    step, the held-out truncated NLL (mean and SE over ``heldout`` fresh instances at n = 96) of
    each, so the fused run's deviation can be set beside the eager float32 run's and the SE."""
    from dataclasses import replace

    from pfntheory.infra.config import ModelSpec, TaskSpec
    from pfntheory.nn.model import PFNTransformer
    from pfntheory.nn.priors import sample_batch, sample_context_size
    from pfntheory.nn.train import accumulate_gradients, truncated_nll

    interval = (-4.0, 4.0)
    edges = torch.linspace(*interval, C + 1, dtype=torch.float64)
    cfg = ModelSpec(score="rbf", L=L, C=C, mode="learnable", normalised=False, scale_init=1.0 / 0.8)
    task = TaskSpec(kind="rbf", d=2)
    torch.manual_seed(seed)
    ref = PFNTransformer(cfg, edges, task).double()
    runs = {"fused32": (True, torch.float32), "eager32": (False, torch.float32)}
    models = {"eager64": ref}
    for name, (_, dt) in runs.items():
        models[name] = PFNTransformer(cfg, edges, task).to(dt)
        models[name].load_state_dict(ref.state_dict())
    runs["eager64"] = (False, torch.float64)
    opts = {k: torch.optim.Adam(m.parameters(), lr=2e-4) for k, m in models.items()}
    gen = torch.Generator().manual_seed(seed)

    def cast(b, dt):
        return replace(b, X=b.X.to(dt), Y=b.Y.to(dt), xq=b.xq.to(dt), y=b.y.to(dt))

    dev: dict = {"fused32": [], "eager32": []}
    for _ in range(steps):
        n = sample_context_size(64, 128, gen)
        b = sample_batch(task, BATCH, n, gen, dtype=torch.float64, interval=interval)
        loss = {}
        for name, (flag, dt) in runs.items():
            with fused.enabled(flag):
                opts[name].zero_grad(set_to_none=True)
                loss[name] = float(accumulate_gradients(models[name], [cast(b, dt)], edges))
                torch.nn.utils.clip_grad_norm_(models[name].parameters(), 1.0)
                opts[name].step()
        for k in dev:
            dev[k].append(abs(loss[k] - loss["eager64"]))
    hb = sample_batch(task, heldout, 96, gen, dtype=torch.float64, interval=interval)
    nll = {}
    for name, (flag, dt) in runs.items():
        with torch.no_grad(), fused.enabled(flag):
            bb = cast(hb, dt)
            v = truncated_nll(models[name](bb.X, bb.Y, bb.xq).logits, bb.y, edges).double()
        nll[name] = (float(v.mean()), float(v.std() / heldout**0.5))
    return {"dev": {k: (statistics.median(v), max(v)) for k, v in dev.items()}, "nll": nll}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=10, help="timed training steps per path")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds per attention call")
    p.add_argument("--tile-batch", type=int, default=4)
    p.add_argument("--L", type=int, default=32)
    p.add_argument("--C", type=int, default=256)
    p.add_argument(
        "--parts",
        default="tile,call,step,eval",
        help="subset of tile,call,step,eval,drift (drift: slow)",
    )
    p.add_argument("--drift-steps", type=int, default=200)
    p.add_argument("--eval-instances", type=int, default=8)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    parts = {s.strip() for s in args.parts.split(",")}
    if not fused.available():
        raise SystemExit(f"fused operator unavailable: {fused.unavailable_reason()}")
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.dtype}, "
        f"cpu capability {torch.backends.cpu.get_cpu_capability()}"
    )
    if "tile" in parts:
        ex = torch_exp_rate(dtype)
        for d, m in ((2, 2), (16, 3)):
            r = tile_rates(dtype, args.tile_batch, d=d, m=m)
            print(
                f"tile loop (rbf d={d} m={m}, {args.tile_batch} x 97 x 96 cache-resident): forward "
                f"{1e9 * r['fwd_s']:.3f} ns/entry = {r['fwd_exp'] / 1e9:.2f} Gexp/s, "
                f"{r['fwd_flop'] / 1e9:.1f} GFLOP/s; backward {1e9 * r['bwd_s']:.3f} ns/entry = "
                f"{r['bwd_exp'] / 1e9:.2f} Gexp/s, {r['bwd_flop'] / 1e9:.1f} GFLOP/s "
                f"(torch.exp alone: {ex / 1e9:.2f} Gexp/s)",
                flush=True,
            )
    if "call" in parts:
        for name, d, n, pr in (("a", 2, 96, False), ("b", 16, 288, True)):
            r = layer_call(dtype, d, n, pr, args.rounds)
            print(
                f"attention call ({name}: d={d}, n={n}{', TF^pr' if pr else ''}, batch {BATCH}, "
                f"fwd+bwd): fused {r[True]:.2f} ms, eager {r[False]:.2f} ms (best of "
                f"{args.rounds}); eager/fused per round: median {r['ratio']:.2f}x (range "
                f"{r['lo']:.2f}-{r['hi']:.2f})",
                flush=True,
            )
    if "step" in parts:
        r = train_steps(dtype, args.steps, args.warmup, args.L, args.C)
        q = sorted(r["ratios"])
        print(
            f"training step (a) RBF d=2 n[64,128] L={args.L} C={args.C} learnable, batch {BATCH}, "
            f"{args.steps} steps each: fused {r['fused_ms']:.1f} ms (median "
            f"{r['fused_med']:.1f}), eager {r['eager_ms']:.1f} ms (median {r['eager_med']:.1f}), "
            f"data {r['data_ms']:.1f} ms; eager/fused per step: median "
            f"{statistics.median(q):.2f}x (range {q[0]:.2f}-{q[-1]:.2f}); "
            f"|loss difference| {r['dloss_first']:.1e} at the first step, at most "
            f"{r['dloss_max']:.1e} (round-off, grown by training)",
            flush=True,
        )
    if "eval" in parts:
        r = eval_forward(args.eval_instances, 2, args.L, args.C)
        print(
            f"paper evaluation, model pass (n'=1024, d=16, TF^pr, L={args.L}, per-layer scales, "
            f"no autograd), from {args.eval_instances} instances scaled to 4096: fused "
            f"{r[True]:.0f} s, eager {r[False]:.0f} s, eager/fused {r[False] / r[True]:.2f}x "
            f"(max |logit difference| {r['dlogit']:.1e})",
            flush=True,
        )
    if "drift" in parts:
        r = drift(args.drift_steps, args.L, args.C)
        print(
            f"drift over {args.drift_steps} training steps of (a), same batches: |loss - "
            f"float64 eager loss| median/max fused float32 {r['dev']['fused32'][0]:.1e}/"
            f"{r['dev']['fused32'][1]:.1e}, eager float32 {r['dev']['eager32'][0]:.1e}/"
            f"{r['dev']['eager32'][1]:.1e}; held-out NLL (1024 instances, n=96): "
            + ", ".join(f"{k} {m:.4f} +- {se:.4f}" for k, (m, se) in r["nll"].items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
