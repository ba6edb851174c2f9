"""Autoencoder baselines: a fully connected ``ae`` and a convolutional ``conv_ae``.

``ae``: flattened input (mask appended when trained masked) -> MLP encoder -> ``latent`` units
-> mirrored MLP decoder -> flattened target. With input = target it is a plain autoencoder; with
an extra code in the input (``mnist_comp`` transform mode) the code simply enters the encoder.

``conv_ae``: image targets ``(H, W)``. The first ``H * W`` input entries are the image (the whole
input when ``x_shape == (H, W)``); any further entries are a conditioning code (e.g. the
transformation code of ``mnist_comp``) that is concatenated to the bottleneck, since a code has
no spatial structure to convolve. Image -> ``ConvEncoder`` (two stride-2 convolutions and a
linear map to ``latent``) -> [latent, code] -> ``ConvDecoder`` (two stride-2 transposed
convolutions); encoder and decoder are shared with the ``cnn`` baseline. An input mask becomes
a second image channel (and is appended to the code).

``output="sigmoid"`` squashes predictions into (0, 1) (images in [0, 1]); ``"linear"`` does not.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from .._validation import check_int
from ..models import register
from ..training import BackpropModel, TrainConfig
from .cnn import ConvDecoder, ConvEncoder, vector_input

OUTPUTS = ("linear", "sigmoid")



@dataclass
class AEConfig(TrainConfig):
    hidden: tuple[int, ...] = (256,)  # encoder widths; the decoder mirrors them
    latent: int = 32
    output: str = "linear"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.hidden, tuple) or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"hidden: expected a tuple of positive ints, got {self.hidden!r}")
        check_int(self.latent, "latent")
        if self.output not in OUTPUTS:
            raise ValueError(f"output: unknown {self.output!r}; expected one of {list(OUTPUTS)}")


def _squash(out: torch.Tensor, output: str) -> torch.Tensor:
    return torch.sigmoid(out) if output == "sigmoid" else out


@register("ae")
class AE(BackpropModel):
    """Fully connected autoencoder with a ``latent``-unit bottleneck."""

    Config = AEConfig

    def _build(self, spec: DataSpec) -> None:
        if spec.is_classification:
            raise ValueError("y: model 'ae' needs regression targets")
        cfg = self.config
        d = spec.x_dim * (2 if spec.x_masked else 1)
        enc: list[nn.Module] = []
        for h in cfg.hidden:
            enc += [nn.Linear(d, h), nn.GELU()]
            d = h
        enc.append(nn.Linear(d, cfg.latent))
        dec: list[nn.Module] = []
        d = cfg.latent
        for h in reversed(cfg.hidden):
            dec += [nn.Linear(d, h), nn.GELU()]
            d = h
        dec.append(nn.Linear(d, spec.y_dim))
        self.encoder, self.decoder = nn.Sequential(*enc), nn.Sequential(*dec)

    def encode(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Bottleneck codes ``(N, latent)``."""
        return self.encoder(vector_input(x, x_mask, self.spec))

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        out = self.decoder(self.encode(x, x_mask))  # (N, y_dim)
        return _squash(out, self.config.output).reshape(x.shape[0], *self.spec.y_shape)


@dataclass
class ConvAEConfig(TrainConfig):
    channels: int = 16  # feature maps at the coarsest (H/4 x W/4) resolution
    latent: int = 32
    output: str = "linear"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.channels, "channels")
        check_int(self.latent, "latent")
        if self.output not in OUTPUTS:
            raise ValueError(f"output: unknown {self.output!r}; expected one of {list(OUTPUTS)}")


@register("conv_ae")
class ConvAE(BackpropModel):
    """Convolutional autoencoder; extra input entries after the image condition the bottleneck."""

    Config = ConvAEConfig

    def _build(self, spec: DataSpec) -> None:
        if spec.is_classification or len(spec.y_shape) != 2:
            raise ValueError(f"y: model 'conv_ae' needs image targets (N, H, W), got per-sample shape {spec.y_shape}")
        height, width = spec.y_shape
        self.pixels = height * width
        if not (spec.x_shape == spec.y_shape or (len(spec.x_shape) == 1 and spec.x_dim >= self.pixels)):
            raise ValueError(
                f"x: model 'conv_ae' needs inputs shaped like the image {spec.y_shape} or flat vectors of at "
                f"least {self.pixels} entries (image first, then a code), got {spec.x_shape}"
            )
        cfg = self.config
        self.code_dim = spec.x_dim - self.pixels
        masked = spec.x_masked
        self.encoder = ConvEncoder(2 if masked else 1, height, width, cfg.channels, cfg.latent)
        self.decoder = ConvDecoder(cfg.latent + self.code_dim * (2 if masked else 1), height, width, cfg.channels)

    def _split_input(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """-> image channels ``(N, 1 or 2, H, W)`` and code ``(N, code_dim [* 2])``."""
        n = x.shape[0]
        flat = x.reshape(n, -1)  # (N, x_dim)
        if not self.spec.x_masked:
            if x_mask is not None:
                raise ValueError("x_mask: this model was trained without an input mask")
            img = flat[:, : self.pixels].reshape(n, 1, *self.spec.y_shape)
            return img, flat[:, self.pixels :]
        m = torch.ones_like(flat) if x_mask is None else x_mask.reshape(n, -1)
        flat = flat * m
        img = torch.stack([flat[:, : self.pixels], m[:, : self.pixels]], 1).reshape(n, 2, *self.spec.y_shape)
        return img, torch.cat([flat[:, self.pixels :], m[:, self.pixels :]], 1)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        img, code = self._split_input(x, x_mask)
        z = torch.cat([self.encoder(img), code], 1)  # (N, latent + code)
        return _squash(self.decoder(z), self.config.output)  # (N, H, W)
