"""Unit tests of pfntheory.maths.metrics against independent references (quad, scipy.stats,
Monte Carlo)."""

import numpy as np
import pytest
import scipy.integrate
import scipy.optimize
import scipy.stats

from pfntheory.maths.discretize import (
    gaussian_interval_mass,
    histogram_density,
    truncnorm_bin_masses,
)
from pfntheory.maths.metrics import (
    central_interval,
    coverage,
    gaussian_crps,
    gaussian_interval,
    histogram_cdf,
    histogram_crps,
    histogram_moments,
    histogram_nll,
    histogram_quantile,
    interval_width,
    mixture_cdf,
    mixture_components,
    mixture_crps,
    mixture_interval,
    mixture_quantile,
    tv_gaussian_histogram,
    tv_truncnorm_histogram,
)
from pfntheory.maths.tv_density import tv_density_histogram

QUAD = dict(epsabs=1e-13, epsrel=1e-12, limit=400)
#: quad reaches ~1e-12 per bin; sums over <= 30 bins: atol 1e-10 on TV / CRPS / moments.
ATOL_QUAD = 1e-10


def _case(seed, C=12, zero_bin=True):
    rng = np.random.default_rng(seed)
    e = np.sort(np.r_[-2.0, rng.uniform(-2, 3, C - 1), 3.0])
    p = rng.dirichlet(np.ones(C))
    if zero_bin:
        p[rng.integers(C)] = 0.0
        p /= p.sum()
    return rng, e, p


@pytest.mark.parametrize("seed", range(4))
def test_tv_truncnorm_against_quad(seed):
    rng, e, p = _case(seed)
    mu, tau = rng.normal(), rng.uniform(0.05, 2)
    s = np.sqrt(tau)
    Z = gaussian_interval_mass(mu, tau, e[0], e[-1])
    f = lambda y: abs(scipy.stats.norm.pdf(y, mu, s) / Z - histogram_density(e, p, y))  # noqa: E731
    ref = 0.5 * sum(scipy.integrate.quad(f, e[c], e[c + 1], **QUAD)[0] for c in range(len(p)))
    np.testing.assert_allclose(
        tv_truncnorm_histogram(mu, tau, e, p), ref, rtol=1e-9, atol=ATOL_QUAD
    )
    np.testing.assert_allclose(
        tv_density_histogram(
            lambda y: scipy.stats.norm.pdf(y, mu, s),
            lambda y: scipy.stats.norm.cdf(y, mu, s),
            e,
            p,
            mass=Z,
        ),
        ref,
        rtol=1e-9,
        atol=ATOL_QUAD,
    )
    # untruncated p_n: inside integral with p_n, plus the tail mass, halved
    g = lambda y: abs(scipy.stats.norm.pdf(y, mu, s) - histogram_density(e, p, y))  # noqa: E731
    ref_u = 0.5 * (
        sum(scipy.integrate.quad(g, e[c], e[c + 1], **QUAD)[0] for c in range(len(p))) + 1 - Z
    )
    np.testing.assert_allclose(
        tv_gaussian_histogram(mu, tau, e, p), ref_u, rtol=1e-9, atol=ATOL_QUAD
    )


def test_tv_batched_and_limits():
    e = np.linspace(-3, 3, 65)
    mu = np.array([[0.0, 0.5], [-0.5, 1.0]])
    tau = np.array([[1.0, 0.3], [0.7, 2.0]])
    q = truncnorm_bin_masses(mu, tau, e)
    tv = tv_truncnorm_histogram(mu, tau, e, q)
    assert tv.shape == (2, 2)
    for i in np.ndindex(2, 2):
        np.testing.assert_allclose(
            tv[i], tv_truncnorm_histogram(mu[i], tau[i], e, q[i]), rtol=1e-14, atol=0
        )
    far = np.zeros(64)
    far[0] = 1.0  # all mass in the first bin: TV close to 1
    assert 0.9 < tv_truncnorm_histogram(3.0, 0.1, e, far) <= 1.0
    # finer bins -> smaller TV (first order)
    tvs = [
        tv_truncnorm_histogram(
            0.2,
            0.5,
            np.linspace(-3, 3, C + 1),
            truncnorm_bin_masses(0.2, 0.5, np.linspace(-3, 3, C + 1)),
        )
        for C in (16, 64, 256)
    ]
    assert tvs[0] > tvs[1] > tvs[2]


