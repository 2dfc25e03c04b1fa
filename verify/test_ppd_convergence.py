"""thm:PPD convergence (Transformer PPD approximation), via its proof in supp-sec:thrm4.1.

Statement: there is vartheta such that
``TV(p_n, q_vartheta) <~ exp(-(1 - rho) L) + delta_MLP + 1/C + eps_tail``.

Construction used: the hand-set transformer of thm:TFdoPPD (optimal step), the explicit
one-hidden-layer ReLU MLP of pfntheory.maths.mlp.fit_psi_mlp (deterministic ridge features,
least-squares readout; delta_MLP its certified upper bound, pfntheory.maths.mlp) on a box K around
the context's (mu, tau) that contains every (mu_L, tau_L), and the readout Xi (rows [xi_c, xi_c^2]
at bin midpoints, plus log Delta_c) on C equal bins of (a, b] = (-3, 3]. Contexts: RBF(1, 0.4), n =
10, d = 2, x ~ N(0, I/d), Y ~ N(0, G + sigma^2 I), sigma^2 = DEFAULT_NOISE_VAR = 0.04 (4 seeds).
Hypotheses of supp-sec:thrm4.1 hold: (mu, tau) in K, Gaussian PPD (exponential family, Lipschitz),
equidistant grid.
"""

import numpy as np

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.ppd_convergence import (
    check_mlp_rate,
    check_ppd_bound_terms,
    check_ppd_convergence_L,
    check_ppd_floor_C,
)
from pfntheory.maths.kernels import RBFKernel

KERNEL = RBFKernel(1.0, 0.4)
N, D, S2 = 10, 2, DEFAULT_NOISE_VAR
#: Rows (L, C) whose composed bound is below 1 that test_every_term_of_the_bound_holds requires:
#: L in {128, 256, 512} x C in {16, 64, 256} (9 rows; at L <= 32 the e^{2 Delta} term is vacuous).
MIN_INFORMATIVE = 9


def test_tv_falls_exponentially_in_L():
    """TV_L - TV_inf <= K exp(-(1-rho)(L-1)) on the deeper 3/4 of depths (K from the first quarter),
    reaching 1e-6 of the floor. Fails if the excess stalled or decayed slower than rho."""
    r = check_ppd_convergence_L(KERNEL, N, D, S2)
    assert r.holds, str(r) + str(
        [(w["seed"], w["max_late_ratio"], w["final_excess"]) for w in r.details["rows"]]
    )


def test_floor_falls_like_1_over_C_plus_tail():
    """Floor (L = inf): truncated TV order in C within -1 +- 0.1 (95% t-CI over 4 seeds), and
    eps_tail <= TV(p_n, q) <= eps_tail + TV(p_(a,b], q). Fails for a 1/C^2 or a stalling floor, or
    if the tail mass were not accounted for."""
    r = check_ppd_floor_C(KERNEL, N, D, S2)
    assert r.holds, str(r)


def test_every_term_of_the_bound_holds():
    """||l1-l2|| <= ||Xi|| L ||err||, ||l2-l3|| <= ||Xi|| delta, ||l1-l3||_inf <= Delta,
    TV(q, q3) <= (e^{2 Delta}-1)/2, TV(p_n, q3) <= discretisation bound, TV <= composed bound
    (rtol 1e-9), for L in {2, 8, 32, 128, 256, 512} and C in {16, 64, 256}, with the certified
    delta_MLP. A composed bound >= 1 cannot fail (TV <= 1), so at least MIN_INFORMATIVE rows must
    have a bound below 1, and each of them must hold."""
    r = check_ppd_bound_terms(KERNEL, N, D, S2)
    assert r.holds, str(r)
    informative = [w for w in r.details["rows"] if w["informative"]]
    assert len(informative) >= MIN_INFORMATIVE, [
        (w["L"], w["C"], w["bound"]) for w in r.details["rows"]
    ]
    assert all(w["ok"] and w["tv"] <= w["bound"] for w in informative), informative
    # the composed bound is vacuous at small L (documented in the report): e^{2 Delta} with
    # ||Xi||_2 ~ sqrt(C) (b-a)^2 / 4 makes it astronomically large
    rows = r.details["rows"]
    assert max(w["bound"] for w in rows if w["L"] == 2) > 1.0


def test_mlp_delta_falls_with_width():
    """delta_MLP of the explicit MLP on K = [-1,1] x [0.2,1] decreases with C' (95% CI of the
    fitted order below 0); the order is reported (about -1)."""
    r = check_mlp_rate(((-1.0, 1.0), (0.2, 1.0)))
    assert r.holds, str(r)
    assert np.all(np.isfinite(r.details["delta"]))
