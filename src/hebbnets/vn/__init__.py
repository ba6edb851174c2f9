"""Vector Networks: rank-1 atom layers, batched FISTA inference, Atomic-Hebb learning."""
from .fista import (
    FistaResult, fista, fista_gram, ista_reference, keep_topk, kkt_violation, largest_eigenvalue, lasso_optimality_residual,
    soft_threshold,
)
from .network import AtomLayer, Inference, VNConfig, VectorNetwork
from .amortised import AmortisedVN, LISTA, LISTAConfig  # registers "lista"

__all__ = [
    "AmortisedVN",
    "AtomLayer",
    "FistaResult",
    "Inference",
    "LISTA",
    "LISTAConfig",
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
