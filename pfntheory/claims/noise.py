"""Which noise parameterisation reproduces the paper (supp-tab:lengthscale-crps)?

The text of supp-sec:exp details says the noise variance is ``sigma^2 = 0.2``. A trained model
cannot beat the exact PPD in expected CRPS (CRPS is a proper scoring rule, so the true predictive
distribution minimises its expectation), and for ``y ~ N(mu, tau)`` the expected CRPS of the exact
PPD is ``E[CRPS(N(mu, tau), y)] = E|Y - Y'| / 2 = sqrt(tau / pi)``. Averaging ``sqrt(tau / pi)``
over instances of the RBF task (d = 16, alpha = 1, x ~ N(0, I/d)) therefore gives a lower bound on
any model's average CRPS, which we compare with the paper's table for both conventions.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr
from scipy.stats import norm

from pfntheory.base._checks import (
    at_least,
    checked,
    mapping,
    nonneg_scalar,
    positive_int,
    positive_scalar,
)
from pfntheory.base.stats import mean_se
from pfntheory.maths.gp import posterior_predictive
from pfntheory.maths.kernels import RBFKernel

from . import ClaimResult, checked_args

__all__ = [
    "PAPER_INSTANCES",
    "exact_ppd_expected_crps",
    "paper_cell_se",
    "check_noise_parameterisation",
]

#: supp-sec:exp details: "evaluated on 4096 evaluation samples".
PAPER_INSTANCES = 4096


def _crps_spread_factor() -> float:
    """``E[g(Z)^2]`` for the standard-normal CRPS
    ``g(z) = z(2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)``, by quadrature on a fine grid (the integrand
    decays like z^2 phi(z))."""
    z = np.linspace(-12, 12, 200001)
    g = z * (2 * ndtr(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi)
    return float(np.trapezoid(g**2 * norm.pdf(z), z))


@checked(mean=positive_scalar, se=nonneg_scalar, n_ref=positive_int, n_paper=positive_int)
def paper_cell_se(mean: float, se: float, n_ref: int, n_paper: int = PAPER_INSTANCES) -> float:
    """Standard error of a table cell (a mean CRPS over ``n_paper`` instances) for a model at the
    exact PPD, from the exact PPD's expected CRPS ``mean`` and its standard error ``se`` over
    ``n_ref`` contexts.

    At ``y ~ N(mu, tau)`` the realised CRPS is ``sqrt(tau) g(Z)``, so its variance over instances
    is ``E[tau] E[g(Z)^2] - mean^2``, with ``E[tau] = pi E[sqrt(tau/pi)^2] = pi (mean^2 + n_ref
    se^2)``.
    """
    E_tau = np.pi * (mean**2 + n_ref * se**2)
    sd_inst = float(np.sqrt(max(E_tau * _crps_spread_factor() - mean**2, 0.0)))
    return sd_inst / float(np.sqrt(n_paper))


@checked_args(
    "lengthscale", "n", "noise_var", "rng", "d", n_instances=at_least(2), chunk=positive_int
)
def exact_ppd_expected_crps(
    lengthscale: float,
    n: int,
    noise_var: float,
    *,
    rng: np.random.Generator,
    d: int = 16,
    n_instances: int = 200,
    chunk: int = 50,
) -> tuple[float, float]:
    """Mean and standard error over instances of ``sqrt(tau / pi)`` for the RBF task.

    The predictive variance ``tau`` does not depend on the labels, so no labels are drawn.

    Returns
    -------
    mean, se : float
        Monte-Carlo mean of the exact PPD's expected CRPS and its standard error.
    """
    ell, m = lengthscale, n_instances
    k = RBFKernel(alpha=1.0, lengthscale=ell)
    vals = []
    for start in range(0, m, chunk):
        b = min(chunk, m - start)
        X = rng.standard_normal((b, n, d)) / np.sqrt(d)
        xq = rng.standard_normal((b, 1, d)) / np.sqrt(d)
        _, tau = posterior_predictive(k, X, np.zeros((b, n)), xq, noise_var)
        vals.append(np.sqrt(tau[:, 0] / np.pi))
    return mean_se(np.concatenate(vals))


@checked_args("noise_var", "k_se", "seed", "d", paper_crps=mapping, n_instances=at_least(2))
def check_noise_parameterisation(
    paper_crps: dict[tuple[float, int], tuple[float, ...]],
    noise_var: float,
    *,
    n_instances: int = 200,
    k_se: float = 4.0,
    seed: int = 0,
    d: int = 16,
) -> ClaimResult:
    """Is every CRPS of the paper's table at least the exact PPD's expected CRPS under
    ``noise_var``?

    Parameters
    ----------
    paper_crps : dict
        ``{(lengthscale, n'): (crps at L=8, L=16, L=32)}`` from supp-tab:lengthscale-crps.
    noise_var : float
        The noise variance to test (0.2 for the text's convention, 0.04 for std 0.2).
    k_se : float
        A paper value counts as consistent if it is >= exact - k_se combined standard errors: ours
        (``n_instances`` contexts) and the paper's own (its cell is a mean over 4096 instances,
        :func:`paper_cell_se`). Leaving the paper's error out would make a deficit look larger
        than the data support.

    Returns
    -------
    ClaimResult
        ``holds`` is True iff every paper entry is consistent; ``observed`` is the largest deficit
        ``(exact - paper) / se`` in combined standard errors.
    """
    rng = np.random.default_rng(seed)
    rows = []
    worst = -np.inf
    for (ell, n), vals in sorted(paper_crps.items()):
        mean, se = exact_ppd_expected_crps(ell, n, noise_var, d=d, n_instances=n_instances, rng=rng)
        best_paper = min(vals)
        se_paper = paper_cell_se(mean, se, n_instances)
        z = (mean - best_paper) / float(np.hypot(se, se_paper))
        worst = max(worst, z)
        cell = {"lengthscale": ell, "n": n, "paper": list(vals)}
        rows.append(
            cell
            | {"exact_mean": mean, "exact_se": se, "paper_se": se_paper}
            | {"deficit_in_se": z, "consistent": bool(z <= k_se)}
        )
    return ClaimResult(
        key="noise_parameterisation",
        label="supp-tab:lengthscale-crps",
        statement=(
            f"no trained model's CRPS is below the exact PPD's expected CRPS "
            f"(noise_var={noise_var})"
        ),
        holds=bool(worst <= k_se),
        observed=float(worst),
        bound=k_se,
        tolerance=(
            f"paper value >= exact mean - {k_se} combined Monte-Carlo SE (ours: {n_instances} "
            f"instances, seed {seed}; the paper's {PAPER_INSTANCES}-instance SE from the exact "
            f"PPD's CRPS spread)"
        ),
        details=dict(noise_var=noise_var, rows=rows),
    )
