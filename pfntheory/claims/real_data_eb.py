"""The empirical-Bayes fits of the real-data case studies (supp-sec:real data), measured
on the data.

- :func:`check_eb_optimum` -- our EB optimum against the paper's printed fit (a maximiser cannot do
  worse; Sacramento reproduces every printed digit);
- :func:`check_sklearn_agreement` -- scikit-learn's ``GaussianProcessRegressor`` (independent
  implementation) against our LML, optimum and GP predictive;
- :func:`check_walker_coordinate_convention` -- the printed Walker fit scored in two coordinate
  scalings;
- :func:`check_walker_subset_optimum` -- whether the printed Walker fit is what an EB fit of a
  random 200-subset gives, in a given coordinate convention (the text's / 0.3, the code's / sqrt 2).

The baseline itself (the fit, the GP predictive, the printed fits :data:`PAPER_FITS`, the
scikit-learn reference) is :mod:`pfntheory.casestudy.baseline`; the assertions live in
``verify/test_real_data_eb.py``, the table in ``notebooks/05_case_studies.py``. NumPy/SciPy only
(scikit-learn is imported lazily by the reference).
"""

from __future__ import annotations

import numpy as np

from pfntheory.base._checks import (
    array,
    as_float_array,
    instance_of,
    optional,
    positive_scalar,
)
from pfntheory.maths.gp import (
    EBFit,
    fit_empirical_bayes,
    log_marginal_likelihood,
    posterior_predictive,
)

from ..casestudy.baseline import (
    PAPER_FITS,
    PAPER_ROUNDING,
    paper_lml,
    sklearn_fit,
    sklearn_lml,
    sklearn_predict,
    walker_splits,
)
from ..casestudy.data import COORD_DIVISOR, SpatialData
from . import ClaimResult, checked_args

__all__ = [
    "check_eb_optimum",
    "check_printed_fit",
    "check_sklearn_agreement",
    "check_walker_coordinate_convention",
    "check_walker_subset_optimum",
    "WALKER_CODE_DIVISOR",
]


def _params(f: EBFit) -> np.ndarray:
    return np.array([f.alpha, *f.lengthscales, f.noise_std])


@checked_args("n_restarts", "seed", data=instance_of(SpatialData), fit=optional(instance_of(EBFit)))
def check_eb_optimum(
    data: SpatialData, idx=None, *, n_restarts: int = 2, seed: int = 0, fit: EBFit | None = None
) -> ClaimResult:
    """Our EB optimum versus the paper's printed fit on the same (standardised) data.

    Claim measured: a maximiser of the LML cannot do worse than the paper's parameters,
    ``LML(ours) >= LML(paper) - tol`` with ``tol = 1e-6 |LML|`` (L-BFGS-B stopping tolerance
    ``ftol ~ 2.2e-9`` relative, with margin). Details hold both fits, the LML gap, the LML of the
    paper's values with the lengthscales swapped (which input each ell belongs to), and whether our
    fit reproduces the printed digits (``|ours - paper| <= 5e-4`` rounding ``+ 5e-4``
    optimiser slack).
    """
    X, Y = data.X, data.Y
    if idx is not None:
        X, Y = X[idx], Y[idx]
    if fit is None:
        fit = fit_empirical_bayes(X, Y, n_restarts=n_restarts, rng=np.random.default_rng(seed))
    paper = PAPER_FITS[data.name]
    lml_paper = paper_lml(data.name, X, Y)
    swapped = EBFit(paper.alpha, paper.lengthscales[::-1], paper.noise_std, float("nan"))
    lml_swapped = float(log_marginal_likelihood(swapped.kernel, X, Y, swapped.noise_var))
    tol = 1e-6 * abs(fit.log_marginal_likelihood)
    gap = fit.log_marginal_likelihood - lml_paper
    diff = _params(fit) - _params(paper)
    return ClaimResult(
        label="supp-sec:real data",
        statement=f"{data.name}: our EB optimum's LML >= LML at the paper's (alpha, ell, sigma)",
        holds=bool(gap >= -tol),
        observed=float(gap),
        bound=0.0,
        tolerance=f"LML gap >= -{tol:.2g} (1e-6 relative: L-BFGS-B convergence)",
        details={
            "n": int(X.shape[0]),
            "coord_divisor": data.transform.coord_divisor,
            "ours": _params(fit),
            "paper": _params(paper),
            "param_diff": diff,
            "lml_ours": fit.log_marginal_likelihood,
            "lml_paper": lml_paper,
            "lml_paper_swapped_ell": lml_swapped,
            "reproduces_printed_digits": bool(np.all(np.abs(diff) <= 2 * PAPER_ROUNDING)),
            "param_names": [
                "alpha",
                f"ell_{data.input_names[0]}",
                f"ell_{data.input_names[1]}",
                "sigma",
            ],
        },
    )


