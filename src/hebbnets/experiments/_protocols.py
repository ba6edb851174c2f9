"""Protocols (what one job does with a model and a task) and per-fit statistics.

A protocol is a function ``fn(ctx: FitContext) -> list[dict]`` registered by name; it trains
``ctx.model`` (a fresh, unfitted model built with the job's config and seed) on ``ctx.task``
and returns *rows*, one per score: ``{"split": name, "metric": name, "value": float, ...}``
(extra keys are kept). Per-fit numbers that are not scores (parameter count, fit time,
activity, a learning curve) go into ``ctx.stats``. The runner adds everything that identifies
the fit (task, parameters, model, config, seed, protocol, options, commit) around them, so a
protocol never writes records itself::

    @register_protocol("continual")
    def continual(ctx):
        first, second = ctx.task.stages.values()
        ctx.fit(first)                          # timed; recorded as stats["fit_seconds"]
        rows = ctx.score_tests(prefix="stage1_")
        ctx.model.partial_fit(second)
        return rows + ctx.score_tests(prefix="stage2_")

Built-ins: ``fit`` (train on ``task.train``, score every test split with the task metric and
every ``task.extra_metrics``; options ``curve`` (score the test splits after every epoch) and
``statistics`` (names of extra statistics, see ``register_statistic``)), ``tune`` (fit on
the training split minus a validation part carved from it, score that part only) and
``continual`` (a continual task's stages in order: ``hebbnets.continual.continual_job``) and
``amortised`` (a VN and its amortised encoders against FISTA: ``hebbnets.vn.amortised.amortised_job``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .._image_codec import decode_images, encode_images
from .._registry import Registry
from ..metrics import get_metric
from ._store import jsonable

ProtocolFn = Callable[["FitContext"], list[dict[str, Any]]]
StatisticFn = Callable[["FitContext"], "dict[str, Any] | None"]

PROTOCOLS: Registry[ProtocolFn] = Registry("protocol")
STATISTICS: Registry[StatisticFn] = Registry("statistic")
#: statistics every ``fit`` records when they apply (each returns None when it does not)
DEFAULT_STATISTICS = ("history", "solver_passes", "slow_rules", "code_size", "pair_choice")


def register_protocol(name: str) -> Callable[[ProtocolFn], ProtocolFn]:
    """Decorator: make ``fn(ctx) -> rows`` the protocol ``name`` (see the module docstring).
    ``fn.check(model, task, options)``, if the function has it, runs when the plan is checked
    (before anything trains) and raises ``ValueError`` for a model or options it cannot take."""
    return PROTOCOLS.register(name)


def protocol_names() -> list[str]:
    return PROTOCOLS.names()


def get_protocol(name: str) -> ProtocolFn:
    return PROTOCOLS.get(name, "protocol")


def register_statistic(name: str) -> Callable[[StatisticFn], StatisticFn]:
    """Decorator: ``fn(ctx) -> dict | None`` measured after a ``fit`` (on the fitted model);
    its dict is stored under ``stats[name]``; ``None`` means "does not apply to this model"."""
    return STATISTICS.register(name)


def statistic_names() -> list[str]:
    return STATISTICS.names()


@dataclass
class FitContext:
    """Everything a protocol works with.

    Attributes:
        task: the generated ``Task``; model: a fresh model (config and seed of the job);
        seed: the model seed; options: the bench's protocol options;
        stats: per-fit statistics, filled by the protocol (``fit`` and ``score_tests`` add
            ``num_parameters``, ``fit_seconds``, ``predict_seconds``);
        hooks: ``FitHook`` observers (the runner's progress display, a user's own).
    """

    task: Any
    model: Any
    seed: int
    options: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    hooks: list[Any] = field(default_factory=list)

    def fit(self, split: Any = None, callbacks: list[Any] | None = None) -> float:
        """Train ``model`` on ``split`` (default ``task.train``), with training ``callbacks``
        for models trained by ``hebbnets.training`` (an error for others); returns seconds and
        adds them to ``stats["fit_seconds"]``."""
        split = self.task.train if split is None else split
        if callbacks:
            if not hasattr(self.model, "training_callbacks"):
                raise ValueError(f"callbacks: model {self.model.name!r} is not trained by hebbnets.training "
                                 "(no epochs to call back on)")
            self.model.callbacks = list(callbacks)
        for h in self.hooks:
            h.on_fit_start(self)
        t0 = time.perf_counter()
        self.model.fit(split)
        seconds = time.perf_counter() - t0
        self.stats["fit_seconds"] = self.stats.get("fit_seconds", 0.0) + seconds
        self.stats["num_parameters"] = int(self.model.num_parameters)
        for h in self.hooks:
            h.on_fit_end(self)
        return seconds

    def score_tests(self, prefix: str = "") -> list[dict[str, Any]]:
        """Rows for every test split: the task metric (with the model's measured activity, if it
        reports one) and each ``task.extra_metrics`` entry; ``prefix`` is put before every
        metric name (for protocols that score one model several times)."""
        rows = []
        metric = get_metric(self.task.metric)
        for split_name, split in self.task.tests.items():
            t0 = time.perf_counter()
            y_hat = self.model.predict(split.x, split.x_mask)
            seconds = time.perf_counter() - t0
            self.stats["predict_seconds"] = self.stats.get("predict_seconds", 0.0) + seconds
            rows.append({"split": split_name, "metric": prefix + self.task.metric, "value": float(metric(y_hat, split)),
                         **activity(self.model)})
            for name, fn in self.task.extra_metrics.items():
                rows.append({"split": split_name, "metric": prefix + name, "value": float(fn(self.model, self.task, split_name))})
        return rows

    def record_statistics(self, names: tuple[str, ...] | list[str]) -> None:
        """Measure the named statistics on the fitted model into ``stats``."""
        for name in names:
            value = STATISTICS.get(name, "statistics")(self)
            if value is not None:
                self.stats[name] = jsonable(value)


class FitHook:
    """Observer of every job the runner executes (all methods optional)."""

    def on_fit_start(self, ctx: FitContext) -> None:
        """Before ``ctx.model`` is trained (after it is built from the job's config)."""

    def on_fit_end(self, ctx: FitContext) -> None:
        """After training, before scoring."""


def activity(model: Any) -> dict[str, float]:
    """Sparsity measured by models that report it (RSGN's ``last_stats``, set by the predict call
    just made; for splits over 1024 samples, its last 1024-sample chunk)."""
    stats = getattr(model, "last_stats", None)
    if not stats or "active_fraction" not in stats:
        return {}
    out = {"active_fraction": float(stats["active_fraction"][-1]), "edges_per_sample": float(stats["edges_per_sample"])}
    for key in ("activity", "activity_post_cap"):  # sparse RSGN: mean over steps, before / after its cap
        if key in stats:
            out[key] = float(stats[key])
    return out


# -- built-in protocols -------------------------------------------------------------------------
@register_protocol("fit")
def fit_protocol(ctx: FitContext) -> list[dict[str, Any]]:
    """Train on ``task.train``; score every test split (task metric and extra metrics).

    Options: ``curve`` (bool): also score every test split after every epoch (an observer
    that never feeds back into training) and record ``best_epoch_<metric>`` rows (the best
    test score over the epochs: a number selected on the test set, reported as such) and the
    curves in ``stats["curve"]``; ``statistics`` (list of names): extra statistics to record.
    """
    unknown = sorted(set(ctx.options) - {"curve", "statistics"})
    if unknown:
        raise ValueError(f"options: unknown option(s) {unknown} for protocol 'fit'; known: ['curve', 'statistics']")
    callbacks = []
    curve: dict[str, list[float]] = {}
    if ctx.options.get("curve"):
        from ..training import EpochEnd

        def score_epoch(model: Any, epoch: int, history: Any) -> None:
            for name, split in ctx.task.tests.items():
                curve.setdefault(name, []).append(float(model.score(split, ctx.task.metric)))

        callbacks.append(EpochEnd(score_epoch))
    ctx.fit(callbacks=callbacks)
    rows = ctx.score_tests()
    if curve:
        ctx.stats["curve"] = curve
        best = max if ctx.task.metric in _higher_is_better() else min
        rows += [{"split": s, "metric": f"best_epoch_{ctx.task.metric}", "value": best(v)} for s, v in curve.items()]
    ctx.record_statistics(tuple(DEFAULT_STATISTICS) + tuple(ctx.options.get("statistics", ())))
    return rows


def _higher_is_better() -> set[str]:
    from ..metrics import HIGHER_IS_BETTER

    return HIGHER_IS_BETTER


@register_protocol("tune")
def tune_protocol(ctx: FitContext) -> list[dict[str, Any]]:
    """One validation point: fit on ``task.train`` minus a part carved from it with the fixed
    ``hebbnets.tasks.VALIDATION_SEED`` (option ``val_fraction``, default 0.2), score that
    part with the task metric. Test splits are never touched. Records the ``history`` statistic
    as ``fit`` does, so a search point that ended at its epoch cap is on record too."""
    from ..tasks import validation_split

    unknown = sorted(set(ctx.options) - {"val_fraction"})
    if unknown:
        raise ValueError(f"options: unknown option(s) {unknown} for protocol 'tune'; known: ['val_fraction']")
    train, val = validation_split(ctx.task, ctx.options.get("val_fraction", 0.2))
    ctx.fit(train)
    value = float(get_metric(ctx.task.metric)(ctx.model.predict(val.x, val.x_mask), val))
    ctx.record_statistics(("history",))
    return [{"split": "validation", "metric": ctx.task.metric, "value": value}]


@register_protocol("continual")
def continual_protocol(ctx: FitContext) -> list[dict[str, Any]]:
    """Learn a continual task's stages in order (``fit``, then ``partial_fit``) and score after
    each; option ``entanglement``: the reuse and overlap measures (``hebbnets.continual.continual_job``)."""
    from ..continual import continual_job

    return continual_job(ctx)


def _check_continual(model: Any, task: Any, options: dict[str, Any]) -> None:
    from ..continual import check_continual

    check_continual(model, task, options)


continual_protocol.check = _check_continual


@register_protocol("amortised")
def amortised_protocol(ctx: FitContext) -> list[dict[str, Any]]:
    """Fit a VN, train its amortised encoders, time and score them against plain FISTA on
    every test split (``hebbnets.vn.amortised.amortised_job``)."""
    from ..vn.amortised import amortised_job

    return amortised_job(ctx)


def _check_amortised(model: Any, task: Any, options: dict[str, Any]) -> None:
    from ..vn.amortised import check_amortised

    check_amortised(model, task, options)


amortised_protocol.check = _check_amortised


# -- built-in statistics ------------------------------------------------------------------------
@register_statistic("history")
def _history(ctx: FitContext) -> dict[str, Any] | None:
    """Epochs run and the best validation epoch of models trained by ``hebbnets.training``
    (per-epoch ``"train"`` losses) or by the VN family's loop (``hebbnets.vn._fit``: per-epoch
    ``"energy"``), so every model's training length is on record (equal budgets)."""
    hist = getattr(ctx.model, "train_history", None)
    per_epoch = (hist or {}).get("train") or (hist or {}).get("energy")
    if not per_epoch:
        return None
    out: dict[str, Any] = {"epochs_run": len(per_epoch)}
    if hist.get("val"):
        out["best_val_epoch"] = min(range(len(hist["val"])), key=lambda i: hist["val"][i])
        out["val"] = [float(v) for v in hist["val"]]  # the validation curve: the reports draw it
    return out


@register_statistic("solver_passes")
def _solver_passes(ctx: FitContext) -> dict[str, Any] | None:
    """Models fitted by an outside solver with a pass cap (``dict_learning``: scikit-learn's online
    dictionary learning): ``{"passes_run", "max_passes"}``, so a fit that ran into the cap instead of
    the solver's own stopping rule is on record as an epoch-capped one is."""
    passes = getattr(ctx.model, "passes_run", None)
    if passes is None:
        return None
    return {"passes_run": int(passes), "max_passes": int(ctx.model.config.n_iter)}


@register_statistic("rsgn_fit")
def _rsgn_fit(ctx: FitContext) -> dict[str, Any] | None:
    """Sparse RSGN: ``fit_summary()`` (activity before / after the cap at the selected epoch,
    whether it met the selection limit, edges pruned / sprouted, affinities), its per-epoch
    history, and the activity per step (index 0 = ignition) of the last test forward, before
    and after the cap (the fit protocol scores the test split just before statistics)."""
    m = ctx.model
    if not hasattr(m, "fit_summary") or not getattr(m, "train_history", None):
        return None
    out = m.fit_summary()
    h = m.train_history
    for key in ("val", "activity_val", "activity_post_cap_val", "activity_train", "activity_post_cap_train",
                "target_activity", "selectable", "pruned", "sprouted", "alive_edges"):
        if h.get(key) is not None:
            out[f"epoch_{key}"] = list(h[key])
    out["test_pre_cap_per_step"] = list(m.last_stats["active_pre_cap"])
    out["test_post_cap_per_step"] = list(m.last_stats["active_fraction"])
    return out


@register_statistic("rsgn_gradient_flow")
def _rsgn_gradient_flow(ctx: FitContext) -> dict[str, Any] | None:
    """Sparse RSGN: per propagation step the gradient reaching the node states and activities,
    the rows it reaches, each step's share of the readout, the soft threshold's slope, the
    fraction of candidates cut, and a linear probe's test accuracy on the step's pooled state
    (``hebbnets.rsgn.diagnostics.gradient_flow`` on 512 test samples, probes fitted on 512
    training samples), at the fit's final temperature and at the schedule's start and end."""
    m = ctx.model
    if not hasattr(m, "propagate") or not getattr(m, "train_history", None):
        return None
    from ..rsgn.diagnostics import gradient_flow

    cfg = m.config
    return gradient_flow(m, ctx.task.train, ctx.task.tests["id"], temperatures=(cfg.t_start, cfg.t_end))


@register_statistic("slow_rules")
def _slow_rules(ctx: FitContext) -> dict[str, Any] | None:
    """What RSGN-style slow local rules did over the fit (``model.stats``): mean Hebbian and
    gradient update norms, mean reward, edges pruned and sprouted (totals)."""
    stats = getattr(ctx.model, "stats", None)
    if not isinstance(stats, dict) or "hebbian_update" not in stats:
        return None

    def mean(key: str) -> float | None:
        vals = [float(v) for v in stats.get(key, [])]
        return sum(vals) / len(vals) if vals else None

    out = {"hebbian_update_mean": mean("hebbian_update"), "gradient_update_mean": mean("gradient_update"),
           "reward_mean": mean("reward"), "reward_positive_fraction": None,
           "pruned_total": int(sum(stats.get("pruned", []))), "sprouted_total": int(sum(stats.get("sprouted", []))),
           "train_active_fraction": mean("active_fraction")}
    if stats.get("reward"):
        out["reward_positive_fraction"] = sum(float(r) > 0 for r in stats["reward"]) / len(stats["reward"])
    return out


@register_statistic("error_map")
def _error_map(ctx: FitContext) -> dict[str, Any] | None:
    """spatial2d: the fitted model's mean squared error at every centre, and each centre's split
    (``hebbnets.tasks.spatial2d.error_map``), as (grid, grid) lists."""
    if ctx.task.name != "spatial2d":
        return None
    from ..tasks.spatial2d import error_map

    em = error_map(ctx.model, ctx.task)
    return {"error": [[float(f"{v:.4g}") for v in row] for row in em["error"].tolist()], "split": em["split"].tolist()}


def _test_inputs(ctx: FitContext, limit: int = 1024) -> dict[str, tuple[torch.Tensor, torch.Tensor | None]]:
    """At most ``limit`` inputs (and masks) of every test split."""
    return {name: (s.x[:limit], None if s.x_mask is None else s.x_mask[:limit]) for name, s in ctx.task.tests.items()}


@register_statistic("code_size")
def _code_size(ctx: FitContext) -> dict[str, Any] | None:
    """Sparse-code models (``model.active_count``: ``vn``, ``vn_matrix``, ``vn_pairs``): the mean
    number of non-zero code entries per sample at prediction, on every test split (at most
    1,024 samples each). The size of what a reconstruction is carried by, beside a baseline's
    latent width."""
    count = getattr(ctx.model, "active_count", None)
    if count is None:
        return None
    return {name: float(f"{float(count(x, m).float().mean()):.4g}") for name, (x, m) in _test_inputs(ctx).items()}


@register_statistic("pair_choice")
def _pair_choice(ctx: FitContext) -> dict[str, Any] | None:
    """``vn_pairs``: on every test split, the fractions of samples whose code is the single
    matching pair atom, two half-explaining atoms, or other (``hebbnets.vn.pair_atom_choice``)."""
    if ctx.model.name != "vn_pairs":
        return None
    from ..vn import pair_atom_choice

    out = {}
    for name, (x, _) in _test_inputs(ctx).items():
        c = pair_atom_choice(ctx.model, x)
        out[name] = {k: float(f"{c[k]:.4g}") for k in ("single", "two_half", "other")}
    return out


@register_statistic("atoms")
def _atoms(ctx: FitContext) -> dict[str, Any] | None:
    """Vector Networks on image tasks: the most used atoms as images, ordered by how often each
    is active on the ``id`` test split (at most 16).

    * ``vn``: first-layer code vectors (``S`` columns, the input side, when the input is an
      image; else ``U`` columns when the target is);
    * ``vn_matrix`` / ``vn_pairs``: the composed rank-1 atoms ``u_a s_b^T`` (``u_a v_b^T``;
      private pairs: ``u_k s_k^T``), plus the factor libraries themselves (``"factors"``:
      ``U`` ``(m, Ku)`` and ``S`` ``(n, Ks)``, columns in the order of their usage).
    """
    name = ctx.model.name
    spec = getattr(ctx.model, "spec", None)
    if spec is None:
        return None
    split = ctx.task.tests["id"]
    x = split.x[:512]
    x_mask = None if split.x_mask is None else split.x_mask[:512]
    if name in ("vn_matrix", "vn_pairs"):
        return _pair_atoms(ctx.model, x, x_mask)
    layers = getattr(ctx.model, "layers", None)
    if name != "vn" or not layers:
        return None
    if len(spec.x_shape) == 2:
        side, shape, which = layers[0].S, spec.x_shape, "S"
    elif len(spec.y_shape) == 2 and len(layers) == 1:
        side, shape, which = layers[0].U, spec.y_shape, "U"
    else:
        return None
    inf = ctx.model.infer(x.flatten(1), x_mask=None if x_mask is None else x_mask.flatten(1))
    usage = (inf.codes[0] != 0).float().mean(0)  # (K,) fraction of samples using each atom
    order = torch.argsort(usage, descending=True, stable=True)[:16]
    images = side.detach()[:, order].T.reshape(len(order), *shape)
    return {"side": which, "usage": [float(f"{v:.3g}") for v in usage[order].tolist()], **encode_images(images)}


def _pair_atoms(model: Any, x: torch.Tensor, x_mask: torch.Tensor | None) -> dict[str, Any]:
    """The ``atoms`` statistic of the matrix family (``_atoms``)."""
    codes = model.codes(x, x_mask)  # (N, Ku, Ks) for shared / pair atoms, (N, K) for private pairs
    layer = model.layer.out if model.name == "vn_pairs" else model.layer
    U, S = layer.U.detach(), layer.S.detach()  # (m, Ku), (n, Ks)
    usage = (codes != 0).float().mean(0)  # (Ku, Ks) or (K,)
    flat = usage.flatten()
    order = torch.argsort(flat, descending=True, stable=True)[:16]
    if usage.ndim == 2:
        a, b = order // usage.shape[1], order % usage.shape[1]
        side = "u_a v_b^T" if model.name == "vn_pairs" else "u_a s_b^T"
        u_use, s_use = usage.sum(1), usage.sum(0)  # (Ku,), (Ks,) how often each factor is in an active pair
    else:
        a = b = order
        side = "u_k s_k^T (private pairs)"
        u_use = s_use = usage
    images = U[:, a].T[:, :, None] * S[:, b].T[:, None, :]  # (k, m, n)
    factors = {}
    for key, P, use in (("U", U, u_use), ("S", S, s_use)):
        cols = torch.argsort(use, descending=True, stable=True)
        factors[key] = {"used": int((use > 0).sum()), **encode_images(P[:, cols][None])}
    return {"side": side, "usage": [float(f"{v:.3g}") for v in flat[order].tolist()], **encode_images(images),
            "factors": factors}


def finite_or_nan(value: Any) -> float:
    """A stored value back to float (None, written for NaN, becomes NaN)."""
    return math.nan if value is None else float(value)
