"""Beyond the paper: the multi-head construction of the remark "Extension to hierarchical GPs"
(thm:TFdoPPD per head; supp-tab:hierarchical-gp's mixture PPD). docs/multihead.md.

Statement checked: with one head per mixture component carrying thm:TFdoPPD's hand-set weights,
(1) head ``h``'s rows of every ``Z^(l)`` are component ``h``'s (preconditioned) Richardson
iterates; (2) with the exact mixture weights the model's mixture PPD converges to the exact one,
``TV <= sum_h w_h B_h(L)`` with ``B_h`` the theorem's per-component rate; (3) with the readout's
weights ``w'`` (exact quadratic term from the heads, approximate log-determinant),
``TV(p, q) <= TV(w, w') + sum_h w'_h TV(p_h, q_h) <= TV(w, w') + sum_h w'_h B(moment errors)``.
Fault injection: heads sharing one component fail (1) and (2).

Generated cases (every number drawn by hypothesis, so failures shrink; the claims hold for every
context, so no law is needed): H in {2, 3} RBF components with lengthscales in [e^-1, e^0.5] and
amplitudes in [e^-0.5, e^0.5], noise variances in [0.04, 0.5] (the theorem's sigma^2 >= the
table's smallest 0.01 is allowed by (1); (2) uses >= 0.04 as test_tfdoppd's bound check does), n in
[2, 10], d in [1, 3], designs and queries with coordinates in [-3/sqrt(d), 3/sqrt(d)]
(``_array_strategies``), labels in [-3, 3], steps eta_h = f_h / (lambda_1(G_h) + sigma_h^2)
(f in (0.05, 1.9) for (1): convergent; f in (0.3, 0.99) for (2): the theorem's condition; f in
(0.05, 0.99) for (3)).
Tolerances: round-off (``roundoff_atol`` per head) for (1); for the TVs of (2) and (3) the
quadrature's error estimate plus 1e-12 plus 1e-9 of the TV (``claims.multihead.TOLERANCE``: the
estimate can be low by the requested relative accuracy at the kinks of |p - q|). The rate check
runs 25 examples (a draw needs up to 1500 layers of a 3-head forward pass) and the bound check 40
(each fits a log-determinant readout).
"""

import numpy as np
from _array_strategies import FINITE, designs, vectors
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pfntheory.claims.construction import informative_depth
from pfntheory.claims.multihead_exact import (
    QUAD_ATOL,
    QUAD_RTOL,
    check_heads_richardson,
    check_mixture_rate,
    check_tv_bound,
)
from pfntheory.maths import mixture_tv as mtv
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.gp import MixturePPD, mixture_ppd
from pfntheory.maths.kernels import RBFKernel

#: Deepest model a draw of the rate check may need (its informative depth); deeper draws rejected.
MAX_DEPTH = 1500


@st.composite
def mixture_cases(draw, fmin=0.05, fmax=1.9, smin=0.04):
    H = draw(st.integers(2, 3))
    n, d = draw(st.integers(2, 10)), draw(st.integers(1, 3))
    kernels = [
        RBFKernel(
            float(np.exp(draw(st.floats(-0.5, 0.5)))), float(np.exp(draw(st.floats(-1, 0.5))))
        )
        for _ in range(H)
    ]
    nv = np.array([draw(st.floats(smin, 0.5, **FINITE)) for _ in range(H)])
    X = draw(designs(n, d))
    x = draw(vectors(d, 3.0 / np.sqrt(d)))
    Y = draw(vectors(n, 3.0))
    fracs = [draw(st.floats(fmin, fmax)) for _ in range(H)]
    eta = [
        f / (np.linalg.eigvalsh(k(X))[-1] + s2) for f, k, s2 in zip(fracs, kernels, nv, strict=True)
    ]
    return kernels, nv, X, Y, x, eta


