"""Is a ``functions1d`` split really compositional? Compare each OOD/ID error ratio of a dense
baseline with that of a model-free reference (linear interpolation across the masked gap).

A split whose OOD signals are just intrinsically harder (or easier) moves both ratios alike; a
split that tests *composition* makes the learned dense model degrade clearly more than the
reference. Uses the task's recorded configs; the seed-0 task; test splits only (this is a check
of the benchmark, no hyper-parameter is chosen here).

    OMP_NUM_THREADS=1 python benchmarks/vn1_split_check.py --models mlp --seeds 0,1,2 \
        --out results/vn1/split_check.json [--set mask_fraction=0.25 ...]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench.cli_run import parse_assignments
from hebbnets.bench.runner import git_commit, jsonable


def interpolate_gap(x: torch.Tensor, x_mask: torch.Tensor) -> torch.Tensor:
    """Fill each sample's hidden entries by linear interpolation between the nearest seen
    entries (constant extrapolation at the ends): (N, L), (N, L) -> (N, L)."""
    out = x.clone()
    pos = torch.arange(x.shape[1], dtype=x.dtype)
    for i in range(x.shape[0]):
        seen = x_mask[i] > 0
        # np.interp semantics: piecewise linear through the seen points, flat beyond them
        xp, fp = pos[seen], x[i, seen]
        idx = torch.searchsorted(xp, pos).clamp(1, len(xp) - 1)
        x0, x1, f0, f1 = xp[idx - 1], xp[idx], fp[idx - 1], fp[idx]
        w = ((pos - x0) / (x1 - x0)).clamp(0, 1)
        out[i] = torch.where(seen, x[i], f0 + w * (f1 - f0))
    return out


def check(task_params: dict, models: list[str], seeds: list[int]) -> dict:
    out: dict = {"task_params": task_params, "git_commit": git_commit(), "seeds": seeds, "runs": []}
    for seed in seeds:
        task = hn.tasks.make("functions1d", seed=seed, mode="masked", **task_params)
        metric = hn.metrics.get_metric(task.metric)
        row: dict = {"seed": seed, "interp": {k: metric(interpolate_gap(s.x, s.x_mask), s) for k, s in task.tests.items()}}
        for name in models:
            m = hn.models.make(name, seed=seed, task=task, progress=False).fit(task.train)
            row[name] = {k: metric(m.predict(s.x, s.x_mask), s) for k, s in task.tests.items()}
            # per combination, to see which OOD combination drives the gap
            row[name + "_per_combo"] = {}
            for k, s in task.tests.items():
                y_hat = m.predict(s.x, s.x_mask)
                ids = task.info["combo_ids"][k]
                for j, combo in enumerate(task.info["combos"][k]):
                    rows = (ids == j).nonzero().flatten()
                    row[name + "_per_combo"][f"{k}:{combo}"] = metric(y_hat[rows], s.subset(rows))
        out["runs"].append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("per_combo")}), flush=True)
    keys = [k for k in out["runs"][0] if k not in ("seed",) and not k.endswith("per_combo")]
    out["ratio"] = {}
    for k in keys:
        mean = {s: sum(r[k][s] for r in out["runs"]) / len(seeds) for s in out["runs"][0][k]}
        out["ratio"][k] = {s: mean[s] / mean["id"] for s in mean if s != "id"}
        out.setdefault("mean", {})[k] = mean
    print("OOD/ID ratios:", json.dumps(out["ratio"], indent=1), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    res = check(parse_assignments(a.sets, "--set"), a.models.split(","), [int(s) for s in a.seeds.split(",")])
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(jsonable(res), indent=1))


if __name__ == "__main__":
    main()
