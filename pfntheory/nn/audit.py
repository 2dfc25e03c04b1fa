"""The paper's diagnostics for any prior-fitted network, against the exact PPD (issue 50).

What it is
----------
:func:`audit` takes a model as a callable ``model(X, y, xq)`` from a context and queries to a
predictive distribution, and the task (a :class:`~pfntheory.infra.config.TaskSpec`: the paper's
RBF and BLR priors, ``d``, the noise), and scores it on the project's evaluation instances (the
generator of :func:`pfntheory.nn.evaluate.evaluate`, so every model, ours or not, is scored on the
same instances as the committed runs) with the metrics of :mod:`pfntheory.maths.metrics` (the
function that writes ``eval.json``): E[TV], NLL and CRPS beside the exact PPD's, 50/90/95% coverage
and width (and the width ratio to the exact PPD's), at each ``n'`` of an
:class:`~pfntheory.infra.tree.EvalSpec`, labelled inside or beyond the model's pretraining range,
on the task's design or under the covariate shift (``spec.covariates``).

The model's call
----------------
``model(X, y, xq)`` receives float64 NumPy arrays ``X (B, n, d)``, ``y (B, n)``, ``xq (B, d)``
(one query per instance; copies, so a model may change them) and returns one of

* :class:`BinLogits` ``(logits (B, K), edges (K + 1,))``: a softmax over bins on its edges;
* :class:`BarProbs` ``(probs (B, K), borders (K + 1,))``: a bar distribution on its own borders
  (probabilities, summing to 1 per row);
* :class:`Gaussian` ``(mean (B,), var (B,))``.

NumPy arrays or torch tensors. Anything else -- another type, a wrong shape or batch size, NaN or
infinite values, probabilities off the simplex, a variance <= 0, borders that do not increase, a
model that raises -- is refused with a ``ValueError`` / ``TypeError`` naming what is wrong, never
scored.

The common grid (the conversion, :func:`to_bins`)
--------------------------------------------------
Everything is scored on the project's bins: the truncation interval ``(a, b]`` of the task and
pretraining range (calibrated as training does, :func:`pfntheory.nn.priors.calibrate_task_interval`,
unless ``edges`` are given) cut into ``C`` equal bins. A model's law ``q`` is taken to the bins in
two steps, both exact:

1. *Conditioned on* ``(a, b]``: ``q_(a,b] = q 1_(a,b] / q((a, b])``, as the exact side is the PPD
   truncated to ``(a, b]`` (``p_(a,b]``, sec:sims). The mass ``1 - q((a, b])`` the model puts
   outside is reported (``outside_mass``), not hidden; a model with no mass inside is refused.
2. *Projected on the bins*: bin ``c`` gets ``q_(a,b]((e_c, e_{c+1}])``, spread uniformly within
   the bin (the histogram density of eqn:TF piece ppd, the form in which the paper scores its
   models).

For a bar distribution (bars ``(t_k, t_{k+1}]`` with masses ``p_k``, density ``p_k / (t_{k+1} -
t_k)`` within a bar) the CDF is piecewise linear between the borders, ``F(t_k) = p_1 + ... +
p_{k-1}``, 0 below ``t_1`` and 1 above ``t_{K+1}``, and bin ``c`` gets ``F(e_{c+1}) - F(e_c)``
before the division by ``F(b) - F(a)``: borders equal to the edges are the identity (the
probabilities are used as given, so an audit of the project's own models reproduces
``evaluate``'s numbers bit for bit); a bar split into two bins gives each its share by length;
bins split into finer bars sum them. For a Gaussian ``N(m, v)`` bin ``c`` gets
``Phi((e_{c+1} - m) / sqrt v) - Phi((e_c - m) / sqrt v)`` over ``Phi((b - m) / sqrt v) - Phi((a - m)
/ sqrt v)`` (:func:`pfntheory.maths.discretize.truncnorm_bin_masses`, in log space). Bin logits on
other edges are their softmax as a bar distribution.

The projection costs something even for a perfect model: ``tv_floor`` is E[TV] of the exact PPD's
own projection (the bins' floor; the exact Gaussian as a model scores exactly it). A Gaussian
model also gets its own NLL (of its law conditioned on ``(a, b]``, as ``nll_exact``), CRPS and
central intervals, unbinned (``*_native``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.special import ndtr

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_callable,
    instance_of,
    positive_int,
)
from pfntheory.infra.config import INTERVAL_LEVELS, TaskSpec
from pfntheory.infra.tree import EvalSpec
from pfntheory.maths import metrics as M
from pfntheory.maths.discretize import (
    _log_norm_mass,
    bin_edges,
    check_edges,
    check_probs,
    gaussian_tail_mass,
    truncnorm_bin_masses,
)

from .evaluate import _eval_batches, _exact_part, _metrics, predict
from .oracle_store import OracleStore
from .priors import Batch, calibrate_task_interval

__all__ = [
    "BinLogits",
    "BarProbs",
    "Gaussian",
    "to_bins",
    "audit",
    "RunModel",
    "run_model",
    "AUDIT_C",
]

#: Bins of the common grid when the caller gives no edges (the project's d = 8 runs' C).
AUDIT_C = 256


def _numpy(x, name: str, ndim: int, *, allow_neg_inf: bool = False) -> np.ndarray:
    """A model's array (NumPy or torch) as float64 with ``ndim`` dimensions; NaN and +inf refused
    (``-inf`` too unless ``allow_neg_inf``: a bin logit of ``-inf`` is a bin of mass 0)."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise ArgumentTypeError(f"{name} must be real, got a complex tensor")
        x = x.detach().to("cpu", torch.float64).numpy()
    a = as_float_array(x, name, ndim=ndim, allow_nan=True, non_empty=True)
    bad = np.isnan(a) | (a == np.inf) | ((a == -np.inf) & (not allow_neg_inf))
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise ValueError(f"{name} holds a non-finite value ({a[i]}) at index {i}")
    return a


