"""The fused kernel-attention operator (pfntheory.nn.fused) against the eager path.

The tests that need the compiled extension build it once per session (cached on disk afterwards)
and skip only where it cannot be built at all: no C++ compiler or no ninja. Where both exist, a
failed build fails them. The fallback tests need no compiler.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest
import torch

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.nn import attention, fused
from pfntheory.nn.attention import scaled_kernel_attention
from pfntheory.nn.model import PFNTransformer
from pfntheory.nn.solver import solver_layers


def _case(B, n, d, m, dtype, score, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n + 1, d, generator=g, dtype=torch.float64)
    if score == "softmax":
        x = 0.5 * x
    s = 0.5 + torch.rand(d, generator=g, dtype=torch.float64)
    v = torch.randn(B, n, m, generator=g, dtype=torch.float64)
    wo = torch.randn(B, n + 1, m, generator=g, dtype=torch.float64)
    ws = torch.randn(B, n + 1, generator=g, dtype=torch.float64)
    return [t.to(dtype) for t in (x, s, v, wo, ws)]


def _run(use_fused, x, s, v, wo, ws, score, normalised):
    """Outputs and the gradients wrt (scale, v) of a random linear functional of them."""
    s = s.clone().requires_grad_()
    v = v.clone().requires_grad_()
    with fused.enabled(use_fused):
        out, norm = scaled_kernel_attention(x, s, v, score, normalised)
    loss = (out * wo).sum() + ((norm * ws).sum() if normalised else 0.0)
    ds, dv = torch.autograd.grad(loss, (s, v))
    return [t.detach() for t in (out, norm if normalised else out)] + [ds, dv]


def _rel(a, ref):
    return float((a.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-300))


SHAPES = [  # (B, n, d, m): n = 1, tails of every length, the compiled d's and run-time ones
    (2, 1, 2, 2),
    (3, 5, 1, 2),
    (4, 37, 2, 2),
    (2, 96, 2, 2),
    (2, 100, 3, 2),
    (2, 21, 4, 1),
    (2, 17, 7, 5),
    (2, 50, 16, 2),
]


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}n{}d{}m{}".format(*s))
def test_parity_with_eager(built, shape, normalised, score):
    """Forward (out, s) and gradients (scale, v): float64 fused = eager to 1e-10; float32 fused
    within 5e-5 (relative to the largest entry) of the float64 eager reference (the float32 eager
    path reaches 3.1e-5 here), and no further from it than 4x the float32 eager path's own error
    (plus 1e-6)."""
    B, n, d, m = shape
    ref = _run(False, *_case(B, n, d, m, torch.float64, score), score, normalised)
    f64 = _run(True, *_case(B, n, d, m, torch.float64, score), score, normalised)
    f32 = _run(True, *_case(B, n, d, m, torch.float32, score), score, normalised)
    e32 = _run(False, *_case(B, n, d, m, torch.float32, score), score, normalised)
    for name, r, a, b, c in zip(("out", "s", "dscale", "dv"), ref, f64, f32, e32, strict=True):
        assert a.dtype == torch.float64 and b.dtype == torch.float32, name
        assert _rel(a, r) < 1e-10, name
        assert _rel(b, r) < 5e-5, (name, _rel(b, r), _rel(c, r))
        assert _rel(b, r) <= 4 * _rel(c, r) + 1e-6, (name, _rel(b, r), _rel(c, r))


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
def test_gradcheck_float64(built, score, normalised):
    x, s, v, _, _ = _case(2, 5, 2, 2, torch.float64, score, seed=3)
    s.requires_grad_()
    v.requires_grad_()

    def f(s_, v_):
        out, norm = scaled_kernel_attention(x, s_, v_, score, normalised)
        return (out, norm) if normalised else out

    with fused.enabled(True):
        assert fused.supports(x, s, v, score)
        assert torch.autograd.gradcheck(f, (s, v), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_no_grad_and_gradient_selection(built):
    """Without autograd the plain forward runs; x never gets a gradient; only v may need one."""
    x, s, v, wo, _ = _case(3, 11, 2, 2, torch.float32, "rbf")
    with torch.no_grad(), fused.enabled(True):
        a, _ = scaled_kernel_attention(x, s, v, "rbf")
    with torch.no_grad(), fused.enabled(False):
        b, _ = scaled_kernel_attention(x, s, v, "rbf")
    assert _rel(a, b.double()) < 1e-5
    xg = x.clone().requires_grad_()
    vg = v.clone().requires_grad_()
    with fused.enabled(True):
        out, _ = scaled_kernel_attention(xg, s, vg, "rbf")
    (dv,) = torch.autograd.grad((out * wo).sum(), (vg,))
    assert not out.requires_grad or xg.grad is None
    assert dv.shape == v.shape


def test_extreme_values(built):
    """Far keys: the kernel underflows as torch.exp does (float32 subnormals, then 0); a NaN input
    propagates to its query's row."""
    x = torch.zeros(1, 4, 1)
    x[0, 1, 0] = 13.5  # exp(-91) is subnormal in float32
    x[0, 2, 0] = 20.0  # exp(-200) is 0
    s = torch.ones(1)
    v = torch.ones(1, 3, 1)
    with torch.no_grad(), fused.enabled(True):
        a, _ = scaled_kernel_attention(x, s, v, "rbf")
    with torch.no_grad(), fused.enabled(False):
        b, _ = scaled_kernel_attention(x, s, v, "rbf")
    assert torch.equal(a == 0, b == 0)
    assert _rel(a, b.double()) < 1e-5
    x[0, 3, 0] = float("nan")
    with torch.no_grad(), fused.enabled(True):
        a, _ = scaled_kernel_attention(x, s, v, "rbf")
    assert torch.isnan(a[0, 3]).all() and torch.isfinite(a[0, :3]).all()


