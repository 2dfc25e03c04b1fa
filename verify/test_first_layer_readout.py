"""TF^pr with its first layer normalised too (sec:generalization read as "replace each head", the
reading of the authors' public code): what the hand-set construction computes, and that no affine
readout of its channels recovers tau.

Statement (derived in docs/exact-side.md, "The first layer normalised"): eqn:1st attn has one key
per query, so normalised it writes ``c_j = alpha^2 kappa_j / (kappa_j + eps)`` into row ``d+2``
(``alpha^2`` for ``eps = 0``, our normalisation; ``eps = 1e-6`` in the public code). The variance
row ``d+4`` then runs eqn:recursion prec on ``v = c`` and converges to
``(G + sigma^2 I)^{-1} G c`` at the context and ``z_tau = k_x^T (G + sigma^2 I)^{-1} c`` at the
query, not to ``k_x^T (G + sigma^2 I)^{-1} k_x``; and no readout ``a + b z_k + c z_tau`` equals
``tau = sigma^2 + k(x, x) - k_x^T (G + sigma^2 I)^{-1} k_x`` on every context (``z_k`` is the same
constant at every query, and two queries share ``z_tau`` with different ``tau``).

Generated cases (every number drawn by hypothesis, so failures shrink; the statements hold for
every context): n in [2, 8], d in [1, 3], a design with coordinates in [-3/sqrt(d), 3/sqrt(d)]
(``verify/_array_strategies.py``), a query within 0.5/sqrt(d) per coordinate of the first context
point (so ``s_x >= alpha^2 exp(-1/(8 ell^2))`` and the query's recursion contracts: a query far
from the context diverges in TF^pr whatever the first layer, verify/test_tfpr_far_query.py), RBF or
ARD kernels with alpha in [e^-0.5, e^0.5] and lengthscales in [e^-0.7, e^0.5], noise variance in
[0.02, 0.3], the step a fraction in [0.3, 1] of the optimal preconditioned step. The counterexample
draws alpha, the lengthscale, the noise variance in [0.01, 0.5], d in [1, 16], the context's
half-spread a in [1.1, 2.5] lengthscales and the offset eps in {0, 1e-6}.
"""

import numpy as np
from _array_strategies import FINITE, designs, vectors
from hypothesis import assume, given
from hypothesis import strategies as st

from pfntheory.claims import first_layer as cf
from pfntheory.maths import first_layer as fl
from pfntheory.maths import richardson as rich
from pfntheory.maths.gp import posterior_predictive
from pfntheory.maths.kernels import ARDRBFKernel, RBFKernel

#: Deepest construction a convergence draw may need (a fifth of a second of forward pass at
#: n <= 8); deeper draws are rejected by ``assume``.
MAX_DEPTH = 4000
#: The distance of the query's variance row to its limit the convergence check asks for (at the
#: depth where the derived bound reaches it): far below the O(0.1) differences between the two
#: readings, far above the round-off (``roundoff_atol``, ~1e-12 here).
CONVERGED = 1e-6


@st.composite
def limit_cases(draw):
    n = draw(st.integers(2, 8))
    d = draw(st.integers(1, 3))
    alpha = float(np.exp(draw(st.floats(-0.5, 0.5))))
    if draw(st.booleans()):
        k = RBFKernel(alpha, float(np.exp(draw(st.floats(-0.7, 0.5)))))
    else:
        ells = draw(st.lists(st.floats(-0.7, 0.5), min_size=d, max_size=d))
        k = ARDRBFKernel(alpha, tuple(np.exp(ells)))
    X = draw(designs(n, d))
    x = X[0] + draw(vectors(d, 0.5 / np.sqrt(d)))
    Y = draw(vectors(n, 3.0))
    s2 = draw(st.floats(0.02, 0.3, **FINITE))
    G = k(X)
    eta = draw(st.floats(0.3, 1.0)) * rich.optimal_step(
        G + s2 * np.eye(n), rich.jacobi_preconditioner(G)
    )
    return k, X, Y, x, s2, eta


def _converged_depth(k, X, x, s2, eta) -> int | None:
    """The smallest depth at which :func:`~pfntheory.claims.first_layer.limit_bound` puts the
    query's variance row within :data:`CONVERGED` of its limit (None beyond :data:`MAX_DEPTH`)."""
    if cf.limit_bound(k, X, x, s2, eta, MAX_DEPTH)[1] > CONVERGED:
        return None
    lo, hi = 2, MAX_DEPTH
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (
            (lo, mid) if cf.limit_bound(k, X, x, s2, eta, mid)[1] <= CONVERGED else (mid + 1, hi)
        )
    return lo


@given(limit_cases(), st.integers(2, 40))
def test_rows_follow_the_recursion_on_the_constant_row(case, L):
    """At every depth and every token: row d+2 is ``alpha^2`` after the normalised first layer,
    row d+4 is the preconditioned Richardson iterate with ``v = alpha^2 1`` (to round-off), and the
    distance to the limit is within the derived bound. Fails if the first layer wrote ``k_x`` (our
    reading: row d+2 off by O(1)), if the recursion's ``v`` were ``k_x``, or if the limit were
    ``k_x^T (G + sigma^2 I)^{-1} k_x``; the bound's side is informative only when deep, which the
    next test is."""
    k, X, Y, x, s2, eta = case
    r = cf.check_first_layer_limit(k, X, Y, x, s2, eta, L)
    assert r.holds, str(r) + str(r.details)


