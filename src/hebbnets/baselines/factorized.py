"""Hand-factorised decoder: the image is the outer product of an x-profile and a y-profile.

    image[a, b] = p_x[a] * p_y[b],    p_x = MLP_x(input_x) (H,),   p_y = MLP_y(input_y) (W,)

The factorisation is built in by hand (Liang et al., ICML 2025): each profile decoder sees only
the part of the input that concerns its axis, so a new (x, y) combination is decoded from two
familiar profiles. Inputs per axis (``inputs`` config):

* ``"halves"``: a vector input of length ``H + W`` (``spatial2d`` decode mode: one-hot x code then
  one-hot y code); the first ``H`` entries feed ``MLP_x``, the last ``W`` feed ``MLP_y``.
* ``"marginals"``: an image input shaped like the target (reconstruct mode); ``MLP_x`` sees the
  image summed over axis 1 (H,), ``MLP_y`` the image summed over axis 0 (W,).
* ``"auto"``: ``"marginals"`` for image input shaped like the target, else ``"halves"``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from ..models import register
from ..training import BackpropModel, TrainConfig
from .cnn import _image_target, is_image_input

INPUTS = ("auto", "halves", "marginals")


@dataclass
class FactorizedConfig(TrainConfig):
    hidden: int = 64
    inputs: str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.hidden, bool) or not isinstance(self.hidden, int) or self.hidden < 1:
            raise ValueError(f"hidden: expected an int >= 1, got {self.hidden!r}")
        if self.inputs not in INPUTS:
            raise ValueError(f"inputs: unknown {self.inputs!r}; expected one of {list(INPUTS)}")


def _profile_mlp(d_in: int, hidden: int, d_out: int) -> nn.Module:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))


@register("factorized")
class Factorized(BackpropModel):
    """Outer product of two profile MLPs (see module docstring)."""

    Config = FactorizedConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        height, width = _image_target(spec, "factorized")
        inputs = cfg.inputs
        if inputs == "auto":
            inputs = "marginals" if is_image_input(spec) else "halves"
        if inputs == "marginals" and not is_image_input(spec):
            raise ValueError(f"inputs: 'marginals' needs image input shaped like y {spec.y_shape}, got {spec.x_shape}")
        if inputs == "halves" and (len(spec.x_shape) != 1 or spec.x_dim != height + width):
            raise ValueError(f"inputs: 'halves' needs vector input of length H + W = {height + width}, got {spec.x_shape}")
        if spec.x_masked:
            raise ValueError("x_mask: model 'factorized' does not take masked inputs")
        self.inputs = inputs
        self.height = height
        self.profile_x = _profile_mlp(height, cfg.hidden, height)
        self.profile_y = _profile_mlp(width, cfg.hidden, width)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError("x_mask: model 'factorized' does not take masked inputs")
        if self.inputs == "halves":
            in_x, in_y = x[:, : self.height], x[:, self.height :]  # (N, H), (N, W)
        else:
            in_x, in_y = x.sum(dim=2), x.sum(dim=1)  # (N, H), (N, W) marginals
        px, py = self.profile_x(in_x), self.profile_y(in_y)  # (N, H), (N, W)
        return px[:, :, None] * py[:, None, :]  # (N, H, W)
