"""The exact side: one module per mathematical object of the paper, NumPy/SciPy in
float64, the one implementation of each formula (kernels, GP posteriors, Richardson,
spectra, the hand-set constructions, discretised PPDs, the bounds, metrics). It never
imports torch, nor anything of pfntheory above :mod:`pfntheory.base`."""
