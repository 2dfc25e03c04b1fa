"""Parity of the PyTorch transformer with the NumPy construction of thm:TFdoPPD, and of the fast
forward/backward with the dense eqn:tabPFN attn reference.

* thm:TFdoPPD / supp-eqn:weights: loading ``pfntheory.maths.construction.handset_weights`` into
  :class:`~pfntheory.nn.model.PFNTransformer` (modes theory and learnable) reproduces
  ``construction.tf_forward``'s ``(mu_L, tau_L)`` and the analytic logits
  ``Xi psi(mu_L, tau_L) + log Delta`` of :mod:`pfntheory.maths.discretize`, for BLR (linear kernel
  with Sigma) and RBF (alpha, lengthscale folded into the weights), TF and TF^pr
  (sec:generalization).
* The fast path (keys selected instead of masked, only the written channels, custom backward with a
  recomputed and chunked kernel) equals the dense path (full (d+4)x(d+4) matrices, masked
  (n+1)x(n+1) attention, checkpointing) in outputs and in gradients.

Tolerances: both sides are float64 and evaluate the same sums in a different order, so they agree
to ``c * L * n * eps * max|value|``; with L <= 12, n <= 20 and values O(1)-O(10) this is < 1e-11,
and ``rtol = atol = 1e-10`` leaves a margin of ~10 while catching any O(eta) or O(1/s) error
(>= 1e-3 here).
"""

import numpy as np
import pytest
import torch

import pfntheory.nn.attention as attention
import pfntheory.nn.model as model_mod
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.maths import richardson as rich
from pfntheory.maths.construction import handset_weights, tf_forward
from pfntheory.maths.discretize import bin_edges
from pfntheory.maths.gp import posterior_predictive
from pfntheory.maths.kernels import LinearKernel, RBFKernel, blr_sigma_diag
from pfntheory.maths.readout import logits_from_natural, psi_gaussian
from pfntheory.nn.handset import load_handset
from pfntheory.nn.model import DenseTransformer, PFNTransformer

RTOL = ATOL = 1e-10
NOISE_VAR = 0.04


def prior(d: int) -> TaskSpec:
    """The prior node a model takes ``d`` and ``sigma^2 = NOISE_VAR`` from."""
    return TaskSpec(kind="rbf", d=d, noise_var=NOISE_VAR)


KERNELS = {
    "blr": lambda d: LinearKernel(blr_sigma_diag(d)),
    "rbf": lambda d: RBFKernel(alpha=1.3, lengthscale=0.7),
}


def _instance(d, n, B=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n, d)) / np.sqrt(d)
    Y = rng.normal(size=(B, n))
    xq = rng.normal(size=(B, d)) / np.sqrt(d)
    return X, Y, xq


def _systems(kernel, X, normalised):
    """Per instance, ``(A, D)``: the solver layers iterate on ``D^{-1} A`` with ``A = G + s2 I`` and
    ``D = diag(G 1)`` for TF^pr, ``D = None`` (identity) for TF."""
    for G in kernel(X):  # (n, n) each
        yield (
            G + NOISE_VAR * np.eye(len(G)),
            (rich.jacobi_preconditioner(G) if normalised else None),
        )


def _safe_eta(kernel, X, normalised):
    """0.9 / max_b lambda_1 of the (preconditioned) system (0.45 x the admissible step): admissible
    and below 1/lambda_1, so the iterates approach (mu, tau) monotonically and tau_L >= tau > 0."""
    return 0.45 * min(rich.admissible_step(A, D) for A, D in _systems(kernel, X, normalised))


def _contraction(kernel, X, normalised, eta):
    """max over the batch of the Richardson contraction factor max_j |1 - eta lambda_j|."""
    return max(rich.convergence_factor(A, eta, D) for A, D in _systems(kernel, X, normalised))


CASES = [("blr", False), ("rbf", False), ("rbf", True)]


