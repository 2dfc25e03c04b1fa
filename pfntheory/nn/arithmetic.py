"""The arithmetic a run was computed with, recorded beside its results (issue 41).

A run is bitwise reproducible on the same arithmetic: the same operator path (the fused C++
extension or torch's eager operators: they agree to round-off, not bitwise -- 1.2e-7 at d = 4,
L = 4), the same CPU instruction set (torch's ``get_cpu_capability()``: AVX-512 and AVX2 kernels
round differently), the same numerics switch (``RunSpec.fast_numerics``) and the same library
versions. :func:`arithmetic` is that record; :func:`pfntheory.nn.train.train` writes it into
``metrics.json`` (``"arithmetic"``) and every checkpoint, and refuses to resume a checkpoint
written with another one unless asked (:func:`arithmetic_change`). The record is not part of the
run's identity (its name, its ``config.json``): a run is the same experiment on any machine.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from pfntheory.infra.tree import RunSpec

from . import fused

__all__: list[
    str
] = []  # used by the training loop; its record is documented in docs/reliability.md


def arithmetic(spec: RunSpec, device: torch.device) -> dict:
    """What decides the rounding of ``spec``'s training on ``device`` in this process."""
    cpu = device.type == "cpu"
    uses_fused = cpu and spec.model.score in ("rbf", "softmax") and fused.available()
    capability = torch.backends.cpu.get_cpu_capability()
    return {
        "path": "fused" if uses_fused else ("eager" if cpu else f"eager-{device.type}"),
        "cpu_capability": str(capability),
        "fused_isa": os.environ.get("PFNTHEORY_FUSED_ISA", capability) if uses_fused else None,
        "fast_numerics": bool(spec.fast_numerics),
        "torch": str(torch.__version__),
        "numpy": str(np.__version__),
    }


def arithmetic_change(recorded, now: dict) -> str | None:
    """What differs between the arithmetic a checkpoint ``recorded`` and ``now`` (None: nothing,
    or a checkpoint written before the record existed, which cannot tell)."""
    if not isinstance(recorded, dict):
        return None
    diff = [k for k in sorted(now) if recorded.get(k) != now[k]]
    if not diff:
        return None
    return ", ".join(f"{k} {recorded.get(k)!r} -> {now[k]!r}" for k in diff)
