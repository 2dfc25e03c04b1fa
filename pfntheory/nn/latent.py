"""A PFN for binary GP classification (the paper's Discussion, "latent GP models"): the prior,
the model and a compact training loop (docs/latent.md, "The trained PFN").

* The prior (:class:`LatentTask`): ``x ~ N(0, I/d)``, ``f ~ GP(0, alpha^2 exp(-||x - x'||^2 /
  (2 ell^2)))``, ``y_i = +1`` with probability ``Phi(f(x_i))``; ``n ~ Unif{n_min..n_max}``
  context points and ``n_query`` queries per context.
* The model (:class:`LatentPFN`): tokens carry ``(y, is_query)``; ``L`` blocks, each a token-wise
  MLP and one kernel attention whose score is ``exp(-||x_i - x_j||^2 / (2 ell_l^2)) w_i`` over the
  context keys ``i``, with a key weight ``w_i = exp(-softplus(a_l^T h_i)) in (0, 1]`` read from the
  token's state: the family holds the Newton construction of
  :mod:`pfntheory.maths.latent_construction` up to the MLPs' approximation of ``W`` and ``y~`` (its
  score is ``kappa W_i``). The head is the paper's binned-Gaussian head with two bins ``(-inf, 0],
  (0, inf)``: ``P(y* = 1) = Phi(mu / sqrt(1 + s^2))``.
* The loss is the cross-entropy of the head against ``q* = Phi(f(x*))``, the Rao-Blackwellised
  label (same minimiser as the NLL of a drawn ``y*``, the PFN objective, with less variance).
* Training (:func:`train_latent`): Adam, warm-up then cosine decay (``nn.train.lr_factor``),
  gradient clipping; the data of step ``s`` is a function of ``(seed, s)``; an atomic checkpoint
  every ``checkpoint_every`` steps (resumable); the learning curve in schema 1
  (``learning_curve.json``) with E[TV] = E|p - p_EP| (the TV of two Bernoulli laws) against EP on
  a held-out set drawn once, the NLL and Brier score (the CRPS of a binary outcome) of drawn labels,
  the coverage of the 90% predictive set, and per-context TV (``tv_instances``) at every point.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

from pfntheory.base._checks import instance_of, positive_int
from pfntheory.infra import runs
from pfntheory.infra.config import LEARNING_CURVE_FILE
from pfntheory.infra.latent_spec import (
    DESIGN,
    EXPERIMENT,
    HELDOUT_FILE,
    LATENT_CONFIG,
    LatentRunSpec,
    LatentTask,
    latent_doc,
    latent_spec_of,
)
from pfntheory.maths import latent

from .train import lr_factor, step_generator

__all__ = [
    "DESIGN",
    "EXPERIMENT",
    "LatentTask",
    "LatentRunSpec",
    "LatentPFN",
    "sample_classification",
    "heldout_set",
    "HELDOUT_FILE",
    "LATENT_CONFIG",
    "save_heldout",
    "load_heldout",
    "train_latent",
    "load_latent",
]


def _rbf(X1: torch.Tensor, X2: torch.Tensor, lengthscale) -> torch.Tensor:
    d2 = ((X1[:, :, None, :] - X2[:, None, :, :]) ** 2).sum(-1)  # (B, N1, N2), differences
    return torch.exp(-0.5 * d2 / lengthscale**2)


def sample_classification(task: LatentTask, B: int, n: int, generator: torch.Generator):
    """``B`` contexts of ``n`` points and ``task.n_query`` queries from the prior (float64).

    Returns ``X`` (B, n + m, d), ``y`` (B, n) in {-1, +1}, ``f`` (B, n + m) the latent values,
    ``q`` (B, m) = ``Phi(f*)`` and ``y_star`` (B, m) drawn labels in {-1, +1}.
    """
    instance_of(LatentTask)(task, "task")
    B, n = positive_int(B, "B"), positive_int(n, "n")
    instance_of(torch.Generator)(generator, "generator")
    m, d = task.n_query, task.d
    X = torch.randn(B, n + m, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    K = task.alpha**2 * _rbf(X, X, task.lengthscale)
    K = K + latent.JITTER * task.alpha**2 * torch.eye(n + m, dtype=torch.float64)
    z = torch.randn(B, n + m, 1, generator=generator, dtype=torch.float64)
    f = (torch.linalg.cholesky(K) @ z)[..., 0]
    prob = torch.special.ndtr(f)
    u = torch.rand(B, n + m, generator=generator, dtype=torch.float64)
    lab = torch.where(u < prob, 1.0, -1.0)
    return X, lab[:, :n], f, prob[:, n:], lab[:, n:]


class LatentPFN(nn.Module):
    """The classification PFN (module docstring). ``forward(X, y)`` with the first ``y.shape[1]``
    tokens of ``X`` as the context returns ``mu, s2`` at the queries, each ``(B, m)``."""

    def __init__(self, spec: LatentRunSpec):
        super().__init__()
        instance_of(LatentRunSpec)(spec, "spec")
        C, H, L = spec.width, spec.hidden, spec.L
        self.embed = nn.Linear(2, C)
        self.log_ell = nn.Parameter(torch.full((L,), math.log(spec.task.lengthscale)))
        self.norms = nn.ModuleList(nn.LayerNorm(C) for _ in range(2 * L))
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(C, H), nn.GELU(), nn.Linear(H, C)) for _ in range(L)
        )
        self.key = nn.ModuleList(nn.Linear(C, 1) for _ in range(L))
        self.value = nn.ModuleList(nn.Linear(C, C, bias=False) for _ in range(L))
        self.head = nn.Linear(C, 2)

    def forward(
        self, X: torch.Tensor, y: torch.Tensor, trace: list | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``trace``: a list that receives, per block, the context's key weights ``log w``
        ``(B, n)`` and every token's state ``h`` ``(B, N, C)`` after the block (for probes)."""
        B, N, _ = X.shape
        n = y.shape[1]
        inp = torch.zeros(B, N, 2, dtype=X.dtype)
        inp[:, :n, 0] = y
        inp[:, n:, 1] = 1.0
        h = self.embed(inp)  # (B, N, C)
        d2 = ((X[:, :, None, :] - X[:, None, :n, :]) ** 2).sum(-1)  # (B, N, n): query j, key i
        for l, (mlp, key, value) in enumerate(zip(self.mlps, self.key, self.value, strict=True)):
            h = h + mlp(self.norms[2 * l](h))  # token-wise map
            a = self.norms[2 * l + 1](h)
            log_w = -nn.functional.softplus(key(a[:, :n]))  # (B, n, 1): key weight in (0, 1]
            ell2 = torch.exp(2 * self.log_ell[l])
            S = torch.exp(-0.5 * d2 / ell2 + log_w.transpose(1, 2))  # (B, N, n): kappa w_i
            h = h + S @ value(a[:, :n]) / n  # kernel attention over the context keys
            if trace is not None:
                trace.append({"log_w": log_w[..., 0].detach(), "h": h.detach()})
        out = self.head(h[:, n:])  # (B, m, 2)
        return out[..., 0], nn.functional.softplus(out[..., 1])

    @staticmethod
    def probability(mu: torch.Tensor, s2: torch.Tensor) -> torch.Tensor:
        """The two-bin head: ``P(y* = 1) = Phi(mu / sqrt(1 + s^2))``."""
        return torch.special.ndtr(mu / torch.sqrt(1.0 + s2))


