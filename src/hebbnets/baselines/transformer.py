"""Transformer encoder baseline: tokens with positions and a learned mask token.

Input layout (``SequenceLayout``): a per-sample input ``(L,)`` is a sequence of ``L`` scalar
tokens, ``(L, C)`` a sequence of ``L`` tokens with ``C`` features, ``(L, *rest)`` flattens
``rest`` into the features. With an input mask, a token whose features are all missing is
replaced by the mask token; partially observed tokens get their mask appended as features.

Readout (``readout`` config): ``"token"`` maps every token to its slice of the target (needs
``y_shape[0] == L``; a ``(L,)`` target gets one value per token), ``"pool"`` mean-pools the tokens
into one vector mapped to the flattened target or to class logits; ``"auto"`` picks ``"token"``
when the target is a regression target aligned with the sequence, else ``"pool"``. Other input
layouts (e.g. image patches) can be added as another ``SequenceLayout`` without touching the
encoder or the trainer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from .._validation import check_int_fields
from ..models import register
from ..training import BackpropModel, TrainConfig

READOUTS = ("auto", "token", "pool")
POSITIONS = ("sinusoidal", "learned", "none")
MISSING = ("mask_token", "padding")
ACTIVATIONS = ("gelu", "relu")


class SequenceLayout:
    """Turns a batch ``x`` (N, *x_shape) and its mask into tokens (N, L, F) and a token mask."""

    def __init__(self, spec: DataSpec):
        if len(spec.x_shape) < 1:
            raise ValueError(f"x: a sequence model needs per-sample inputs of rank >= 1, got {spec.x_shape}")
        self.length = spec.x_shape[0]
        self.channels = math.prod(spec.x_shape[1:]) if len(spec.x_shape) > 1 else 1
        self.masked = spec.x_masked
        # a scalar token is either fully seen or missing (mask token); wider tokens keep their mask
        self.features = self.channels * (2 if self.masked and self.channels > 1 else 1)

    def __call__(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns tokens (N, L, F) and ``missing`` (N, L) bool (None when unmasked)."""
        n = x.shape[0]
        tok = x.reshape(n, self.length, self.channels)  # (N, L, C)
        if not self.masked:
            if x_mask is not None:
                raise ValueError("x_mask: this model was trained without an input mask")
            return tok, None
        m = torch.ones_like(tok) if x_mask is None else x_mask.reshape(n, self.length, self.channels)  # (N, L, C)
        tok = tok * m  # missing entries carry no value
        if self.channels > 1:
            tok = torch.cat([tok, m], dim=-1)  # (N, L, 2C)
        missing = m.amax(dim=-1) == 0  # (N, L) no feature observed
        return tok, missing


def resolve_readout(readout: str, spec: DataSpec, length: int) -> str:
    """``"auto"`` -> ``"token"`` for sequence-aligned regression targets, else ``"pool"``."""
    aligned = not spec.is_classification and len(spec.y_shape) >= 1 and spec.y_shape[0] == length
    if readout == "auto":
        return "token" if aligned else "pool"
    if readout == "token" and not aligned:
        raise ValueError(f"readout: 'token' needs a regression target with y_shape[0] == {length}, got {spec.y_shape}")
    return readout


