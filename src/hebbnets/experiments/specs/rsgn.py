"""``rsgn``: the RSGN paper's claims, checked (reports/rsgn.md).

Parts: the author's dense model (``rsgn_parity``) and the paper's baselines under the author's
protocol on the author's data and split (section 1); the mechanisms our sparse model uses
(section 2); accuracy of the sparse model against its measured activity, before and after the
safety cap, on an honest 70/15/15 split of the paper tasks and on two tasks built to need order
and composition, with trivial baselines (section 3); the slow rules and their ablations
(section 4); the tasks that test the claims against sequence models (section 5); the cost of a
full training step against the author's model and a linear-time sequence model, the exact graph
build, and one million nodes (section 6); claims (section 7). Background: ``docs/rsgn.md``.

Labels: ``MODEL-eN`` = N epochs under the author's protocol; ``nN`` = sparse RSGN with N nodes at
its defaults (homeostatic target 1.5 %, safety cap 10 %, epochs selectable only at validation
activity <= 2 %); ``-targetX`` = another homeostatic target X (selection limit and cap raised with
it); ``-nohebb`` / ``-noprune`` / ``-steps1`` = one slow rule or setting changed.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from ...bench.speed import register_measurement
from ...bench.summary import sample_std
from ...rsgn import _speed
from .._protocols import register_statistic
from ..reporting import Custom, Figure, ReportContext, Text, fmt, register_figure
from .._spec import Bench, Measure, Scale, Spec, register_spec, variant

AUTHOR = {"split": "author"}
HONEST = {"split": "honest"}
# the author's data has one draw (seed 42 inside the generator): every seed sees the same data;
# the own tasks are also drawn once (data seed 0), so seeds vary the models only
FIXED = 0
SEEDS = (0, 1, 2)
# smoke: a few hundred samples, tiny graphs, one epoch, one seed
_SMOKE_NODES = {"rsgn_parity": {"n_nodes": 32}, "rsgn": {"n_nodes": 32}}
SMOKE_AUTHOR = Scale(params={"n_samples": 240}, config={"*": {"epochs": 1}, **_SMOKE_NODES})
SMOKE_OWN = Scale(params={"n_train": 120, "n_test": 40}, config={"*": {"epochs": 1}, **_SMOKE_NODES})
#: accuracy the paper reports (best validation accuracy over 50 epochs, 3 runs; docs/rsgn.md)
PAPER = {"rsgn_hierarchical": {"rsgn_parity": 23.8, "transformer": 30.1, "lstm": 18.1, "mlp": 16.0,
                               "sparse_transformer": 15.9},
         "rsgn_longrange": {"rsgn_parity": 96.5, "transformer": 100.0, "lstm": 100.0}}
SHORT = {"rsgn_hierarchical": "hierarchical", "rsgn_longrange": "long-range", "rsgn_tree": "tree",
         "rsgn_xor_range": "xor-range"}
CHANCE = {"rsgn_hierarchical": 1 / 20, "rsgn_longrange": 1 / 10, "rsgn_tree": 1 / 12, "rsgn_xor_range": 1 / 4}


# == 1. the author's protocol ======================================================================
def _protocol_runs(models_epochs: list[tuple[str, int]]) -> tuple[Any, ...]:
    """The author's protocol (the task's configs) with ``epochs`` epochs: label ``MODEL-eN``."""
    return tuple(variant(f"{m}-e{e}", m, epochs=e) for m, e in models_epochs)


PAPER_HIER = Bench(
    "paper_hierarchical", "rsgn_hierarchical", params=AUTHOR, data_seed=FIXED, seeds=SEEDS, options={"curve": True},
    models=_protocol_runs([("rsgn_parity", 10), ("rsgn_parity", 50), ("transformer", 5), ("transformer", 50),
                           ("sparse_transformer", 5), ("sparse_transformer", 50), ("lstm", 5), ("lstm", 50),
                           ("mlp", 50)]),
    scales={"smoke": SMOKE_AUTHOR}, title="hierarchical, the author's split and protocol")
PAPER_LONG = Bench(
    "paper_longrange", "rsgn_longrange", params=AUTHOR, data_seed=FIXED, seeds=SEEDS, options={"curve": True},
    models=_protocol_runs([("rsgn_parity", 10), ("rsgn_parity", 50), ("transformer", 3), ("transformer", 50),
                           ("lstm", 3), ("lstm", 50)]),
    scales={"smoke": SMOKE_AUTHOR}, title="long-range, the author's split and protocol")

#: trivial classifiers: nearest centroid and LDA on the mean-pooled input (a bag of tokens), and
#: LDA on the means of the first and the last 8 tokens side by side (``lda-ends``)
TRIVIAL_MODELS = ("centroid", "lda", variant("lda-ends", "lda", pool="ends"))


def _trivial(name: str, task: str, params: dict[str, Any], smoke: Scale) -> Bench:
    # deterministic, parameter-free: one seed says everything
    return Bench(name, task, TRIVIAL_MODELS, params=params, data_seed=FIXED, seeds=(0,),
                 scales={"smoke": smoke}, title=f"{SHORT[task]}: trivial classifiers")


TRIVIAL = (_trivial("trivial_hierarchical", "rsgn_hierarchical", AUTHOR, SMOKE_AUTHOR),
           _trivial("trivial_longrange", "rsgn_longrange", AUTHOR, SMOKE_AUTHOR),
           _trivial("trivial_honest_hierarchical", "rsgn_hierarchical", HONEST, SMOKE_AUTHOR),
           _trivial("trivial_honest_longrange", "rsgn_longrange", HONEST, SMOKE_AUTHOR),
           _trivial("trivial_tree", "rsgn_tree", {}, SMOKE_OWN),
           _trivial("trivial_xor_range", "rsgn_xor_range", {}, SMOKE_OWN))
TRIVIAL_OF = {("rsgn_hierarchical", "author"): "trivial_hierarchical", ("rsgn_longrange", "author"): "trivial_longrange",
              ("rsgn_hierarchical", "honest"): "trivial_honest_hierarchical",
              ("rsgn_longrange", "honest"): "trivial_honest_longrange", ("rsgn_tree", None): "trivial_tree",
              ("rsgn_xor_range", None): "trivial_xor_range"}

# == 3-4. the sparse model: accuracy against measured activity, slow-rule ablations ==================
N_SMALL, N_LARGE = 1024, 4096
#: epochs of every sparse fit: the homeostatic target reaches its end value after 3 epochs, so
#: epochs 4-6 train at the target; no early stopping within them (patience = epochs)
EPOCHS = 6
#: the points of the accuracy-activity curve: (label suffix, overrides); the first is the default
#: model. Each other target raises the selection limit (max_activity) and the safety cap with it,
#: so neither decides its activity.
TARGETS = (("", {}),
           ("-target0.04", dict(target_activity=0.04, max_activity=0.05, max_active_frac=0.2)),
           ("-target0.1", dict(target_activity=0.1, max_activity=0.12, max_active_frac=0.3)))
#: one change each to the default model at N_SMALL: (label suffix, overrides, meaning)
ABLATIONS = (("-nohebb", dict(hebbian=False), "Hebbian rule off (affinities stay at 0)"),
             ("-noprune", dict(prune_threshold=0.0), "pruning off (prune threshold 0), so nothing sprouts either"))
STEPS1 = ("-steps1", dict(n_steps=1), "S = 1 propagation step (instead of the task's S: 5 hierarchical, 7 long-range)")
#: per-fit statistics of every sparse fit (see ``rsgn_fit`` below)
_RSGN_STATS = {"statistics": ["rsgn_fit"]}


def _sparse(name: str, task: str, params: dict[str, Any], smoke: Scale, *, positional: bool = False,
            targets: tuple[tuple[str, dict[str, Any]], ...] = TARGETS, seeds: tuple[int, ...] = SEEDS,
            ablations: tuple[tuple[str, dict[str, Any], str], ...] = ()) -> Bench:
    base = dict(epochs=EPOCHS, patience=EPOCHS, positional=positional)
    models = [variant(f"n{N_SMALL}{sfx}", "rsgn", n_nodes=N_SMALL, **base, **cfg) for sfx, cfg in targets]
    models += [variant(f"n{N_SMALL}{sfx}", "rsgn", n_nodes=N_SMALL, **base, **cfg) for sfx, cfg, _ in ablations]
    return Bench(name, task, tuple(models), params=params, data_seed=FIXED, seeds=seeds, options=_RSGN_STATS,
                 scales={"smoke": smoke}, title=f"sparse RSGN, {SHORT[task]}")


def _sparse_large(bench: Bench) -> Bench:
    """Every point of the curve (TARGETS) at N_LARGE nodes on ``bench``'s task, 3 seeds."""
    base = dict(n_nodes=N_LARGE, epochs=EPOCHS, patience=EPOCHS, positional=bench.variants[0].config["positional"])
    return Bench(f"{bench.name}_n{N_LARGE}", bench.task,
                 tuple(variant(f"n{N_LARGE}{sfx}", "rsgn", **base, **cfg) for sfx, cfg in TARGETS),
                 params=bench.params, data_seed=FIXED, seeds=SEEDS, options=_RSGN_STATS, scales=bench.scales,
                 title=f"sparse RSGN, {SHORT[bench.task]}, N = {N_LARGE:,}")


