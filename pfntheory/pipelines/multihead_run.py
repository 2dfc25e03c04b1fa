"""The runners of the multi-head study (issues 27 and 38, beyond the paper): they load the trained
runs, score them on fresh prior draws and write the committed documents that
:mod:`pfntheory.claims.multihead_trained`, :mod:`pfntheory.claims.multihead_select` and
:mod:`pfntheory.claims.multihead_cells` read and decide.

* :func:`ceiling` and :func:`selector_accuracy`: the selection ceiling and a selector's accuracy
  (``supp_tab_hier_multihead_select/``; the documents' checks and claims are
  :mod:`pfntheory.claims.multihead_select`'s);
* :func:`paired_tv` and its cache :func:`cached_paired_tv` (``paired-tv-cpu.json``, read by
  :func:`pfntheory.claims.multihead_trained.load_paired_tv`);
* :func:`confirm_cell` and :func:`run_confirmation`: more instances for one n' of the confirmation,
  in resumable batches, joined into the cell (``supp_tab_hier_multihead_confirm/``; the batches'
  checks and the joins are :mod:`pfntheory.claims.multihead_cells`'s); :func:`curve_values`: the
  candidate on a reference run's learning-curve instances; :func:`run_reference`: the doubled,
  weight-averaged single L = 32 on the confirmation's draws (the reference page 08's rows
  against the single L = 32 read).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from pfntheory.base._checks import instance_of, int_tuple, positive_int, seed_int
from pfntheory.base.stats import mean_se
from pfntheory.claims import multihead_select as msel
from pfntheory.claims.multihead_cells import (
    CELL_FILE,
    FOLDER,
    batch_path,
    check_batch,
    concat_batches,
)
from pfntheory.claims.multihead_select import COVERAGE_LEVELS
from pfntheory.claims.multihead_trained import PAIRED_FILE, Comparison, load_paired_tv, models
from pfntheory.infra import runs as runfiles
from pfntheory.maths import metrics as M

__all__ = [
    "with_depth",
    "ceiling",
    "selector_accuracy",
    "paired_tv",
    "cached_paired_tv",
    "confirm_cell",
    "selector_digest",
    "run_confirmation",
    "curve_values",
    "run_reference",
]


def with_depth(spec, L: int):
    """The run spec ``spec`` with the model's depth replaced by ``L`` (hand-set heads at ``L``)."""
    from pfntheory.infra.tree import RunSpec

    instance_of(RunSpec)(spec, "spec")
    return dataclasses.replace(spec, model=dataclasses.replace(spec.model, L=positive_int(L, "L")))


def _forward_chunks(model, bt, chunk: int, log_weights=None):
    import torch

    probs, weights = [], []
    with torch.no_grad():
        for i in range(0, bt.X.shape[0], chunk):
            sl = slice(i, i + chunk)
            if log_weights is None:
                out = model(bt.X[sl], bt.Y[sl], bt.xq[sl])
            else:
                out = model(bt.X[sl], bt.Y[sl], bt.xq[sl], log_weights=log_weights[sl])
            probs.append(torch.softmax(out.logits.double(), -1))
            if getattr(out, "weights", None) is not None:
                weights.append(out.weights.double())
    return torch.cat(probs).numpy(), (torch.cat(weights).numpy() if weights else None)


def _handset(spec, interval, depths, dtype, head_hook) -> dict:
    """The hand-set heads of ``spec`` at each depth of ``depths`` (``head_hook`` applied)."""
    from pfntheory.nn.state import build_model

    out = {}
    for L in depths:
        out[L] = build_model(with_depth(spec, L), interval, "cpu").to(dtype).eval()
        if head_hook is not None:
            head_hook(out[L], L)
    return out


