"""The Newton transformer for GP classification (the paper's Discussion, "latent GP models";
pfntheory/maths/latent_construction.py, docs/latent.md).

Statement checked: Laplace's Newton iteration (R&W Algorithm 3.1, probit link) is a stack of
the paper's attention updates. Each Newton block is a token-wise map (``W`` and the working
response ``y~ = f + grad / W``) and ``L_in`` Richardson layers on ``(I + K W) u = K W y~``, a
system similar to ``B = I + W^1/2 K W^1/2``, whose score ``kappa(x_i, x_j) W_i`` is the unit RBF
score with a key-side row ``t_i = sqrt(-2 log W_i)``. Checked: (1) with exact inner solves each
block equals the Laplace iterate and the readout ``Phi(mu / sqrt(1 + s^2))`` equals R&W
Algorithm 3.2's predictive, to round-off; (2) the layers compute the stated recursion; (3) the
inner error contracts by ``rho = max|1 - eta lambda(B)|`` per layer (bound at every layer, slope
within 10%); (4) exact inner solves converge quadratically, ``e_{t+1} <= (c3 lambda_max(K) / 2)
e_t^2``; (5) with ``L_in`` layers per block the outer error falls by ``rho_hat^L_in`` per block
(``rho_hat`` at the mode).

Cases: contexts of the classification prior (``alpha = 2``, ``ell = 0.8``, ``x ~ N(0, I/2)``; the
prior's law, so drawn with NumPy at fixed seeds), and for (1) hypothesis-drawn designs and labels
(:mod:`verify._array_strategies`), every one a valid input of the theorem (any design, any labels).

How these fail: ``verify/`` runs the same checks on the two broken variants of
:data:`pfntheory.maths.latent_construction.FAULTS` (gradient map of the wrong sign; ``W`` read from
the previous block's latent) in :func:`test_faults_are_caught`, and they turn red.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pfntheory.claims import latent as cl
from pfntheory.maths.kernels import RBFKernel
from verify._array_strategies import designs

KERNEL = RBFKernel(2.0, 0.8)
SEEDS = (0, 1, 2, 3)


def _ctx(seed, n=24):
    return cl.context(KERNEL, n, 2, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_identity_with_exact_inner_solves(seed):
    """(1) Every block's ``f`` row equals R&W 3.1's iterate and the readout R&W 3.2's ``p``
    (tolerance: 1e-9 of the latent's scale, from B's condition number times eps over <= 20
    blocks)."""
    res = cl.check_newton_identity(KERNEL, *_ctx(seed), L_out=12)
    assert res.holds, str(res)
    assert res.details["mode_reached"], "12 Newton steps must reach the mode for the p check"


@settings(max_examples=25)
@given(
    X=designs(12, 2),
    y=st.lists(st.sampled_from([-1.0, 1.0]), min_size=12, max_size=12),
    alpha=st.floats(0.5, 2.5),
)
def test_identity_property(X, y, alpha):
    """(1) for any design (coordinates within 3/sqrt(d), coincident points included) and any
    labels: a flat kernel with coincident points keeps ``B`` well conditioned (``W < 1``)."""
    res = cl.check_newton_identity(RBFKernel(alpha, 0.8), X, np.array(y), X[0], L_out=6)
    assert res.holds, str(res)


@pytest.mark.parametrize("seed", SEEDS)
def test_layers_compute_the_recursion(seed):
    """(2) Five attention layers per block, three blocks: rows equal the NumPy recursion."""
    res = cl.check_newton_rows(KERNEL, *_ctx(seed))
    assert res.holds, str(res)


@pytest.mark.parametrize("seed", SEEDS)
def test_inner_rate(seed):
    """(3) The contraction ``rho`` of ``B``'s spectrum at every layer; slope within 10%."""
    X, y, _ = _ctx(seed)
    res = cl.check_inner_rate(KERNEL, X, y)
    assert res.holds, str(res)


@pytest.mark.parametrize("seed", SEEDS)
def test_outer_quadratic(seed):
    """(4) Newton's quadratic convergence with the explicit constant ``M``."""
    X, y, _ = _ctx(seed)
    res = cl.check_outer_quadratic(KERNEL, X, y)
    assert res.holds, str(res)


@pytest.mark.parametrize("L_in", [2, 4, 8])
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_outer_linear_rate(seed, L_in):
    """(5) The per-block factor ``rho_hat^L_in``: the total depth ``L_out L_in`` acts as the depth
    of the paper's Richardson solver on the mode's ``B``."""
    X, y, _ = _ctx(seed)
    res = cl.check_outer_linear(KERNEL, X, y, L_in=L_in, L_out=max(20, 120 // L_in))
    assert res.holds, str(res)


@pytest.mark.parametrize("fault", ["grad_sign", "stale_W"])
def test_faults_are_caught(fault):
    """The broken variants fail (1) and (2) on every instance; ``stale_W`` (a quasi-Newton
    iteration that still reaches the mode) also fails the quadratic bound (4) at seed 0,
    and ``grad_sign`` diverges."""
    for seed in SEEDS:
        X, y, xq = _ctx(seed)
        assert not cl.check_newton_identity(KERNEL, X, y, xq, fault=fault).holds
        assert not cl.check_newton_rows(KERNEL, X, y, xq, fault=fault).holds
    X, y, _ = _ctx(0)
    assert not cl.check_outer_quadratic(KERNEL, X, y, fault=fault).holds
