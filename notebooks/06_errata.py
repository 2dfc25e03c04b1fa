# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 6. Errata and ambiguities
#
# Where the paper is wrong, ambiguous or loose. Each entry is a measurement by a claim function of
# `pfntheory.claims` that asserts the *true* behaviour (the matching `verify/` test passes while
# documenting the erratum). The verdicts are computed from those checks, never fixed: **erratum**
# means the paper's text (or a displayed step of a proof) is wrong and the check confirms the
# corrected statement given beside it (if the check stopped confirming it, the row would turn to
# "does not hold"); **holds with a caveat** means the statement is right but ambiguous or loose, as
# explained beside it.

# %%
import dataclasses

import numpy as np
from IPython.display import display

from pfntheory import DEFAULT_NOISE_VAR, report
from pfntheory.claims import (
    conditioning,
    construction,
    crps_slip,
    first_layer,
    gram,
    noise,
    popmini,
    ppd_convergence,
    published_tables,
    stepsize,
    tf_rate,
)
from pfntheory.experiments import definitions as xdefs
from pfntheory.experiments import published
from pfntheory.experiments import results as xres
from pfntheory.experiments.specs import ExactPPDSpec
from pfntheory.maths import discretize as disc
from pfntheory.maths import richardson as rich
from pfntheory.maths.first_layer import CODE_EPS
from pfntheory.maths.kernels import RBFKernel

report.setup_plots()
rec = report.Recorder("06_errata")
SCALE = report.scale()
quick = SCALE == "quick"
s2 = DEFAULT_NOISE_VAR


# %% [markdown]
# ## 1. Noise: variance 0.2 or standard deviation 0.2?
#
# supp-sec:exp details says `sigma^2 = 0.2`. No predictive distribution beats the exact PPD in
# expected CRPS (a proper scoring rule), and for the RBF task the exact PPD's expected CRPS is
# `E sqrt(tau/pi)`. Under `sigma^2 = 0.2` that floor lies *above* the paper's trained models in
# supp-tab:lengthscale-crps, which is impossible. The project uses `noise_var = 0.04` (std 0.2), the
# convention of the authors' released code; the table below shows, cell by cell, whether the paper's
# best CRPS is above the exact floor under each convention, within the combined Monte-Carlo error
# of our floor and of the paper's own 4096-instance cell (`claims.noise.paper_cell_se`).

# %%
# quick scale: the n' = 256 cells only (n' = 1024 costs a 1024 x 1024 Cholesky per instance)
paper_crps = {
    k: v["crps"] for k, v in published.LENGTHSCALE_CRPS.items() if not quick or k[1] == 256
}
n_inst = 40 if quick else 400
r02 = noise.check_noise_parameterisation(paper_crps, 0.2, n_instances=n_inst)
r004 = noise.check_noise_parameterisation(paper_crps, s2, n_instances=n_inst)


def inconsistent(r):
    return [
        f"ell={w['lengthscale']:g}, n'={w['n']}" for w in r.details["rows"] if not w["consistent"]
    ]


rec.add(
    r02,
    label="supp-sec:exp details",
    variant="noise: variance 0.2",
    statement="the text's sigma^2 = 0.2 is the noise variance behind supp-tab:lengthscale-crps",
    measured="worst (exact-PPD CRPS floor - paper CRPS) in combined SE, at variance 0.2",
    holds=not r02.holds and r004.holds,  # the text's variance contradicted, std 0.2 consistent
    erratum=f"0.2 is the noise standard deviation (variance {s2:g}): only then does every cell "
    "lie above the exact PPD's CRPS floor within the Monte-Carlo error (at variance 0.2 the floor "
    "is above " + "; ".join(inconsistent(r02)) + ")",
)
rec.add(
    r004,
    label="supp-sec:exp details",
    variant=f"noise: variance {s2:g} (std 0.2)",
    statement=f"noise std 0.2 (variance {s2:g}) is consistent with supp-tab:lengthscale-crps",
    measured="worst (floor - paper CRPS) in combined SE",
    caveat=""
    if r004.holds
    else f"paper CRPS below the exact PPD's floor even at variance {s2:g} at "
    + "; ".join(inconsistent(r004))
    + ": no noise convention explains those cells",
)
report.table(
    [
        {
            "ell": w["lengthscale"],
            "n'": w["n"],
            "exact CRPS floor, sigma^2 = 0.2": w["exact_mean"],
            "SE (0.2)": w["exact_se"],
            f"exact CRPS floor, sigma^2 = {s2:g}": v["exact_mean"],
            f"SE ({s2:g})": v["exact_se"],
            "paper's best CRPS": min(w["paper"]),
            "paper SE": v["paper_se"],
            f"floor - paper at {s2:g}, in SE": v["deficit_in_se"],
        }
        for w, v in zip(r02.details["rows"], r004.details["rows"], strict=True)
    ],
    digits={k: 4 for k in ("SE (0.2)", f"SE ({s2:g})", "paper SE")}
    | {k: 3 for k in ("paper's best CRPS", f"floor - paper at {s2:g}, in SE")}
    | {"exact CRPS floor, sigma^2 = 0.2": 3, f"exact CRPS floor, sigma^2 = {s2:g}": 3},
    caption="Each cell of supp-tab:lengthscale-crps against the exact PPD's expected CRPS under "
    "the two noise conventions (a positive last column: the paper's model beats the exact PPD)",
)

