"""thm:lambda1.

Statement: with ``x_i ~ N(0, I_d/d)`` for fixed ``d``, linear and RBF kernels yield a Richardson
step size bound (eqn:convg cond: ``2/(lambda_1(G) + sigma^2)``) of order ``1/n``.

Checked as the slope of log step on log n over seeds (95% t-CI inside -1 +- 0.1). For the linear
kernel ``lambda_1 ~ (sqrt n + sqrt d)^2/d`` so ``n >> d`` is used (n = 1000..16000, d = 16, via the
d x d Gram); at the figure's n = 100..1000 its local slope is about -0.9 (see test_stepsize_figure).
"""

import numpy as np
import pytest

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.stepsize import check_stepsize_rate


@pytest.mark.parametrize(
    "kernel,ns",
    [
        ("rbf", (100, 200, 400, 800)),
        ("linear", (1000, 2000, 4000, 8000, 16000)),
        ("blr", (1000, 2000, 4000, 8000, 16000)),
    ],
    ids=["rbf", "linear", "blr"],
)
def test_admissible_step_order_one_over_n(kernel, ns):
    """Fails for a step that is constant in n (slope 0) or ~ n^-1/2."""
    r = check_stepsize_rate(
        np.random.default_rng(31), kernel=kernel, ns=ns, d=16, noise_var=DEFAULT_NOISE_VAR
    )
    assert r.holds, str(r)
