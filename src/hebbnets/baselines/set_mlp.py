"""``set_mlp``: the MLP counterpart of ``vn_applied_set`` (the same features, no applied weight).

Same layout, content encoder (``hebbnets.tasks.nbody_windows.BodyEncoder``) and rows as
``vn_applied_set``: per body and step a learned content ``z_it``; the window's rows are
``(z_it, change_it)``. Where the VN infers one sparse code per system and applies its effective
weight to the last content, this model summarises the window as a conditional neural process
does and reads the change out with an MLP::

    h = mean over real window rows of phi_row([z_it, change_it])      (per system)
    change_i = phi_head([z_i,last, h])

trained end to end by backprop (``hebbnets.training``) on the supervised loss.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._model import DataSpec
from .._validation import check_int
from ..models import register
from ..training import BackpropModel, Callback, TrainConfig
from ..tasks.nbody_windows import Standardise, body_mask, body_set_encoder, mlp, window_changes, window_summary


@dataclass
class SetMLPConfig(TrainConfig):
    content: int = 32  # encoder output size (as vn_applied_set)
    hidden: int = 64  # width of the encoder and of both MLPs
    summary: int = 32  # size of the system summary h
    position_dims: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("content", "hidden", "summary", "position_dims"):
            check_int(getattr(self, name), name)


@register("set_mlp")
class SetMLP(BackpropModel):
    """Window summary + MLP readout on the ``vn_applied_set`` features (module docstring)."""

    Config = SetMLPConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self.d, self.encoder = body_set_encoder(spec, "set_mlp", cfg.content, cfg.hidden, cfg.position_dims)
        self.phi_row = mlp(cfg.content + self.d, cfg.hidden, cfg.summary)
        self.phi_head = mlp(cfg.content + cfg.summary, cfg.hidden, self.d)
        self.register_buffer("change_std", torch.ones(self.d))
        self.register_buffer("standardised", torch.zeros((), dtype=torch.bool))

    def training_callbacks(self) -> list[Callback]:
        return [Standardise()]

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        body = body_mask(x, x_mask)  # (B, M)
        z = self.encoder(x, body)  # (B, M, W, n)
        change = window_changes(x, self.d) / self.change_std  # (B, M, W-1, D)
        h = window_summary(self.phi_row, z, change, body)  # (B, summary)
        last = z[:, :, -1]  # (B, M, n)
        out = self.phi_head(torch.cat([last, h[:, None].expand(-1, last.shape[1], -1)], -1))
        return out * body[..., None]


__all__ = ["SetMLP", "SetMLPConfig"]