@pytest.mark.parametrize(
    "bad,name",
    [
        (dict(tau=-1.0), "tau"),
        (dict(probs=np.ones(5) / 5), "probs"),
        (dict(probs=np.full(12, 0.09)), "probs"),
        (dict(mu=np.nan), "mu"),
        (dict(edges=np.linspace(1, -1, 13)), "edges"),
    ],
)
def test_tv_bad_input(bad, name):
    args = dict(mu=0.0, tau=1.0, edges=np.linspace(-2, 2, 13), probs=np.ones(12) / 12)
    args.update(bad)
    with pytest.raises(ValueError, match=name):
        tv_truncnorm_histogram(**args)


@pytest.mark.parametrize("seed", range(3))
def test_moments_against_quad(seed):
    _, e, p = _case(seed)
    m1, m2 = histogram_moments(e, p)
    r1 = sum(
        scipy.integrate.quad(lambda y: y * histogram_density(e, p, y), e[c], e[c + 1], **QUAD)[0]
        for c in range(12)
    )
    r2 = sum(
        scipy.integrate.quad(lambda y: y * y * histogram_density(e, p, y), e[c], e[c + 1], **QUAD)[
            0
        ]
        for c in range(12)
    )
    np.testing.assert_allclose([m1, m2], [r1, r2], rtol=1e-10, atol=ATOL_QUAD)
    m1b, m2b = histogram_moments(e, np.tile(p, (3, 1)))
    assert m1b.shape == (3,) and m2b.shape == (3,)


@pytest.mark.parametrize("seed", range(3))
def test_quantile_inverts_cdf(seed):
    _, e, p = _case(seed)
    u = np.linspace(0.001, 0.999, 57)
    y = histogram_quantile(e, p, u)
    np.testing.assert_allclose(histogram_cdf(e, p, y), u, rtol=0, atol=1e-13)
    assert histogram_quantile(e, p, 0.0) == e[0] and histogram_quantile(e, p, 1.0) <= e[-1]
    assert np.all(np.diff(y) >= 0)


def test_quantile_skips_empty_bins():
    """Generalised inverse inf{y : F(y) >= u}: the 0.5 quantile of mass (0.5, 0, 0.5) is the right
    end of the first bin."""
    e = np.array([0.0, 1.0, 2.0, 3.0])
    p = np.array([0.5, 0.0, 0.5])
    assert histogram_quantile(e, p, 0.5) == pytest.approx(1.0, abs=1e-15)
    assert histogram_quantile(e, p, 0.75) == pytest.approx(2.5, abs=1e-15)
    with pytest.raises(ValueError, match="q"):
        histogram_quantile(e, p, 1.5)


def test_coverage_monte_carlo():
    """Central 90% interval of a histogram covers draws from that histogram with frequency 0.9
    within 4 binomial standard errors (n = 200000, fixed seed)."""
    rng, e, p = _case(7, zero_bin=False)
    n = 200000
    c = rng.choice(len(p), size=n, p=p)
    y = e[c] + rng.uniform(size=n) * np.diff(e)[c]
    lo, hi = central_interval(e, p, 0.9)
    cov = coverage(lo, hi, y)
    assert abs(cov - 0.9) <= 4 * np.sqrt(0.9 * 0.1 / n), cov
    assert interval_width(lo, hi) == pytest.approx(hi - lo)
    with pytest.raises(ValueError, match="level"):
        central_interval(e, p, 1.0)
    with pytest.raises(ValueError, match="hi"):
        coverage(1.0, 0.0, 0.5)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("where", ["inside", "left", "right"])
def test_histogram_crps_against_quad(seed, where):
    _, e, p = _case(seed)
    y = {"inside": 0.37, "left": -3.5, "right": 4.2}[where]
    f = lambda t: (histogram_cdf(e, p, t) - (t >= y)) ** 2  # noqa: E731
    pts = np.sort(np.r_[e, y])
    lo, hi = min(y, e[0]) - 1, max(y, e[-1]) + 1
    ref = sum(
        scipy.integrate.quad(f, u, v, **QUAD)[0]
        for u, v in zip(np.r_[lo, pts], np.r_[pts, hi], strict=True)
    )
    np.testing.assert_allclose(histogram_crps(e, p, y), ref, rtol=1e-10, atol=ATOL_QUAD)


