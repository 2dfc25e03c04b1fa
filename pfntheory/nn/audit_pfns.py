"""Adapter of the PFNs library's transformers (``pfns`` on the package index) for
:func:`pfntheory.nn.audit.audit` (issue 50).

Optional: ``pip install 'pfntheory[audit-pfns]'``. Nothing here imports ``pfns`` at import time,
and nothing in the main job imports this module; :func:`pfns_model` needs a model built by
``pfns`` (a ``TransformerModel`` / ``TableTransformer`` with its bar-distribution criterion) and
fails with one line naming the missing package otherwise.

The model is called batch-first, as ``pfns.train`` calls it: ``model(x=[X; xq], y=Y)`` with
``X (B, n, d)``, ``xq (B, 1, d)``, ``Y (B, n)``, returning logits ``(B, 1, K)`` over the ``K`` bars
of the criterion's borders. The audit reads them as a bar distribution (:class:`BarProbs`, uniform
within each bar). A ``FullSupportBarDistribution`` puts half-normal tails on its two outer bars;
the conversion treats those bars as their finite bars, which is exact on the audit's interval
``(a, b]`` when ``(a, b]`` lies within the inner bars ``(borders[1], borders[-2]]`` (the audit's
``outside_mass`` then counts the tails' mass as outside, as it is) -- :func:`pfns_model` with
``edges`` checks that and refuses otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from pfntheory.base._checks import ArgumentTypeError, positive_scalar
from pfntheory.maths.discretize import check_edges

from .audit import BarProbs

__all__ = ["pfns_model"]


def _borders(criterion) -> np.ndarray:
    b = getattr(criterion, "borders", None)
    if b is None:
        raise ArgumentTypeError(
            "criterion must be a pfns BarDistribution (with borders), got "
            f"{type(criterion).__name__}"
        )
    return check_edges(torch.as_tensor(b).detach().double().cpu().numpy(), "criterion.borders")


def pfns_model(model, criterion=None, *, edges=None, x_scale: float = 1.0) -> Callable:
    """A ``pfns`` transformer as a model for :func:`pfntheory.nn.audit.audit`.

    Parameters
    ----------
    model : torch.nn.Module
        A trained ``pfns`` transformer (``pfns.train.train(...)["model"]``), called batch-first.
    criterion : pfns BarDistribution, optional
        Its output distribution (default ``model.criterion``); its ``borders`` are the bars.
    edges : array_like, optional
        The audit's bins: with a full-support criterion, checked to lie within its inner bars.
    x_scale : float
        Inputs are multiplied by it before the model sees them (1: the model was trained on the
        task's own covariates).

    Returns
    -------
    callable
        ``f(X, y, xq) -> BarProbs``.
    """
    if not isinstance(model, torch.nn.Module):
        raise ArgumentTypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    criterion = getattr(model, "criterion", None) if criterion is None else criterion
    borders = _borders(criterion)
    x_scale = positive_scalar(x_scale, "x_scale")
    full = type(criterion).__name__ == "FullSupportBarDistribution"
    if edges is not None and full:
        e = check_edges(edges)
        if not (borders[1] <= e[0] and e[-1] <= borders[-2]):
            raise ValueError(
                f"edges ({e[0]:.4g}, {e[-1]:.4g}] must lie within the inner bars "
                f"({borders[1]:.4g}, {borders[-2]:.4g}] of the full-support criterion "
                "(its outer bars have half-normal tails, not uniform bars)"
            )
    dtype = next(model.parameters()).dtype
    model.eval()

    @torch.no_grad()
    def predict(X, y, xq):
        Xt = torch.as_tensor(X, dtype=dtype) * x_scale
        qt = torch.as_tensor(xq, dtype=dtype)[:, None, :] * x_scale
        out = model(x=torch.cat([Xt, qt], dim=1), y=torch.as_tensor(y, dtype=dtype))
        if isinstance(out, dict):
            out = out["standard"]
        logits = out.reshape(out.shape[0], -1)
        return BarProbs(torch.softmax(logits.double(), dim=-1), borders)

    return predict
