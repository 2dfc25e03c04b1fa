"""The decomposition of the covariate-shift deficit (pfntheory.claims.shift_cause,
pfntheory.claims.shift_findings, its command pfntheory.pipelines.shift_cause_run) on the hand-set
TF^pr with a planted cause.

The hand-set TF^pr (exact weights of thm:TFdoPPD, normalised, d = 8, L = 32) is calibrated under
the shift (verify/test_shift_construction.py). Two faults are planted in its readout, each a cause
the decomposition must name:

* *readout*: ``W_2k = 0.9`` instead of 1, the learned prior variance ``sigma^2 + 0.9 kappa(x, x)``
  under-counts ``kappa(x, x)`` by 0.1 -- the variance falls below the noise variance once the
  posterior variance nears sigma^2, as it does under the shift;
* *mean*: ``W_1f = 1.5`` instead of 1, the mean is scaled and the variance untouched.

How the tests fail when the decomposition is wrong: a decomposition that blamed the mean for a
variance fault (or the reverse), that missed the collapsed limit, or that called the clean model
collapsing, fails the assertions below; the map-norm test fails if the learned layer map differs
from the Jacobi-Richardson map it must equal on hand-set weights.
"""

import numpy as np
import pytest
import torch

from pfntheory.claims import shift_cause as sc
from pfntheory.claims import shift_findings as sf
from pfntheory.claims.shift import tfpr_step
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.maths.construction import handset_weights
from pfntheory.maths.kernels import RBFKernel
from pfntheory.nn.handset import load_handset
from pfntheory.nn.model import PFNTransformer
from pfntheory.pipelines import shift_cause_run

D, L, NOISE_VAR, ELL = 8, 32, 0.04, 0.8


def handset(W=None) -> PFNTransformer:
    """The hand-set TF^pr as a learnable-mode model (readout ``W`` replaced when given)."""
    hw = handset_weights(
        D, L, tfpr_step(NOISE_VAR), NOISE_VAR, RBFKernel(1.0, ELL), normalised=True
    )
    cfg = ModelSpec(score="rbf", L=L, C=64, mode="learnable", normalised=True, amp_init=1.0)
    task = TaskSpec(kind="rbf", d=D, noise_var=NOISE_VAR)
    model = load_handset(PFNTransformer(cfg, torch.linspace(-4, 4, 65), task).double(), hw)
    if W is not None:
        with torch.no_grad():
            model.W.copy_(torch.tensor(W, dtype=torch.float64))
    return model


@pytest.fixture(scope="module")
def contexts():
    return sc.design_contexts(
        D, n_eval=(64,), n_instances=48, seed=3, path_scales=(1.0, sc.SHIFT_SCALE, 0.3)
    )


@pytest.fixture(scope="module")
def docs(contexts):
    out = {}
    for name, W in (
        ("clean", None),
        ("readout", [1.0, NOISE_VAR, 0.9, -1.0]),
        ("mean", [1.5, NOISE_VAR, 1.0, -1.0]),
    ):
        doc = sc.decompose(handset(W), contexts, n_map=4)
        doc["run"] = {"name": name, "n_max": 128, "seed": 0, "steps": 1, "ema_decay": 0.0}
        out[name] = doc
    return out


def test_clean_handset_is_not_collapsing(docs):
    """Control: the hand-set TF^pr is not collapsing under the shift, and its collapsed limit is
    the exact PPD's (the scalar recursion contracts by |1 - eta (1 + sigma^2/n)| = 0.73 per layer,
    0.73^31 ~ 6e-5 of the prior variance 1: within 1e-3)."""
    doc = docs["clean"]
    assert not sf.collapsing(doc), doc["cells"]["64"]["uniform"]
    col = doc["cells"]["64"]["collapsed"]
    assert abs(col["variance_learned"] - col["variance_exact"]) < 1e-3, col
    assert doc["prior_variance_learned"] == pytest.approx(1.0 + NOISE_VAR, rel=1e-12)


def test_planted_readout_fault_is_found(docs):
    """The variance fault is named: the exact variance restores coverage, the exact mean does not,
    the collapsed limit lies below sigma^2, and the scaled Gaussian design reproduces it."""
    res = {r.key: r for r in sf.findings([docs["readout"]])}
    assert sf.collapsing(docs["readout"])
    assert res["shift_cause.variance"].holds, res["shift_cause.variance"]
    assert res["shift_cause.unanchored_readout"].holds, res["shift_cause.unanchored_readout"]
    assert res["shift_cause.input_scale"].holds, res["shift_cause.input_scale"]
    # refitting the two readout numbers on designs reaching the shift mends most of the fault
    row = sf.table([docs["readout"]])[0]
    assert row["refit_scales_shift"] > row["cov_shift"] + 0.1, row


