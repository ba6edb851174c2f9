"""Import the results committed before the record store existed into ``records/`` (run once).

    OMP_NUM_THREADS=1 python benchmarks/import_legacy_records.py [--commit 17c3b9e]

Reads, from git at ``--commit`` (the files are no longer in the tree):

* ``reports/rsgn.json``: per-seed records of the RSGN report -> fit entries of the ``rsgn`` spec;
* ``reports/vn_benchmarks_i.json``: the functions1d 3-seed *summaries* (per-seed values were
  never committed) -> ``summary`` entries of ``vn_benchmarks``, and the per-seed capacity probe
  -> fit entries of ``vn_benchmarks`` (bench ``spatial2d_capacity``).

A legacy record is imported only into the slot of the spec that describes exactly that fit: the
spec's job for it is planned, the record's task parameters and (where it recorded them) its full
model config must equal the planned ones, and the entry takes the planned job's key, so
``hebbnets reproduce NAME --stage run --out fresh/`` would recompute it. Every entry keeps
``imported_from`` (file@commit), the original fields under ``original``, and ``commit`` (the
commit the result was computed at, where recorded; else null) with ``dirty`` null (not recorded).
Nothing is trained here. It was run once, at commit 96611b6 (the committed ``records/`` hold its
output); the models have changed since (e.g. the RSGN rework), so planned configs now differ from
the recorded ones and a rerun would import nothing for them: the check doing its job.
"""
from __future__ import annotations

import argparse
import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from hebbnets.experiments import RecordStore, get_spec, jsonable, plan_spec, store_for
from hebbnets.experiments._store import COSMETIC_CONFIG_KEYS, _digest

ROOT = Path(__file__).resolve().parents[1]


def git_json(commit: str, path: str) -> Any:
    return json.loads(subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                                     check=True).stdout)


