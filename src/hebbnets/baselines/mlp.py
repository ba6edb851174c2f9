"""Multi-layer perceptron baseline: flattened input (and its mask) -> flattened target."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from ..models import register
from ..training import BackpropModel, TrainConfig

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


@dataclass
class MLPConfig(TrainConfig):
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "gelu"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"hidden: expected a non-empty tuple of positive ints, got {self.hidden!r}")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation: unknown {self.activation!r}; expected one of {sorted(_ACTIVATIONS)}")


@register("mlp")
class MLP(BackpropModel):
    """MLP trained by backprop with Adam. With an input mask the mask is appended to the
    (zero-filled) input so the network knows which entries are missing."""

    Config = MLPConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        d_in = spec.x_dim * (2 if spec.x_masked else 1)
        d_out = spec.n_classes if spec.is_classification else spec.y_dim
        layers: list[nn.Module] = []
        for h in cfg.hidden:
            layers += [nn.Linear(d_in, h), _ACTIVATIONS[cfg.activation]()]
            d_in = h
        layers.append(nn.Linear(d_in, d_out))
        self.net = nn.Sequential(*layers)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        spec = self.spec
        flat = x.reshape(x.shape[0], -1)  # (N, x_dim)
        if spec.x_masked:
            m = torch.ones_like(flat) if x_mask is None else x_mask.reshape(x.shape[0], -1)
            flat = torch.cat([flat * m, m], dim=1)  # (N, 2 x_dim)
        elif x_mask is not None:
            raise ValueError("x_mask: this model was trained without an input mask")
        out = self.net(flat)
        return out if spec.is_classification else out.reshape(x.shape[0], *spec.y_shape)
