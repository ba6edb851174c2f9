"""Continual learning: learn a task's stages one after the other and measure forgetting.

``fit_stages(model, task)`` learns ``task.stages`` in order (``fit`` for the first,
``partial_fit`` for every later one) and scores every test split after each stage;
``forgetting(records)`` turns those records into, per stage, the error on its own test split
right after learning it and after the last stage. Backprop models get the standard remedy by
configuration (``ewc_lambda > 0``: ``hebbnets.training.EWC``).

``continual_job(ctx)`` is the same check as a job of the experiments runner (protocol
``"continual"``): scores after every stage, forgetting rows, and (option ``entanglement``) the
measures of ``hebbnets.entanglement`` on the fitted model (``entanglement_summary``) plus how
much each parameter moved while the later stages were learned (``weight_change``).
"""
from __future__ import annotations

import copy
import time
from typing import Any

import torch

from ._image_codec import encode_images
from ._model import DataSpec, Model
from ._split import Split
from .metrics import get_metric
from .tasks import Task


#: how the stages are learned: one after the other (the continual setting); all at once (the
#: joint-training reference: no forgetting by construction, the upper bound of what a model of that
#: capacity keeps); or one after the other with a replay buffer of earlier stages' training samples
SCHEDULES = ("sequential", "joint", "replay")


def concat_splits(splits: list[Split]) -> Split:
    """The samples of ``splits`` in order, as one ``Split`` (per-sample shapes must agree; a
    missing mask where another split has one becomes all ones)."""
    if not splits:
        raise ValueError("splits: expected at least one Split")
    def cat(attr: str) -> torch.Tensor | None:
        parts = [getattr(s, attr) for s in splits]
        if all(p is None for p in parts):
            return None
        like = "x" if attr == "x_mask" else "y"
        return torch.cat([p if p is not None else torch.ones_like(getattr(s, like)) for p, s in zip(parts, splits)])
    shapes = {(tuple(s.x.shape[1:]), tuple(s.y.shape[1:])) for s in splits}
    if len(shapes) != 1:
        raise ValueError(f"splits: per-sample shapes differ across the splits: {sorted(shapes)}")
    return Split(torch.cat([s.x for s in splits]), torch.cat([s.y for s in splits]), x_mask=cat("x_mask"),
                 y_mask=cat("y_mask"), metric=splits[0].metric)


