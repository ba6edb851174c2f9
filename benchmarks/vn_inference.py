"""Speed of batched VN inference: prints the measured ratios against scikit-learn's
``sparse_encode(algorithm="lasso_cd")`` at equal objective and against this machine's matmul
rate (targets: >= 5x faster; >= 60 % of the matmul rate). The measurement is
``hebbnets.bench.speed.vn_inference``; ``hebbnets reproduce speed`` records it and writes
``reports/speed.md``.

    python benchmarks/vn_inference.py                       # 1024x256x128 and 4096x512x256
    python benchmarks/vn_inference.py --sizes 1024,256,128
"""
import argparse

from hebbnets.bench.speed import format_vn_inference, vn_inference

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1024,256,128", "4096,512,256"], help="B,K,n triples")
    ap.add_argument("--lam", type=float, default=0.1)
    args = ap.parse_args()
    print(format_vn_inference(vn_inference([[int(v) for v in s.split(",")] for s in args.sizes], lam=args.lam)))
