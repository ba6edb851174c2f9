"""VN benchmarks II: N-body dynamics and compositional MNIST, quick scale.

Two stages, each writing JSON under ``results/``:

    # 1. configuration choice on validation data carved from the training split (seed 0 task),
    #    the same number of grid points for every model
    python benchmarks/vn_benchmarks_ii.py select --bench nbody
    #    then one step past the grid's edge for every model whose best point lies on it
    python benchmarks/vn_benchmarks_ii.py extend --bench nbody
    # 2. 3 seeds (data and models both re-seeded) with the selected configurations
    python benchmarks/vn_benchmarks_ii.py run --bench nbody --seeds 0 1 2

    # 3. the tables, and reports/vn_benchmarks_ii.md from every bench that has results
    python benchmarks/vn_benchmarks_ii.py table --bench nbody
    python benchmarks/vn_benchmarks_ii.py report

Benches: ``nbody`` (task metric: next-step MSE of the scaled state change; the runner also
records the task's extra metrics, the per-split normalised MSE and the 10-step rollout MSE),
``mnist_reconstruct``, ``mnist_transform``. Stage 2 is ``hebbnets.bench.run`` with the selected
configurations as overrides, the same loop as ``hebbnets run``. Run single-threaded
(``OMP_NUM_THREADS=1``); every number in the report comes from these files.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench import format_table, run as run_models, summarize, tune
from hebbnets.bench.runner import git_commit

RESULTS = Path(__file__).resolve().parents[1] / "results"

# (task name, task params) per bench
BENCHES = {
    "nbody": ("nbody", {}),
    "mnist_reconstruct": ("mnist_comp", {"mode": "reconstruct"}),
    "mnist_transform": ("mnist_comp", {"mode": "transform"}),
}

# Equal effort: every model gets the same number of grid points (nbody: 2 capacities x 3 values
# of its main optimisation / sparsity knob; mnist: 2 x 2) over a fixed base (training budget).
_BP_NBODY = dict(epochs=200, patience=20, batch_size=64, progress=False)
_BP_MNIST = dict(epochs=40, patience=5, batch_size=64, progress=False)
GRIDS = {
    "nbody": {
        "mlp": (_BP_NBODY, {"hidden": [(128, 128), (256, 256)], "lr": [3e-4, 1e-3, 3e-3]}),
        "gnn": (_BP_NBODY, {"hidden": [64, 128], "lr": [3e-4, 1e-3, 3e-3]}),
        # a set of bodies: no positions, padded bodies are padding (not attended to)
        "transformer": ({**_BP_NBODY, "d_ff": 128, "positions": "none", "missing": "padding"},
                        {"d_model": [32, 64], "lr": [3e-4, 1e-3, 3e-3]}),
        # atoms span the baselines' parameter range (512 atoms: 72k, 1024: 143k parameters);
        # samples sharing a body-mask pattern share one Gram matrix, so this is affordable
        "vn": (dict(epochs=5, batch_size=64, progress=False),
               {"atoms": [(512,), (1024,)], "lam": [0.003, 0.01, 0.03]}),
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


def extend(bench: str, models: list[str]) -> Path:
    """One more grid point for every model whose best value of its last knob (lr, lam) lies at an
    edge of the grid: one geometric step past that edge, the other settings as in the best point.
    The same rule for every model keeps the tuning effort equal."""
    name, params = BENCHES[bench]
    task = hn.tasks.make(name, seed=0, scale="quick", **params)
    out_path = RESULTS / f"vn_benchmarks_ii_select_{bench}.json"
    doc = json.loads(out_path.read_text())
    for model in models:
        base, grid = GRIDS[bench][model]
        knob = list(grid)[-1]
        values = sorted(grid[knob])
        best = doc["trials"][model][0]["config"]
        if best[knob] not in (values[0], values[-1]) or any(t.get("extended") for t in doc["trials"][model]):
            continue
        step = values[1] / values[0]
        new_value = best[knob] / step if best[knob] == values[0] else best[knob] * step
        point = {k: (tuple(v) if isinstance(v, list) else v) for k, v in best.items() if k in grid}
        point[knob] = float(f"{new_value:.3g}")
        [rec] = tune(task, model, {k: [v] for k, v in point.items()}, base=base, log=log)
        rec["extended"] = True
        doc["trials"][model] = sorted(doc["trials"][model] + [rec], key=lambda r: r["value"])
        doc["chosen"][model] = doc["trials"][model][0]["config"]
        log(f"{bench}: extended {model} to {knob}={point[knob]}; chose {doc['chosen'][model]}")
        out_path.write_text(json.dumps(doc, indent=2))
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
    for seed in seeds:
        for model in models:
            if (model, seed) in done:
                continue
            # a task given by name is regenerated per seed, so seeds vary data and models alike
            records += run_models(name, [model], [seed], task_params=params,
                                  overrides={model: overrides[model]}, log=log)
            out_path.write_text(json.dumps({"bench": bench, "records": records}, indent=2))
    return out_path


def table(bench: str) -> str:
    records = json.loads((RESULTS / f"vn_benchmarks_ii_{bench}.json").read_text())["records"]
    return format_table(summarize(records), title=f"{bench} (quick scale, test splits)")


def report() -> Path:
    """reports/vn_benchmarks_ii.md: the table of every bench with results, and the chosen configs."""
    lines = ["# VN benchmarks II (quick scale)", "",
             "Generated by `python benchmarks/vn_benchmarks_ii.py report` from `results/vn_benchmarks_ii_*.json`;",
             "mean ± sample std over seeds, held-out test splits. Configurations chosen on validation data",
             "carved from the training split (seed 0), the same number of grid points per model.", ""]
    for bench in BENCHES:
        path = RESULTS / f"vn_benchmarks_ii_{bench}.json"
        if not path.exists():
            continue
        records = json.loads(path.read_text())["records"]
        commits = sorted({str(r.get("git_commit"))[:7] for r in records})
        lines += [f"## {bench}", "", f"commit(s): {', '.join(commits)}", "", "```", table(bench), "```", ""]
        sel_path = RESULTS / f"vn_benchmarks_ii_select_{bench}.json"
        if sel_path.exists():
            sel = json.loads(sel_path.read_text())
            lines += ["Chosen configurations (validation score of every grid point in the select file):", ""]
            for model, trials in sel["trials"].items():
                pts = "; ".join(f"{_point(t['config'], GRIDS[bench][model][1])} -> {t['value']:.4g}" for t in trials)
                lines.append(f"- `{model}`: {pts}")
            lines.append("")
    out = Path(__file__).resolve().parents[1] / "reports" / "vn_benchmarks_ii.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    return out


def _point(config: dict, grid: dict) -> str:
    return ", ".join(f"{k}={config.get(k)}" for k in grid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["select", "extend", "run", "table", "report"])
    ap.add_argument("--bench", choices=sorted(BENCHES), default=None)
    ap.add_argument("--models", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.stage == "report":
        log(f"wrote {report()}")
        return
    if args.bench is None:
        ap.error("--bench is required for select, run and table")
    models = args.models or list(GRIDS[args.bench])
    if args.stage == "select":
        log(f"wrote {select(args.bench, models)}")
    elif args.stage == "extend":
        log(f"wrote {extend(args.bench, models)}")
    elif args.stage == "run":
        log(f"wrote {run(args.bench, models, args.seeds)}")
        print(table(args.bench))
    else:
        print(table(args.bench))


if __name__ == "__main__":
    main()
