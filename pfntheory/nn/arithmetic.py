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

The record is kept per training segment (issue 52, :func:`segments_of`): a segment is a range of
steps ``[first, last)`` trained with one arithmetic, ``{"steps": [first, last], "arithmetic":
record}``; a resume on the same arithmetic extends the last segment, one on other arithmetic
(``--allow-arithmetic-change``) opens a new one, so a run trained half fused and half eager says
so (``arithmetic_segments`` in ``metrics.json`` and every checkpoint; ``"arithmetic"`` stays the
record of the last segment). A ``metrics.json`` written before segments existed reads as one
segment over all its steps (:func:`segments_of`). The instruction set recorded is the one built
(:func:`pfntheory.nn.fused.built_isa`), never ``$PFNTHEORY_FUSED_ISA`` as typed; a record written
as typed before that reads as the build it made (:func:`canonical`). A checkpoint whose record is
missing or damaged (:func:`record_problem`) is refused unless the caller allows an arithmetic
change; a record without ``fused_draw_max_n`` (written before the field existed) is not damaged:
it resumes with :data:`LEGACY_FUSED_DRAW_MAX_N`.
"""

from __future__ import annotations

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
#: Key of the per-segment records (``metrics.json`` and checkpoints).
SEGMENTS_KEY = "arithmetic_segments"
#: The fused draw's range of every run trained or checkpointed before the choice per ``n``
#: (issue 45): every ``n`` it applies to (``priors.FAST_DRAW_MAX_N``).
LEGACY_FUSED_DRAW_MAX_N = FAST_DRAW_MAX_N


def arithmetic(spec: RunSpec, device: torch.device) -> dict:
    """What decides the rounding of ``spec``'s training on ``device`` in this process."""
    fused.check_environment()  # PFNTHEORY_FUSED(_ISA): documented values only
    cpu = device.type == "cpu"
    uses_fused = cpu and spec.model.score in ("rbf", "softmax") and fused.available()
    capability = torch.backends.cpu.get_cpu_capability()
    return {
        "path": "fused" if uses_fused else ("eager" if cpu else f"eager-{device.type}"),
        "cpu_capability": str(capability),
        "fused_isa": fused.built_isa() if uses_fused else None,  # built, not as typed
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


#: The fields of a record (:func:`arithmetic`) and their types; ``fused_isa`` may be None (eager).
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "path": str,
    "cpu_capability": str,
    "fused_isa": (str, type(None)),
    "fast_numerics": bool,
    "torch": str,
    "numpy": str,
}


def record_problem(recorded, fast_numerics: bool) -> str | None:
    """What is wrong with a checkpoint's arithmetic record (None: nothing): missing (not a dict),
    a field missing, of the wrong type or unknown, ``fast_numerics`` other than the run's, or a
    ``fused_draw_max_n`` that is not an integer >= 0 or in a run without fast numerics. A record
    without ``fused_draw_max_n`` is a checkpoint written before the field existed: readable."""
    if recorded is None:
        return "missing"
    if not isinstance(recorded, dict):
        return f"not a record ({type(recorded).__name__})"
    for key, kind in _FIELDS.items():
        if key not in recorded:
            return f"damaged (no {key!r})"
        if not isinstance(recorded[key], kind) or (kind is str and not recorded[key]):
            return f"damaged ({key}={recorded[key]!r})"
    unknown = sorted(set(recorded) - set(_FIELDS) - {DRAW_KEY})
    if unknown:
        return f"damaged (unknown field(s) {', '.join(map(repr, unknown))})"
    if recorded["fast_numerics"] != bool(fast_numerics):
        return f"damaged (fast_numerics={recorded['fast_numerics']!r} in a run with " + (
            f"fast_numerics={bool(fast_numerics)})"
        )
    if DRAW_KEY in recorded:
        value = recorded[DRAW_KEY]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"damaged ({DRAW_KEY}={value!r})"
        if not fast_numerics:
            return f"damaged ({DRAW_KEY} in a run without fast numerics)"
    return None


