"""Baselines trained by backprop, all through the one loop in ``hebbnets.training``."""
from ..training import BackpropModel, TrainConfig, carve_validation, supervised_loss, train_backprop
from .mlp import MLP, MLPConfig
from . import cnn, factorized, mamba, transformer, vae  # noqa: F401  (register "cnn", "factorized", "mamba", "transformer", "vae")
from . import autoencoders, gnn  # noqa: F401  (register "ae", "conv_ae", "gnn")
from . import centroid, lstm, sparse_transformer  # noqa: F401  (register "centroid", "lda", "lstm", "sparse_transformer")
from . import set_mlp, window_extrapolators  # noqa: F401  (register "set_mlp", "window_linear", "system_ridge")
from . import linear_codes  # noqa: F401  (register "pca", "dict_learning")

__all__ = [
    "BackpropModel",
    "MLP",
    "MLPConfig",
    "TrainConfig",
    "carve_validation",
    "supervised_loss",
    "train_backprop",
]
