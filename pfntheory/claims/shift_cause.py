"""Why the learned TF^pr loses calibration under the covariate shift of supp-sec:exp additional at
d = 8 and not at d = 4: a decomposition of one trained run (supp-fig:exp2 d8 uni, supp-fig:exp2 d4-1
uni).

The hand-set TF^pr is calibrated under the shift (:mod:`pfntheory.claims.shift`), so the deficit
sits in the learned weights. :func:`decompose` takes a trained model (psi head: its predictive law
is the Gaussian ``N(s1 mu_L / s2, tau_+ / s2)`` discretised on the bins) and measures, on fresh GP
contexts whose exact PPD ``N(mu, tau)`` is known:

* **mean or variance**: 90% coverage (exact per context, the label law integrated out) of the
  learned interval, of the learned variance around the exact mean, and of the learned mean with the
  exact variance;
* **input scale or shape**: the same on ``N(0, c^2 I/d)`` along a path of scales ``c`` (``c = 1``:
  the pretraining design), on the shift ``Unif[-1/sqrt d, 1/sqrt d]^d`` (per-coordinate variance
  ``1/(3d)``, i.e. ``c = 1/sqrt 3``), on a uniform design of the pretraining variance ``1/d``, and
  with the shifted inputs rescaled by ``sqrt 3`` before the model sees them;
* **the readout**: the learned prior variance ``c0 = (W_2y + W_2k amp) / s2`` (the exact
  ``sigma^2 + alpha^2``), the learned reduction ``c0 - v`` against ``k^T (G + sigma^2 I)^-1 k``,
  the share of predicted variances below the noise variance, and the *collapsed limit*: the
  variance the model predicts when every input coincides (exact: ``sigma^2 (1 + 1/(n + sigma^2))``
  for ``alpha = 1``), a limit the shift moves towards and pretraining never visits;
* **the solver**: the norm of the product of the learned variance-channel layer maps on the context
  points, ``||prod_l (I + V_gg D_l^-1 P_l + S_gg D_l^-1)||_2``, on both designs, beside the hand-set
  Jacobi-Richardson map ``I - eta D^-1 (G + sigma^2 I)`` (how much error survives the solver);
* the hand-set TF^pr of the same depth on the same contexts.

:mod:`pfntheory.claims.shift_findings` turns decompositions of several runs (depths, widths, d,
budgets, seeds) into findings with the decision rules stated in their tolerances.
What was found and why: docs/findings.md, "The d = 8 shift: its cause".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import scipy.stats
import torch

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_kernel,
    check_rng,
    check_size,
    named_broadcast,
    positive_array,
    positive_int,
    positive_scalar,
    probability,
    sequence,
)
from pfntheory.base.stats import mean_se
from pfntheory.maths.gp import posterior_predictive
from pfntheory.maths.kernels import RBFKernel

from .. import DEFAULT_NOISE_VAR
from ..nn.head import PsiHead, positive_tau
from ..nn.model import PFNTransformer
from ..nn.state import load_trained
from .gating import COVERAGE_SLACK
from .shift import tfpr_moments, tfpr_step

__all__ = [
    "SHIFT_SCALE",
    "PATH_SCALES",
    "COVERAGE_SLACK",
    "draw_design",
    "predictive",
    "head_scales",
    "refit_readout",
    "REFIT_MIN_SCALE",
    "coverage90",
    "collapsed_variance",
    "layer_map_norm",
    "decompose",
    "DESIGNS",
    "design_contexts",
    "decompose_run",
    "decompose_runs",
    "breaking_scale",
]

#: Per-coordinate standard deviation of the shift relative to the pretraining design:
#: ``Unif[-1/sqrt d, 1/sqrt d]`` has variance ``1/(3d)`` against ``1/d``.
SHIFT_SCALE = 1.0 / math.sqrt(3.0)
#: Scales ``c`` of the Gaussian designs ``N(0, c^2 I/d)`` on the path from the pretraining design
#: (``c = 1``) towards the collapsed contexts (``c -> 0``); the shift's scale is on it.
PATH_SCALES = (1.0, 0.8, 0.7, SHIFT_SCALE, 0.5, 0.4, 0.3, 0.2)
_Z90 = float(scipy.stats.norm.ppf(0.95))


def draw_design(shape: str, c: float, n: int, d: int, n_instances: int, kernel, noise_var, rng):
    """GP contexts on ``N(0, c^2 I/d)`` (``shape="gaussian"``) or on the uniform cube of the same
    per-coordinate variance ``c^2/d`` (``"uniform"``; ``c = 1/sqrt 3`` is the shift), the query from
    the same design, and their exact PPD.

    Returns ``X (B, n, d), Y (B, n), xq (B, d), mu (B,), tau (B,)``.
    """
    if not isinstance(shape, str) or shape not in ("gaussian", "uniform"):
        raise ValueError(f"shape must be 'gaussian' or 'uniform', got {shape!r}")
    c = positive_scalar(c, "c")
    n, d = positive_int(n, "n"), positive_int(d, "d")
    check_kernel(kernel)
    noise_var, rng = positive_scalar(noise_var, "noise_var"), check_rng(rng)
    B, sd = positive_int(n_instances, "n_instances"), c / math.sqrt(d)
    if shape == "gaussian":
        P = rng.normal(size=(B, n + 1, d)) * sd
    else:
        P = rng.uniform(-1.0, 1.0, size=(B, n + 1, d)) * sd * math.sqrt(3.0)
    X, xq = P[:, :n], P[:, n]
    Lc = np.linalg.cholesky(kernel(X) + noise_var * np.eye(n))  # (B, n, n)
    Y = (Lc @ rng.normal(size=(B, n, 1)))[..., 0]  # Y ~ N(0, G + sigma^2 I)
    mu, tau = posterior_predictive(kernel, X, Y, xq[:, None, :], noise_var)  # eqn:GPreg
    return X, Y, xq, mu[:, 0], tau[:, 0]


def _check_model(model) -> PFNTransformer:
    if not isinstance(model, PFNTransformer) or model.config.head != "psi":
        raise ArgumentTypeError(
            f"model must be a PFNTransformer with the psi head, got {type(model).__name__}"
            + (f" with the {model.config.head} head" if isinstance(model, PFNTransformer) else "")
        )
    if not model.config.normalised or model.config.score != "rbf":
        raise ValueError("model must be a TF^pr (normalised=True) with the rbf score")
    return model


def head_scales(model: PFNTransformer) -> tuple[float, float]:
    """The psi head's ``(s1, s2)`` (learned in learnable mode, 1 in theory mode)."""
    head = _psi_head(_check_model(model))
    s = head.s.detach()
    return float(s[0]), float(s[1])


