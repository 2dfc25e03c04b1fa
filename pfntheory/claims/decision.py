"""A verdict's typed reasons: what a check can detect (:class:`Power`), the check re-decided
before the runs' end (:class:`Replay`), and the gate's decision (:class:`Decision`, what
:func:`pfntheory.claims.gating.decide` returns and a :class:`~pfntheory.claims.ClaimResult` carries
as its ``decision``), each a frozen dataclass read by attribute; :meth:`Decision.to_dict` is the
decision's one JSON form. Torch-free."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from pfntheory.base import _checks
from pfntheory.base._checks import (
    ArgumentTypeError,
    choice,
    nonneg_int,
    positive_int,
    sequence,
)
from pfntheory.base.stats import Z_MARGIN
from pfntheory.infra.convergence import MIN_POINTS

from .verdicts import OUTCOME_WORD, VerdictKind

__all__ = ["Power", "Replay", "Counterfactual", "Decision", "Z_POWER80", "REPLAY_SOURCES"]

#: The one-sided normal quantile of 80% power: a true effect of ``(z + Z_POWER80) se`` passes
#: ``effect > z se`` with probability 0.8.
Z_POWER80 = 0.8416212335729143


@dataclass(frozen=True)
class Power:
    """What a check of "the effect exceeds ``target``" can detect, so that it fails only when the
    data refute the claim (docs/verdicts.md, "Power before fails").

    Attributes
    ----------
    effect : float
        The measured effect (e.g. the fall of CRPS from L = 8 to 32).
    ci : tuple of float
        Its interval at the check's level (``effect -+ z se``).
    target : float
        The effect the claim asserts: the paper's printed effect where it prints one, else the
        claim's threshold (0 for "falls", "rises").
    detectable : float
        The smallest true effect the check detects (``z se``: a true effect of this size passes
        ``effect > z se`` half of the time).
    paper : float or None
        The paper's printed effect, set beside ours.
    paired : bool
        Whether the standard error is of paired differences on shared instances.
    minimal : float or None
        The minimal effect of interest of a comparison without a paper effect (``paper`` None):
        :data:`MINIMAL_EFFECT`, 10% of the E[TV] (or CRPS, error) the claim says is the lower one,
        the plateau test's tolerance. The claim is refuted when the interval lies below it (an
        equivalence-style decision: the data exclude any effect that matters), so *does not hold*
        is reachable for "beats" claims (docs/verdicts.md, "A minimal effect of interest").
    z : float
        The check's margin in standard errors (``effect > z se``), so that :attr:`detectable80`
        can be stated: ``detectable`` is ``z se``.
    minimal_basis : str
        What :attr:`minimal` is, in words, for the row's text (default "10% of E[TV]"; a slope
        states the rise over its range).

    Checked at construction, each bad field refused naming it: ``effect``, ``target`` and
    ``paper`` finite; ``ci`` an interval ``lo <= hi`` holding ``effect`` (its ends may be +-inf:
    the unbounded interval of a slope through two points, :func:`~pfntheory.base.stats.slope_ci`;
    never NaN); ``detectable`` ``>= 0`` (inf with an unbounded interval); ``paired`` a bool.
    """

    effect: float
    ci: tuple[float, float]
    target: float
    detectable: float
    paper: float | None = None
    paired: bool = False
    minimal: float | None = None
    z: float = Z_MARGIN
    minimal_basis: str = "10% of E[TV]"

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not isinstance(self.minimal_basis, str) or not self.minimal_basis.strip():
            raise ArgumentTypeError(
                f"minimal_basis must be a non-empty string, got {self.minimal_basis!r}"[:200]
            )
        put(self, "effect", _checks.finite_scalar(self.effect, "effect"))
        put(self, "target", _checks.finite_scalar(self.target, "target"))
        if self.paper is not None:
            put(self, "paper", _checks.finite_scalar(self.paper, "paper"))
        if self.minimal is not None:
            put(self, "minimal", _checks.nonneg_scalar(self.minimal, "minimal"))
        put(self, "z", _checks.positive_scalar(self.z, "z"))
        if self.ci is None or isinstance(self.ci, (str, bytes, dict)):
            raise ArgumentTypeError(f"ci must be an interval (lo, hi), got {self.ci!r}")
        try:
            ends = list(self.ci)
        except TypeError as err:
            raise ArgumentTypeError(f"ci must be an interval (lo, hi), got {self.ci!r}") from err
        if len(ends) != 2:
            raise ValueError(f"ci must be an interval (lo, hi), got {len(ends)} values")
        lo, hi = (_checks.finite_or_nan(v, "ci", allow_inf=True) for v in ends)
        if np.isnan(lo) or np.isnan(hi):
            raise ValueError(f"ci must not be NaN, got ({lo}, {hi})")
        tol = 1e-12 * max(1.0, abs(self.effect))
        if not (lo <= hi and lo - tol <= self.effect <= hi + tol):
            raise ValueError(
                f"ci must be an interval lo <= hi holding effect {self.effect:.6g}, "
                f"got ({lo:.6g}, {hi:.6g})"
            )
        put(self, "ci", (lo, hi))
        d = _checks.finite_or_nan(self.detectable, "detectable", nonneg=True, allow_inf=True)
        if np.isnan(d):
            raise ValueError("detectable must be a number >= 0, got nan")
        put(self, "detectable", d)
        if not isinstance(self.paired, (bool, np.bool_)):
            raise ArgumentTypeError(f"paired must be a bool, got {self.paired!r}")
        put(self, "paired", bool(self.paired))

    @property
    def threshold(self) -> float:
        """The effect the interval must reach for the claim to stand: the claimed effect
        (``target``), raised to the minimal effect of interest where the paper prints none."""
        if self.paper is None and self.minimal is not None:
            return max(self.target, self.minimal)
        return self.target

    @property
    def refutes(self) -> bool:
        """The interval lies below the claimed effect (or, without a paper effect, below the
        minimal effect of interest): the data exclude any effect that matters."""
        return bool(self.ci[1] < self.threshold)

    @property
    def detectable80(self) -> float:
        """The smallest true effect the check detects with 80% power: ``(z + z_0.8) se``
        (``detectable`` is ``z se``, detected half of the time)."""
        return float(self.detectable * (self.z + Z_POWER80) / self.z)

    def text(self) -> str:
        """One line: ours beside the paper's, the minimal effect of interest, and what the check
        can detect (at 50% and 80% power); :meth:`clauses` joined by "; "."""
        return "; ".join(self.clauses())

    def clauses(self) -> tuple[str, ...]:
        """The clauses of :meth:`text`: the measured effect, the minimal effect of interest (where
        the paper prints no effect), what the check can detect."""
        lo, hi = self.ci
        paper = f", the paper's {self.paper:.3g}" if self.paper is not None else ""
        how = "paired" if self.paired else "unpaired"
        mini = (
            (f"minimal effect of interest {self.minimal:.3g} ({self.minimal_basis})",)
            if self.paper is None and self.minimal is not None
            else ()
        )
        return (
            f"measured effect {self.effect:.3g} (interval [{lo:.3g}, {hi:.3g}], {how}{paper})",
            *mini,
            f"the smallest effect this check detects is {self.detectable:.3g} (half the time), "
            f"{self.detectable80:.3g} at 80% power",
        )


def _flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be a bool, got {type(x).__name__}")
    return bool(x)


#: Where a :class:`Replay`'s outcomes come from.
REPLAY_SOURCES = ("curve", "doubling")


@dataclasses.dataclass(frozen=True)
class Replay:
    """A claim's check re-decided where the runs were evaluated before their end: at each step of
    the last log-half of their curves (``source`` "curve"), or at the two budgets of a doubling
    pair ("doubling"). ``min_steps``: how many outcomes it needs to decide.

    Checked at construction, each bad field refused naming it: ``steps`` strictly increasing
    integers ``>= 0``, ``held`` one bool per step (the same length: an outcome without its step, or
    a step without its outcome, is refused), ``source`` one of :data:`REPLAY_SOURCES`,
    ``min_steps`` an integer ``>= 1`` (so that an empty replay never decides). Empty ``steps`` and
    ``held`` are a replay that could not be made (no common curve step): it does not decide."""

    steps: tuple[int, ...]
    held: tuple[bool, ...]
    source: str = "curve"
    min_steps: int = MIN_POINTS

    def __post_init__(self) -> None:
        steps = tuple(
            nonneg_int(v, "steps") for v in sequence(self.steps, "steps", non_empty=False)
        )
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise ValueError(f"steps must be strictly increasing, got {list(steps)}")
        held = tuple(_flag(v, "held") for v in sequence(self.held, "held", non_empty=False))
        if len(held) != len(steps):
            raise ValueError(
                f"held must hold one outcome per step: {len(held)} outcomes for {len(steps)} steps"
            )
        choice(self.source, "source", REPLAY_SOURCES)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "held", held)
        object.__setattr__(self, "min_steps", positive_int(self.min_steps, "min_steps"))

    @property
    def decides(self) -> bool:
        return len(self.steps) >= self.min_steps

    @classmethod
    def at_budgets(cls, steps, held) -> Replay:
        """The check at the budgets of a doubling pair (source "doubling"): ``steps`` (S, 2S) and
        its outcome at each; both are needed to decide."""
        return cls(steps, held, "doubling", 2)


@dataclasses.dataclass(frozen=True)
class Counterfactual:
    """A claim's check re-decided with the runs it reads that training made worse than their
    initialisation credited with their initialisation: each run's value at the n' where it is
    worse than at step 0 replaced by its step-0 value, the best the run has been shown to be
    (docs/verdicts.md, "Crediting the initialisation";
    :func:`pfntheory.claims.gating.initialisation_counterfactual` makes it).

    Attributes
    ----------
    held : tuple of bool
        The check's outcome under each crediting: every non-empty subset of the ``credited`` runs
        (so that an outcome one run's worsening carries and another's restores is caught), the
        crediting of all of them last.
    observed, bound : float
        The check's measure and its threshold with every run credited (e.g. the drop in E[TV]
        and ``z`` SE).
    credited : tuple of (str, str)
        Per credited run, its name and where it was credited, in words (n', final and step-0
        values).

    Checked at construction, each bad field refused naming it: ``held`` one bool per non-empty
    subset of the credited runs (``2^k - 1`` for ``k`` runs), ``observed`` and ``bound`` finite,
    ``credited`` a non-empty sequence of ``(name, where)`` pairs of non-empty text with distinct
    names.
    """

    held: tuple[bool, ...]
    observed: float
    bound: float
    credited: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        put = object.__setattr__
        cred = []
        for i, pair in enumerate(sequence(self.credited, "credited")):
            items = list(sequence(pair, f"credited[{i}]"))
            if len(items) != 2:
                raise ValueError(f"credited[{i}] must be a (name, where) pair, got {pair!r}")
            name, where = (_checks.text(v, f"credited[{i}]") for v in items)
            if not name.strip() or not where.strip():
                raise ValueError(f"credited[{i}] must name a run and where it was credited")
            cred.append((name, where))
        if len({n for n, _ in cred}) != len(cred):
            raise ValueError(f"credited must name each run once, got {[n for n, _ in cred]}")
        held = tuple(_flag(v, "held") for v in sequence(self.held, "held"))
        if len(held) != 2 ** len(cred) - 1:
            raise ValueError(
                f"held must hold one outcome per non-empty subset of the {len(cred)} credited "
                f"runs ({2 ** len(cred) - 1}), got {len(held)}"
            )
        put(self, "credited", tuple(cred))
        put(self, "held", held)
        put(self, "observed", _checks.finite_scalar(self.observed, "observed"))
        put(self, "bound", _checks.finite_scalar(self.bound, "bound"))

    @property
    def runs(self) -> tuple[str, ...]:
        """The names of the credited runs."""
        return tuple(n for n, _ in self.credited)

    def agrees(self, holds: bool) -> bool:
        """Whether the check has the outcome ``holds`` under every crediting."""
        return all(h == holds for h in self.held)

    def text(self) -> str:
        """One line: where the runs were credited and the check's outcome with its numbers."""
        word = OUTCOME_WORD[self.held[-1]]
        k = len(self.credited)
        where = "; ".join(w if k == 1 else f"{n} {w}" for n, w in self.credited)
        each = ""
        if k > 1:
            each = (
                ", as with each smaller subset of them credited"
                if self.agrees(self.held[-1])
                else ", but not with every smaller subset of them credited"
            )
        return (
            f"with {'the run' if k == 1 else 'the runs'} credited with "
            f"{'its' if k == 1 else 'their'} initialisation ({where}), the check {word} "
            f"(measured {self.observed:.3g} against the bound {self.bound:.3g}){each}"
        )