# %% [markdown]
# ## 2. The convergence factor in the proof of thm:L growth
#
# supp-sec:richardson gives `rho* = 1 - 2/(cond + 1)`; the proof of thm:L growth writes
# `1 - 2/(c_n + 2)`, and displays `log(eps)/log(rho) >= (c_n + 1)/2 log(1/eps)` where `<=` is
# meant. The measured spectral radius at the optimal step is `1 - 2/(cond + 1)`, and the needed
# depth is *below* the sufficient one, so the theorem's conclusion stands.

# %%
r = conditioning.check_rho_star_convention(np.random.default_rng(0))
rec.add(
    r,
    label="thm:L growth",
    variant="proof: the convergence factor",
    measured="spectral radius at eta* (largest n)",
    compare="reference",
    statement="proof of thm:L growth: rho* = 1 - 2/(c_n + 2)",
    erratum="rho* = 1 - 2/(c_n + 1) (supp-sec:richardson); a typo that does not change the order "
    "n log(1/eps)",
)
display(
    report.table(
        r.details["rows"],
        {
            "n": "n",
            "cond": "cond c_n",
            "radius": "measured spectral radius at eta*",
            "appendix": "1 - 2/(c_n + 1)",
            "proof": "1 - 2/(c_n + 2) (proof)",
            "depth_ratio": "depth ratio, appendix / proof",
        },
        digits={"radius": 6, "appendix": 6, "proof": 6, "depth_ratio": 4},
    )
)
r = conditioning.check_depth_inequality_direction()
rec.add(
    r,
    label="thm:L growth",
    variant="proof: direction of the depth inequality",
    measured="max needed / sufficient depth",
    statement="proof of thm:L growth: log(eps)/log(rho) >= (c_n+1)/2 log(1/eps)",
    erratum="log(eps)/log(rho) <= (c_n+1)/2 log(1/eps) (log(1-x) <= -x); with <= the sufficiency "
    "argument is correct",
)

# %% [markdown]
# ## 3. The step condition behind the rate of thm:TFdoPPD
#
# The theorem's factor `rho = 1 - eta(lambda_n + sigma^2)` is the true one only for
# `eta <= eta* = 2/(lambda_1 + lambda_n + 2 sigma^2)`; supp-thm:KRR assumes
# `eta < 1/(lambda_1 + sigma^2)` (stricter than needed), while thm:TFdoPPD states no condition.
# Between `eta*` and `2/(lambda_1 + sigma^2)` the transformer converges, but at the slower factor
# `eta(lambda_1 + sigma^2) - 1`.

# %%
at_star, beyond_thm, beyond_true = tf_rate.check_rate_step_condition(
    RBFKernel(1.0, 0.4), 10, 2, s2, seeds=range(5)
)
rec.add(
    at_star,
    label="thm:TFdoPPD",
    variant="step condition: at eta*",
    compare="reference",
    measured="slope / log rho at eta* (median)",
    statement="thm:TFdoPPD's rate holds at eta* = 2/(lambda_1+lambda_n+2 sigma^2)",
)
rec.add(
    beyond_thm,
    label="thm:TFdoPPD",
    variant="step condition: beyond eta*",
    compare="reference",
    measured="slope / log rho beyond eta* (median)",
    statement=(
        "thm:TFdoPPD's rate exp(-(1-rho)L) for any convergent step (the theorem "
        "states no condition)"
    ),
    erratum="the rate needs eta <= eta*; beyond it the decay is slower than the theorem's rho "
    "(ratio well below 1), at the factor eta(lambda_1 + sigma^2) - 1",
    holds=not beyond_thm.holds,
)
rec.add(
    beyond_true,
    label="thm:TFdoPPD",
    variant="step condition: the true factor beyond eta*",
    measured="slope / log(eta(lambda_1+sigma^2) - 1) beyond eta*",
    compare="reference",
    statement="beyond eta* the rate is the true factor max_i |1 - eta(lambda_i + sigma^2)|",
)