def _psi_head(model: PFNTransformer) -> PsiHead:
    if not isinstance(model.head, PsiHead):
        raise ArgumentTypeError("model must have the psi head")
    return model.head


@torch.no_grad()
def predictive(model: PFNTransformer, X, Y, xq) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian the psi head discretises: mean ``s1 mu_L / s2`` and variance ``tau_+ / s2``
    (``ell_c = s1 psi_1 xi_c + s2 psi_2 xi_c^2``, Sec. 4), float64, shape (B,) each."""
    model = _check_model(model)
    X = as_float_array(X, "X", ndim=3, non_empty=True)
    Y, xq = as_float_array(Y, "Y", ndim=2), as_float_array(xq, "xq", ndim=2)
    if Y.shape != X.shape[:2] or xq.shape != (X.shape[0], X.shape[2]):
        raise ValueError(
            f"X (B, n, d), Y (B, n) and xq (B, d) must match, got {X.shape}, {Y.shape}, {xq.shape}"
        )
    p = next(model.parameters())
    out = model(*(torch.as_tensor(a, dtype=p.dtype) for a in (X, Y, xq)))
    s1, s2 = head_scales(model)
    tau_p = positive_tau(out.tau, _psi_head(model).tau_min).double().numpy()
    return s1 * out.mu.double().numpy() / s2, tau_p / s2


def coverage90(m, v, mu, tau) -> np.ndarray:
    """Per-context probability that ``y ~ N(mu, tau)`` falls in ``m +- z_0.95 sqrt(v)``
    (finite means ``m``, ``mu`` and positive variances ``v``, ``tau`` of broadcastable shapes)."""
    m, mu = as_float_array(m, "m"), as_float_array(mu, "mu")
    v, tau = positive_array(v, "v"), positive_array(tau, "tau")
    named_broadcast(("m", m.shape), ("v", v.shape), ("mu", mu.shape), ("tau", tau.shape))
    half, sd = _Z90 * np.sqrt(v), np.sqrt(tau)
    return scipy.stats.norm.cdf((m - mu + half) / sd) - scipy.stats.norm.cdf((m - mu - half) / sd)


def collapsed_variance(model: PFNTransformer, n: int) -> float:
    """The learned variance ``tau_L / s2`` (before the positivity map) when all ``n`` context
    inputs and the query coincide: every kernel value is 1, so it depends on ``amp, V, S, W, s2``
    only. The exact PPD's is ``sigma^2 + sigma^2 / (n / alpha^2 + sigma^2)``."""
    model = _check_model(model)
    p = next(model.parameters())
    n = positive_int(n, "n")
    check_size(n * n, "n")  # the forward's n x n attention, refused before it is allocated
    z = torch.zeros(1, n, model.d, dtype=p.dtype)
    with torch.no_grad():
        out = model(z, torch.zeros(1, n, dtype=p.dtype), z[:, 0])
    return float(out.tau) / head_scales(model)[1]


