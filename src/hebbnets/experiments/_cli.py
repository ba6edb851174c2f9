"""Run an experiment spec: tune (validation searches), run (every fit the store lacks), report.

    hebbnets reproduce NAME|all [--stage tune,run,report|all] [--scale smoke|quick|paper]
                                [--seeds 0,1,2] [--out DIR] [--backend local|ray] [--address ADDR]
                                [--benches B1,B2] [--models M1,M2] [--recompute] [--no-figures]
    hebbnets report NAME|all [--scale ...] [--out DIR] [--no-figures]

Records go to OUT/records/NAME.jsonl (one line per fit, written as it ends: a killed run started
again recomputes no finished fit), the report and figures to OUT/reports/. Bad input (unknown
spec, stage, scale, bench, model; a model that cannot run on its task) is one error line and exit
code 2, before anything trains. See docs/experiments.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

EXIT_BAD_INPUT = 2


def _list(text: str | None, name: str) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"{name}: expected a comma-separated list, got {text!r}")
    return items


def _seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        seeds = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--seeds: expected comma-separated integers, got {text!r}") from None
    from ._spec import check_seeds

    try:
        return list(check_seeds(seeds))
    except ValueError as exc:
        raise ValueError(f"--{exc}") from None


def _spec_choice(name: str) -> str:
    from ._spec import get_spec

    if name != "all":
        get_spec(name)
    return name


def _default_out(scale: str, out: str | None = None) -> Path:
    """``--out`` checked as a folder before anything runs (smoke runs default to results/smoke, so
    they never write into the committed records/ and reports/)."""
    from .._validation import check_out_folder

    return check_out_folder(out or ("results/smoke" if scale == "smoke" else "."))


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``reproduce`` and ``report`` to an argparse subparsers object."""
    from ._spec import SCALES

    p = sub.add_parser("reproduce", help="run an experiment spec (tune, run, report) and write its records and report",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="a spec name (hebbnets.experiments.spec_names()) or 'all'")
    p.add_argument("--stage", default="run,report",
                   help="comma-separated stages from tune, run, report, or 'all' (default run,report)")
    p.add_argument("--scale", default="quick", choices=SCALES, help="smoke (minutes, 1 seed), quick (default), paper")
    p.add_argument("--seeds", default=None, help="comma-separated seeds, replacing every bench's own")
    p.add_argument("--out", default=None, help="folder for records/, reports/ and configs/ (default: the current "
                   "folder; results/smoke for --scale smoke)")
    p.add_argument("--backend", default="local", choices=("local", "ray"), help="local (default) or ray")
    p.add_argument("--address", default=None, help="Ray cluster address to join (default: start a local Ray)")
    p.add_argument("--benches", default=None, help="comma-separated bench/measure names (default: all of them)")
    p.add_argument("--models", default=None, help="comma-separated model labels (default: all of them)")
    p.add_argument("--recompute", action="store_true", help="run every job again even if its record exists")
    p.add_argument("--no-figures", action="store_true", help="write the report without drawing figures")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=handle_reproduce)

    r = sub.add_parser("report", help="rebuild reports/NAME.md and its figures from records/NAME.jsonl alone",
                       description="Rebuild a spec's report (markdown and figures) from its record store; nothing "
                       "is trained. The same records give the same report, byte for byte.")
    r.add_argument("name", help="a spec name, 'scorecard' (reports/README.md) or 'all' (every report and the scorecard)")
    r.add_argument("--scale", default="quick", choices=SCALES)
    r.add_argument("--out", default=None, help="folder holding records/ and reports/ (default: as for reproduce)")
    r.add_argument("--no-figures", action="store_true", help="do not redraw the figures")
    r.set_defaults(func=handle_report)


def handle_reproduce(args: argparse.Namespace) -> int:
    from ._reproduce import parse_stages, reproduce
    from ._run import stderr_log

    try:
        name = _spec_choice(args.name)
        stages = parse_stages(args.stage)
        if args.address and args.backend != "ray":
            raise ValueError("--address: only with --backend ray")
        kwargs = dict(stages=stages, scale=args.scale, seeds=_seeds(args.seeds), out=_default_out(args.scale, args.out),
                      backend=args.backend, address=args.address, benches=_list(args.benches, "--benches"),
                      models=_list(args.models, "--models"), recompute=args.recompute, figures=not args.no_figures,
                      threads=getattr(args, "threads", None) or 1, device=getattr(args, "device", None),
                      log=None if args.quiet else stderr_log)
        import torch

        torch.set_num_threads(kwargs["threads"])  # planning (task generation) too: see reproduce()
        t0 = time.perf_counter()
        paths = reproduce(name, **kwargs)
    except ValueError as exc:
        print(f"hebbnets reproduce: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for p in paths:
        print(p)
    if not args.quiet:
        print(f"done in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return 0


def handle_report(args: argparse.Namespace) -> int:
    from ._reproduce import report

    try:
        name = args.name if args.name == "scorecard" else _spec_choice(args.name)
        paths = report(name, scale=args.scale, out=_default_out(args.scale, args.out),
                       figures=not args.no_figures)
    except ValueError as exc:
        print(f"hebbnets report: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for p in paths:
        print(p)
    return 0