def test_planted_mean_fault_is_not_blamed_on_the_variance(docs):
    """The mean fault collapses coverage too, but the exact variance does not restore it (the mean
    does), so ``shift_cause.variance`` does not hold, and the readout stays anchored."""
    res = {r.key: r for r in sf.findings([docs["mean"]])}
    cell = docs["mean"]["cells"]["64"]["uniform"]
    assert sf.collapsing(docs["mean"]), cell
    assert cell["coverage90_exact_mean"] >= 0.85 > cell["coverage90_exact_var"], cell
    assert not res["shift_cause.variance"].holds
    assert not res["shift_cause.unanchored_readout"].holds
    assert not res["shift_cause.readout_refit"].holds  # a variance refit cannot mend the mean


def test_clean_run_gives_no_variance_finding(docs):
    """With nothing collapsing there is nothing to blame: the variance finding does not hold."""
    res = {r.key: r for r in sf.findings([docs["clean"]])}
    assert not res["shift_cause.variance"].holds
    assert not res["shift_cause.unanchored_readout"].holds


def test_layer_map_is_jacobi_richardson_on_handset_weights(contexts):
    """On hand-set weights the learned variance-channel map ``I + V_gg D^-1 P + S_gg D^-1`` is
    ``I - eta D^-1 (G + sigma^2 I)`` (eqn:recursion prec): equal norms to round-off (products of
    31 maps of norm <= 1 over n = 64: 1e-12)."""
    model = handset()
    c = {k: v.detach().numpy() for k, v in model.coefficients().items()}
    X = contexts["cells"][64]["uniform"][0][:3]
    got = sc.layer_map_norm(c["scale"][1:], c["V"][:, 3], c["S"][:, 1], X)
    want = sc._handset_map(RBFKernel(1.0, ELL), tfpr_step(NOISE_VAR), NOISE_VAR, L, X)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_breaking_scale():
    """The interpolated scale where coverage first falls below 0.85, 0 when it never does."""
    path = [{"c": 1.0, "coverage90": 0.9}, {"c": 0.5, "coverage90": 0.8}]
    assert sc.breaking_scale(path) == pytest.approx(0.75)
    assert sc.breaking_scale([{"c": 1.0, "coverage90": 0.9}]) == 0.0
    assert sc.breaking_scale([{"c": 1.0, "coverage90": 0.5}]) == 1.0


def test_bad_inputs_are_refused(contexts):
    with pytest.raises(ValueError, match="shape"):
        sc.draw_design(
            "cauchy", 1.0, 4, 2, 2, RBFKernel(1.0, ELL), NOISE_VAR, np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="contexts"):
        sc.decompose(handset(), {"d": 2})
    with pytest.raises(ValueError, match="docs"):
        sf.findings([])


def _as(doc, **run):
    """``doc`` relabelled as another run (cell, seed, budget) for the findings over several runs."""
    out = {**doc, "L": run.pop("L", doc["L"])}
    out["run"] = {**doc["run"], **run}
    return out


def test_budget_and_seed_findings(docs):
    """A cell collapsing at S and at 2S at three seeds is reported as persisting; a cell whose 2S
    run is calibrated is not (the budget finding then fails), and one budget only is undecided."""
    cell = dict(L=4, n_max=128, ema_decay=0.99)
    bad = [
        _as(docs["readout"], name=f"s{s}-{n}", seed=s, steps=n, **cell)
        for s in (0, 1, 2)
        for n in (1000, 2000)
    ]
    res = {r.key: r for r in sf.findings(bad)}
    assert res["shift_cause.budget"].holds and res["shift_cause.seeds"].holds
    fixed = bad[:1] + [_as(docs["clean"], name="s0-2000", seed=0, steps=2000, **cell)]
    assert not {r.key: r for r in sf.findings(fixed)}["shift_cause.budget"].holds
    one = {r.key: r for r in sf.findings(bad[:1])}
    assert one["shift_cause.budget"].verdict == "undecided"
    assert one["shift_cause.seeds"].verdict == "undecided"


def test_the_command_refuses_options_and_missing_roots_without_writing(tmp_path, monkeypatch):
    """A root that does not exist, or holds no experiment, is refused, creating no directory
    (before, ``--help`` and a missing root were taken as runs roots:
    ``--help/supp_exp2_d8/shift_cause.json`` was written into the working directory)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="roots must be existing runs roots"):
        shift_cause_run.run_shift_cause([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds none of the experiments"):
        shift_cause_run.run_shift_cause([tmp_path / "empty"])
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]
