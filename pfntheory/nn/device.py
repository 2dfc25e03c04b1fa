"""The one check of a device setting: ``'auto'``, ``'cpu'``, ``'cuda'`` or ``'cuda:<i>'``, resolved
against this machine's accelerators (every torch entry point and the command line use it)."""

from __future__ import annotations

import torch

from pfntheory.base._checks import ArgumentTypeError

__all__ = ["select_device"]


def select_device(
    spec: str | torch.device = "auto", *, cuda_available: bool | None = None
) -> torch.device:
    """Resolve a device spec: ``'auto'`` -> CUDA when available, else CPU.

    Parameters
    ----------
    spec : str or torch.device
        ``'auto'``, ``'cpu'``, ``'cuda'``, ``'cuda:<i>'``.
    cuda_available : bool, optional
        Override of ``torch.cuda.is_available()`` (lets the selection logic be tested on a
        machine without a GPU).

    Raises
    ------
    ValueError
        Naming ``device`` for an unknown spec, a CUDA spec when CUDA is unavailable, or a CUDA
        index this machine does not have.
    """
    avail = torch.cuda.is_available() if cuda_available is None else bool(cuda_available)
    if isinstance(spec, torch.device):
        spec = str(spec)
    if not isinstance(spec, str):
        raise ArgumentTypeError(f"device must be a string or torch.device, got {spec!r}")
    if spec == "auto":
        return torch.device("cuda" if avail else "cpu")
    try:
        dev = torch.device(spec)
    except RuntimeError:  # torch's message lists every backend it knows: one line instead
        raise ValueError(f"unknown device {spec!r}; expected 'auto', 'cpu' or 'cuda[:i]'") from None
    if dev.type == "cuda" and not avail:
        raise ValueError(f"device {spec!r} requested but CUDA is not available")
    if (
        dev.type == "cuda"
        and cuda_available is None
        and (dev.index or 0) >= torch.cuda.device_count()
    ):
        raise ValueError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA device(s)")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {spec!r}; expected 'auto', 'cpu' or 'cuda[:i]'")
    return dev