def ceiling(
    singles: dict,
    multi,
    *,
    depths=(8, 16, 32),
    selectors: dict | None = None,
    n_eval=(256, 512, 1024),
    n_instances: int = 256,
    seed: int = 4242,
    chunk: int = 32,
    dtype=None,
    baselines: bool = True,
    exact_rows: bool = True,
    exact_handset=(),
    head_hook=None,
) -> dict:
    """Per-instance TVs and top-component accuracies of
    :mod:`pfntheory.claims.multihead_select`'s docstring.

    Parameters
    ----------
    singles : dict name -> run directory
        Single-head runs (their own output).
    multi : run directory
        The trained multi-head run (its heads; readout own and exact; and its spec gives the
        hand-set heads at each of ``depths``).
    selectors : dict name -> (heads, selector), optional
        ``heads``: a sequence of ``"trained"`` (the multi-head run's heads) and depths ``L`` of
        ``depths`` (hand-set heads); ``selector``: a :class:`~pfntheory.nn.selector.StatSelector`.
    n_eval, n_instances, seed
        The draws: ``sample_batch`` with generator seed ``seed * 100_003 + n`` (as ``paired_tv``).
    dtype : torch dtype, optional
        Of the models and inputs (default float64; the oracle moments are float64 either way).
    baselines : bool
        False: only the selectors' rows (and the Bayes accuracy), for a second pass on the same
        draws.
    exact_rows : bool
        False: without the multi-head rows (own readout, exact weights): the single heads and the
        selectors only (a confirmation pass).
    exact_handset : sequence of int
        Depths of ``depths`` whose hand-set heads are scored with the exact weights even when
        ``exact_rows`` is False (the ceiling of a confirmation pass on its own draws).
    head_hook : callable, optional
        ``head_hook(model, L)`` changes the hand-set heads of depth ``L`` in place after they are
        built (e.g. :func:`pfntheory.nn.chebyshev_heads.set_layer_steps`).

    Returns
    -------
    dict (JSON-able): ``{"n_eval", "n_instances", "seed", "bayes_acc": {n: [per-instance 0/1]},
    "tv": {name: {n: [...]}}, "sel_acc": {name: {n: [...]}}, "sel_tv_w": {name: {n: [...]}}}``.
    """
    import torch

    from pfntheory.maths.discretize import bin_edges
    from pfntheory.nn.selector import sample_with_component
    from pfntheory.nn.state import load_trained

    n_eval = int_tuple(n_eval, "n_eval")
    n_instances = positive_int(n_instances, "n_instances", minimum=2)
    seed = seed_int(seed, "seed")
    dtype = torch.float64 if dtype is None else dtype
    models = {}
    for name, rd in (singles if baselines else {}).items():
        m, cfg, met = load_trained(rd)
        models[name] = (m.to(dtype), cfg, tuple(met["interval"]), False)
    mm, mcfg, mmet = load_trained(multi)
    interval = tuple(mmet["interval"])
    heads: dict = {"trained": mm.to(dtype)}
    heads.update(_handset(mcfg, interval, int_tuple(depths, "depths"), dtype, head_hook))
    exact_handset = int_tuple(exact_handset, "exact_handset", non_empty=False)
    if set(exact_handset) - set(heads):
        raise ValueError(f"exact_handset {exact_handset} must be depths of depths={depths}")
    task = mcfg.task
    doc: dict = {
        "n_eval": list(n_eval),
        "n_instances": n_instances,
        "seed": seed,
        "dtype": str(dtype).removeprefix("torch."),
        "multi_run": str(multi),
        "single_runs": {k: str(v) for k, v in singles.items()},
        "bayes_acc": {},
        "tv": {},
        "sel_acc": {},
        "sel_tv_w": {},
        "coverage": {str(lv): {} for lv in COVERAGE_LEVELS},
    }
    edges = bin_edges(interval[0], interval[1], mcfg.model.C)

    def put(key, name, n, vals):
        doc[key].setdefault(name, {})[str(n)] = [float(f"{v:.6g}") for v in vals]

    for n in n_eval:
        g = torch.Generator().manual_seed(seed * 100_003 + n)
        bt, h0 = sample_with_component(task, n_instances, n, g, dtype=dtype, interval=interval)
        assert bt.weights is not None and bt.mu_h is not None and bt.tau_h is not None
        w, mu_h, tau_h = bt.weights.numpy(), bt.mu_h.numpy(), bt.tau_h.numpy()
        h0n = h0.numpy()
        put("bayes_acc", "p(h|D)", n, (w.argmax(-1) == h0n).astype(float))

        y = bt.y.double().numpy()

        def tv_of(probs, e=edges, w=w, mu_h=mu_h, tau_h=tau_h):
            return M.tv_mixture_histogram(w, mu_h, tau_h, e, probs, e[0], e[-1])

        def row(name, probs, e=edges, n=n, y=y):
            """TV and the central intervals' coverage indicators of one model's histograms."""
            put("tv", name, n, tv_of(probs, e))
            for lv in COVERAGE_LEVELS:
                lo, hi = M.central_interval(e, probs, lv / 100)
                doc["coverage"][str(lv)].setdefault(name, {})[str(n)] = [
                    int(v) for v in (lo <= y) & (y <= hi)
                ]

        for name, (m, cfg, iv, _) in models.items():
            e = bin_edges(iv[0], iv[1], cfg.model.C)
            row(name, _forward_chunks(m, bt, chunk)[0], e)
        log_exact = torch.log(bt.weights.clamp_min(1e-300))
        for name, (which, sel) in (selectors or {}).items():
            with torch.no_grad():
                lw = sel(sel.features(bt.X.double(), bt.Y.double()))
            ws = lw.exp().numpy()
            put("sel_acc", name, n, (ws.argmax(-1) == h0n) * 1.0)
            put("sel_tv_w", name, n, 0.5 * np.abs(ws - w).sum(-1))
            for L in which:
                probs, _ = _forward_chunks(heads[L], bt, chunk, lw)
                row(f"{name}, heads {L}", probs)
        if not (baselines and exact_rows):
            for L in exact_handset:
                probs, _ = _forward_chunks(heads[L], bt, chunk, log_exact)
                row(f"hand-set heads L={L}, exact weights", probs)
            continue
        probs, wl = _forward_chunks(heads["trained"], bt, chunk)
        row("multi-head L=8 trained, own readout", probs)
        assert wl is not None
        put("sel_acc", "multi-head L=8 trained, own readout", n, (wl.argmax(-1) == h0n) * 1.0)
        put("sel_tv_w", "multi-head L=8 trained, own readout", n, 0.5 * np.abs(wl - w).sum(-1))
        probs, _ = _forward_chunks(heads["trained"], bt, chunk, log_exact)
        row("multi-head L=8 trained heads, exact weights", probs)
        for L in depths:
            probs, _ = _forward_chunks(heads[L], bt, chunk, log_exact)
            row(f"hand-set heads L={L}, exact weights", probs)
    return doc


