"""The runner of page 08's fair multi-head comparison (issue 47, item 5; beyond the paper): the
selector and the Chebyshev ranges from the single heads' pretraining range only, a hand-set
single-head baseline, on the committed confirmation's draws (what and why:
:mod:`pfntheory.claims.multihead_fair`, which reads and joins what this writes), and page 08's rows
of it (:func:`fair_rows`).

* :func:`train_fair_selector`, :func:`fair_ranges`: the selector and the ranges;
* :func:`one_head`: the hand-set construction with one head, copied out of the multi-head model;
* :func:`score_batch`: one batch of draws scored (multi-head and one-head rows per depth);
* :func:`run_fair`: all of it, resumable (every batch written atomically as it finishes).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from pfntheory.base._checks import (
    float_tuple,
    instance_of,
    int_tuple,
    pair,
    positive_int,
    seed_int,
)
from pfntheory.claims import multihead_fair as mf
from pfntheory.claims.multihead_select import COVERAGE_LEVELS
from pfntheory.infra import runs as runfiles
from pfntheory.maths import metrics as M

from .multihead_run import _forward_chunks, _handset, _load_selector, selector_digest

__all__ = [
    "SELECTOR_PT",
    "SELECTOR_JSON",
    "RANGES_JSON",
    "train_fair_selector",
    "fair_ranges",
    "head_index",
    "one_head",
    "score_batch",
    "run_fair",
    "fair_rows",
]

SELECTOR_PT = "selector-pretrain-range.pt"
SELECTOR_JSON = "selector-pretrain-range.json"
RANGES_JSON = f"ranges-n{mf.RANGE_N}.json"


def train_fair_selector(
    task, n_range=mf.PRETRAIN_RANGE, *, n_contexts: int = 2048, epochs: int = 150, seed: int = 0
):
    """:func:`pfntheory.nn.selector.train_selector` with the committed selector's settings (2048
    contexts, 150 epochs, seed 0) but contexts of n in ``n_range`` only; returns
    ``(selector, log)``."""
    from pfntheory.nn.selector import train_selector

    lo, hi = pair(n_range, "n_range")
    return train_selector(
        task,
        n_contexts=positive_int(n_contexts, "n_contexts", minimum=2),
        n_range=(positive_int(lo, "n_range"), positive_int(hi, "n_range")),
        epochs=positive_int(epochs, "epochs"),
        seed=seed_int(seed, "seed"),
    )


def fair_ranges(task, n: int = mf.RANGE_N, n_designs: int = 4, seed: int = 0) -> list:
    """:func:`pfntheory.nn.chebyshev_heads.prior_ranges` at ``n`` (default the top of the
    pretraining range), with the committed ranges' 4 designs and seed."""
    from pfntheory.nn.chebyshev_heads import prior_ranges

    return prior_ranges(task, positive_int(n, "n", minimum=2), n_designs, seed)


def head_index(task, head=mf.BASELINE_HEAD) -> int:
    """The index of component ``head`` = (lengthscale, noise std) in
    :func:`~pfntheory.infra.config.prior_components` order of ``task`` (lengthscale outer, noise
    std inner); a ValueError naming ``head`` when the grid lacks it."""
    from pfntheory.infra.config import TaskSpec

    instance_of(TaskSpec)(task, "task")
    vals = float_tuple(head, "head", positive=True)
    if len(vals) != 2:
        raise ValueError(f"head must be a (lengthscale, noise std) pair, got {head!r}")
    ell, s = vals
    grid = [(a, b) for a in task.hier_lengthscales for b in task.hier_noise_stds]
    if (ell, s) not in grid:
        raise ValueError(f"head {head!r} is not a component of the task's grid {grid}")
    return grid.index((ell, s))


