"""Unit tests of pfntheory.nn.priors: oracle agreement with pfntheory.maths.gp, laws of the
draws, errors."""

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import torch

from pfntheory.maths.gp import log_marginal_likelihood, mixture_ppd, posterior_predictive
from pfntheory.nn.priors import (
    TaskSpec,
    calibrate_task_interval,
    exact_kernels,
    sample_batch,
    sample_context_size,
)

# Both sides solve the same SPD system (cond(G + s2 I) <= 1 + n max k / s2 ~ 1e3 here) by Cholesky
# in float64: agreement to ~cond * n * eps ~ 1e-11 is expected; 1e-9 leaves margin.
RTOL, ATOL = 1e-9, 1e-10

TASKS = [
    TaskSpec(kind="blr", d=3),
    TaskSpec(kind="rbf", d=2),
    TaskSpec(kind="rbf", d=4, lengthscale=0.5, alpha=1.3, noise_var=0.1, covariates="uniform"),
    TaskSpec(kind="ard_rbf", d=3, lengthscales=(0.5, 1.0, 2.0), alpha=0.7),
    TaskSpec(kind="hier_rbf", d=2),
]
IDS = ["blr", "rbf", "rbf-uniform", "ard", "hier"]


def _draw(task, B=6, n=25, seed=0, interval=(-3.0, 3.0)):
    return sample_batch(
        task, B, n, torch.Generator().manual_seed(seed), dtype=torch.float64, interval=interval
    )


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_oracle_matches_exact_gp(task):
    """The oracle (mu, tau) from the sampling Cholesky factor equals pfntheory.maths.gp on the same
    data.

    Fails if the v = L^{-1} k_x / mu = v.z shortcut, the kernels, or the mixture weights are wrong.
    """
    bt = _draw(task)
    kernels, noise_var, prior = exact_kernels(task)
    X, Y, xq = bt.X.numpy(), bt.Y.numpy(), bt.xq.numpy()[:, None, :]
    if len(kernels) == 1:
        mu, tau = posterior_predictive(kernels[0], X, Y, xq, noise_var[0])
        np.testing.assert_allclose(bt.mu.numpy(), mu[:, 0], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(bt.tau.numpy(), tau[:, 0], rtol=RTOL, atol=ATOL)
        assert bt.weights is None
    else:
        ppd = mixture_ppd(kernels, noise_var, prior, X, Y, xq)
        np.testing.assert_allclose(bt.weights.numpy(), ppd.weights, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(bt.mu_h.numpy(), ppd.mu[..., 0], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(bt.tau_h.numpy(), ppd.tau[..., 0], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(bt.mu.numpy(), ppd.mean()[:, 0], rtol=RTOL, atol=ATOL)
        var = ppd.second_moment()[:, 0] - ppd.mean()[:, 0] ** 2
        np.testing.assert_allclose(bt.tau.numpy(), var, rtol=1e-8, atol=ATOL)
    assert bt.X.shape == (6, 25, task.d) and bt.Y.shape == (6, 25) and bt.xq.shape == (6, task.d)
    assert bt.y.shape == (6,) and bt.mu.dtype == torch.float64


def test_context_labels_have_the_marginal_law():
    """Y = Lc z has covariance G + s2 I: the whitened labels Lc^{-1} Y are N(0, I).

    Checked by the marginal log-likelihood: its mean over 400 instances must match the exact
    expectation -n/2 (1 + log 2 pi) - 1/2 E log det within 4 standard errors. Fails if Y were drawn
    with the wrong scale (e.g. without noise: E[z'z] would differ by ~ n s2 / lambda).
    """
    task = TaskSpec(kind="rbf", d=2)
    n, B = 10, 400
    bt = sample_batch(task, B, n, torch.Generator().manual_seed(1), dtype=torch.float64)
    k = exact_kernels(task)[0][0]
    X, Y = bt.X.numpy(), bt.Y.numpy()
    lml = log_marginal_likelihood(k, X, Y, task.noise_var)
    logdet = np.linalg.slogdet(k(X) + task.noise_var * np.eye(n))[1]
    quad = -2 * (lml + 0.5 * logdet + 0.5 * n * np.log(2 * np.pi))  # = Y' (G+s2I)^{-1} Y ~ chi2_n
    # chi^2_n has mean n and sd sqrt(2n); 4 standard errors of the mean over B instances
    assert abs(quad.mean() - n) < 4 * np.sqrt(2 * n / B), quad.mean()


@pytest.mark.parametrize("task", [TASKS[1], TASKS[4]], ids=["rbf", "hier"])
def test_query_label_pit_is_uniform(task):
    """y ~ the untruncated PPD: its PIT F(y) under the oracle is Unif(0, 1) (KS test, p > 1e-3).

    Fails if y were drawn around the wrong mean/variance or, for the mixture, from the wrong
    component weights. With a fixed seed the test is deterministic; 1e-3 makes a false alarm rare.
    """
    bt = sample_batch(task, 2000, 8, torch.Generator().manual_seed(2), dtype=torch.float64)
    y = bt.y.numpy()[:, None]
    if bt.weights is None:
        u = scipy.stats.norm.cdf(y[:, 0], bt.mu.numpy(), np.sqrt(bt.tau.numpy()))
    else:
        u = np.sum(
            bt.weights.numpy()
            * scipy.stats.norm.cdf(y, bt.mu_h.numpy(), np.sqrt(bt.tau_h.numpy())),
            -1,
        )
    assert scipy.stats.kstest(u, "uniform").pvalue > 1e-3


def test_truncated_labels_follow_truncated_ppd():
    """With an interval, y lies in (a, b] and its PIT under the truncated PPD is uniform.

    The interval (-0.6, 0.9] cuts deep into the PPDs (tau >= 0.04), so a sampler that ignored the
    truncation would fail both the support and the KS check.
    """
    task = TaskSpec(kind="rbf", d=2)
    a, b = -0.6, 0.9
    bt = sample_batch(
        task, 2000, 8, torch.Generator().manual_seed(3), dtype=torch.float64, interval=(a, b)
    )
    y, mu, s = bt.y.numpy(), bt.mu.numpy(), np.sqrt(bt.tau.numpy())
    assert np.all((y > a) & (y <= b))
    u = scipy.stats.truncnorm.cdf(y, (a - mu) / s, (b - mu) / s, loc=mu, scale=s)
    assert scipy.stats.kstest(u, "uniform").pvalue > 1e-3


def test_truncnorm_far_tail_stays_inside():
    """An interval many standard deviations away from the PPD still yields labels inside (a, b]."""
    task = TaskSpec(kind="rbf", d=2)
    bt = sample_batch(
        task, 50, 5, torch.Generator().manual_seed(4), dtype=torch.float64, interval=(40.0, 41.0)
    )
    assert torch.all((bt.y > 40.0) & (bt.y <= 41.0)) and torch.isfinite(bt.y).all()


@pytest.mark.parametrize("cov,var", [("gaussian", 1 / 4), ("uniform", 1 / 12)])
def test_covariate_laws(cov, var):
    """x ~ N(0, I/d) or Unif[-1/sqrt(d), 1/sqrt(d)]^d (per-coordinate variance 1/d resp. 1/(3d)).

    Sample variance of 2000*9*4 coordinates within 5 standard errors (sd of s^2 ~ var sqrt(2/N));
    the uniform law is also checked to respect its support.
    """
    task = TaskSpec(kind="rbf", d=4, covariates=cov)
    bt = _draw(task, B=2000, n=8, interval=None)
    x = torch.cat([bt.X.reshape(-1), bt.xq.reshape(-1)]).numpy()
    assert abs(x.var() - var) < 5 * var * np.sqrt(2 / x.size) * 2
    if cov == "uniform":
        assert np.abs(x).max() <= 0.5


def test_same_generator_state_same_batch():
    """Draws are a function of the generator alone (the basis of exact resume)."""
    t = TASKS[4]
    b1, b2 = _draw(t, seed=7), _draw(t, seed=7)
    for f in ("X", "Y", "xq", "y", "mu", "tau", "weights"):
        assert torch.equal(getattr(b1, f), getattr(b2, f))
    assert not torch.equal(b1.y, _draw(t, seed=8).y)


def test_dtype_and_context_size():
    bt = sample_batch(TASKS[1], 3, 4, torch.Generator().manual_seed(0), dtype=torch.float32)
    assert (
        bt.X.dtype == torch.float32
        and bt.y.dtype == torch.float32
        and bt.tau.dtype == torch.float64
    )
    g = torch.Generator().manual_seed(0)
    ns = [sample_context_size(3, 5, g) for _ in range(200)]
    assert set(ns) == {3, 4, 5}
    assert sample_context_size(7, 7, g) == 7


def test_calibrated_interval_has_outside_mass():
    """The calibrated (a, b] leaves the target mass outside, re-measured on fresh instances.

    Fresh 2000 instances: the average exact PPD mass outside (a, b] must be within a factor 2 of
    0.01 (Monte-Carlo calibration with 2000 instances, a deliberately large target so it is
    measurable); also a < 0 < b for a centred prior.
    """
    task = TaskSpec(kind="rbf", d=2)
    a, b = calibrate_task_interval(task, 8, 16, n_instances=500, outside_mass=0.01, seed=0)
    assert a < 0 < b
    bt = sample_batch(task, 2000, 12, torch.Generator().manual_seed(99), dtype=torch.float64)
    mu, s = bt.mu.numpy(), np.sqrt(bt.tau.numpy())
    out = np.mean(scipy.stats.norm.cdf((a - mu) / s) + scipy.stats.norm.sf((b - mu) / s))
    assert 0.005 < out < 0.02, out
    a2, b2 = calibrate_task_interval(TaskSpec(kind="hier_rbf", d=2), 8, 16, n_instances=300)
    assert a2 < 0 < b2


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(kind="gp", d=2), "task kind"),
        (dict(kind="rbf", d=0), "d must be"),
        (dict(kind="rbf", d=2, noise_var=0.0), "noise_var"),
        (dict(kind="rbf", d=2, covariates="laplace"), "covariates"),
        (dict(kind="ard_rbf", d=2), "requires lengthscales"),
        (dict(kind="ard_rbf", d=2, lengthscales=(1.0,)), "lengthscales must have 2"),
        (dict(kind="blr", d=2, sigma_diag=(1.0, -1.0)), "sigma_diag"),
        # values the prior would not read are refused, not dropped
        (dict(kind="rbf", d=2, lengthscales=(1.0, 2.0)), "lengthscales applies to task kind"),
        (dict(kind="hier_rbf", d=2, sigma_diag=(1.0, 2.0)), "sigma_diag applies to task kind"),
    ],
)
def test_task_config_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        TaskSpec(**kw)


def test_sample_batch_errors():
    g = torch.Generator().manual_seed(0)
    t = TASKS[1]
    with pytest.raises(ValueError, match="batch_size"):
        sample_batch(t, 0, 5, g)
    with pytest.raises(ValueError, match="n must be"):
        sample_batch(t, 2, 0, g)
    with pytest.raises(ValueError, match="interval"):
        sample_batch(t, 2, 5, g, interval=(1.0, -1.0))
    with pytest.raises(ValueError, match="generator"):
        sample_batch(t, 2, 5, 0)
    with pytest.raises(ValueError, match="task"):
        sample_batch({"kind": "rbf"}, 2, 5, g)
    with pytest.raises(ValueError, match="n_min <= n_max"):
        sample_context_size(9, 3, g)


# ----------------------------------------------------------------------------------------------
# weight-space BLR sampler, Cholesky failures, size limits
# ----------------------------------------------------------------------------------------------


def test_blr_weight_space_law_equals_function_space_law():
    """Y = Phi w + sigma e (weight space) has the function-space law N(0, G + sigma^2 I).

    Whitened by the function-space factor, z = chol(G + s2 I)^{-1} Y must be N(0, I_n): over
    B = 4000 instances (fixed seed) every entry of the sample mean (SE 1/sqrt(B)) and of the sample
    covariance (SE 1/sqrt(B) off the diagonal, sqrt(2/B) on it) lies within K = 4.5 standard
    errors of 0 resp. I (27 entries: a false alarm has probability < 27 * 7e-6). A sampler that
    dropped the noise, used Sigma instead of Sigma^{1/2}, or reused one w across instances fails.
    """
    K = 4.5
    task = TaskSpec(kind="blr", d=5)
    n, B = 6, 4000
    bt = sample_batch(task, B, n, torch.Generator().manual_seed(11), dtype=torch.float64)
    k = exact_kernels(task)[0][0]
    X, Y = bt.X.numpy(), bt.Y.numpy()
    Lc = np.linalg.cholesky(k(X) + task.noise_var * np.eye(n))
    z = np.stack([scipy.linalg.solve_triangular(Lc[i], Y[i], lower=True) for i in range(B)])
    mean = z.mean(0)
    assert np.all(np.abs(mean) < K / np.sqrt(B)), mean
    cov = z.T @ z / B
    se = np.where(np.eye(n, dtype=bool), np.sqrt(2.0 / B), 1.0 / np.sqrt(B))
    dev = np.abs(cov - np.eye(n)) / se
    assert dev.max() < K, f"max standardised deviation {dev.max():.2f} > {K}"


def test_blr_ppd_equals_gp_at_training_size():
    """At the benchmark's size (d = 5, n = 300) the d x d weight-space oracle equals
    gp.py's n x n one.

    Round-off: both solve SPD systems in float64 with cond(G + s2 I) <= 1 + n max|phi|^2 / s2
    ~ 1e4, so agreement to ~cond * n * eps ~ 1e-9 relative; RTOL = ATOL = 1e-8 leaves margin.
    """
    task = TaskSpec(kind="blr", d=5)
    bt = _draw(task, B=8, n=300, seed=5)
    k = exact_kernels(task)[0][0]
    mu, tau = posterior_predictive(
        k, bt.X.numpy(), bt.Y.numpy(), bt.xq.numpy()[:, None, :], task.noise_var
    )
    np.testing.assert_allclose(bt.mu.numpy(), mu[:, 0], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(bt.tau.numpy(), tau[:, 0], rtol=1e-8, atol=1e-8)


def test_blr_query_label_pit_is_uniform():
    """The BLR query label is drawn from its oracle PPD: PIT uniform (KS p > 1e-3, fixed seed)."""
    bt = sample_batch(TASKS[0], 2000, 8, torch.Generator().manual_seed(6), dtype=torch.float64)
    u = scipy.stats.norm.cdf(bt.y.numpy(), bt.mu.numpy(), np.sqrt(bt.tau.numpy()))
    assert scipy.stats.kstest(u, "uniform").pvalue > 1e-3


def test_cholesky_failure_is_a_clear_error():
    """A Gram matrix that is not numerically positive definite (duplicate-free but nearly
    collinear 1-d RBF inputs with noise 1e-300) raises ValueError, not torch's _LinAlgError."""
    task = TaskSpec(kind="rbf", d=1, noise_var=1e-300)
    with pytest.raises(ValueError, match="not numerically positive definite"):
        sample_batch(task, 2, 80, torch.Generator().manual_seed(0), dtype=torch.float64)


@pytest.mark.parametrize("kind,B,n", [("rbf", 2, 20_000), ("blr", 10_000, 100_000)])
def test_size_limit_before_allocating(kind, B, n):
    """Requests beyond MAX_ELEMENTS float64 values are refused up front (the call returns
    at once)."""
    from pfntheory.nn.priors import MAX_ELEMENTS

    assert max(n * n if kind == "rbf" else 0, B * n * 4) > MAX_ELEMENTS
    with pytest.raises(ValueError, match="MAX_ELEMENTS"):
        sample_batch(TaskSpec(kind=kind, d=4), B, n, torch.Generator().manual_seed(0))


def test_task_dimension_limit():
    with pytest.raises(ValueError, match="d must be <="):
        TaskSpec(kind="blr", d=10**9)


@pytest.mark.parametrize("task", [TASKS[1], TASKS[4]], ids=["rbf", "hier"])
def test_sub_batches_do_not_change_the_draws(task, monkeypatch):
    """Factorising the Gram matrices in sub-batches (GRAM_CHUNK_ELEMENTS) gives the same instances
    and oracle as one batch: the random numbers are drawn for the whole batch first, and each
    instance's Cholesky factor is computed independently (equal up to float64 round-off of the
    batched kernels, rtol 1e-12)."""
    import pfntheory.nn.priors as priors

    ref = _draw(task, B=7, n=12, seed=9)
    monkeypatch.setattr(priors, "GRAM_CHUNK_ELEMENTS", 2 * 12 * 12)  # sub-batches of 2
    got = _draw(task, B=7, n=12, seed=9)
    for f in ("X", "Y", "xq", "y", "mu", "tau", "weights", "mu_h", "tau_h"):
        a, b = getattr(got, f), getattr(ref, f)
        if a is None:
            assert b is None
            continue
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=f)


def _gram_out_of_place(self, A, B):
    """The rbf Gram matrix as sample_batch computed it before the in-place product (the reference
    of the next test): one out-of-place baddbmm over the materialised sum of squared norms."""
    f = torch.as_tensor(self.feat, dtype=A.dtype, device=A.device)
    A, B = A * f, B * f
    if self.linear:
        return A @ B.transpose(-1, -2)
    D = torch.baddbmm(
        (A * A).sum(-1)[..., :, None] + (B * B).sum(-1)[..., None, :],
        A,
        B.transpose(-1, -2),
        alpha=-2.0,
    )
    return D.clamp_(min=0.0).mul_(-0.5).exp_().mul_(self.alpha2)


@pytest.mark.parametrize(
    "task, B, n",
    [
        (TaskSpec(kind="rbf", d=2), 128, 64),
        (TaskSpec(kind="rbf", d=2), 128, 89),
        (TaskSpec(kind="rbf", d=2), 128, 128),
        (TaskSpec(kind="rbf", d=16), 16, 300),
        (TaskSpec(kind="ard_rbf", d=3, lengthscales=(0.5, 1.0, 2.0)), 32, 77),
        (TaskSpec(kind="hier_rbf", d=2), 16, 40),
    ],
)
def test_committed_draws_are_bitwise_unchanged(task, B, n, monkeypatch):
    """The training data of committed runs replay bit for bit: sample_batch with the Gram matrix's
    product accumulated in place (no copy of the sum) and the Cholesky factor in place (the fused
    ``chol_lower_``, when the extension is there) gives exactly the batch of the computation they
    replaced (an out-of-place baddbmm, torch.linalg.cholesky_ex), at the training shapes (config
    (a): batch 128, n in [64, 128]) and others. No tolerance: torch.equal. How it can fail:
    computing the product first and adding the norms afterwards (another rounding) changes Y in
    the last bits at these shapes, as the check finds when the reference is altered that way."""
    from pfntheory.nn import fused, priors

    got = sample_batch(task, B, n, torch.Generator().manual_seed(5), interval=(-3.0, 3.0))
    monkeypatch.setattr(priors._Component, "gram", _gram_out_of_place)
    with fused.enabled(False):  # torch.linalg.cholesky_ex
        ref = sample_batch(task, B, n, torch.Generator().manual_seed(5), interval=(-3.0, 3.0))
    for f in ("X", "Y", "xq", "y", "mu", "tau", "weights", "mu_h", "tau_h"):
        a, b = getattr(got, f), getattr(ref, f)
        assert (a is None and b is None) or torch.equal(a, b), f


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_in_place_factor_is_torchs(dtype):
    """The fused ``chol_lower_`` (the lower triangle copied column-major per instance, LAPACK's
    potrf 'L' there, written back over A) is bitwise torch.linalg.cholesky_ex's factor, strides
    and info, on Gram matrices that are not bitwise symmetric (the upper triangle is ignored, as
    torch ignores it) and with failing instances. How it can fail: an upper-triangle call ('U') on
    the row-major buffer gives another rounding (measured 7e-6 in float32)."""
    from pfntheory.nn import fused, priors

    with fused.enabled(True):
        if not fused.available():
            pytest.skip(f"no fused extension here: {fused.unavailable_reason()}")
        if not fused.lapack():
            pytest.skip("torch's library has no LAPACK potrf")
        c = priors._components(TaskSpec(kind="rbf", d=2))[0]
        for n in (64, 89, 128):
            X = torch.randn(16, n, 2, generator=torch.Generator().manual_seed(n), dtype=dtype)
            A = c.gram(X, X)
            A.diagonal(dim1=-2, dim2=-1).add_(c.noise_var)
            A[3, 0, 1:] += 1.0  # upper-triangle entries the factor must not read
            A[5, 7, 7] = -1.0  # leading minor 8 not positive definite
            ref, info_ref = torch.linalg.cholesky_ex(A)
            info = torch.ops.pfntheory_fused.chol_lower_(A)
            assert torch.equal(info, info_ref) and int(info[5]) == 8
            ok = info == 0
            assert torch.equal(A.mT[ok], ref[ok]) and A.mT.stride() == ref.stride()
