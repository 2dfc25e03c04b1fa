"""Empirical-Bayes GP baseline of the case studies (supp-sec:real data).

Implements
----------
* supp-sec:real data: the ARD RBF kernel ``kappa(x, x') = alpha^2 exp(-1/2 sum_k (x_k - x'_k)^2 /
  ell_k^2)`` with Gaussian noise ``sigma``, fitted by maximising the log marginal likelihood (R&W
  Ch. 5) with :func:`pfntheory.maths.gp.fit_empirical_bayes`; the GP predictive mean and Gaussian
  5%/95% quantiles (fig:sacramento, fig:walker, bottom rows).
* The paper's printed hyperparameters (:data:`PAPER_FITS`) and an independent reference,
  scikit-learn's ``GaussianProcessRegressor`` (``ConstantKernel * RBF(ARD) + WhiteKernel``): its LML
  at our parameters, its own optimum, and its predictive moments with ``optimizer=None`` at
  our parameters.

The claims measured on this baseline (our optimum against the printed fit, scikit-learn's
agreement, Walker Lake's coordinate convention) are in :mod:`pfntheory.claims.real_data_eb`; the
assertions live in ``verify/test_real_data_eb.py``.
"""

from __future__ import annotations

import numpy as np
import scipy.stats

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    choice,
    instance_of,
    positive_int,
)
from pfntheory.maths.gp import EBFit, log_marginal_likelihood, posterior_predictive

from .data import split_indices

__all__ = [
    "PAPER_FITS",
    "PAPER_ROUNDING",
    "WALKER_EB_SIZE",
    "WALKER_CONTEXT_SIZE",
    "walker_splits",
    "paper_lml",
    "gp_predict",
    "gaussian_quantiles",
    "sklearn_fit",
    "sklearn_lml",
    "sklearn_predict",
]

#: supp-sec:real data, the printed fits: (alpha, (ell_1, ell_2), sigma); ell in input order
#: (longitude, latitude) for Sacramento and (x, y) for Walker Lake.
PAPER_FITS = {
    "sacramento": EBFit(
        alpha=0.666,
        lengthscales=(1.226, 0.770),
        noise_std=0.836,
        log_marginal_likelihood=float("nan"),
    ),
    "walker": EBFit(
        alpha=0.782,
        lengthscales=(0.146, 0.252),
        noise_std=0.611,
        log_marginal_likelihood=float("nan"),
    ),
}
#: The printed values carry three decimals: half a unit of the last digit.
PAPER_ROUNDING = 5e-4
#: supp-sec:real data: Walker hyperparameters from "a randomly sampled subset ... with n = 200";
#: the PFN and the GP of fig:walker then see "a separate context of size n = 200".
WALKER_EB_SIZE = 200
WALKER_CONTEXT_SIZE = 200

_check_fit = instance_of(EBFit, what="pfntheory.maths.gp.EBFit (an empirical-Bayes fit)")
#: scikit-learn's random_state takes seeds in [0, 2**32 - 1].
_SK_MAX_SEED = 2**32 - 1


def _points(X, name: str) -> np.ndarray:
    """``X`` as an (n, d) float array of at least one point."""
    return as_float_array(X, name, ndim=2, non_empty=True)


def _targets(Y, name: str) -> np.ndarray:
    """``Y`` as a non-empty 1-d float array."""
    return as_float_array(Y, name, ndim=1, non_empty=True)


def walker_splits(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Disjoint index sets of the Walker sample: ``eb`` (200, fits the prior), ``context`` (200,
    the separate context of fig:walker) and ``heldout`` (the rest, 70 for the 470-row sample)."""
    eb, ctx, rest = split_indices(
        n, [WALKER_EB_SIZE, WALKER_CONTEXT_SIZE], np.random.default_rng(seed)
    )
    return {"eb": eb, "context": ctx, "heldout": rest}


def paper_lml(name: str, X, Y) -> float:
    """Log marginal likelihood of ``(X, Y)`` at the paper's printed hyperparameters for ``name``."""
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"name must be a string (one of {sorted(PAPER_FITS)}), got {name!r}"
        )
    p = PAPER_FITS[choice(name, "name", tuple(PAPER_FITS))]
    return float(log_marginal_likelihood(p.kernel, X, Y, p.noise_var))


