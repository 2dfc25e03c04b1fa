"""Fused kernel attention of the solver layers: the kernel is formed and consumed tile by tile.

:func:`pfntheory.nn.attention.scaled_kernel_attention` computes, per solver layer, ``out = P v``
with ``P_ij = kappa(s * x_i, s * x_j)`` over every token ``i`` and the ``n`` context keys ``j``.
The eager path (:class:`~pfntheory.nn.attention._ScaledKernelMatVec`) writes the ``(B, n+1, n)``
kernel to memory, reads it back for the products, and the backward pass does it again. The fused
operator here computes the log-kernel, its ``exp`` and the products one vector (16 float32 lanes
with AVX-512) at a time in registers (C++ against torch's vectorised math,
``_fused_src/kernel_attention.cpp``), so the kernel never leaves them; the backward pass recomputes
it the same way (saved: ``x, s, v`` and the output):

* rbf ``z_ij = -1/2 sum_k s_k^2 (x_ik - x_jk)^2``, softmax ``z_ij = sum_k s_k^2 x_ik x_jk``,
  ``P = exp(z)``, ``out_i = sum_j P_ij v_j`` (lanes over queries);
* with ``g = dL/dout`` and ``E_ij = P_ij (g_i . v_j)``: ``dv_j = sum_i P_ij g_i`` and
  ``ds_k = -s_k sum_ij E_ij (x_ik - x_jk)^2`` (rbf), ``2 s_k sum_ij E_ij x_ik x_jk`` (softmax)
  (lanes over keys), summed in float64 per key vector; for rbf at ``d >= 8`` the sum is split as
  the eager path splits it, ``sum_i x_ik^2 (g_i . out_i) + sum_j x_jk^2 (v_j . dv_j) - 2 sum_ij
  E_ij x_ik x_jk`` (one vector operation per coordinate less). No gradient flows to ``x`` (the
  data), as on the eager path.

More operators run the same loops: :func:`solver_stack`, every solver layer of
:func:`pfntheory.nn.solver.solver_layers` (values, ``P v`` and the skip term) for one instance after
another in one call, with its backward pass (saved: each layer's input state and ``P v``, never a
kernel), which the model uses whenever it can, in the order of summation its caller passes
(:data:`NUMERICS`: ``symmetric`` without autograd, ``stack_forward_sym``, each context-context
kernel entry once; ``pairwise``, opt-in for training, ``stack_forward_pairs``/
``stack_backward_pairs``, each such entry once in the forward and the backward pass,
``_fused_src/stack_pairs.cpp``); ``gram``/``gram_upper``, the rbf
Gram matrix of :mod:`pfntheory.nn.fast_oracle`, ``matvec_sym`` its symmetric mat-vec, and
``chol_``/``chol_lower_``, Cholesky factors in place by the LAPACK routine of torch's own library
(bitwise ``torch.linalg.cholesky_ex``'s, without its copy; :mod:`pfntheory.nn.priors` too), and
``gp_draw``. Every call of the library goes through a function of this module.

The rbf distance is taken as differences (never below 0) rather than the eager path's expansion
``a.b - |a|^2/2 - |b|^2/2``, except in the forward pass at ``d >= 8``, which takes the expansion
clamped at 0 as the eager path does (one FMA per coordinate instead of two operations); the exponent
is taken in base 2 (``log2 e`` folded into the scale); float32 ``2^w`` is an inline polynomial
(about 1 ulp; AVX-512's ``scalef`` applies ``2^k``, so subnormal results come out as ``torch.exp``'s
do), float64 Sleef's 1-ulp ``exp2``. The two paths therefore agree to float round-off
(tests/test_fused_attention.py), not bitwise. Over that test's grid the float32 results are as close
to float64 as the eager path's (median ratio of the errors 0.95; largest relative error 2.0e-5
fused, 3.1e-5 eager), float64 within 1e-13.

Build and fallback
------------------
The extension is compiled on first use (``torch.utils.cpp_extension.load``, ninja and the C++
compiler; about a minute on a loaded 2-core machine) into a cache folder
(``$PFNTHEORY_FUSED_CACHE``, else ``$XDG_CACHE_HOME/pfntheory/fused``, else
``~/.cache/pfntheory/fused``) under a name that hashes the source, the flags, torch's version and
the CPU capability, and later processes only load the cached library. Each build runs in a private
temporary folder and its library is moved into the cache atomically, so concurrent first uses at
worst compile twice and a killed build leaves no lock behind. When the extension cannot be had (no
compiler or ninja, a failed build, a non-CPU tensor, an unsupported dtype) or ``PFNTHEORY_FUSED=0``,
:func:`available` is False and callers use the eager path; the reason is logged once at debug
level. ``PFNTHEORY_FUSED_ISA`` (``AVX512``, ``AVX2``, ``DEFAULT``) overrides the instruction set
taken from ``torch.backends.cpu.get_cpu_capability()`` (a separate cached build; a capability other
than AVX-512 and AVX2 builds ``DEFAULT``, :func:`built_isa`, which a run records). Both switches
accept only these values (``PFNTHEORY_FUSED``: ``0`` or ``1``; unset or empty is the default):
any other, ``no``, ``false``, ``avx2``, is a ValueError naming the variable
(:func:`check_environment`), never a silent choice. The loop runs on
the calling thread (no OpenMP): training runs use one thread (with more
torch threads the eager path's matrix products use them and the fused operator does not).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import torch

#: Nothing exported: the operator is internal to
#: :func:`pfntheory.nn.attention.scaled_kernel_attention`; :func:`available`,
#: :func:`unavailable_reason` and :func:`enabled` (use the operator or the eager path, which agree
#: to round-off; decides no numerics of a result by itself: the run records which path it took,
#: :mod:`pfntheory.nn.arithmetic`) are switches for tests and benchmarks
#: (``available`` may compile, which a contract test's 30 s call budget does not allow).
__all__: list[str] = []

log = logging.getLogger(__name__)

#: Every ``.cpp`` here is one source of the library; ``.h`` files are shared by them. The build
#: name hashes all of them.
_SOURCE_DIR = Path(__file__).parent / "_fused_src"


def _sources() -> list[Path]:
    return sorted(_SOURCE_DIR.glob("*.cpp"))


_NAMESPACE = "pfntheory_fused"
_state: dict = {"tried": False, "ok": False, "reason": None, "enabled": True}


#: ``$PFNTHEORY_FUSED``: ``1`` (the default) or ``0`` (the extension off); unset or empty is ``1``.
FUSED_ENV = "PFNTHEORY_FUSED"
FUSED_VALUES = ("0", "1")
#: ``$PFNTHEORY_FUSED_ISA``: the instruction set of the build (unset or empty: torch's
#: ``get_cpu_capability()``, mapped onto these three).
ISA_ENV = "PFNTHEORY_FUSED_ISA"
ISAS = ("AVX512", "AVX2", "DEFAULT")


def _switch(name: str, values: tuple[str, ...]) -> str | None:
    """The value of the environment switch ``name`` (None: unset or empty); any other value than
    ``values`` is refused naming the variable (``PFNTHEORY_FUSED=no`` must not leave the fused
    path on)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    if raw not in values:
        raise ValueError(
            f"environment variable {name}={raw!r} is not one of {', '.join(values)} "
            "(or unset); set one of those or unset it"
        )
    return raw


