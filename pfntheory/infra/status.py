"""The convergence status of a trained run: one frozen type (:class:`Status`) that both
convergence tests of :mod:`pfntheory.infra.convergence` return and the one gate of every trained
verdict (:func:`pfntheory.claims.gating.decide`) reads, and its one line of text
(:func:`trend_text`), rendered from the fields once. Torch-free."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from pfntheory.base._checks import (
    ArgumentTypeError,
    checked,
    choice,
    finite_or_nan,
    finite_scalar,
    keys,
    nonneg_int,
    nonneg_scalar,
    optional,
    sequence,
    text,
)
from pfntheory.base.stats import Z_MARGIN

__all__ = [
    "ALPHA",
    "START_TOL",
    "Status",
    "as_status",
    "no_curve",
    "doubling_where",
    "start_vs_end",
    "trend_text",
]

#: One-sided level of each of the two tests (the interval is the 90% confidence interval).
ALPHA = 0.05
NOMINAL = {"coverage90": 0.9}
#: A run's final value is *worse than its start* at one n' when it exceeds its value at step 0 (its
#: initialisation) by more than Z_MARGIN standard errors (unpaired SE of the two, so the test
#: is conservative; one-sided normal tail 0.13%: the margin of the trained claims) and by more than
#: START_TOL of the step-0 value (the plateau test's 10% equivalence tolerance: a change within it
#: is no change there either, so a run 3% worse than its start is not called worse).
START_TOL = 0.10
_NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class Status:
    """The convergence status of one run, returned by both tests (:func:`plateau_status`, the
    log-half trend test, and :func:`doubling_status`, budget doubling) and read by the one gate of
    every trained verdict (:func:`pfntheory.claims.gating.decide`).

    Fields: ``state`` (one of :data:`STATES`, or "no curve" / "no half-budget run"), ``test``
    ("log-half", "doubling" or "none"), ``criterion`` (the test's rule in words), ``last_step``,
    ``value`` (the metric at the last step: the model the status reads), ``fall`` (the fitted fall
    over the last log-half, or the paired fall bought by doubling the budget), ``se`` and ``ci``
    (its ``1 - 2 alpha`` interval), ``tol`` (the equivalence tolerance, in the metric's units),
    ``halfwidth`` and ``resolvable`` (``halfwidth <= tol``), ``jitter`` and ``instance_se`` (the
    log-half test's residual SD and held-out SE), ``n_points``, ``mid_step``, ``alpha``,
    ``short_step`` and ``n_instances`` (budget doubling), ``start`` (per n' evaluated at step 0:
    ``(n', value at step 0, its SE, value at the last step, its SE)``), ``worse_than_start`` (the
    n' where the last value exceeds the step-0 value by more than :data:`Z_MARGIN` SE and
    :data:`START_TOL` of it),
    ``model`` (which model the values are of) and ``run`` / ``half_run`` (run names, where known);
    ``by_n`` (budget doubling: per n' of the two final points ``(n', E[TV] at S, E[TV] at 2S,
    paired SE of the change)``, where the doubled budget made the run better or worse).

    Read by attribute (it is no mapping); :meth:`to_dict` is its JSON form and :func:`as_status`
    reads that form (or a former dict status) back.

    The fields are checked at construction (and by :meth:`replace`), each bad one refused naming
    it: ``state`` a non-empty string, ``test`` one of :data:`TESTS`, steps and counts integers
    ``>= 0`` (or None where optional), ``alpha`` in (0, 0.5), the fitted quantities real numbers
    that are finite or NaN (NaN: not fitted; ``value`` may also be +-inf, the metric as read), the
    standard errors, tolerance, half-width and jitter ``>= 0``, ``ci`` an interval ``lo <= hi``
    (or NaN, NaN), ``start`` rows of five finite numbers (SEs ``>= 0``) and ``worse_than_start``
    among their n'.
    """

    state: str
    criterion: str
    test: str = "log-half"
    last_step: int | None = None
    value: float = _NAN
    fall: float = _NAN
    se: float = _NAN
    ci: tuple[float, float] = (_NAN, _NAN)
    tol: float = _NAN
    halfwidth: float = _NAN
    resolvable: bool | None = None
    jitter: float = _NAN
    instance_se: float = _NAN
    n_points: int = 0
    mid_step: int | None = None
    alpha: float = ALPHA
    short_step: int | None = None
    n_instances: int = 0
    start: tuple[tuple[int, float, float, float, float], ...] = ()
    worse_than_start: tuple[int, ...] = ()
    model: str = "the run's final weights"
    run: str = ""
    half_run: str = ""
    by_n: tuple[tuple[int, float, float, float], ...] = ()

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not isinstance(self.state, str) or not self.state.strip():
            raise ArgumentTypeError(f"state must be a non-empty string, got {self.state!r}")
        for k in ("criterion", "model", "run", "half_run"):
            text(getattr(self, k), k)
        choice(self.test, "test", TESTS)
        for k in ("last_step", "mid_step", "short_step"):
            put(self, k, optional(nonneg_int)(getattr(self, k), k))
        for k in ("n_points", "n_instances"):
            put(self, k, nonneg_int(getattr(self, k), k))
        put(self, "value", finite_or_nan(self.value, "value", allow_inf=True))
        put(self, "fall", finite_or_nan(self.fall, "fall"))
        for k in ("se", "tol", "halfwidth", "jitter", "instance_se"):
            put(self, k, finite_or_nan(getattr(self, k), k, nonneg=True))
        if self.resolvable is not None and not isinstance(self.resolvable, bool):
            raise ArgumentTypeError(f"resolvable must be None or a bool, got {self.resolvable!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)):
            raise ArgumentTypeError(f"alpha must be a number in (0, 0.5), got {self.alpha!r}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be a number in (0, 0.5), got {self.alpha!r}")
        put(self, "ci", _ci(self.ci))
        put(self, "start", _start(self.start))
        ns = {row[0] for row in self.start}
        worse = tuple(
            nonneg_int(n, "worse_than_start")
            for n in _seq(self.worse_than_start, "worse_than_start")
        )
        if set(worse) - ns:
            raise ValueError(
                f"worse_than_start must name n' of start, got {sorted(set(worse) - ns)} not in "
                f"{sorted(ns)}"
            )
        put(self, "worse_than_start", worse)
        put(self, "by_n", _by_n(self.by_n))

    @property
    def plateaued(self) -> bool:
        return self.state == "plateaued"

    @property
    def diverging(self) -> bool:
        """Significantly worse at the end of the test: a rising trend, or the doubled budget's
        model worse than the single budget's."""
        return self.state == "diverging"

    @property
    def got_worse(self) -> bool:
        """Training made the model read worse: diverging, or worse than its initialisation at
        some n' (docs/verdicts.md, "Runs that get worse")."""
        return self.diverging or bool(self.worse_than_start)

    @property
    def change(self) -> float:  # the former name of ``fall``
        return self.fall

    @property
    def trend(self) -> str:
        return trend_text(self)

    def replace(self, **changes) -> Status:
        return dataclasses.replace(self, **changes)

    def within(self, n_min: int, n_max: int) -> Status:
        """This status with ``worse_than_start`` kept to the n' inside the pretraining range
        ``[n_min, n_max]``: beyond it, a model worse than its initialisation is generalisation
        (what fig:exp2-1 measures), not training making the model worse."""
        return dataclasses.replace(
            self, worse_than_start=tuple(n for n in self.worse_than_start if n_min <= n <= n_max)
        )

    def to_dict(self) -> dict:
        """The fields and the state's booleans, JSON-ready (tuples as lists)."""
        d = dataclasses.asdict(self)
        return {**d, "plateaued": self.plateaued, "diverging": self.diverging}


#: The tests a :class:`Status` comes from ("none": no test could read the run).
TESTS = ("log-half", "doubling", "none")


def _seq(x, name: str) -> list:
    if x is None or isinstance(x, (str, bytes, Mapping)):
        raise ArgumentTypeError(f"{name} must be a sequence, got {x!r}")
    try:
        return list(x)
    except TypeError as err:
        raise ArgumentTypeError(f"{name} must be a sequence, got {x!r}") from err


def _ci(x) -> tuple[float, float]:
    """A status's ``ci``: an interval ``(lo, hi)`` of finite numbers with ``lo <= hi``, or
    ``(NaN, NaN)`` (no trend fitted)."""
    items = _seq(x, "ci")
    if len(items) != 2:
        raise ValueError(f"ci must be a pair (lo, hi), got {len(items)} values")
    lo, hi = (finite_or_nan(v, "ci") for v in items)
    if math.isnan(lo) != math.isnan(hi):
        raise ValueError(f"ci must be two numbers or two NaN, got ({lo}, {hi})")
    if lo > hi:
        raise ValueError(f"ci must be an interval with lo <= hi, got ({lo}, {hi})")
    return lo, hi


def _start(x) -> tuple[tuple[int, float, float, float, float], ...]:
    """A status's ``start``: rows ``(n', value at step 0, SE, value at the end, SE)``."""
    rows = []
    for i, row in enumerate(_seq(x, "start")):
        r = _seq(row, f"start[{i}]")
        if len(r) != 5:
            raise ValueError(f"start[{i}] must be (n', start, se, end, se), got {len(r)} values")
        n = nonneg_int(r[0], f"start[{i}][0] (n')")
        a, b = finite_scalar(r[1], f"start[{i}][1]"), finite_scalar(r[3], f"start[{i}][3]")
        sa = nonneg_scalar(r[2], f"start[{i}][2] (SE)")
        sb = nonneg_scalar(r[4], f"start[{i}][4] (SE)")
        rows.append((n, a, sa, b, sb))
    return tuple(rows)


def _a_status(x, name: str) -> Status:
    if not isinstance(x, Status):
        raise ArgumentTypeError(f"{name} must be a Status, got {type(x).__name__}")
    return x


def _by_n(x) -> tuple[tuple[int, float, float, float], ...]:
    """A doubling status's ``by_n``: rows ``(n', value at S, value at 2S, paired SE)``."""
    rows = []
    for i, row in enumerate(_seq(x, "by_n")):
        r = _seq(row, f"by_n[{i}]")
        if len(r) != 4:
            raise ValueError(f"by_n[{i}] must be (n', at S, at 2S, se), got {len(r)} values")
        rows.append(
            (
                nonneg_int(r[0], f"by_n[{i}][0] (n')"),
                finite_scalar(r[1], f"by_n[{i}][1]"),
                finite_scalar(r[2], f"by_n[{i}][2]"),
                nonneg_scalar(r[3], f"by_n[{i}][3] (SE)"),
            )
        )
    return tuple(rows)


@checked(st=lambda x, name: _a_status(x, name))
def doubling_where(st: Status) -> str:
    """Where a budget-doubling status's change sits, per n' (empty without ``by_n``): e.g.
    "n'=128: 0.123 -> 0.110 (-11%, 9.0 SE), n'=512: 0.40 -> 0.57 (+42%, 17 SE)"."""
    parts = []
    for n, a, b, se in st.by_n:
        rel = f"{100 * (b - a) / a:+.0f}%" if a else "n/a"
        t = f", {(b - a) / se:+.1f} SE" if se > 0 else ""
        parts.append(f"n'={n}: {a:.3g} at {st.short_step} -> {b:.3g} at {st.last_step} ({rel}{t})")
    return ", ".join(parts)


@checked(criterion=text, last_step=optional(nonneg_int), state=text)
def no_curve(criterion: str, last_step: int | None = None, state: str = "no curve") -> Status:
    """The status of a run the test cannot read (no learning curve, no half-budget partner)."""
    return Status(state=state, criterion=criterion, test="none", last_step=last_step)


def _points(x, name: str) -> list:
    """Learning-curve points: a sequence of mappings."""
    items = sequence(x, name, non_empty=False)
    for i, p in enumerate(items):
        if not isinstance(p, Mapping):
            raise ArgumentTypeError(f"{name}[{i}] must be a learning-curve point (a dict)")
    return items


#: The metrics of a learning curve (pfntheory.infra.runs.CURVE_METRICS).
_METRICS = ("tv", "nll", "coverage90", "crps")


@checked(points=_points, metric=lambda x, name: choice(x, name, _METRICS))
def start_vs_end(points: Sequence[dict], metric: str) -> tuple[tuple, tuple[int, ...]]:
    """Per n' at step 0 and at the last step: ``(n', start, se, end, se)``, and the n' where the
    end is worse than the start by more than :data:`Z_MARGIN` SE (for coverage, farther from
    0.9)."""
    if not points or not all(metric in p and metric + "_se" in p for p in points):
        return (), ()
    last = max(int(p["step"]) for p in points)
    by = {(int(p["step"]), int(p["n"])): p for p in points}
    nominal = NOMINAL.get(metric)
    rows, worse = [], []
    for (step, n), p0 in sorted(by.items()):
        if step != 0 or (last, n) not in by or last == 0:
            continue
        p1 = by[(last, n)]
        a, sa, b, sb = (
            float(p0[metric]),
            float(p0[metric + "_se"]),
            float(p1[metric]),
            float(p1[metric + "_se"]),
        )
        rows.append((n, a, sa, b, sb))
        da, db = (abs(a - nominal), abs(b - nominal)) if nominal is not None else (a, b)
        if db - da > max(Z_MARGIN * math.hypot(sa, sb), START_TOL * abs(da)):
            worse.append(n)
    return tuple(rows), tuple(worse)


def trend_text(status: Status | Mapping) -> str:
    """The one line of a :class:`Status` (either test), e.g. "still improving at 2000 steps (0.123;
    fitted fall over the last log-half 0.021, 90% CI [0.012, 0.030], tolerance 0.0123; jitter
    0.004 vs instance se 0.001)", with where the run ended worse than its start."""
    st = status if isinstance(status, Status) else as_status(status)
    worse = _worse_text(st)
    if st.test == "none":
        return f"{st.state} ({st.criterion})" + worse
    if not math.isfinite(st.fall):
        return f"{st.state} at {st.last_step} steps ({st.value:.4g}; {st.criterion})" + worse
    pct = 100 * (1 - 2 * st.alpha)
    lo, hi = st.ci
    if st.test == "doubling":
        return (
            f"{st.state} by budget doubling: E[TV] {st.value:.4g} at {st.last_step} steps, "
            f"fall from {st.short_step} steps {st.fall:.3g} ({pct:g}% CI [{lo:.3g}, {hi:.3g}], "
            f"paired over {st.n_instances} held-out instances), tolerance {st.tol:.3g}" + worse
        )
    return (
        f"{st.state} at {st.last_step} steps ({st.value:.4g}; fitted fall over the last log-half "
        f"{st.fall:.3g}, {pct:g}% CI [{lo:.3g}, {hi:.3g}], tolerance {st.tol:.3g}; "
        f"jitter {st.jitter:.3g} vs instance se {st.instance_se:.3g})"
        + (
            f"; the CI's half-width {st.halfwidth:.3g} exceeds the tolerance, so at this "
            "jitter and these steps even a flat curve could not be called plateaued"
            if st.resolvable is False
            else ""
        )
        + worse
    )


def _worse_text(st: Status) -> str:
    """Where the run ended worse than its start (empty when nowhere)."""
    if not st.worse_than_start:
        return ""
    at = {r[0]: r for r in st.start}
    parts = [
        f"n'={n}: {at[n][1]:.3g} at step 0, {at[n][3]:.3g} at the end" for n in st.worse_than_start
    ]
    return "; ended worse than its initialisation at " + ", ".join(parts)


#: The float fields of a :class:`Status` whose NaN a JSON record may hold as null.
_NAN_FIELDS = ("value", "fall", "se", "tol", "halfwidth", "jitter", "instance_se")


def status_rule(*required: str):
    """An argument rule (:func:`pfntheory.base._checks.checked`): a :class:`Status` as it is, or a
    status mapping holding ``required`` read as one (:func:`as_status`); anything else is refused
    naming the argument."""

    def rule(x, name: str) -> Status:
        return x if isinstance(x, Status) else as_status(keys(*required)(x, name))

    return rule


def as_status(status: Mapping) -> Status:
    """A former dict status as a :class:`Status` (its known fields; ``change`` as ``fall``; a JSON
    null in a fitted quantity or ``ci`` as the NaN it was written from). Its fields are checked as
    :class:`Status` checks them."""
    d = keys("state")(status, "status")
    fields = Status.__dataclass_fields__
    kw = {"criterion": "", **{k: v for k, v in d.items() if k in fields}}
    for k in _NAN_FIELDS:
        if k in kw and kw[k] is None:
            kw[k] = _NAN
    if isinstance(kw.get("ci"), (list, tuple)):
        kw["ci"] = tuple(_NAN if v is None else v for v in kw["ci"])
    if "fall" not in kw and "change" in d:
        kw["fall"] = d["change"]
    for k in ("ci", "start", "worse_than_start"):
        if k in kw:
            kw[k] = tuple(tuple(x) if isinstance(x, list) else x for x in kw[k])
    if "test" not in kw:
        if kw.get("short_step") is not None:
            kw["test"] = "doubling"
        elif not math.isfinite(float(kw.get("fall", _NAN))) and "value" not in d:
            kw["test"] = "none"
    return Status(**kw)