def _bce(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    p = p.clamp(1e-7, 1 - 1e-7)
    return -(q * torch.log(p) + (1 - q) * torch.log1p(-p)).mean()


def heldout_set(spec: LatentRunSpec) -> list[dict]:
    """The learning curve's held-out contexts per n' (drawn once from ``curve_seed``), with EP's
    predictive at each query as the reference (numpy float64)."""
    out = []
    for n in spec.curve_n_eval:
        g = torch.Generator().manual_seed(spec.curve_seed * 1000 + n)
        X, y, f, q, ys = sample_classification(spec.task, spec.curve_instances, n, g)
        Xn, yn = X.numpy(), y.numpy()
        ker = spec.task.alpha**2
        p_ep = []
        for b in range(Xn.shape[0]):
            Kb = ker * _rbf(X[b : b + 1], X[b : b + 1], spec.task.lengthscale)[0].numpy()
            Kb = Kb + latent.JITTER * ker * np.eye(Kb.shape[0])
            fit = latent.ep_fit(Kb[:n, :n], yn[b])
            p_ep.append(latent.ep_predict(fit, Kb[:n, n:], np.diag(Kb)[n:] * 0 + ker)[2])
        out.append({"n": n, "X": X, "y": y, "q": q, "y_star": ys, "p_ref": np.array(p_ep)})
    return out


def save_heldout(held: list[dict], path) -> list[dict]:
    """Write a :func:`heldout_set` to ``path`` (JSON, atomically) and return it."""
    runs.save_json(
        path, [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in h.items()} for h in held]
    )
    return held