# %% [markdown]
# ## 4. TF^pr: only the solver layers are normalised
#
# sec:generalization replaces "each head" by normalised attention. The first layer (eqn:1st attn,
# mask `M^(0)`) has a single key per query: normalising it makes every weight 1, writes the constant
# `alpha^2` into the `k_x` row and breaks the variance recursion. With the first layer kept
# unnormalised, TF^pr converges to `(mu, tau)`; normalised, it does not.

# %%
k = RBFKernel(1.3, 0.8)
X, Y, x = construction.context(k, 10, 2, s2, np.random.default_rng(2))
G = k(X)
eta = rich.optimal_step(G + s2 * np.eye(10), rich.jacobi_preconditioner(G))
ok = construction.check_tf_convergence(k, X, Y, x, s2, eta, 2500, normalised=True)
bad = construction.check_tf_convergence(
    k, X, Y, x, s2, eta, 2500, normalised=True, forward_kwargs={"normalise_first_layer": True}
)
rec.add(
    ok,
    label="sec:generalization",
    variant="TF^pr, first layer unnormalised",
    measured="|TF^pr - (mu, tau)|, first layer unnormalised",
    statement="TF^pr (solver layers normalised, first layer not) converges to (mu, tau)",
)
rec.add(
    bad,
    label="sec:generalization",
    variant="TF^pr, every head normalised",
    statement="sec:generalization: replace *each* head by normalised attention",
    measured="|TF^pr - (mu, tau)| with the first layer normalised too",
    holds=ok.holds and not bad.holds,
    caveat="ambiguous: read literally (every head, incl. eqn:1st attn) it computes the wrong tau; "
    "only the layers of eqn:l attn may be normalised (the check: the literal reading "
    "fails to converge while the other converges)",
)

# %% [markdown]
# Read literally, as the authors' public code does (`normalize=1` normalises the first layer too,
# its one key's weight `A / (A + 1e-6)`), the `k_x` row holds `alpha^2` at every token, the variance
# channel converges to `k_x^T (G + sigma^2 I)^-1 alpha^2 1`, and the query's `z_k` is one constant.
# A learned readout `a + b z_k + c z_tau` cannot repair it: on a two-point context two queries share
# `z_tau` and differ in `tau`, so every such readout errs by at least about half that difference
# on three queries (`pfntheory.maths.first_layer`; docs/exact-side.md, "The first layer
# normalised").

# %%
readout = first_layer.check_no_affine_readout(RBFKernel(1.0, 0.8), s2, 8)
readout_code = first_layer.check_no_affine_readout(RBFKernel(1.0, 0.8), s2, 8, eps=CODE_EPS)
rec.add(
    readout,
    label="sec:generalization",
    variant="TF^pr, every head normalised: no affine readout recovers tau",
    statement="sec:generalization: replace *each* head by normalised attention, with a learned "
    "readout tau = a + b z_k + c z_tau of the channels (the public code's reading)",
    measured="least worst-case error of any readout a + b z_k + c z_tau on three queries "
    "(d = 8, alpha = 1, ell = 0.8)",
    compare="threshold",
    holds=ok.holds and readout.holds and readout_code.holds,
    caveat="ambiguous: with the first layer normalised (as in the public code, offset 1e-6 "
    f"included: {readout_code.observed:.3f}) no readout of that form recovers tau, so no "
    "model of that reading reads tau out of the construction; only the first layer "
    "unnormalised computes tau",
)

# %% [markdown]
# ## 5. The preconditioned spectrum for a kernel amplitude alpha != 1
#
# supp-lem:rbf kernel Gram ridge prec uses `s_i >= 1` and concludes `lambda_1 in [1, 1 + sigma^2]`,
# so that `eta < 2/(1 + sigma^2)` is "a conservative range". That needs the unit kernel: for
# `kappa = alpha^2 exp(...)` with `alpha < 1` (the Sacramento fit has `alpha = 0.666`) only
# `lambda_1 <= 1 + sigma^2/alpha^2` holds and `2/(1 + sigma^2)` is not admissible. The proof also
# writes `s_i = 1 + (n-1) rho` for every row, whereas `(s_i - 1)/(n-1)` tends to
# `E_x kappa(x_i, x)`, which depends on `x_i`.