def check_environment() -> None:
    """Refuse a value of ``$PFNTHEORY_FUSED`` or ``$PFNTHEORY_FUSED_ISA`` other than those
    documented (module docstring), with a one-line ValueError naming the variable."""
    _switch(FUSED_ENV, FUSED_VALUES)
    _switch(ISA_ENV, ISAS)


def isa_of(capability) -> str:
    """The instruction set a build takes for a CPU capability or ``$PFNTHEORY_FUSED_ISA`` value:
    ``AVX512`` and ``AVX2`` as such, anything else ``DEFAULT``."""
    return capability if capability in ("AVX512", "AVX2") else "DEFAULT"


def built_isa() -> str:
    """The instruction set the extension is (or would be) built for in this process: the checked
    ``$PFNTHEORY_FUSED_ISA``, else torch's CPU capability (:func:`isa_of`). This is what a run
    records (:mod:`pfntheory.nn.arithmetic`), never the variable as typed."""
    return isa_of(_switch(ISA_ENV, ISAS) or str(torch.backends.cpu.get_cpu_capability()))


def _flags() -> list[str]:
    """Compiler flags: the vector width of torch's own dispatch on this CPU (AVX2 or AVX-512)."""
    flags = ["-O3", "-fno-math-errno"]
    cap = built_isa()
    if cap == "AVX512":
        flags += ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-mavx2"]
        flags += ["-DCPU_CAPABILITY=AVX512", "-DCPU_CAPABILITY_AVX512"]
    elif cap == "AVX2":
        flags += ["-mavx2", "-mfma", "-DCPU_CAPABILITY=AVX2", "-DCPU_CAPABILITY_AVX2"]
    else:
        flags += ["-DCPU_CAPABILITY=DEFAULT", "-DCPU_CAPABILITY_DEFAULT"]
    return flags