@checked_args("n_restarts", "seed", data=instance_of(SpatialData), fit=optional(instance_of(EBFit)))
def check_printed_fit(
    data: SpatialData, idx=None, *, n_restarts: int = 2, seed: int = 0, fit: EBFit | None = None
) -> ClaimResult:
    """The paper's printed EB fit is the empirical-Bayes optimum on the same data: our optimum
    (:func:`check_eb_optimum`, which also checks that our optimiser is at least as good) reproduces
    the printed digits, ``|ours - paper| <= 2 x PAPER_ROUNDING`` (printed rounding plus optimiser
    slack) for each of (alpha, ell_1, ell_2, sigma). ``observed`` is the largest
    ``|ours - paper|``; details carry the LML gap (a fit that is not the optimum loses nats: the
    test it replaces, "our optimum is at least as good", passed at any gap)."""
    r = check_eb_optimum(data, idx, n_restarts=n_restarts, seed=seed, fit=fit)
    d = r.details
    worst = float(np.max(np.abs(d["param_diff"])))
    return ClaimResult(
        label="supp-sec:real data",
        key="printed_fit",
        statement=f"{data.name}: the paper's printed (alpha, ell, sigma) is the EB optimum on "
        "these data (our fit reproduces its digits)",
        holds=bool(d["reproduces_printed_digits"]),
        observed=worst,
        bound=2 * PAPER_ROUNDING,
        tolerance=f"|ours - paper| <= {2 * PAPER_ROUNDING:g} per parameter (printed rounding "
        f"{PAPER_ROUNDING:g} + optimiser slack {PAPER_ROUNDING:g}); the printed fit's LML is "
        f"{r.observed:.3g} nats below our optimum's",
        details={**d, "lml_gap": r.observed},
    )


@checked_args(
    "n_restarts",
    "seed",
    X=array(ndim=2),
    Y=array(ndim=1),
    fit=instance_of(EBFit),
    Xq=array(ndim=2),
    sk_fit=optional(instance_of(EBFit)),
)
def check_sklearn_agreement(
    X, Y, fit: EBFit, Xq, *, n_restarts: int = 0, seed: int = 0, sk_fit: EBFit | None = None
) -> ClaimResult:
    """scikit-learn against our EB fit and our GP predictive on the same data.

    Three comparisons, each with its tolerance:

    * LML at our parameters: same number from two implementations. rtol 1e-10, atol 1e-8 nats
      (two Cholesky factorisations of ``G + sigma^2 I``, cond <= 1 + n alpha^2/sigma^2 ~ 1e3: the
      log-determinant and quadratic form carry ~ n cond eps ~ 1e-10 relative error).
    * Optimum: sklearn's maximised LML may not exceed ours by more than 1e-4 nats + 1e-6 relative
      (both L-BFGS-B; sklearn's default ``ftol`` ~ 2.2e-9 relative) -- ours is at least as good --
      and the parameters agree to rtol 2e-2 (the LML is flat along some directions; 2e-2 covers the
      parameter spread of optimiser stopping on these data), atol 1e-3.
    * Predictive mean/variance with ``optimizer=None`` at our parameters: rtol 1e-8, atol 1e-10
      (round-off, as for the LML).
    """
    X = as_float_array(X, "X", ndim=2)
    Y = as_float_array(Y, "Y", ndim=1)
    lml_ours = float(log_marginal_likelihood(fit.kernel, X, Y, fit.noise_var))
    lml_sk_at_ours = sklearn_lml(fit, X, Y)
    ok_lml = bool(np.isclose(lml_sk_at_ours, lml_ours, rtol=1e-10, atol=1e-8))
    if sk_fit is None:
        sk_fit = sklearn_fit(X, Y, n_restarts=n_restarts, seed=seed)
    opt_excess = sk_fit.log_marginal_likelihood - fit.log_marginal_likelihood
    ok_opt = bool(opt_excess <= 1e-4 + 1e-6 * abs(fit.log_marginal_likelihood))
    ok_par = bool(np.allclose(_params(sk_fit), _params(fit), rtol=2e-2, atol=1e-3))
    mu, tau = posterior_predictive(fit.kernel, X, Y, Xq, fit.noise_var)
    mu_sk, tau_sk = sklearn_predict(fit, X, Y, Xq)
    err_mu = float(np.max(np.abs(mu - mu_sk)))
    err_tau = float(np.max(np.abs(tau - tau_sk) / np.abs(tau)))
    ok_pred = bool(
        np.allclose(mu, mu_sk, rtol=1e-8, atol=1e-10)
        and np.allclose(tau, tau_sk, rtol=1e-8, atol=1e-10)
    )
    return ClaimResult(
        label="supp-sec:real data",
        statement="scikit-learn reproduces our EB fit (LML, optimum, parameters) and GP predictive",
        holds=ok_lml and ok_opt and ok_par and ok_pred,
        observed=float(opt_excess),
        bound=0.0,
        tolerance="LML rtol 1e-10 atol 1e-8; optimum excess <= 1e-4 + 1e-6|LML|; params rtol 2e-2 "
        "atol 1e-3; predictive rtol 1e-8 atol 1e-10",
        details={
            "lml_ours": lml_ours,
            "lml_sklearn_at_ours": lml_sk_at_ours,
            "ok_lml": ok_lml,
            "ours": _params(fit),
            "sklearn": _params(sk_fit),
            "lml_sklearn_opt": sk_fit.log_marginal_likelihood,
            "ok_opt": ok_opt,
            "ok_params": ok_par,
            "max_abs_err_mu": err_mu,
            "max_rel_err_tau": err_tau,
            "ok_predictive": ok_pred,
            "n": int(X.shape[0]),
            "m": int(np.shape(Xq)[0]),
        },
    )