def canonical(recorded: dict) -> dict:
    """A valid record (:func:`record_problem`) as this code writes it: ``fused_isa`` the build it
    made (a record written before issue 52 holds ``$PFNTHEORY_FUSED_ISA`` as typed, or the CPU
    capability: the build took ``AVX512``/``AVX2`` as such, anything else ``DEFAULT``, and an empty
    value the CPU capability), ``fused_draw_max_n`` :data:`LEGACY_FUSED_DRAW_MAX_N` for a
    fast-numerics record written before the field."""
    out = dict(recorded)
    isa = out.get("fused_isa")
    if isa is not None:
        out["fused_isa"] = fused.isa_of(isa or out.get("cpu_capability"))
    if out.get("fast_numerics") and DRAW_KEY not in out:
        out[DRAW_KEY] = LEGACY_FUSED_DRAW_MAX_N
    return out


def arithmetic_change(recorded, now: dict) -> str | None:
    """What differs between the arithmetic a checkpoint ``recorded`` (read as :func:`canonical`)
    and ``now`` (None: nothing; a missing record is :func:`record_problem`'s to refuse)."""
    if not isinstance(recorded, dict):
        return None
    recorded = canonical(recorded)
    diff = [k for k in sorted(now) if recorded.get(k) != now[k]]
    if not diff:
        return None
    return ", ".join(f"{k} {recorded.get(k)!r} -> {now[k]!r}" for k in diff)


def _segment_problem(segments, step: int, fast_numerics: bool) -> str | None:
    if not isinstance(segments, list) or not segments:
        return "not a non-empty list"
    first = 0
    for i, seg in enumerate(segments):
        if not isinstance(seg, dict) or set(seg) != {"steps", "arithmetic"}:
            return f"segment {i} is not {{'steps', 'arithmetic'}}"
        steps = seg["steps"]
        if (
            not isinstance(steps, list)
            or len(steps) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in steps)
            or steps[0] != first
            or steps[1] < steps[0]
        ):
            return f"segment {i} has steps {steps!r} (expected [{first}, last >= {first}])"
        first = steps[1]
        if seg["arithmetic"] is not None:
            problem = record_problem(seg["arithmetic"], fast_numerics)
            if problem:
                return f"segment {i}'s record is {problem}"
    if first != step:
        return f"its segments end at step {first}, the checkpoint at step {step}"
    return None


def resumed_segments(ckpt: dict, step: int, fast_numerics: bool) -> tuple[list[dict], str | None]:
    """The segments of a checkpoint at ``step`` and what is wrong with them (None: nothing).
    A checkpoint written before segments existed holds one: ``[0, step]`` with its record. A
    problem returns one segment ``[0, step]`` of unknown arithmetic (None), to be recorded as such
    when the caller resumes anyway."""
    unknown = [{"steps": [0, step], "arithmetic": None}]
    recorded = ckpt.get("arithmetic")
    problem = record_problem(recorded, fast_numerics)
    if problem or not isinstance(recorded, dict):
        return unknown, f"its arithmetic record is {problem}"
    segments = ckpt.get(SEGMENTS_KEY)
    if segments is None:  # written before issue 52: one segment, its record
        return [{"steps": [0, step], "arithmetic": canonical(recorded)}], None
    problem = _segment_problem(segments, step, fast_numerics)
    if problem is None and segments[-1]["arithmetic"] is None:
        problem = "its last segment has no record"
    if problem is None and arithmetic_change(segments[-1]["arithmetic"], canonical(recorded)):
        problem = "its last segment's record is not its arithmetic record"
    if problem:
        return unknown, f"its arithmetic segments are damaged ({problem})"
    return [
        {
            "steps": list(s["steps"]),
            "arithmetic": None if s["arithmetic"] is None else canonical(s["arithmetic"]),
        }
        for s in segments
    ], None


def continue_segments(segments: list[dict], step: int, now: dict) -> list[dict]:
    """``segments`` (ending at ``step``) followed by training on ``now`` from ``step``: the last
    segment extended when its arithmetic is ``now``'s, else a new segment ``[step, step]``."""
    last = segments[-1]["arithmetic"] if segments else None
    if segments and last is not None and arithmetic_change(last, now) is None:
        return segments
    return [*segments, {"steps": [step, step], "arithmetic": dict(now)}]


def segments_of(metrics: dict) -> list[dict]:
    """The arithmetic segments of a finished run's ``metrics.json``: its ``arithmetic_segments``,
    or for a run written before them one segment over all its steps with its ``arithmetic``
    record (None: a run trained before records existed)."""
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict (metrics.json), got {type(metrics).__name__}")
    segments = metrics.get(SEGMENTS_KEY)
    if segments is not None:
        return segments
    steps = metrics.get("steps")
    return [{"steps": [0, steps], "arithmetic": metrics.get("arithmetic")}]
