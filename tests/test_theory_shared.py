"""Mode ``theory_shared``: the reading of fig:exp1's theory mode in the authors' public code (one
``K = Q`` for every layer, a learned noise ``sigma``, separate attention and ridge steps per layer
for every score; docs/design.md, "Known ambiguities").

* Its parameters: one feature-scale vector, ``eta_k`` and ``eta_r`` per solver layer, ``sigma``
  (and ``V^(0)_{k,y}`` for rbf, as in mode ``theory``); the counts are stated.
* At initialisation its weights are the construction of supp-eqn:weights
  (:func:`pfntheory.maths.construction.handset_weights`), entry by entry.
* With the same numbers in its parameters it is the ``theory`` model whose per-layer scales
  happen to be equal (forward and the gradients that the two parameterisations share).
* Loading hand-set weights reproduces the NumPy construction; the fast forward equals the dense
  reference in outputs and gradients.
* Run identity: the new mode names its runs ``...-thsh-...``; existing modes keep their names
  (their committed runs: tests/test_run_identity.py).

Tolerances: float64 on both sides, the same sums in another order: ``c L n eps max|value|`` < 1e-11
here (as tests/test_nn_parity.py), so ``rtol = atol = 1e-10``; an error in a weight is O(eta) or
O(sigma^2) >= 1e-3.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.maths.construction import handset_weights, tf_forward
from pfntheory.maths.kernels import LinearKernel, RBFKernel, blr_sigma_diag
from pfntheory.nn import fused
from pfntheory.nn.handset import load_handset
from pfntheory.nn.model import PFNTransformer, default_eta

RTOL = ATOL = 1e-10
NOISE_VAR = 0.04
EDGES = torch.linspace(-4, 4, 17, dtype=torch.float64)


def _task(score: str, d: int) -> TaskSpec:
    return TaskSpec(kind="blr" if score == "linear" else "rbf", d=d, noise_var=NOISE_VAR)


def _model(score, L, d, mode="theory_shared", **kw):
    """A float64 model, built in float64 (its initial values not rounded through float32)."""
    cfg = ModelSpec(score=score, L=L, C=16, mode=mode, **kw)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return PFNTransformer(cfg, EDGES, _task(score, d))
    finally:
        torch.set_default_dtype(old)


def _batch(d, n=11, B=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, n, d, generator=g, dtype=torch.float64) / d**0.5
    Y = torch.randn(B, n, generator=g, dtype=torch.float64)
    xq = torch.randn(B, d, generator=g, dtype=torch.float64) / d**0.5
    return X, Y, xq


@pytest.mark.parametrize("score, d, L", [("linear", 5, 32), ("rbf", 2, 32), ("rbf", 3, 4)])
def test_parameters_one_scale_per_layer_steps_learned_sigma(score, d, L):
    """One feature-scale vector (d numbers) for every layer, eta_k and eta_r per solver layer,
    sigma, and amp for rbf: d + 2 (L - 1) + 1 (+ 1) parameters (BLR d=5, L=32: 68 against the
    theory mode's 191). Fails if the scale were per layer, a step tied or sigma fixed."""
    m = _model(score, L, d)
    shapes = {k: tuple(p.shape) for k, p in m.named_parameters()}
    want = {"scale": (1, d), "eta": (L - 1,), "eta_drift": (L - 1,), "noise_std": ()}
    if score == "rbf":
        want["amp"] = ()
    assert shapes == want
    n = sum(p.numel() for p in m.parameters())
    assert n == d + 2 * (L - 1) + 1 + (score == "rbf")
    theory = _model(score, L, d, mode="theory")
    assert sum(p.numel() for p in theory.parameters()) == L * d + (L - 1) * (
        1 + (score == "rbf")
    ) + (score == "rbf")
    c = m.coefficients()  # every layer reads the one vector
    assert c["scale"].shape == (L, d)
    assert c["scale"].data_ptr() == m.scale.data_ptr()
    g = torch.autograd.grad(m(*_batch(d)).logits.logsumexp(-1).sum(), list(m.parameters()))
    assert all(bool(torch.isfinite(x).all()) and x.abs().sum() > 0 for x in g)  # all are learned


@pytest.mark.parametrize("score, d", [("linear", 5), ("rbf", 2)])
def test_initialisation_is_the_construction(score, d):
    """At step 0 the model's weights are supp-eqn:weights for the kernel its initial values
    encode (linear: Sigma = scale^2 I; rbf: lengthscale 1/scale, alpha^2 = amp), with the default
    step eta in every layer and the prior's sigma^2: every entry of V, K = Q, S, W, exactly as
    pfntheory.maths.construction.handset_weights builds them (up to float64 round-off of sigma =
    sqrt(sigma^2) squared). Fails if an init value, a sign or the sparsity differ."""
    L, scale, amp = 6, 1.3, 1.0 if score == "linear" else 1.7
    m = _model(score, L, d, scale_init=scale, amp_init=amp)
    eta = default_eta(m.config, _task(score, d))
    kernel = (
        LinearKernel(np.full(d, scale**2))
        if score == "linear"
        else RBFKernel(alpha=math.sqrt(amp), lengthscale=1 / scale)
    )
    hw = handset_weights(d, L, eta, NOISE_VAR, kernel)
    w = {k: v.detach().numpy() for k, v in m.dense_weights().items()}
    for name in ("K", "V", "S"):
        want = list(getattr(hw, name))
        if len(want) == L - 1:  # S of the solver layers only: S^(0) = 0
            want = [np.zeros_like(want[0])] + want
        np.testing.assert_allclose(w[name], np.stack(want), rtol=1e-14, atol=1e-17, err_msg=name)
    np.testing.assert_allclose(w["W"], hw.W, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(w["K"], np.stack(hw.Q))  # K = Q


@pytest.mark.parametrize("score, normalised", [("linear", False), ("rbf", False), ("rbf", True)])
def test_forward_parity_with_theory_mode_at_equal_scales(score, normalised):
    """A theory model whose per-layer scales are equal and the theory_shared model holding the same
    numbers (its sigma^2 the prior's; for the linear score eta_r = eta_k, as theory ties them)
    give the same mu, tau and logits, with autograd on (theory: the per-layer / fused path,
    theory_shared: one kernel) and off; and the gradient of the shared scale is the sum of the
    per-layer scale gradients. Fails if the shared model used another kernel, step or noise."""
    d, L = 3, 7
    kw = dict(normalised=normalised, scale_init=0.8, eta_init=0.05)
    th, sh = _model(score, L, d, mode="theory", **kw), _model(score, L, d, **kw)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        th.scale.copy_((0.8 + 0.2 * torch.rand(d, generator=g, dtype=torch.float64)).expand(L, d))
        th.eta.add_(0.01 * torch.rand(L - 1, generator=g, dtype=torch.float64))
        sh.scale.copy_(th.scale[:1])
        sh.eta.copy_(th.eta)
        if score == "rbf":
            th.eta_drift.add_(0.01 * torch.rand(L - 1, generator=g, dtype=torch.float64))
            th.amp.fill_(1.2)
            sh.amp.fill_(1.2)
        sh.eta_drift.copy_(th.eta_drift if score == "rbf" else th.eta)
    X, Y, xq = _batch(d)
    a, b = th(X, Y, xq), sh(X, Y, xq)
    for x, y in ((a.mu, b.mu), (a.tau, b.tau), (a.logits, b.logits)):
        torch.testing.assert_close(x, y, rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        torch.testing.assert_close(sh(X, Y, xq).logits, a.logits.detach(), rtol=RTOL, atol=ATOL)
    ga = torch.autograd.grad(a.logits.logsumexp(-1).sum(), [th.scale, th.eta])
    gb = torch.autograd.grad(b.logits.logsumexp(-1).sum(), [sh.scale, sh.eta])
    torch.testing.assert_close(ga[0].sum(0, keepdim=True), gb[0], rtol=1e-9, atol=1e-12)
    if score == "rbf":  # the linear theory model ties eta_r to eta_k, so its eta gradient differs
        torch.testing.assert_close(ga[1], gb[1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "task, normalised", [("blr", False), ("rbf", False), ("rbf", True)], ids=str
)
def test_handset_parity_with_numpy_construction(task, normalised):
    """Hand-set weights of thm:TFdoPPD (per-layer steps that differ, one kernel) loaded into a
    theory_shared model reproduce construction.tf_forward to float64 round-off, fast and dense;
    weights whose K^(l) differ across layers are refused naming the weights."""
    d, n, L = 3, 12, 8
    kernel = LinearKernel(blr_sigma_diag(d)) if task == "blr" else RBFKernel(1.3, 0.7)
    X, Y, xq = (t.numpy() for t in _batch(d, n=n, B=3, seed=1))
    eta = np.linspace(0.02, 0.05, L - 1) if not normalised else np.linspace(0.3, 0.6, L - 1)
    hw = handset_weights(d, L, eta, NOISE_VAR, kernel, normalised=normalised)
    mu_np, tau_np = tf_forward(hw, X, Y, xq)
    cfg = ModelSpec(
        score=hw.score,
        L=L,
        C=16,
        mode="theory_shared",
        normalised=normalised,
        amp_init=hw.alpha2 if task == "rbf" else 1.0,
    )
    model = load_handset(PFNTransformer(cfg, EDGES, _task(hw.score, d)).double(), hw)
    t = [torch.as_tensor(a) for a in (X, Y, xq)]
    for out in (model(*t), model.forward_dense(*t)):
        np.testing.assert_allclose(out.mu.detach().numpy(), mu_np, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(out.tau.detach().numpy(), tau_np, rtol=RTOL, atol=ATOL)
    K = [k.copy() for k in hw.K]
    K[2][0, 0] *= 1.1
    bad = {"V": hw.V, "K": K, "Q": K, "S": hw.S, "W": hw.W}
    with pytest.raises(ValueError, match="weights: K.*differ across layers"):
        load_handset(model, bad)


@pytest.mark.parametrize("fused_stack", [True, False], ids=["fused", "eager"])
@pytest.mark.parametrize("score, normalised", [("linear", False), ("rbf", False), ("rbf", True)])
def test_fast_equals_dense_outputs_and_gradients(score, normalised, fused_stack, request):
    """Fast forward/backward == the dense eqn:tabPFN attn reference, off the initial values, for
    every parameter's gradient (sigma's included): for rbf through the fused solver stack (the one
    scale expanded over the layers) and through the eager fallback (one kernel for every solver
    layer) with the extension off; each path is checked to be the one taken."""
    if fused_stack and score != "linear":
        request.getfixturevalue("built")
    calls = {"stack": 0}
    real = fused.solver_stack

    def counting(*a, **k):
        calls["stack"] += 1
        return real(*a, **k)

    request.getfixturevalue("monkeypatch").setattr(fused, "solver_stack", counting)
    with fused.enabled(fused_stack):
        _check_fast_equals_dense(score, normalised)
    assert calls["stack"] == (1 if fused_stack and score != "linear" else 0)


def _check_fast_equals_dense(score, normalised):
    m = _model(score, 5, 3, normalised=normalised, scale_init=0.8, eta_init=0.05)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    X, Y, xq = _batch(3, n=9)
    outs, grads = [], []
    for fn in (m.forward, m.forward_dense):
        out = fn(X, Y, xq)
        loss = torch.log_softmax(out.logits, -1)[:, 2].sum() + out.mu.sum() + out.tau.sum()
        outs.append(out)
        grads.append(torch.autograd.grad(loss, list(m.parameters())))
    torch.testing.assert_close(outs[0].logits, outs[1].logits, rtol=RTOL, atol=ATOL)
    for (name, _), a, b in zip(m.named_parameters(), *grads, strict=True):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL, msg=name)


def test_run_names():
    """The new mode's runs are named ``...-thsh-...`` and differ from theory's; a theory run's name
    is what it was before the mode existed (the committed fig_exp1_budget cell, whose name is
    also checked against its spec.json by tests/test_run_identity.py)."""
    task = TaskSpec(kind="blr", d=5, noise_var=0.04)
    theory = RunSpec(
        task=task,
        model=ModelSpec(score="linear", L=32, C=256, mode="theory"),
        n_min=128,
        n_max=512,
        steps=2000,
        lr=0.03,
        lr_units="elementwise",
        curve_n_eval=(128, 512),
        curve_points=48,
        ema_decay=0.99,
    )
    assert theory.name == "blr-d5-tf-theor-L32-C256-n128-512-s2000-baa0c03390"
    shared = dataclasses.replace(
        theory, model=dataclasses.replace(theory.model, mode="theory_shared")
    )
    assert shared.name.startswith("blr-d5-tf-thsh-L32-C256-n128-512-s2000-")
    assert shared.identity()["model"]["mode"] == "theory_shared"
    with pytest.raises(ValueError, match="mode"):
        ModelSpec(score="linear", L=2, C=4, mode="theory-shared")


def test_paper_schedule_is_the_theory_rows():
    """The paper-scale schedule of the new mode is theory mode's (supp-tab:pretraining
    hyperparameters lists one theory row per task), not the learnable fallback."""
    from pfntheory.nn.train import schedule_for

    for kind in ("blr", "rbf"):
        assert schedule_for(kind, "theory_shared") == schedule_for(kind, "theory")
    assert schedule_for("blr", "theory") != schedule_for("blr", "learnable")
