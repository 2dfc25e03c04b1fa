"""The kinds of verdict a row of the report can carry: one type (:class:`VerdictKind`), used from
the gate (:func:`pfntheory.claims.gating.decide`) through the recorder to the page, and the groups
of kinds the report reads (docs/verdicts.md, "The kinds").

The only module of the package that spells a verdict kind as text (``tests/test_typed_verdicts.py``
holds the rest of the package to it). A kind is a :class:`str` (:class:`enum.StrEnum`), so that a
row's JSON, a comparison with a kind read back from JSON, and a kind in an f-string all read the
kind's text unchanged.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "VerdictKind",
    "VERDICT_KINDS",
    "VERDICTS",
    "TRAINED_ORDER",
    "UNDECIDED_KINDS",
    "FAILING",
    "SHOWS_OUTCOME",
    "PAGE_CLASS",
    "OUTCOME_WORD",
]


class VerdictKind(StrEnum):
    """A verdict kind; its value is the text the report prints and its JSON holds."""

    #: the paper's statement holds within the stated tolerance
    HOLDS = "holds"
    #: holds, under a condition the paper does not state
    CAVEAT = "holds with a caveat"
    #: measured in the paper's regime, and contradicted
    FAILS = "does not hold"
    #: the paper's text is wrong; our check confirms the corrected one
    ERRATUM = "erratum"
    #: measured, but not where the paper makes the claim
    OUTSIDE = "outside the paper's regime"
    #: trained claims whose runs still improve (docs/verdicts.md): the check has one outcome at
    #: every point of the last log-half of the learning curves, so it is a statement about the
    #: stated budget
    HOLDS_AT_BUDGET = "holds at budget"
    FAILS_AT_BUDGET = "fails at budget"
    #: still improving, and the check's outcome changes within the last log-half
    UNDECIDED = "undecided"
    #: the check fails, but the interval of the measured effect still holds the claimed effect:
    #: the test cannot detect an effect of the claimed size, so it refutes nothing
    #: (docs/verdicts.md, "Power")
    UNDERPOWERED = "undecided (underpowered)"
    #: a run the claim reads got worse with training: diverging (a rising trend, or a doubled
    #: budget that made it worse), or worse than its initialisation at some n' (docs/verdicts.md)
    WORSE = "worse with training"
    #: a result whose data is not available on this machine (never used for missing code)
    PENDING = "pending"


_K = VerdictKind

#: The kinds a measured claim can have (the report counts each kind separately).
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    _K.HOLDS,
    _K.CAVEAT,
    _K.FAILS,
    _K.ERRATUM,
    _K.OUTSIDE,
    _K.HOLDS_AT_BUDGET,
    _K.FAILS_AT_BUDGET,
    _K.UNDECIDED,
    _K.UNDERPOWERED,
    _K.WORSE,
)
#: Every verdict a row can carry, in the order the index counts them.
VERDICTS: tuple[VerdictKind, ...] = (*VERDICT_KINDS, _K.PENDING)
#: The verdicts of a trained claim (its runs are read), in the order the summary lists them.
TRAINED_ORDER: tuple[VerdictKind, ...] = (
    _K.HOLDS,
    _K.CAVEAT,
    _K.HOLDS_AT_BUDGET,
    _K.FAILS_AT_BUDGET,
    _K.FAILS,
    _K.UNDECIDED,
    _K.UNDERPOWERED,
    _K.WORSE,
    _K.OUTSIDE,
    _K.ERRATUM,
    _K.PENDING,
)
#: The kinds that count as undecided (the ``undecided`` generated passage).
UNDECIDED_KINDS: tuple[VerdictKind, ...] = (_K.UNDECIDED, _K.UNDERPOWERED)
#: The kinds the summary lists as failed claims.
FAILING: tuple[VerdictKind, ...] = (_K.FAILS, _K.FAILS_AT_BUDGET, _K.WORSE)
#: The kinds under which a row also shows the check's own outcome (the verdict is not it).
SHOWS_OUTCOME: tuple[VerdictKind, ...] = (
    _K.ERRATUM,
    _K.OUTSIDE,
    _K.UNDECIDED,
    _K.UNDERPOWERED,
    _K.WORSE,
)
#: The page's class of each kind's badge (``v-<class>``); a row of another verdict reads "pending".
PAGE_CLASS: dict[str, str] = {
    _K.HOLDS: "ok",
    _K.CAVEAT: "caveat",
    _K.FAILS: "fail",
    _K.ERRATUM: "erratum",
    _K.OUTSIDE: "outside",
    _K.HOLDS_AT_BUDGET: "budget-ok",
    _K.FAILS_AT_BUDGET: "budget-fail",
    _K.UNDECIDED: "undecided",
    _K.UNDERPOWERED: "undecided",
    _K.WORSE: "budget-fail",
    _K.PENDING: "pending",
}
#: The check's own outcome in one word, beside a verdict that is not it.
OUTCOME_WORD: dict[bool, str] = {True: _K.HOLDS.value, False: "fails"}
