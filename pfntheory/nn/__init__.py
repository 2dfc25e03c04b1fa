"""The learned side (PyTorch): kernel attention, the transformer TF / TF^pr and its head.

Modules: :mod:`~pfntheory.nn.attention` (eqn:std attn, Attn^na), :mod:`~pfntheory.nn.model`
(eqn:tabPFN attn, thm:TFdoPPD, supp-eqn:weights, sec:generalization), :mod:`~pfntheory.nn.head`
(Sec. 4 psi head, eqn:tabPFN mlp). Task samplers and training live in ``priors``, ``train`` and
``evaluate`` (imported from their modules, not re-exported here, to keep this import light).
"""

from .attention import (
    SCORES,
    kernel_attention,
    masked_attention_dense,
    scaled_kernel_attention,
    score_matrix,
    score_vector,
)
from .handset import load_handset
from .head import HEADS, MLPHead, PsiHead, positive_tau
from .model import (
    MODES,
    DenseTransformer,
    PFNOutput,
    PFNTransformer,
    default_eta,
    select_device,
)

__all__ = [
    "SCORES",
    "HEADS",
    "MODES",
    "kernel_attention",
    "scaled_kernel_attention",
    "masked_attention_dense",
    "score_matrix",
    "score_vector",
    "PsiHead",
    "MLPHead",
    "positive_tau",
    "PFNOutput",
    "PFNTransformer",
    "DenseTransformer",
    "default_eta",
    "load_handset",
    "select_device",
]
