"""Where a trained transformer's solver stops contracting (sec:generalization, fig:exp2-1): per
n', ``G(n') = sum_l log rho_l`` of the learned solver layers' update matrices on the context
(:func:`solver_growth`), and the smallest n' where it is positive (:func:`predicted_breakdown`).
The derivation: docs/exact-side.md, "Where a trained solver stops contracting".
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    MAX_SEED,
    checked,
    instance_of,
    ints,
    keys,
    positive_int,
    sequence,
)
from . import checked_args

__all__ = ["solver_growth", "predicted_breakdown"]


def _layer_radii(P: np.ndarray, channels, normalised: bool) -> list[float]:
    """Spectral radius of one layer's ``M`` for the Gram ``P`` (n x n), per channel ``(V, S)`` of
    ``channels``. TF's ``M`` is affine in ``P``, so ``P``'s extreme eigenvalues (one
    decomposition) serve every channel; TF^pr's needs one per channel."""
    if not normalised:
        lam = np.linalg.eigvalsh(P)
        return [float(max(abs(1 + S + V * lam[0]), abs(1 + S + V * lam[-1]))) for V, S in channels]
    s = P.sum(1)
    r = 1.0 / np.sqrt(s)
    N = r[:, None] * P * r[None, :]
    out = []
    for V, S in channels:
        lam = np.linalg.eigvalsh(V * N + np.diag(1.0 + S / s))
        out.append(float(max(abs(lam[0]), abs(lam[-1]))))
    return out


