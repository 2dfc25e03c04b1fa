"""Hypothesis strategies for inputs of claims that hold for *every* input (deterministic
inequalities and identities), shared by the verify modules, so that a failing input shrinks to
a small one.

Data drawn from a NumPy generator seeded by a drawn integer do not shrink (a smaller seed is not a
simpler input), so these draw every number through hypothesis. Claims about a probability law (the
paper's ``x ~ N(0, I/d)``, rates in ``n``) keep their law and their generator instead; each such
test says so in its docstring.

- :func:`designs` -- an ``n x d`` design. Every coordinate lies in ``[-B/sqrt(d), B/sqrt(d)]``
  (``B = 3``: the scale of the paper's ``x ~ N(0, I/d)``, whose coordinates fall inside with
  probability 0.997). Up to :data:`FULL_DRAW_MAX` numbers every coordinate is drawn; a larger design
  (hypothesis cannot draw thousands of floats per example) is a drawn sparse perturbation of either
  one point (all points coincide: where the Gram bounds are tight) or a fixed spread design (the
  unscrambled Halton points through ``Phi^-1``: a quasi-random ``N(0, I/d)`` design, no randomness),
  the choice drawn as well. Shrinks towards coincident points at the origin.
- :func:`vectors` -- a vector with every entry drawn in ``[-bound, bound]``.
"""

import numpy as np
import scipy.stats
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

FINITE = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
#: Largest design whose every coordinate is drawn (larger ones: a sparse drawn perturbation).
FULL_DRAW_MAX = 400
#: Coordinates of a design lie in [-DESIGN_BOUND/sqrt(d), DESIGN_BOUND/sqrt(d)].
DESIGN_BOUND = 3.0


def vectors(size, bound: float):
    """Arrays of shape ``size`` with every entry drawn from ``[-bound, bound]`` (finite floats)."""
    return arrays(np.float64, size, elements=st.floats(-bound, bound, **FINITE), fill=st.nothing())


def spread_design(n: int, d: int) -> np.ndarray:
    """A fixed ``n x d`` design spread like ``N(0, I/d)``: unscrambled Halton points (the first, at
    the origin of the cube, skipped) through the normal quantile function, divided by
    ``sqrt(d)``."""
    u = scipy.stats.qmc.Halton(d, scramble=False).random(n + 1)[1:]
    return scipy.stats.norm.ppf(u) / np.sqrt(d)


@st.composite
def designs(draw, n: int, d: int, bound: float = DESIGN_BOUND):
    """An ``n x d`` design, coordinates in ``[-bound/sqrt(d), bound/sqrt(d)]`` (module
    docstring)."""
    s = bound / np.sqrt(d)
    if n * d <= FULL_DRAW_MAX:
        return draw(vectors((n, d), s))
    perturbation = draw(
        arrays(np.float64, (n, d), elements=st.floats(-s, s, **FINITE), fill=st.just(0.0))
    )
    base = spread_design(n, d) if draw(st.booleans()) else np.zeros((n, d))
    return np.clip(base + perturbation, -s, s)


@st.composite
def kernel_cases(draw, max_n: int, *ranges: tuple[float, float]):
    """``(X, *params)``: a design with ``n`` in ``[2, max_n]`` and ``d`` in ``[1, 16]``
    (:func:`designs`), then one finite float per ``(lo, hi)`` of ``ranges`` (a kernel's
    lengthscale, amplitude, noise variance ...)."""
    n, d = draw(st.integers(2, max_n)), draw(st.integers(1, 16))
    X = draw(designs(n, d))
    return X, *(draw(st.floats(lo, hi, **FINITE)) for lo, hi in ranges)
