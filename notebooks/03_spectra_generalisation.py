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
# # 3. Gram spectra and generalisation in n
#
# Paper results: **supp-lem:lienar kernel Gram** (`lambda_j(XX') = (1 + O_P(n^-1/2)) n/d`),
# **supp-lem:rbf kernel Gram** (`lambda_1 >~ n`, `cond(G)` grows like `exp(gamma n^{1/d})`),
# **supp-lem:rbf kernel Gram ridge** (`cond(G + sigma^2 I) = Theta(n)`), **supp-lem:rbf kernel Gram
# ridge prec** and **thm:cond number** (`cond(D^-1(G + sigma^2 I)) = Theta(n)`), **thm:lambda1** and
# **fig:stepsize** (the admissible step `2/(lambda_1 + sigma^2)` is of order `1/n`) and
# **thm:L growth** (the depth for a tolerance `eps` grows like `n log(1/eps)`).
#
# Figures from `pfntheory.maths.spectral`; verdicts from `pfntheory.claims.gram`, `.conditioning`
# and `.stepsize` (the functions `verify/` asserts on).

# %%
import matplotlib.pyplot as plt
import numpy as np

from pfntheory import DEFAULT_NOISE_VAR, report
from pfntheory.claims import conditioning, gram, slope_ci, stepsize
from pfntheory.claims import mercer as mclaims
from pfntheory.claims import trained as xclaims
from pfntheory.experiments.results import load_experiment
from pfntheory.maths import spectral as sp
from pfntheory.maths.kernels import RBFKernel, expected_rbf_gaussian
from pfntheory.maths.mercer import RBFMercer

report.setup_plots()
rec = report.Recorder("03_spectra_generalisation")
SCALE = report.scale()
quick = SCALE == "quick"
rng = np.random.default_rng(7)
ns = np.array([50, 100, 200, 400, 800] if quick else [100, 200, 400, 800, 1600, 3200])
n_trials = 4 if quick else 20
sizes = ", ".join(map(str, ns.tolist()))
report.note(f"Sizes at the {SCALE} scale: n in {{{sizes}}}, {n_trials} draws each.")

# %% [markdown]
# ## fig:stepsize and thm:lambda1
#
# The admissible Richardson step `2/(lambda_1(G) + sigma^2)` (eqn:convg cond) against `n` for
# `d = 16`, as in the paper's figure, with a `1/n` reference. The curves are read from the
# `fig_stepsize` sweep run, the same run `verify/test_trained_claims.py` checks
# (`pfntheory sweep fig_stepsize` writes it); nothing is recomputed here.

# %%
step_runs = load_experiment("fig_stepsize", SCALE)
fig, axs = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
titles = {"rbf": "RBF (alpha=1, ell=0.8)", "linear": "BLR (linear kernel, Sigma by thirds)"}
for ax, r in zip(axs, sorted(step_runs, key=lambda r: r.spec.kernel != "rbf"), strict=True):
    res = r.result
    s_, ci, _ = slope_ci(np.log(res["ns"]), np.log(res["mean"]))
    ax.errorbar(
        res["ns"],
        res["mean"],
        yerr=2 * np.asarray(res["se"]),
        fmt="o-",
        capsize=3,
        label=f"2/(lambda_1 + sigma^2), ±2 SE: slope {s_:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]",
    )
    ax.plot(res["ns"], res["reference_1_over_n"], "r--", label="1/n reference")
    report.log_axis(ax, "xy")
    ax.set(
        xlabel="context size n",
        ylabel="admissible step 2/(lambda_1 + sigma^2)",
        title=f"{titles[r.spec.kernel]}, d={r.spec.task.d}",
    )
    ax.legend()
spec0 = step_runs[0].spec
fig.suptitle(
    f"fig:stepsize: sigma^2={spec0.task.noise_var:g}, {spec0.n_trials} draws per n "
    f"(run: reports/runs/fig_stepsize/)"
)
report.save_figure(fig, "03_stepsize")
plt.show()

# %%
for r, res in zip(
    sorted(step_runs, key=lambda r: r.spec.kernel),
    xclaims.check_stepsize(sorted(step_runs, key=lambda r: r.spec.kernel)),
    strict=True,
):
    rec.add(
        res,
        variant=f"{r.spec.kernel} kernel, d={r.spec.task.d}",
        compare="reference",
        measured="c0: the limit of lambda_1/(n lambda_inf) fitted with its n^-1/2 term "
        "(n x step -> 2 c0/lambda_inf); the slope beside it",
        run_dir=r.run_dir,
        command=f"pfntheory sweep fig_stepsize --scale {SCALE}",
    )
rec.add(
    stepsize.check_stepsize_rate(np.random.default_rng(2), "rbf", d=16),
    compare="reference",
    label="thm:lambda1",
    variant="RBF, d=16",
    measured="slope of log step vs log n",
    paper_value=-1.0,  # Theta(1/n)
)
rec.add(
    stepsize.check_stepsize_rate(
        np.random.default_rng(3), "linear", ns=(400, 800, 1600, 3200, 6400), d=4
    ),
    label="thm:lambda1",
    variant="linear, d=4, n >= 400",
    compare="reference",
    measured="slope of log step vs log n",
    paper_value=-1.0,  # Theta(1/n)
    caveat="holds once n >> d; at d=16, n <= 1000 the slope is about -0.9",
)

