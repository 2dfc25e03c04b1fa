"""thm:L growth.

Statement: if TF^pr encodes the optimal constant step for the Richardson iteration on
eqn:richardson prec, then for RBF kernels ``L >~ n log(1/eps)`` suffices for error ``< eps`` a.s.
for large ``n``. The proof: ``rho = 1 - 2/(c_n + 2)`` [sic],
``L > log eps/log rho >= (c_n + 1)/2 log(1/eps)`` [sic], ``c_n = Theta(n)``.

Checked: (i) measured depth to reach eps with pfntheory.maths.richardson.richardson at
pfntheory.maths.richardson.optimal_step grows ~ n (slope CI inside 1 +- 0.2); (ii) the proof's
``L = (c_n + 1)/2 log(1/eps)`` reaches eps (D-norm, where rho*^L is an exact bound); (iii) errata:
rho* is ``1 - 2/(c_n + 1)`` and the displayed inequality runs the other way (the sufficiency
conclusion survives).
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pfntheory.claims.conditioning import (
    check_depth_inequality_direction,
    check_L_growth,
    check_rho_star_convention,
)
from pfntheory.maths.spectral import depth_needed, depth_sufficient


def test_depth_grows_linearly_and_sufficient_depth_works():
    """n = 50..400, d = 2, s2 = 0.2, eps = 1e-4, 4 seeds. Fails if the needed depth were flat in n
    (slope 0) or quadratic, or if the proof's depth left an error above eps."""
    r = check_L_growth(np.random.default_rng(23), ns=(50, 100, 200, 400), n_seeds=4)
    assert r.holds, str(r)


def test_erratum_rho_star_is_1_minus_2_over_c_plus_1():
    """Spectral radius of I - eta* D^-1 (G + s2 I) equals 1 - 2/(c+1) to 10 n eps cond and differs
    from the proof's 1 - 2/(c+2)."""
    r = check_rho_star_convention(np.random.default_rng(29))
    assert r.holds, str(r)


def test_erratum_inequality_direction():
    """log(eps)/log(rho*) <= (c+1)/2 log(1/eps) (the paper prints >=)."""
    r = check_depth_inequality_direction()
    assert r.holds, str(r)


@given(
    st.floats(1.0 + 1e-6, 1e8, allow_subnormal=False), st.floats(1e-12, 0.5, allow_subnormal=False)
)
def test_needed_below_sufficient_property(c, eps):
    """For every cond >= 1 and eps in (0, 1/2]: rho*^L <= eps at L = depth_needed, and
    depth_needed <= depth_sufficient (rtol 1e-12 for the logs)."""
    Ln, Ls = float(depth_needed(c, eps)), float(depth_sufficient(c, eps))
    assert Ln <= Ls * (1 + 1e-12)
    rho = (c - 1) / (c + 1)
    assert Ln * np.log(rho) <= np.log(eps) * (1 - 1e-12)
