"""Hostile-input suite over the public API (issue 41's measure): how bad input is answered.

Three suites, each call classified as

* ``refused, naming the argument`` -- a ValueError/TypeError whose message names the argument (or,
  for a file, names the file);
* ``refused, vague`` -- a ValueError/TypeError that does not name it;
* ``foreign exception`` -- anything else (KeyError, AttributeError, UnicodeDecodeError...), or a
  hang;
* ``silently accepted`` -- an answer (a non-finite one included) to a bad input.

Suites:

1. the hand-written semantic cases of tests/test_fuzz_library.py (``CASES``);
2. the introspective contract cases of tests/test_contract.py for the modules issue 41 names
   (tree, convergence, multihead, mixture_tv, the gate, the case-study budget, stats, richardson,
   experiments, nn), strict bad values only; ``nn.attention``'s kernels are the documented limit
   (trusted inner functions behind the model's validated forward, ``KNOWN_GAPS``) and the values
   accepted by design (``ACCEPTED``) are counted apart;
3. :data:`ISSUE41` below: the calls issue 41 lists by name (None / {} inputs, NaN waits, huge
   sizes, overflowing steps, corrupt and non-UTF-8 files, out-of-range curve values).

Run ``python benchmarks/hostile_inputs.py`` (about a minute; writes
benchmarks/results/hostile_inputs.json).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import signal
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

REFUSED, VAGUE, FOREIGN, ACCEPTED = (
    "refused, naming the argument",
    "refused, vague",
    "foreign exception",
    "silently accepted",
)


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def classify(fn, names: tuple[str, ...], timeout_s: int = 20) -> tuple[str, str]:
    """Call ``fn()`` and classify its answer to a bad input (see the module docstring)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = fn()
    except _Hang:
        return FOREIGN, "hang"
    except (ValueError, TypeError) as err:
        msg = str(err)
        named = any(
            re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg) for n in names
        )
        return (REFUSED if named else VAGUE), f"{type(err).__name__}: {msg[:160]}"
    except Exception as err:  # noqa: BLE001 - what is measured
        return FOREIGN, f"{type(err).__name__}: {str(err)[:160]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return ACCEPTED, repr(result)[:120]


# ------------------------------------------------------------------------------------------------
# suite 3: the calls issue 41 names
# ------------------------------------------------------------------------------------------------


def _curve_dir(tmp: Path, name: str, change: dict | None = None, raw: bytes | None = None) -> Path:
    point = {
        "step": 10,
        "n": 4,
        "tv": 0.3,
        "tv_se": 0.01,
        "nll": 1.0,
        "nll_se": 0.1,
        "coverage90": 0.9,
        "coverage90_se": 0.01,
        "crps": 0.1,
        "crps_se": 0.01,
        "tv_instances": [0.2, 0.4],
    }
    if change is not None:
        point.update(change)
        point = {k: v for k, v in point.items() if v is not _DROP}
    d = tmp / name
    d.mkdir()
    doc = {"schema": 1, "n_eval": [4], "points": [point]}
    (d / "learning_curve.json").write_bytes(raw if raw is not None else json.dumps(doc).encode())
    return d


_DROP = object()


