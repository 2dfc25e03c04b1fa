"""An independent set of hostile calls into the modules that landed with issues 38-52 (issue 52,
item 5): the latent GP (exact side, construction checks, classification PFN), the Chebyshev heads,
the multi-head selection and its confirmation cells, the gate's inputs, the shift cause, the report
readers, the oracle store and the audit records.

Independent of tests/test_contract.py's bad values: a seeded generator (:data:`SEED`) draws
:data:`N_CALLS` calls, each the contract's valid call of one callable (its declared values) with
one argument replaced by a mutation of its own, chosen by what the value is: a NaN, an infinity or a
negative number at a random position of an array, a negative variance or count, a fractional
count, a huge count, a wrong type (None, a string, an object), an unknown option name, a legacy
seed instead of a generator, an array with two extra axes, a context one point shorter than its
partner argument, a Gram matrix turned indefinite or asymmetric, labels in {0, 1} where {-1, +1}
is documented, an empty context, and inside result documents a NaN or a string at a random
per-instance leaf, an unpaired (shortened) list, a duplicated piece of evidence.

Tally, per call: *refused clearly* (a ValueError/TypeError whose message names the argument),
*refused vaguely*, *silent* (an answer to a bad input), *non-finite* (an answer with a NaN or an
infinity), *foreign* (another exception: IndexError, ZeroDivisionError, LinAlgError...), *hang*
(no answer in :data:`TIMEOUT_S`). Counted apart: the documented limits (the contract's
``KNOWN_GAPS`` and ``ACCEPTED``) and a finite answer to a lenient input (:data:`LENIENT`: an empty
input, two extra leading axes that an elementwise function broadcasts), as the contract counts
them. The test asserts >= 97% refused clearly of the
rest, and 0 silent, 0 non-finite, 0 foreign, 0 hangs; it prints the tally (``pytest -s``).
Run ``python tests/test_hostile_calls.py`` for the tally and every call that is not a clear
refusal.
"""

from __future__ import annotations

import copy
import math
import signal
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_contract as tc  # noqa: E402 - the declared callables and their valid calls

torch = tc.torch

SEED = 52
N_CALLS = 450
#: Seconds a call may take (a validated bad input is refused at once; the slowest valid call
#: here, a construction check of 10 Newton blocks, takes well under a second).
TIMEOUT_S = 10
#: Share of the calls (documented limits and empties apart) that must be refused clearly.
MIN_CLEAR = 0.97

#: The modules whose declared callables the calls go to.
MODULES = (
    "pfntheory.maths.latent.",
    "pfntheory.maths.latent_construction.",
    "pfntheory.maths.chebyshev.",
    "pfntheory.claims.latent.",
    "pfntheory.nn.latent.",
    "pfntheory.nn.chebyshev_heads.",
    "pfntheory.nn.selector.",
    "pfntheory.claims.multihead_select.",
    "pfntheory.claims.multihead_cells.",
    "pfntheory.claims.multihead_exact.",
    "pfntheory.maths.multihead_construction.",
    "pfntheory.claims.gating.",
    "pfntheory.infra.status.",
    "pfntheory.claims.decision.",
    "pfntheory.claims.shift_cause.",
    "pfntheory.report.tallies.",
    "pfntheory.report.guard.",
    "pfntheory.report.summary.",
    "pfntheory.nn.oracle_store.",
    "pfntheory.nn.audit.",
    "pfntheory.experiments.cost.",
)
#: Evidence that must count once: a list argument of these callables with an item repeated.
ONCE = {
    ("pfntheory.claims.multihead_select.merge_ceilings", "docs"),
    ("pfntheory.claims.multihead_cells.concat_batches", "docs"),
}
MATRICES = {"K", "G", "A"}
#: Callables that read every value of the documents they are given (the per-instance tables, the
#: accuracies, the reference's probabilities): a NaN, a string or an unpaired list inside is bad
#: input for them. The others read a document's identity or its verdicts only (``identity``,
#: the report's tallies of result rows), where those values are not read and any is valid.
READS_VALUES = {
    "pfntheory.claims.multihead_select.check_document",
    "pfntheory.claims.multihead_select.merge_ceilings",
    "pfntheory.claims.multihead_select.summarise_ceiling",
    "pfntheory.claims.multihead_select.ceiling_claim",
    "pfntheory.claims.multihead_select.tv_claim",
    "pfntheory.claims.multihead_select.coverage_claim",
    "pfntheory.claims.multihead_select.control_claim",
    "pfntheory.claims.multihead_cells.check_batch",
    "pfntheory.claims.multihead_cells.concat_batches",
    "pfntheory.claims.multihead_cells.with_cell",
    "pfntheory.claims.latent.method_table",
    "pfntheory.claims.latent.reference_noise",
    "pfntheory.claims.latent.laplace_targets",
    "pfntheory.claims.shift_cause.breaking_scale",
}


