"""A row of the report and its vocabulary: the verdicts a row can carry, what each means, and how a
row's numbers are rounded when saved. The rules that decide a verdict are :mod:`.recorder`'s."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pfntheory.claims import (
    CAVEAT,
    ERRATUM,
    FAILS,
    FAILS_AT_BUDGET,
    HOLDS,
    HOLDS_AT_BUDGET,
    OUTSIDE,
    UNDECIDED,
    UNDERPOWERED,
    WORSE,
)
from pfntheory.claims.gating import plateau_tally
from pfntheory.claims.verdicts import VERDICTS, VerdictKind
from pfntheory.infra.runs import round_significant

__all__ = [
    "PENDING",
    "VERDICTS",
    "VERDICT_DEFINITIONS",
    "finite_or_none",
    "Row",
    "experiment_tallies",
]

#: A result whose data is not available on this machine (never used for missing code).
PENDING = VerdictKind.PENDING
#: One line per verdict kind, shown at the top of the index.
VERDICT_DEFINITIONS = {
    HOLDS: "every measured instance satisfies the paper's statement within the stated tolerance",
    CAVEAT: (
        "it holds, but only under a condition or reading the paper does not state (see the row)"
    ),
    FAILS: "measured where the paper makes the claim, and contradicted: where the check measures "
    "an effect, its interval excludes the claimed effect",
    ERRATUM: "the paper's statement as printed is wrong; our check confirms the corrected "
    "statement given in the row",
    OUTSIDE: "measured, but at settings where the paper does not make the claim; it counts neither "
    "for nor against the paper",
    HOLDS_AT_BUDGET: "its runs have not plateaued and none got worse, and the check holds at every "
    "point of the last log-half of their learning curves (or at both budgets of a doubling): it "
    "holds at the stated number of steps",
    FAILS_AT_BUDGET: "its runs have not plateaued and none got worse, and the check fails at every "
    "point it is replayed, with an interval that excludes the claimed effect: it fails at the "
    "stated number of steps",
    UNDECIDED: "rests on a trained run that has not plateaued, and the check's outcome changes "
    "where it is replayed (or it cannot be replayed): no verdict until it settles",
    UNDERPOWERED: "the check fails, but the interval of the measured effect still holds the "
    "claimed effect (the paper's, where it prints one): the test cannot detect an effect of that "
    "size; the row states the smallest effect it detects",
    WORSE: "a run it reads got worse with training (diverging, or worse than its initialisation "
    "at some n'): the row says where, and which model the check read; counts neither way",
    PENDING: "the data it needs is not on this machine",
}


def finite_or_none(x):
    """``x`` as a float rounded to :data:`SIGNIFICANT` digits; None for None, booleans, non-numbers
    and non-finite values."""
    if x is None or isinstance(x, bool):
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return round_significant(x) if math.isfinite(x) else None


@dataclass
class Row:
    """One line of the index: a measured paper result."""

    label: str  # the paper's \\label{}
    statement: str
    verdict: VerdictKind
    variant: str = ""  # what distinguishes this row from others of the same label
    key: str = ""  # the claim's stable key
    holds: bool | None = None  # the check's own outcome
    observed: float | None = None
    ci: tuple[float, float] | None = None
    bound: float | None = None  # what ``observed`` is compared with (see ``compare``)
    compare: str = "bound"  # "bound" | "threshold" | "reference"
    paper_value: float | None = None  # the paper's printed number, never a threshold
    measured: str = ""  # what exactly ``observed`` is
    tolerance: str = ""  # the tolerance
    tolerance_clauses: list[str] = field(default_factory=list)  # its clauses; "; "-joined: it
    reasons: list[str] = field(default_factory=list)  # keys of gating.SHARED_REASONS
    caveat: str = ""
    erratum: str = ""  # the corrected statement our check confirms
    outside: str = ""  # why the measurement is outside the paper's regime
    cause: str = ""  # for a claim that fails: its measured cause
    convergence: str = ""  # the trained runs' convergence, in one line
    convergence_clauses: list[str] = field(default_factory=list)  # its clauses; "; "-joined: it
    worse_runs: list[str] = field(default_factory=list)  # *worse with training*: which, and how
    run_dir: str = ""  # the run directory (or directories) read
    command: str = ""  # the command that regenerates the row
    notebook: str = ""
    anchor: str = ""
    missing: str = ""  # for pending rows: what is not available
    details: dict[str, Any] = field(default_factory=dict)
    # per trained run read: [state, last step, got worse] (the index tallies them per experiment)
    run_states: dict[str, list] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = [finite_or_none(c) for c in self.ci] if self.ci is not None else None
        return d


def experiment_tallies(rows) -> dict[str, dict]:
    """One plateau tally per experiment (:func:`pfntheory.claims.gating.plateau_tally`) over the
    runs that ``rows`` (rows of results JSON, or :class:`~pfntheory.report.rows.Row`) read, each
    with the status its row's gate read: the index and page 07 print these same numbers."""
    runs: dict[str, list] = {}
    for r in rows:
        runs.update((r.get("run_states") if isinstance(r, dict) else r.run_states) or {})
    by_exp: dict[str, dict[str, list]] = {}
    for run, st in runs.items():
        by_exp.setdefault(_experiment_of(run), {})[run] = st
    return {exp: plateau_tally(sts) for exp, sts in sorted(by_exp.items())}


def _experiment_of(run: str) -> str:
    """The experiment of a run path: its parent folder (``reports/runs/fig_exp1``), or the case
    study (``reports/casestudy/walker``) for a budget run."""
    parent = Path(run).parent
    return (parent.parent if parent.name.startswith("budget-s") else parent).as_posix()
