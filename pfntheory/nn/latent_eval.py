"""The evaluation set of the classification PFN: Laplace, EP and the sampling reference on the
same held-out contexts, and a trained run's predictive on them (docs/latent.md, "The trained
PFN").

The reference file (``reference.json`` under the experiment's root) holds, per n', the contexts
(inputs, labels, the latent values and ``q* = Phi(f*)`` at the queries) and the three predictives
``p_laplace``, ``p_ep``, ``p_ess`` with the sampler's standard error ``se_ess``. It is drawn once
from ``seed`` (apart from the learning curve's held-out set) and read by every run's evaluation.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from pfntheory.base._checks import int_tuple, positive_int
from pfntheory.infra import runs
from pfntheory.infra.latent_spec import REFERENCE_FILE
from pfntheory.maths import latent

from .latent import LatentTask, _rbf, load_latent, sample_classification

__all__ = ["REFERENCE_FILE", "build_reference", "load_reference", "run_predictions"]


def build_reference(
    task: LatentTask,
    path,
    *,
    n_eval=(32, 64),
    contexts: int = 64,
    seed: int = 20261127,
    chains: int = 8,
    samples: int = 600,
) -> dict:
    """Draw ``contexts`` contexts per n' from ``task``, fit Laplace (R&W 3.1/3.2), EP (3.5/3.6)
    and run the EP-preconditioned elliptical slice sampler (exact in the limit; its SE recorded);
    write them to ``path`` atomically and return the document."""
    n_eval = int_tuple(n_eval, "n_eval")
    contexts = positive_int(contexts, "contexts", minimum=3)
    rng = np.random.default_rng(seed)
    a2 = task.alpha**2
    doc: dict = {
        "schema": 1,
        "task": task.__dict__,
        "seed": seed,
        "chains": chains,
        "samples": samples,
        "by_n": [],
    }
    for n in n_eval:
        t0 = time.perf_counter()
        g = torch.Generator().manual_seed(seed + n)
        X, y, f, q, ys = sample_classification(task, contexts, n, g)
        K = a2 * _rbf(X, X, task.lengthscale).numpy()
        K = K + latent.JITTER * a2 * np.eye(K.shape[-1])
        yn = y.numpy()
        Kc, ks, kss = K[:, :n, :n], K[:, :n, n:], np.full((contexts, task.n_query), a2)
        p_lap, p_ep, tau, nu, sweeps = [], [], [], [], []
        for b in range(contexts):
            fit = latent.laplace_mode(Kc[b], yn[b])
            p_lap.append(latent.laplace_predict(fit, ks[b], kss[b])[2])
            ep = latent.ep_fit(Kc[b], yn[b])
            p_ep.append(latent.ep_predict(ep, ks[b], kss[b])[2])
            tau.append(ep.tau)
            nu.append(ep.nu)
            sweeps.append(ep.sweeps)
        ess = latent.ess_predict(
            Kc,
            yn,
            ks,
            kss,
            rng,
            sites=(np.array(tau), np.array(nu)),
            chains=chains,
            samples=samples,
        )
        doc["by_n"].append(
            {
                "n": n,
                "X": X.numpy(),
                "y": yn,
                "q": q.numpy(),
                "y_star": ys.numpy(),
                "p_laplace": np.array(p_lap),
                "p_ep": np.array(p_ep),
                "p_ess": ess.p,
                "se_ess": ess.se,
                "ess_evals_per_step": ess.evals_per_step,
                "ep_sweeps_max": int(max(sweeps)),
                "seconds": time.perf_counter() - t0,
            }
        )
    runs.save_json(path, doc)
    return doc


def load_reference(path) -> list[dict]:
    """The reference file's per-n' entries with arrays as float64 ndarrays."""
    doc = runs.load_json(path)
    out = []
    for e in doc["by_n"]:
        out.append({k: (np.asarray(v, float) if isinstance(v, list) else v) for k, v in e.items()})
    return out


def run_predictions(run_dir, reference: list[dict]) -> dict[int, np.ndarray]:
    """The trained run's ``P(y* = 1)`` at every query of the reference, ``{n': (contexts, m)}``."""
    _, model = load_latent(run_dir)
    out = {}
    with torch.no_grad():
        for e in reference:
            X = torch.as_tensor(e["X"], dtype=torch.float32)
            y = torch.as_tensor(e["y"], dtype=torch.float32)
            mu, s2 = model(X, y)
            out[int(e["n"])] = model.probability(mu, s2).double().numpy()
    return out
