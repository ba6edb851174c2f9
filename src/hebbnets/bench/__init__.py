"""Benchmark runner: ``run`` (train/score every model x seed), table maths, JSON/CSV writers,
validation-only tuning, and the ``hebbnets run`` subcommand (``cli_run``)."""
from .io import read_json, write_csv, write_json
from .runner import git_commit, plan, run
from .summary import format_table, ood_id_ratios, relative_to_best_baseline, sample_std, summarize
from .tune import grid_points, tune

__all__ = [
    "format_table", "git_commit", "grid_points", "ood_id_ratios", "plan", "read_json",
    "relative_to_best_baseline", "run", "sample_std", "summarize", "tune", "write_csv", "write_json",
]
