"""``reproduce``: the three stages of a spec.

* ``tune``: every bench's tuning searches (``Grid`` / ``Moves``) on validation data carved from
  the training split of the seed-0 task (or the bench's fixed data seed); each point is a record
  (protocol ``tune``), so an interrupted search resumes. The chosen configurations, with every
  validation point behind them, are written as a configs file (``write_configs``).
* ``run``: every bench and measure at the scale, through ``execute`` (a finished fit is never
  recomputed; a changed config recomputes only what it changes).
* ``report``: ``build_report`` from the records alone.

Where files go (``out``, default the current folder): records in ``OUT/records/NAME.jsonl``,
reports and figures in ``OUT/reports/``. Configs chosen at the quick scale with ``OUT`` the
checkout that holds this package replace the package's files
(``src/hebbnets/tasks/configs``); any other tune (another scale, another ``OUT``) writes
``OUT/configs/SCALE/<file>.json`` and the run stage with the same ``OUT`` and scale uses those.
So a smoke-scale tune never touches the committed configs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from ..tasks import _configs
from ._protocols import _higher_is_better
from .reporting import build_report
from .reporting.scorecard import build_scorecard
from ._run import Job, clear_task_cache, execute, make_task, resolve_config, stderr_log
from ._spec import Bench, Grid, Moves, Spec, get_spec, project_specs, spec_names
from ._store import RecordStore, fit_key, jsonable, provenance

STAGES = ("tune", "run", "report")
#: validation part carved from the training split by every tuning point
VAL_FRACTION = 0.2


def parse_stages(text: str) -> list[str]:
    """``"run,report"`` -> ``["run", "report"]``; ``"all"`` -> every stage, in order."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts == ["all"]:
        return list(STAGES)
    unknown = [p for p in parts if p not in STAGES]
    if not parts or unknown:
        raise ValueError(f"--stage: expected stages from {list(STAGES)} or 'all', got {text!r}")
    return [s for s in STAGES if s in parts]


def package_checkout(out: Path) -> bool:
    """Whether ``out`` is the checkout root that holds this package (``out/src/hebbnets``)."""
    return (Path(out).resolve() / "src" / "hebbnets").resolve() == Path(_configs.__file__).resolve().parents[1]


def configs_dir(out: Path, scale: str) -> Path | None:
    """Where tune writes configs: ``None`` for the package's own folder (quick scale, ``out``
    is this checkout), else ``OUT/configs/SCALE``."""
    return None if scale == "quick" and package_checkout(out) else Path(out) / "configs" / scale


def _chosen_for(out: Path, scale: str) -> Callable[[Bench], dict[str, Any] | None]:
    directory = configs_dir(out, scale)

    def chosen(bench: Bench) -> dict[str, Any] | None:
        if directory is None or not (directory / f"{bench.configs}.json").exists():
            return None  # the task's own (package) configs
        return _configs.chosen(bench.configs, directory)

    return chosen


def store_for(spec: Spec, out: Path) -> RecordStore:
    return RecordStore(Path(out) / "records" / f"{spec.name}.jsonl")


# -- tune -------------------------------------------------------------------------------------------
def _tune_job(spec: Spec, bench: Bench, scale: str, task: Any, key_name: str, point_config: dict[str, Any],
              index: int, data_seed: int, res: Any) -> Job:
    """One validation point of the search ``bench.tuning[key_name]`` (a model name or a label)."""
    from .. import models as _models
    import dataclasses

    model = bench.tuned_model(key_name)
    cfg = resolve_config(model, {}, point_config, {k: dict(v) for k, v in res.config.items()})
    full = jsonable(dataclasses.asdict(_models.make(model, seed=0, **cfg).config))
    options = {"val_fraction": VAL_FRACTION}
    key = fit_key(task.name, jsonable(task.params), model, full, 0, "tune", options)
    payload = {"kind": "fit", "task": bench.task, "params": jsonable(dict(res.params)), "data_seed": data_seed,
               "task_scale": res.task_scale, "model": model, "config": full, "seed": 0, "protocol": "tune",
               "options": options}
    slot = {"spec": spec.name, "bench": bench.name, "label": key_name, "scale": scale, "seed": 0, "stage": "tune",
            "point": index}
    return Job(key, "fit", slot, payload, f"tune {bench.name}/{key_name} point {index + 1}")


def _value(entry: dict[str, Any]) -> float:
    return float(entry["rows"][0]["value"])