def one_head(model, task, h: int):
    """The hand-set construction with ONE head: a :class:`~pfntheory.nn.multihead_model.
    MixturePFN` of the single component ``h`` of ``task`` (``model``'s prior), holding head
    ``h``'s weights copied from ``model``: its lengthscale group's ``K = Q`` scales, ``amp``, the
    per-layer ``V`` and ``S`` (so Chebyshev steps written into ``model`` carry over), ``W`` and
    the psi scales. With one component its weight is 1, so it outputs head ``h``'s bar
    distribution: ``model`` with all the weight on ``h`` (``tests/test_multihead_fair.py`` checks
    it)."""
    import torch

    from pfntheory.infra.config import TaskSpec
    from pfntheory.nn.multihead_model import MixturePFN

    instance_of(MixturePFN)(model, "model")
    instance_of(TaskSpec)(task, "task")
    if task.n_components != model.H:
        raise ValueError(f"task has {task.n_components} components, model {model.H} heads")
    h = positive_int(h, "h", minimum=0, maximum=model.H - 1)
    grid = [(a, b) for a in task.hier_lengthscales for b in task.hier_noise_stds]
    ell, s = grid[h]
    t1 = dataclasses.replace(task, hier_lengthscales=(ell,), hier_noise_stds=(s,))
    out = MixturePFN(model.config, model.edges, t1).to(model.V.dtype)
    g = next(i for i, hs in enumerate(model.groups) if h in hs)
    with torch.no_grad():
        out.scale.copy_(model.scale[g : g + 1])
        for name in ("amp", "V", "S", "W", "psi_scale", "q_scale", "ld_coef"):
            getattr(out, name).copy_(getattr(model, name)[h : h + 1])
    return out.eval()


def score_batch(
    multi,
    selector,
    ranges,
    *,
    n: int,
    batch_size: int,
    seed: int,
    committed_selector=None,
    chunk: int = 32,
) -> dict:
    """One batch of the fair variant: ``batch_size`` draws at n' = ``n`` with generator seed
    ``seed * 100_003 + n`` (the committed confirmation's, float32 as there), and per instance
    the TV to the exact mixture PPD and the 50/90/95% coverage indicators of every row of
    :func:`~pfntheory.claims.multihead_fair.row_names`: the hand-set heads of ``multi``'s spec
    (depth-matched Chebyshev steps on ``ranges`` at each depth of :data:`~pfntheory.claims.
    multihead_fair.DEPTHS`, constant steps at :data:`~pfntheory.claims.multihead_fair.
    CONSTANT_DEPTHS`) with ``selector``'s weights, and :func:`one_head` of the baseline component
    with the same steps. With ``committed_selector``, its ``TV(w, p(h | D))`` too (the pairing
    check of :func:`~pfntheory.claims.multihead_fair.fair_confirmation`)."""
    import torch

    from pfntheory.maths.discretize import bin_edges
    from pfntheory.nn.chebyshev_heads import chebyshev_hook
    from pfntheory.nn.selector import sample_with_component
    from pfntheory.nn.state import load_trained

    n, batch_size = positive_int(n, "n", minimum=2), positive_int(batch_size, "batch_size")
    seed = seed_int(seed, "seed")
    c0, w0 = time.process_time(), time.perf_counter()
    dtype = torch.float32
    _, mcfg, mmet = load_trained(multi)
    interval = tuple(mmet["interval"])
    task = mcfg.task
    hb = head_index(task)
    hook = chebyshev_hook(ranges, mf.EPS)
    names = mf.row_names()
    models = {}
    for L in mf.DEPTHS:
        models[f"chebyshev {L}"] = _handset(mcfg, interval, (L,), dtype, hook)[L]
    for L in mf.CONSTANT_DEPTHS:
        models[f"constant {L}"] = _handset(mcfg, interval, (L,), dtype, None)[L]
    edges = bin_edges(interval[0], interval[1], mcfg.model.C)
    g = torch.Generator().manual_seed(seed * 100_003 + n)
    bt, h0 = sample_with_component(task, batch_size, n, g, dtype=dtype, interval=interval)
    assert bt.weights is not None and bt.mu_h is not None and bt.tau_h is not None
    w, mu_h, tau_h = bt.weights.numpy(), bt.mu_h.numpy(), bt.tau_h.numpy()
    y = bt.y.double().numpy()
    doc: dict = {
        "n_eval": [n],
        "n_instances": batch_size,
        "seed": seed,
        "dtype": "float32",
        "multi_run": str(multi),
        "single_runs": {},
        "baseline_head": {
            "index": hb,
            "lengthscale": mf.BASELINE_HEAD[0],
            "noise_std": mf.BASELINE_HEAD[1],
        },
        "bayes_acc": {},
        "tv": {},
        "sel_acc": {},
        "sel_tv_w": {},
        "coverage": {str(lv): {} for lv in COVERAGE_LEVELS},
        "selector_sha256": selector_digest(selector),
    }

    def put(key, name, vals):
        doc[key].setdefault(name, {})[str(n)] = [float(f"{v:.6g}") for v in vals]

    def row(name, probs):
        put("tv", name, M.tv_mixture_histogram(w, mu_h, tau_h, edges, probs, edges[0], edges[-1]))
        for lv in COVERAGE_LEVELS:
            lo, hi = M.central_interval(edges, probs, lv / 100)
            doc["coverage"][str(lv)].setdefault(name, {})[str(n)] = [
                int(v) for v in (lo <= y) & (y <= hi)
            ]

    put("bayes_acc", "p(h|D)", (w.argmax(-1) == h0.numpy()).astype(float))
    with torch.no_grad():
        feats = selector.features(bt.X.double(), bt.Y.double())
        lw = selector(feats)
        if committed_selector is not None:
            wc = committed_selector(feats).exp().numpy()
            put("sel_tv_w", "statistics selector (committed)", 0.5 * np.abs(wc - w).sum(-1))
    ws = lw.exp().numpy()
    put("sel_acc", mf.SELECTOR, (ws.argmax(-1) == h0.numpy()) * 1.0)
    put("sel_tv_w", mf.SELECTOR, 0.5 * np.abs(ws - w).sum(-1))
    for tag, (multi_name, one_name) in names.items():
        row(multi_name, _forward_chunks(models[tag], bt, chunk, lw)[0])
        row(one_name, _forward_chunks(one_head(models[tag], task, hb), bt, chunk)[0])
    doc["cpu_s"] = time.process_time() - c0
    doc["wall_s"] = time.perf_counter() - w0
    doc["threads"] = torch.get_num_threads()
    return doc


