"""The selection ceiling and the selectors of the multi-head model (issue 38, beyond the paper).

The runners that score the models and write the documents are
:mod:`pfntheory.pipelines.multihead_run`'s; this module checks, merges and decides, and writes
nothing.

* :func:`~pfntheory.pipelines.multihead_run.ceiling`: on the same prior draws as
  :func:`~pfntheory.pipelines.multihead_run.paired_tv` (seed and instance count: the draws of
  ``paired-tv-cpu.json`` are reproduced), per n' of supp-tab:hierarchical-gp: the Bayes
  top-component accuracy of ``p(h | D)`` (how often its largest weight is the component the prior
  drew), and the per-instance TV to the exact mixture PPD of (a) the single heads of supp_tab_hier
  (L = 8, 16, 32), (b) the trained multi-head model's heads with its own readout and with the exact
  weights plugged in, (c) the hand-set heads of the construction at L = 8, 16, 32 (the trained
  model's initialisation at that depth) with the exact weights, and (d) any selector: heads with the
  selector's weights. (b)-(c) with exact weights bound what any selector can gain with those heads.
* :func:`~pfntheory.pipelines.multihead_run.selector_accuracy`: a selector's top-component
  accuracy and ``TV(w, p(h | D))`` against the Bayes accuracy, on contexts with their exact weights
  (also the positive control's check).
* The claims (:func:`ceiling_claim`, :func:`tv_claim`, :func:`coverage_claim`,
  :func:`control_claim`) decide no verdict themselves: each goes through the one gate,
  :func:`pfntheory.claims.gating.decide`, with the statuses of the trained runs it reads
  (:func:`runs_read`, :func:`statuses_of_runs`) and the power of its worst paired cell
  (docs/multihead.md, "Verdicts").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    choice,
    float_tuple,
    int_tuple,
    keys,
    mapping,
    positive_int,
    positive_scalar,
    probability,
    seed_int,
    sequence,
    text,
)
from pfntheory.base.stats import mean_se

from . import MINIMAL_EFFECT, ClaimResult, Power
from .gating import Z_MARGIN, decided

__all__ = [
    "summarise_ceiling",
    "load_select",
    "merge_ceilings",
    "check_document",
    "identity",
    "same_identity",
    "control_claim",
    "ceiling_claim",
    "tv_claim",
    "coverage_claim",
    "statuses_of_runs",
    "runs_read",
]

LABEL = "supp-tab:hierarchical-gp"
PAPER_NOTE = "beyond the paper (remark 'Extension to hierarchical GPs')"
NKEY = "n'"
#: Central-interval levels (percent) whose coverage
#: :func:`~pfntheory.pipelines.multihead_run.ceiling` records.
COVERAGE_LEVELS = (50, 90, 95)


def summarise_ceiling(doc: dict, reference: str) -> list[dict]:
    """Rows per (n', model): E[TV] with SE, and the paired fall ``TV_reference - TV_model`` with its
    SE (per-instance differences on the same draws); a model without that n' has no row there."""
    check_document(doc)
    if text(reference, "reference") not in doc["tv"]:
        raise ValueError(f"doc holds no rows of reference {reference!r}")
    rows = []
    for n in doc["n_eval"]:
        if str(n) not in doc["tv"][reference]:
            raise ValueError(f"reference {reference!r} has no instances at n'={n}")
        ref = np.asarray(doc["tv"][reference][str(n)])
        for name, v in doc["tv"].items():
            if str(n) not in v:  # a row scored at some n' only (e.g. a confirmation cell's)
                continue
            t = np.asarray(v[str(n)])
            m, se = mean_se(t)
            f, fse = mean_se(ref - t)
            rows.append({"n'": n, "model": name, "tv": m, "tv_se": se, "fall": f, "fall_se": fse})
    return rows


#: The folder of the selection results under the runs root (JSON documents of this module).
FOLDER = "supp_tab_hier_multihead_select"
CEILING_FILE = "ceiling-cpu.json"
CONTROL_FILE = "positive-control.json"
SELECTOR_FILE = "selector-table.json"


def load_select(root=None) -> dict:
    """The committed documents of :data:`FOLDER` that exist: ``{"ceiling", "control",
    "selector", "verdict"}`` (each a dict, or None while missing)."""
    from pathlib import Path

    from pfntheory.infra import runs as runfiles

    from ..experiments.state import default_root

    base = Path(default_root() if root is None else root) / FOLDER
    out = {}
    for key, name in (("ceiling", CEILING_FILE), ("control", CONTROL_FILE),
                      ("selector", SELECTOR_FILE), ("verdict", VERDICT_FILE)):  # fmt: skip
        p = base / name
        out[key] = runfiles.load_json(p) if p.is_file() else None
    return out


#: The per-instance tables of a :func:`~pfntheory.pipelines.multihead_run.ceiling` document
#: (``{row: {n': [one value per instance]}}``); ``coverage`` holds one such table per level.
ROW_KEYS = ("bayes_acc", "tv", "sel_acc", "sel_tv_w")


def _n_instances(doc: dict, n, name: str) -> int:
    ni = doc["n_instances"]
    if isinstance(ni, dict):
        if str(n) not in ni:
            raise ValueError(f"{name}['n_instances'] has no count for n'={n}")
        ni = ni[str(n)]
    return positive_int(ni, f"{name}['n_instances']")


def check_document(doc, name: str = "doc") -> dict:
    """``doc`` if it is a well-formed :func:`~pfntheory.pipelines.multihead_run.ceiling`-shaped
    document (a ceiling, a batch, a cell, a confirmation); otherwise a ValueError naming ``name``:
    ``n_eval`` distinct positive integers, ``n_instances`` a positive count (or one per n'), and
    every per-instance list of :data:`ROW_KEYS` and ``coverage`` at an n' of ``n_eval``, of
    ``n_instances`` finite numbers (so that the rows of one n' are paired on the same instances)."""
    keys("n_eval", "n_instances", "tv")(doc, name)
    n_eval = int_tuple(doc["n_eval"], f"{name}['n_eval']")
    if len(set(n_eval)) != len(n_eval):
        raise ValueError(f"{name}['n_eval'] repeats an n': {list(n_eval)}")
    sizes = {str(n): _n_instances(doc, n, name) for n in n_eval}
    tables = [(key, doc[key]) for key in ROW_KEYS if key in doc]
    cov = doc.get("coverage", {})
    if not isinstance(cov, dict):
        raise ArgumentTypeError(f"{name}['coverage'] must be a dict of levels")
    tables += [(f"coverage {lv}", t) for lv, t in cov.items()]
    for key, table in tables:
        if not isinstance(table, dict):
            raise ArgumentTypeError(f"{name}[{key!r}] must map rows to per-n' lists")
        for row, by_n in table.items():
            if not isinstance(by_n, dict):
                raise ArgumentTypeError(f"{name}[{key!r}][{row!r}] must map n' to lists")
            for n, vals in by_n.items():
                if n not in sizes:
                    raise ValueError(f"{name}[{key!r}][{row!r}] has n'={n}, not in n_eval")
                a = as_float_array(vals, f"{name}[{key!r}][{row!r}][{n!r}]", ndim=1)
                if a.size != sizes[n]:
                    raise ValueError(
                        f"{name}[{key!r}][{row!r}] holds {a.size} instances at n'={n}, "
                        f"n_instances {sizes[n]} (rows must be paired on the same instances)"
                    )
    return doc


def _run_name(path) -> str:
    """A run by its directory name (the spec and its config hash), wherever the root lies."""
    return Path(text(path, "run")).name


def identity(doc: dict, name: str = "doc") -> dict:
    """What a document's evidence was measured on: the draws' ``seed``, the ``dtype``, the
    multi-head run and the single-head runs, each run by its directory name (its spec and config
    hash; the root it was read under does not matter). Absent fields are None."""
    keys()(doc, name)
    singles = doc.get("single_runs")
    if singles is not None:
        m = mapping(singles, f"{name}['single_runs']", non_empty=False)
        singles = {str(k): _run_name(v) for k, v in m.items()}
    multi = doc.get("multi_run")
    seed = doc.get("seed")
    return {
        "seed": None if seed is None else seed_int(seed, f"{name}['seed']"),
        "dtype": doc.get("dtype"),
        "multi_run": None if multi is None else _run_name(multi),
        "single_runs": singles,
    }


#: The fields of a document's :func:`identity`.
_IDENTITY = ("seed", "dtype", "multi_run", "single_runs")


def same_identity(docs, fields=_IDENTITY, what="docs"):
    """Refuse ``docs`` whose :func:`identity` differs in one of ``fields`` (a field absent from a
    document is not compared): one merged document is labelled with one seed, dtype and runs, so
    evidence of other draws or other runs cannot be joined under it."""
    docs = sequence(docs, "docs", non_empty=False)
    fields = [choice(f, "fields", _IDENTITY) for f in sequence(fields, "fields")]
    ids = [identity(d, f"{what}[{i}]") for i, d in enumerate(docs)]
    for f in fields:
        seen = {repr(v[f]): (i, v[f]) for i, v in enumerate(ids) if v[f] is not None}
        if len(seen) > 1:
            (i, a), (j, b) = sorted(seen.values(), key=lambda t: t[0])[:2]
            raise ValueError(
                f"{what} mix {f}: {what}[{i}] has {a!r}, {what}[{j}] has {b!r} (evidence of "
                "other draws or runs cannot be merged under one label)"
            )
    return ids[0] if ids else {}


def merge_ceilings(docs) -> dict:
    """One :func:`~pfntheory.pipelines.multihead_run.ceiling` document from several (one per n',
    possibly with different instance counts): ``n_instances`` becomes a per-n' dict.

    Each n' is counted once: a document whose n' another already holds is refused (the rows would
    count its instances twice), and so are documents of other draws or runs (:func:`same_identity`:
    seed, dtype, multi-head and single-head runs), which one merged document could not label.
    Every document must be well-formed (:func:`check_document`)."""
    docs = list(sequence(docs, "docs"))
    for i, d in enumerate(docs):
        check_document(d, f"docs[{i}]")
    same_identity(docs)
    where: dict[int, int] = {}
    for i, d in enumerate(docs):
        for n in d["n_eval"]:
            if int(n) in where:
                raise ValueError(
                    f"docs[{where[int(n)]}] and docs[{i}] both hold n'={n}: its instances would "
                    "count twice (merge one document per n')"
                )
            where[int(n)] = i
    keys("seed", "multi_run", "single_runs")(docs[0], "docs[0]")
    out = {k: docs[0][k] for k in ("seed", "multi_run", "single_runs")}
    if docs[0].get("dtype") is not None:
        out["dtype"] = docs[0]["dtype"]
    out["n_eval"], out["n_instances"], out["cpu_s"] = [], {}, 0.0
    for d in docs:
        for n in d["n_eval"]:
            out["n_eval"].append(n)
            out["n_instances"][str(n)] = d["n_instances"]
        out["cpu_s"] += float(d.get("cpu_s", 0.0))
        for key in ("bayes_acc", "tv", "sel_acc", "sel_tv_w"):
            for name, v in d[key].items():
                out.setdefault(key, {}).setdefault(name, {}).update(v)
        for lv, by in d.get("coverage", {}).items():
            for name, v in by.items():
                out.setdefault("coverage", {}).setdefault(lv, {}).setdefault(name, {}).update(v)
    return out


def control_claim(doc: dict, level: float = 0.95, z: float = Z_MARGIN) -> ClaimResult:
    """The positive control: the selector's top component is the drawing one in at least
    ``level`` of the contexts at every n' (two components far apart). It reads no trained run (the
    selector trains a fixed number of epochs, no learning curve), so the gate
    (:func:`~pfntheory.claims.gating.decide`) decides it on its power alone: a shortfall whose
    interval ``acc -+ z SE`` (binomial) still reaches ``level`` is *undecided (underpowered)*.
    ``level`` in (0, 1), ``z > 0``; an empty ``accuracy`` is refused (no verdict on nothing)."""
    level, z = probability(level, "level"), positive_scalar(z, "z")
    acc = mapping(keys("accuracy", "task")(doc, "doc")["accuracy"], "doc['accuracy']")
    task = keys("hier_lengthscales", "hier_noise_stds")(doc["task"], "doc['task']")
    float_tuple(task["hier_lengthscales"], "doc['task']['hier_lengthscales']", positive=True)
    float_tuple(task["hier_noise_stds"], "doc['task']['hier_noise_stds']", positive=True)
    for n, a in acc.items():
        keys("acc", "acc_se", "n_instances")(a, f"doc['accuracy'][{n!r}]")
        probability(a["acc"], f"doc['accuracy'][{n!r}]['acc']", open_low=False, open_high=False)
        positive_scalar(a["acc_se"], f"doc['accuracy'][{n!r}]['acc_se']", allow_zero=True)
        positive_int(a["n_instances"], f"doc['accuracy'][{n!r}]['n_instances']")
    worst = min(acc, key=lambda n: acc[n]["acc"])
    a = acc[worst]
    holds = bool(all(v["acc"] >= level for v in acc.values()))
    se = float(a["acc_se"])
    power = Power(a["acc"], (a["acc"] - z * se, a["acc"] + z * se), level, z * se, paired=False)
    res = ClaimResult(
        key="multihead.select.positive_control",
        label=LABEL,
        statement=(
            f"positive control (lengthscale {doc['task']['hier_lengthscales']}, noise std "
            f"{doc['task']['hier_noise_stds']}): the statistics selector picks the drawing "
            f"component in >= {level:.0%} of contexts at every n' ({PAPER_NOTE})"
        ),
        holds=holds,
        observed=a["acc"],
        bound=level,
        tolerance=f"point estimate against {level:.0%}; binomial SE {a['acc_se']:.3g} over "
        f"{a['n_instances']} contexts (worst n'={worst})",
        details={"accuracy": acc},
    )
    return _decided(res, {}, power)


def ceiling_claim(doc: dict, pairs, z: float = Z_MARGIN, *, statuses) -> ClaimResult:
    """Whether any ``(reference, candidate)`` of ``pairs`` (a single head; exact weights plugged
    into given heads) has the candidate's E[TV] below the reference's by more than ``z`` paired SE
    at every n'. If none does, no selector can beat those single heads with those heads: the
    selector's gain is bounded by the ceiling's.

    The verdict is the gate's (:func:`~pfntheory.claims.gating.decide`) on ``statuses`` (the
    convergence of every trained run the pairs read, by run name; :func:`statuses_of_runs`) and
    the power of the best pair's worst cell (:func:`_cell_power`): the claim is refuted only when
    every pair is, i.e. when even the best pair's interval lies below 0 at some n'. ``z > 0``."""
    z = positive_scalar(z, "z")
    pairs = [_pair_of(p, f"pairs[{i}]") for i, p in enumerate(sequence(pairs, "pairs"))]
    rows, beats, worst = [], {}, {}
    for ref, cand in pairs:
        mine = [dict(r, reference=ref) for r in summarise_ceiling(doc, ref) if r["model"] == cand]
        if not mine:
            raise ValueError(f"doc holds no rows of {cand!r}")
        rows += mine
        worst[(ref, cand)] = min(mine, key=_ratio)
        beats[f"{cand} vs {ref}"] = all(r["fall"] > z * r["fall_se"] for r in mine)
    top = max(worst.values(), key=_ratio)  # the best pair, at its worst n'
    res = ClaimResult(
        key="multihead.select.ceiling",
        label=LABEL,
        statement=(
            f"with the exact weights p(h|D) plugged in, some heads beat a single head by > {z:g} "
            f"paired SE in E[TV] at every n' (else no selector can with these heads; "
            f"{PAPER_NOTE})"
        ),
        holds=any(beats.values()),
        observed=top["fall"],
        bound=z * top["fall_se"],
        tolerance=f"{z:g} SE of per-instance differences on the same draws (best pair at its "
        f"worst n': {top['model']} vs {top['reference']} at n'={top[NKEY]})",
        details={"rows": rows, "beats": beats},
    )
    return _decided(res, statuses, _cell_power(top, z))


def _pair_of(p, name: str) -> tuple[str, str]:
    """A ``(reference, candidate)`` pair of row names."""
    items = sequence(p, name)
    if len(items) != 2:
        raise ValueError(f"{name} must be a (reference, candidate) pair, got {p!r}")
    return text(items[0], name), text(items[1], name)


def _ratio(r: dict) -> float:
    """``fall / SE`` of a paired row (+-inf at SE 0)."""
    se = r["fall_se"]
    return r["fall"] / se if se > 0 else float(np.copysign(np.inf, r["fall"]))


def _cell_power(r: dict, z: float) -> Power:
    """The :class:`~pfntheory.claims.Power` of one paired cell ``fall -+ z SE`` against the
    claimed effect 0 ("below": any fall). For a claim "at every n'", the cell of the smallest
    ``fall / SE`` decides both ways: the check holds iff it passes, and the claim is refuted iff
    its interval lies below 0 (``fall / SE < -z`` there, the smallest ratio, iff at some n')."""
    f, se = float(r["fall"]), float(r["fall_se"])
    # the minimal effect of interest: 10% of the candidate's E[TV] in that cell
    minimal = MINIMAL_EFFECT * abs(float(r["tv"])) if "tv" in r else None
    return Power(f, (f - z * se, f + z * se), 0.0, z * se, paired=True, minimal=minimal, z=z)


def _decided(res: ClaimResult, statuses, power: Power | None, replay=None) -> ClaimResult:
    """``res`` with its power, and its verdict and decision from the one gate
    (:func:`~pfntheory.claims.gating.decide`) on ``statuses`` (run name -> Status; empty when the
    claim reads no trained run: then every run read has 'plateaued' vacuously and the power
    decides)."""
    out = decided(
        dataclasses.replace(res, power=power),
        statuses,
        replay=replay,
        model=None if statuses else "no trained run",
    )
    conv = {k: v.to_dict() for k, v in statuses.items()}
    details = {**res.details, "convergence": conv, "shared_reasons": ["margin"]}
    return dataclasses.replace(out, details=details)


def runs_read(names, models: dict) -> dict:
    """The trained runs a claim on rows ``names`` reads: ``{display name: run}`` from ``models``
    (:func:`pfntheory.claims.multihead_trained.models`), a single head by its name and the
    committed multi-head run for rows of its trained heads; hand-set heads and selectors read no
    run. A row naming a trained model absent from ``models`` is refused (its status would be
    silently left out of the gate)."""
    names = [text(nm, "names") for nm in sequence(names, "names", non_empty=False)]
    mapping(models, "models", non_empty=False)
    out = {}
    for name in names:
        if name.startswith("multi-head L=8 trained"):
            key = "multi-head L=8"
        elif name.startswith("single "):
            key = name
        else:
            continue  # hand-set heads, selectors: no trained run
        if key not in models:
            raise ValueError(f"row {name!r} reads the run {key!r}, which models does not hold")
        out[key] = models[key]
    return out


def statuses_of_runs(runs: dict) -> dict:
    """Run name -> log-half convergence :class:`~pfntheory.infra.status.Status`
    (:func:`pfntheory.claims.gating.run_convergence`) of loaded runs (``{display name: run}``,
    e.g. :func:`pfntheory.claims.multihead_trained.models`), keyed by run directory name as the
    recorder matches them."""
    from .gating import run_convergence

    return {r.run_dir.name: run_convergence(r) for r in runs.values()}


VERDICT_FILE = "verdict-cpu.json"


def tv_claim(
    doc: dict, model: str, reference: str, z: float = Z_MARGIN, *, statuses, replay=None
) -> ClaimResult:
    """``model``'s E[TV] to the exact mixture PPD below ``reference``'s by more than ``z`` SE of
    the per-instance differences (the same draws) at every n' of ``doc``.

    The verdict is the gate's (:func:`~pfntheory.claims.gating.decide`) on ``statuses`` (the
    reference's run; the hand-set heads and the selector have no learning curve) and the power of
    the worst cell (:func:`_cell_power`): a cell that fails with an interval still above 0 is
    *undecided (underpowered)*, and the row states the smallest effect it detects. ``replay``
    (a :class:`~pfntheory.claims.gating.Replay`, e.g. :func:`pfntheory.claims.multihead_cells.
    replay_against_curve`): the check re-decided along the reference's learning curve, for a
    reference that has not plateaued. ``z > 0``."""
    z = positive_scalar(z, "z")
    model = text(model, "model")
    rows = [r for r in summarise_ceiling(doc, reference) if r["model"] == model]
    if not rows:
        raise ValueError(f"doc holds no rows of {model!r}")
    worst = min(rows, key=_ratio)
    ni = doc["n_instances"]
    per_n = ", ".join(f"{k}: {v}" for k, v in ni.items()) if isinstance(ni, dict) else str(ni)
    res = ClaimResult(
        key="multihead.select.tv_below_single",
        label=LABEL,
        statement=f"{model}: E[TV] below {reference}'s at every n' ({PAPER_NOTE})",
        holds=all(r["fall"] > z * r["fall_se"] for r in rows),
        observed=worst["fall"],
        bound=z * worst["fall_se"],
        tolerance=f"E[TV_single - TV_model] > {z:g} SE, paired over the instances per n' "
        f"({per_n}; worst n'={worst[NKEY]})",
        details={"rows": rows},
    )
    return _decided(res, statuses, _cell_power(worst, z), replay)


def coverage_claim(doc: dict, model: str, levels=(50, 90), z: float = Z_MARGIN) -> ClaimResult:
    """``model``'s central-interval coverage within ``z`` binomial SE of nominal at every n' and
    level (SE ``sqrt(p (1 - p) / N)`` at the nominal ``p``). It reads no trained run (hand-set
    heads and the selector), so the gate decides it on the check alone: a deviation beyond ``z``
    SE is itself significant, so a failure refutes (no power object). ``levels`` in (0, 100),
    ``z > 0``; a level or ``model`` the document lacks, or a cell of no instances, is refused."""
    z = positive_scalar(z, "z")
    model = text(model, "model")
    levels = int_tuple(levels, "levels", maximum=99)
    check_document(doc)
    rows, worst = [], (-1.0, 0, 0, 0.0)
    for lv in levels:
        by = doc.get("coverage", {}).get(str(lv), {})
        if model not in by or not by[model]:
            raise ValueError(f"doc holds no {lv}% coverage of model {model!r}")
        for n, v in by[model].items():
            c, N = float(np.mean(v)), len(v)
            se = float(np.sqrt(lv / 100 * (1 - lv / 100) / N))
            k = abs(c - lv / 100) / se
            rows.append({"level": lv, NKEY: int(n), "coverage": c, "se": se, "k": k, "N": N})
            worst = max(worst, (k, lv, int(n), c))
    res = ClaimResult(
        key="multihead.select.coverage",
        label=LABEL,
        statement=f"{model}: {'/'.join(map(str, levels))}% coverage within {z:g} binomial SE of "
        f"nominal at every n' ({PAPER_NOTE})",
        holds=worst[0] <= z,
        observed=worst[3],
        bound=worst[1] / 100,
        tolerance=f"|coverage - nominal| <= {z:g} SE (worst: {worst[1]}% at n'={worst[2]}, "
        f"{worst[0]:.1f} SE)",
        details={"rows": rows},
    )
    return _decided(res, {}, None)
