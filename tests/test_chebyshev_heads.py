"""Chebyshev per-layer steps in the torch multi-head model (pfntheory.nn.chebyshev_heads, issue 38):
the torch heads with the steps written by ``set_layer_steps`` compute what the NumPy construction
(:func:`pfntheory.maths.multihead_construction.multihead_forward`) computes with the same per-layer
steps.

How it fails: a step written into the wrong slot of ``V`` / ``S`` (or the skip's noise factor
lost) changes the per-head moments at O(1), far above the tolerance: 1e-8 absolute at float64
(17 layers on n = 9; the Chebyshev steps reach ``1 / lo``, about 6, and the Leja order's partial
products grow round-off by at most ``sum_j a_j`` ~ 1e3, so 1e3 x 17 x eps x O(10) values ~ 1e-10,
with a 100x margin).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pfntheory.infra.config import ModelSpec, TaskSpec, prior_components
from pfntheory.maths import chebyshev as ch
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.discretize import bin_edges
from pfntheory.nn.chebyshev_heads import chebyshev_hook, prior_ranges, set_layer_steps
from pfntheory.nn.multihead_model import MixturePFN

TASK = TaskSpec(kind="hier_rbf", d=2, hier_lengthscales=(0.5, 1.0), hier_noise_stds=(0.2, 0.3))


def _model(L):
    cfg = ModelSpec(score="rbf", L=L, C=32, normalised=True, mixture=True)
    torch.set_default_dtype(torch.float64)
    try:
        return MixturePFN(cfg, torch.as_tensor(bin_edges(-3.0, 3.0, 32)), TASK)
    finally:
        torch.set_default_dtype(torch.float32)


def test_torch_heads_with_chebyshev_steps_match_numpy():
    L, n = 17, 9
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, n, 2)) / np.sqrt(2)
    Y, xq = rng.normal(size=(3, n)), rng.normal(size=(3, 2)) / np.sqrt(2)
    ks, nv = prior_components(TASK)
    ranges = prior_ranges(TASK, n, n_designs=8)
    assert all(lo < hi for lo, hi in ranges)
    assert all(ch.prior_range(s2, n)[0] <= lo for (lo, _), s2 in zip(ranges, nv, strict=True))
    eta = [ch.chebyshev_steps(lo, hi, L - 1) for lo, hi in ranges]
    m = _model(L)
    chebyshev_hook(ranges)(m, L)
    with torch.no_grad():
        o = m(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    ref = mh.multihead_forward(mh.multihead_weights(2, L, ks, nv, eta, normalised=True), X, Y, xq)
    np.testing.assert_allclose(o.mu_h.numpy(), ref.mu, rtol=0, atol=1e-8)
    np.testing.assert_allclose(o.tau_h.numpy(), ref.tau, rtol=0, atol=1e-8)
    # the constant steps of the initialisation give other moments (the check can fail)
    with torch.no_grad():
        o0 = _model(L)(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(xq))
    assert np.max(np.abs(o0.mu_h.numpy() - ref.mu)) > 1e-3


def test_set_layer_steps_refuses_bad_steps():
    m = _model(5)
    with pytest.raises(ValueError, match="steps"):
        set_layer_steps(m, np.ones((4, 3)))
    with pytest.raises(ValueError, match="steps"):
        set_layer_steps(m, -np.ones((4, 4)))
    with pytest.raises(TypeError, match="model"):
        set_layer_steps(object(), np.ones((4, 4)))


def test_depth_matched_range_reaches_eps_at_its_depth():
    """The raised bottom ``hi / kappa_L`` makes ``L - 1`` steps reach exactly ``eps`` (the bound
    is continuous in kappa: 1e-12 relative); a bottom already above it is kept."""
    from pfntheory.nn.chebyshev_heads import depth_matched

    for L in (4, 8, 32):
        (lo, hi), keep = depth_matched([(1e-6, 1.0), (0.9, 1.0)], L, eps=1e-2)
        assert ch.chebyshev_bound(hi / lo, L - 1) == pytest.approx(1e-2, rel=1e-12)
        assert keep == (0.9, 1.0)
