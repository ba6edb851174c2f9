"""Mamba baseline (``mambapy.mamba``, pure PyTorch, parallel scan).

Tokens come from the transformer's ``SequenceLayout`` (a missing scalar token is replaced by
a learned mask embedding) and are read out by its ``SequenceHead``. Mamba is causal; with
``bidirectional=True`` (default) a second stack reads the reversed sequence and the two are
summed, so a masked segment sees context on both sides, as the transformer does.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from mambapy.mamba import Mamba as _MambaStack
from mambapy.mamba import MambaConfig as _MambaStackConfig
from torch import nn

from .._model import DataSpec
from .._validation import check_int_fields
from ..models import register
from ..training import BackpropModel, TrainConfig
from .transformer import READOUTS, SequenceHead, SequenceLayout, embed_tokens


@dataclass
class MambaConfig(TrainConfig):
    d_model: int = 32
    n_layers: int = 2
    d_state: int = 16
    expand_factor: int = 2
    d_conv: int = 4
    bidirectional: bool = True
    readout: str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("d_model", "n_layers", "d_state", "expand_factor", "d_conv"))
        if not isinstance(self.bidirectional, bool):
            raise ValueError(f"bidirectional: expected a bool, got {self.bidirectional!r}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout: unknown {self.readout!r}; expected one of {list(READOUTS)}")


@register("mamba")
class Mamba(BackpropModel):
    """Embedding -> (bidirectional) Mamba stack -> LayerNorm -> ``SequenceHead``."""

    Config = MambaConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self.layout = SequenceLayout(spec)
        self.embed = nn.Linear(self.layout.features, cfg.d_model)
        self.mask_token = nn.Parameter(0.02 * torch.randn(cfg.d_model))

        def stack() -> nn.Module:
            return _MambaStack(_MambaStackConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, d_state=cfg.d_state,
                                                 expand_factor=cfg.expand_factor, d_conv=cfg.d_conv, pscan=True))

        self.forward_stack = stack()
        self.backward_stack = stack() if cfg.bidirectional else None
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = SequenceHead(cfg.readout, cfg.d_model, spec, self.layout.length)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        h = embed_tokens(self, x, x_mask)  # (N, L, D)
        out = self.forward_stack(h)  # (N, L, D)
        if self.backward_stack is not None:
            out = out + self.backward_stack(h.flip(1)).flip(1)  # right-to-left context
        return self.head(self.norm(out))
