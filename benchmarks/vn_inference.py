"""Speed of batched VN inference: prints the measured ratios against scikit-learn's
``sparse_encode(algorithm="lasso_cd")`` at equal objective (target: >= 5x faster), the dense
FISTA loop's share of this machine's matmul rate, the working-set solver, and a masked case
(per-sample masks: the per-sample Gram form against the factor form). The measurement is
``hebbnets.bench.speed.vn_inference``; ``hebbnets reproduce speed`` records it and writes
``reports/speed.md``. The output is the table alone (scikit-learn's convergence warnings are
silenced: its objective is the target, wherever it stopped).

    python benchmarks/vn_inference.py                       # 1024x256x128, 4096x512x256, masked 256x512x64
    python benchmarks/vn_inference.py --sizes 1024,256,128 --masked
"""
import argparse

from hebbnets.bench.speed import format_vn_inference, vn_inference

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1024,256,128", "4096,512,256"], help="B,K,n triples")
    ap.add_argument("--masked", nargs="*", default=["256,512,64"], help="B,K,n triples of the masked case (none: skip)")
    ap.add_argument("--lam", type=float, default=0.1)
    args = ap.parse_args()
    triples = lambda items: [[int(v) for v in s.split(",")] for s in items]  # noqa: E731
    print(format_vn_inference(vn_inference(triples(args.sizes), lam=args.lam, masked=triples(args.masked))))