def _draw_seed(seed, name: str) -> int:
    """A seed of :func:`solver_growth`: ``seed * 1000 + k`` must stay a valid torch seed."""
    return positive_int(seed, name, minimum=0, maximum=MAX_SEED // 1000 - 1)


@checked(ns=ints(minimum=2), draws=positive_int, seed=_draw_seed)
def solver_growth(model, task, ns, draws: int = 2, seed: int = 0) -> dict:
    """``G(n') = sum_l log rho_l`` of the mean (``f``) and variance (``g``) channels of a trained
    ``model`` (:class:`pfntheory.nn.model.PFNTransformer`) on contexts of the prior ``task``
    (:class:`pfntheory.nn.priors.TaskSpec`), per ``n'`` in ``ns``, averaged over ``draws``
    context draws (module docstring).

    Returns
    -------
    dict
        ``n`` (list), ``growth_f``, ``growth_g`` (lists, mean over draws), ``worst_layer_f`` (the
        largest single-layer ``log rho`` of the mean channel, per n').
    """
    import torch

    from pfntheory.config import TaskSpec
    from pfntheory.nn.attention import score_matrix
    from pfntheory.nn.model import PFNTransformer
    from pfntheory.nn.priors import sample_batch

    instance_of(PFNTransformer, what="pfntheory.nn.model.PFNTransformer")(model, "model")
    instance_of(TaskSpec, what="pfntheory.config.TaskSpec")(task, "task")
    ns = list(ns)
    with torch.no_grad():
        c = {k: v.detach().double().cpu() for k, v in model.coefficients().items()}
    cfg = model.config
    V, S, scale = c["V"].numpy(), c["S"].numpy(), c["scale"].numpy()
    out: dict = {"n": ns, "growth_f": [], "growth_g": [], "worst_layer_f": []}
    for n in ns:
        gf, gg, wf = [], [], []
        for k in range(int(draws)):
            g = torch.Generator().manual_seed(int(seed) * 1000 + k)
            X = sample_batch(task, 1, n, g, dtype=torch.float64).X[0]  # (n, d)
            lf, lg = [], []
            for layer in range(1, cfg.L):
                a = X * torch.as_tensor(scale[layer])
                P = score_matrix(a, a, cfg.score).numpy()
                v, s = V[layer - 1], S[layer - 1]
                rf, rg = _layer_radii(P, ((v[1], s[0]), (v[3], s[1])), cfg.normalised)
                lf.append(np.log(rf))
                lg.append(np.log(rg))
            gf.append(sum(lf))
            gg.append(sum(lg))
            wf.append(max(lf))
        out["growth_f"].append(float(np.mean(gf)))
        out["growth_g"].append(float(np.mean(gg)))
        out["worst_layer_f"].append(float(np.mean(wf)))
    return out


def predicted_breakdown(growth: dict) -> int | None:
    """The smallest ``n'`` of :func:`solver_growth`'s grid where either channel's ``G`` exceeds 0
    (the recursion is no longer guaranteed to contract), or None when it contracts on the whole
    grid."""
    growth = keys("n", "growth_f", "growth_g")(growth, "growth")
    for n, f, g in zip(growth["n"], growth["growth_f"], growth["growth_g"], strict=True):
        if f > 0 or g > 0:
            return int(n)
    return None


#: Context sizes of the breakdown analysis of fig:exp2-1 (the evaluation's 40-200, and beyond).
BREAKDOWN_NS = (40, 64, 96, 128, 160, 200, 250, 300, 400, 600)
#: Evaluation sizes beyond the paper's n' <= 200, where the prediction says the TF breaks down.
BEYOND_NS = (250, 300, 400, 600)
#: File of the analysis, beside the experiment's runs.
BREAKDOWN_FILE = "breakdown.json"


@checked_args("n_instances", run_dirs=sequence, ns=ints(minimum=2), beyond=ints(minimum=2))
def breakdown_analysis(run_dirs, ns=BREAKDOWN_NS, beyond=BEYOND_NS, n_instances: int = 256) -> dict:
    """For each finished run: :func:`solver_growth` of the trained model and of its initialisation
    (the theory values), the predicted breakdown, and the run evaluated at the ``beyond`` sizes
    (:func:`pfntheory.nn.evaluate.evaluate`, read-only, ``n_instances`` per n', the evaluation
    seed of the run's own eval file, so the instances at n' <= 200 are the committed ones)."""
    from pathlib import Path

    from pfntheory import runs as runfiles
    from pfntheory.nn.evaluate import evaluate
    from pfntheory.nn.train import build_model, load_trained

    out = {}
    for rd in run_dirs:
        rd = Path(rd)
        model, cfg, met = load_trained(rd)
        init = build_model(cfg, tuple(met["interval"]), "cpu")
        g = solver_growth(model, cfg.task, ns)
        g0 = solver_growth(init, cfg.task, ns)
        seed = runfiles.load_json(rd / "eval.json").get("seed", 12345)
        ev = evaluate(rd, list(beyond), n_instances=n_instances, seed=seed, save=False)
        out[rd.name] = {
            "normalised": bool(cfg.model.normalised),
            "trained": g,
            "init": g0,
            "predicted_breakdown": predicted_breakdown(g),
            "predicted_breakdown_init": predicted_breakdown(g0),
            "beyond": {
                "n_eval": list(beyond),
                "n_instances": int(n_instances),
                "tv": [float(ev["results"][str(n)]["tv"]) for n in beyond],
                "tv_se": [float(ev["results"][str(n)]["tv_se"]) for n in beyond],
            },
        }
    return out


if __name__ == "__main__":  # python -m pfntheory.claims.breakdown [EXPERIMENT]: the committed file
    import sys

    from pfntheory import runs as runfiles
    from pfntheory._checks import choice
    from pfntheory.experiments.results import load_experiment

    name = sys.argv[1] if len(sys.argv) > 1 else "fig_exp2_1"
    loaded = load_experiment(choice(name, "experiment", ("fig_exp2_1", "fig_exp2_1_budget")), "cpu")
    root = loaded[0].run_dir.parent
    runfiles.save_json(root / BREAKDOWN_FILE, breakdown_analysis([r.run_dir for r in loaded]))
    print(root / BREAKDOWN_FILE)
