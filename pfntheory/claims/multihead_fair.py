"""Page 08's multi-head comparison made fair (issue 47, item 5; beyond the paper).

The committed confirmation (:mod:`pfntheory.claims.multihead_select`, ``verdict-cpu.json`` with
the cells of :mod:`pfntheory.claims.multihead_cells`) scores hand-set heads with a statistics
selector trained on contexts of n up to 1024, and Chebyshev heads whose spectral ranges were taken
at n = 1024, against single heads pretrained on n in [64, 256]. The fair variant here:

* the selector trained on the pretraining range only (:data:`PRETRAIN_RANGE`; every other setting
  of the committed selector kept: 2048 contexts, 150 epochs, seed 0), and the Chebyshev ranges
  from designs of n = 256, the top of that range (:data:`RANGE_N`; 4 designs, seed 0, as
  committed);
* the same draws as the committed confirmation, with the instance counts it ended with, fixed in
  code before any fair row was scored (:data:`FIXED_INSTANCES`); a partial cell is never decided;
* beside each multi-head model, the same hand-set construction with ONE head
  (:data:`BASELINE_HEAD`: the component of lengthscale 0.8 and noise std 0.2, the prior mean of
  both grids, chosen before looking), at the same depth and steps, on the same instances.

The runner is :mod:`pfntheory.pipelines.multihead_fair` (it writes the batches under
:data:`FOLDER`); this module names, checks and joins what it wrote, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pfntheory.base._checks import int_tuple, keys, mapping, positive_int, seed_int

__all__ = [
    "FOLDER",
    "PRETRAIN_RANGE",
    "RANGE_N",
    "EPS",
    "FIXED_INSTANCES",
    "BATCHES",
    "SEED0",
    "BASELINE_HEAD",
    "SELECTOR",
    "BASELINE",
    "DEPTHS",
    "CONSTANT_DEPTHS",
    "row_names",
    "batch_file",
    "fair_confirmation",
    "PAIRING_ATOL",
]

#: Runs-root folder of the fair variant's documents (the committed folders are left as they are).
FOLDER = "supp_tab_hier_multihead_fair"
#: The single heads' pretraining range of n (supp_tab_hier's cpu runs: ``n64-256``).
PRETRAIN_RANGE = (64, 256)
#: The n of the designs that fix the Chebyshev ranges: the top of :data:`PRETRAIN_RANGE`.
RANGE_N = 256
#: The depth-matched range's target error, as committed (one a-priori choice, docs/multihead.md).
EPS = 1e-2
#: Instances per n', fixed before any fair row was scored: the counts the committed confirmation
#: ended with (256 / 384 / 512), on the same draws (its generator seeds and batch sizes,
#: :data:`BATCHES`).
FIXED_INSTANCES = {256: 256, 512: 384, 1024: 512}
#: Per n': ``(batch size, number of batches)``; batch ``b`` draws with generator seed
#: ``(SEED0 + b) * 100_003 + n'``, as the committed confirmation's batches.
BATCHES = {256: (256, 1), 512: (128, 3), 1024: (32, 16)}
#: The confirmation's first generator seed (its fresh draws; the ceiling's are 4242).
SEED0 = 5151
#: The hand-set single-head baseline: the component (lengthscale, noise std) at the centre of
#: supp-tab:hierarchical-gp's grid, the prior mean of both the lengthscale and the noise std (the
#: grid is uniform), chosen before looking; index 4 of :func:`pfntheory.infra.config.
#: prior_components` (lengthscale outer, noise std inner).
BASELINE_HEAD = (0.8, 0.2)
#: Depths of the depth-matched Chebyshev heads, and of the constant-step heads (the committed
#: candidate's L = 32).
DEPTHS = (8, 16, 32)
CONSTANT_DEPTHS = (32,)
#: Row-name stems: the selector of the fair variant, and the one-head baseline.
SELECTOR = "statistics selector [64, 256]"
BASELINE = f"one hand-set head (lengthscale {BASELINE_HEAD[0]}, noise std {BASELINE_HEAD[1]})"
#: The committed selector's weights are recomputed on every batch (its features are the fair
#: selector's) and compared with the committed confirmation's per-instance ``TV(w, p(h | D))``:
#: those are stored to 6 significant digits and lie in [0, 1], so a half unit of the 6th digit,
#: 5e-6, plus float64 round-off; a value further off means other draws.
PAIRING_ATOL = 1e-5


def row_names() -> dict[str, tuple[str, str]]:
    """``{tag: (multi-head row, one-head row)}`` of a fair batch: ``"chebyshev L"`` and
    ``"constant L"`` per depth of :data:`DEPTHS` and :data:`CONSTANT_DEPTHS`."""
    out = {}
    for L in DEPTHS:
        out[f"chebyshev {L}"] = (f"{SELECTOR}, Chebyshev heads {L}", f"{BASELINE}, Chebyshev L={L}")
    for L in CONSTANT_DEPTHS:
        out[f"constant {L}"] = (f"{SELECTOR}, heads {L}", f"{BASELINE}, L={L}")
    return out


def batch_file(root, n: int, seed: int) -> Path:
    """Where the fair batch of n' = ``n`` and generator seed ``seed`` lies under ``root`` (the
    runs root)."""
    if not isinstance(root, (str, Path)):
        from pfntheory.base._checks import ArgumentTypeError

        raise ArgumentTypeError(f"root must be a path, got {type(root).__name__}")
    n, seed = positive_int(n, "n"), seed_int(seed, "seed")
    return Path(root) / FOLDER / "batches" / f"n{n}-seed{seed}.json"


_REFS = ("single L=8, 1600 steps (equal time)", "single L=32")


def fair_confirmation(verdict: dict, root=None, fixed=None) -> dict | None:
    """The fair variant's document: per n' of ``fixed`` (default :data:`FIXED_INSTANCES`), the
    batches of :data:`FOLDER` joined (:func:`~pfntheory.claims.multihead_cells.concat_batches`)
    beside the single heads' rows of ``verdict`` (the committed confirmation with its cells,
    :func:`~pfntheory.claims.multihead_cells.with_cells`, and the doubled single L = 32's rows,
    :data:`~pfntheory.claims.multihead_cells.REFERENCE`, where joined) on the same instances.

    Pairing is checked twice per instance: the draws' Bayes indicators, and the committed
    selector's ``TV(w, p(h | D))`` recomputed on each batch against ``verdict``'s (within
    :data:`PAIRING_ATOL`); other draws are refused, naming the n'. None while any n' holds fewer
    instances than fixed (a partial cell is never decided); more than fixed is refused."""
    from pfntheory.infra import runs

    from ..experiments.state import default_root
    from . import multihead_cells as mcells
    from . import multihead_select as ms

    keys("n_eval", "tv", "bayes_acc", "sel_tv_w")(verdict, "verdict")
    ms.check_document(verdict, "verdict")
    fixed = dict(FIXED_INSTANCES if fixed is None else mapping(fixed, "fixed"))
    for n, k in fixed.items():
        positive_int(n, "fixed n'"), positive_int(k, f"fixed[{n}]")
    base = Path(default_root() if root is None else root)
    docs = {}
    for n in int_tuple(sorted(fixed), "fixed"):
        paths = sorted((base / FOLDER / "batches").glob(f"n{n}-seed*.json"))
        if not paths:
            return None
        d = mcells.concat_batches(runs.load_json(p) for p in paths)
        if d["n_instances"] < fixed[n]:
            return None
        if d["n_instances"] > fixed[n]:
            raise ValueError(
                f"n'={n} holds {d['n_instances']} fair instances, more than the {fixed[n]} fixed "
                "before looking"
            )
        if n not in [int(m) for m in verdict["n_eval"]]:
            raise ValueError(f"verdict has no n'={n}")
        for key, name in (("bayes_acc", "p(h|D)"), ("sel_tv_w", "statistics selector")):
            a = np.asarray(
                d[key]
                .get(name + (" (committed)" if key == "sel_tv_w" else ""), {})
                .get(str(n), []),
                dtype=float,
            )
            b = np.asarray(verdict[key][name][str(n)], dtype=float)
            if a.shape != b.shape or not np.allclose(a, b, rtol=0.0, atol=PAIRING_ATOL):
                raise ValueError(
                    f"the fair rows at n'={n} are not the confirmation's draws ({key} {name!r} "
                    "differs)"
                )
        docs[n] = d
    names = set.intersection(*(set(d["tv"]) for d in docs.values()))
    cov_names = set.intersection(*(set(d["coverage"]["50"]) for d in docs.values()))
    return {
        "n_eval": sorted(docs),
        "n_instances": {str(n): docs[n]["n_instances"] for n in sorted(docs)},
        "seed": SEED0,
        "tv": {
            **{k: {str(n): verdict["tv"][k][str(n)] for n in docs} for k in _REFS},
            **mcells._reference_rows(verdict, docs),  # the doubled single L = 32, where joined
            **{k: {str(n): docs[n]["tv"][k][str(n)] for n in docs} for k in sorted(names)},
        },
        "coverage": {
            lv: {
                k: {str(n): docs[n]["coverage"][lv][k][str(n)] for n in docs}
                for k in sorted(cov_names)
            }
            for lv in docs[min(docs)]["coverage"]
        },
        "sel_acc": {SELECTOR: {str(n): docs[n]["sel_acc"][SELECTOR][str(n)] for n in docs}},
        "cpu_s": float(sum(d.get("cpu_s", 0.0) for d in docs.values())),
    }
