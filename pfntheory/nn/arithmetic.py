"""The arithmetic a run was computed with, recorded beside its results (issue 41).

A run is bitwise reproducible on the same arithmetic: the same operator path (the fused C++
extension or torch's eager operators: they agree to round-off, not bitwise -- 1.2e-7 at d = 4,
L = 4), the same CPU instruction set (torch's ``get_cpu_capability()``: AVX-512 and AVX2 kernels
round differently), the same numerics switch (``RunSpec.fast_numerics``) and the same library
versions. :func:`arithmetic` is that record; :func:`pfntheory.nn.train.train` writes it into
``metrics.json`` (``"arithmetic"``) and every checkpoint, and refuses to resume a checkpoint
written with another one unless asked (:func:`arithmetic_change`). The record is not part of the
run's identity (its name, its ``config.json``): a run is the same experiment on any machine.

A fast-numerics run also records which training draw it takes for which ``n`` (issue 45,
:func:`fused_draw_max_n`): the fused GP draw up to ``fused_draw_max_n``, the exact path above. A run
started from step 0 takes :data:`~pfntheory.infra.config.FUSED_DRAW_MAX_N`, measured on this
machine class; a resumed run keeps its
checkpoint's (:data:`LEGACY_FUSED_DRAW_MAX_N` for a checkpoint written before the record existed),
so that its data stays bitwise that of an uninterrupted run.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from pfntheory.infra.config import FUSED_DRAW_MAX_N
from pfntheory.infra.tree import RunSpec

from . import fused
from .priors import FAST_DRAW_MAX_N

__all__: list[
    str
] = []  # used by the training loop; its record is documented in docs/reliability.md

#: Key of the training draw in a fast-numerics run's record (``metrics.json`` and checkpoints).
DRAW_KEY = "fused_draw_max_n"
#: The fused draw's range of every run trained or checkpointed before the choice per ``n``
#: (issue 45): every ``n`` it applies to (``priors.FAST_DRAW_MAX_N``).
LEGACY_FUSED_DRAW_MAX_N = FAST_DRAW_MAX_N


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


def fused_draw_max_n(spec: RunSpec, checkpoint: dict | None) -> int | None:
    """The largest ``n`` at which the training of ``spec`` draws with the fused GP draw (None: not
    a fast-numerics run, the exact path at every ``n``). ``checkpoint``: the run's checkpoint
    (its record's value is kept; a checkpoint without one is a run started before the choice per
    ``n``: :data:`LEGACY_FUSED_DRAW_MAX_N`), or None for a run started from step 0
    (:data:`FUSED_DRAW_MAX_N`)."""
    if not isinstance(spec, RunSpec):
        raise TypeError(f"spec must be a RunSpec, got {type(spec).__name__}")
    if checkpoint is not None and not isinstance(checkpoint, dict):
        raise TypeError(f"checkpoint must be a dict or None, got {type(checkpoint).__name__}")
    if not spec.fast_numerics:
        return None
    if checkpoint is None:
        return FUSED_DRAW_MAX_N
    recorded = checkpoint.get("arithmetic")
    if not isinstance(recorded, dict) or DRAW_KEY not in recorded:
        return LEGACY_FUSED_DRAW_MAX_N  # written before the record (or the choice) existed
    value = recorded[DRAW_KEY]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"the checkpoint's arithmetic record has {DRAW_KEY}={value!r}; expected an integer "
            ">= 0 (the largest n of the fused training draw)"
        )
    return value


def arithmetic_change(recorded, now: dict) -> str | None:
    """What differs between the arithmetic a checkpoint ``recorded`` and ``now`` (None: nothing,
    or a checkpoint written before the record existed, which cannot tell)."""
    if not isinstance(recorded, dict):
        return None
    diff = [k for k in sorted(now) if recorded.get(k) != now[k]]
    if not diff:
        return None
    return ", ".join(f"{k} {recorded.get(k)!r} -> {now[k]!r}" for k in diff)