@dataclass(frozen=True)
class BinLogits:
    """A model's output: logits ``(B, K)`` of a softmax over the bins of ``edges`` ``(K + 1,)``
    (increasing; ``-inf`` is a bin of mass 0, NaN and ``+inf`` are refused)."""

    logits: Any
    edges: Any

    def __post_init__(self):
        lg = _numpy(self.logits, "logits", 2, allow_neg_inf=True)
        e = check_edges(_numpy(self.edges, "edges", 1), "edges")
        if lg.shape[1] != e.size - 1:
            raise ValueError(
                f"logits must have one column per bin of edges ({e.size - 1}), got shape {lg.shape}"
            )
        dead = np.all(lg == -np.inf, axis=1)
        if np.any(dead):
            raise ValueError(f"logits: every bin is -inf (no mass) in row {int(np.argmax(dead))}")
        object.__setattr__(self, "logits", lg)
        object.__setattr__(self, "edges", e)

    def probs(self) -> np.ndarray:
        """The softmax of the logits, float64."""
        z = self.logits - self.logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class BarProbs:
    """A model's output: a bar distribution, probabilities ``(B, K)`` on the bars of ``borders``
    ``(K + 1,)`` (increasing), uniform within each bar. Rows must lie on the simplex (non-negative,
    summing to 1 within ``K * 2**-23``, a float32 softmax's round-off); nothing is renormalised."""

    probs: Any
    borders: Any

    def __post_init__(self):
        p = _numpy(self.probs, "probs", 2)
        t = check_edges(_numpy(self.borders, "borders", 1), "borders")
        if p.shape[1] != t.size - 1:
            raise ValueError(
                f"probs must have one column per bar of borders ({t.size - 1}), got shape {p.shape}"
            )
        object.__setattr__(self, "probs", check_probs(p, t.size - 1, "probs"))
        object.__setattr__(self, "borders", t)


