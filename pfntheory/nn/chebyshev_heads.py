"""Chebyshev per-layer steps in the torch multi-head model's hand-set heads (issue 38, beyond the
paper): :class:`~pfntheory.nn.multihead_model.MixturePFN` keeps one step per head and layer in its
``V`` and ``S`` parameters; :func:`set_layer_steps` writes the steps of
:func:`pfntheory.maths.chebyshev.chebyshev_steps` there (TF^pr heads), on a range of the
Jacobi-preconditioned system fixed for the prior (:func:`prior_ranges`), so that the model stays one
set of weights for every context.
"""

from __future__ import annotations

import numpy as np
import torch

from pfntheory.base._checks import (
    as_float_array,
    instance_of,
    pair,
    positive_int,
    probability,
    seed_int,
    sequence,
)
from pfntheory.infra.config import TaskSpec, prior_components
from pfntheory.maths import chebyshev as ch
from pfntheory.maths.richardson import jacobi_preconditioner, spectrum
from pfntheory.maths.spectral import sample_design

__all__ = ["prior_ranges", "set_layer_steps", "chebyshev_hook", "depth_matched"]


def prior_ranges(task: TaskSpec, n: int, n_designs: int = 32, seed: int = 0) -> list:
    """Per component ``(lo, hi)``: ``lo`` the smallest ``lambda_min(D^{-1} (G + sigma^2 I))`` over
    ``n_designs`` designs of ``n`` points of the prior's covariates, ``hi = 1 + sigma^2 / alpha^2``
    (the proven top, :func:`pfntheory.maths.chebyshev.prior_range`: steps beyond it would diverge; a
    context whose ``lambda_min`` lies below ``lo`` converges slower on that mode, never diverges,
    since ``|p_L| <= 1`` on ``[0, lo]``). ``lambda_min`` falls as ``n`` grows, so the range of the
    largest ``n`` serves every smaller one."""
    instance_of(TaskSpec)(task, "task")
    n, n_designs = positive_int(n, "n", minimum=2), positive_int(n_designs, "n_designs")
    kernels, noise_var = prior_components(task)
    rng = np.random.default_rng(seed_int(seed, "seed"))
    designs = [sample_design(n, task.d, rng, task.covariates) for _ in range(n_designs)]
    out = []
    for k, s2 in zip(kernels, noise_var, strict=True):
        lo = min(
            float(spectrum(k(X) + s2 * np.eye(n), jacobi_preconditioner(k(X)))[-1]) for X in designs
        )
        out.append((lo, 1.0 + float(s2) / k.alpha**2))
    return out


def set_layer_steps(model, steps) -> None:
    """Write per-layer steps ``steps`` (H, L - 1) into a TF^pr ``MixturePFN``'s ``V`` and ``S``
    (the layout of its initialisation: ``V_h = (eta, -eta, eta, -eta)``,
    ``S_h = -eta sigma_h^2 / alpha^2`` per layer), in place."""
    from pfntheory.nn.multihead_model import MixturePFN

    instance_of(MixturePFN)(model, "model")
    if not model.config.normalised:
        raise ValueError("set_layer_steps writes TF^pr (normalised) heads only")
    eta = torch.as_tensor(as_float_array(steps, "steps", ndim=2), dtype=model.V.dtype)
    if eta.shape != model.V.shape[:2] or not bool(torch.all(eta > 0)):
        raise ValueError(f"steps must be positive of shape {tuple(model.V.shape[:2])}")
    S_over = model.S[:, :1, :1] / model.V[:, :1, :1]  # -sigma^2 / alpha^2 per head (hand-set)
    with torch.no_grad():
        model.V.copy_(torch.stack([eta, -eta, eta, -eta], -1))
        model.S.copy_((S_over * eta[..., None]).expand_as(model.S))


def _ranges(ranges) -> list[tuple[float, float]]:
    """Per head ``(lo, hi)`` with ``0 < lo < hi`` finite: a spectral range."""
    out = []
    for i, r in enumerate(sequence(ranges, "ranges")):
        lo, hi = pair(r, f"ranges[{i}]")
        if not 0.0 < lo < hi:
            raise ValueError(f"ranges[{i}] must be a range 0 < lo < hi, got {r!r}")
        out.append((lo, hi))
    return out


def depth_matched(ranges, L: int, eps: float = 1e-2) -> list:
    """``ranges`` with each bottom raised to ``hi / kappa_L`` where ``L - 1`` Chebyshev steps reach
    ``eps`` on ``[hi / kappa_L, hi]`` (``kappa_L = (1 / tanh(acosh(1 / eps) / (L - 1)))^2``, the
    inverse of :func:`pfntheory.maths.chebyshev.chebyshev_depth`), when that is above the bottom: a
    shallow model then damps the top of the spectrum, where the prediction's mass lies, to
    ``eps`` instead of spreading its few nodes over the whole range."""
    import math

    ranges = _ranges(ranges)
    eps = probability(eps, "eps")
    m = max(positive_int(L, "L") - 1, 1)
    t = math.acosh(1.0 / eps) / m  # arccosh((k + 1) / (k - 1)) = t  <=>  sqrt(k) = 1 / tanh(t / 2)
    kappa = (1.0 / math.tanh(t / 2.0)) ** 2
    return [(max(lo, hi / kappa), hi) for lo, hi in ranges]


def chebyshev_hook(ranges, eps: float | None = None):
    """``head_hook`` for :func:`pfntheory.pipelines.multihead_run.ceiling`: the hand-set heads of
    depth ``L`` take the Chebyshev steps (Leja order) of ``ranges`` (per head ``(lo, hi)``); with
    ``eps``, of :func:`depth_matched` ranges."""
    ranges = _ranges(ranges)
    if eps is not None:
        eps = probability(eps, "eps")

    def hook(model, L: int) -> None:
        rr = ranges if eps is None else depth_matched(ranges, L, eps)
        set_layer_steps(model, np.stack([ch.chebyshev_steps(lo, hi, L - 1) for lo, hi in rr]))

    return hook