def tune_bench(spec: Spec, bench: Bench, scale: str, store: RecordStore, out: Path, *, backend: str = "local",
               address: str | None = None, log: Callable[[str], None] | None = stderr_log,
               models: Iterable[str] | None = None, threads: int | None = 1, device: Any = None,
               recompute: bool = False) -> Path | None:
    """Run ``bench``'s tuning searches and write their configs file; returns its path (None
    when the bench tunes nothing). ``recompute``: fit every validation point again, replacing
    its record, instead of reusing a recorded one (``execute``)."""
    searches = {m: s for m, s in bench.tuning.items() if models is None or m in set(models)}
    if not searches:
        return None
    res = bench.at(scale)
    data_seed = bench.data_seed if bench.data_seed is not None else 0
    task = make_task(bench.task, dict(res.params), data_seed, res.task_scale)
    higher = task.metric in _higher_is_better()
    better = (lambda a, b: a > b) if higher else (lambda a, b: a < b)
    state: dict[str, dict[str, Any]] = {}
    for m, s in searches.items():
        if isinstance(s, Grid):
            pending = [(p, {**s.base, **p}) for p in s.points()]
            state[m] = {"search": s, "points": [], "pending": pending, "best": None}
        else:
            state[m] = {"search": s, "points": [], "pending": [({}, dict(s.base))], "best": None}
    while any(st["pending"] for st in state.values()):
        jobs, owners = [], []
        for m, st in state.items():
            for i, (varied, cfg) in enumerate(st["pending"]):
                jobs.append(_tune_job(spec, bench, scale, task, m, cfg, len(st["points"]) + i, data_seed, res))
                owners.append((m, varied, cfg))
            st["pending"] = []
        entries = execute(jobs, store, backend=backend, address=address, log=log, threads=threads, device=device,
                          recompute=recompute)
        for (m, varied, cfg), entry in zip(owners, entries):
            st = state[m]
            point = {"config": jsonable(cfg), "value": _value(entry),
                     "num_parameters": entry["stats"].get("num_parameters"),
                     "fit_seconds": entry["stats"].get("fit_seconds"), "key": entry["key"]}
            history = entry["stats"].get("history") or {}
            if "epochs_run" in history:  # so a point its epoch cap ended is on the configs page (absent
                point["epochs_run"] = history["epochs_run"]  # from points recorded before tune kept it)
                if entry["config"].get("epochs") is not None:  # the cap it ran under (a scale may override)
                    point["epochs_cap"] = entry["config"]["epochs"]
            s = st["search"]
            if isinstance(s, Moves):
                accepted = st["best"] is None or better(point["value"], st["best"]["value"])
                point["accepted"] = accepted
                if len(st["points"]) > 0:
                    point["move"] = jsonable(dict(s.moves[len(st["points"]) - 1]))
                if accepted:
                    st["best"] = point
                st["points"].append(point)
                if len(st["points"]) <= len(s.moves):
                    move = dict(s.moves[len(st["points"]) - 1])
                    st["pending"] = [(move, {**st["best"]["config"], **move})]
            else:
                point["point"] = jsonable(varied)
                st["points"].append(point)
                if st["best"] is None or better(point["value"], st["best"]["value"]):
                    st["best"] = point
    prov = provenance()
    where = {"source": f"hebbnets reproduce {spec.name} --stage tune --scale {scale} (bench {bench.name})",
             "commit": prov["commit"], "dirty": prov["dirty"], "scale": scale, "data_seed": data_seed,
             "val_fraction": VAL_FRACTION, "validation_seed": _validation_seed()}
    doc_models = {}
    for m, st in state.items():
        chosen = {k: v for k, v in st["best"]["config"].items() if k != "progress"}
        own = {"model": bench.tuned_model(m)} if bench.tuned_model(m) != m else {}  # a variant tuned on its own
        doc_models[m] = {**own, "config": chosen, "value": st["best"]["value"],
                         "search": "grid" if isinstance(st["search"], Grid) else "moves",
                         "points": [{k: v for k, v in p.items() if k != "key"} for p in st["points"]], **where}
    doc = {"task": bench.task, "params": jsonable({k: v for k, v in bench.params.items() if k == "mode"}),
           "metric": task.metric, "models": doc_models}
    path = _configs.update(bench.configs, doc, configs_dir(out, scale))
    # every task generated so far (this search's own seed-0 task included) carries the choice made
    # before: any later plan in this process, in this call or the next, must generate it again
    clear_task_cache()
    return path


def _validation_seed() -> int:
    from ..tasks import VALIDATION_SEED

    return VALIDATION_SEED


