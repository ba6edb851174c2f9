"""The ``hebbnets run`` and ``hebbnets merge`` subcommands (argument parsing only; the work is in
``bench.runner``, i.e. the experiments runner, and ``bench.io``).

    hebbnets run TASK --models vn,mlp --seeds 0,1,2 --scale quick --out results/ \\
        [--set KEY=VALUE ...] [--model-set MODEL.KEY=VALUE ...] [--recompute]
    hebbnets merge OUT.jsonl IN.jsonl [IN.jsonl ...]   # e.g. seeds run on different machines

``run`` keeps its fits in the record store ``OUT/<stem>.jsonl`` (each fit written as it ends);
the same command again reuses every finished fit whose task parameters and config are unchanged
and trains only the rest. ``--set`` values are parsed as JSON when possible (``n_train=500``,
``held_out=[8,16]``, ``noise=0.1``) and kept as strings otherwise (``mode=masked``). Bad input
(unknown task, model, parameter or config key, malformed ``--set``, a model that cannot run on
the task) prints one error line and exits with code 2, before anything trains.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def parse_value(text: str, name: str = "value") -> Any:
    """JSON if it parses (numbers, lists, true/false/null), else the raw string. NaN and
    Infinity (which Python's JSON accepts) raise ``ValueError`` naming ``name``: no parameter
    takes them, and a record cannot hold them."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    if _non_finite(value):
        raise ValueError(f"{name}: expected a finite number, got {text!r}")
    return value


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    return False


def parse_assignments(items: list[str], name: str, dotted: bool = False) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``; with ``dotted``, ``"m.k=v"`` ->
    ``{"m": {"k": v}}``. Raises ``ValueError`` naming ``name`` on malformed items."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        pattern = r"[A-Za-z_][\w-]*\.[A-Za-z_]\w*" if dotted else r"[A-Za-z_]\w*"
        if not sep or not re.fullmatch(pattern, key):
            form = "MODEL.KEY=VALUE" if dotted else "KEY=VALUE"
            raise ValueError(f"{name}: expected {form}, got {item!r}")
        if dotted:
            model, field = key.split(".", 1)
            out.setdefault(model, {})[field] = parse_value(value, f"{name} {key}")
        else:
            out[key] = parse_value(value, f"{name} {key}")
    return out


def _int_list(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated integers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name}: expected at least one integer, got {text!r}")
    return values


def _stem(task: str, task_params: dict[str, Any], scale: str) -> str:
    parts = [task, scale] + [f"{k}-{v}" for k, v in sorted(task_params.items())]
    stem = "_".join(parts)
    return re.sub(r"[^A-Za-z0-9_.=-]+", "", stem)[:120]


def add_run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``run`` subcommand to an argparse subparsers object."""
    p = sub.add_parser("run", help="train models on a benchmark task for several seeds and report a table",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="registered task name (see hebbnets.tasks.names())")
    p.add_argument("--models", required=True, help="comma-separated model names, e.g. vn,mlp")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    p.add_argument("--scale", default="quick", help="task scale: quick or paper (default quick)")
    p.add_argument("--out", default="results", help="output folder for the record store and CSV (default results/)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="task parameter, e.g. --set mode=masked (repeatable)")
    p.add_argument("--model-set", dest="model_sets", action="append", default=[], metavar="MODEL.KEY=VALUE",
                   help="model config override, e.g. --model-set mlp.epochs=50 (repeatable)")
    p.add_argument("--recompute", action="store_true", help="train every fit again even if the store holds it")
    p.add_argument("--quiet", action="store_true", help="no per-fit progress lines")
    p.set_defaults(func=handle_run)
    return p


def handle_run(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args``; returns the process exit code."""
    from .._validation import check_out_folder
    from ..experiments import RecordStore, execute, flat_records
    from .io import write_csv
    from .runner import plan
    from ..measures.summary import format_table, summarize

    try:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        seeds = _int_list(args.seeds, "--seeds")
        task_params = parse_assignments(args.sets, "--set")
        overrides = parse_assignments(args.model_sets, "--model-set", dotted=True)
        out = check_out_folder(args.out)
        # validates names, seeds, task parameters, config keys and compatibility before any training
        jobs = plan(args.task, models, seeds, scale=args.scale, task_params=task_params, overrides=overrides)
    except ValueError as exc:
        print(f"hebbnets run: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    stem = _stem(args.task, task_params, args.scale)
    store = RecordStore(out / f"{stem}.jsonl")
    records = flat_records(execute(jobs, store, log=log, recompute=args.recompute,
                                   device=getattr(args, "device", None)))
    csv_path = write_csv(records, out / f"{stem}.csv")
    params = ", ".join(f"{k}={v}" for k, v in task_params.items())
    title = f"{args.task} ({params + ', ' if params else ''}scale={args.scale}), seeds {seeds}"
    print(format_table(summarize(records), title=title))
    print(f"\nrecords in {store.path}, table in {csv_path} ({time.perf_counter() - t0:.0f}s)")
    return 0


def add_merge_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``merge`` subcommand to an argparse subparsers object."""
    p = sub.add_parser("merge", help="merge the record stores of several runs into one store, CSV and table",
                       description="Merge record stores written by `hebbnets run` (for example one per seed or "
                       "model, run on different machines) into OUT (a .jsonl store) and the CSV beside it, and print "
                       "the table. A fit present in two inputs is an error.")
    p.add_argument("output", help="record store to write (.jsonl; the CSV gets the same name with .csv)")
    p.add_argument("inputs", nargs="+", help="record stores (.jsonl) written by `hebbnets run`")
    p.set_defaults(func=handle_merge)
    return p


def handle_merge(args: argparse.Namespace) -> int:
    """Merge the stores named in ``args``; returns the process exit code."""
    from ..experiments import RecordStore, flat_records
    from .io import merge_entries, write_csv
    from ..measures.summary import format_table, summarize

    try:
        output = Path(args.output)
        if output.suffix != ".jsonl":
            raise ValueError(f"output: expected a .jsonl path, got {args.output!r}")
        parts = []
        for name in args.inputs:
            path = Path(name)
            if not path.is_file():
                raise ValueError(f"inputs: no such file {name!r}")
            if path.suffix != ".jsonl":
                raise ValueError(f"inputs: {name!r} is not a record store (.jsonl)")
            try:
                parts.append(RecordStore(path).entries())
            except ValueError as exc:
                raise ValueError(f"inputs: {name!r}: {exc}") from None
        entries = merge_entries(parts)
    except ValueError as exc:
        print(f"hebbnets merge: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    RecordStore(output).rewrite(entries)
    records = flat_records(entries)
    csv_path = write_csv(records, output.with_suffix(".csv"))
    print(format_table(summarize(records), title=f"merged: {len(args.inputs)} stores, {len(entries)} fits"))
    print(f"\nwrote {output} and {csv_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m hebbnets.bench.cli_run run ...``)."""
    parser = argparse.ArgumentParser(prog="hebbnets")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_parser(sub)
    add_merge_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