# %% [markdown]
# ## Linear kernel (supp-lem:lienar kernel Gram)
#
# The `d` nonzero eigenvalues of `XX'` divided by `n/d`, with the lemma's concentration interval at
# `t = 2` (probability at least `1 - 2e^{-2}`).

# %%
d_lin = 5
fig, ax = plt.subplots(figsize=(6, 3.8))
for n in ns:
    lam = sp.linear_gram_eigenvalues(sp.sample_design(int(n), d_lin, rng, size=(n_trials,)))
    ax.plot(np.full(lam.size, n), (lam / (n / d_lin)).ravel(), "o", color="C0", alpha=0.4, ms=3)
report.log_axis(ax, "x", ticks=ns)
iv = [sp.linear_gram_interval(int(n), d_lin, 2.0) for n in ns]
ax.fill_between(
    ns,
    [v.lo / (n / d_lin) for v, n in zip(iv, ns, strict=True)],
    [v.hi / (n / d_lin) for v, n in zip(iv, ns, strict=True)],
    color="r",
    alpha=0.15,
    label=f"lemma's interval, t=2 (prob >= {iv[0].prob:.2f})",
)
ax.axhline(1, color="k", lw=0.8)
ax.set(xlabel="n", ylabel="lambda_j / (n/d)", title=f"linear kernel, d={d_lin}")
ax.legend(fontsize=8)
report.save_figure(fig, "03_linear_gram")
plt.show()

# %%
rec.add(
    gram.check_linear_interval(np.random.default_rng(4), n_draws=1000 if quick else 4000),
    measured="violation rate of the interval (worst t)",
    variant="concentration interval",
)
rec.add(
    gram.check_linear_rate(np.random.default_rng(5), n_seeds=4 if quick else 8),
    compare="reference",
    measured="slope of log|lambda_j d/n - 1| vs log n",
    variant="rate n^-1/2",
    paper_value=-0.5,  # (1 + O_P(n^-1/2)) n/d
)

# %% [markdown]
# ## RBF kernel (supp-lem:rbf kernel Gram and the ridge lemmas)
#
# Left: Mercer eigenvalues of the RBF kernel under `N(0, I/d)` (closed form) against the Nystrom
# estimates `lambda_j(G)/n`. Middle: `lambda_1(G)/n` with the lower bound `1'G1/n^2` and its limit
# `rho = E kappa(x, x')`. Right: the condition numbers of `G + sigma^2 I` and of the Jacobi
# preconditioned `D^-1(G + sigma^2 I)` with the lemmas' sandwiches; both grow like `n`.

# %%
d_rbf, noise_var = 2, DEFAULT_NOISE_VAR
kern = RBFKernel(1.0, 1.0)  # the lemmas' unit RBF kernel
mercer = RBFMercer(d_rbf, 1.0, 1.0 / d_rbf, 1.0)
rho = expected_rbf_gaussian(1.0, 1.0, d_rbf)
lam1_n, lb_n, cond_r, cond_p, r_lo, r_hi, p_lo, p_hi = ([] for _ in range(8))
for n in ns:
    G = kern(sp.sample_design(int(n), d_rbf, rng))
    lam1_n.append(sp.top_eigenvalue(G) / n)
    lb_n.append(float(sp.lambda1_lower_bound(G)) / n)
    cond_r.append(sp.ridge_cond(G, noise_var))
    lo, hi = sp.ridge_cond_bounds(int(n), rho, noise_var)
    r_lo.append(lo), r_hi.append(hi)
    ps = sp.prec_spectrum(G, noise_var)
    cond_p.append(ps.cond)
    pb = sp.prec_bounds(ps.s, noise_var)
    p_lo.append(pb.cond[0]), p_hi.append(pb.cond[1])
G_big = kern(sp.sample_design(int(ns[-1]), d_rbf, rng))
nystrom = np.linalg.eigvalsh(G_big)[::-1] / ns[-1]

fig, axs = plt.subplots(1, 3, figsize=(15, 3.9))
k = np.arange(30)
axs[0].semilogy(k, nystrom[:30], "o", label=f"lambda_j(G)/n, n={ns[-1]}")
axs[0].semilogy(k, mercer.eigenvalues(30), "r.", label="Mercer eigenvalues (closed form)")
axs[0].set(xlabel="index j", ylabel="eigenvalue", title=f"RBF spectrum, d={d_rbf}")
axs[1].plot(ns, lam1_n, "o-", label="lambda_1(G)/n")
axs[1].plot(ns, lb_n, "s--", label="1'G1/n^2 (lower bound)")
axs[1].axhline(rho, color="r", ls=":", label="rho = E kappa(x,x')")
report.log_axis(axs[1], "x", ticks=ns)
axs[1].set(xlabel="n", ylabel="eigenvalue / n", title="lambda_1(G) >~ n")
for c, lo, hi, name, col in (
    (cond_r, r_lo, r_hi, "G + sigma^2 I", "C0"),
    (cond_p, p_lo, p_hi, "D^-1(G + sigma^2 I)", "C1"),
):
    s, ci, _ = slope_ci(np.log(ns), np.log(c))
    axs[2].loglog(ns, c, "o-", color=col, label=f"cond {name}: slope {s:.2f}")
    axs[2].fill_between(ns, lo, hi, color=col, alpha=0.12)