def selector_accuracy(task, selector, n_eval, n_instances: int, seed: int, model=None) -> dict:
    """Top-component accuracy of ``selector`` and of ``p(h | D)`` (Bayes) on ``n_instances``
    prior draws per n' (``sample_with_component``), and ``E TV(w_selector, p(h | D))``; with
    ``model`` (a :class:`~pfntheory.nn.multihead_model.MixturePFN` of ``task``) also its own
    readout's accuracy (``"model_acc"``, ``"model_tv_w"``).

    Returns
    -------
    dict: ``{n: {"acc", "acc_se", "bayes", "bayes_se", "tv_w", "tv_w_se", ...}}`` (binomial SEs).
    """
    import torch

    from pfntheory.nn.selector import sample_with_component

    out = {}
    for n in int_tuple(n_eval, "n_eval"):
        g = torch.Generator().manual_seed(seed_int(seed, "seed") * 100_003 + n)
        bt, h0 = sample_with_component(task, positive_int(n_instances, "n_instances"), n, g)
        assert bt.weights is not None
        w = bt.weights.numpy()
        with torch.no_grad():
            ws = selector(selector.features(bt.X, bt.Y)).exp().numpy()
        a = (ws.argmax(-1) == h0.numpy()) * 1.0
        b = (w.argmax(-1) == h0.numpy()) * 1.0
        tw = 0.5 * np.abs(ws - w).sum(-1)
        out[n] = _binomial("model_acc", None) if model is None else {}
        if model is not None:
            with torch.no_grad():
                wm = model(bt.X.to(torch.float64), bt.Y, bt.xq).weights.numpy()
            out[n] = {
                **_binomial("model_acc", (wm.argmax(-1) == h0.numpy()) * 1.0),
                "model_tv_w": mean_se(0.5 * np.abs(wm - w).sum(-1))[0],
            }
        out[n] |= {
            "n_instances": len(a),
            "acc": float(a.mean()),
            "acc_se": float(np.sqrt(a.mean() * (1 - a.mean()) / len(a))),
            "bayes": float(b.mean()),
            "bayes_se": float(np.sqrt(b.mean() * (1 - b.mean()) / len(b))),
            "tv_w": mean_se(tw)[0],
            "tv_w_se": mean_se(tw)[1],
        }
    return out


