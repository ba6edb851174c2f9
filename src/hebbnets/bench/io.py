"""Writers for runner results: one JSON (records, summary, ratios) and one CSV (records)."""
from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any

from .summary import ood_id_ratios, relative_to_best_baseline, summarize

CSV_FIELDS = ("task", "model", "seed", "split", "metric", "value", "num_parameters", "fit_seconds",
              "predict_seconds", "version", "git_commit", "task_params", "model_config",
              "active_fraction", "edges_per_sample")


def _finite(value: Any) -> Any:
    """JSON has no NaN/Inf: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def write_json(records: list[dict[str, Any]], path: str | os.PathLike, model: str = "vn") -> Path:
    """Write ``{"records", "summary", "ood_id_ratio", "relative_to_best_baseline"}`` to ``path``.

    The ratios are computed per metric: ``ood_id_ratio`` is ``{metric: {model: {split: r}}}``
    and ``relative_to_best_baseline`` is ``{"model": model, "metrics": {metric: {split: ...}}}``.
    """
    summary = summarize(records)
    by_metric = {m: [r for r in summary if r["metric"] == m] for m in dict.fromkeys(r["metric"] for r in summary)}
    doc = {
        "records": records,
        "summary": summary,
        "ood_id_ratio": {m: ood_id_ratios(rows) for m, rows in by_metric.items()},
        "relative_to_best_baseline": {"model": model, "metrics": {
            m: relative_to_best_baseline(rows, model) for m, rows in by_metric.items()}},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_finite(doc), indent=2))
    return path


def write_csv(records: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    """One row per record; ``task_params`` and ``model_config`` as JSON strings."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for r in records:
            row = {k: r.get(k) for k in CSV_FIELDS}
            row["task_params"] = json.dumps(r["task_params"], sort_keys=True)
            row["model_config"] = json.dumps(r["model_config"], sort_keys=True)
            writer.writerow(row)
    return path


def read_json(path: str | os.PathLike) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def merge_records(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Concatenate the records of several runs (e.g. one per seed, run in parallel).

    Raises ``ValueError`` if two parts hold the same (task, task parameters, model, seed, split,
    metric): a merged table must not count a fit twice.
    """
    seen: dict[str, int] = {}
    merged: list[dict[str, Any]] = []
    for i, records in enumerate(parts):
        for r in records:
            try:
                key = json.dumps([r["task"], r["task_params"], r["model"], r["seed"], r["split"], r["metric"]],
                                 sort_keys=True)
            except (KeyError, TypeError):
                raise ValueError(f"inputs: part {i} holds a record without task, task_params, model, seed, "
                                 f"split and metric (not written by `hebbnets run`?)") from None
            if key in seen and seen[key] != i:
                raise ValueError(f"inputs: parts {seen[key]} and {i} both hold {r['model']} seed {r['seed']} "
                                 f"split {r['split']} ({r['metric']}) of task {r['task']}")
            seen[key] = i
            merged.append(r)
    return merged