def gp_predict(fit: EBFit, X, Y, Xq, chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """GP predictive mean and variance (of ``y``, noise included) at ``Xq`` (m, d), chunked.

    Returns
    -------
    mu, tau : ndarray of shape (m,)
    """
    fit = _check_fit(fit, "fit")
    Xq = _points(Xq, "Xq")
    chunk = positive_int(chunk, "chunk")
    parts = [
        posterior_predictive(fit.kernel, X, Y, Xq[s : s + chunk], fit.noise_var)
        for s in range(0, Xq.shape[0], chunk)
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def gaussian_quantiles(mu, tau, q) -> np.ndarray:
    """Quantiles ``mu + sqrt(tau) Phi^{-1}(q)``; shape ``q.shape + mu.shape``.

    ``mu`` (means) and ``tau`` (variances, ``>= 0``) are finite arrays of one shape; each level of
    ``q`` lies in ``(0, 1)``.
    """
    mu = as_float_array(mu, "mu")
    tau = as_float_array(tau, "tau")
    if tau.shape != mu.shape:
        raise ValueError(f"tau must have the shape of mu {mu.shape}, got {tau.shape}")
    if np.any(tau < 0):
        raise ValueError(f"tau (predictive variances) must be >= 0, got min {tau.min()}")
    q = as_float_array(q, "q")
    if np.any((q <= 0) | (q >= 1)):
        raise ValueError(f"q (quantile levels) must lie in (0, 1), got {q.ravel().tolist()}")
    z = scipy.stats.norm.ppf(q)
    return mu[None] + np.sqrt(tau)[None] * z.reshape(-1, *([1] * mu.ndim))


# ----------------------------------------------------------------------------------------------
# scikit-learn reference (test extra; imported lazily)
# ----------------------------------------------------------------------------------------------
def _sk_kernel(alpha=1.0, lengthscales=(1.0, 1.0), noise_std=1.0, fixed=False):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    b = "fixed" if fixed else (1e-6, 1e6)  # our fit's bounds are (1e-3, 1e3) on the square roots
    return ConstantKernel(alpha**2, constant_value_bounds=b) * RBF(
        np.asarray(lengthscales, dtype=float), length_scale_bounds="fixed" if fixed else (1e-3, 1e3)
    ) + WhiteKernel(noise_std**2, noise_level_bounds=b)


def _from_sk_kernel(k, lml: float) -> EBFit:
    return EBFit(
        alpha=float(np.sqrt(k.k1.k1.constant_value)),
        lengthscales=tuple(float(v) for v in np.atleast_1d(k.k1.k2.length_scale)),
        noise_std=float(np.sqrt(k.k2.noise_level)),
        log_marginal_likelihood=float(lml),
    )


def sklearn_fit(X, Y, n_restarts: int = 0, seed: int = 0) -> EBFit:
    """Empirical-Bayes fit by scikit-learn (L-BFGS-B from all-ones plus ``n_restarts`` random
    starts), ``normalize_y=False``, no jitter (``alpha=0``: the white-noise kernel is the ridge)."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    X = _points(X, "X")
    Y = _targets(Y, "Y")
    seed = positive_int(seed, "seed", minimum=0, maximum=_SK_MAX_SEED)
    gpr = GaussianProcessRegressor(
        _sk_kernel(lengthscales=np.ones(X.shape[1])),
        alpha=0.0,
        n_restarts_optimizer=positive_int(n_restarts, "n_restarts", minimum=0),
        normalize_y=False,
        random_state=seed,
    )
    gpr.fit(X, Y)
    return _from_sk_kernel(gpr.kernel_, gpr.log_marginal_likelihood_value_)


def _sk_fixed(fit: EBFit, X, Y):
    from sklearn.gaussian_process import GaussianProcessRegressor

    fit = _check_fit(fit, "fit")
    X, Y = _points(X, "X"), _targets(Y, "Y")
    gpr = GaussianProcessRegressor(
        _sk_kernel(fit.alpha, fit.lengthscales, fit.noise_std, fixed=True),
        alpha=0.0,
        optimizer=None,
        normalize_y=False,
    )
    return gpr.fit(X, Y)


def sklearn_lml(fit: EBFit, X, Y) -> float:
    """scikit-learn's log marginal likelihood at ``fit``'s parameters (``optimizer=None``)."""
    return float(_sk_fixed(fit, X, Y).log_marginal_likelihood_value_)


def sklearn_predict(fit: EBFit, X, Y, Xq) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn predictive mean and variance at ``fit``'s parameters (``optimizer=None``).

    The ``WhiteKernel`` contributes ``sigma^2`` to ``kernel.diag(Xq)``, so sklearn's ``std**2`` is
    the predictive variance of ``y`` (noise included), the same quantity as our ``tau``.
    """
    Xq = _points(Xq, "Xq")
    mu, sd = _sk_fixed(fit, X, Y).predict(Xq, return_std=True)
    return mu, sd**2