@checked_args("seeds", "n_restarts", data=instance_of(SpatialData), alt_divisor=positive_scalar)
def check_walker_coordinate_convention(
    data: SpatialData, seeds=(0, 1, 2), *, n_restarts: int = 1, alt_divisor: float = 1.0
) -> ClaimResult:
    """Which coordinate scaling the paper's Walker Lake fit was computed in.

    The EB optimum is invariant to rescaling the inputs (the lengthscales rescale with them), so one
    fit per random 200-subset gives ``max LML``; the paper's printed parameters are then scored in
    the text's convention (standardised / 0.3) and in ``alt_divisor`` (default 1: standardised
    only). Holds (i.e. the erratum is shown) when, on every subset, the paper's parameters are
    closer to the optimum under ``alt_divisor`` than under the text's 0.3.
    """
    if data.name != "walker":
        raise ValueError(f"data must be the Walker Lake data set, got {data.name!r}")
    text_gaps: list[float] = []
    alt_gaps: list[float] = []
    fits = []
    for seed in seeds:
        idx = walker_splits(data.n, seed)["eb"]
        X, Y = data.X[idx], data.Y[idx]
        fit = fit_empirical_bayes(X, Y, n_restarts=n_restarts, rng=np.random.default_rng(seed))
        # the same points in the text's convention (/0.3) and in the alternative one
        u = data.transform.coord_divisor
        X_text = X * u / COORD_DIVISOR
        X_alt = X * u / alt_divisor
        text_gaps.append(fit.log_marginal_likelihood - paper_lml("walker", X_text, Y))
        alt_gaps.append(fit.log_marginal_likelihood - paper_lml("walker", X_alt, Y))
        # our fitted lengthscales expressed in the alternative convention
        fits.append([fit.alpha, *(np.asarray(fit.lengthscales) * u / alt_divisor), fit.noise_std])
    gaps_text, gaps_alt = np.array(text_gaps), np.array(alt_gaps)
    return ClaimResult(
        label="supp-sec:real data",
        statement="Walker: the paper's (alpha, ell, sigma) fit coordinates standardised / "
        f"{alt_divisor} better than the text's standardised / {COORD_DIVISOR}",
        holds=bool(np.all(gaps_alt < gaps_text)),
        observed=float(np.median(gaps_alt)),
        bound=float(np.median(gaps_text)),
        tolerance=(
            "strict inequality of LML gaps on every subset (exact arithmetic on the same fit)"
        ),
        details={
            "seeds": list(seeds),
            "lml_gap_text_convention": gaps_text,
            "lml_gap_alt_convention": gaps_alt,
            "alt_divisor": alt_divisor,
            "fits_in_alt_convention": np.array(fits),
            "median_fit_alt_convention": np.median(np.array(fits), 0),
            "paper": _params(PAPER_FITS["walker"]),
        },
    )


