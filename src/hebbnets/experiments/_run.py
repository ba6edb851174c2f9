"""The one loop: plan jobs from a spec, check the whole plan, run what the store lacks.

``plan_bench`` turns a bench at a scale into ``Job``s (one per variant and seed), each with its
key (``fit_key``) and everything a worker needs. ``check_plan`` runs before anything trains:
unknown protocol, model, config key or task parameter, or a model that cannot run on the task's
data (its ``_build`` refuses the data shapes, e.g. a classifier on a regression task), is one
``ValueError`` naming the model. ``execute`` runs the jobs whose key the store lacks (locally
or on Ray), writing each entry as it finishes; ``run_job`` is the worker, the only place where
a model is fitted and scored for a record.

Every entry carries ``slots``: the (spec, bench, label, scale, seed) places of plans it answers.
A slot is in at most one entry: when a changed config gives a slot a new key, the new entry
takes the slot and an entry left without slots is dropped, so reports read each slot's current
fit and nothing else.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from .._version import __version__
from .. import models as _models
from .. import tasks as _tasks
from .._model import DataSpec, set_threads
from .._validation import resolve_device
from ._protocols import FitContext, FitHook, get_protocol
from ._spec import Bench, Measure, Spec
from ._store import RecordStore, fit_key, jsonable, measure_key, provenance


@dataclass
class Job:
    """One unit of work: ``payload`` is all a worker needs (plain data, picklable)."""

    key: str
    kind: str  # "fit" | "measure"
    slot: dict[str, Any]
    payload: dict[str, Any]
    name: str

    @property
    def seed(self) -> int | None:
        return self.slot.get("seed")


@functools.lru_cache(maxsize=8)
def _cached_task(name: str, params_json: str, data_seed: int, task_scale: str) -> Any:
    return _tasks.make(name, seed=data_seed, scale=task_scale, **json.loads(params_json))


def clear_task_cache() -> None:
    """Forget generated tasks: a task carries the configs chosen when it was generated
    (``model_configs``), so after a tune stage rewrote them, plans must generate it again."""
    _cached_task.cache_clear()


def make_task(name: str, params: dict[str, Any], data_seed: int, task_scale: str) -> Any:
    """``hn.tasks.make`` with a small in-process cache (jobs of one bench share their task)."""
    return _cached_task(name, json.dumps(jsonable(params), sort_keys=True), data_seed, task_scale)


def config_fields(model: str) -> set[str]:
    return {f.name for f in dataclasses.fields(_models.get(model).Config)}


def resolve_config(model: str, chosen: dict[str, Any], variant_config: dict[str, Any],
                   scale_config: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The config a variant runs with: the task's chosen config for ``model``, then the variant's
    overrides, then the scale's (``"*"`` entries only where ``model`` has the field); progress
    bars off (a cosmetic key, left out of record keys)."""
    fields = config_fields(model)
    cfg = {**chosen, **variant_config}
    cfg.update({k: v for k, v in scale_config.get("*", {}).items() if k in fields})
    cfg.update(scale_config.get(model, {}))
    if "progress" in fields:
        cfg["progress"] = False
    return cfg


def check_runs_on(model: Any, task: Any) -> None:
    """Build ``model``'s parameters for ``task``'s data shapes (no training): a model that cannot
    handle the data raises here, before any fit of the plan starts."""
    probe = _models.make(model.name, seed=model.seed, **dataclasses.asdict(model.config))
    spec = DataSpec.from_split(task.train)
    with torch.random.fork_rng(devices=[]):
        probe.build(spec)


