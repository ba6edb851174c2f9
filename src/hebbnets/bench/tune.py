"""Hyper-parameter selection on validation data carved from a task's *training* split only.

``tune(task, "mlp", {"hidden": [(64,), (128, 128)], "lr": [1e-3, 3e-3]})`` fits one model per
grid point on the training split minus a held-out validation part and scores it there with the
task's metric; test splits are never touched. Give every model the same number of grid points
(equal tuning effort).
"""
from __future__ import annotations

import itertools
from typing import Any

import torch

from .._split import Split
from ..metrics import HIGHER_IS_BETTER
from ..tasks import VALIDATION_SEED, Task, validation_split  # noqa: F401  (re-exported)

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
         base: dict[str, Any] | None = None, log: Any = None, store: Any = None) -> list[dict[str, Any]]:
    """Score every grid point on validation data carved from ``task.train``.

    Each point is one job of protocol ``tune`` run by the experiments runner (with ``store``, a
    ``.jsonl`` path, finished points are reused). The point's config is the model's defaults,
    then ``base``, then the point (the task's chosen configs are not used).

    Returns records ``{"model", "config" (the grid point over ``base``), "value", "num_parameters",
    "fit_seconds", "full_config"}`` sorted best first (by the task metric's direction).
    """
    from ..experiments import Bench, RecordStore, execute, jsonable, plan_bench, variant

    train, _ = validation_split(task, val_fraction)  # checks task and val_fraction
    points = [{**(base or {}), **p} for p in grid_points(grid)]
    bench = Bench("tune", task=task.name, models=tuple(variant(f"point{i}", model, **p) for i, p in enumerate(points)),
                  seeds=(seed,), protocol="tune", options={"val_fraction": val_fraction})
    jobs = plan_bench(None, bench, "quick", task=task, chosen={})
    entries = execute(jobs, RecordStore(store) if store is not None else None, log=log)
    out = []
    for point, e in zip(points, entries):
        out.append({"model": model, "config": jsonable(point), "value": float(e["rows"][0]["value"]),
                    "num_parameters": e["stats"]["num_parameters"], "fit_seconds": e["stats"]["fit_seconds"],
                    "full_config": e["config"]})
    out.sort(key=lambda r: -r["value"] if task.metric in HIGHER_IS_BETTER else r["value"])
    return out
