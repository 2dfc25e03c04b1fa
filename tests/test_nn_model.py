"""Unit tests of pfntheory.nn: shapes, masks, normalisation, the head, validation, device logic."""

import numpy as np
import pytest
import torch

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.maths.discretize import bin_edges
from pfntheory.maths.readout import logits_from_natural, psi_gaussian
from pfntheory.nn import (
    DenseTransformer,
    PFNTransformer,
    default_eta,
    kernel_attention,
    masked_attention_dense,
    positive_tau,
    scaled_kernel_attention,
    score_matrix,
    select_device,
)

SCORES = ["linear", "rbf", "softmax"]
EDGES = torch.as_tensor(bin_edges(-3.0, 3.0, 8), dtype=torch.float64)


def prior(d: int, noise_var: float = DEFAULT_NOISE_VAR) -> TaskSpec:
    """The prior node a model takes its ``d`` and ``sigma^2`` from."""
    return TaskSpec(kind="rbf", d=d, noise_var=noise_var)


def _data(B=4, n=6, d=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, n, d, generator=g, dtype=dtype) / d**0.5
    Y = torch.randn(B, n, generator=g, dtype=dtype)
    xq = torch.randn(B, d, generator=g, dtype=dtype) / d**0.5
    return X, Y, xq


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("normalised", [False, True], ids=["TF", "TFpr"])
@pytest.mark.parametrize("mode", ["theory", "learnable"])
@pytest.mark.parametrize("head", ["psi", "mlp"])
def test_output_shapes_and_finite(score, normalised, mode, head):
    """Logits (B, C), mu and tau (B,), finite, in the model's dtype. Fails on any shape slip."""
    cfg = ModelSpec(
        score=score,
        L=3,
        C=8,
        mode=mode,
        normalised=normalised,
        head=head,
        scale_init=0.7,
        eta_init=0.05,
    )
    model = PFNTransformer(cfg, EDGES, prior(3))
    X, Y, xq = _data(dtype=torch.float32)
    out = model(X, Y, xq)
    assert out.logits.shape == (4, 8) and out.mu.shape == (4,) and out.tau.shape == (4,)
    assert out.logits.dtype == torch.float32
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.tau).all()


def test_parameter_sets_of_the_modes():
    """theory: only K=Q diagonals, step sizes (and amp, drift steps for rbf) learn; W, sigma^2, s1,
    s2 fixed. learnable: every non-zero entry of supp-eqn:weights. Fails if a mode frees or fixes
    the wrong weights."""
    d, L = 3, 5
    names = lambda m: {k: tuple(p.shape) for k, p in m.named_parameters()}  # noqa: E731
    lin = names(PFNTransformer(ModelSpec(score="linear", L=L, C=8, mode="theory"), EDGES, prior(d)))
    assert lin == {"scale": (L, d), "eta": (L - 1,)}
    rbf = names(PFNTransformer(ModelSpec(score="rbf", L=L, C=8, mode="theory"), EDGES, prior(d)))
    assert rbf == {"scale": (L, d), "amp": (), "eta": (L - 1,), "eta_drift": (L - 1,)}
    learn = names(PFNTransformer(ModelSpec(score="rbf", L=L, C=8), EDGES, prior(d)))
    assert learn == {
        "scale": (L, d),
        "amp": (),
        "V": (L - 1, 4),
        "S": (L - 1, 2),
        "W": (4,),
        "head.s": (2,),
    }
    shared = names(
        PFNTransformer(ModelSpec(score="rbf", L=L, C=8, shared_scale=True), EDGES, prior(d))
    )
    assert shared["scale"] == (1, d)


