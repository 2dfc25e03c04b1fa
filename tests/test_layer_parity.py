"""Issue 40: the one solver-layer recursion (:func:`pfntheory.nn.solver.solver_recursion`) gives the
numbers of the six copies it replaced.

``tests/data/layer_parity_ref.pt`` holds the outputs of the code before the change (main
a1815e2, written by ``tests/_layer_parity_cases.py``) on fixed inputs and weights: every torch
forward (the fast model with the fused stack and eager, with and without autograd, in each fused
numerics; its gradients; the dense reference; the mixture heads; the case study's shared-context
forward) of synthetic float64 models, and the forwards of committed runs' stored weights (one per
model family: BLR learnable and theory, theory_shared, RBF learnable and theory, TF^pr, the
mixture, the case-study PFN) in their float32. The test recomputes them with the code of the day.

Tolerances, relative to the largest entry of each output:

* float64: ``1e-12``, round-off of another order of summation (a few ``1e-16`` per operation over
  at most 5 layers and 25 terms; measured: the fast paths and the mixture bitwise, the dense
  reference 3e-15, the shared-context forward 3e-15);
* float32: ``100 * 2**-23`` (100 ulp; measured: bitwise on every committed run).

How it fails: any change of the recursion (a dropped layer, a skip term without ``1/s``, a value
with the wrong coefficient) moves the outputs by O(1) relative; a changed order of summation in a
committed run's float32 forward by 1e-7 to 1e-6, inside the float32 tolerance but caught by the
bitwise check of :func:`test_committed_runs_are_bitwise` (committed runs resume bit for bit).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import _layer_parity_cases as cases
import pytest
import torch

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.nn import fused
from pfntheory.nn.model import PFNTransformer

REF = Path(__file__).parent / "data" / "layer_parity_ref.pt"
TOL = {torch.float64: 1e-12, torch.float32: 100 * 2.0**-23}


def _numerics_kw(numerics):
    return {"numerics": numerics}


@pytest.fixture(scope="module")
def outputs():
    threads = torch.get_num_threads()
    try:
        return cases.all_outputs(_numerics_kw)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def reference():
    return torch.load(REF, weights_only=True)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-300))


def test_every_case_is_in_the_reference(outputs, reference):
    assert set(outputs) == set(reference)
    for key, ref in reference.items():
        assert set(outputs[key]) == set(ref), key
        assert all(bool(torch.isfinite(v).all()) for v in ref.values()), key


def test_every_forward_matches_the_replaced_code(outputs, reference):
    bad = []
    for key, ref in reference.items():
        for name, want in ref.items():
            got = outputs[key][name]
            assert got.dtype == want.dtype and got.shape == want.shape, (key, name)
            err = _rel(got, want)
            if not err <= TOL[want.dtype]:
                bad.append(f"{key} {name}: {err:.2e}")
    assert not bad, bad


def _needs_fused():
    if not fused.available():  # the reference was written with the fused operator
        pytest.skip(f"no fused extension here: {fused.unavailable_reason()}")


def test_committed_runs_are_bitwise(outputs, reference):
    """The committed runs' forwards (training and evaluation) are bit for bit those of the code
    they were trained with: a resumed or extended run replays (docs/speed.md)."""
    _needs_fused()
    keys = [k for k in reference if k.startswith("run/") and not k.endswith("/shared")]
    assert len(keys) == 3 * len(cases.COMMITTED_RUNS)
    differ = []
    for key in keys:
        for name, want in reference[key].items():
            got = outputs[key][name]
            if not torch.equal(got, want):
                rel = _rel(got, want)
                assert rel <= TOL[want.dtype], (key, name, rel)  # round-off, never a changed sum
                differ.append((key, name, rel))
    if differ:
        # bit for bit holds only on the arithmetic the reference was written on (the same CPU
        # vendor's BLAS path as well as instruction set: MKL takes other kernels on AMD than on
        # Intel at the same AVX-512 capability; measured on an AMD EPYC, every committed run's
        # forward within 1e-6 relative); within the float32 tolerance above, it is round-off
        pytest.xfail(
            f"not bitwise on this machine's arithmetic: {len(differ)} outputs differ, at most "
            f"{max(r for *_, r in differ):.2g} relative (within the float32 tolerance)"
        )


def test_the_numerics_argument_takes_effect(outputs):
    """``numerics`` reaches the fused stack: 'symmetric' (no autograd) and 'pairwise' differ from
    'replay' in the last bits for the rbf score (another order of summation), within round-off."""
    _needs_fused()
    base = outputs["rbf_learn/fused/nograd"]["logits"]
    for tag in ("symmetric", "pairwise_nograd"):
        other = outputs[f"rbf_learn/fused/{tag}"]["logits"]
        assert not torch.equal(other, base), tag
        assert _rel(other, base) <= TOL[torch.float64], tag
    eager = outputs["rbf_learn/eager/symmetric"]["logits"]
    assert torch.equal(eager, outputs["rbf_learn/eager/nograd"]["logits"])  # no fused stack


def test_dense_reference_matches_the_fast_forward(outputs):
    """The literal form (full matrices through the same recursion) against the channel form."""
    for name in cases.SYNTHETIC:
        for field in ("logits", "mu", "tau"):
            got = outputs[f"{name}/dense"][field]
            assert _rel(got, outputs[f"{name}/eager/grad"][field]) <= TOL[torch.float64], name


EVAL_REF = Path(__file__).parent / "data" / "layer_parity_eval_ref.json"


@pytest.mark.parametrize("key", ["blr_learn", "rbf_learn"])
def test_committed_run_metrics_are_reproduced(key):
    """Two committed runs (BLR: the linear score in feature space; RBF: the fused stack with the
    evaluation's numerics 'symmetric') re-evaluated at n' = 32 on their committed evaluation's
    instances (seed, count) give the metrics main a1815e2 gave before the change
    (``tests/data/layer_parity_eval_ref.json``): exactly, since the forwards are bitwise and the
    float64 oracle is deterministic; ``rel=1e-12`` leaves room only for float64 round-off.
    (The committed ``eval.json`` itself is not the reference: for the BLR run main a1815e2 already
    gave E[TV] 0.4672 against its committed 0.4638, other query labels; docs/speed.md, issue
    40.)"""
    import json

    from pfntheory.infra.tree import EvalSpec
    from pfntheory.nn.evaluate import evaluate

    _needs_fused()
    ref = json.loads(EVAL_REF.read_text())["runs"][key]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        spec = EvalSpec(
            (ref["n_eval"],), n_instances=ref["n_instances"], seed=ref["seed"], oracle="float64"
        )
        out = evaluate(cases.ROOT / ref["run"], spec, save=False)
    finally:
        torch.set_num_threads(threads)
    got, want = out["results"][str(ref["n_eval"])], ref["results"]
    assert set(got) == set(want)
    # exactly on the reference's arithmetic; on another machine's (another BLAS path for the
    # float32 forward: see test_committed_runs_are_bitwise) the metrics move by float32
    # round-off, measured 3e-9 relative on an AMD EPYC: 1e-6 is that bound with room, while a
    # changed recursion moves them by O(1)
    rel = 1e-12 if _reference_arithmetic() else 1e-6
    for name, value in want.items():
        if isinstance(value, float):
            assert got[name] == pytest.approx(value, rel=rel, abs=1e-300), name
        else:
            assert got[name] == value, name


def _reference_arithmetic() -> bool:
    """Whether the committed runs' float32 forwards are bit for bit the reference's here."""
    ref = torch.load(REF, weights_only=True)
    out = cases.all_outputs(_numerics_kw)
    return all(
        torch.equal(out[k][n], w)
        for k in ref
        if k.startswith("run/") and not k.endswith("/shared")
        for n, w in ref[k].items()
    )


@pytest.mark.parametrize("normalised", [False, True])
def test_one_initialisation_of_the_solver_layers(normalised):
    """supp-eqn:weights from one place (``construction.solver_step_sizes``): the torch model's
    initial ``V, S, W`` (learnable mode) and each mixture head's equal the NumPy construction's
    entries for the same step, amplitude and noise, bitwise (the same operations in float64).
    How it fails: a re-inlined step (``-eta sigma^2 / alpha^2`` rounded in another order, or the
    TF step for TF^pr) differs in the last bit or by the factor ``alpha^2``."""
    from pfntheory.maths import construction as con
    from pfntheory.maths.kernels import RBFKernel
    from pfntheory.nn.multihead_model import MixturePFN

    d, L, eta, noise_var, alpha = 2, 4, 0.07, 0.3, 1.7
    cfg = ModelSpec(score="rbf", L=L, C=8, normalised=normalised, eta_init=eta, amp_init=alpha**2)
    task = TaskSpec(kind="rbf", d=d, noise_var=noise_var, alpha=alpha, lengthscale=0.9)
    edges = torch.linspace(-3, 3, 9, dtype=torch.float64)
    hw = con.handset_weights(d, L, eta, noise_var, RBFKernel(alpha, 0.9), normalised=normalised)
    y, k, f, g = d, d + 1, d + 2, d + 3
    want_V = [[hw.V[m][f, y], hw.V[m][f, f], hw.V[m][g, k], hw.V[m][g, g]] for m in range(1, L)]
    want_S = [[hw.S[m][f, f], hw.S[m][g, g]] for m in range(1, L)]
    want_W = [hw.W[0, f], hw.W[1, y], hw.W[1, k], hw.W[1, g]]
    torch.set_default_dtype(torch.float64)
    try:
        c = PFNTransformer(cfg, edges, task).coefficients()
        hier = TaskSpec(
            kind="hier_rbf", d=d, alpha=alpha, hier_lengthscales=(0.9,), hier_noise_stds=(0.3**0.5,)
        )
        mix = MixturePFN(dataclasses.replace(cfg, mixture=True), edges, hier)
    finally:
        torch.set_default_dtype(torch.float32)
    nv = float(mix.W[0, 1].detach())  # the head's sigma_h^2 as the prior gives it
    hm = con.handset_weights(d, L, eta, nv, RBFKernel(alpha, 0.9), normalised=normalised)
    assert c["V"].tolist() == want_V and c["S"].tolist() == want_S and c["W"].tolist() == want_W
    assert mix.V[0].tolist() == [
        [hm.V[m][f, y], hm.V[m][f, f], hm.V[m][g, k], hm.V[m][g, g]] for m in range(1, L)
    ]
    assert mix.S[0].tolist() == [[hm.S[m][f, f], hm.S[m][g, g]] for m in range(1, L)]
