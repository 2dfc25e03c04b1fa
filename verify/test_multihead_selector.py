"""Beyond the paper (issue 38): the selector's statistics of the multi-head model are computed by
one attention layer each (docs/multihead.md, "Selectors").

Statement checked: for every context, the attention construction
:func:`pfntheory.maths.multihead_construction.selection_stats` (one unnormalised RBF attention layer
with ``K = Q = diag(1/ell_b)`` and a diagonal-free mask, then a linear summary head at the query)
returns ``t_b = Y^T (K_b - I) Y / (n (n - 1))``, ``m_b = 1^T (K_b - I) 1 / (n (n - 1))`` and
``s_0 = Y^T Y / n`` (closed forms from the Gram matrix), and the batched torch features
:func:`pfntheory.nn.selector.summary_stats` that the trained selector reads are these numbers
(``log s_0``, ``t_b / m_b``, ``log m_b``, ``log n``).

How it fails when the claim fails: a layer with the wrong key scale (``scale_error = 1.1``) or a
mask that keeps the diagonal (``K_b`` instead of ``K_b - I``) changes the statistics by far more
than the tolerance, asserted on every draw.

Generated cases: n in [2, 12], d in [1, 4], designs with coordinates in [-3/sqrt(d), 3/sqrt(d)],
labels in [-3, 3] (at least one of size >= 0.1, so that ``t_b`` is not round-off), banks of 1-4
lengthscales in [e^-1.5, e^1]. Tolerance: round-off, ``16 n eps`` times the sum of the absolute
terms (``|Y|^T K_b |Y| / (n (n - 1))``, sums of n^2 products of O(1) numbers); 1e-12 relative
between the float64 torch and NumPy paths (the same sums in another order, plus ``exp``/``log``).
"""

import numpy as np
import torch
from _array_strategies import FINITE, designs, vectors
from hypothesis import assume, given
from hypothesis import strategies as st

from pfntheory.base.stats import EPS
from pfntheory.maths import multihead_construction as mh
from pfntheory.maths.kernels import RBFKernel
from pfntheory.nn.selector import summary_stats

SAFETY = 16


@st.composite
def cases(draw):
    n, d = draw(st.integers(2, 12)), draw(st.integers(1, 4))
    X = draw(designs(n, d))
    Y = draw(vectors(n, 3.0))
    x = draw(vectors(d, 3.0 / np.sqrt(d)))
    B = draw(st.integers(1, 4))
    bank = [float(np.exp(draw(st.floats(-1.5, 1.0, **FINITE)))) for _ in range(B)]
    return X, Y, x, bank


def _closed(X, Y, bank):
    n = len(Y)
    t, m, scale = [], [], []
    for ell in bank:
        K = RBFKernel(1.0, ell)(X) - np.eye(n)
        t.append(Y @ K @ Y / (n * (n - 1)))
        m.append(K.sum() / (n * (n - 1)))
        scale.append(np.abs(Y) @ (K + np.eye(n)) @ np.abs(Y) / (n * (n - 1)) + 1.0 / n)
    return np.array(t), np.array(m), np.array(scale)


@given(cases())
def test_stats_by_one_attention_layer(case):
    X, Y, x, bank = case
    assume(np.max(np.abs(Y)) >= 0.1)
    n = len(Y)
    out = mh.selection_stats(X, Y, x, bank)
    t, m, scale = _closed(X, Y, bank)
    tol = SAFETY * n * EPS * scale
    assert np.all(np.abs(out["t"] - t) <= tol), (out["t"], t, tol)
    assert np.all(np.abs(out["m"] - m) <= tol), (out["m"], m, tol)
    assert abs(out["s0"] - Y @ Y / n) <= SAFETY * n * EPS * (Y @ Y / n)
    # the torch features the trained selector reads are these statistics
    f = summary_stats(torch.as_tensor(X)[None], torch.as_tensor(Y)[None], bank)[0].numpy()
    B = len(bank)
    good = m > 1e-250  # log m_b and t_b / m_b need a design whose kernel does not underflow
    want = np.concatenate([[np.log(Y @ Y / n)], t / m, np.log(m), [np.log(n)]])
    mask = np.concatenate([[True], good, good, [True]])
    np.testing.assert_allclose(f[mask], want[mask], rtol=1e-9, atol=SAFETY * n * EPS)
    assert f.shape == (2 * B + 2,)

    # fault injections: a wrong key scale and a mask that keeps the diagonal are caught
    wrong = mh.selection_stats(X, Y, x, bank, scale_error=1.1)
    diag = mh.selection_stats(X, Y, x, bank, keep_diagonal=True)
    assert np.all(np.abs(diag["t"] - t) > 1e3 * tol)  # differs by Y^T Y / (n (n-1)) > 0
    gap = np.abs(wrong["m"] - m)
    # the scale fault moves m_b unless every off-diagonal kernel entry underflows or is ~1
    informative = (m > 1e-6) & (m < 0.99)
    assert np.all(gap[informative] > 1e3 * tol[informative])