def plan_bench(spec_name: str | None, bench: Bench, scale: str, *, seeds: Iterable[int] | None = None,
               models: Iterable[str] | None = None, chosen: dict[str, dict[str, Any]] | None = None,
               task: Any = None, check: bool = True) -> list[Job]:
    """Jobs of ``bench`` at ``scale`` (one per variant label and seed).

    Args:
        seeds: replace the bench's seeds. models: keep only these labels; a model name that labels
            no row keeps every variant of that model.
        chosen: ``{model: config}`` to start from instead of the task's ``model_configs``
            (e.g. configs just tuned at smoke scale under ``--out``).
        task: a ``Task`` object to use for every seed (in-process runs; data fixed).
        check: validate the whole plan (``check_plan``) before returning.
    """
    res = bench.at(scale)
    run_seeds = tuple(seeds) if seeds is not None else res.seeds
    variants = list(bench.variants)
    if models is not None:
        wanted = list(models)
        known = {v.label for v in variants} | {v.model for v in variants}
        unknown = [m for m in wanted if m not in known]
        if unknown:
            raise ValueError(f"models: {unknown} are not models of bench {bench.name!r}; "
                             f"expected labels from {[v.label for v in variants]}")
        # a name that is a row's label selects that row only (``vn_matrix`` is not also its control
        # ``vn_matrix-private``); a model name that labels no row selects every variant of it
        labels = {v.label for v in variants}
        variants = [v for v in variants if v.label in wanted or (v.model in wanted and v.model not in labels)]
    protocol = get_protocol(bench.protocol)
    jobs: list[Job] = []
    for i, seed in enumerate(run_seeds):
        data_seed = bench.data_seed if bench.data_seed is not None else seed
        if task is not None:
            inst = task
        else:
            try:
                inst = make_task(bench.task, dict(res.params), data_seed, res.task_scale)
            except ValueError as exc:
                raise ValueError(f"params: bench {bench.name!r} (task {bench.task!r}): {exc}") from None
        for v in variants:
            if v.model not in _models.names():
                raise ValueError(f"models: unknown model {v.model!r} in bench {bench.name!r}; "
                                 f"expected names from {_models.names()}")
            options = {**bench.options, **v.options}  # the row's protocol options over the bench's
            base = (chosen if chosen is not None else inst.model_configs).get(bench.tuned_config_key(v), {})
            cfg = resolve_config(v.model, dict(base), dict(v.config), {k: dict(x) for k, x in res.config.items()})
            try:
                model = _models.make(v.model, seed=seed, **cfg)
            except ValueError as exc:
                raise ValueError(f"models: {v.label!r} ({v.model}) in bench {bench.name!r}: {exc}") from None
            if check and i == 0:
                try:
                    check_runs_on(model, inst)
                    check_protocol = getattr(protocol, "check", None)
                    if check_protocol is not None:
                        check_protocol(model, inst, options)
                except ValueError as exc:
                    raise ValueError(f"models: {v.label!r} ({v.model}) cannot run on task {inst.name!r} "
                                     f"in bench {bench.name!r}: {exc}") from None
            full = jsonable(dataclasses.asdict(model.config))
            key = fit_key(inst.name, jsonable(inst.params), v.model, full, seed, bench.protocol, options)
            payload = {"kind": "fit", "task": bench.task, "params": jsonable(dict(res.params)), "data_seed": data_seed,
                       "task_scale": res.task_scale, "model": v.model, "config": full, "seed": seed,
                       "protocol": bench.protocol, "options": jsonable(options)}
            if task is not None:
                payload["task_obj"] = task
            slot = {"spec": spec_name, "bench": bench.name, "label": v.label, "scale": scale, "seed": seed}
            jobs.append(Job(key, "fit", slot, payload, f"{bench.name}/{v.label} seed={seed}"))
    return jobs


def plan_measure(spec_name: str | None, measure: Measure, scale: str) -> list[Job]:
    from ..measures.speed import get_measurement

    get_measurement(measure.function)  # unknown name: an error before anything runs
    params = jsonable(measure.at(scale))
    slot = {"spec": spec_name, "bench": measure.name, "label": measure.name, "scale": scale, "seed": None}
    payload = {"kind": "measure", "function": measure.function, "params": params}
    return [Job(measure_key(measure.function, params), "measure", slot, payload, f"{measure.name}")]


def plan_spec(spec: Spec, scale: str, *, benches: Iterable[str] | None = None, seeds: Iterable[int] | None = None,
              models: Iterable[str] | None = None, chosen: Callable[[Bench], Any] | None = None) -> list[Job]:
    """Every job of ``spec`` at ``scale`` (optionally only some benches/measures, seeds,
    models), checked whole before it is returned."""
    names = None if benches is None else list(benches)
    if names is not None:
        known = [b.name for b in spec.benches] + [m.name for m in spec.measures]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"benches: {unknown} are not benches of spec {spec.name!r}; expected names from {known}")
    jobs: list[Job] = []
    for b in spec.benches:
        if names is None or b.name in names:
            bench_models = models
            if models is not None:
                mine = [m for m in models if m in {v.label for v in b.variants} | {v.model for v in b.variants}]
                if not mine:
                    continue
                bench_models = mine
            jobs += plan_bench(spec.name, b, scale, seeds=seeds, models=bench_models,
                               chosen=chosen(b) if chosen is not None else None)
    if models is None:
        for m in spec.measures:
            if names is None or m.name in names:
                jobs += plan_measure(spec.name, m, scale)
    return jobs


