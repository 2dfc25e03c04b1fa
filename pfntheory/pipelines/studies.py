"""The studies the report reads that are not runs of the experiment registry
(:data:`pfntheory.experiments.definitions.REGISTRY`): each with its files, how it is run and what
it costs, so that ``pfntheory sweep --list`` lists every study the report reads. Three are run by
``pfntheory sweep NAME`` (:attr:`Study.run`: incremental, in the sweep's process under its runs
root's lock); the others name the calls or the command that writes their files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Study", "LISTED_STUDIES", "get_study"]


@dataclass(frozen=True)
class Study:
    """One study outside the registry.

    Attributes
    ----------
    name, title : str
    files : tuple of str
        Glob patterns, relative to the runs root, of the committed files it writes.
    how : str
        How it is run (a command, or the functions that write its files).
    cost : str
        Its cost in words (measured where the files or docs record it).
    run : callable, optional
        ``run(root, *read_roots) -> Path``: what ``pfntheory sweep NAME`` calls (incremental: what
        is on disk is kept; ``read_roots``: further runs roots it reads, ``--read-root``); None
        when the sweep does not drive it (:attr:`how` says what does).
    """

    name: str
    title: str
    files: tuple[str, ...]
    how: str
    cost: str
    run: Callable[..., Path] | None = None

    def found(self, root) -> list[Path]:
        """The files of the study under the runs root ``root``."""
        root = Path(root)
        return sorted(p for g in self.files for p in root.glob(g) if p.is_file())


def _breakdown(root: Path) -> Path:
    from .breakdown_run import run_breakdown

    return run_breakdown(root=root)


def _shift_cause(root: Path, *more: Path) -> Path:
    from .shift_cause_run import run_shift_cause

    return run_shift_cause([root, *more])


def _multihead_fair(root: Path) -> Path:
    from pfntheory.claims.multihead_fair import FOLDER

    from .multihead_fair import run_fair

    run_fair(root)
    return Path(root) / FOLDER


def _multihead_reference(root: Path) -> Path:
    from pfntheory.claims.multihead_cells import FOLDER, REFERENCE_FOLDER

    from .multihead_run import run_reference

    run_reference(root)
    return Path(root) / FOLDER / REFERENCE_FOLDER


_MULTIHEAD_HOW = (
    "not by sweep: calls of pfntheory.pipelines.multihead_run ({}) that write the JSON; "
    "docs/multihead.md gives each call"
)

#: The studies outside the registry, by name, in the order ``sweep --list`` lists them.
LISTED_STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study(
            "breakdown",
            "The breakdown diagnostic of fig:exp2-1's longest cpu runs beyond n' = 200",
            ("fig_exp2_1_budget/breakdown.json",),
            "pfntheory sweep breakdown (incremental: the n' already in the file are kept)",
            "not modelled: E[TV] of the two longest runs at 13 + 2 more n' (no timing recorded)",
            _breakdown,
        ),
        Study(
            "shift_cause",
            "The d = 8 covariate-shift loss of the complete cpu TF^pr runs, decomposed",
            ("supp_exp2_d8/shift_cause.json",),
            "pfntheory sweep shift_cause (incremental: a run already decomposed is kept)",
            "not modelled: one decomposition per run, 28 runs in the file (no timing recorded)",
            _shift_cause,
        ),
        Study(
            "multihead_select",
            "Multi-head TF^pr: the selection ceiling and the selectors' accuracy",
            ("supp_tab_hier_multihead_select/*.json", "supp_tab_hier_multihead/paired-tv-cpu.json"),
            _MULTIHEAD_HOW.format("ceiling, selector_accuracy, cached_paired_tv"),
            "not modelled; the selector trained in 113 s CPU (docs/multihead.md gives each part)",
        ),
        Study(
            "multihead_confirm",
            "Multi-head TF^pr: the confirmation cells at n' = 512 and 1024 in resumable batches",
            ("supp_tab_hier_multihead_confirm/*.json", "supp_tab_hier_multihead_confirm/batches/*"),
            _MULTIHEAD_HOW.format("run_confirmation, curve_values"),
            "86 s CPU for the 3 batches at n' = 512, more per n' = 1024 batch (docs/multihead.md)",
        ),
        Study(
            "multihead_reference",
            "Multi-head TF^pr: the single L = 32 at 2S = 2000 steps, weight-averaged, on the "
            "confirmation's draws (the reference of page 08's rows against the single L = 32)",
            (
                "supp_tab_hier_multihead_confirm/single-L32-s2000/*.json",
                "supp_tab_hier_multihead_confirm/single-L32-s2000/batches/*",
            ),
            "pfntheory sweep multihead_reference, in the repository root (resumable: every batch "
            "on disk is kept; pfntheory.pipelines.multihead_run.run_reference)",
            "not modelled; each batch's and cell's CPU seconds are in its file",
            _multihead_reference,
        ),
        Study(
            "multihead_chebyshev",
            "Multi-head TF^pr with Chebyshev-step hand-set heads: ceilings, confirmations, depth",
            ("supp_tab_hier_multihead_chebyshev/*.json", "supp_tab_hier_multihead_chebyshev/*/*"),
            _MULTIHEAD_HOW.format("ceiling with chebyshev_heads.set_layer_steps, run_confirmation"),
            "107-114 s CPU per Chebyshev rule of the depth file; the cells as multihead_confirm",
        ),
        Study(
            "multihead_fair",
            "Multi-head TF^pr, the fair comparison: selector and ranges from the single heads' "
            "pretraining range, a hand-set one-head baseline (page 08)",
            ("supp_tab_hier_multihead_fair/*.json", "supp_tab_hier_multihead_fair/batches/*"),
            "pfntheory sweep multihead_fair (resumable: the selector, the ranges and every batch "
            "on disk are kept; pfntheory.pipelines.multihead_fair.run_fair)",
            "not modelled; the selector's and the batches' CPU seconds are in their files",
            _multihead_fair,
        ),
        Study(
            "pfns_baseline",
            "A standard PFN (the PFNs library's transformer) on the paper's task, d = 2 and 8",
            ("pfns_baseline/*/*.json", "pfns_baseline/reference/*.json"),
            "not by sweep: python -m pfntheory.pipelines.pfns_baseline --steps 1500, in a separate "
            "environment with the optional pfns package (pip install '.[audit-pfns]')",
            "about 7 s CPU per audit; training S and 2S steps per d (not modelled)",
        ),
    )
}


def get_study(name: str) -> Study:
    """The study called ``name``; an unknown name is a ValueError listing them."""
    if not isinstance(name, str) or name not in LISTED_STUDIES:
        raise ValueError(f"name must be one of {', '.join(LISTED_STUDIES)}, got {name!r}")
    return LISTED_STUDIES[name]
