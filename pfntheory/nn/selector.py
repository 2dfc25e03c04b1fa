"""Component selectors for the multi-head PFN of the hierarchical prior (issue 38, beyond the
paper).

The multi-head model (:class:`pfntheory.nn.multihead_model.MixturePFN`) reads its mixture weights
from the heads' solved systems, which at the table's depths have not converged (docs/multihead.md).
A selector here reads them instead from statistics that concentrate without a solve:

* ``s_0 = Y^T Y / n`` and, per kernel ``b`` of a bank of RBF lengthscales,
  ``t_b = Y^T (K_b - I) Y / (n (n - 1))`` and the design's ``m_b = 1^T (K_b - I) 1 / (n (n - 1))``
  (``K_b`` unit amplitude). ``K_b Y`` is one attention layer (RBF score of scale ``1 / ell_b``,
  value ``y``, no normalisation: eqn:1st attn with ``y`` as the value); ``Y^T (.)`` at the query
  is the linear summary head of :func:`pfntheory.maths.multihead_construction.multihead_forward`
  (value ``y_i``, key the attention's output, query 1). ``t_b`` and ``m_b`` have n-free means
  (population averages of kernel products), so the statistics are comparable across ``n``.
* :class:`StatSelector`: a small MLP from ``(log s_0, t_b / m_b, log m_b, log n)`` to the
  component logits, trained by the selection loss ``-log w_{h*}(D)`` (``h*`` the component the
  prior drew: a proper scoring rule whose minimiser is ``p(h | D)``). Its last layer starts at zero,
  so the gate starts uniform and cannot collapse at initialisation.

Also the sampling helpers: :func:`sample_with_component` (:func:`pfntheory.nn.priors.sample_batch`
plus the component each instance was drawn from) and :func:`draw_contexts` (contexts and ``h*``
only: one Cholesky factor per context instead of one per component, for the selection loss).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from torch import nn

from pfntheory.base._checks import ArgumentTypeError, float_tuple, instance_of, positive_int
from pfntheory.infra.config import TaskSpec, prior_components

from .priors import Batch, sample_batch

__all__ = [
    "BANK",
    "sample_with_component",
    "draw_contexts",
    "summary_stats",
    "StatSelector",
    "train_selector",
]

#: Default bank of lengthscales of the statistics ``t_b`` (the table's grid and around it).
BANK = (0.3, 0.4, 0.6, 0.8, 1.0, 1.2, 1.6)


def _check_hier(task) -> int:
    instance_of(TaskSpec)(task, "task")
    if task.kind != "hier_rbf":
        raise ValueError(f"task must be a 'hier_rbf' prior (to select from), got {task.kind!r}")
    return task.n_components


def sample_with_component(
    task: TaskSpec,
    batch_size: int,
    n: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    interval=None,
) -> tuple[Batch, torch.Tensor]:
    """:func:`~pfntheory.nn.priors.sample_batch` and ``h*`` (B,), the component each instance's
    labels were drawn from.

    ``sample_batch`` draws, in this order, the covariates ``(B, n + 1, d)``, ``z`` ``(B, n)`` and
    ``h*`` ``(B,)`` from ``generator``; a copy of the generator's state replays those draws. The
    replayed covariates are compared with the batch's (a change of that order fails loudly here).
    """
    H = _check_hier(task)
    B, n = positive_int(batch_size, "batch_size"), positive_int(n, "n")
    if not isinstance(generator, torch.Generator):
        raise ArgumentTypeError(f"generator must be a torch.Generator, got {type(generator)}")
    state = generator.get_state()
    bt = sample_batch(task, B, n, generator, dtype=dtype, interval=interval)
    g = torch.Generator(device=generator.device)
    g.set_state(state)
    dev, f64 = generator.device, torch.float64
    X_all = task.scale * torch.randn(B, n + 1, task.d, generator=g, device=dev, dtype=f64)
    torch.randn(B, n, generator=g, device=dev, dtype=f64)  # z
    h0 = torch.randint(H, (B,), generator=g, device=generator.device)
    if not torch.equal(X_all[:, :n].to(dtype), bt.X.to(generator.device)):
        raise RuntimeError("sample_with_component: sample_batch's draw order changed (covariates)")
    return bt, h0


def draw_contexts(task: TaskSpec, batch_size: int, n: int, generator: torch.Generator):
    """Contexts of the hierarchical prior with the drawing component: ``h* ~ pi`` (uniform),
    ``X ~`` the covariates, ``Y ~ N(0, G_{h*} + sigma_{h*}^2 I)`` (float64, one Cholesky factor per
    context; no PPD).

    Returns
    -------
    X : Tensor (B, n, d); Y : Tensor (B, n); h : Tensor (B,) of int64
    """
    H = _check_hier(task)
    B, n = positive_int(batch_size, "batch_size"), positive_int(n, "n")
    instance_of(torch.Generator)(generator, "generator")
    kernels, noise_var = prior_components(task)
    g, dev, f64 = generator, generator.device, torch.float64
    if task.covariates == "gaussian":
        X = task.scale * torch.randn(B, n, task.d, generator=g, device=dev, dtype=f64)
    else:
        X = task.scale * (2.0 * torch.rand(B, n, task.d, generator=g, device=dev, dtype=f64) - 1.0)
    z = torch.randn(B, n, generator=g, device=dev, dtype=f64)
    h = torch.randint(H, (B,), generator=generator, device=generator.device)
    Y = torch.empty(B, n, dtype=torch.float64, device=X.device)
    sq = torch.cdist(X, X).square()
    for c, (k, s2) in enumerate(zip(kernels, noise_var, strict=True)):
        idx = (h == c).nonzero()[:, 0]
        if idx.numel():
            A = k.alpha**2 * torch.exp(-0.5 * sq[idx] / k.lengthscale**2)
            A.diagonal(dim1=-2, dim2=-1).add_(float(s2))
            Y[idx] = (torch.linalg.cholesky(A) @ z[idx, :, None])[..., 0]
    return X, Y, h


def summary_stats(X: torch.Tensor, Y: torch.Tensor, bank=BANK, variogram: bool = False):
    """Features ``(log s_0, t_b / m_b ..., log m_b ..., log n)`` of the module docstring, shape
    ``(B, 2 len(bank) + 2)``; with ``variogram`` also ``v_b = Y^T D_b^{-1} (K_b - I) Y / n``
    (``D_b`` the row sums of ``K_b - I``: one *normalised* attention layer, the kernel-smoothed
    label at each point, then the linear summary head), ``(B, 3 len(bank) + 2)``;
    ``s_0 - v_b`` is a kernel-weighted variogram.

    Parameters
    ----------
    X : Tensor (B, n, d); Y : Tensor (B, n), n >= 2
    bank : sequence of float
        Lengthscales ``ell_b > 0`` of the unit-amplitude RBF kernels.
    variogram : bool
    """
    instance_of(torch.Tensor)(X, "X")
    instance_of(torch.Tensor)(Y, "Y")
    if X.ndim != 3 or Y.shape != X.shape[:2]:
        raise ValueError(f"X must be (B, n, d) and Y (B, n), got {tuple(X.shape)}, {Y.shape}")
    B, n, _ = X.shape
    if n < 2:
        raise ValueError(f"summary_stats needs n >= 2 context points, got {n}")
    bank = list(float_tuple(bank, "bank", positive=True))
    if not (torch.isfinite(X).all() and torch.isfinite(Y).all()):
        raise ValueError("X and Y must be finite")
    sq = torch.cdist(X, X).square()
    pairs = n * (n - 1)
    s0 = (Y * Y).sum(-1) / n
    feats_t, feats_m, feats_v = [], [], []
    for ell in bank:
        K = torch.exp(-0.5 * sq / ell**2)
        K.diagonal(dim1=-2, dim2=-1).zero_()  # K_b - I
        KY = (K @ Y[..., None])[..., 0]
        t = (Y * KY).sum(-1) / pairs  # one attention layer + linear readout
        rows = K.sum(-1)
        m = rows.sum(-1) / pairs
        feats_t.append(t / m)
        feats_m.append(torch.log(m))
        if variogram:
            feats_v.append((Y * KY / rows).sum(-1) / n)
    logn = torch.full_like(s0, math.log(n))
    return torch.stack([torch.log(s0), *feats_t, *feats_m, *feats_v, logn], -1)


class StatSelector(nn.Module):
    """Component logits from :func:`summary_stats` features of ``bank``: standardised
    (``mean``/``std`` buffers, set by :meth:`standardise`), one hidden layer of ``width`` tanh
    units, ``H`` outputs initialised at zero (uniform weights at initialisation).

    Parameters
    ----------
    bank : sequence of float
        The lengthscales of the features (``2 len(bank) + 2`` features).
    H, width : int
    variogram : bool
        Also the ``v_b`` features (:func:`summary_stats`).
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, bank, H: int, width: int = 32, variogram: bool = False):
        super().__init__()
        self.bank = float_tuple(bank, "bank", positive=True)
        self.variogram = bool(variogram)
        F = (3 if self.variogram else 2) * len(self.bank) + 2
        H, width = positive_int(H, "H"), positive_int(width, "width")
        self.register_buffer("mean", torch.zeros(F, dtype=torch.float64))
        self.register_buffer("std", torch.ones(F, dtype=torch.float64))
        self.hidden = nn.Linear(F, width, dtype=torch.float64)
        self.out = nn.Linear(width, H, dtype=torch.float64)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def standardise(self, feats: torch.Tensor) -> None:
        """Set the standardisation from a sample of features (B, F), B >= 2."""
        with torch.no_grad():
            self.mean.copy_(feats.mean(0))
            self.std.copy_(feats.std(0).clamp_min(1e-12))

    def features(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """:func:`summary_stats` of the context with this selector's bank and options."""
        return summary_stats(X, Y, self.bank, self.variogram)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """Log-weights ``log w_h`` (B, H), normalised."""
        z = (feats.to(self.mean.dtype) - self.mean) / self.std
        return torch.log_softmax(self.out(torch.tanh(self.hidden(z))), -1)


def train_selector(
    task: TaskSpec,
    *,
    n_contexts: int = 4096,
    n_range=(64, 1024),
    epochs: int = 200,
    batch_size: int = 256,
    lr: float = 3e-3,
    chunk: int = 64,
    seed: int = 0,
    bank=BANK,
    width: int = 32,
    variogram: bool = False,
) -> tuple[StatSelector, dict]:
    """Train a :class:`StatSelector` by the selection loss ``-log w_{h*}(D)``.

    ``n_contexts`` contexts (:func:`draw_contexts`, in chunks of ``chunk`` sharing one ``n`` drawn
    log-uniformly in ``n_range``) are drawn once and their features kept; the MLP then takes
    ``epochs`` passes of Adam over them in mini-batches. The wall time of both parts is recorded
    (the caller runs it on one thread).

    Returns
    -------
    selector, log : StatSelector, dict
        ``log``: ``{"draw_s", "train_s", "loss": [per-epoch mean], "n_contexts", ...}``.
    """
    H = _check_hier(task)
    n_contexts = positive_int(n_contexts, "n_contexts", minimum=2)
    lo, hi = (positive_int(v, "n_range") for v in n_range)
    if not 2 <= lo <= hi:
        raise ValueError(f"n_range must be (lo, hi) with 2 <= lo <= hi, got {n_range}")
    g = torch.Generator().manual_seed(int(seed))
    t0 = time.process_time()
    feats, labels = [], []
    for _ in range(0, n_contexts, chunk):
        u = float(torch.rand((), generator=g, dtype=torch.float64))
        n = int(round(math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))))
        X, Y, h = draw_contexts(task, chunk, n, g)
        feats.append(summary_stats(X, Y, bank, variogram))
        labels.append(h)
    F, lab = torch.cat(feats)[:n_contexts], torch.cat(labels)[:n_contexts]
    t1 = time.process_time()
    sel = StatSelector(bank, H, width, variogram)
    sel.standardise(F)
    opt = torch.optim.Adam(sel.parameters(), lr=lr)
    losses = []
    for _ in range(positive_int(epochs, "epochs")):
        perm = torch.randperm(len(F), generator=g)
        tot = 0.0
        for i in range(0, len(F), batch_size):
            idx = perm[i : i + batch_size]
            loss = nn.functional.nll_loss(sel(F[idx]), lab[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        losses.append(tot / len(F))
    t2 = time.process_time()
    sel.eval()
    log = {
        "draw_s": t1 - t0,
        "train_s": t2 - t1,
        "loss": [float(f"{v:.6g}") for v in losses],
        "n_contexts": n_contexts,
        "n_range": [lo, hi],
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "seed": int(seed),
        "bank": [float(b) for b in bank],
        "width": width,
        "variogram": bool(variogram),
        "chance_loss": float(np.log(H)),
    }
    return sel, log
