"""VN benchmarks I: configuration choice for ``functions1d`` and ``spatial2d`` (quick scale).

Configuration choice uses validation data carved from the training split of the seed-0 task
(``hebbnets.bench.tune``); no test split is touched.

* ``search`` (round 2, the configurations now recorded in the task modules): the same number of
  validation points per model; VN by a successive (greedy coordinate) search over layers, atom
  count, lam, top-k, nonneg, norm policy and inference budget, baselines over learning rate x
  weight decay (see ``SEARCH``)::

      OMP_NUM_THREADS=1 python benchmarks/vn_benchmarks_i.py search --bench functions1d_masked

* ``extend`` (round 3): continues from the round-2 choice (``MODEL_CONFIGS``). VN gets the moves
  round 2 left out (functions1d: nonneg, the clip norm policy, a larger FISTA budget, a longer
  Hebbian schedule, two layers with the full default inference budget; spatial2d: the larger
  FISTA budget); every backprop baseline gets its learning-rate grid again without the round-2
  CPU cap (functions1d 200 epochs, patience 20; spatial2d 400 epochs, patience 25)::

      OMP_NUM_THREADS=1 python benchmarks/vn_benchmarks_i.py extend --bench functions1d_masked

* ``select`` (round 1, kept for the record): 2 points per model (lam / lr / beta).

The chosen configurations are recorded in ``MODEL_CONFIGS`` / ``TUNING`` of the task modules.
The 3-seed tables come from ``hebbnets run functions1d ...`` and
``benchmarks/vn1_spatial2d_runs.py`` (spatial2d, with error maps); the report from
``benchmarks/vn1_report.py``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import hebbnets as hn
from hebbnets.bench import tune
from hebbnets.bench.runner import git_commit, jsonable

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


# -- the search (round 2): equal number of validation points per model -------------------------
# VN: a successive (greedy coordinate) search: start from the base, try one move at a time from the
# best configuration so far, keep it when validation error drops. Baselines: the same number of
# points from a fixed list (learning rate x weight decay). Every VN move keeps the parameter count
# within 2x of every baseline's (checked by tests/bench/test_models_on_tasks.py on the choice).
# CPU budget: spatial2d baselines are tuned *and* run with 100 epochs (patience 25; the first round
# used 400/100), functions1d sequence baselines with 20 epochs (patience 5; first round 40/8).
IMG_BASE2 = dict(epochs=100, patience=25, batch_size=32, progress=False)
SEQ_BASE2 = dict(epochs=20, patience=5, batch_size=64, progress=False)
OPT6 = [dict(lr=lr, weight_decay=wd) for wd in (0.0, 1e-4) for lr in (1e-3, 3e-3, 1e-2)]
OPT5 = [dict(lr=1e-3), dict(lr=3e-3), dict(lr=1e-2), dict(lr=1e-3, weight_decay=1e-4),
        dict(lr=3e-3, weight_decay=1e-4)]
SEARCH = {
    "functions1d_masked": ("functions1d", {"mode": "masked"}, {
        "vn": (dict(atoms=(128,), output="message", epochs=5, batch_size=64, lam=0.01, progress=False), [
            dict(lam=0.003), dict(atoms=(128, 64), hidden=(32,), max_sweeps=3, max_iter=100), dict(topk=16),
            dict(atoms_first=150)]),
        "transformer": (dict(d_model=32, n_heads=4, n_layers=2, d_ff=64, **SEQ_BASE2), OPT5),
        "mamba": (dict(d_model=24, n_layers=2, d_state=8, expand_factor=1, **SEQ_BASE2), OPT5),
        "mlp": (dict(hidden=(64, 64), **SEQ_BASE2), OPT5),
    }),
    "spatial2d_decode": ("spatial2d", {"mode": "decode"}, {
        "vn": (dict(atoms=(64,), epochs=30, batch_size=32, lam=0.05, progress=False), [
            dict(nonneg=True), dict(topk=2), dict(atoms=(64, 64), hidden=(64,)), dict(atoms_first=96),
            dict(norm_policy="clip_s")]),
        "cnn": (dict(channels=16, latent=64, **IMG_BASE2), OPT6),
        "vae": (dict(hidden=256, latent=8, channels=32, beta=1e-3, **IMG_BASE2), OPT6),
        "factorized": (dict(hidden=512, **IMG_BASE2), OPT6),
        "mlp": (dict(hidden=(64,), **IMG_BASE2), OPT6),
    }),
    "spatial2d_reconstruct": ("spatial2d", {"mode": "reconstruct"}, {
        "vn": (dict(atoms=(64,), output="reconstruction", epochs=30, batch_size=32, lam=0.01, progress=False), [
            dict(nonneg=True), dict(topk=4), dict(atoms=(64, 32), hidden=(64,)), dict(lam=0.003),
            dict(norm_policy="clip_s")]),
        "cnn": (dict(channels=16, latent=64, **IMG_BASE2), OPT6),
        "vae": (dict(hidden=128, latent=8, channels=32, beta=1e-2, **IMG_BASE2), OPT6),
        "factorized": (dict(hidden=512, **IMG_BASE2), OPT6),
        "mlp": (dict(hidden=(64,), **IMG_BASE2), OPT6),
    }),
}


def successive(task, model: str, base: dict, moves: list[dict], log=print, cache: dict | None = None,
               save=None) -> list[dict]:
    """Greedy coordinate search on validation data: ``1 + len(moves)`` points. Returns every
    point's record (``hn.bench.tune``), in evaluation order, with ``"accepted"`` flags.

    A move is a config patch; ``{"atoms_first": K}`` sets the first layer's atom count and keeps
    the other layers (so it applies to a 1- or 2-layer network alike); ``{"atoms_first_two": (K2,
    m1)}`` adds a second layer of ``K2`` atoms over an interface of size ``m1``. ``cache`` maps a
    config's JSON to a record already computed (resuming an interrupted search); ``save(record)``
    is called after every new point."""

    def evaluate(config: dict) -> dict:
        key = json.dumps(jsonable(config), sort_keys=True)
        if cache is not None and key in cache:
            return dict(cache[key])
        r = tune(task, model, {}, base=config, log=log)[0]
        if save is not None:
            save(r)
        return r

    best = evaluate(base)
    best["accepted"] = True
    recs = [best]
    for move in moves:
        patch = dict(move)
        if "atoms_first" in patch:
            patch["atoms"] = (patch.pop("atoms_first"), *best["config"]["atoms"][1:])
        if "atoms_first_two" in patch:
            k2, m1 = patch.pop("atoms_first_two")
            patch["atoms"], patch["hidden"] = (best["config"]["atoms"][0], k2), (m1,)
        r = evaluate({**best["config"], **patch})
        r["move"], r["accepted"] = move, r["value"] < best["value"]
        recs.append(r)
        if r["accepted"]:
            best = r
    return recs


def _store(out: dict, path: Path, bench: str, model: str, recs: list[dict], chosen: dict, t0: float) -> None:
    """Record one model's search points and its choice in ``out`` and write ``path``."""
    out["models"][model] = {"points": len(recs), "results": recs, "chosen": chosen["config"],
                            "value": chosen["value"], "num_parameters": chosen["num_parameters"],
                            "seconds": time.perf_counter() - t0}
    print(f"{bench} {model}: chose {chosen['config']} (val {chosen['value']:.4g}, "
          f"{chosen['num_parameters']} params, {len(recs)} points)", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(out), indent=1))


