"""Every task kind's committed evaluation is reproduced by today's code, instance for instance.

An evaluation file records its seed, instance count and sizes, not the sampler that drew its
instances; a sampler change that keeps the prior's law (fd2419c drew BLR tasks in weight space)
still changes the instances at a fixed seed, and nothing else notices (docs/history.md, "Sampling
BLR tasks": 18 quick BLR evaluations went stale that way for four days). Here one committed run
per task kind and covariate design is re-evaluated at its smallest n' with its committed seed and
count, without saving:

- the quantities of the instances and their exact PPD alone (``*_exact``) must agree to
  ``EXACT_RTOL`` = 1e-10 relative: float64 round-off of the same Cholesky on another BLAS build
  (measured on this machine: at most 1.2e-14); other instances move them by 0.5% or more;
- E[TV] of the stored weights to ``TV_RTOL`` = 1e-4 relative: the float32 forward on another
  instruction set (measured: at most 6.2e-7 across the committed BLR runs).

How it fails: on the 18 quick BLR evaluations as committed before 2026-11-27, ``mse_y_exact``
differed by 48% (E[TV] by 0.74%); any change of what a seed draws does the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs"
EXACT_RTOL = 1e-10
TV_RTOL = 1e-4
EXACT = ("mse_y_exact", "crps_exact", "nll_exact", "coverage_90_exact", "width_90_exact")

#: One committed run per task kind and design: (experiment, run-name prefix, eval file).
CASES = [
    ("fig_exp1", "blr-d5-tf-learn-L2-C16-n32-64-s300", "eval.json"),
    ("fig_exp1", "blr-d5-tf-theor-L16-C128-n128-512-s1000", "eval.json"),
    ("fig_exp1", "rbf-d2-tf-learn-L16-C128-n64-128-s2000", "eval.json"),
    ("supp_exp2_d4", "rbf-d4-pr-learn-L16-C256-n64-128-s1000", "eval_uniform.json"),
    ("supp_exp2_d8", "rbf-d8-pr-learn-L16-C256-n64-128-s1000", "eval.json"),
    ("supp_exp2_d8", "rbf-d8-pr-learn-L16-C256-n64-128-s1000", "eval_uniform.json"),
    ("fig_exp2_2", "rbf-d16-pr-learn-L16-C256-n64-128-s1000", "eval.json"),
    ("supp_tab_lengthscale", "rbf-d16-ell0p4-pr-learn-L16-C256-n64-256-s1000", "eval.json"),
    ("supp_tab_hier", "hier_rbf-d16-pr-learn-L16-C256-n64-256-s1000", "eval.json"),
]


def _run(exp: str, prefix: str) -> Path:
    found = sorted(ROOT.glob(f"{exp}/{prefix}-*"))
    assert len(found) == 1, f"{exp}/{prefix}-*: {len(found)} committed runs"
    return found[0]


@pytest.mark.parametrize("exp,prefix,name", CASES, ids=[f"{c[0]}:{c[1]}:{c[2]}" for c in CASES])
def test_a_committed_evaluation_is_reproduced(exp, prefix, name):
    from pfntheory.infra.tree import EvalSpec
    from pfntheory.nn.evaluate import evaluate

    run = _run(exp, prefix)
    committed = json.loads((run / name).read_text())
    n = min(committed["results"], key=int)
    spec = EvalSpec(
        (int(n),),
        n_instances=committed["n_instances"],
        seed=committed["seed"],
        covariates=None
        if name == "eval.json"
        else name.removeprefix("eval_").removesuffix(".json"),
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        got = evaluate(run, spec, save=False)["results"][n]
    finally:
        torch.set_num_threads(threads)
    want = committed["results"][n]
    for key in EXACT:
        assert got[key] == pytest.approx(want[key], rel=EXACT_RTOL), f"{run.name} {name} {key}"
    assert got["tv"] == pytest.approx(want["tv"], rel=TV_RTOL), f"{run.name} {name} tv"