@pytest.mark.parametrize("mode", ["learnable", "theory"])
@pytest.mark.parametrize("score", ["rbf", "softmax"])
def test_model_step_matches_eager(built, mode, score, monkeypatch):
    """A model (plain and TF^pr): logits and every parameter gradient, fused = eager in float64;
    the fused path runs once per forward (one operator for all the solver layers)."""
    calls = []
    stack = fused.solver_stack
    monkeypatch.setattr(fused, "solver_stack", lambda *a: calls.append(1) or stack(*a))
    for normalised in (False, True):
        cfg = ModelSpec(score=score, L=4, C=16, mode=mode, normalised=normalised)
        edges = torch.linspace(-3, 3, 17, dtype=torch.float64)
        torch.manual_seed(0)
        model = PFNTransformer(cfg, edges, TaskSpec(kind="rbf", d=2)).double()
        g = torch.Generator().manual_seed(1)
        X = torch.randn(4, 9, 2, generator=g, dtype=torch.float64)
        Y = torch.randn(4, 9, generator=g, dtype=torch.float64)
        xq = torch.randn(4, 2, generator=g, dtype=torch.float64)
        res = []
        for flag in (True, False):
            model.zero_grad()
            with fused.enabled(flag):
                logits = model(X, Y, xq).logits
            logits.logsumexp(-1).sum().backward()
            res.append([logits.detach()] + [p.grad.clone() for p in model.parameters()])
        for a, b in zip(*res, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
    assert len(calls) == 2


# ------------------------------------------------------------------------------------------------
# the fused solver stack: every solver layer in one operator
# ------------------------------------------------------------------------------------------------


def _stack_case(B, n, d, layers, dtype, score, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n + 1, d, generator=g, dtype=torch.float64)
    if score == "softmax":
        x = 0.5 * x
    scales = 0.5 + torch.rand(layers, d, generator=g, dtype=torch.float64)
    R = torch.randn(B, n, 2, generator=g, dtype=torch.float64)
    V = 0.05 * torch.randn(layers, 4, generator=g, dtype=torch.float64)
    S = -0.01 * torch.rand(layers, 2, generator=g, dtype=torch.float64)
    w = torch.randn(B, n + 1, 2, generator=g, dtype=torch.float64)
    return [t.to(dtype) for t in (x, scales, R, V, S, w)]


def _stack_run(use_fused, x, scales, R, V, S, w, score, normalised):
    """H and the gradients wrt (scales, R, V, S) of a random linear functional of it."""
    ps = [t.clone().requires_grad_() for t in (scales, R, V, S)]
    with fused.enabled(use_fused):
        H = solver_layers(x, ps[1], ps[0], ps[2], ps[3], score, normalised, 1 << 30)
    return [H.detach(), *torch.autograd.grad((H * w).sum(), ps)]


STACK_SHAPES = [(3, 20, 2, 4), (2, 1, 2, 2), (2, 37, 16, 3), (2, 13, 5, 3), (2, 9, 7, 2)]


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
@pytest.mark.parametrize("shape", STACK_SHAPES, ids=lambda s: "B{}n{}d{}L{}".format(*s))
def test_stack_parity_with_eager(built, shape, normalised, score):
    """The fused stack against the eager per-layer loop (solver.solver_layers without the fused
    operator): H and the gradients wrt scales, R, V, S. float64 fused = eager to 1e-10; float32
    fused within 2e-4 of the float64 eager reference and no further from it than 4x the float32
    eager loop's own error (plus 1e-5). 2e-4: the float32 eager loop reaches 5.4e-5 here (the d=16
    scale gradient, a sum of cancelling terms), and the fused loop keeps its sums in float32 in
    another order. 1e-5: about 100 float32 unit round-offs (6e-8 each), the order of a sum of
    n L ~ 100 terms; with 1e-6 the rule failed on one machine's instruction set (dV of B2 n37 d16
    L3, normalised rbf: 3.05e-6 against 4 x 4.8e-7 + 1e-6) while passing on another."""
    ref = _stack_run(False, *_stack_case(*shape, torch.float64, score), score, normalised)
    f64 = _stack_run(True, *_stack_case(*shape, torch.float64, score), score, normalised)
    f32 = _stack_run(True, *_stack_case(*shape, torch.float32, score), score, normalised)
    e32 = _stack_run(False, *_stack_case(*shape, torch.float32, score), score, normalised)
    for name, r, a, b, c in zip(
        ("H", "dscales", "dR", "dV", "dS"), ref, f64, f32, e32, strict=True
    ):
        assert a.dtype == torch.float64 and b.dtype == torch.float32, name
        assert _rel(a, r) < 1e-10, name
        assert _rel(b, r) < 2e-4, (name, _rel(b, r), _rel(c, r))
        assert _rel(b, r) <= 4 * _rel(c, r) + 1e-5, (name, _rel(b, r), _rel(c, r))


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
def test_stack_gradcheck_float64(built, score, normalised):
    x, scales, R, V, S, _ = _stack_case(2, 5, 2, 3, torch.float64, score, seed=3)
    args = [t.clone().requires_grad_() for t in (scales, R, V, S)]
    with fused.enabled(True):
        assert fused.stack_supports(x, *args, score)
        assert torch.autograd.gradcheck(
            lambda *a: fused.solver_stack(x, *a, score == "rbf", normalised),
            args,
            eps=1e-6,
            atol=1e-8,
            rtol=1e-6,
        )


def test_stack_without_autograd(built):
    """No autograd: the same H from the operator that saves nothing."""
    x, scales, R, V, S, _ = _stack_case(3, 11, 2, 4, torch.float32, "rbf")
    with fused.enabled(True):
        with torch.no_grad():
            a = fused.solver_stack(x, scales, R, V, S, True, True)
        b = fused.solver_stack(x, scales.requires_grad_(), R, V, S, True, True)
    assert b.requires_grad and torch.equal(a, b.detach())


SYM_SHAPES = [
    (3, 20, 2, 4),
    (2, 1, 2, 2),
    (2, 16, 2, 3),
    (2, 37, 16, 3),
    (2, 13, 5, 3),
    (1, 70, 16, 2),
    (2, 9, 7, 2),
]


SYM = "symmetric"  # the evaluation's numerics (pfntheory.nn.fused.NUMERICS)


@pytest.mark.parametrize("normalised", [False, True])
@pytest.mark.parametrize("shape", SYM_SHAPES, ids=lambda s: "B{}n{}d{}L{}".format(*s))
def test_evaluation_stack_parity(built, shape, normalised):
    """Numerics 'symmetric': the no-autograd stack computing each context-context kernel entry once
    (symmetric P) gives the eager loop's H: float64 to 1e-12 relative (round-off of another order
    of summation; measured 3e-15), float32 within 4x the float32 eager loop's own error from the
    float64 reference plus 1e-6 (as test_stack_parity_with_eager). Shapes with tails (n not a
    multiple of 16), n < 16, n = 16, the compiled d = 2, 5, 16 and a run-time d = 7 (the plain
    forward). How it can fail: dropping the keys' symmetric half (tacc) leaves the context rows
    without the earlier keys' terms, an error of order 1 (checked by hand)."""
    ref = _stack_case(*shape, torch.float64, "rbf")
    with fused.enabled(False), torch.no_grad():
        h64 = solver_layers(ref[0], ref[2], ref[1], ref[3], ref[4], "rbf", normalised, 1 << 30)
    c32 = _stack_case(*shape, torch.float32, "rbf")
    with fused.enabled(False), torch.no_grad():
        e32 = solver_layers(c32[0], c32[2], c32[1], c32[3], c32[4], "rbf", normalised, 1 << 30)
    with fused.enabled(True), torch.no_grad():
        s64 = solver_layers(ref[0], ref[2], ref[1], ref[3], ref[4], "rbf", normalised, 1 << 30, SYM)
        s32 = solver_layers(c32[0], c32[2], c32[1], c32[3], c32[4], "rbf", normalised, 1 << 30, SYM)
    scale = float(h64.abs().max())
    assert float((s64 - h64).abs().max()) <= 1e-12 * scale
    err_e = float((e32.double() - h64).abs().max())
    assert float((s32.double() - h64).abs().max()) <= 4 * err_e + 1e-6 * scale


def test_evaluation_mode_is_scoped(built):
    """Numerics 'symmetric' is an argument of the call: the calls before and after it (training,
    and its no-autograd forward) are the training forward bitwise; with autograd it takes the
    training operator."""
    x, scales, R, V, S, _ = _stack_case(2, 40, 16, 3, torch.float32, "rbf")
    with fused.enabled(True):
        with torch.no_grad():
            plain = fused.solver_stack(x, scales, R, V, S, True, True)
            sym = fused.solver_stack(x, scales, R, V, S, True, True, SYM)
            again = fused.solver_stack(x, scales, R, V, S, True, True)
        grad = fused.solver_stack(x, scales.clone().requires_grad_(), R, V, S, True, True, SYM)
    assert torch.equal(plain, again) and torch.equal(plain, grad.detach())
    assert not torch.equal(plain, sym)  # another order of summation
    torch.testing.assert_close(sym, plain, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# fallback (no compiler needed)
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def fresh_state(monkeypatch, tmp_path):
    """fused's load state reset, its cache pointed at an empty folder."""
    monkeypatch.setattr(
        fused, "_state", {"tried": False, "ok": False, "reason": None, "enabled": True}
    )
    monkeypatch.setenv("PFNTHEORY_FUSED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PFNTHEORY_FUSED", raising=False)
    return monkeypatch


def _spy_eager(monkeypatch):
    calls = []
    apply = attention._ScaledKernelMatVec.apply

    def counted(*args):
        calls.append(1)
        return apply(*args)

    monkeypatch.setattr(attention._ScaledKernelMatVec, "apply", counted)
    return calls


def test_fallback_without_compiler(fresh_state, caplog):
    """No compiler: the eager path runs, with the same numbers, and one debug line says why."""
    fresh_state.setattr(fused, "_compiler", lambda: None)
    x, s, v, wo, ws = _case(3, 13, 2, 2, torch.float64, "rbf")
    calls = _spy_eager(fresh_state)
    with caplog.at_level(logging.DEBUG, logger="pfntheory.nn.fused"):
        got = _run(True, x, s, v, wo, ws, "rbf", True)
        again = _run(True, x, s, v, wo, ws, "rbf", False)
    assert not fused.available()
    assert "no C++ compiler" in fused.unavailable_reason()
    assert len(calls) == 2
    assert len([r for r in caplog.records if "using the eager path" in r.getMessage()]) == 1
    with fused.enabled(False):
        ref = _run(False, x, s, v, wo, ws, "rbf", True)
    for a, b in zip(got, ref, strict=True):
        assert torch.equal(a, b)
    assert again[0].shape == (3, 14, 2)


def test_disabled_by_environment(fresh_state):
    fresh_state.setenv("PFNTHEORY_FUSED", "0")
    x, s, v, wo, ws = _case(2, 7, 2, 2, torch.float32, "rbf")
    calls = _spy_eager(fresh_state)
    _run(True, x, s, v, wo, ws, "rbf", False)
    assert not fused.available()
    assert not fused._state["tried"]  # nothing was compiled or loaded
    assert len(calls) == 1


def test_drawing_data_never_compiles(fresh_state):
    """sample_batch uses the extension's in-place Cholesky factor only when a build is loaded or
    cached (fused.available(build=False)): with an empty cache it draws through torch without
    compiling (a draw must not wait a minute for a compiler), and the same batch. How it can fail:
    a priors path calling fused.available() would reach the build, which raises here."""
    from pfntheory.nn.priors import TaskSpec, sample_batch

    def no_build():
        raise AssertionError("sample_batch started a build")

    fresh_state.setattr(fused, "_load", no_build)
    task = TaskSpec(kind="rbf", d=2)
    got = sample_batch(task, 4, 9, torch.Generator().manual_seed(1))
    assert not fused._state["tried"]  # nothing was compiled or loaded
    with fused.enabled(False):
        ref = sample_batch(task, 4, 9, torch.Generator().manual_seed(1))
    assert torch.equal(got.Y, ref.Y) and torch.equal(got.y, ref.y)


def test_unsupported_arguments_fall_back(built):
    """Other dtypes, mixed dtypes and the linear score take the eager paths."""
    x, s, v, _, _ = _case(2, 7, 2, 2, torch.float32, "rbf")
    with fused.enabled(True):
        assert fused.supports(x, s, v, "rbf")
        assert not fused.supports(x.bfloat16(), s.bfloat16(), v.bfloat16(), "rbf")
        assert not fused.supports(x, s.double(), v, "rbf")
        assert not fused.supports(x, s, v, "linear")
        assert not fused.supports(x, s, v[:, :0], "rbf")


# ------------------------------------------------------------------------------------------------
# a trained run: fused against eager (issue 28)
# ------------------------------------------------------------------------------------------------

#: Relative tolerance on the step-by-step training losses of fused and eager runs (see below).
LOSS_TOL = 3e-6
RECORD = Path(__file__).parents[1] / "benchmarks" / "results" / "fused_training.json"


def _tiny_config(steps=30):
    from pfntheory.infra.tree import RunSpec

    return RunSpec(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=3, C=16, mode="learnable", scale_init=1.25),
        n_min=12,
        n_max=20,
        steps=steps,
        lr=3e-2,
        lr_units="elementwise",
        batch_size=32,
        interval=(-3.0, 3.0),
        curve_n_eval=(16,),
        curve_instances=256,
        curve_points=3,
    )


def _train_twice(tmp_path):
    """The tiny run trained fused and eager: (losses, curve points) of each."""
    from pfntheory.nn.train import read_learning_curve, train

    out = []
    for flag in (True, False):
        losses = []
        with fused.enabled(flag):
            run = train(
                _tiny_config(),
                tmp_path / str(flag),
                device="cpu",
                checkpoint_every=10**6,
                progress=False,
                callback=lambda s, x, out=losses: out.append(x),
            )
        out.append((losses, read_learning_curve(run)["points"]))
    return out


def _worst_z(pa, pb):
    """Largest ``|a - b| / se`` over the points and finite metrics of two learning curves (se: the
    larger of the two held-out SEs)."""
    from pfntheory.nn.train import CURVE_METRICS

    assert [(p["step"], p["n"]) for p in pa] == [(p["step"], p["n"]) for p in pb]
    worst = 0.0
    for p, q in zip(pa, pb, strict=True):
        for m in CURVE_METRICS:
            if not (math.isfinite(p[m]) and math.isfinite(q[m])):
                assert p[m] == q[m]  # an infinite NLL (a bin of zero mass) in both or neither
                continue
            worst = max(worst, abs(p[m] - q[m]) / max(p[m + "_se"], q[m + "_se"]))
    return worst


def test_trained_run_matches_eager(built, tmp_path):
    """A run trained with the fused operator matches the eager one: its learning curve within one
    held-out SE at every point and metric (issue 28's criterion), and its 30 training losses within
    LOSS_TOL (relative) step by step. LOSS_TOL = 3e-6, 25 float32 ulps of a loss near 1: the two
    paths differ by float32 round-off (1e-6 relative per forward at most, the parity tests), which
    averages over the batch and which 30 steps amplify (measured here 1e-7; 3e-6 after 20 steps of
    the real configuration, benchmarks/fused_training.py). A value gradient 10% off moves the
    losses by several times LOSS_TOL (test_trained_run_check_detects_a_wrong_gradient); the SE
    criterion alone would not see it at this size."""
    (lf, cf), (le, ce) = _train_twice(tmp_path)
    assert len(lf) == len(le) == 30
    assert max(abs(a - b) / abs(b) for a, b in zip(lf, le, strict=True)) < LOSS_TOL
    assert _worst_z(cf, ce) <= 1.0


def test_trained_run_check_detects_a_wrong_gradient(built, tmp_path, monkeypatch):
    """Fault injection for the test above: the fused backward's gradient wrt the layers' values
    (the per-layer operator) or wrt the context rows R (the stack) off by 10% makes the losses
    differ by more than LOSS_TOL. (Not a parameter's own gradient: Adam is invariant to a constant
    factor on it.)"""
    real = fused._ops()

    class Wrong:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def backward(*args):
            ds, dv = real.backward(*args)
            return ds, 1.1 * dv

        @staticmethod
        def stack_backward(*args):
            dscales, dR, dV, dS = real.stack_backward(*args)
            return dscales, 1.1 * dR, dV, dS

    monkeypatch.setattr(fused, "_ops", lambda: Wrong())
    (lf, _), (le, _) = _train_twice(tmp_path)
    assert max(abs(a - b) / abs(b) for a, b in zip(lf, le, strict=True)) > LOSS_TOL


def test_recorded_training_comparison():
    """The committed record of benchmarks/fused_training.py (1000 steps of the cpu scale's RBF
    d=2 L=8 cell, 1024 held-out instances per n'): every curve point of the fused run within one
    held-out SE of the eager run's, recomputed here from the two curves, at the same steps."""
    doc = json.loads(RECORD.read_text())
    cf, ce = doc["curves"]["fused"], doc["curves"]["eager"]
    assert cf[-1]["step"] == ce[-1]["step"] == doc["config"]["steps"] >= 1000
    assert len({p["step"] for p in cf}) >= 8
    assert _worst_z(cf, ce) <= 1.0