def run_fair(root=None, *, n_eval=None, deadline: float | None = None) -> dict:
    """The fair variant end to end, under ``<root>/`` :data:`~pfntheory.claims.multihead_fair.
    FOLDER` (default root: the committed runs): the selector (:data:`SELECTOR_PT`, its log
    :data:`SELECTOR_JSON`) and the ranges (:data:`RANGES_JSON`), each made once and then read,
    then every batch of :data:`~pfntheory.claims.multihead_fair.BATCHES` at the n' of ``n_eval``
    (default all), a batch already on disk kept (resume; it must carry this selector's digest).
    ``deadline``: ``time.time()`` after which no new batch starts. Run it on one thread.
    Returns ``{n': [batch paths present]}``."""
    from pfntheory.claims import multihead_select as msel
    from pfntheory.experiments.state import default_root
    from pfntheory.nn.state import load_trained

    base = Path(default_root() if root is None else root)
    out = base / mf.FOLDER
    verdict = runfiles.load_json(base / msel.FOLDER / msel.VERDICT_FILE)
    multi = verdict["multi_run"]
    task = load_trained(multi)[1].task
    if not (out / SELECTOR_PT).is_file():
        c0 = time.process_time()
        sel, log = train_fair_selector(task)
        runfiles.save_torch(out / SELECTOR_PT, sel.state_dict())
        runfiles.save_json(
            out / SELECTOR_JSON,
            {
                "selector_log": log,
                "cpu_s": time.process_time() - c0,
                "command": f"train_fair_selector(TaskSpec('hier_rbf', d=16), n_range="
                f"{mf.PRETRAIN_RANGE}) on one thread (pfntheory.pipelines.multihead_fair)",
                "sha256": selector_digest(sel),
            },
        )
    sel = _load_selector(out / SELECTOR_PT)
    committed = _load_selector(base / msel.FOLDER / "selector-table.pt")
    if not (out / RANGES_JSON).is_file():
        c0 = time.process_time()
        rr = fair_ranges(task)
        runfiles.save_json(
            out / RANGES_JSON,
            {
                "n": mf.RANGE_N,
                "n_designs": 4,
                "seed": 0,
                "ranges": rr,
                "cpu_s": time.process_time() - c0,
                "command": f"prior_ranges(TaskSpec('hier_rbf', d=16), {mf.RANGE_N}, n_designs=4, "
                "seed=0)",
            },
        )
    ranges = runfiles.load_json(out / RANGES_JSON)["ranges"]
    digest = selector_digest(sel)
    done: dict = {}
    for n in int_tuple(sorted(mf.BATCHES) if n_eval is None else n_eval, "n_eval"):
        if n not in mf.BATCHES:
            raise ValueError(f"n_eval holds n'={n}, not one of {sorted(mf.BATCHES)}")
        size, count = mf.BATCHES[n]
        done[n] = []
        for b in range(count):
            path = mf.batch_file(base, n, mf.SEED0 + b)
            if path.is_file():
                if runfiles.load_json(path).get("selector_sha256") != digest:
                    raise ValueError(f"{path} was scored with another selector: remove it")
            else:
                if deadline is not None and time.time() > deadline:
                    break
                doc = score_batch(
                    multi,
                    sel,
                    ranges,
                    n=n,
                    batch_size=size,
                    seed=mf.SEED0 + b,
                    committed_selector=committed,
                )
                doc["command"] = (
                    f"score_batch(<committed multi-head run>, selector-pretrain-range.pt, "
                    f"{RANGES_JSON}, n={n}, batch_size={size}, seed={mf.SEED0 + b}) on one "
                    "thread (pfntheory.pipelines.multihead_fair)"
                )
                runfiles.save_json(path, doc)
                print(f"n'={n} seed {mf.SEED0 + b}: {doc['cpu_s']:.0f} s CPU", flush=True)
            done[n].append(path)
    return done


