"""Small-scale RSGN experiments (sequential, one thread). Usage:
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/rsgn_experiments.py QUEUE_NAME...
Appends one JSON record per (task, model, config, seed) to results/rsgn/records.jsonl, summarised
into reports/rsgn.md by benchmarks/rsgn_summarize.py. Queues run in the order given.

``tune:`` queues choose a setting on validation data carved from the training split and write
results/rsgn/tuning.jsonl.

Runs with ``curve=True`` also record ``curve_test_accuracy``: the accuracy on ``tests["id"]``
after every epoch, read by an epoch callback that never feeds back into training. On the
author's split that set IS the author's validation set, so ``max(curve)`` is the paper's
protocol number (best validation accuracy over the epochs, selected on the set it is reported
on) and ``test_accuracy`` (the final model, no selection) is the honest number on the same data."""
import ast
import dataclasses
import json
import os
import sys
import time

import numpy as np
import torch

import hebbnets as hn
from hebbnets.training import EpochEnd

torch.set_num_threads(1)
OUT = "results/rsgn/records.jsonl"
LSTM40K = dict(hidden=64, layers=1, bidirectional=True)


def record(task, name, seed, tag, curve=False, **cfg):
    if "progress" in {f.name for f in dataclasses.fields(hn.models.get(name).Config)}:
        cfg = {"progress": False, **cfg}
    m = hn.models.make(name, seed=seed, task=task, **cfg)
    test = task.tests["id"]
    accs = []
    if curve:
        m.callbacks = [EpochEnd(lambda model, epoch, hist: accs.append(model.score(test)))]
    t0 = time.time()
    m.fit(task.train)
    fit_s = time.time() - t0
    rec = {"task": task.name, "task_split": task.params.get("split"), "model": name, "tag": tag, "seed": seed,
           "task_params": {k: v for k, v in task.params.items() if isinstance(v, (int, float, str))},
           "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
           "full_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(m.config).items()},
           "test_accuracy": m.score(test), "n_test": len(test),
           "num_parameters": m.num_parameters, "fit_seconds": fit_s,
           "epochs_run": len(getattr(m, "train_history", {}).get("train", []))}
    if curve:
        rec["curve_test_accuracy"] = accs
        rec["best_epoch_test_accuracy"] = max(accs)
    if name == "rsgn_parity" or name == "rsgn":
        s = m.stats
        with torch.no_grad():
            m.predict(task.tests["id"].x[:256])
        rec["active_fraction_per_step_test"] = m.last_stats["active_fraction"]
        rec["edges_per_sample_test"] = m.last_stats["edges_per_sample"]
        rec["train_active_fraction_last_epoch"] = float(np.mean(s.get("active_fraction", [np.nan])[-20:]))
        hu, gu = s.get("hebbian_update", []), s.get("gradient_update", [])
        rec["hebbian_update_mean"] = float(np.mean(hu)) if hu else None
        rec["gradient_update_mean"] = float(np.mean(gu)) if gu else None
        rec["reward_mean"] = float(np.mean(s["reward"])) if s.get("reward") else None
        rec["pruned_total"] = int(sum(s.get("pruned", [])))
        rec["sprouted_total"] = int(sum(s.get("sprouted", [])))
        # how far the Hebbian rule moved the affinities (they start at 0; pruning needs
        # sigmoid(a) < prune_threshold, i.e. a < -2.9 at the default 0.05)
        if name == "rsgn":  # rsgn_parity's affinity is low-rank (affinity_u, affinity_v): no per-edge value
            aff = m.affinity.detach()
            rec["affinity_abs_max"] = float(aff.abs().max())
            rec["affinity_std"] = float(aff.std())
            alive = aff[m.alive]  # the sign says whether the reward-modulated rule depressed an edge
            rec["affinity_min"] = float(alive.min()) if alive.numel() else None
            rec["affinity_negative_fraction"] = float((alive < 0).float().mean()) if alive.numel() else None
    print(json.dumps(rec), flush=True)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")