def issue41_calls(tmp: Path) -> list[tuple[str, tuple[str, ...], object]]:  # noqa: PLR0915
    """``(id, names the message must contain, thunk)`` of each hostile call."""
    import torch

    from pfntheory.base import stats
    from pfntheory.casestudy.pfn import budget_scales
    from pfntheory.claims import ClaimResult, gating
    from pfntheory.experiments import cost, scales, state
    from pfntheory.experiments.results import LoadedRun
    from pfntheory.infra import runs
    from pfntheory.infra.config import ModelSpec, TaskSpec
    from pfntheory.infra.convergence import doubling_status, final_instances, read_learning_curve
    from pfntheory.infra.tree import EvalSpec, RunSpec, spec_hash
    from pfntheory.maths import mixture_tv, richardson
    from pfntheory.nn import fused
    from pfntheory.nn.fast_oracle import sample_batch_fast
    from pfntheory.nn.head import PsiHead
    from pfntheory.nn.priors import sample_batch

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(5, 5))
    A = Z @ Z.T + 0.1 * np.eye(5)
    Y = rng.normal(size=5)
    spec = RunSpec(
        task=TaskSpec(kind="rbf", d=2),
        model=ModelSpec(score="rbf", L=2, C=8),
        n_min=4,
        n_max=6,
        steps=4,
        lr=1e-2,
        batch_size=4,
    )
    run = LoadedRun(spec, tmp / "nowhere")
    claim = ClaimResult(label="x", statement="s", holds=True, observed=0.1, bound=0.2, key="k")
    task = TaskSpec(kind="rbf", d=2)
    gen = torch.Generator().manual_seed(0)
    bad_json = tmp / "bad.json"
    bad_json.write_bytes(b'{"x": "\xff\xfe"}')
    C = []

    def add(id_, names, thunk):
        C.append((id_, tuple(names), thunk))

    # exact side
    add(
        "richardson eta=10 L=2000 (overflow)",
        ["eta"],
        lambda: richardson.richardson(A, Y, 10, 2000),
    )
    add("richardson eta=nan", ["eta"], lambda: richardson.richardson(A, Y, math.nan, 3))
    add("richardson A=-I", ["A"], lambda: richardson.richardson(-np.eye(2), np.ones(2), 0.5, 3))
    add("richardson check_spd='yes'", ["check_spd"],
        lambda: richardson.richardson(A, Y, 0.1, 3, check_spd="yes"))  # fmt: skip
    add("stats.t_interval level=2", ["level"], lambda: stats.t_interval([1.0, 2.0], 2.0))
    add("stats.t_interval x=[]", ["x"], lambda: stats.t_interval([]))
    add("stats.slope_ci one point", ["x", "y"], lambda: stats.slope_ci([1.0], [1.0]))
    add("mixture_tv.gaussian_tv v1=0", ["v1"], lambda: mixture_tv.gaussian_tv(0, 0, 1, 1))
    add("mixture_tv.gaussian_tv m1=nan", ["m1"], lambda: mixture_tv.gaussian_tv(math.nan, 1, 1, 1))
    add("mixture_tv.mixture_tv p=None", ["p"], lambda: mixture_tv.mixture_tv(None, None))
    add("mixture_tv.mixture_tv_bound w=None", ["w"],
        lambda: mixture_tv.mixture_tv_bound(None, [0.5, 0.5], [0.1, 0.1]))  # fmt: skip
    # tree
    add("RunSpec steps=0", ["steps"], lambda: dataclasses.replace(spec, steps=0))
    add("EvalSpec n_eval=()", ["n_eval"], lambda: EvalSpec(n_eval=(), n_instances=8))
    add("spec_hash length=0", ["length"], lambda: spec_hash({}, 0))
    add("spec_hash obj=nan", ["obj"], lambda: spec_hash(math.nan))
    # convergence readers
    for what, change in {
        "tv=5": {"tv": 5.0},
        "tv=nan": {"tv": math.nan},
        "tv_instances out of [0, 1]": {"tv_instances": [0.1, 1.5]},
        "step=-1": {"step": -1},
        "no step": {"step": _DROP},
        "coverage=2": {"coverage90": 2.0},
        "tv_se=-1": {"tv_se": -1.0},
    }.items():
        d = _curve_dir(tmp, re.sub(r"\W", "_", what), change)
        add(f"read_learning_curve {what}", [str(d)], lambda d=d: read_learning_curve(d))
    d = _curve_dir(tmp, "non_utf8", raw=b'{"schema": 1, "points": ["\xff"]}')
    add("read_learning_curve non-UTF-8", [str(d)], lambda d=d: read_learning_curve(d))
    add("doubling_status short=None", ["short"], lambda: doubling_status(None, []))
    add("doubling_status tol=2", ["tol"], lambda: doubling_status([], [], tol=2.0))
    add("final_instances metric=nll", ["metric"], lambda: final_instances([], "nll"))
    # files
    add("runs.load_json non-UTF-8", [str(bad_json)], lambda: runs.load_json(bad_json))
    for v in (math.nan, math.inf, -1.0, "1"):
        add(f"root_lock wait_s={v!r}", ["wait_s"],
            lambda v=v: runs.root_lock(tmp, wait_s=v).__enter__())  # fmt: skip
    add("root_lock poll_s=0", ["poll_s"], lambda: runs.root_lock(tmp, poll_s=0).__enter__())
    # experiments
    add("cost.training_seconds None", ["spec"], lambda: cost.training_seconds(None))
    add("cost.training_terms {}", ["spec"], lambda: cost.training_terms({}))
    add("cost.training_seconds cost={}", ["cost"], lambda: cost.training_seconds(spec, {}))
    add("cost.cpu_seconds None", ["spec_or_experiment"], lambda: cost.cpu_seconds(None))
    add("scales.by_cost None", ["r"], lambda: scales.by_cost(None))
    add("scales.paper_curves {}", ["paper"], lambda: scales.paper_curves({}))
    add("scales.cpu_design None", ["paper"], lambda: scales.cpu_design(None, 1))
    add("scales.budget_runs None", ["design"], lambda: scales.budget_runs(None, bool))
    add("state.run_dir_of None", ["experiment"], lambda: state.run_dir_of(None, spec))
    add("state.run_dir_of spec={}", ["spec"], lambda: state.run_dir_of("x", {}))
    add("state.run_dir_of spec=None", ["spec"], lambda: state.run_dir_of("x", None))
    # the gate
    add("gating.run_convergence None", ["run"], lambda: gating.run_convergence(None))
    add("gating.run_convergence {}", ["run"], lambda: gating.run_convergence({}))
    add("gating.doubling_statuses None", ["runs"], lambda: gating.doubling_statuses(None))
    add("gating.doubling_statuses {}", ["runs"], lambda: gating.doubling_statuses({}))
    add(
        "gating.budget_outcomes replay=None",
        ["replay"],
        lambda: gating.budget_outcomes([run], None),
    )
    add("gating.budget_outcomes runs=None", ["runs"], lambda: gating.budget_outcomes(None, bool))
    add("gating.gate runs=None", ["runs"], lambda: gating.gate(claim, None))
    add("gating.gate statuses={}", ["statuses"], lambda: gating.gate(claim, [run], statuses={}))
    add("gating.gate statuses=[]", ["statuses"], lambda: gating.gate(claim, [run], statuses=[]))
    add("gating.tv_beats a=None", ["a"], lambda: gating.tv_beats(None, run, 3.0))
    add("gating.tv_beats z=nan", ["z"], lambda: gating.tv_beats(run, run, math.nan))
    add("gating.diff_se a=None", ["a"], lambda: gating.diff_se(None, (1.0, 0.1)))
    add("gating.exceeds se=-1", ["se"], lambda: gating.exceeds(1.0, -1.0, 3.0))
    # case-study budget
    add("budget_scales factor=3", ["factor"], lambda: budget_scales("cpu", 3))
    add("budget_scales factor=1", ["factor"], lambda: budget_scales("cpu", 1))
    add("budget_scales scale=None", ["scale"], lambda: budget_scales(None, 2))
    # nn
    add("PsiHead learn_scales='yes'", ["learn_scales"], lambda: PsiHead("yes", 0.01))
    add("PsiHead tau_min=-1", ["tau_min"], lambda: PsiHead(True, -1.0))
    add("sample_batch_fast n=200000", ["n"], lambda: sample_batch_fast(task, 4, 200_000, gen))
    add(
        "sample_batch_fast batch_size=0", ["batch_size"], lambda: sample_batch_fast(task, 0, 4, gen)
    )
    add("sample_batch_fast generator=None", ["generator"],
        lambda: sample_batch_fast(task, 2, 4, None))  # fmt: skip
    add("sample_batch n=200000", ["n"], lambda: sample_batch(task, 4, 200_000, gen))
    add("fused.enabled flag='no'", ["flag"], lambda: fused.enabled("no").__enter__())
    return C


