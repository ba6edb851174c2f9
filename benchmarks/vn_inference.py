"""Speed of batched VN inference: prints the measured ratios against scikit-learn's
``sparse_encode(algorithm="lasso_cd")`` at equal objective (target: >= 5x faster), the dense
FISTA loop's share of this machine's matmul rate, the working-set solver, a masked case
(per-sample masks: the per-sample Gram form against the factor form), and the matrix-atom
layer's factorised Gram product against the vector layer's explicit Kronecker Gram matrix on the
same flattened problem at equal objective (target: faster). The measurements are
``hebbnets.measures.speed.vn_inference`` and ``vn_matrix_inference``; ``hebbnets reproduce speed``
records them and writes ``reports/speed.md``. The output is the tables alone (scikit-learn's
convergence warnings are silenced: its objective is the target, wherever it stopped).

    python benchmarks/vn_inference.py                       # 1024x256x128, 4096x512x256, masked 256x512x64, matrix 28x28
    python benchmarks/vn_inference.py --sizes 1024,256,128 --masked --matrix-batch 64
"""
import argparse

from hebbnets.measures.speed import format_vn_inference, vn_inference
from hebbnets.vn import matrix_inference_speed

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1024,256,128", "4096,512,256"], help="B,K,n triples")
    ap.add_argument("--masked", nargs="*", default=["256,512,64"], help="B,K,n triples of the masked case (none: skip)")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--matrix-batch", type=int, default=256, help="images per batch of the matrix-atom comparison")
    ap.add_argument("--matrix-atoms", type=int, default=28, help="Ku = Ks of the matrix-atom comparison (28x28 images)")
    args = ap.parse_args()
    triples = lambda items: [[int(v) for v in s.split(",")] for s in items]  # noqa: E731
    print(format_vn_inference(vn_inference(triples(args.sizes), lam=args.lam, masked=triples(args.masked))))
    print()
    matrix_inference_speed(batch=args.matrix_batch, atoms_u=args.matrix_atoms, atoms_s=args.matrix_atoms)  # prints its line