@given(mixture_cases(smin=0.01), st.integers(2, 40), st.booleans())
def test_each_head_is_its_components_richardson_iterate(case, L, normalised):
    """(1) Every head, layer and token to round-off; TF and TF^pr heads (TF^pr with the step
    0.9 x 2 / lambda_1(D^-1 A) halved, as in test_tfdoppd, and queries where it diverges left out).
    Fails for a head that reads another head's rows (the fault test below)."""
    kernels, nv, X, Y, x, eta = case
    if normalised:
        eta = [0.45 / (1.0 + s2 / k.alpha**2) for k, s2 in zip(kernels, nv, strict=True)]
        assume(
            all(
                np.sum(k(X, x[None])) >= e * s2 / 2
                for k, s2, e in zip(kernels, nv, eta, strict=True)
            )
        )
    r = check_heads_richardson(kernels, nv, X, Y, x, eta, L, normalised=normalised)
    assert r.holds, str(r) + str(r.details)


def _weakest(kernels, nv, X, Y, x) -> int:
    """The component with the smallest exact posterior weight."""
    w = mixture_ppd(kernels, nv, np.ones(len(kernels)), X, Y, x[None]).weights
    return int(np.argmin(w))


#: The rate check keeps only draws where its claim and its fault test say something (an informative
#: depth within reach, a query the components see, a weak component the fault changes), a minority
#: by design; the share varies with the constants Hypothesis mines from the package's source, so
#: the filter health check (not an assertion: every kept draw is asserted on) is not a property of
#: this test and is left out.
@settings(
    max_examples=25, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)