# The plan below fits single-thread processes on a shared 2-core machine (one N = 1,024 fit: 0.5-3.5
# min, one N = 4,096 fit: 3-8 min); CUT says what was left out, the report lists any fit not run
SPARSE_HIER = _sparse("sparse_hierarchical", "rsgn_hierarchical", HONEST, SMOKE_AUTHOR, ablations=(*ABLATIONS, STEPS1))
SPARSE_LONG = _sparse("sparse_longrange", "rsgn_longrange", HONEST, SMOKE_AUTHOR, ablations=(*ABLATIONS, STEPS1))
SPARSE_TREE = _sparse("sparse_tree", "rsgn_tree", {}, SMOKE_OWN, positional=True)
SPARSE_XOR = _sparse("sparse_xor_range", "rsgn_xor_range", {}, SMOKE_OWN, positional=True)
SPARSE = (SPARSE_HIER, SPARSE_LONG, SPARSE_TREE, SPARSE_XOR)
#: the curve at N_LARGE, 3 seeds, on every task (keyed by the N_SMALL bench's name)
LARGE = {b.name: _sparse_large(b) for b in SPARSE}
DEFAULT_LABEL = f"n{N_SMALL}"
LARGE_LABEL = f"n{N_LARGE}"
CUT = ("Not planned, for lack of compute (single-thread processes on a shared 2-core machine): the slow-rule "
       "ablations on the own tasks. Nothing else was shortened: every fit that ran has its full 6 epochs.")


def _default_runs() -> list[tuple[Bench, str]]:
    """(bench, label) of every default-model run: N_SMALL on each sparse bench, N_LARGE where run."""
    out = []
    for bench in SPARSE:
        out.append((bench, DEFAULT_LABEL))
        if bench.name in LARGE:
            out.append((LARGE[bench.name], LARGE_LABEL))
    return out

# == 5. tasks that test the claims: sequence models (records of the earlier report stay valid) =====
_LSTM40K = dict(hidden=64, layers=1, bidirectional=True)
_TF40K = dict(d_model=48, n_heads=4, n_layers=2, d_ff=96, dropout=0.0)


def _own(name: str, task: str, lstm_patience: int, extra: tuple[Any, ...] = ()) -> Bench:
    return Bench(name, task, data_seed=FIXED, seeds=SEEDS, scales={"smoke": SMOKE_OWN}, title=SHORT[task], models=(
        variant("parity-e10", "rsgn_parity", epochs=10),
        variant("lstm-paper-e10", "lstm", epochs=10, patience=10),
        variant("lstm40k-e20", "lstm", epochs=20, patience=lstm_patience, **_LSTM40K),
        variant("tf-paper-e10", "transformer", epochs=10, patience=10),
        variant("tf40k-e20", "transformer", epochs=20, patience=20, **_TF40K),
        *extra))


TREE = _own("tree", "rsgn_tree", 10)
XOR = _own("xor_range", "rsgn_xor_range", 20, (variant("lstm40k-e30-lr3e-3", "lstm", epochs=30, patience=30, lr=3e-3,
                                                       **_LSTM40K),))

# the author's model: Hebbian and gradient update sizes per batch (2 epochs are enough to read them)
SLOW_RULES_PARITY = Bench("slow_rules_parity", "rsgn_hierarchical", params=AUTHOR, data_seed=FIXED, seeds=(0,),
                          options={"statistics": ["slow_rules"]},
                          models=(variant("rsgn_parity-e2", "rsgn_parity", epochs=2),), scales={"smoke": SMOKE_AUTHOR},
                          title="slow rules, the author's model")

# == 6. cost ========================================================================================
#: N and T grown together (N = 8 T); the author's dense model up to 4,096 nodes (O(N^2) memory)
COST_SIZES = [[256, 32], [1024, 128], [4096, 512], [16384, 2048], [65536, 8192]]
COST = Measure(
    "cost", "rsgn_cost",
    {"sizes": COST_SIZES, "models": ["rsgn", "rsgn_parity", "mamba"], "max_nodes": {"rsgn_parity": 4096},
     "batch_size": 8, "n_features": 32, "n_classes": 10, "repeats": 2, "structure_every": 50, "calibrate_steps": 100},
    scales={"smoke": {"sizes": [[32, 8], [64, 16]], "max_nodes": {"rsgn_parity": 64}, "repeats": 1, "calibrate_steps": 2}},
    title="full training step against N and T")
GRAPH = Measure("graph_build", "rsgn_graph_build", {"sizes": [4096, 16384, 65536], "k": 16},
                scales={"smoke": {"sizes": [256]}}, title="exact kNN graph build, KD-tree vs brute force")
MILLION = Measure(
    "million", "rsgn_training_step",
    {"model": "rsgn", "n_nodes": 1048576, "seq_len": 8192, "batch_size": 8, "n_features": 32, "n_classes": 10,
     "repeats": 1, "structure_every": 50, "calibrate_steps": 0},
    scales={"smoke": {"n_nodes": 128, "seq_len": 16}}, title="one training step at 1,048,576 nodes")


@register_measurement("rsgn_cost")
def _cost(**params: Any) -> list[dict[str, Any]]:
    return _speed.cost_scaling(**params)


@register_measurement("rsgn_graph_build")
def _graph_build(sizes: list[int], **params: Any) -> list[dict[str, Any]]:
    return _speed.graph_builds(sizes, **params)


@register_measurement("rsgn_training_step")
def _training_step(**params: Any) -> list[dict[str, Any]]:
    return [_speed.training_step_cost(**params)]


@register_statistic("rsgn_fit")
def _rsgn_fit(ctx: Any) -> dict[str, Any] | None:
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