report.log_axis(axs[2], "x", ticks=ns)
axs[2].set(
    xlabel="n",
    ylabel="condition number",
    title=f"ridge lemmas / thm:cond number (sigma^2={noise_var})",
)
for ax in axs:
    ax.legend(fontsize=8)
report.save_figure(fig, "03_rbf_gram")
plt.show()

# %%
G1 = kern(sp.sample_design(400, d_rbf, rng))
rec.add(gram.check_lambda1_lower(G1), measured="lambda_1(G), n=400")
r = gram.check_lambda1_limit(np.random.default_rng(6))
rec.add(
    r,
    measured=f"lambda_1(G)/n at n={r.details['ns'][-1]} (mean over seeds), against the top "
    f"Mercer eigenvalue mu_0 (rho = E kappa = {r.details['rho']:.4f} is farther away)",
    compare="reference",
    caveat="lambda_1/n tends to the top Mercer eigenvalue mu_0, not to rho = E kappa: "
    "the lower bound 1'G1/n is not tight",
)
rec.add(mclaims.check_mercer_quadrature(), measured="worst relative error vs quadrature")
rec.add(
    mclaims.check_mercer_nystrom(np.random.default_rng(7)),
    measured="worst deviation (standard errors)",
)
rec.add(
    mclaims.check_mercer_truncation(np.random.default_rng(8)),
    measured="proof chain lambda_{T+1} <= tr R",
)
rec.add(
    gram.check_rbf_cond_growth(np.random.default_rng(9)),
    measured="gamma_hat (growth of cond G in n^{1/d})",
)
rec.add(conditioning.check_ridge_sandwich(G1, noise_var), measured="cond(G + sigma^2 I), n=400")
rec.add(
    conditioning.check_cond_rate(np.random.default_rng(10), "ridge"),
    compare="reference",
    measured="slope of log cond(G + sigma^2 I) vs log n",
    paper_value=1.0,  # Theta(n)
)
rec.add(
    conditioning.check_prec_inequalities(G1, noise_var), measured="cond(D^-1(G + sigma^2 I)), n=400"
)
rec.add(
    conditioning.check_cond_rate(np.random.default_rng(11), "prec"),
    compare="reference",
    measured="slope of log cond(D^-1(G + sigma^2 I)) vs log n",
    paper_value=1.0,  # Theta(n)
)

# %% [markdown]
# ## Depth needed for a tolerance (thm:L growth)
#
# The preconditioned Richardson iteration at the optimal constant step, run until its relative
# error falls below `eps`: the depth it needs, the worst case `log(eps)/log(rho*)` with
# `rho* = 1 - 2/(c_n + 1)`, and the proof's sufficient depth `(c_n + 1)/2 log(1/eps)`, all
# against `n`. The figure draws the very draws the verdict below is fitted on
# (`check_L_growth`), so the slope in its legend is the row's number.

# %%
rL = conditioning.check_L_growth(
    np.random.default_rng(12), ns=(50, 100, 200, 400) if quick else (50, 100, 200, 400, 800)
)
det = rL.details
ns_L = np.asarray(det["ns"])
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.loglog(
    ns_L,
    det["L_needed"],
    "o-",
    label=f"depth needed (mean of seeds): slope {rL.observed:.2f} [{rL.ci[0]:.2f}, {rL.ci[1]:.2f}]",
)
ax.loglog(ns_L, det["L_worst"], "^:", label="worst case log(eps)/log(rho*)")
ax.loglog(ns_L, det["L_sufficient"], "s--", label="proof's sufficient depth (c_n+1)/2 log(1/eps)")
ax.loglog(ns_L, det["L_needed"][0] * ns_L / ns_L[0], "k:", lw=1, label="slope 1 (L ~ n)")
report.log_axis(ax, "x", ticks=ns_L)
ax.set(
    xlabel="n",
    ylabel="depth L",
    title=f"thm:L growth: eps={det['eps']:g}, sigma^2={det['noise_var']:g}, d={det['d']}",
)
ax.legend(fontsize=8)
report.save_figure(fig, "03_L_growth")
plt.show()

# %%
rec.add(
    rL,
    compare="reference",
    measured="slope of log(depth to reach eps) vs log n (mean of per-seed slopes)",
    paper_value=1.0,  # L >~ n log(1/eps)
)

# %% [markdown]
# ## Summary of this part

# %%
rec.table()
