"""Output heads of the PFN: moments -> logits over the C bins.

Paper results implemented here
------------------------------
* Sec. 4 "From Moments to PPD" and supp-sec:exp details (MLP head): the analytic head
  ``ell = Xi (s1 psi_1, s2 psi_2)^T + log Delta_c`` with ``psi(mu, tau) = (mu/tau, -1/(2 tau))``,
  the fixed readout ``Xi_{c,:} = T(xi_c) = (xi_c, xi_c^2)`` at the bin midpoints and two scalar
  rescalings ``s1, s2`` (learned in *learnable* mode, fixed at 1 in *theory* mode):
  :class:`PsiHead`. ``log Delta_c`` turns bin masses into the piecewise-constant density of eqn:TF
  piece ppd on a non-uniform grid (it is a constant, cancelled by the softmax, on an
  equidistant one).
* eqn:tabPFN mlp: the general one-hidden-layer head ``ell = W_2 act(W_1 z + h_1) + h_2`` of width
  ``C'`` (ReLU) on the query token: :class:`MLPHead`.

Positivity of tau
-----------------
``psi`` needs ``tau > 0`` but the readout ``tau_L = sigma^2 + [Z]_{k} - [Z]_{g}`` of a transformer
in training can be ``<= 0``. The head therefore applies the smooth positivity map
:func:`positive_tau`

    tau_+ = tau                              if tau >= tau_min,
    tau_+ = tau_min^2 / (2 tau_min - tau)    otherwise,

which is the identity on ``[tau_min, inf)`` (so the analytic logits, and the parity with the NumPy
construction, are exact wherever ``tau_L >= tau_min``), is C^1 (value and slope match at
``tau_min``), strictly increasing and strictly positive for every finite ``tau`` (it decays like
``tau_min^2/|tau|``, so unlike an exponential it cannot underflow to 0), and makes
``psi_2 = -1/(2 tau_+)`` affine in ``tau`` below ``tau_min``, so gradients keep pushing ``tau`` back
up at a bounded rate.
``tau_min`` (default ``1e-3`` in :class:`~pfntheory.infra.config.ModelSpec`) lies below every PPD
variance of the paper's tasks (``tau >= sigma^2 >= 0.01``). The raw ``tau_L`` is what the model
reports in ``PFNOutput.tau``; only the head sees ``tau_+``. User inputs are never clipped.
"""

from __future__ import annotations

import torch
from torch import nn

from pfntheory.base._checks import ArgumentTypeError, positive_int, positive_scalar
from pfntheory.infra.config import HEADS

__all__ = ["positive_tau", "check_edges", "PsiHead", "MLPHead", "HEADS"]


def positive_tau(tau: torch.Tensor, tau_min: float) -> torch.Tensor:
    """Smooth positivity map: identity on ``[tau_min, inf)``, ``tau_min^2 / (2 tau_min - tau)``
    below (C^1, strictly increasing, > 0, decaying like ``tau_min^2/|tau|`` so it never underflows).
    Shape preserved.

    ``tau`` is a real, finite tensor; ``tau_min`` a finite positive number. (The heads call the
    unchecked map: their input is the model's own readout.)
    """
    if not isinstance(tau, torch.Tensor):
        raise ArgumentTypeError(f"tau must be a torch.Tensor, got {type(tau).__name__}")
    if not tau.is_floating_point():
        raise ArgumentTypeError(f"tau must be a real floating-point tensor, got {tau.dtype}")
    if not bool(torch.isfinite(tau).all()):
        raise ValueError("tau contains NaN or infinite values")
    return _positive_tau(tau, positive_scalar(tau_min, "tau_min"))


def _positive_tau(tau: torch.Tensor, tau_min: float) -> torch.Tensor:
    """:func:`positive_tau` without the checks (called every forward pass)."""
    # clamp the unused branch so it stays finite (inf * 0 = nan in backward).
    low = tau_min * tau_min / (2.0 * tau_min - torch.clamp(tau, max=tau_min))
    return torch.where(tau >= tau_min, tau, low)


