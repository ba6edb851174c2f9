"""Model-free reference predictors, registered like models so a bench lists them as rows.

* ``zeros``: predicts all zeros (on spatial2d: the error of an empty image, the level a model
  that learned nothing about where the bump is scores).
* ``gap_interp``: fills every masked entry by linear interpolation between the nearest observed
  entries (constant beyond the ends). On a masked-signal task its OOD/ID error ratio measures how
  much harder the OOD signals are *intrinsically*; a learned model degrading clearly more than it
  is the sign that a split tests composition.

* ``svd_image``: each image's own truncated SVD of rank ``rank`` (``(N, H, W)`` inputs, targets
  shaped like them): zero parameters; a reconstruct bench on which it scores near zero tests the
  data's low-rank structure, not composition.

None learns anything (no parameters); tables show them for reference and never count them as
the best baseline when they are named in ``ResultsTable(references=...)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._model import DataSpec, Model
from .._split import Split
from ..models import register


@dataclass
class ZerosConfig:
    pass


@register("zeros")
class Zeros(Model):
    """Predicts zeros of the target's shape (regression only)."""

    Config = ZerosConfig

    def _build(self, spec: DataSpec) -> None:
        if spec.is_classification:
            raise ValueError("split: 'zeros' predicts real-valued targets; got integer class labels")

    def _fit(self, split: Split) -> None:
        pass

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return torch.zeros(x.shape[0], *self.spec.y_shape, device=x.device, dtype=x.dtype)


def interpolate_gap(x: torch.Tensor, x_mask: torch.Tensor) -> torch.Tensor:
    """Each row's hidden entries by linear interpolation between the nearest seen entries
    (``numpy.interp`` semantics: flat beyond the first/last seen entry): ``(N, L), (N, L) -> (N, L)``."""
    out = x.clone()
    pos = torch.arange(x.shape[1], dtype=x.dtype, device=x.device)
    for i in range(x.shape[0]):
        seen = x_mask[i] > 0
        xp, fp = pos[seen], x[i, seen]
        if len(xp) < 2:
            out[i] = torch.where(seen, x[i], fp.mean() if len(fp) else x.new_zeros(()))
            continue
        idx = torch.searchsorted(xp, pos).clamp(1, len(xp) - 1)
        x0, x1, f0, f1 = xp[idx - 1], xp[idx], fp[idx - 1], fp[idx]
        w = ((pos - x0) / (x1 - x0)).clamp(0, 1)
        out[i] = torch.where(seen, x[i], f0 + w * (f1 - f0))
    return out


@dataclass
class GapInterpConfig:
    pass


@register("gap_interp")
class GapInterp(Model):
    """Linear interpolation across the masked entries of a 1D signal (``interpolate_gap``);
    needs ``(N, L)`` inputs with an ``x_mask`` and targets shaped like the input."""

    Config = GapInterpConfig

    def _build(self, spec: DataSpec) -> None:
        if len(spec.x_shape) != 1 or spec.y_shape != spec.x_shape or not spec.x_masked:
            raise ValueError("x: 'gap_interp' fills the masked entries of (N, L) signals; it needs an x_mask and "
                             f"targets shaped like x, got x {spec.x_shape}, y {spec.y_shape}, masked={spec.x_masked}")

    def _fit(self, split: Split) -> None:
        pass

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is None:
            return x.clone()
        return interpolate_gap(x, x_mask)


@dataclass
class SVDImageConfig:
    """``rank``: the singular values kept per image."""

    rank: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"rank: expected an int >= 1, got {self.rank!r}")


def truncated_svd(images: torch.Tensor, rank: int) -> torch.Tensor:
    """Each image's best rank-``rank`` approximation (Eckart-Young): ``(N, H, W) -> (N, H, W)``."""
    u, s, vh = torch.linalg.svd(images.double(), full_matrices=False)
    r = min(rank, s.shape[-1])
    return ((u[..., :r] * s[..., None, :r]) @ vh[..., :r, :]).to(images.dtype)


@register("svd_image")
class SVDImage(Model):
    """Per-image truncated SVD (``truncated_svd``); needs ``(N, H, W)`` inputs shaped like the
    targets and no mask."""

    Config = SVDImageConfig

    def _build(self, spec: DataSpec) -> None:
        if len(spec.x_shape) != 2 or spec.y_shape != spec.x_shape or spec.x_masked:
            raise ValueError("x: 'svd_image' approximates each (H, W) image by its own truncated SVD; it needs "
                             f"unmasked (N, H, W) inputs shaped like y, got x {spec.x_shape}, y {spec.y_shape}, "
                             f"masked={spec.x_masked}")

    def _fit(self, split: Split) -> None:
        pass

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return truncated_svd(x, self.config.rank)
