"""The training draw per n (issue 45): a fast-numerics run started from step 0 draws with the
fused GP draw up to the crossover of this machine class and by the exact path above it, and records
that choice; a resumed run keeps its checkpoint's choice (the legacy one, the fused draw at every
n it applies to, for a checkpoint written before the record), so a resume stays bitwise that of an
uninterrupted run and no committed or checkpointed run changes.
"""

from __future__ import annotations

import pytest
import torch

from pfntheory.infra import runs
from pfntheory.infra.config import FUSED_DRAW_MAX_N, ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.nn import arithmetic as arith
from pfntheory.nn import train as train_mod
from pfntheory.nn.train import train


def fast_spec(**kw) -> RunSpec:
    base = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8, tau_min=0.02),
        n_min=4,
        n_max=8,
        steps=6,
        lr=1e-2,
        batch_size=4,
        interval=(-2.0, 2.0),
        fast_numerics=True,
    )
    base.update(kw)
    return RunSpec(**base)


@pytest.fixture
def draws(monkeypatch):
    """Every training draw as ``(n, fast)``, and the crossover set to 6 (within n in [4, 8])."""
    seen: list[tuple[int, bool]] = []
    real = train_mod.sample_batch

    def spy(task, size, n, generator, **kw):
        seen.append((n, kw["fast"]))
        return real(task, size, n, generator, **kw)

    monkeypatch.setattr(train_mod, "sample_batch", spy)
    monkeypatch.setattr(arith, "FUSED_DRAW_MAX_N", 6)
    return seen


def _kill_at(k):
    def kill(step, loss):
        if step == k:
            raise KeyboardInterrupt

    return kill


def _weights(rd):
    return runs.load_torch(rd / runs.WEIGHTS)


def test_crossover_is_recorded_torch_free_and_in_range():
    from pfntheory.nn.priors import FAST_DRAW_MAX_N

    assert 64 <= FUSED_DRAW_MAX_N <= FAST_DRAW_MAX_N
    assert arith.LEGACY_FUSED_DRAW_MAX_N == FAST_DRAW_MAX_N


def test_fresh_fast_run_records_and_takes_its_draw_per_n(tmp_path, draws):
    rd = train(fast_spec(), tmp_path / "r", progress=False)
    rec = runs.load_json(rd / runs.METRICS)["arithmetic"]
    assert rec[arith.DRAW_KEY] == 6 and rec["fast_numerics"] is True
    assert {n for n, _ in draws} > {6}  # the test saw both sides of the crossover
    assert all(fast == (n <= 6) for n, fast in draws)
    assert arith.DRAW_KEY not in runs.load_json(rd / runs.CONFIG)  # not the run's identity


def test_replay_run_records_no_draw_and_never_takes_the_fused_one(tmp_path, draws):
    rd = train(fast_spec(fast_numerics=False), tmp_path / "r", progress=False)
    assert arith.DRAW_KEY not in runs.load_json(rd / runs.METRICS)["arithmetic"]
    assert not any(fast for _, fast in draws)


def test_resume_keeps_the_checkpoint_draw(tmp_path, draws, monkeypatch):
    """Killed at step 3 with the crossover at 6, resumed where this machine class would now pick 4:
    the run keeps 6 and ends bitwise on the weights of an uninterrupted run at 6."""
    spec = fast_spec()
    whole = train(spec, tmp_path / "whole", progress=False)
    rd = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        train(spec, rd, progress=False, callback=_kill_at(3), checkpoint_every=1)
    assert runs.load_torch(rd / runs.CHECKPOINT)["arithmetic"][arith.DRAW_KEY] == 6
    monkeypatch.setattr(arith, "FUSED_DRAW_MAX_N", 4)
    draws.clear()
    train(spec, rd, progress=False)
    assert all(fast == (n <= 6) for n, fast in draws)
    assert runs.load_json(rd / runs.METRICS)["arithmetic"][arith.DRAW_KEY] == 6
    a, b = _weights(whole), _weights(rd)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_without_the_record_resumes_with_the_legacy_draw(tmp_path, draws):
    """A checkpoint written before the choice per n (the running sweep's) resumes, unrefused, with
    the fused draw at every n, and ends bitwise on an uninterrupted run of the legacy draw."""
    spec = fast_spec()
    rd = tmp_path / "old"
    with pytest.raises(KeyboardInterrupt):
        train(spec, rd, progress=False, callback=_kill_at(3), checkpoint_every=1)
    ckpt = runs.load_torch(rd / runs.CHECKPOINT)
    del ckpt["arithmetic"][arith.DRAW_KEY]
    del ckpt[arith.SEGMENTS_KEY]  # nor the segments (issue 52), which came later still
    runs.save_torch(rd / runs.CHECKPOINT, ckpt)
    draws.clear()
    train(spec, rd, progress=False)
    assert draws and all(fast for _, fast in draws)
    assert runs.load_json(rd / runs.METRICS)["arithmetic"][arith.DRAW_KEY] == 512
    # the legacy draw: every step's batch by the fused draw, as the committed runs
    legacy = tmp_path / "legacy"
    run = train_mod._Run(spec, legacy, torch.device("cpu"))
    assert run.fused_max_n == 6
    run.fused_max_n = arith.LEGACY_FUSED_DRAW_MAX_N
    run.loop(1, False, None)
    run.finish()
    a, b = _weights(legacy), _weights(rd)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_fused_draw_max_n_checks_its_arguments():
    spec = fast_spec()
    assert arith.fused_draw_max_n(spec, None) == arith.FUSED_DRAW_MAX_N
    assert arith.fused_draw_max_n(spec, {"arithmetic": None}) == 512
    assert arith.fused_draw_max_n(spec, {"arithmetic": {arith.DRAW_KEY: 300}}) == 300
    assert arith.fused_draw_max_n(fast_spec(fast_numerics=False), None) is None
    with pytest.raises(ValueError, match=arith.DRAW_KEY):
        arith.fused_draw_max_n(spec, {"arithmetic": {arith.DRAW_KEY: "many"}})
    with pytest.raises(TypeError, match="spec"):
        arith.fused_draw_max_n(None, None)
    with pytest.raises(TypeError, match="checkpoint"):
        arith.fused_draw_max_n(spec, [])
    with pytest.raises(ValueError, match="fused_max_n"):
        train_mod.step_batches(
            spec, torch.Generator(), "cpu", torch.float32, (-2.0, 2.0), fused_max_n=-1
        )
