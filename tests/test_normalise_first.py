"""``ModelSpec.normalise_first``: TF^pr with its first layer normalised too (the reading of the
authors' public code; docs/design.md, "Known ambiguities"), and the exact side of it
(:mod:`pfntheory.maths.first_layer`).

* Run identity: a late field. At its default it enters no run's name, hash, ``spec.json`` record
  or ``config.json`` reading (every committed run keeps its directory); set, the name reads
  ``pr-nf-`` and the hash changes. Mixed specs (``normalise_first`` without TF^pr, or with the
  mixture heads) are refused, and the trainer refuses to resume one reading in the other's
  directory.
* The forward: the channel form writes ``amp`` into row ``k`` (the one key's normalised weight is
  1), the dense reference divides the score by itself; both agree in outputs and gradients to
  float64 round-off (``rtol = atol = 1e-10``, as tests/test_nn_parity.py: the same sums in another
  order, ``< 1e-11`` here), and loading the hand-set weights reproduces
  ``construction.tf_forward(..., normalise_first_layer=True)``.
* The limit of the variance channel against independent references: scikit-learn's GP posterior
  mean of the constant data ``c`` and 4000 plain Richardson steps; the least worst-case error of an
  affine readout against a linear program.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize
import torch

from pfntheory.infra import runs
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.tree import RunSpec
from pfntheory.maths import first_layer as fl
from pfntheory.maths import richardson as rich
from pfntheory.maths.construction import handset_weights, tf_forward
from pfntheory.maths.kernels import ARDRBFKernel, RBFKernel
from pfntheory.nn.handset import load_handset
from pfntheory.nn.model import DenseTransformer, PFNTransformer
from pfntheory.nn.train import train

RUNS = Path(__file__).resolve().parents[1] / "reports" / "runs"
RTOL = ATOL = 1e-10
NOISE_VAR = 0.04


def _committed(n: int = 6) -> list[Path]:
    """Committed run directories of TF^pr (the reading the field splits), a few per folder."""
    dirs = sorted(RUNS.glob("supp_exp2_d8_budget/*/config.json"))[:n]
    dirs += sorted(RUNS.glob("fig_exp2_1/*-pr-*/config.json"))[:2]
    dirs += sorted(RUNS.glob("fig_exp1/*/config.json"))[:2]
    assert len(dirs) >= 6, "no committed runs to check"
    return [p.parent for p in dirs]


# --------------------------------------------------------------------------------------------------
# run identity
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_dir", _committed(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_default_keeps_every_committed_name(run_dir):
    """A committed config.json (written before the field) reads with ``normalise_first=False``,
    and the tree's name and hash are those of the directory: the field at its default is not in
    the identity (the ``spec.json`` records of every committed run: tests/test_run_identity.py,
    where it is a late field like ``mixture``). Fails if the field entered the hash at its default
    (every committed run would be renamed)."""
    doc = json.loads((run_dir / runs.CONFIG).read_text())
    assert "normalise_first" not in doc["model"]
    spec = RunSpec.from_config(doc)
    assert spec.model.normalise_first is False
    assert "normalise_first" not in spec.identity()["model"]
    assert spec.name == run_dir.name


def test_set_it_enters_the_name_and_the_hash():
    """``normalise_first=True`` changes the model slug (``pr-nf-``) and the hash, is recorded in
    the identity, and round-trips through config.json; the same spec at its default keeps its
    committed name. Fails if two readings could share a run directory."""
    run_dir = _committed()[0]
    ours = RunSpec.from_config(json.loads((run_dir / runs.CONFIG).read_text()))
    code = dataclasses.replace(ours, model=dataclasses.replace(ours.model, normalise_first=True))
    assert ours.name == run_dir.name and "-pr-learn-" in ours.name
    assert "-pr-nf-learn-" in code.name and code.name.rsplit("-", 1)[1] != ours.name[-10:]
    assert code.identity()["model"]["normalise_first"] is True
    assert RunSpec.from_config(code.to_config()) == code
    assert code.to_config()["model"]["normalise_first"] is True


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(normalised=False, normalise_first=True), "needs normalised=True"),
        (dict(normalised=True, normalise_first=True, mixture=True, L=2), "mixture=False"),
        (dict(normalised=True, normalise_first="yes"), "normalise_first must be a bool"),
    ],
)
def test_a_mixed_model_spec_is_refused(kw, match):
    """The first layer normalised belongs to TF^pr (the public code normalises every layer or
    none); the mixture heads have no such variant. Each refusal names the argument."""
    with pytest.raises(ValueError, match=match):
        ModelSpec(score="rbf", **{"L": 3, "C": 8, **kw})


def _tiny(normalise_first: bool, **kw) -> RunSpec:
    base = dict(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(
            score="rbf", L=3, C=8, normalised=True, tau_min=0.02, normalise_first=normalise_first
        ),
        n_min=4,
        n_max=8,
        steps=6,
        lr=1e-2,
        batch_size=8,
        interval=(-2.0, 2.0),
    )
    return RunSpec(**{**base, **kw})


class _Kill(Exception):
    pass


def _kill_at(k):
    def cb(step, loss):
        if step == k:
            raise _Kill

    return cb


def test_the_code_reading_trains_resumes_and_is_refused_in_the_other_directory(tmp_path):
    """A tiny run in the public code's reading trains, and killed after step 5 (last checkpoint at
    step 3) resumes to the weights of an uninterrupted run, bit for bit; its scale of the first
    layer gets no gradient (the layer no longer reads it) and keeps its initial value. The trainer
    refuses to continue either reading in the other's directory, naming the field. Fails if the
    variant's forward were not a function of (seed, step) or the two readings shared a record."""
    code, ours = _tiny(True), _tiny(False)
    kw = dict(device="cpu", progress=False, checkpoint_every=3)
    a = train(code, tmp_path / "a", **kw)
    with pytest.raises(_Kill):
        train(code, tmp_path / "b", callback=_kill_at(5), **kw)
    b = train(code, tmp_path / "b", **kw)
    wa, wb = runs.load_torch(a / runs.WEIGHTS), runs.load_torch(b / runs.WEIGHTS)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert torch.all(wa["scale"][0] == code.model.scale_init)  # the first layer's K^(0): unused
    assert not torch.all(wa["scale"][1:] == code.model.scale_init)  # the solver layers': trained
    with pytest.raises(ValueError, match=r"differs in model\.normalise_first"):
        train(ours, a, **kw)  # our reading in the code's directory
    train(ours, tmp_path / "o", **kw)
    with pytest.raises(ValueError, match=r"differs in model\.normalise_first"):
        train(code, tmp_path / "o", **kw)  # and the code's in ours


