"""Reading the committed runs of an experiment back (no training, no evaluation).

:func:`load_experiment` returns, for each run an experiment declares at a scale, its spec and its
evaluations as arrays over n' (mean and standard error per metric). Runs are located by the name
their spec hashes to, so a check reads exactly the runs the definition declares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfntheory.infra import runs as runfiles
from pfntheory.infra.tree import RunSpec

from .definitions import get_experiment
from .state import RESULT_FILE, default_root, is_complete, run_dir_of

__all__ = [
    "EvalTable",
    "LoadedRun",
    "MissingRunsError",
    "load_available",
    "load_eval",
    "load_experiment",
    "COVERAGE_LEVELS",
]

COVERAGE_LEVELS = (50, 90, 95)


class MissingRunsError(FileNotFoundError):
    """Some runs an experiment declares are not (completely) on disk."""

    def __init__(self, experiment: str, scale: str, missing: list[str]):
        self.experiment, self.scale, self.missing = experiment, scale, missing
        super().__init__(
            f"{experiment} [{scale}]: {len(missing)} run(s) missing or incomplete, e.g. "
            f"{missing[:3]}; run `pfntheory sweep {experiment} --scale {scale}`"
        )


@dataclass(frozen=True)
class EvalTable:
    """One evaluation file as arrays over n'.

    Attributes
    ----------
    n_eval : ndarray of shape (k,)
    n_instances : int
        Instances per n'.
    mean, se : dict of str -> ndarray of shape (k,)
        Mean and standard error of the mean of each metric. Coverages get the binomial standard
        error ``sqrt(p (1 - p) / N)``; metrics stored without one (widths) get NaN.
    """

    n_eval: np.ndarray
    n_instances: int
    mean: dict = field(default_factory=dict)
    se: dict = field(default_factory=dict)

    def at(self, n: int) -> int:
        idx = np.flatnonzero(self.n_eval == n)
        if idx.size == 0:
            raise ValueError(f"n'={n} not evaluated; have {self.n_eval.tolist()}")
        return int(idx[0])

    def average(self, metric: str, mask=None) -> tuple[float, float]:
        """Mean of ``metric`` over the n' in ``mask`` (default all) and its standard error
        ``sqrt(sum se^2)/k`` (the instances at different n' are drawn independently)."""
        m = np.ones(self.n_eval.size, bool) if mask is None else np.asarray(mask, bool)
        k = int(m.sum())
        if k == 0:
            raise ValueError("empty n' mask")
        return (
            float(self.mean[metric][m].mean()),
            float(np.sqrt(np.sum(self.se[metric][m] ** 2)) / k),
        )


def load_eval(path) -> EvalTable:
    """Read an ``eval*.json`` written by :func:`pfntheory.nn.evaluate.evaluate`."""
    doc = runfiles.load_json(path)
    res = doc["results"]
    ns = sorted(int(n) for n in res)
    N = int(doc["n_instances"])
    keys = [
        k
        for k, v in res[str(ns[0])].items()
        if isinstance(v, (int, float)) and not k.endswith("_se")
    ]
    mean = {k: np.array([float(res[str(n)][k]) for n in ns]) for k in keys}
    se = {}
    for k in keys:
        if k + "_se" in res[str(ns[0])]:
            se[k] = np.array([float(res[str(n)][k + "_se"]) for n in ns])
        elif k.startswith("coverage_"):
            p = mean[k]
            se[k] = np.sqrt(np.clip(p * (1 - p), 0, None) / N)
        else:
            se[k] = np.full(len(ns), np.nan)
    return EvalTable(n_eval=np.array(ns), n_instances=N, mean=mean, se=se)


@dataclass(frozen=True)
class LoadedRun:
    """A finished run: its spec, directory, evaluations (by file name) or exact-side result."""

    spec: object
    run_dir: Path
    evals: dict = field(default_factory=dict)
    result: dict | None = None
    train_metrics: dict | None = None

    @property
    def eval(self) -> EvalTable:
        return self.evals["eval.json"]


def _load_run(spec, run_dir: Path) -> LoadedRun:
    """One complete run: a trained run's evaluations and training metrics, or an
    exact-side result."""
    if isinstance(spec, RunSpec):
        return LoadedRun(
            spec=spec,
            run_dir=run_dir,
            evals={ev.filename: load_eval(run_dir / ev.filename) for ev in spec.evals},
            train_metrics=runfiles.load_json(run_dir / runfiles.METRICS),
        )
    return LoadedRun(spec=spec, run_dir=run_dir, result=runfiles.load_json(run_dir / RESULT_FILE))


def load_available(
    experiment: str, scale: str = "quick", root=None
) -> tuple[list[LoadedRun], list[str]]:
    """The complete runs ``experiment`` declares at ``scale`` and the names of the others.

    For a design that is still being swept: every complete run is read (as :func:`load_experiment`
    reads it), in the design's order; absent or unfinished runs are skipped and named.

    Parameters
    ----------
    experiment : str
        An experiment name (:func:`pfntheory.experiments.definitions.get_experiment`).
    scale : {"quick", "cpu", "paper"}
    root : path, optional
        Runs root (default ``reports/runs`` or ``$PFNTHEORY_RUNS``).

    Returns
    -------
    runs : list of LoadedRun
        The complete runs.
    missing : list of str
        Spec names of the declared runs that are absent or incomplete (design order).
    """
    exp = get_experiment(experiment)
    root = Path(root) if root is not None else default_root()
    out, missing = [], []
    for spec in exp.runs(scale):
        rd = run_dir_of(exp.name, spec, root)
        if is_complete(spec, rd):
            out.append(_load_run(spec, rd))
        else:
            missing.append(spec.name)
    return out, missing


def load_experiment(experiment: str, scale: str = "quick", root=None) -> list[LoadedRun]:
    """Every run ``experiment`` declares at ``scale``, read from ``root`` (default
    ``reports/runs``).

    Raises
    ------
    MissingRunsError
        If any declared run is absent or incomplete.
    """
    runs, missing = load_available(experiment, scale, root)
    if missing:
        raise MissingRunsError(get_experiment(experiment).name, scale, missing)
    return runs
