"""The breakdown diagnostic of fig:exp2-1 (:mod:`pfntheory.claims.breakdown`): the product of the
learned solver layers' maps is the model's own map, it certifies contraction where the solver
contracts and flags the n' where a too-large step stops it, and the check "E[TV] low below the
predicted breakdown, high past it" passes on TF and fails on a solver that does not break down."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pfntheory.claims import breakdown as bd
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.nn.attention import scaled_kernel_attention
from pfntheory.nn.model import PFNTransformer
from pfntheory.nn.priors import sample_batch
from pfntheory.nn.solver import skip


def _model(normalised: bool, L: int = 4, eta=None, d: int = 2) -> PFNTransformer:
    """A hand-set model (the theory values of supp-eqn:weights, learnable mode): TF^pr's default
    step 1/(1 + sigma^2) is admissible at every n', TF's ``eta`` is admissible below
    ``lambda_1 + sigma^2 = 2 / eta`` only."""
    spec = ModelSpec("rbf", L, 8, mode="learnable", normalised=normalised, eta_init=eta)
    edges = torch.linspace(-3.0, 3.0, 9, dtype=torch.float64)
    return PFNTransformer(spec, edges, TaskSpec("rbf", d)).double()


@pytest.mark.parametrize("normalised", [False, True])
def test_the_product_is_the_models_own_map(normalised):
    """Pi of :func:`bd._products`, column by column, equals the model's own solver layers
    (:func:`scaled_kernel_attention` and :func:`skip`, the eager reference of the forward)
    applied to a unit initial state, with no input (y = k = 0): the affine map's linear part.
    Learned-looking per-layer coefficients (random V, S and scales): no symmetry hides an index."""
    torch.manual_seed(0)
    m = _model(normalised, L=5)
    with torch.no_grad():
        m.V.copy_(torch.randn_like(m.V) * 0.3)
        m.S.copy_(torch.randn_like(m.S) * 0.1)
        m.scale.copy_(torch.rand_like(m.scale) + 0.5)
    c = {k: v.detach() for k, v in m.coefficients().items()}
    n = 7
    b = sample_batch(
        TaskSpec("rbf", 2), 1, n, torch.Generator().manual_seed(1), dtype=torch.float64
    )
    xa = torch.cat([b.X, b.xq.unsqueeze(1)], 1)  # (1, T, d)
    T = n + 1
    # the model's layers on T unit initial states at once (batch = columns)
    H = torch.eye(T, dtype=torch.float64).unsqueeze(-1).repeat(1, 1, 2)  # (T, T, 2)
    X = xa.expand(T, T, 2)
    with torch.no_grad():
        for layer in range(m.config.L - 1):
            v, S_l = c["V"][layer], c["S"][layer]
            att, s = scaled_kernel_attention(
                X, c["scale"][layer + 1], H[:, :n] * v[1::2], "rbf", normalised
            )
            H = skip(H, att, s, S_l, normalised)
        got = bd._products(b.X, b.xq, c["scale"], c["V"], c["S"], "rbf", normalised)
    for j, ch in enumerate(bd.CHANNELS):
        Pi = H[:, :, j].T  # column k: the image of e_k
        full, ctx = got[ch]
        np.testing.assert_allclose(
            full[0], float(torch.linalg.matrix_norm(Pi, 2).log()), rtol=1e-10
        )
        np.testing.assert_allclose(
            ctx[0], float(torch.linalg.matrix_norm(Pi[:n, :n], 2).log()), rtol=1e-10
        )


def test_hand_set_tf_pr_is_certified_and_predicts_no_breakdown():
    """The hand-set TF^pr (Jacobi-preconditioned step 1/(1 + sigma^2), admissible at every n',
    sec:generalization) contracts on every context at every n': certified, no predicted
    breakdown, and so the breakdown check fails on it whatever its E[TV] curve. Would fail if the
    diagnostic flagged a contracting solver (the radius sum that this replaces gave TF^pr a
    'breakdown' at n' = 40)."""
    m = _model(True, L=8)
    p = bd.solver_product(m, TaskSpec("rbf", 2), (8, 32, 96), instances=4)
    assert bd.certified_contraction(p)
    assert bd.predicted_breakdown(p) is None
    assert bd.predicted_breakdown(p, key="g_context", stat="max") is None
    # the query row is a read-out, not a growth: the full product can exceed 1 while the
    # recursion contracts (why the certificate reads the context block)
    assert max(p["f"]["max"]) > 0
    jump = bd.breakdown_test([8, 32, 96], [0.05, 0.05, 0.9], [0.01] * 3, 0.05, 0.005, None)
    assert not jump["holds"] and "no breakdown" in jump["reason"]


def test_a_step_too_large_for_long_contexts_breaks_down_where_the_gram_outgrows_it():
    """Hand-set TF with a step ``eta`` fixed for short contexts: the step is admissible while
    ``eta (lambda_1 + sigma^2) < 2`` (eqn:convg cond) and the largest Gram eigenvalue grows like
    ``n mu_0`` (thm:lambda1), so the stack contracts at small n' and expands past some n'.
    The predicted breakdown lies where the median context's lambda_1 crosses ``2/eta - sigma^2``
    (here between the sizes tested). Fails if the diagnostic does not see the growth."""
    task = TaskSpec("rbf", 2)
    m = _model(False, L=12, eta=0.1)  # admissible for lambda_1 < 20 - sigma^2
    ns = (8, 16, 64, 128)
    p = bd.solver_product(m, task, ns, instances=4)
    lam = []
    for n in ns:
        b = sample_batch(task, 4, n, torch.Generator().manual_seed(n), dtype=torch.float64)
        K = torch.exp(-0.5 * torch.cdist(b.X, b.X) ** 2)  # the hand-set scale 1: the prior's Gram
        lam.append(float(torch.linalg.eigvalsh(K)[:, -1].median()))
    edge = 2 / 0.1 - task.noise_var
    assert lam[0] < edge < lam[-1]
    n_star = bd.predicted_breakdown(p)
    assert n_star is not None
    first_over = next(n for n, v in zip(ns, lam, strict=True) if v > edge)
    assert n_star == first_over
    assert p["f_context"]["max"][0] < 0  # contracting at n' = 8
    assert not bd.certified_contraction(p)


# the in-range level 0.06 (SE 0.0005); the committed TF at 8000 steps looks like the first row
LEVEL, LEVEL_SE = 0.06, 0.0005
NS = [40, 80, 120, 130, 140, 150, 160, 200, 300]
JUMP = [0.055, 0.057, 0.061, 0.062, 0.107, 0.316, 0.65, 0.999, 0.999]
SE = [0.0012] * len(NS)


@pytest.mark.parametrize(
    ("tv", "n_star", "onset", "holds", "reason"),
    [
        (JUMP, 150, 140, True, "low below n* and high past it"),  # TF: the committed shape
        (JUMP, 160, 140, True, "low below n* and high past it"),  # a later n*: still high past
        (JUMP, None, None, False, "no breakdown predicted"),  # a solver certified to contract
        (JUMP, 120, 120, False, "not high past n*"),  # n* too early: 120-140 are not high
        (JUMP, 200, 200, False, "not low below n*"),  # n* too late: 140-160 already high
        ([0.06] * 9, 150, 140, False, "not high past n*"),  # no jump at all
        (  # TF^pr's gradual drift (to 1.9x) with TF's n* imposed: not a breakdown
            [0.056, 0.041, 0.05, 0.053, 0.058, 0.064, 0.067, 0.085, 0.12],
            150,
            140,
            False,
            "not high past n*",
        ),
        (JUMP, 40, 40, False, "an empty side"),  # nothing below: cannot say "low below"
        (JUMP, 400, 400, False, "an empty side"),  # nothing past
    ],
)
def test_breakdown_test_low_below_high_past(tv, n_star, onset, holds, reason):
    """Table-driven: the check holds only for a curve low below the onset and high from n* on."""
    out = bd.breakdown_test(NS, tv, SE, LEVEL, LEVEL_SE, n_star, z=3.0, onset=onset)
    assert out["holds"] is holds
    assert reason in out["reason"]


def test_breakdown_test_refuses_bad_input():
    with pytest.raises(ValueError, match="one entry per n'"):
        bd.breakdown_test([40, 80], [0.1], [0.01, 0.01], 0.05, 0.01, 80)
    with pytest.raises(ValueError, match="onset"):
        bd.breakdown_test([40, 80], [0.1, 0.2], [0.01, 0.01], 0.05, 0.01, 80, onset=100)
    with pytest.raises(ValueError, match="key"):
        bd.predicted_breakdown({"n": [1]}, key="h")


def _committed():
    """The 8000-step TF and TF^pr of ``fig_exp2_1_budget`` (cpu) and their breakdown analysis."""
    from pfntheory.claims import gating
    from pfntheory.experiments.results import load_experiment
    from pfntheory.infra import runs as runfiles

    runs = gating.trained_runs(load_experiment("fig_exp2_1_budget", "cpu"))
    longest = max(r.spec.steps for r in runs)
    by = {r.spec.model.normalised: r for r in runs if r.spec.steps == longest}
    doc = runfiles.load_json(by[False].run_dir.parent / bd.BREAKDOWN_FILE)
    return by[False], by[True], doc


def test_committed_check_passes_on_tf_and_fails_on_tf_pr():
    """On the committed runs the row reads: the check holds for TF (its solver breaks down at
    n' = 150, E[TV] jumps there) and fails for TF^pr read as if it were TF (its stack is
    certified to contract, so no breakdown is predicted), and fails for TF^pr's E[TV] curve even
    with TF's n* imposed (its gradual rise never reaches twice its in-range level)."""
    tf, pr, doc = _committed()
    inside = (tf.eval.n_eval >= tf.spec.n_min) & (tf.eval.n_eval <= tf.spec.n_max)
    spike, stable = bd.exp2_1_breakdown_claims(tf, pr, doc, inside, 3.0)
    assert spike.holds and stable.holds
    assert spike.details["predicted_breakdown_tf"] == 150
    swapped, _ = bd.exp2_1_breakdown_claims(pr, tf, doc, inside, 3.0)
    assert not swapped.holds and "no breakdown" in swapped.details["test"]["reason"]
    b = doc[pr.run_dir.name]
    ns = list(pr.eval.n_eval) + b["beyond"]["n_eval"]
    tv = list(pr.eval.mean["tv"]) + b["beyond"]["tv"]
    se = list(pr.eval.se["tv"]) + b["beyond"]["tv_se"]
    level = pr.eval.average("tv", inside)
    imposed = bd.breakdown_test(ns, tv, se, level[0], level[1], 150, onset=140)
    assert not imposed["holds"] and "not high past" in imposed["reason"]
