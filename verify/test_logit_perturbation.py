"""Logit-perturbation step of the proof of thm:PPD convergence (supp-sec:thrm4.1).

Statement: if ||ell_1 - ell_3||_inf <= Delta then, with p_l = sm(ell_l),
(p_1)_c / (p_3)_c in [e^{-2 Delta}, e^{2 Delta}] and ||p_1 - p_3||_1 <= e^{2 Delta} - 1.

Generated cases: logits of any scale (std up to 10) in dimension 2 <= C <= 256, perturbations with
sup-norm <= Delta, Delta in (0, 3]: uniform, sign patterns +-Delta, and the extremal pair.

Finding: the bound holds for every Delta (not only "small Delta") but is not sharp: the supremum
is 2 tanh(Delta / 2) (attained), so e^{2 Delta} - 1 is 2x loose as Delta -> 0 and unbounded while
the truth is below 2. Observed/paper ratios never exceed 1/2.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pfntheory.claims.ppd_convergence import check_logit_perturbation
from pfntheory.maths.discretize import softmax_perturbation_bound, softmax_perturbation_sharp
from pfntheory.maths.readout import softmax

_f = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def perturbed_logits(draw):
    C = draw(st.integers(2, 64))
    ell3 = np.array(draw(st.lists(st.floats(-30, 30, **_f), min_size=C, max_size=C)))
    D = draw(st.floats(1e-6, 5.0, **_f))
    u = np.array(draw(st.lists(st.floats(-1, 1, **_f), min_size=C, max_size=C)))
    return ell3, ell3 + D * u, D


@given(perturbed_logits())
def test_ratio_and_l1_bounds(case):
    """Per-coordinate ratio in [e^{-2Delta}, e^{2Delta}] and ||p1 - p3||_1 <= e^{2Delta} - 1, also
    <= 2 tanh(Delta/2) (sharp). rtol 1e-12 / atol 1e-15: softmax round-off. Fails on any
    violation."""
    ell3, ell1, D = case
    p1, p3 = softmax(ell1), softmax(ell3)
    pos = (p3 > 1e-300) & (p1 > 1e-300)
    ratio = p1[pos] / p3[pos]
    assert np.all(ratio <= np.exp(2 * D) * (1 + 1e-12)) and np.all(
        ratio >= np.exp(-2 * D) * (1 - 1e-12)
    )
    l1 = np.sum(np.abs(p1 - p3))
    assert l1 <= softmax_perturbation_bound(D) * (1 + 1e-12) + 1e-15
    assert l1 <= softmax_perturbation_sharp(D) * (1 + 1e-12) + 1e-15


def test_bound_and_its_slack():
    """check_logit_perturbation over 2000 draws (incl. the extremal pair): the paper's bound holds,
    the sharp value 2 tanh(Delta/2) is attained (max observed/sharp = 1 to 1e-9) and observed/paper
    stays <= 1/2 (2 tanh(D/2) <= (e^{2D} - 1)/2). Fails on a violation or if the sharp value
    is wrong."""
    r = check_logit_perturbation(np.random.default_rng(1))
    assert r.holds, str(r)
    assert abs(r.details["max_ratio_sharp"] - 1) <= 1e-9, r.details
    assert r.details["max_ratio_paper"] <= 0.5 + 1e-12, r.details


def test_check_can_fail():
    """A bound 10% below the sharp value must be reported violated (the extremal pair attains the
    sharp value). Shows the check is not vacuous."""
    r = check_logit_perturbation(
        np.random.default_rng(2), n_draws=300, bound=lambda D: 0.9 * softmax_perturbation_sharp(D)
    )
    assert not r.holds, str(r)
