"""Where a trained transformer's solver stops contracting (sec:generalization, fig:exp2-1).

The solver layers of TF and TF^pr map the mean (``f``) and variance (``g``) rows of the tokens by an
affine map ``h <- M_l h + b_l`` per layer (eqn:l attn), on every token, the query included. The
whole stack maps ``h`` by the product ``Pi = M_{L-1} ... M_1``: any error of its initial state, or
of a layer's input carried forward, leaves the stack multiplied by at most ``||Pi||_2``.
:func:`solver_product` computes ``log ||Pi||_2`` on actual contexts of size n' (with the query row,
the learned per-layer kernel scales, the learned ``V`` and ``S``), per instance, and that of its
context block (the recursion; the query row reads it out). The stack is **certified to contract**
on a context where the context block's log-norm is below 0 (:func:`certified_contraction`), and
:func:`predicted_breakdown` is the smallest n' where the median context's block expands.
:func:`breakdown_test` checks the paper's statement against the E[TV] curve: low below the
predicted n', high past it.

The earlier diagnostic, the sum over layers of each layer's log spectral radius, bounded nothing
for TF^pr (its ``M_l`` are similar to symmetric matrices by layer-dependent similarities, so their
radii do not bound the product's norm) and flagged harmless single-layer expansion of an
accelerated (polynomial) schedule: docs/exact-side.md, "Where a trained solver stops contracting".

The analysis over trained runs and its committed file (:data:`BREAKDOWN_FILE`) are
:mod:`pfntheory.pipelines.breakdown_run`'s; this module measures and decides, and writes nothing.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pfntheory.base._checks import (
    MAX_SEED,
    checked,
    floats,
    instance_of,
    ints,
    keys,
    optional,
    positive_int,
    positive_scalar,
    probability,
)

from . import MINIMAL_EFFECT

__all__ = [
    "solver_product",
    "predicted_breakdown",
    "certified_contraction",
    "breakdown_test",
    "BREAKDOWN_FACTOR",
]

#: The two channels a solver layer writes: the mean (f) and the variance (g) rows.
CHANNELS = ("f", "g")
#: Instances per torch batch of :func:`solver_product` (memory: 3 (T x T) float64 per instance).
_CHUNK = 8


def _draw_seed(seed, name: str) -> int:
    """A seed of :func:`solver_product`: ``seed * 1000 + n'`` must stay a valid torch seed."""
    return positive_int(seed, name, minimum=0, maximum=MAX_SEED // 100_000 - 1)


def _products(X, xq, scale, V, S, score: str, normalised: bool):
    """``log ||Pi||_2`` of both channels for a batch of contexts ``X`` (B, n, d) with queries ``xq``
    (B, d): the full (n+1) x (n+1) product with the query row, and its n x n context block.
    Returns ``{channel: (full (B,), context (B,))}`` as numpy arrays."""
    import torch

    from pfntheory.nn.attention import score_matrix

    xa = torch.cat([X, xq.unsqueeze(1)], 1)  # (B, T, d)
    B, T, _ = xa.shape
    n = T - 1
    eye = torch.eye(T, dtype=xa.dtype).expand(B, T, T)
    Pi = {c: eye.clone() for c in CHANNELS}
    for layer in range(V.shape[0]):
        a = xa * scale[layer + 1]
        P = score_matrix(a, a[:, :n], score)  # (B, T, n): every token queries the n context keys
        s = P.sum(-1, keepdim=True) if normalised else None  # (B, T, 1) row sums (TF^pr)
        for j, c in enumerate(CHANNELS):
            v, sk = V[layer, 2 * j + 1], S[layer, j]  # V_ff / V_gg, S_ff / S_gg
            step = v * torch.bmm(P, Pi[c][:, :n, :]) + sk * Pi[c]  # (V P + S I) Pi
            Pi[c] = Pi[c] + (step / s if normalised else step)
    out = {}
    for c in CHANNELS:
        full = torch.linalg.matrix_norm(Pi[c], ord=2)
        ctx = torch.linalg.matrix_norm(Pi[c][:, :n, :n], ord=2)
        out[c] = (torch.log(full).numpy(), torch.log(ctx).numpy())
    return out


def _summary(x: np.ndarray) -> dict:
    return {
        "median": float(np.median(x)),
        "q10": float(np.quantile(x, 0.1)),
        "q90": float(np.quantile(x, 0.9)),
        "max": float(np.max(x)),
        "mean": float(np.mean(x)),
        "frac_expanding": float(np.mean(x > 0)),
    }


@checked(ns=ints(minimum=2), instances=positive_int, seed=_draw_seed)
def solver_product(model, task, ns, instances: int = 64, seed: int = 0) -> dict:
    """``log ||M_{L-1} ... M_1||_2`` of a trained ``model``'s solver layers
    (:class:`pfntheory.nn.model.PFNTransformer`; module docstring) on ``instances`` contexts of the
    prior ``task`` (:class:`pfntheory.infra.config.TaskSpec`) per n' in ``ns``, each with its query,
    per channel (mean ``f``, variance ``g``), in float64. Context ``k`` of size n' is drawn with the
    torch seed ``seed * 100000 + n'``.

    Returns
    -------
    dict
        ``n`` (list), ``instances``, and per channel ``c`` in ``f, g``: ``c`` (the full product
        with the query row) and ``c_context`` (its n' x n' context block), each a dict of lists
        over n': ``median``, ``q10``, ``q90``, ``max``, ``mean`` of the log-norm over the
        instances and ``frac_expanding`` (the fraction with log-norm > 0).
    """
    import torch

    from pfntheory.infra.config import TaskSpec
    from pfntheory.nn.model import PFNTransformer
    from pfntheory.nn.priors import sample_batch

    instance_of(PFNTransformer, what="pfntheory.nn.model.PFNTransformer")(model, "model")
    instance_of(TaskSpec, what="pfntheory.infra.config.TaskSpec")(task, "task")
    ns = list(ns)
    cfg = model.config
    with torch.no_grad():
        c = {k: v.detach().double().cpu() for k, v in model.coefficients().items()}
    out: dict = {"n": ns, "instances": int(instances)}
    stats: dict = {f"{ch}{part}": [] for ch in CHANNELS for part in ("", "_context")}
    with torch.no_grad():
        for n in ns:
            g = torch.Generator().manual_seed(int(seed) * 100_000 + int(n))
            batch = sample_batch(task, int(instances), n, g, dtype=torch.float64)
            vals: dict = {k: [] for k in stats}
            for i in range(0, int(instances), _CHUNK):
                res = _products(
                    batch.X[i : i + _CHUNK],
                    batch.xq[i : i + _CHUNK],
                    c["scale"],
                    c["V"],
                    c["S"],
                    cfg.score,
                    cfg.normalised,
                )
                for ch, (full, ctx) in res.items():
                    vals[ch].append(full)
                    vals[f"{ch}_context"].append(ctx)
            for k in stats:
                stats[k].append(_summary(np.concatenate(vals[k])))
    for k, per_n in stats.items():
        out[k] = {s: [d[s] for d in per_n] for s in per_n[0]}
    return out


#: The products :func:`solver_product` returns, by key: each channel's full product (with the
#: query row) and its context block.
PRODUCTS = ("f", "f_context", "g", "g_context")
#: The statistics over contexts :func:`solver_product` returns per n'.
STATS = ("median", "q10", "q90", "max", "mean", "frac_expanding")


def predicted_breakdown(product: dict, key: str = "f_context", stat: str = "median") -> int | None:
    """The smallest n' of :func:`solver_product`'s grid where ``stat`` over the contexts (default:
    the median) of the log-norm of the product ``key`` exceeds 0: there the stack amplifies the
    typical context's residual instead of contracting it. The default reads the mean channel's
    context block (the recursion the query row reads out; the query row itself adds a bounded
    read-out of the context, not a growth: docs/exact-side.md). None when it stays <= 0 on the
    whole grid."""
    if key not in PRODUCTS:
        raise ValueError(f"key must be one of {PRODUCTS}, got {key!r}")
    if stat not in STATS[:-1]:
        raise ValueError(f"stat must be one of {STATS[:-1]}, got {stat!r}")
    product = keys("n", key)(product, "product")
    for n, v in zip(product["n"], product[key][stat], strict=True):
        if v > 0:
            return int(n)
    return None


def certified_contraction(product: dict) -> bool:
    """Whether the stack contracted on every context drawn at every n' of :func:`solver_product`'s
    grid: the largest log-norm of both channels' context blocks < 0. (The full product's query
    row is the read-out, the weights the query gives the context's values: it is bounded where the
    context block contracts, and can exceed 1 without any growth, as the hand-set TF^pr's does;
    docs/exact-side.md.)"""
    product = keys("n", "f_context", "g_context")(product, "product")
    return all(m < 0 for k in ("f_context", "g_context") for m in product[k]["max"])


#: "High" past the breakdown: E[TV] more than this many times the in-range level. Over the paper's
#: n' <= 200 a contracting solver's E[TV] drifts less (TF^pr at 8000 steps: 1.9x at n' = 200), a
#: diverging one reaches the TV's ceiling of 1 (TF: 16x). Beyond, TF^pr's extrapolation error
#: keeps rising (4x at n' = 600): the factor alone does not tell a breakdown, the check also needs
#: the predicted n* (none for a solver certified to contract).
BREAKDOWN_FACTOR = 2.0


@checked(
    n_eval=ints(),
    tv=floats(),
    tv_se=floats(),
    level=probability,
    level_se=positive_scalar,
    n_star=optional(positive_int),
    z=positive_scalar,
    factor=positive_scalar,
    onset=optional(positive_int),
)
def breakdown_test(
    n_eval,
    tv,
    tv_se,
    level: float,
    level_se: float,
    n_star: int | None = None,
    z: float = 3.0,
    factor: float = BREAKDOWN_FACTOR,
    onset: int | None = None,
) -> dict:
    """fig:exp2-1 as stated: E[TV] is low below the predicted breakdown and high past it. With
    ``tau = factor * level`` (``level`` the mean E[TV] over the pretraining range, SE
    ``level_se``): every evaluated n' < ``onset`` (the first n' where some contexts expand,
    default ``n_star``) has ``E[TV] + z SE < tau`` (low: near the in-range level) and every
    n' >= ``n_star`` (where the typical context expands) has ``E[TV] - z SE > tau`` (high); SE the
    unpaired SE of the difference with ``tau``. The n' in ``[onset, n_star)`` are the transition,
    tested neither way. Fails when ``n_star`` is None (no breakdown predicted) or either side has
    no evaluated n'.

    Returns
    -------
    dict
        ``holds``, ``reason``, ``threshold``, ``n_star``, ``onset``, ``below`` / ``past`` (the n'
        of each side), the worst margin of each side (``low_margin``: min of
        ``tau - E[TV] - z SE`` below, ``high_margin``: min of ``E[TV] - z SE - tau`` past; NaN for
        an empty side).
    """
    ns, tv, se = list(n_eval), list(tv), list(tv_se)
    if min(se) < 0:
        raise ValueError(f"tv_se must be >= 0, got {min(se)}")
    if not len(ns) == len(tv) == len(se):
        raise ValueError(
            f"n_eval, tv, tv_se must have one entry per n', got {len(ns)}, {len(tv)}, {len(se)}"
        )
    tau = float(factor) * float(level)
    out: dict = {"threshold": tau, "n_star": n_star, "onset": onset, "below": [], "past": []}
    if n_star is None:
        return {
            **out,
            "holds": False,
            "reason": "no breakdown predicted on the grid",
            "low_margin": float("nan"),
            "high_margin": float("nan"),
        }
    if onset is not None and onset > n_star:
        raise ValueError(f"onset must be <= n_star = {n_star}, got {onset}")
    onset = n_star if onset is None else onset
    out["onset"] = onset

    def sd(j):  # SE of E[TV](n') - tau
        return float(np.hypot(se[j], float(factor) * float(level_se)))

    below = [j for j, n in enumerate(ns) if n < onset]
    past = [j for j, n in enumerate(ns) if n >= n_star]
    low = [tau - tv[j] - float(z) * sd(j) for j in below]
    high = [tv[j] - float(z) * sd(j) - tau for j in past]
    out.update(
        below=[ns[j] for j in below],
        past=[ns[j] for j in past],
        low_margin=float(min(low)) if low else float("nan"),
        high_margin=float(min(high)) if high else float("nan"),
    )
    if not below or not past:
        return {
            **out,
            "holds": False,
            "reason": "an empty side: no evaluated n' "
            + ("below" if not below else "past")
            + f" n* = {n_star}",
        }
    ok_low, ok_high = min(low) > 0, min(high) > 0
    reason = "low below n* and high past it"
    if not ok_low:
        bad = [ns[j] for j, m in zip(below, low, strict=True) if m <= 0]
        reason = f"not low below n*: E[TV] not below {tau:.3g} by {z:g} SE at n' = {bad}"
    elif not ok_high:
        bad = [ns[j] for j, m in zip(past, high, strict=True) if m <= 0]
        reason = f"not high past n*: E[TV] not above {tau:.3g} by {z:g} SE at n' = {bad}"
    return {**out, "holds": bool(ok_low and ok_high), "reason": reason}


#: File of the analysis, beside the experiment's runs (written by
#: :mod:`pfntheory.pipelines.breakdown_run`).
BREAKDOWN_FILE = "breakdown.json"


def _log_rise(top, inside) -> tuple[float, float]:
    """``log(top / inside)`` of two (mean, SE) E[TV] values, with its delta-method SE."""
    return (
        float(np.log(top[0] / inside[0])),
        float(np.hypot(top[1] / top[0], inside[1] / inside[0])),
    )


def exp2_1_breakdown_claims(tf, pr, doc: dict, inside, z: float) -> list:
    """fig:exp2-1 as sec:generalization states it, on the loaded runs ``tf`` (TF) and ``pr``
    (TF^pr) and their entries of ``doc``
    (:func:`pfntheory.pipelines.breakdown_run.breakdown_analysis`); ``inside``: the boolean mask
    of the runs' eval n' in the pretraining range. Two claims: TF's E[TV] is low below its
    predicted breakdown and high past it (:func:`breakdown_test` on the committed evaluation and
    the evaluation beyond it), and TF^pr stays stable: its stack is certified to contract at every
    n' of the grid and its log E[TV] rise to the largest n' is smaller than TF's by ``z`` SE.
    Empty when ``doc`` lacks either run or holds the earlier diagnostic (no ``product``)."""
    from . import ClaimResult
    from .gating import diff_se, exceeds

    a, b = doc.get(tf.run_dir.name), doc.get(pr.run_dir.name)
    if a is None or b is None or "product" not in a or "product" not in b:
        return []
    # decided from the products, not from fields stored beside them
    n_star, onset = predicted_breakdown(a["product"]), predicted_breakdown(a["product"], stat="q90")
    certified = certified_contraction(b["product"])
    ns_b = a["beyond"]["n_eval"]
    t_in, p_in = tf.eval.average("tv", inside), pr.eval.average("tv", inside)
    ns = [int(n) for n in tf.eval.n_eval] + [int(n) for n in ns_b]
    tv = [float(v) for v in tf.eval.mean["tv"]] + list(a["beyond"]["tv"])
    se = [float(v) for v in tf.eval.se["tv"]] + list(a["beyond"]["tv_se"])
    test = breakdown_test(ns, tv, se, t_in[0], t_in[1], n_star, z=z, onset=onset)
    fa, fb = a["product"]["f_context"], b["product"]["f_context"]
    details = {
        "n_eval": ns,
        "tv_tf": tv,
        "tv_tf_se": se,
        "tv_pr_beyond": b["beyond"]["tv"],
        "tv_pr_beyond_se": b["beyond"]["tv_se"],
        "tv_tf_inside": t_in[0],
        "tv_pr_inside": p_in[0],
        "product_n": a["product"]["n"],
        "log_norm_tf_context_median": fa["median"],
        "frac_expanding_tf_context": fa["frac_expanding"],
        "log_norm_pr_context_max": [
            max(x, y) for x, y in zip(fb["max"], b["product"]["g_context"]["max"], strict=True)
        ],
        "predicted_breakdown_tf": n_star,
        "predicted_onset_tf": onset,
        "predicted_breakdown_pr": predicted_breakdown(b["product"]),
        "certified_contraction_pr": certified,
        "test": test,
        "measured": "E[TV] against twice its mean over the pretraining range, below and past the "
        "predicted breakdown n* (median over contexts of log ||prod_l M_l||_2 of the mean "
        "channel's context block > 0; onset: its 90% quantile > 0)",
    }
    margins = [m for m in (test["low_margin"], test["high_margin"]) if np.isfinite(m)]
    spike = ClaimResult(
        label="fig:exp2-1",
        key="fig_exp2_1.tf_spikes_beyond_breakdown",
        statement=f"unnormalised TF: its learned solver stops contracting at a predicted n* = "
        f"{n_star} (first contexts expand at n' = {onset}) and its E[TV] is low below the onset "
        f"and high from n* on (n' = {ns[0]}..{ns[-1]})",
        holds=bool(test["holds"]),
        observed=float(min(margins)) if margins else float("nan"),
        bound=0.0,
        tolerance=f"below the onset: E[TV] + {z:g} SE < {BREAKDOWN_FACTOR:g} x the in-range level "
        f"({test['threshold']:.3g}); from n* on: E[TV] - {z:g} SE above it; observed: the worse "
        f"margin ({test['reason']})",
        details=details,
    )
    lr_tf = _log_rise((tv[-1], se[-1]), t_in)
    lr_pr = _log_rise((b["beyond"]["tv"][-1], b["beyond"]["tv_se"][-1]), p_in)
    D, dse = diff_se(lr_tf, lr_pr)
    stable = exceeds(
        D,
        dse,
        z,
        minimal=float(np.log1p(MINIMAL_EFFECT)),  # a 10% ratio of the two rises
        key="fig_exp2_1.pr_stable_beyond_breakdown",
        label="fig:exp2-1",
        statement=f"normalised TF^pr stays stable where TF breaks down: its solver stack contracts "
        f"on every context drawn at n' = {a['product']['n'][0]}..{a['product']['n'][-1]} and its "
        f"log E[TV] rise to n' = {ns[-1]} is smaller than TF's",
        tolerance=f"log-rise(TF) - log-rise(TF^pr) > {z:g} SE (delta method, SE={dse:.2g}) and "
        f"max log ||prod_l M_l||_2 of TF^pr's context block (both channels) < 0 at every n' "
        f"(largest: {max(details['log_norm_pr_context_max']):.3g})",
        details={**details, "log_rise_tf": lr_tf[0], "log_rise_pr": lr_pr[0]},
    )
    stable = replace(stable, holds=stable.holds and certified)
    return [spike, stable]
