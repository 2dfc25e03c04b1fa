"""The fused GP draw (``_fused_src/gp_draw.cpp``) behind ``sample_batch(..., fast=True)`` and
``RunSpec.fast_numerics``: the same draws as the exact path to float64 round-off, the same random
numbers, the exact path wherever it does not apply, and its failures named.

Tolerance of the parity tests: both paths factor ``A = G + sigma^2 I`` in float64 by backward-stable
Cholesky recursions in different orders, so each is within ``c n u kappa(A)`` relative of the exact
labels and moments (Higham, Accuracy and Stability, thm 10.3/10.4; ``u = 2^-53``), with
``kappa(A) <= (n alpha^2 + sigma^2) / sigma^2`` (Gershgorin). The tests allow ``4 n u kappa`` (at
n = 89 and the default prior, 8.7e-11); observed differences are 1e-15 to 2e-14. How they fail: a
change of the noise variance by 1e-6 relative inside the fused path (a fault injection below)
moves the moments by ~1e-6, four orders of magnitude over the tolerance.
"""

from __future__ import annotations

import math

import pytest
import torch

from pfntheory.infra import runs
from pfntheory.infra.config import TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.nn import fused, priors
from pfntheory.nn.priors import sample_batch

U = 2.0**-53


def _tol(task: TaskSpec, n: int) -> float:
    c = priors._components(task)[0]
    kappa = (n * c.alpha2 + c.noise_var) / c.noise_var
    return 4 * n * U * kappa


def _both(task, B, n, seed=0, interval=(-3.0, 3.0)):
    a = sample_batch(
        task, B, n, torch.Generator().manual_seed(seed), dtype=torch.float64, interval=interval
    )
    b = sample_batch(
        task,
        B,
        n,
        torch.Generator().manual_seed(seed),
        dtype=torch.float64,
        interval=interval,
        fast=True,
    )
    return a, b


def _close(a, b, tol):
    for name in ("Y", "mu", "tau"):
        x, y = getattr(a, name), getattr(b, name)
        err = float(((x - y).abs() / (1.0 + x.abs())).max())
        assert err <= tol, f"{name}: {err:.3g} > {tol:.3g}"


@pytest.mark.parametrize(
    "d,B,n",
    [(2, 128, 89), (1, 1, 1), (2, 7, 2), (2, 8, 8), (2, 9, 9), (5, 13, 31), (16, 17, 200)],
)
def test_fast_draw_matches_exact_path(built, d, B, n):
    """Labels and PPD moments within the Cholesky round-off bound, on the same random numbers:
    the inputs are bitwise equal, and batches that are not a multiple of the vector width (padded
    lanes) and n = 1 are covered."""
    task = TaskSpec(kind="rbf", d=d)
    a, b = _both(task, B, n)
    assert torch.equal(a.X, b.X) and torch.equal(a.xq, b.xq)
    _close(a, b, _tol(task, n))
    # the query labels come from the same uniforms through the moments: as close as those
    assert float((a.y - b.y).abs().max()) <= 10 * _tol(task, n) * (1 + float(a.y.abs().max()))


def test_fast_draw_ard_lengthscales(built):
    """Per-coordinate lengthscales (the ARD prior) go through the fused draw as its factor f."""
    task = TaskSpec(kind="ard_rbf", d=3, lengthscales=(0.3, 0.8, 2.0))
    a, b = _both(task, 20, 40, seed=3)
    _close(a, b, _tol(task, 40))


def test_fault_injection_is_caught(built, monkeypatch):
    """A fused path with sigma^2 off by 1e-6 relative fails the parity check (so it can fail)."""
    task = TaskSpec(kind="rbf", d=2)
    op = torch.ops.pfntheory_fused.gp_draw

    def skewed(X, xq, z, f, amp, noise):
        return op(X, xq, z, f, amp, noise * (1 + 1e-6))

    monkeypatch.setattr(priors, "_fused_gp_draw", skewed)
    a, b = _both(task, 16, 89)
    with pytest.raises(AssertionError):
        _close(a, b, _tol(task, 89))