def issue41_suite() -> Counter:
    tally: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for id_, names, thunk in issue41_calls(Path(tmp)):
            kind, detail = classify(thunk, names)
            tally[kind] += 1
            if kind != REFUSED:
                print(f"  [issue 41] {kind}: {id_}: {detail}")
    return tally


# ------------------------------------------------------------------------------------------------
# suites 1 and 2: the fuzz suites of tests/
# ------------------------------------------------------------------------------------------------


def fuzz_library_suite() -> Counter:
    import test_fuzz_library as fl

    kinds = {
        "clear": REFUSED,
        "vague": VAGUE,
        "other exception": FOREIGN,
        "hang": FOREIGN,
        "accepted": ACCEPTED,
        "accepted NaN": ACCEPTED,
    }
    tally: Counter = Counter()
    for c in fl.CASES:
        kind, detail = fl.outcome(c)
        tally[kinds[kind]] += 1
        if kinds[kind] != REFUSED:
            print(f"  [fuzz_library] {kind}: {c.id}: {detail[:140]}")
    return tally


#: Modules of the contract suite (issue 41: the new public functions).
CONTRACT_MODULES = (
    "pfntheory.infra.tree",
    "pfntheory.infra.convergence",
    "pfntheory.maths.multihead_construction",
    "pfntheory.maths.mixture_tv",
    "pfntheory.claims.gating",
    "pfntheory.claims.casestudy",
    "pfntheory.casestudy.pfn",
    "pfntheory.base.stats",
    "pfntheory.maths.richardson",
    "pfntheory.experiments",
    "pfntheory.nn",
)


