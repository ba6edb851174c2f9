"""``Split``: the validated (inputs, targets, masks) bundle every model and task exchanges."""
from __future__ import annotations

from typing import Any

import torch

from ._validation import as_tensor, check_float, check_mask, check_target, resolve_device


class Split:
    """One data split. The first dimension of every tensor indexes samples.

    Args:
        x: inputs, float tensor ``(N, *x_shape)``.
        y: targets, float tensor ``(N, *y_shape)`` for regression, or integer labels ``(N,)``
            for classification.
        x_mask: optional 0/1 tensor shaped like ``x`` (1 = observed, 0 = missing).
        y_mask: optional 0/1 tensor shaped like ``y`` (1 = observed); float targets only.
        metric: optional metric name this split is scored with (see ``hebbnets.metrics``);
            ``None`` means MSE for float targets and accuracy for integer ones.

    Raises:
        ValueError: naming the argument, for mismatched lengths, wrong rank, non-float inputs,
            NaN/Inf, empty tensors, masks of the wrong shape or with values other than 0/1.
    """

    def __init__(self, x: Any, y: Any, x_mask: Any = None, y_mask: Any = None, metric: str | None = None):
        x = check_float(as_tensor(x, "x"), "x", min_ndim=2)
        y = check_target(as_tensor(y, "y"), "y")
        if y.ndim == 1 and torch.is_floating_point(y):
            y = y[:, None]  # a scalar regression target is one feature
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} samples but x has {x.shape[0]}")
        if y_mask is not None and not torch.is_floating_point(y):
            raise ValueError("y_mask: only float (regression) targets can be masked")
        self.x = x
        self.y = y
        self.x_mask = check_mask(x_mask, x, "x_mask", "x")
        self.y_mask = check_mask(y_mask, y, "y_mask", "y")
        if metric is not None:
            from .metrics import get_metric

            get_metric(metric)  # validates the name now rather than at scoring time
        self.metric = metric

    def __len__(self) -> int:
        return self.x.shape[0]

    @property
    def is_classification(self) -> bool:
        return not torch.is_floating_point(self.y)

    def to(self, device: Any = None, dtype: torch.dtype | None = None) -> "Split":
        """This split on ``device`` (``None``: where it is), floating tensors (inputs, masks, real
        targets) cast to ``dtype`` (``None``: as they are; class labels stay integers). Returns
        ``self`` when nothing moves, like ``torch.Tensor.to``."""
        if dtype is not None and (not isinstance(dtype, torch.dtype) or not dtype.is_floating_point):
            raise ValueError(f"dtype: expected a floating torch.dtype, got {dtype!r}")
        device = None if device is None else resolve_device(device, "device")

        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            if t is None:
                return None
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        tensors = (self.x, self.y, self.x_mask, self.y_mask)
        moved = tuple(move(t) for t in tensors)
        if all(a is b for a, b in zip(tensors, moved)):
            return self
        out = Split.__new__(Split)  # already validated: only the placement changes
        out.x, out.y, out.x_mask, out.y_mask = moved
        out.metric = self.metric
        return out

    @property
    def device(self) -> torch.device:
        """The device of the split's tensors."""
        return self.x.device

    def subset(self, index: torch.Tensor) -> "Split":
        """The samples at ``index`` (a 1D long or bool tensor), as a new ``Split``."""
        pick = lambda t: None if t is None else t[index]  # noqa: E731
        return Split(self.x[index], self.y[index], pick(self.x_mask), pick(self.y_mask), self.metric)

    def __repr__(self) -> str:
        kind = "classes" if self.is_classification else "targets"
        return (
            f"Split(n={len(self)}, x={tuple(self.x.shape[1:])}, {kind}={tuple(self.y.shape[1:])}, "
            f"x_mask={self.x_mask is not None}, y_mask={self.y_mask is not None}, metric={self.metric})"
        )