def _cache_dir() -> Path:
    env = os.environ.get("PFNTHEORY_FUSED_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pfntheory" / "fused"


def _build_name(flags: list[str]) -> str:
    h = hashlib.sha256()
    for path in sorted(_SOURCE_DIR.glob("*.cpp")) + sorted(_SOURCE_DIR.glob("*.h")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(" ".join(flags).encode())
    h.update(torch.__version__.encode())
    return f"pfntheory_fused_{h.hexdigest()[:16]}"


def _compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "c++"))


def _cached_library() -> Path:
    """Where this source's build for this CPU and torch is cached."""
    return _cache_dir() / f"{_build_name(_flags())}.so"


def _load() -> None:
    """Load the cached library, or build it; raises with the reason when neither works."""
    flags = _flags()
    name = _build_name(flags)
    cache = _cache_dir()
    lib = cache / f"{name}.so"
    if lib.is_file():
        try:
            torch.ops.load_library(str(lib))
            return
        except OSError as exc:  # a damaged cached library: rebuild it
            log.debug("cached %s does not load (%s), rebuilding", lib, exc)
            lib.unlink(missing_ok=True)
    from torch.utils import cpp_extension

    if _compiler() is None:
        raise RuntimeError(f"no C++ compiler ({os.environ.get('CXX', 'c++')}) on PATH")
    if not cpp_extension.is_ninja_available():
        raise RuntimeError("ninja is not available")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=cache) as tmp:
        cpp_extension.load(
            name=name,
            sources=[str(p) for p in _sources()],
            extra_cflags=flags,
            build_directory=tmp,
            is_python_module=False,
            verbose=False,
        )  # also loads it into this process
        built = Path(tmp) / f"{name}.so"
        part = cache / f"{name}.so.{os.getpid()}.part"
        shutil.copyfile(built, part)
        os.replace(part, lib)


def available(build: bool = True) -> bool:
    """Whether the fused operator can be used now (compiling it on the first call; with
    ``build=False`` only loading a cached build, never compiling: :mod:`pfntheory.nn.priors`,
    whose draws must not wait a minute for a compiler)."""
    check_environment()  # an undocumented value is an error, never a silent choice
    if not _state["enabled"] or _switch(FUSED_ENV, FUSED_VALUES) == "0":
        return False
    if not _state["tried"] and not build and not _cached_library().is_file():
        return False
    if not _state["tried"]:
        _state["tried"] = True
        try:
            _load()
            _state["ok"] = hasattr(torch.ops, _NAMESPACE) and hasattr(
                getattr(torch.ops, _NAMESPACE), "forward"
            )
            if not _state["ok"]:
                _state["reason"] = "the library loaded but registered no operator"
        except Exception as exc:  # any failure: fall back to the eager path
            _state["ok"] = False
            _state["reason"] = f"{type(exc).__name__}: {exc}"
        if not _state["ok"]:
            log.debug(
                "fused kernel attention unavailable, using the eager path: %s", _state["reason"]
            )
    return bool(_state["ok"])


def lapack() -> bool:
    """Whether the loaded extension found LAPACK's ``potrf`` in torch's library (its ``chol_``
    operator, :mod:`pfntheory.nn.fast_oracle`); call only where :func:`available` holds."""
    if "lapack" not in _state:
        _state["lapack"] = bool(_ops().lapack())
    return bool(_state["lapack"])


def unavailable_reason() -> str | None:
    """Why the last attempt to load the extension failed (None if it did not, or was not made)."""
    return _state["reason"]


