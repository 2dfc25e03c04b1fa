"""Unit tests of pfntheory.maths.kernels and pfntheory.maths.gp against independent references."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct

from pfntheory.maths.gp import (
    fit_empirical_bayes,
    log_marginal_likelihood,
    mixture_ppd,
    posterior_predictive,
)
from pfntheory.maths.kernels import (
    ARDRBFKernel,
    LinearKernel,
    RBFKernel,
    blr_sigma_diag,
    expected_rbf_gaussian,
    expected_rbf_gaussian_given,
    make_kernel,
)

# sklearn and our code solve the same SPD system in float64 by Cholesky; the systems here have
# cond(G + s2 I) <= (n + s2)/s2 ~ 1e3, so agreement to ~1e3 * eps * n is expected. 1e-9
# leaves margin.
RTOL, ATOL = 1e-9, 1e-10


def test_blr_sigma_by_thirds():
    assert blr_sigma_diag(5) == (2.0, 1.0, 1.0, 0.4, 0.4)
    assert blr_sigma_diag(6) == (2.0, 2.0, 1.0, 1.0, 0.4, 0.4)
    assert blr_sigma_diag(1) == (0.4,)


def test_kernels_match_definitions():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    k = RBFKernel(alpha=1.3, lengthscale=0.7)
    brute = 1.3**2 * np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1) / 0.7**2)
    np.testing.assert_allclose(k(X), brute, rtol=1e-12, atol=1e-14)
    ard = ARDRBFKernel(alpha=1.3, lengthscales=(0.7, 0.7, 0.7))
    np.testing.assert_allclose(ard(X), brute, rtol=1e-12, atol=1e-14)
    lin = LinearKernel(sigma_diag=(2.0, 1.0, 0.4))
    np.testing.assert_allclose(lin(X), X @ np.diag([2.0, 1.0, 0.4]) @ X.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lin.diag(X), np.diag(lin(X)), rtol=1e-12, atol=1e-14)


def test_expected_rbf_closed_form_monte_carlo():
    """rho = E k(x,x') against 2e5 Monte-Carlo pairs; tolerance 5 standard errors."""
    rng = np.random.default_rng(1)
    d, ell = 4, 0.8
    x = rng.normal(size=(200_000, d)) / np.sqrt(d)
    xp = rng.normal(size=(200_000, d)) / np.sqrt(d)
    vals = np.exp(-0.5 * ((x - xp) ** 2).sum(-1) / ell**2)
    se = vals.std() / np.sqrt(len(vals))
    assert abs(vals.mean() - expected_rbf_gaussian(1.0, ell, d)) < 5 * se
    x0 = np.array([0.3, -0.2, 0.1, 0.5])
    vals0 = np.exp(-0.5 * ((x0 - xp) ** 2).sum(-1) / ell**2)
    se0 = vals0.std() / np.sqrt(len(vals0))
    assert abs(vals0.mean() - expected_rbf_gaussian_given(x0, 1.0, ell)) < 5 * se0


@pytest.mark.parametrize("kind", ["rbf", "linear"])
def test_posterior_predictive_matches_sklearn(kind):
    rng = np.random.default_rng(2)
    n, d, s2 = 60, 3, 0.04
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    Y = rng.normal(size=n)
    Xq = rng.normal(size=(5, d)) / np.sqrt(d)
    if kind == "rbf":
        ours = RBFKernel(alpha=1.2, lengthscale=0.8)
        sk = ConstantKernel(1.2**2, "fixed") * RBF(0.8, "fixed")
    else:
        ours = LinearKernel(sigma_diag=(1.0, 1.0, 1.0))
        sk = DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    gpr = GaussianProcessRegressor(kernel=sk, alpha=s2, optimizer=None, normalize_y=False).fit(X, Y)
    m_ref, sd_ref = gpr.predict(Xq, return_std=True)
    mu, tau = posterior_predictive(ours, X, Y, Xq, s2)
    np.testing.assert_allclose(mu, m_ref, rtol=RTOL, atol=ATOL)
    # sklearn's std is of the latent f; the PPD of y adds the noise variance.
    np.testing.assert_allclose(tau, sd_ref**2 + s2, rtol=1e-8, atol=1e-10)
    lml_ref = gpr.log_marginal_likelihood_value_
    np.testing.assert_allclose(
        log_marginal_likelihood(ours, X, Y, s2), lml_ref, rtol=RTOL, atol=1e-8
    )


def test_batched_equals_loop():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 20, 2))
    Y = rng.normal(size=(4, 20))
    Xq = rng.normal(size=(4, 3, 2))
    k = RBFKernel(1.0, 0.8)
    mu, tau = posterior_predictive(k, X, Y, Xq, 0.2)
    for b in range(4):
        m1, t1 = posterior_predictive(k, X[b], Y[b], Xq[b], 0.2)
        np.testing.assert_allclose(mu[b], m1, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(tau[b], t1, rtol=1e-12, atol=1e-13)


def test_mixture_weights_are_posterior():
    """Weights = prior x marginal likelihood, normalised; one component reduces to the GP."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 2)) / np.sqrt(2)
    Y = rng.normal(size=30)
    Xq = rng.normal(size=(4, 2)) / np.sqrt(2)
    ks = [RBFKernel(1.0, ell) for ell in (0.4, 0.8)]
    mix = mixture_ppd(ks, [0.04, 0.09], [0.5, 0.5], X, Y, Xq)
    l = np.array(
        [log_marginal_likelihood(k, X, Y, s) for k, s in zip(ks, [0.04, 0.09], strict=True)]
    )
    w = np.exp(l - l.max())
    np.testing.assert_allclose(mix.weights, w / w.sum(), rtol=1e-12, atol=1e-14)
    one = mixture_ppd(ks[:1], [0.04], [1.0], X, Y, Xq)
    mu, tau = posterior_predictive(ks[0], X, Y, Xq, 0.04)
    np.testing.assert_allclose(one.mean(), mu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(one.cdf(mu), 0.5, rtol=1e-12, atol=1e-14)


def test_empirical_bayes_recovers_and_beats_truth():
    """The maximiser's LML is at least the LML at the generating parameters (it is a maximiser)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(150, 2))
    true = ARDRBFKernel(alpha=1.0, lengthscales=(0.6, 1.2))
    G = true(X) + 0.09 * np.eye(150)
    Y = np.linalg.cholesky(G) @ rng.normal(size=150)
    fit = fit_empirical_bayes(X, Y, n_restarts=3, rng=rng)
    assert fit.log_marginal_likelihood >= log_marginal_likelihood(true, X, Y, 0.09) - 1e-8
    np.testing.assert_allclose(
        fit.log_marginal_likelihood,
        log_marginal_likelihood(fit.kernel, X, Y, fit.noise_var),
        rtol=1e-10,
        atol=1e-8,
    )


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(noise_var=0.0), "noise_var"),
        (dict(noise_var=-1.0), "noise_var"),
        (dict(X=np.zeros((0, 2)), Y=np.zeros(0)), "n = 0"),
        (dict(Y=np.zeros(4)), "Y must have shape"),
        (dict(X=np.full((5, 2), np.nan)), "X contains NaN"),
        (dict(Xq=np.zeros((2, 3))), "Xq must have shape"),
    ],
)
def test_bad_input_names_argument(bad, match):
    args = dict(X=np.zeros((5, 2)), Y=np.zeros(5), Xq=np.zeros((2, 2)), noise_var=0.1)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        posterior_predictive(RBFKernel(), **args)


@pytest.mark.parametrize(
    "ctor, match",
    [
        (lambda: RBFKernel(alpha=0.0), "alpha"),
        (lambda: RBFKernel(lengthscale=-1.0), "lengthscale"),
        (lambda: LinearKernel(sigma_diag=(1.0, 0.0)), "sigma_diag"),
        (lambda: ARDRBFKernel(lengthscales=(1.0, float("nan"))), "lengthscales"),
        (lambda: make_kernel("matern"), "kernel name"),
        (
            lambda: mixture_ppd(
                [RBFKernel()], [0.1, 0.2], [1.0], np.zeros((3, 1)), np.zeros(3), np.zeros((1, 1))
            ),
            "noise_var",
        ),
    ],
)
def test_bad_kernel_params(ctor, match):
    with pytest.raises(ValueError, match=match):
        ctor()