def layer_map_norm(scales, Vgg, Sgg, X) -> np.ndarray:
    """``||prod_l M_l||_2`` per context for the variance channel on the context points, with
    ``M_l = I + V_gg,l D_l^-1 P_l + S_gg,l D_l^-1`` (eqn:l attn under ``Attn^na``; ``P_l`` the
    Gram at ``diag(scale_l)``, ``D_l`` its row sums).

    Parameters
    ----------
    scales : ndarray of shape (L-1, d)
    Vgg, Sgg : ndarray of shape (L-1,)
    X : ndarray of shape (B, n, d)
    """
    X = as_float_array(X, "X", ndim=3, non_empty=True)
    B, n, d = X.shape
    scales = as_float_array(scales, "scales", ndim=2)
    Vgg, Sgg = as_float_array(Vgg, "Vgg", ndim=1), as_float_array(Sgg, "Sgg", ndim=1)
    if scales.shape[1] != d or Vgg.shape != (scales.shape[0],) or Sgg.shape != Vgg.shape:
        raise ValueError(
            f"scales (L-1, d={d}), Vgg (L-1,) and Sgg (L-1,) must match, got {scales.shape}, "
            f"{Vgg.shape}, {Sgg.shape}"
        )
    prod = np.broadcast_to(np.eye(n), (B, n, n)).copy()
    for sc, vg, sg in zip(np.asarray(scales), np.asarray(Vgg), np.asarray(Sgg), strict=True):
        a = X * sc
        sq = (a * a).sum(-1)
        P = np.exp(
            np.minimum(a @ a.transpose(0, 2, 1) - 0.5 * sq[:, :, None] - 0.5 * sq[:, None], 0)
        )
        s = P.sum(-1, keepdims=True)  # (B, n, 1)
        M = np.eye(n) + vg * P / s + sg * np.eye(n) / s
        prod = M @ prod
    return np.linalg.norm(prod, ord=2, axis=(1, 2))


def _handset_map(kernel, eta, noise_var, L, X) -> np.ndarray:
    """``||(I - eta D^-1 (G + sigma^2 I))^(L-1)||_2`` per context (eqn:recursion prec)."""
    G = kernel(np.asarray(X, dtype=float))
    n = G.shape[-1]
    M = np.eye(n) - eta * (G + noise_var * np.eye(n)) / G.sum(-1, keepdims=True)
    return np.linalg.norm(np.linalg.matrix_power(M, L - 1), ord=2, axis=(1, 2))


#: The designs of each cell: (shape, c), ``c`` the per-coordinate standard deviation relative to
#: the pretraining design's ``1/sqrt d``.
DESIGNS = {
    "gaussian": ("gaussian", 1.0),
    "uniform": ("uniform", SHIFT_SCALE),
    "gaussian_shift_scale": ("gaussian", SHIFT_SCALE),
    "uniform_pretraining_scale": ("uniform", 1.0),
}


def _summary(cov) -> dict:
    m, se = mean_se(cov)
    return {"coverage90": m, "coverage90_se": se}


