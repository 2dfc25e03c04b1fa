"""More instances for one n' cell of the multi-head confirmation (issue 38, beyond the paper).

The confirmation of :mod:`pfntheory.claims.multihead_select` (``verdict-cpu.json``: the hand-set L =
32 heads with the statistics selector against the single heads L = 32 and the equal-time L = 8, on
fresh prior draws, seed 5151) held only 32 instances at n' = 1024, too few to resolve the comparison
there. The runner :func:`~pfntheory.pipelines.multihead_run.confirm_cell` scores more, in batches of
:func:`~pfntheory.pipelines.multihead_run.ceiling` calls, one generator seed per batch (``seed0 +
b``, so that batch 0 of ``batch_size`` 32 replays the committed 32 instances exactly), each batch
written atomically as soon as it is done (an interrupted run keeps its finished batches and resumes
after them). This module checks and joins what it wrote, and writes nothing: :func:`check_batch`
checks a batch, :func:`concat_batches` joins the batches into one cell and :func:`with_cell` puts
that cell into the confirmation document in place of the old one.
"""

from __future__ import annotations

from pathlib import Path

from pfntheory.base._checks import (
    ArgumentTypeError,
    int_tuple,
    keys,
    nonneg_scalar,
    positive_int,
    seed_int,
    seed_tuple,
    sequence,
    text,
)

__all__ = [
    "FOLDER",
    "CELL_FILE",
    "batch_path",
    "concat_batches",
    "check_batch",
    "with_cell",
    "load_cell",
    "with_cells",
    "CURVE_FILE",
    "replay_against_curve",
    "curve_replay",
    "CHEBYSHEV_FOLDER",
    "chebyshev_confirmation",
    "REFERENCE",
    "REFERENCE_FOLDER",
    "REFERENCE_BATCHES",
    "REFERENCE_EXPERIMENT",
    "reference_runs",
    "reference_statuses",
    "join_reference",
    "with_reference",
]

#: Runs-root folder of the cells (JSON documents of this module).
FOLDER = "supp_tab_hier_multihead_confirm"
#: The joined cell of n' (``.format(n=...)``).
CELL_FILE = "cell-n{n}.json"
_KEYS = ("bayes_acc", "tv", "sel_acc", "sel_tv_w")


def batch_path(out_dir, n: int, seed: int) -> Path:
    """Where the batch of n' = ``n`` and generator seed ``seed`` is written."""
    if not isinstance(out_dir, (str, Path)):
        raise ArgumentTypeError(f"out_dir must be a path, got {type(out_dir).__name__}")
    n, seed = positive_int(n, "n"), seed_int(seed, "seed")
    return Path(out_dir) / "batches" / f"n{n}-seed{seed}.json"


def _batch(doc, name: str) -> dict:
    """``doc`` if it is one batch (:func:`~pfntheory.pipelines.multihead_run.confirm_cell`'s
    document): a well-formed document (:func:`~pfntheory.claims.multihead_select.check_document`)
    of one n', one generator ``seed``, an integer ``n_instances`` and every table of a batch."""
    from . import multihead_select as ms

    keys("n_eval", "n_instances", "seed", "multi_run", "single_runs", *_KEYS, "coverage")(doc, name)
    ms.check_document(doc, name)
    if len(doc["n_eval"]) != 1:
        raise ValueError(f"{name} must be a batch of one n', got n_eval {doc['n_eval']}")
    positive_int(doc["n_instances"], f"{name}['n_instances']")
    seed_int(doc["seed"], f"{name}['seed']")
    return doc