# %%
r = conditioning.check_prec_amplitude(np.random.default_rng(3))
rec.add(
    r,
    label="supp-lem:rbf kernel Gram ridge prec",
    variant="kernel amplitude alpha != 1",
    measured="lambda_1(D^-1(G + sigma^2 I)), alpha=0.5",
    paper_value=1 + s2,  # the lemma's lambda_1 <= 1 + sigma^2
    statement="lambda_1(D^-1(G + sigma^2 I)) <= 1 + sigma^2, so eta < 2/(1+sigma^2) is admissible",
    caveat="true only for alpha = 1 (as the lemma assumes); for alpha < 1 the bound is "
    "1 + sigma^2/alpha^2 and the 'conservative' step 2/(1+sigma^2) can diverge",
)
r = conditioning.check_row_sum_limit(
    np.random.default_rng(2)
)  # the setting of verify/test_rbf_gram_ridge_prec.py
rec.add(
    r,
    label="supp-lem:rbf kernel Gram ridge prec",
    variant="proof: the row sums s_i",
    measured="max z-score of (s_i-1)/(n-1) against E_x kappa(x_i, x)",
    statement="proof of ridge prec: s_i = 1 + (n-1) rho for every row i (a.s., large n)",
    erratum="(s_i-1)/(n-1) tends to E_x kappa(x_i, x), not rho; s_max >= mean s = 1'G1/n repairs "
    "the step, so the lemma's Theta(n) stands",
)

# %% [markdown]
# ## 6. Two different rho's, and the limit of lambda_1/n
#
# The Gram lemmas write `rho = E kappa(x, x')`; the convergence analysis uses `rho` for the
# convergence factor. And `lambda_1(G)/n` tends to the top Mercer eigenvalue `mu_0`, not to `rho`:
# the lemma's lower bound `1'G1/n ~ n rho` is valid but not tight.

# %%
r = gram.check_rho_naming(np.random.default_rng(5))
rec.add(
    r,
    label="supp-lem:rbf kernel Gram",
    variant="notation: two rho's",
    measured="rho = E kappa (beside rho* of the same design)",
    compare="reference",
    statement="one symbol rho for E kappa(x, x') and for the convergence factor",
    caveat="two different quantities share the symbol; this project names them rho and rho_star",
)

# %% [markdown]
# ## 7. Bin conventions and the normaliser of the binned PPD
#
# eqn:TF piece ppd and supp-lem:smax quad use bins `(gamma_c, gamma_{c+1}]`, supp-lem:discretization
# error and supp-thm:popmini `[gamma_c, gamma_{c+1})`: harmless for densities (they differ on a null
# set). eqn:true piece ppd divides by `1 - eps` with the *marginal* outside mass; per context the
# histogram then integrates to `(1 - eps_tail(Z))/(1 - eps)`, not 1 (supp-thm:popmini's minimiser
# divides by the per-context mass, which is what this project uses).

# %%
rng = np.random.default_rng(6)
edges = disc.bin_edges(-2.5, 2.5, 64)
mus, taus = rng.normal(0, 0.8, 8), rng.uniform(0.05, 0.6, 8)
probs = disc.truncnorm_bin_masses(mus[0], taus[0], edges)
rec.add(
    popmini.check_interval_conventions(mus[0], taus[0], edges, probs, rng),
    label="supp-lem:discretization error",
    variant="bin conventions",
    measured="draws where the two conventions differ",
    caveat="two conventions in the paper; equivalent for continuous PPDs",
)
eps_marg = float(np.mean(disc.gaussian_tail_mass(mus, taus, -2.5, 2.5)))
r_norm = popmini.check_true_piece_normaliser(mus, taus, edges, eps_marg)
rec.add(
    r_norm,
    label="eqn:true piece ppd",
    measured="worst |integral of the binned PPD - 1|",
    # the check measures the printed statement; its failure confirms the erratum
    holds=not r_norm.holds,
    erratum="with the marginal eps the per-context histogram is not normalised; divide by the "
    "per-context mass (supp-thm:popmini)",
)

# %% [markdown]
# ## 8. Loose steps in the PPD bound
#
# supp-lem:smax quad is first order in `1/C`; the midpoint rule it analyses is second order
# (notebook 2). The logit-perturbation step `||sm(l1) - sm(l3)||_1 <= e^{2 Delta} - 1` holds but the
# sharp bound is `2 tanh(Delta/2)`, and `e^{2 Delta}` makes the composed bound of thm:PPD
# convergence vacuous unless the moment error is already small.

