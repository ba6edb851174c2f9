"""Hyper-parameter selection on validation data carved from a task's *training* split only.

``tune(task, "mlp", {"hidden": [(64,), (128, 128)], "lr": [1e-3, 3e-3]})`` fits one model per
grid point on the training split minus a held-out validation part and scores it there with the
task's metric; test splits are never touched. Give every model the same number of grid points
(equal tuning effort).
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import torch

from .. import models as _models
from ..training import carve_validation
from ..metrics import HIGHER_IS_BETTER, get_metric
from ..tasks import Task
from .runner import jsonable

#: fixed so every model is tuned on the same train/validation partition
VALIDATION_SEED = 1234


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of ``{key: [values]}`` as a list of dicts (in key order)."""
    if not grid:
        return [{}]
    for key, values in grid.items():
        if not isinstance(values, (list, tuple)) or len(values) == 0:
            raise ValueError(f"grid: values of {key!r} must be a non-empty list, got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def tune(task: Task, model: str, grid: dict[str, list[Any]], *, seed: int = 0, val_fraction: float = 0.2,
         base: dict[str, Any] | None = None, log: Any = None) -> list[dict[str, Any]]:
    """Score every grid point on validation data carved from ``task.train``.

    Returns records ``{"model", "config" (the grid point over ``base``), "value", "num_parameters",
    "fit_seconds"}`` sorted best first (by the task metric's direction).
    """
    if not isinstance(task, Task):
        raise ValueError(f"task: expected a Task, got {type(task).__name__}")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction: must be in (0, 1), got {val_fraction!r}")
    gen = torch.Generator().manual_seed(VALIDATION_SEED)
    tr_idx, va_idx = carve_validation(len(task.train), val_fraction, gen)
    train, val = task.train.subset(tr_idx), task.train.subset(va_idx)
    metric = get_metric(task.metric)
    out = []
    for point in grid_points(grid):
        config = {**(base or {}), **point}
        m = _models.make(model, seed=seed, **config)
        t0 = time.perf_counter()
        m.fit(train)
        fit_s = time.perf_counter() - t0
        value = float(metric(m.predict(val.x, val.x_mask), val))
        rec = {"model": model, "config": jsonable(config), "value": value,
               "num_parameters": int(m.num_parameters), "fit_seconds": fit_s,
               "full_config": jsonable(dataclasses.asdict(m.config))}
        out.append(rec)
        if log is not None:
            log(f"tune {model} {point}: val {task.metric}={value:.4g} params={rec['num_parameters']} ({fit_s:.0f}s)")
    out.sort(key=lambda r: -r["value"] if task.metric in HIGHER_IS_BETTER else r["value"])
    return out