def contract_suite() -> tuple[Counter, Counter]:
    """Strict bad values of the contract test on :data:`CONTRACT_MODULES`; the second counter holds
    the documented limits (nn.attention's trusted kernels, ``KNOWN_GAPS``; values a parameter
    takes by design, ``ACCEPTED``: a NaN bound of ``coverage_summary`` does not cover)."""
    import test_contract as tc

    tally: Counter = Counter()
    limit: Counter = Counter()
    for q in tc.DRIVEN:
        if not q.startswith(CONTRACT_MODULES):
            continue
        try:
            cases = tc.cases_of(q)
        except LookupError:  # no valid base call declared in tests/test_contract.py
            print(f"  [contract] not driven (no valid base call): {q}")
            continue
        for c in cases:
            if not c.bad.strict:
                continue
            ok, detail = tc.verdict(c)
            if ok:
                kind = REFUSED if not detail.startswith("answered") else ACCEPTED
            elif detail.startswith("refused without naming"):
                kind = VAGUE
            elif detail.startswith(("foreign", "hang")):
                kind = FOREIGN
            else:
                kind = ACCEPTED
            by_design = c.bad.label in tc.ACCEPTED.get((c.qual, c.arg), (frozenset(), ""))[0]
            documented = tc._known(c.id) or by_design
            (limit if documented else tally)[kind] += 1
            if kind != REFUSED and not documented:
                print(f"  [contract] {kind}: {c.id}: {detail[:140]}")
    return tally, limit


def main() -> dict:
    suites = {
        "fuzz_library (tests/test_fuzz_library.py CASES)": fuzz_library_suite(),
        "issue 41 calls (this file)": issue41_suite(),
    }
    contract, limit = contract_suite()
    suites["contract, strict bad values (tests/test_contract.py)"] = contract
    total: Counter = Counter()
    for t in suites.values():
        total.update(t)
    suites["all"] = total
    out = {}
    for name, t in suites.items():
        n = sum(t.values())
        out[name] = {"calls": n, **{k: t[k] for k in (REFUSED, VAGUE, FOREIGN, ACCEPTED)}}
        print(
            f"{name}: {n} calls, refused naming the argument {t[REFUSED]} "
            f"({100 * t[REFUSED] / max(n, 1):.1f}%), vague {t[VAGUE]}, foreign {t[FOREIGN]}, "
            f"silently accepted {t[ACCEPTED]}"
        )
    out["documented limits (KNOWN_GAPS: nn.attention kernels; ACCEPTED)"] = dict(limit)
    print(f"documented limits (nn.attention's trusted kernels, ACCEPTED values): {dict(limit)}")
    path = ROOT / "benchmarks" / "results" / "hostile_inputs.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
