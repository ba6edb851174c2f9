"""VN benchmarks I: configuration choice for ``functions1d`` and ``spatial2d`` (quick scale).

Configuration choice uses validation data carved from the training split of the seed-0 task
(``hebbnets.bench.tune``); no test split is touched. Equal effort: every model gets the same
number of grid points (2: one knob, the learning rate; VN's l1 weight lam; the VAE's KL weight
beta) over a fixed base (training budget, size) whose
size keeps the parameter count within 2x of VN's.

    OMP_NUM_THREADS=1 python benchmarks/vn_benchmarks_i.py select --bench functions1d_masked

The chosen configurations are then recorded in ``MODEL_CONFIGS`` / ``TUNING`` of the task
module, and the 3-seed tables come from the CLI:

    hebbnets run functions1d --models vn,transformer,mamba,mlp --set mode=masked --out results/vn1
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench import tune
from hebbnets.bench.runner import git_commit

RESULTS = Path(__file__).resolve().parents[1] / "results" / "vn1"

SEQ_BASE = dict(epochs=40, patience=8, batch_size=64, progress=False)
# CPU budget: sequence baselines are tuned with half their training budget (same for each)
TUNE_OVERRIDES = {"functions1d_masked": {"transformer": {"epochs": 20}, "mamba": {"epochs": 20}, "mlp": {"epochs": 20}}}
IMG_BASE = dict(epochs=400, patience=100, batch_size=32, progress=False)
LR = {"lr": [1e-3, 3e-3]}
# the VAE's main knob is the KL weight (beta = 1 collapses the posterior on these sparse images)
BETA = {"beta": [1e-3, 1e-2]}

BENCHES = {
    # (task name, task params, {model: (base config, grid)})
    "functions1d_masked": ("functions1d", {"mode": "masked"}, {
        "vn": (dict(atoms=(128,), output="message", epochs=5, batch_size=64, progress=False), {"lam": [0.01, 0.05]}),
        "transformer": (dict(d_model=32, n_heads=4, n_layers=2, d_ff=64, **SEQ_BASE), LR),
        "mamba": (dict(d_model=24, n_layers=2, d_state=8, expand_factor=1, **SEQ_BASE), LR),
        "mlp": (dict(hidden=(64, 64), **SEQ_BASE), LR),
    }),
    "spatial2d_decode": ("spatial2d", {"mode": "decode"}, {
        "vn": (dict(atoms=(64,), epochs=30, batch_size=32, progress=False), {"lam": [0.01, 0.05]}),
        "cnn": (dict(channels=16, latent=64, **IMG_BASE), LR),
        "vae": (dict(hidden=256, latent=8, channels=32, **IMG_BASE), BETA),
        "factorized": (dict(hidden=512, **IMG_BASE), LR),
        "mlp": (dict(hidden=(64,), **IMG_BASE), LR),
    }),
    "spatial2d_reconstruct": ("spatial2d", {"mode": "reconstruct"}, {
        "vn": (dict(atoms=(64,), output="reconstruction", epochs=30, batch_size=32, progress=False),
               {"lam": [0.01, 0.05]}),
        "cnn": (dict(channels=16, latent=64, **IMG_BASE), LR),
        "vae": (dict(hidden=128, latent=8, channels=32, **IMG_BASE), BETA),
        "factorized": (dict(hidden=512, **IMG_BASE), LR),
        "mlp": (dict(hidden=(64,), **IMG_BASE), LR),
    }),
}


def select(bench: str, models: list[str] | None) -> None:
    task_name, params, grids = BENCHES[bench]
    task = hn.tasks.make(task_name, seed=0, **params)
    out: dict[str, object] = {"bench": bench, "task": task_name, "task_params": params, "git_commit": git_commit(),
                              "models": {}}
    path = RESULTS / f"select_{bench}.json"
    if path.exists():
        out = json.loads(path.read_text())  # add models to an earlier selection
    for model, (base, grid) in grids.items():
        if models and model not in models:
            continue
        t0 = time.perf_counter()
        tune_base = {**base, **TUNE_OVERRIDES.get(bench, {}).get(model, {})}
        recs = tune(task, model, grid, base=tune_base, log=print)
        for r in recs:  # the chosen configuration keeps the full training budget
            r["config"] = {**r["config"], **{k: base[k] for k in TUNE_OVERRIDES.get(bench, {}).get(model, {})}}
        out["models"][model] = {"base": {k: list(v) if isinstance(v, tuple) else v for k, v in base.items()},
                                "grid": grid, "results": recs, "chosen": recs[0]["config"],
                                "seconds": time.perf_counter() - t0}
        print(f"{bench} {model}: chose {recs[0]['config']} (val {recs[0]['value']:.4g}, "
              f"{recs[0]['num_parameters']} params)", flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2))


def error_maps(mode: str, models: list[str], seed: int) -> None:
    """Per-centre error of each model (task configs, one seed) on spatial2d, as plot data."""
    from hebbnets.tasks.spatial2d import error_map

    task = hn.tasks.make("spatial2d", seed=seed, mode=mode)
    out = {"task_params": {k: v for k, v in task.params.items()}, "git_commit": git_commit(), "models": {}}
    for name in models:
        model = hn.models.make(name, seed=seed, task=task, progress=False).fit(task.train)
        em = error_map(model, task)
        out["models"][name] = {"error": em["error"].tolist(), "config": task.model_configs.get(name, {}),
                               "mean_by_split": {s: float(em["error"][em["split"] == c].mean())
                                                 for s, c in (("train", 0), ("id", 1), ("ood", 2))}}
        out["split"] = em["split"].tolist()
        print(name, out["models"][name]["mean_by_split"], flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"error_map_spatial2d_{mode}_seed{seed}.json").write_text(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--bench", choices=sorted(BENCHES), required=True)
    s.add_argument("--models", nargs="*", default=None)
    e = sub.add_parser("errormap")
    e.add_argument("--mode", choices=["decode", "reconstruct"], required=True)
    e.add_argument("--models", nargs="+", required=True)
    e.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.cmd == "select":
        select(args.bench, args.models)
    else:
        error_maps(args.mode, args.models, args.seed)


if __name__ == "__main__":
    main()