def test_compare_to_construction_reads_the_variant(tmp_path):
    """``compare_to_construction`` of a theory-mode run in the public code's reading that has not
    moved (lr ~ 0) sets it beside the construction of the same reading: the readouts agree to
    float32 round-off (1e-4, as tests/test_train.py), and the document records the variant.
    Fails if the solver reference used ``v = k_x`` (the other reading: an O(0.1) difference)."""
    from pfntheory.nn.evaluate import compare_to_construction

    eta = 0.01
    spec = _tiny(
        True,
        steps=1,
        lr=1e-30,
        task=TaskSpec(kind="rbf", d=2, noise_var=0.04),
        model=ModelSpec(
            score="rbf",
            L=4,
            C=8,
            mode="theory",
            normalised=True,
            normalise_first=True,
            scale_init=1 / 0.8,
            eta_init=eta,
        ),
    )
    rd = train(spec, tmp_path / "r", device="cpu", progress=False)
    doc = compare_to_construction(rd, n=6, n_instances=5, eta=eta)
    rms = doc["readout_rms"]
    assert doc["normalise_first"] is True
    assert rms["trained_vs_solver_mu"] < 1e-4 and rms["trained_vs_solver_tau"] < 1e-4, rms


# --------------------------------------------------------------------------------------------------
# the forward: channel form, dense reference, hand-set construction
# --------------------------------------------------------------------------------------------------

CASES = [
    ("rbf", "learnable", "psi"),
    ("rbf", "theory", "psi"),
    ("rbf", "theory_shared", "psi"),
    ("rbf", "learnable", "mlp"),
    ("softmax", "learnable", "psi"),
]


def _model(score, mode, head, normalise_first=True, d=3, L=5, seed=0):
    cfg = ModelSpec(
        score=score,
        L=L,
        C=8,
        mode=mode,
        normalised=True,
        normalise_first=normalise_first,
        head=head,
        mlp_width=8,
        scale_init=0.8,
        eta_init=0.05,
    )
    edges = torch.linspace(-3, 3, 9, dtype=torch.float64)
    task = TaskSpec(kind="rbf", d=d, noise_var=NOISE_VAR)
    model = PFNTransformer(cfg, edges, task).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # off the theory values, so that every entry matters
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def _batch(d=3, n=9, B=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, n, d, generator=g, dtype=torch.float64) / d**0.5
    Y = torch.randn(B, n, generator=g, dtype=torch.float64)
    xq = torch.randn(B, d, generator=g, dtype=torch.float64) / d**0.5
    return X, Y, xq


