"""Unit tests of pfntheory.maths.richardson: shapes, reference values, bad input."""

import numpy as np
import pytest

from pfntheory.maths import richardson as rich


def _sys(n=5, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    A = M @ M.T + n * np.eye(n)
    return A, rng.normal(size=n)


def test_richardson_solves_and_path_shape():
    A, b = _sys()
    u, path = rich.richardson(A, b, rich.optimal_step(A), 400, return_path=True)
    assert path.shape == (401, 5) and np.all(path[0] == 0)
    np.testing.assert_allclose(u, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)


def test_richardson_multiple_rhs_and_matrix_D():
    A, b = _sys()
    B = np.stack([b, 2 * b], axis=1)
    Dm = np.diag(np.diag(A))
    u1 = rich.richardson(A, B, 0.5, 300, D=np.diag(A))
    u2 = rich.richardson(A, B, 0.5, 300, D=Dm)
    np.testing.assert_allclose(u1, u2, rtol=1e-13, atol=1e-14)
    assert u1.shape == (5, 2)


def test_spectrum_of_preconditioned_equals_nonsymmetric_eigs():
    A, _ = _sys()
    D = np.arange(1.0, 6.0)
    lam = rich.spectrum(A, D)
    ref = np.sort(np.linalg.eigvals(A / D[:, None]).real)[::-1]
    np.testing.assert_allclose(lam, ref, rtol=1e-10, atol=1e-12)
    # general SPD D via Cholesky
    Dfull = np.diag(D) + 0.1
    ref2 = np.sort(np.linalg.eigvals(np.linalg.solve(Dfull, A)).real)[::-1]
    np.testing.assert_allclose(rich.spectrum(A, Dfull), ref2, rtol=1e-9, atol=1e-12)


def test_step_formulas():
    A = np.diag([1.0, 4.0])
    assert rich.admissible_step(A) == pytest.approx(0.5)
    assert rich.optimal_step(A) == pytest.approx(0.4)
    assert rich.optimal_convergence_factor(A) == pytest.approx(0.6)
    assert rich.convergence_factor(A, 0.4) == pytest.approx(0.6)


def test_krr_recursion_shapes_and_closed_form():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    G = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    kx = rng.uniform(0.1, 1, size=(3, 6))
    Y = rng.normal(size=6)
    p = rich.krr_testing_recursion(G, kx, Y, 0.1, 0.1, 7)
    assert p.shape == (8, 3)
    _, ux = rich.krr_solution(G, kx, Y, 0.1)
    np.testing.assert_allclose(
        p[7] - ux, rich.krr_test_error_closed_form(G, kx, Y, 0.1, 0.1, 7), rtol=1e-10, atol=1e-13
    )
    assert rich.krr_testing_bound(G, kx, Y, 0.1, 0.1, [1, 2]).shape == (2, 3)
    assert rich.krr_training_recursion_prec(G, Y, 0.1, 0.5, 4).shape == (5, 6)
    assert rich.krr_testing_recursion_prec(G, kx[0], Y, 0.1, 0.5, 4).shape == (5,)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"A": np.ones((2, 3))}, "A"),
        ({"A": np.array([[1.0, 2.0], [0.0, 1.0]])}, "A"),
        ({"A": np.array([[np.nan, 0.0], [0.0, 1.0]])}, "A"),
        ({"b": np.ones(3)}, "b"),
        ({"eta": 0.0}, "eta"),
        ({"eta": -1.0}, "eta"),
        ({"eta": [0.1, 0.2]}, "eta"),
        ({"L": 0}, "L"),
        ({"L": 2.5}, "L"),
        ({"D": np.array([1.0, -1.0])}, "D"),
        ({"u0": np.ones(3)}, "u0"),
    ],
)
def test_richardson_bad_input(kwargs, name):
    args = {"A": np.eye(2), "b": np.ones(2), "eta": 0.5, "L": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        rich.richardson(**args)


def test_krr_bad_input():
    G, Y = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="noise_var"):
        rich.krr_training_recursion(G, Y, 0.0, 0.1, 3)
    with pytest.raises(ValueError, match="noise_var"):
        rich.krr_testing_recursion(G, Y, Y, -1.0, 0.1, 3)
    with pytest.raises(ValueError, match="L"):
        rich.krr_training_recursion(G, Y, 0.1, 0.1, 0)
    with pytest.raises(ValueError, match="eta"):
        rich.krr_training_recursion(G, Y, 0.1, -0.1, 3)
    with pytest.raises(ValueError, match="Y"):
        rich.krr_training_recursion(G, np.ones(4), 0.1, 0.1, 3)
    with pytest.raises(ValueError, match="k_x"):
        rich.krr_testing_recursion(G, np.ones(2), Y, 0.1, 0.1, 3)
    with pytest.raises(ValueError, match="Y"):
        rich.krr_training_recursion(G, np.array([1.0, np.nan, 0.0]), 0.1, 0.1, 3)
    with pytest.raises(ValueError, match="G"):
        rich.krr_training_recursion(np.ones((3, 2)), Y, 0.1, 0.1, 3)
    with pytest.raises(ValueError, match="row sums"):
        rich.jacobi_preconditioner(np.array([[1.0, -2.0], [-2.0, 1.0]]))
    with pytest.raises(ValueError, match="positive definite"):
        rich.optimal_step(np.diag([1.0, 0.0]))