def last_commit(commit: str, path: str) -> str:
    return subprocess.run(["git", "log", "-1", "--format=%H", commit, "--", path], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()


def _same(legacy: dict[str, Any], planned: dict[str, Any]) -> list[str]:
    """Keys where a recorded (full) config or task parameters differ from the planned ones."""
    return [k for k, v in jsonable(legacy).items() if k not in COSMETIC_CONFIG_KEYS and k in planned
            and jsonable(planned[k]) != v]


# -- rsgn ----------------------------------------------------------------------------------------
def rsgn_slot(task: str, model_tag: str) -> tuple[str, str] | None:
    """(bench, label) of a legacy (task/split, model[tag]) in the rsgn spec; None if the spec has none."""
    name, split = task.split("/")
    model, tag = model_tag[:-1].split("[")
    short = {"rsgn_hierarchical": "hierarchical", "rsgn_longrange": "longrange", "rsgn_tree": "tree",
             "rsgn_xor_range": "xor_range"}[name]
    if tag in ("trivial", "trivial-honest"):
        return (f"trivial_honest_{short}" if split == "honest" else f"trivial_{short}"), model
    if split == "author":
        return (f"paper_{short}", f"{model}-e{tag.split('-e')[1]}") if tag.startswith("protocol-") else None
    if split == "honest":
        return f"honest_{short}", tag
    return short, tag


def import_rsgn(commit: str) -> tuple[list[dict[str, Any]], list[str]]:
    src = "reports/rsgn.json"
    where = f"{src}@{last_commit(commit, src)[:7]}"
    recs = git_json(commit, src)["records"]
    spec = get_spec("rsgn")
    jobs = {(j.slot["bench"], j.slot["label"], j.slot["seed"]): j for j in plan_spec(spec, "quick", seeds=(0, 1, 2))}
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    notes = []
    for r in recs:
        slot = rsgn_slot(r["task"], r["model"])
        if slot is None:
            notes.append(f"rsgn: {r['task']} {r['model']} seed {r['seed']} ({r['split']}): no slot in the spec (superseded)")
            continue
        groups[(*slot, r["seed"])].append(r)
    entries = []
    for (bench, label, seed), rs in groups.items():
        job = jobs.get((bench, label, seed))
        if job is None:
            notes.append(f"rsgn: {bench}/{label} seed {seed}: not planned")
            continue
        final = next(r for r in rs if r["split"] == "final")
        cfg, params = job.payload["config"], _planned_params(job)
        bad = (_same(final["model_config"], cfg) if final["model_config"] != final["config_overrides"] else []) \
            + (_same(final["task_params"] or {}, params))
        if bad:
            notes.append(f"rsgn: {bench}/{label} seed {seed}: recorded config or task parameters differ from the spec's "
                         f"in {bad}; not imported")
            continue
        row = {"split": "id", "metric": "accuracy", "value": final["value"]}
        if final.get("active_fraction") is not None:
            row.update(active_fraction=final["active_fraction"], edges_per_sample=final["edges_per_sample"])
        rows = [row] + [{"split": "id", "metric": "best_epoch_accuracy", "value": r["value"]}
                        for r in rs if r["split"] == "best_epoch"]
        stats: dict[str, Any] = {"num_parameters": final["num_parameters"], "fit_seconds": final["fit_seconds"]}
        if final.get("epochs_run"):
            stats["history"] = {"epochs_run": final["epochs_run"]}
        entries.append(_fit_entry(job, rows, stats, where, None, {k: final.get(k) for k in (
            "task", "model", "tag", "config_overrides", "model_config", "task_params", "epochs_run")}))
    return entries, notes


def _planned_params(job: Any) -> dict[str, Any]:
    from hebbnets.experiments._run import make_task

    p = job.payload
    return jsonable(make_task(p["task"], p["params"], p["data_seed"], p["task_scale"]).params)


def _fit_entry(job: Any, rows: list[dict[str, Any]], stats: dict[str, Any], where: str, commit: str | None,
               original: dict[str, Any]) -> dict[str, Any]:
    p = job.payload
    return {"key": job.key, "kind": "fit", "slots": [job.slot], "task": p["task"], "task_params": _planned_params(job),
            "model": p["model"], "config": p["config"], "seed": p["seed"], "protocol": p["protocol"],
            "options": p["options"], "rows": rows, "stats": stats, "version": "0.1.0", "commit": commit, "dirty": None,
            "imported_from": where, "original": jsonable(original)}


# -- vn_benchmarks ----------------------------------------------------------------------------------
def import_vn(commit: str) -> tuple[list[dict[str, Any]], list[str]]:
    src = "reports/vn_benchmarks_i.json"
    where = f"{src}@{last_commit(commit, src)[:7]}"
    doc = git_json(commit, src)
    spec = get_spec("vn_benchmarks")
    jobs = plan_spec(spec, "quick", benches=["functions1d_masked", "functions1d_reconstruct", "spatial2d_capacity"])
    by_slot = {(j.slot["bench"], j.slot["label"], j.slot["seed"]): j for j in jobs}
    entries, notes = [], []
    for bench in ("functions1d_masked", "functions1d_reconstruct"):
        run = doc["runs"][bench]
        for model, recorded in run["configs"].items():
            seeds = sorted({s for row in run["summary"] if row["model"] == model for s in row["seeds"]})
            planned = [by_slot[(bench, model, s)] for s in seeds]
            bad = _same(recorded, planned[0].payload["config"])
            if bad:
                notes.append(f"vn_benchmarks: {bench}/{model}: the recorded config differs from the spec's in {bad}; "
                             "not imported")
                continue
            rows = [{"split": r["split"], "metric": r["metric"], "n": r["n"], "mean": r["mean"], "std": r["std"],
                     "seeds": r["seeds"]} for r in run["summary"] if r["model"] == model]
            params = next(r["num_parameters"] for r in run["summary"] if r["model"] == model)
            p = planned[0].payload
            entries.append({
                "key": _digest(["summary", [j.key for j in planned]]), "kind": "summary",
                "slots": [{"spec": "vn_benchmarks", "bench": bench, "label": model, "scale": "quick", "seed": None}],
                "task": p["task"], "task_params": {k: v for k, v in _planned_params(planned[0]).items() if k != "seed"},
                "model": model, "config": p["config"], "seeds": seeds, "fit_keys": [j.key for j in planned],
                "protocol": p["protocol"], "options": p["options"], "rows": rows,
                "stats": {"num_parameters": params}, "version": "0.1.0", "commit": None, "dirty": None,
                "imported_from": where, "original": {"report_commit": doc["git_commit"], "config": recorded}})
    probe = doc["capacity_probe"][0]
    for r in probe["runs"]:
        job = by_slot[("spatial2d_capacity", "vn-784-atoms", r["seed"])]
        bad = _same(r["config"], job.payload["config"])
        if bad:
            notes.append(f"vn_benchmarks: capacity probe seed {r['seed']}: config differs in {bad}; not imported")
            continue
        rows = [{"split": s, "metric": "mse", "value": v} for s, v in r["test"].items()]
        entries.append(_fit_entry(job, rows, {"num_parameters": r["num_parameters"], "fit_seconds": r["fit_seconds"]},
                                  where, probe["git_commit"], {"config": r["config"], "mode": probe["mode"]}))
    return entries, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commit", default="17c3b9e", help="the commit to read the legacy files from")
    ap.add_argument("--out", default=str(ROOT))
    args = ap.parse_args()
    for name, fn in (("rsgn", import_rsgn), ("vn_benchmarks", import_vn)):
        entries, notes = fn(args.commit)
        store: RecordStore = store_for(get_spec(name), Path(args.out))
        store.put_many(entries)
        print(f"{name}: imported {len(entries)} entries into {store.path}")
        for n in notes:
            print("  " + n)


if __name__ == "__main__":
    main()