# %%
r = ppd_convergence.check_logit_perturbation(
    np.random.default_rng(9), n_draws=500 if quick else 4000
)
rec.add(
    r,
    label="thm:PPD convergence",
    variant="proof: logit perturbation",
    statement="proof step ||sm(l1) - sm(l3)||_1 <= e^{2 Delta} - 1 (valid, but loose)",
    observed=r.details["max_ratio_paper"],
    measured="worst observed / (e^{2 Delta} - 1)",
    caveat=f"the sharp bound is 2 tanh(Delta/2) (attained: worst observed/sharp = "
    f"{r.details['max_ratio_sharp']:.3f}); e^{{2 Delta}} - 1 is 2x loose as "
    "Delta -> 0 and unbounded",
)

# %% [markdown]
# ## 9. The covariate-shift design
#
# supp-sec:exp additional evaluates under `x ~ Unif[-1/sqrt(d), 1/sqrt(d)]^d`. Its per-coordinate
# variance is `1/(3d)`, not `1/d`: the shift changes the scale of the inputs as well as their
# shape (larger `E kappa`, a larger `lambda_1` and a smaller admissible step).

# %%
r = stepsize.check_covariate_shift(np.random.default_rng(7), n_mc=50_000 if quick else 200_000)
rec.add(
    r,
    label="supp-sec:exp additional",
    variant="covariate-shift design",
    measured="rho = E kappa(x, x') under the uniform design (reference: Gaussian design)",
    compare="reference",
    statement=(
        "the covariate shift Unif[-1/sqrt(d), 1/sqrt(d)]^d changes only the shape of the inputs"
    ),
    caveat=f"variance 1/(3d) instead of 1/d (measured {r.details['var_hat']:.4f} at "
    f"d={r.details['d']}): the admissible step shrinks by "
    f"{r.details['step_ratio_uniform_over_gaussian']:.2f}x; the shift changes the scale "
    "as well as the shape",
)

# %% [markdown]
# ## 10. TF^pr at a query far from the context
#
# sec:generalization divides the skip term of *every* token by `s_{x_j}`, the query's included, so
# the query's rows follow
# `f(x) <- (1 - eta sigma^2/s_x) f(x) + (eta/s_x) sum_j kappa(x, x_j)(y_j - f_j)`. For a step
# admissible for the preconditioned system the context part converges, but the query's own factor
# `|1 - eta sigma^2/s_x|` exceeds 1 once `s_x < eta sigma^2/2`: a query with little kernel mass on
# the context (far from the inputs) makes the hand-set TF^pr diverge. The paper states no such
# condition. The same mechanism shows in the Sacramento case study, where the PFN's far cells in the
# south-west corner blow up (`reports/casestudy/sacramento/results.json`, `query_recursion`), and it
# made pretraining on the Gaussian covariate design unstable there (non-finite steps). Check:
# `verify/test_tfpr_far_query.py`.

# %%
far_rows, far_checks = [], []
for d_, n_, seed_ in ((2, 64, 0), (4, 48, 1), (8, 96, 2)):
    r = construction.check_tfpr_far_query(
        RBFKernel(alpha=1.0, lengthscale=0.8), n_, d_, s2, L=200, seed=seed_
    )
    far_checks.append(r)
    det = r.details
    far_rows.append(
        {
            "d": d_,
            "n": n_,
            "eta / eta_admissible": det["eta"] / det["eta_admissible"],
            "s_x near": det["s_x_near"],
            "s_x far": det["s_x_far"],
            "threshold eta s2/2": det["threshold_s_x"],
            "|1 - eta s2/s_x| far": det["query_factor_far"],
            "error ratio L/(L/2) near": det["error_near"] / det["error_half_depth_near"],
            "error ratio L/(L/2) far": r.observed,
            "predicted far ratio": det["predicted_far_ratio"],
        }
    )
    rec.add(
        r,
        label="sec:generalization",
        variant=f"TF^pr at a far query, d={d_}, n={n_}",
        compare="reference",
        statement="TF^pr converges at every query (no condition stated)",
        measured="far query: error at L=200 / error at L=100 (must be < 1 to converge)",
        # the check measures the printed statement; its failure confirms the erratum
        holds=not r.holds,
        erratum="TF^pr converges at the query only if s_x > eta sigma^2 / 2; far queries diverge "
        "at the predicted rate |1 - eta sigma^2/s_x|^L",
    )
report.table(
    far_rows,
    digits={"eta / eta_admissible": 3},
    caption="TF^pr at a query near the context and one far from it (L = 200): the far query's "
    "factor |1 - eta sigma^2/s_x| exceeds 1 and its error grows at the predicted rate",
)