def test_not_positive_definite_is_refused():
    """issue 12: ``richardson(A=-I)`` used to run; A (and G + sigma^2 I) must be positive
    definite."""
    with pytest.raises(ValueError, match="A must be positive definite"):
        rich.richardson(-np.eye(2), np.ones(2), 0.5, 3)
    with pytest.raises(ValueError, match="positive definite"):
        rich.convergence_factor(np.diag([1.0, -1.0]), 0.5)
    G = np.diag([1.0, -1.0])  # symmetric, but G + 0.1 I is indefinite
    with pytest.raises(ValueError, match="G \\+ noise_var"):
        rich.krr_training_recursion(G, np.ones(2), 0.1, 0.1, 3)


def test_path_size_is_checked_before_allocating():
    """A path of more than MAX_PATH_ELEMENTS values is refused (naming L) before any allocation."""
    A, b = _sys()
    with pytest.raises(ValueError, match="L="):
        rich.richardson(A, b, 0.1, 3 * 10**7 // 2)  # above MAX_ITERATIONS
    with pytest.raises(ValueError, match="L="):
        rich.richardson(np.eye(20), np.ones((20, 20)), 0.1, 10**6, return_path=True)  # 2e10 values
    with pytest.raises(ValueError, match="L="):
        rich.krr_training_recursion(np.eye(5), b, 0.1, 0.1, 10**8)


def test_iteration_counts_and_depths_are_checked():
    """L beyond MAX_ITERATIONS (the loop would run for hours) and depths that are not whole numbers
    are refused, naming the argument; k_x=None of a testing recursion is refused, not read as
    'no query'."""
    A, b = _sys()
    G = np.eye(5)
    with pytest.raises(ValueError, match="L=.*MAX_ITERATIONS"):
        rich.richardson(A, b, 0.1, rich.MAX_ITERATIONS + 1)
    with pytest.raises(ValueError, match="l must be <="):
        rich.krr_test_error_closed_form(G, b, b, 0.1, 0.1, 10**12)
    for bad in (-1, 2.5, [1, 2.5]):
        with pytest.raises(ValueError, match="L"):
            rich.krr_training_bound(G, b, 0.1, 0.1, bad)
    for bad in ("3", None, True):
        with pytest.raises(TypeError, match="L"):
            rich.krr_testing_bound(G, b, b, 0.1, 0.1, bad)
    for f in (rich.krr_testing_recursion, rich.krr_testing_recursion_prec):
        with pytest.raises(TypeError, match="k_x"):
            f(np.full((5, 5), 0.2) + np.eye(5), None, b, 0.1, 0.1, 3)
    with pytest.raises(ValueError, match="positive definite"):
        rich.spectrum(-A)


def test_safe_step_is_inside_the_rate_condition():
    A = np.diag([1.0, 4.0])  # lambda_1 = 4: admissible 0.5, rate condition eta < 1/4
    assert rich.safe_step(A) == pytest.approx(0.9 / 4, rel=1e-14)
    assert rich.safe_step(A, fraction=0.5) == pytest.approx(0.125, rel=1e-14)
    s = np.array([2.0, 1.0])  # D^{-1} A = diag(0.5, 4)
    assert rich.safe_step(A, s) == pytest.approx(0.9 / 4, rel=1e-14)
    for bad in (0.0, 1.0, -0.5, np.nan):
        with pytest.raises(ValueError, match="fraction"):
            rich.safe_step(A, fraction=bad)


def test_plain_and_preconditioned_recursions_agree_when_D_is_I():
    """The one recursion behind both: with every row sum 1 (D = I, s_x = 1) they coincide."""
    rng = np.random.default_rng(3)
    G = np.full((4, 4), 0.25)  # symmetric, row sums 1, PSD (rank one)
    kx = np.full(4, 0.25)
    Y = rng.normal(size=4)
    plain = rich.krr_testing_recursion(G, kx, Y, 0.1, 0.3, 6)
    prec = rich.krr_testing_recursion_prec(G, kx, Y, 0.1, 0.3, 6)
    np.testing.assert_allclose(prec, plain, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(
        rich.krr_training_recursion_prec(G, Y, 0.1, 0.3, 6),
        rich.krr_training_recursion(G, Y, 0.1, 0.3, 6),
        rtol=1e-15,
        atol=1e-15,
    )