def targets() -> list[tuple[str, list[str]]]:
    """``(callable, its fuzzable arguments)`` for every declared callable of :data:`MODULES`."""
    out = []
    for q in tc.DRIVEN:
        if not q.startswith(MODULES) and q not in MODULES:
            continue
        args = sorted(tc.fuzzed_params(q))
        if args:
            out.append((q, args))
    return out


# ------------------------------------------------------------------------------------------------
# mutations
# ------------------------------------------------------------------------------------------------


def _leaves(x, path=()):
    """Paths to the numeric leaves and lists of numbers inside a document."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(x, list) and x and all(isinstance(v, (int, float)) for v in x):
        if not any(isinstance(v, bool) for v in x):
            yield path
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, (*path, i))
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path


def _set(doc, path, value):
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _array(v):
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf" and v.size:
        return v
    return None


def mutations(qual: str, arg: str, v, call: dict, rng: np.random.Generator) -> list[tuple]:
    """``[(label, bad value)]`` applicable to argument ``arg`` of value ``v`` in ``call``."""
    kind = tc.kind_of(arg, v)
    junk = [("None", None), ("str", "abc"), ("object", object())]
    out: list[tuple] = []
    if kind == "rng":
        return [("int seed", 3), ("RandomState", np.random.RandomState(3)), ("None", None)]
    if torch is not None and isinstance(v, torch.Generator):
        return [("int seed", 3), ("None", None)]
    if kind == "choice":
        return [("unknown", "no-such-" + "xyz"[rng.integers(3)]), ("int", 7), ("None", None)]
    if kind == "str":
        return [("int", 7), ("list", ["abc"])]
    if kind in ("float", "int"):
        out = [*junk, ("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf)]
        if kind == "int":
            out += [("fractional", 2.5), ("negative", -3)]
            if arg not in ("seed", "seed0"):
                out.append(("huge count", 10**13))
        if arg in tc.POSITIVE:
            out += [("zero", 0.0), ("negative", -float(rng.uniform(0.1, 5)))]
        if arg in tc.UNIT:
            out += [("above 1", 1.0 + float(rng.uniform(0.01, 2)))]
        return out
    a = _array(v)
    if a is not None:
        a = np.array(a, dtype=float)
        pos = int(rng.integers(a.size))
        out = [*junk]
        for label, val in (("nan entry", math.nan), ("inf entry", math.inf)):
            b = a.copy()
            b.flat[pos] = val
            out.append((label, b))
        if arg in tc.POSITIVE or arg in ("tau", "var", "kss", "s2", "v", "noise_var"):
            b = a.copy()
            b.flat[pos] = -abs(b.flat[pos]) - 0.5
            out.append(("negative entry", b))
        out.append(("two extra axes", a[None, None]))
        out.append(("empty", np.empty((0,) + a.shape[1:])))
        partners = [
            k
            for k, w in call.items()
            if k != arg and _array(w) is not None and np.shape(w)[:1] == a.shape[:1]
        ]
        if partners and a.shape[0] > 1:
            out.append(("one point short", a[:-1].copy()))
        if arg in MATRICES and a.ndim == 2 and a.shape[0] == a.shape[1]:
            lam, vec = np.linalg.eigh(a)
            out.append(("indefinite", a - (lam[0] + 1.0) * np.outer(vec[:, 0], vec[:, 0])))
            b = a.copy()
            b[0, -1] += 1.0
            out.append(("not symmetric", b))
        if arg == "y" and np.all(np.isin(a, (-1.0, 1.0))):
            out.append(("labels in {0, 1}", (a + 1) / 2))
        return out
    if torch is not None and isinstance(v, torch.Tensor):
        b = v.detach().clone()
        b.view(-1)[int(rng.integers(b.numel()))] = math.nan
        return [*junk, ("nan entry", b), ("numpy array", v.detach().numpy().copy())]
    if isinstance(v, dict):
        out = [*junk, ("list", [1, 2]), ("empty", {})]
        paths = list(_leaves(v)) if qual in READS_VALUES else []
        if paths:
            p = paths[int(rng.integers(len(paths)))]
            leaf = _get(v, p)
            if isinstance(leaf, list):
                out.append(("nested NaN", _set(v, p, [*leaf[:-1], math.nan])))
                out.append(("nested str", _set(v, p, "abc")))
                if len(leaf) > 1 and p[0] in ("tv", "bayes_acc", "sel_acc", "sel_tv_w", "coverage"):
                    out.append(("unpaired", _set(v, p, leaf[:-1])))
            else:
                out.append(("nested NaN", _set(v, p, math.nan)))
                out.append(("nested str", _set(v, p, "abc")))
        return out
    if isinstance(v, (list, tuple)):
        out = [*junk, ("int", 7), ("empty", [])]
        if (qual, arg) in ONCE:
            out.append(("repeated evidence", [*v, v[0]]))
        dicts = [i for i, item in enumerate(v) if isinstance(item, dict)]
        if dicts:
            i = dicts[int(rng.integers(len(dicts)))]
            for label, bad in mutations(qual, arg, v[i], {}, rng):
                if label.startswith("nested") or label == "unpaired":
                    out.append((label, [*v[:i], bad, *v[i + 1 :]]))
        return out
    return [*junk, ("int", 7)]


def draw_calls(n: int = N_CALLS, seed: int = SEED) -> list[tuple[str, str, str, object]]:
    """``n`` calls ``(callable, argument, mutation label, bad value)``, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    tg = targets()
    calls = []
    while len(calls) < n:
        q, args = tg[int(rng.integers(len(tg)))]
        arg = args[int(rng.integers(len(args)))]
        base = tc.base_call(q)
        v = base[arg] if arg in base else tc.fuzzed_params(q)[arg]
        muts = mutations(q, arg, v, base, rng)
        label, bad = muts[int(rng.integers(len(muts)))]
        calls.append((q, arg, label, bad))
    return calls


