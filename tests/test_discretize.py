"""Unit tests of pfntheory.maths.discretize: shapes, independent references, bad input."""

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from pfntheory.claims.ppd_convergence import check_inverse_gaussian_example
from pfntheory.maths.discretize import (
    bin_edges,
    calibrate_interval,
    check_probs,
    discretization_bound,
    gaussian_bin_masses,
    gaussian_interval_mass,
    gaussian_lipschitz,
    gaussian_tail_mass,
    histogram_density,
    midpoints,
    smax_quad_bound,
    smax_quad_bound_modulus,
    softmax_perturbation_bound,
    softmax_perturbation_sharp,
    truncated_nll_histogram,
    truncnorm_bin_masses,
)
from pfntheory.maths.readout import (
    inverse_gaussian_psi,
    inverse_gaussian_T,
    logits_from_natural,
    psi_gaussian,
    readout_Xi,
    softmax,
)


def test_bin_edges_and_midpoints():
    e = bin_edges(-1.5, 2.5, 8)
    assert e.shape == (9,) and e[0] == -1.5 and e[-1] == 2.5
    np.testing.assert_allclose(np.diff(e), 0.5, rtol=1e-14, atol=0)
    np.testing.assert_allclose(midpoints(e), np.arange(-1.25, 2.5, 0.5), rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "args,name",
    [
        ((1.0, 1.0, 4), "a"),
        ((2.0, 1.0, 4), "a"),
        ((0.0, 1.0, 1), "C"),
        ((np.nan, 1.0, 4), "a"),
        ((0.0, 1.0, 2.5), "C"),
    ],
)
def test_bin_edges_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        bin_edges(*args)


@pytest.mark.parametrize(
    "edges", [[0.0, 1.0], [0.0, 2.0, 1.0], [0.0, np.nan, 1.0], [[0.0, 1.0, 2.0]]]
)
def test_bad_edges(edges):
    with pytest.raises(ValueError, match="edges"):
        midpoints(edges)


def test_truncnorm_bin_masses_against_scipy():
    """Batched (2, 3) instances on a non-uniform grid vs scipy.stats.truncnorm (rtol 1e-9: scipy's
    CDF differences in moderate tails)."""
    rng = np.random.default_rng(0)
    e = np.sort(np.r_[-2.0, rng.uniform(-2, 3, 20), 3.0])
    mu = rng.normal(size=(2, 3))
    tau = rng.uniform(0.1, 2, size=(2, 3))
    q = truncnorm_bin_masses(mu, tau, e)
    assert q.shape == (2, 3, 21)
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=0, atol=1e-14)
    for i in np.ndindex(2, 3):
        s = np.sqrt(tau[i])
        ref = np.diff(
            scipy.stats.truncnorm((e[0] - mu[i]) / s, (e[-1] - mu[i]) / s, loc=mu[i], scale=s).cdf(
                e
            )
        )
        np.testing.assert_allclose(q[i], ref, rtol=1e-9, atol=1e-16)


