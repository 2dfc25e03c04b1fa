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

from pfntheory import _checks
from pfntheory._checks import ArgumentTypeError, Rule
from pfntheory.stats import slope_ci  # noqa: F401  (re-exported: one implementation)

__all__ = [
    "ClaimResult",
    "slope_ci",
    "VERDICT_KINDS",
    "HOLDS",
    "CAVEAT",
    "FAILS",
    "ERRATUM",
    "OUTSIDE",
    "UNDECIDED",
    "HOLDS_AT_BUDGET",
    "FAILS_AT_BUDGET",
    "ARGS",
]

# The kinds of verdict a measured claim can have (the report counts each kind separately).
HOLDS = "holds"  # the paper's statement holds within the stated tolerance
CAVEAT = "holds with a caveat"  # holds, under a condition the paper does not state
FAILS = "does not hold"  # measured in the paper's regime, and contradicted
ERRATUM = "erratum"  # the paper's text is wrong; our check confirms the corrected one
OUTSIDE = "outside the paper's regime"  # measured, but not where the paper makes the claim
# trained claims whose runs still improve (docs/verdicts.md): the check has one outcome at every
# point of the last log-half of the learning curves, so it is a statement about the stated budget
HOLDS_AT_BUDGET = "holds at budget"
FAILS_AT_BUDGET = "fails at budget"
UNDECIDED = "undecided"  # still improving, and the check's outcome changes within the last log-half
VERDICT_KINDS = (
    HOLDS,
    CAVEAT,
    FAILS,
    ERRATUM,
    OUTSIDE,
    HOLDS_AT_BUDGET,
    FAILS_AT_BUDGET,
    UNDECIDED,
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
    """:func:`pfntheory._checks.checked` with the rule of each of ``names`` from :data:`ARGS`
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
    verdict: str | None = None
    paper_value: float | None = None
    run_dir: str | None = None

    def __post_init__(self) -> None:
        if self.verdict is not None and self.verdict not in VERDICT_KINDS:
            raise ValueError(f"verdict must be one of {VERDICT_KINDS}, got {self.verdict!r}")

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