def check_batch(
    doc,
    path,
    *,
    seed: int,
    n_eval,
    n_instances,
    multi_run,
    single_runs,
    dtype,
    rows,
    selector_sha256=None,
) -> dict:
    """``doc`` (the batch file at ``path``, :func:`~pfntheory.pipelines.multihead_run.confirm_cell`
    resuming) if it is what its place says and what the resumed call would write: a well-formed
    batch of n' ``n_eval``, generator seed ``seed``, ``n_instances`` draws, the runs (by directory
    name: spec and config hash) and ``dtype`` asked for, holding the ``rows`` the call scores, and
    the selector's weights (``selector_sha256``, checked when the batch records it: batches written
    before it was recorded are checked on the rest). Otherwise a ValueError naming the file: a batch
    of other draws, runs or weights is never counted as this one (remove it to score it again)."""
    from . import multihead_select as ms

    try:
        _batch(doc, "doc")
    except ValueError as err:
        raise ValueError(f"{path}: not a batch of the confirmation: {err}") from err
    n_eval = list(int_tuple(n_eval, "n_eval"))
    rows = [text(r, "rows") for r in sequence(rows, "rows")]
    ident = ms.identity(doc)
    got = {
        "n_eval": [int(m) for m in doc["n_eval"]],
        "seed": ident["seed"],
        "n_instances": int(doc["n_instances"]),
        "multi_run": ident["multi_run"],
        "single_runs": ident["single_runs"],
        "dtype": doc.get("dtype"),
    }
    want = {
        "n_eval": list(n_eval),
        "seed": seed,
        "n_instances": n_instances,
        "multi_run": multi_run,
        "single_runs": single_runs,
        "dtype": dtype,
    }
    diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    missing = sorted(set(rows) - set(doc["tv"]))
    if missing:
        diff["rows"] = (sorted(doc["tv"]), sorted(rows))
    if selector_sha256 is not None and doc.get("selector_sha256", selector_sha256) != (
        selector_sha256
    ):
        diff["selector_sha256"] = (doc["selector_sha256"], selector_sha256)
    if diff:
        what = "; ".join(f"{k} {a!r}, expected {b!r}" for k, (a, b) in diff.items())
        raise ValueError(
            f"{path} is not the batch it stands for ({what}): its instances are not counted; "
            "remove it to score the batch again"
        )
    return doc


def concat_batches(docs) -> dict:
    """One cell from batches of one n' (:func:`~pfntheory.pipelines.multihead_run.confirm_cell`'s
    documents): the per-instance lists of every row joined in the batches' order; rows missing from
    a batch are refused (every row must be paired on the same instances).

    Each batch counts once: a batch is its draws (n' and generator seed: the instances ``0 ..
    n_instances - 1`` of that seed), so a seed given twice is refused, and so are batches of
    other runs or dtype (:func:`~pfntheory.claims.multihead_select.same_identity`; runs by
    directory name, which carries the config hash). The cell records its ``seeds`` and, where
    the batches share one, their ``dtype``."""
    from . import multihead_select as ms

    docs = list(sequence(docs, "docs"))
    for i, d in enumerate(docs):
        _batch(d, f"docs[{i}]")
    ns = {tuple(d["n_eval"]) for d in docs}
    if len(ns) != 1:
        raise ValueError(f"docs must be batches of one n' each, the same, got {sorted(ns)}")
    seen: dict[int, int] = {}
    for i, d in enumerate(docs):
        sd = int(d["seed"])
        if sd in seen:
            raise ValueError(
                f"docs[{seen[sd]}] and docs[{i}] are both the batch of seed {sd} at "
                f"n'={d['n_eval'][0]}: its instances would count twice"
            )
        seen[sd] = i
    ident = ms.same_identity(docs, ("dtype", "multi_run", "single_runs"))
    n = str(docs[0]["n_eval"][0])
    out: dict = {
        "n_eval": docs[0]["n_eval"],
        "seeds": [d["seed"] for d in docs],
        "multi_run": docs[0]["multi_run"],
        "single_runs": docs[0]["single_runs"],
        "n_instances": sum(int(d["n_instances"]) for d in docs),
        "cpu_s": sum(float(d.get("cpu_s", 0.0)) for d in docs),
    }
    if ident["dtype"] is not None:
        out["dtype"] = ident["dtype"]
    for key in _KEYS:
        names = [set(d[key]) for d in docs]
        if any(s != names[0] for s in names):
            raise ValueError(f"the batches do not share their {key!r} rows: {names}")
        out[key] = {k: {n: [v for d in docs for v in d[key][k][n]]} for k in sorted(names[0])}
    levels = [set(d["coverage"]) for d in docs]
    if any(s != levels[0] for s in levels):
        raise ValueError("the batches do not share their coverage levels")
    for lv in levels[0]:
        rows = [set(d["coverage"][lv]) for d in docs]
        if any(s != rows[0] for s in rows):
            raise ValueError(f"the batches do not share their coverage {lv} rows: {rows}")
    out["coverage"] = {
        lv: {
            k: {n: [v for d in docs for v in d["coverage"][lv][k][n]]}
            for k in docs[0]["coverage"][lv]
        }
        for lv in sorted(levels[0])
    }
    return out