def search(bench: str, models: list[str] | None) -> None:
    task_name, params, spec = SEARCH[bench]
    task = hn.tasks.make(task_name, seed=0, **params)
    path = RESULTS / f"search_{bench}.json"
    out = json.loads(path.read_text()) if path.exists() else {
        "bench": bench, "task": task_name, "task_params": task.params, "git_commit": git_commit(), "models": {}}
    for model, (base, points) in spec.items():
        if models and model not in models:
            continue
        t0 = time.perf_counter()
        if model == "vn":
            recs = successive(task, model, base, points)
            chosen = [r for r in recs if r["accepted"]][-1]
        else:
            recs = [tune(task, model, {}, base={**base, **pt}, log=print)[0] for pt in points]
            chosen = min(recs, key=lambda r: r["value"])
        _store(out, path, bench, model, recs, chosen, t0)


SEQ_FULL = dict(epochs=200, patience=20)
IMG_FULL = dict(epochs=400, patience=25)
EXTEND = {
    "functions1d_masked": ("functions1d", {"mode": "masked"}, {
        "vn": [dict(nonneg=True), dict(norm_policy="clip_s"), dict(max_iter=500, tol=1e-5), dict(epochs=15),
               # 15 epochs of a 2-layer network at the full budget exceed the CPU budget: 5 epochs
               dict(atoms_first_two=(64, 32), max_sweeps=10, max_iter=200, epochs=5)],
        "mlp": [dict(lr=lr, **SEQ_FULL) for lr in (1e-3, 3e-3, 1e-2)],
        "transformer": [dict(lr=lr, **SEQ_FULL) for lr in (1e-3, 3e-3, 1e-2)],
        "mamba": [dict(lr=lr, **SEQ_FULL) for lr in (1e-2, 3e-3, 1e-3)],
    }),
    # round 2 capped the image baselines at 100 epochs, and their best validation epoch was 94-99
    **{f"spatial2d_{mode}": ("spatial2d", {"mode": mode}, {
        "vn": [dict(max_iter=500, tol=1e-5)],
        **{m: [dict(lr=lr, **IMG_FULL) for lr in (1e-3, 3e-3, 1e-2)] for m in ("cnn", "vae", "factorized", "mlp")},
    }) for mode in ("decode", "reconstruct")},
}


