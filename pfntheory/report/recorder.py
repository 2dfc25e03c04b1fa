"""The notebooks' API: a :class:`Recorder` turns each measured claim into one row of the report.

A notebook calls the claim functions of :mod:`pfntheory.claims` (the very numbers ``verify/``
asserts on) and hands each :class:`~pfntheory.claims.ClaimResult` to :meth:`Recorder.add`, which
decides the row's verdict kind, shows the row inline (its card is the index's link target) and saves
it into ``results/<notebook>.json``; the index is built from those JSON files only.

How a verdict is decided (:func:`decide_verdict`), first rule that applies:

1. a row measured outside the paper's regime (``outside=`` why): "outside the paper's regime"
   (whatever the runs' convergence: more training cannot bring it into the regime);
2. an explicit ``ClaimResult.verdict`` (the claim function knows best, e.g. "undecided" for a
   trained claim whose runs have not plateaued);
3. an erratum row (``erratum=`` the corrected statement): "erratum" when the check confirms the
   corrected statement, "does not hold" when it does not;
4. a trained row (``runs=`` its run directories) whose runs have not all plateaued by
   :func:`pfntheory.convergence.plateau_status`: "undecided";
5. otherwise from ``holds``: "holds", "holds with a caveat" (a caveat is given) or "does not hold".

"pending" is only for a result whose data is absent on this machine (:meth:`Recorder.pending`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pfntheory._checks import ArgumentTypeError, checked, instance_of, text
from pfntheory.claims import (
    CAVEAT,
    ERRATUM,
    FAILS,
    HOLDS,
    OUTSIDE,
    UNDECIDED,
    VERDICT_KINDS,
)
from pfntheory.convergence import all_plateaued, curve_status
from pfntheory.runs import round_significant

from .html import fmt, row_card
from .labels import check_label, paper_number
from .rows import PENDING, Row, finite_or_none
from .spec import ROOT, output_dir, scale
from .tables import Table

__all__ = [
    "Recorder",
    "decide_verdict",
    "verdict_of",
    "convergence_of",
    "explain_tolerance",
]


def _scalars(details: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly scalar entries of ``details`` (arrays stay in the notebook, not
    the index)."""
    out: dict[str, Any] = {}
    for k, v in details.items():
        if isinstance(v, bool) or v is None or isinstance(v, str):
            out[str(k)] = v
        elif (
            isinstance(v, (int, float))
            or type(v).__module__ == "numpy"
            and getattr(v, "ndim", 1) == 0
        ):
            f = float(v)
            out[str(k)] = round_significant(f) if math.isfinite(f) else str(f)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "row"


def _rel(path) -> str:
    """``path`` relative to the repository when inside it (what a reader can open), else
    as given."""
    p = Path(path).resolve()
    try:
        return p.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _tolerance_reasons() -> list[tuple[re.Pattern, str]]:
    """(pattern, reason) pairs: a tolerance that matches gets its reason appended once. The margins
    are those of :mod:`pfntheory.claims.gating`, read from it (never restated)."""
    from pfntheory.claims import gating

    slack = getattr(gating, "COVERAGE_SLACK", None)
    z = getattr(gating, "Z_MARGIN", None)
    out = []
    if slack is not None:
        out.append(
            (
                re.compile(rf"\|coverage - (?:0\.9|nominal)\| <= {re.escape(str(slack))} \+"),
                f"why {slack:g}: the largest deviation the paper itself calls 'reasonably close "
                "to nominal' (0.848 at the 90% level, supp-tab:lengthscale-crps, L=8); why "
                f"{z:g} SE: a one-sided normal tail of 0.13%, so that sampling noise alone does "
                "not fail the check",
            )
        )
    if z is not None:
        out.append(
            (
                re.compile(rf"^(?:TV|CRPS|log-rise)\(.*> -?{re.escape(f'{z:g}')} SE"),
                f"why {z:g} SE: a one-sided normal tail of 0.13% per comparison; the unpaired SE "
                "over-states the paired one (both means are on the same instances), so the test is "
                "conservative",
            )
        )
    return out