def check_edges(edges, C: int | None = None) -> torch.Tensor:
    """Validate bin edges ``gamma_1 < ... < gamma_{C+1}``: a finite, strictly increasing 1-d tensor.

    Raises
    ------
    ValueError
        Naming ``edges`` if it is not 1-d, has fewer than 3 entries, does not have ``C + 1``
        entries, is not finite, or is not strictly increasing.
    """
    if not isinstance(edges, torch.Tensor):
        try:
            edges = torch.as_tensor(edges, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(f"edges must be a real 1-d array, got {type(edges).__name__}") from err
    if not edges.is_floating_point():
        edges = edges.to(torch.float64)
    if edges.dim() != 1 or edges.numel() < 3:
        raise ValueError(
            f"edges must be 1-d with at least 3 entries (C >= 2), got shape {tuple(edges.shape)}"
        )
    if C is not None and edges.numel() != C + 1:
        raise ValueError(f"edges must have C + 1 = {C + 1} entries, got {edges.numel()}")
    if not bool(torch.isfinite(edges).all()):
        raise ValueError("edges contains NaN or infinite values")
    if not bool((edges[1:] > edges[:-1]).all()):
        raise ValueError("edges must be strictly increasing")
    return edges


class PsiHead(nn.Module):
    """Analytic head ``ell_c = s1 psi_1 xi_c + s2 psi_2 xi_c^2 + log Delta_c`` (Sec. 4).

    ``Xi`` and ``log Delta`` are derived from the edges passed to :meth:`forward` (``O(C)`` work),
    so that the model's ``edges`` buffer is the single source of truth and float64 edges stay exact.

    Parameters
    ----------
    learn_scales : bool
        Learn ``s1, s2`` (init 1; *learnable* mode) or keep them fixed at 1 (*theory* mode).
    tau_min : float
        Threshold of :func:`positive_tau`.
    """

    def __init__(self, learn_scales: bool, tau_min: float):
        super().__init__()
        if not isinstance(learn_scales, bool):
            raise ArgumentTypeError(f"learn_scales must be True or False, got {learn_scales!r}")
        ones = torch.ones(2)
        if learn_scales:
            self.s = nn.Parameter(ones)  # (s1, s2)
        else:
            self.register_buffer("s", ones)
        self.tau_min = positive_scalar(tau_min, "tau_min")

    def psi(self, mu: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """``psi(mu, tau_+) = (mu/tau_+, -1/(2 tau_+))``; shape (B, 2)."""
        return _psi(mu, tau, self.tau_min)

    def forward(self, mu: torch.Tensor, tau: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) from moments ``mu, tau`` of shape (B,) and edges (C + 1,)."""
        return psi_logits(mu, tau, self.s, edges, self.tau_min)


def _psi(mu: torch.Tensor, tau: torch.Tensor, tau_min: float) -> torch.Tensor:
    tau_p = _positive_tau(tau, tau_min)
    return torch.stack([mu / tau_p, -0.5 / tau_p], -1)  # psi(mu, tau), Sec. 4


def psi_logits(mu, tau, s, edges, tau_min: float) -> torch.Tensor:
    """The psi head of Sec. 4, ``ell_c = s1 psi_1 xi_c + s2 psi_2 xi_c^2 + log Delta_c`` (..., C),
    for moments ``mu, tau`` (...) and scales ``s`` (..., 2) broadcast against them (one head:
    :class:`PsiHead`; one per mixture component: :class:`pfntheory.nn.multihead_model.MixturePFN`).
    Unchecked: the callers' own readouts and edges."""
    edges = edges.to(mu.dtype)
    xi = 0.5 * (edges[1:] + edges[:-1])  # midpoints xi_c
    Xi = torch.stack([xi, xi * xi], -1)  # Xi_{c,:} = T(xi_c), (C, 2)
    log_delta = torch.log(edges[1:] - edges[:-1])  # log Delta_c
    return (_psi(mu, tau, tau_min) * s) @ Xi.T + log_delta  # Xi (s1 psi1, s2 psi2) + log Delta


class MLPHead(nn.Module):
    """One-hidden-layer head of eqn:tabPFN mlp on the query token ``[Z^(L)]_{:, n+1}``.

    Parameters
    ----------
    in_dim : int
        Token dimension ``d + 4``.
    width : int
        Hidden width ``C'``.
    C : int
        Number of bins.
    """

    def __init__(self, in_dim: int, width: int, C: int):
        super().__init__()
        in_dim = positive_int(in_dim, "in_dim")
        width = positive_int(width, "width")
        C = positive_int(C, "C", minimum=2)
        self.lin1 = nn.Linear(in_dim, width)  # W_1, h_1
        self.lin2 = nn.Linear(width, C)  # W_2, h_2

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) from the query token ``z`` of shape (B, d + 4)."""
        return self.lin2(torch.relu(self.lin1(z)))  # eqn:tabPFN mlp