def queue(name):
    seeds = (0, 1, 2)
    if name == "trivial":
        for t in ("rsgn_hierarchical", "rsgn_longrange", "rsgn_tree", "rsgn_xor_range"):
            task = hn.tasks.make(t)
            for mdl in ("centroid", "lda"):
                record(task, mdl, 0, "trivial")
        task = hn.tasks.make("rsgn_longrange", split="honest")
        for mdl in ("centroid", "lda"):
            record(task, mdl, 0, "trivial-honest")
    elif name == "rsgn_longrange":
        task = hn.tasks.make("rsgn_longrange", split="honest")
        for s in seeds:
            record(task, "rsgn", s, "sparse-e10", n_steps=7, epochs=10, patience=10, batch_size=32)
    elif name == "xor":
        task = hn.tasks.make("rsgn_xor_range")
        for s in seeds:
            record(task, "rsgn", s, "sparse-e10", epochs=10, patience=10)
        for s in seeds:
            record(task, "lstm", s, "lstm40k-e20", epochs=20, patience=10, **LSTM40K)
    elif name == "tree":
        task = hn.tasks.make("rsgn_tree")
        for s in seeds:
            record(task, "rsgn", s, "sparse-e10", epochs=10, patience=10)
        for s in seeds:
            record(task, "lstm", s, "lstm40k-e20", epochs=20, patience=10, **LSTM40K)
    elif name == "ablate_hebb":
        task = hn.tasks.make("rsgn_longrange", split="honest")
        for s in seeds:
            record(task, "rsgn", s, "sparse-e10-nohebb", n_steps=7, epochs=10, patience=10, batch_size=32,
                   hebbian=False)
    elif name == "ablate_steps":
        task = hn.tasks.make("rsgn_longrange", split="honest")
        for steps in (1, 3):
            for s in seeds:
                record(task, "rsgn", s, f"sparse-e10-steps{steps}", n_steps=steps, epochs=10, patience=10,
                       batch_size=32)
    elif name == "slowgrad":
        task = hn.tasks.make("rsgn_longrange", split="honest")
        record(task, "rsgn", 0, "sparse-e10-slowgrad", n_steps=7, epochs=10, patience=10, batch_size=32,
               slow_grad=True)
    elif name == "xor_pos":
        task = hn.tasks.make("rsgn_xor_range")
        for s in seeds:
            record(task, "rsgn", s, "sparse-e10-positional", epochs=10, patience=10, positional=True)
    elif name == "ablate_nodes":
        task = hn.tasks.make("rsgn_longrange", split="honest")
        for n in (128, 512):
            record(task, "rsgn", 0, f"sparse-e10-nodes{n}", n_nodes=n, n_steps=7, epochs=10, patience=10,
                   batch_size=32)
    elif name == "xor_tf":
        task = hn.tasks.make("rsgn_xor_range")
        record(task, "transformer", 0, "transformer-default-e30", epochs=30, patience=10, d_model=32, n_heads=4,
               n_layers=2, d_ff=64, dropout=0.0)
    elif name.startswith("protocol:"):
        # protocol:MODEL:TASK:EPOCHS[:SEEDS] (SEEDS like 0,1,2): the author's protocol from the
        # task's model_configs with EPOCHS epochs (the cosine schedule spans the epochs run),
        # on the author's split, with the learning curve recorded
        parts = name.split(":")
        model, task_name, epochs = parts[1], parts[2], int(parts[3])
        run_seeds = [int(v) for v in parts[4].split(",")] if len(parts) > 4 else seeds
        task = hn.tasks.make("rsgn_" + task_name)
        for s in run_seeds:
            record(task, model, s, f"protocol-e{epochs}", curve=True, epochs=epochs)
    elif name.startswith("run:"):
        # run:TASK[/k=v,...]:MODEL:TAG:SEEDS[:k=v,...] -- one model on one task (task params after
        # "/"), seeds like 0,1,2, model config overrides last; values are Python literals
        _, task_spec, model, tag, seed_list, *over = name.split(":")
        task_name, _, task_over = task_spec.partition("/")
        task = hn.tasks.make(task_name, **_kv(task_over))
        for s in (int(v) for v in seed_list.split(",")):
            record(task, model, s, tag, **_kv(over[0] if over else ""))
    elif name.startswith("tune:"):
        # tune:TASK[/k=v,...]:MODEL:KEY=V1|V2|...[:k=v,...] -- a grid over one config field,
        # scored on validation data carved (20 %) from the training split (hn.bench.tune, seed 0);
        # no test split is touched. Appends one record per point to results/rsgn/tuning.jsonl.
        _, task_spec, model, grid_spec, *over = name.split(":")
        task_name, _, task_over = task_spec.partition("/")
        task = hn.tasks.make(task_name, **_kv(task_over))
        key, _, values = grid_spec.partition("=")
        grid = {key: [_kv(f"v={v}")["v"] for v in values.split("|")]}
        base = {"progress": False, **_kv(over[0] if over else "")}
        for rec in hn.bench.tune(task, model, grid, base=base, log=print):
            rec.update(task=task.name, task_params={k: v for k, v in task.params.items()
                                                    if isinstance(v, (int, float, str))})
            with open(os.path.join(os.path.dirname(OUT), "tuning.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
    else:
        raise SystemExit(f"unknown queue {name}")


def _kv(text):
    """ "a=1,b='x'" -> {"a": 1, "b": "x"} (values as Python literals, else strings)."""
    out = {}
    for item in filter(None, text.split(",")):
        k, v = item.split("=", 1)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


if __name__ == "__main__":
    for q in sys.argv[1:]:
        queue(q)