# -- the stages -------------------------------------------------------------------------------------
def reproduce(name: str, stages: Iterable[str] = ("run", "report"), *, scale: str = "quick",
              seeds: Iterable[int] | None = None, out: str | Path = ".", backend: str = "local",
              address: str | None = None, benches: Iterable[str] | None = None, models: Iterable[str] | None = None,
              recompute: bool = False, figures: bool = True, threads: int | None = 1, device: Any = None,
              log: Callable[[str], None] | None = stderr_log) -> list[Path]:
    """Run the ``stages`` of spec ``name`` (or of every spec for ``"all"``); returns the
    reports written. See the module docstring for where files go.

    ``threads``: torch threads per job (default 1, as on the Ray backend: one job per core, no
    oversubscription when other work shares the machine, and the same records on both backends);
    ``None`` keeps the process's setting. ``device``: where every fit trains (``execute``)."""
    from .._validation import resolve_device
    from ._run import plan_spec

    if device is not None:
        resolve_device(device)  # before any planning or training
    names = spec_names() if name == "all" else [get_spec(name).name]
    stages = list(stages)
    out = Path(out)
    specs = [get_spec(n) for n in names]
    _check_selection(specs, benches, models)
    # the whole plan is checked before anything trains: every spec, bench and model
    plans = {s.name: plan_spec(s, scale, benches=_mine(s, benches), seeds=seeds, models=models,
                               chosen=_chosen_for(out, scale)) for s in specs} if "run" in stages else {}
    written = []
    for spec in specs:
        store = store_for(spec, out)
        if "tune" in stages:
            for b in spec.benches:
                if benches is None or b.name in set(benches):
                    path = tune_bench(spec, b, scale, store, out, backend=backend, address=address, log=log,
                                      models=models, threads=threads, device=device, recompute=recompute)
                    if path is not None and log:
                        log(f"wrote {path}")
            if "run" in stages:  # configs may have changed: plan again (tune_bench cleared the task cache)
                plans[spec.name] = plan_spec(spec, scale, benches=_mine(spec, benches), seeds=seeds, models=models,
                                             chosen=_chosen_for(out, scale))
        if "run" in stages:
            if log:
                log(f"== {spec.name} ({scale}): {len(plans[spec.name])} job(s)")
            execute(plans[spec.name], store, backend=backend, address=address, log=log, recompute=recompute,
                    threads=threads, device=device)
        if "report" in stages:
            path = build_report(spec, store, out / "reports", scale=scale, figures=figures,
                                records_name=_rel(store.path, out), configs_dir=configs_dir(out, scale))
            written.append(path)
            if log:
                log(f"wrote {path}")
    return written


def _check_selection(specs: list[Spec], benches: Iterable[str] | None, models: Iterable[str] | None) -> None:
    """``--benches`` / ``--models`` must name benches (measures) and model labels of the specs."""
    own = {b.name for s in specs for b in s.benches} | {m.name for s in specs for m in s.measures}
    unknown = sorted(set(benches or ()) - own)
    if unknown:
        raise ValueError(f"benches: {unknown} are not benches of {[s.name for s in specs]}; expected names from "
                         f"{sorted(own)}")
    chosen = [b for s in specs for b in s.benches if benches is None or b.name in set(benches)]
    labels = {v.label for b in chosen for v in b.variants} | {v.model for b in chosen for v in b.variants}
    unknown = sorted(set(models or ()) - labels)
    if unknown:
        raise ValueError(f"models: {unknown} are not models of the selected benches; expected names from {sorted(labels)}")


def _mine(spec: Spec, benches: Iterable[str] | None) -> list[str] | None:
    """The requested benches that belong to ``spec`` (``reproduce all --benches x``)."""
    if benches is None:
        return None
    own = {b.name for b in spec.benches} | {m.name for m in spec.measures}
    return [b for b in benches if b in own]


def _rel(path: Path, out: Path) -> str:
    try:
        return str(path.relative_to(out))
    except ValueError:
        return str(path)


def report(name: str, *, scale: str = "quick", out: str | Path = ".", figures: bool = True) -> list[Path]:
    """Rebuild ``OUT/reports/NAME.md`` (and figures) from ``OUT/records/NAME.jsonl`` alone;
    ``"scorecard"`` rebuilds ``OUT/reports/README.md`` from the project specs' records, ``"all"``
    every report and then the scorecard (at the quick scale, the committed one)."""
    out = Path(out)
    names = [] if name == "scorecard" else spec_names() if name == "all" else [get_spec(name).name]
    paths = []
    for n in names:
        spec = get_spec(n)
        store = store_for(spec, out)
        paths.append(build_report(spec, store, out / "reports", scale=scale, figures=figures,
                                  records_name=_rel(store.path, out), configs_dir=configs_dir(out, scale)))
    if name in ("scorecard", "all") and scale == "quick":
        paths.append(build_scorecard(project_specs(), out / "records", out / "reports", figures=figures,
                                     configs_dir=configs_dir(out, scale)))
    return paths
