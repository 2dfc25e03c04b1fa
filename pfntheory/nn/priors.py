"""Pretraining priors (task samplers) and their exact PPD oracles, in PyTorch.

Implements
----------
* sec:sims (Pretraining): instances ``(D_n, x, y)`` of GP regression with the BLR kernel
  ``x^T Sigma x'`` (diagonal ``Sigma`` by thirds of d, supp-sec:exp details) or the RBF kernel
  ``alpha^2 exp(-||x - x'||^2 / (2 ell^2))``; covariates ``x ~ N(0, I_d / d)``; the label ``y``
  drawn from the PPD ``N(mu(Z), tau(Z))`` truncated to ``(a, b]``; ``(a, b]`` set by Monte-Carlo
  calibration over 2000 instances with outside mass 0.002.
* supp-sec:exp additional (Hierarchical GP prior): ``theta = (ell_h, sigma_h)`` uniform over a
  finite grid; the PPD is the finite mixture with posterior weights from the marginal likelihoods.
* supp-sec:exp additional (Covariate shifts): ``x ~ Unif[-1/sqrt(d), 1/sqrt(d)]^d``.
* supp-sec:real data: the fitted (empirical-Bayes) ARD RBF prior.

How an instance is drawn (cheaply, and with its oracle from the same factorisation)
-----------------------------------------------------------------------------------
BLR (weight space, ``O(n d^2)`` per instance): with features ``Phi = X Sigma^{1/2}`` (rows
``phi_i``), ``w ~ N(0, I_d)`` and ``e ~ N(0, I_n)``, ``Y = Phi w + sigma e`` has the law ``N(0, Phi
Phi^T + sigma^2 I) = N(0, G + sigma^2 I)`` of the function-space draw below, and the PPD follows
from the ``d x d`` posterior of ``w``: with ``A = Phi^T Phi + sigma^2 I_d = Lw Lw^T``,
``r = Lw^{-1} Phi^T Y`` and ``u = Lw^{-1} phi_x``, ``mu = u . r`` and ``tau = sigma^2 (1 + u . u)``
(eqn:GPreg by the push-through identity ``Phi^T (Phi Phi^T + sigma^2 I)^{-1} = A^{-1} Phi^T``). No
``n x n`` matrix is formed.

RBF kinds (function space): instead of drawing ``phi ~ GP`` and then ``y_i = phi(x_i) + eps_i``,
the context labels are drawn from their marginal ``Y ~ N(0, G + sigma^2 I)`` (the same law): with
``Lc = chol(G + sigma^2 I)`` and ``z ~ N(0, I_n)``, ``Y = Lc z``. The oracle PPD then costs one
triangular solve: ``v = Lc^{-1} k_x``, ``mu = k_x^T (G + sigma^2 I)^{-1} Y = v . z`` and
``tau = kappa(x, x) + sigma^2 - v . v`` (eqn:GPreg). Everything on the exact side runs in float64 on
the device of the generator; the returned inputs are cast to the model dtype.

For the hierarchical prior the generating component ``h0`` is drawn first (uniform prior), then
``Y`` from component ``h0``; the oracle is the mixture over *all* components, with
``w_h ∝ pi_h N(Y; 0, G_h + sigma_h^2 I)`` (mu_h, tau_h from each component's Cholesky factor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from pfntheory.base._checks import (
    MAX_ELEMENTS,
    ArgumentTypeError,
    instance_of,
    positive_int,
    seed_int,
)
from pfntheory.base._checks import interval as check_interval
from pfntheory.infra.config import COVARIATES, TASK_KINDS, TaskSpec, prior_components
from pfntheory.maths.kernels import ARDRBFKernel, LinearKernel, RBFKernel

from . import fused
from .model import select_device

__all__ = [
    "TASK_KINDS",
    "COVARIATES",
    "TaskSpec",
    "Batch",
    "sample_batch",
    "sample_context_size",
    "calibrate_task_interval",
    "exact_kernels",
    "MAX_ELEMENTS",
]

_LOG_2PI = math.log(2.0 * math.pi)

#: Gram-matrix entries factorised at once by :func:`sample_batch` (the batch is split into
#: sub-batches of ``max(1, GRAM_CHUNK_ELEMENTS // n^2)`` instances: 128 MiB of float64, so that
#: evaluating 512 instances at n' = 1024 does not hold 4 GiB Gram matrices).
GRAM_CHUNK_ELEMENTS = 1 << 24

#: Largest ``n`` the fast draw (``sample_batch(..., fast=True)``) takes; larger contexts use the
#: exact path (LAPACK's blocked factor wins there; the fused draw measured faster up to 512).
FAST_DRAW_MAX_N = 512


@dataclass(frozen=True)
class _Component:
    """One Gaussian-process component: ``kappa`` on scaled inputs ``x * feat`` plus the noise
    variance ``noise_var`` (``sigma^2``).

    linear: ``kappa(x, x') = (x*feat) . (x'*feat)`` with ``feat = sqrt(diag Sigma)``;
    rbf: ``kappa(x, x') = alpha2 exp(-||(x - x')*feat||^2 / 2)`` with ``feat = 1 / ell``.
    """

    linear: bool
    feat: tuple[float, ...]
    alpha2: float
    noise_var: float
    exact: object = field(compare=False)

    def gram(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """``(Bt, n, d), (Bt, m, d) -> (Bt, n, m)``."""
        f = torch.as_tensor(self.feat, dtype=A.dtype, device=A.device)
        A, B = A * f, B * f
        if self.linear:
            return A @ B.transpose(-1, -2)
        # ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b, the product added in place to the sum (the same
        # arithmetic as an out-of-place baddbmm, without its copy of the sum), then in place
        D = torch.add((A * A).sum(-1)[..., :, None], (B * B).sum(-1)[..., None, :])
        D.baddbmm_(A, B.transpose(-1, -2), alpha=-2.0)
        return D.clamp_(min=0.0).mul_(-0.5).exp_().mul_(self.alpha2)

    def diag(self, A: torch.Tensor) -> torch.Tensor:
        """``kappa(x, x)`` for ``(Bt, m, d) -> (Bt, m)``."""
        if self.linear:
            f = torch.as_tensor(self.feat, dtype=A.dtype, device=A.device)
            return ((A * f) ** 2).sum(-1)
        return torch.full(A.shape[:-1], self.alpha2, dtype=A.dtype, device=A.device)


def _component(kernel, noise_var: float, d: int) -> _Component:
    """The torch form of one exact kernel of :func:`pfntheory.infra.config.prior_components`."""
    if isinstance(kernel, LinearKernel):
        return _Component(
            True, tuple(math.sqrt(s) for s in kernel.sigma_diag), 1.0, noise_var, kernel
        )
    if isinstance(kernel, ARDRBFKernel):
        feat = tuple(1.0 / ell for ell in kernel.lengthscales)
        return _Component(False, feat, kernel.alpha**2, noise_var, kernel)
    if isinstance(kernel, RBFKernel):
        return _Component(
            False, (1.0 / kernel.lengthscale,) * d, kernel.alpha**2, noise_var, kernel
        )
    raise TypeError(f"no torch form of the kernel {kernel!r}")


def _components(task: TaskSpec) -> list[_Component]:
    kernels, noise_var = prior_components(task)
    return [
        _component(k, float(noise_var_h), task.d)
        for k, noise_var_h in zip(kernels, noise_var, strict=True)
    ]


def exact_kernels(task: TaskSpec) -> tuple[list, np.ndarray, np.ndarray]:
    """The task's components as NumPy kernels of :mod:`pfntheory.maths.kernels` (for the exact
    side): :func:`pfntheory.infra.config.prior_components` with the (uniform) prior weights.

    Returns
    -------
    kernels : list of kernel objects, length H (H = 1 unless 'hier_rbf')
    noise_var : ndarray of shape (H,)
    prior_weights : ndarray of shape (H,)   (uniform)
    """
    kernels, noise_var = prior_components(task)
    H = len(kernels)
    return kernels, noise_var, np.full(H, 1.0 / H)


@dataclass
class Batch:
    """A batch of pretraining instances and their exact PPD.

    Attributes
    ----------
    X : Tensor of shape (B, n, d)       context inputs (model dtype)
    Y : Tensor of shape (B, n)          context labels (model dtype)
    xq : Tensor of shape (B, d)         query inputs (model dtype)
    y : Tensor of shape (B,)            query label (model dtype), from the (truncated) PPD
    mu, tau : Tensor of shape (B,)      float64 PPD mean and variance (mixture moments
    for 'hier_rbf')
    weights, mu_h, tau_h : Tensor of shape (B, H) or None
        'hier_rbf' only: posterior component weights and componentwise moments (float64).
    """

    X: torch.Tensor
    Y: torch.Tensor
    xq: torch.Tensor
    y: torch.Tensor
    mu: torch.Tensor
    tau: torch.Tensor
    weights: torch.Tensor | None = None
    mu_h: torch.Tensor | None = None
    tau_h: torch.Tensor | None = None


def _covariates(task: TaskSpec, shape, generator, device) -> torch.Tensor:
    kw = dict(generator=generator, device=device, dtype=torch.float64)
    if task.covariates == "gaussian":
        return task.scale * torch.randn(*shape, **kw)
    return task.scale * (2.0 * torch.rand(*shape, **kw) - 1.0)


def _std_normal_cdf(t: torch.Tensor) -> torch.Tensor:
    return torch.special.ndtr(t)


def _sample_truncnorm(mu, sd, a: float, b: float, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw from ``N(mu, sd^2)`` truncated to ``(a, b]`` given ``u ~ Unif(0,1)``.

    Works on the side of the distribution where the interval lies in the lower tail (reflecting
    ``y -> -y`` when the interval is above the mean), so that ``Phi`` is evaluated where it is
    accurate; an interval that carries underflowing mass collapses onto its nearer end.
    """
    lo, hi = (a - mu) / sd, (b - mu) / sd
    flip = (lo + hi) > 0
    lo_, hi_ = torch.where(flip, -hi, lo), torch.where(flip, -lo, hi)
    plo, phi = _std_normal_cdf(lo_), _std_normal_cdf(hi_)
    p = plo + u * (phi - plo)
    t = torch.special.ndtri(p.clamp(min=torch.finfo(torch.float64).tiny, max=1.0))
    # far tail (Phi(hi_) < 1e-300, hi_ < -37): the density on (lo_, hi_] is exp(r (t - hi_)) up to
    # a relative error O(1/r^2), r = -hi_; invert that exponential law instead of underflowed CDFs
    far = hi_ < -37.0
    if bool(far.any()):
        r = -hi_.clamp(max=-1.0)
        s = -torch.log1p(-u * (-torch.expm1(-r * (hi_ - lo_)))) / r
        t = torch.where(far, hi_ - s, t)
    t = torch.minimum(torch.maximum(t, lo_), hi_)
    t = torch.where(flip, -t, t)
    return (mu + sd * t).clamp(a, b)


