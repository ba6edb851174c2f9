"""Input checks of the ``hebbnets.nn`` modules: one ``ValueError`` naming the argument.

On top of ``hebbnets._validation`` (non-float, empty, NaN/Inf, too few dims), a module input must
sit on the module's device and have its dtype (converting silently would hide a float64 layer
fed float32, or a CPU tensor fed to a GPU layer) and end in the module's feature shape.
"""
from __future__ import annotations

from typing import Any

import torch

from .._validation import check_float, check_mask


def check_input(t: Any, name: str, like: torch.Tensor, trailing: tuple[int, ...], *,
                ndim: int | None = None) -> torch.Tensor:
    """``t`` must be a finite, non-empty float tensor on ``like``'s device with ``like``'s dtype,
    shaped ``(..., *trailing)`` (exactly ``ndim`` dims when given, else at least
    ``len(trailing) + 1``: a batch dim first)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device != like.device:  # first: the other checks would read the tensor
        raise ValueError(f"{name}: is on {t.device} but the module's parameters are on {like.device}; "
                         f"move one of them with .to(...)")
    need = len(trailing) + 1 if ndim is None else ndim
    check_float(t, name, min_ndim=need)
    if t.dtype != like.dtype:
        raise ValueError(f"{name}: has dtype {t.dtype} but the module's parameters are {like.dtype}; "
                         f"convert one of them with .to(...)")
    if (ndim is not None and t.ndim != ndim) or tuple(t.shape[t.ndim - len(trailing):]) != tuple(trailing):
        lead = "B, " if ndim is not None else "B, ..., "
        want = "(" + lead + ", ".join(map(str, trailing)) + ")"
        raise ValueError(f"{name}: expected shape {want}, got {tuple(t.shape)}")
    return t


def check_mask_like(mask: Any, x: torch.Tensor, name: str, x_name: str) -> torch.Tensor | None:
    """A 0/1 mask shaped exactly like ``x`` (bool, int or float), returned in ``x``'s dtype."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(mask).__name__}")
    if mask.device != x.device:
        raise ValueError(f"{name}: is on {mask.device} but {x_name} is on {x.device}")
    return check_mask(mask, x, name, x_name)


def check_per_sample(t: Any, name: str, like: torch.Tensor, batch: int) -> torch.Tensor:
    """A per-sample vector ``(batch,)`` (e.g. per-sample losses)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device != like.device:
        raise ValueError(f"{name}: is on {t.device} but the module's parameters are on {like.device}")
    check_float(t, name)
    if tuple(t.shape) != (batch,):
        raise ValueError(f"{name}: expected one value per sample, shape ({batch},), got {tuple(t.shape)}")
    return t


def factory_dtype(dtype: torch.dtype | None) -> torch.dtype:
    """A floating dtype for new parameters (``None``: torch's default dtype)."""
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype: expected a floating torch.dtype, got {dtype!r}")
    return dtype
