"""Applied-weight inference: the three product forms of the Hessian on the problems the models
solve, at equal objective, and the form ``path="auto"`` picks.

    python benchmarks/vn_applied_paths.py [--repeats 3]

Shapes: ``mnist`` (one 784-pixel content row per code, 256 atoms, batch 64: ``vn_applied`` on
``mnist_comp`` transform mode) and ``nbody`` (15 rows of 32-dim content per code, 4-dim output,
64 atoms, batch 64: ``vn_applied_set``). Prints per form the seconds per solve, the ratio to the
slowest form and the objective reached (equal to the others within float32 rounding), so the
cost model behind ``auto`` is checked against the clock in the same run.
"""
from __future__ import annotations

import argparse
import time

import torch

from hebbnets.vn.applied import AppliedAtomStack

SHAPES = {
    "mnist": dict(n=784, m=784, K=256, R=1, B=64, p=36),
    "nbody": dict(n=32, m=4, K=64, R=15, B=64, p=0),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=100)
    args = ap.parse_args()
    torch.manual_seed(0)
    for name, s in SHAPES.items():
        st = AppliedAtomStack((s["n"], s["m"]), (s["K"],), context_dim=s["p"], lam=0.01, max_iter=args.max_iter,
                              tol=1e-12)
        z = torch.randn(s["B"], s["R"], s["n"])
        y = torch.randn(s["B"], s["R"], s["m"])
        c = torch.randn(s["B"], s["p"]) if s["p"] else None
        auto = st.infer(z, c, y).paths[0]
        rows = []
        for path in ("factor", "gram", "per_sample"):
            st.infer(z, c, y, path=path)  # warm-up
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                inf = st.infer(z, c, y, path=path)
            rows.append((path, (time.perf_counter() - t0) / args.repeats, float(inf.energy.mean())))
        slowest = max(t for _, t, _ in rows)
        print(f"{name}: B={s['B']} R={s['R']} n={s['n']} m={s['m']} K={s['K']} p={s['p']}, "
              f"{args.max_iter} iterations; auto picks {auto!r}")
        for path, t, e in rows:
            print(f"  {path:>10}: {t * 1e3:8.1f} ms per solve  ({slowest / t:5.2f}x faster than the slowest)  "
                  f"energy {e:.6g}")


if __name__ == "__main__":
    main()