@pytest.mark.parametrize("task, normalised", CASES, ids=["BLR-TF", "RBF-TF", "RBF-TFpr"])
@pytest.mark.parametrize("mode", ["theory", "learnable"])
def test_handset_parity_with_numpy_construction(task, normalised, mode):
    """(mu_L, tau_L) and logits of the loaded model equal the NumPy construction to float64
    round-off (module docstring). Fails if any weight, mask, the 1/s skip or the readout differs."""
    d, n, L = 3, 12, 8
    kernel = KERNELS[task](d)
    X, Y, xq = _instance(d, n)
    eta = _safe_eta(kernel, X, normalised)
    hw = handset_weights(d, L, eta, NOISE_VAR, kernel, normalised=normalised)
    mu_np, tau_np = tf_forward(hw, X, Y, xq)
    edges = bin_edges(-4.0, 4.0, 16)
    cfg = ModelSpec(
        score=hw.score,
        L=L,
        C=16,
        mode=mode,
        normalised=normalised,
        amp_init=hw.alpha2 if task == "rbf" else 1.0,
    )
    model = load_handset(PFNTransformer(cfg, torch.as_tensor(edges), prior(d)).double(), hw)
    out = model(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    np.testing.assert_allclose(out.mu.detach().numpy(), mu_np, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(out.tau.detach().numpy(), tau_np, rtol=RTOL, atol=ATOL)
    assert np.all(tau_np > cfg.tau_min)  # psi head is exact here
    logits_np = logits_from_natural(psi_gaussian(mu_np, tau_np), edges)
    # logits are O(xi^2 / tau) ~ 1e2: the same relative round-off gives atol 1e-10 * 1e2.
    np.testing.assert_allclose(out.logits.detach().numpy(), logits_np, rtol=RTOL, atol=1e-8)
    dense = model.forward_dense(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    np.testing.assert_allclose(dense.mu.detach().numpy(), mu_np, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(dense.tau.detach().numpy(), tau_np, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("task, normalised", CASES, ids=["BLR-TF", "RBF-TF", "RBF-TFpr"])
def test_handset_model_converges_to_exact_ppd(task, normalised):
    """With an admissible step and enough layers the loaded model returns the exact GP moments
    (gp.posterior_predictive, Cholesky): thm:TFdoPPD for TF, eqn:recursion prec for TF^pr, whose
    first layer stays unnormalised (docs/design.md). Tolerance 1e-6: L is chosen from the measured
    contraction factor rho = max |1 - eta lambda| of these draws (0.991-0.995, so a few thousand
    layers) so that rho^(L-1) <= 1e-9, a factor 1e3 below the tolerance to absorb the O(cond) gap
    between the iterate error and the moment error. Fails if the first layer were normalised (the
    k_x row would be constant) or the skip scaling were missing."""
    d, n = 2, 6
    kernel = KERNELS[task](d)
    X, Y, xq = _instance(d, n, seed=3)
    eta = _safe_eta(kernel, X, normalised)
    rho = _contraction(kernel, X, normalised, eta)
    L = int(np.ceil(np.log(1e-9) / np.log(rho))) + 1
    hw = handset_weights(d, L, eta, NOISE_VAR, kernel, normalised=normalised)
    cfg = ModelSpec(
        score=hw.score, L=L, C=8, mode="learnable", normalised=normalised, amp_init=hw.alpha2
    )
    model = load_handset(
        PFNTransformer(cfg, torch.linspace(-4, 4, 9, dtype=torch.float64), prior(d)).double(), hw
    )
    with torch.no_grad():
        out = model(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    mu, tau = posterior_predictive(kernel, X, Y, xq[:, None, :], NOISE_VAR)
    np.testing.assert_allclose(out.mu.numpy(), np.ravel(mu), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.tau.numpy(), np.ravel(tau), rtol=1e-6, atol=1e-6)


def test_load_handset_rejects_mismatch():
    """Wrong depth, a theory-mode score that cannot hold separate step sizes, and entries outside
    supp-eqn:weights raise ValueError naming the weights."""
    d = 2
    hw = handset_weights(d, 4, 0.05, NOISE_VAR, RBFKernel(1.3, 0.7))
    edges = torch.linspace(-4, 4, 9, dtype=torch.float64)
    with pytest.raises(ValueError, match="weights"):
        load_handset(PFNTransformer(ModelSpec(score="rbf", L=5, C=8), edges, prior(d)), hw)
    with pytest.raises(ValueError, match="weights"):  # alpha^2 != 1, tied step
        load_handset(
            PFNTransformer(ModelSpec(score="softmax", L=4, C=8, mode="theory"), edges, prior(d)), hw
        )
    V = hw.V.copy()
    V[2, 0, 1] = 0.1  # x row written: not allowed
    bad = {"V": V, "K": hw.K, "Q": hw.Q, "S": hw.S, "W": hw.W}
    with pytest.raises(ValueError, match="weights"):
        load_handset(PFNTransformer(ModelSpec(score="rbf", L=4, C=8), edges, prior(d)), bad)


# ----------------------------------------------------------------------------------------------
# fast == dense, outputs and gradients
# ----------------------------------------------------------------------------------------------

FAST_CASES = [
    ("linear", False, "learnable", "psi", False),
    ("linear", False, "theory", "mlp", False),
    ("linear", True, "learnable", "psi", False),
    ("rbf", False, "learnable", "psi", False),
    ("rbf", True, "learnable", "psi", False),
    ("rbf", True, "theory", "mlp", False),
    ("rbf", False, "theory", "psi", True),
    ("rbf", True, "learnable", "mlp", True),
    ("softmax", False, "learnable", "psi", False),
    ("softmax", True, "learnable", "psi", False),
    ("softmax", True, "theory", "psi", True),
]


def _perturbed_model(score, normalised, mode, head, shared, d=3, L=5, seed=0):
    cfg = ModelSpec(
        score=score,
        L=L,
        C=8,
        mode=mode,
        normalised=normalised,
        head=head,
        shared_scale=shared,
        scale_init=0.8,
        eta_init=0.05,
    )
    model = PFNTransformer(cfg, torch.linspace(-3, 3, 9, dtype=torch.float64), prior(d)).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # off the theory values
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def _loss_and_grads(model, fn, X, Y, xq):
    out = fn(X, Y, xq)
    loss = torch.log_softmax(out.logits, -1)[:, 2].sum() + out.mu.sum() + out.tau.sum()
    return out, torch.autograd.grad(loss, list(model.parameters()))


@pytest.mark.parametrize("score, normalised, mode, head, shared", FAST_CASES)
def test_fast_equals_dense_outputs_and_gradients(score, normalised, mode, head, shared):
    """Fast forward/backward == dense eqn:tabPFN attn (float64 round-off, module docstring), for
    every score, TF and TF^pr, both modes and heads, per-layer and shared scales. Fails if the fast
    path drops a channel, mis-masks, or its custom backward is wrong."""
    model = _perturbed_model(score, normalised, mode, head, shared)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(4, 9, 3, generator=g, dtype=torch.float64) / 3**0.5
    Y = torch.randn(4, 9, generator=g, dtype=torch.float64)
    xq = torch.randn(4, 3, generator=g, dtype=torch.float64) / 3**0.5
    fast, g_fast = _loss_and_grads(model, model.forward, X, Y, xq)
    dense, g_dense = _loss_and_grads(model, model.forward_dense, X, Y, xq)
    for a, b in ((fast.logits, dense.logits), (fast.mu, dense.mu), (fast.tau, dense.tau)):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)
    for (name, _), a, b in zip(model.named_parameters(), g_fast, g_dense, strict=True):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL, msg=name)


@pytest.mark.parametrize("score", ["rbf", "softmax"])
def test_chunked_and_recomputed_kernel_paths_agree(score, monkeypatch):
    """Chunk size 1 instance and recomputing the kernel in backward give the same outputs and
    gradients as one chunk with the kernel kept (only the evaluation order changes). Fails if a
    chunk boundary or the recomputation is wrong."""
    model = _perturbed_model(score, True, "learnable", "psi", False)
    X, Y, xq = (torch.as_tensor(a) for a in _instance(3, 9, B=5, seed=2))
    ref, g_ref = _loss_and_grads(model, model.forward, X, Y, xq)
    monkeypatch.setattr(attention, "CHUNK_ELEMENTS", 1)
    monkeypatch.setattr(model_mod, "SAVE_KERNEL_BUDGET_BYTES", 0)
    out, g_out = _loss_and_grads(model, model.forward, X, Y, xq)
    torch.testing.assert_close(out.logits, ref.logits, rtol=RTOL, atol=ATOL)
    for a, b in zip(g_out, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)


def test_dense_transformer_shares_state_with_fast():
    """DenseTransformer loads the fast model's state dict and returns the same output; in float32
    the two differ only by float32 round-off (rtol 1e-4 over L = 5 layers)."""
    fast = _perturbed_model("rbf", True, "learnable", "psi", False).float()
    dense = DenseTransformer(fast.config, fast.edges, prior(fast.d))
    dense.load_state_dict(fast.state_dict())
    X, Y, xq = (torch.as_tensor(a, dtype=torch.float32) for a in _instance(3, 9, B=5, seed=4))
    torch.testing.assert_close(dense(X, Y, xq).logits, fast(X, Y, xq).logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("score", ["rbf", "softmax"])
def test_custom_backward_gradcheck(score):
    """torch.autograd.gradcheck (finite differences, float64) of the custom kernel-attention
    backward, generic and scaled forms. Fails on any wrong gradient term."""
    g = torch.Generator().manual_seed(5)
    q = (0.5 * torch.randn(2, 5, 2, generator=g, dtype=torch.float64)).requires_grad_()
    v = torch.randn(2, 4, 2, generator=g, dtype=torch.float64, requires_grad=True)
    s = torch.tensor([0.7, 1.2], dtype=torch.float64, requires_grad=True)
    for normalised in (False, True):
        assert torch.autograd.gradcheck(
            lambda q, v, normalised=normalised: attention.kernel_attention(
                q, q[:, :4], v, score, normalised
            )[0],
            (q, v),
        )
        assert torch.autograd.gradcheck(
            lambda s, v, normalised=normalised: attention.scaled_kernel_attention(
                q.detach(), s, v, score, normalised
            )[0],
            (s, v),
        )


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
def test_budget_keeps_some_layers_and_recomputes_the_rest(score, normalised, monkeypatch):
    """A kernel budget that holds some layers but not all gives the same outputs and gradients as
    keeping every kernel (float64 round-off, module docstring). Fails if a kept kernel were
    stale or the budget bookkeeping mixed up layers."""
    model = _perturbed_model(score, normalised, "learnable", "psi", False, L=6)
    X, Y, xq = (torch.as_tensor(a) for a in _instance(3, 9, B=5, seed=3))
    ref, g_ref = _loss_and_grads(model, model.forward, X, Y, xq)
    monkeypatch.setattr(model_mod, "SAVE_KERNEL_BUDGET_BYTES", 2 * 5 * 10 * 9 * 8)  # two layers
    out, g_out = _loss_and_grads(model, model.forward, X, Y, xq)
    torch.testing.assert_close(out.logits, ref.logits, rtol=RTOL, atol=ATOL)
    for a, b in zip(g_out, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("score", ["rbf", "softmax"])
@pytest.mark.parametrize("normalised", [False, True])
def test_shared_kernel_evaluation_path(score, normalised, monkeypatch):
    """Without autograd and with equal per-layer scales (theory mode at init, hand-set weights) the
    kernel is computed once per instance chunk and reused by every solver layer; its outputs equal
    the per-layer path (run with autograd on) and the dense reference to float64 round-off, also
    when the batch is split into chunks of 2 instances. Fails if a chunk or layer reused the wrong
    kernel or normaliser."""
    cfg = ModelSpec(
        score=score, L=6, C=8, mode="theory", normalised=normalised, scale_init=0.8, eta_init=0.05
    )
    model = PFNTransformer(cfg, torch.linspace(-3, 3, 9, dtype=torch.float64), prior(3)).double()
    with torch.no_grad():
        model.scale[0] += 0.1  # the first layer's scale may differ
    X, Y, xq = (torch.as_tensor(a) for a in _instance(3, 9, B=5, seed=6))
    per_layer = model(X, Y, xq)  # autograd on: per-layer kernels
    monkeypatch.setattr(model_mod, "SHARED_KERNEL_CHUNK_ELEMENTS", 2 * 10 * 9)
    with torch.no_grad():
        shared = model(X, Y, xq)
        dense = model.forward_dense(X, Y, xq)
    for ref in (per_layer, dense):
        for a, b in ((shared.logits, ref.logits), (shared.mu, ref.mu), (shared.tau, ref.tau)):
            torch.testing.assert_close(a, b.detach(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "score, normalised", [("rbf", True), ("softmax", False), ("linear", False)]
)
def test_same_seed_same_numbers(score, normalised):
    """Determinism: two models built and trained for two Adam steps from the same seed on batches
    from the same generator seed give bit-identical parameters and outputs (float32, the training
    dtype)."""
    from pfntheory.nn.priors import sample_batch

    def run():
        torch.manual_seed(0)
        cfg = ModelSpec(score=score, L=4, C=16, normalised=normalised, scale_init=1.25)
        model = PFNTransformer(cfg, torch.linspace(-3, 3, 17, dtype=torch.float64), prior(2))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(3)
        task = TaskSpec(kind="blr" if score == "linear" else "rbf", d=2)
        for _ in range(2):
            bt = sample_batch(task, 8, 20, g, interval=(-3.0, 3.0))
            loss = torch.log_softmax(model(bt.X, bt.Y, bt.xq).logits, -1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            return [p.clone() for p in model.parameters()], model(bt.X, bt.Y, bt.xq).logits

    (p1, o1), (p2, o2) = run(), run()
    assert torch.equal(o1, o2)
    assert all(torch.equal(a, b) for a, b in zip(p1, p2, strict=True))