def _binomial(key: str, x) -> dict:
    """``{key: mean, key_se: binomial SE}`` of 0/1 outcomes ``x`` (empty for None)."""
    if x is None:
        return {}
    p = float(np.mean(x))
    return {key: p, key + "_se": float(np.sqrt(p * (1 - p) / len(x)))}


def paired_tv(cmp: Comparison, n_eval=(256, 512, 1024), n_instances: int = 256, seed: int = 4242):
    """Per-instance TV to the exact mixture PPD of every model of the comparison (and of the
    multi-head construction at its initialisation: the hand-set weights with the fitted
    log-determinant readout), on the same ``n_instances`` prior draws per n'; with the multi-head
    model's learned mixture weights against the exact posterior weights.

    Returns a JSON-able dict: ``{"n_eval", "n_instances", "seed", "runs": {name: run dir},
    "tv": {name: {n': [per-instance TV]}}, "weights": {n': {"tv_w": [per-instance TV(w, w')],
    "mean_exact": [H], "mean_learned": [H]}}}``.
    """
    import torch

    from pfntheory.maths.discretize import bin_edges
    from pfntheory.nn.priors import sample_batch
    from pfntheory.nn.train import build_model, load_trained

    n_eval = int_tuple(n_eval, "n_eval")
    n_instances = positive_int(n_instances, "n_instances", minimum=2)
    seed = seed_int(seed, "seed")
    loaded = {}
    for name, r in models(cmp).items():
        model, cfg, met = load_trained(r.run_dir)
        loaded[name] = (model.double(), cfg, tuple(met["interval"]))
    if cmp.multi is not None:
        _, cfg, interval = loaded["multi-head L=8"]
        loaded["multi-head construction (init)"] = (
            build_model(cfg, interval, "cpu").double().eval(),
            cfg,
            interval,
        )
    doc: dict = {
        "n_eval": list(n_eval),
        "n_instances": n_instances,
        "seed": seed,
        "runs": {k: r.run_dir.name for k, r in models(cmp).items()},
        "tv": {k: {} for k in loaded},
        "weights": {},
    }
    if not loaded:
        return doc
    task = next(iter(loaded.values()))[1].task
    interval = next(iter(loaded.values()))[2]
    for n in n_eval:
        g = torch.Generator().manual_seed(seed * 100_003 + n)
        bt = sample_batch(task, n_instances, n, g, dtype=torch.float64, interval=interval)
        assert bt.weights is not None and bt.mu_h is not None and bt.tau_h is not None
        w, mh_, th = bt.weights.numpy(), bt.mu_h.numpy(), bt.tau_h.numpy()
        for name, (model, cfg, iv) in loaded.items():
            edges = bin_edges(iv[0], iv[1], cfg.model.C)
            with torch.no_grad():
                out = model(bt.X, bt.Y, bt.xq)
            probs = torch.softmax(out.logits, -1).numpy()
            tv = M.tv_mixture_histogram(w, mh_, th, edges, probs, edges[0], edges[-1])
            doc["tv"][name][str(n)] = [float(f"{v:.6g}") for v in tv]
            if name == "multi-head L=8":
                wl = out.weights.numpy()
                doc["weights"][str(n)] = {
                    "tv_w": [float(f"{v:.6g}") for v in 0.5 * np.abs(wl - w).sum(-1)],
                    "mean_exact": w.mean(0).tolist(),
                    "mean_learned": wl.mean(0).tolist(),
                    "top_agree": float(np.mean(wl.argmax(-1) == w.argmax(-1))),
                }
    return doc