def load_heldout(path) -> list[dict]:
    """A held-out set written by :func:`save_heldout` (tensors float64, ``p_ref`` an ndarray)."""
    out = []
    for h in runs.load_json(path):
        e = {k: torch.tensor(h[k], dtype=torch.float64) for k in ("X", "y", "q", "y_star")}
        out.append({"n": int(h["n"]), **e, "p_ref": np.asarray(h["p_ref"], float)})
    return out


def _curve_point(model: LatentPFN, step: int, held: list[dict]) -> list[dict]:
    pts = []
    with torch.no_grad():
        for h in held:
            mu, s2 = model(h["X"].float(), h["y"].float())
            p = model.probability(mu, s2).double().numpy()
            ys = (h["y_star"].numpy() > 0).astype(float)
            tv = np.abs(p - h["p_ref"]).mean(axis=1)  # per context: TV of Bernoulli laws
            pc = np.clip(p, 1e-12, 1 - 1e-12)
            nll = -(ys * np.log(pc) + (1 - ys) * np.log1p(-pc)).mean(axis=1)
            brier = ((p - ys) ** 2).mean(axis=1)  # the CRPS of a binary outcome
            in_set = np.where(p >= 0.9, ys == 1, np.where(p <= 0.1, ys == 0, True))
            cov = in_set.mean(axis=1)
            point = {"step": step, "n": h["n"]}
            for name, v in (("tv", tv), ("nll", nll), ("crps", brier), ("coverage90", cov)):
                point[name] = float(v.mean())
                point[name + "_se"] = float(v.std(ddof=1) / math.sqrt(v.size))
            point["tv_instances"] = [float(v) for v in tv]
            pts.append(point)
    return pts


def _curve_steps(steps: int, n_points: int) -> list[int]:
    first = 10 if steps >= 100 else 1
    grid = np.unique(np.round(np.geomspace(first, steps, n_points)).astype(int))
    return [0] + sorted({int(v) for v in grid} | {steps})