def stage_schedule(task: Task, schedule: str = "sequential", replay_fraction: float = 0.1,
                   seed: int = 0) -> list[tuple[str, Split]]:
    """The ``(name, training split)`` pairs a model learns in order under ``schedule``
    (``SCHEDULES``): the task's stages; ``[("joint", every stage's samples)]``; or the stages with
    each later one extended by a replay buffer: ``replay_fraction`` of every earlier stage's
    training samples, drawn without replacement under ``seed`` (at least one per stage)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule: unknown {schedule!r}; expected one of {list(SCHEDULES)}")
    if isinstance(replay_fraction, bool) or not isinstance(replay_fraction, (int, float)) or not 0 < replay_fraction <= 1:
        raise ValueError(f"replay_fraction: expected a number in (0, 1], got {replay_fraction!r}")
    stages = list(task.stages.items())
    if schedule == "joint":
        return [("joint", concat_splits([s for _, s in stages]))]
    if schedule == "sequential":
        return stages
    gen = torch.Generator().manual_seed(seed)
    out = [stages[0]]
    for k in range(1, len(stages)):
        buffer = []
        for _, earlier in stages[:k]:
            n = max(1, round(replay_fraction * len(earlier)))
            buffer.append(earlier.subset(torch.randperm(len(earlier), generator=gen)[:n].to(earlier.x.device)))
        out.append((stages[k][0], concat_splits([stages[k][1], *buffer])))
    return out


def fit_stages(model: Model, task: Task, log: Any = None, *, schedule: str = "sequential",
               replay_fraction: float = 0.1) -> list[dict[str, Any]]:
    """Learn ``task.stages`` in order and score every test split after each stage.

    Args:
        model: an unfitted (or to-be-refitted) model; the first stage is a fresh ``fit``.
        task: a task with ``stages`` (e.g. ``hn.tasks.make("functions1d_continual")``).
        log: optional callable taking a progress line.
        schedule, replay_fraction: how the stages are learned (``stage_schedule``; the replay
            buffer is drawn under the model's seed).

    Returns:
        One record per (stage, test split): ``model``, ``seed``, ``stage`` (its name),
        ``stage_index`` (0-based), ``split``, ``metric``, ``value``, ``fit_seconds`` (that stage's
        fit) and ``predict_seconds``.
    """
    if not isinstance(model, Model):
        raise ValueError(f"model: expected a hebbnets Model, got {type(model).__name__}")
    if not isinstance(task, Task) or not task.stages:
        raise ValueError("task: expected a Task with stages (a continual task)")
    metric = get_metric(task.metric)
    records: list[dict[str, Any]] = []
    for k, (stage, split) in enumerate(stage_schedule(task, schedule, replay_fraction, model.seed)):
        t0 = time.perf_counter()
        if k == 0:
            model.fit(split)
        else:
            model.partial_fit(split)
        fit_s = time.perf_counter() - t0
        for name, test in task.tests.items():
            t0 = time.perf_counter()
            value = float(metric(model.predict(test.x, test.x_mask), test))
            records.append({"model": model.name, "seed": model.seed, "stage": stage, "stage_index": k,
                            "split": name, "metric": task.metric, "value": value, "fit_seconds": fit_s,
                            "predict_seconds": time.perf_counter() - t0})
        if log is not None:
            scores = ", ".join(f"{r['split']}={r['value']:.4g}" for r in records if r["stage_index"] == k)
            log(f"[{task.name}] {model.name} seed={model.seed} after {stage} (fit {fit_s:.1f}s): {scores}")
    return records


def forgetting(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per stage ``s`` with a test split ``id_<s>``: its error right after learning ``s``
    (``after_own``), after the last stage (``final``), their difference (``forgetting``, > 0 =
    worse) and ratio (``final / after_own``).

    Args:
        records: ``fit_stages`` records of one model and seed.
    """
    if not records:
        raise ValueError("records: expected the non-empty output of fit_stages")
    if len({(r["model"], r["seed"]) for r in records}) != 1:
        raise ValueError("records: mix several models or seeds; pass those of one fit_stages call")
    last = max(r["stage_index"] for r in records)
    value = {(r["stage"], r["split"]): r["value"] for r in records}
    final_stage = next(r["stage"] for r in records if r["stage_index"] == last)
    out = {}
    for stage in dict.fromkeys(r["stage"] for r in records):
        key = f"id_{stage}"
        if (stage, key) not in value:
            continue
        own, final = value[(stage, key)], value[(final_stage, key)]
        out[stage] = {"after_own": own, "final": final, "forgetting": final - own,
                      "ratio": final / own if own else float("inf")}
    return out


# --- the experiments runner's job ------------------------------------------------------------------
#: samples of each stage's training split on which update overlaps are measured (the summed
#: update of a behaviour is estimated from a subset, the same one for every model)
OVERLAP_SAMPLES = 512
#: most used first-layer atoms per stage kept as images / curves
ATOMS_PER_STAGE = 8
CONTINUAL_OPTIONS = ("entanglement", "schedule", "replay_fraction")


def check_continual(model: Any, task: Task, options: dict[str, Any]) -> None:
    """Plan-time check of protocol ``"continual"``: a continual task, known options (``schedule``
    one of ``SCHEDULES``; ``replay_fraction`` only with ``"replay"``; ``entanglement`` not with
    ``"joint"``, which has no stage to measure after), a model that learns in stages (``partial_fit``)."""
    unknown = sorted(set(options) - set(CONTINUAL_OPTIONS))
    if unknown:
        raise ValueError(f"options: unknown option(s) {unknown} for protocol 'continual'; known: {list(CONTINUAL_OPTIONS)}")
    schedule = options.get("schedule", "sequential")
    if schedule not in SCHEDULES:
        raise ValueError(f"options: schedule {schedule!r} unknown; expected one of {list(SCHEDULES)}")
    if "replay_fraction" in options:
        if schedule != "replay":
            raise ValueError("options: replay_fraction is an option of schedule 'replay' only")
        stage_schedule(task, "sequential", options["replay_fraction"])  # its range check, one message
    if schedule == "joint" and options.get("entanglement"):
        raise ValueError("options: entanglement measures stages one after another; not with schedule 'joint'")
    if not task.stages or len(task.stages) < 2:
        raise ValueError(f"task: {task.name!r} has no stages; protocol 'continual' needs a continual task")
    if not isinstance(model, Model):
        raise ValueError(f"model: expected a hebbnets Model, got {type(model).__name__}")


def continual_job(ctx: Any) -> list[dict[str, Any]]:
    """Protocol ``"continual"`` (``ctx``: an experiments ``FitContext``): ``fit`` the first stage,
    ``partial_fit`` every later one, and score every test split after each stage. Option
    ``schedule`` (``stage_schedule``): ``"replay"`` extends each later stage by a buffer of earlier
    stages' samples (``replay_fraction``, drawn under the job's seed); ``"joint"`` fits every stage
    at once and returns only the final rows.

    Rows: the task metric after the last stage under its own name (the final error), after each
    earlier stage as ``after_<stage>:<metric>``, before any training as ``before:<metric>`` (the
    model built under its seed, untrained: the reference of forward transfer; not under
    ``"joint"``), and per earlier stage ``s`` on ``id_<s>``:
    ``forgetting`` (final - right after ``s``) and ``forgetting_ratio`` (final / right after).
    Stats: ``partial_fit_seconds``; ``stages``: per learned stage (under ``"joint"`` one entry,
    ``"joint"``) how long it trained (``stage_training``), so the budget of every stage and every
    cap hit is on record; with option ``entanglement``, ``stats["entanglement"]``:
    ``after_<first stage>`` and ``final`` (``entanglement_summary``) and ``weight_change``.
    """
    task, model = ctx.task, ctx.model
    schedule = ctx.options.get("schedule", "sequential")
    plan = stage_schedule(task, schedule, ctx.options.get("replay_fraction", 0.1), ctx.seed)
    if schedule == "joint":  # the reference: every stage at once, scored once (no stage to forget)
        ctx.fit(plan[0][1])
        ctx.stats["partial_fit_seconds"] = 0.0
        ctx.stats["stages"] = [stage_training(model, "joint")]
        return ctx.score_tests()
    names = [name for name, _ in plan]
    metric = task.metric
    rows = untrained_rows(ctx, plan[0][1])
    ctx.fit(plan[0][1])
    ctx.stats["stages"] = [stage_training(model, names[0])]
    measure = bool(ctx.options.get("entanglement"))
    ent: dict[str, Any] = {}
    if measure:
        ent[f"after_{names[0]}"] = entanglement_summary(model, task, final=False)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
    rows += ctx.score_tests(prefix=f"after_{names[0]}:")
    ctx.stats["partial_fit_seconds"] = 0.0
    for k, (name, split) in enumerate(plan[1:], start=1):
        t0 = time.perf_counter()
        model.partial_fit(split)  # the stage's samples (and, under "replay", the buffer)
        ctx.stats["partial_fit_seconds"] += time.perf_counter() - t0
        ctx.stats["stages"].append(stage_training(model, name))
        if k < len(names) - 1:
            rows += ctx.score_tests(prefix=f"after_{name}:")
    final = ctx.score_tests()
    rows += final
    value = {(r["split"], r["metric"]): r["value"] for r in rows}
    for name in names[:-1]:
        split = f"id_{name}"
        own, last = value.get((split, f"after_{name}:{metric}")), value.get((split, metric))
        if own is None or last is None:
            continue
        rows.append({"split": split, "metric": "forgetting", "value": last - own})
        rows.append({"split": split, "metric": "forgetting_ratio", "value": last / own if own else float("inf")})
    if measure:
        ent["final"] = entanglement_summary(model, task, final=True)
        ent["weight_change"] = weight_change(before, dict(model.named_parameters()), model)
        ctx.stats["entanglement"] = ent
    return rows


def untrained_rows(ctx: Any, split: Split) -> list[dict[str, Any]]:
    """``ctx.score_tests(prefix="before:")`` on ``ctx.model`` built for ``split``'s shapes under
    its seed and not trained: the same initial weights its ``fit`` starts from (``fit`` builds
    again under the seed), the error an untrained model has on every stage (forward transfer's
    reference, Lopez-Paz and Ranzato 2017). The caller's random state is left untouched."""
    model = ctx.model
    with torch.random.fork_rng():
        torch.manual_seed(model.seed)
        model.build(DataSpec.from_split(split))
    return ctx.score_tests(prefix="before:")


def stage_training(model: Any, stage: str) -> dict[str, Any]:
    """How long ``model``'s last ``fit`` / ``partial_fit`` trained, from its ``train_history``
    (``hebbnets.training``: per-epoch ``"train"``; the VN loop: per-epoch ``"energy"``):
    ``{"stage", "epochs_run", "epochs" (the cap, ``config.epochs``), "at_cap" (ran every epoch of
    the cap), "best_val_epoch" (0-based, None without validation)}``; only ``stage`` (and None
    elsewhere) for a model without such a history."""
    hist = getattr(model, "train_history", None) or {}
    per_epoch = hist.get("train") or hist.get("energy")
    cap = getattr(getattr(model, "config", None), "epochs", None)
    if not per_epoch:
        return {"stage": stage, "epochs_run": None, "epochs": cap, "at_cap": None, "best_val_epoch": None}
    val = hist.get("val") or []
    return {"stage": stage, "epochs_run": len(per_epoch), "epochs": cap,
            "at_cap": cap is not None and len(per_epoch) >= int(cap),
            "best_val_epoch": min(range(len(val)), key=val.__getitem__) if val else None}


def _subset(split: Split, n: int) -> Split:
    return split if len(split) <= n else split.subset(torch.arange(n))


def _r(v: float, digits: int = 4) -> float:
    return float(f"{float(v):.{digits}g}")


def entanglement_summary(model: Any, task: Task, final: bool = True) -> dict[str, Any] | None:
    """The entanglement and reuse measures of a model fitted on a continual task (None when
    none applies to the model).

    ``overlap``: ``hebbnets.entanglement.update_overlap`` between the first two stages' training
    splits (their first ``OVERLAP_SAMPLES`` samples): for a Vector Network per layer the
    active-set overlaps and the update cosines, for a backprop model the gradient cosine per
    layer. With ``final``, for a Vector Network also (on the test splits): ``usage`` (the
    first layer's atom-by-factor matrix, atoms per factor and reuse on ``id`` and the splits
    across stages together, and the atoms used by each stage's test samples, alone and by
    both), ``sparsity`` (active atoms per sample per
    layer on ``id``: summary and histogram) and ``atoms`` (the most used first-layer atoms of
    each stage's test samples, input side, as 8-bit images; a 1-D input is a 1-row image).
    """
    from . import entanglement as E
    from .training import BackpropModel
    from .vn.network import VectorNetwork

    if not isinstance(model, (VectorNetwork, BackpropModel)):
        return None
    names = list(task.stages)
    a, b = (_subset(task.stages[n], OVERLAP_SAMPLES) for n in names[:2])
    out: dict[str, Any] = {"overlap": {layer: {k: _r(v) if isinstance(v, float) else v for k, v in m.items()}
                                       for layer, m in E.update_overlap(model, a, b).items()}}
    if not final or not isinstance(model, VectorNetwork):
        return out
    labels = task.info.get("factor_labels", {})
    codes = E.vn_codes(model, task.tests["id"])
    # usage on every combination the tests hold: both stages' (id) and those across them (ood_cross*)
    cross = [k for k in task.tests if k.startswith("ood_cross") and k in labels]
    if "id" in labels:
        first = torch.cat([codes[0]] + [E.vn_codes(model, task.tests[k])[0] for k in cross])
        u = E.atom_usage(first, torch.cat([labels["id"]] + [labels[k] for k in cross]))
        out["usage"] = {"factors": [str(f) for f in task.info.get("factors", range(labels["id"].shape[1]))],
                        "by_factor": [[_r(v, 3) for v in row] for row in u["by_factor"].tolist()],
                        "atoms_per_factor": u["atoms_per_factor"].tolist(),
                        "specific_per_factor": u["specific"].sum(0).tolist(),
                        "reuse": [None if v != v else _r(v) for v in u["reuse"].tolist()]}
    stage_codes = {n: E.vn_codes(model, task.tests[f"id_{n}"])[0] for n in names if f"id_{n}" in task.tests}
    used = {n: (c != 0).any(0) for n, c in stage_codes.items()}  # (K,) used by any test sample of the stage
    share = {n: (c != 0).double().mean(0) for n, c in stage_codes.items()}  # (K,)
    if len(used) >= 2:
        u1, u2 = (used[n] for n in names[:2])
        s1, s2 = (share[n] for n in names[:2])
        out.setdefault("usage", {})["stages"] = {
            "atoms": int(u1.numel()), "first_only": int((u1 & ~u2).sum()), "second_only": int((u2 & ~u1).sum()),
            "both": int((u1 & u2).sum()), "neither": int((~u1 & ~u2).sum()),
            # threshold-free: sum_k min(p1, p2) / sum_k max(p1, p2) of the per-atom usage shares
            "weighted_jaccard": _r(float(torch.minimum(s1, s2).sum() / torch.maximum(s1, s2).sum().clamp_min(1e-30))),
            "share_first": [_r(v, 3) for v in s1.tolist()], "share_second": [_r(v, 3) for v in s2.tolist()]}
    out["sparsity"] = []
    for c in codes:
        sp = E.code_sparsity(c)
        hist = sp["histogram"][: sp["max"] + 1].tolist()
        out["sparsity"].append({"atoms": sp["atoms"], "mean": _r(sp["mean"]), "median": sp["median"], "min": sp["min"],
                                "max": sp["max"], "fraction": _r(sp["fraction"]), "histogram": hist})
    out["atoms"] = _stage_atoms(model, share, task)
    return out


def _stage_atoms(model: Any, share: dict[str, torch.Tensor], task: Task) -> dict[str, Any]:
    """The ``ATOMS_PER_STAGE`` first-layer atoms most used by each stage's test samples, as images."""

    S = model.layers[0].S.detach()  # (n, K)
    shape = tuple(model.spec.x_shape)
    image = shape if len(shape) == 2 else ((1, shape[0]) if len(shape) == 1 else (-1, shape[-1]))
    out = {}
    for name, sh in share.items():
        order = torch.argsort(sh, descending=True, stable=True)[:ATOMS_PER_STAGE]
        imgs = S[:, order].T.reshape(len(order), *image)
        out[name] = {"index": order.tolist(), "usage": [_r(v, 3) for v in sh[order].tolist()], **encode_images(imgs)}
    return out


def weight_change(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor], model: Any) -> dict[str, Any]:
    """How far every parameter moved while the later stages were learned: per parameter the
    relative change ``||after - before|| / ||before||``; for a Vector Network's atom matrices
    also per atom (column): the share left bit-for-bit unchanged and the median relative
    change."""
    from .vn.network import VectorNetwork

    out: dict[str, Any] = {}
    for name, old in before.items():
        new = after[name].detach()
        rel = float((new - old).norm() / old.norm().clamp_min(1e-30))
        entry: dict[str, Any] = {"relative": _r(rel)}
        if isinstance(model, VectorNetwork) and old.ndim == 2 and name.split(".")[-1] in ("S", "U"):
            col = (new - old).norm(dim=0) / old.norm(dim=0).clamp_min(1e-30)  # (K,)
            entry["atoms_unchanged"] = _r(float((col == 0).double().mean()))
            entry["atom_median"] = _r(float(col.median()))
        out[name] = entry
    return out


__all__ = ["check_continual", "continual_job", "entanglement_summary", "fit_stages", "forgetting", "stage_training",
           "untrained_rows", "weight_change"]