class SequenceHead(nn.Module):
    """Token-wise or mean-pooled linear readout of encoded tokens (N, L, D)."""

    def __init__(self, readout: str, d_model: int, spec: DataSpec, length: int):
        super().__init__()
        self.readout = resolve_readout(readout, spec, length)
        self.spec = spec
        if self.readout == "token":
            self.per_token = math.prod(spec.y_shape[1:]) if len(spec.y_shape) > 1 else 1
            self.proj = nn.Linear(d_model, self.per_token)
        else:
            self.proj = nn.Linear(d_model, spec.n_classes if spec.is_classification else spec.y_dim)

    def forward(self, h: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        """``h`` (N, L, D); ``padding`` (N, L) bool marks tokens left out of the mean pool."""
        n = h.shape[0]
        if self.readout == "token":
            return self.proj(h).reshape(n, *self.spec.y_shape)  # (N, *y_shape)
        if padding is None:
            pooled = h.mean(dim=1)  # (N, D)
        else:
            keep = (~padding).to(h.dtype)[..., None]  # (N, L, 1)
            pooled = (h * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        out = self.proj(pooled)  # (N, n_classes or y_dim)
        return out if self.spec.is_classification else out.reshape(n, *self.spec.y_shape)


def embed_tokens(model: nn.Module, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
    """Tokens of ``x`` through ``model.layout`` and ``model.embed``, with ``model.mask_token`` in
    place of every token whose input entries are missing: ``(N, L, D)``."""
    tok, missing = model.layout(x, x_mask)  # (N, L, F), (N, L)
    h = model.embed(tok)  # (N, L, D)
    if missing is not None:
        h = torch.where(missing[..., None], model.mask_token.expand_as(h), h)
    return h


@dataclass
class TransformerConfig(TrainConfig):
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    dropout: float = 0.0
    readout: str = "auto"
    # fixed sinusoidal table plus a learned offset, "learned" only, or "none" (a set of tokens:
    # the encoder is then equivariant to token order)
    positions: str = "sinusoidal"
    # a token whose entries are all missing is either a query to fill in ("mask_token": it gets
    # the learned mask embedding and is attended to) or absent ("padding": no other token attends
    # to it and the pooled readout skips it, e.g. padded bodies of an N-body system)
    missing: str = "mask_token"
    norm_first: bool = True  # pre-LN; False = post-LN, as in "Attention is all you need"
    final_norm: bool = True  # a LayerNorm after the last layer (pre-LN stacks need it)
    activation: str = "gelu"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("d_model", "n_heads", "n_layers", "d_ff"))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads: must divide d_model={self.d_model}, got {self.n_heads}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout!r}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout: unknown {self.readout!r}; expected one of {list(READOUTS)}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions: unknown {self.positions!r}; expected one of {list(POSITIONS)}")
        if self.missing not in MISSING:
            raise ValueError(f"missing: unknown {self.missing!r}; expected one of {list(MISSING)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation: unknown {self.activation!r}; expected one of {list(ACTIVATIONS)}")
        for name in ("norm_first", "final_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: expected a bool, got {getattr(self, name)!r}")


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """The fixed table of Vaswani et al.: (length, d_model), sin on even and cos on odd dims."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]  # (L, 1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (D/2,)
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: d_model // 2])
    return table


@register("transformer")
class Transformer(BackpropModel):
    """Transformer encoder over the tokens of ``SequenceLayout``: pre-LN (default) or post-LN
    layers, absolute positions (fixed sinusoidal + learned, learned only, or none), missing tokens
    as a learned mask token or as padding, and a ``SequenceHead`` readout.

    The RSGN paper's baseline (docs/rsgn.md) is ``positions="none", norm_first=False,
    final_norm=False, activation="relu", dropout=0.1, readout="pool"`` with ``d_model=128,
    n_heads=4, d_ff=512``: 403,348 parameters with 2 layers on the hierarchical task.
    """

    Config = TransformerConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self.layout = SequenceLayout(spec)
        if cfg.missing == "padding" and not spec.x_masked:
            raise ValueError("missing: 'padding' needs an input mask (x_mask) to know the padded tokens")
        self.embed = nn.Linear(self.layout.features, cfg.d_model)
        if cfg.positions != "none":
            self.pos = nn.Parameter(0.02 * torch.randn(1, self.layout.length, cfg.d_model))
            # a fixed table gives every position a distinct code from the first step (learned
            # positions start near zero, and a masked gap cannot be located without them)
            fixed = sinusoidal_positions(self.layout.length, cfg.d_model) if cfg.positions == "sinusoidal" else \
                torch.zeros(self.layout.length, cfg.d_model)
            self.register_buffer("pos_fixed", fixed[None], persistent=False)  # (1, L, D)
        if cfg.missing == "mask_token" and spec.x_masked:  # unused (and uncounted) without a mask
            self.mask_token = nn.Parameter(0.02 * torch.randn(cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout,
                                           activation=cfg.activation, batch_first=True, norm_first=cfg.norm_first)
        # nested tensors would return padded tokens as zeros in eval mode only; keep both modes alike
        self.encoder = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.final_norm else nn.Identity()
        self.head = SequenceHead(cfg.readout, cfg.d_model, spec, self.layout.length)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        padding = None
        if self.config.missing == "padding":
            tok, padding = self.layout(x, x_mask)  # (N, L, F), (N, L)
            # a sample with every token padded would attend to nothing (NaN); let it see itself
            padding = padding & ~padding.all(dim=1, keepdim=True)
            h = self.embed(tok)  # (N, L, D)
        else:
            h = embed_tokens(self, x, x_mask)  # (N, L, D)
        if self.config.positions != "none":
            h = h + self.pos + self.pos_fixed
        h = self.encoder(h, src_key_padding_mask=padding)  # (N, L, D)
        return self.head(self.norm(h), padding)
