"""``run``: every model x seed on one task, as flat records (the library form of ``hebbnets run``).

It is a one-bench plan executed by the experiments runner (``hebbnets.experiments``): the same
checks before training, the same worker (``run_job``: fit, score every test split and every
``task.extra_metrics``, per-fit statistics), the same record store when ``store`` is given (a
finished fit is reused, never recomputed). Each returned record is one row::

    task, task_params, model, model_config, seed, protocol, split, metric, value,
    num_parameters, fit_seconds, predict_seconds, ..., version, git_commit, git_dirty

plus the row's own fields (e.g. RSGN's measured ``active_fraction`` and ``edges_per_sample``).
"""
from __future__ import annotations

import os
from typing import Any, Iterable

from .. import models as _models
from ..tasks import Task


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    from ..experiments._spec import check_seeds

    return list(check_seeds(seeds))


def _check_models(models: Iterable[str]) -> list[str]:
    if isinstance(models, str):
        raise ValueError(f"models: expected a list of model names, got the string {models!r}")
    models = list(models)
    if not models:
        raise ValueError("models: need at least one model name")
    for m in models:
        if m not in _models.names():
            raise ValueError(f"models: unknown model {m!r}; expected names from {_models.names()}")
    return models


def plan(task: Task | str, models: Iterable[str], seeds: Iterable[int], *, scale: str = "quick",
         task_params: dict[str, Any] | None = None, overrides: dict[str, dict[str, Any]] | None = None,
         protocol: str = "fit", options: dict[str, Any] | None = None) -> list[Any]:
    """The checked jobs of a run (``hebbnets.experiments.Job``): every name, seed, task
    parameter, config key and model/task compatibility is validated here, before training."""
    from ..experiments import Bench, Scale, plan_bench, variant

    models = _check_models(models)
    seeds = _check_seeds(seeds)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(models))
    if unknown:
        raise ValueError(f"overrides: model(s) {unknown} are not among the models being run {models}")
    if scale not in ("quick", "paper"):
        raise ValueError(f"scale: expected 'quick' or 'paper', got {scale!r}")
    if isinstance(task, Task):
        if task_params:
            raise ValueError("task_params: only valid when task is given by name")
        name, fixed = task.name, task
    elif isinstance(task, str):
        from .. import tasks

        if task not in tasks.names():
            raise ValueError(f"task: unknown task {task!r}; expected one of {tasks.names()}")
        name, fixed = task, None
    else:
        raise ValueError(f"task: expected a Task or a task name, got {type(task).__name__}")
    bench = Bench(name, task=name, models=tuple(variant(m, **overrides.get(m, {})) for m in models),
                  params=task_params or {}, seeds=tuple(seeds), protocol=protocol, options=options or {},
                  scales={scale: Scale(task_scale=scale)})
    return plan_bench(None, bench, scale, task=fixed)


def run(task: Task | str, models: Iterable[str], seeds: Iterable[int] = (0, 1, 2), *, scale: str = "quick",
        task_params: dict[str, Any] | None = None, overrides: dict[str, dict[str, Any]] | None = None,
        log: Any = None, store: str | os.PathLike | None = None, recompute: bool = False,
        hooks: Iterable[Any] = (), protocol: str = "fit", options: dict[str, Any] | None = None,
        backend: str = "local", device: Any = None) -> list[dict[str, Any]]:
    """Train each model for each seed on ``task.train`` and score it on every test split.

    Args:
        task: a ``Task`` (its data is fixed; seeds vary the models) or a registered task name
            (generated per seed with ``hn.tasks.make(task, seed=seed, scale=scale, **task_params)``).
        models: registered model names. seeds: non-negative ints, no duplicates.
        scale, task_params: generator settings when ``task`` is a name.
        overrides: ``{model: {config key: value}}`` applied over ``task.model_configs``.
        log: optional callable taking a progress line (e.g. ``print``).
        store: optional ``.jsonl`` record store: each finished fit is written there at once, and
            a fit already there (same task parameters, model, config, seed, protocol) is reused
            instead of trained again, unless ``recompute``.
        hooks: ``hebbnets.experiments.FitHook`` observers of every fit (local backend).
        protocol, options: a registered protocol (default ``"fit"``) and its options.
        backend: ``"local"`` or ``"ray"`` (one Ray task per fit).
        device: where every model trains (``hebbnets.models.make``'s ``device``; default the CPU).

    Returns:
        One record per (seed, model, split, metric); see the module docstring.
    """
    from ..experiments import RecordStore, execute, flat_records

    jobs = plan(task, models, seeds, scale=scale, task_params=task_params, overrides=overrides, protocol=protocol,
                options=options)
    entries = execute(jobs, RecordStore(store) if store is not None else None, log=log, hooks=hooks, backend=backend,
                      recompute=recompute, device=device)
    return flat_records(entries)