@pytest.mark.parametrize("score, mode, head", CASES, ids=["-".join(c) for c in CASES])
def test_channel_form_equals_the_dense_reference(score, mode, head):
    """The channel form (row ``k`` written as ``amp``; the fused, per-layer or shared-kernel solver
    as the model chooses) and the literal dense forward (``Attn^na`` on eqn:1st attn's one key)
    give the same mu, tau, logits and gradients of every parameter, with autograd on and off; and
    the variant differs from our reading by O(0.1). Fails if the dense path did not normalise the
    first layer, the channel form wrote another value, or a gradient went astray."""
    model = _model(score, mode, head)
    task = TaskSpec(kind="rbf", d=3, noise_var=NOISE_VAR)
    dense = DenseTransformer(model.config, model.edges, task).double()
    dense.load_state_dict(model.state_dict())
    X, Y, xq = _batch()
    a, b = model(X, Y, xq), dense(X, Y, xq)
    for x, y in ((a.mu, b.mu), (a.tau, b.tau), (a.logits, b.logits)):
        torch.testing.assert_close(x, y, rtol=RTOL, atol=ATOL)
    # the MLP head reads the query token, not the readout W: W has no gradient there
    ga = torch.autograd.grad(
        a.logits.logsumexp(-1).sum(), list(model.parameters()), allow_unused=True
    )
    gb = torch.autograd.grad(
        b.logits.logsumexp(-1).sum(), list(dense.parameters()), allow_unused=True
    )
    for (name, _), x, y in zip(model.named_parameters(), ga, gb, strict=True):
        assert (x is None) == (y is None) == (head == "mlp" and name == "W"), name
        if x is not None:
            torch.testing.assert_close(x, y, rtol=RTOL, atol=ATOL, msg=name)
    with torch.no_grad():
        c = model(X, Y, xq)
    torch.testing.assert_close(c.tau, a.tau.detach(), rtol=RTOL, atol=ATOL)
    ours = _model(score, mode, head, normalise_first=False)
    with torch.no_grad():
        assert float((ours(X, Y, xq).tau - c.tau).abs().max()) > 1e-2