# -- the worker -------------------------------------------------------------------------------
def run_job(payload: dict[str, Any], hooks: Iterable[FitHook] = ()) -> dict[str, Any]:
    """Do one job; returns its entry without key, slots and provenance (the driver adds them).
    The same payload gives the same entry on any backend (timings aside)."""
    if payload.get("threads"):
        torch.set_num_threads(int(payload["threads"]))
        set_threads(int(payload["threads"]))  # what every fit and prediction of the job runs with
    from ..measures.speed import get_measurement, machine, platform_fingerprint

    t0 = time.perf_counter()
    if payload["kind"] == "measure":
        rows = get_measurement(payload["function"])(**payload["params"])
        return {"kind": "measure", "function": payload["function"], "params": payload["params"],
                "rows": jsonable(rows), "stats": {"seconds": time.perf_counter() - t0, "machine": machine()},
                "version": __version__}
    task = payload.get("task_obj")
    if task is None:
        task = make_task(payload["task"], payload["params"], payload["data_seed"], payload["task_scale"])
    model = _models.make(payload["model"], seed=payload["seed"], device=payload.get("device"), **payload["config"])
    ctx = FitContext(task=task, model=model, seed=payload["seed"], options=dict(payload["options"]), hooks=list(hooks))
    rows = get_protocol(payload["protocol"])(ctx)
    for r in rows:
        if not isinstance(r, dict) or not {"split", "metric", "value"} <= set(r):
            raise ValueError(f"protocol: {payload['protocol']!r} returned a row without split, metric and value: {r!r}")
    ctx.stats["seconds"] = time.perf_counter() - t0
    if model.device.type != "cpu":  # CPU records keep their format; others say where they ran
        ctx.stats["device"] = str(model.device)
    # the processor and kernel level: records that differ only in these may differ in rounding
    ctx.stats["machine"] = platform_fingerprint()
    return {"kind": "fit", "task": task.name, "task_params": jsonable(task.params), "model": payload["model"],
            "config": jsonable(dataclasses.asdict(model.config)), "seed": payload["seed"],
            "protocol": payload["protocol"], "options": payload["options"], "rows": jsonable(rows),
            "stats": jsonable(ctx.stats), "version": __version__}


#: fields of an entry that hold measured times (differ between otherwise identical runs)
TIMING_KEYS = frozenset({"fit_seconds", "predict_seconds", "seconds"})


# -- the driver -------------------------------------------------------------------------------
def _same_slot(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("spec", "bench", "label", "scale", "seed", "stage", "point"))


def _store_entries(store: RecordStore, new: list[dict[str, Any]]) -> None:
    """Write ``new`` entries; every slot they take is released by any other entry (an entry
    left without slots is dropped), in one atomic write."""
    taken = [s for e in new for s in e.get("slots", [])]

    def release(other: dict[str, Any]) -> dict[str, Any] | None:
        slots = other.get("slots", [])
        keep = [s for s in slots if not any(_same_slot(s, t) for t in taken)]
        if len(keep) == len(slots):
            return other
        return {**other, "slots": keep} if keep else None

    store.put_many(new, others=release)


class Progress(FitHook):
    """Progress lines on stderr: ``[done/total] job``, elapsed time and an estimate of the time
    left (mean time of the jobs run so far times the jobs left)."""

    def __init__(self, total: int, reused: int, log: Callable[[str], None] | None):
        self.total, self.reused, self.log = total, reused, log
        self.done = 0
        self.t0 = time.perf_counter()
        self.current = ""

    @staticmethod
    def _hms(seconds: float) -> str:
        seconds = int(round(seconds))
        h, rem = divmod(seconds, 3600)
        m, s = divmod(rem, 60)
        return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")

    def start(self, job: Job) -> None:
        self.current = job.name
        if self.log:
            self.log(f"[{self.done + 1}/{self.total}] {job.name} ...")

    def end(self, job: Job, entry: dict[str, Any]) -> None:
        self.done += 1
        if not self.log:
            return
        elapsed = time.perf_counter() - self.t0
        left = (self.total - self.done) * elapsed / self.done
        scores = ", ".join(f"{r['split']}={r['value']:.4g}" for r in entry.get("rows", [])[:6]
                           if isinstance(r.get("value"), (int, float)) and "metric" in r)
        took = entry.get("stats", {}).get("seconds", math.nan)
        self.log(f"[{self.done}/{self.total}] {job.name}: {took:.1f}s" + (f"; {scores}" if scores else "")
                 + f"  (elapsed {self._hms(elapsed)}, about {self._hms(left)} left)")


def _finish(job: Job, entry: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "key": job.key, "slots": [job.slot], **prov}


