"""VAE baseline: a Gaussian latent between an encoder and a decoder, trained on the ELBO.

Encoder: an MLP on the flattened input (mask appended when trained masked) giving ``mu`` and
``log_var`` of a ``latent``-dimensional diagonal Gaussian. Decoder: the ``ConvDecoder`` of the
CNN baseline for image targets ``(H, W)``, an MLP otherwise. Training minimises (per sample,
divided by the number of target entries so it sits on the scale of an MSE)

    ||y - decoder(z)||^2 / y_dim + beta * KL(q(z | x) || N(0, I)) / y_dim,   z ~ q(z | x)

through the trainer's ``_loss`` hook; prediction decodes the posterior mean ``mu``. With input =
target this is a plain VAE; with code input (``spatial2d`` decode mode) a conditional decoder
with a variational bottleneck.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from .._split import Split
from .._validation import check_int_fields, check_positive
from ..models import register
from ..training import BackpropModel, TrainConfig
from .cnn import ConvDecoder, vector_input


@dataclass
class VAEConfig(TrainConfig):
    hidden: int = 128
    latent: int = 8
    channels: int = 16  # decoder feature maps (image targets)
    beta: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("hidden", "latent", "channels"))
        check_positive(self.beta, "beta", allow_zero=True)


@register("vae")
class VAE(BackpropModel):
    """MLP encoder -> Gaussian latent -> conv (image) or MLP decoder; ELBO training."""

    Config = VAEConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if spec.is_classification:
            raise ValueError("y: model 'vae' needs regression targets")
        d_in = spec.x_dim * (2 if spec.x_masked else 1)
        self.encoder = nn.Sequential(nn.Linear(d_in, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, 2 * cfg.latent))
        if len(spec.y_shape) == 2:
            self.decoder = ConvDecoder(cfg.latent, spec.y_shape[0], spec.y_shape[1], cfg.channels)
        else:
            self.decoder = nn.Sequential(nn.Linear(cfg.latent, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, spec.y_dim))

    def _posterior(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_var = self.encoder(vector_input(x, x_mask, self.spec)).chunk(2, dim=1)  # (N, Z) each
        return mu, log_var.clamp(-10, 10)  # bounded variance keeps exp() finite early in training

    def _decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z).reshape(z.shape[0], *self.spec.y_shape)  # (N, *y_shape)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        mu, _ = self._posterior(x, x_mask)
        return self._decode(mu)  # deterministic: the posterior mean

    def elbo_terms(self, x: torch.Tensor, x_mask: torch.Tensor | None, y: torch.Tensor,
                   y_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(reconstruction, KL) per sample, each (N,), with one reparameterised sample of z."""
        mu, log_var = self._posterior(x, x_mask)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * log_var)  # (N, Z)
        err = (self._decode(z) - y) ** 2
        if y_mask is not None:
            err = err * y_mask
        recon = err.flatten(1).sum(dim=1)  # (N,)
        kl = 0.5 * (mu**2 + log_var.exp() - 1 - log_var).sum(dim=1)  # (N,) closed-form Gaussian KL
        return recon, kl

    def _loss(self, batch: Split) -> torch.Tensor:
        recon, kl = self.elbo_terms(batch.x, batch.x_mask, batch.y, batch.y_mask)
        return (recon + self.config.beta * kl).mean() / self.spec.y_dim