# %% [markdown]
# The first row's context (d = 2, n = 64, the same step) with the query moved away from the inputs
# along one direction: the hand-set TF^pr's error at L = 200 explodes where the query's kernel mass
# `s_x` falls below `eta sigma^2 / 2`, as the query factor predicts.

# %%
import matplotlib.pyplot as plt

from pfntheory.maths import construction as con

kern = RBFKernel(alpha=1.0, lengthscale=0.8)
rng = np.random.default_rng(0)  # the seed of the d = 2 row: the same context and direction
Xc, Yc, _ = construction.context(kern, 64, 2, s2, rng)
eta = far_checks[0].details["eta"]  # the d = 2 row's step
direction = rng.normal(size=2)
direction /= np.linalg.norm(direction)
w_far = con.handset_weights(2, 200, eta, s2, kern, normalised=True)
radii = np.linspace(0.0, 5.0, 101)
s_x, err = [], []
for radius in radii:
    xq = radius * direction
    _, k_x, _, mu_q, tau_q = construction.query_parts(kern, Xc, Yc, xq, s2)
    s_x.append(float(np.sum(k_x)))
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            mu_L, tau_L = con.tf_forward(w_far, Xc, Yc, xq)
        err.append(float(max(abs(mu_L - mu_q), abs(tau_L - tau_q))))
    except ValueError:  # the recursion overflowed float64 (refused as non-finite)
        err.append(np.inf)
fig, ax = plt.subplots(figsize=(6.6, 3.8))
ax.semilogy(
    radii,
    np.minimum(err, 1e4),
    label="|TF$^{pr}_L$ - (mu, tau)| at the query, L = 200 (capped at $10^4$)",
)
ax.semilogy(radii, s_x, label="$s_x$: the query's kernel mass on the context")
ax.axhline(
    0.5 * eta * s2, ls="--", c="k", lw=1, label=r"$\eta\sigma^2/2$ (TF$^{pr}$ diverges below)"
)
cross = radii[np.argmax(np.asarray(s_x) < 0.5 * eta * s2)]
ax.axvline(cross, ls=":", c="grey", lw=1, label=rf"$s_x = \eta\sigma^2/2$ at distance {cross:.2f}")
ax.set_ylim(1e-4, 2e4)
ax.set_xlabel("distance of the query from the origin (inputs ~ N(0, I/2))")
ax.set_title("sec:generalization: TF$^{pr}$ at a query moved away from the context")
ax.legend(fontsize=8)
report.save_figure(fig, "06_tfpr_far_query")
plt.show()

# %% [markdown]
# ## 11. The histogram CRPS of the authors' code, and the cells below the exact PPD
#
# The authors' public code assembles a histogram's CRPS bin by bin and, in the bin holding `y`,
# subtracts a term `w F(y)^2` that it never adds back (`claims.crps_slip`): on a calibrated forecast
# `F(y)` is uniform, so the mean CRPS is biased by `-w/3` (`w` the bin width, 0.0246 at C = 256).
# Does that explain the cells of supp-tab:lengthscale-crps that lie below the exact PPD's expected
# CRPS? Against the exact floor of our cpu-scale reference runs (d = 16, 4096 contexts per n';
# without them, a Monte-Carlo floor on 60 contexts) and the paper's own 4096-instance error.

# %%
r_bias = crps_slip.check_slip_bias()
rec.add(
    r_bias,
    label="supp-tab:lengthscale-crps",
    variant="histogram CRPS of the authors' code",
    statement="the slip biases the mean histogram CRPS by -w/3",
    measured="mean (slipped - exact) CRPS",
    compare="reference",
)
ls_runs, _ = xres.load_available("supp_tab_lengthscale", "cpu")
exact_refs = crps_slip.reference_floors(
    run.result for run in ls_runs if isinstance(run.spec, ExactPPDSpec)
)
table_crps = {k: v["crps"] for k, v in published.LENGTHSCALE_CRPS.items()}
if set(table_crps) <= set(exact_refs):
    r_slip = crps_slip.check_crps_slip(table_crps, exact=exact_refs)
else:
    r_slip = crps_slip.check_crps_slip(table_crps, n_instances=60)