@checked(tolerance=instance_of(str))
def explain_tolerance(tolerance: str) -> str:
    """``tolerance`` with the reason for its margin appended where the report knows one and the
    text does not already give it (e.g. why ``|coverage - 0.9| <= 0.05 + 3 SE``)."""
    if not tolerance or "why " in tolerance:
        return tolerance
    reasons = [why for pat, why in _tolerance_reasons() if pat.search(tolerance)]
    return tolerance + "".join(f" ({why})" for why in reasons[:1])


@checked(caveat=text)
def verdict_of(holds: bool | None, caveat: str = "") -> str:
    """The verdict that follows from ``holds`` alone: "pending" for None, "does not hold" for a
    false ``holds``, "holds" or (with a caveat) "holds with a caveat" for a true one."""
    if holds is None:
        return PENDING
    if not holds:
        return FAILS
    return CAVEAT if caveat else HOLDS


def convergence_of(run_dirs: Sequence[str | os.PathLike], metric: str = "tv") -> dict[str, Any]:
    """Whether every run in ``run_dirs`` has plateaued, from its ``learning_curve.json``.

    Returns
    -------
    dict
        ``status``: ``"plateaued"`` (all runs), ``"improving"`` (at least one run has not
        plateaued) or ``"unknown"`` (a run has no learning curve); ``text``: one line for the row;
        ``runs``: the per-run status (``{run_dir: plateau_status dict or None}``).
    """
    if isinstance(run_dirs, (str, os.PathLike)):
        raise ArgumentTypeError("run_dirs must be a sequence of run directories, not one path")
    paths = [Path(r) for r in run_dirs]
    if not paths:
        raise ValueError("run_dirs must name at least one run directory")
    statuses = {_rel(rd): curve_status(rd, metric=metric) for rd in paths}
    gate = all_plateaued(statuses)
    per_run = {k: None if st["state"] == "no curve" else st for k, st in statuses.items()}
    improving = [k for k in gate["not_plateaued"] if k not in gate["no_curve"]]
    if improving:
        st = statuses[improving[0]]
        return {
            "status": "improving",
            "runs": per_run,
            "text": f"not plateaued: {len(improving)} of {len(paths)} runs (e.g. "
            f"{Path(improving[0]).name}: {st['state']} at {st['last_step']} steps). Plateau "
            f"criterion, not met: {st['criterion']}",
        }
    if gate["no_curve"]:
        return {
            "status": "unknown",
            "runs": per_run,
            "text": f"convergence unknown: {len(gate['no_curve'])} of {len(paths)} runs have no "
            f"learning curve (e.g. {Path(gate['no_curve'][0]).name})",
        }
    return {
        "status": "plateaued",
        "runs": per_run,
        "text": f"all {len(paths)} runs plateaued in {metric}",
    }


def decided_convergence(decided, fallback: str) -> str:
    """The convergence line of a row whose verdict its claim decided (budget doubling, a replay):
    what that decision read (``details["convergence"]``: a criterion, or a status per run), not
    the log-half test of the same curves, which can disagree; ``fallback`` when it read nothing."""
    if isinstance(decided, str) and decided:
        return f"decided by {decided}"
    if isinstance(decided, dict) and decided and all(isinstance(v, dict) for v in decided.values()):
        states = Counter(str(v.get("state", "unknown")) for v in decided.values())
        first = next(iter(decided.values()))
        crit = first.get("criterion", "")
        return (
            f"{states.get('plateaued', 0)} of {len(decided)} runs plateaued ("
            + ", ".join(f"{n} {k}" for k, n in sorted(states.items()))
            + ")"
            + (f"; criterion: {crit}" if crit else "")
        )
    return fallback


@checked(caveat=text, erratum=text, outside=text)
def decide_verdict(
    holds: bool,
    *,
    explicit: str | None = None,
    caveat: str = "",
    erratum: str = "",
    outside: str = "",
    convergence: str | None = None,
) -> str:
    """The verdict kind of a measured row (rules 1-5 of the module docstring)."""
    if explicit is not None and explicit not in VERDICT_KINDS:
        raise ValueError(f"explicit must be one of {VERDICT_KINDS}, got {explicit!r}")
    if outside:  # more training cannot bring a measurement into the paper's regime
        return OUTSIDE
    if explicit is not None:
        return explicit
    if erratum:
        return ERRATUM if holds else FAILS
    if convergence == "improving":
        return UNDECIDED
    return verdict_of(bool(holds), caveat)


