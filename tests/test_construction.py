"""Unit tests of pfntheory.maths.construction: layout, weights, forward pass, MLP, bad input."""

import numpy as np
import pytest

from pfntheory.maths import construction as con
from pfntheory.maths import mlp
from pfntheory.maths.gp import posterior_predictive
from pfntheory.maths.kernels import ARDRBFKernel, LinearKernel, RBFKernel
from pfntheory.maths.readout import psi_gaussian


def _data(n=5, d=2, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=batch + (n, d)) / np.sqrt(d),
        rng.normal(size=batch + (n,)),
        rng.normal(size=batch + (d,)) / np.sqrt(d),
    )


def test_Z0_layout():
    X, Y, x = _data()
    Z = con.build_Z0(X, Y, x)
    assert Z.shape == (6, 6)
    np.testing.assert_array_equal(Z[:2, :5], X.T)
    np.testing.assert_array_equal(Z[:2, 5], x)
    np.testing.assert_array_equal(Z[2, :5], Y)
    assert Z[2, 5] == 1.0 and np.all(Z[3:] == 0)


def test_weights_match_supp_eqn_weights():
    w = con.handset_weights(3, 4, 0.1, 0.2, RBFKernel(1.0, 1.0))
    d = 3
    assert w.V.shape == (4, 7, 7) and w.W.shape == (2, 7)
    assert w.V[0, d + 1, d] == 1.0 and np.count_nonzero(w.V[0]) == 1
    assert w.V[1, d + 2, d] == w.V[1, d + 3, d + 1] == 0.1
    assert w.V[1, d + 2, d + 2] == w.V[1, d + 3, d + 3] == -0.1
    assert w.S[1, d + 2, d + 2] == w.S[1, d + 3, d + 3] == pytest.approx(-0.02)
    assert np.all(w.S[0] == 0)
    np.testing.assert_array_equal(w.K[0], np.diag([1, 1, 1, 0, 0, 0, 0]))
    np.testing.assert_array_equal(w.W, [[0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0.2, 1, 0, -1]])
    M0, M = w.masks(3)
    np.testing.assert_array_equal(M0[3], 1)
    assert M0[:3].sum() == 0 and M[3].sum() == 0 and M[:3].sum() == 12


@pytest.mark.parametrize(
    "kernel",
    [RBFKernel(1.3, 0.7), ARDRBFKernel(0.8, (0.5, 1.5)), LinearKernel((2.0, 0.4))],
    ids=["rbf", "ard", "linear"],
)
def test_deep_forward_reaches_gp_ppd(kernel):
    X, Y, x = _data(n=6)
    s2 = 0.1
    lam1 = np.linalg.eigvalsh(kernel(X))[-1]
    w = con.handset_weights(2, 1500, 1.0 / (lam1 + s2), s2, kernel)
    mu_L, tau_L = con.tf_forward(w, X, Y, x)
    mu, tau = posterior_predictive(kernel, X, Y, x[None], s2)
    np.testing.assert_allclose([mu_L, tau_L], [mu[0], tau[0]], rtol=1e-8, atol=1e-9)


def test_batched_forward_equals_loop():
    X, Y, x = _data(batch=(3,))
    w = con.handset_weights(2, 6, 0.1, 0.04, RBFKernel())
    mu, tau, path = con.tf_forward(w, X, Y, x, return_path=True)
    assert mu.shape == (3,) and path.shape == (7, 3, 6, 6)
    for b in range(3):
        m, t = con.tf_forward(w, X[b], Y[b], x[b])
        np.testing.assert_allclose([m, t], [mu[b], tau[b]], rtol=1e-14, atol=1e-15)


def test_mlp_fit_and_lipschitz():
    box = ((-1.0, 1.0), (0.3, 1.0))
    m = mlp.fit_psi_mlp(box, 64)
    assert m.W1.shape == (64, 2) and m.W2.shape == (2, 64) and m.width == 64
    assert m(np.zeros((4, 2)) + [0.0, 0.5]).shape == (4, 2)
    assert mlp.delta_mlp(m) < 1.0
    rng = np.random.default_rng(0)
    a, b = rng.uniform([-1, 0.3], [1, 1], size=(2, 200, 2))
    ratio = np.linalg.norm(m(a) - m(b), axis=1) / np.linalg.norm(a - b, axis=1)
    assert ratio.max() <= m.lipschitz_bound() * (1 + 1e-12)
    assert mlp.fit_psi_mlp(box, 16, np.random.default_rng(1)).width == 16


def _dense_sup(m, box, n=801):
    """max of ||psi - psi~|| on an n x n grid, a row of mu at a time (a lower estimate of
    the sup)."""
    tau = np.linspace(*box[1], n)
    best = 0.0
    for mu in np.linspace(*box[0], n):
        theta = np.stack([np.full(n, mu), tau], axis=-1)
        best = max(best, float(np.max(np.linalg.norm(psi_gaussian(mu, tau) - m(theta), axis=-1))))
    return best