@given(mixture_cases(fmin=0.3, fmax=0.99))
def test_mixture_converges_at_the_per_component_rate(case):
    """(2) At four depths up to the informative depth (the largest over heads of
    ``claims.construction.informative_depth``: where the theorem's bound is half a do-nothing
    model's error). On every accepted draw the bound is informative (below half the TV of a
    do-nothing model) and heads sharing the weakest component fail the same check."""
    kernels, nv, X, Y, x, eta = case
    # a query with k_x = 0 for a component (far from every point) is predicted exactly by a
    # do-nothing head: no depth is informative there (as in test_tfdoppd)
    assume(all(np.sum(k(X, x[None]) ** 2) >= 1e-6 for k in kernels))
    depth = max(
        informative_depth(k, X, x, s2, e) for k, s2, e in zip(kernels, nv, eta, strict=True)
    )
    assume(depth <= MAX_DEPTH)
    Ls = sorted({2, max(2, depth // 4), max(2, depth // 2), depth})
    r = check_mixture_rate(kernels, nv, X, Y, x, eta, Ls)
    assert r.holds, str(r) + str(r.details["rows"])
    assume(r.details["informative"])  # the do-nothing TV can vanish (all components alike)
    h = _weakest(kernels, nv, X, Y, x)
    assume(r.details["weights"][h] < 0.5)
    # the fault must change the mixture: the exact mixture with every component replaced by the
    # shared one lies farther from the true mixture than the bound at the deepest L can absorb
    # (twice it: the bound allows the true model as much again), measured independently of the model
    H = len(kernels)
    true = mixture_ppd(kernels, nv, np.ones(H), X, Y, x[None])
    faulty = mixture_ppd([kernels[h]] * H, [nv[h]] * H, np.ones(H), X, Y, x[None])
    tv_fault, err = mtv.mixture_tv(true, faulty)
    assume(tv_fault > 2 * r.details["rows"][-1]["bound"] + err)
    shared = check_mixture_rate(kernels, nv, X, Y, x, eta, Ls, encode=(h,) * len(kernels))
    assert not shared.holds, str(shared) + str(shared.details["rows"])


@settings(max_examples=40)
@given(mixture_cases(fmax=0.99), st.integers(2, 30))
def test_tv_bound_with_the_fitted_logdet_readout(case, L):
    """(3) Steps below 1/(lambda_1 + sigma^2), where every ``tau_h^L >= tau_h > 0`` (the variance
    recursion rises monotonically to its limit), so the model is a valid mixture at every depth.
    With the readout of the hand-set model (quadratic term from the heads, log-determinant
    from a least-squares fit on 2 Monte-Carlo designs per n, deliberately rough) and a perturbed
    exact log-determinant: both inequalities on every draw. Fails if the bound dropped the weight
    term (test below)."""
    kernels, nv, X, Y, x, eta = case
    n, d = X.shape
    fit = mh.fit_logdet_readout(kernels, nv, d, np.random.default_rng(0), ns=(4, 8, 12, 16))
    for logdet in (fit, mh.exact_logdet(kernels, nv, X) + np.linspace(-1.0, 1.0, len(kernels))):
        r = check_tv_bound(kernels, nv, X, Y, x, eta, L, logdet)
        assert r.holds, str(r) + str(r.details)


def test_heads_sharing_one_component_fail():
    """Fault injection for (1): every head carrying component 0 (``encode=(0, 0, 0)``) makes the
    rows of heads 1 and 2 differ from their components' iterates far beyond round-off."""
    rng = np.random.default_rng(3)
    kernels = [RBFKernel(1.0, ell) for ell in (0.4, 0.8, 1.2)]
    nv = np.array([0.01, 0.04, 0.09])
    X = rng.normal(size=(8, 2)) / np.sqrt(2)
    x = rng.normal(size=2) / np.sqrt(2)
    Y = rng.normal(size=8)
    eta = [0.5 / (np.linalg.eigvalsh(k(X))[-1] + s2) for k, s2 in zip(kernels, nv, strict=True)]
    good = check_heads_richardson(kernels, nv, X, Y, x, eta, 20)
    bad = check_heads_richardson(kernels, nv, X, Y, x, eta, 20, encode=(0, 0, 0))
    assert good.holds, str(good)
    assert not bad.holds and bad.observed > 1e6, str(bad)


def test_bound_needs_the_weight_term():
    """The mixture bound is not vacuous: dropping its weight term ``TV(w, w')`` fails on a context
    where the readout's weights are off (log-determinants perturbed by +-3), so the checked
    inequality is exercised by the weights, not only by the components."""
    rng = np.random.default_rng(4)
    kernels = [RBFKernel(1.0, 0.4), RBFKernel(1.0, 1.2)]
    nv = np.array([0.04, 0.09])
    X = rng.normal(size=(10, 2)) / np.sqrt(2)
    x = rng.normal(size=2) / np.sqrt(2)
    Y = np.linalg.cholesky(kernels[0](X) + 0.04 * np.eye(10)) @ rng.normal(size=10)
    eta = [0.9 / (np.linalg.eigvalsh(k(X))[-1] + s2) for k, s2 in zip(kernels, nv, strict=True)]
    r = check_tv_bound(
        kernels, nv, X, Y, x, eta, 400, mh.exact_logdet(kernels, nv, X) + [3.0, -3.0]
    )
    dt = r.details
    assert r.holds, str(r)
    no_weights = dt["bound_exact_components"] - dt["tv_weights"]
    assert dt["tv"] > no_weights + 1e-3, dt


@given(
    st.floats(-2, 2, **FINITE),
    st.floats(0.01, 4, **FINITE),
    st.floats(-1, 1, **FINITE),
    st.floats(0.01, 4, **FINITE),
)
def test_gaussian_tv_closed_form_and_bound(m1, v1, dm, v2):
    """The exact Gaussian TV equals the quadrature of |p - q|/2 (to the quadrature's tolerance,
    ``claims.multihead.TOLERANCE``) and lies below :func:`gaussian_tv_bound` of its moment errors
    (1e-12)."""
    tv = float(mtv.gaussian_tv(m1, v1, m1 + dm, v2))
    one = np.ones(1)
    p = MixturePPD(weights=one, mu=np.array([[m1]]), tau=np.array([[v1]]))
    q = MixturePPD(weights=one, mu=np.array([[m1 + dm]]), tau=np.array([[v2]]))
    quad, err = mtv.mixture_tv(p, q)
    assert abs(tv - quad) <= err + QUAD_ATOL + QUAD_RTOL * tv, (tv, quad, err)
    assert tv <= float(mtv.gaussian_tv_bound(dm, v2 - v1, v1)) + 1e-12
