"""The exact GP oracle of the paper's evaluation in float32, corrected to float64 accuracy.

sec:sims (Inference) at the paper's evaluation size (4096 instances at n' = 1024, d = 16): the
instances of :func:`pfntheory.nn.priors.sample_batch` (same random numbers: covariates, ``z``, the
label's uniforms) with the per-instance ``O(n^3)`` work in float32, and the PPD of eqn:GPreg,
``mu = k_x^T A^{-1} Y``, ``tau = kappa(x, x) + sigma^2 - k_x^T A^{-1} k_x`` with
``A = G + sigma^2 I``, solved to float64 accuracy:

* ``A`` in float32 (the fused Gram operator of :mod:`pfntheory.nn.fused` when available), its
  float32 Cholesky factor ``L``, and the context labels ``Y = L z`` rounded to float32 (the values
  the float32 model reads): a draw from ``N(0, L L^T)``, where ``L L^T = A + E`` with
  ``|E| <= gamma_{n+1} |L| |L^T|`` (the float32 factorisation's backward error, entries about
  ``1e-7`` of ``A``'s) instead of ``N(0, A)``;
* the correction: ``[alpha, beta] = A^{-1} [Y, k_x]`` by iterative refinement, each step a float32
  solve with ``L`` of the float64 residual ``[Y, k_x] - A [alpha, beta]`` (``A`` applied in float64
  by the fused symmetric kernel mat-vec, else by
  :func:`pfntheory.nn.attention.scaled_kernel_attention`; no ``n x n`` float64 matrix formed);
  each step divides the error by about ``1 / (cond(A) eps_32)``, and the loop stops when the
  estimated error left is below ``REFINE_RTOL`` of the solution. The PPD is then exact (to
  float64 round-off) for the instance drawn, which is what the model is scored on.

Instances whose float32 factor fails (``cond(A) eps_32 >~ 1``) or whose refinement does not
converge are redone wholly in float64 (:func:`pfntheory.nn.priors.sample_batch`'s arithmetic).
Measured against float64 (tests/test_fast_oracle.py and docs/speed.md): the PPD moments agree to
float64 round-off; the ``Y`` drawn differ from the float64 factor's by float32 round-off.
Other task kinds (BLR, the hierarchical prior) are delegated to ``sample_batch`` unchanged.
"""

from __future__ import annotations

import inspect
import math

import torch

from . import fused
from .attention import scaled_kernel_attention
from .model import select_device
from .priors import (
    GRAM_CHUNK_ELEMENTS,
    Batch,
    TaskSpec,
    _cholesky,
    _components,
    _covariates,
    _sample_truncnorm,
    check_sample_args,
    labels_out,
    sample_batch,
)

#: Nothing exported: the oracle is reached through ``evaluate(..., oracle="float32")``
#: (:func:`pfntheory.nn.evaluate.evaluate`) and the benchmarks; its functions check their arguments
#: as ``sample_batch`` does (tests/test_fast_oracle.py).
__all__: list[str] = []

#: The refinement stops once the estimated error left is at most this fraction of the solution
#: (max norm, per instance and right-hand side): the last correction ``r_k`` times its ratio to the
#: one before, ``r_k / r_{k-1}`` (the corrections fall geometrically, by about cond(A) eps_32 per
#: step), so at least two steps are taken.
REFINE_RTOL = 1e-10
#: Refinement steps before an instance is redone in float64 (at cond(A) = 1e4, 3 steps suffice).
MAX_REFINE = 6


def _gram32(c, X32: torch.Tensor) -> torch.Tensor:
    """``A = G + sigma^2 I`` (b, n, n) in float32."""
    feat = torch.tensor(c.feat, dtype=torch.float32)
    if fused.available():
        return fused.gram(X32, feat, c.alpha2, c.noise_var)
    A = c.gram(X32, X32)
    A.diagonal(dim1=-2, dim2=-1).add_(c.noise_var)
    return A