rec.add(
    r_slip,
    label="supp-tab:lengthscale-crps",
    variant="cells below the exact PPD",
    statement="no cell of supp-tab:lengthscale-crps lies below the exact PPD's expected CRPS",
    measured="largest deficit after adding back w/3, in combined SE",
    caveat=f"{r_slip.details['n_below_raw']} cell(s) more than 3 SE below before the correction "
    f"(worst {r_slip.details['worst_z_raw']:.2f} SE): the slip is consistent with the low cells "
    "but not needed to explain them"
    if r_slip.verdict != "erratum"
    else "",
)
report.table(
    r_slip.details["rows"],
    {
        "lengthscale": "ell",
        "n": "n'",
        "L": "L",
        "paper": "paper CRPS",
        "exact": "exact PPD CRPS",
        "exact_se": "exact SE",
        "paper_se": "paper SE",
        "deficit": "exact - paper",
        "z_raw": "in SE",
        "z_corrected": "in SE after + w/3",
    },
    digits={
        "paper": 3,
        "exact": 4,
        "exact_se": 4,
        "paper_se": 4,
        "deficit": 4,
        "z_raw": 2,
        "z_corrected": 2,
    },
    caption="Cells of supp-tab:lengthscale-crps against the exact PPD's CRPS, before and after "
    "adding back the slip's w/3",
)

# %% [markdown]
# ## 12. The tables' coverages against nominal
#
# A calibrated predictive (the exact PPD first) covers its central l-interval with probability l
# under the prior, so each printed coverage (4096 instances) can be set against l with the binomial
# standard error (`claims.published_tables`). The paper: "reasonably close to nominal even at
# n' = 1024 > n_max, especially for larger depths" (lengthscale table) and "reasonably calibrated
# ..., especially at the 90% and 95% levels" (hierarchical table). Our exact-PPD references cover
# nominal within 3 SE (the premise, `verify/test_published_coverage.py`).

# %%
cov_rows = []
for exp_name in ("supp_tab_lengthscale", "supp_tab_hier"):
    levels = {
        r.key.rsplit(".", 1)[1]: r for r in published_tables.check_published_coverage(exp_name)
    }
    for r in levels.values():
        d_ = r.details
        cov_rows.append(
            {
                "table": exp_name,
                "level": d_["level"],
                "min": d_["cov_min"],
                "max": d_["cov_max"],
                "worst z": d_["worst_z"],
                "worst |z| at L=32": d_["worst_abs_z_deepest_L"],
                "cells beyond 3 SE": f"{d_['n_beyond']} of {d_['n_cells']}",
            }
        )
    if exp_name == "supp_tab_lengthscale":
        deep = max(levels.values(), key=lambda r: r.details["worst_abs_z_deepest_L"])
        rec.add(
            dataclasses.replace(
                deep,
                observed=deep.details["worst_abs_z_deepest_L"],
                holds=all(r.details["worst_abs_z_deepest_L"] <= r.bound for r in levels.values()),
            ),
            variant="coverage at the deepest L (50/90/95%)",
            statement="coverage close to nominal, especially for larger depths",
            measured="largest |z| at L=32 over all cells and levels (binomial SE)",
            caveat="",
        )
    else:
        c90, c50, c95 = levels["cov90"], levels["cov50"], levels["cov95"]
        rec.add(
            c90,
            variant="coverage at 50/90/95%",
            statement="coverage reasonably calibrated, especially at the 90% and 95% levels",
            measured="largest |z| of the 90% cells (binomial SE)",
            caveat=f"only the 90% level is within 3 SE: every 50% cell is "
            f"{c50.details['cov_min']:.3f}-{c50.details['cov_max']:.3f} "
            f"({c50.details['worst_z']:.1f} SE at worst, L=32 included) and "
            f"{c95.details['n_beyond']} of {c95.details['n_cells']} 95% cells lie more than 3 SE "
            f"below 0.95 (down to {c95.details['cov_min']:.3f}); the exact PPD covers nominal",
        )
report.table(
    cov_rows,
    digits={"min": 3, "max": 3, "worst z": 2, "worst |z| at L=32": 2},
    caption="The printed coverages per table and level: range, and the largest deviation from "
    "nominal in binomial SE (4096 instances per cell)",
)

# %% [markdown]
# Why the hierarchical table over-covers at 50%: TF / TF^pr compute one kernel attention with one
# noise level, so they cannot select `(ell, sigma)` per context. A predictive of that kind, the GP
# posterior of one fixed component of the grid with its variance rescaled NLL-optimally, has a
# standardised residual that is a scale mixture of normals across contexts (heavier-tailed than
# N(0, 1)): it over-covers at 50%, is about right at 90% and under-covers at 95%. Below, the
# NLL-best such predictive (the one pretraining would pick among them) and every component's row;
# our own trained TF^pr at the `cpu` scale (page 7) shows the same pattern. The paper's closing
# remark proposes a multi-head extension that would compute the components in parallel.