#: The authors' public code divides Walker Lake's standardised coordinates by sqrt(2) before the EB
#: fit (issue 47; /work/shared/DESIGN.md, "Readings of the authors' code"); the text says / 0.3.
WALKER_CODE_DIVISOR = float(np.sqrt(2.0))


@checked_args("seeds", "n_restarts", data=instance_of(SpatialData), divisor=positive_scalar)
def check_walker_subset_optimum(
    data: SpatialData,
    divisor: float = WALKER_CODE_DIVISOR,
    seeds=tuple(range(8)),
    *,
    n_restarts: int = 1,
) -> ClaimResult:
    """Walker Lake: the printed (alpha, ell_x, ell_y, sigma) is an EB optimum of *a* random
    200-point subset, in coordinates standardised / ``divisor``.

    The paper fits "a randomly sampled subset" whose indices it does not print, so its digits
    cannot be reproduced on ours; what can be tested is whether they are what another random subset
    would give. Per subset (``walker_splits(n, seed)["eb"]``) our EB optimum is fitted (the optimum
    is scale-equivariant: lengthscales are expressed in the convention by ``* u / divisor``). Two
    references, both from the subsets alone: the per-parameter range of the subsets' optima, and
    the cross-subset LML gap ``LML_i(opt_i) - LML_i(opt_j)``, ``i != j`` (what a fit on another
    subset loses on this one; convention-free). Holds when every printed parameter lies in the
    range of the optima (widened by the printed rounding 5e-4) and the printed fit's largest gap
    over the subsets is no larger than the largest cross-subset gap. ``observed``: the median
    printed-fit gap; ``bound``: the median cross-subset gap.
    """
    if data.name != "walker":
        raise ValueError(f"data must be the Walker Lake data set, got {data.name!r}")
    u = data.transform.coord_divisor
    fits, subsets = [], []
    for seed in seeds:
        idx = walker_splits(data.n, seed)["eb"]
        X, Y = data.X[idx], data.Y[idx]
        fits.append(
            fit_empirical_bayes(X, Y, n_restarts=n_restarts, rng=np.random.default_rng(seed))
        )
        subsets.append((X, Y))
    params = np.array(
        [[f.alpha, *(np.asarray(f.lengthscales) * u / divisor), f.noise_std] for f in fits]
    )
    paper = _params(PAPER_FITS["walker"])
    gaps = np.array(
        [
            f.log_marginal_likelihood - paper_lml("walker", X * u / divisor, Y)
            for f, (X, Y) in zip(fits, subsets, strict=True)
        ]
    )
    cross = np.array(
        [
            fits[i].log_marginal_likelihood
            - float(log_marginal_likelihood(fj.kernel, X, Y, fj.noise_var))
            for i, (X, Y) in enumerate(subsets)
            for j, fj in enumerate(fits)
            if i != j
        ]
    )
    lo, hi = params.min(0) - PAPER_ROUNDING, params.max(0) + PAPER_ROUNDING
    inside = (paper >= lo) & (paper <= hi)
    gap_ok = bool(gaps.max() <= cross.max())
    return ClaimResult(
        label="supp-sec:real data",
        key="printed_fit_subset",
        statement="Walker: the printed (alpha, ell, sigma) is an EB optimum of a random "
        f"200-subset in coordinates standardised / {divisor:.4g}",
        holds=bool(np.all(inside) and gap_ok),
        observed=float(np.median(gaps)),
        bound=float(np.median(cross)),
        tolerance=f"every printed parameter within the range of {len(fits)} subsets' optima "
        f"(+-{PAPER_ROUNDING:g} rounding); printed fit's largest LML gap <= the largest "
        "cross-subset gap",
        details={
            "divisor": divisor,
            "seeds": list(seeds),
            "optima": params,
            "optima_min": params.min(0),
            "optima_max": params.max(0),
            "paper": paper,
            "paper_inside_range": inside,
            "lml_gap_printed": gaps,
            "lml_gap_printed_max": float(gaps.max()),
            "lml_gap_cross_subset_median": float(np.median(cross)),
            "lml_gap_cross_subset_max": float(cross.max()),
            "param_names": ["alpha", "ell_x", "ell_y", "sigma"],
        },
    )