def test_loaded_construction_equals_the_numpy_one():
    """The hand-set TF^pr weights (supp-eqn:weights, RBF alpha = 1.3, ell = 0.7) loaded into the
    variant reproduce ``construction.tf_forward(..., normalise_first_layer=True)``: (mu_L, tau_L)
    to float64 round-off, fast and dense. Fails if the torch variant normalised another layer, or
    kept ``k_x`` in row ``k``."""
    d, n, L = 3, 12, 8
    kernel = RBFKernel(alpha=1.3, lengthscale=0.7)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, n, d)) / np.sqrt(d)
    Y = rng.normal(size=(3, n))
    xq = rng.normal(size=(3, d)) / np.sqrt(d)
    G = kernel(X[0])
    eta = 0.45 * rich.admissible_step(G + NOISE_VAR * np.eye(n), rich.jacobi_preconditioner(G))
    hw = handset_weights(d, L, eta, NOISE_VAR, kernel, normalised=True)
    mu_np, tau_np = tf_forward(hw, X, Y, xq, normalise_first_layer=True)
    mu_ours, tau_ours = tf_forward(hw, X, Y, xq)
    assert np.max(np.abs(tau_np - tau_ours)) > 1e-2  # the readings differ here
    for mode in ("theory", "learnable"):
        cfg = ModelSpec(
            score="rbf",
            L=L,
            C=16,
            mode=mode,
            normalised=True,
            normalise_first=True,
            amp_init=hw.alpha2,
        )
        task = TaskSpec(kind="rbf", d=d, noise_var=NOISE_VAR)
        edges = torch.linspace(-4, 4, 17, dtype=torch.float64)
        model = load_handset(PFNTransformer(cfg, edges, task).double(), hw)
        args = tuple(map(torch.as_tensor, (X, Y, xq)))
        for out in (model(*args), model.forward_dense(*args)):
            np.testing.assert_allclose(out.mu.detach().numpy(), mu_np, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(out.tau.detach().numpy(), tau_np, rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------------------------------
# the exact side: the limit, the counterexample, the minimax error
# --------------------------------------------------------------------------------------------------

KERNELS = [RBFKernel(1.0, 0.8), RBFKernel(1.3, 0.5), ARDRBFKernel(0.8, (0.6, 1.1, 0.9))]


@pytest.mark.parametrize("kernel", KERNELS, ids=["rbf", "rbf-alpha", "ard"])
@pytest.mark.parametrize("eps", [0.0, fl.CODE_EPS], ids=["ours", "code"])
def test_the_limit_against_brute_force(kernel, eps):
    """:func:`variance_limit` against two independent computations on a drawn context (n = 10,
    d = 3): the query's ``z_tau`` is scikit-learn's GP posterior mean of the data ``c`` (the
    constant row; ``GaussianProcessRegressor`` with the same kernel, ``alpha = sigma^2``, no
    optimiser, no normalisation), and the context row is the fixed point of 4000 plain Richardson
    steps on ``(G + sigma^2 I) u = G c`` (contraction <= 0.999 per step here, so the iterate is
    exact to ~1e-13 relative). ``tau`` is sklearn's predictive variance plus ``sigma^2``.
    Tolerance 1e-9 relative: two Cholesky solves with condition numbers below 1e3. Fails if the
    limit solved with ``k_x`` (our reading) or left out the ridge."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    rng = np.random.default_rng(7)
    X = rng.normal(size=(10, 3)) / np.sqrt(3)
    x = rng.normal(size=3) / np.sqrt(3)
    lim = fl.variance_limit(kernel, X, x, NOISE_VAR, eps)
    c = fl.first_row(kernel, X, x, eps)
    np.testing.assert_allclose(c[-1], kernel.alpha**2 / (1 + eps), rtol=1e-15, atol=0)
    unit = kernel(np.vstack([X, x]), x[None])[:, 0] / kernel.alpha**2
    np.testing.assert_allclose(c, kernel.alpha**2 * unit / (unit + eps), rtol=1e-15, atol=0)
    ls = getattr(kernel, "lengthscales", None) or kernel.lengthscale
    sk = ConstantKernel(kernel.alpha**2, "fixed") * RBF(ls, "fixed")
    gpr = GaussianProcessRegressor(sk, alpha=NOISE_VAR, optimizer=None, normalize_y=False)
    mean, std = gpr.fit(X, c[:-1]).predict(x[None], return_std=True)
    np.testing.assert_allclose(lim.z_tau, mean[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lim.tau, std[0] ** 2 + NOISE_VAR, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lim.tau_L, NOISE_VAR + c[-1] - lim.z_tau, rtol=1e-15, atol=0)
    G = kernel(X)
    A = G + NOISE_VAR * np.eye(10)
    eta = rich.optimal_step(A)
    assert rich.convergence_factor(A, eta) < 0.999
    u = rich.richardson(A, G @ c[:-1], eta, 4000)
    np.testing.assert_allclose(lim.g_context, u, rtol=1e-9, atol=1e-12)


def _lp_minimax(z, tau) -> float:
    """``min_{a, c} max_i |a + c z_i - tau_i|`` by a linear program (HiGHS): an independent
    computation of :func:`affine_minimax_error` (variables ``a, c, t``; minimise ``t``)."""
    m = len(z)
    A = np.block([[np.ones((m, 1)), z[:, None], -np.ones((m, 1))],
                  [-np.ones((m, 1)), -z[:, None], -np.ones((m, 1))]])  # fmt: skip
    b = np.concatenate([tau, -tau])
    res = scipy.optimize.linprog([0, 0, 1], A_ub=A, b_ub=b, bounds=[(None, None)] * 3)
    assert res.status == 0, res.message
    return float(res.fun)


def test_minimax_error_against_a_linear_program():
    """On 20 random sets of 3 to 8 points (z spread over [0, 1]) the closed form over 3-point
    subsets equals the linear program's optimum to 1e-9 (HiGHS's feasibility tolerance is 1e-7
    relative on O(1) data; measured agreement ~1e-15); on points of an exact line it is 0 to
    round-off, and moving the middle of three points by delta gives delta / 2. Fails if a subset
    were skipped or the line's sign convention were wrong."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        m = int(rng.integers(3, 9))
        z, tau = rng.uniform(0, 1, m), rng.normal(size=m)
        assert fl.affine_minimax_error(z, tau) == pytest.approx(_lp_minimax(z, tau), abs=1e-9)
    z = np.array([0.0, 0.3, 1.0])
    assert fl.affine_minimax_error(z, 2 - 3 * z) < 1e-15
    assert fl.affine_minimax_error(z, 2 - 3 * z + np.array([0, 0.1, 0])) == pytest.approx(0.05)
    assert fl.affine_minimax_error([0.5, 0.5], [0.1, 0.4]) == pytest.approx(0.15)
    with pytest.raises(ValueError, match="channel and target"):
        fl.affine_minimax_error([0.5], [0.1])


def test_bad_arguments_are_refused():
    """A kernel the normalised attention cannot take (linear: no positive score), a query of the
    wrong width, a context spread inside the lengthscale (no second query exists), and a negative
    offset raise errors naming the argument."""
    from pfntheory.maths.kernels import LinearKernel

    X, x = np.zeros((3, 2)), np.zeros(2)
    with pytest.raises(TypeError, match="kernel"):
        fl.first_row(LinearKernel((1.0, 1.0)), X, x)
    with pytest.raises(ValueError, match="x_query"):
        fl.first_row(RBFKernel(), X, np.zeros(3))
    with pytest.raises(ValueError, match="eps"):
        fl.first_row(RBFKernel(), X, x, eps=-1.0)
    with pytest.raises(ValueError, match="a must exceed"):
        fl.readout_counterexample(RBFKernel(1.0, 0.8), NOISE_VAR, a=0.5)
