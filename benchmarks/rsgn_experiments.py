"""Small-scale RSGN experiments (sequential, one thread). Usage:
    OMP_NUM_THREADS=1 python benchmarks/rsgn_experiments.py QUEUE_NAME...
Appends one JSON record per (task, model, config, seed) to results/rsgn/records.jsonl."""
import json
import os
import sys
import time

import numpy as np
import torch

import hebbnets as hn

torch.set_num_threads(1)
OUT = "results/rsgn/records.jsonl"  # summarised by benchmarks/rsgn_summarize.py
LSTM40K = dict(hidden=64, layers=1, bidirectional=True)


def record(task, name, seed, tag, **cfg):
    import dataclasses
    if "progress" in {f.name for f in dataclasses.fields(hn.models.get(name).Config)}:
        cfg = {"progress": False, **cfg}
    m = hn.models.make(name, seed=seed, task=task, **cfg)
    t0 = time.time()
    m.fit(task.train)
    fit_s = time.time() - t0
    rec = {"task": task.name, "task_split": task.params.get("split"), "model": name, "tag": tag, "seed": seed,
           "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
           "test_accuracy": m.score(task.tests["id"]), "n_test": len(task.tests["id"]),
           "num_parameters": m.num_parameters, "fit_seconds": fit_s}
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
    elif name == "parity10":
        for t in ("rsgn_hierarchical", "rsgn_longrange"):
            task = hn.tasks.make(t)
            record(task, "rsgn_parity", 0, "parity-e10", epochs=10)
    elif name == "parity_short":
        task = hn.tasks.make("rsgn_longrange")
        record(task, "rsgn_parity", 0, "parity-e2", epochs=2)
    else:
        raise SystemExit(f"unknown queue {name}")


if __name__ == "__main__":
    for q in sys.argv[1:]:
        queue(q)