_COMPARE = ("bound", "threshold", "reference")


class Recorder:
    """Collects the measured rows of one notebook, shows each inline, and saves them as JSON.

    Parameters
    ----------
    notebook : str
        The notebook's name (its file stem); the rows go to ``results/<notebook>.json``.

    Examples
    --------
    >>> rec = Recorder("01_richardson_construction")                      # doctest: +SKIP
    >>> rec.add(check_krr(G, k_x, Y, noise_var), measured="worst error / bound")  # doctest: +SKIP
    """

    def __init__(self, notebook: str):
        if not isinstance(notebook, str) or not re.fullmatch(r"[A-Za-z0-9_\-]+", notebook):
            raise ValueError(f"notebook must be a plain file stem, got {notebook!r}")
        self.notebook = notebook
        self.rows: list[Row] = []
        self._anchors: set[str] = set()
        self.save()  # an empty file from the start: a notebook that records nothing says so

    def _anchor(self, label: str, variant: str) -> str:
        base = "r-" + _slug(f"{label} {variant}")
        a, k = base, 2
        while a in self._anchors:
            a, k = f"{base}-{k}", k + 1
        self._anchors.add(a)
        return a

    def _default_command(self) -> str:
        return f"pfntheory report --only {self.notebook.split('_')[0]}"

    def _row(self, label: str, variant: str, command: str | None = None, **fields) -> Row:
        """A :class:`Row` of this notebook, with its anchor and the command that regenerates it
        (default :meth:`_default_command`); ``fields`` are the row's other columns."""
        return Row(
            label=label,
            variant=variant,
            notebook=self.notebook,
            anchor=self._anchor(label, variant),
            command=command or self._default_command(),
            **fields,
        )

    def add(self, result, **options):
        """Record one :class:`~pfntheory.claims.ClaimResult` (or a list of them) as a row.

        Parameters
        ----------
        result : ClaimResult or sequence of ClaimResult
        label : str, optional
            Overrides ``result.label``; either must be one of the paper's labels
            (:data:`pfntheory.report.labels.PAPER_LABELS`).
        variant : str
            What distinguishes this row from the others of its label (``"d=4"``, ``"TF^pr"``).
        statement, tolerance : str, optional
            Override the result's.
        measured : str
            What ``observed`` is, exactly (default: ``details["measured"]`` if present).
        compare : {"bound", "threshold", "reference"}
            What ``result.bound`` is: the claim's bound, a decision threshold, or a reference value.
        caveat : str
            The condition under which the claim holds; a true ``holds`` then reads "holds with a
            caveat".
        erratum : str
            For an erratum row: the corrected statement the check measures. The verdict is
            "erratum" when the check holds (computed, never fixed) and "does not hold" otherwise.
        outside : str
            Why this measurement is outside the paper's regime (verdict "outside the
            paper's regime").
        runs : sequence of path, optional
            The trained run directories read; their learning curves decide "undecided".
        run_dir : path, optional
            A run directory read that has no learning curve (an exact-side sweep run).
        command : str, optional
            The command that regenerates the row (default: ``pfntheory report --only NN``).
        paper_value : float, optional
            The paper's printed number for this quantity (default ``result.paper_value``, else
            :func:`~pfntheory.report.paper_values.published_value`).
        holds, observed : optional
            Override the result's (e.g. when the row judges the paper's rate, not the
            check's bound).

        Returns
        -------
        None
            Nothing, so that a cell ending in ``rec.add(...)`` shows the row's card and never the
            result's repr (keep the result in a variable to use it further).
        """
        for r in result if isinstance(result, (list, tuple)) else (result,):
            self._add_one(r, **options)

    def _add_one(
        self,
        result,
        *,
        label: str | None = None,
        variant: str = "",
        statement: str | None = None,
        measured: str = "",
        tolerance: str | None = None,
        compare: str = "bound",
        caveat: str = "",
        erratum: str = "",
        outside: str = "",
        runs: Sequence[str | os.PathLike] | None = None,
        run_dir: str | os.PathLike | None = None,
        command: str | None = None,
        paper_value: float | None = None,
        holds: bool | None = None,
        observed: float | None = None,
        show: bool = True,
    ) -> None:
        """One row of :meth:`add` (whose docstring describes the options)."""
        if compare not in _COMPARE:
            raise ValueError(f"compare must be one of {_COMPARE}, got {compare!r}")
        if not hasattr(result, "holds") or not hasattr(result, "statement"):
            raise ArgumentTypeError(f"result must be a ClaimResult, got {type(result).__name__}")
        lab = check_label(label or result.label)
        details = dict(getattr(result, "details", {}) or {})
        h = bool(result.holds) if holds is None else bool(holds)
        conv = convergence_of(runs) if runs is not None else None
        if conv is not None and getattr(result, "verdict", None) is not None:
            conv = {**conv, "text": decided_convergence(details.get("convergence"), conv["text"])}
        run_dir = _rel(run_dir) if run_dir is not None else (getattr(result, "run_dir", None) or "")
        if runs is not None and not run_dir:
            dirs = sorted({_rel(Path(r).parent) for r in runs})
            run_dir = ", ".join(d + "/" for d in dirs)
        verdict = decide_verdict(
            h,
            explicit=getattr(result, "verdict", None),
            caveat=caveat,
            erratum=erratum,
            outside=outside,
            convergence=conv["status"] if conv else None,
        )
        pv = paper_value if paper_value is not None else getattr(result, "paper_value", None)
        if pv is None:  # a printed table cell or a stated rate (report.paper_values)
            from .paper_values import published_value

            pv = published_value(result)
        states = {
            run: [st["state"], st.get("last_step")] if st else ["no curve", None]
            for run, st in (conv["runs"].items() if conv else ())
        }
        row = self._row(
            lab,
            variant,
            command,
            statement=statement or result.statement,
            verdict=verdict,
            key=getattr(result, "key", "") or "",
            holds=h,
            observed=finite_or_none(result.observed if observed is None else observed),
            ci=tuple(result.ci) if result.ci is not None and observed is None else None,
            bound=finite_or_none(result.bound),
            compare=compare,
            paper_value=finite_or_none(pv),
            measured=measured or str(details.get("measured", "")),
            tolerance=explain_tolerance(result.tolerance if tolerance is None else tolerance),
            caveat=caveat,
            erratum=erratum,
            outside=outside,
            convergence=conv["text"] if conv else "",
            run_dir=run_dir,
            details=_scalars(details),
            run_states=states,
        )
        self._append(row, show)

    def pending(
        self, label: str, statement: str, missing: str, *, variant: str = "", show: bool = True
    ) -> None:
        """Record a result whose data is not on this machine, saying plainly what is missing."""
        if not missing:
            raise ValueError("missing must say what is not available")
        row = self._row(
            check_label(label), variant, statement=statement, verdict=PENDING, missing=missing
        )
        self._append(row, show)

    def _append(self, row: Row, show: bool) -> None:
        self.rows.append(row)
        self.save()
        if show:
            _display_html(row_card(row))

    def save(self) -> Path:
        """Write ``results/<notebook>.json`` under :func:`output_dir` (atomically)."""
        path = output_dir() / "results" / f"{self.notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "notebook": self.notebook,
            "scale": scale(),
            "rows": [r.to_dict() for r in self.rows],
        }
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
        tmp.replace(path)
        return path

    def table(self):
        """The rows so far as a :class:`~pfntheory.report.tables.Table` (for display at the end of
        a notebook): the paper's number and label, the variant, what was measured, our number,
        what it is compared with, the paper's number and the verdict, rounded, "—" where absent."""
        rows = [
            [
                f"{paper_number(r.label)} ({r.label})" if paper_number(r.label) else r.label,
                r.variant or "—",
                r.measured or r.missing or "—",
                "—" if r.verdict == PENDING else fmt(r.observed),
                "—" if r.verdict == PENDING or r.bound is None else f"{fmt(r.bound)} ({r.compare})",
                fmt(r.paper_value),
                r.verdict,
            ]
            for r in self.rows
        ]
        columns = ["result", "variant", "measured", "ours", "compared with", "paper", "verdict"]
        return Table(columns, rows, numeric=[False, False, False, True, True, True, False])


def _display_html(markup: str) -> None:
    try:
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover - IPython is installed with the report extra
        print(re.sub(r"<[^>]+>", " ", markup))
        return
    display(HTML(markup))