def _cell(cell, name: str = "cell") -> dict:
    """``cell`` if it is one joined cell (:func:`concat_batches`): a well-formed document of one
    n', distinct generator ``seeds``, an integer ``n_instances`` and, where it records one, a
    number ``cpu_s >= 0``."""
    from . import multihead_select as ms

    keys("n_eval", "n_instances", "seeds", "multi_run", "single_runs", "tv", "coverage")(cell, name)
    ms.check_document(cell, name)
    if len(cell["n_eval"]) != 1:
        raise ValueError(f"{name} must be a cell of one n', got n_eval {cell['n_eval']}")
    seeds = seed_tuple(cell["seeds"], f"{name}['seeds']")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{name}['seeds'] repeats a seed (a batch counted twice): {list(seeds)}")
    positive_int(cell["n_instances"], f"{name}['n_instances']")
    if "cpu_s" in cell:  # the CPU seconds the cell cost, carried into the joined verdict
        nonneg_scalar(cell["cpu_s"], f"{name}['cpu_s']")
    return cell


def with_cell(verdict: dict, cell: dict) -> dict:
    """``verdict`` (a confirmation document, one list per row and n') with the n' of ``cell``
    replaced by ``cell``'s instances, for the rows both hold (rows only ``cell`` holds are added;
    ``n_instances`` becomes per n').

    The cell must be of the verdict's runs (the multi-head run, and each single-head run both
    name, by directory name) and dtype where both record one, at an n' of the verdict's
    ``n_eval``; its single-head runs the verdict does not name are added to ``single_runs``, so
    that the result labels every row it holds. The cell replaces the verdict's instances at its
    n' (they are never added to them), so joining one cell twice counts it once."""
    from . import multihead_select as ms

    keys("n_eval", "n_instances", "multi_run", "single_runs", "tv", "coverage")(verdict, "verdict")
    ms.check_document(verdict, "verdict")
    _cell(cell)
    n = str(cell["n_eval"][0])
    if int(n) not in {int(m) for m in verdict["n_eval"]}:
        raise ValueError(f"cell is of n'={n}, not one of verdict's n_eval {verdict['n_eval']}")
    vid, cid = ms.identity(verdict, "verdict"), ms.identity(cell, "cell")
    for f in ("multi_run", "dtype"):
        if vid[f] is not None and cid[f] is not None and vid[f] != cid[f]:
            raise ValueError(f"cell is of {f} {cid[f]!r}, verdict of {vid[f]!r}")
    other = {
        k: (cid["single_runs"][k], r)
        for k, r in (vid["single_runs"] or {}).items()
        if k in (cid["single_runs"] or {}) and cid["single_runs"][k] != r
    }
    if other:
        raise ValueError(f"cell and verdict name other single-head runs: {other}")
    tables = [(k, verdict.get(k, {}), cell.get(k, {})) for k in _KEYS]
    tables += [
        (f"coverage {lv}", by, cell["coverage"].get(lv, {}))
        for lv, by in verdict["coverage"].items()
    ]
    lost = sorted(
        f"{key}: {k}" for key, vt, ct in tables for k, v in vt.items() if n in v and k not in ct
    )
    if lost:
        raise ValueError(f"cell lacks the rows {lost} of verdict at n'={n} (they must stay paired)")
    out = {k: v for k, v in verdict.items()}
    out["single_runs"] = {**cell["single_runs"], **verdict["single_runs"]}
    ni = verdict["n_instances"]
    out["n_instances"] = (
        dict(ni) if isinstance(ni, dict) else {str(m): ni for m in verdict["n_eval"]}
    )
    out["n_instances"][n] = cell["n_instances"]
    for key in _KEYS:
        out[key] = {k: dict(v) for k, v in verdict.get(key, {}).items()}
        for name, v in cell.get(key, {}).items():
            out[key].setdefault(name, {})[n] = v[n]
    out["coverage"] = {
        lv: {k: dict(v) for k, v in by.items()} for lv, by in verdict["coverage"].items()
    }
    for lv, by in cell["coverage"].items():
        for name, v in by.items():
            out["coverage"].setdefault(lv, {}).setdefault(name, {})[n] = v[n]
    out["cells"] = {
        **verdict.get("cells", {}),
        n: {"seeds": cell["seeds"], "cpu_s": cell.get("cpu_s", 0.0)},
    }
    return ms.check_document(out, "the joined verdict")