def test_histogram_crps_batched_and_sample_identity():
    """CRPS = E|X - y| - E|X - X'|/2 (Gneiting & Raftery 2007), X from the histogram: Monte Carlo
    with 400000 draws within 4 standard errors; and batch shapes."""
    rng, e, p = _case(3, zero_bin=False)
    n = 400000
    c = rng.choice(len(p), size=n, p=p)
    x = e[c] + rng.uniform(size=n) * np.diff(e)[c]
    y = 0.8
    vals = np.abs(x - y) - 0.5 * np.abs(x - np.roll(x, 1))
    se = vals.std(ddof=1) / np.sqrt(n)
    assert abs(vals.mean() - histogram_crps(e, p, y)) <= 4 * se
    out = histogram_crps(e, np.tile(p, (2, 3, 1)), np.zeros((2, 3)))
    assert out.shape == (2, 3)


def test_histogram_crps_converges_to_gaussian_crps():
    """q* on ever finer bins over a wide interval: histogram CRPS -> Gaussian CRPS (error O(Delta^2)
    + tail mass 1e-15, here below 1e-5 at C = 2048)."""
    mu, tau, y = 0.3, 0.8, 1.1
    e = np.linspace(mu - 9, mu + 9, 2049)
    q = truncnorm_bin_masses(mu, tau, e)
    assert abs(histogram_crps(e, q, y) - gaussian_crps(mu, tau, y)) <= 1e-5


def test_gaussian_crps_and_interval_against_references():
    mu, tau, y = -0.4, 1.7, 0.9
    s = np.sqrt(tau)
    ref = scipy.integrate.quad(
        lambda t: (scipy.stats.norm.cdf(t, mu, s) - (t >= y)) ** 2, -30, 30, points=[y], **QUAD
    )[0]
    np.testing.assert_allclose(gaussian_crps(mu, tau, y), ref, rtol=1e-10, atol=ATOL_QUAD)
    lo, hi = gaussian_interval(mu, tau, 0.9)
    np.testing.assert_allclose(
        [lo, hi], scipy.stats.norm.interval(0.9, mu, s), rtol=1e-14, atol=1e-14
    )
    with pytest.raises(ValueError, match="tau"):
        gaussian_crps(0.0, 0.0, 1.0)


def test_histogram_nll():
    e = np.array([0.0, 1.0, 3.0])
    p = np.array([0.25, 0.75])
    np.testing.assert_allclose(histogram_nll(e, p, [0.5, 2.0]), -np.log([0.25, 0.375]), rtol=1e-15)
    assert np.isinf(histogram_nll(e, p, 3.5))


def test_mixture_helpers_against_references():
    w, mu, tau = np.array([0.2, 0.5, 0.3]), np.array([-1.0, 0.2, 1.5]), np.array([0.3, 0.6, 0.2])
    y = 0.4
    ref = scipy.integrate.quad(
        lambda t: (mixture_cdf(w, mu, tau, t) - (t >= y)) ** 2, -30, 30, points=[y], **QUAD
    )[0]
    np.testing.assert_allclose(mixture_crps(w, mu, tau, y), ref, rtol=1e-10, atol=ATOL_QUAD)
    for u in (0.05, 0.5, 0.95):
        r = scipy.optimize.brentq(
            lambda t, u=u: mixture_cdf(w, mu, tau, t) - u, -20, 20, xtol=1e-14
        )
        np.testing.assert_allclose(mixture_quantile(w, mu, tau, u), r, rtol=1e-12, atol=1e-12)
    lo, hi = mixture_interval(w, mu, tau, 0.9)
    np.testing.assert_allclose(
        [mixture_cdf(w, mu, tau, lo), mixture_cdf(w, mu, tau, hi)], [0.05, 0.95], atol=1e-13
    )
    # one component reduces to the Gaussian formulas
    np.testing.assert_allclose(
        mixture_crps([1.0], [0.3], [0.7], 1.2), gaussian_crps(0.3, 0.7, 1.2), rtol=1e-13
    )
    with pytest.raises(ValueError, match="weights"):
        mixture_crps([0.5, 0.6], [0, 1], [1, 1], 0.0)


def test_mixture_components_from_gp_mixture():
    from pfntheory.maths.gp import MixturePPD

    ppd = MixturePPD(
        weights=np.array([0.3, 0.7]),
        mu=np.array([[0.0, 1.0, 2.0], [0.5, 0.5, 0.5]]),
        tau=np.array([[1.0, 1.0, 1.0], [0.2, 0.3, 0.4]]),
    )
    w, mu, tau = mixture_components(ppd)
    assert w.shape == mu.shape == tau.shape == (3, 2)
    y = np.array([0.1, 0.9, 1.5])
    np.testing.assert_allclose(mixture_cdf(w, mu, tau, y), ppd.cdf(y), rtol=1e-14, atol=0)
