"""Mean +- sample std (ddof=1) of test accuracy per (task, model, tag) from results/rsgn/records.jsonl
(written by benchmarks/rsgn_experiments.py).  python benchmarks/rsgn_summarize.py"""
import collections
import json

import numpy as np

groups = collections.defaultdict(list)
extra = collections.defaultdict(list)
for line in open("results/rsgn/records.jsonl"):
    r = json.loads(line)
    key = (r["task"], r.get("task_split"), r["model"], r["tag"])
    groups[key].append(r["test_accuracy"])
    extra[key].append(r)
print(f"{'task':18} {'split':7} {'model':12} {'tag':28} {'n':>2} {'acc %':>14} {'params':>7} {'active':>7} {'edges/s':>8} {'hebb|d|':>8} {'grad|d|':>8}")
for key, accs in groups.items():
    a = 100 * np.array(accs)
    std = a.std(ddof=1) if len(a) > 1 else float("nan")
    r0 = extra[key][0]
    act = np.mean([r.get("active_fraction_per_step_test", [np.nan])[-1] for r in extra[key]])
    edg = np.mean([r.get("edges_per_sample_test", np.nan) for r in extra[key]])
    hu = np.mean([r.get("hebbian_update_mean") or np.nan for r in extra[key]])
    gu = np.mean([r.get("gradient_update_mean") or np.nan for r in extra[key]])
    print(f"{key[0]:18} {str(key[1]):7} {key[2]:12} {key[3]:28} {len(a):>2} {a.mean():>6.1f} +- {std:>4.1f} "
          f"{r0['num_parameters']:>7} {act:>7.3f} {edg:>8.0f} {hu:>8.3f} {gu:>8.3f}")
