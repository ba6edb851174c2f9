"""``run``: train every model for every seed on a task and score every test split.

Each result is one flat record (a plain dict, JSON-ready)::

    task, task_params, model, model_config, seed, split, metric, value,
    num_parameters, fit_seconds, predict_seconds, version, git_commit

plus one record per entry of ``task.extra_metrics`` (same fields, ``metric`` = its name,
``predict_seconds`` = the time that score took).

The runner only orchestrates: models come from ``hn.models.make(name, task=task, seed=seed,
**overrides)`` (so they start from ``task.model_configs[name]``), and train through their own
``fit`` (for backprop models: the one loop in ``hebbnets.training``).
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from .. import models as _models
from .. import tasks as _tasks
from ..metrics import get_metric
from ..tasks import Task


def git_commit() -> str | None:
    """``git rev-parse HEAD`` of the checkout holding this package, or None (not a checkout,
    no git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def jsonable(value: Any) -> Any:
    """Tuples -> lists, recursively, and tensors/arrays -> lists, so params survive JSON."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: need at least one seed")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"seeds: expected non-negative ints, got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: contains duplicates {seeds}")
    return seeds


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
         task_params: dict[str, Any] | None = None,
         overrides: dict[str, dict[str, Any]] | None = None) -> list[tuple[int, Task, dict[str, Any]]]:
    """Validate everything a run needs before any training starts.

    Returns ``[(seed, task, {model name: unfitted model})]``. Raises ``ValueError`` (naming the
    argument) for unknown task/model names, bad seeds, unknown task parameters or model config
    keys, so a typo fails in a second rather than after an hour of training.
    """
    models = _check_models(models)
    seeds = _check_seeds(seeds)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(models))
    if unknown:
        raise ValueError(f"overrides: model(s) {unknown} are not among the models being run {models}")
    out = []
    for seed in seeds:
        if isinstance(task, Task):
            if task_params:
                raise ValueError("task_params: only valid when task is given by name")
            inst = task  # fixed data: the seed varies only the models
        elif isinstance(task, str):
            # a task given by name is regenerated per seed: seeds vary data and models alike
            inst = _tasks.make(task, seed=seed, scale=scale, **(task_params or {}))
        else:
            raise ValueError(f"task: expected a Task or a task name, got {type(task).__name__}")
        built = {m: _models.make(m, seed=seed, task=inst, **overrides.get(m, {})) for m in models}
        out.append((seed, inst, built))
    return out


def _activity(model: Any) -> dict[str, float]:
    """Sparsity measured by models that report it (RSGN's ``last_stats``, set by the predict
    call just made; for splits over 1024 samples, by its last 1024-sample chunk)."""
    stats = getattr(model, "last_stats", None)
    if not stats or "active_fraction" not in stats:
        return {}
    out = {"active_fraction": float(stats["active_fraction"][-1]),
           "edges_per_sample": float(stats["edges_per_sample"])}
    for key in ("activity", "activity_post_cap"):  # sparse RSGN: mean over steps, before / after its cap
        if key in stats:
            out[key] = float(stats[key])
    return out


# config fields that change how a fit is displayed, not what it computes
_COSMETIC_CONFIG_KEYS = frozenset({"progress"})


def _fit_key(record: dict[str, Any]) -> str:
    """What must match for a checkpointed fit to stand in for a new one."""
    config = {k: v for k, v in record["model_config"].items() if k not in _COSMETIC_CONFIG_KEYS}
    return json.dumps([record["task"], record["task_params"], record["model"], record["seed"], config],
                      sort_keys=True)


def read_checkpoint(path: str | os.PathLike) -> dict[str, list[dict[str, Any]]]:
    """Records of a ``run(..., checkpoint=path)`` file, grouped by fit (a missing file is empty).

    The file holds one JSON line per finished (seed, model) fit: the list of its records. A
    truncated last line (the process was killed while writing it) is ignored.
    """
    path = Path(path)
    done: dict[str, list[dict[str, Any]]] = {}
    if not path.exists():
        return done
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        try:
            recs = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise ValueError(f"checkpoint: line {i + 1} of {path} is not JSON") from None
        if not isinstance(recs, list) or not recs:
            raise ValueError(f"checkpoint: line {i + 1} of {path} is not a non-empty list of records")
        done[_fit_key(recs[0])] = recs
    return done


def run(task: Task | str, models: Iterable[str], seeds: Iterable[int] = (0, 1, 2), *, scale: str = "quick",
        task_params: dict[str, Any] | None = None, overrides: dict[str, dict[str, Any]] | None = None,
        log: Any = None, checkpoint: str | os.PathLike | None = None,
        resume: bool = False) -> list[dict[str, Any]]:
    """Train each model for each seed on ``task.train`` and score it on every test split.

    Args:
        task: a ``Task`` (its data is fixed; seeds vary the models) or a registered task name
            (generated per seed with ``hn.tasks.make(task, seed=seed, scale=scale, **task_params)``).
        models: registered model names.
        seeds: non-negative ints, no duplicates.
        scale, task_params: generator settings when ``task`` is a name.
        overrides: ``{model: {config key: value}}`` applied over ``task.model_configs``.
        log: optional callable taking a progress line (e.g. ``print``).
        checkpoint: optional JSON-lines file; the records of each finished (seed, model) fit are
            appended to it at once, so a killed run loses at most the fit in progress.
        resume: reuse the fits already in ``checkpoint`` whose task, task parameters, model,
            seed and config (progress switches aside) equal this run's; others are trained.
            Without ``resume`` an existing checkpoint file is started afresh.

    Returns:
        One record per (seed, model, test split); see the module docstring.
    """
    if resume and checkpoint is None:
        raise ValueError("resume: needs a checkpoint file")
    jobs = plan(task, models, seeds, scale=scale, task_params=task_params, overrides=overrides)
    done: dict[str, list[dict[str, Any]]] = {}
    if checkpoint is not None:
        checkpoint = Path(checkpoint)
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            done = read_checkpoint(checkpoint)
            # rewrite without a possibly truncated last line before appending to it
            checkpoint.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
        else:
            checkpoint.write_text("")
    commit = git_commit()
    records: list[dict[str, Any]] = []
    for seed, inst, built in jobs:
        for name, model in built.items():
            key = _fit_key({"task": inst.name, "task_params": jsonable(inst.params), "model": name,
                            "seed": seed, "model_config": jsonable(dataclasses.asdict(model.config))})
            if key in done:
                records += done[key]
                if log is not None:
                    log(f"[{inst.name}] {name} seed={seed}: reused from {checkpoint}")
                continue
            t0 = time.perf_counter()
            model.fit(inst.train)
            fit_s = time.perf_counter() - t0
            base = {
                "task": inst.name,
                "task_params": jsonable(inst.params),
                "model": name,
                "model_config": jsonable(dataclasses.asdict(model.config)),
                "seed": seed,
                "num_parameters": int(model.num_parameters),
                "fit_seconds": fit_s,
                "version": __version__,
                "git_commit": commit,
            }
            new: list[dict[str, Any]] = []
            for split_name, split in inst.tests.items():
                t0 = time.perf_counter()
                y_hat = model.predict(split.x, split.x_mask)
                pred_s = time.perf_counter() - t0
                value = get_metric(inst.metric)(y_hat, split)
                activity = _activity(model)
                new.append({**base, "split": split_name, "metric": inst.metric, "value": float(value),
                            "predict_seconds": pred_s, **activity})
                for metric_name, fn in inst.extra_metrics.items():
                    t0 = time.perf_counter()
                    value = fn(model, inst, split_name)
                    new.append({**base, "split": split_name, "metric": metric_name, "value": float(value),
                                "predict_seconds": time.perf_counter() - t0})
            records += new
            if checkpoint is not None:
                with checkpoint.open("a") as fh:
                    fh.write(json.dumps(new) + "\n")
            if log is not None:
                scores = ", ".join(f"{r['split']}={r['value']:.4g}" for r in new if r["metric"] == inst.metric)
                log(f"[{inst.name}] {name} seed={seed}: fit {fit_s:.1f}s; {scores}")
    return records
