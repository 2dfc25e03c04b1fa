"""Plain-HTML typesetting of the ASCII maths used in claims and notebooks (no script, no network).

The claims state their results in ASCII (``TV(p, p~) <= L_Lip |Gamma| (b-a)/2 + eps``); the report
shows them with Greek letters, relation signs, sub- and superscripts as plain HTML, so that every
page renders offline and prints as it shows. :func:`math_html` handles one formula or a sentence of
prose with formulas in it; :func:`markdown_math` rewrites the inline code spans of a Markdown cell.
"""

from __future__ import annotations

import html
import re

from pfntheory.base._checks import ArgumentTypeError

__all__ = ["math_html", "markdown_math", "figure_math"]

_GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "Gamma": "Γ",
    "delta": "δ",
    "Delta": "Δ",
    "epsilon": "ε",
    "eps": "ε",
    "eta": "η",
    "theta": "θ",
    "Theta": "Θ",
    "kappa": "κ",
    "lambda": "λ",
    "Lambda": "Λ",
    "mu": "μ",
    "xi": "ξ",
    "Xi": "Ξ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "Sigma": "Σ",
    "tau": "τ",
    "phi": "φ",
    "Phi": "Φ",
    "psi": "ψ",
    "Psi": "Ψ",
    "omega": "ω",
    "Omega": "Ω",
}
_GREEK_RE = re.compile(
    r"(?<![A-Za-z])(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])"
)
# relation signs, after html.escape (so "<=" reads "&lt;=")
_SIGNS = (
    ("&lt;=", "≤"),
    ("&gt;=", "≥"),
    ("&lt;~", "≲"),
    ("&gt;~", "≳"),
    ("!=", "≠"),
    ("-&gt;", "→"),
    ("+-", "±"),
    ("sqrt(", "√("),
    ("||_inf", "‖<sub>∞</sub>"),
    ("||", "‖"),
)
_SYMBOL = r"(?:[A-Za-z]|[α-ωΑ-Ω]|\)|‖)"
# x_1, lambda_{n+1}, n_max: a subscript of at most 4 characters after a single symbol
_SUB_RE = re.compile(
    r"(?<![A-Za-z0-9_])(" + _SYMBOL + r")_(\{[^{}]*\}|[A-Za-z0-9α-ωΑ-Ω]{1,4})(?![A-Za-z0-9_])"
)
# e^{2 Delta}, sigma^2, n^-1
_SUP_RE = re.compile(r"\^(\{[^{}]*\}|-?[A-Za-z0-9.]+(?:/[0-9]+)?)")


def _unbrace(s: str) -> str:
    return s[1:-1] if s.startswith("{") and s.endswith("}") else s


def math_html(text: str) -> str:
    """``text`` (ASCII maths, possibly inside prose) as escaped HTML with Greek letters, relation
    signs and sub-/superscripts. File names and identifiers longer than one letter before an
    underscore (``mse_y``, ``eval_uniform.json``) are left as they are."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, got {type(text).__name__}")
    out = html.escape(text, quote=False)
    for a, b in _SIGNS:
        out = out.replace(a, b)
    out = _GREEK_RE.sub(lambda m: _GREEK[m.group(1)], out)
    out = _SUB_RE.sub(lambda m: f"{m.group(1)}<sub>{_unbrace(m.group(2))}</sub>", out)
    out = _SUP_RE.sub(lambda m: f"<sup>{_unbrace(m.group(1))}</sup>", out)
    return out


_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def markdown_math(md: str) -> str:
    """The Markdown ``md`` with every inline code span that reads as maths typeset by
    :func:`math_html` (as an inline ``<span class="math">``); spans naming a file, a command, a
    module or a snake_case identifier, and fenced code blocks, are left as code."""
    if not isinstance(md, str):
        raise ArgumentTypeError(f"md must be a str (Markdown), got {type(md).__name__}")
    parts, last = [], 0
    for m in _FENCE.finditer(md):
        parts.append(_CODE_SPAN.sub(_span, md[last : m.start()]))
        parts.append(m.group(0))
        last = m.end()
    parts.append(_CODE_SPAN.sub(_span, md[last:]))
    return "".join(parts)


# a code span that names a file, a command, a module (``.stepsize`` too) stays code
_CODE_LIKE = re.compile(
    r"(^(pfntheory|python|pytest|pip)\b|\.(json|py|csv|png|html)\b|/[\w<>.-]+/|^--"
    r"|\b[a-z]\w*\.[a-z]\w*\.|\w\(\)$|^\.[a-z_]\w*$)"
)
# ... and so does an identifier (``mse_y``), unless the span is a formula (``delta_MLP + 1/C``)
_IDENTIFIER = re.compile(r"[a-z]{2,}_[a-z]{2,}")
_FORMULA = re.compile(r"\s(?:[-+*/=]|&lt;|&gt;|<|>|<=|>=|<~|>~)=?~?\s")


def _span(m: re.Match) -> str:
    text = m.group(1)
    if _CODE_LIKE.search(text) or (_IDENTIFIER.search(text) and not _FORMULA.search(text)):
        return m.group(0)
    return f'<span class="math">{math_html(text)}</span>'


# Figure text (matplotlib): the same ASCII maths typeset with mathtext, outside any ``$...$``.
_MATH_SEG = re.compile(r"(\$[^$]*\$)")
_SQRT_RE = re.compile(r"\bsqrt\s*(?:\(([^()]*)\)|([A-Za-z0-9.]+))")
_HAT_RE = re.compile(r"([A-Za-zα-ωΑ-Ω])_hat(?![A-Za-z0-9])")
_FIG_SUP_RE = re.compile(r"\^(\{[^{}]*\}|\([^()]*\)|-?[A-Za-z0-9.]+(?:/[0-9]+)?)")


def _mathrm(s: str) -> str:
    """Letters of two or more in a row upright (``pr``, ``max``), as the paper sets them."""
    return re.sub(r"[A-Za-z]{2,}", lambda m: r"\mathrm{" + m.group(0) + "}", s)


def figure_math(text: str) -> str:
    r"""``text`` of a matplotlib figure with its ASCII maths typeset by mathtext: ``sigma^2`` ->
    ``σ$^{2}$``, ``TF^pr`` -> ``TF$^{\mathrm{pr}}$``, ``sqrt(d)`` and ``sqrt d`` ->
    ``$\sqrt{d}$``, ``+-`` -> ``±``, Greek names -> letters, ``lambda_1`` -> ``λ$_{1}$``,
    ``rho_hat`` -> ``ρ̂``. Spans already in ``$...$`` are kept; file names and identifiers
    (``fig_exp2_1``) are left as they are."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, got {type(text).__name__}")
    out = []
    for part in _MATH_SEG.split(text):
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(part)
            continue
        part = part.replace("+-", "±").replace("||", "‖")
        part = _SQRT_RE.sub(lambda m: r"$\sqrt{" + (m.group(1) or m.group(2)) + "}$", part)
        part = _HAT_RE.sub(lambda m: m.group(1) + "\u0302", part)
        part = _GREEK_RE.sub(lambda m: _GREEK[m.group(1)], part)
        part = _SUB_RE.sub(
            lambda m: m.group(1) + "$_{" + _mathrm(_unbrace(m.group(2))) + "}$", part
        )
        part = _FIG_SUP_RE.sub(lambda m: "$^{" + _mathrm(_unbrace(m.group(1))) + "}$", part)
        out.append(part)
    return "".join(out)
