"""The ``hebbnets`` command line: a thin layer over the library.

    hebbnets demo                      # the main job: VN vs MLP on toy_atoms, ID/OOD table
    hebbnets reproduce NAME|all        # an experiment spec: tune, run, report (hebbnets.experiments)
    hebbnets report NAME|all           # reports/NAME.md rebuilt from records/NAME.jsonl alone
    hebbnets run TASK --models ...     # any registered task and models (see hebbnets.bench)
    hebbnets merge OUT.jsonl IN.jsonl..# one store and table from runs done on several machines

Bad input prints one error line naming the argument and exits with code 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._version import __version__
from .bench.cli_run import EXIT_BAD_INPUT, add_merge_parser, add_run_parser


def _add_demo_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the main job: VN vs MLP on toy_atoms (unseen atom pairs), ID and OOD error, one seed by default",
        description="Train VN and an MLP (each at its validation-chosen configuration) on the toy_atoms task (OOD = "
        "atom pairs never seen together) for each seed and print the test MSE per split. The default is one seed "
        "(its time on 2 cores: the README's quick start); the 3-seed result is reports/toy.md (hebbnets reproduce toy).",
    )
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0; 0,1,2 gives the report's runs)")
    p.add_argument("--out", default="results", help="folder for the record store demo.jsonl (default results/)")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from .bench import format_table, summarize
    from .bench.cli_run import _int_list
    from .experiments import RecordStore, execute, flat_records, get_spec, plan_spec
    from .experiments._run import stderr_log
    from .experiments._spec import check_seeds

    try:
        seeds = list(check_seeds(_int_list(args.seeds, "--seeds")))
    except ValueError as exc:
        print(f"hebbnets demo: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    import torch

    threads = args.threads or 1  # one thread, as `reproduce`: no oversubscription on a busy machine
    torch.set_num_threads(threads)
    jobs = plan_spec(get_spec("toy"), "quick", seeds=seeds)
    entries = execute(jobs, RecordStore(Path(args.out) / "demo.jsonl"), log=stderr_log, threads=threads,
                      device=args.device)
    print(format_table(summarize(flat_records(entries)), title=f"toy_atoms: VN vs MLP, seeds {seeds} (test MSE)"))
    print("\nThe 3-seed result with figures: reports/toy.md (rebuilt by `hebbnets report toy`).")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hebbnets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hebbnets {__version__}")
    parser.add_argument(
        "--threads", type=int, default=None, metavar="N",
        help="torch intra-op threads (default: 1 for demo and reproduce, one job per core; torch's choice for "
        "run). Use 1 when other processes load the cores: OpenMP's spinning threads slow the small matmuls of "
        "sparse inference badly then.",
    )
    parser.add_argument(
        "--device", default=None, metavar="DEVICE",
        help="where models train and predict: cpu (default), auto (CUDA when present), cuda, cuda:N, mps",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_demo_parser(sub)
    from .experiments._cli import add_parsers as add_experiment_parsers

    add_experiment_parsers(sub)
    add_run_parser(sub)
    add_merge_parser(sub)
    for sp in sub.choices.values():  # --threads after the subcommand too (`hebbnets run ... --threads 1`)
        sp.add_argument("--threads", type=int, default=argparse.SUPPRESS, metavar="N",
                        help="torch intra-op threads (as before the subcommand)")
        sp.add_argument("--device", default=argparse.SUPPRESS, metavar="DEVICE",
                        help="where models train and predict (as before the subcommand)")
    args = parser.parse_args(argv)  # argparse itself exits with code 2 on bad syntax
    if args.threads is not None:
        if args.threads < 1:
            print(f"hebbnets: error: --threads: expected an int >= 1, got {args.threads}", file=sys.stderr)
            return EXIT_BAD_INPUT
        import torch

        torch.set_num_threads(args.threads)
        from ._model import set_threads

        set_threads(args.threads)
    if args.device is not None:
        from ._validation import resolve_device

        try:
            resolve_device(args.device, "--device")
        except ValueError as exc:
            print(f"hebbnets: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except ValueError as exc:  # bad input found after parsing (e.g. a task parameter)
        print(f"hebbnets {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    raise SystemExit(main())