def test_truncnorm_far_tail_against_mpmath():
    """Interval 12 standard deviations from the mean: the log-space masses keep full relative
    accuracy (rtol 1e-10 vs 50-digit mpmath), where naive CDF differences would return 0/0."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    e = np.linspace(12.0, 14.0, 5)
    q = truncnorm_bin_masses(0.0, 1.0, e)
    F = [mpmath.ncdf(-x) for x in e]  # upper-tail masses
    m = [F[i] - F[i + 1] for i in range(4)]
    ref = np.array([float(x / sum(m)) for x in m])
    np.testing.assert_allclose(q, ref, rtol=1e-10, atol=0)


def test_gaussian_masses_and_tails():
    e = bin_edges(-1.0, 2.0, 6)
    g = gaussian_bin_masses(0.3, 0.4, e)
    np.testing.assert_allclose(g.sum(), gaussian_interval_mass(0.3, 0.4, -1, 2), rtol=1e-14, atol=0)
    np.testing.assert_allclose(
        gaussian_tail_mass(0.3, 0.4, -1, 2) + g.sum(), 1.0, rtol=0, atol=1e-15
    )


@pytest.mark.parametrize(
    "mu,tau,name",
    [(0.0, 0.0, "tau"), (0.0, -1.0, "tau"), (np.nan, 1.0, "mu"), (0.0, np.inf, "tau")],
)
def test_truncnorm_bad_input(mu, tau, name):
    with pytest.raises(ValueError, match=name):
        truncnorm_bin_masses(mu, tau, bin_edges(0, 1, 4))


def test_interval_far_from_the_mass_is_still_a_distribution():
    """(a, b] 10^5 standard deviations from mu: the truncated law is still defined (log space) and
    concentrates on the bin nearest to mu."""
    q = truncnorm_bin_masses(0.0, 1e-4, bin_edges(1e3, 1e3 + 1, 4))
    np.testing.assert_allclose(q, [1.0, 0.0, 0.0, 0.0], rtol=0, atol=1e-300)


def test_psi_Xi_logits():
    psi = psi_gaussian([0.5, -1.0], [2.0, 0.5])
    np.testing.assert_allclose(psi, [[0.25, -0.25], [-2.0, -1.0]], rtol=1e-15, atol=0)
    e = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(readout_Xi(e), [[0.5, 0.25], [2.0, 4.0]], rtol=0, atol=0)
    ell = logits_from_natural(psi, e)
    assert ell.shape == (2, 2)
    np.testing.assert_allclose(ell, psi @ readout_Xi(e).T + np.log([1.0, 2.0]), rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match="psi"):
        logits_from_natural(np.ones(3), e)


def test_softmax_stable():
    s = softmax(np.array([1000.0, 1000.0, -1000.0]))
    np.testing.assert_allclose(s, [0.5, 0.5, 0.0], rtol=0, atol=1e-300)


def test_histogram_density_conventions_and_errors():
    e = np.array([0.0, 1.0, 3.0])
    p = np.array([0.25, 0.75])
    y = np.array([-0.1, 0.0, 0.5, 1.0, 2.0, 3.0, 3.1])
    np.testing.assert_allclose(histogram_density(e, p, y), [0, 0, 0.25, 0.25, 0.375, 0.375, 0])
    np.testing.assert_allclose(
        histogram_density(e, p, y, closed="left"), [0, 0.25, 0.25, 0.375, 0.375, 0, 0]
    )
    assert histogram_density(e, np.tile(p, (4, 1)), 0.5).shape == (4,)
    with pytest.raises(ValueError, match="probs"):
        histogram_density(e, [0.3, 0.3], 0.5)
    with pytest.raises(ValueError, match="probs"):
        histogram_density(e, [0.2, 0.3, 0.5], 0.5)
    with pytest.raises(ValueError, match="probs"):
        histogram_density(e, [-0.5, 1.5], 0.5)
    with pytest.raises(ValueError, match="y"):
        histogram_density(e, p, np.nan)
    with pytest.raises(ValueError, match="closed"):
        histogram_density(e, p, 0.5, closed="both")


def test_check_probs_float32_tolerance():
    """A float32 softmax (sum off by ~1e-7) is accepted; a sum of 0.99 is not."""
    p = np.full(256, 1 / 256, dtype=np.float32).astype(float) * (1 + 1e-6)
    check_probs(p, 256)
    with pytest.raises(ValueError, match="sum"):
        check_probs(np.full(256, 0.99 / 256), 256)


def test_truncated_nll_against_quad():
    """Closed form vs scipy.integrate.quad of -p_(a,b] log q (rtol 1e-9, quad to 1e-12 per bin)."""
    rng = np.random.default_rng(2)
    e = np.sort(np.r_[-1.0, rng.uniform(-1, 2, 6), 2.0])
    pc = truncnorm_bin_masses(0.3, 0.5, e)
    q = rng.dirichlet(np.ones(7))
    Z = gaussian_interval_mass(0.3, 0.5, -1, 2)

    def f(y):
        return -scipy.stats.norm.pdf(y, 0.3, np.sqrt(0.5)) / Z * np.log(histogram_density(e, q, y))

    ref = sum(
        scipy.integrate.quad(f, e[c], e[c + 1], epsabs=1e-13, epsrel=1e-12)[0] for c in range(7)
    )
    np.testing.assert_allclose(truncated_nll_histogram(pc, q, e), ref, rtol=1e-9, atol=1e-12)


def test_bounds_values():
    e = np.array([0.0, 1.0, 3.0])  # |Gamma| = 2, b - a = 3
    assert discretization_bound(0.5, e, 0.1) == pytest.approx(0.5 * 2 * 3 / 2 + 0.1, rel=1e-15)
    assert smax_quad_bound(0.5, e, 0.1) == pytest.approx(3 * 0.5 * 2 / (4 * 0.9), rel=1e-15)
    assert smax_quad_bound_modulus(0.2, e, 0.1) == pytest.approx(3 * 0.2 / 0.9, rel=1e-15)
    np.testing.assert_allclose(
        softmax_perturbation_bound([0.0, 0.5]), [0.0, np.e - 1], rtol=1e-15, atol=0
    )
    np.testing.assert_allclose(
        softmax_perturbation_sharp(0.5), 2 * np.tanh(0.25), rtol=1e-15, atol=0
    )
    with pytest.raises(ValueError, match="eps"):
        discretization_bound(1.0, e, 1.0)
    with pytest.raises(ValueError, match="L_lip"):
        smax_quad_bound(-1.0, e, 0.1)
    with pytest.raises(ValueError, match="Delta"):
        softmax_perturbation_bound(-0.1)


@pytest.mark.parametrize("tau", [0.05, 1.0, 7.0])
def test_gaussian_lipschitz_against_finite_differences(tau):
    """sup |p'| = 1/(tau sqrt(2 pi e)) vs the max secant slope on a fine grid (rtol 1e-6: grid)."""
    y = np.linspace(-6 * np.sqrt(tau), 6 * np.sqrt(tau), 200001)
    p = scipy.stats.norm.pdf(y, 0, np.sqrt(tau))
    np.testing.assert_allclose(
        np.max(np.abs(np.diff(p) / np.diff(y))), gaussian_lipschitz(tau), rtol=1e-6
    )