def execute(jobs: list[Job], store: RecordStore | None, *, backend: str = "local", address: str | None = None,
            log: Callable[[str], None] | None = None, hooks: Iterable[FitHook] = (),
            recompute: bool = False, threads: int | None = None, device: Any = None) -> list[dict[str, Any]]:
    """Run every job whose key ``store`` lacks (all of them with ``recompute``) and return one
    entry per job, in job order.

    ``device``: where each fit's model trains (``hebbnets.models.make``'s ``device``: ``"cpu"``,
    ``"auto"``, ``"cuda"``, ...; ``None``: the CPU). Like ``threads`` it is not part of a job's
    key: a record answers its slot wherever it was made, and says where (``stats["device"]``).

    Each entry is written to ``store`` as soon as its job ends (so a killed run loses at most
    the jobs in progress). Jobs with the same key run once. ``backend`` is ``"local"`` (this
    process, one job at a time) or ``"ray"`` (one Ray task per job; ``address`` joins a
    cluster, default a local Ray).
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend: expected 'local' or 'ray', got {backend!r}")
    existing = {e["key"]: e for e in store.entries()} if store is not None else {}
    results: dict[str, dict[str, Any]] = {}
    todo: list[Job] = []
    seen: set[str] = set()
    slot_updates: list[dict[str, Any]] = []
    for job in jobs:
        if job.key in existing and not recompute:
            entry = existing[job.key]
            if not any(_same_slot(s, job.slot) for s in entry.get("slots", [])):
                entry = {**entry, "slots": entry.get("slots", []) + [job.slot]}
                existing[job.key] = entry
                slot_updates.append(entry)
            results[job.key] = entry
        elif job.key not in seen:
            seen.add(job.key)
            todo.append(job)
    if slot_updates and store is not None:
        _store_entries(store, slot_updates)
    if log and len(jobs):
        log(f"{len(jobs)} job(s): {len(jobs) - len(todo)} already in {store.path if store else 'the store'}, "
            f"{len(todo)} to run ({backend})")
    progress = Progress(len(todo), len(jobs) - len(todo), log)
    prov = provenance()
    if threads is not None:
        for job in todo:
            job.payload["threads"] = threads
    if device is not None:
        where = str(resolve_device(device))  # checked before any job runs
        for job in todo:
            job.payload["device"] = where
    if backend == "ray":
        from ._ray import run_on_ray

        for job, entry in run_on_ray(todo, address=address, progress=progress):
            entry = _finish(job, entry, prov)
            if store is not None:
                _store_entries(store, [entry])
            results[job.key] = entry
    else:
        for job in todo:
            progress.start(job)
            entry = _finish(job, run_job(job.payload, hooks), prov)
            if store is not None:
                _store_entries(store, [entry])
            results[job.key] = entry
            progress.end(job, entry)
    # slots of duplicated jobs (same key, another slot) go to the one entry
    extra = []
    for job in jobs:
        entry = results[job.key]
        if not any(_same_slot(s, job.slot) for s in entry.get("slots", [])):
            entry["slots"] = entry.get("slots", []) + [job.slot]
            extra.append(entry)
    if extra and store is not None:
        _store_entries(store, extra)
    return [results[job.key] for job in jobs]


def flat_records(entries: Iterable[dict[str, Any]], slot_of: Callable[[dict[str, Any]], Any] | None = None
                 ) -> list[dict[str, Any]]:
    """One flat dict per row of every fit entry: ``task``, ``task_params``, ``model`` (the
    label when the entry has one slot), ``model_config``, ``seed``, ``split``, ``metric``,
    ``value``, the row's extra fields, and the fit's scalar statistics (``num_parameters``,
    ``fit_seconds``, ...), ``git_commit``, ``git_dirty``, ``version``."""
    out = []
    for e in entries:
        if e.get("kind") != "fit":
            continue
        label = e["model"]
        if slot_of is not None:
            label = slot_of(e)
        scalars = {k: v for k, v in e.get("stats", {}).items() if not isinstance(v, (dict, list))}
        base = {"task": e["task"], "task_params": e["task_params"], "model": label, "model_name": e["model"],
                "model_config": e["config"], "seed": e["seed"], "protocol": e["protocol"], **scalars,
                "version": e.get("version"), "git_commit": e.get("commit"), "git_dirty": e.get("dirty")}
        for r in e["rows"]:
            value = r.get("value")
            out.append({**base, **r, "value": math.nan if value is None else value})
    return out


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


__all__ = ["Job", "TIMING_KEYS", "check_runs_on", "execute", "flat_records", "make_task", "plan_bench", "plan_measure",
           "plan_spec", "resolve_config", "run_job"]