def extend(bench: str, models: list[str] | None) -> None:
    """Round 3: more validation points from the round-2 choice; appended to ``extend_{bench}.json``."""
    task_name, params, spec = EXTEND[bench]
    task = hn.tasks.make(task_name, seed=0, **params)
    chosen = task.model_configs
    path = RESULTS / f"extend_{bench}.json"
    out = json.loads(path.read_text()) if path.exists() else {
        "bench": bench, "task": task_name, "task_params": task.params, "git_commit": git_commit(), "models": {}}
    for model, points in spec.items():
        if models and model not in models:
            continue
        t0 = time.perf_counter()
        base = {**chosen[model], "progress": False}
        if model == "vn":
            partial = out.setdefault("partial", {}).setdefault(model, [])

            def save(rec: dict) -> None:
                partial.append(rec)
                path.write_text(json.dumps(jsonable(out), indent=1))

            cache = {json.dumps(r["config"], sort_keys=True): r for r in partial}
            recs = successive(task, model, base, points, cache=cache, save=save)
            best = [r for r in recs if r["accepted"]][-1]
        else:
            recs = [tune(task, model, {}, base={**base, **pt}, log=print)[0] for pt in points]
            best = min(recs, key=lambda r: r["value"])
        _store(out, path, bench, model, recs, best, t0)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--bench", choices=sorted(BENCHES), required=True)
    s.add_argument("--models", nargs="*", default=None)
    r = sub.add_parser("search")
    r.add_argument("--bench", choices=sorted(SEARCH), required=True)
    r.add_argument("--models", nargs="*", default=None)
    e = sub.add_parser("extend")
    e.add_argument("--bench", choices=sorted(EXTEND), required=True)
    e.add_argument("--models", nargs="*", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.cmd == "select":
        select(args.bench, args.models)
    elif args.cmd == "extend":
        extend(args.bench, args.models)
    else:
        search(args.bench, args.models)


if __name__ == "__main__":
    main()
