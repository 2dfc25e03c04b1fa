"""Exact-PPD references for the tables of supp-sec:exp additional (float64 NumPy, no torch).

A trained model cannot beat the true posterior predictive distribution: its expected CRPS is the
smallest any predictive distribution attains (CRPS is strictly proper), and the central intervals of
the true PPD cover exactly at their nominal level. :func:`exact_ppd_reference` measures both on
contexts drawn from the prior of a table, so that every reproduced table (and the published one,
:mod:`~pfntheory.experiments.published`) can be read against the floor.

Implements
----------
* supp-tab:lengthscale-crps: RBF prior, ``x ~ N(0, I/d)``, PPD ``N(mu, tau)`` of eqn:GPreg.
* supp-tab:hierarchical-gp: uniform prior over ``(ell_h, sigma_h)`` in a grid (``sigma_h`` noise
  STDs); the PPD is the finite mixture ``sum_h w_h N(mu_h, tau_h)`` with posterior weights
  ``w_h oc pi_h N(Y; 0, G_h + sigma_h^2 I)``.

Expected CRPS given the context is in closed form: for ``y ~ F``, ``E CRPS(F, y) = E|X - X'| / 2``
(Gneiting & Raftery 2007, eq. 21, with X, X' iid F), which is ``sqrt(tau / pi)`` for ``N(mu, tau)``
and ``(1/2) sum_{h,h'} w_h w_h' E|N(mu_h - mu_h', tau_h + tau_h')|`` for a mixture. Coverage is
measured with ``y`` drawn from the PPD (its expectation is the nominal level). The truncation of the
response to ``(a, b]`` (outside mass 0.002 by construction, sec:sims) is ignored here.
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    as_float_array,
    check_kernel,
    check_rng,
    floats,
    positive_array,
    positive_int,
    sequence,
    shaped,
)
from pfntheory.base.stats import mean_se
from pfntheory.infra.config import INTERVAL_LEVELS, TaskSpec
from pfntheory.infra.config import prior_components as components
from pfntheory.maths import gp, metrics
from pfntheory.maths.spectral import sample_design

__all__ = ["components", "ppd_at_query", "expected_crps", "exact_ppd_reference"]


def ppd_at_query(kernels, noise_var, X, xq, *, rng: np.random.Generator, h_true: int):
    """Draw ``Y`` from component ``h_true`` and return the (mixture) PPD at ``xq``.

    The PPD is :func:`pfntheory.maths.gp.mixture_ppd` (the one implementation of eqn:GPreg and of
    the mixture weights); only the draw of ``Y`` is done here.

    Parameters
    ----------
    kernels : list of kernel, length H
    noise_var : ndarray of shape (H,)
    X : ndarray of shape (n, d)
    xq : ndarray of shape (d,)
    rng : numpy.random.Generator
    h_true : int
        Component the context labels are drawn from.

    Returns
    -------
    w, mu, tau : ndarray of shape (H,)
        Posterior weights (uniform prior) and componentwise predictive moments (eqn:GPreg).
    """
    kernels = sequence(kernels, "kernels")
    for i, k in enumerate(kernels):
        check_kernel(k, f"kernels[{i}]")
    H = len(kernels)
    noise_var = shaped(
        positive_array(noise_var, "noise_var", ndim=1), "noise_var", (H,), "(one per kernel)"
    )
    X = as_float_array(X, "X", ndim=2, non_empty=True)
    xq = shaped(as_float_array(xq, "xq", ndim=1), "xq", (X.shape[1],), "(one point of X's d)")
    rng = check_rng(rng)
    h_true = positive_int(h_true, "h_true", minimum=0, maximum=H - 1)
    return _ppd_at_query(kernels, noise_var, X, xq, rng, h_true)


def _ppd_at_query(kernels, noise_var, X, xq, rng, h_true):
    """:func:`ppd_at_query` on checked arguments (the inner loop of
    :func:`exact_ppd_reference`)."""
    n = X.shape[0]
    H = len(kernels)
    k, noise_var_h = kernels[h_true], noise_var[h_true]
    chol = np.linalg.cholesky(k(X) + noise_var_h * np.eye(n))  # G_h + sigma_h^2 I = L L^T
    Y = chol @ rng.standard_normal(n)  # Y ~ N(0, G_h + sigma_h^2 I)
    ppd = gp.mixture_ppd(kernels, noise_var, np.full(H, 1.0 / H), X, Y, xq[None, :])
    return ppd.weights, ppd.mu[:, 0], ppd.tau[:, 0]


#: ``E_{y ~ F} CRPS(F, y)`` for a Gaussian mixture ``F`` (the one implementation is in metrics).
expected_crps = metrics.mixture_expected_crps


def exact_ppd_reference(
    task: TaskSpec,
    n_eval,
    n_instances: int,
    rng: np.random.Generator,
    levels=INTERVAL_LEVELS,
    covariates: str | None = None,
) -> dict:
    """CRPS, coverage and width of the exact PPD on ``n_instances`` contexts per ``n'``.

    Parameters
    ----------
    task : TaskSpec
        The prior (``blr``, ``rbf`` or ``hier_rbf``).
    n_eval : sequence of int
        Context sizes n'.
    n_instances : int
        Contexts per n'.
    rng : numpy.random.Generator
    levels : sequence of float
        Nominal levels of the central intervals.
    covariates : str, optional
        Override of ``task.covariates``.

    Returns
    -------
    dict
        ``{"n_eval": [...], "n_instances": int, "metrics": {name: {"mean": [...], "se": [...]}}}``
        with names ``crps`` (expected CRPS given the context, the floor for any model),
        ``crps_realised`` (CRPS at a draw ``y`` from the PPD), ``cov50``/``cov90``/``cov95``
        (coverage of the PPD's own central intervals at that draw) and ``width50``... (their
        widths). ``se`` is the standard error of the mean over the instances.
    """
    n_instances = positive_int(n_instances, "n_instances")
    rng = check_rng(rng)
    levels = floats(unit=True)(levels, "levels")
    kernels, noise_var = components(task)
    H = len(kernels)
    design = covariates or task.covariates
    out: dict[str, dict[str, list]] = {}

    def add(name, vals):
        m, se = mean_se(vals)
        out.setdefault(name, {"mean": [], "se": []})
        out[name]["mean"].append(m)
        out[name]["se"].append(se)

    n_eval = [positive_int(n, "n_eval") for n in n_eval]
    for n in n_eval:
        W, MU, TAU, y = (
            np.empty((n_instances, H)),
            np.empty((n_instances, H)),
            np.empty((n_instances, H)),
            np.empty(n_instances),
        )
        for i in range(n_instances):
            X = sample_design(n, task.d, rng, design)
            xq = sample_design(1, task.d, rng, design)[0]
            h = int(rng.integers(H))  # theta ~ uniform over the grid
            W[i], MU[i], TAU[i] = _ppd_at_query(kernels, noise_var, X, xq, rng, h)
            c = rng.choice(H, p=W[i] / W[i].sum())  # y ~ sum_h w_h N(mu_h, tau_h)
            y[i] = MU[i, c] + np.sqrt(TAU[i, c]) * rng.standard_normal()
        add("crps", expected_crps(W, MU, TAU))
        add("crps_realised", metrics.mixture_crps(W, MU, TAU, y))
        for lv in levels:
            lo, hi = metrics.mixture_interval(W, MU, TAU, lv)
            tag = f"{round(100 * lv):d}"
            add(f"cov{tag}", (lo < y) & (y <= hi))
            add(f"width{tag}", hi - lo)
    return {"n_eval": n_eval, "n_instances": n_instances, "covariates": design, "metrics": out}
