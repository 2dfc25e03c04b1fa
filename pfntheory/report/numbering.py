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
``paper.tex`` wherever the paper is on disk (``python -m pfntheory.report.numbering PAPER.tex``
prints the map to paste).
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass, field

from .._checks import checked, instance_of

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
    body = tex[start:] if start >= 0 else tex
    theorems = theorem_environments(tex)
    counters: dict[str, int] = {"section": 0, "subsection": 0, "equation": 0}
    counters.update({c: 0 for _, c, _ in theorems.values()})
    counters.update({k: 0 for k in _FLOATS})
    appendix = False
    section_number = ""  # "3" or "B"
    top = _Frame("document")  # after a section heading, labels refer to the section
    stack: list[_Frame] = [top]
    depth = 0
    out: dict[str, str] = {}

    def sec_word() -> str:
        return "Appendix" if appendix else "Section"

    def close_row(frame: _Frame) -> None:
        if frame.row_tag is not None:
            number: str | None = f"Equation ({frame.row_tag})"
        elif frame.row_numbered:
            counters["equation"] += 1
            number = f"Equation ({counters['equation']})"
        else:
            number = None
        for lab in frame.row_labels:
            out[lab] = number or _outer(stack[:-1]) or ""
        frame.row_labels, frame.row_numbered, frame.row_tag = [], True, None

    for m in _TOKEN.finditer(body):
        tok = m.group(0)
        frame = stack[-1]
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        elif tok == "\\\\":
            if frame.kind == "rows" and depth == frame.base_depth:
                close_row(frame)
        elif tok.startswith("\\begin"):
            env = m.group(1)
            name = env.rstrip("*")
            starred = env.endswith("*")
            new = _Frame(env, base_depth=depth)
            if name in _FLOATS:
                new.kind = "float"
            elif name in theorems:
                printed, counter, _ = theorems[name]
                counters[counter] += 1
                prefix = f"{section_number}." if theorems[name][2] == "section" else ""
                new.kind, new.current = "theorem", f"{printed} {prefix}{counters[counter]}"
            elif name == "equation" and not starred:
                new.kind = "equation"
                counters["equation"] += 1
                new.current = f"Equation ({counters['equation']})"
            elif name in _MULTI and not starred:
                new.kind = "rows"
            stack.append(new)
        elif tok.startswith("\\end"):
            env = m.group(1)
            if frame.env != env:
                raise ValueError(f"\\end{{{env}}} closes \\begin{{{frame.env}}}")
            if frame.kind == "rows":
                close_row(frame)
            stack.pop()
        elif m.group(3) is not None:  # \section, \subsection, \subsubsection (starred or not)
            level = tok.count("sub")
            if m.group(3) == "*" or level > 1:
                continue
            if level == 0:
                counters["section"] += 1
                counters["subsection"] = 0
                for _, counter, reset in theorems.values():
                    if reset == "section":
                        counters[counter] = 0
                k = counters["section"]
                section_number = string.ascii_uppercase[k - 1] if appendix else str(k)
                top.current = f"{sec_word()} {section_number}"
            else:
                counters["subsection"] += 1
                top.current = f"{sec_word()} {section_number}.{counters['subsection']}"
        elif tok == "\\appendix":
            appendix = True
            counters["section"] = 0
        elif tok == "\\caption":
            for f in reversed(stack):
                if f.kind == "float":
                    name = f.env.rstrip("*")
                    counters[name] += 1
                    f.current = f"{_FLOATS[name]} {counters[name]}"
                    break
        elif m.group(4) is not None:  # \label
            label = m.group(4)
            rows = next((f for f in reversed(stack) if f.kind == "rows"), None)
            inner = next((f for f in reversed(stack) if f.current is not None), None)
            if rows is not None and (inner is None or stack.index(rows) > stack.index(inner)):
                rows.row_labels.append(label)
            else:
                out[label] = (inner.current or "") if inner is not None else ""
        elif tok in ("\\nonumber", "\\notag"):
            rows = next((f for f in reversed(stack) if f.kind == "rows"), None)
            if rows is not None:
                rows.row_numbered = False
        elif tok.startswith("\\tag"):
            rows = next((f for f in reversed(stack) if f.kind == "rows"), None)
            if rows is not None:
                rows.row_tag = m.group(5)
    return out


def _outer(stack: list[_Frame]) -> str | None:
    return next((f.current for f in reversed(stack) if f.current is not None), None)


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pfntheory.report.numbering PAPER.tex", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        numbers = number_labels(fh.read())
    print("PAPER_NUMBERS: dict[str, str] = {")
    for label, number in numbers.items():
        print(f"    {label!r}: {number!r},")
    print("}")
    return 0


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    raise SystemExit(_main(sys.argv[1:]))