def _factor32(c, X32: torch.Tensor, buf: torch.Tensor | None = None):
    """The float32 Cholesky factor ``L`` (b, n, n) of ``A = G + sigma^2 I`` and LAPACK's ``info``
    (b,). With the fused operator, in place on the triangle of the Gram matrix that it reads (the
    fused ``gram_upper``), by the LAPACK routine torch calls: bitwise ``torch.linalg.cholesky_ex``'s
    factor of the whole (exactly symmetric) Gram matrix, without its copy of ``A`` into a second
    buffer and half the Gram matrix's exps (tests/test_fast_oracle.py); into ``buf`` (B >= b, n,
    n) float32 when given, whose first b matrices it then overwrites."""
    if fused.available() and fused.lapack():  # potrf reads one triangle: the other is not formed
        feat = torch.tensor(c.feat, dtype=torch.float32)
        if buf is not None and buf.shape[0] >= len(X32):  # the pages are already faulted in
            buf = buf[: len(X32)]
        else:
            buf = None
        A = fused.gram_upper(X32, feat, c.alpha2, c.noise_var, buf)
        info = fused.chol_(A)
        return A.mT, info
    return torch.linalg.cholesky_ex(_gram32(c, X32))


def _apply_A(c, X: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """``A V`` (b, n, m) in float64 for the context inputs ``X`` (b, n, d): one kernel mat-vec
    (fused when available), no ``n x n`` matrix in memory."""
    feat = torch.tensor(c.feat, dtype=torch.float64)
    if fused.available():  # P symmetric: each entry once
        out = fused.matvec_sym(X, feat, V)
    else:
        with torch.no_grad():
            out, _ = scaled_kernel_attention(X, feat, V, "rbf")  # (b, n, m): P V
    return c.alpha2 * out + c.noise_var * V


def _solve32(L: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """``(L L^T)^{-1} R`` in float32 (two triangular solves; faster than ``cholesky_solve``, which
    copies the factor), returned in float64."""
    R = torch.linalg.solve_triangular(L, R.float(), upper=False)
    return torch.linalg.solve_triangular(L.mT, R, upper=True).double()


def oracle64(c, Xa: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The float64 PPD ``mu, tau`` (b,) of given labels ``Y`` (b, n) at tokens ``Xa`` (b, n+1, d),
    the query last, by a float64 Cholesky factor (the reference of :func:`oracle32`)."""
    n = Y.shape[1]
    X, xq = Xa[:, :n], Xa[:, n:]
    A = c.gram(X, X)
    A.diagonal(dim1=-2, dim2=-1).add_(c.noise_var)
    k = c.gram(X, xq)[..., 0]  # (b, n)
    sol = torch.cholesky_solve(torch.stack([Y, k], -1), _cholesky(A, "G + noise_var I"))
    return (k * sol[..., 0]).sum(-1), c.alpha2 + c.noise_var - (k * sol[..., 1]).sum(-1)


def oracle32(c, Xa: torch.Tensor, z: torch.Tensor, max_refine: int = MAX_REFINE, buf=None) -> dict:
    """Labels and exact PPD of one sub-batch (module docstring).

    ``c`` a single rbf component of ``pfntheory.nn.priors``, ``Xa`` (b, n+1, d) float64 tokens
    (the query last), ``z`` (b, n) float64 standard normals. Returns ``Y`` (b, n) float64 holding
    float32 values (float64 values where an instance was redone in float64), ``mu``, ``tau`` (b,)
    float64, ``steps`` (b,) the refinement steps taken (-1: redone in float64) and ``err`` (b,) the
    estimated relative error left (the last correction times its ratio to the one before).
    ``buf``: scratch for the factor (:func:`_factor32`), used again by consecutive sub-batches.
    """
    b, n1, _ = Xa.shape
    n = n1 - 1
    X = Xa[:, :n]
    L, info = _factor32(c, X.float(), buf)
    Y = torch.bmm(z.float()[:, None, :], L.transpose(1, 2))[:, 0].double()  # (L z)^T = z^T L^T
    feat = torch.tensor(c.feat, dtype=torch.float64)
    k = c.alpha2 * torch.exp(-0.5 * (((X - Xa[:, n:]) * feat) ** 2).sum(-1))  # k_x (b, n)
    rhs = torch.stack([Y, k], -1)  # (b, n, 2)
    sol = _solve32(L, rhs)
    steps = torch.zeros(b, dtype=torch.long)
    err = torch.full((b,), math.inf, dtype=torch.float64)
    prev = torch.zeros(b, dtype=torch.float64)  # no earlier correction: factor 1
    done = info != 0  # a failed float32 factor: float64 below
    for it in range(1, max_refine + 1):
        active = (~done).nonzero()[:, 0]
        if not active.numel():
            break
        if active.numel() == b:  # all of them: no copies (L[active] would copy every factor)
            delta = _solve32(L, rhs - _apply_A(c, X, sol))
            sol += delta
        else:
            delta = _solve32(L[active], rhs[active] - _apply_A(c, X[active], sol[active]))
            sol[active] += delta
        rel = (delta.abs().amax(1) / sol[active].abs().amax(1).clamp_min(1e-300)).amax(-1)
        # geometric convergence: the error left is about rel * (rel / previous rel)
        p = prev[active]
        err[active] = rel * torch.where(p > 0, rel / p.clamp_min(1e-300), 1.0).clamp(max=1.0)
        prev[active], steps[active] = rel, it
        done[active] = err[active] <= REFINE_RTOL
    mu = (k * sol[..., 0]).sum(-1)  # k_x^T A^{-1} Y
    tau = (
        c.alpha2 + c.noise_var - (k * sol[..., 1]).sum(-1)
    )  # kappa(x, x) + sigma^2 - k_x^T A^{-1} k_x
    redo = ((info != 0) | ~(err <= REFINE_RTOL)).nonzero()[:, 0]  # a NaN error is redone too
    if redo.numel():  # float64 throughout for these: Y = L64 z, as sample_batch draws it
        A = c.gram(X[redo], X[redo])
        A.diagonal(dim1=-2, dim2=-1).add_(c.noise_var)
        L64 = _cholesky(A, "G + noise_var I")
        Y[redo] = (L64 @ z[redo, :, None])[..., 0]
        mu[redo], tau[redo] = oracle64(c, Xa[redo], Y[redo])
        steps[redo] = -1
    return {"Y": Y, "mu": mu, "tau": tau, "steps": steps, "err": err}


#: The parameters of :func:`sample_batch_fast`: :func:`~pfntheory.nn.priors.sample_batch`'s, read
#: from it (one signature, written once), less ``fast`` (this function is the fast path).
_SIGNATURE = inspect.signature(sample_batch).replace(
    parameters=[p for p in inspect.signature(sample_batch).parameters.values() if p.name != "fast"]
)


def sample_batch_fast(*args, **kwargs) -> Batch:
    """:func:`pfntheory.nn.priors.sample_batch` with the float32 oracle of this module for the
    single-kernel rbf kinds (``rbf``, ``ard_rbf``); same arguments (its signature, without
    ``fast``), same random numbers, same :class:`~pfntheory.nn.priors.Batch`. Other kinds are
    ``sample_batch`` itself."""
    call = _SIGNATURE.bind(*args, **kwargs)
    call.apply_defaults()
    task: TaskSpec = call.arguments["task"]
    batch_size, n, generator = (call.arguments[k] for k in ("batch_size", "n", "generator"))
    device, dtype, interval = (call.arguments[k] for k in ("device", "dtype", "interval"))
    B, n, interval = check_sample_args(task, batch_size, n, generator, dtype, interval)
    comps = _components(task)
    gdev = generator.device
    if task.kind not in ("rbf", "ard_rbf") or len(comps) != 1 or gdev.type != "cpu":
        return sample_batch(task, batch_size, n, generator, device, dtype, interval)
    device = gdev if device is None else select_device(device)
    # the random numbers of sample_batch, in its order (one component: no h0; u_comp unused)
    Xa = _covariates(task, (B, n + 1, task.d), generator, gdev)
    z = torch.randn(B, n, generator=generator, device=gdev, dtype=torch.float64)
    torch.rand(B, generator=generator, device=gdev, dtype=torch.float64)  # u_comp
    u = torch.rand(B, generator=generator, device=gdev, dtype=torch.float64)
    step = max(1, 2 * GRAM_CHUNK_ELEMENTS // (n * n))  # the same memory as sample_batch's
    buf = torch.empty(min(step, B), n, n) if B > step else None  # one buffer for the sub-batches
    parts = [
        oracle32(comps[0], Xa[i : i + step], z[i : i + step], buf=buf) for i in range(0, B, step)
    ]
    Y, mu, tau = (torch.cat([p[k] for p in parts]) for k in ("Y", "mu", "tau"))
    sd = tau.clamp_min(torch.finfo(torch.float64).tiny).sqrt()
    if interval is not None:
        y = _sample_truncnorm(mu, sd, interval[0], interval[1], u)
    else:
        y = mu + sd * torch.special.ndtri(u.clamp(min=torch.finfo(torch.float64).tiny))
    return Batch(
        X=Xa[:, :n].to(device=device, dtype=dtype),
        Y=Y.to(device=device, dtype=dtype),
        xq=Xa[:, n].to(device=device, dtype=dtype),
        y=labels_out(y, device, dtype, interval),
        mu=mu.to(device),
        tau=tau.to(device),
    )


sample_batch_fast.__signature__ = _SIGNATURE  # type: ignore[attr-defined]
