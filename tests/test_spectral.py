"""Unit tests of :mod:`pfntheory.maths.spectral`: shapes, references, and bad input -> ValueError
naming the argument."""

import numpy as np
import pytest

from pfntheory.base.stats import EPS
from pfntheory.maths.kernels import LinearKernel, RBFKernel
from pfntheory.maths.mercer import RBFMercer, rbf_cond_lower_shape
from pfntheory.maths.richardson import admissible_step
from pfntheory.maths.spectral import (
    admissible_step_curve,
    depth_needed,
    depth_sufficient,
    expected_rbf_uniform,
    lambda1_lower_bound,
    lambda1_lower_limit,
    linear_gram_eigenvalues,
    linear_gram_interval,
    prec_bounds,
    prec_spectrum,
    rho_star,
    ridge_cond,
    ridge_cond_bounds,
    sample_design,
    top_eigenvalue,
)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_sample_design_shapes_and_scale(rng):
    X = sample_design(50_000, 4, rng)
    assert X.shape == (50_000, 4)
    # variance 1/d within 5 standard errors (SE of a Gaussian sample variance: var sqrt(2/N))
    assert abs(X.var() - 0.25) < 5 * 0.25 * np.sqrt(2 / X.size)
    U = sample_design(50_000, 4, rng, "uniform")
    assert np.all(np.abs(U) <= 0.5) and abs(U.var() - 1 / 12) < 5 * (1 / 12) * np.sqrt(0.8 / U.size)
    assert sample_design(3, 2, rng, size=(5, 7)).shape == (5, 7, 3, 2)


def test_linear_eigenvalues_match_eigvalsh_with_sigma(rng):
    X = sample_design(30, 3, rng)
    sig = (2.0, 1.0, 0.4)
    lam = linear_gram_eigenvalues(X, sig)
    ref = np.linalg.eigvalsh(LinearKernel(sig)(X))[::-1][:3]
    np.testing.assert_allclose(lam, ref, rtol=0, atol=10 * 30 * EPS * ref[0])
    assert linear_gram_eigenvalues(sample_design(4, 2, rng, size=(6,))).shape == (6, 2)


def test_linear_interval_lower_clipped_at_zero():
    iv = linear_gram_interval(10, 5, 10.0)  # 1 - sqrt(d/n) - t/sqrt(n) < 0
    assert iv.lo == 0.0 and iv.hi > 0 and 0 <= iv.prob <= 1


def test_top_eigenvalue_matches_eigvalsh(rng):
    G = RBFKernel()(sample_design(500, 3, rng))
    ref = np.linalg.eigvalsh(G)[-1]
    assert top_eigenvalue(G) == pytest.approx(ref, rel=1e-11, abs=0)
    assert top_eigenvalue(np.eye(400)) == pytest.approx(1.0, rel=1e-12)  # no gap: dense fallback
    # the admissible step of one matrix (pfntheory.maths.richardson, the only implementation) is the
    # point of the fig:stepsize curve: 2 / (lambda_1(G) + sigma^2)
    assert admissible_step(G + 0.2 * np.eye(len(G))) == pytest.approx(2 / (ref + 0.2), rel=1e-11)


def test_lambda1_bounds(rng):
    G = RBFKernel()(sample_design(40, 2, rng))
    assert lambda1_lower_bound(G) == pytest.approx(G.sum() / 40, rel=1e-15)
    assert lambda1_lower_bound(np.stack([G, 2 * G])).shape == (2,)
    assert lambda1_lower_limit(10, 1.0, 1.0, 2) == pytest.approx(1 + 9 * 0.5, rel=1e-15)


def test_mercer_constants_and_eigenfunctions():
    m = RBFMercer(1, 1.0, 1.0)  # a = 1/4, b = 1/2, c = sqrt(1/16 + 1/4)
    assert m.a == 0.25 and m.b == 0.5
    assert m.c == pytest.approx(np.sqrt(0.3125), rel=1e-15)
    assert m.eig_1d(np.arange(3)) == pytest.approx(np.sqrt(m.mercer_alpha) * m.beta ** np.arange(3))
    # orthonormality in L2(N(0, var)) by Gauss-Hermite quadrature (atol 1e-10: quadrature exact for
    # these polynomial-times-Gaussian integrands up to round-off)
    z, w = np.polynomial.hermite_e.hermegauss(80)
    phi = m.eigfun_1d(z, 12)
    gram = phi.T @ (w[:, None] / np.sqrt(2 * np.pi) * phi)
    np.testing.assert_allclose(gram, np.eye(13), rtol=0, atol=1e-10)
    md = RBFMercer(3)
    assert list(md.multiplicity(np.arange(4))) == [1, 3, 6, 10]
    assert md.T_less(4) == 20 and md.max_degree_below(21) == 4
    assert md.eigenvalues(4)[1] == md.eigenvalues(4)[3] == pytest.approx(float(md.eig_degree(1)))
    assert md.features(sample_design(5, 3, np.random.default_rng(1)), 3).shape == (5, 10)