def _cell(model, noise_var, ctx, rescale: float = 1.0) -> dict:
    X, Y, xq, mu, tau = ctx
    m, v = predictive(model, X * rescale, Y, xq * rescale)
    c0 = _prior_variance(model)
    out = _summary(coverage90(m, v, mu, tau))
    out.update(
        coverage90_exact_mean=float(coverage90(mu, v, mu, tau).mean()),
        coverage90_exact_var=float(coverage90(m, tau, mu, tau).mean()),
        width90=float(np.mean(2 * _Z90 * np.sqrt(v))),
        width90_exact=float(np.mean(2 * _Z90 * np.sqrt(tau))),
        var_ratio_median=float(np.median(v / tau)),
        below_noise=float(np.mean(v < noise_var)),
        tau_median=float(np.median(tau)),
        reduction_learned=float(np.median(c0 - v)),
        reduction_exact=float(np.median(1.0 + noise_var - tau)),
        rmse_mean=float(np.sqrt(np.median((m - mu) ** 2))),
    )
    return out


def _prior_variance(model: PFNTransformer) -> float:
    """``c0 = (W_2y + W_2k amp) / s2``: the learned ``sigma^2 + kappa(x, x)`` (the first layer
    writes ``amp kappa(x, x) = amp`` at the query)."""
    c = model.coefficients()
    W = c["W"].detach().double()
    return float(W[1] + W[2] * c["amp"].detach().double()) / head_scales(model)[1]


#: Scales of the path the readout is refitted on (:func:`refit_readout`): the pretraining design
#: down to ``c = 0.4``, past the shift's ``1/sqrt 3``.
REFIT_MIN_SCALE = 0.4
#: Share of the fitting contexts trimmed at each end of the solver feature ``g`` before the least
#: squares (the learned solver diverges on a few isolated contexts of N(0, I/d) at d = 8).
REFIT_TRIM = 0.02


def _variance_feature(model: PFNTransformer, X, Y, xq) -> np.ndarray:
    """The learned solver's variance feature at the query, ``g_L``: the readout is
    ``tau_L = W_2y + W_2k amp + W_2g g_L`` (``kappa(x, x) = 1``), so ``g_L`` is read back from
    ``tau_L``."""
    c = model.coefficients()
    W = c["W"].detach().double().numpy()
    amp = float(c["amp"].detach())
    p = next(model.parameters())
    with torch.no_grad():
        out = model(*(torch.as_tensor(np.asarray(a), dtype=p.dtype) for a in (X, Y, xq)))
    return (out.tau.double().numpy() - W[1] - W[2] * amp) / W[3]


def refit_readout(model: PFNTransformer, fit: Sequence, evaluate: dict) -> dict:
    """Refit the variance readout ``v = a + b g_L`` (the two numbers the learned ``W_2y, W_2k amp,
    W_2g, s2`` amount to) by least squares on the exact variance of the contexts ``fit`` (the
    ``REFIT_TRIM`` tails of ``g_L`` left out), the learned solver and mean untouched; report its
    coverage on each of ``evaluate`` (name -> contexts) and its collapsed limit."""
    G = np.concatenate([_variance_feature(model, *ctx[:3]) for ctx in fit])
    T = np.concatenate([ctx[4] for ctx in fit])
    lo, hi = np.quantile(G, [REFIT_TRIM, 1 - REFIT_TRIM])
    keep = (G >= lo) & (G <= hi)
    a, b = np.linalg.lstsq(np.stack([np.ones(keep.sum()), G[keep]], 1), T[keep], rcond=None)[0]
    out = {"a": float(a), "b": float(b)}
    for name, ctx in evaluate.items():
        m, _ = predictive(model, *ctx[:3])
        v = np.maximum(a + b * _variance_feature(model, *ctx[:3]), 1e-6)
        out[name] = float(coverage90(m, v, ctx[3], ctx[4]).mean())
    n = next(iter(evaluate.values()))[0].shape[1]
    z = np.zeros((1, n, model.d))
    out["collapsed"] = float(a + b * _variance_feature(model, z, z[..., 0], z[:, 0])[0])
    return out