@pytest.mark.parametrize("mode", ["theory", "learnable"])
def test_every_parameter_gets_a_gradient(mode):
    """A loss on the logits reaches every trainable parameter (non-zero gradient). Fails if a
    parameter is disconnected from the output."""
    cfg = ModelSpec(score="rbf", L=3, C=8, mode=mode, eta_init=0.05)
    model = PFNTransformer(cfg, EDGES, prior(2)).double()
    X, Y, xq = _data(d=2)
    out = model(X, Y, xq)
    (torch.log_softmax(out.logits, -1)[:, 3].sum() + out.mu.sum() + out.tau.sum()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.count_nonzero(p.grad) > 0, name


def test_learnable_initialised_at_theory():
    """Both modes start from the same supp-eqn:weights, so their outputs coincide at init. Fails if
    the initialisations drift apart."""
    X, Y, xq = _data(d=2)
    outs = []
    for mode in ("theory", "learnable"):
        cfg = ModelSpec(score="rbf", L=4, C=8, mode=mode, amp_init=1.7, eta_init=0.03)
        outs.append(PFNTransformer(cfg, EDGES, prior(2)).double()(X, Y, xq))
    # the initial values are stored in float32 (default dtype) before .double(); theory and
    # learnable round different products (eta, eta*sigma^2), so they agree to float32 eps ~ 1e-7.
    torch.testing.assert_close(outs[0].logits, outs[1].logits, rtol=1e-6, atol=1e-6)


def test_default_eta_documented_values():
    """eta_init=None resolves to 1/(1+sigma^2) for TF^pr and 0.005 for TF (sigma^2 the prior's)."""
    assert default_eta(ModelSpec(score="rbf", L=2, C=2, normalised=True), prior(1)) == 1 / 1.04
    assert default_eta(ModelSpec(score="rbf", L=2, C=2), prior(1)) == 0.005
    assert default_eta(ModelSpec(score="rbf", L=2, C=2, eta_init=0.3), prior(1)) == 0.3
    model = PFNTransformer(ModelSpec(score="rbf", L=2, C=8, normalised=True), EDGES, prior(1, 0.25))
    assert float(model.V.detach()[0, 0]) == pytest.approx(1 / 1.25, rel=1e-7)  # float32 storage


# ----------------------------------------------------------------------------------------------
# attention: masks and normalisation
# ----------------------------------------------------------------------------------------------


def _tokens(B=2, dp=5, T=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, dp, T, generator=g, dtype=torch.float64) * 0.5


@pytest.mark.parametrize("score", SCORES)
def test_first_layer_mask_single_key(score):
    """M^(0)_ij = 1{i > n}: column j of Attn is kappa(K z_{n+1}, Q z_j) V z_{n+1} (proof of
    thm:TFdoPPD, Step 1). Fails if any other key leaks in."""
    Z = _tokens()
    B, dp, T = Z.shape
    n = T - 1
    g = torch.Generator().manual_seed(2)
    V, K = (
        torch.randn(dp, dp, generator=g, dtype=torch.float64),
        torch.diag(torch.rand(dp, generator=g, dtype=torch.float64)),
    )
    M0 = torch.zeros(T, T, dtype=torch.float64)
    M0[n] = 1.0
    out, _ = masked_attention_dense(Z, V, K, K, M0, score)
    KZ = (K @ Z).transpose(1, 2)
    kap = score_matrix(KZ[:, n:], KZ, score)[:, 0]  # (B, T)
    expected = (Z[:, :, n] @ V.T).unsqueeze(-1) * kap.unsqueeze(1)  # V z_{n+1} kappa_j
    torch.testing.assert_close(out, expected, rtol=1e-13, atol=1e-14)


# normalised linear attention has no guaranteed non-zero normaliser (sec:generalization restricts
# TF^pr to positive kernels), so it is left out of the mask check.
@pytest.mark.parametrize(
    "score, normalised",
    [("linear", False), ("rbf", False), ("rbf", True), ("softmax", False), ("softmax", True)],
)
def test_solver_mask_equals_key_selection(score, normalised):
    """M_ij = 1{i <= n} in the dense form equals attending over the first n keys in the fast form,
    and the masked-out query token's values do not matter. Fails on a mask/transposition error."""
    Z = _tokens()
    B, dp, T = Z.shape
    n = T - 1
    V = torch.eye(dp, dtype=torch.float64)
    K = torch.diag(torch.tensor([0.9, 1.1, 0.7, 0.0, 0.0], dtype=torch.float64))
    M = torch.zeros(T, T, dtype=torch.float64)
    M[:n] = 1.0
    dense, s_dense = masked_attention_dense(Z, V, K, K, M, score, normalised)
    q = (K @ Z).transpose(1, 2)
    fast, s_fast = kernel_attention(
        q, q[:, :n].contiguous(), Z.transpose(1, 2)[:, :n], score, normalised
    )
    torch.testing.assert_close(fast.transpose(1, 2), dense, rtol=1e-12, atol=1e-13)
    Z2 = Z.clone()
    Z2[:, 3:, n] += 5.0  # value-only rows of the query
    dense2, _ = masked_attention_dense(Z2, V, K, K, M, score, normalised)
    torch.testing.assert_close(dense2[..., :n], dense[..., :n], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("score", ["rbf", "softmax"])
def test_normalised_weights_sum_to_one(score):
    """Attn^na: the weights kappa_ij / s_j of every query sum to 1 (values all ones give ones), and
    s_j is the unnormalised output for the same values. Fails if the normaliser is wrong."""
    X, _, _ = _data(B=3, n=7, d=2)
    v = torch.ones(3, 5, 1, dtype=torch.float64)
    out, s = kernel_attention(X, X[:, :5], v, score, normalised=True)
    torch.testing.assert_close(out, torch.ones_like(out), rtol=1e-14, atol=1e-14)
    raw, none = kernel_attention(X, X[:, :5], v, score, normalised=False)
    assert none is None
    torch.testing.assert_close(raw[..., 0], s, rtol=1e-14, atol=1e-14)
    out2, s2 = scaled_kernel_attention(
        X, torch.tensor([0.8, 1.2], dtype=torch.float64), v, score, normalised=True
    )
    torch.testing.assert_close(out2, torch.ones_like(out2), rtol=1e-14, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# head
# ----------------------------------------------------------------------------------------------


def test_positive_tau_map():
    """Identity on [tau_min, inf); positive, increasing and C^1 below; finite gradients for huge
    tau (no inf*0). Fails if the map clips, jumps, or produces NaN gradients."""
    tmin = 1e-3
    t = torch.tensor(
        [-1e6, -1.0, -1e-3, 0.0, 5e-4, 1e-3, 0.5, 1e6], dtype=torch.float64, requires_grad=True
    )
    p = positive_tau(t, tmin)
    assert torch.all(p > 0) and torch.all(p[1:] > p[:-1])
    torch.testing.assert_close(p[5:], t[5:].detach(), rtol=0, atol=0)
    p.sum().backward()
    assert torch.isfinite(t.grad).all()
    eps = 1e-9
    left = (
        positive_tau(torch.tensor(tmin, dtype=torch.float64), tmin)
        - positive_tau(torch.tensor(tmin - eps, dtype=torch.float64), tmin)
    ) / eps
    assert abs(float(left) - 1.0) < 1e-5  # slope 1 from below


def test_psi_head_matches_numpy_logits():
    """Psi head = Xi (psi_1, psi_2) + log Delta_c of pfntheory.maths.discretize on a non-uniform
    grid (float64 round-off). Fails if Xi, psi or log Delta is wrong."""
    edges = np.array([-2.0, -1.2, -0.5, 0.0, 0.3, 1.1, 2.5])
    cfg = ModelSpec(score="rbf", L=1, C=6, mode="theory")
    model = PFNTransformer(cfg, torch.as_tensor(edges), prior(1)).double()
    mu = torch.tensor([0.3, -1.0, 0.0], dtype=torch.float64)
    tau = torch.tensor([0.5, 0.04, 2.0], dtype=torch.float64)
    got = model.head(mu, tau, model.edges).numpy()
    want = logits_from_natural(psi_gaussian(mu.numpy(), tau.numpy()), edges)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(score="cosine"), "score"),
        (dict(mode="free"), "mode"),
        (dict(head="conv"), "head"),
        (dict(C=1), "C"),
        (dict(L=0), "L"),
        (dict(d=0), "d"),
        (dict(mlp_width=0), "mlp_width"),
        (dict(noise_var=0.0), "noise_var"),
        (dict(eta_init=-0.1), "eta_init"),
        (dict(scale_init=float("nan")), "scale_init"),
        (dict(tau_min=0.0), "tau_min"),
        (dict(L=2.5), "L"),
    ],
)
def test_bad_config_raises_naming_argument(kwargs, name):
    """Each bad field of the model, or of the prior it takes ``d`` and ``sigma^2`` from, raises
    ValueError naming it."""
    base, task = dict(score="rbf", L=2, C=4), dict(d=2)
    for k, v in kwargs.items():
        (task if k in ("d", "noise_var") else base)[k] = v
    with pytest.raises(ValueError, match=name):
        PFNTransformer(ModelSpec(**base), torch.linspace(0, 1, 5), TaskSpec(kind="rbf", **task))


