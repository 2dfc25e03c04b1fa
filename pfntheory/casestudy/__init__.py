"""The inputs of the real-data case studies of supp-sec:real data: Sacramento home prices and
Walker Lake.

For fig:sacramento, fig:walker and supp-sec:real data: the data and preprocessing (:mod:`.data`),
the empirical-Bayes GP baseline with its scikit-learn reference (:mod:`.baseline`; its checks
against the paper and scikit-learn are :mod:`pfntheory.claims.real_data_eb`), the PFN pretrained on
the fitted prior (:mod:`.pfn`, PyTorch) and the data and fit stages (:mod:`.prepare`). The
end-to-end pipeline with maps and numbers is :mod:`pfntheory.pipelines.casestudy_run` (a layer
above the claims it reads), the ``pfntheory casestudy`` subcommand :mod:`pfntheory.cli.casestudy`.

Only the NumPy side is imported here; :mod:`.pfn` imports torch when used.
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
