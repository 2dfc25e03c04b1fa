"""The verdict is typed from the gate to the page (issue 48, "Typed to the page").

- A verdict kind is spelled as text in one module, :mod:`pfntheory.claims.verdicts`: every other
  module of ``pfntheory/`` names it through :class:`~pfntheory.claims.verdicts.VerdictKind`. The
  scan parses each module with :mod:`ast` (nothing is imported) and reports every string constant
  equal to a kind, docstrings apart. Two kinds are also field names of a row and of a claim result
  (``holds``: the check's own outcome, ``erratum``: the corrected statement): those two are allowed
  where a field is named -- a subscript, a dict key, the name argument of ``get`` / ``setdefault``
  / ``pop`` / ``getattr`` / ``hasattr`` / the report's ``_get`` -- and nowhere else.
- :class:`~pfntheory.infra.status.Status` is read by attribute: it is no mapping (no subscript, no
  ``dict(status)``), and its JSON form is :meth:`~pfntheory.infra.status.Status.to_dict`.
- The report splits no tolerance or convergence text at "; ": the recorder carries the clauses as
  fields (``tolerance_clauses``, ``convergence_clauses``, ``worse_runs``) and the index and the
  findings read those.

How these tests can fail: the scan runs on a synthetic module holding a kind as a comparison
operand, and on one holding the field names only as fields; a Status subscript must raise.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from pfntheory.claims.verdicts import VerdictKind
from pfntheory.infra.status import Status, as_status, no_curve

PACKAGE = Path(__file__).resolve().parents[1] / "pfntheory"
ENUM_MODULE = PACKAGE / "claims" / "verdicts.py"
KINDS = {k.value for k in VerdictKind}
#: The kinds that are also field names of a row (pfntheory.report.rows.Row) and a ClaimResult.
FIELD_KINDS = {"holds", "erratum"}
#: Calls whose string argument names a field (a key or an attribute), not a verdict.
FIELD_CALLS = {"get", "setdefault", "pop", "getattr", "hasattr", "_get"}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = n.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _field_positions(tree: ast.AST) -> set[int]:
    """The string constants that name a field: subscripts, dict keys, and the name argument of
    :data:`FIELD_CALLS`."""
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript):
            out.add(id(n.slice))
        elif isinstance(n, ast.Dict):
            out.update(id(k) for k in n.keys if k is not None)
        elif isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in FIELD_CALLS:
                out.update(id(a) for a in n.args)
    return out


def kind_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant of ``source`` that spells a verdict kind,
    docstrings and field names (:data:`FIELD_KINDS` where a field is named) apart."""
    tree = ast.parse(source)
    docs, fields = _docstrings(tree), _field_positions(tree)
    return sorted(
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in KINDS
        and id(n) not in docs
        and not (n.value in FIELD_KINDS and id(n) in fields)
    )


def test_scan_finds_a_kind_and_passes_field_names():
    bad = 'def f(r):\n    """holds"""\n    return r.verdict == "worse with training"\n'
    assert kind_literals(bad) == [(3, "worse with training")]
    assert kind_literals('x = ("undecided", 1)\n') == [(1, "undecided")]
    assert kind_literals('y = {"does not hold": "fail"}\n') == [(1, "does not hold")]
    fields = (
        'def g(r):\n    return r["holds"], r.get("erratum"), {"holds": 1}, hasattr(r, "holds")\n'
    )
    assert kind_literals(fields) == []
    assert kind_literals('w = "holds" if ok else "fails"\n') == [(1, "holds")]


def test_verdict_kinds_are_spelled_in_one_module():
    found = {
        f"{p.relative_to(PACKAGE.parent)}:{line}": text
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != ENUM_MODULE
        for line, text in kind_literals(p.read_text())
    }
    assert not found, found
    assert {k for _, k in kind_literals(ENUM_MODULE.read_text())} >= KINDS


def test_verdict_kind_is_its_text():
    import json

    assert json.dumps({VerdictKind.WORSE: VerdictKind.HOLDS}) == '{"worse with training": "holds"}'
    assert f"{VerdictKind.UNDERPOWERED}" == "undecided (underpowered)"
    assert {"holds at budget": 1}[VerdictKind.HOLDS_AT_BUDGET] == 1
    with pytest.raises(ValueError, match="not a valid VerdictKind"):
        VerdictKind("holds, mostly")


def test_status_is_not_a_mapping():
    st = no_curve("no learning curve")
    assert not isinstance(st, Mapping)
    assert dataclasses.is_dataclass(st) and Status.__dataclass_params__.frozen  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        st["state"]  # type: ignore[index]
    with pytest.raises(TypeError):
        dict(st)  # type: ignore[call-overload]
    assert st.state == "no curve" and as_status(st.to_dict()) == st


def _splits(source: str) -> list[int]:
    """Lines of ``source`` that cut text at "; ": a ``split("; ")`` / ``partition("; ")`` call, or
    a helper called with a default separator "; " (``def f(text, sep="; ")``)."""
    tree = ast.parse(source)
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in {"split", "rsplit", "partition", "rpartition"} and any(
                isinstance(a, ast.Constant) and a.value == "; " for a in n.args
            ):
                out.append(n.lineno)
        elif isinstance(n, ast.FunctionDef):
            if any(isinstance(d, ast.Constant) and d.value == "; " for d in n.args.defaults):
                out.append(n.lineno)
    return out


def test_split_scan_sees_a_split():
    assert _splits('a = t.split("; ")\n') == [1]
    assert _splits('def cut(t, sep="; "):\n    return t\n') == [1]
    assert _splits('b = "; ".join(parts)\n') == []


def test_report_splits_no_tolerance_or_convergence_text():
    found = {
        p.name: lines
        for p in sorted((PACKAGE / "report").glob("*.py"))
        if (lines := _splits(p.read_text()))
    }
    assert not found, found
