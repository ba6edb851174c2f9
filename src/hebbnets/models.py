"""The model registry: ``make``, ``names``, ``load`` and the ``register`` decorator."""
from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable

from ._model import CONFIG_FILE, Model, build_from_checkpoint, config_from_dict
from ._validation import check_choice, resolve_device, resolve_dtype

_REGISTRY: dict[str, type[Model]] = {}


class UntunedConfigWarning(UserWarning):
    """``make(name, task=task)`` for a task that has no validation-chosen configuration for
    ``name``: the model runs untuned (a common slip: a task mode without a configs file)."""


def register(name: str) -> Callable[[type[Model]], type[Model]]:
    """Class decorator: ``@register("vn")`` makes ``make("vn")`` build that class."""

    def deco(cls: type[Model]) -> type[Model]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"name: model {name!r} is already registered to {_REGISTRY[name].__name__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def names() -> list[str]:
    """Registered model names, sorted."""
    return sorted(_REGISTRY)


def get(name: str) -> type[Model]:
    """The class registered under ``name``."""
    check_choice(name, _REGISTRY, "name")
    return _REGISTRY[name]


def make(name: str, seed: int = 0, task: Any = None, device: Any = None, dtype: Any = None,
         **config: Any) -> Model:
    """Build a registered model.

    Args:
        name: a name from ``names()``.
        seed: seeds parameter initialisation and training order.
        task: optional ``hebbnets.tasks.Task``; its ``model_configs[name]`` (the configuration
            chosen for that task on validation data) is the starting point.
        device: where the model builds, trains and predicts: ``None``/``"cpu"``, ``"auto"``
            (CUDA when present), ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a ``torch.device``; data
            given to ``fit``/``predict``/``score`` is moved there.
        dtype: the floating dtype of its parameters and of the data it takes (``None``: the
            model's own, float32 unless its config says otherwise), e.g. ``torch.float64``.
        **config: overrides of the model's config fields; unknown keys raise ``ValueError``.
    """
    device, dtype = resolve_device(device), resolve_dtype(dtype)
    cls = get(name)
    values: dict[str, Any] = {}
    if task is not None:
        chosen = getattr(task, "model_configs", {})
        if name not in chosen and dataclasses.fields(cls.Config):
            warnings.warn(f"task {getattr(task, 'name', '?')!r} has no configuration chosen on validation data for "
                          f"model {name!r}: it runs with the model's defaults (and your overrides), untuned",
                          UntunedConfigWarning, stacklevel=2)
        values.update(chosen.get(name, {}))
    values.update(config)
    return cls(config_from_dict(cls, values, name), seed=seed).to(device=device, dtype=dtype)


def load(path: str | os.PathLike, device: Any = None) -> Model:
    """Load a model saved with ``Model.save(path)``, in the dtype it was saved in, onto
    ``device`` (default: the CPU). A folder that is not a whole, matching checkpoint raises one
    ``ValueError`` naming the path and what is wrong with it."""
    path = Path(path)
    cfg = path / CONFIG_FILE
    if not cfg.is_file():
        raise ValueError(f"path: no {CONFIG_FILE} in {str(path)!r}; not a hebbnets checkpoint")
    try:
        meta = json.loads(cfg.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"path: {str(cfg)!r} is not valid JSON ({exc})") from None
    missing = [k for k in ("model", "seed", "config", "spec") if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise ValueError(f"path: {str(cfg)!r} lacks {missing}; not a hebbnets checkpoint")
    if meta["model"] not in _REGISTRY:
        raise ValueError(f"path: {str(path)!r} holds model {meta['model']!r}, which is not registered; "
                         f"known models: {names()}")
    return build_from_checkpoint(get(meta["model"]), path, meta, device=resolve_device(device))


__all__ = ["Model", "UntunedConfigWarning", "get", "load", "make", "names", "register"]