# ------------------------------------------------------------------------------------------------
# one call, classified
# ------------------------------------------------------------------------------------------------

CLEAR, VAGUE, SILENT, NONFINITE, FOREIGN, HANG = (
    "refused clearly",
    "refused vaguely",
    "silent",
    "non-finite",
    "foreign",
    "hang",
)
LIMIT, EMPTY = "documented limit", "empty or broadcast input answered"
#: Inputs whose meaning depends on the function, answered finitely (as the contract's lenient
#: values): an empty context or list (an empty list of rows has a tally) and two extra leading
#: axes (the elementwise functions broadcast them, documented).
LENIENT = {"empty", "two extra axes"}


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def _contract_label(label: str) -> str:
    return {"-inf": "inf", "huge count": "negative", "two extra axes": "extra dimension"}.get(
        label, label
    )


def classify(q: str, arg: str, label: str, bad) -> tuple[str, str]:
    """``(outcome, detail)`` of one hostile call (module docstring)."""
    if tc._known(f"{q}[{arg}={_contract_label(label)}]") is not None:
        return LIMIT, "KNOWN_GAPS"
    labels, _ = tc.ACCEPTED.get((q, arg), (frozenset(), ""))
    kwargs = {**tc.base_call(q), arg: bad}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = tc.call(q, kwargs)
    except _Hang:
        return HANG, f"no answer in {TIMEOUT_S} s"
    except (ValueError, TypeError) as err:
        msg = " ".join(str(err).split())
        return (CLEAR if tc._names(msg, arg) else VAGUE), f"{type(err).__name__}: {msg[:160]}"
    except Exception as err:  # noqa: BLE001 - what is measured
        return FOREIGN, f"{type(err).__name__}: {str(err)[:160]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if _contract_label(label) in labels:
        return LIMIT, "ACCEPTED"
    if tc._nonfinite(result) and q not in tc.DOCUMENTED_NONFINITE:
        return NONFINITE, repr(result)[:120]
    if label in LENIENT:
        return EMPTY, repr(result)[:120]
    return SILENT, repr(result)[:120]


def tally(calls) -> tuple[Counter, list[str]]:
    counts: Counter = Counter()
    notes = []
    for q, arg, label, bad in calls:
        outcome, detail = classify(q, arg, label, bad)
        counts[outcome] += 1
        if outcome not in (CLEAR, LIMIT, EMPTY):
            notes.append(f"{outcome}: {q}[{arg}={label}]: {detail}")
    return counts, notes


def summary(counts: Counter) -> str:
    judged = sum(counts.values()) - counts[LIMIT] - counts[EMPTY]
    share = counts[CLEAR] / judged if judged else float("nan")
    return (
        f"{sum(counts.values())} hostile calls: {counts[CLEAR]} of {judged} refused clearly "
        f"({share:.1%}); vague {counts[VAGUE]}, silent {counts[SILENT]}, non-finite "
        f"{counts[NONFINITE]}, foreign {counts[FOREIGN]}, hang {counts[HANG]}; counted apart: "
        f"{counts[LIMIT]} documented limits, {counts[EMPTY]} empty inputs answered"
    )


@pytest.mark.skipif(torch is None, reason="the torch side (nn/) is among the targets")
def test_hostile_calls_are_refused_clearly():
    """Fails when fewer than 97% of the judged calls are refused clearly, or when one call is
    answered silently (a wrong answer to a bad input), with a NaN/inf, by a foreign exception or
    not within the timeout; the message lists those calls."""
    calls = draw_calls()
    assert len(calls) >= 400
    assert len({q for q, *_ in calls}) >= 40, "the generator reaches too few callables"
    counts, notes = tally(calls)
    print("\n" + summary(counts))
    judged = sum(counts.values()) - counts[LIMIT] - counts[EMPTY]
    bad = [n for n in notes if not n.startswith(VAGUE)]
    assert not bad, summary(counts) + "\n" + "\n".join(bad)
    assert counts[CLEAR] >= MIN_CLEAR * judged, summary(counts) + "\n" + "\n".join(notes)


if __name__ == "__main__":
    counts, notes = tally(draw_calls())
    print(summary(counts))
    print("\n".join(notes))