def test_fast_is_the_exact_path_where_it_does_not_apply(built):
    """Mixtures, the linear kernel, BLR, n above FAST_DRAW_MAX_N and a disabled extension: the
    fast flag changes nothing (bitwise)."""
    cases = [
        (TaskSpec(kind="hier_rbf", d=2), 9, 12),
        (TaskSpec(kind="blr", d=5), 9, 12),
        (TaskSpec(kind="rbf", d=1), 2, priors.FAST_DRAW_MAX_N + 1),
    ]
    for task, B, n in cases:
        a, b = _both(task, B, n, seed=5, interval=None)
        for name in ("X", "Y", "y", "mu", "tau"):
            assert torch.equal(getattr(a, name), getattr(b, name)), (task.kind, name)
    with fused.enabled(False):
        a, b = _both(TaskSpec(kind="rbf", d=2), 9, 12)
    assert torch.equal(a.Y, b.Y) and torch.equal(a.mu, b.mu)


def test_failed_factor_is_named(built):
    """A NaN input makes that instance's pivot fail: the op reports its leading minor (LAPACK's
    convention) for that lane only, and the draw raises naming the instance."""
    task = TaskSpec(kind="rbf", d=2)
    c = priors._components(task)[0]
    g = torch.Generator().manual_seed(0)
    X = torch.randn(11, 6, 2, generator=g, dtype=torch.float64)
    X[9, 3, 1] = math.nan
    xq = torch.randn(11, 1, 2, generator=g, dtype=torch.float64)
    z = torch.randn(11, 6, generator=g, dtype=torch.float64)
    f = torch.tensor(c.feat, dtype=torch.float64)
    *_, info = torch.ops.pfntheory_fused.gp_draw(X, xq[:, 0], z, f, c.alpha2, c.noise_var)
    assert info.tolist() == [0] * 9 + [4, 0]
    with pytest.raises(ValueError, match=r"instance 19 of the batch, leading minor 4"):
        priors._fast_draw(c, X, xq, z, offset=10)


def test_op_refuses_bad_arguments(built):
    op = torch.ops.pfntheory_fused.gp_draw
    X = torch.zeros(2, 3, 2, dtype=torch.float64)
    xq, z, f = torch.zeros(2, 2, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64), None
    f = torch.ones(2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="float64"):
        op(X.float(), xq, z, f, 1.0, 0.1)
    with pytest.raises(RuntimeError, match="shapes"):
        op(X, xq, z[:, :2].contiguous(), f, 1.0, 0.1)
    with pytest.raises(RuntimeError, match="positive"):
        op(X, xq, z, f, 1.0, 0.0)


def test_fast_flag_is_checked():
    with pytest.raises(TypeError, match="fast"):
        sample_batch(TaskSpec(kind="rbf", d=2), 2, 3, torch.Generator(), fast="yes")


def test_fast_numerics_in_the_run_name():
    """Off (the default) leaves every name as it was; on renames the run; a non-bool is refused."""
    from pfntheory.infra.config import ModelSpec

    base = dict(
        task=TaskSpec(kind="rbf", d=2), model=ModelSpec(score="rbf", L=4, C=32), n_min=8, n_max=16
    )
    off = RunSpec(**base, steps=10, lr=1e-3)
    assert "fast_numerics" not in off.identity()
    on = RunSpec(**base, steps=10, lr=1e-3, fast_numerics=True)
    assert on.identity()["fast_numerics"] is True
    assert on.identity() != off.identity()
    with pytest.raises(TypeError, match="fast_numerics"):
        RunSpec(**base, steps=10, lr=1e-3, fast_numerics=1)


# ------------------------------------------------------------------------------------------------
# training with RunSpec.fast_numerics
# ------------------------------------------------------------------------------------------------