def with_cells(verdict: dict, root=None) -> dict:
    """``verdict`` with every committed cell (:func:`load_cell` of each of its n') in place
    (:func:`with_cell`), then the doubled single L = 32 reference's rows at every n' where its
    cell is committed (:func:`with_reference`)."""
    for n in verdict["n_eval"]:
        cell = load_cell(n, root)
        if cell is not None:
            verdict = with_cell(verdict, cell)
    return with_reference(verdict, root)


def load_cell(n: int = 1024, root=None) -> dict | None:
    """The joined cell of n' = ``n`` (:data:`CELL_FILE` under :data:`FOLDER`), None while absent."""
    from pfntheory.infra import runs

    from ..experiments.state import default_root

    p = Path(default_root() if root is None else root) / FOLDER / CELL_FILE.format(n=int(n))
    return runs.load_json(p) if p.is_file() else None


#: The candidate's E[TV] on a reference run's learning-curve held-out set
#: (:func:`~pfntheory.pipelines.multihead_run.curve_values`).
CURVE_FILE = "candidate-on-curve-{run}.json"


def replay_against_curve(reference, values: dict, z: float = 3.0):
    """The :class:`~pfntheory.claims.gating.Replay` of "the candidate's E[TV] below the
    reference run's by more than ``z`` SE at every curve n'" at every step of the last log-half of
    the reference's learning curve (``reference``: the loaded run; ``values``:
    :func:`~pfntheory.pipelines.multihead_run.curve_values`'s ``tv``). The SE is unpaired (the
    curve keeps means only): conservative."""
    import math

    from .gating import Replay, budget_outcomes

    def check(v) -> bool:
        by_n = v(reference)["by_n"]
        ok = True
        for n, (m, se) in values.items():
            a = by_n[int(n)]["tv"]
            ok = ok and (a[0] - m) > z * math.hypot(a[1], se)
        return ok

    b = budget_outcomes([reference], check)
    return Replay(tuple(b["steps"]), tuple(b["held"]))


def curve_replay(read: dict, root=None, z: float = 3.0):
    """The replay of :func:`replay_against_curve` for the one reference run of ``read``
    (``{name: loaded run}``, :func:`pfntheory.claims.multihead_select.runs_read`) from its
    committed :data:`CURVE_FILE`; None when there is none (or ``read`` is not one run)."""
    from pfntheory.infra import runs

    from ..experiments.state import default_root

    if len(read) != 1:
        return None
    run = next(iter(read.values()))
    p = Path(default_root() if root is None else root) / FOLDER
    p = p / CURVE_FILE.format(run=run.run_dir.name)
    if not p.is_file():
        return None
    return replay_against_curve(run, runs.load_json(p)["tv"], z)


