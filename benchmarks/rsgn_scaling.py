"""Scaling of the sparse RSGN forward pass (a script, not a test).

1. Nodes: forward time per sample of the sparse model (gather/scatter over active edges) and of
   the dense reference formulation (N x N W, same graph, same equations) as the node count grows.
2. Tokens: sparse RSGN (fixed N) vs a plain ``torch.nn.TransformerEncoder`` of the same width
   (d_model = d_hidden, 4 heads, FFN 4x, 2 layers) as the sequence length grows.

Prints a table (time per sample, active fraction after the last step, edges touched per sample)
and least-squares log-log slopes; ``--out`` also writes them as JSON. The kNN graph build
(slow timescale, once per graph) is timed separately and not part of the forward time.

    OMP_NUM_THREADS=1 python benchmarks/rsgn_scaling.py --out results/rsgn_scaling.json
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np
import torch
from torch import nn

from hebbnets._model import DataSpec
from hebbnets.rsgn.model import RSGN, RSGNConfig


def build(n_nodes: int, seq_len: int, args: argparse.Namespace, mode: str) -> tuple[RSGN, float]:
    cfg = RSGNConfig(n_nodes=n_nodes, d_hidden=args.d_hidden, k=args.k, n_steps=args.steps,
                     ignite_frac=args.ignite_frac, max_active_frac=args.max_active_frac, mode=mode,
                     progress=False)
    m = RSGN(cfg, seed=0)
    torch.manual_seed(0)
    m.spec = DataSpec((seq_len, args.features), (), 10)
    t0 = time.perf_counter()
    m._build(m.spec)  # includes the exact kNN build
    m.temperature.fill_(cfg.t_end)  # the trained (annealed) regime
    return m.eval(), time.perf_counter() - t0


def time_fn(fn, repeats: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def slope(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2:
        return float("nan")
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


@torch.no_grad()
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[256, 1024, 4096, 16384, 65536])
    ap.add_argument("--dense-max", type=int, default=4096, help="largest N for the dense reference")
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096])
    ap.add_argument("--token-nodes", type=int, default=1024, help="N for the token sweep")
    ap.add_argument("--seq-len", type=int, default=64, help="T for the node sweep")
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--d-hidden", type=int, default=64)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--ignite-frac", type=float, default=0.02)
    ap.add_argument("--max-active-frac", type=float, default=0.05)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    result: dict = {"args": vars(args), "nodes": [], "tokens": []}

    print(f"== nodes (T={args.seq_len}, d_h={args.d_hidden}, k={args.k}, S={args.steps}, batch={args.batch}) ==")
    print(f"{'N':>7} {'sparse ms/sample':>17} {'dense ms/sample':>16} {'speed-up':>9} {'active':>7} {'edges/sample':>13} {'kNN build s':>12}")
    x = torch.randn(args.batch, args.seq_len, args.features, device=dev)
    for n in args.nodes:
        m, t_build = build(n, args.seq_len, args, "sparse")
        m = m.to(dev)
        tok = m._tokens(x, None)

        def run_sparse():
            m.propagate(tok, "sparse")
            sync()

        ts = time_fn(run_sparse, args.repeats) / args.batch
        stats = dict(m.last_stats)
        td = float("nan")
        if n <= args.dense_max:
            def run_dense():
                m.propagate(tok, "dense")
                sync()

            td = time_fn(run_dense, args.repeats) / args.batch
        row = {"n_nodes": n, "sparse_s": ts, "dense_s": td, "active_fraction": stats["active_fraction"][-1],
               "active_fraction_per_step": stats["active_fraction"], "edges_per_sample": stats["edges_per_sample"],
               "knn_build_s": t_build}
        result["nodes"].append(row)
        print(f"{n:>7} {1e3 * ts:>17.3f} {1e3 * td:>16.3f} {td / ts:>9.1f} {row['active_fraction']:>7.4f} "
              f"{row['edges_per_sample']:>13.0f} {t_build:>12.2f}", flush=True)
        del m
    rows = result["nodes"]
    result["slope_sparse_nodes"] = slope([r["n_nodes"] for r in rows], [r["sparse_s"] for r in rows])
    dense_rows = [r for r in rows if not math.isnan(r["dense_s"])]
    result["slope_dense_nodes"] = slope([r["n_nodes"] for r in dense_rows], [r["dense_s"] for r in dense_rows])
    print(f"log-log slope in N: sparse {result['slope_sparse_nodes']:.2f}, dense {result['slope_dense_nodes']:.2f}")

    n = args.token_nodes
    print(f"== tokens (N={n} for RSGN; Transformer d_model={args.d_hidden}, 4 heads, FFN {4 * args.d_hidden}, 2 layers) ==")
    print(f"{'T':>6} {'rsgn ms/sample':>15} {'transformer ms/sample':>22} {'active':>7} {'edges/sample':>13}")
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(args.d_hidden, 4, 4 * args.d_hidden, dropout=0.0,
                                                           batch_first=True), 2, enable_nested_tensor=False)
    emb = nn.Linear(args.features, args.d_hidden)
    enc, emb = enc.to(dev).eval(), emb.to(dev)
    for t in args.tokens:
        m, _ = build(n, t, args, "sparse")
        m = m.to(dev)
        x = torch.randn(args.batch, t, args.features, device=dev)

        def run_rsgn():
            m.propagate(m._tokens(x, None), "sparse")
            sync()

        def run_tf():
            enc(emb(x)).mean(1)
            sync()

        tr = time_fn(run_rsgn, args.repeats) / args.batch
        tt = time_fn(run_tf, args.repeats) / args.batch
        row = {"seq_len": t, "rsgn_s": tr, "transformer_s": tt, "active_fraction": m.last_stats["active_fraction"][-1],
               "edges_per_sample": m.last_stats["edges_per_sample"]}
        result["tokens"].append(row)
        print(f"{t:>6} {1e3 * tr:>15.3f} {1e3 * tt:>22.3f} {row['active_fraction']:>7.4f} {row['edges_per_sample']:>13.0f}",
              flush=True)
    rows = result["tokens"]
    result["slope_rsgn_tokens"] = slope([r["seq_len"] for r in rows], [r["rsgn_s"] for r in rows])
    result["slope_transformer_tokens"] = slope([r["seq_len"] for r in rows], [r["transformer_s"] for r in rows])
    print(f"log-log slope in T: rsgn {result['slope_rsgn_tokens']:.2f}, transformer {result['slope_transformer_tokens']:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
