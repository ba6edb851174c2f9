"""Files of runner results: a CSV of flat records, and the merge of record stores."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

CSV_FIELDS = ("task", "model", "seed", "split", "metric", "value", "num_parameters", "fit_seconds",
              "predict_seconds", "version", "git_commit", "git_dirty", "task_params", "model_config",
              "active_fraction", "edges_per_sample")


def write_csv(records: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    """One row per flat record (``hebbnets.experiments.flat_records``); ``task_params`` and
    ``model_config`` as JSON strings."""
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


def merge_entries(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The entries of several record stores (e.g. one per machine) as one list.

    Raises ``ValueError`` if two parts hold the same fit (the same key): a merged table must
    not count a fit twice, and two results for one key mean the runs were not independent.
    """
    seen: dict[str, int] = {}
    merged: list[dict[str, Any]] = []
    for i, entries in enumerate(parts):
        for e in entries:
            if "key" not in e or "kind" not in e:
                raise ValueError(f"inputs: part {i} holds an entry without key and kind (not a record store?)")
            if e["key"] in seen:
                what = f"{e.get('model')} seed {e.get('seed')} on {e.get('task')}"
                raise ValueError(f"inputs: parts {seen[e['key']]} and {i} both hold the fit {what} (key {e['key']})")
            seen[e["key"]] = i
            merged.append(e)
    return merged
