"""Experiments as data: specs, protocols, one record store, reports rebuilt from records.

    hebbnets reproduce NAME|all [--stage tune,run,report] [--scale smoke|quick|paper] ...
    hebbnets report NAME|all          # reports/NAME.md (+ figures) from records/NAME.jsonl alone

A ``Spec`` (one report) lists ``Bench``es (models x seeds on a task under a protocol, with
tuning grids and per-scale overrides) and ``Measure``s (speed measurements), and the report's
sections. ``register_spec`` makes it runnable by name; ``register_protocol`` adds a protocol
(what one job does with a model and a task); ``register_statistic`` a per-fit statistic;
``register_figure`` a figure kind. ``docs/experiments.md`` walks through adding a bench, a
model, a protocol and a report section.
"""
from ._protocols import (DEFAULT_STATISTICS, FitContext, FitHook, decode_images, encode_images, get_protocol,
                         protocol_names, register_protocol, register_statistic, statistic_names)
from .reporting import (Cell, Claim, Custom, Figure, ReportContext, ResultsTable, Section, Text, TuningTable, build_report,
                      capped_fits, figure_kinds, fmt, fmt_pct, ood_id_ratio, ratio_to_best, register_figure,
                      stale_fits, unrun_line)
from ..measures.speed import loglog_slope
from ._reproduce import STAGES, parse_stages, report, reproduce, store_for, tune_bench
from ._run import Job, execute, flat_records, plan_bench, plan_measure, plan_spec, run_job
from ._spec import (DEFAULT_SCALES, SCALES, Bench, Grid, Measure, Moves, Scale, Spec, Variant, get_spec,
                    register_spec, spec_names, variant)
from ._store import (
    COSMETIC_CONFIG_KEYS, RecordStore, canonical_config, fit_key, jsonable, measure_key, neutral_values, provenance,
)
from . import references  # noqa: F401,E402  (registers the reference predictors 'zeros', 'gap_interp')

__all__ = [
    "Bench", "COSMETIC_CONFIG_KEYS", "canonical_config", "neutral_values", "Cell", "Claim", "Custom", "DEFAULT_SCALES", "DEFAULT_STATISTICS", "Figure",
    "FitContext", "FitHook", "Grid", "Job", "Measure", "Moves", "RecordStore", "ReportContext", "ResultsTable", "SCALES",
    "STAGES", "Scale", "Section", "Spec", "Text", "TuningTable", "Variant", "build_report", "capped_fits", "decode_images", "encode_images", "execute",
    "figure_kinds", "fit_key", "flat_records", "fmt", "fmt_pct", "get_protocol", "get_spec", "jsonable", "loglog_slope",
    "measure_key", "ood_id_ratio", "parse_stages", "plan_bench", "plan_measure", "plan_spec", "protocol_names",
    "provenance", "ratio_to_best", "register_figure", "register_protocol", "register_spec", "register_statistic",
    "report", "reproduce", "run_job", "spec_names", "stale_fits", "statistic_names", "store_for", "tune_bench", "unrun_line",
    "variant",
]
