"""experiments.reference: the exact-PPD floor uses gp.mixture_ppd, checked against an independent
dense computation (np.linalg.solve and scipy.stats.multivariate_normal)."""

import numpy as np
import pytest
import scipy.special
import scipy.stats

from pfntheory.experiments.reference import components, expected_crps, ppd_at_query
from pfntheory.infra.config import TaskSpec
from pfntheory.maths.gp import mixture_ppd
from pfntheory.maths.spectral import sample_design

# float64 solves of SPD systems with cond(G + s2 I) <= 1 + n / min s2 = 1 + 12 / 0.01 ~ 1e3:
# round-off ~ cond * n * eps ~ 1e-12; 1e-9 leaves margin.
RTOL, ATOL = 1e-9, 1e-10


@pytest.mark.parametrize("h_true", [0, 4, 8])
def test_ppd_at_query_matches_mixture_ppd_and_dense(h_true):
    """Weights, mu_h, tau_h of ppd_at_query equal gp.mixture_ppd on the same Y, and a dense
    solve (mu_h = k_x^T A_h^{-1} Y, tau_h = k(x,x) + s2 - k_x^T A_h^{-1} k_x, w_h oc N(Y;
    0, A_h))."""
    task = TaskSpec(kind="hier_rbf", d=2)
    kernels, nv = components(task)
    rng = np.random.default_rng(3)
    X = sample_design(12, 2, rng, "gaussian")
    xq = sample_design(1, 2, rng, "gaussian")[0]
    state = rng.bit_generator.state
    w, mu, tau = ppd_at_query(kernels, nv, X, xq, rng=rng, h_true=h_true)
    # the same Y, redrawn from the same generator state
    rng2 = np.random.default_rng()
    rng2.bit_generator.state = state
    n, H = X.shape[0], len(kernels)
    Y = np.linalg.cholesky(kernels[h_true](X) + nv[h_true] * np.eye(n)) @ rng2.standard_normal(n)
    ppd = mixture_ppd(kernels, nv, np.full(H, 1 / H), X, Y, xq[None])
    np.testing.assert_allclose(w, ppd.weights, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(mu, ppd.mu[:, 0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(tau, ppd.tau[:, 0], rtol=RTOL, atol=ATOL)
    lml = np.empty(H)
    for h, (k, s2) in enumerate(zip(kernels, nv, strict=True)):
        A = k(X) + s2 * np.eye(n)
        kx = k(X, xq[None])[:, 0]
        np.testing.assert_allclose(mu[h], kx @ np.linalg.solve(A, Y), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(
            tau[h], k.diag(xq[None])[0] + s2 - kx @ np.linalg.solve(A, kx), rtol=RTOL, atol=ATOL
        )
        lml[h] = scipy.stats.multivariate_normal(np.zeros(n), A).logpdf(Y)
    np.testing.assert_allclose(w, np.exp(lml - scipy.special.logsumexp(lml)), rtol=1e-8, atol=ATOL)


def test_expected_crps_of_a_gaussian():
    """E CRPS(N(mu, tau), y ~ N(mu, tau)) = sqrt(tau / pi) (Gneiting & Raftery 2007), to
    round-off."""
    tau = np.array([0.04, 1.0, 9.0])
    got = expected_crps(np.ones((3, 1)), np.zeros((3, 1)), tau[:, None])
    np.testing.assert_allclose(got, np.sqrt(tau / np.pi), rtol=1e-12, atol=0)