@contextlib.contextmanager
def enabled(flag: bool):
    """Use (True) or bypass (False) the fused operator inside the block (benchmarks, tests)."""
    if not isinstance(flag, bool):  # bool("no") is True: a string would silently enable it
        raise TypeError(f"flag must be True or False, got {flag!r}")
    old = _state["enabled"]
    _state["enabled"] = bool(flag)
    try:
        yield
    finally:
        _state["enabled"] = old


def supports(x: torch.Tensor, scale: torch.Tensor, v: torch.Tensor, score: str) -> bool:
    """Whether the fused operator handles these arguments (and is available)."""
    return (
        score in ("rbf", "softmax")
        and not torch.compiler.is_compiling()
        and x.dtype in (torch.float32, torch.float64)
        and x.dtype == scale.dtype == v.dtype
        and x.device.type == scale.device.type == v.device.type == "cpu"
        and x.dim() == 3
        and v.dim() == 3
        and scale.dim() == 1
        and v.shape[1] > 0
        and v.shape[-1] > 0
        and available()
    )


def _ops():
    return getattr(torch.ops, _NAMESPACE)


class _FusedScaledKernelMatVec(torch.autograd.Function):
    """``out = P v`` of :class:`~pfntheory.nn.attention._ScaledKernelMatVec`, fused; gradients for
    ``s`` and ``v`` (none for ``x``)."""

    @staticmethod
    def forward(ctx, x, s, v, rbf: bool):
        out = _ops().forward(x, s, v, rbf)
        ctx.save_for_backward(x, s, v, out)
        ctx.rbf = rbf
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        x, s, v, out = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("no gradient with respect to the token inputs x is implemented")
        ds, dv = _ops().backward(x, s, v, g.contiguous(), out, ctx.rbf)
        return None, ds, dv, None


def kernel_matvec(x: torch.Tensor, scale: torch.Tensor, v: torch.Tensor, rbf: bool) -> torch.Tensor:
    """``out = P v`` (B, T, m) with ``P_ij = kappa(scale * x_i, scale * x_j)`` over the keys
    ``j < n = v.shape[1]``; call only where :func:`supports` holds. ``x`` gets no gradient."""
    x, s, v = x.detach().contiguous(), scale.contiguous(), v.contiguous()
    if torch.is_grad_enabled() and (s.requires_grad or v.requires_grad):
        return _FusedScaledKernelMatVec.apply(x, s, v, rbf)
    return _ops().forward(x, s.detach(), v.detach(), rbf)


def stack_supports(x, scales, R, V, S, score: str) -> bool:
    """Whether :func:`solver_stack` handles these arguments (and the operator is available)."""
    ts = (x, scales, R, V, S)
    return (
        score in ("rbf", "softmax")
        and not torch.compiler.is_compiling()
        and x.dtype in (torch.float32, torch.float64)
        and all(t.dtype == x.dtype and t.device.type == "cpu" for t in ts)
        and x.dim() == 3
        and R.dim() == 3
        and 0 < R.shape[1] < x.shape[1]
        and R.shape[2] == 2
        and scales.dim() == 2
        and scales.shape[0] > 0
        and available()
    )


class _FusedSolverStack(torch.autograd.Function):
    """The ``L-1`` solver layers of :func:`pfntheory.nn.solver.solver_layers` in one operator;
    gradients for ``scales, R, V, S`` (none for ``x``). Saved: each layer's input state and its
    ``P v`` (``(B, L-1, T, 2 + m)`` numbers), never a kernel. ``pairs`` (rbf only): the pairwise
    ops, each context-context kernel entry computed once, forward and backward
    (``stack_forward_pairs``/``stack_backward_pairs``; the same saved state)."""

    @staticmethod
    def forward(ctx, x, scales, R, V, S, rbf: bool, normalised: bool, pairs: bool):
        if pairs:
            H, Hs, outs = _ops().stack_forward_pairs(x, scales, R, V, S, normalised, True)
        else:
            H, Hs, outs = _ops().stack_forward(x, scales, R, V, S, rbf, normalised, True)
        ctx.save_for_backward(x, scales, R, V, S, Hs, outs)
        ctx.rbf, ctx.normalised, ctx.pairs = rbf, normalised, pairs
        return H

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gH):
        x, scales, R, V, S, Hs, outs = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("no gradient with respect to the token inputs x is implemented")
        saved = (x, scales, R, V, S, Hs, outs, gH.contiguous())
        if ctx.pairs:
            grads = _ops().stack_backward_pairs(*saved, ctx.normalised)
        else:
            grads = _ops().stack_backward(*saved, ctx.rbf, ctx.normalised)
        return (None, *grads, None, None, None)


