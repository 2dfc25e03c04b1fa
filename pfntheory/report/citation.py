"""What a reader cites: the paper's BibTeX, this package's version, and the commit the report was
built from.

The stamp must not break "two rebuilds change no byte", so it holds no wall-clock time. It names the
**last commit that touched the report's inputs** (:data:`INPUTS`: the code, the notebooks, the
package metadata and the committed runs and case studies) and that commit's date, from
``git log -1 -- INPUTS``. Rebuilding from the same inputs therefore writes the same stamp, and so
does rebuilding after a commit that only adds the rebuilt pages (``reports/*.html``, ``results/``,
``figures/`` are outputs, not inputs). Uncommitted edits to the inputs are not named: commit the
code first, then build, then commit the pages (the workflow the stamp certifies). Outside a git
checkout the commit reads "unknown".
"""

from __future__ import annotations

import html
import os
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pfntheory.base._checks import checked, instance_of, optional

from .spec import ROOT

__all__ = [
    "INPUTS",
    "PAPER_TITLE",
    "PAPER_BIBTEX",
    "Stamp",
    "build_stamp",
    "citation_html",
    "stamp_html",
]

#: Paths (relative to the repository) whose last commit the report names.
INPUTS: tuple[str, ...] = (
    "pfntheory",
    "notebooks",
    "pyproject.toml",
    "reports/runs",
    "reports/casestudy",
)
PAPER_TITLE = "Transformers Can Learn Posterior Predictive Distributions In-Context"
#: The paper (ICML 2026, the ``accepted`` option of icml2026.sty; authors as in ``paper.tex``).
PAPER_BIBTEX = """@inproceedings{kang2026transformers,
  title     = {Transformers Can Learn Posterior Predictive Distributions In-Context},
  author    = {Kang, Gyeonghun and Lee, Changwoo J. and Cheng, Xiang},
  booktitle = {Proceedings of the 43rd International Conference on Machine Learning (ICML)},
  year      = {2026}
}"""


@dataclass(frozen=True)
class Stamp:
    """``version`` of the package (pyproject.toml), ``commit`` (10 hex digits, or "unknown") and
    ``date`` (YYYY-MM-DD, the commit date; "" when unknown) of the last commit touching
    :data:`INPUTS`."""

    version: str
    commit: str
    date: str
    authors: str = "the pfntheory contributors"
    url: str = ""


def _project(root: Path) -> dict:
    try:
        return dict(tomllib.loads((root / "pyproject.toml").read_text())["project"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return {}


def _version(root: Path) -> str:
    return str(_project(root).get("version", "unknown"))


def _authors_and_url(root: Path) -> tuple[str, str]:
    """BibTeX authors ("A and B") and the repository URL from pyproject.toml's ``authors`` and
    ``[project.urls]`` (Repository, else Homepage, else Source); defaults when absent."""
    project = _project(root)
    names = [a.get("name", "") for a in project.get("authors", []) if isinstance(a, dict)]
    urls = project.get("urls", {}) if isinstance(project.get("urls"), dict) else {}
    url = next((urls[k] for k in ("Repository", "Homepage", "Source") if urls.get(k)), "")
    return " and ".join(n for n in names if n) or "the pfntheory contributors", str(url)


@checked(root=optional(instance_of(str, os.PathLike, what="path")))
def build_stamp(root: str | os.PathLike | None = None) -> Stamp:
    """The :class:`Stamp` of the repository at ``root`` (default: this checkout)."""
    root = Path(root) if root is not None else ROOT
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--abbrev=10", "--format=%h %cs", "--", *INPUTS],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    commit, date = (out[0], out[1]) if len(out) == 2 else ("unknown", "")
    authors, url = _authors_and_url(root)
    return Stamp(version=_version(root), commit=commit, date=date, authors=authors, url=url)


@checked(stamp=instance_of(Stamp))
def citation_html(stamp: Stamp) -> str:
    """The index's citation block: package, version, commit, date and the paper's BibTeX."""
    e = html.escape
    when = f", {e(stamp.date)}" if stamp.date else ""
    url = f"\n  url     = {{{stamp.url}}}," if stamp.url else ""
    year = f"\n  year    = {{{stamp.date[:4]}}}," if stamp.date else ""
    software = f"""@software{{pfntheory,
  author  = {{{{{stamp.authors}}}}},
  title   = {{pfntheory: executable supplement to ``{PAPER_TITLE}''}},
  version = {{{stamp.version}}},{year}{url}
  note    = {{commit {stamp.commit}{when}}}
}}"""
    return (
        '<details class="cite"><summary><b>Cite</b>: the paper (BibTeX below); this report: '
        f"<code>pfntheory</code> {e(stamp.version)}, commit <code>{e(stamp.commit)}</code>{when} "
        "(the last commit that changed its code, notebooks or runs)</summary>\n"
        f"<pre>{e(PAPER_BIBTEX)}\n\n{e(software)}</pre></details>"
    )


@checked(stamp=instance_of(Stamp))
def stamp_html(stamp: Stamp) -> str:
    """One line for every page: the package version, commit and date the report was built from."""
    e = html.escape
    when = f" ({e(stamp.date)})" if stamp.date else ""
    return (
        f'<p class="stamp">Built from <code>pfntheory</code> {e(stamp.version)}, commit '
        f"<code>{e(stamp.commit)}</code>{when}; how to cite it: the index's Cite block.</p>"
    )