#: Folder of the Chebyshev-step heads' documents (:mod:`pfntheory.nn.chebyshev_heads`).
CHEBYSHEV_FOLDER = "supp_tab_hier_multihead_chebyshev"
_REFS = ("single L=8, 1600 steps (equal time)", "single L=32")


def chebyshev_confirmation(verdict: dict, root=None) -> dict | None:
    """The confirmation document of the depth-matched Chebyshev heads on fresh draws: per n',
    their rows (the batches of ``confirm-chebyshev-matched-n<n'>/``, generator seeds from 5151 as
    the cell of that n', or one ``confirm-chebyshev-matched-n<n'>.json``) beside the single
    heads' rows of ``verdict`` (the confirmation with its cells, :func:`with_cells`, the doubled
    reference :data:`REFERENCE` included where joined) on the same instances (checked by the
    draws' Bayes indicators: other draws are refused). None when no document is committed."""
    from pfntheory.infra import runs

    from ..experiments.state import default_root

    base = Path(default_root() if root is None else root) / CHEBYSHEV_FOLDER
    docs = {}
    for n in verdict["n_eval"]:
        p = base / f"confirm-chebyshev-matched-n{n}.json"
        batches = sorted((base / f"confirm-chebyshev-matched-n{n}").glob("seed*.json"))
        if batches:  # batches of the cell's seeds first (they extend a single document)
            docs[n] = concat_batches(runs.load_json(b) for b in batches)
        elif p.is_file():
            docs[n] = runs.load_json(p)
    if not docs:
        return None
    size = {n: len(d["bayes_acc"]["p(h|D)"][str(n)]) for n, d in docs.items()}
    for n, d in docs.items():
        if d["bayes_acc"]["p(h|D)"][str(n)] != verdict["bayes_acc"]["p(h|D)"][str(n)][: size[n]]:
            raise ValueError(f"the Chebyshev rows at n'={n} are not the confirmation's draws")
    names = set.intersection(*(set(d["tv"]) for d in docs.values()))
    return {
        "n_eval": sorted(docs),
        "n_instances": {str(n): size[n] for n in sorted(docs)},
        "tv": {
            **{k: {str(n): verdict["tv"][k][str(n)][: size[n]] for n in docs} for k in _REFS},
            **_reference_rows(verdict, docs, size),
            **{k: {str(n): docs[n]["tv"][k][str(n)] for n in docs} for k in sorted(names)},
        },
    }


def _reference_rows(verdict: dict, ns, size=None) -> dict:
    """The :data:`REFERENCE` rows of ``verdict`` at the n' of ``ns`` where it holds them (first
    ``size[n]`` instances when given): ``{REFERENCE: {n': [...]}}``, or empty."""
    by = verdict["tv"].get(REFERENCE, {})
    rows = {
        str(n): by[str(n)][: size[n]] if size is not None else by[str(n)]
        for n in ns
        if str(n) in by
    }
    return {REFERENCE: rows} if rows else {}


# ----------------------------------------------------------------------------------------------
# the single L = 32 reference at 2S steps, weight-averaged (issue 47)
# ----------------------------------------------------------------------------------------------

