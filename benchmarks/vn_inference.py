"""Speed of batched VN inference (a benchmark script, not a test).

Measures, in one run on this machine:

1. the machine's dense matmul rate for the FISTA loop's GEMM shape ``(B, K) x (K, K)``;
2. batched Gram-form FISTA (monotone and plain) on ``B`` samples, ``K`` atoms, ``n`` dims:
   samples per second, and the GFLOP/s achieved by the loop's GEMMs as a fraction of (1);
3. time to reach scikit-learn ``sparse_encode(algorithm="lasso_cd")``'s objective (within
   1e-5 relative, every sample) versus ``sparse_encode`` itself on the same problem.

    python benchmarks/vn_inference.py                 # 1024x256x128 and 4096x512x256
    python benchmarks/vn_inference.py --sizes 1024,256,128 --out results/vn_inference.json

Targets (from the foundation issue): >= 5x faster than scikit-learn at equal objective;
>= 60 % of the measured matmul rate inside the FISTA loop. The script prints whether each holds.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.decomposition import sparse_encode

from hebbnets.vn import fista_gram, largest_eigenvalue


def problem(B: int, K: int, n: int, seed: int = 0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    S = torch.randn(n, K, generator=gen, dtype=torch.float64)
    S = S / S.norm(dim=0)
    codes = torch.zeros(B, K, dtype=torch.float64)
    for i in range(B):
        idx = torch.randperm(K, generator=gen)[:5]
        codes[i, idx] = torch.randn(5, generator=gen, dtype=torch.float64)
    x = codes @ S.T + 0.01 * torch.randn(B, n, generator=gen, dtype=torch.float64)
    return S.to(dtype), x.to(dtype)


def objective(S: torch.Tensor, x: torch.Tensor, g: torch.Tensor, lam: float) -> torch.Tensor:
    S, x, g = S.double(), x.double(), g.double()
    return 0.5 * ((x - g @ S.T) ** 2).sum(-1) + lam * g.abs().sum(-1)


def best_time(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_gflops(B: int, K: int, dtype=torch.float32) -> float:
    a, G = torch.randn(B, K, dtype=dtype), torch.randn(K, K, dtype=dtype)
    reps = 50
    t = best_time(lambda: [a @ G for _ in range(reps)])
    return 2 * B * K * K * reps / t / 1e9


def encode(S, x, lam, iters, monotone):
    """Everything an inference call does: Gram, correlations, Lipschitz, FISTA."""
    G = S.T @ S
    return fista_gram(G, x @ S, lam, largest_eigenvalue(G), max_iter=iters, tol=0.0, monotone=monotone)


def iterations_to_reach(S, x, lam, target, monotone, max_iter=5000) -> int | None:
    """Smallest iteration count (doubling, then bisection) where every sample's objective is
    within 1e-5 relative of ``target``."""
    ok = lambda it: bool((objective(S, x, encode(S, x, lam, it, monotone).codes, lam) <= target * (1 + 1e-5)).all())  # noqa: E731
    hi = 8
    while not ok(hi):
        hi *= 2
        if hi > max_iter:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def run(B: int, K: int, n: int, lam: float) -> dict:
    S, x = problem(B, K, n)
    rate = matmul_gflops(B, K)
    row = {"B": B, "K": K, "n": n, "lam": lam, "threads": torch.get_num_threads(), "matmul_gflops": rate}

    t_sk = best_time(lambda: sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam), repeats=2)
    sk = sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam)
    target = objective(S, x, torch.from_numpy(np.asarray(sk)), lam)
    row["sklearn_seconds"] = t_sk

    for monotone in (True, False):
        key = "mfista" if monotone else "fista"
        fixed = 200
        t_loop = best_time(lambda: encode(S, x, lam, fixed, monotone))
        row[f"{key}_samples_per_s_{fixed}it"] = B / t_loop
        row[f"{key}_gemm_gflops"] = 2 * B * K * K * fixed / t_loop / 1e9
        row[f"{key}_fraction_of_matmul"] = row[f"{key}_gemm_gflops"] / rate
        its = iterations_to_reach(S, x, lam, target, monotone)
        row[f"{key}_iterations_to_sklearn"] = its
        if its is None:
            row[f"{key}_seconds_to_sklearn"] = None
            row[f"{key}_speedup_vs_sklearn"] = None
        else:
            t = best_time(lambda: encode(S, x, lam, its, monotone))
            row[f"{key}_seconds_to_sklearn"] = t
            row[f"{key}_speedup_vs_sklearn"] = t_sk / t
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1024,256,128", "4096,512,256"], help="B,K,n triples")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--out", default="results/vn_inference.json")
    args = ap.parse_args()
    rows = []
    for size in args.sizes:
        B, K, n = (int(v) for v in size.split(","))
        rows.append(run(B, K, n, args.lam))
        r = rows[-1]
        print(f"\nB={B} K={K} n={n} lam={args.lam} threads={r['threads']}  matmul {r['matmul_gflops']:.1f} GFLOP/s,"
              f" sklearn lasso_cd {r['sklearn_seconds'] * 1e3:.1f} ms")
        print(f"{'variant':8s} {'samples/s':>10s} {'GEMM GFLOP/s':>13s} {'% matmul':>9s} {'iters->sk':>10s}"
              f" {'ms->sk':>8s} {'x faster':>9s}")
        for key in ("mfista", "fista"):
            its = r[f"{key}_iterations_to_sklearn"]
            ms = r[f"{key}_seconds_to_sklearn"]
            sp = r[f"{key}_speedup_vs_sklearn"]
            print(f"{key:8s} {r[f'{key}_samples_per_s_200it']:10.0f} {r[f'{key}_gemm_gflops']:13.1f}"
                  f" {100 * r[f'{key}_fraction_of_matmul']:8.0f}% {str(its):>10s}"
                  f" {('%.1f' % (ms * 1e3)) if ms else '-':>8s} {('%.1f' % sp) if sp else '-':>9s}")
        best = max((r[f"{k}_speedup_vs_sklearn"] or 0) for k in ("mfista", "fista"))
        frac = max(r[f"{k}_fraction_of_matmul"] for k in ("mfista", "fista"))
        print(f"target >= 5x faster than sklearn: {'MET' if best >= 5 else 'NOT MET'} ({best:.1f}x);"
              f" target >= 60% of matmul rate: {'MET' if frac >= 0.6 else 'NOT MET'} ({100 * frac:.0f}%)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