def train_latent(
    spec: LatentRunSpec, run_dir, *, checkpoint_every: int = 100, log=None, held=None
) -> Path:
    """Train (or resume, or find finished) the run ``spec`` in ``run_dir``: ``latent_config.json``,
    ``checkpoint.pt`` (atomic, every ``checkpoint_every`` steps), ``learning_curve.json``,
    ``weights.pt`` and ``metrics.json`` (written last: the run is finished iff it exists).
    ``held``: the :func:`heldout_set` of ``spec`` when the caller has it already. A directory of
    another spec (its ``latent_config.json``, never rewritten), or with a run's files and no
    config, and a checkpoint of another spec are refused with a ValueError naming what differs."""
    if not isinstance(spec, LatentRunSpec):
        raise ValueError(f"spec must be a LatentRunSpec, got {type(spec).__name__}")
    run_dir = Path(run_dir)
    if _refuse_other_latent(spec, run_dir):
        return run_dir  # finished, and of this spec
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = latent_doc(spec)
    if not (run_dir / LATENT_CONFIG).is_file():
        runs.save_json(run_dir / LATENT_CONFIG, doc)
    torch.manual_seed(spec.seed)
    model = LatentPFN(spec)
    opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_factor(s, spec.steps, spec.warmup_frac, spec.min_lr_ratio)
    )
    ckpt_path, curve_path = run_dir / runs.CHECKPOINT, run_dir / LEARNING_CURVE_FILE
    start, wall = 0, 0.0
    losses: list[float] = []
    points: list[dict] = []
    if ckpt_path.is_file():
        ck = runs.load_torch(ckpt_path)
        _refuse_other_checkpoint(spec, doc, ck, ckpt_path)
        try:
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            sched.load_state_dict(ck["scheduler"])
            start, losses, wall = int(ck["step"]), list(ck["losses"]), float(ck["wall_time"])
        except (KeyError, RuntimeError, ValueError, TypeError) as err:
            raise runs.CorruptFileError(
                f"{ckpt_path} is not a checkpoint of this run: {str(err).splitlines()[0]}"
            ) from err
        points = runs.load_json(curve_path)["points"] if curve_path.is_file() else []
        points = [p for p in points if p["step"] <= start]
    held = heldout_set(spec) if held is None else held
    eval_at = set(_curve_steps(spec.steps, spec.curve_points))
    t0 = time.perf_counter()

    def save_curve():
        doc = {"schema": 1, "n_eval": list(spec.curve_n_eval), "points": points}
        runs.save_json(curve_path, doc)

    if start == 0:
        points += _curve_point(model, 0, held)
    for step in range(start, spec.steps):
        g = step_generator(spec.seed, step, "cpu")
        n = int(torch.randint(spec.task.n_min, spec.task.n_max + 1, (1,), generator=g))
        X, y, _, q, _ = sample_classification(spec.task, spec.batch_size, n, g)
        mu, s2 = model(X.float(), y.float())
        loss = _bce(model.probability(mu, s2), q.float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), spec.clip_norm)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if step + 1 in eval_at:
            points += _curve_point(model, step + 1, held)
            save_curve()
        if (step + 1) % checkpoint_every == 0 or step + 1 == spec.steps:
            runs.save_torch(
                ckpt_path,
                {
                    "step": step + 1,
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "losses": losses,
                    "wall_time": wall + time.perf_counter() - t0,
                    "spec": doc,  # what the checkpoint is of (a resume of another is refused)
                },
            )
            if log is not None:
                log(f"{spec.name} step {step + 1}/{spec.steps} loss {np.mean(losses[-50:]):.4f}")
    save_curve()
    runs.save_torch(run_dir / runs.WEIGHTS, model.state_dict())
    runs.save_json(
        run_dir / runs.METRICS,
        {
            "completed": True,
            "steps": spec.steps,
            "interval": [0.0, 1.0],
            "wall_time_s": wall + time.perf_counter() - t0,
            "n_params": int(sum(p.numel() for p in model.parameters())),
            "torch_threads": torch.get_num_threads(),
            "loss_first_last_50": [float(np.mean(losses[:50])), float(np.mean(losses[-50:]))],
        },
    )
    return run_dir


def _differs(old: LatentRunSpec, new: LatentRunSpec) -> str:
    a, b = asdict(old), asdict(new)
    keys = [f"task.{k}" for k in a["task"] if a["task"][k] != b["task"][k]]
    keys += [k for k in a if k != "task" and a[k] != b[k]]
    return ", ".join(f"{k} {_get(a, k)!r} -> {_get(b, k)!r}" for k in keys)


