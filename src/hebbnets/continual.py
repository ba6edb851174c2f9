"""Continual learning: learn a task's stages one after the other and measure forgetting.

``fit_stages(model, task)`` learns ``task.stages`` in order (``fit`` for the first,
``partial_fit`` for every later one) and scores every test split after each stage;
``forgetting(records)`` turns those records into, per stage, the error on its own test split
right after learning it and after the last stage. Backprop models get the standard remedy by
configuration (``ewc_lambda > 0``: ``hebbnets.baselines.ewc``).
"""
from __future__ import annotations

import time
from typing import Any

from ._model import Model
from .metrics import get_metric
from .tasks import Task


def fit_stages(model: Model, task: Task, log: Any = None) -> list[dict[str, Any]]:
    """Learn ``task.stages`` in order and score every test split after each stage.

    Args:
        model: an unfitted (or to-be-refitted) model; the first stage is a fresh ``fit``.
        task: a task with ``stages`` (e.g. ``hn.tasks.make("functions1d_continual")``).
        log: optional callable taking a progress line.

    Returns:
        One record per (stage, test split): ``model``, ``seed``, ``stage`` (its name),
        ``stage_index`` (0-based), ``split``, ``metric``, ``value``, ``fit_seconds`` (that stage's
        fit) and ``predict_seconds``.
    """
    if not isinstance(model, Model):
        raise ValueError(f"model: expected a hebbnets Model, got {type(model).__name__}")
    if not isinstance(task, Task) or not task.stages:
        raise ValueError("task: expected a Task with stages (a continual task)")
    metric = get_metric(task.metric)
    records: list[dict[str, Any]] = []
    for k, (stage, split) in enumerate(task.stages.items()):
        t0 = time.perf_counter()
        if k == 0:
            model.fit(split)
        else:
            model.partial_fit(split)
        fit_s = time.perf_counter() - t0
        for name, test in task.tests.items():
            t0 = time.perf_counter()
            value = float(metric(model.predict(test.x, test.x_mask), test))
            records.append({"model": model.name, "seed": model.seed, "stage": stage, "stage_index": k,
                            "split": name, "metric": task.metric, "value": value, "fit_seconds": fit_s,
                            "predict_seconds": time.perf_counter() - t0})
        if log is not None:
            scores = ", ".join(f"{r['split']}={r['value']:.4g}" for r in records if r["stage_index"] == k)
            log(f"[{task.name}] {model.name} seed={model.seed} after {stage} (fit {fit_s:.1f}s): {scores}")
    return records


def forgetting(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per stage ``s`` with a test split ``id_<s>``: its error right after learning ``s``
    (``after_own``), after the last stage (``final``), their difference (``forgetting``, > 0 =
    worse) and ratio (``final / after_own``).

    Args:
        records: ``fit_stages`` records of one model and seed.
    """
    if not records:
        raise ValueError("records: expected the non-empty output of fit_stages")
    if len({(r["model"], r["seed"]) for r in records}) != 1:
        raise ValueError("records: mix several models or seeds; pass those of one fit_stages call")
    last = max(r["stage_index"] for r in records)
    value = {(r["stage"], r["split"]): r["value"] for r in records}
    final_stage = next(r["stage"] for r in records if r["stage_index"] == last)
    out = {}
    for stage in dict.fromkeys(r["stage"] for r in records):
        key = f"id_{stage}"
        if (stage, key) not in value:
            continue
        own, final = value[(stage, key)], value[(final_stage, key)]
        out[stage] = {"after_own": own, "final": final, "forgetting": final - own,
                      "ratio": final / own if own else float("inf")}
    return out


__all__ = ["fit_stages", "forgetting"]
