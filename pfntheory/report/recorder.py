"""The notebooks' API: a :class:`Recorder` turns each measured claim into one row of the report.

A notebook calls the claim functions of :mod:`pfntheory.claims` (the very numbers ``verify/``
asserts on) and hands each :class:`~pfntheory.claims.ClaimResult` to :meth:`Recorder.add`, which
decides the row's verdict kind, shows the row inline (its card is the index's link target) and saves
it into ``results/<notebook>.json``; the index is built from those JSON files only.

How a verdict is decided (:func:`decide_verdict`), first rule that applies:

1. a row measured outside the paper's regime (``outside=`` why): "outside the paper's regime"
   (whatever the runs' convergence: more training cannot bring it into the regime);
2. an explicit ``ClaimResult.verdict`` (the claim function knows best; a trained claim's verdict
   is set by the one gate, :func:`pfntheory.claims.gating.decide`);
3. an erratum row (``erratum=`` the corrected statement): "erratum" when the check confirms the
   corrected statement, "does not hold" when it does not;
4. a trained row (``runs=`` its run directories) whose claim set no verdict: the one gate
   (:func:`pfntheory.claims.gating.decide`) on the runs' learning curves
   (:func:`pfntheory.infra.convergence.plateau_status`);
5. otherwise from ``holds``: "holds", "holds with a caveat" (a caveat is given) or "does not hold".

A row's reasons are typed: the gate's :class:`~pfntheory.claims.gating.Decision` (rendered once,
into the row's ``convergence`` line, its clauses in ``convergence_clauses`` and, for *worse with
training*, the runs that got worse in ``worse_runs``), the tolerance's clauses
(``tolerance_clauses``, from :attr:`~pfntheory.claims.ClaimResult.tolerance_clauses`) and the keys
of the shared reasons of its margin (:data:`pfntheory.claims.gating.SHARED_REASONS`, the row's
``reasons``); no verdict, tolerance or convergence text is parsed.

"pending" is only for a result whose data is absent on this machine (:meth:`Recorder.pending`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pfntheory.base._checks import ArgumentTypeError, checked, text
from pfntheory.claims import (
    CAVEAT,
    ERRATUM,
    FAILS,
    HOLDS,
    OUTSIDE,
    UNDECIDED,
    VERDICT_KINDS,
    VerdictKind,
)
from pfntheory.claims.decision import Decision
from pfntheory.claims.gating import SHARED_REASONS, decide, plateau_tally
from pfntheory.infra.convergence import curve_status
from pfntheory.infra.runs import round_significant
from pfntheory.infra.status import Status, as_status

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
    "decided_convergence",
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
    """``text`` as an HTML anchor: runs of characters other than ASCII letters and digits become
    one "-", lower case."""
    out, dash = [], False
    for ch in text:
        if ch.isascii() and ch.isalnum():
            out.append(ch.lower())
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-") or "row"


def _rel(path) -> str:
    """``path`` relative to the repository when inside it (what a reader can open), else
    as given."""
    p = Path(path).resolve()
    try:
        return p.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def explain_tolerance(tolerance: str, reasons: Sequence[str] = ()) -> str:
    """``tolerance`` with the reasons of its margin (keys of
    :data:`pfntheory.claims.gating.SHARED_REASONS`) appended, each once, as "(why: ...)"; the
    text itself is never parsed."""
    if not isinstance(tolerance, str):
        raise ArgumentTypeError(f"tolerance must be a str, got {type(tolerance).__name__}")
    if isinstance(reasons, str) or not isinstance(reasons, (list, tuple)):
        raise ArgumentTypeError(f"reasons must be a list of keys, got {type(reasons).__name__}")
    unknown = [k for k in reasons if k not in SHARED_REASONS]
    if unknown:
        raise ValueError(f"reasons must be keys of SHARED_REASONS {sorted(SHARED_REASONS)}")
    return tolerance + "".join(f" (why: {SHARED_REASONS[k]})" for k in dict.fromkeys(reasons))


@checked(caveat=text)
def verdict_of(holds: bool | None, caveat: str = "") -> VerdictKind:
    """The verdict that follows from ``holds`` alone: "pending" for None, "does not hold" for a
    false ``holds``, "holds" or (with a caveat) "holds with a caveat" for a true one."""
    if holds is None:
        return PENDING
    if not holds:
        return FAILS
    return CAVEAT if caveat else HOLDS


def convergence_of(run_dirs: Sequence[str | os.PathLike], metric: str = "tv") -> dict[str, Any]:
    """The log-half convergence of every run in ``run_dirs``, from its ``learning_curve.json``.

    Returns
    -------
    dict
        ``status``: ``"plateaued"`` (all runs), ``"improving"`` (at least one run has not
        plateaued) or ``"unknown"`` (a run has no learning curve); ``statuses``: the
        :class:`~pfntheory.infra.status.Status` per run (by path relative to the repository);
        ``text``: the runs' tally (:func:`pfntheory.claims.gating.plateau_tally`); ``runs``: the
        per-run status as a dict (None for a run without a curve).
    """
    if isinstance(run_dirs, (str, os.PathLike)):
        raise ArgumentTypeError("run_dirs must be a sequence of run directories, not one path")
    paths = [Path(r) for r in run_dirs]
    if not paths:
        raise ValueError("run_dirs must name at least one run directory")
    statuses = {_rel(rd): curve_status(rd, metric=metric) for rd in paths}
    per_run = {k: None if st.state == "no curve" else st.to_dict() for k, st in statuses.items()}
    tally = plateau_tally(statuses)
    if tally["plateaued"] == len(statuses):
        status = "plateaued"
    elif all(st.plateaued or st.state == "no curve" for st in statuses.values()):
        status = "unknown"
    else:
        status = "improving"
    return {"status": status, "statuses": statuses, "runs": per_run, "text": tally["text"]}


def decided_convergence(decided, fallback: str) -> str:
    """The convergence line of a row whose verdict its claim decided: the gate's rendered line (a
    :class:`~pfntheory.claims.decision.Decision`, or its JSON form with its ``text``), the tally
    of the statuses it read (a dict of statuses), or ``fallback`` when it read nothing."""
    if isinstance(decided, Decision):
        return decided.text()
    if isinstance(decided, dict) and isinstance(decided.get("text"), str):
        return decided["text"]
    if isinstance(decided, str) and decided:
        return f"decided by {decided}"
    if isinstance(decided, dict) and decided and all(isinstance(v, dict) for v in decided.values()):
        sts = {k: as_status(v) for k, v in decided.items()}
        crit = next(iter(sts.values())).criterion
        return plateau_tally(sts)["text"] + (f"; criterion: {crit}" if crit else "")
    return fallback


def _states_of(paths: Sequence[str], decided) -> dict[str, Status]:
    """The status of each run path from the statuses a claim's gate read (``details
    ["convergence"]``): one status (a case study's doubling pair) stands for every run of the
    pair; statuses by run name are matched by the path's last component (of a run with several
    curves read, a status not plateaued wins)."""
    if not isinstance(decided, dict) or not decided:
        return {}
    if "state" in decided and "criterion" in decided:
        st = as_status(decided)
        return {p: st for p in paths}
    by_name: dict[str, Status] = {}
    for key, v in decided.items():
        if not (isinstance(v, dict) and "state" in v):
            continue
        st = as_status(v)
        for n in {key, st.run, st.half_run} - {""}:
            if n not in by_name or (by_name[n].plateaued and not st.plateaued):
                by_name[n] = st
    return {p: by_name[Path(p).name] for p in paths if Path(p).name in by_name}


@checked(caveat=text, erratum=text, outside=text)
def decide_verdict(
    holds: bool,
    *,
    explicit: str | None = None,
    caveat: str = "",
    erratum: str = "",
    outside: str = "",
    convergence: str | None = None,
) -> VerdictKind:
    """The verdict kind of a measured row (rules 1-5 of the module docstring)."""
    if explicit is not None and explicit not in VERDICT_KINDS:
        kinds = tuple(map(str, VERDICT_KINDS))
        raise ValueError(f"explicit must be one of {kinds}, got {explicit!r}")
    if outside:  # more training cannot bring a measurement into the paper's regime
        return OUTSIDE
    if explicit is not None:
        return VerdictKind(explicit)
    if erratum:
        return ERRATUM if holds else FAILS
    if convergence == "improving":
        return UNDECIDED
    return verdict_of(bool(holds), caveat)


_COMPARE = ("bound", "threshold", "reference")


def _tolerance_clauses(result, tolerance: str | Sequence[str] | None) -> list[str]:
    """The clauses of a row's tolerance: ``tolerance`` (one clause, or a sequence of them) where
    given, else the result's :attr:`~pfntheory.claims.ClaimResult.tolerance_clauses`, else its
    ``tolerance`` as one clause; none for an empty tolerance."""
    if tolerance is None:
        parts = getattr(result, "tolerance_clauses", ()) or (getattr(result, "tolerance", ""),)
    elif isinstance(tolerance, str):
        parts = (tolerance,)
    elif isinstance(tolerance, (list, tuple)) and all(isinstance(c, str) for c in tolerance):
        parts = tuple(tolerance)
    else:
        raise ArgumentTypeError(
            f"tolerance must be a str or a sequence of str, got {type(tolerance).__name__}"
        )
    return [c for c in parts if c]


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
        if (
            not isinstance(notebook, str)
            or not notebook
            or not all(c.isascii() and (c.isalnum() or c in "_-") for c in notebook)
        ):
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
        statement : str, optional
            Overrides the result's.
        tolerance : str or sequence of str, optional
            Overrides the result's: one clause, or its clauses (joined by "; " for the text).
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
        cause : str
            For a claim that fails: its measured cause (the findings list it beside the claim).
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
        tolerance: str | Sequence[str] | None = None,
        compare: str = "bound",
        caveat: str = "",
        erratum: str = "",
        outside: str = "",
        cause: str = "",
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
        explicit = getattr(result, "verdict", None)
        decision = getattr(result, "decision", None)
        conv: list[str] = []
        states: dict[str, Status] = {}
        if runs is not None:
            paths = [_rel(r) for r in runs]
            states = _states_of(paths, details.get("convergence"))
            if len(states) < len(paths):  # read the runs' own curves (the log-half test)
                states = {**convergence_of(runs)["statuses"], **states}
            if decision is None and explicit is None and not (outside or erratum):
                d = decide(
                    h,
                    states,
                    power=getattr(result, "power", None),
                    model=None if states else "no trained run",  # runs=[]: none read
                )
                decision, explicit = d, d.kind
            if decision is not None and decision.text():
                conv = list(decision.clauses())
            elif tally := plateau_tally(states)["text"]:
                conv = [tally]
        run_dir = _rel(run_dir) if run_dir is not None else (getattr(result, "run_dir", None) or "")
        if runs is not None and not run_dir:
            dirs = sorted({_rel(Path(r).parent) for r in runs})
            run_dir = ", ".join(d + "/" for d in dirs)
        verdict = decide_verdict(
            h, explicit=explicit, caveat=caveat, erratum=erratum, outside=outside
        )
        pv = paper_value if paper_value is not None else getattr(result, "paper_value", None)
        if pv is None:  # a printed table cell or a stated rate (report.paper_values)
            from .paper_values import published_value

            pv = published_value(result)
        tol = _tolerance_clauses(result, tolerance)
        reasons = list(details.get("shared_reasons", ()))
        if getattr(result, "power", None) is not None:
            reasons.insert(0, "margin")
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
            tolerance="; ".join(tol),
            tolerance_clauses=tol,
            reasons=list(dict.fromkeys(reasons)),
            caveat=caveat,
            erratum=erratum,
            outside=outside,
            cause=cause,
            convergence="; ".join(conv),
            convergence_clauses=conv,
            worse_runs=list(decision.worse)
            if decision is not None and decision.rule == "worse"
            else [],
            run_dir=run_dir,
            details=_scalars(details),
            run_states={p: [st.state, st.last_step, st.got_worse] for p, st in states.items()},
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
        print(markup)
        return
    display(HTML(markup))
