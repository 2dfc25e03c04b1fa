"""pfntheory: the executable supplement to "Transformers Can Learn Posterior Predictive
Distributions In-Context".

The exact side (NumPy/SciPy, float64) lives in one module per mathematical object:
:mod:`~pfntheory.kernels`, :mod:`~pfntheory.gp`, :mod:`~pfntheory.richardson`,
:mod:`~pfntheory.spectral`, :mod:`~pfntheory.discretize`, :mod:`~pfntheory.construction`,
:mod:`~pfntheory.metrics`; :mod:`~pfntheory.claims` measures each paper result. The learned side
(PyTorch) lives in :mod:`pfntheory.nn`.
"""

__version__ = "0.1.0"

#: Default noise variance sigma^2 of the synthetic tasks. The paper text says sigma^2 = 0.2, but only
#: noise *standard deviation* 0.2 (variance 0.04) is consistent with supp-tab:lengthscale-crps; see README.
DEFAULT_NOISE_VAR = 0.04
