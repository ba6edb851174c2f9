"""Vector Networks: rank-1 atom layers, batched FISTA inference, Atomic-Hebb learning."""
from .fista import (
    FistaResult, fista, fista_gram, ista_reference, keep_topk, kkt_violation, largest_eigenvalue, lasso_optimality_residual,
    soft_threshold,
)
from .applied import AppliedAtomLayer, AppliedAtomStack, AppliedInference
from .applied_model import AppliedVN, AppliedVNConfig
from .applied_set import AppliedSetConfig, AppliedSetVN
from .network import AtomLayer, Inference, VNConfig, VectorNetwork

__all__ = [
    "AppliedAtomLayer",
    "AppliedAtomStack",
    "AppliedInference",
    "AppliedSetConfig",
    "AppliedSetVN",
    "AppliedVN",
    "AppliedVNConfig",
    "AtomLayer",
    "FistaResult",
    "Inference",
    "VNConfig",
    "VectorNetwork",
    "fista",
    "fista_gram",
    "ista_reference",
    "keep_topk",
    "kkt_violation",
    "lasso_optimality_residual",
    "largest_eigenvalue",
    "soft_threshold",
]