#: The row name of the reference: supp_tab_hier's single head L = 32 trained weight-averaged at
#: 2S = 2000 steps (``supp_tab_hier_budget``), whose budget doubling against its S = 1000-step
#: partner gates the rows that compare with it. The 1000-step head without averaging (row
#: ``"single L=32"``) was "too noisy to tell" by its learning curve's log-half.
REFERENCE = "single L=32, 2000 steps, weight-averaged"
#: The experiment of the reference and of its half-budget partner.
REFERENCE_EXPERIMENT = "supp_tab_hier_budget"
#: Its depth (the run of :data:`REFERENCE_EXPERIMENT` with this L and the doubled budget).
REFERENCE_L = 32
#: Where its batches and cells lie, under :data:`FOLDER` (the committed files there are left as
#: they are): ``batches/n<n'>-seed<seed>.json`` and ``cell-n<n'>.json``.
REFERENCE_FOLDER = "single-L32-s2000"
#: Per n': ``(batch size, number of batches)``, the confirmation's draws exactly (batch ``b``:
#: generator seed ``(5151 + b) * 100_003 + n'``): n' = 256 is ``verdict-cpu.json``'s one call of
#: 256, n' = 512 and 1024 the batches of the committed cells.
REFERENCE_BATCHES = {256: (256, 1), 512: (128, 3), 1024: (32, 16)}
#: The confirmation's row that every reference batch scores again, on the same draws: its
#: per-instance E[TV] must equal the committed one (the pairing check of :func:`join_reference`).
PAIRING_ROW = "statistics selector, heads 32"
#: Tolerance of that check: the values are stored to 6 significant digits and lie in [0, 1], so a
#: half unit of the 6th digit plus round-off; other draws differ by far more.
PAIRING_ATOL = 1e-5