def test_ridge_and_prec(rng):
    G = RBFKernel()(sample_design(60, 2, rng))
    lam = np.linalg.eigvalsh(G)
    assert ridge_cond(G, 0.1) == pytest.approx((lam[-1] + 0.1) / (lam[0] + 0.1), rel=1e-12)
    lo, hi = ridge_cond_bounds(60, 0.5, 0.1)
    assert lo == pytest.approx((1 + 59 * 0.5 + 0.1) / 1.1) and hi == pytest.approx(60.1 / 0.1)
    sp = prec_spectrum(G, 0.1)
    # independent route: non-symmetric eigvals of D^{-1}(G + s2 I)
    s = G.sum(1)
    ev = np.sort(np.linalg.eigvals((G + 0.1 * np.eye(60)) / s[:, None]).real)
    assert sp.lambda_1 == pytest.approx(ev[-1], rel=1e-10) and sp.lambda_n == pytest.approx(
        ev[0], rel=1e-7
    )
    b = prec_bounds(s, 0.1)
    assert b.lambda1_paper == (1.0, 1.1) and b.lambda1[1] <= 1.1


def test_depth_and_rho_star():
    assert float(rho_star(3.0)) == pytest.approx(0.5)
    assert float(depth_needed(3.0, 0.25)) == pytest.approx(2.0)
    assert float(depth_sufficient(3.0, 0.25)) == pytest.approx(2 * np.log(4))
    assert float(depth_needed(1.0, 0.1)) == 0.0
    assert rbf_cond_lower_shape([10.0, 20.0], 2, 1.0).shape == (2,)


def test_uniform_rho_small_width_limit():
    # h -> 0: x = x' = 0, rho -> alpha^2
    assert expected_rbf_uniform(2.0, 1.0, 3, half_width=1e-6) == pytest.approx(4.0, rel=1e-10)


def test_step_curve_shapes(rng):
    cur = admissible_step_curve(RBFKernel(1.0, 0.8), [20, 40], 3, 0.2, 2, rng)
    assert cur.steps.shape == (2, 2) and cur.mean.shape == (2,) and cur.reference[0] == cur.mean[0]
    cur = admissible_step_curve(LinearKernel((1.0, 1.0)), [20, 40], 2, 0.2, 1, rng, "uniform")
    assert np.all(np.isnan(cur.limit)) and np.all(cur.std == 0)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: sample_design(0, 2, np.random.default_rng(0)), "n"),
        (lambda: sample_design(3, 2, np.random.default_rng(0), "cauchy"), "design"),
        (lambda: linear_gram_interval(3, 3, 1.0), "n"),
        (lambda: linear_gram_interval(10, 2, -1.0), "t"),
        (lambda: linear_gram_eigenvalues(np.ones(3)), "X"),
        (lambda: lambda1_lower_bound(np.ones((2, 3))), "G"),
        (lambda: top_eigenvalue(np.ones((2, 2, 2))), "G"),
        (lambda: RBFMercer(0), "d"),
        (lambda: RBFMercer(2, lengthscale=-1.0), "lengthscale"),
        (lambda: RBFMercer(2, var=0.0), "var"),
        (lambda: RBFMercer(2).eig_degree(-1), "k"),
        (lambda: RBFMercer(2).tail_bound(0, 0.5), "q"),
        (lambda: RBFMercer(2).tail_bound(10, 1.5), "q"),
        (lambda: RBFMercer(2).features(np.ones((3, 3)), 2), "d"),
        (lambda: ridge_cond(np.eye(3), 0.0), "noise_var"),
        (lambda: ridge_cond_bounds(10, -0.1, 0.1), "rho"),
        (lambda: prec_spectrum(-np.eye(3), 0.1), "G must be positive semi-definite"),
        (lambda: prec_spectrum(np.array([[1.0, -2.0], [-2.0, 1.0]]), 0.1), "row sums"),
        (lambda: ridge_cond(-np.eye(3), 0.1), "G"),
        (lambda: top_eigenvalue(-np.eye(3)), "G"),
        (lambda: lambda1_lower_bound(np.array([[1.0, 2.0], [0.0, 1.0]])), "symmetric"),
        (lambda: ridge_cond_bounds(10, 1.5, 0.1), "rho"),
        (lambda: sample_design(5, 2, None), "rng"),
        (lambda: sample_design(5, 2, 0), "rng"),
        (lambda: sample_design(10**6, 10**3, np.random.default_rng(0)), r"n \* d"),
        (lambda: admissible_step_curve(RBFKernel(), [10], 2, 0.1, 1, None), "rng"),
        (lambda: linear_gram_eigenvalues(np.empty((0, 2))), "X"),
        (lambda: RBFMercer(10**12), "d"),
        (lambda: prec_bounds([1.0, 0.0], 0.1), "s"),
        (lambda: rho_star(0.5), "cond"),
        (lambda: depth_needed(2.0, 1.5), "eps"),
        (lambda: depth_sufficient(2.0, 0.0), "eps"),
        (lambda: expected_rbf_uniform(1.0, 1.0, 2, half_width=0.0), "half_width"),
        (
            lambda: admissible_step_curve(RBFKernel(), [10], 2, -1.0, 1, np.random.default_rng(0)),
            "noise_var",
        ),
        (lambda: admissible_step_curve("rbf", [10], 2, 0.1, 1, np.random.default_rng(0)), "kernel"),
        (
            lambda: admissible_step_curve(
                LinearKernel((1.0,)), [10], 2, 0.1, 1, np.random.default_rng(0)
            ),
            "d",
        ),
        (lambda: admissible_step_curve(RBFKernel(), [], 2, 0.1, 1, np.random.default_rng(0)), "ns"),
        (
            lambda: admissible_step_curve(RBFKernel(), [10], 2, 0.1, 0, np.random.default_rng(0)),
            "n_trials",
        ),
    ],
)
def test_bad_input_raises_naming_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