@dataclass(frozen=True)
class Gaussian:
    """A model's output: a Gaussian predictive ``N(mean, var)``, ``mean`` and ``var`` of shape
    ``(B,)``, finite, ``var > 0``."""

    mean: Any
    var: Any

    def __post_init__(self):
        m = _numpy(self.mean, "mean", 1)
        v = _numpy(self.var, "var", 1)
        if m.shape != v.shape:
            raise ValueError(f"mean and var must have one shape, got {m.shape} and {v.shape}")
        if np.any(v <= 0):
            i = int(np.argmin(v))
            raise ValueError(f"var must be > 0, got {v[i]} at index {i}")
        object.__setattr__(self, "mean", m)
        object.__setattr__(self, "var", v)


_OUTPUTS = (BinLogits, BarProbs, Gaussian)


def _bar_cdf(probs: np.ndarray, borders: np.ndarray, x: np.ndarray) -> np.ndarray:
    """CDF ``(B, len(x))`` of bar distributions at the points ``x``: linear within each bar."""
    cum = np.concatenate([np.zeros((probs.shape[0], 1)), np.cumsum(probs, axis=1)], axis=1)
    K = probs.shape[1]
    k = np.clip(np.searchsorted(borders, x, side="right") - 1, 0, K - 1)  # bar holding x
    frac = np.clip((x - borders[k]) / (borders[k + 1] - borders[k]), 0.0, 1.0)
    F = cum[:, k] + frac * probs[:, k]
    F[:, x <= borders[0]] = 0.0
    F[:, x >= borders[-1]] = 1.0
    return F


def to_bins(output, edges) -> tuple[np.ndarray, np.ndarray]:
    """A model's output on the common bins: its law conditioned on ``(a, b] = (edges[0],
    edges[-1]]`` and projected on the bins (module docstring, "The common grid").

    Parameters
    ----------
    output : BinLogits, BarProbs or Gaussian
        ``B`` predictive distributions.
    edges : array_like of shape (C + 1,)
        The bins, increasing.

    Returns
    -------
    probs : ndarray of shape (B, C)
        Bin probabilities, each row summing to 1.
    outside : ndarray of shape (B,)
        The mass the model put outside ``(a, b]`` (dropped by the conditioning).

    Raises
    ------
    ValueError
        If a row puts no mass in ``(a, b]``.
    """
    if not isinstance(output, _OUTPUTS):
        raise ArgumentTypeError(
            f"output must be a BinLogits, BarProbs or Gaussian, got {type(output).__name__}"
        )
    e = check_edges(edges)
    a, b = float(e[0]), float(e[-1])
    if isinstance(output, Gaussian):
        m, v = output.mean, output.var
        outside = gaussian_tail_mass(m, v, a, b)
        try:
            return truncnorm_bin_masses(m, v, e), outside
        except ValueError:
            z = np.abs(m - (a + b) / 2) / np.sqrt(v)
            i = int(np.argmax(z))
            raise ValueError(
                f"output: the Gaussian of row {i} (mean {m[i]:.4g}, var {v[i]:.4g}) has no "
                f"representable mass in (a, b] = ({a:.4g}, {b:.4g}]"
            ) from None
    if isinstance(output, BinLogits):
        p, t = output.probs(), output.edges
    else:
        p, t = output.probs, output.borders
    if t.shape == e.shape and np.array_equal(t, e):
        return p, np.zeros(p.shape[0])  # the identity: the probabilities as given
    F = _bar_cdf(p, t, e)
    inside = F[:, -1] - F[:, 0]
    if np.any(~(inside > 0)):
        i = int(np.argmin(inside))
        raise ValueError(
            f"output: row {i} puts no mass in (a, b] = ({a:.4g}, {b:.4g}] (the bars of its "
            f"borders [{t[0]:.4g}, {t[-1]:.4g}] carry none there)"
        )
    q = np.maximum(np.diff(F, axis=1), 0.0)  # round-off of a monotone CDF only
    return q / q.sum(axis=1, keepdims=True), np.clip(1.0 - inside, 0.0, 1.0)