def fair_rows(verdict: dict, cmp, root=None) -> list:
    """Page 08's rows of the fair variant (:class:`~pfntheory.report.trained_rows.RowSpec` s),
    every one through the one gate (:func:`pfntheory.claims.multihead_select.tv_claim` ->
    :func:`~pfntheory.claims.gating.decide`), each gated on exactly the runs it reads:

    * the fair multi-head models against the trained single heads (Chebyshev L = 8 and 16 against
      the equal-time L = 8, Chebyshev L = 32 and constant-step L = 32 against the single L = 32 at
      2S steps, weight-averaged, :func:`~pfntheory.report.trained_rows.reference_row`,
      constant-step L = 32 against the equal-time L = 8), gated on that single head's run (the
      reference: by its budget doubling);
    * each fair multi-head model against the one-head baseline of the same depth and steps
      (reads no trained run: decided by its power, with the minimal effect of interest);
    * the coverage of the fair Chebyshev L = 8 model.

    One pending row while the fair batches are incomplete (their counts are fixed:
    :data:`~pfntheory.claims.multihead_fair.FIXED_INSTANCES`)."""
    from pfntheory.claims import multihead_select as msel
    from pfntheory.claims import multihead_trained as tmh
    from pfntheory.report.trained_rows import MULTIHEAD_VARIANT, RowSpec

    fdoc = mf.fair_confirmation(verdict, root)
    variant = MULTIHEAD_VARIANT + ", fair (selector and ranges from n in [64, 256])"
    if fdoc is None:
        return [
            RowSpec(
                None,
                dict(
                    label=msel.LABEL,
                    statement="fair multi-head comparison (selector and Chebyshev ranges from "
                    "the pretraining range; one hand-set head beside it)",
                    missing=f"the fair batches of reports/runs/{mf.FOLDER} are incomplete "
                    f"(fixed: {mf.FIXED_INSTANCES})",
                    variant=variant,
                ),
            )
        ]
    from pfntheory.claims import multihead_cells as mcells
    from pfntheory.report.trained_rows import reference_row

    names = mf.row_names()
    ns = "/".join(map(str, fdoc["n_eval"]))
    eq, l32 = "single L=8, 1600 steps (equal time)", mcells.REFERENCE
    pairs = [
        ("chebyshev 8", eq),
        ("chebyshev 16", eq),
        ("chebyshev 32", l32),
        ("constant 32", l32),
        ("constant 32", eq),
    ]
    out = []
    for tag, ref in pairs:
        if ref == l32:  # the single L = 32 at 2S steps, weight-averaged, gated by its doubling
            out.append(reference_row(fdoc, names[tag][0], f"{variant}: {names[tag][0]} vs {ref}, "
                                     f"n' = {ns}"))  # fmt: skip
            continue
        read = msel.runs_read([ref], tmh.models(cmp))
        r = msel.tv_claim(fdoc, names[tag][0], ref, statuses=msel.statuses_of_runs(read))
        out.append(
            RowSpec(
                r,
                dict(
                    variant=f"{variant}: {names[tag][0]} vs {ref}, n' = {ns}",
                    measured=r.statement,
                    runs=[run.run_dir for run in read.values()],
                ),
            )
        )
    for multi_name, one_name in names.values():
        r = msel.tv_claim(fdoc, multi_name, one_name, statuses={})
        out.append(
            RowSpec(
                r,
                dict(
                    variant=f"{variant}: {multi_name} vs {one_name}, n' = {ns}",
                    measured=r.statement,
                ),
            )
        )
    r = msel.coverage_claim(fdoc, names["chebyshev 8"][0], levels=COVERAGE_LEVELS)
    out.append(
        RowSpec(
            r, dict(variant=f"{variant}: {names['chebyshev 8'][0]}, coverage", measured=r.statement)
        )
    )
    return out