def design_contexts(
    d: int,
    *,
    n_eval: Sequence[int] = (64, 128),
    n_instances: int = 128,
    seed: int = 0,
    path_scales: Sequence[float] = PATH_SCALES,
    noise_var: float = DEFAULT_NOISE_VAR,
    lengthscale: float = 0.8,
) -> dict:
    """Every set of contexts :func:`decompose` reads, drawn once per ``d`` (the same contexts for
    every run of one ``d``): ``{"cells": {n: {design: ctx}}, "path": [(c, ctx)], ...}`` with ``ctx``
    the tuple of :func:`draw_design`; the path at the first ``n_eval``."""
    d = positive_int(d, "d")
    n_eval = [positive_int(n, "n_eval") for n in n_eval]
    if not n_eval:
        raise ValueError("n_eval must hold at least one context size")
    noise_var = positive_scalar(noise_var, "noise_var")
    kernel = RBFKernel(1.0, positive_scalar(lengthscale, "lengthscale"))

    def rng(tag: int, n: int):
        return np.random.default_rng([int(seed), d, int(n), tag])

    cells = {
        n: {
            name: draw_design(shape, c, n, d, n_instances, kernel, noise_var, rng(tag, n))
            for tag, (name, (shape, c)) in enumerate(DESIGNS.items())
        }
        for n in n_eval
    }
    n0 = n_eval[0]
    path = [
        (
            float(c),
            draw_design(
                "gaussian", float(c), n0, d, n_instances, kernel, noise_var, rng(100 + i, n0)
            ),
        )
        for i, c in enumerate(path_scales)
    ]
    return {
        "d": d,
        "noise_var": noise_var,
        "lengthscale": float(lengthscale),
        "kernel": kernel,
        "cells": cells,
        "path": path,
    }


def decompose(model: PFNTransformer, contexts: dict, *, n_map: int = 16) -> dict:
    """The decomposition of one trained TF^pr (module docstring); a JSON-able dict.

    Parameters
    ----------
    model : PFNTransformer
        TF^pr with the psi head, of the ``d`` of ``contexts``.
    contexts : dict
        :func:`design_contexts` of the model's ``d`` and prior (``sigma^2``, lengthscale; a
        learnable model keeps no ``sigma^2`` of its own).
    n_map : int
        Contexts per design for the layer-map norms (an SVD of ``n' x n'`` per layer each).
    """
    model = _check_model(model).double().eval()
    d, L = model.d, model.config.L
    if not isinstance(contexts, dict) or contexts.get("d") != d:
        raise ValueError(f"contexts must be design_contexts(d={d}, ...) for this model")
    noise_var, kernel = contexts["noise_var"], contexts["kernel"]
    eta = tfpr_step(noise_var)
    coef = {k: v.detach().double().numpy() for k, v in model.coefficients().items()}
    doc: dict = {
        "d": d,
        "L": L,
        "noise_var": noise_var,
        "prior_variance_learned": _prior_variance(model),
        "prior_variance_exact": 1.0 + noise_var,
        "amp": float(coef["amp"]),
        "W": coef["W"].tolist(),
        "s": list(head_scales(model)),
        "scale_first": float(coef["scale"][0].mean()),
        "scale_solver": float(coef["scale"][1:].mean()) if L > 1 else float("nan"),
        "scale_exact": 1.0 / contexts["lengthscale"],
        "cells": {},
        "path": [],
    }
    first = min(contexts["cells"])
    for n, by_design in contexts["cells"].items():
        cells = {}
        for name, ctx in by_design.items():
            cell = _cell(model, noise_var, ctx)
            mu_h, tau_h = tfpr_moments(kernel, *ctx[:3], noise_var, eta, L)
            cell["handset_coverage90"] = float(
                coverage90(mu_h, np.maximum(tau_h, 1e-12), ctx[3], ctx[4]).mean()
            )
            if name == "uniform":  # shifted inputs rescaled to the pretraining variance 1/d
                cells["uniform_rescaled_inputs"] = _cell(model, noise_var, ctx, math.sqrt(3.0))
            if n == first and name in ("gaussian", "uniform") and L > 1:
                Xm = ctx[0][:n_map]
                cell["layer_map_norm_median"] = float(
                    np.median(
                        layer_map_norm(coef["scale"][1:], coef["V"][:, 3], coef["S"][:, 1], Xm)
                    )
                )
                cell["handset_map_norm_median"] = float(
                    np.median(_handset_map(kernel, eta, noise_var, L, Xm))
                )
            cells[name] = cell
        cells["collapsed"] = {
            "variance_learned": collapsed_variance(model, n),
            "variance_exact": noise_var + noise_var / (n + noise_var),
        }
        doc["cells"][str(n)] = cells
    for c, ctx in contexts["path"]:
        doc["path"].append({"c": c, **_cell(model, noise_var, ctx)})
    on = contexts["cells"][first]
    evaluate = {"gaussian": on["gaussian"], "uniform": on["uniform"]}
    pre = [ctx for c, ctx in contexts["path"] if c == 1.0]
    wide = [ctx for c, ctx in contexts["path"] if c >= REFIT_MIN_SCALE]
    doc["refit"] = {
        "pretraining": refit_readout(model, pre, evaluate) if pre else None,
        "scales": refit_readout(model, wide, evaluate),
        "n": first,
        "min_scale": REFIT_MIN_SCALE,
    }
    doc["breaking_scale"] = breaking_scale(doc["path"])
    return doc


