"""The composed bound of thm:PPD convergence, term by term (float64 NumPy).

Implements
----------
* supp-sec:thrm4.1 (proof of thm:PPD convergence): the logits ``l1 = Xi psi~(mu_L, tau_L)``,
  ``l2 = Xi psi~(mu, tau)``, ``l3 = Xi psi(mu, tau)`` of the transformer output, the MLP at the
  exact moments and the exact natural parameters, and every term of the bound
  (``||Xi|| L_psi~ ||.||``, ``||Xi|| delta_MLP``, the softmax perturbation, the discretisation and
  softmax-quadrature bounds with the tail mass) next to the measured ``TV(p_n, q_theta)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfntheory.base._checks import ArgumentTypeError, finite_scalar, positive_scalar

from .discretize import (
    check_edges,
    discretization_bound,
    gaussian_lipschitz,
    gaussian_tail_mass,
    smax_quad_bound,
    softmax_perturbation_bound,
)
from .metrics import tv_gaussian_histogram, tv_truncnorm_histogram
from .mlp import ReLUMLP, delta_mlp
from .readout import logits_from_natural, psi_gaussian, readout_Xi, softmax

__all__ = ["PPDBoundTerms", "ppd_bound_terms"]


@dataclass(frozen=True)
class PPDBoundTerms:
    """Measured ``TV(p_n, q_theta)`` and every term of the proof of thm:PPD convergence
    (one context).

    Attributes
    ----------
    tv : float
        ``TV(p_n, q_theta)`` with the untruncated PPD ``p_n = N(mu, tau)`` (tail mass included).
    tv_truncated : float
        ``TV(p_(a,b], q_theta)`` (the quantity plotted in fig:exp1).
    solver_error : float
        ``||(mu, tau) - (mu_L, tau_L)||_2`` (thm:TFdoPPD).
    Xi_norm, lipschitz, delta_mlp : float
        ``||Xi||_2`` (largest singular value), ``L_psi~`` bound, ``delta_MLP``.
    logit_solver, logit_solver_bound : float
        ``||l1 - l2||_2`` and its bound ``||Xi||_2 L_psi~ ||(mu,tau) - (mu_L,tau_L)||_2``.
    logit_mlp, logit_mlp_bound : float
        ``||l2 - l3||_2`` and its bound ``||Xi||_2 delta_MLP``.
    Delta, Delta_bound : float
        ``||l1 - l3||_inf`` and the bound ``logit_solver_bound + logit_mlp_bound``.
    softmax_tv, softmax_tv_bound : float
        ``TV(q_theta, q_3) = ||p1 - p3||_1 / 2`` and ``(e^{2 Delta_bound} - 1) / 2``.
    disc_tv, disc_bound : float
        ``TV(p_n, q_3)`` and its bound supp-lem:discretization error + supp-lem:smax quad with the
        Gaussian Lipschitz constant (the ``1/C + eps_tail`` term).
    eps_tail : float
        ``P(y not in (a, b])`` under ``p_n``.
    bound : float
        ``disc_bound + softmax_tv_bound``, the composed bound on ``tv``.
    in_box : bool
        Whether ``(mu, tau)`` lies in the MLP's box ``K`` (hypothesis of the ``delta_MLP`` term).
    """

    tv: float
    tv_truncated: float
    solver_error: float
    Xi_norm: float
    lipschitz: float
    delta_mlp: float
    logit_solver: float
    logit_solver_bound: float
    logit_mlp: float
    logit_mlp_bound: float
    Delta: float
    Delta_bound: float
    softmax_tv: float
    softmax_tv_bound: float
    disc_tv: float
    disc_bound: float
    eps_tail: float
    bound: float
    in_box: bool

    @property
    def holds(self) -> bool:
        """Every measured term below its bound (the tolerance is the caller's business)."""
        return bool(
            self.in_box
            and self.tv <= self.bound
            and self.Delta <= self.Delta_bound
            and self.softmax_tv <= self.softmax_tv_bound
            and self.disc_tv <= self.disc_bound
        )


def ppd_bound_terms(
    mu_L: float,
    tau_L: float,
    mu: float,
    tau: float,
    mlp: ReLUMLP,
    edges,
    *,
    delta: float | None = None,
    n_grid: int = 51,
) -> PPDBoundTerms:
    """Logits ``l1, l2, l3`` of supp-sec:thrm4.1 and each term of the bound next to the measured TV.

    ``l1 = Xi psi~(mu_L, tau_L)``, ``l2 = Xi psi~(mu, tau)``, ``l3 = Xi psi(mu, tau)``, with ``Xi``
    rows ``[xi_c, xi_c^2]`` at the bin midpoints plus ``log Delta_c``
    (:func:`pfntheory.maths.readout.logits_from_natural`; a constant on an equidistant grid).
    ``q_theta = sm(l1)`` read as the histogram of eqn:TF piece ppd.

    Parameters
    ----------
    mu_L, tau_L : float
        Transformer output ``TF_{vartheta,L}``.
    mu, tau : float
        Exact PPD moments.
    mlp : ReLUMLP
    edges : ndarray of shape (C + 1,)
    delta : float, optional
        ``delta_MLP``; the certified upper bound :func:`pfntheory.maths.mlp.delta_mlp` on
        ``mlp.box`` if not given.
    n_grid : int
        Initial grid of :func:`pfntheory.maths.mlp.delta_mlp`.

    Returns
    -------
    PPDBoundTerms
    """
    mu_L, mu = finite_scalar(mu_L, "mu_L"), finite_scalar(mu, "mu")
    tau_L = positive_scalar(tau_L, "tau_L")
    tau = positive_scalar(tau, "tau")
    if not isinstance(mlp, ReLUMLP):
        raise ArgumentTypeError(f"mlp must be a ReLUMLP, got {type(mlp).__name__}")
    e = check_edges(edges)
    delta = (
        delta_mlp(mlp, n_grid=n_grid)
        if delta is None
        else positive_scalar(delta, "delta", allow_zero=True)
    )
    Xi = readout_Xi(e)  # (C, 2), rows [xi_c, xi_c^2]
    Xi_norm = float(np.linalg.norm(Xi, 2))
    lip = mlp.lipschitz_bound()
    l1 = logits_from_natural(mlp(np.array([mu_L, tau_L])), e)  # Xi psi~(mu_L, tau_L) + log Delta
    l2 = logits_from_natural(mlp(np.array([mu, tau])), e)  # Xi psi~(mu, tau) + log Delta
    l3 = logits_from_natural(psi_gaussian(mu, tau), e)  # Xi psi(mu, tau) + log Delta
    solver_error = float(np.hypot(mu - mu_L, tau - tau_L))
    b_solver = Xi_norm * lip * solver_error  # ||l1 - l2||_2 <= ||Xi|| L ||(mu,tau) - (mu_L,tau_L)||
    b_mlp = Xi_norm * delta  # ||l2 - l3||_2 <= ||Xi|| delta_MLP
    Delta_bound = b_solver + b_mlp
    p1, p3 = softmax(l1), softmax(l3)
    eps_tail = float(gaussian_tail_mass(mu, tau, e[0], e[-1]))
    L_lip = float(gaussian_lipschitz(tau))
    eps_c = min(eps_tail, 1.0 - 1e-12)
    disc_bound = discretization_bound(L_lip, e, eps_c) + smax_quad_bound(L_lip, e, eps_c)
    with np.errstate(
        over="ignore"
    ):  # e^{2 Delta} overflowing is a vacuous (infinite) bound, not an error
        soft_bound = 0.5 * float(softmax_perturbation_bound(Delta_bound))
    (m0, m1), (t0, t1) = mlp.box
    return PPDBoundTerms(
        tv=float(tv_gaussian_histogram(mu, tau, e, p1)),
        tv_truncated=float(tv_truncnorm_histogram(mu, tau, e, p1)),
        solver_error=solver_error,
        Xi_norm=Xi_norm,
        lipschitz=lip,
        delta_mlp=float(delta),
        logit_solver=float(np.linalg.norm(l1 - l2)),
        logit_solver_bound=float(b_solver),
        logit_mlp=float(np.linalg.norm(l2 - l3)),
        logit_mlp_bound=float(b_mlp),
        Delta=float(np.max(np.abs(l1 - l3))),
        Delta_bound=float(Delta_bound),
        softmax_tv=0.5 * float(np.sum(np.abs(p1 - p3))),
        softmax_tv_bound=soft_bound,
        disc_tv=float(tv_gaussian_histogram(mu, tau, e, p3)),
        disc_bound=float(disc_bound),
        eps_tail=eps_tail,
        bound=float(disc_bound + soft_bound),
        in_box=bool(m0 <= mu <= m1 and t0 <= tau <= t1),
    )
