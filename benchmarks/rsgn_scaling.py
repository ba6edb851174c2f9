"""Scaling of the sparse RSGN forward pass: prints time per sample against the dense reference
formulation (nodes) and a Transformer encoder (tokens), the measured dense/sparse ratios and the
log-log slopes. The measurement is ``hebbnets.bench.speed.rsgn_scaling``; ``hebbnets reproduce
speed`` records it and writes ``reports/speed.md`` with the scaling figure.

    OMP_NUM_THREADS=1 python benchmarks/rsgn_scaling.py --nodes 256 1024 4096 --tokens 128 512 2048
"""
import argparse

from hebbnets.bench.speed import format_rsgn_scaling, rsgn_scaling

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[256, 1024, 4096, 16384, 65536])
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096])
    ap.add_argument("--dense-max", type=int, default=4096, help="largest N for the dense reference")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    print(format_rsgn_scaling(rsgn_scaling(args.nodes, args.tokens, dense_max=args.dense_max, batch=args.batch,
                                           threads=args.threads)))
