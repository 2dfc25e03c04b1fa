"""The pairwise training stack (pfntheory.nn.fused.pairwise: stack_forward_pairs and
stack_backward_pairs, each context-context rbf kernel entry computed once) against the eager
per-layer loop and the default fused stack.

Needs the compiled extension (built once per session, cached); skipped only without a C++ compiler
or ninja, as tests/test_fused_attention.py.
"""

from __future__ import annotations

import pytest
import torch

from pfntheory.nn import fused
from pfntheory.nn.solver import solver_layers


def _case(B, n, d, layers, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n + 1, d, generator=g, dtype=torch.float64)
    scales = (0.5 + torch.rand(layers, d, generator=g, dtype=torch.float64)) / d**0.25
    R = torch.randn(B, n, 2, generator=g, dtype=torch.float64)
    V = 0.05 * torch.randn(layers, 4, generator=g, dtype=torch.float64)
    S = -0.01 * torch.rand(layers, 2, generator=g, dtype=torch.float64)
    w = torch.randn(B, n + 1, 2, generator=g, dtype=torch.float64)
    return [t.to(dtype) for t in (x, scales, R, V, S, w)]


def _run(mode, x, scales, R, V, S, w, normalised):
    """H and the gradients wrt (scales, R, V, S) of a random linear functional of it; mode:
    'eager' (no fused operator), 'fused' (the default fused stack), 'pairs' (numerics
    'pairwise')."""
    ps = [t.clone().requires_grad_() for t in (scales, R, V, S)]
    numerics = "pairwise" if mode == "pairs" else "replay"
    with fused.enabled(mode != "eager"):
        H = solver_layers(x, ps[1], ps[0], ps[2], ps[3], "rbf", normalised, 1 << 30, numerics)
    return [H.detach(), *torch.autograd.grad((H * w).sum(), ps)]


def _rel(a, ref):
    return float((a.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-300))


NAMES = ("H", "dscales", "dR", "dV", "dS")
# n: 1, 2 and the edges of the float32 vector width (15, 16, 17) and float64's (8 lanes: 15, 16,
# 17 are 2 vectors -1, 0, +1), a training size (89); d: the compiled 1, 2, 5, 16; several B.
SHAPES = [
    (1, 1, 2, 2),
    (2, 2, 1, 3),
    (3, 15, 2, 3),
    (2, 16, 5, 3),
    (3, 17, 2, 2),
    (2, 17, 16, 2),
    (4, 89, 2, 2),
    (2, 89, 16, 2),
    (2, 15, 1, 2),
    (1, 16, 16, 3),
]


@pytest.mark.parametrize("normalised", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}n{}d{}L{}".format(*s))
def test_pairs_parity(built, shape, normalised):
    """H and the gradients wrt scales, R, V, S of the pairwise stack against the eager loop.

    float64: within 1e-10 relative of the eager loop (the same sums in another order; the
    float64 round-off of a few hundred terms per sum is ~1e-14, measured at most 9.5e-15 over
    this grid). float32: within 2e-4 of the float64 eager reference and no further than 4x the
    default fused stack's own float32 error plus 1e-6 (test_stack_parity_with_eager's bounds; the
    pairwise exponential is 1.8e-7 relative against 1e-7, and its sums run in another order;
    measured: pairwise at most 2.9e-6, default 3.5e-6, median ratio 0.92; the 1e-6 covers cases
    where the default's error is by chance far below float32 resolution, e.g. 3e-8 against 4.8e-7
    for dS at n = 15, d = 1). How it fails: a missing half of the pairs or the
    diagonal P_ii = 1 changes H by terms of order 1; test_pairs_catches_a_wrong_scale shows
    that an error of 1e-3 in one scale already exceeds the bounds by orders of magnitude."""
    ref = _run("eager", *_case(*shape, torch.float64), normalised)
    p64 = _run("pairs", *_case(*shape, torch.float64), normalised)
    p32 = _run("pairs", *_case(*shape, torch.float32), normalised)
    f32 = _run("fused", *_case(*shape, torch.float32), normalised)
    for name, r, a, b, c in zip(NAMES, ref, p64, p32, f32, strict=True):
        assert a.dtype == torch.float64 and b.dtype == torch.float32, name
        assert _rel(a, r) < 1e-10, (name, _rel(a, r))
        assert _rel(b, r) < 2e-4, (name, _rel(b, r))
        assert _rel(b, r) <= 4 * _rel(c, r) + 1e-6, (name, _rel(b, r), _rel(c, r))


