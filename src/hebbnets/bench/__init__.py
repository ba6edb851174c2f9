"""Benchmark tools: ``run`` (every model x seed on a task, through the experiments runner),
table maths (``summarize``, ratios), validation-only tuning (``tune``), speed measurements
(``speed``), and the ``hebbnets run`` / ``merge`` subcommands (``cli_run``)."""
from .io import merge_entries, write_csv
from .runner import plan, run
from ..measures.summary import format_table, ood_id_ratios, relative_to_best_baseline, sample_std, summarize
from .tune import grid_points, tune, validation_split

__all__ = [
    "format_table", "grid_points", "merge_entries", "ood_id_ratios", "plan", "relative_to_best_baseline", "run",
    "sample_std", "summarize", "tune", "validation_split", "write_csv",
]
