"""Every experiment of the paper, declared once, run at ``quick``, ``cpu`` or ``paper`` scale.

Implements the experiment designs of sec:sims, sec:exp1 (fig:exp1), sec:exp2 (fig:exp2-1),
sec:exp3 (fig:exp2-2, supp-fig:exp2-3 and the d=4, d=8, covariate-shift companions), fig:stepsize,
and supp-sec:exp additional (supp-tab:lengthscale-crps, supp-tab:hierarchical-gp), with the
pretraining budgets of supp-tab:pretraining hyperparameters.

* :mod:`.specs` -- the exact-side specs (a trained run is a :class:`pfntheory.infra.tree.RunSpec`)
  and the run-directory naming (prefix + config hash);
* :mod:`.definitions` -- the registry: one :class:`Experiment` per figure/table, at three scales,
  defined in :mod:`.exp1`, :mod:`.exp2` and :mod:`.tables` from the records of :mod:`.design`,
  the scale rules of :mod:`.scales` and the cost model of :mod:`.cost`;
* :mod:`.published` -- the paper's numbers for the two tables, as data;
* :mod:`.reference` -- the exact-PPD reference (CRPS/coverage floor) for the tables;
* :mod:`.state` -- a run directory's state (complete, trained, partial), the runs root;
* :mod:`.execute` -- executing one run (train, adopt, evaluate; or an exact-side result);
* :mod:`.pool` -- a local worker pool or a SLURM job array (submitit), stopped by signals;
* :mod:`.slurm` -- the SLURM jobs' states, failures and dry run (docs/slurm.md);
* :mod:`.runner` -- idempotent, resumable sweeps over experiments (the command:
  :mod:`pfntheory.cli.sweep`);
* :mod:`.results` -- loading the committed runs (the trained-claim checks:
  :mod:`pfntheory.claims.trained`).
"""

from . import published, specs
from .published import HIERARCHICAL_GP, LENGTHSCALE_CRPS, PUBLISHED, published_rows  # noqa: F401
from .specs import ExactPPDSpec, StepsizeSpec  # noqa: F401

# Re-exported, named once in the submodules' ``__all__``: the exact-side spec classes and the
# published tables (``run_name`` and ``PUBLISHED_*`` stay there). The run tree's classes are
# imported from where they are defined, one path each: ``RunSpec`` and ``EvalSpec`` from
# :mod:`pfntheory.infra.tree`, ``TaskSpec`` and ``ModelSpec`` from :mod:`pfntheory.infra.config`.
__all__ = [n for n in specs.__all__ if n.endswith("Spec")]
__all__ += [n for n in published.__all__ if not n.startswith("PUBLISHED_")]