@pytest.mark.parametrize("normalised", [False, True])
def test_pairs_match_default_fused_float64(built, normalised):
    """float64: the pairwise stack and the default fused stack agree to 1e-12 relative (both
    float64 sums of the same terms in two orders; measured ~1e-15) on a training-like shape."""
    case = _case(3, 40, 2, 4, torch.float64, seed=5)
    fused64 = _run("fused", *case, normalised)
    pairs64 = _run("pairs", *case, normalised)
    for name, a, b in zip(NAMES, pairs64, fused64, strict=True):
        assert _rel(a, b) < 1e-12, (name, _rel(a, b))


def test_pairs_catches_a_wrong_scale(built):
    """Fault injection: the pairwise stack run with one scale off by 1e-3 (relative) differs from
    the eager reference far beyond the parity bound (1e-10 in float64), in H and dscales: the
    comparison of test_pairs_parity sees such an error."""
    x, scales, R, V, S, w = _case(2, 17, 2, 3, torch.float64, seed=7)
    ref = _run("eager", x, scales, R, V, S, w, False)
    bad = scales.clone()
    bad[1, 0] *= 1 + 1e-3
    got = _run("pairs", x, bad, R, V, S, w, False)
    assert _rel(got[0], ref[0]) > 1e-6
    assert _rel(got[1], ref[1]) > 1e-6


def test_pairs_gradcheck_float64(built):
    """The pairwise operator's gradients against finite differences (float64)."""
    x, scales, R, V, S, _ = _case(2, 18, 2, 3, torch.float64, seed=3)
    args = [t.clone().requires_grad_() for t in (scales, R, V, S)]
    with fused.enabled(True):
        for normalised in (False, True):
            assert torch.autograd.gradcheck(
                lambda *a, nz=normalised: fused.solver_stack(x, *a, True, nz, "pairwise"),
                args,
                eps=1e-6,
                atol=1e-8,
                rtol=1e-6,
            )


def test_pairs_without_autograd(built):
    """No autograd with numerics 'pairwise': the forward that saves nothing gives the same H as
    the autograd operator's forward (bitwise: the same loop)."""
    x, scales, R, V, S, _ = _case(3, 33, 2, 4, torch.float32)
    with fused.enabled(True):
        with torch.no_grad():
            a = fused.solver_stack(x, scales, R, V, S, True, True, "pairwise")
        b = fused.solver_stack(x, scales.clone().requires_grad_(), R, V, S, True, True, "pairwise")
    assert b.requires_grad and torch.equal(a, b.detach())


def test_pairwise_is_scoped(built):
    """Numerics 'pairwise' is an argument of the call: the calls before and after it are the
    default stack bitwise (forward, and gradients with autograd); with it the rbf stack differs
    from the default in the last bits (another order of summation), and the softmax score keeps
    the default operator."""
    x, scales, R, V, S, w = _case(2, 40, 2, 3, torch.float32)
    before = _run("fused", x, scales, R, V, S, w, True)
    inside = _run("pairs", x, scales, R, V, S, w, True)
    after = _run("fused", x, scales, R, V, S, w, True)
    for name, a, b in zip(NAMES, before, after, strict=True):
        assert torch.equal(a, b), name
    assert not torch.equal(before[0], inside[0])
    torch.testing.assert_close(inside[0], before[0], rtol=1e-4, atol=1e-5)
    with fused.enabled(True), torch.no_grad():
        plain = fused.solver_stack(x, scales, R, V, S, False, False)
        soft = fused.solver_stack(x, scales, R, V, S, False, False, "pairwise")
    assert torch.equal(plain, soft)


@pytest.mark.parametrize("d", [6, 7])
def test_pairs_uncompiled_sizes_use_row_loops(built, d):
    """A d without compiled pairwise loops (6, 7) runs the default row loops inside the pairs ops:
    bitwise the default stack's numbers."""
    x, scales, R, V, S, w = _case(2, 20, d, 2, torch.float32)
    a = _run("fused", x, scales, R, V, S, w, False)
    b = _run("pairs", x, scales, R, V, S, w, False)
    for name, u, v in zip(NAMES, a, b, strict=True):
        assert torch.equal(u, v), name


def test_pairs_ops_check_their_arguments(built):
    """The pairs ops refuse bad shapes and dtypes with the stack's messages."""
    x, scales, R, V, S, _ = _case(2, 9, 2, 2, torch.float32)
    ops = fused._ops()
    with pytest.raises(RuntimeError, match="R \\(B, n < T, 2\\)"):
        ops.stack_forward_pairs(x, scales, R[:, :, :1].contiguous(), V, S, False, True)
    with pytest.raises(RuntimeError, match="one dtype"):
        ops.stack_forward_pairs(x, scales.double(), R, V, S, False, True)
    _, Hs, outs = ops.stack_forward_pairs(x, scales, R, V, S, False, True)
    gH = torch.zeros(2, 10, 2)
    with pytest.raises(RuntimeError, match="saved state"):
        ops.stack_backward_pairs(x, scales, R, V, S, Hs, outs[:, :1].contiguous(), gH, False)
