"""sec:generalization (TF^pr): the query's own skip factor ``1 - eta sigma^2 / s_x``.

Statement examined: TF^pr (normalised solver layers, skip term of every token divided by
``s_{x_j}``) computes the preconditioned Richardson recursions and so converges to ``(mu, tau)``
for every step admissible for ``D^{-1}(G + sigma^2 I)``. The query column, however, follows
``f^(l+1)(x) = (1 - eta sigma^2/s_x) f^(l)(x) + (eta/s_x) sum_j kappa(x, x_j)(y_j - f_j^(l))``,
whose own factor leaves ``(-1, 1)`` when ``s_x < eta sigma^2 / 2`` (a query with little kernel mass
on the context, e.g. far from the inputs). The paper states no such condition: this is an erratum
(reported in the report's "Errata and ambiguities"; also the cause of the unstable far cells of the
Sacramento case study).

Generated cases: contexts of sec:sims (x ~ N(0, I/d), RBF alpha = 1, lengthscale 0.8, noise
variance 0.04), step 0.9 x the admissible 2/lambda_1 of the preconditioned system, a near query from
the design and a far query on a ray from the origin with s_x below the threshold.

How we know it can fail: if TF^pr did converge at the far query, its error at depth L would be below
its error at depth L/2 and ``holds`` would be True; if the query factor were not the cause, the
growth ratio would not match ``|1 - eta sigma^2/s_x|^(L/2)``.
"""

import numpy as np
import pytest

from pfntheory import DEFAULT_NOISE_VAR
from pfntheory.claims.construction import check_tfpr_far_query
from pfntheory.maths.kernels import RBFKernel

#: Band on log(observed growth) / log(predicted growth): the context part of the query update adds
#: a convergent term that changes the error by O(1) relative to |factor|^(L/2) ~ 1e14, i.e. a few
#: per cent of the log.
LOG_RATIO_BAND = 0.05


@pytest.mark.parametrize("d, n, seed", [(2, 64, 0), (4, 48, 1), (8, 96, 2)])
def test_far_query_diverges_near_query_converges(d, n, seed):
    r = check_tfpr_far_query(
        RBFKernel(alpha=1.0, lengthscale=0.8), n, d, DEFAULT_NOISE_VAR, L=200, seed=seed
    )
    det = r.details
    assert det["converging_near"], det
    assert det["s_x_far"] < det["threshold_s_x"] and det["query_factor_far"] > 1, det
    assert not r.holds, f"TF^pr converged at the far query: ratio {r.observed:.3g}"
    rel = np.log(r.observed) / np.log(det["predicted_far_ratio"])
    assert abs(rel - 1) < LOG_RATIO_BAND, (
        f"growth {r.observed:.3g} vs |1 - eta s2/s_x|^(L/2) = {det['predicted_far_ratio']:.3g}"
    )