@pytest.mark.parametrize(
    "box,width",
    [
        (((-1.0, 1.0), (0.05, 0.5)), 16),
        (((-1.0, 1.0), (0.05, 0.5)), 144),
        (((-2.0, 0.5), (0.2, 1.0)), 64),
    ],
    ids=["small-tau-w16", "small-tau-w144", "shifted-w64"],
)
def test_delta_mlp_is_a_certified_upper_bound(box, width):
    """issue 12: the grid maximum was 1.6-5.7% below the true sup. The certified bound must lie
    above a dense evaluation (801^2 points, 16x finer than the initial grid) and within its stated
    relative gap rtol of the value ``lower`` it found (a value of ||psi - psi~|| at a point, so a
    lower bound of the sup); the plain 51-node grid maximum (the old estimate) lies below the dense
    value in the second and third case (1.329 < 1.378, 0.326 < 0.357), so it could not
    pass there."""
    m = mlp.fit_psi_mlp(box, width)
    lower, upper = mlp.delta_mlp_interval(m, rtol=0.05)
    dense = _dense_sup(m, box)
    assert upper >= max(dense, lower), (upper, dense, lower)
    assert upper <= 1.05 * lower * (1 + 1e-12), (lower, upper)  # branch and bound reached rtol
    assert mlp.delta_mlp(m) == upper


def test_delta_mlp_without_refinement_is_still_an_upper_bound():
    """max_rounds=0: the bound of the initial grid alone is looser but still certified."""
    box = ((-1.0, 1.0), (0.05, 0.5))
    m = mlp.fit_psi_mlp(box, 36)
    lower, upper = mlp.delta_mlp_interval(m, n_grid=11, max_rounds=0)
    assert upper >= _dense_sup(m, box) >= lower


def test_bad_input():
    k = RBFKernel()
    with pytest.raises(ValueError, match="noise_var"):
        con.handset_weights(2, 3, 0.1, 0.0, k)
    with pytest.raises(ValueError, match="L"):
        con.handset_weights(2, 0, 0.1, 0.1, k)
    with pytest.raises(ValueError, match="eta"):
        con.handset_weights(2, 3, -0.1, 0.1, k)
    with pytest.raises(ValueError, match="eta"):
        con.handset_weights(2, 3, [0.1, 0.1, 0.1], 0.1, k)
    with pytest.raises(ValueError, match="kernel"):
        con.handset_weights(2, 3, 0.1, 0.1, "rbf")
    with pytest.raises(ValueError, match="normalised"):
        con.handset_weights(2, 3, 0.1, 0.1, LinearKernel((1.0, 1.0)), normalised=True)
    X, Y, x = _data()
    with pytest.raises(ValueError, match="Y"):
        con.build_Z0(X, Y[:-1], x)
    with pytest.raises(ValueError, match="x_query"):
        con.build_Z0(X, Y, x[:1])
    with pytest.raises(ValueError, match="X"):
        con.build_Z0(np.where(X > 0, np.nan, X), Y, x)
    w = con.handset_weights(3, 3, 0.1, 0.1, k)
    with pytest.raises(ValueError, match="d="):
        con.tf_forward(w, X, Y, x)
    with pytest.raises(ValueError, match="score"):
        con.tf_forward(con.handset_weights(2, 3, 0.1, 0.1, k), X, Y, x, score="softmax")
    with pytest.raises(ValueError, match="box"):
        mlp.fit_psi_mlp(((0, 1), (0.0, 1)), 8)
    with pytest.raises(ValueError, match="box"):
        mlp.fit_psi_mlp(((1, 0), (0.1, 1)), 8)
    with pytest.raises(ValueError, match="width"):
        mlp.fit_psi_mlp(((0, 1), (0.1, 1)), 0)
    with pytest.raises(ValueError, match="theta"):
        mlp.fit_psi_mlp(((0, 1), (0.1, 1)), 4)(np.zeros(3))
    with pytest.raises(TypeError, match="mlp"):
        mlp.delta_mlp("not an mlp")
    with pytest.raises(ValueError, match="n_grid"):
        mlp.delta_mlp(mlp.fit_psi_mlp(((0, 1), (0.1, 1)), 4), n_grid=1)


def test_sizes_are_checked_before_allocating():
    """issue 12: no size is checked before allocating. Weights of 10^8 layers and a path beyond
    MAX_ELEMENTS are refused, naming the argument."""
    k = RBFKernel()
    with pytest.raises(ValueError, match="L"):
        con.handset_weights(2, 10**8, 0.1, 0.1, k)
    X, Y, x = _data()
    w = con.handset_weights(2, 3, 0.1, 0.1, k)
    Xb = np.broadcast_to(X, (10**6,) + X.shape)
    with pytest.raises(ValueError, match="X"):
        con.tf_forward(
            w, Xb, np.broadcast_to(Y, (10**6,) + Y.shape), np.broadcast_to(x, (10**6, 2))
        )
    with pytest.raises(ValueError, match="return_path"):
        B = (10**4,)  # 300 layers x 10^4 contexts x 6 x 6 = 1.1e8 values in the path
        con.tf_forward(
            con.handset_weights(2, 300, 0.1, 0.1, k),
            np.broadcast_to(X, B + X.shape),
            np.broadcast_to(Y, B + Y.shape),
            np.broadcast_to(x, B + x.shape),
            return_path=True,
        )