@given(limit_cases())
def test_variance_channel_converges_to_its_limit(case):
    """At the depth where the derived bound reaches ``CONVERGED`` (1e-6), the literal forward's
    variance row at the query is within it of ``z_tau = k_x^T (G + sigma^2 I)^{-1} alpha^2 1`` and
    the readout within it of ``sigma^2 + alpha^2 - z_tau``, while the exact ``tau`` is elsewhere
    unless the two readings coincide on this context. Fails if the construction converged to
    anything else (our reading's limit differs from this one by O(0.1) on a typical context, and
    a wrong limit at this depth exceeds the 1e-6 bound: the next test)."""
    k, X, Y, x, s2, eta = case
    L = _converged_depth(k, X, x, s2, eta)
    assume(L is not None)
    r = cf.check_first_layer_limit(k, X, Y, x, s2, eta, L)
    assert r.holds, str(r) + str(r.details)
    assert r.details["query"] <= CONVERGED + r.bound - r.details["query_bound"], str(r.details)
    assert r.details["readout"] <= CONVERGED + r.bound - r.details["query_bound"], str(r.details)


def test_the_limit_check_fails_on_our_reading():
    """Fault injection: the hand-set TF^pr with its first layer unnormalised (our reading) at the
    converged depth of a context of the paper's task (RBF alpha = 1, ell = 0.8, sigma^2 = 0.04,
    n = 8, d = 2) is checked against this limit and fails (its row d+2 is k_x, O(1) away; its
    variance row tends to k_x^T (G + sigma^2 I)^{-1} k_x, here 0.003 away at the query, over 1000
    times the bound), while the variant passes."""
    rng = np.random.default_rng(4)
    k, s2 = RBFKernel(1.0, 0.8), 0.04
    X = rng.normal(size=(8, 2)) / np.sqrt(2)
    Y, x = rng.normal(size=8), X[0] + 0.1
    G = k(X)
    eta = rich.optimal_step(G + s2 * np.eye(8), rich.jacobi_preconditioner(G))
    L = _converged_depth(k, X, x, s2, eta)
    assert L is not None
    assert cf.check_first_layer_limit(k, X, Y, x, s2, eta, L).holds
    ours = cf.check_first_layer_limit(
        k, X, Y, x, s2, eta, L, forward_kwargs={"normalise_first_layer": False}
    )
    assert not ours.holds and ours.details["query"] > 1e3 * ours.bound, str(ours) + str(
        ours.details
    )


@given(
    st.floats(-0.5, 0.5),
    st.floats(-1.0, 0.5),
    st.floats(0.01, 0.5, **FINITE),
    st.integers(1, 16),
    st.floats(1.1, 2.5),
    st.sampled_from([0.0, fl.CODE_EPS]),
)
def test_no_affine_readout_recovers_tau(log_alpha, log_ell, s2, d, spread, eps):
    """On the three queries of ``readout_counterexample`` (context ``-/+ a e_1``; the midpoint,
    the query ``t e_1`` with the same score sum, a far query) ``z_k`` is one constant, the first
    two share ``z_tau`` (to 1e-12 with eps = 0: round-off of two Cholesky solves; the public
    code's eps = 1e-6 moves them apart by ~eps alpha^2 / kappa) and differ in ``tau``, and no
    readout ``a + b z_k + c z_tau`` errs by less than half that difference on the
    three (measured: 0.49997-0.5 of it; asserted above 0.45 of it and above 1e-8). Fails if the
    channels determined tau (see the next test: our reading's channels do, at error 0)."""
    kernel = RBFKernel(float(np.exp(log_alpha)), float(np.exp(log_ell)))
    r = cf.check_no_affine_readout(kernel, s2, d, spread * kernel.lengthscale, eps)
    z_k, z_tau, tau = map(np.asarray, (r.details["z_k"], r.details["z_tau"], r.details["tau"]))
    assert np.ptp(z_k) == 0, z_k
    if eps == 0:  # (the public code's eps moves them apart by ~eps alpha^2 / kappa: the third
        assert abs(z_tau[0] - z_tau[1]) <= 1e-12, r.details  # query makes that irrelevant)
    assert r.holds and r.observed >= 0.45 * abs(tau[0] - tau[1]), str(r) + str(r.details)


def test_the_check_fails_when_the_channel_determines_tau():
    """Fault injection: with the first layer unnormalised (our reading), the construction's
    channel at the same three queries is ``k_x^T (G + sigma^2 I)^{-1} k_x`` and
    ``tau = sigma^2 + alpha^2 - z_tau`` exactly, so the least worst-case error of an affine readout
    is round-off (<= 1e-12): the measurement above is not a property of any three queries."""
    kernel, s2 = RBFKernel(1.0, 0.8), 0.04
    ce = fl.readout_counterexample(kernel, s2, d=8)
    q = []
    for x in ce.queries:
        k_x = kernel(ce.X, x[None, :])[:, 0]
        q.append(k_x @ np.linalg.solve(kernel(ce.X) + s2 * np.eye(2), k_x))
    _, tau = posterior_predictive(kernel, ce.X, np.zeros(2), ce.queries, s2)
    assert fl.affine_minimax_error(q, tau) <= 1e-12
    assert ce.minimax_error > 0.2  # the paper's task (d = 8, alpha = 1, ell = 0.8, sigma^2 = 0.04)
