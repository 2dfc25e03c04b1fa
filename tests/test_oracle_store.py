"""The oracle store (pfntheory.nn.oracle_store): an evaluation through it is byte-identical to one
without it, on both covariate designs, and an entry that is not what it claims is refused.

How these fail: a store that returned other instances (another seed, chunk or design), rounded or
reordered arrays, or a generator left in another state would change ``eval*.json`` by far more than
a byte (a different instance moves E[TV] by about 1%); a store that trusted its files would return
the tampered entry's arrays (here: labels shifted by 1.0) and the bytes would differ.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs"
#: A committed d = 8 run (cheapest cell of supp_exp2_d8_budget) with both designs.
RUN = "supp_exp2_d8_budget/rbf-d8-pr-learn-L4-C256-n64-128-s1000-*"
#: Small enough for a unit test (two n', two chunks each at batch_size 24), large enough that a
#: chunk boundary and a second n' are crossed.
SPEC = {"n_eval": (64, 96), "n_instances": 40, "seed": 12345}
BATCH = 24


def _copy_run(tmp: Path, name: str) -> Path:
    (src,) = sorted(ROOT.glob(RUN))
    dst = tmp / name
    dst.mkdir()
    for f in ("config.json", "metrics.json", "weights.pt"):
        shutil.copy(src / f, dst / f)
    return dst


def _eval(run: Path, covariates, store=None) -> bytes:
    from pfntheory.infra.tree import EvalSpec
    from pfntheory.nn.evaluate import evaluate

    spec = EvalSpec(covariates=covariates, **SPEC)
    evaluate(run, spec, batch_size=BATCH, store=store)
    return (run / spec.filename).read_bytes()


@pytest.mark.parametrize("covariates", [None, "uniform"], ids=["as-trained", "shift"])
def test_evaluation_through_the_store_is_byte_identical(tmp_path, covariates):
    from pfntheory.nn.oracle_store import OracleStore

    plain = _eval(_copy_run(tmp_path, "plain"), covariates)
    store = OracleStore(tmp_path / "store")
    first = _eval(_copy_run(tmp_path, "first"), covariates, store)
    assert [k for k, _ in store.events] == ["miss"] * 4  # 2 n' x 2 chunks
    second = _eval(_copy_run(tmp_path, "second"), covariates, store)
    assert [k for k, _ in store.events[4:]] == ["hit"] * 4
    assert first == plain
    assert second == plain
    assert json.loads(plain)["results"]["64"]["n_instances"] == SPEC["n_instances"]


def test_a_generator_is_left_as_the_draw_leaves_it(tmp_path):
    from pfntheory.infra.config import TaskSpec
    from pfntheory.nn.oracle_store import OracleStore
    from pfntheory.nn.priors import sample_batch

    task = TaskSpec(kind="rbf", d=3)
    store = OracleStore(tmp_path)
    g0, g1, g2 = (torch.Generator().manual_seed(7) for _ in range(3))
    sample_batch(task, 5, 9, g0, dtype=torch.float64)
    store.draw(sample_batch, task, 5, 9, g1)
    store.draw(sample_batch, task, 5, 9, g2)  # a hit
    assert [k for k, _ in store.events] == ["miss", "hit"]
    assert torch.equal(g0.get_state(), g1.get_state())
    assert torch.equal(g0.get_state(), g2.get_state())


def _tamper(path: Path, edit) -> None:
    with np.load(path, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    edit(d)
    with open(path, "wb") as fh:
        np.savez(fh, **d)


def _edit_inputs(d):
    meta = json.loads(bytes(d["_meta"]).decode())
    meta["inputs"]["n"] = meta["inputs"]["n"] + 1
    d["_meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)


def _edit_labels(d):
    d["y"] = d["y"] + 1.0


@pytest.mark.parametrize(
    "edit,reason",
    [
        (_edit_inputs, "made from other inputs (n)"),
        (_edit_labels, "checksum mismatch"),
        (None, "unreadable"),
    ],
    ids=["other-inputs", "arrays-changed", "truncated"],
)
def test_an_entry_that_is_not_what_it_claims_is_refused_and_recomputed(tmp_path, edit, reason):
    from pfntheory.infra.config import TaskSpec
    from pfntheory.nn.oracle_store import OracleStore
    from pfntheory.nn.priors import sample_batch

    task = TaskSpec(kind="rbf", d=2)
    store = OracleStore(tmp_path)
    want = sample_batch(task, 4, 6, torch.Generator().manual_seed(3), dtype=torch.float64)
    store.draw(sample_batch, task, 4, 6, torch.Generator().manual_seed(3))
    (path,) = tmp_path.rglob("*.npz")
    if edit is None:
        path.write_bytes(path.read_bytes()[:100])
    else:
        _tamper(path, edit)
    got = store.draw(sample_batch, task, 4, 6, torch.Generator().manual_seed(3))
    kind = store.events[-1][0]
    assert kind.startswith(f"refused: {reason}"), kind
    for f in ("X", "Y", "xq", "y", "mu", "tau"):
        assert torch.equal(getattr(got, f), getattr(want, f)), f
    # rewritten: the next read is a checked hit
    store.draw(sample_batch, task, 4, 6, torch.Generator().manual_seed(3))
    assert store.events[-1][0] == "hit"


def test_bad_arguments_are_named(tmp_path):
    from pfntheory.infra.config import TaskSpec
    from pfntheory.nn.oracle_store import OracleStore
    from pfntheory.nn.priors import sample_batch

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="root"):
        OracleStore(f)
    with pytest.raises(TypeError, match="root"):
        OracleStore(3)
    store = OracleStore(tmp_path / "s")
    task = TaskSpec(kind="rbf", d=2)
    with pytest.raises(TypeError, match="generator"):
        store.draw(sample_batch, task, 4, 6, 3)
    with pytest.raises(TypeError, match="task"):
        store.draw(sample_batch, "rbf", 4, 6, torch.Generator())
    with pytest.raises(ValueError, match="batch_size"):
        store.draw(sample_batch, task, 0, 6, torch.Generator())
