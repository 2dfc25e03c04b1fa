"""Milliseconds per training step of the PFN transformer, the paper's evaluation, and the
machine's limit.

One training step = draw a batch (``pfntheory.nn.priors.sample_batch``, timed separately), forward,
truncated-NLL loss, backward, gradient clipping and an Adam step, batch 128,
``n ~ Unif[n_min, n_max]`` drawn per step as in training (sec:sims). The fast model
(:class:`~pfntheory.nn.model.PFNTransformer`) and the dense reference
(:class:`~pfntheory.nn.model.DenseTransformer`, the literal eqn:tabPFN attn with per-layer
checkpointing) start from the same weights and see the same batches, so the ratio of their step
times is measured on one sequence of n in one run. Before timing, the two forward passes are
compared on the first batch (max |logits difference|, float32 and float64).

Configurations (supp-tab:pretraining hyperparameters sizes) and targets (issue 14; issue 28's in
brackets, and the ones checked; one thread):

    a  RBF d=2,  n in [64, 128], L=32, C=256, learnable             <= 80 [30] ms per step, data in
    b  RBF d=16, n in [64, 512], L=32, C=256, learnable, TF^pr      <= 1000 ms per step
    c  BLR d=5,  n in [128, 512], L=32, C=256, learnable            <= 100 ms per step incl. data
    e  the paper's evaluation: 4096 instances at n'=1024, RBF d=16, L=32, C=256, TF^pr, oracle
       included                                                     <= 120 s (issue 28)
       (timed on ``--eval-instances`` instances and scaled to 4096: the work is linear in them)

The machine's limit, measured in the same process: ``torch.exp`` on a cache-sized float32 buffer
(exp/s) and ``torch.bmm`` on the shapes of a layer's kernel (GFLOP/s). For each configuration the
step's exps and FLOPs are counted from the model's shapes (module :func:`work`), and the step is set
beside the time those would take at the micro-benchmark rates ("limit ms"): ``limit / measured`` is
the fraction of the machine's limit reached.

Usage::

    python benchmarks/train_step.py                      # a, b, c, e; one thread
    python benchmarks/train_step.py --configs a --steps 10 --dense-steps 2 --threads 2
    python benchmarks/train_step.py --configs a --context-groups 4 --steps 8   # mixed n per step

``--context-groups G`` (G > 1) adds, per configuration, steps with one ``n`` and steps that mix
``G`` context sizes (``RunSpec.context_groups``: dense groups, no padding), alternating in one
process: milliseconds per step, nanoseconds per kernel entry ``B_g (n_g + 1) n_g`` (the efficiency
lost to smaller matrix products) and the entries a padded batch (every instance at the step's
largest ``n``) would have computed instead.

Timings on a shared machine are noisy: compare the ratios printed in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.nn import fused
from pfntheory.nn import model as model_mod
from pfntheory.nn.evaluate import predict
from pfntheory.nn.fast_oracle import sample_batch_fast
from pfntheory.nn.model import DenseTransformer, PFNTransformer
from pfntheory.nn.priors import sample_batch, sample_context_size
from pfntheory.nn.train import accumulate_gradients, group_sizes

BATCH = 128
INTERVAL = (-4.0, 4.0)  # fixed truncation interval: timing does not depend on its calibration


@dataclass(frozen=True)
class Bench:
    name: str
    kind: str
    d: int
    n_min: int
    n_max: int
    normalised: bool
    target_ms: float
    target_incl_data: bool

    def task(self) -> TaskSpec:
        return TaskSpec(kind=self.kind, d=self.d)

    def model_config(self, L: int, C: int) -> ModelSpec:
        score = "linear" if self.kind == "blr" else "rbf"
        scale = 1.0 if self.kind == "blr" else 1.0 / 0.8
        return ModelSpec(
            score=score,
            L=L,
            C=C,
            mode="learnable",
            normalised=self.normalised,
            scale_init=scale,
        )


BENCHES = {
    "a": Bench("a: RBF d=2 n[64,128]", "rbf", 2, 64, 128, False, 30.0, True),
    "b": Bench("b: RBF d=16 n[64,512] pr", "rbf", 16, 64, 512, True, 1000.0, False),
    "c": Bench("c: BLR d=5 n[128,512]", "blr", 5, 128, 512, False, 100.0, True),
}


# ----------------------------------------------------------------------------------------------
# the machine's limit
# ----------------------------------------------------------------------------------------------


def _time(fn, reps: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def exp_rate(dtype=torch.float32, elements: int = 1 << 18) -> float:
    """Exps per second of ``torch.exp`` on a buffer the size of one kernel chunk (in cache)."""
    x = -torch.rand(elements).to(dtype)
    y = torch.empty_like(x)
    return elements / _time(lambda: torch.exp(x, out=y), 50)


def bmm_rate(b: int, m: int, k: int, n: int) -> float:
    """GFLOP/s of ``torch.bmm`` of (b, m, k) x (b, k, n) float32."""
    A, B = torch.randn(b, m, k), torch.randn(b, k, n)
    out = torch.empty(b, m, n)
    return 2.0 * b * m * k * n / _time(lambda: torch.bmm(A, B, out=out), 20) / 1e9


def _timed(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, its wall seconds and its CPU seconds (``time.process_time``: with
    one thread, the time the process ran; on a loaded machine the wall time adds the time others
    ran)."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - w0, time.process_time() - c0


def work(bench: Bench, n: float, L: int) -> dict:
    """Exps and FLOPs of one training step of the fast model at context size ``n`` (per batch).

    rbf, per solver layer (``E = B (n+1) n`` kernel entries, ``p = d + 2`` augmented features,
    ``m`` value channels, 3 for TF^pr): forward ``2 p E`` (log-kernel GEMM) + ``E`` exps +
    ``2 m E`` (kernel-matvec); backward ``2 m E`` (dv) + ``2 m d E`` (the scale gradient's product),
    plus ``2 p E`` and ``E`` exps again for the layers whose kernel is not kept
    (``SAVE_KERNEL_BUDGET_BYTES``). linear: ``a_j^T (A^T V)``, ``4 B (n+1) d m`` per layer forward,
    twice that backward.
    """
    d, B = bench.d, BATCH
    m = 3 if bench.normalised else 2
    if bench.kind == "blr":
        return {"exp": 0.0, "flop": (L - 1) * 3 * 4 * B * (n + 1) * d * m}
    p = d + 2
    E = B * (n + 1) * n
    kept = min(L - 1, int(model_mod.SAVE_KERNEL_BUDGET_BYTES // (4 * E)))
    recomputed = (L - 1) - kept
    flop = (L - 1) * E * (2 * p + 2 * m + 2 * m + 2 * m * d) + recomputed * E * 2 * p
    return {"exp": (L - 1 + recomputed) * E, "flop": flop}


# ----------------------------------------------------------------------------------------------
# training steps
# ----------------------------------------------------------------------------------------------


def _step(model, opt, batches, edges):
    """One optimiser step on ``batches`` (one group per context size, as training does)."""
    opt.zero_grad(set_to_none=True)
    loss = accumulate_gradients(model, batches, edges)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss)


def _draw_again(acc: dict, b, draw, task, n: int, g, dtype, **kw):
    """``draw`` (``sample_batch_fast``, or ``sample_batch(..., fast=True)``) on the random numbers
    ``b`` was drawn from: the batch, its wall and CPU time and how far its labels are from
    ``b``'s (context labels relative, query labels absolute)."""
    other, wall, cpu = _timed(draw, task, BATCH, n, g, dtype=dtype, interval=INTERVAL, **kw)
    acc["wall"].append(wall)
    acc["cpu"].append(cpu)
    acc["dY"] = max(acc["dY"], float((other.Y - b.Y).abs().max() / b.Y.abs().max()))
    acc["dy"] = max(acc["dy"], float((other.y - b.y).abs().max()))
    return other


def _print_numerics(r: dict, bench: Bench) -> None:
    """The lines of the other data paths and of fast numerics, beside the replay step."""
    print(
        f"{'':26s} data: sample_batch_fast (float32 factor) on the same numbers "
        f"{r['cpu_data_fast_ms']:.1f} ms CPU against {r['cpu_data_ms']:.1f}; its context "
        f"labels differ by {r['fast_data_dY_rel']:.1e} (relative), query labels by "
        f"{r['fast_data_dy_abs']:.1e}",
        flush=True,
    )
    num_step = r["num_data_ms"] + r["num_model_ms"]
    measured = num_step if bench.target_incl_data else r["num_model_ms"]
    print(
        f"{'':26s} fast numerics (RunSpec.fast_numerics; same numbers, alternating): data "
        f"{r['num_data_ms']:.1f} + model {r['num_model_ms']:.1f} = {num_step:.1f} ms wall "
        f"({r['cpu_num_data_ms']:.1f} + {r['cpu_num_model_ms']:.1f} CPU) against "
        f"{r['step_ms']:.1f} ({r['step_ms'] / num_step:.2f}x); target {bench.target_ms:.0f}: "
        f"{'ok' if measured <= bench.target_ms else 'MISS'}; context labels within "
        f"{r['num_dY_rel']:.1e} (relative)",
        flush=True,
    )


def _copy_with_adam(source, model):
    """``model`` loaded with ``source``'s weights, and an Adam optimiser for it."""
    model.load_state_dict(source.state_dict())
    return torch.optim.Adam(model.parameters(), lr=2e-4)


def _alternate(i: int, main, others) -> list:
    """``main()`` and each of ``others()``: the others first on odd steps, after it on even ones
    (so neither order is favoured); results in the order ``main, *others``."""
    if i % 2 == 1:
        rest = [f() for f in others]
        return [main(), *rest]
    first = main()
    return [first, *(f() for f in others)]


def run(
    bench: Bench,
    steps: int,
    dense_steps: int,
    warmup: int,
    L: int,
    C: int,
    seed: int,
    dtype: torch.dtype,
) -> dict:
    edges = torch.linspace(*INTERVAL, C + 1, dtype=torch.float64)
    cfg = bench.model_config(L, C)
    torch.manual_seed(seed)
    task = bench.task()
    # the fast model; the dense reference; the fast model with the fused operator off (eager);
    # the fast model with fast numerics (RunSpec.fast_numerics: the fused GP draw and the pairwise
    # solver stack): the same weights, each with its own optimiser
    fast = PFNTransformer(cfg, edges, task).to(dtype)
    dense = DenseTransformer(cfg, edges, task).to(dtype)
    eager = PFNTransformer(cfg, edges, task).to(dtype)
    numf = PFNTransformer(cfg, edges, task, numerics="pairwise").to(dtype)  # fast numerics
    opt_f, opt_d, opt_e, opt_n = (_copy_with_adam(fast, m) for m in (fast, dense, eager, numf))
    g = torch.Generator().manual_seed(seed)

    # sample_batch_fast and sample_batch(fast=True) on the same numbers
    fast_data, num = ({"wall": [], "cpu": [], "dY": 0.0, "dy": 0.0} for _ in range(2))

    def draw():
        n = sample_context_size(bench.n_min, bench.n_max, g)
        g2 = torch.Generator().set_state(g.get_state())
        g3 = torch.Generator().set_state(g.get_state())
        b, wall, cpu = _timed(sample_batch, task, BATCH, n, g, dtype=dtype, interval=INTERVAL)
        if bench.kind != "blr":
            _draw_again(fast_data, b, sample_batch_fast, task, n, g2, dtype)
        bn = _draw_again(num, b, sample_batch, task, n, g3, dtype, fast=True)
        return b, n, (wall, cpu), bn

    # parity of the two forward passes on the first batch (float32 and float64)
    b0, _, _, _ = draw()
    with torch.no_grad():
        diff32 = float(
            (fast(b0.X, b0.Y, b0.xq).logits - dense(b0.X, b0.Y, b0.xq).logits).abs().max()
        )
        f64, d64 = fast.double(), dense.double()
        o1, o2 = f64(b0.X, b0.Y, b0.xq), d64(b0.X, b0.Y, b0.xq)
        diff64 = float((o1.logits - o2.logits).abs().max())
        fast.to(dtype), dense.to(dtype)
    t_data, t_fast, t_dense, t_eager, ns = [], [], [], [], []
    c_data, c_fast, c_eager = [], [], []  # CPU seconds (process_time)
    t_num, c_num = [], []  # fast numerics' model steps
    use_fused = fused.available() and bench.kind != "blr"
    for i in range(warmup + steps):
        b, n, (td, cd), bn = draw()

        def eager_step(b=b):
            with fused.enabled(False):
                return _timed(_step, eager, opt_e, [b], edges)

        def numerics_step(bn=bn):
            return _timed(_step, numf, opt_n, [bn], edges)

        others = [numerics_step] + ([eager_step] if use_fused else [])
        (_, tf, cf), (_, tn, cn), *rest = _alternate(
            i, lambda b=b: _timed(_step, fast, opt_f, [b], edges), others
        )
        te, ce = (rest[0][1], rest[0][2]) if rest else (None, None)
        tdn = None
        if i < warmup + dense_steps:
            _, tdn, _ = _timed(_step, dense, opt_d, [b], edges)
        if i >= warmup:
            t_data.append(td)
            t_fast.append(tf)
            c_data.append(cd)
            c_fast.append(cf)
            t_num.append(tn)
            c_num.append(cn)
            ns.append(n)
            if te is not None:
                t_eager.append(te)
                c_eager.append(ce)
            if tdn is not None:
                t_dense.append(tdn)
    k = len(t_dense)
    fast_ms = 1e3 * statistics.mean(t_fast)
    data_ms = 1e3 * statistics.mean(t_data)
    fast_same = 1e3 * statistics.mean(t_fast[:k]) if k else float("nan")
    dense_ms = 1e3 * statistics.mean(t_dense) if k else float("nan")
    # the work of the steps actually timed, at the micro-benchmark rates of this process
    n_mean = float(np.mean(ns))
    w = [work(bench, n, L) for n in ns]
    exps = statistics.mean(x["exp"] for x in w)
    flops = statistics.mean(x["flop"] for x in w)
    ratios = sorted(e / f for e, f in zip(t_eager, t_fast, strict=False))
    return {
        "bench": bench,
        "eager_ms": 1e3 * statistics.mean(t_eager) if t_eager else float("nan"),
        "eager_ratio": statistics.median(ratios) if ratios else float("nan"),
        "entries": statistics.mean(BATCH * (n + 1) * n for n in ns) * (L - 1),
        "n_mean": n_mean,
        "data_ms": data_ms,
        "fast_ms": fast_ms,
        "step_ms": fast_ms + data_ms,
        "data_share": data_ms / (data_ms + fast_ms),
        "dense_ms": dense_ms,
        "speedup": dense_ms / fast_same if k else float("nan"),
        "diff32": diff32,
        "diff64": diff64,
        "exps": exps,
        "flops": flops,
        "cpu_data_ms": 1e3 * statistics.mean(c_data),
        "cpu_fast_ms": 1e3 * statistics.mean(c_fast),
        "cpu_eager_ms": 1e3 * statistics.mean(c_eager) if c_eager else float("nan"),
        "cpu_data_fast_ms": 1e3 * statistics.mean(fast_data["cpu"][-steps:])
        if fast_data["cpu"]
        else float("nan"),
        "fast_data_dY_rel": fast_data["dY"],
        "fast_data_dy_abs": fast_data["dy"],
        "num_data_ms": 1e3 * statistics.mean(num["wall"][-steps:]),
        "num_model_ms": 1e3 * statistics.mean(t_num),
        "cpu_num_data_ms": 1e3 * statistics.mean(num["cpu"][-steps:]),
        "cpu_num_model_ms": 1e3 * statistics.mean(c_num),
        "num_dY_rel": num["dY"],
    }


def run_mixed(
    bench: Bench, groups: int, steps: int, warmup: int, L: int, C: int, seed: int, dtype
) -> dict:
    """One-``n`` steps and ``groups``-group steps, alternating on one model (see the docstring)."""
    edges = torch.linspace(*INTERVAL, C + 1, dtype=torch.float64)
    torch.manual_seed(seed)
    task = bench.task()
    model = PFNTransformer(bench.model_config(L, C), edges, task).to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(seed)
    acc = {G: {"s": 0.0, "entries": 0.0, "padded": 0.0, "k": 0} for G in (1, groups)}
    for i in range(warmup + steps):
        for G in (1, groups):
            batches = []
            for size in group_sizes(BATCH, G):
                n = sample_context_size(bench.n_min, bench.n_max, g)
                batches.append(sample_batch(task, size, n, g, dtype=dtype, interval=INTERVAL))
            t0 = time.perf_counter()
            _step(model, opt, batches, edges)
            dt = time.perf_counter() - t0
            if i >= warmup:
                ns = [(b.X.shape[0], b.X.shape[1]) for b in batches]
                top = max(n for _, n in ns)
                a = acc[G]
                a["s"] += dt
                a["entries"] += sum(s * (n + 1) * n for s, n in ns)
                a["padded"] += BATCH * (top + 1) * top
                a["k"] += 1
    return acc


# ----------------------------------------------------------------------------------------------
# the paper's evaluation
# ----------------------------------------------------------------------------------------------


def run_eval(
    instances: int,
    chunk: int,
    L: int,
    C: int,
    n_eval: int = 1024,
    d: int = 16,
    total: int = 4096,
    seed: int = 0,
) -> dict:
    """The paper's evaluation on ``instances`` instances, scaled to ``total``: the oracle and labels
    both ways, alternating on the same random numbers (``sample_batch`` in float64, the committed
    evaluations; ``sample_batch_fast``, float32 with the float64 correction, ``EvalSpec(...,
    oracle="float32")``), with the largest |mu| and |tau| difference between them; and the model's
    forward (float32, the dtype of a trained model, as :func:`pfntheory.nn.evaluate.evaluate`
    runs it) with the fused operator and without it.

    Two models: a learnable TF^pr whose solver layers have distinct scales (a trained model: one
    kernel per layer) and the same model with equal scales (theory mode / hand-set weights: the
    kernel is computed once per instance chunk). ``pl`` is :func:`predict` (the evaluation's
    stack, each context-context kernel entry once: numerics ``symmetric``), ``pl_train`` the same
    model's training forward pass without autograd."""

    edges = torch.linspace(*INTERVAL, C + 1, dtype=torch.float64)
    cfg = ModelSpec(score="rbf", L=L, C=C, mode="learnable", normalised=True, scale_init=1.25)
    task = TaskSpec(kind="rbf", d=d)
    per_layer = PFNTransformer(cfg, edges, task)
    shared = PFNTransformer(cfg, edges, task)
    with torch.no_grad():
        per_layer.scale.add_(1e-3 * torch.arange(L, dtype=per_layer.scale.dtype)[:, None])
    t = {"o64": 0.0, "o32": 0.0, "pl": 0.0, "pl_train": 0.0, "pl_eager": 0.0, "sh": 0.0}
    c = dict.fromkeys(t, 0.0)  # CPU seconds
    dmu = dtau = 0.0
    for start in range(0, instances, chunk):
        m = min(chunk, instances - start)
        batches = {}
        for key, draw in (("o64", sample_batch), ("o32", sample_batch_fast))[
            :: 1 - 2 * (start % 2)
        ]:
            g = torch.Generator().manual_seed(seed + start)
            batches[key], wall, cpu = _timed(
                draw, task, m, n_eval, g, dtype=torch.float64, interval=INTERVAL
            )
            t[key], c[key] = t[key] + wall, c[key] + cpu
        dmu = max(dmu, float((batches["o64"].mu - batches["o32"].mu).abs().max()))
        dtau = max(dtau, float((batches["o64"].tau - batches["o32"].tau).abs().max()))
        bt = batches["o32"]
        for key, model, flag in (
            ("pl", per_layer, True),
            ("pl_eager", per_layer, False),
            ("sh", shared, True),
        ):
            with fused.enabled(flag):
                _, wall, cpu = _timed(predict, model, bt, "cpu")
            t[key], c[key] = t[key] + wall, c[key] + cpu
        with torch.no_grad():  # the training forward pass (numerics 'replay')
            _, wall, cpu = _timed(per_layer, bt.X.float(), bt.Y.float(), bt.xq.float())
        t["pl_train"], c["pl_train"] = t["pl_train"] + wall, c["pl_train"] + cpu
    f = total / instances
    E = total * (n_eval + 1) * n_eval
    return {
        **{k + "_s": f * v for k, v in t.items()},
        **{k + "_cpu_s": f * v for k, v in c.items()},
        "dmu": dmu,
        "dtau": dtau,
        "exps_per_layer": (L - 1) * E,
        "exps_shared": E,
        "chol_flop": total * n_eval**3 / 3.0,
    }


def _print_eval(e: dict, args, exp32: float) -> None:
    """The paper evaluation's figures (``run_eval``)."""
    chol = bmm_rate(1, 1024, 1024, 1024)  # float32 GEMM as a bound
    total = e["o32_s"] + e["pl_s"]
    print(
        f"\ne: paper evaluation (4096 instances, n'=1024, d=16, L={args.L}, C={args.C}, TF^pr, "
        f"float32 model), from {args.eval_instances} instances scaled to 4096:\n"
        f"   oracle + labels: float64 {e['o64_s']:.0f} s, float32 + correction "
        f"{e['o32_s']:.0f} s ({e['o64_s'] / e['o32_s']:.2f}x; max |dmu| {e['dmu']:.1e}, "
        f"|dtau| {e['dtau']:.1e}, the labels Y differing by float32 round-off); "
        f"{e['chol_flop'] / 1e12:.2f} TFLOP of Cholesky, float32 GEMM peak here {chol:.0f} "
        f"GFLOP/s\n"
        f"   model, per-layer kernels (trained): fused {e['pl_s']:.0f} s, eager "
        f"{e['pl_eager_s']:.0f} s ({e['pl_eager_s'] / e['pl_s']:.2f}x; "
        f"{e['exps_per_layer'] / 1e9:.0f} G exps: {e['exps_per_layer'] / exp32:.0f} s at "
        f"torch.exp's rate alone)\n"
        f"   model, one kernel for all layers (theory / hand-set) {e['sh_s']:.0f} s "
        f"({e['exps_shared'] / 1e9:.1f} G exps)\n"
        f"   total (float32 oracle, trained model, fused) {total:.0f} s, target 120 s: "
        f"{'ok' if total <= 120 else 'MISS'}\n"
        f"   CPU time (process_time): oracle float64 {e['o64_cpu_s']:.0f} s, float32 "
        f"{e['o32_cpu_s']:.0f} s; model fused {e['pl_cpu_s']:.0f} s (training forward "
        f"{e['pl_train_cpu_s']:.0f} s), eager {e['pl_eager_cpu_s']:.0f} s, shared kernel "
        f"{e['sh_cpu_s']:.0f} s; total {e['o32_cpu_s'] + e['pl_cpu_s']:.0f} s, target 120 s: "
        f"{'ok' if e['o32_cpu_s'] + e['pl_cpu_s'] <= 120 else 'MISS'}",
        flush=True,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="a,b,c,e", help="comma-separated subset of a,b,c,e")
    p.add_argument("--steps", type=int, default=3, help="timed steps of the fast model")
    p.add_argument(
        "--dense-steps",
        type=int,
        default=1,
        help="timed steps of the dense model; the speed-up compares the first "
        "dense-steps fast steps, which saw the same batches",
    )
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--L", type=int, default=32)
    p.add_argument("--C", type=int, default=256)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (targets: 1)")
    p.add_argument("--dtype", choices=("float32", "float64", "bfloat16"), default="float32")
    p.add_argument(
        "--eval-instances",
        type=int,
        default=32,
        help="instances of the paper's evaluation actually run (scaled to 4096)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--context-groups",
        type=int,
        default=1,
        help="G > 1: also time steps that mix G context sizes (no padding) against one-n steps",
    )
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    record: dict = {
        "argv": vars(args),
        "torch": torch.__version__,
        "fused": fused.available(),
        "load_average_start": os.getloadavg(),
    }
    dtype = getattr(torch, args.dtype)
    dense_steps = min(args.dense_steps, args.steps)
    keys = [k.strip() for k in args.configs.split(",")]
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.dtype}, batch "
        f"{BATCH}, L={args.L}, C={args.C}, steps {args.steps} (dense {dense_steps}) after "
        f"{args.warmup} warm-up"
    )
    exp32, exp16 = exp_rate(torch.float32), exp_rate(torch.bfloat16)
    exp64 = exp_rate(torch.float64)
    print(
        f"machine: torch.exp {1e9 / exp32:.2f} ns/element float32, {1e9 / exp16:.2f} bfloat16, "
        f"{1e9 / exp64:.2f} float64 (cache-sized buffer); square GEMM 512^3 "
        f"{bmm_rate(1, 512, 512, 512):.1f} GFLOP/s float32"
    )
    hdr = (
        f"{'config':26s} {'n':>4s} {'data':>6s} {'model':>7s} {'step':>7s} {'target':>7s} "
        f"{'data%':>6s} {'dense':>7s} {'x':>5s} {'Gexp/s':>7s} {'GF/s':>6s} {'GEMM':>6s} "
        f"{'limit':>6s} {'frac':>5s} {'dlogit f32/f64':>16s} {'eager':>7s} {'e/f':>5s} "
        f"{'flim':>6s} {'ffrac':>5s}"
    )
    print(
        hdr + "\n" + "-" * len(hdr) + "\n(ms; model = the fast model with the fused operator "
        f"({'available' if fused.available() else 'UNAVAILABLE: eager'}); x = speed-up over "
        "dense; GEMM = bmm GFLOP/s of the layer's log-kernel shape; limit = exps/exp-rate + "
        "FLOPs/GEMM-rate, the eager path's limit; frac = limit/model; eager = the fast model "
        "with the fused operator off, same batches, alternating; e/f = median per-step ratio; "
        "flim = the step's kernel entries at the fused tile loop's cache-resident rate "
        "(forward + backward, benchmarks/fused_attention.py); ffrac = flim/model)"
    )
    for key in keys:
        if key == "e":
            continue
        bench = BENCHES[key]
        r = run(bench, args.steps, dense_steps, args.warmup, args.L, args.C, args.seed, dtype)
        n = int(round(r["n_mean"]))
        if bench.kind == "blr":
            gemm = bmm_rate(BATCH, n + 1, bench.d, 2)  # a_j^T (A^T V)
        else:
            chunk = max(1, (1 << 18) // ((n + 1) * n))
            gemm = bmm_rate(chunk, n + 1, bench.d + 2, n)  # log-kernel
        limit_ms = 1e3 * (r["exps"] / exp32 + r["flops"] / (gemm * 1e9))
        flim = float("nan")
        if bench.kind != "blr" and fused.available():
            from fused_attention import tile_rates  # benchmarks/ (the script's folder)

            m = 3 if bench.normalised else 2
            tr = tile_rates(dtype if dtype != torch.bfloat16 else torch.float32, d=bench.d, m=m)
            flim = 1e3 * r["entries"] * (tr["fwd_s"] + tr["bwd_s"])
        measured = r["step_ms"] if bench.target_incl_data else r["fast_ms"]
        ok = "ok" if measured <= bench.target_ms else "MISS"
        print(
            f"{bench.name:26s} {n:4d} {r['data_ms']:6.0f} {r['fast_ms']:7.0f} {r['step_ms']:7.0f} "
            f"{bench.target_ms:5.0f}{ok[0]:>2s} {100 * r['data_share']:5.1f}% {r['dense_ms']:7.0f} "
            f"{r['speedup']:5.1f} {r['exps'] / r['fast_ms'] / 1e6:7.3f} "
            f"{r['flops'] / r['fast_ms'] / 1e6:6.2f} {gemm:6.1f} {limit_ms:6.0f} "
            f"{limit_ms / r['fast_ms']:5.2f} {r['diff32']:8.1e}/{r['diff64']:7.1e} "
            f"{r['eager_ms']:7.0f} {r['eager_ratio']:5.2f} {flim:6.0f} {flim / r['fast_ms']:5.2f}",
            flush=True,
        )
        cpu_step = r["cpu_data_ms"] + r["cpu_fast_ms"]
        record[key] = {k: v for k, v in r.items() if k != "bench"} | {"flim_ms": flim}
        _print_numerics(r, bench)
        print(
            f"{'':26s} CPU time (process_time): data {r['cpu_data_ms']:.0f} + model "
            f"{r['cpu_fast_ms']:.0f} = {cpu_step:.0f} ms, eager model {r['cpu_eager_ms']:.0f} ms "
            f"({r['cpu_eager_ms'] / r['cpu_fast_ms']:.2f}x); flim / model "
            f"{flim / r['cpu_fast_ms']:.2f}",
            flush=True,
        )
    if args.context_groups > 1:
        G = args.context_groups
        print(
            f"\nmixed context sizes: one n per step vs {G} groups per step (alternating, same "
            f"model)\n{'config':26s} {'G':>3s} {'ms/step':>8s} {'M entries':>10s} {'ns/entry':>9s} "
            f"{'padded would be':>16s}"
        )
        for key in keys:
            if key == "e":
                continue
            bench = BENCHES[key]
            acc = run_mixed(bench, G, args.steps, args.warmup, args.L, args.C, args.seed, dtype)
            for g_, a in acc.items():
                print(
                    f"{bench.name:26s} {g_:3d} {1e3 * a['s'] / a['k']:8.0f} "
                    f"{a['entries'] / a['k'] / 1e6:10.2f} {1e9 * a['s'] / a['entries']:9.2f} "
                    f"{a['padded'] / a['entries']:15.2f}x",
                    flush=True,
                )
    if "e" in keys:
        record["e"] = run_eval(args.eval_instances, min(args.eval_instances, 16), args.L, args.C)
        _print_eval(record["e"], args, exp32)
    record["load_average_end"] = os.getloadavg()
    print(
        f"load average at the start {record['load_average_start']}, at the end "
        f"{record['load_average_end']}"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(record, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
