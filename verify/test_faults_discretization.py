"""Fault injection for the discretisation checks (supp-lem:smax quad, supp-thm:popmini).

Each test hands a deliberately wrong implementation to the claim checks of
pfntheory.claims.discretization and asserts that the check reports the claim as failed. A check
that passes a wrong implementation cannot detect the error it is meant to detect.

Faults: (1) the readout Xi built from the bin EDGES instead of the midpoints xi_c; (2) the
log Delta_c term dropped from the logits on a non-uniform partition; (3) wrong normalisers of
q* (the marginal eps of eqn:true piece ppd, no truncation, density-vs-mass confusion).
"""

import numpy as np
import pytest

from pfntheory.claims.discretization import (
    check_readout_identity,
    check_smax_quad,
    check_smax_quad_rate,
    random_partition,
)
from pfntheory.claims.popmini import check_popmini
from pfntheory.maths.densities import (
    gaussian,
    gaussian_mixture,
    quantile_interval,
)
from pfntheory.maths.discretize import gaussian_bin_masses, truncnorm_bin_masses


def readout_left_edges(density, edges):
    """FAULT 1: Xi_{c,:} = T(gamma_c) (left edge) instead of T(xi_c)."""
    psi, T, log_h = density.logpdf_T()
    ell = np.asarray(T(edges[:-1])) @ psi + np.log(np.diff(edges))
    return ell if log_h is None else ell + log_h(edges[:-1])


def readout_no_log_delta(density, edges):
    """FAULT 2: ell_c = <psi, T(xi_c)> without + log Delta_c."""
    psi, T, log_h = density.logpdf_T()
    xi = 0.5 * (edges[:-1] + edges[1:])
    ell = np.asarray(T(xi)) @ psi
    return ell if log_h is None else ell + log_h(xi)


def q_marginal_eps(mu, tau, edges, eps=0.002):
    """FAULT 3a: eqn:true piece ppd read literally, normalised by 1 - (marginal eps)."""
    return gaussian_bin_masses(mu, tau, edges) / (1 - eps)


def q_untruncated(mu, tau, edges):
    """FAULT 3b: bin masses of p_n, not of p_(a,b] (normaliser 1)."""
    return gaussian_bin_masses(mu, tau, edges)


def q_density_not_mass(mu, tau, edges):
    """FAULT 3c: bin *densities* q*_c / Delta_c renormalised to sum 1 (mass/density confusion)."""
    q = truncnorm_bin_masses(mu, tau, edges) / np.diff(edges)
    return q / q.sum(-1, keepdims=True)


def test_edges_readout_degrades_the_rate():
    """With Xi at the edges the smax-quad error is first order: the fitted order (95% t-CI) leaves
    the band -2 +- 0.1, so check_smax_quad_rate reports failure (the correct readout passes, see
    verify/test_smax_quad.py)."""
    r = check_smax_quad_rate(np.random.default_rng(7), readout=readout_left_edges)
    assert not r.holds, str(r)
    assert r.observed > -1.2, str(r)  # observed order ~ 1


def test_edges_readout_breaks_the_identity():
    """sm(ell) no longer equals p(xi_c) Delta_c / sum: the readout identity check fails."""
    d = gaussian(0.2, 0.5)
    a, b = quantile_interval(d, 1e-3, 1e-3)
    r = check_readout_identity(d, np.linspace(a, b, 65), readout=readout_left_edges)
    assert not r.holds, str(r)


@pytest.mark.parametrize(
    "density",
    [gaussian(0.0, 1.0), gaussian_mixture([0.5, 0.5], [-1, 1], [0.3, 0.3])],
    ids=["gaussian", "mixture"],
)
def test_dropped_log_delta_fails_on_nonuniform_partitions(density):
    """Without log Delta_c the softmax weights p(xi_c) instead of p(xi_c) Delta_c: on a random
    partition (widths varying 4x) the TV stays O(1) while the bound -> 0, so check_smax_quad fails
    at C = 300; the readout identity fails too. On an equidistant grid the fault is invisible
    (log Delta_c is a constant; Sec. 4's sm(Xi psi) is correct only there)."""
    a, b = quantile_interval(density, 1e-3, 1e-3)
    e = random_partition(a, b, 300, np.random.default_rng(0), ratio=4.0)
    assert not check_smax_quad([(density, e)], readout=readout_no_log_delta).holds
    assert not check_readout_identity(density, e, readout=readout_no_log_delta).holds
    assert check_readout_identity(
        density, np.linspace(a, b, 301), readout=readout_no_log_delta
    ).holds


@pytest.mark.parametrize(
    "fault",
    [q_marginal_eps, q_untruncated, q_density_not_mass],
    ids=["marginal_eps", "untruncated", "density_not_mass"],
)
def test_wrong_normaliser_is_caught(fault):
    """check_popmini rejects q* with a wrong normaliser: off the simplex (marginal eps, untruncated)
    or on it but not the minimiser (density/mass confusion, non-uniform partition)."""
    rng = np.random.default_rng(1)
    e = random_partition(-2.0, 2.5, 40, rng)
    mu, tau = np.array([0.1, -0.4]), np.array([0.5, 1.2])
    assert check_popmini(mu, tau, e, rng).holds  # correct minimiser passes
    r = check_popmini(mu, tau, e, rng, minimizer=fault)
    assert not r.holds, str(r)