def _inside_bins(y: torch.Tensor, a: float) -> torch.Tensor:
    """Labels drawn in ``(a, b]`` in float64, kept inside the bins once cast to ``y.dtype``.

    Rounding is monotone and ``b`` rounds to the top edge in any dtype, so only the bottom can be
    crossed: a label within half an ulp above ``a`` (or at ``a``, where the float64 draw clamps)
    rounds to ``a`` in the training dtype, which the right-closed bins ``(a, gamma_1]`` exclude
    (:func:`pfntheory.nn.train.truncated_nll` refuses it). Such a label is moved to the next value
    of the dtype above ``a``: a change below one ulp of the dtype that affects only labels that
    could not be scored, so every other batch is bitwise unchanged.
    """
    a_t = torch.tensor(a, dtype=y.dtype, device=y.device)
    above = torch.nextafter(a_t, torch.tensor(math.inf, dtype=y.dtype, device=y.device))
    return torch.where(y <= a_t, above, y)


def _solve_lower(Lc: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    return torch.linalg.solve_triangular(Lc, R, upper=False)


def _cholesky(A: torch.Tensor, what: str, offset: int = 0) -> torch.Tensor:
    """Batched lower Cholesky factor of ``A``'s lower triangle (``A`` may be overwritten); a matrix
    that is not numerically positive definite raises a ValueError (as :mod:`pfntheory.maths.gp`
    does) naming the first failing instance, not torch's ``_LinAlgError``.

    With the fused extension (:mod:`pfntheory.nn.fused`, when loaded or cached: drawing never
    compiles it), in place by the LAPACK routine that ``torch.linalg.cholesky_ex`` calls on the
    same column-major copy of the lower triangle, one instance at a time in cache: bitwise its
    factor (the committed draws are unchanged, tests/test_priors.py), without its second
    (B, n, n) buffer."""
    if (
        A.device.type == "cpu"
        and A.dim() == 3
        and A.dtype in (torch.float32, torch.float64)
        and A.is_contiguous()
        and fused.available(build=False)
        and fused.lapack()
    ):
        info = fused.chol_lower_(A)
        Lc = A.mT
    else:
        Lc, info = torch.linalg.cholesky_ex(A)
    bad = (info != 0).nonzero()
    if bad.numel():
        i = int(bad[0, 0]) if bad.dim() == 2 else 0
        raise ValueError(
            f"{what} is not numerically positive definite (instance {offset + i} of the batch, "
            f"leading minor {int(info.reshape(-1)[i])}); increase noise_var"
        )
    return Lc


def _blr_draw(
    Phi: torch.Tensor, phi_q: torch.Tensor, w: torch.Tensor, e: torch.Tensor, noise_var: float
):
    """Weight-space BLR draw and its exact PPD (module docstring).

    Phi (B, n, d), phi_q (B, d), w (B, d), e (B, n) -> Y (B, n), mu (B,), tau (B,).
    """
    Y = (Phi @ w[..., None])[..., 0] + math.sqrt(noise_var) * e  # Y = Phi w + sigma e
    A = Phi.transpose(1, 2) @ Phi  # (B, d, d) Phi^T Phi
    A.diagonal(dim1=-2, dim2=-1).add_(noise_var)  # + sigma^2 I_d
    Lw = _cholesky(A, "Phi^T Phi + noise_var I")  # A = Lw Lw^T
    rhs = torch.stack([(Phi.transpose(1, 2) @ Y[..., None])[..., 0], phi_q], -1)  # (B, d, 2)
    sol = _solve_lower(Lw, rhs)  # [r, u] = Lw^{-1} [Phi^T Y, phi_x]
    r, u = sol[..., 0], sol[..., 1]
    mu = (u * r).sum(-1)  # phi_x^T A^{-1} Phi^T Y
    tau = noise_var * (1.0 + (u * u).sum(-1))  # noise_var + noise_var phi_x^T A^{-1} phi_x
    return Y, mu, tau


def _fused_gp_draw(X, xq, z, f, amp: float, noise: float):
    return fused.gp_draw(X, xq, z, f, amp, noise)


def _fast_draw(c: _Component, X, xq, z, offset: int):
    """``Y, mu, tau`` of one rbf component by the fused GP draw (``_fused_src/gp_draw.cpp``): the
    maths of :func:`_gp_oracle`'s one-component branch in another rounding."""
    f = torch.tensor(c.feat, dtype=torch.float64)
    Y, mu, tau, info = _fused_gp_draw(
        X.contiguous(), xq[:, 0].contiguous(), z.contiguous(), f, c.alpha2, c.noise_var
    )
    bad = info.nonzero()
    if bad.numel():
        i = int(bad[0, 0])
        raise ValueError(
            f"G + noise_var I is not numerically positive definite (instance {offset + i} of the "
            f"batch, leading minor {int(info[i])}); increase noise_var"
        )
    return Y, mu, tau


def _fast_draw_applies(comps: list[_Component], X: torch.Tensor) -> bool:
    """Whether ``sample_batch(..., fast=True)`` takes the fused draw for this sub-batch: one rbf
    component, float64 on the CPU, ``n <= FAST_DRAW_MAX_N``, the extension loaded or cached."""
    return (
        len(comps) == 1
        and not comps[0].linear
        and X.device.type == "cpu"
        and X.dtype == torch.float64
        and X.shape[1] <= FAST_DRAW_MAX_N
        and fused.available(build=False)
    )


def _gp_oracle(comps: list[_Component], X, xq, z, h0, offset: int, fast: bool = False):
    """Function-space draw ``Y = Lc z`` and the exact (mixture) PPD of one sub-batch.

    X (b, n, d), xq (b, 1, d), z (b, n), h0 (b,) or None -> Y (b, n), mu, tau (b,), mu_h, tau_h,
    weights (b, H). ``offset`` is the sub-batch's first instance (for error messages). ``fast``:
    the fused draw where it applies (:func:`_fast_draw_applies`).
    """
    b, n, _ = X.shape
    H = len(comps)
    if fast and _fast_draw_applies(comps, X):
        Y, mu, tau = _fast_draw(comps[0], X, xq, z, offset)
        return Y, mu, tau, mu[:, None], tau[:, None], torch.ones_like(mu)[:, None]

    def factor(c: _Component, idx=None):
        Xc = X if idx is None else X[idx]
        A = c.gram(Xc, Xc)
        A.diagonal(dim1=-2, dim2=-1).add_(c.noise_var)  # G + sigma^2 I
        return _cholesky(A, "G + noise_var I", offset)  # Lc = chol(G + sigma^2 I)

    if H == 1:
        c = comps[0]
        Lc = factor(c)  # (b, n, n)
        Y = (Lc @ z[..., None])[..., 0]  # Y = Lc z ~ N(0, G + sigma^2 I)
        k_x = c.gram(X, xq)  # (b, n, 1)
        v = _solve_lower(Lc, k_x)[..., 0]  # v = Lc^{-1} k_x
        mu = (v * z).sum(-1)  # eqn:GPreg: mu = k_x^T (G + noise_var I)^{-1} Y = v . z
        tau = (
            c.diag(xq)[:, 0] + c.noise_var - (v * v).sum(-1)
        )  # eqn:GPreg: tau = k(x,x) + noise_var - v . v
        return Y, mu, tau, mu[:, None], tau[:, None], torch.ones_like(mu)[:, None]
    # pass 1: Y from the generating component h0 (one Cholesky per instance in total)
    Y = torch.empty(b, n, dtype=torch.float64, device=X.device)
    for h, c in enumerate(comps):
        idx = (h0 == h).nonzero()[:, 0]
        if idx.numel():
            Y[idx] = (factor(c, idx) @ z[idx, :, None])[..., 0]
    # pass 2: every component's PPD and marginal likelihood (supp-sec:exp additional)
    mus, taus, lmls = [], [], []
    for c in comps:
        Lc = factor(c)
        k_x = c.gram(X, xq)  # (b, n, 1)
        sol = _solve_lower(Lc, torch.cat([Y[..., None], k_x], dim=-1))  # (b, n, 2)
        alpha_, v = sol[..., 0], sol[..., 1]
        mus.append((v * alpha_).sum(-1))
        taus.append(c.diag(xq)[:, 0] + c.noise_var - (v * v).sum(-1))
        logdet = 2.0 * torch.log(torch.diagonal(Lc, dim1=-2, dim2=-1)).sum(-1)
        lmls.append(
            -0.5 * (alpha_ * alpha_).sum(-1) - 0.5 * logdet - 0.5 * n * _LOG_2PI
        )  # R&W 2.30
    mu_h, tau_h = torch.stack(mus, -1), torch.stack(taus, -1)  # (b, H)
    weights = torch.softmax(
        torch.stack(lmls, -1) - math.log(H), dim=-1
    )  # w_h ∝ pi_h p(Y | theta_h)
    mu = (weights * mu_h).sum(-1)
    tau = (weights * (tau_h + mu_h**2)).sum(-1) - mu**2
    return Y, mu, tau, mu_h, tau_h, weights


def sample_batch(
    task: TaskSpec,
    batch_size: int,
    n: int,
    generator: torch.Generator,
    device=None,
    dtype: torch.dtype = torch.float32,
    interval: tuple[float, float] | None = None,
    fast: bool = False,
) -> Batch:
    """Draw ``batch_size`` instances with ``n`` context points each, and their exact PPD.

    Parameters
    ----------
    task : TaskSpec
    batch_size, n : int
        ``B >= 1`` instances of ``n >= 1`` context points (same n within a batch).
    generator : torch.Generator
        The only source of randomness; the draws happen on its device.
    device : torch device, optional
        Where the returned tensors live (default: the generator's device).
    dtype : torch.dtype
        dtype of ``X, Y, xq, y`` (the oracle moments are always float64).
    interval : (a, b), optional
        If given, ``y`` is drawn from the PPD truncated to ``(a, b]`` (sec:sims); otherwise from the
        untruncated PPD.
    fast : bool
        ``False``: the arithmetic of every committed run. ``True`` (training batches of runs with
        ``RunSpec.fast_numerics``): a one-component rbf prior's Gram matrix, factor, labels and
        PPD by the fused GP draw, one instance per vector lane (the same random numbers and maths,
        another rounding: within 1e-12 relative, tests/test_gp_draw.py); any other prior, or
        without the extension, the exact path.

    Returns
    -------
    Batch
    """
    B, n, interval = check_sample_args(task, batch_size, n, generator, dtype, interval)
    instance_of(bool)(fast, "fast")
    if interval is not None:
        a, b = interval
    gdev = generator.device
    device = gdev if device is None else select_device(device)
    d = task.d
    comps = _components(task)
    H = len(comps)
    X_all = _covariates(task, (B, n + 1, d), generator, gdev)  # (B, n+1, d)
    X, xq = X_all[:, :n], X_all[:, n:]  # (B, n, d), (B, 1, d)
    if task.kind == "blr":
        w = torch.randn(B, d, generator=generator, device=gdev, dtype=torch.float64)  # w ~ N(0, I)
    z = torch.randn(B, n, generator=generator, device=gdev, dtype=torch.float64)
    h0 = torch.randint(H, (B,), generator=generator, device=gdev) if H > 1 else None
    u_comp = torch.rand(B, generator=generator, device=gdev, dtype=torch.float64)
    u = torch.rand(B, generator=generator, device=gdev, dtype=torch.float64)

    if task.kind == "blr":
        c = comps[0]
        f = torch.as_tensor(c.feat, dtype=torch.float64, device=gdev)  # sqrt(diag Sigma)
        Y, mu, tau = _blr_draw(X * f, xq[:, 0] * f, w, z, c.noise_var)
        mu_h, tau_h, weights = (
            mu[:, None],
            tau[:, None],
            torch.ones(B, 1, dtype=torch.float64, device=gdev),
        )
    else:
        # function space, in sub-batches of GRAM_CHUNK_ELEMENTS Gram entries (every random number
        # was drawn above for the whole batch, so the split does not change the draws)
        step = max(1, GRAM_CHUNK_ELEMENTS // (n * n))
        parts = [
            _gp_oracle(
                comps,
                X[i : i + step],
                xq[i : i + step],
                z[i : i + step],
                None if h0 is None else h0[i : i + step],
                i,
                fast,
            )
            for i in range(0, B, step)
        ]
        Y, mu, tau, mu_h, tau_h, weights = (torch.cat(t) for t in zip(*parts, strict=True))

    # the query label: component from the (truncated-)mixture weights, then the (truncated) normal
    sd_h = tau_h.clamp_min(torch.finfo(torch.float64).tiny).sqrt()
    if interval is not None:
        mass = _std_normal_cdf((b - mu_h) / sd_h) - _std_normal_cdf((a - mu_h) / sd_h)
        wt = weights * mass.clamp_min(0.0)
        wt = torch.where(wt.sum(-1, keepdim=True) > 0, wt, weights)  # all mass underflowed: keep w
    else:
        wt = weights
    cum = torch.cumsum(wt / wt.sum(-1, keepdim=True), -1)
    k = torch.searchsorted(cum, u_comp[:, None]).clamp_max(H - 1)[:, 0]  # (B,)
    m_k = mu_h.gather(1, k[:, None])[:, 0]
    s_k = sd_h.gather(1, k[:, None])[:, 0]
    if interval is not None:
        y = _sample_truncnorm(m_k, s_k, a, b, u)
    else:
        y = m_k + s_k * torch.special.ndtri(u.clamp(min=torch.finfo(torch.float64).tiny))

    def out(t):
        return t.to(device=device, dtype=dtype)

    y_out = labels_out(y, device, dtype, interval)
    extra = {}
    if H > 1:
        extra = dict(weights=weights.to(device), mu_h=mu_h.to(device), tau_h=tau_h.to(device))
    return Batch(
        X=out(X),
        Y=out(Y),
        xq=out(xq[:, 0]),
        y=y_out,
        mu=mu.to(device),
        tau=tau.to(device),
        **extra,
    )


def check_sample_args(task, batch_size, n, generator, dtype, interval):
    """The checks of :func:`sample_batch`'s arguments (shared with
    :func:`pfntheory.nn.fast_oracle.sample_batch_fast`): returns ``(batch_size, n, interval)``,
    the interval checked (or None); a bad argument raises naming it."""
    if not isinstance(task, TaskSpec):
        raise ArgumentTypeError(f"task must be a TaskSpec, got {type(task).__name__}")
    B = positive_int(batch_size, "batch_size")
    n = positive_int(n, "n")
    _check_generator(generator)
    # refuse before allocating: the inputs (B, n + 1, d) and, for the function-space kinds, one
    # instance's (n, n) Gram matrix (sub-batches hold GRAM_CHUNK_ELEMENTS), in float64
    for what, size in (
        ("the inputs (B, n + 1, d)", B * (n + 1) * task.d),
        ("one (n, n) Gram matrix", n * n if task.kind != "blr" else 0),
    ):
        if size > MAX_ELEMENTS:
            raise ValueError(
                f"batch_size={B}, n={n}: {what} would need {size:.3g} float64 "
                f"elements, more than the limit MAX_ELEMENTS = {MAX_ELEMENTS:.3g}"
            )
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ArgumentTypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    if interval is not None:
        interval = check_interval(*interval, "interval a", "interval b")
    return B, n, interval


def labels_out(y: torch.Tensor, device, dtype, interval) -> torch.Tensor:
    """The query labels ``y`` (float64) in the model dtype on ``device``, kept inside the bins
    (:func:`_inside_bins`) when drawn from the truncated PPD."""
    y_out = y.to(device=device, dtype=dtype)
    return y_out if interval is None else _inside_bins(y_out, interval[0])


def _check_generator(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise ArgumentTypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}"
        )


def sample_context_size(n_min: int, n_max: int, generator: torch.Generator) -> int:
    """``n ~ Unif{n_min, ..., n_max}`` (sec:sims), drawn from ``generator``."""
    _check_generator(generator)
    n_min = positive_int(n_min, "n_min")
    n_max = positive_int(n_max, "n_max")
    if n_min > n_max:
        raise ValueError(f"n_min <= n_max is required, got n_min={n_min}, n_max={n_max}")
    return int(torch.randint(n_min, n_max + 1, (1,), generator=generator, device=generator.device))


def calibrate_task_interval(
    task: TaskSpec,
    n_min: int,
    n_max: int,
    n_instances: int = 2000,
    outside_mass: float = 0.002,
    seed: int = 0,
    chunk: int = 100,
) -> tuple[float, float]:
    """Truncation interval ``(a, b]`` by Monte-Carlo calibration (sec:sims).

    Draws ``n_instances`` instances (in chunks of ``chunk``, each chunk with its own
    ``n ~ Unif[n_min, n_max]``) and calls :func:`pfntheory.maths.discretize.calibrate_interval` on
    their PPD moments, so that the average PPD mass outside ``(a, b]`` is ``outside_mass``. For the
    hierarchical prior each instance contributes one component drawn from its posterior weights:
    averaged over instances this is an unbiased Monte-Carlo estimate of the mixture's CDF
    (``E_w Phi_k = sum_h w_h Phi_h``).
    """
    from pfntheory.maths.discretize import calibrate_interval

    n_instances = positive_int(n_instances, "n_instances")
    chunk = positive_int(chunk, "chunk")
    g = torch.Generator().manual_seed(seed_int(seed, "seed"))
    mus, taus = [], []
    left = n_instances
    while left > 0:
        m = min(chunk, left)
        n = sample_context_size(n_min, n_max, g)
        bt = sample_batch(task, m, n, g, dtype=torch.float64)
        if bt.weights is None or bt.mu_h is None or bt.tau_h is None:  # one Gaussian per draw
            mus.append(bt.mu)
            taus.append(bt.tau)
        else:
            u = torch.rand(m, 1, generator=g, dtype=torch.float64)
            k = torch.searchsorted(torch.cumsum(bt.weights, -1), u).clamp_max(
                bt.weights.shape[1] - 1
            )
            mus.append(bt.mu_h.gather(1, k)[:, 0])
            taus.append(bt.tau_h.gather(1, k)[:, 0])
        left -= m
    mu = torch.cat(mus).numpy()
    tau = torch.cat(taus).numpy()
    a, b = calibrate_interval(mu, tau, outside_mass)
    return float(a), float(b)