def cached_paired_tv(cmp: Comparison, **kw) -> dict | None:
    """:func:`paired_tv` read from (:func:`~pfntheory.claims.multihead_trained.load_paired_tv`) or
    computed into ``<root>/supp_tab_hier_multihead/`` :data:`PAIRED_FILE`; recomputed when its run
    directories differ from the comparison's. None while the multi-head run is unfinished."""
    if cmp.multi is None:
        return None
    doc = load_paired_tv(cmp)
    if doc is not None:
        return doc
    doc = paired_tv(cmp, **kw)
    runfiles.save_json(cmp.multi.run_dir.parent / PAIRED_FILE, doc)
    return doc


def confirm_cell(
    out_dir,
    singles: dict,
    multi,
    selector,
    *,
    n: int = 1024,
    n_batches: int = 16,
    batch_size: int = 32,
    seed0: int = 5151,
    depth: int = 32,
    exact: bool = True,
    deadline: float | None = None,
) -> list[Path]:
    """Score ``n_batches`` batches of ``batch_size`` fresh draws at n' = ``n``
    (:mod:`pfntheory.claims.multihead_cells`'s docstring).

    Parameters
    ----------
    out_dir : path
        Batches go to :func:`~pfntheory.claims.multihead_cells.batch_path`; a batch already there
        is kept (resume).
    singles, multi
        As :func:`ceiling` (single-head runs by name; the
        multi-head run whose spec gives the hand-set heads).
    selector : StatSelector
        Scored on the hand-set heads of depth ``depth`` (row ``"statistics selector, heads
        <depth>"``).
    exact : bool
        Also the hand-set heads with the exact weights (the ceiling on these draws).
    deadline : float, optional
        ``time.time()`` after which no new batch starts (the finished ones are kept).

    Returns
    -------
    list of Path: the batches present after the call, in seed order.
    """
    import torch

    n, n_batches = positive_int(n, "n", minimum=2), positive_int(n_batches, "n_batches")
    batch_size, seed0 = positive_int(batch_size, "batch_size", minimum=2), seed_int(seed0, "seed0")
    depth = positive_int(depth, "depth")
    expect = {
        "n_eval": [n],
        "n_instances": batch_size,
        "multi_run": Path(str(multi)).name,
        "single_runs": {str(k): Path(str(v)).name for k, v in singles.items()},
        "dtype": "float32",
        "rows": [f"statistics selector, heads {depth}", *map(str, singles)]
        + ([f"hand-set heads L={depth}, exact weights"] if exact else []),
        "selector_sha256": selector_digest(selector),
    }
    out = []
    for b in range(n_batches):
        path = batch_path(out_dir, n, seed0 + b)
        if path.is_file():
            check_batch(runfiles.load_json(path), path, seed=seed0 + b, **expect)
        else:
            if deadline is not None and time.time() > deadline:
                break
            c0, w0 = time.process_time(), time.perf_counter()
            doc = ceiling(
                singles,
                multi,
                depths=(depth,),
                selectors={"statistics selector": ((depth,), selector)},
                exact_rows=False,
                exact_handset=(depth,) if exact else (),
                n_eval=(n,),
                n_instances=batch_size,
                seed=seed0 + b,
                dtype=torch.float32,
            )
            doc["selector_sha256"] = expect["selector_sha256"]
            doc["cpu_s"] = time.process_time() - c0
            doc["wall_s"] = time.perf_counter() - w0
            doc["threads"] = torch.get_num_threads()
            path.parent.mkdir(parents=True, exist_ok=True)
            runfiles.save_json(path, doc)
            print(f"n'={n} seed {seed0 + b}: {doc['cpu_s']:.0f} s CPU", flush=True)
        out.append(path)
    return out


