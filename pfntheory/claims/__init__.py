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
from pfntheory.base.stats import slope_ci  # noqa: F401  (re-exported: one implementation)

from .decision import Z_POWER80, Decision, Power
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
    tolerance_clauses : tuple of str
        The tolerance's separate clauses, where it has several (a margin, then what is shown): the
        report states a clause many rows share once. Given alone, ``tolerance`` is them joined by
        "; "; given with ``tolerance``, that join must equal it. Empty: ``tolerance`` is one clause.
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
    decision : Decision or None
        How the one gate decided the verdict (:class:`pfntheory.claims.decision.Decision`, read by
        attribute; :meth:`~pfntheory.claims.decision.Decision.to_dict` is its JSON form): its
        kind, the model read, the runs' states and the rendered :meth:`text`.
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
    decision: Decision | None = None
    tolerance_clauses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        clauses = self.tolerance_clauses
        if isinstance(clauses, str) or not isinstance(clauses, (tuple, list)):
            raise ArgumentTypeError(
                f"tolerance_clauses must be a tuple of str, got {type(clauses).__name__}"
            )
        if not all(isinstance(c, str) and c for c in clauses):
            raise ValueError("tolerance_clauses must be non-empty strings")
        joined = "; ".join(clauses)
        if clauses and not self.tolerance:
            object.__setattr__(self, "tolerance", joined)
        elif clauses and self.tolerance != joined:
            raise ValueError(
                "tolerance must equal its tolerance_clauses joined by '; ' "
                f"(got {self.tolerance!r} and {joined!r})"
            )
        object.__setattr__(self, "tolerance_clauses", tuple(clauses))
        if self.verdict is not None and self.verdict not in VERDICT_KINDS:
            kinds = tuple(map(str, VERDICT_KINDS))
            raise ValueError(f"verdict must be one of {kinds}, got {self.verdict!r}")
        if self.verdict is not None:
            object.__setattr__(self, "verdict", VerdictKind(self.verdict))

    def to_json(self) -> str:
        d = asdict(self)
        d["decision"] = self.decision.to_dict() if self.decision is not None else None
        return json.dumps(d, default=_jsonable)

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
