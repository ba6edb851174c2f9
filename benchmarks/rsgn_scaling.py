"""Cost of the sparse RSGN, printed against the reference each fast path replaces, in one run:

1. the exact kNN graph build: KD-tree (``knn="kdtree"``) against the brute-force O(N^2) builder on
   the same positions, with the ratio and whether the neighbour lists are identical (the target:
   at most 1/20 of the brute-force time at 65,536 nodes, identical neighbours);
2. (``--cost``) a full training step (forward, backward, optimiser, slow rules, the structure step
   and kNN rebuild amortised) of sparse RSGN, the author's dense ``rsgn_parity`` and Mamba, with N
   and T grown together, the peak memory beside each, and the log-log slope per segment.

The measurements are ``hebbnets.rsgn.graph_build_speed`` / ``cost_scaling``; ``hebbnets reproduce rsgn --benches
graph_build,cost,million`` records them and renders section 6 of ``reports/rsgn.md``.

    OMP_NUM_THREADS=1 python benchmarks/rsgn_scaling.py                       # graph build, 65,536 nodes
    OMP_NUM_THREADS=1 python benchmarks/rsgn_scaling.py --nodes 4096 --cost --sizes 256:32 1024:128
"""
import argparse

import torch

from hebbnets.rsgn import cost_scaling, graph_build_speed, segment_slopes


def _size(text: str) -> list[int]:
    n, t = text.split(":")
    return [int(n), int(t)]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[65536], help="node counts of the graph-build comparison")
    ap.add_argument("--cost", action="store_true", help="also time full training steps (--sizes)")
    ap.add_argument("--sizes", type=_size, nargs="+", default=[[256, 32], [1024, 128], [4096, 512], [16384, 2048]],
                    help="N:T pairs of the cost table")
    ap.add_argument("--models", nargs="+", default=["rsgn", "rsgn_parity", "mamba"])
    ap.add_argument("--parity-max", type=int, default=4096, help="largest N for the dense rsgn_parity")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--calibrate", type=int, default=100, help="calibration passes of the sparse model's thresholds")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    print(f"{'nodes':>9} {'kdtree s':>9} {'brute s':>9} {'kdtree/brute':>13} {'identical':>10}")
    for n in args.nodes:
        r = graph_build_speed(n)
        print(f"{n:>9,} {r['kdtree_s']:>9.2f} {r['brute_s']:>9.2f} {r['ratio']:>13.4f} "
              f"{str(r['identical']):>10}   (1/{1 / r['ratio']:.0f}; target <= 1/20 at 65,536 nodes)")
    if args.cost:
        rows = cost_scaling(args.sizes, args.models, max_nodes={"rsgn_parity": args.parity_max}, batch_size=args.batch,
                            repeats=2, structure_every=50, calibrate_steps=args.calibrate)
        print(f"\n{'N':>7} {'T':>6} {'model':>12} {'step s':>9} {'fwd s':>8} {'bwd s':>8} {'struct s':>9} "
              f"{'activity %':>11} {'peak GiB':>9}")
        for r in rows:
            act = f"{100 * r['activity']:.2f}" if "activity" in r and r["model"] == "rsgn" else ""
            print(f"{r['n_nodes']:>7,} {r['seq_len']:>6,} {r['model']:>12} {r['step_s']:>9.3f} {r['forward_s']:>8.3f} "
                  f"{r['backward_s']:>8.3f} {r['structure_s']:>9.3f} {act:>11} {r['peak_rss_gb']:>9.2f}")
        for model in args.models:
            pts = [(r["n_nodes"], r["step_s"]) for r in rows if r["model"] == model]
            if len(pts) > 1:
                seg, overall = segment_slopes([a for a, _ in pts], [b for _, b in pts])
                print(f"{model}: log-log slope per segment {', '.join(f'{s:.2f}' for s in seg)}; overall {overall:.2f}")
