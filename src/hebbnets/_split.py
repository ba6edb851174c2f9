"""``Split``: the validated (inputs, targets, masks) bundle every model and task exchanges."""
from __future__ import annotations

from typing import Any

import torch

from ._validation import as_tensor, check_float, check_mask, check_target


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