def test_bad_edges_and_inputs_raise():
    """Wrong edges and wrong input shapes raise ValueError naming the argument."""
    cfg = ModelSpec(score="rbf", L=2, C=4)
    with pytest.raises(ValueError, match="edges"):
        PFNTransformer(cfg, torch.linspace(0, 1, 4), prior(2))  # C + 1 = 5 needed
    with pytest.raises(ValueError, match="edges"):
        PFNTransformer(cfg, torch.tensor([0.0, 1.0, 0.5, 2.0, 3.0]), prior(2))  # not increasing
    with pytest.raises(ValueError, match="config"):
        PFNTransformer({"score": "rbf"}, torch.linspace(0, 1, 5), prior(2))
    model = PFNTransformer(cfg, torch.linspace(0, 1, 5), prior(2))
    X, Y, xq = _data(d=2, dtype=torch.float32)
    for args, name in [
        ((X[0], Y, xq), "X"),
        ((X, Y[:, :-1], xq), "Y"),
        ((X, Y, xq[:2]), "xq"),
        ((X[..., :1], Y, xq), "X"),
        ((X, Y[0], xq), "Y"),
        ((X[:, :0], Y[:, :0], xq), "X"),
    ]:
        with pytest.raises(ValueError, match=name):
            model(*args)


