"""CNN baseline for image targets ``(H, W)``: a CNN decoder, or a convolutional autoencoder.

* Vector input (e.g. ``spatial2d`` decode mode: concatenated one-hot codes): an MLP maps the
  input to a ``(channels, ceil(H/4), ceil(W/4))`` feature map that two stride-2 transposed
  convolutions upsample to the image (cropped to ``H x W``).
* Image input shaped like the target (reconstruct mode): two stride-2 convolutions and a linear
  bottleneck of ``latent`` units feed the same decoder (a convolutional autoencoder).

An input mask is appended as features (vector input) or as a second channel (image input).
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


def _image_target(spec: DataSpec, model: str) -> tuple[int, int]:
    if spec.is_classification or len(spec.y_shape) != 2:
        raise ValueError(f"y: model {model!r} needs image targets (N, H, W), got per-sample shape {spec.y_shape}")
    return spec.y_shape  # type: ignore[return-value]


class ConvDecoder(nn.Module):
    """Vector (N, d_in) -> image (N, H, W) via a linear map to (C, ceil(H/4), ceil(W/4)) and two
    stride-2 transposed convolutions."""

    def __init__(self, d_in: int, height: int, width: int, channels: int):
        super().__init__()
        self.height, self.width, self.channels = height, width, channels
        self.h0, self.w0 = math.ceil(height / 4), math.ceil(width / 4)
        self.fc = nn.Linear(d_in, channels * self.h0 * self.w0)
        half = max(1, channels // 2)
        self.up = nn.Sequential(
            nn.GELU(),
            nn.ConvTranspose2d(channels, half, 4, stride=2, padding=1),  # (C/2, 2 h0, 2 w0)
            nn.GELU(),
            nn.ConvTranspose2d(half, 1, 4, stride=2, padding=1),  # (1, 4 h0, 4 w0)
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.fc(z).reshape(z.shape[0], self.channels, self.h0, self.w0)  # (N, C, h0, w0)
        return self.up(h)[:, 0, : self.height, : self.width]  # (N, H, W)


class ConvEncoder(nn.Module):
    """Image (N, c_in, H, W) -> vector (N, d_out) via two stride-2 convolutions and a linear map."""

    def __init__(self, c_in: int, height: int, width: int, channels: int, d_out: int):
        super().__init__()
        half = max(1, channels // 2)
        self.conv = nn.Sequential(
            nn.Conv2d(c_in, half, 4, stride=2, padding=1), nn.GELU(),
            nn.Conv2d(half, channels, 4, stride=2, padding=1), nn.GELU(),
        )
        with torch.no_grad():
            n_flat = self.conv(torch.zeros(1, c_in, height, width)).numel()
        self.fc = nn.Linear(n_flat, d_out)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(img).flatten(1))  # (N, d_out)


def image_input(x: torch.Tensor, x_mask: torch.Tensor | None, spec: DataSpec) -> torch.Tensor:
    """(N, H, W) image input -> (N, 1 or 2, H, W) channels (value, and mask when trained masked)."""
    if not spec.x_masked:
        if x_mask is not None:
            raise ValueError("x_mask: this model was trained without an input mask")
        return x[:, None]
    m = torch.ones_like(x) if x_mask is None else x_mask
    return torch.stack([x * m, m], dim=1)


def vector_input(x: torch.Tensor, x_mask: torch.Tensor | None, spec: DataSpec) -> torch.Tensor:
    """(N, *x_shape) -> (N, x_dim) or (N, 2 x_dim) with the mask appended when trained masked."""
    flat = x.reshape(x.shape[0], -1)  # (N, x_dim)
    if not spec.x_masked:
        if x_mask is not None:
            raise ValueError("x_mask: this model was trained without an input mask")
        return flat
    m = torch.ones_like(flat) if x_mask is None else x_mask.reshape(x.shape[0], -1)
    return torch.cat([flat * m, m], dim=1)


def is_image_input(spec: DataSpec) -> bool:
    return len(spec.x_shape) == 2 and spec.x_shape == spec.y_shape


@dataclass
class CNNConfig(TrainConfig):
    channels: int = 16  # feature maps at the coarsest (H/4 x W/4) resolution
    latent: int = 64  # MLP width (vector input) / bottleneck size (image input)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("channels", "latent"))


@register("cnn")
class CNN(BackpropModel):
    """CNN decoder (vector input) or convolutional autoencoder (image input shaped like y)."""

    Config = CNNConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        height, width = _image_target(spec, "cnn")
        self.image_in = is_image_input(spec)
        if self.image_in:
            self.encoder = ConvEncoder(2 if spec.x_masked else 1, height, width, cfg.channels, cfg.latent)
        else:
            d_in = spec.x_dim * (2 if spec.x_masked else 1)
            self.encoder = nn.Linear(d_in, cfg.latent)
        self.decoder = ConvDecoder(cfg.latent, height, width, cfg.channels)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        spec = self.spec
        inp = image_input(x, x_mask, spec) if self.image_in else vector_input(x, x_mask, spec)
        return self.decoder(self.encoder(inp))  # (N, H, W)
