"""Fixtures shared by the unit tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def built():
    """The fused extension (pfntheory.nn.fused), built or loaded from the cache once; the tests
    that need it skip only without a toolchain (no C++ compiler or no ninja) or with
    ``PFNTHEORY_FUSED=0``, and fail if a build that could happen does not."""
    from torch.utils import cpp_extension

    from pfntheory.nn import fused

    if fused._compiler() is None or not cpp_extension.is_ninja_available():
        pytest.skip("the fused extension cannot be built here: no C++ compiler or no ninja")
    if os.environ.get("PFNTHEORY_FUSED", "1") == "0":
        pytest.skip("the fused extension is disabled by PFNTHEORY_FUSED=0")
    with fused.enabled(True):
        if not fused.available():
            pytest.fail(f"the fused extension failed to build: {fused.unavailable_reason()}")
    return True