def selector_digest(selector) -> str:
    """SHA-256 of a selector's parameters and buffers (names, dtypes, shapes and values): the
    identity of the weights a batch was scored with."""
    import hashlib

    h = hashlib.sha256()
    for k, v in sorted(selector.state_dict().items()):
        t = v.detach().cpu().contiguous()
        h.update(f"{k}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def _load_selector(path):
    """The committed statistics selector (the table's bank, 9 components, 32 hidden) from
    ``path``, in eval mode."""
    from pfntheory.nn.selector import BANK, StatSelector

    sel = StatSelector(BANK, 9, 32)
    sel.load_state_dict(runfiles.load_torch(path))
    return sel.eval()


def run_confirmation(
    root=None, *, n: int = 1024, n_batches: int = 16, batch_size: int = 32, deadline=None
) -> dict:
    """The command of the committed cell: :func:`confirm_cell` with the committed confirmation's
    runs and selector (``verdict-cpu.json``, ``selector-table.pt`` of
    :data:`~pfntheory.claims.multihead_select.FOLDER`), then the batches joined into
    :data:`CELL_FILE` (written atomically). Run it on one thread (``torch.set_num_threads(1)``)."""
    from pfntheory.experiments.state import default_root

    base = Path(default_root() if root is None else root)
    verdict = runfiles.load_json(base / msel.FOLDER / msel.VERDICT_FILE)
    sel = _load_selector(base / msel.FOLDER / "selector-table.pt")
    out_dir = base / FOLDER
    paths = confirm_cell(
        out_dir,
        verdict["single_runs"],
        verdict["multi_run"],
        sel,
        n=n,
        n_batches=n_batches,
        batch_size=batch_size,
        seed0=int(verdict["seed"]),
        deadline=deadline,
    )
    cell = concat_batches(runfiles.load_json(p) for p in paths)
    # the text of the committed cells, kept byte for byte (the runner then lived in claims/)
    cell["command"] = (
        f"run_confirmation(n={n}, n_batches={n_batches}, batch_size={batch_size}) on one thread "
        "at nice 5 (pfntheory.claims.multihead_cells)"
    )
    runfiles.save_json(out_dir / CELL_FILE.format(n=n), cell)
    return cell


def curve_values(reference_run, multi, selector, *, depth: int = 32) -> dict:
    """E[TV] (mean, SE) of the hand-set heads of ``depth`` with ``selector``'s weights (the
    confirmation's candidate, a fixed model: it does not train) on the held-out instances of the
    learning curve of ``reference_run`` (a single head's run directory: the same instances its
    curve is evaluated on, :func:`pfntheory.nn.curve._heldout_set`), per curve n'. With them the
    check "the candidate's E[TV] below the reference's" can be replayed at every step of the last
    log-half of the reference's curve
    (:func:`~pfntheory.claims.multihead_cells.replay_against_curve`). The heads run in float64
    (in float32 a far query's attention normaliser at n' = 64 can underflow)."""
    import torch

    from pfntheory.maths.discretize import bin_edges
    from pfntheory.nn.curve import _heldout_set, _tv_per_instance
    from pfntheory.nn.state import load_trained, read_config

    spec = read_config(reference_run)
    interval = tuple(runfiles.load_json(Path(reference_run) / runfiles.METRICS)["interval"])
    _, mcfg, mmet = load_trained(multi)
    mint = tuple(mmet["interval"])
    heads = _handset(mcfg, mint, (positive_int(depth, "depth"),), torch.float64, None)[depth]
    edges = bin_edges(mint[0], mint[1], mcfg.model.C)
    out = {}
    for n, batches in _heldout_set(spec, interval):
        tv = []
        for bt in batches:
            with torch.no_grad():
                lw = selector(selector.features(bt.X.double(), bt.Y.double()))
                probs, _ = _forward_chunks(heads, _cast_inputs(bt, torch.float64), 32, lw)
            tv.append(_tv_per_instance(bt, edges, probs))
        m, se = mean_se(np.concatenate(tv))
        out[str(n)] = [m, se]
    return {"reference_run": str(reference_run), "multi_run": str(multi), "depth": depth,
            "tv": out}  # fmt: skip


def _cast_inputs(bt, dtype):
    """``bt`` with its model inputs ``X, Y, xq`` cast to ``dtype`` (the oracle fields kept)."""
    return dataclasses.replace(bt, X=bt.X.to(dtype), Y=bt.Y.to(dtype), xq=bt.xq.to(dtype))


def _as_given(path: Path) -> str:
    """``path`` relative to the working directory when inside it (what the committed documents
    record, e.g. ``reports/runs/...``), else absolute."""
    p = Path(path).resolve()
    try:
        return p.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(p)


def run_reference(root=None, *, n_eval=None, deadline: float | None = None) -> dict:
    """The doubled single L = 32 (:data:`~pfntheory.claims.multihead_cells.REFERENCE`: the
    ``long`` run of :func:`~pfntheory.claims.multihead_cells.reference_runs`, weight-averaged at
    2S steps) scored on the confirmation's draws: :func:`confirm_cell` at each n' of ``n_eval``
    (default all of :data:`~pfntheory.claims.multihead_cells.REFERENCE_BATCHES`, in that order)
    with the committed confirmation's multi-head run and selector (``verdict-cpu.json``,
    ``selector-table.pt``), the reference as its one single head, and its batches' sizes and
    seeds, so that every instance is one of the committed confirmation's (its row
    ``"statistics selector, heads 32"`` is scored again, the pairing check of
    :func:`~pfntheory.claims.multihead_cells.join_reference`). Batches go to ``<root>/``
    :data:`~pfntheory.claims.multihead_cells.FOLDER` ``/`` :data:`~pfntheory.claims.
    multihead_cells.REFERENCE_FOLDER` ``/batches/``, each written atomically as it finishes; a
    batch on disk is kept after :func:`~pfntheory.claims.multihead_cells.check_batch` (resume).
    An n' whose batches are all done is joined into its ``cell-n<n'>.json`` (atomic); a cell
    already there must equal the join (a committed file is never overwritten). ``deadline``:
    ``time.time()`` after which no new batch starts. Run it on one thread, in the repository
    root (the documents record the runs' paths relative to it).

    Returns ``{n': cell path or None while incomplete}``."""
    from pfntheory.claims import multihead_cells as mcells
    from pfntheory.experiments.state import default_root

    base = Path(default_root() if root is None else root)
    verdict = runfiles.load_json(base / msel.FOLDER / msel.VERDICT_FILE)
    pair = mcells.reference_runs(base)
    if pair is None:
        raise ValueError(
            f"{base / mcells.REFERENCE_EXPERIMENT}: no L = {mcells.REFERENCE_L} run with its "
            "half-budget partner (run `pfntheory sweep supp_tab_hier_budget --scale cpu`)"
        )
    sel = _load_selector(base / msel.FOLDER / "selector-table.pt")
    out_dir = base / FOLDER / mcells.REFERENCE_FOLDER
    singles = {mcells.REFERENCE: _as_given(pair[1].run_dir)}
    ns = sorted(mcells.REFERENCE_BATCHES) if n_eval is None else int_tuple(n_eval, "n_eval")
    done: dict = {}
    for n in ns:
        if n not in mcells.REFERENCE_BATCHES:
            raise ValueError(f"n_eval holds n'={n}, not one of {sorted(mcells.REFERENCE_BATCHES)}")
        size, count = mcells.REFERENCE_BATCHES[n]
        paths = confirm_cell(
            out_dir,
            singles,
            verdict["multi_run"],
            sel,
            n=n,
            n_batches=count,
            batch_size=size,
            seed0=int(verdict["seed"]),
            depth=32,
            exact=False,
            deadline=deadline,
        )
        if len(paths) < count:
            done[n] = None
            continue
        cell = concat_batches(runfiles.load_json(p) for p in paths)
        cell["command"] = (
            f"run_reference(n_eval=({n},)) on one thread: confirm_cell(n={n}, n_batches={count}, "
            f"batch_size={size}, seed0={verdict['seed']}, depth=32, exact=False) with the "
            "committed confirmation's multi-head run and selector (pfntheory.pipelines."
            "multihead_run)"
        )
        path = out_dir / CELL_FILE.format(n=n)
        if path.is_file():
            if runfiles.load_json(path) != cell:
                raise ValueError(f"{path} differs from the join of its batches: remove it")
        else:
            runfiles.save_json(path, cell)
        done[n] = path
    return done
