"""VN benchmarks II: N-body dynamics and compositional MNIST, quick scale.

Two stages, each writing JSON under ``results/``:

    # 1. configuration choice on validation data carved from the training split (seed 0 task),
    #    the same number of grid points for every model
    python benchmarks/vn_benchmarks_ii.py select --bench nbody
    # 2. 3 seeds (data and models both re-seeded) with the selected configurations
    python benchmarks/vn_benchmarks_ii.py run --bench nbody --seeds 0 1 2

Benches: ``nbody`` (task metric: next-step MSE of the scaled state change; also the per-split
normalised MSE and the 10-step rollout MSE), ``mnist_reconstruct``, ``mnist_transform``.
Run single-threaded (``OMP_NUM_THREADS=1``); every number in the report comes from these files.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench import format_table, plan, summarize, tune
from hebbnets.bench.runner import git_commit, jsonable
from hebbnets.metrics import get_metric
from hebbnets.tasks import nbody

RESULTS = Path(__file__).resolve().parents[1] / "results"

# (task name, task params) per bench
BENCHES = {
    "nbody": ("nbody", {}),
    "mnist_reconstruct": ("mnist_comp", {"mode": "reconstruct"}),
    "mnist_transform": ("mnist_comp", {"mode": "transform"}),
}

# Equal effort: every model gets a 2 x 2 grid (a capacity knob x its main optimisation /
# sparsity knob) over a fixed base (training budget).
_BP_NBODY = dict(epochs=60, patience=8, batch_size=64, progress=False)
_BP_MNIST = dict(epochs=40, patience=5, batch_size=64, progress=False)
GRIDS = {
    "nbody": {
        "mlp": (_BP_NBODY, {"hidden": [(128, 128), (256, 256)], "lr": [1e-3, 3e-3]}),
        "gnn": (_BP_NBODY, {"hidden": [64, 128], "lr": [1e-3, 3e-3]}),
        "transformer": ({**_BP_NBODY, "d_ff": 128}, {"d_model": [32, 64], "lr": [1e-3, 3e-3]}),
        # 128 atoms at most: with the padding mask the VN solves a per-sample Gram system, and
        # 256 atoms took > 15 min per grid point on the shared CPU (see the report)
        "vn": (dict(epochs=5, batch_size=64, progress=False), {"atoms": [(64,), (128,)], "lam": [0.01, 0.05]}),
    },
    "mnist_reconstruct": {
        "mlp": (_BP_MNIST, {"hidden": [(256,), (512, 512)], "lr": [1e-3, 3e-3]}),
        "ae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "conv_ae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "vae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "vn": (dict(epochs=5, batch_size=64, output="reconstruction", nonneg=True, progress=False),
               {"atoms": [(128,), (512,)], "lam": [0.01, 0.05]}),
    },
    "mnist_transform": {
        "mlp": (_BP_MNIST, {"hidden": [(256,), (512, 512)], "lr": [1e-3, 3e-3]}),
        "ae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "conv_ae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "vae": (_BP_MNIST, {"latent": [16, 64], "lr": [1e-3, 3e-3]}),
        "vn": (dict(epochs=5, batch_size=64, progress=False), {"atoms": [(128,), (512,)], "lam": [0.01, 0.05]}),
    },
}


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def select(bench: str, models: list[str]) -> Path:
    name, params = BENCHES[bench]
    task = hn.tasks.make(name, seed=0, scale="quick", **params)
    out_path = RESULTS / f"vn_benchmarks_ii_select_{bench}.json"
    chosen = json.loads(out_path.read_text())["chosen"] if out_path.exists() else {}
    trials = json.loads(out_path.read_text())["trials"] if out_path.exists() else {}
    for model in models:
        base, grid = GRIDS[bench][model]
        recs = tune(task, model, grid, base=base, log=log)  # validation carved from task.train only
        trials[model] = recs
        chosen[model] = recs[0]["config"]
        log(f"{bench}: chose {model} {recs[0]['config']} (val {recs[0]['value']:.4g})")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps({"bench": bench, "task": name, "task_params": params, "chosen": chosen,
                                        "trials": trials, "git_commit": git_commit()}, indent=2))
    return out_path


def run(bench: str, models: list[str], seeds: list[int]) -> Path:
    name, params = BENCHES[bench]
    sel = json.loads((RESULTS / f"vn_benchmarks_ii_select_{bench}.json").read_text())["chosen"]
    missing = [m for m in models if m not in sel]
    if missing:
        raise SystemExit(f"models {missing} have no selected configuration; run 'select' first")
    overrides = {m: {k: tuple(v) if isinstance(v, list) else v for k, v in sel[m].items()} for m in models}
    out_path = RESULTS / f"vn_benchmarks_ii_{bench}.json"
    records = json.loads(out_path.read_text())["records"] if out_path.exists() else []
    done = {(r["model"], r["seed"]) for r in records}
    commit = git_commit()
    for seed in seeds:
        todo = [m for m in models if (m, seed) not in done]
        if not todo:
            continue
        # a task given by name is regenerated per seed, so seeds vary data and models alike
        [(_, task, built)] = plan(name, todo, [seed], task_params=params,
                                  overrides={m: overrides[m] for m in todo})
        for model_name, model in built.items():
            t0 = time.perf_counter()
            model.fit(task.train)
            fit_s = time.perf_counter() - t0
            base = dict(model=model_name, model_config=jsonable(model.config.__dict__), seed=seed,
                        num_parameters=int(model.num_parameters), fit_seconds=fit_s, git_commit=commit,
                        task_params=jsonable(task.params), version=hn.__version__)
            new = []
            for split_name, split in task.tests.items():
                t0 = time.perf_counter()
                value = get_metric(task.metric)(model.predict(split.x, split.x_mask), split)
                pred_s = time.perf_counter() - t0
                new.append(dict(base, task=f"{bench}", split=split_name, metric=task.metric, value=float(value),
                                predict_seconds=pred_s))
                if name == "nbody":
                    new.append(dict(base, task=f"{bench}[nmse]", split=split_name, metric="mse",
                                    value=nbody.next_step_nmse(model, task, split_name)))
                    new.append(dict(base, task=f"{bench}[rollout10]", split=split_name, metric="mse",
                                    value=nbody.rollout_mse(model, task, split_name, steps=10)))
            records += new
            log(f"{bench} {model_name} seed={seed} fit {fit_s:.0f}s: "
                + ", ".join(f"{r['task']}:{r['split']}={r['value']:.4g}" for r in new))
            out_path.write_text(json.dumps({"bench": bench, "records": records}, indent=2))
    return out_path


def table(bench: str) -> str:
    records = json.loads((RESULTS / f"vn_benchmarks_ii_{bench}.json").read_text())["records"]
    out = []
    for task_name in dict.fromkeys(r["task"] for r in records):
        rows = summarize([r for r in records if r["task"] == task_name])
        out.append(format_table(rows, title=task_name))
    return "\n\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["select", "run", "table"])
    ap.add_argument("--bench", choices=sorted(BENCHES), required=True)
    ap.add_argument("--models", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = ap.parse_args()
    torch.set_num_threads(1)
    models = args.models or list(GRIDS[args.bench])
    if args.stage == "select":
        log(f"wrote {select(args.bench, models)}")
    elif args.stage == "run":
        log(f"wrote {run(args.bench, models, args.seeds)}")
        print(table(args.bench))
    else:
        print(table(args.bench))


if __name__ == "__main__":
    main()
