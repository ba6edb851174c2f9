"""Diagnostic, outside the parameter-matched comparison: is VN's spatial2d failure a matter of
atom count? Fits the recorded VN configuration with ``K`` atoms instead (everything else as chosen)
and scores every test split. Nothing is chosen with these numbers (the value of ``K`` is fixed
beforehand: 784 = one atom per pixel is enough to represent any image exactly), and the result is
not a benchmark row: at K = 784 VN has ~12x the parameters of the baselines.

    OMP_NUM_THREADS=1 python benchmarks/vn1_capacity_probe.py --mode reconstruct --atoms 784 \
        --seeds 0 --out results/vn1/capacity_probe_reconstruct.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench.runner import git_commit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["decode", "reconstruct"], required=True)
    ap.add_argument("--atoms", type=int, required=True)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = {"mode": a.mode, "atoms": a.atoms, "git_commit": git_commit(), "runs": []}
    for seed in [int(s) for s in a.seeds.split(",")]:
        task = hn.tasks.make("spatial2d", seed=seed, mode=a.mode)
        cfg = dict(task.model_configs["vn"])
        cfg["atoms"] = (a.atoms, *cfg["atoms"][1:])
        t0 = time.perf_counter()
        m = hn.models.make("vn", seed=seed, task=task, atoms=cfg["atoms"], progress=False).fit(task.train)
        fit_s = time.perf_counter() - t0
        scores = {k: float(m.score(s)) for k, s in task.tests.items()}
        out["runs"].append({"seed": seed, "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
                            "num_parameters": m.num_parameters, "fit_seconds": fit_s, "test": scores})
        print(seed, m.num_parameters, f"{fit_s:.0f}s", scores, flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
