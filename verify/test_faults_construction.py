"""Fault injection for the checks of thm:TFdoPPD, TF^pr and supp-sec:richardson: each check is run
on a deliberately wrong variant and must report holds=False. (A check that cannot fail is a defect.)

Faults: a step size past 2/lambda_1 (divergence), a dropped sigma^2 term in S, TF^pr without the
1/s_x on the skip term, TF^pr with a normalised first layer, solver layers that do nothing.
"""

import dataclasses

import numpy as np

from pfntheory import DEFAULT_NOISE_VAR as S2
from pfntheory.claims.construction import (
    check_tf_convergence,
    check_tf_rows,
    context,
    informative_depth,
)
from pfntheory.claims.richardson import check_convergence_iff
from pfntheory.maths import construction as con
from pfntheory.maths import richardson as rich
from pfntheory.maths.kernels import RBFKernel

K = RBFKernel(1.0, 0.6)


def _ctx(seed=0, n=10, d=2):
    return context(K, n, d, S2, np.random.default_rng(seed))


def test_step_past_admissible_is_caught():
    """eta = 1.05 x 2/(lambda_1 + sigma^2): the transformer diverges; the convergence check fails,
    while the same check passes at 0.9/(lambda_1 + sigma^2). The Richardson iff-check fails when the
    threshold under test is 10% past 2/lambda_1 (steps it calls admissible diverge)."""
    X, Y, x = _ctx()
    lam1 = np.linalg.eigvalsh(K(X))[-1]
    good = check_tf_convergence(K, X, Y, x, S2, 0.9 / (lam1 + S2), 200)
    bad = check_tf_convergence(K, X, Y, x, S2, 1.05 * 2 / (lam1 + S2), 200)
    assert good.holds, str(good)
    assert not bad.holds, str(bad)
    A = K(X) + S2 * np.eye(len(Y))
    assert check_convergence_iff(A, K(X) @ Y, L=300).holds
    wrong = 1.1 * rich.admissible_step(A)  # a threshold 10% past 2/lambda_1
    assert not check_convergence_iff(A, K(X) @ Y, L=300, claimed_step=wrong).holds


def test_dropped_sigma2_in_S_is_caught():
    """S^(l) = 0 (the -eta sigma^2 decay dropped): rows no longer equal the Richardson iterates and
    the transformer converges to the wrong (noise-free) fixed point."""
    X, Y, x = _ctx(1)
    lam1 = np.linalg.eigvalsh(K(X))[-1]
    eta, L = 0.9 / (lam1 + S2), 300
    w = con.handset_weights(2, L, eta, S2, K)
    w_bad = dataclasses.replace(w, S=np.zeros_like(w.S))
    assert check_tf_rows(K, X, Y, x, S2, eta, L).holds
    assert not check_tf_rows(K, X, Y, x, S2, eta, L, weights=w_bad).holds
    L_deep = (
        3000  # deep enough that the theorem's bound is far below the wrong fixed point's offset
    )
    w_deep = dataclasses.replace(
        con.handset_weights(2, L_deep, eta, S2, K), S=np.zeros((L_deep, 6, 6))
    )
    assert check_tf_convergence(K, X, Y, x, S2, eta, L_deep).holds
    assert not check_tf_convergence(K, X, Y, x, S2, eta, L_deep, weights=w_deep).holds


def test_tfpr_missing_skip_normaliser_is_caught():
    """TF^pr with the skip term not divided by s_{x_j}: rows differ from eqn:recursion prec."""
    X, Y, x = _ctx(2)
    G = K(X)
    eta = rich.safe_step(G + S2 * np.eye(len(Y)), rich.jacobi_preconditioner(G))
    assert check_tf_rows(K, X, Y, x, S2, eta, 40, normalised=True).holds
    bad = check_tf_rows(
        K, X, Y, x, S2, eta, 40, normalised=True, forward_kwargs={"scale_skip": False}
    )
    assert not bad.holds, str(bad)


def test_tfpr_normalised_first_layer_is_caught():
    """TF^pr with eqn:1st attn normalised: the k_x row is constant, rows and tau are wrong."""
    X, Y, x = _ctx(3)
    G = K(X)
    eta = rich.optimal_step(G + S2 * np.eye(len(Y)), rich.jacobi_preconditioner(G))
    kw = {"normalise_first_layer": True}
    assert not check_tf_rows(K, X, Y, x, S2, eta, 40, normalised=True, forward_kwargs=kw).holds
    good = check_tf_convergence(K, X, Y, x, S2, eta, 2000, normalised=True)
    bad = check_tf_convergence(K, X, Y, x, S2, eta, 2000, normalised=True, forward_kwargs=kw)
    assert good.holds, str(good)
    assert not bad.holds, str(bad)


def test_do_nothing_solver_layers_are_caught():
    """Solver layers with V^(l) = S^(l) = 0 read out the zero iterate (0, kappa(x,x) + sigma^2). At
    the informative depth (the theorem's bound on |tau_L - tau| at half the do-nothing error) the
    convergence check passes the hand-set transformer and fails the do-nothing one, on each of
    five contexts (issue 13: at L <= 60 the do-nothing transformer passed 226 of 300 draws)."""
    for seed in range(5):
        X, Y, x = _ctx(seed)
        eta = 0.9 / (np.linalg.eigvalsh(K(X))[-1] + S2)
        L = informative_depth(K, X, x, S2, eta)
        w = con.handset_weights(2, L, eta, S2, K)
        V, S = w.V.copy(), w.S.copy()
        V[1:], S[1:] = 0.0, 0.0
        good = check_tf_convergence(K, X, Y, x, S2, eta, L)
        lazy = check_tf_convergence(
            K, X, Y, x, S2, eta, L, weights=dataclasses.replace(w, V=V, S=S)
        )
        assert good.holds and good.details["informative"], str(good)
        assert not lazy.holds, str(lazy)
