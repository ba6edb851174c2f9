"""Metrics by name. Each takes ``(y_hat, split)`` and returns a Python float."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch

from ._validation import check_choice

if TYPE_CHECKING:  # a Split names its metric, so _split imports this module
    from ._split import Split


def mse(y_hat: torch.Tensor, split: Split) -> float:
    """Mean squared error over observed target entries (``split.y_mask == 1``, or all)."""
    err = (y_hat.to(split.y) - split.y) ** 2  # predictions come to the split's device and dtype
    if split.y_mask is None:
        return float(err.mean())
    return float((err * split.y_mask).sum() / split.y_mask.sum().clamp_min(1))


def mse_missing(y_hat: torch.Tensor, split: Split) -> float:
    """MSE on the entries whose input was masked out (``x_mask == 0``): masked prediction."""
    if split.x_mask is None or split.x_mask.shape != split.y.shape:
        raise ValueError("split: metric 'mse_missing' needs an x_mask shaped like y")
    missing = 1.0 - split.x_mask
    err = (y_hat.to(split.y) - split.y) ** 2
    return float((err * missing).sum() / missing.sum().clamp_min(1))


def accuracy(y_hat: torch.Tensor, split: Split) -> float:
    """Fraction of correctly predicted class labels."""
    return float((y_hat.to(split.y.device).long() == split.y).float().mean())


_METRICS: dict[str, Callable[[torch.Tensor, Split], float]] = {
    "mse": mse,
    "mse_missing": mse_missing,
    "accuracy": accuracy,
}
#: metrics where larger is better (the runner uses this for "best baseline")
HIGHER_IS_BETTER = {"accuracy"}


def get_metric(name: str) -> Callable[[torch.Tensor, Split], float]:
    check_choice(name, _METRICS, "metric")
    return _METRICS[name]


def default_metric(split: Split) -> str:
    if split.metric is not None:
        return split.metric
    return "accuracy" if split.is_classification else "mse"
