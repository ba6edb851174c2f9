"""Vector Networks: rank-1 atom layers, batched FISTA inference, Atomic-Hebb learning."""
from .fista import (
    FistaResult, LassoTerm, choose_product_form, fista, fista_gram, ista_reference, keep_topk, kkt_violation,
    largest_eigenvalue, lasso_optimality_residual, masked_lasso, soft_threshold,
)
from .applied import AppliedAtomLayer, AppliedAtomStack, AppliedInference
from .applied_model import AppliedVN, AppliedVNConfig
from .applied_set import AppliedSetConfig, AppliedSetVN
from .matrix import (
    MatrixAtomLayer, MatrixInference, MatrixVN, MatrixVNConfig, PrivatePairLayer, lasso_reference,
)
from .network import AtomLayer, Inference, VNConfig, VectorNetwork
from .pairs import PairAtomLayer, PairVN, PairVNConfig, pair_atom_choice
from ._speed import matrix_inference_speed
from .amortised import AmortisedVN, LISTA, LISTAConfig  # registers "lista"

__all__ = [
    "AmortisedVN",
    "AppliedAtomLayer",
    "AppliedAtomStack",
    "AppliedInference",
    "AppliedSetConfig",
    "AppliedSetVN",
    "AppliedVN",
    "AppliedVNConfig",
    "AtomLayer",
    "FistaResult",
    "LassoTerm",
    "Inference",
    "LISTA",
    "LISTAConfig",
    "MatrixAtomLayer",
    "MatrixInference",
    "MatrixVN",
    "MatrixVNConfig",
    "PairAtomLayer",
    "PairVN",
    "PairVNConfig",
    "PrivatePairLayer",
    "VNConfig",
    "VectorNetwork",
    "choose_product_form",
    "fista",
    "fista_gram",
    "ista_reference",
    "keep_topk",
    "kkt_violation",
    "lasso_optimality_residual",
    "lasso_reference",
    "masked_lasso",
    "matrix_inference_speed",
    "pair_atom_choice",
    "largest_eigenvalue",
    "soft_threshold",
]