def test_calibrate_interval_equal_tails_and_errors():
    a, b = calibrate_interval([0.0], [1.0], 0.05)
    np.testing.assert_allclose([a, b], scipy.stats.norm.ppf([0.025, 0.975]), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="outside_mass"):
        calibrate_interval([0.0], [1.0], 1.5)
    with pytest.raises(ValueError, match="tau"):
        calibrate_interval([0.0], [0.0])
    with pytest.raises(ValueError, match="mu"):
        calibrate_interval([], [])


@pytest.mark.parametrize("mu,tau", [(1.0, 1.0), (1.3, 0.7), (0.5, 2.0), (3.0, 0.1)])
def test_inverse_gaussian_example(mu, tau):
    """The paper's IG density integrates to 1 with mean mu and variance tau, equals scipy's invgauss
    with shape mu^3/tau, and its (psi, T, A) representation reproduces it (see the check's
    tolerances)."""
    r = check_inverse_gaussian_example(mu, tau)
    assert r.holds, str(r)


def test_inverse_gaussian_shapes_and_errors():
    assert inverse_gaussian_psi([1.0, 2.0], 0.5).shape == (2, 3)
    assert inverse_gaussian_T(np.array([0.5, 1.0])).shape == (2, 3)
    with pytest.raises(ValueError, match="y"):
        inverse_gaussian_T(np.array([0.0]))
    with pytest.raises(ValueError, match="mu"):
        inverse_gaussian_psi(-1.0, 1.0)