def _tiny(**kw) -> RunSpec:
    from pfntheory.infra.config import ModelSpec

    base = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=3, C=8, tau_min=0.02),
        n_min=12,
        n_max=20,
        steps=6,
        lr=1e-2,
        batch_size=8,
        interval=(-2.0, 2.0),
    )
    return RunSpec(**(base | kw))


def _train(spec, run_dir, callback=None):
    from pfntheory.nn.train import train

    return train(spec, run_dir, device="cpu", checkpoint_every=2, progress=False, callback=callback)


def test_fast_numerics_run_takes_both_fast_paths(built, tmp_path, monkeypatch):
    """A run with fast_numerics draws its batches by the fused GP draw and steps through the
    pairwise stack (counted by spies); its weights after 6 steps equal the replay run's to float32
    round-off amplified over the steps (rtol 1e-3: the runs start from the same weights and see the
    same random numbers), but not bitwise. How it fails: a run that ignored the flag would be
    bitwise the replay run (the first assertion), one that drew other numbers would differ by
    O(lr) = 1e-2 relative."""
    calls = {"draw": 0, "pairs": 0}
    draw, real_ops = priors._fused_gp_draw, fused._ops()

    def counted_draw(*a):
        calls["draw"] += 1
        return draw(*a)

    class CountedOps:  # the extension's ops, counting the pairwise stack's backward calls
        def __getattr__(self, name):
            if name == "stack_backward_pairs":
                calls["pairs"] += 1
            return getattr(real_ops, name)

    monkeypatch.setattr(priors, "_fused_gp_draw", counted_draw)
    monkeypatch.setattr(fused, "_ops", CountedOps)
    replay = runs.load_torch(_train(_tiny(), tmp_path / "replay") / runs.WEIGHTS)
    assert calls == {"draw": 0, "pairs": 0}
    fast = runs.load_torch(_train(_tiny(fast_numerics=True), tmp_path / "fast") / runs.WEIGHTS)
    assert calls["draw"] >= 6 and calls["pairs"] >= 6
    floats = [k for k in replay if replay[k].is_floating_point()]
    assert any(not torch.equal(replay[k], fast[k]) for k in floats)
    for k in floats:
        torch.testing.assert_close(fast[k], replay[k], rtol=1e-3, atol=1e-5)


def test_fast_numerics_run_resumes_bitwise(built, tmp_path):
    """Killed after step 5 (checkpoint at 4) and resumed, a fast-numerics run reaches the straight
    run's weights bit for bit: its arithmetic is as deterministic as the replay's."""

    class Kill(Exception):
        pass

    def kill(step, loss):
        if step == 5:
            raise Kill

    spec = _tiny(fast_numerics=True)
    straight = runs.load_torch(_train(spec, tmp_path / "a") / runs.WEIGHTS)
    with pytest.raises(Kill):
        _train(spec, tmp_path / "b", callback=kill)
    resumed = runs.load_torch(_train(spec, tmp_path / "b") / runs.WEIGHTS)
    for k in straight:
        assert torch.equal(straight[k], resumed[k]), k
    assert "pairwise" not in fused._state  # the numerics are the model's argument, no flag


def test_fast_numerics_without_the_extension_is_the_replay_run(tmp_path):
    """No extension (a machine without a compiler, or PFNTHEORY_FUSED=0): a fast-numerics run
    trains on the exact draw and the eager layers, so it is bitwise the replay run; nothing here
    needs a compiler. How it fails: a fast path reached without the extension would raise, and one
    that changed the arithmetic of the fallback would break the equality."""
    with fused.enabled(False):
        replay = runs.load_torch(_train(_tiny(), tmp_path / "replay") / runs.WEIGHTS)
        fast = runs.load_torch(_train(_tiny(fast_numerics=True), tmp_path / "fast") / runs.WEIGHTS)
    for k in replay:
        assert torch.equal(replay[k], fast[k]), k
