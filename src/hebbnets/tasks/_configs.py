"""Task configs as data: ``hebbnets/tasks/configs/<task>[-<mode>].json``.

Each file holds, per model, the configuration chosen on validation data carved from the
task's training split (``"config"``, overrides of the model's defaults) and every validation
point behind the choice (``"points"``), with where they came from. Task modules read their
file when a task is generated (``chosen``); ``hebbnets reproduce NAME --stage tune`` writes it
(``update``). A file may instead say ``{"same_as": "<other file>"}`` (e.g. one mode reuses
another's choice), and may add models of its own beside it (a model searched only in this mode:
its own entry wins over the followed file's). Nothing here is copied by hand into code.

File layout::

    {"task": "spatial2d", "params": {"mode": "decode"}, "metric": "mse",
     "models": {"vn": {"config": {...}, "value": 0.0037, "search": "grid" | "moves",
                       "points": [{"config": {...}, "value": 0.0046, ...}, ...],
                       "source": "how the choice was made", "commit": "...", "dirty": false, ...}, ...}}

A key that is a bench's variant label tuned on its own (``Bench.tuning``) rather than a model
name carries ``"model"``, the registered model it configures.
"""
from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(str(resources.files("hebbnets.tasks") / "configs"))


def path(stem: str, directory: str | os.PathLike | None = None) -> Path:
    """The file of ``stem`` (e.g. ``"spatial2d-decode"``) in ``directory`` (default: the package's)."""
    if not isinstance(stem, str) or not stem or "/" in stem or stem.startswith("."):
        raise ValueError(f"stem: expected a configs file name like 'spatial2d-decode', got {stem!r}")
    return Path(directory or PACKAGE_DIR) / f"{stem}.json"


def load(stem: str, directory: str | os.PathLike | None = None, *, follow: bool = True) -> dict[str, Any]:
    """The document of ``stem`` (``{}`` if there is no file), following ``same_as``: the followed
    document, with the models ``stem``'s own file adds (its own entries win). ``follow=False``:
    the file as written."""
    p = path(stem, directory)
    if not p.exists():
        return {}
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"stem: {p} is not valid JSON ({exc})") from None
    seen, own_models = {stem}, {}
    while follow and isinstance(doc, dict) and "same_as" in doc:
        other = doc["same_as"]
        if other in seen:
            raise ValueError(f"stem: configs file {stem!r} refers to itself through 'same_as'")
        seen.add(other)
        own_models = {**doc.get("models", {}), **own_models}  # the nearer file wins
        doc = load(other, directory, follow=False)
    if own_models:
        doc = {**doc, "models": {**doc.get("models", {}), **own_models}}
    return doc


def chosen(stem: str, directory: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """``{model: config}`` of ``stem`` (``{}`` if there is no file): what tasks hand to
    ``hn.models.make(name, task=task)`` as their ``model_configs``."""
    return {m: dict(d["config"]) for m, d in load(stem, directory).get("models", {}).items()}


def update(stem: str, doc: dict[str, Any], directory: str | os.PathLike | None = None) -> Path:
    """Write ``doc`` to ``stem``'s file, keeping models of the existing file that ``doc`` does
    not tune (a file that follows another with ``same_as`` keeps following it for every model
    ``doc`` does not tune: ``doc``'s models become its own). Atomic."""
    p = path(stem, directory)
    old = load(stem, directory, follow=False) if p.exists() else {}
    models = dict(old.get("models", {}))
    models.update(doc.get("models", {}))
    merged = {**{k: v for k, v in old.items() if k != "models"}, **doc, "models": models}
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(merged, indent=1) + "\n")
    os.replace(tmp, p)
    return p
