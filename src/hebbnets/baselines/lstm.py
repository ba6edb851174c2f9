"""LSTM sequence classifier (the RSGN paper's baseline): ``nn.LSTM(D, hidden, layers,
bidirectional)`` over ``(N, T, D)`` inputs; the last layer's final forward and backward hidden
states are concatenated and fed to a linear head. With the paper's settings (hidden 128, 2
layers, bidirectional, D = 32) it has 566,292 parameters for 20 classes and 563,722 for 10.
"""
from __future__ import annotations

from .._validation import check_int_fields

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from ..models import register
from ..training import BackpropModel, TrainConfig


@dataclass
class LSTMConfig(TrainConfig):
    hidden: int = 128
    layers: int = 2
    bidirectional: bool = True
    dropout: float = 0.0  # between LSTM layers (PyTorch semantics)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("hidden", "layers"))
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout!r}")


@register("lstm")
class LSTMModel(BackpropModel):
    """Inputs ``(N, T, D)`` (an ``(N, D)`` input is read as a length-D sequence of scalars).
    With an input mask the mask is appended as extra input features (zero-filled input)."""

    Config = LSTMConfig

    def _build(self, spec: DataSpec) -> None:
        if len(spec.x_shape) > 2:
            raise ValueError(f"x: the LSTM takes (N, T, D) or (N, T) inputs, got per-sample shape {spec.x_shape}")
        cfg = self.config
        d_in = (spec.x_shape[-1] if len(spec.x_shape) == 2 else 1) * (2 if spec.x_masked else 1)
        d_out = spec.n_classes if spec.is_classification else spec.y_dim
        self.lstm = nn.LSTM(d_in, cfg.hidden, cfg.layers, batch_first=True, bidirectional=cfg.bidirectional,
                            dropout=cfg.dropout if cfg.layers > 1 else 0.0)
        self.head = nn.Linear(cfg.hidden * (2 if cfg.bidirectional else 1), d_out)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        spec = self.spec
        if x.ndim == 2:
            x = x[..., None]  # (N, T, 1)
            x_mask = None if x_mask is None else x_mask[..., None]
        if spec.x_masked:
            m = torch.ones_like(x) if x_mask is None else x_mask
            x = torch.cat([x * m, m], dim=-1)  # (N, T, 2D)
        elif x_mask is not None:
            raise ValueError("x_mask: this model was trained without an input mask")
        _, (h_n, _) = self.lstm(x)  # h_n: (layers * dirs, N, H)
        dirs = 2 if self.config.bidirectional else 1
        last = h_n[-dirs:].transpose(0, 1).reshape(x.shape[0], -1)  # (N, dirs * H): forward then backward
        out = self.head(last)
        return out if spec.is_classification else out.reshape(x.shape[0], *spec.y_shape)