def breaking_scale(path: Sequence[dict], level: float = 0.9 - COVERAGE_SLACK) -> float:
    """The largest ``c`` on the path whose coverage lies below ``level`` after every larger ``c``
    stayed above it, interpolated linearly between grid points; 0 when the coverage never falls
    below ``level`` on a path of at least one point (the readout holds all the way).

    ``path``: points ``{"c": scale > 0, "coverage90": coverage in [0, 1]}``, one per scale; an
    empty path (nothing measured, which 0 would read as "never breaks"), a repeated scale, or a
    point without a finite ``c`` or coverage is refused naming ``path``; ``level`` in (0, 1)."""
    level = probability(level, "level")
    items = sequence(path, "path")
    pts = []
    for i, p in enumerate(items):
        if not isinstance(p, Mapping) or "c" not in p or "coverage90" not in p:
            raise ArgumentTypeError(f"path[{i}] must be a point {{'c', 'coverage90'}}, got {p!r}")
        c = positive_scalar(p["c"], f"path[{i}]['c']")
        cov = probability(
            p["coverage90"], f"path[{i}]['coverage90']", open_low=False, open_high=False
        )
        pts.append((c, cov))
    if len({c for c, _ in pts}) != len(pts):
        raise ValueError(f"path must hold one point per scale c, got {sorted(c for c, _ in pts)}")
    pts.sort(reverse=True)
    prev = None
    for c, cov in pts:
        if cov < level:
            if prev is None:
                return float(c)
            (c1, v1) = prev
            return float(c + (c1 - c) * (level - cov) / (v1 - cov))
        prev = (c, cov)
    return 0.0


def decompose_run(run_dir, contexts: dict | None = None, **kwargs) -> dict:
    """:func:`decompose` of a finished run directory, with the run's identity (``d, L, n_max,
    seed, steps, ema_decay``) and name; ``contexts`` drawn for the run's prior when not given
    (``kwargs`` go to :func:`design_contexts`)."""
    run_dir = Path(run_dir)
    model, spec, _ = load_trained(run_dir, "cpu")
    task = spec.task
    if task.kind != "rbf" or task.covariates != "gaussian" or task.alpha != 1.0:
        raise ValueError(
            f"{run_dir}: the decomposition is for the rbf prior with alpha = 1 pretrained on the "
            f"Gaussian design, got {task.kind}, alpha {task.alpha}, {task.covariates}"
        )
    if not isinstance(model, PFNTransformer):
        raise ValueError(f"{run_dir}: not a single-head PFN transformer")
    if contexts is None:
        contexts = design_contexts(
            task.d, noise_var=task.noise_var, lengthscale=task.lengthscale, **kwargs
        )
    elif (contexts["noise_var"], contexts["lengthscale"]) != (task.noise_var, task.lengthscale):
        raise ValueError(f"{run_dir}: contexts were drawn for another prior")
    doc = decompose(model, contexts)
    doc["run"] = {
        "name": run_dir.name,
        "experiment": run_dir.parent.name,
        "n_max": spec.n_max,
        "seed": spec.seed,
        "steps": spec.steps,
        "ema_decay": spec.ema_decay,
    }
    return doc


def decompose_runs(run_dirs, **kwargs) -> list[dict]:
    """:func:`decompose_run` of each run, the contexts drawn once per prior."""
    cache: dict = {}
    out = []
    for rd in run_dirs:
        task = load_trained(rd, "cpu")[1].task
        key = (task.d, task.noise_var, task.lengthscale)
        if key not in cache:
            cache[key] = design_contexts(
                task.d, noise_var=task.noise_var, lengthscale=task.lengthscale, **kwargs
            )
        out.append(decompose_run(rd, cache[key]))
    return out
