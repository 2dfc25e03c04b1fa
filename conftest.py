"""Shared pytest configuration: hypothesis profiles and the ``--scale`` option.

The default hypothesis profile is deterministic (``derandomize=True``, no example database, no
deadline), so ``pytest verify/`` gives the same verdict on every run. Select the exploratory profile
with ``HYPOTHESIS_PROFILE=explore`` or ``--hypothesis-profile=explore`` for long randomised runs.
"""

import os

# Small batched linear algebra dominates the exact side; multithreaded OpenBLAS on a loaded 2-core
# machine was measured 17x slower than one thread for it (noise-parameterisation check: 21 s vs
# 1.2 s). Set before NumPy loads its BLAS; threadpoolctl below covers an already-loaded BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from pfntheory.infra.config import EXPERIMENT_SCALES  # noqa: E402

threadpool_limits(limits=int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")

settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    derandomize=False,
    deadline=None,
    print_blob=True,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


def pytest_addoption(parser):
    parser.addoption(
        "--scale",
        action="store",
        default="quick",
        choices=EXPERIMENT_SCALES,
        help="size of the rate checks and which committed runs the trained claims read "
        "(quick: CI minutes; cpu: the paper's tasks with fewer steps; paper)",
    )


@pytest.fixture(scope="session")
def scale(request) -> str:
    return request.config.getoption("--scale")


@pytest.fixture(autouse=True)
def _strict_numpy():
    """Floating-point errors inside a check are failures, not warnings (diffrax habit)."""
    with np.errstate(over="raise", invalid="raise"):
        yield
