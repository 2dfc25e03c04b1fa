"""The numbers LaTeX prints for the paper's ``\\label{}``s (Theorem 3.1, Lemma B.3, Figure 2, ...).

:func:`number_labels` reads a LaTeX source and numbers its labels as LaTeX would, for the subset of
LaTeX the paper uses: ``\\section`` / ``\\subsection`` (starred ones unnumbered), ``\\appendix``
(sections become A, B, ...), theorem-like environments declared by ``\\newtheorem`` (a shared
counter and a ``[section]`` reset, as the paper declares them), ``figure`` / ``table`` numbered by
their ``\\caption`` (one global counter each), and equations: ``equation`` and every row of
``align`` / ``gather`` / ``multline`` / ``eqnarray`` unless it holds ``\\nonumber`` / ``\\notag``
(rows are split at ``\\\\`` at the environment's own level, so a nested ``split`` or matrix is one
row). A ``\\label`` takes the number of the innermost numbered thing it sits in, as
``\\refstepcounter`` and TeX grouping decide (on an unnumbered row, that of the enclosing section).

The report does not read the paper at build time: the result for the paper is committed as
:data:`pfntheory.report.labels.PAPER_NUMBERS`, and ``tests/test_labels.py`` checks it against
``paper.tex`` wherever the paper is on disk (``pfntheory numbering PAPER.tex``
prints the map to paste).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

from pfntheory.base._checks import checked, instance_of

__all__ = ["number_labels", "theorem_environments"]

_TOKEN = re.compile(
    r"\\\\"  # a row break
    r"|\\(?:begin|end)\{([^}]*)\}"
    r"|\\(sub)*section(\*?)"
    r"|\\appendix\b"
    r"|\\caption\b"
    r"|\\label\{([^}]*)\}"
    r"|\\(?:nonumber|notag)\b"
    r"|\\tag\*?\{([^}]*)\}"
    r"|\\[{}]"  # escaped braces are text
    r"|[{}]"
)
#: Environments whose rows are numbered equations (their starred forms number nothing).
_MULTI = {"align", "gather", "multline", "eqnarray", "flalign", "alignat"}
_FLOATS = {"figure": "Figure", "table": "Table"}
_NEWTHEOREM = re.compile(r"\\newtheorem\{(\w+)\}(?:\[(\w+)\])?\{([^}]*)\}(?:\[(\w+)\])?")


def _strip_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


@checked(tex=instance_of(str))
def theorem_environments(tex: str) -> dict[str, tuple[str, str, str | None]]:
    """``{environment: (printed name, counter, reset-by counter or None)}`` from the
    ``\\newtheorem`` declarations of ``tex`` (shared counters resolved to their owner)."""
    envs: dict[str, tuple[str, str, str | None]] = {}
    for env, shared, name, within in _NEWTHEOREM.findall(_strip_comments(tex)):
        if shared:
            _, counter, reset = envs[shared]
            envs[env] = (name, counter, reset)
        else:
            envs[env] = (name, env, within or None)
    return envs


@dataclass
class _Frame:
    env: str
    kind: str = "group"  # group | float | theorem | equation | rows
    current: str | None = None  # what a \label here refers to
    base_depth: int = 0  # brace depth at the environment's start (rows: breaks at this depth)
    row_labels: list[str] = field(default_factory=list)
    row_numbered: bool = True
    row_tag: str | None = None


@checked(tex=instance_of(str))
def number_labels(tex: str) -> dict[str, str]:
    """``{label: printed reference}`` for every ``\\label`` of the LaTeX source ``tex``.

    The printed reference names the kind as cleveref does (``capitalize,noabbrev``): "Section 3",
    "Appendix B.1", "Theorem 3.1", "Lemma B.2", "Figure 4", "Table 2", "Equation (7)".

    Examples
    --------
    >>> number_labels(r"\\section{A}\\label{s}\\begin{equation}\\label{e}x\\end{equation}")
    {'s': 'Section 1', 'e': 'Equation (1)'}
    """
    tex = _strip_comments(tex)
    start = tex.find("\\begin{document}")
    numberer = _Numberer(theorem_environments(tex))
    for m in _TOKEN.finditer(tex[start:] if start >= 0 else tex):
        numberer.token(m)
    return numberer.out


class _Numberer:
    """LaTeX's counters and grouping over a stream of :data:`_TOKEN` matches: one method per kind
    of token; the labels seen so far and their printed references in :attr:`out`."""

    def __init__(self, theorems: dict[str, tuple[str, str, str | None]]):
        self.theorems = theorems
        self.counters: dict[str, int] = {"section": 0, "subsection": 0, "equation": 0}
        self.counters.update({c: 0 for _, c, _ in theorems.values()})
        self.counters.update({k: 0 for k in _FLOATS})
        self.appendix = False
        self.section_number = ""  # "3" or "B"
        self.top = _Frame("document")  # after a section heading, labels refer to the section
        self.stack: list[_Frame] = [self.top]
        self.depth = 0
        self.out: dict[str, str] = {}

    def token(self, m: re.Match) -> None:
        tok = m.group(0)
        if tok in ("{", "}"):
            self.depth += 1 if tok == "{" else -1
        elif tok == "\\\\":
            frame = self.stack[-1]
            if frame.kind == "rows" and self.depth == frame.base_depth:
                self._close_row(frame)
        elif tok.startswith("\\begin"):
            self._begin(m.group(1))
        elif tok.startswith("\\end"):
            self._end(m.group(1))
        elif m.group(3) is not None:  # \section, \subsection, \subsubsection (starred or not)
            if m.group(3) != "*":
                self._section(tok.count("sub"))
        elif tok == "\\appendix":
            self.appendix = True
            self.counters["section"] = 0
        elif tok == "\\caption":
            self._caption()
        elif m.group(4) is not None:
            self._label(m.group(4))
        elif tok in ("\\nonumber", "\\notag") or tok.startswith("\\tag"):
            rows = self._rows()
            if rows is not None and tok.startswith("\\tag"):
                rows.row_tag = m.group(5)
            elif rows is not None:
                rows.row_numbered = False

    def _rows(self) -> _Frame | None:
        """The innermost environment whose rows are numbered equations, if any."""
        return next((f for f in reversed(self.stack) if f.kind == "rows"), None)

    def _close_row(self, frame: _Frame) -> None:
        if frame.row_tag is not None:
            number: str | None = f"Equation ({frame.row_tag})"
        elif frame.row_numbered:
            self.counters["equation"] += 1
            number = f"Equation ({self.counters['equation']})"
        else:
            number = None
        for lab in frame.row_labels:
            self.out[lab] = number or _outer(self.stack[:-1]) or ""
        frame.row_labels, frame.row_numbered, frame.row_tag = [], True, None

    def _begin(self, env: str) -> None:
        name, starred = env.rstrip("*"), env.endswith("*")
        new = _Frame(env, base_depth=self.depth)
        if name in _FLOATS:
            new.kind = "float"
        elif name in self.theorems:
            printed, counter, reset = self.theorems[name]
            self.counters[counter] += 1
            prefix = f"{self.section_number}." if reset == "section" else ""
            new.kind, new.current = "theorem", f"{printed} {prefix}{self.counters[counter]}"
        elif name == "equation" and not starred:
            new.kind = "equation"
            self.counters["equation"] += 1
            new.current = f"Equation ({self.counters['equation']})"
        elif name in _MULTI and not starred:
            new.kind = "rows"
        self.stack.append(new)

    def _end(self, env: str) -> None:
        frame = self.stack[-1]
        if frame.env != env:
            raise ValueError(f"\\end{{{env}}} closes \\begin{{{frame.env}}}")
        if frame.kind == "rows":
            self._close_row(frame)
        self.stack.pop()

    def _section(self, level: int) -> None:
        """An unstarred heading: ``level`` 0 a section, 1 a subsection (deeper ones unnumbered)."""
        word = "Appendix" if self.appendix else "Section"
        if level == 0:
            self.counters["section"] += 1
            self.counters["subsection"] = 0
            for _, counter, reset in self.theorems.values():
                if reset == "section":
                    self.counters[counter] = 0
            k = self.counters["section"]
            self.section_number = string.ascii_uppercase[k - 1] if self.appendix else str(k)
            self.top.current = f"{word} {self.section_number}"
        elif level == 1:
            self.counters["subsection"] += 1
            self.top.current = f"{word} {self.section_number}.{self.counters['subsection']}"

    def _caption(self) -> None:
        for f in reversed(self.stack):
            if f.kind == "float":
                name = f.env.rstrip("*")
                self.counters[name] += 1
                f.current = f"{_FLOATS[name]} {self.counters[name]}"
                return

    def _label(self, label: str) -> None:
        rows = self._rows()
        inner = next((f for f in reversed(self.stack) if f.current is not None), None)
        if rows is not None and (inner is None or self.stack.index(rows) > self.stack.index(inner)):
            rows.row_labels.append(label)
        else:
            self.out[label] = (inner.current or "") if inner is not None else ""


def _outer(stack: list[_Frame]) -> str | None:
    return next((f.current for f in reversed(stack) if f.current is not None), None)
