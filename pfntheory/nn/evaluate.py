"""Evaluation of trained runs against the exact PPD, and the trained-versus-constructed comparison.

Implements
----------
* sec:sims (Inference): fresh instances at an evaluation size ``n'`` (all other settings as in
  pretraining unless overridden, e.g. the covariate shift of supp-sec:exp additional), compared with
  ``p_(a,b]``, the true PPD truncated to ``(a, b]``.
* sec:exp1, sec:exp2, sec:exp3 metrics: ``E[TV(p_(a,b], q)]``, the moment MSEs ``E(mu - m1)^2`` and
  ``E(tau + mu^2 - m2)^2``, the point-prediction MSE ``E(y - m1)^2``, coverage and mean width of the
  central 50/90/95% intervals (beside the true PPD's width), and (supp-sec:exp additional) CRPS
  beside the exact PPD's CRPS, and NLL.
* thm:TFdoPPD: the solver error of the readout ``(mu_L, tau_L)`` against the oracle ``(mu, tau)``.

Evaluation labels
-----------------
The query label of every evaluation instance is drawn from the *truncated* PPD ``p_(a,b]`` (the
pretraining law, and the distribution the paper compares ``q`` with: ``TV(p_(a,b], q)``), so that
coverage, CRPS, NLL and MSE of ``y`` are all taken under the law the model was trained to match and
the NLL is finite. The "exact" baselines (CRPS, coverage, width) are those of the *untruncated* PPD
``N(mu, tau)`` (resp. the mixture), which is what a GP user would report; with outside mass 0.002
the difference is below the Monte-Carlo error of 4096 instances. The moment targets are the
untruncated ``mu`` and ``tau + mu^2``, as the paper writes them.

The instances depend only on ``(seed, n', chunk)``, never on the run, so every run of one task is
scored on the same instances. What is evaluated (sizes, instances, seed, covariates, oracle) is one
:class:`pfntheory.infra.tree.EvalSpec`, taken whole, as :func:`pfntheory.nn.train.train` takes the
:class:`pfntheory.infra.tree.RunSpec`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.special import ndtr

from pfntheory.base._checks import ArgumentTypeError, instance_of, positive_int
from pfntheory.base.stats import mean_se
from pfntheory.infra import runs
from pfntheory.infra.config import INTERVAL_LEVELS
from pfntheory.infra.tree import EvalSpec
from pfntheory.maths import metrics as M
from pfntheory.maths.discretize import bin_edges
from pfntheory.nn.multihead_model import MixturePFN

from .fast_oracle import sample_batch_fast
from .model import PFNTransformer, select_device
from .oracle_store import OracleStore
from .priors import Batch, sample_batch
from .train import load_trained

__all__ = ["evaluate", "predict", "compare_to_construction", "score_instances", "INSTANCES"]

#: The per-instance scores of a run's ``eval.json`` (:func:`score_instances`).
INSTANCES = "eval_instances.json"

#: Metrics :func:`score_instances` can keep per instance (each a function of the edges, the
#: model's bin probabilities and the label; the exact PPD's CRPS beside the model's).
INSTANCE_METRICS = ("crps", "crps_exact", "nll")
#: The instance samplers of the oracles of :attr:`pfntheory.infra.tree.EvalSpec.oracle`.
_DRAW = {"float64": sample_batch, "float32": sample_batch_fast}


def _eval_generator(seed: int, n: int, chunk: int) -> torch.Generator:
    s = np.random.SeedSequence([int(seed), int(n), int(chunk), 0xE7A1]).generate_state(
        2, dtype=np.uint32
    )
    return torch.Generator().manual_seed(int(s[0]) << 31 | int(s[1]) >> 1)


def _eval_batches(task, n: int, spec: EvalSpec, interval, batch_size: int, store=None):
    """The evaluation instances at size ``n'`` = ``n``, chunk by chunk (``Batch``, float64): the one
    generator of the instances that :func:`evaluate` and :func:`pfntheory.nn.audit.audit` score.
    They depend only on ``(task, spec.seed, n, chunk, interval, spec.oracle)``; ``store`` (an
    :class:`OracleStore`) reads them back byte-identical. ``task`` already carries the design."""
    draw = _DRAW[spec.oracle]
    for chunk, start in enumerate(range(0, spec.n_instances, batch_size)):
        m = min(batch_size, spec.n_instances - start)
        gen = _eval_generator(spec.seed, n, chunk)
        if store is None:
            yield draw(task, m, n, gen, dtype=torch.float64, interval=interval)
        else:
            yield store.draw(draw, task, m, n, gen, dtype=torch.float64, interval=interval)


def _exact_part(bt: Batch) -> dict:
    """The per-instance exact quantities of a batch that :func:`_metrics` reads (float64 NumPy)."""
    part = {"mu": bt.mu.numpy(), "tau": bt.tau.numpy(), "y": bt.y.numpy()}
    if bt.weights is not None and bt.mu_h is not None and bt.tau_h is not None:
        part.update(weights=bt.weights.numpy(), mu_h=bt.mu_h.numpy(), tau_h=bt.tau_h.numpy())
    return part


@torch.no_grad()
def predict(model, batch, device) -> dict:
    """Model outputs on a batch as float64 NumPy: ``probs (B, C)``, ``mu_L, tau_L (B,)``.

    ``model`` is a :class:`~pfntheory.nn.model.PFNTransformer`, ``batch`` a
    :class:`~pfntheory.nn.priors.Batch`, ``device`` ``'auto'``, ``'cpu'``, ``'cuda[:i]'`` or a
    torch.device.
    """
    if not isinstance(model, (PFNTransformer, MixturePFN)):
        raise ArgumentTypeError(
            f"model must be a PFNTransformer or MixturePFN, got {type(model).__name__}"
        )
    if not isinstance(batch, Batch):
        raise ArgumentTypeError(
            f"batch must be a pfntheory.nn.priors.Batch (sample_batch), got {type(batch).__name__}"
        )
    device = select_device(device)
    dtype = next(model.parameters()).dtype
    # the fused stack computing each context-context kernel entry once (docs/speed.md)
    kw = {"numerics": "symmetric"} if isinstance(model, PFNTransformer) else {}
    out = model(
        batch.X.to(device, dtype), batch.Y.to(device, dtype), batch.xq.to(device, dtype), **kw
    )
    probs = torch.softmax(out.logits.double(), dim=-1)
    return {
        "probs": probs.cpu().numpy(),
        "mu_L": out.mu.double().cpu().numpy(),
        "tau_L": out.tau.double().cpu().numpy(),
    }


def _metrics(r: dict, edges: np.ndarray, levels) -> dict:
    """All metrics of one evaluation size from the collected per-instance arrays."""
    mu, tau, y, probs = r["mu"], r["tau"], r["y"], r["probs"]
    a, b = float(edges[0]), float(edges[-1])
    hier = "weights" in r
    res: dict = {"n_instances": int(mu.size)}

    def put(name, values):
        # an infinite value (an NLL where the model gives a bin zero mass) makes the mean infinite
        # and the standard error NaN; a NaN (a diverged readout) is recorded, not refused
        res[name], res[name + "_se"] = mean_se(values, allow_inf=True, allow_nan=True)

    if hier:
        w, mh, th = r["weights"], r["mu_h"], r["tau_h"]
        put("tv", M.tv_mixture_histogram(w, mh, th, edges, probs, a, b))
    else:
        put("tv", M.tv_truncnorm_histogram(mu, tau, edges, probs))
    m1, m2 = M.histogram_moments(edges, probs)
    put("mse_mean", (mu - m1) ** 2)  # sec:exp3: E(mu - m_1)^2
    put("mse_second_moment", (tau + mu**2 - m2) ** 2)  # sec:exp3: E(tau + mu^2 - m_2)^2
    put("mse_y", (y - m1) ** 2)  # sec:exp3: E(y - m_1)^2
    put("mse_y_exact", (y - mu) ** 2)
    for lv in levels:
        key = f"{int(round(100 * lv))}"
        lo, hi = M.central_interval(edges, probs, lv)
        res[f"coverage_{key}"] = float(M.coverage(lo, hi, y))
        res[f"width_{key}"] = float(M.interval_width(lo, hi))
        if hier:
            elo, ehi = M.mixture_interval(w, mh, th, lv)
        else:
            elo, ehi = M.gaussian_interval(mu, tau, lv)
        res[f"coverage_{key}_exact"] = float(M.coverage(elo, ehi, y))
        res[f"width_{key}_exact"] = float(M.interval_width(elo, ehi))
    put("crps", M.histogram_crps(edges, probs, y))
    put("crps_exact", M.mixture_crps(w, mh, th, y) if hier else M.gaussian_crps(mu, tau, y))
    put("nll", M.histogram_nll(edges, probs, y))
    if hier:
        s = np.sqrt(th)
        dens = np.sum(
            w * np.exp(-0.5 * ((y[:, None] - mh) / s) ** 2) / (s * np.sqrt(2 * np.pi)), -1
        )
        Z = np.sum(w * (ndtr((b - mh) / s) - ndtr((a - mh) / s)), -1)
    else:
        s = np.sqrt(tau)
        dens = np.exp(-0.5 * ((y - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))
        Z = ndtr((b - mu) / s) - ndtr((a - mu) / s)
    put("nll_exact", -np.log(dens / Z))  # -log p_(a,b](y)
    if "mu_L" not in r:  # a model without the paper's readout (pfntheory.nn.audit)
        return res
    # thm:TFdoPPD: solver error of the readout (for 'hier_rbf': against the mixture moments)
    put("solver_mse_mu", (r["mu_L"] - mu) ** 2)
    put("solver_mse_tau", (r["tau_L"] - tau) ** 2)
    res["solver_max_abs_mu"] = float(np.max(np.abs(r["mu_L"] - mu)))
    res["solver_max_abs_tau"] = float(np.max(np.abs(r["tau_L"] - tau)))
    return res


def evaluate(
    run_dir,
    spec: EvalSpec,
    *,
    batch_size: int = 512,
    device="cpu",
    levels=INTERVAL_LEVELS,
    progress: bool = False,
    save: bool = True,
    store: OracleStore | None = None,
) -> dict:
    """Evaluate a finished run as ``spec`` asks, at each of its sizes ``n'``; write ``eval*.json``.

    Parameters
    ----------
    run_dir : path
        A finished run directory (see :func:`pfntheory.nn.train.train`).
    spec : EvalSpec
        What to evaluate: the sizes ``n'`` (in order), instances per ``n'`` (4096 in the paper),
        the seed of the instances (shared by all runs), the covariate law (None: as trained; an
        override is the covariate shift of supp-sec:exp additional, written to
        ``eval_<covariates>.json``), and the oracle: ``"float64"`` (``sample_batch``, the
        committed evaluations) or ``"float32"``
        (:func:`pfntheory.nn.fast_oracle.sample_batch_fast`: the same random numbers; float32
        factor, PPD refined to float64 accuracy: mu and tau within 1e-10 of the float64 oracle's
        on the labels drawn, measured 4e-14; the context labels differ from float64's draw by
        float32 round-off, relative 1e-5 at n' = 1024; docs/speed.md), recorded in the
        document's settings.
    batch_size : int
        Instances per forward pass (the numbers do not depend on it beyond float round-off).
    device : str or torch.device
    levels : tuple of float
        Central-interval levels.
    save : bool
        Write (and extend) the run's ``eval*.json`` after each ``n'``, as a sweep does; a file of
        another oracle or other settings (seed, instances, interval, levels) is never replaced:
        FileExistsError before any work, naming what differs. False
        reads and writes nothing in the run directory (``pfntheory evaluate``: inspecting a run
        never rewrites its committed artefacts).
    store : OracleStore, optional
        Read the instances and their exact PPD from this store, computing and writing only the
        missing entries (:mod:`pfntheory.nn.oracle_store`: the oracle computed once per grid; the
        results are byte-identical to an evaluation without it). Default: no store.

    Returns
    -------
    dict
        The content of the JSON file: settings and ``results[str(n')]`` -> metrics (with
        ``save``, also the results of other ``n'`` already in the file under the same settings).
    """
    run_dir = Path(run_dir)
    spec = instance_of(EvalSpec, what="pfntheory.infra.tree.EvalSpec")(spec, "spec")
    batch_size = positive_int(batch_size, "batch_size")
    if store is not None:
        store = instance_of(OracleStore, what="pfntheory.nn.oracle_store.OracleStore")(
            store, "store"
        )
    seed, n_instances, oracle = spec.seed, spec.n_instances, spec.oracle
    device = select_device(device)
    model, config, train_metrics = load_trained(run_dir, device)
    task = config.task
    if spec.covariates is not None:
        task = dataclasses.replace(task, covariates=spec.covariates)
    a, b = train_metrics["interval"]
    interval = (a, b)
    edges = bin_edges(a, b, config.model.C)
    name = (
        runs.EVAL if task.covariates == config.task.covariates else f"eval_{task.covariates}.json"
    )
    out_path = run_dir / name
    settings = {
        "seed": seed,
        "n_instances": n_instances,
        "covariates": task.covariates,
        "label_law": "truncated PPD p_(a,b]",
        "interval": list(interval),
        "levels": list(levels),
    }
    if oracle != "float64":  # the committed evaluations' settings stay as they were
        settings["oracle"] = oracle
    # no path in the document: the file lives in its run directory, and a run moved or cloned
    # elsewhere must not carry the absolute path of the machine that evaluated it
    doc: dict[str, Any] = {**settings, "results": {}}
    if save and out_path.is_file():
        old = runs.load_json(out_path)
        differ = _other_settings(old, settings, oracle)
        if differ:  # never over a file of another oracle or settings (issue 52)
            raise FileExistsError(
                f"{out_path} holds an evaluation with other settings ({differ}); saving would "
                "replace it: evaluate with its settings to extend it, or save=False "
                "(pfntheory evaluate --out FILE writes elsewhere), or move the file away"
            )
        doc["results"] = old.get("results", {})
    it = spec.n_eval
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(spec.n_eval, desc=f"evaluate {run_dir.name}")
    for n in it:
        cols: dict[str, list] = {}
        for bt in _eval_batches(task, n, spec, interval, batch_size, store):
            pred = predict(model, bt, device)
            for k, v in {**_exact_part(bt), **pred}.items():
                cols.setdefault(k, []).append(v)
        r = {k: np.concatenate(v) for k, v in cols.items()}
        doc["results"][str(n)] = _metrics(r, edges, levels)
        if save:
            runs.save_json(out_path, doc)
    return doc


def _instance_metric(name: str, r: dict, edges: np.ndarray) -> np.ndarray:
    """Per-instance values of one metric of :data:`INSTANCE_METRICS` (as :func:`_metrics` averages
    them)."""
    if name == "crps":
        return M.histogram_crps(edges, r["probs"], r["y"])
    if name == "nll":
        return M.histogram_nll(edges, r["probs"], r["y"])
    if "weights" in r:
        return M.mixture_crps(r["weights"], r["mu_h"], r["tau_h"], r["y"])
    return M.gaussian_crps(r["mu"], r["tau"], r["y"])


def _instance_args(spec, metrics, store):
    """The checked arguments of :func:`score_instances`."""
    spec = instance_of(EvalSpec, what="pfntheory.infra.tree.EvalSpec")(spec, "spec")
    names = tuple(metrics) if not isinstance(metrics, str) else (metrics,)
    if not names:
        raise ValueError("metrics must name at least one metric")
    for m in names:
        if m not in INSTANCE_METRICS:
            raise ValueError(f"metrics: unknown metric {m!r}; known: {', '.join(INSTANCE_METRICS)}")
    if spec.covariates is not None:
        raise ValueError(
            "spec.covariates must be None (the run's own design, eval.json), got "
            f"{spec.covariates!r}"
        )
    if store is not None:
        store = instance_of(OracleStore, what="pfntheory.nn.oracle_store.OracleStore")(
            store, "store"
        )
    return spec, names, store


def _score_n(model, task, n, spec, interval, edges, names, store, device) -> dict:
    """Per-instance values of ``names`` at one n' on :func:`evaluate`'s instances (batch 512)."""
    cols: dict[str, list] = {}
    for bt in _eval_batches(task, n, spec, interval, 512, store):
        pred = predict(model, bt, device)
        for k, v in {**_exact_part(bt), **pred}.items():
            cols.setdefault(k, []).append(v)
    r = {k: np.concatenate(v) for k, v in cols.items()}
    return {m: _instance_metric(m, r, edges) for m in names}


def score_instances(
    run_dir,
    spec: EvalSpec,
    metrics=("crps", "crps_exact"),
    *,
    device="cpu",
    store: OracleStore | None = None,
    save: bool = True,
) -> dict:
    """Per-instance values of ``metrics`` on the instances of a run's ``eval.json`` (issue 47: the
    tables' comparisons paired across runs, which share the instances).

    The instances are :func:`evaluate`'s at its default batch size (they depend on it: the draw is
    seeded per chunk), the model's outputs the same; each metric's mean over the instances is
    checked against the run's ``eval.json`` (same settings) to 1e-5 relative: the model's float32
    forward on another build or thread count moves the mean by round-off (4e-9 relative measured
    on a committed run), other instances move it by about its standard error (1e-2 relative), so a
    mismatch means other instances or another model, and is refused. Written atomically to
    :data:`INSTANCES` beside ``eval.json`` with the settings (``save``); an existing file of other
    settings is never replaced.

    Parameters
    ----------
    run_dir : path
        A finished, evaluated run directory.
    spec : EvalSpec
        The evaluation of ``eval.json`` (covariates as trained).
    metrics : sequence of str
        Names in :data:`INSTANCE_METRICS`.
    device, store
        As in :func:`evaluate`.
    save : bool
        Write :data:`INSTANCES` (False: only return the document).

    Returns
    -------
    dict
        ``settings`` keys of ``eval.json`` and ``values[str(n')][metric]`` -> list of float.
    """
    run_dir = Path(run_dir)
    spec, names, store = _instance_args(spec, metrics, store)
    ev_path = run_dir / runs.EVAL
    if not ev_path.is_file():
        raise FileNotFoundError(f"run_dir: {run_dir} has no {runs.EVAL} to pair instances with")
    ev = runs.load_json(ev_path)
    device = select_device(device)
    model, config, train_metrics = load_trained(run_dir, device)
    a, b = train_metrics["interval"]
    edges = bin_edges(a, b, config.model.C)
    settings = {
        "seed": spec.seed,
        "n_instances": spec.n_instances,
        "covariates": config.task.covariates,
        "interval": [a, b],
    }
    differ = [k for k, v in settings.items() if ev.get(k) != v]
    if ev.get("oracle", "float64") != spec.oracle:
        differ.append("oracle")
    if differ:
        raise ValueError(f"spec: {ev_path} was evaluated with other settings ({', '.join(differ)})")
    out_path = run_dir / INSTANCES
    doc: dict[str, Any] = {**settings, "oracle": spec.oracle, "source": runs.EVAL, "values": {}}
    if save and out_path.is_file():
        old = runs.load_json(out_path)
        if any(old.get(k) != v for k, v in doc.items() if k != "values"):
            raise FileExistsError(f"{out_path} holds instances of other settings; move it away")
        doc["values"] = old.get("values", {})
    for n in spec.n_eval:
        if str(n) not in ev.get("results", {}):
            raise ValueError(f"spec.n_eval: {ev_path} has no n'={n}")
        vals = _score_n(model, config.task, n, spec, (a, b), edges, names, store, device)
        for m, x in vals.items():
            mean, _ = mean_se(x, allow_inf=True, allow_nan=True)
            ref = ev["results"][str(n)][m]
            if not np.isclose(mean, ref, rtol=1e-5, atol=0.0):
                raise ValueError(
                    f"run_dir: the instances' mean {m} at n'={n} is {mean!r}, {ev_path} says "
                    f"{ref!r}: not the instances or the model of that evaluation"
                )
        vals = {m: x.tolist() for m, x in vals.items()}
        doc["values"][str(n)] = vals
        if save:
            runs.save_json(out_path, doc)
    return doc


def _other_settings(old, settings: dict, oracle: str) -> str:
    """Which settings of an evaluation file ``old`` differ from ``settings`` and ``oracle``, in
    words ("" when none; a file that is not an evaluation differs in everything)."""
    if not isinstance(old, dict) or not isinstance(old.get("results", {}), dict):
        return "it is not an evaluation document"
    keys = [k for k, v in settings.items() if old.get(k) != v]
    if old.get("oracle", "float64") != oracle:
        keys.append("oracle")
    return ", ".join(
        f"{k} {old.get(k, 'float64' if k == 'oracle' else None)!r} -> "
        f"{oracle if k == 'oracle' else settings[k]!r}"
        for k in keys
    )


def _prescribed_scale(task) -> np.ndarray:
    """Diagonal of ``K = Q`` in supp-eqn:weights for the task's kernel written as a unit kernel."""
    if task.kind == "blr":
        from pfntheory.maths.kernels import blr_sigma_diag

        return np.sqrt(np.asarray(task.sigma_diag or blr_sigma_diag(task.d)))  # sqrt(Sigma_kk)
    if task.kind == "ard_rbf":
        return 1.0 / np.asarray(task.lengthscales)
    return np.full(task.d, 1.0 / task.lengthscale)  # 1 / ell


def compare_to_construction(
    run_dir,
    n: int | None = None,
    n_instances: int = 32,
    seed: int = 0,
    eta: float | None = None,
    out=None,
) -> dict:
    """Trained weights beside the values the construction of thm:TFdoPPD prescribes.

    Prescribed (supp-eqn:weights, sec:generalization): ``K = Q = diag(scale)`` with
    ``scale = 1/ell`` (RBF; ARD: ``1/ell_k``) or ``sqrt(Sigma_kk)`` (BLR); ``V^(0)_{k,y} = alpha^2``
    (1 for BLR); step sizes ``eta`` in ``V`` and ``S``; readout ``W = (1; sigma^2, 1, -1)``. The
    learned step sizes are read off the coefficients as

    * unnormalised: ``eta_attn = V_fy / alpha^2``, ``eta_drift = -S_ff / sigma^2``;
    * normalised (TF^pr): ``eta_attn = V_fy``, ``eta_drift = -S_ff alpha^2 / sigma^2``;

    and set beside the optimal Richardson step ``eta* = 2/(lambda_1 + lambda_n)`` of
    ``A = G + sigma^2 I`` (Jacobi-preconditioned by ``D = diag(G 1)`` for TF^pr) of typical Gram
    matrices at context size ``n`` (median and range over ``n_instances`` prior draws).

    Also reported: the RMS distance between the trained readout ``(mu_L, tau_L)`` and the exact
    Richardson solver after the same number of layers with step ``eta*`` (construction's
    :func:`~pfntheory.maths.construction.expected_rows`), and both their distances to the exact PPD.
    A model whose first layer is normalised too (``normalise_first``, the public code's reading of
    TF^pr) is set beside the construction of the same reading: its first layer writes
    ``alpha^2`` at every token, so the solver's variance recursion runs on ``v = alpha^2 1`` and its
    readout is ``sigma^2 + alpha^2 - g`` (:mod:`pfntheory.maths.first_layer`).
    Read-only: the document is written only to ``out`` when given (the committed runs keep
    theirs as ``construction.json``, made with ``n_instances=16``).

    Parameters
    ----------
    run_dir : path
    n : int, optional
        Context size of the comparison (default ``(n_min + n_max) // 2``).
    n_instances : int
    seed : int
    eta : float, optional
        Step of the reference solver; default: the per-instance optimal step ``eta*``.
    out : path, optional
        JSON file to write the document to; default: none (nothing is written).
    """
    from pfntheory.maths.construction import expected_rows
    from pfntheory.maths.richardson import jacobi_preconditioner, optimal_step

    from .priors import exact_kernels

    run_dir = Path(run_dir)
    model, config, train_metrics = load_trained(run_dir, "cpu")
    task, mc = config.task, config.model
    if task.kind == "hier_rbf" or not isinstance(model, PFNTransformer):
        raise ValueError("the hierarchical prior has no single construction to compare with")
    n = (config.n_min + config.n_max) // 2 if n is None else positive_int(n, "n")
    n_instances = positive_int(n_instances, "n_instances")
    kernel = exact_kernels(task)[0][0]
    noise_var = task.noise_var
    amp_true = 1.0 if task.kind == "blr" else task.alpha**2
    coef = {k: v.detach().double().numpy() for k, v in model.coefficients().items()}
    V, S = coef["V"], coef["S"]  # (L-1, 4): V_fy V_ff V_gk V_gg; (L-1, 2): S_ff S_gg
    if mc.normalised:
        eta_attn, eta_drift = V[:, 0], -S[:, 0] * amp_true / noise_var
    else:
        eta_attn, eta_drift = V[:, 0] / amp_true, -S[:, 0] / noise_var

    bt = sample_batch(
        task,
        n_instances,
        n,
        _eval_generator(seed, n, 10**6),
        dtype=torch.float64,
        interval=tuple(train_metrics["interval"]),
    )
    X, Y, xq = bt.X.numpy(), bt.Y.numpy(), bt.xq.numpy()
    with torch.no_grad():
        fwd = model.double()(bt.X, bt.Y, bt.xq)
    mu_tr, tau_tr = fwd.mu.numpy(), fwd.tau.numpy()
    eta_list: list[float] = []
    mu_list: list[float] = []
    tau_list: list[float] = []
    for i in range(n_instances):
        G = kernel(X[i])
        A = G + noise_var * np.eye(n)
        D = jacobi_preconditioner(G) if mc.normalised else None
        e_opt = optimal_step(A, D)  # supp-sec:richardson: eta* = 2 / (lambda_1 + lambda_n)
        eta_list.append(e_opt)
        e = e_opt if eta is None else eta
        if mc.L >= 2:
            F, Gv = expected_rows(
                kernel,
                X[i],
                Y[i],
                xq[i],
                noise_var,
                e,
                mc.L,
                normalised=mc.normalised,
                normalise_first=mc.normalise_first,
            )
            f_L, g_L = F[mc.L, n], Gv[mc.L, n]
        else:
            f_L = g_L = 0.0
        mu_list.append(f_L)
        # W row 2: noise_var + (row k at the query) - g; the row is kappa(x, x) = alpha^2 in
        # either reading (the normalised first layer writes V^(0)_{k,y} = alpha^2 there too)
        tau_list.append(float(kernel.diag(xq[i][None])[0]) + noise_var - g_L)
    eta_star, mu_sol, tau_sol = map(np.asarray, (eta_list, mu_list, tau_list))
    mu, tau = bt.mu.numpy(), bt.tau.numpy()

    def rms(a, b):
        return float(np.sqrt(np.mean((a - b) ** 2)))

    doc = {
        "n": n,
        "n_instances": n_instances,
        "solver_eta": "optimal" if eta is None else eta,
        "mode": mc.mode,
        "normalised": mc.normalised,
        "normalise_first": mc.normalise_first,
        "scale": {
            "learned": coef["scale"].tolist(),
            "prescribed": _prescribed_scale(task).tolist(),
        },
        "amp": {"learned": float(coef["amp"]), "prescribed": amp_true},
        "eta": {
            "learned_attention": eta_attn.tolist(),
            "learned_drift": eta_drift.tolist(),
            "V_ff_over_V_fy": (V[:, 1] / V[:, 0]).tolist(),
            "V_gk_over_V_fy": (V[:, 2] / V[:, 0]).tolist(),
            "V_gg_over_V_fy": (V[:, 3] / V[:, 0]).tolist(),
            "optimal_median": float(np.median(eta_star)),
            "optimal_min": float(eta_star.min()),
            "optimal_max": float(eta_star.max()),
        },
        "W": {"learned": coef["W"].tolist(), "prescribed": [1.0, noise_var, 1.0, -1.0]},
        "readout_rms": {
            "trained_vs_solver_mu": rms(mu_tr, mu_sol),
            "trained_vs_solver_tau": rms(tau_tr, tau_sol),
            "trained_vs_exact_mu": rms(mu_tr, mu),
            "trained_vs_exact_tau": rms(tau_tr, tau),
            "solver_vs_exact_mu": rms(mu_sol, mu),
            "solver_vs_exact_tau": rms(tau_sol, tau),
        },
    }
    if out is not None:
        runs.save_json(out, doc)
    return doc
