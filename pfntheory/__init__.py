"""pfntheory: the executable supplement to "Transformers Can Learn Posterior Predictive
Distributions In-Context".

The exact side (NumPy/SciPy, float64; needs nothing else) lives in one module per mathematical
object: :mod:`~pfntheory.maths.kernels`, :mod:`~pfntheory.maths.gp`,
:mod:`~pfntheory.maths.richardson`, :mod:`~pfntheory.maths.spectral`,
:mod:`~pfntheory.maths.discretize`, :mod:`~pfntheory.maths.densities`,
:mod:`~pfntheory.maths.construction`, :mod:`~pfntheory.maths.mlp`,
:mod:`~pfntheory.maths.ppd_bound`, :mod:`~pfntheory.maths.metrics`, with
:mod:`~pfntheory.base.stats` (EPS, standard errors, t-intervals, slopes); :mod:`~pfntheory.claims`
measures each paper result. The learned side (PyTorch, the ``nn`` extra) lives in
:mod:`pfntheory.nn`.

Constants named once: :data:`DEFAULT_NOISE_VAR` here, :data:`pfntheory.base.stats.EPS`.
"""

__version__ = "0.1.0"

#: Default noise variance sigma^2 of the synthetic tasks. The paper text says sigma^2 = 0.2, but
#: only noise *standard deviation* 0.2 (variance 0.04) is consistent with
#: supp-tab:lengthscale-crps; see docs/findings.md, "Noise".
DEFAULT_NOISE_VAR = 0.04