def _call(model: Callable, bt: Batch, n: int):
    """One call of the model on a batch of instances, its output checked (B rows)."""
    B = int(bt.y.shape[0])
    args = (bt.X.numpy().copy(), bt.Y.numpy().copy(), bt.xq.numpy().reshape(B, -1).copy())
    try:
        out = model(*args)
    except Exception as err:
        raise ValueError(
            f"model raised {type(err).__name__} on a batch of B={B} contexts of n'={n}: {err}"
        ) from err
    if not isinstance(out, _OUTPUTS):
        raise ArgumentTypeError(
            "model must return a BinLogits, BarProbs or Gaussian (pfntheory.nn.audit), got "
            f"{type(out).__name__}"
        )
    if isinstance(out, Gaussian):
        rows = out.mean.shape[0]
    elif isinstance(out, BinLogits):
        rows = out.logits.shape[0]
    else:
        rows = out.probs.shape[0]
    if rows != B:
        raise ValueError(
            f"model returned {rows} predictive distributions for B={B} queries at n'={n}"
        )
    return out


def _range_label(n: int, pretraining_range) -> str:
    if pretraining_range is None:
        return "unknown"
    lo, hi = pretraining_range
    return "below" if n < lo else "beyond" if n > hi else "inside"


def _native_gaussian(res: dict, r: dict, a: float, b: float, levels) -> None:
    """Unbinned metrics of a Gaussian model (NLL of its law conditioned on (a, b])."""
    m, v, y = r["g_mean"], r["g_var"], r["y"]
    s = np.sqrt(v)
    log_Z = _log_norm_mass((a - m) / s, (b - m) / s)  # log of the mass in (a, b], in log space
    nll = 0.5 * ((y - m) / s) ** 2 + np.log(s * math.sqrt(2 * math.pi)) + log_Z
    res["nll_native"], res["nll_native_se"] = _mean_se(nll)
    res["crps_native"], res["crps_native_se"] = _mean_se(M.gaussian_crps(m, v, y))
    for lv in levels:
        key = f"{int(round(100 * lv))}"
        lo, hi = M.gaussian_interval(m, v, lv)
        res[f"coverage_{key}_native"] = float(M.coverage(lo, hi, y))
        res[f"width_{key}_native"] = float(M.interval_width(lo, hi))


def _mean_se(values) -> tuple[float, float]:
    from pfntheory.base.stats import mean_se

    return mean_se(values, allow_inf=True, allow_nan=True)


def _floor(r: dict, edges: np.ndarray) -> np.ndarray:
    """TV of the exact PPD against its own projection on the bins (the grid's floor)."""
    e = edges
    if "weights" in r:
        w, mh, th = r["weights"], r["mu_h"], r["tau_h"]
        s = np.sqrt(th)[..., None]
        g = ndtr((e - mh[..., None]) / s)
        q = np.einsum("bh,bhc->bc", w, np.diff(g, axis=-1))
        q = q / q.sum(axis=1, keepdims=True)
        return M.tv_mixture_histogram(w, mh, th, e, q, float(e[0]), float(e[-1]))
    q = truncnorm_bin_masses(r["mu"], r["tau"], e)
    return M.tv_truncnorm_histogram(r["mu"], r["tau"], e, q)


def _instances(r: dict, edges: np.ndarray, levels) -> dict:
    """Per-instance TV (6 significant digits) and, where 0.9 is a level, whether each instance's
    90% interval covered its label (the closed interval, as :func:`pfntheory.maths.metrics.
    coverage`)."""
    if "weights" in r:
        raise ValueError("instances=True is for the Gaussian PPD tasks (rbf, blr, ard_rbf)")
    tv = M.tv_truncnorm_histogram(r["mu"], r["tau"], edges, r["probs"])
    out: dict[str, list] = {"tv_instances": [float(f"{v:.6g}") for v in tv]}
    if any(abs(lv - 0.9) < 1e-12 for lv in levels):
        lo, hi = M.central_interval(edges, r["probs"], 0.9)
        out["covered_90_instances"] = [int(c) for c in (lo <= r["y"]) & (r["y"] <= hi)]
    return out


def _pretraining_range(x) -> tuple[int, int] | None:
    if x is None:
        return None
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != 2:
        raise ArgumentTypeError(
            f"pretraining_range must be a pair (n_min, n_max) of integers, got {x!r}"
        )
    lo = positive_int(x[0], "pretraining_range[0]")
    hi = positive_int(x[1], "pretraining_range[1]")
    if lo > hi:
        raise ValueError(f"pretraining_range must have n_min <= n_max, got ({lo}, {hi})")
    return lo, hi


