"""Table maths over runner records: mean +- sample std, OOD/ID ratios, VN vs best baseline.

Definitions (documented once, tested against hand-computed values):

* ``mean``: arithmetic mean over seeds; ``std``: *sample* standard deviation (``n - 1`` in the
  denominator; NaN for a single seed).
* OOD/ID ratio of a model on an OOD split: ``mean error(ood split) / mean error(id)``.
* VN relative to the best baseline on a split: ``mean error(vn) / min over baselines of mean
  error``; a value below 1 means VN is better.
* "error" is the metric itself for lower-is-better metrics (MSE) and ``1 - value`` for
  higher-is-better ones (accuracy), so ratios always compare errors.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable

from ..metrics import HIGHER_IS_BETTER


def sample_std(values: list[float]) -> float:
    """Sample standard deviation (denominator ``n - 1``); NaN when ``n < 2``."""
    n = len(values)
    if n < 2:
        return math.nan
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def to_error(value: float, metric: str) -> float:
    return 1.0 - value if metric in HIGHER_IS_BETTER else value


def summarize(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, model, split, metric): ``n``, ``mean``, ``std`` over seeds,
    ``num_parameters`` (mean over seeds), in first-seen order."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["task"], r["model"], r["split"], r["metric"])].append(r)
    rows = []
    for (task, model, split, metric), rs in groups.items():
        values = [float(r["value"]) for r in rs]
        rows.append({
            "task": task, "model": model, "split": split, "metric": metric,
            "n": len(values), "mean": sum(values) / len(values), "std": sample_std(values),
            "num_parameters": sum(r["num_parameters"] for r in rs) / len(rs),
            "seeds": [r["seed"] for r in rs],
        })
    return rows


def _means(summary: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """{model: {split: mean error}} of a summary of one metric."""
    metrics = sorted({row["metric"] for row in summary})
    if len(metrics) > 1:
        raise ValueError(f"summary: ratios compare one metric at a time, got {metrics}; filter by 'metric' first")
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for row in summary:
        out[row["model"]][row["split"]] = to_error(row["mean"], row["metric"])
    return out


def ood_id_ratios(summary: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """{model: {ood split: mean error(ood) / mean error(id)}} (inf if the ID error is 0)."""
    out: dict[str, dict[str, float]] = {}
    for model, errs in _means(summary).items():
        if "id" not in errs:
            continue
        ident = errs["id"]
        out[model] = {s: (e / ident if ident > 0 else math.inf) for s, e in errs.items() if s.startswith("ood")}
    return out


def relative_to_best_baseline(summary: list[dict[str, Any]], model: str = "vn") -> dict[str, dict[str, Any]]:
    """{split: {"best_baseline", "baseline_error", "model_error", "ratio"}} for every split where
    ``model`` and at least one other model were run; ratio = model error / best baseline error."""
    means = _means(summary)
    if model not in means:
        return {}
    out = {}
    for split, err in means[model].items():
        baselines = {m: e[split] for m, e in means.items() if m != model and split in e}
        if not baselines:
            continue
        best = min(baselines, key=lambda m: baselines[m])
        b = baselines[best]
        out[split] = {"best_baseline": best, "baseline_error": b, "model_error": err,
                      "ratio": err / b if b > 0 else math.inf}
    return out


def _fmt(v: float) -> str:
    return "nan" if math.isnan(v) else f"{v:.3g}"


def _mean_std(row: dict[str, Any]) -> str:
    """``mean ± std``; one seed prints the mean alone (a sample std needs two)."""
    if row["n"] < 2 or math.isnan(row["std"]):
        return _fmt(row["mean"])
    return f"{_fmt(row['mean'])} ± {_fmt(row['std'])}"


def format_table(summary: list[dict[str, Any]], title: str = "", model: str = "vn") -> str:
    """Plain-text table: mean +- sample std per model and split, parameter counts, OOD/ID
    ratios, and ``model``'s error relative to the best baseline; one block per metric."""
    metrics = list(dict.fromkeys(r["metric"] for r in summary))
    if len(metrics) > 1:
        blocks = [_format_block([r for r in summary if r["metric"] == m], "", model) for m in metrics]
        return "\n\n".join(([title] if title else []) + blocks)
    return _format_block(summary, title, model)


def _format_block(summary: list[dict[str, Any]], title: str, model: str) -> str:
    splits = list(dict.fromkeys(r["split"] for r in summary))
    models = list(dict.fromkeys(r["model"] for r in summary))
    cell = {(r["model"], r["split"]): r for r in summary}
    lines = [title] if title else []
    metric = summary[0]["metric"] if summary else "?"
    n = max((r["n"] for r in summary), default=0)
    lines.append(f"metric: {metric}, mean ± sample std over {n} seed(s)")
    width = 22
    lines.append(f"{'model':<12}{'params':>9}  " + "".join(f"{s:>{width}}" for s in splits))
    for m in models:
        params = next(r["num_parameters"] for r in summary if r["model"] == m)
        cells = []
        for s in splits:
            r = cell.get((m, s))
            cells.append(f"{'-':>{width}}" if r is None else f"{_mean_std(r):>{width}}")
        lines.append(f"{m:<12}{int(round(params)):>9}  " + "".join(cells))
    ratios = ood_id_ratios(summary)
    ood = [s for s in splits if s.startswith("ood")]
    if ratios and ood:
        lines.append("")
        lines.append("OOD/ID error ratio (mean OOD / mean ID)")
        lines.append(f"{'model':<12}" + "".join(f"{s:>14}" for s in ood))
        for m in models:
            if m in ratios:
                lines.append(f"{m:<12}" + "".join(f"{_fmt(ratios[m].get(s, math.nan)):>14}" for s in ood))
    rel = relative_to_best_baseline(summary, model)
    if rel:
        lines.append("")
        lines.append(f"{model} error / best baseline error (< 1: {model} better)")
        for s, d in rel.items():
            lines.append(f"  {s:<14} {_fmt(d['ratio']):>8}   (best baseline {d['best_baseline']}: "
                         f"{_fmt(d['baseline_error'])}; {model}: {_fmt(d['model_error'])})")
    return "\n".join(lines)
