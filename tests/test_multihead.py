"""The trainable multi-head model (pfntheory.nn.multihead_model.MixturePFN, issue 27): shapes,
gradients, bad input, NumPy-vs-torch parity of the hand-set model at float64, and its place in run
specs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from pfntheory.experiments.definitions import get_experiment
from pfntheory.infra.config import ModelSpec, TaskSpec, prior_components
from pfntheory.infra.tree import RunSpec
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.discretize import bin_edges
from pfntheory.nn.multihead_model import MixturePFN, load_multihead_handset
from pfntheory.nn.train import build_model

RUNS = Path(__file__).resolve().parents[1] / "reports" / "runs"
TASK = TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.5, 1.0), hier_noise_stds=(0.2, 0.3))


def _model(normalised=True, L=5, C=32, dtype=torch.float64, **kw) -> MixturePFN:
    cfg = ModelSpec(score="rbf", L=L, C=C, normalised=normalised, mixture=True, **kw)
    edges = torch.as_tensor(bin_edges(-3.0, 3.0, C))
    with torch.random.fork_rng(devices=[]):
        torch.set_default_dtype(dtype)
        try:
            return MixturePFN(cfg, edges, TASK)
        finally:
            torch.set_default_dtype(torch.float32)


def _context(B=3, n=9, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n, 2)) / np.sqrt(2)
    return X, rng.normal(size=(B, n)), rng.normal(size=(B, 2)) / np.sqrt(2)


def test_shapes_and_a_valid_mixture():
    m = _model()
    X, Y, xq = _context()
    out = m(X, Y, xq)
    assert out.logits.shape == (3, 32) and out.mu.shape == out.tau.shape == (3,)
    assert out.weights.shape == out.mu_h.shape == out.tau_h.shape == (3, 4)
    p = torch.softmax(out.logits, -1)
    # the logits are log-probabilities already: a mixture of normalised bar distributions
    assert torch.allclose(
        torch.logsumexp(out.logits, -1), torch.zeros(3, dtype=p.dtype), atol=1e-12
    )
    assert torch.allclose(out.weights.sum(-1), torch.ones(3, dtype=p.dtype), atol=1e-12)
    assert len(m.groups) == 2 and m.scale.shape == (2, 5, 2)  # two lengthscales share kernels


@pytest.mark.parametrize("normalised", [True, False], ids=["TF^pr", "TF"])
def test_numpy_torch_parity_of_the_handset_model(normalised):
    """Hand-set weights (pfntheory.maths.multihead_construction) loaded into the torch model:
    per-head moments and the readout's weights agree at float64 to 1e-10 (the float64 round-off of 5
    layers on n = 9 is ~1e-14 on O(1) values; the normalised path divides by row sums as small as 1,
    and the weights go through a softmax of O(10) logits). Fails if one head read another's rows or
    the readout's log-determinant coefficients were not halved (both change values at O(1))."""
    m = _model(normalised=normalised)
    ks, nv = prior_components(TASK)
    X, Y, xq = _context()
    eta = [1.0 / (1.0 + s) if normalised else 0.1 for s in nv]
    w = mh.multihead_weights(2, 5, ks, nv, eta, normalised=normalised)
    fit = mh.fit_logdet_readout(ks, nv, 2, np.random.default_rng(0), ns=(4, 8, 16, 32))
    load_multihead_handset(m, w, fit)
    with torch.no_grad():
        o = m(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    ref = mh.multihead_forward(w, X, Y, xq)
    w_ref = np.exp(mh.readout_log_weights(ref, w.log_prior, fit))
    np.testing.assert_allclose(o.mu_h.numpy(), ref.mu, rtol=0, atol=1e-10)
    np.testing.assert_allclose(o.tau_h.numpy(), ref.tau, rtol=0, atol=1e-10)
    np.testing.assert_allclose(o.weights.numpy(), w_ref, rtol=0, atol=1e-10)


def test_load_refuses_mismatched_weights():
    m = _model()
    ks, nv = prior_components(TASK)
    fit = mh.fit_logdet_readout(ks, nv, 2, np.random.default_rng(0), ns=(4, 8, 16, 32))
    w = mh.multihead_weights(2, 4, ks, nv, 0.5, normalised=True)  # L = 4, model L = 5
    with pytest.raises(ValueError, match="L=4"):
        load_multihead_handset(m, w, fit)
    with pytest.raises(TypeError, match="MultiHeadWeights"):
        load_multihead_handset(m, "weights", fit)


def test_gradients_reach_every_parameter():
    m = _model(dtype=torch.float32)
    X, Y, xq = (torch.as_tensor(a, dtype=torch.float32) for a in _context())
    out = m(X, Y, xq)
    (-out.logits[:, 10]).sum().backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert float(p.grad.abs().max()) > 0, f"{name} gets no gradient"


@pytest.mark.parametrize(
    "bad,match",
    [
        (dict(X=np.full((3, 9, 2), np.nan)), "X contains NaN"),
        (dict(Y=np.zeros((3, 8))), "Y must have shape"),
        (dict(xq=np.zeros((3, 3))), "xq must have shape"),
        (dict(X=np.zeros((3, 9, 3))), "d = 2"),
        (dict(X=np.zeros((9, 2))), "X must have 3 dimensions"),
    ],
)
def test_bad_input_is_refused(bad, match):
    X, Y, xq = _context()
    args = {"X": X, "Y": Y, "xq": xq, **bad}
    with pytest.raises(ValueError, match=match):
        _model()(args["X"], args["Y"], args["xq"])


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="mixture=True needs"):
        ModelSpec(score="linear", L=4, C=8, mixture=True)
    with pytest.raises(ValueError, match="mixture=True needs"):
        ModelSpec(score="rbf", L=1, C=8, mixture=True)
    with pytest.raises(ValueError, match="mixture must be a bool"):
        ModelSpec(score="rbf", L=4, C=8, mixture="yes")
    cfg = ModelSpec(score="rbf", L=3, C=8, normalised=True, mixture=True)
    with pytest.raises(ValueError, match="RBF components"):
        MixturePFN(cfg, torch.as_tensor(bin_edges(-3, 3, 8)), TaskSpec(kind="blr", d=2))
    with pytest.raises(TypeError, match="TaskSpec"):
        MixturePFN(cfg, torch.as_tensor(bin_edges(-3, 3, 8)), "hier_rbf")
    with pytest.raises(ValueError, match="mixture=True"):  # the one check of L, score, mode, head
        MixturePFN(ModelSpec(score="rbf", L=3, C=8), torch.as_tensor(bin_edges(-3, 3, 8)), TASK)


def test_run_spec_selects_the_model_and_keeps_old_names():
    """``ModelSpec.mixture`` is a late default: False leaves the hashed identity (and so every
    committed directory name) as before the field existed; True gives another name and
    ``build_model`` the multi-head model."""
    single = get_experiment("supp_tab_hier").runs("cpu")[0]
    assert (RUNS / "supp_tab_hier" / single.name / "config.json").is_file(), single.name
    assert "mixture" not in single.identity()["model"]
    mixed = dataclasses.replace(single, model=dataclasses.replace(single.model, mixture=True))
    assert mixed.name != single.name and "-pr-mix-learn-" in mixed.name
    assert mixed.identity()["model"]["mixture"] is True
    tiny = RunSpec(
        task=TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.5,), hier_noise_stds=(0.2, 0.3)),
        model=ModelSpec(score="rbf", L=3, C=8, normalised=True, mixture=True),
        n_min=4,
        n_max=8,
        steps=2,
        lr=1e-3,
    )
    model = build_model(tiny, (-3.0, 3.0), "cpu")
    assert isinstance(model, MixturePFN) and model.H == 2