# == report helpers ================================================================================
def _pct(cell: Any) -> str:
    return "—" if cell is None else (f"{100 * cell.mean:.1f}" if cell.n < 2 or math.isnan(cell.std)
                                    else f"{100 * cell.mean:.1f} ± {100 * cell.std:.1f}")


def _pct1(cell: Any) -> str:
    """A percentage, with '(1 seed)' when there is one."""
    return "—" if cell is None else _pct(cell) + (" (1 seed)" if cell.n < 2 else "")


def _ms(values: list[float], scale: float = 100.0, digits: int = 2) -> str:
    """``mean ± sample std`` of ``values`` times ``scale`` ("—" when empty)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return "—"
    m = scale * statistics.mean(vals)
    return f"{m:.{digits}f}" if len(vals) < 2 else f"{m:.{digits}f} ± {scale * sample_std(vals):.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _params(ctx: ReportContext, bench: str, label: str) -> str:
    fits = ctx.fits(bench, label)
    p = [e["stats"].get("num_parameters") for e in fits if e["stats"].get("num_parameters") is not None]
    return f"{int(round(sum(p) / len(p))):,}" if p else "—"


def _test_rows(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
    """The accuracy row on the test split of every seed of ``label``."""
    return [r for e in ctx.fits(bench, label) for r in e["rows"] if r["split"] == "id" and r["metric"] == "accuracy"]


def _fit_stats(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
    return [e["stats"]["rsgn_fit"] for e in ctx.fits(bench, label) if e["stats"].get("rsgn_fit")]


def _trivial_cells(ctx: ReportContext, bench: Bench) -> list[tuple[str, Any]]:
    name = TRIVIAL_OF[(bench.task, bench.params.get("split"))]
    return [(v.label, ctx.cell(name, v.label, "id", "accuracy")) for v in ctx.spec.bench(name).variants]


# == section 1 ======================================================================================
def paper_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench in (PAPER_HIER, PAPER_LONG):
        task = bench.task
        for v in bench.variants:
            best, final = ctx.cell(bench.name, v.label, "id", "best_epoch_accuracy"), ctx.cell(bench.name, v.label, "id", "accuracy")
            if final is None:
                continue
            rows.append([SHORT[task], v.model, _params(ctx, bench.name, v.label), str(v.config["epochs"]), str(final.n),
                         _pct(best), _pct(final), str(PAPER[task].get(v.model, "—"))])
        for label, c in _trivial_cells(ctx, bench):
            if c is not None:
                rows.append([SHORT[task], label, "0", "—", str(c.n), "—", _pct(c), "—"])
    return _table(["task", "model", "params", "epochs", "seeds", "author's number (best epoch)", "final model", "paper"],
                  rows)


# == section 2: the mechanisms of the default model =================================================
def mechanisms_section(ctx: ReportContext) -> list[str]:
    from ...rsgn.model import RSGNConfig

    c = RSGNConfig()
    on = {True: "yes", False: "no"}
    rows = [
        ["node positions in the Poincaré ball", on[True],
         "a geoopt `ManifoldParameter`, moved once per epoch by the slow drift rule (a Riemannian exp-map step towards "
         "positively correlated neighbours, `eta_position` = " + fmt(c.eta_position) + "); gradients through geoopt's "
         "RiemannianAdam only with `position_grad=True` ("
         + ("on" if c.position_grad else "off") + " by default)"],
        ["hierarchical levels", on[c.levels == "radius"],
         "the hyperbolic radius `d_H(0, p_i)` (`levels=\"" + c.levels + "\"`), so levels move with the positions; "
         "not a separate learned quantity"],
        ["sparse, learned edges", on[True],
         f"exact kNN graph (k = {c.k}, KD-tree, rebuilt once per epoch) with free per-edge affinities learned by the "
         "Hebbian rule only (no gradient unless `slow_grad=True`)"],
        ["ignition of 1-2 % of nodes", on[True],
         f"top-k of a Gaussian field around the sparks: exactly {100 * c.ignite_frac:g} % of nodes by construction "
         "(a design choice, not a measurement)"],
        ["soft thresholds, annealed temperature", on[True],
         f"T {c.t_start:g} -> {c.t_end:g} over the epochs; a node fires iff its drive reaches its threshold "
         f"(hard floor {c.floor:g}), exact zeros otherwise"],
        ["local inhibition", on[c.inhibition > 0], f"divisive normalisation over the kNN neighbourhood (beta = {c.inhibition:g})"],
        ["homeostasis to 1-2 % activity", on[c.homeostasis],
         f"per-node thresholds on the firing rate before the cap, target {100 * c.target_start:g} % -> "
         f"{100 * c.target_activity:g} % over {c.target_epochs} epochs; an epoch may be restored only if its validation "
         f"activity is <= {100 * c.max_activity:g} %"],
        ["activity cap", on[c.max_active_frac > 0],
         f"k-WTA safety limit at {100 * c.max_active_frac:g} % of nodes per sample and step, after the measurement"],
        ["reward-modulated Hebbian rule", on[c.hebbian],
         f"three-factor rule with per-sample rewards, `da_e = eta mean_b[(Lbar - L_b) c_eb]` (eta = {c.eta_affinity:g})"],
        ["structural plasticity (pruning, sprouting)", on[c.structural and c.prune_threshold > 0],
         f"once per epoch: prune alive edges with sigmoid(a) < {c.prune_threshold:g}; sprout into pruned slots towards "
         f"2-hop nodes whose firing correlates above {c.sprout_threshold:g}"],
        ["resonance to a fixed point", "no", "a fixed number of propagation steps `n_steps` (the task's configuration), "
                                             "as in the author's code"],
    ]
    return _table(["mechanism (paper)", "default `rsgn`", "how"], rows)


# == section 3: accuracy against measured activity ==================================================
def _setting(ctx: ReportContext, bench: Bench, v: Any) -> str:
    """The fit's node count, target, selection limit and cap (from its record) and what the
    variant changes besides."""
    cfg = ctx.fits(bench.name, v.label)[0]["config"]
    out = f"N = {cfg['n_nodes']:,}, target {100 * cfg['target_activity']:g} %, limit {100 * cfg['max_activity']:g} %, " \
          f"cap {100 * cfg['max_active_frac']:g} %"
    changes = [f"{k} = {cfg[k]}" for k in ("hebbian", "prune_threshold", "n_steps") if k in v.config]
    return out + ("; " + ", ".join(changes) if changes else "")


def activity_table(ctx: ReportContext, benches: tuple[Bench, ...], labels: tuple[str, ...] | None = None) -> list[str]:
    """Per task and setting: test accuracy, measured activity before and after the cap (test
    split, mean over the propagation steps), the validation activity of the selected epoch and
    in how many seeds it met the selection limit, edges per sample."""
    rows = []
    for bench in benches:
        task = SHORT[bench.task]
        for label, c in (_trivial_cells(ctx, bench) if bench in SPARSE else []):  # once per task
            if c is not None:
                rows.append([task, label, "trivial, 0 parameters", "1", _pct(c), "", "", "", "", ""])
        for v in bench.variants:
            if labels is not None and v.label not in labels:
                continue
            c = ctx.cell(bench.name, v.label, "id", "accuracy")
            if c is None:
                continue
            tr, st = _test_rows(ctx, bench.name, v.label), _fit_stats(ctx, bench.name, v.label)
            met = sum(bool(s.get("activity_target_met")) for s in st)
            rows.append([task, v.label, _setting(ctx, bench, v), str(c.n), _pct(c), _ms([r.get("activity") for r in tr]),
                         _ms([r.get("activity_post_cap") for r in tr]), _ms([s.get("activity_val_selected") for s in st]),
                         f"{met}/{len(st)}", _ms([r.get("edges_per_sample") for r in tr], 1.0, 0)])
    return _table(["task", "label", "setting", "seeds", "test accuracy %", "activity before cap %", "after cap %",
                   "validation activity, selected epoch %", "selected epoch within limit", "edges / sample"], rows)


def missing_runs(ctx: ReportContext) -> list[str]:
    """One line naming every planned sparse fit and measure that has no record (not run)."""
    gone = []
    for bench in (*SPARSE, *LARGE.values()):
        for v in bench.variants:
            have = {e["seed"] for e in ctx.fits(bench.name, v.label)}
            seeds = [s for s in bench.at(ctx.scale).seeds if s not in have]
            if seeds:
                gone.append(f"{SHORT[bench.task]} {v.label} (seed{'s' if len(seeds) > 1 else ''} "
                            f"{', '.join(map(str, seeds))})")
    gone += [m.name for m in ctx.spec.measures if ctx.measure(m.name) is None]
    if not gone:
        return []
    return [f"Planned but not run in this session (no records; compute ran out): {'; '.join(gone)}.", ""]


def curve_table(ctx: ReportContext) -> list[str]:
    labels = tuple(f"n{n}{sfx}" for n in (N_SMALL, N_LARGE) for sfx, _ in TARGETS)
    benches = tuple(b for bench in SPARSE for b in (bench, LARGE.get(bench.name)) if b is not None)
    return activity_table(ctx, benches, labels)


def per_step_table(ctx: ReportContext) -> list[str]:
    """Activity per step (test split, mean over seeds), before / after the cap, of the defaults."""
    rows, width = [], 0
    for bench, label in _default_runs():
        st = _fit_stats(ctx, bench.name, label)
        if not st:
            continue
        pre = list(zip(*[s["test_pre_cap_per_step"] for s in st]))
        post = list(zip(*[s["test_post_cap_per_step"] for s in st]))
        width = max(width, len(pre))
        rows.append([SHORT[bench.task], f"{label} ({len(st)} seed{'s' if len(st) > 1 else ''})"]
                    + [f"{100 * statistics.mean(a):.2f} / {100 * statistics.mean(b):.2f}" for a, b in zip(pre, post)])
    if not rows:
        return ["No records yet.", ""]
    rows = [r + [""] * (width + 2 - len(r)) for r in rows]
    return _table(["task", "label", "ignition"] + [f"step {i}" for i in range(1, width)], rows)


@register_figure("rsgn_accuracy_activity")
def accuracy_activity_figure(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    """One panel per task: test accuracy against measured activity before the cap (mean ± sample
    std over seeds in both), one point per setting, trivial classifiers and chance as lines."""
    panels = [ctx.spec.bench(b) for b in benches if ctx.fits(b)]
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.5), squeeze=False)
    for ax, bench in zip(axes[0], panels):
        curves: dict[str, list[tuple[float, float, float, float, str]]] = {}
        runs = [(bench, v) for v in bench.variants] + ([(LARGE[bench.name], v) for v in LARGE[bench.name].variants]
                                                       if bench.name in LARGE else [])
        for b, v in runs:
            tr = _test_rows(ctx, b.name, v.label)
            if not tr or not ("target" in v.label or v.label in (DEFAULT_LABEL, LARGE_LABEL)):
                continue
            acts, accs = [r["activity"] for r in tr], [r["value"] for r in tr]
            key = f"N = {v.config['n_nodes']:,}"
            curves.setdefault(key, []).append((statistics.mean(acts), sample_std(acts) if len(acts) > 1 else 0.0,
                                               statistics.mean(accs), sample_std(accs) if len(accs) > 1 else 0.0, v.label))
        for (key, pts), marker in zip(sorted(curves.items()), "osD^"):
            pts.sort()
            ax.errorbar([100 * p[0] for p in pts], [100 * p[2] for p in pts], xerr=[100 * p[1] for p in pts],
                        yerr=[100 * p[3] for p in pts], marker=marker, capsize=2, label=key)
        for (label, c), style in zip(_trivial_cells(ctx, bench), (":", "--", "-.")):
            if c is not None:
                ax.axhline(100 * c.mean, color="grey", ls=style, lw=0.8, label=label)
        ax.axhline(100 * CHANCE[bench.task], color="black", lw=0.6, label="chance")
        ax.axvline(2.0, color="tab:red", lw=0.6, alpha=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("measured activity before the cap, % (test)", fontsize=8)
        ax.set_ylabel("test accuracy, %", fontsize=8)
        ax.set_title(SHORT[bench.task], fontsize=9)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


# == section 4: slow rules ===========================================================================
def _diff(on: Any, off: Any) -> tuple[bool | None, str]:
    """``on`` vs ``off`` (cells): +True when on is better by more than 2 seed std, False when
    worse by more, None when the difference is within noise."""
    if on is None or off is None or on.n < 2 or off.n < 2:
        return None, "(needs at least 2 seeds of both settings)"
    diff = 100 * (on.mean - off.mean)
    noise = 100 * math.sqrt((on.std ** 2 + off.std ** 2) / 2)
    verdict = True if diff > 2 * noise else None if abs(diff) <= 2 * noise else False
    return verdict, f"{_pct(on)} vs {_pct(off)}: {diff:+.1f} pp against a seed std of {noise:.1f} pp"


def ablation_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench in (SPARSE_HIER, SPARSE_LONG):
        base = ctx.cell(bench.name, DEFAULT_LABEL, "id", "accuracy")
        for sfx, _, meaning in (("", {}, "default"), *ABLATIONS, STEPS1):
            label = DEFAULT_LABEL + sfx
            if label not in {v.label for v in bench.variants}:
                continue
            c = ctx.cell(bench.name, label, "id", "accuracy")
            if c is None:
                continue
            tr, st = _test_rows(ctx, bench.name, label), _fit_stats(ctx, bench.name, label)
            diff = "" if not sfx else _diff(c, base)[1].split(": ")[-1]
            rows.append([SHORT[bench.task], label, meaning, str(c.n), _pct(c), diff, _ms([r.get("activity") for r in tr]),
                         _ms([s.get("pruned_total") for s in st], 1.0, 0), _ms([s.get("sprouted_total") for s in st], 1.0, 0)])
    return _table(["task", "label", "change", "seeds", "test accuracy %", "vs default", "activity before cap %",
                   "edges pruned", "edges sprouted"], rows)


def plasticity_section(ctx: ReportContext) -> list[str]:
    """Pruning and sprouting counts of the default runs (totals over the fit, per run)."""
    rows = []
    for bench, label in _default_runs():
        st = _fit_stats(ctx, bench.name, label)
        if not st:
            continue
        fired = sum(s["pruned_total"] > 0 and s["sprouted_total"] > 0 for s in st)
        rows.append([SHORT[bench.task], label, str(len(st)), _ms([s["pruned_total"] for s in st], 1.0, 0),
                     _ms([s["sprouted_total"] for s in st], 1.0, 0), f"{fired}/{len(st)}",
                     _ms([s["alive_edges"] / s["edges"] for s in st], 100.0, 1),
                     _ms([s.get("affinity_negative_fraction") for s in st], 100.0, 1),
                     _ms([s.get("hebbian_update_mean") for s in st], 1.0, 3)])
    if not rows:
        return ["No records yet.", ""]
    return _table(["task", "label", "runs", "edges pruned (per run)", "edges sprouted", "runs where both fired",
                   "alive edges at the end %", "affinities < 0 %", "Hebbian update norm per step"], rows)


def parity_rules_line(ctx: ReportContext) -> list[str]:
    par = [e["stats"]["slow_rules"] for e in ctx.fits("slow_rules_parity") if e["stats"].get("slow_rules")]
    if not par:
        return []
    h = statistics.mean(r["hebbian_update_mean"] for r in par)
    g = statistics.mean(r["gradient_update_mean"] for r in par)
    return [f"The author's model (`slow_rules_parity`, {len(par)} run, 2 epochs): Hebbian update {h:.2e} against "
            f"AdamW's {g:.2e} on the same affinity tensor per batch (ratio {g / h:.0f}x).", ""]


# == section 5: tasks that test the claims ===========================================================
def own_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench, sparse in ((TREE, SPARSE_TREE), (XOR, SPARSE_XOR)):
        task = SHORT[bench.task]
        for label, c in _trivial_cells(ctx, bench):
            if c is not None:
                rows.append([task, label, "trivial", "0", _pct1(c)])
        for v in sparse.variants:
            c = ctx.cell(sparse.name, v.label, "id", "accuracy")
            if c is not None:
                rows.append([task, "rsgn (sparse, positional)", v.label, _params(ctx, sparse.name, v.label), _pct1(c)])
        for v in bench.variants:
            c = ctx.cell(bench.name, v.label, "id", "accuracy")
            if c is not None:
                rows.append([task, v.model, v.label, _params(ctx, bench.name, v.label), _pct1(c)])
    return _table(["task", "model", "setting", "params", "test accuracy %"], rows)


# == section 6: cost =================================================================================
_MODEL_NAME = {"rsgn": "sparse RSGN", "rsgn_parity": "rsgn_parity (author's, dense)", "mamba": "Mamba"}


def _gib(v: float) -> str:
    return "—" if v is None or math.isnan(v) else f"{v:.2f}"


def cost_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("cost")
    if e is None:
        return ["No records yet (`hebbnets reproduce rsgn --benches cost`).", ""]
    p = e["params"]
    rows = []
    for r in e["rows"]:
        act = "" if r.get("activity") is None else f"{100 * r['activity']:.2f} / {100 * r['activity_post_cap']:.2f}"
        struct = "" if r.get("structure_s") is None or math.isnan(r["structure_s"]) else f"{r['structure_s']:.3f}"
        rows.append([f"{r['n_nodes']:,}", f"{r['seq_len']:,}", _MODEL_NAME.get(r["model"], r["model"]),
                     f"{r['step_s']:.3f}", f"{r['forward_s']:.3f}", f"{r['backward_s']:.3f}",
                     f"{r['optimizer_s'] + r['slow_s']:.3f}", struct, f"{r['num_parameters']:,}", act,
                     _gib(r["peak_rss_gb"])])
    lines = [f"One full training step of batch {p['batch_size']} (forward, loss, backward, optimiser step, the per-step "
             f"slow rules, and one structure step — drift, pruning, sprouting, kNN rebuild — divided by the "
             f"{p['structure_every']} steps between two of them), median of {p['repeats']} steps after a warm-up step, "
             f"random inputs with {p['n_features']} features, 1 thread. N and T grow together (N = 8 T). The sparse "
             f"model first runs {p['calibrate_steps']} forward passes with the slow rules at the final temperature, so its "
             "thresholds sit near the homeostatic target as after training; its measured activity (before / after the "
             "cap, mean over steps) is in the table. The author's dense model is run up to "
             f"{p['max_nodes'].get('rsgn_parity', 0):,} nodes (its N x N matrices); Mamba (`mambapy`, 2 bidirectional "
             "layers, d_model 32) does not depend on N. Memory: the process's peak resident set size during the "
             "measurement (Linux VmHWM, reset before each model; includes the ~0.3 GiB of the Python process).", "",
             *_table(["N", "T", "model", "step s", "forward s", "backward s", "optimiser + slow rules s",
                      "structure step s (once per 50 steps)", "parameters", "activity % before / after cap",
                      "peak memory GiB"], rows)]
    lines += ["Log-log slope of the step time per segment (N and T both x4 per segment) and over all sizes:", ""]
    for model in p["models"]:
        pts = [(r["n_nodes"], r["step_s"]) for r in e["rows"] if r["model"] == model]
        if len(pts) < 2:
            continue
        seg, overall = _speed.segment_slopes([a for a, _ in pts], [b for _, b in pts])
        segs = ", ".join(f"{pts[i][0]:,} -> {pts[i + 1][0]:,}: {s:.2f}" for i, s in enumerate(seg))
        lines.append(f"- {_MODEL_NAME.get(model, model)}: {segs}; overall {overall:.2f}.")
    return lines + [""]


@register_figure("rsgn_cost")
def cost_figure(ctx: ReportContext) -> Any:
    e = ctx.measure("cost")
    if e is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.2, 3.6))
    for model in e["params"]["models"]:
        rows = [r for r in e["rows"] if r["model"] == model]
        if not rows:
            continue
        xs = [r["n_nodes"] for r in rows]
        _, slope = _speed.segment_slopes(xs, [r["step_s"] for r in rows]) if len(rows) > 1 else ([], math.nan)
        a1.plot(xs, [r["step_s"] for r in rows], "o-", label=f"{_MODEL_NAME.get(model, model)} (slope {slope:.2f})")
        a2.plot(xs, [r["peak_rss_gb"] for r in rows], "o-", label=_MODEL_NAME.get(model, model))
    for ax, ylabel in ((a1, "seconds per training step"), (a2, "peak memory, GiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes N (tokens T = N / 8)", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _ratio(r: float) -> str:
    return f"1/{1 / r:.0f}" if 0 < r < 0.5 else f"{r:.2f}"


def graph_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("graph_build")
    if e is None:
        return ["No records yet (`hebbnets reproduce rsgn --benches graph_build`).", ""]
    rows = [[f"{r['n_nodes']:,}", f"{r['kdtree_s']:.2f}", f"{r['brute_s']:.2f}", _ratio(r["ratio"]),
             "yes" if r["identical"] else f"no ({r['mismatched_rows']} rows differ)"] for r in e["rows"]]
    return [f"Exact kNN graph (k = {e['rows'][0]['k']}) on the model's initial positions in the 3-D ball: KD-tree with a "
            "shifted-ball query and a float64 re-rank (`knn=\"kdtree\"`, the default) against the brute-force O(N²) "
            "builder (float64), same positions, same run, 1 thread.", "",
            *_table(["nodes", "KD-tree s", "brute force s", "KD-tree / brute force", "identical neighbour lists"], rows)]


def million_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("million")
    if e is None:
        return ["One million nodes: not run in this session for lack of compute (`hebbnets reproduce rsgn --benches "
                "million`; about 6 GiB of memory).", ""]
    r = e["rows"][0]
    return [f"Sparse RSGN at {r['n_nodes']:,} nodes, T = {r['seq_len']:,} tokens, batch {r['batch_size']}, 1 thread: "
            f"building the model (positions and the exact kNN graph) {r['build_s']:.1f} s; one training step "
            f"{r['forward_s'] + r['backward_s'] + r['optimizer_s'] + r['slow_s']:.1f} s (forward {r['forward_s']:.1f} s, of "
            f"which the nearest-spark search of ignition {r['ignition_search_s']:.1f} s; backward {r['backward_s']:.1f} s; "
            f"optimiser and slow rules {r['optimizer_s'] + r['slow_s']:.1f} s); one structure step with the kNN rebuild "
            f"{r['structure_s']:.1f} s (amortised over {r['structure_every']} steps: {r['step_s']:.1f} s per step); peak "
            f"memory {r['peak_rss_gb']:.2f} GiB. "
            + (f"It runs at the initial thresholds and temperature (T = {r['temperature']:g}, the first step of training, "
               "no calibration)" if not r.get("calibrate_steps") else
               f"It runs after {r['calibrate_steps']} calibration passes (T = {r['temperature']:g})")
            + f", where the measured activity is {100 * r['activity']:.2f} % before and {100 * r['activity_post_cap']:.2f} % "
            f"after the cap ({r['edges_per_sample']:,.0f} edges per sample).", ""]


# == section 7: claims ================================================================================
def _author_claims(ctx: ReportContext) -> list[str]:
    out = []
    for bench in (PAPER_HIER, PAPER_LONG):
        task = bench.task
        b, f = (ctx.cell(bench.name, "rsgn_parity-e50", "id", m) for m in ("best_epoch_accuracy", "accuracy"))
        triv = [(lab, c) for lab, c in _trivial_cells(ctx, bench) if c is not None]
        paper = PAPER[task]["rsgn_parity"]
        if b is None or f is None:
            out.append(f"- **{SHORT[task]}, RSGN's reported accuracy ({paper} %)**: not measured at 50 epochs.")
            continue
        gap = 100 * b.mean - paper
        close = abs(gap) <= max(2 * 100 * (b.std if b.n > 1 else 0), 1.0)
        out.append(f"- **{SHORT[task]}, RSGN's reported accuracy ({paper} %)**: " + ("holds (reproduced)" if close else
                                                                                  "does not hold (not reproduced)")
                   + f" with the author's code, data and protocol: {100 * b.mean:.1f} % ({b.n} seeds, 50 epochs, best epoch "
                   f"on the reported set), the final model {100 * f.mean:.1f} %: {gap:+.1f} pp from the paper. "
                   "Leaves out: the number is selected on the set it is reported on (no test set), on one draw of the "
                   "author's data; trivial classifiers on the same split score "
                   + ", ".join(f"{lab} {100 * c.mean:.1f} %" for lab, c in triv) + ".")
        full = {}
        for v in bench.variants:
            if v.label.endswith("-e50"):
                bb, ff = (ctx.cell(bench.name, v.label, "id", m) for m in ("best_epoch_accuracy", "accuracy"))
                if bb is not None and ff is not None:
                    full[v.model] = (bb, ff)
        if len(full) > 1:
            ranked = sorted(full, key=lambda m: -full[m][1].mean)
            out.append("  - At 50 epochs, ranked by the final model (no selection on the reported set): "
                       + " > ".join(f"{m} {100 * full[m][1].mean:.1f} %" for m in ranked)
                       + ". Selecting the best epoch on the reported set adds "
                       + ", ".join(f"{100 * (full[m][0].mean - full[m][1].mean):+.1f} pp ({m})" for m in ranked) + ".")
    par = [e for b in ("paper_hierarchical", "paper_longrange") for v in ctx.spec.bench(b).variants
           if v.model == "rsgn_parity" for e in ctx.fits(b, v.label)]
    act = [r["active_fraction"] for e in par for r in e["rows"] if r.get("active_fraction") is not None
           and r["metric"] == "accuracy"]
    if act:
        out.append(f"- **1–2 % of nodes active, the author's model**: does not hold: {100 * statistics.mean(act):.0f} % of "
                   f"nodes are above the 0.01 threshold after the last step (mean over {len(act)} runs on the reported set).")
    return out


def _activity_claims(ctx: ReportContext) -> list[str]:
    from ...rsgn.model import RSGNConfig

    c = RSGNConfig()
    out = []
    parts, ok_all, ign, worst_step, paper_tasks = [], True, [], 0.0, set()
    for bench, label in _default_runs():
        tr = _test_rows(ctx, bench.name, label)
        if not tr:
            continue
        acts = [r["activity"] for r in tr]
        post = [r["activity_post_cap"] for r in tr]
        if bench.task in ("rsgn_hierarchical", "rsgn_longrange"):
            ok_all &= max(acts) <= c.max_activity
            paper_tasks.add(bench.task)
        for s in _fit_stats(ctx, bench.name, label):
            ign.append(s["test_pre_cap_per_step"][0])
            worst_step = max(worst_step, *s["test_pre_cap_per_step"][1:])
        n = ctx.fits(bench.name, label)[0]["config"]["n_nodes"]
        parts.append(f"{SHORT[bench.task]} N = {n:,} ({len(acts)} seed{'s' if len(acts) > 1 else ''}): {_ms(acts)} % "
                     f"before the cap (largest seed {100 * max(acts):.2f} %), {_ms(post)} % after")
    ok_all &= len(paper_tasks) == 2
    if parts:
        out.append(f"- **Default sparse RSGN at <= {100 * c.max_activity:g} % measured activity before any cap, N >= "
                   f"{N_SMALL:,}** (test split, mean over the propagation steps): "
                   + ("holds on both paper tasks" if ok_all else "does not hold on every paper task") + ": "
                   + "; ".join(parts) + ". Leaves out: single steps go higher (the largest per-step value in any run "
                   f"is {100 * worst_step:.2f} %, per-step table in section 3); ignition is the top "
                   f"{100 * c.ignite_frac:g} % of nodes by construction, where {_ms(ign)} % of nodes would pass the floor "
                   "(not counted in the step mean: a cap that fixes a figure is not a measurement of it); the safety "
                   "cap still removes nodes in some samples and steps (before > after); the selection rule restores "
                   f"only epochs whose validation activity is <= {100 * c.max_activity:g} %; the fits are {EPOCHS} "
                   "epochs long.")
    for bench, n in ((b, n) for b in SPARSE for b, n in ((b, N_SMALL), (LARGE.get(b.name), N_LARGE)) if b is not None):
        pts = []
        for sfx, _ in TARGETS:
            tr = _test_rows(ctx, bench.name, f"n{n}{sfx}")
            if len(tr) > 1:
                pts.append((statistics.mean(r["activity"] for r in tr), ctx.cell(bench.name, f"n{n}{sfx}", "id",
                                                                                  "accuracy"), f" (n{n}{sfx})" if sfx else " (default)"))
        if len(pts) < 2:
            continue
        pts.sort(key=lambda p: p[0])
        low, high = pts[0], pts[-1]
        verdict, ev = _diff(low[1], high[1])
        word = {True: "sparser is better", False: "sparsity costs accuracy", None: "no difference beyond seed noise"}[verdict]
        out.append(f"- **Accuracy against activity, {SHORT[bench.task]}** (N = {n:,}): {word}: "
                   f"{100 * low[0]:.2f} % active{low[2]} vs {100 * high[0]:.2f} % active{high[2]}: {ev}"
                   + ("" if len(pts) == len(TARGETS) else f" ({len(pts)} of {len(TARGETS)} targets with 2+ seeds)")
                   + f". Leaves out: {EPOCHS} epochs; the other targets raise the cap and the selection limit with them.")
    return out


def _baseline_claims(ctx: ReportContext) -> list[str]:
    out = []
    for bench, label in _default_runs():
        c = ctx.cell(bench.name, label, "id", "accuracy")
        if c is None:
            continue
        triv = [(lab, t) for lab, t in _trivial_cells(ctx, bench) if t is not None]
        best = max(triv, key=lambda p: p[1].mean) if triv else None
        line = (f"- **Sparse RSGN on {SHORT[bench.task]}** ({label}, honest held-out test set): {_pct1(c)} %, chance "
                f"{100 * CHANCE[bench.task]:.1f} %")
        if best is not None:
            line += (f"; best trivial classifier {best[0]} {100 * best[1].mean:.1f} %: "
                     + ("below it." if c.mean < best[1].mean else "above it."))
        out.append(line)
    for bench, sparse in ((TREE, SPARSE_TREE), (XOR, SPARSE_XOR)):
        rs = ctx.cell(sparse.name, DEFAULT_LABEL, "id", "accuracy")
        others = [c for c in ctx.cells(bench.name, "accuracy") if c.split == "id"
                  and bench.variant(c.label).model not in ("rsgn", "rsgn_parity")]
        if rs and others:
            best = max(others, key=lambda c: c.mean)
            chance = CHANCE[bench.task]
            verdict = "fails (within 10 pp of chance)" if rs.mean < chance + 0.1 else "learns"
            out.append(f"- **{SHORT[bench.task]}** (needs order and composition, chance {100 * chance:.1f} %): sparse RSGN "
                       f"with positions {verdict}: {_pct1(rs)} %; best sequence model "
                       f"{bench.variant(best.label).model} [{best.label}] {_pct1(best)} %. Leaves out: {EPOCHS} epochs "
                       f"for RSGN against 10-30 for the sequence models.")
    return out


def _rule_claims(ctx: ReportContext) -> list[str]:
    out = []
    for sfx, _, meaning in ABLATIONS:
        name = {"-nohebb": "The Hebbian rule improves accuracy", "-noprune": "Pruning and sprouting improve accuracy"}[sfx]
        for bench in (b for b in (SPARSE_HIER, SPARSE_LONG) if DEFAULT_LABEL + sfx in {v.label for v in b.variants}):
            on, off = (ctx.cell(bench.name, DEFAULT_LABEL + x, "id", "accuracy") for x in ("", sfx))
            verdict, ev = _diff(on, off)
            word = {True: "holds", False: "does not hold (worse with it)",
                    None: "not supported" if on is not None and off is not None else "not measured"}[verdict]
            out.append(f"- **{name}** ({SHORT[bench.task]}, N = {N_SMALL:,}): {word}: "
                       f"{ev if verdict is None and (on is None or off is None or min(on.n, off.n) < 2) else 'with ' + ev.replace(' vs ', ' vs without ')}. "
                       f"Leaves out: {EPOCHS} epochs, 3 seeds, one node count.")
    for bench in (SPARSE_HIER, SPARSE_LONG):
        s1, sd = (ctx.cell(bench.name, DEFAULT_LABEL + x, "id", "accuracy") for x in (STEPS1[0], ""))
        if s1 is None or sd is None:
            continue
        n_steps = ctx.fits(bench.name, DEFAULT_LABEL)[0]["config"]["n_steps"]  # the task's S
        verdict, ev = _diff(s1, sd)
        word = {True: f"S = 1 beats S = {n_steps}", False: f"S = {n_steps} beats S = 1",
                None: f"S = 1 and S = {n_steps} are not distinguishable"}
        before = ""
        if bench is SPARSE_HIER:  # the earlier report's finding was on hierarchical
            before = (" (The previous model version, 256 nodes and a 10 % cap, had S = 1 ahead of S = 5 by 5 pp; "
                      + ("the finding stands with the measured-activity model" if verdict else
                         "that finding is replaced by this measurement") + ".)")
        out.append(f"- **Propagation steps on {SHORT[bench.task]}** (N = {N_SMALL:,}): {word[verdict]}: S = 1 {ev}."
                   f"{before} Leaves out: {EPOCHS} epochs, one node count; the paper's resonance to a fixed point is "
                   "not implemented, so S is a fixed step count in both.")
    st = [(bench, s) for bench, label in _default_runs() for s in _fit_stats(ctx, bench.name, label)]
    if st:
        fired = sum(s["pruned_total"] > 0 and s["sprouted_total"] > 0 for _, s in st)
        tasks = sorted({SHORT[b.task] for b, s in st if s["pruned_total"] > 0 and s["sprouted_total"] > 0})
        missed = sorted({SHORT[b.task] for b, s in st if not (s["pruned_total"] > 0 and s["sprouted_total"] > 0)})
        out.append(f"- **Pruning and sprouting fire in default training** (default thresholds, N >= {N_SMALL:,}): "
                   + ("holds" if fired == len(st) else "holds in part" if fired else "does not hold")
                   + f": both fired in {fired} of {len(st)} runs (in: {', '.join(tasks) or 'none'}; "
                   + (f"not in: {', '.join(missed)}; " if missed else "") + "counts in section 4)"
                   + _quiet_rule(st) + ". The "
                   "rule on a hand-made case (one edge's co-activation predicts low loss, another's high loss: the first "
                   "grows, the second shrinks, an edge used equally does not move) is "
                   "`tests/rsgn/test_model.py::test_three_factor_rule_grows_the_edge_that_predicts_low_loss_and_shrinks_the_other`. "
                   f"Leaves out: whether the pruned edges are the useless ones (the pruning ablation in section 4 is the "
                   f"only accuracy evidence); counts are over {EPOCHS} epochs with one structure step per epoch.")
    return out


def _quiet_rule(st: list[tuple[Bench, dict[str, Any]]]) -> str:
    """Where pruning never fired: how much smaller the Hebbian updates were than where it did
    (mean update norm per step, from the fits' statistics)."""
    fired = [s["hebbian_update_mean"] for _, s in st if s["pruned_total"] > 0 and "hebbian_update_mean" in s]
    quiet = [s["hebbian_update_mean"] for _, s in st if s["pruned_total"] == 0 and "hebbian_update_mean" in s]
    if not fired or not quiet:
        return ""
    return (f"; where nothing was pruned, the Hebbian update per step was {statistics.mean(fired) / statistics.mean(quiet):.1f}x "
            "smaller on average than where it was, so no affinity fell to the prune threshold within the fit")


def _cost_claims(ctx: ReportContext) -> list[str]:
    out = []
    e = ctx.measure("cost")
    if e is not None:
        rs = [r for r in e["rows"] if r["model"] == "rsgn"]
        pts = [(r["n_nodes"], r["step_s"]) for r in rs]
        if len(pts) > 1:
            seg, overall = _speed.segment_slopes([a for a, _ in pts], [b for _, b in pts])
            seg_e, _ = _speed.segment_slopes([r["edges_per_sample"] for r in rs], [r["step_s"] for r in rs])
            holds = max(seg[-2:]) <= 1.1
            out.append(f"- **O(n·k) cost per training step (sparse RSGN)**: {'holds' if holds else 'does not hold'} at the "
                       f"sizes measured (criterion: slope <= 1.1 on the two largest segments): log-log slope of a full "
                       f"training step against N (with T = N / 8) {', '.join(f'{s:.2f}' for s in seg)} per segment, "
                       f"{overall:.2f} overall. Part of the excess is activity: the measured activity was "
                       f"{100 * rs[0]['activity']:.2f} % at the smallest size and {100 * rs[-1]['activity']:.2f} % at the "
                       f"largest, so the edges used per sample grew faster than N; against the edges used per sample the "
                       f"slopes are "
                       f"{', '.join(f'{s:.2f}' for s in seg_e)}. Leaves out: ignition's nearest-spark search is O(N log T) "
                       f"per sample (KD-tree), the structure step is amortised over {e['params']['structure_every']} "
                       "steps, activity was calibrated on random inputs (table), one machine, one thread.")
        mb = {r["n_nodes"]: r["step_s"] for r in e["rows"] if r["model"] == "mamba"}
        both = [r for r in rs if r["n_nodes"] in mb]
        if both:
            big = both[-1]
            out.append(f"- **Sparse RSGN against a linear-time sequence model**: at N = {big['n_nodes']:,}, T = "
                       f"{big['seq_len']:,} a sparse RSGN training step takes {big['step_s']:.1f} s, Mamba's "
                       f"{mb[big['n_nodes']]:.1f} s ({mb[big['n_nodes']] / big['step_s']:.1f}x). Leaves out: Mamba here is "
                       "`mambapy`'s pure-PyTorch parallel scan on a CPU (not the fused CUDA kernel), with 41k parameters "
                       "that do not grow with N, while the RSGN's grow with N; neither was trained to an accuracy at "
                       "these sizes.")
        par = [(r["n_nodes"], r["step_s"]) for r in e["rows"] if r["model"] == "rsgn_parity"]
        if len(par) > 1:
            seg, overall = _speed.segment_slopes([a for a, _ in par], [b for _, b in par])
            out.append(f"- **The author's model costs O(N²) per step**: {'holds' if seg[-1] >= 1.8 else 'not visible'} at the "
                       f"sizes measured: slopes {', '.join(f'{s:.2f}' for s in seg)} per segment (up to {par[-1][0]:,} "
                       "nodes; small sizes are dominated by fixed costs). Leaves out: its O(N²) memory stopped it at "
                       f"{par[-1][0]:,} nodes here, one machine, one thread.")
    g = ctx.measure("graph_build")
    if g is not None:
        big = max(g["rows"], key=lambda r: r["n_nodes"])
        ok = big["ratio"] <= 1 / 20 and big["identical"]
        out.append(f"- **Exact graph build at {big['n_nodes']:,} nodes in <= 1/20 of the O(N²) build, identical neighbours**: "
                   f"{'holds' if ok else 'does not hold'}: {big['kdtree_s']:.2f} s vs {big['brute_s']:.1f} s "
                   f"({_ratio(big['ratio'])}), neighbour lists {'identical' if big['identical'] else 'differ'}. Leaves "
                   "out: a 3-D ball (KD-trees degrade with dimension; for d >~ 20 the Lorentz inner product turns the "
                   "query into a maximum inner product search, e.g. FAISS, which this package does not use).")
    return out


def claims_section(ctx: ReportContext) -> list[str]:
    return _author_claims(ctx) + _activity_claims(ctx) + _baseline_claims(ctx) + _rule_claims(ctx) + _cost_claims(ctx) + [""]


SPEC = register_spec(Spec(
    "rsgn", "RSGN: parity with the paper, measured sparsity, honest numbers, cost",
    benches=(PAPER_HIER, PAPER_LONG, *TRIVIAL, *SPARSE, *LARGE.values(), TREE, XOR, SLOW_RULES_PARITY),
    measures=(COST, GRAPH, MILLION),
    intro=("Accuracy in %, mean ± sample std (ddof 1) over seeds 0, 1, 2 unless marked. The author's data has one draw "
           "(every seed sees the same data; seeds vary the models); the own tasks are drawn once as well. Background and "
           "where the author's code departs from the paper: `docs/rsgn.md`."),
    sections=(
        Text("""## 1. Paper tasks, the author's split and protocol

Protocol of the author's notebook: AdamW (lr 1e-3, wd 1e-4), cosine schedule over the epochs run, gradient norm clipped at 1.0, the author's 80/20 split (seed 42). **Author's number** = best accuracy over the epochs on the 20 % split (the paper's protocol: selected on the set it is reported on; protocol option `curve`). **Final model** = accuracy of the last epoch's model on the same 20 %, on which nothing was chosen. Trivial classifiers: nearest centroid and LDA on the mean-pooled input (a bag of tokens), and `lda-ends`, LDA on the means of the first and of the last 8 tokens side by side (the long-range task puts its class patterns exactly there)."""),
        Custom(paper_table),
        Text("## 2. What the default sparse model uses of the paper's mechanisms"),
        Custom(mechanisms_section),
        Text("""## 3. Accuracy against measured activity

Sparse RSGN (`rsgn`) on the honest split of the paper tasks (`split="honest"`: train 70 %, validation 15 % carved from it, a held-out 15 % test set scored once) and on the own tasks with sinusoidal token positions (`positional=True`; without them the model sees a bag of tokens and the tree task is at chance by construction). Trainer defaults (Adam, constant lr), 6 epochs, the best validation loss restored among the epochs whose validation activity meets the selection limit. **Activity** = fraction of nodes that fire in a propagation step, measured before the safety cap, averaged over the steps (ignition excluded); *after cap* = the nodes that survive the cap. The homeostatic target is the only knob varied along the curve; the curve runs at 1,024 and 4,096 nodes on every task, 3 seeds per point. """ + CUT + """ `pool_sigma` (how an ignited node reads the tokens) is the task's configuration, chosen on validation data for an earlier version of the model and not searched again; nothing else was tuned."""),
        Custom(curve_table),
        Custom(missing_runs),
        Figure("rsgn_accuracy_activity", "accuracy_activity",
               "Test accuracy against measured activity before the cap (mean ± sample std over 3 seeds); grey lines: "
               "trivial classifiers, black: chance, red: 2 %",
               {"benches": tuple(b.name for b in SPARSE)}),
        Text("Activity per step of the default models (test split, % of nodes, mean over seeds, before / after the cap; the ignition step is the top-k by construction):"),
        Custom(per_step_table),
        Text("## 4. The slow rules: ablations and structural plasticity\n\nOne change to the default model at 1,024 nodes per row, on both paper tasks (3 seeds each; *vs default* = difference of the means and the pooled seed std)."),
        Custom(ablation_table),
        Text("Pruning and sprouting in the default runs (default thresholds; totals over each fit, mean ± sample std over seeds):"),
        Custom(plasticity_section),
        Custom(parity_rules_line),
        Text("""## 5. Tasks that test the claims, against sequence models

`40k` = parameter-matched (LSTM: hidden 64, 1 bidirectional layer; Transformer: d_model 48, 4 heads, FFN 96, 2 layers, sinusoidal positions); `paper` = the task's default sizes (LSTM 2 x 128 bidirectional, Transformer d_model 128, FFN 512, 2 layers). Best validation loss restored (validation carved from train). Chance: tree 1/12 (12 classes), xor-range 1/4 (4 classes). The sparse RSGN rows are those of section 3 (with positions)."""),
        Custom(own_table),
        Text("## 6. Cost: a full training step, the exact graph build, one million nodes"),
        Custom(cost_section),
        Figure("rsgn_cost", "cost", "Seconds per full training step and peak memory against N (T = N / 8), log-log", {}),
        Custom(graph_section),
        Custom(million_section),
        Text("## 7. Where the paper's claims hold and where they do not"),
        Custom(claims_section),
    ),
))
