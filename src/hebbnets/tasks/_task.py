"""``Task``: a training split, named test splits, a metric, and per-model configurations."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .._split import Split
from .._validation import check_choice
from ..metrics import get_metric
from ..training import carve_validation

SCALES = ("quick", "paper")


@dataclass
class Task:
    """A benchmark instance.

    Attributes:
        name: registered task name.
        train: the training split (models may carve validation data from it, nothing else).
        tests: named held-out splits: ``"id"`` and ``"ood..."`` (e.g. ``"ood_pairs"``).
        metric: metric name (see ``hebbnets.metrics``) every split is scored with.
        params: the generator parameters that produced this instance (seed and scale included).
        model_configs: ``{model name: config overrides}`` chosen on validation data carved from
            the training distribution; ``hn.models.make(name, task=task)`` starts from these.
        info: free-form extra data (e.g. ground-truth factors) for analysis and plots.
        extra_metrics: ``{name: fn(model, task, split_name) -> float}``, scores that need the
            model itself rather than one prediction (e.g. an autoregressive rollout); the runner
            records each of them on every test split next to ``metric``.
        stages: ``{stage name: training split}`` in learning order, for continual learning (empty
            for an ordinary task): the first stage is learned with ``fit``, each later one with
            ``partial_fit`` (``hebbnets.continual.fit_stages``); ``train`` then holds all stages
            together (joint training, the reference without forgetting).
    """

    name: str
    train: Split
    tests: dict[str, Split]
    metric: str = "mse"
    params: dict[str, Any] = field(default_factory=dict)
    model_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    extra_metrics: dict[str, Callable[..., float]] = field(default_factory=dict)
    stages: dict[str, Split] = field(default_factory=dict)

    def __post_init__(self) -> None:
        get_metric(self.metric)
        for key, fn in self.extra_metrics.items():
            if not callable(fn):
                raise ValueError(f"extra_metrics: {key!r} is not callable")
            if key == self.metric:
                raise ValueError(f"extra_metrics: {key!r} repeats the task's metric")
        if not isinstance(self.train, Split):
            raise ValueError("train: expected a hebbnets.Split")
        if "id" not in self.tests:
            raise ValueError("tests: must contain an 'id' split")
        for key, split in self.tests.items():
            if not isinstance(split, Split):
                raise ValueError(f"tests: {key!r} is not a hebbnets.Split")
            if split.x.shape[1:] != self.train.x.shape[1:] or split.y.shape[1:] != self.train.y.shape[1:]:
                raise ValueError(f"tests: split {key!r} has per-sample shapes that differ from train")
        for key, split in self.stages.items():
            if not isinstance(split, Split):
                raise ValueError(f"stages: {key!r} is not a hebbnets.Split")
            if split.x.shape[1:] != self.train.x.shape[1:] or split.y.shape[1:] != self.train.y.shape[1:]:
                raise ValueError(f"stages: stage {key!r} has per-sample shapes that differ from train")
        # scoring a split with the task's metric needs no extra argument
        for split in (self.train, *self.tests.values(), *self.stages.values()):
            split.metric = self.metric

    def __repr__(self) -> str:
        tests = ", ".join(f"{k}={len(v)}" for k, v in self.tests.items())
        stages = ", stages=[" + ", ".join(f"{k}={len(v)}" for k, v in self.stages.items()) + "]" if self.stages else ""
        return f"Task({self.name!r}, train={len(self.train)}{stages}, tests=[{tests}], metric={self.metric!r})"


_TASKS: dict[str, Callable[..., Task]] = {}


#: fixed so every model is tuned on the same train/validation partition
VALIDATION_SEED = 1234


def validation_split(task: Task, val_fraction: float = 0.2) -> tuple[Split, Split]:
    """``(train, validation)``: ``task.train`` split at random with the fixed
    ``VALIDATION_SEED``, so every model and every grid point sees the same partition. For a
    continual task (``task.stages``) the first stage is split instead: a configuration chosen
    for continual learning must not have seen any later stage."""
    if not isinstance(task, Task):
        raise ValueError(f"task: expected a Task, got {type(task).__name__}")
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction: must be in (0, 1), got {val_fraction!r}")
    gen = torch.Generator().manual_seed(VALIDATION_SEED)
    source = next(iter(task.stages.values())) if task.stages else task.train
    tr_idx, va_idx = carve_validation(len(source), val_fraction, gen)
    return source.subset(tr_idx), source.subset(va_idx)


def register_task(name: str) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    """Decorator for a task factory ``fn(seed, scale, **params) -> Task``."""

    def deco(fn: Callable[..., Task]) -> Callable[..., Task]:
        if name in _TASKS and _TASKS[name] is not fn:
            raise ValueError(f"name: task {name!r} is already registered")
        _TASKS[name] = fn
        return fn

    return deco


def names() -> list[str]:
    """Registered task names, sorted."""
    return sorted(_TASKS)


def make(name: str, seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Generate a registered task.

    Args:
        name: a name from ``names()``.
        seed: seeds the data generator (same seed -> identical tensors).
        scale: ``"quick"`` (minutes on a laptop CPU) or ``"paper"``.
        **params: generator parameters; unknown keys raise ``ValueError``.
    """
    check_choice(name, _TASKS, "name")
    check_choice(scale, SCALES, "scale")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    return _TASKS[name](seed=seed, scale=scale, **params)


def check_params(params: dict[str, Any], defaults: dict[str, Any], task: str) -> dict[str, Any]:
    """Merge ``params`` over ``defaults``; unknown keys raise ``ValueError`` naming them, and so
    does a value unlike its default (``check_param``), before any data is generated."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"params: unknown key(s) {unknown} for task {task!r}; known keys: {sorted(defaults)}")
    for key, value in params.items():
        check_param(key, value, defaults[key])
    return {**defaults, **params}


def check_param(key: str, value: Any, default: Any) -> None:
    """A task parameter must be of its default's kind: an int for an int (``1.5`` or ``true`` is
    not a sample count), a finite real for a float, a bool, a string, a list; a number whose
    default is non-negative must be too, and a count (``n_...``) at least 1. ``ValueError``
    naming ``key`` otherwise (the CLI's ``--set`` and the Python API alike)."""
    if default is None:
        return
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "a bool"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an int"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        kind = "a finite number"
    elif isinstance(default, str):
        ok, kind = isinstance(value, str), "a string"
    elif isinstance(default, (list, tuple)):
        ok, kind = isinstance(value, (list, tuple)), "a list"
    else:
        return
    if not ok:
        raise ValueError(f"{key}: expected {kind} (like the default {default!r}), got {value!r}")
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        low = 1 if key.startswith("n_") and isinstance(default, int) and default >= 1 else 0
        if default >= low and value < low:
            raise ValueError(f"{key}: expected a value >= {low}, got {value!r}")
