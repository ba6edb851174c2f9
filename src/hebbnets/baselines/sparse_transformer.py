"""Sparse Transformer baseline of the RSGN paper (docs/rsgn.md §4.3): fixed local + strided
attention, post-LN, no positional encoding.

Each layer is ``h <- LN(h + MHA(h, mask))``, then ``h <- LN(h + W2 GELU(W1 h))``, without dropout.
Token ``i`` may attend to token ``j`` when ``|i - j| <= window`` or ``j % stride == 0`` ("local"
plus "strided global" columns). Tokens come from the shared ``SequenceLayout`` / ``embed_tokens``
of the Transformer baseline and are read out by its ``SequenceHead`` (mean pool for classes).
With the paper's sizes (``d_model=128, n_heads=4, d_ff=512``, 2 layers, 32 input features, 20
classes) it has 403,348 parameters, the same as the paper's dense Transformer.
"""
from __future__ import annotations

from .._validation import check_int_fields

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._model import DataSpec
from ..models import register
from ..training import BackpropModel, TrainConfig
from .transformer import SequenceHead, SequenceLayout, embed_tokens


@dataclass
class SparseTransformerConfig(TrainConfig):
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 512
    window: int = 2  # local band: |i - j| <= window
    stride: int = 4  # strided global columns: j % stride == 0
    readout: str = "pool"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("d_model", "n_heads", "n_layers", "d_ff", "stride"))
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 0:
            raise ValueError(f"window: expected an int >= 0, got {self.window!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads: must divide d_model={self.d_model}, got {self.n_heads}")
        if self.readout not in ("auto", "token", "pool"):
            raise ValueError(f"readout: unknown {self.readout!r}; expected one of ['auto', 'token', 'pool']")


def local_strided_mask(length: int, window: int, stride: int) -> torch.Tensor:
    """``(L, L)`` bool, True where query ``i`` may attend to key ``j``: ``|i - j| <= window`` or
    ``j % stride == 0``. Every row allows at least ``j = i``, so no softmax row is empty."""
    idx = torch.arange(length)
    local = (idx[:, None] - idx[None, :]).abs() <= window  # (L, L)
    strided = (idx % stride == 0)[None, :].expand(length, length)  # (L, L)
    return local | strided


class SparseLayer(nn.Module):
    """One post-LN layer: masked multi-head attention, then a GELU feed-forward block."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, h: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
        """``h`` (N, L, D); ``blocked`` (L, L) bool, True = not allowed (PyTorch's convention)."""
        a, _ = self.attn(h, h, h, attn_mask=blocked, need_weights=False)  # (N, L, D)
        h = self.norm1(h + a)
        return self.norm2(h + self.ff2(F.gelu(self.ff1(h))))


@register("sparse_transformer")
class SparseTransformer(BackpropModel):
    """Local + strided attention encoder (see module docstring). Inputs as ``transformer``;
    a missing token (masked input) gets a learned mask embedding."""

    Config = SparseTransformerConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self.layout = SequenceLayout(spec)
        self.embed = nn.Linear(self.layout.features, cfg.d_model)
        if spec.x_masked:  # only masked inputs need it; the paper's count has none
            self.mask_token = nn.Parameter(0.02 * torch.randn(cfg.d_model))
        self.layers = nn.ModuleList(SparseLayer(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.head = SequenceHead(cfg.readout, cfg.d_model, spec, self.layout.length)
        # built once (the author rebuilt it with a Python double loop in every forward)
        allowed = local_strided_mask(self.layout.length, cfg.window, cfg.stride)
        self.register_buffer("blocked", ~allowed, persistent=False)  # (L, L)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        h = embed_tokens(self, x, x_mask)  # (N, L, D)
        for layer in self.layers:
            h = layer(h, self.blocked)
        return self.head(h)
