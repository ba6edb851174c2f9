"""Input checks shared by every public entry point.

Every check raises one ``ValueError`` whose message starts with the argument's name, so a user
(or the CLI, which prints it) knows exactly which input to fix.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch


def as_tensor(value: Any, name: str) -> torch.Tensor:
    """Convert a tensor / ndarray / nested list to a tensor, or raise naming ``name``."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise ValueError(f"{name}: object arrays are not supported")
        return torch.from_numpy(np.ascontiguousarray(value))
    try:
        return torch.as_tensor(value)
    except Exception as exc:  # noqa: BLE001 - re-raised with the argument's name
        raise ValueError(f"{name}: cannot be converted to a tensor ({exc})") from None


def check_float(t: torch.Tensor, name: str, *, min_ndim: int = 1) -> torch.Tensor:
    """Require a non-empty, finite floating tensor with at least ``min_ndim`` dims."""
    if not torch.is_floating_point(t):
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    _check_shape_and_size(t, name, min_ndim)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or Inf")
    return t


def check_target(t: torch.Tensor, name: str) -> torch.Tensor:
    """Targets: finite floats (regression) or non-negative integers (class labels)."""
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"{name}: expected float (regression) or integer (class) targets, got {t.dtype}")
    if torch.is_floating_point(t):
        return check_float(t, name)
    _check_shape_and_size(t, name, 1)
    if t.ndim != 1:
        raise ValueError(f"{name}: integer class targets must have shape (N,), got {tuple(t.shape)}")
    if bool((t < 0).any()):
        raise ValueError(f"{name}: class labels must be non-negative")
    return t.long()


def check_mask(mask: Any, like: torch.Tensor, name: str, like_name: str) -> torch.Tensor | None:
    """A mask is 0/1 valued (1 = observed) and has exactly the shape of the tensor it masks."""
    if mask is None:
        return None
    m = as_tensor(mask, name)
    if tuple(m.shape) != tuple(like.shape):
        raise ValueError(f"{name}: shape {tuple(m.shape)} does not match {like_name} shape {tuple(like.shape)}")
    if m.dtype == torch.bool:
        return m.to(like.dtype if torch.is_floating_point(like) else torch.float32)
    if not (torch.is_floating_point(m) or m.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
        raise ValueError(f"{name}: expected a bool, integer or float mask, got {m.dtype}")
    if not bool(((m == 0) | (m == 1)).all()):
        raise ValueError(f"{name}: mask values must be 0 (missing) or 1 (observed)")
    return m.to(like.dtype if torch.is_floating_point(like) else torch.float32)


def check_choice(value: str, choices: Iterable[str], name: str) -> str:
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name}: unknown value {value!r}; expected one of {sorted(choices)}")
    return value


def check_positive(value: float, name: str, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")


def check_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """``value`` must be an int (not a bool) ``>= minimum``; returns it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value!r}")
    return value


def check_int_fields(config: Any, names: Iterable[str], *, minimum: int = 1) -> None:
    """``check_int`` on each named attribute of a config dataclass."""
    for name in names:
        check_int(getattr(config, name), name, minimum=minimum)


def check_out_folder(path: str | Path, name: str = "--out") -> Path:
    """``path`` as an output folder: ``ValueError`` naming ``name`` if it is an existing file
    (checked before anything trains, so no fit is lost to a bad path)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{name}: {str(out)!r} is a file; expected a folder (it is created if missing)")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{name}: {str(parent)!r} is a file, so {str(out)!r} cannot be a folder")
            break
    return out


def _check_shape_and_size(t: torch.Tensor, name: str, min_ndim: int) -> None:
    if t.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimension(s), got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name}: is empty (shape {tuple(t.shape)})")


def resolve_device(device: Any, name: str = "device") -> torch.device:
    """A ``torch.device`` from ``None`` / ``"cpu"`` (the CPU), ``"auto"`` (CUDA when present,
    else the CPU), ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``; one ``ValueError``
    naming ``name`` for an unknown device or one this machine does not have."""
    if device is None:
        return torch.device("cpu")
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    try:
        out = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"{name}: {device!r} is not a device; expected 'cpu', 'auto', 'cuda', 'cuda:N', 'mps' "
                         "or a torch.device") from None
    if out.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name}: {device!r} asked for CUDA, which this machine does not have "
                             "(use 'cpu' or 'auto')")
        if out.index is not None and out.index >= torch.cuda.device_count():
            raise ValueError(f"{name}: {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif out.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"{name}: {device!r} asked for MPS, which this machine does not have")
    elif out.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{name}: {device!r}: hebbnets models run on 'cpu', 'cuda' or 'mps'")
    return out


FLOAT_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


def resolve_dtype(dtype: Any, name: str = "dtype") -> torch.dtype | None:
    """A floating ``torch.dtype`` from ``None`` (the model's own), a ``torch.dtype`` or one of
    ``FLOAT_DTYPES``' names; one ``ValueError`` naming ``name`` otherwise."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        if dtype.removeprefix("torch.") not in FLOAT_DTYPES:
            raise ValueError(f"{name}: {dtype!r} is not a floating dtype; expected one of {sorted(FLOAT_DTYPES)}")
        return FLOAT_DTYPES[dtype.removeprefix("torch.")]
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"{name}: expected a floating torch.dtype or one of {sorted(FLOAT_DTYPES)}, got {dtype!r}")
    return dtype