def test_theory_tied_step_needs_unit_amp():
    """Theory mode with one tied step (linear/softmax) cannot fold alpha^2 != 1 into V and S."""
    with pytest.raises(ValueError, match="amp_init"):
        PFNTransformer(
            ModelSpec(score="linear", L=2, C=8, mode="theory", amp_init=2.0), EDGES, prior(2)
        )


# ----------------------------------------------------------------------------------------------
# device logic (no GPU required)
# ----------------------------------------------------------------------------------------------


def test_select_device_logic():
    """'auto' picks CUDA exactly when available; explicit CUDA without CUDA and unknown
    specs raise."""
    assert select_device("auto", cuda_available=True) == torch.device("cuda")
    assert select_device("auto", cuda_available=False) == torch.device("cpu")
    assert select_device("cpu", cuda_available=True) == torch.device("cpu")
    assert select_device("cuda:1", cuda_available=True) == torch.device("cuda:1")
    with pytest.raises(ValueError, match="device"):
        select_device("cuda", cuda_available=False)
    with pytest.raises(ValueError, match="device"):
        select_device("tpu", cuda_available=True)
    with pytest.raises(ValueError, match="device"):
        select_device(3)


def test_model_runs_on_the_selected_device():
    """The model and its outputs live on select_device('auto'): CUDA when this machine has it, else
    CPU. Inputs on the CPU are moved to the model's device. Runs either way (no skip)."""
    dev = select_device("auto")
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    model = PFNTransformer(ModelSpec(score="rbf", L=3, C=8), EDGES, prior(2)).to(dev)
    X, Y, xq = _data(d=2, dtype=torch.float32)
    out = model(X, Y, xq)
    assert out.logits.device.type == dev.type
    ref = DenseTransformer(model.config, EDGES, prior(2)).to(dev)
    ref.load_state_dict(model.state_dict())
    torch.testing.assert_close(ref(X, Y, xq).logits, out.logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("which", ["X", "Y", "xq"])
def test_non_finite_inputs_raise_naming_argument(which, bad):
    """NaN/inf in any model input raises ValueError naming it (no NaN in, NaN logits out), in the
    fast and the dense forward."""
    cfg = ModelSpec(score="rbf", L=3, C=4)
    X, Y, xq = _data(d=2, dtype=torch.float32)
    args = {"X": X.clone(), "Y": Y.clone(), "xq": xq.clone()}
    args[which].view(-1)[1] = bad
    for cls in (PFNTransformer, DenseTransformer):
        model = cls(cfg, torch.linspace(0, 1, 5), prior(2))
        with pytest.raises(ValueError, match=f"^{which} contains NaN or infinite"):
            model(args["X"], args["Y"], args["xq"])


def test_overflow_in_the_cast_raises():
    """A float64 input finite only in float64 (1e300) overflows the float32 model: refused."""
    model = PFNTransformer(ModelSpec(score="rbf", L=2, C=4), torch.linspace(0, 1, 5), prior(2))
    X, Y, xq = _data(d=2, dtype=torch.float64)
    Y = Y.clone()
    Y[0, 0] = 1e300
    with pytest.raises(ValueError, match="Y contains NaN or infinite"):
        model(X, Y, xq)


def test_complex_input_refused():
    model = PFNTransformer(ModelSpec(score="rbf", L=2, C=4), torch.linspace(0, 1, 5), prior(2))
    X, Y, xq = _data(d=2, dtype=torch.float64)
    with pytest.raises(ValueError, match="X must be real"):
        model(X.to(torch.complex128), Y, xq)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(d=10**6), "MAX_DIM"),
        (dict(d=5000, L=32), "MAX_ELEMENTS"),
        (dict(head="mlp", mlp_width=10**6, C=1000), "MAX_ELEMENTS"),
    ],
)
def test_config_sizes_refused_before_allocating(kwargs, match):
    """Sizes beyond the stated limits (pfntheory.base._checks.MAX_DIM, MAX_ELEMENTS) are refused by
    the prior (``d``) and the model (:meth:`ModelSpec.check_size`), before any parameter is
    allocated."""
    base, d = dict(score="rbf", L=2, C=4), kwargs.get("d", 2)
    base.update({k: v for k, v in kwargs.items() if k != "d"})
    edges = torch.linspace(0, 1, base["C"] + 1)
    with pytest.raises(ValueError, match=match):
        PFNTransformer(ModelSpec(**base), edges, TaskSpec(kind="rbf", d=d))


def test_dense_kernel_size_refused(monkeypatch):
    """The dense forward refuses a (B, n+1, n+1) matrix beyond MAX_ELEMENTS before allocating it."""
    import pfntheory.nn.model as model_mod

    monkeypatch.setattr(model_mod, "MAX_ELEMENTS", 100)
    cfg = ModelSpec(score="rbf", L=2, C=4)
    X, Y, xq = _data(d=2, dtype=torch.float32)
    with pytest.raises(ValueError, match="MAX_ELEMENTS"):
        DenseTransformer(cfg, torch.linspace(0, 1, 5), prior(2))(X, Y, xq)
    with pytest.raises(ValueError, match="MAX_ELEMENTS"):
        PFNTransformer(
            ModelSpec(score="rbf", L=2, C=4, shared_scale=True), torch.linspace(0, 1, 5), prior(2)
        )(X, Y, xq)
