"""spatial2d 3-seed runs that also keep every model's per-centre error map (same fits).

``hebbnets run`` scores test splits only and drops the fitted models; the error map
(``hebbnets.tasks.spatial2d.error_map``) needs the fitted model, so this script trains each
(seed, model) once, writes the runner's records (same fields, same ``write_json``/``write_csv``,
same table) and the maps:

    OMP_NUM_THREADS=1 python benchmarks/vn1_spatial2d_runs.py --mode decode \
        --models vn,cnn,vae,factorized,mlp --seeds 0,1,2 --out results/vn1

writes ``spatial2d_quick_mode-<mode>.{json,csv}`` and ``error_map_spatial2d_<mode>.json``
(``{"split": (G, G) codes 0 train / 1 id / 2 ood, "models": {name: {"per_seed": [(G, G)],
"mean": (G, G), "mean_by_split": {...}}}}``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench import format_table, plan, summarize, write_csv, write_json
from hebbnets.bench.runner import git_commit, jsonable
from hebbnets.tasks.spatial2d import SPLIT_CODES, error_map


def run_with_maps(mode: str, models: list[str], seeds: list[int]) -> tuple[list[dict], dict]:
    """Fit every (seed, model) once; return runner-style records and the error maps."""
    overrides = {m: {"progress": False} for m in models
                 if "progress" in {f.name for f in dataclasses.fields(hn.models.get(m).Config)}}
    jobs = plan("spatial2d", models, seeds, task_params={"mode": mode}, overrides=overrides)
    commit = git_commit()
    records: list[dict] = []
    maps: dict = {"mode": mode, "seeds": seeds, "git_commit": commit, "split_codes": SPLIT_CODES, "models": {}}
    for seed, task, built in jobs:
        metric = hn.metrics.get_metric(task.metric)
        for name, model in built.items():
            t0 = time.perf_counter()
            model.fit(task.train)
            fit_s = time.perf_counter() - t0
            for split_name, split in task.tests.items():
                t0 = time.perf_counter()
                y_hat = model.predict(split.x, split.x_mask)
                pred_s = time.perf_counter() - t0
                records.append({
                    "task": task.name, "task_params": jsonable(task.params), "model": name,
                    "model_config": jsonable(dataclasses.asdict(model.config)), "seed": seed,
                    "split": split_name, "metric": task.metric, "value": float(metric(y_hat, split)),
                    "num_parameters": int(model.num_parameters), "fit_seconds": fit_s,
                    "predict_seconds": pred_s, "version": hn.__version__, "git_commit": commit,
                })
            em = error_map(model, task)
            entry = maps["models"].setdefault(name, {"per_seed": []})
            entry["per_seed"].append(em["error"].tolist())
            maps["split"] = em["split"].tolist()
            scores = ", ".join(f"{r['split']}={r['value']:.4g}" for r in records[-len(task.tests):])
            print(f"[spatial2d {mode}] {name} seed={seed}: fit {fit_s:.1f}s; {scores}", flush=True)
    codes = torch.tensor(maps["split"])
    for entry in maps["models"].values():
        mean = torch.tensor(entry["per_seed"]).mean(0)  # (G, G) averaged over seeds
        entry["mean"] = mean.tolist()
        entry["mean_by_split"] = {s: float(mean[codes == c].mean()) for s, c in SPLIT_CODES.items()}
    return records, maps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["decode", "reconstruct"], required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default="results/vn1")
    a = ap.parse_args()
    torch.set_num_threads(1)
    models, seeds = a.models.split(","), [int(s) for s in a.seeds.split(",")]
    records, maps = run_with_maps(a.mode, models, seeds)
    out = Path(a.out)
    write_json(records, out / f"spatial2d_quick_mode-{a.mode}.json")
    write_csv(records, out / f"spatial2d_quick_mode-{a.mode}.csv")
    (out / f"error_map_spatial2d_{a.mode}.json").write_text(json.dumps(maps))
    print(format_table(summarize(records), title=f"spatial2d (mode={a.mode}, scale=quick), seeds {seeds}"))


if __name__ == "__main__":
    main()
