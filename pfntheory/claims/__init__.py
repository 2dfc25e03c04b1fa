"""Measurements of the paper's claims, shared by ``verify/`` (which asserts on them) and the
notebooks (which tabulate the very same numbers).

Each submodule covers one part of the paper and exposes functions ``check_<label>(...)`` that
return a :class:`ClaimResult` (or a list of them). A function never asserts: it measures, and
reports whether the claim held (so a report can show a claim that fails).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pfntheory.base import _checks
from pfntheory.base._checks import ArgumentTypeError, Rule
from pfntheory.base.stats import (
    Z_MARGIN,
    slope_ci,  # noqa: F401  (re-exported: one implementation)
)

from .verdicts import VERDICT_KINDS, VerdictKind

__all__ = [
    "ClaimResult",
    "slope_ci",
    "VERDICT_KINDS",
    "VerdictKind",
    "HOLDS",
    "CAVEAT",
    "FAILS",
    "ERRATUM",
    "OUTSIDE",
    "UNDECIDED",
    "UNDERPOWERED",
    "WORSE",
    "Power",
    "MINIMAL_EFFECT",
    "Z_POWER80",
    "band_verdict",
    "HOLDS_AT_BUDGET",
    "FAILS_AT_BUDGET",
    "ARGS",
]

# The kinds of verdict (:class:`~pfntheory.claims.verdicts.VerdictKind`), by their former names.
HOLDS = VerdictKind.HOLDS
CAVEAT = VerdictKind.CAVEAT
FAILS = VerdictKind.FAILS
ERRATUM = VerdictKind.ERRATUM
OUTSIDE = VerdictKind.OUTSIDE
HOLDS_AT_BUDGET = VerdictKind.HOLDS_AT_BUDGET
FAILS_AT_BUDGET = VerdictKind.FAILS_AT_BUDGET
UNDECIDED = VerdictKind.UNDECIDED
UNDERPOWERED = VerdictKind.UNDERPOWERED
WORSE = VerdictKind.WORSE


def _interval(x, name: str) -> tuple[float, float]:
    """A confidence interval ``(lo, hi)``: two finite floats, ``lo <= hi`` (an exact fit has
    ``lo == hi``)."""
    t = _checks.float_tuple(x, name)
    if len(t) != 2 or t[0] > t[1]:
        raise ValueError(f"{name} must be an interval (lo, hi) with lo <= hi, got {x!r}")
    return t[0], t[1]


@_checks.checked(ci=_interval, band=_checks.pair)
def band_verdict(ci, band) -> VerdictKind | None:
    """The one rule of an interval check (docs/verdicts.md, "One rule per check shape"): it holds
    only with its confidence interval ``ci`` inside ``band``; an interval that crosses an edge of
    the band (neither inside nor outside it) is *undecided (underpowered)*; one wholly outside
    fails. Returns the explicit verdict, None when ``holds`` alone decides (inside, or outside)."""
    lo, hi = float(ci[0]), float(ci[1])
    inside = band[0] <= lo and hi <= band[1]
    outside = hi < band[0] or lo > band[1]
    return None if inside or outside else UNDERPOWERED


#: The minimal effect of interest of a comparison without a paper effect, relative to the E[TV]
#: (CRPS, error) the claim says is the lower one: the plateau test's tolerance (docs/verdicts.md).
MINIMAL_EFFECT = 0.10
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

    def __post_init__(self) -> None:
        put = object.__setattr__
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
        can detect (at 50% and 80% power)."""
        lo, hi = self.ci
        paper = f", the paper's {self.paper:.3g}" if self.paper is not None else ""
        how = "paired" if self.paired else "unpaired"
        mini = (
            f"; minimal effect of interest {self.minimal:.3g} (10% of E[TV])"
            if self.paper is None and self.minimal is not None
            else ""
        )
        return (
            f"measured effect {self.effect:.3g} (interval [{lo:.3g}, {hi:.3g}], {how}{paper})"
            f"{mini}; the smallest effect this check detects is {self.detectable:.3g} (half the "
            f"time), {self.detectable80:.3g} at 80% power"
        )