# %%
sk_n, sk_m = (128, 256) if quick else (256, 1024)
hier_task = next(
    s.task for s in xdefs.get_experiment("supp_tab_hier").runs("cpu") if isinstance(s, ExactPPDSpec)
)
r_sk = published_tables.check_single_kernel_signature(hier_task, n=sk_n, n_instances=sk_m)
best = r_sk.details["best"]
rec.add(
    r_sk,
    variant=f"single-kernel predictive, n'={sk_n}",
    statement="the hierarchical table's 50% over-coverage is what a predictive that cannot select "
    "(ell, sigma) shows",
    measured=f"50% excess in SE of the NLL-best single-kernel predictive (ell="
    f"{best['lengthscale']:g}, sigma={best['noise_std']:g}: coverage {best['cov50']:.3f} / "
    f"{best['cov90']:.3f} / {best['cov95']:.3f} at 50/90/95%; published 0.56-0.60 / 0.89-0.90 / "
    "0.93-0.94)",
    compare="reference",
)
report.table(
    r_sk.details["rows"],
    {
        "lengthscale": "ell",
        "noise_std": "sigma",
        "scale": "variance scale",
        "nll": "NLL",
        "cov50": "50%",
        "cov50_se": "SE",
        "cov90": "90%",
        "cov90_se": "SE ",
        "cov95": "95%",
        "cov95_se": "SE  ",
    },
    digits=3,
    caption="Every single-kernel predictive of the hierarchical grid: coverage at 50/90/95% "
    "(the NLL-best row is the one above)",
)

# %% [markdown]
# ## 13. The level of fig:stepsize
#
# The caption computes the curve "as eqn:convg cond", `2/(lambda_1 + sigma^2)`. The authors'
# public code plots `1/(lambda_1 + sigma^2)`, with `sigma^2 = 0.2`, `x ~ N(0, I/d)` and the RBF
# kernel at unit lengthscale (`claims.stepsize.CODE_STEPSIZE`): half the caption's bound, and the
# step bound of thm:TFdoPPD's rate (section 3). Both curves are computed below on the same designs.
# What is known: the code's formula and settings, and that they halve the level while leaving the
# `1/n` slope (the paper's claim) untouched. What is not: the printed figure's values (its image is
# not in the source the project holds), so the match of the figure to `1/(...)` rests on the code.

# %%
r = stepsize.check_stepsize_level(np.random.default_rng(47), n_trials=3 if quick else 10)
dl = r.details
rec.add(
    r,
    label="fig:stepsize",
    variant="level: 1/(lambda_1 + sigma^2) in the code",
    measured="n x the code's curve at n = 1000 (bound: n x the caption's 2/(lambda_1 + sigma^2))",
    compare="reference",
    erratum=f"the authors' code plots 1/(lambda_1 + sigma^2) (sigma^2 = 0.2, RBF at unit "
    f"lengthscale), half of eqn:convg cond's 2/(lambda_1 + sigma^2): "
    f"{dl['code_curve'][0]:.4f} -> {dl['code_curve'][-1]:.5f} over n = 100 -> 1000 against the "
    f"caption's {dl['caption_curve'][0]:.4f} -> {dl['caption_curve'][-1]:.5f} (n x step -> "
    f"1/mu_0 = {dl['code_n_step_limit']:.3f}, not 2/mu_0 = {dl['caption_n_step_limit']:.3f}); the "
    f"slope {dl['slope_code']:.3f} is the same. At the paper's prior lengthscale 0.8 the caption's "
    f"curve would start at {dl['caption_curve_paper_prior'][0]:.4f}. Read from the code, not from "
    "the printed figure (no image here)",
)
report.table(
    [
        {
            "n": int(n),
            "code: 1/(lambda_1 + 0.2), ell = 1": c,
            "caption: 2/(lambda_1 + 0.2), ell = 1": cap,
            "caption at ell = 0.8": capp,
        }
        for n, c, cap, capp in zip(
            dl["ns"],
            dl["code_curve"],
            dl["caption_curve"],
            dl["caption_curve_paper_prior"],
            strict=True,
        )
    ],
    digits=5,
    caption="fig:stepsize's curve as the authors' code computes it and as its caption names it "
    f"(d = 16, x ~ N(0, I/d), {dl['n_trials']} designs per n)",
)

# %% [markdown]
# ## Summary

# %%
rec.table()