def _get(d: dict, key: str):
    for part in key.split("."):
        d = d[part]
    return d


def _refuse_other_latent(spec: LatentRunSpec, run_dir: Path) -> bool:
    """Whether ``run_dir`` holds the finished run ``spec`` (True) or nothing finished (False);
    a directory of another spec, or with a run's files but no readable ``latent_config.json``, is
    refused (a ValueError naming what differs): its results must not be returned as this run's,
    nor its config rewritten as if the whole run used ``spec``."""
    cfg = run_dir / LATENT_CONFIG
    hint = f"train into another directory, or delete {run_dir} to train {spec.name} there"
    if cfg.is_file():
        old = latent_spec_of(runs.load_json(cfg), cfg)
        if old != spec:
            raise ValueError(
                f"{run_dir} holds the latent run {old.name}, not {spec.name} (differs in "
                f"{_differs(old, spec)}); {hint}"
            )
    elif any((run_dir / f).exists() for f in (runs.METRICS, runs.WEIGHTS, runs.CHECKPOINT)):
        raise ValueError(
            f"{run_dir} holds a run's files but no {LATENT_CONFIG}, so which run it is is not "
            f"known; {hint}"
        )
    metrics = run_dir / runs.METRICS
    if not metrics.is_file():
        return False
    done = runs.load_json(metrics)
    if not (isinstance(done, dict) and done.get("completed") and done.get("steps") == spec.steps):
        raise runs.CorruptFileError(
            f"{metrics} is not the record of a finished run of {spec.steps} steps; {hint}"
        )
    if not (run_dir / runs.WEIGHTS).is_file():
        raise runs.CorruptFileError(f"{run_dir / runs.WEIGHTS} is missing (the run says finished)")
    return True


def _refuse_other_checkpoint(spec: LatentRunSpec, doc: dict, ck, path: Path) -> None:
    """Refuse a checkpoint of another run: its recorded spec must be ``spec``'s; one written before
    the record (no ``spec``) must at least hold ``spec``'s learning rate and schedule at its step
    (its seed is the directory's, checked by :func:`_refuse_other_latent`)."""
    if not isinstance(ck, dict):
        raise runs.CorruptFileError(f"{path} is not a checkpoint of this run")
    if "spec" in ck:
        old = latent_spec_of(ck["spec"], f"{path}'s spec")
        if old != spec:
            raise ValueError(
                f"{path} is a checkpoint of the latent run {old.name}, not {spec.name} "
                f"(differs in {_differs(old, spec)}); delete it to train {spec.name} from "
                "step 0"
            )
        return
    try:
        step = ck["step"]
        sched = ck["scheduler"]
        lr = ck["optimizer"]["param_groups"][0]["lr"]
        base = sched["base_lrs"]
        ok = (
            isinstance(step, int)
            and 0 <= step <= spec.steps
            and sched["last_epoch"] == step
            and base == [spec.lr]
            and math.isclose(
                lr,
                spec.lr * lr_factor(step, spec.steps, spec.warmup_frac, spec.min_lr_ratio),
                rel_tol=1e-12,
            )
        )
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise runs.CorruptFileError(f"{path} is not a checkpoint of this run: {err}") from None
    if not ok:
        raise ValueError(
            f"{path} is a checkpoint of another run (its learning rate or schedule at step "
            f"{step} is not {spec.name}'s, lr={spec.lr}, steps={spec.steps}); delete it to "
            f"train {spec.name} from step 0"
        )


def load_latent(run_dir) -> tuple[LatentRunSpec, LatentPFN]:
    """The spec and the trained model of a finished run directory."""
    run_dir = Path(run_dir)
    spec = latent_spec_of(runs.load_json(run_dir / LATENT_CONFIG), run_dir / LATENT_CONFIG)
    model = LatentPFN(spec)
    model.load_state_dict(runs.load_torch(run_dir / runs.WEIGHTS))
    model.eval()
    return spec, model