def reference_runs(root=None) -> tuple | None:
    """``(short, long)``: the loaded runs of :data:`REFERENCE_EXPERIMENT` at depth
    :data:`REFERENCE_L`, ``long`` the one of the most steps that has a partner trained for half
    its steps (``short``; same spec otherwise), at the cpu scale; None while there is none."""
    import dataclasses

    from pfntheory.infra.tree import RunSpec

    from ..experiments.results import load_available

    loaded, _ = load_available(REFERENCE_EXPERIMENT, "cpu", root)
    runs = [
        (r.spec, r) for r in loaded if isinstance(r.spec, RunSpec) and r.spec.model.L == REFERENCE_L
    ]

    def budgetless(spec: RunSpec) -> RunSpec:
        return dataclasses.replace(spec, steps=1, evals=())

    by = {(budgetless(spec), spec.steps): r for spec, r in runs}
    for spec, r in sorted(runs, key=lambda sr: -sr[0].steps):
        half = by.get((budgetless(spec), spec.steps // 2))
        if spec.steps % 2 == 0 and half is not None:
            return half, r
    return None


def reference_statuses(root=None) -> dict:
    """``{run name: Status}`` of the reference (the ``long`` run of :func:`reference_runs`): its
    budget-doubling status against its half-budget partner
    (:func:`pfntheory.claims.gating.doubling_statuses`), the one status the rows against it are
    gated on; empty while the pair is not committed."""
    from .gating import doubling_statuses

    pair = reference_runs(root)
    if pair is None:
        return {}
    name = pair[1].run_dir.name
    return {name: doubling_statuses(list(pair))[name]}


def join_reference(verdict: dict, cell: dict) -> dict:
    """``verdict`` (the confirmation joined with its cells, :func:`with_cells`) with the
    :data:`REFERENCE` rows of ``cell`` (its n' only; :func:`concat_batches` of the reference's
    batches) added: E[TV] and coverage per instance, and its run in ``single_runs``.

    The cell must be on the verdict's instances at that n': the same count, the same multi-head
    run and dtype, the same draws' Bayes indicators, and :data:`PAIRING_ROW` (scored again in
    every batch) and the selector's ``TV(w, p(h | D))`` equal to the verdict's per instance
    within :data:`PAIRING_ATOL`. Otherwise a ValueError naming what differs: a reference scored
    on other draws is never paired with the confirmation's rows."""
    import numpy as np

    from . import multihead_select as ms

    keys("n_eval", "n_instances", "tv", "bayes_acc", "sel_tv_w", "coverage")(verdict, "verdict")
    ms.check_document(verdict, "verdict")
    _cell(cell)
    n = str(cell["n_eval"][0])
    if REFERENCE not in cell["tv"]:
        raise ValueError(f"cell holds no {REFERENCE!r} row")
    if int(n) not in {int(m) for m in verdict["n_eval"]}:
        raise ValueError(f"cell is of n'={n}, not one of verdict's n_eval {verdict['n_eval']}")
    ni = verdict["n_instances"]
    want = int(ni[n] if isinstance(ni, dict) else ni)
    if int(cell["n_instances"]) != want:
        raise ValueError(
            f"cell holds {cell['n_instances']} instances at n'={n}, verdict {want} (the rows "
            "must be paired on the same instances)"
        )
    vid, cid = ms.identity(verdict, "verdict"), ms.identity(cell, "cell")
    for f in ("multi_run", "dtype"):
        if vid[f] is not None and cid[f] is not None and vid[f] != cid[f]:
            raise ValueError(f"cell is of {f} {cid[f]!r}, verdict of {vid[f]!r}")
    checks = (
        ("bayes_acc", "p(h|D)", 0.0),
        ("tv", PAIRING_ROW, PAIRING_ATOL),
        ("sel_tv_w", "statistics selector", PAIRING_ATOL),
    )
    for key, row, atol in checks:
        a = np.asarray(cell.get(key, {}).get(row, {}).get(n, []), dtype=float)
        b = np.asarray(verdict[key].get(row, {}).get(n, []), dtype=float)
        if a.shape != b.shape or not np.allclose(a, b, rtol=0.0, atol=atol):
            raise ValueError(
                f"cell at n'={n} is not on the confirmation's draws ({key} {row!r} differs): its "
                f"{REFERENCE!r} rows are not paired with them"
            )
    out = dict(verdict)
    out["single_runs"] = {**verdict["single_runs"], REFERENCE: cell["single_runs"][REFERENCE]}
    out["tv"] = {k: dict(v) for k, v in verdict["tv"].items()}
    out["tv"].setdefault(REFERENCE, {})[n] = cell["tv"][REFERENCE][n]
    out["coverage"] = {
        lv: {k: dict(v) for k, v in by.items()} for lv, by in verdict["coverage"].items()
    }
    for lv, by in cell["coverage"].items():
        if REFERENCE in by:
            out["coverage"].setdefault(lv, {}).setdefault(REFERENCE, {})[n] = by[REFERENCE][n]
    out["reference_cells"] = {
        **verdict.get("reference_cells", {}),
        n: {"seeds": cell["seeds"], "cpu_s": cell.get("cpu_s", 0.0)},
    }
    return ms.check_document(out, "the verdict with the reference")


def with_reference(verdict: dict, root=None) -> dict:
    """``verdict`` with the :data:`REFERENCE` rows of every committed reference cell
    (``<root>/`` :data:`FOLDER` ``/`` :data:`REFERENCE_FOLDER` ``/cell-n<n'>.json``) joined
    (:func:`join_reference`); unchanged where none is committed. A cell of another run than
    the committed reference (:func:`reference_runs`, by directory name) is refused."""
    from pfntheory.infra import runs

    from ..experiments.state import default_root

    base = Path(default_root() if root is None else root) / FOLDER / REFERENCE_FOLDER
    pair = None
    for n in verdict["n_eval"]:
        p = base / CELL_FILE.format(n=int(n))
        if not p.is_file():
            continue
        cell = runs.load_json(p)
        if pair is None:
            pair = reference_runs(root)
            if pair is None:
                raise ValueError(f"{p}: the reference runs of {REFERENCE_EXPERIMENT} are absent")
        got = Path(str(cell.get("single_runs", {}).get(REFERENCE, ""))).name
        if got != pair[1].run_dir.name:
            raise ValueError(
                f"{p} is of the run {got!r}, not the reference {pair[1].run_dir.name!r}"
            )
        verdict = join_reference(verdict, cell)
    return verdict