def audit(
    model,
    task: TaskSpec,
    spec: EvalSpec,
    *,
    edges=None,
    pretraining_range=None,
    C: int = AUDIT_C,
    levels=INTERVAL_LEVELS,
    batch_size: int = 512,
    store: OracleStore | None = None,
    label: str | None = None,
    instances: bool = False,
) -> dict:
    """The paper's diagnostics of ``model`` against the exact PPD of ``task``, as ``spec`` asks.

    Parameters
    ----------
    model : callable
        ``model(X, y, xq)`` -> :class:`BinLogits`, :class:`BarProbs` or :class:`Gaussian` (module
        docstring).
    task : TaskSpec
        The prior the instances are drawn from (the model's pretraining prior).
    spec : EvalSpec
        The sizes ``n'``, instances per ``n'``, their seed (the committed evaluations':
        ``EVAL_SEED``), the covariate design (None: the task's; ``'uniform'``: the shift of
        supp-sec:exp additional) and the oracle, as for :func:`pfntheory.nn.evaluate.evaluate`.
    edges : array_like of shape (C + 1,), optional
        The common bins. Default: ``C`` equal bins on the interval training calibrates for
        ``task`` and ``pretraining_range`` (which is then required).
    pretraining_range : (n_min, n_max), optional
        The model's pretraining range: labels each ``n'`` inside, below or beyond it.
    C : int
        Bins of the default grid (ignored with ``edges``).
    levels : tuple of float
        Central-interval levels.
    batch_size : int
        Instances per call of the model (as ``evaluate``'s ``batch_size``: the instances are the
        same for the same value).
    store : OracleStore, optional
        Read the instances and their exact PPD from this store (byte-identical).
    label : str, optional
        A name of the model, recorded in the document.
    instances : bool
        Also record each instance's TV (``tv_instances``, 6 significant digits, the form of a
        learning curve's final point) and whether its 90% interval covered the label
        (``covered_90_instances``, when 0.9 is a level), so that two models audited on the same
        ``spec`` can be compared paired, instance by instance.

    Returns
    -------
    dict
        Settings and ``results[str(n')]``: the metrics of ``eval.json`` (``tv``, ``nll``,
        ``nll_exact``, ``crps``, ``crps_exact``, ``coverage_k``, ``width_k`` and their exact
        values...) plus ``tv_floor``, ``width_k_ratio`` (model / exact), ``outside_mass``,
        ``range`` and, for a Gaussian model, the unbinned ``*_native`` metrics.
    """
    model = check_callable(model, "model")
    task = instance_of(TaskSpec, what="pfntheory.infra.config.TaskSpec")(task, "task")
    spec = instance_of(EvalSpec, what="pfntheory.infra.tree.EvalSpec")(spec, "spec")
    pretraining_range = _pretraining_range(pretraining_range)
    batch_size = positive_int(batch_size, "batch_size")
    levels = tuple(float(v) for v in as_float_array(levels, "levels", ndim=1, non_empty=True))
    if any(not 0 < v < 1 for v in levels):
        raise ValueError(f"levels must lie in (0, 1), got {levels}")
    if store is not None:
        store = instance_of(OracleStore, what="pfntheory.nn.oracle_store.OracleStore")(
            store, "store"
        )
    C = positive_int(C, "C", minimum=2)
    if edges is None:
        if pretraining_range is None:
            raise ValueError(
                "edges or pretraining_range is required (the default grid is the interval "
                "training calibrates for the pretraining range)"
            )
        a, b = calibrate_task_interval(task, *pretraining_range)
        edges = bin_edges(a, b, C)
    else:
        edges = check_edges(edges)
    a, b = float(edges[0]), float(edges[-1])
    interval = (a, b)
    draw_task = task
    if spec.covariates is not None:
        draw_task = dataclasses.replace(task, covariates=spec.covariates)
    doc: dict[str, Any] = {
        "model": label,
        "seed": spec.seed,
        "n_instances": spec.n_instances,
        "covariates": draw_task.covariates,
        "label_law": "truncated PPD p_(a,b]",
        "interval": [a, b],
        "C": int(edges.size - 1),
        "levels": list(levels),
        "pretraining_range": None if pretraining_range is None else list(pretraining_range),
        "task": dataclasses.asdict(task),
        "results": {},
    }
    if spec.oracle != "float64":
        doc["oracle"] = spec.oracle
    kind = None
    for n in spec.n_eval:
        cols: dict[str, list] = {}
        for bt in _eval_batches(draw_task, n, spec, interval, batch_size, store):
            out = _call(model, bt, n)
            if kind is not None and type(out).__name__ != kind:
                raise ValueError(
                    f"model returned a {type(out).__name__} after a {kind}: one kind of output "
                    "per model"
                )
            kind = type(out).__name__
            probs, outside = to_bins(out, edges)
            part = {**_exact_part(bt), "probs": probs, "outside": outside}
            if isinstance(out, Gaussian):
                part.update(g_mean=out.mean, g_var=out.var)
            for k, v in part.items():
                cols.setdefault(k, []).append(v)
        r = {k: np.concatenate(v) for k, v in cols.items()}
        res = _metrics(r, edges, levels)
        res["tv_floor"], res["tv_floor_se"] = _mean_se(_floor(r, edges))
        for lv in levels:
            key = f"{int(round(100 * lv))}"
            res[f"width_{key}_ratio"] = res[f"width_{key}"] / res[f"width_{key}_exact"]
        res["outside_mass"] = float(np.mean(r["outside"]))
        if "g_mean" in r:
            _native_gaussian(res, r, a, b, levels)
        res["range"] = _range_label(n, pretraining_range)
        if instances:
            res.update(_instances(r, edges, levels))
        doc["results"][str(n)] = res
    doc["output"] = kind
    return doc