#: The check of each argument name the claim functions share: one quantity, one name, one rule
#: (a function whose argument differs, e.g. ``n_instances`` of at least 2, states its own).
ARGS: dict[str, Rule] = {
    "rng": _checks.check_rng,
    "seed": _checks.seed_int,
    "seeds": _checks.seed_tuple,
    "n_seeds": _checks.positive_int,
    "n_trials": _checks.positive_int,
    "n_draws": _checks.positive_int,
    "n_restarts": _checks.nonneg_int,
    "n_instances": _checks.positive_int,
    "d": _checks.positive_int,
    "n": _checks.positive_int,
    "ns": _checks.ints(),
    "L": _checks.positive_int,
    "Ls": _checks.ints(),
    "C": _checks.at_least(2),
    "Cs": _checks.ints(minimum=2),
    "kernel": _checks.check_kernel,
    "G": _checks.symmetric_matrix,
    "A": _checks.symmetric_matrix,
    "noise_var": _checks.positive_scalar,
    "lengthscale": _checks.positive_scalar,
    "alpha": _checks.positive_scalar,
    "eta": _checks.positive_scalar,
    "eta_fraction": _checks.probability,
    "step_fraction": _checks.probability,
    "level": _checks.probability,
    "eps": _checks.probability,
    "k_se": _checks.positive_scalar,
    "band": _checks.pair,
}


def checked_args(*names: str, **rules: Rule):
    """:func:`pfntheory.base._checks.checked` with the rule of each of ``names`` from :data:`ARGS`
    and ``rules`` for the arguments of this function alone."""
    return _checks.checked(**{n: ARGS[n] for n in names}, **rules)


@dataclass(frozen=True)
class ClaimResult:
    """One measured claim.

    Attributes
    ----------
    label : str
        The LaTeX label of the paper result (e.g. ``"supp-thm:KRR"``).
    statement : str
        The claim in one line.
    holds : bool
        Whether every measured instance satisfied the claim (within the stated tolerance).
    observed : float
        The headline measured quantity (e.g. the worst ratio observed/bound, or a fitted slope).
    bound : float or None
        The bound or the paper's value the observation is compared with.
    tolerance : str
        The tolerance used and why (round-off bound or k Monte-Carlo standard errors).
    ci : tuple of float or None
        A confidence interval for ``observed`` where it is statistical.
    details : dict
        Further numbers (per-instance values, per-seed slopes, ...), JSON-serialisable.
    key : str
        A stable identifier of this claim (unique within its module; tests and notebooks pick
        claims by key, never by the prose of ``statement`` or by position).
    verdict : str or None
        An explicit verdict kind from :data:`VERDICT_KINDS` when ``holds`` alone does not decide it
        (an erratum confirmed, a claim measured outside the paper's regime, a trained claim whose
        runs are still improving). ``None``: the verdict follows from ``holds``.
    paper_value : float or None
        The number the paper prints for this quantity, where it prints one (never a threshold).
    run_dir : str or None
        The run directory (relative to the repository) the measurement read, for trained claims.
    power : Power or None
        For a check of an effect against a claimed one: what it can detect
        (:func:`pfntheory.claims.gating.exceeds` sets it); a failing check with power fails only
        when the interval excludes the claimed effect.
    decision : dict or None
        How the one gate decided the verdict (:meth:`pfntheory.claims.gating.Decision.to_dict`):
        its kind, the model read, the runs' states and the rendered ``text``.
    """

    label: str
    statement: str
    holds: bool
    observed: float
    bound: float | None = None
    tolerance: str = ""
    ci: tuple[float, float] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    verdict: VerdictKind | None = None
    paper_value: float | None = None
    run_dir: str | None = None
    power: Power | None = None
    decision: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.verdict is not None and self.verdict not in VERDICT_KINDS:
            kinds = tuple(map(str, VERDICT_KINDS))
            raise ValueError(f"verdict must be one of {kinds}, got {self.verdict!r}")
        if self.verdict is not None:
            object.__setattr__(self, "verdict", VerdictKind(self.verdict))

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=_jsonable)

    def __str__(self) -> str:  # used in assertion messages
        ci = f" CI={self.ci}" if self.ci is not None else ""
        return (
            f"[{self.label}] holds={self.holds} observed={self.observed:.6g} "
            f"bound={self.bound}{ci} ({self.tolerance}) :: {self.statement}"
        )


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.bool_):
        return bool(o)
    raise ArgumentTypeError(
        f"a ClaimResult field holds a value that is not JSON serialisable: {type(o).__name__} "
        "(numbers, strings, lists, dicts, NumPy arrays and scalars are)"
    )