#: The orders of summation of :func:`solver_stack` (the fused operator's numerics), one argument
#: of the call, never a process-wide flag: ``replay`` the default stack, bitwise that of every
#: committed run; ``pairwise`` (rbf; the training runs of ``RunSpec.fast_numerics``) each kernel
#: entry between two context tokens once, in the forward and the backward pass
#: (``_fused_src/stack_pairs.cpp``); ``symmetric`` (rbf, without autograd; the evaluation,
#: :func:`pfntheory.nn.evaluate.predict`) each such entry once in a forward pass with nothing saved,
#: about 0.6 of the work at n' = 1024. The three agree to float round-off, not bitwise (another
#: order of summation; docs/speed.md). ``symmetric`` under autograd is the default stack.
NUMERICS = ("replay", "pairwise", "symmetric")


def check_numerics(numerics: str) -> str:
    """``numerics`` if it is one of :data:`NUMERICS`, else a ValueError naming it."""
    if numerics not in NUMERICS:
        raise ValueError(f"numerics must be one of {NUMERICS}, got {numerics!r}")
    return numerics


def solver_stack(x, scales, R, V, S, rbf: bool, normalised: bool, numerics: str = "replay"):
    """``H`` (B, T, 2) after the ``L-1`` solver layers (:func:`pfntheory.nn.solver.solver_layers`)
    in the order of summation ``numerics`` (:data:`NUMERICS`; the softmax score has one);
    call only where :func:`stack_supports` holds. ``x`` gets no gradient."""
    check_numerics(numerics)
    args = [x.detach().contiguous()] + [t.contiguous() for t in (scales, R, V, S)]
    pairs = rbf and numerics == "pairwise"
    if torch.is_grad_enabled() and any(t.requires_grad for t in args[1:]):
        return _FusedSolverStack.apply(*args, rbf, normalised, pairs)
    args = [t.detach() for t in args]
    if rbf and numerics == "symmetric":
        return _ops().stack_forward_sym(*args, normalised)
    if pairs:
        return _ops().stack_forward_pairs(*args, normalised, False)[0]
    return _ops().stack_forward(*args, rbf, normalised, False)[0]


# The other operators of the library, each called only here (the callers check :func:`available`,
# and :func:`lapack` for the LAPACK ones, first).


def gram(X, feat, alpha2: float, noise_var: float) -> torch.Tensor:
    """The rbf Gram matrix plus noise ``alpha^2 P + sigma^2 I`` (b, n, n), float32
    (:mod:`pfntheory.nn.fast_oracle`)."""
    return _ops().gram(X.contiguous(), feat, alpha2, noise_var)


def gram_upper(X, feat, alpha2: float, noise_var: float, out=None) -> torch.Tensor:
    """:func:`gram`'s upper triangle only (the one LAPACK's ``potrf`` reads), into ``out``."""
    return _ops().gram_upper(X.contiguous(), feat, alpha2, noise_var, out)


def chol_(A) -> torch.Tensor:
    """The Cholesky factor in place on ``A``'s upper triangle (``L^T``); returns LAPACK's info."""
    return _ops().chol_(A)


def chol_lower_(A) -> torch.Tensor:
    """The lower Cholesky factor in place, bitwise ``torch.linalg.cholesky_ex``'s; returns info."""
    return _ops().chol_lower_(A)


def matvec_sym(X, feat, V) -> torch.Tensor:
    """``P V`` (b, n, m) of the symmetric rbf kernel of ``X`` (each entry once)."""
    return _ops().matvec_sym(X.contiguous(), feat, V.contiguous())


def gp_draw(X, xq, z, f, amp: float, noise: float):
    """The fused GP draw (``_fused_src/gp_draw.cpp``, :mod:`pfntheory.nn.priors`)."""
    return _ops().gp_draw(X, xq, z, f, amp, noise)