@dataclasses.dataclass(frozen=True)
class Decision:
    """The verdict of a trained row and why, as typed fields (:func:`decide`); :meth:`text` renders
    them once."""

    kind: VerdictKind
    holds: bool
    rule: str  # "worse", "plateaued", "at budget", "underpowered", "open"
    model: str
    n_runs: int
    states: tuple[tuple[str, int], ...]  # (state, count) of every run read
    worse: tuple[str, ...] = ()  # the runs that got worse, each with where
    last_step: int | None = None
    replay: Replay | None = None
    power: Power | None = None
    test: str = "log-half"
    # runs that got worse by budget doubling where the check has one outcome at S and at 2S:
    # the worsening cannot change the answer, so it is a caveat, each with where it sits
    caveat: tuple[str, ...] = ()
    doubling: Replay | None = None
    # the check re-decided with the runs worse than their initialisation credited with it, where
    # a run the check reads is: it has the row's outcome, so that worsening is a caveat too
    counterfactual: Counterfactual | None = None

    def text(self) -> str:
        """The decision in one line: :meth:`clauses` joined by "; "."""
        return "; ".join(self.clauses())

    def clauses(self) -> tuple[str, ...]:
        """The clauses of :meth:`text`, each whole (a list of runs stays in its clause): the
        outcome and where it was decided, the runs' states, the replay or the power; a caveat
        and the power's detectable effects close the last clause."""
        out = list(self._clauses())
        tail = ""
        if self.caveat and (self.doubling is not None or self.counterfactual is not None):
            word = OUTCOME_WORD[self.holds]
            why = [] if self.counterfactual is None else [self.counterfactual.text()]
            if self.doubling is not None:
                rp = self.doubling
                why.append(
                    f"the check {word} at both budgets, {rp.steps[0]} and {rp.steps[-1]} steps"
                )
            tail += (
                f". Caveat: training made {len(self.caveat)} run"
                f"{'s' if len(self.caveat) != 1 else ''} worse where the check is not decided: "
                f"{'; '.join(self.caveat)}; {'; and '.join(why)}, so the worsening does not "
                "change the answer"
            )
        if self.power is not None and self.rule != "underpowered":
            p = self.power
            mini = (
                f"minimal effect of interest {p.minimal:.3g} ({p.minimal_basis}); "
                if p.paper is None and p.minimal is not None
                else ""
            )
            tail += (
                f" ({mini}smallest effect detected at 80% power {p.detectable80:.3g}, half the "
                f"time {p.detectable:.3g})"
            )
        if tail and out:
            out[-1] += tail
        elif tail:
            out = [tail]
        return tuple(out)

    def _clauses(self) -> tuple[str, ...]:
        st = ", ".join(f"{n} {s}" for s, n in self.states)
        word = OUTCOME_WORD[self.holds]
        runs = f"{self.n_runs} run{'s' if self.n_runs != 1 else ''}"
        how = "budget doubling" if self.test == "doubling" else "their learning curves' log-half"
        if self.rule == "worse":  # one clause: the runs that got worse, then what the check read
            return (
                f"{VerdictKind.WORSE}: {'; '.join(self.worse)}. The check {word} on {self.model}, "
                f"a model training made worse: it is neither a converged PFN nor one still "
                f"improving at its budget ({runs}: {st}, by {how})",
            )
        head: tuple[str, ...] = ()
        if self.rule == "plateaued" or (
            self.rule == "underpowered" and dict(self.states).get("plateaued") == self.n_runs
        ):
            head = (f"all {runs} plateaued by {how}" if self.n_runs else "no trained run",)
        elif self.replay is not None and self.replay.decides and self.rule != "open":
            rp = self.replay
            where = (
                f"at each of the {len(rp.steps)} steps {rp.steps[0]}-{rp.steps[-1]} of the last "
                "log-half of the learning curves and in the final evaluation"
                if rp.source == "curve"
                else f"at both budgets, {rp.steps[0]} and {rp.steps[-1]} steps"
                + (
                    f" (every cell), and on the runs read, up to {self.last_step} steps"
                    if self.last_step is not None and self.last_step > rp.steps[-1]
                    else ""
                )
            )
            at = (
                ""
                if rp.source == "doubling" and (self.last_step or 0) > rp.steps[-1]
                else f", at {self.last_step} steps"
            )
            outcome = f"{word} at budget" if self.rule == "at budget" else "the check fails"
            sep = ": " if self.rule == "at budget" else " "
            head = (f"{outcome}{sep}{where}{at}", f"runs not plateaued ({st}, by {how})")
        if self.rule == "underpowered" and self.power is not None:
            p = self.power
            what = (
                f"the minimal effect of interest {p.threshold:.3g}"
                if p.threshold != p.target
                else f"the claimed {p.target:.3g}"
            )
            first, *rest = p.clauses()
            return (
                f"{VerdictKind.UNDERPOWERED}: the check fails, but the interval of the effect "
                f"still holds {what}: {first}",
                *rest,
                *head,
            )
        if self.rule == "open":
            why = (
                f"{VerdictKind.UNDECIDED}: {runs} not all plateaued at {self.last_step} steps "
                f"({st}, by {how})"
            )
            r = self.replay
            if r is None:
                return (why,)
            if not r.decides:
                return (
                    why,
                    f"the check could not be replayed ({len(r.steps)} outcomes, "
                    f"{r.min_steps} needed)",
                )
            return (
                why,
                f"the check's outcome changes: it holds at {sum(r.held)} of {len(r.held)} "
                f"({r.steps[0]}-{r.steps[-1]}) and {word} on {self.model}",
            )
        return head

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["states"] = [list(x) for x in self.states]
        if self.power is not None:  # the derived numbers a reader of the record needs
            d["power"] = {
                **d["power"],
                "threshold": self.power.threshold,
                "detectable80": self.power.detectable80,
            }
        return {**d, "text": self.text()}
