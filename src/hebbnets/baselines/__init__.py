"""Baselines trained by backprop, all through the one loop in ``_trainer``."""
from ._trainer import BackpropModel, TrainConfig, carve_validation, supervised_loss, train_backprop
from .mlp import MLP, MLPConfig

__all__ = [
    "BackpropModel",
    "MLP",
    "MLPConfig",
    "TrainConfig",
    "carve_validation",
    "supervised_loss",
    "train_backprop",
]
