"""Real-data case studies of supp-sec:real data: Sacramento home prices and Walker Lake.

Implements fig:sacramento, fig:walker and supp-sec:real data: the data and preprocessing
(:mod:`.data`), the empirical-Bayes GP baseline with its scikit-learn reference (:mod:`.baseline`;
its checks against the paper and scikit-learn are :mod:`pfntheory.claims.real_data_eb`), the PFN
pretrained on the fitted prior (:mod:`.pfn`, PyTorch) and the end-to-end runner with maps, numbers
(:mod:`.run`) and the ``pfntheory casestudy`` subcommand (:mod:`.cli`).

Only the NumPy side is imported here; :mod:`.pfn` and :mod:`.run` import torch when used.
"""

from .data import (
    COORD_DIVISOR,
    DATASETS,
    SpatialData,
    Standardizer,
    load_dataset,
    load_sacramento,
    load_walker,
    walker_csv_path,
)

__all__ = [
    "COORD_DIVISOR",
    "DATASETS",
    "SpatialData",
    "Standardizer",
    "load_dataset",
    "load_sacramento",
    "load_walker",
    "walker_csv_path",
]