# --------------------------------------------------------------------------------------------------
# the adapter of the project's own trained runs
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunModel:
    """A committed run as an audited model: ``predict`` (the callable :func:`audit` takes), the
    run's ``task``, ``edges`` (its bins) and ``pretraining_range``; :meth:`audit` runs
    :func:`audit` with them."""

    predict: Callable
    task: TaskSpec
    edges: np.ndarray
    pretraining_range: tuple[int, int]
    name: str

    def audit(self, spec: EvalSpec, **kw) -> dict:
        """:func:`audit` of this run on ``spec`` with its task, bins and pretraining range."""
        return audit(
            self.predict,
            self.task,
            spec,
            edges=self.edges,
            pretraining_range=self.pretraining_range,
            label=self.name,
            **kw,
        )


def run_model(run_dir, device="cpu") -> RunModel:
    """A finished run of the project (``pfntheory train`` / ``sweep``) as a model for
    :func:`audit`: its forward pass (:func:`pfntheory.nn.evaluate.predict`, the one ``evaluate``
    scores) returning :class:`BarProbs` on the run's own bins, so that
    ``run_model(run).audit(spec)`` gives ``evaluate(run, spec, save=False)``'s numbers
    (tests/test_audit.py)."""
    from .state import load_trained

    run_dir = Path(run_dir)
    model, config, train_metrics = load_trained(run_dir, device)
    a, b = train_metrics["interval"]
    edges = bin_edges(a, b, config.model.C)
    d = config.task.d

    def predict_fn(X, y, xq):
        B, n = y.shape
        bt = Batch(
            X=torch.as_tensor(X, dtype=torch.float64),
            Y=torch.as_tensor(y, dtype=torch.float64),
            xq=torch.as_tensor(xq, dtype=torch.float64).reshape(B, d),
            y=torch.zeros(B, dtype=torch.float64),
            mu=torch.zeros(B, dtype=torch.float64),
            tau=torch.ones(B, dtype=torch.float64),
        )
        return BarProbs(predict(model, bt, device)["probs"], edges)

    return RunModel(predict_fn, config.task, edges, (config.n_min, config.n_max), run_dir.name)
