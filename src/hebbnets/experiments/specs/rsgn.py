"""``rsgn``: the RSGN paper's claims, checked (reports/rsgn.md).

Four parts: the author's dense model (``rsgn_parity``) and the paper's baselines under the
author's protocol on the author's data and split (section 1); our sparse RSGN and trivial
bag-of-tokens classifiers on an honest 70/15/15 split of the same data, with ablations
(sections 2, 5); two tasks built to need order and composition (section 3); measured activity
and the slow rules (section 6); claims (section 7). Scaling is measured by the ``speed`` spec
and quoted here from its records (section 4). Background: ``docs/rsgn.md``.

Labels name the setting: ``eN`` = N epochs; ``sparse-`` = nearest-token ignition
(``pool_sigma=0``), ``pool-`` = receptive-field ignition (``pool_sigma`` chosen on validation);
``40k`` = parameter-matched baselines; ``paper`` = the task's default sizes.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from .._report import Claim, Custom, Figure, ReportContext, Text, fmt
from .._spec import Bench, Scale, Spec, register_spec, variant

AUTHOR = {"split": "author"}
HONEST = {"split": "honest"}
# the author's data has one draw (seed 42 inside the generator): every seed sees the same data
FIXED = 0
SEEDS = (0, 1, 2)
# smoke: a few hundred samples, tiny graphs, one epoch, one seed
SMOKE_AUTHOR = Scale(params={"n_samples": 240}, config={"*": {"epochs": 1}, "rsgn_parity": {"n_nodes": 32},
                                                        "rsgn": {"n_nodes": 32}})
SMOKE_OWN = Scale(params={"n_train": 120, "n_test": 40}, config={"*": {"epochs": 1}, "rsgn_parity": {"n_nodes": 32},
                                                                  "rsgn": {"n_nodes": 32}})
#: accuracy the paper reports (best validation accuracy over 50 epochs, 3 runs; docs/rsgn.md)
PAPER = {"rsgn_hierarchical": {"rsgn_parity": 23.8, "transformer": 30.1, "lstm": 18.1, "mlp": 16.0,
                               "sparse_transformer": 15.9},
         "rsgn_longrange": {"rsgn_parity": 96.5, "transformer": 100.0, "lstm": 100.0}}
SHORT = {"rsgn_hierarchical": "hierarchical", "rsgn_longrange": "long-range", "rsgn_tree": "tree",
         "rsgn_xor_range": "xor-range"}


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


def _trivial(name: str, task: str, params: dict[str, Any], smoke: Scale) -> Bench:
    # deterministic, parameter-free: one seed says everything
    return Bench(name, task, ("centroid", "lda"), params=params, data_seed=FIXED, seeds=(0,),
                 scales={"smoke": smoke}, title=f"{SHORT[task]}: bag-of-tokens classifiers")


TRIVIAL = (_trivial("trivial_hierarchical", "rsgn_hierarchical", AUTHOR, SMOKE_AUTHOR),
           _trivial("trivial_longrange", "rsgn_longrange", AUTHOR, SMOKE_AUTHOR),
           _trivial("trivial_honest_hierarchical", "rsgn_hierarchical", HONEST, SMOKE_AUTHOR),
           _trivial("trivial_honest_longrange", "rsgn_longrange", HONEST, SMOKE_AUTHOR),
           _trivial("trivial_tree", "rsgn_tree", {}, SMOKE_OWN),
           _trivial("trivial_xor_range", "rsgn_xor_range", {}, SMOKE_OWN))


def _ablations(prefix: str, base: dict[str, Any], steps: tuple[int, ...], extra: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The sparse model at ``base`` and one change per variant."""
    return (variant(prefix, "rsgn", **base),
            variant(f"{prefix}-nodes128", "rsgn", **base, n_nodes=128),
            variant(f"{prefix}-nodes512", "rsgn", **base, n_nodes=512),
            variant(f"{prefix}-nohebb", "rsgn", **base, hebbian=False),
            *(variant(f"{prefix}-steps{s}", "rsgn", **{**base, "n_steps": s}) for s in steps),
            *extra)


# hierarchical: 5 epochs; pool_sigma 1.0 was chosen on validation (section 2's validation table)
_H_SPARSE = dict(epochs=5, patience=5, pool_sigma=0.0)
_H_POOL = dict(epochs=5, patience=5, pool_sigma=1.0)
HONEST_HIER = Bench(
    "honest_hierarchical", "rsgn_hierarchical", params=HONEST, data_seed=FIXED, seeds=SEEDS,
    models=(*_ablations("sparse-e5", _H_SPARSE, (1, 3)),
            *_ablations("pool-e5", _H_POOL, (1, 3), (variant("pool-e5-prune-neg", "rsgn", **_H_POOL, prune_threshold=0.5),)),
            variant("pool-e15", "rsgn", **{**_H_POOL, "epochs": 15})),
    scales={"smoke": SMOKE_AUTHOR}, title="hierarchical, honest split")
# long-range: 10 epochs, S = 7, batch 32 (pool_sigma not searched: nearest-token ignition)
_L_SPARSE = dict(n_steps=7, epochs=10, patience=10, batch_size=32, pool_sigma=0.0)
HONEST_LONG = Bench(
    "honest_longrange", "rsgn_longrange", params=HONEST, data_seed=FIXED, seeds=SEEDS,
    models=_ablations("sparse-e10", _L_SPARSE, (1, 3, 5), (
        variant("sparse-e10-prune-neg", "rsgn", **_L_SPARSE, prune_threshold=0.5),
        variant("sparse-e10-slowgrad", "rsgn", **_L_SPARSE, slow_grad=True))),
    scales={"smoke": SMOKE_AUTHOR}, title="long-range, honest split")

_LSTM40K = dict(hidden=64, layers=1, bidirectional=True)
_TF40K = dict(d_model=48, n_heads=4, n_layers=2, d_ff=96, dropout=0.0)


def _own(name: str, task: str, lstm_patience: int, extra: tuple[Any, ...] = ()) -> Bench:
    return Bench(name, task, data_seed=FIXED, seeds=SEEDS, scales={"smoke": SMOKE_OWN}, title=SHORT[task], models=(
        variant("sparse-e10", "rsgn", epochs=10, patience=10, pool_sigma=0.0),
        variant("pool-e10", "rsgn", epochs=10, patience=10, pool_sigma=2.0),
        variant("parity-e10", "rsgn_parity", epochs=10),
        variant("lstm-paper-e10", "lstm", epochs=10, patience=10),
        variant("lstm40k-e20", "lstm", epochs=20, patience=lstm_patience, **_LSTM40K),
        variant("tf-paper-e10", "transformer", epochs=10, patience=10),
        variant("tf40k-e20", "transformer", epochs=20, patience=20, **_TF40K),
        *extra))


TREE = _own("tree", "rsgn_tree", 10)
XOR = _own("xor_range", "rsgn_xor_range", 20, (variant("lstm40k-e30-lr3e-3", "lstm", epochs=30, patience=30, lr=3e-3,
                                                       **_LSTM40K),))


def _pool_sigma(name: str, task: str, params: dict[str, Any], epochs: int, sigmas: tuple[float, ...]) -> Bench:
    """Validation points of ``pool_sigma`` (protocol ``tune``: 20 % carved from the training split)."""
    return Bench(name, task, params=params, data_seed=FIXED, seeds=(0,), protocol="tune", options={"val_fraction": 0.2},
                 models=tuple(variant(f"pool_sigma={s}", "rsgn", epochs=epochs, pool_sigma=s) for s in sigmas),
                 scales={"smoke": SMOKE_OWN if not params else SMOKE_AUTHOR}, title=f"pool_sigma on {SHORT[task]}")


# What the slow rules do (Hebbian and gradient update sizes, reward, pruning and sprouting): the
# statistics every fit records (stats.slow_rules), on a few settings, seed 0, in benches of their
# own (option "statistics" keys them apart from the 3-seed tables, which stay one code version)
_RULES = {"statistics": ["slow_rules"]}
SLOW_RULES = (
    Bench("slow_rules_longrange", "rsgn_longrange", params=HONEST, data_seed=FIXED, seeds=(0,), options=_RULES,
          models=(variant("sparse-e10", "rsgn", **_L_SPARSE),
                  variant("sparse-e10-prune-neg", "rsgn", **_L_SPARSE, prune_threshold=0.5),
                  variant("sparse-e10-slowgrad", "rsgn", **_L_SPARSE, slow_grad=True)),
          scales={"smoke": SMOKE_AUTHOR}, title="slow rules, long-range"),
    Bench("slow_rules_hierarchical", "rsgn_hierarchical", params=HONEST, data_seed=FIXED, seeds=(0,), options=_RULES,
          models=(variant("pool-e5", "rsgn", **_H_POOL),
                  variant("pool-e5-prune-neg", "rsgn", **_H_POOL, prune_threshold=0.5)),
          scales={"smoke": SMOKE_AUTHOR}, title="slow rules, hierarchical"),
    # the author's model: its update sizes per batch do not need the full 50 epochs
    Bench("slow_rules_parity", "rsgn_hierarchical", params=AUTHOR, data_seed=FIXED, seeds=(0,), options=_RULES,
          models=(variant("rsgn_parity-e2", "rsgn_parity", epochs=2),), scales={"smoke": SMOKE_AUTHOR},
          title="slow rules, the author's model"),
)

POOL_SIGMA = (_pool_sigma("pool_sigma_hierarchical", "rsgn_hierarchical", HONEST, 5, (0.0, 0.5, 1.0, 2.0, 4.0)),
              _pool_sigma("pool_sigma_tree", "rsgn_tree", {}, 10, (0.0, 2.0)),
              _pool_sigma("pool_sigma_xor_range", "rsgn_xor_range", {}, 10, (0.0, 2.0)))


# -- report helpers ---------------------------------------------------------------------------------
def _pct(cell: Any) -> str:
    return "—" if cell is None else (f"{100 * cell.mean:.1f}" if cell.n < 2 or math.isnan(cell.std)
                                    else f"{100 * cell.mean:.1f} ± {100 * cell.std:.1f}")


def _pct1(cell: Any) -> str:
    """A percentage, with '(1 seed)' when there is one."""
    return "—" if cell is None else _pct(cell) + (" (1 seed)" if cell.n < 2 else "")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _params(ctx: ReportContext, bench: str, label: str) -> str:
    fits = ctx.fits(bench, label)
    p = [e["stats"].get("num_parameters") for e in fits if e["stats"].get("num_parameters") is not None]
    return f"{int(round(sum(p) / len(p))):,}" if p else "—"


def _row_mean(ctx: ReportContext, bench: str, label: str, key: str) -> float:
    vals = [r[key] for e in ctx.fits(bench, label) for r in e["rows"] if r.get(key) is not None and r["split"] == "id"
            and r["metric"] == "accuracy"]
    return sum(vals) / len(vals) if vals else math.nan


def paper_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench, trivial, task in ((PAPER_HIER, "trivial_hierarchical", "rsgn_hierarchical"),
                                 (PAPER_LONG, "trivial_longrange", "rsgn_longrange")):
        for v in bench.variants:
            best, final = ctx.cell(bench.name, v.label, "id", "best_epoch_accuracy"), ctx.cell(bench.name, v.label, "id", "accuracy")
            if final is None:
                continue
            rows.append([SHORT[task], v.model, _params(ctx, bench.name, v.label), str(v.config["epochs"]), str(final.n),
                         _pct(best), _pct(final), str(PAPER[task].get(v.model, "—"))])
        for m in ("centroid", "lda"):
            c = ctx.cell(trivial, m, "id", "accuracy")
            if c is not None:
                rows.append([SHORT[task], m, "0", "—", str(c.n), "—", _pct(c), "—"])
    return _table(["task", "model", "params", "epochs", "seeds", "author's number (best epoch)", "final model", "paper"],
                  rows)


def honest_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench, trivial in ((HONEST_HIER, "trivial_honest_hierarchical"), (HONEST_LONG, "trivial_honest_longrange")):
        task = SHORT[bench.task]
        for m in ("centroid", "lda"):
            c = ctx.cell(trivial, m, "id", "accuracy")
            if c is not None:
                rows.append([task, m, "trivial", "0", _pct(c), "", ""])
        for v in bench.variants:
            c = ctx.cell(bench.name, v.label, "id", "accuracy")
            if c is None:
                continue
            rows.append([task, "rsgn (sparse)", v.label, _params(ctx, bench.name, v.label), _pct1(c),
                         fmt(_row_mean(ctx, bench.name, v.label, "active_fraction")),
                         f"{_row_mean(ctx, bench.name, v.label, 'edges_per_sample'):,.0f}"])
    return _table(["task", "model", "setting", "params", "test accuracy", "active fraction (exact nonzero)",
                   "edges / sample"], rows)


#: the pool_sigma the pool- rows run with, per task (chosen on validation in an earlier search)
USED_SIGMA = {"rsgn_hierarchical": _H_POOL["pool_sigma"], "rsgn_tree": 2.0, "rsgn_xor_range": 2.0}


def pool_sigma_table(ctx: ReportContext) -> list[str]:
    rows, best = [], []
    for bench in POOL_SIGMA:
        cells = []
        for v in bench.variants:
            c = ctx.cell(bench.name, v.label, "validation", "accuracy")
            if c is not None:
                cells.append((c.mean, v.config["pool_sigma"]))
                rows.append([SHORT[bench.task], f"epochs={v.config['epochs']}, {v.label}", f"{100 * c.mean:.1f}"])
        if cells:
            top = max(cells)
            best.append(f"{SHORT[bench.task]}: best pool_sigma = {top[1]} ({100 * top[0]:.1f} %), the pool- rows use "
                        f"{USED_SIGMA[bench.task]}")
    if not rows:
        return ["No validation records of `pool_sigma` yet (`hebbnets reproduce rsgn --benches "
                + ",".join(b.name for b in POOL_SIGMA) + "`).", ""]
    return _table(["task", "point", "validation accuracy"], rows) + ["; ".join(best) + ".", ""]


def own_table(ctx: ReportContext) -> list[str]:
    rows = []
    for bench, trivial in ((TREE, "trivial_tree"), (XOR, "trivial_xor_range")):
        for m in ("centroid", "lda"):
            c = ctx.cell(trivial, m, "id", "accuracy")
            if c is not None:
                rows.append([SHORT[bench.task], m, "trivial", "0", _pct1(c)])
        for v in bench.variants:
            c = ctx.cell(bench.name, v.label, "id", "accuracy")
            if c is not None:
                rows.append([SHORT[bench.task], v.model, v.label, _params(ctx, bench.name, v.label), _pct1(c)])
    return _table(["task", "model", "setting", "params", "test accuracy"], rows)


def _speed(ctx: ReportContext) -> dict[str, Any] | None:
    other = ctx.other_spec("speed")
    return None if other is None else other.measure("rsgn_scaling")


def scaling_section(ctx: ReportContext) -> list[str]:
    from ...bench.speed import scaling_slopes
    from .speed import parity_section

    e = _speed(ctx)
    if e is None:
        return ["No scaling records yet (`hebbnets reproduce speed`).", ""]
    other = ctx.other_spec("speed")
    s = scaling_slopes(e["rows"])
    nodes = [r for r in e["rows"] if r["table"] == "nodes"]
    big = max(nodes, key=lambda r: r["n_nodes"])
    return [f"From the `speed` spec's records (`reports/speed.md`, measure `rsgn_scaling`): forward time per sample "
            f"grows with log-log slope {s['sparse_nodes']:.2f} in the node count for the sparse model against "
            f"{s['dense_nodes']:.2f} for the dense reference formulation, and {s['rsgn_tokens']:.2f} in the sequence "
            f"length against {s['transformer_tokens']:.2f} for a Transformer encoder; at {big['n_nodes']:,} nodes "
            f"{big['active_fraction']:.3f} of the nodes are active and {big['edges_per_sample']:,.0f} edges are touched "
            f"per sample. The exact kNN graph build is O(N²) ({big['knn_build_s']:.0f} s at {big['n_nodes']:,} nodes) "
            "and runs on the slow timescale only (once per epoch by default), so it is listed apart.", ""] \
        + parity_section(other)


def ablation_table(ctx: ReportContext) -> list[str]:
    steps_base = {"honest_hierarchical": 5, "honest_longrange": 7}
    fam = {"honest_hierarchical": "pool-e5", "honest_longrange": "sparse-e10"}
    rows_spec = [("base (256 nodes, Hebbian on, S = 5 / 7)", ""), ("Hebbian off", "-nohebb"), ("S = 1", "-steps1"),
                 ("S = 3", "-steps3"), ("S = 5", "-steps5"), ("128 nodes", "-nodes128"), ("512 nodes", "-nodes512"),
                 ("prune every depressed edge (threshold 0.5, a < 0)", "-prune-neg")]
    rows = []
    for text, sfx in rows_spec:
        cells = []
        for b in ("honest_hierarchical", "honest_longrange"):
            label = fam[b] + sfx
            if sfx == "-steps5" and steps_base[b] == 5:
                label = fam[b]  # S = 5 is hierarchical's base
            c = ctx.cell(b, label, "id", "accuracy")
            cells += ["—", "—"] if c is None else [f"{_pct1(c)} [{label}]", fmt(_row_mean(ctx, b, label, "active_fraction"))]
        rows.append([text] + cells)
    return _table(["setting", "hierarchical", "active", "long-range", "active"], rows)


def _stats(ctx: ReportContext, bench: str, prefix: str) -> list[dict[str, Any]]:
    return [e for v in ctx.spec.bench(bench).variants if v.label.startswith(prefix) for e in ctx.fits(bench, v.label)]


def activity_section(ctx: ReportContext) -> list[str]:
    par = [e for b in ("paper_hierarchical", "paper_longrange") for e in _stats(ctx, b, "rsgn_parity")]
    sp = [e for b in ("honest_hierarchical", "honest_longrange") for e in ctx.fits(b)]

    def mean_row(entries: list[dict[str, Any]], key: str) -> float:
        vals = [r[key] for e in entries for r in e["rows"] if r.get(key) is not None and r["metric"] == "accuracy"]
        return sum(vals) / len(vals) if vals else math.nan

    lines = []
    if par:
        lines.append(f"- rsgn_parity (the author's model, {len(par)} runs): fraction of nodes with α > 0.01 after the last "
                     f"step = {mean_row(par, 'active_fraction'):.3f} on test inputs; edges touched per sample = "
                     f"{mean_row(par, 'edges_per_sample'):,.0f} (dense: N²·S).")
    if sp:
        lines.append(f"- sparse rsgn ({len(sp)} honest-split runs): fraction of nodes exactly nonzero after the last step "
                     f"= {mean_row(sp, 'active_fraction'):.3f}; edges per sample = {mean_row(sp, 'edges_per_sample'):,.0f}.")
    probes = [e for b in SLOW_RULES for e in ctx.fits(b.name)]
    rules = [(e, e["stats"]["slow_rules"]) for e in probes if e["stats"].get("slow_rules")]
    if not rules:
        lines.append("- Slow rules (Hebbian and gradient update sizes, reward, edges pruned and sprouted): no records "
                     "yet (`hebbnets reproduce rsgn --benches " + ",".join(b.name for b in SLOW_RULES) + "`).")
        return lines + [""]
    commits = sorted({str(e.get("commit"))[:7] for e in probes if e.get("commit")})
    lines.append(f"- The slow rules, measured by the fits of the `slow_rules_*` benches (seed 0, commit(s) "
                 f"{', '.join(commits)}; the tables above are the imported runs):")

    def avg(items: list[dict[str, Any]], key: str) -> float:
        vals = [r[key] for r in items if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else math.nan

    par_r = [r for e, r in rules if e["model"] == "rsgn_parity"]
    par_epochs = sorted({e["config"]["epochs"] for e, _ in rules if e["model"] == "rsgn_parity"})
    sp_r = [(e, r) for e, r in rules if e["model"] == "rsgn"]
    grad = [r for e, r in sp_r if e["config"].get("slow_grad")]
    parts = []
    if par_r:
        parts.append(f"rsgn_parity {avg(par_r, 'hebbian_update_mean'):.2e} / {avg(par_r, 'gradient_update_mean'):.2e} "
                     f"({len(par_r)} run(s), {'/'.join(map(str, par_epochs))} epochs; ratio "
                     f"{avg(par_r, 'gradient_update_mean') / avg(par_r, 'hebbian_update_mean'):.0f}x)")
    if grad:
        parts.append(f"sparse rsgn {avg(grad, 'hebbian_update_mean'):.2e} / {avg(grad, 'gradient_update_mean'):.2e} "
                     f"({len(grad)} run(s) with `slow_grad=True`; by default the sparse model's affinities get no "
                     "gradient)")
    if parts:
        lines.append("  - Hebbian update / gradient update on the same tensor (mean norms per batch): " + "; ".join(parts) + ".")
    default = [r for e, r in sp_r if e["config"].get("prune_threshold") == 0.05]
    raised = [r for e, r in sp_r if e["config"].get("prune_threshold") == 0.5]
    if default:
        pruned, sprouted = sum(r["pruned_total"] for r in default), sum(r["sprouted_total"] for r in default)
        rewards = [r["reward_mean"] for r in default if r.get("reward_mean") is not None]
        line = (f"  - Structural plasticity over the {len(default)} sparse run(s) at the default prune threshold "
                f"(sigmoid(a) < 0.05, i.e. affinity a < -2.9; affinities start at 0): {pruned:,} edges pruned, "
                f"{sprouted:,} sprouted.")
        if not pruned and not sprouted:
            line += " **Pruning and sprouting never fired at the default threshold.**"
        if rewards:
            line += (f" The reward R = EMA(loss) - loss averages {statistics.mean(rewards):+.2e} per batch (positive in "
                     f"{sum(v > 0 for v in rewards)} of {len(rewards)} runs): while the loss falls its running mean lags "
                     "above it, so the reward-modulated rule mostly strengthens co-active edges.")
        if raised:
            line += (f" With the threshold raised to 0.5 (every edge the rule depressed at all; {len(raised)} run(s)) "
                     f"the rules fire: {avg(raised, 'pruned_total'):,.0f} edges pruned and "
                     f"{avg(raised, 'sprouted_total'):,.0f} sprouted per run.")
        lines.append(line)
    return lines + [""]


def _diff_line(claim: str, task: str, on: Any, off: Any, on_label: str, off_label: str) -> tuple[bool | None, str]:
    if on is None or off is None or on.n < 2 or off.n < 2:
        return None, "needs at least 2 seeds of both settings."
    diff = 100 * (on.mean - off.mean)
    noise = 100 * math.sqrt((on.std ** 2 + off.std ** 2) / 2)
    verdict = True if diff > 2 * noise else None if abs(diff) <= 2 * noise else False
    return verdict, (f"{task}, honest split: {on_label} {_pct(on)} vs {off_label} {_pct(off)}, difference {diff:+.1f} pp "
                     f"against a seed std of {noise:.1f} pp" + (": larger than 2 seed std." if verdict
                                                               else ": not distinguishable from noise."))


def claims_section(ctx: ReportContext) -> list[str]:
    out = []
    for bench, trivial, task in ((PAPER_HIER, "trivial_hierarchical", "rsgn_hierarchical"),
                                 (PAPER_LONG, "trivial_longrange", "rsgn_longrange")):
        b, f = (ctx.cell(bench.name, "rsgn_parity-e50", "id", m) for m in ("best_epoch_accuracy", "accuracy"))
        cen = ctx.cell(trivial, "centroid", "id", "accuracy")
        paper = PAPER[task]["rsgn_parity"]
        if b is None or f is None:
            out.append(f"- **{SHORT[task]}, RSGN's reported accuracy ({paper} %)**: not measured at 50 epochs.")
            continue
        gap = 100 * b.mean - paper
        close = abs(gap) <= max(2 * 100 * (b.std if b.n > 1 else 0), 1.0)
        out.append(f"- **{SHORT[task]}, RSGN's reported accuracy ({paper} %)**: "
                   + ("reproduced" if close else "not reproduced")
                   + f". The author's protocol gives {100 * b.mean:.1f} % ({b.n} seeds, 50 epochs, best epoch on the "
                   f"reported set), the final model {100 * f.mean:.1f} %: {gap:+.1f} pp from the paper, "
                   + ("within" if close else "outside") + " 2 seed std."
                   + (f" A nearest-centroid classifier on the mean-pooled input scores {100 * cen.mean:.1f} %." if cen else ""))
        others = []
        for v in bench.variants:
            if v.label.endswith("-e50") and v.model != "rsgn_parity":
                c = ctx.cell(bench.name, v.label, "id", "best_epoch_accuracy")
                if c is not None:
                    others.append(f"{v.model} {100 * c.mean:.1f} % (paper {PAPER[task].get(v.model, '—')} %)")
        if others:
            out.append("  - Baselines under the same protocol at 50 epochs (author's number): " + "; ".join(others) + ".")
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
                       + (f"; nearest centroid {100 * cen.mean:.1f} %" if cen else "")
                       + ". Selecting the best epoch on the reported set adds "
                       + ", ".join(f"{100 * (full[m][0].mean - full[m][1].mean):+.1f} pp ({m})" for m in ranked) + ".")
    par = [e for b in ("paper_hierarchical", "paper_longrange") for e in _stats(ctx, b, "rsgn_parity")]
    act = [r["active_fraction"] for e in par for r in e["rows"] if r.get("active_fraction") is not None]
    sp = [r["active_fraction"] for b in ("honest_hierarchical", "honest_longrange") for e in ctx.fits(b)
          for r in e["rows"] if r.get("active_fraction") is not None]
    if act:
        out.append(f"- **1–2 % of nodes active, dynamic sparsity**: does not hold for the author's model: "
                   f"{100 * sum(act) / len(act):.0f} % of nodes above the 0.01 threshold after the last step (mean over "
                   f"{len(act)} runs)."
                   + (f" Our sparse re-implementation enforces sparsity (top-k ignition, hard floor, k-WTA cap) and "
                      f"runs at {100 * sum(sp) / len(sp):.1f} % exactly nonzero nodes; ignition is 2 %, but homeostasis "
                      "does not bring the steady state down to 2 %." if sp else ""))
    e = _speed(ctx)
    if e is not None:
        from ...bench.speed import scaling_slopes

        s = scaling_slopes(e["rows"])
        holds = s["sparse_nodes"] <= 1.1
        out.append(f"- **O(n·k) cost**: {'holds' if holds else 'does not hold'} for the sparse re-implementation "
                   f"(log-log slope {s['sparse_nodes']:.2f} in nodes, {s['rsgn_tokens']:.2f} in tokens; dense "
                   f"{s['dense_nodes']:.2f}); the author's dense code is O(N²) per step.")
    for bench, trivial, chance in ((TREE, "trivial_tree", 1 / 12), (XOR, "trivial_xor_range", 0.25)):
        rs = ctx.cell(bench.name, "pool-e10", "id", "accuracy") or ctx.cell(bench.name, "sparse-e10", "id", "accuracy")
        others = [c for c in ctx.cells(bench.name, "accuracy") if c.split == "id"
                  and bench.variant(c.label).model not in ("rsgn", "rsgn_parity")]
        if rs and others:
            best = max(others, key=lambda c: c.mean)
            verdict = "fails" if rs.mean < chance + 0.1 else "learns"
            out.append(f"- **{SHORT[bench.task]}** (needs order and composition, chance {100 * chance:.1f} %): sparse "
                       f"RSGN {verdict} ({_pct1(rs)} %); best other model {bench.variant(best.label).model} "
                       f"[{best.label}] {_pct1(best)} %.")
    for bench, trivial, label in ((HONEST_HIER, "trivial_honest_hierarchical", "pool-e15"),
                                  (HONEST_LONG, "trivial_honest_longrange", "sparse-e10")):
        base, cen = ctx.cell(bench.name, label, "id", "accuracy"), ctx.cell(trivial, "centroid", "id", "accuracy")
        if base and cen:
            out.append(f"- **Sparse RSGN on the paper task {SHORT[bench.task]}** (honest split, {label}): {_pct1(base)} % "
                       f"vs nearest centroid {100 * cen.mean:.1f} %"
                       + (": below a parameter-free bag-of-tokens classifier." if base.mean < cen.mean
                          else ": above the bag-of-tokens baseline."))
    for claim, on_sfx, off_sfx, on_label, off_label in (
            ("Hebbian learning improves accuracy", "", "-nohebb", "on", "off"),
            ("Structural plasticity (pruning and sprouting) improves accuracy", "-prune-neg", "",
             "firing (threshold 0.5)", "not firing (default)")):
        for bench, fam in ((HONEST_LONG, "sparse-e10"), (HONEST_HIER, "pool-e5")):
            on = ctx.cell(bench.name, fam + on_sfx, "id", "accuracy")
            off = ctx.cell(bench.name, fam + off_sfx, "id", "accuracy")
            verdict, evidence = _diff_line(claim, SHORT[bench.task], on, off, on_label, off_label)
            word = {True: "holds", False: "does not hold (worse)",
                    None: "not supported" if on is not None and off is not None and on.n > 1 and off.n > 1
                    else "not measured"}[verdict]
            out.append(f"- **{claim}** ({SHORT[bench.task]}): {word}. {evidence}")
    return out + [""]


SPEC = register_spec(Spec(
    "rsgn", "RSGN: parity with the paper, honest numbers, tasks that test the claims",
    benches=(PAPER_HIER, PAPER_LONG, *TRIVIAL, HONEST_HIER, HONEST_LONG, TREE, XOR, *POOL_SIGMA, *SLOW_RULES),
    intro=("Accuracy in %, mean ± sample std (ddof 1) over seeds 0, 1, 2 unless marked. The author's data has one draw "
           "(every seed sees the same data; seeds vary the models). Background and where the author's code departs "
           "from the paper: `docs/rsgn.md`."),
    sections=(
        Text("""## 1. Paper tasks, the author's split and protocol

Protocol of the author's notebook: AdamW (lr 1e-3, wd 1e-4), cosine schedule over the epochs run, gradient norm clipped at 1.0, the author's 80/20 split (seed 42). **Author's number** = best accuracy over the epochs on the 20 % split (the paper's protocol: selected on the set it is reported on; protocol option `curve`). **Final model** = accuracy of the last epoch's model on the same 20 %, on which nothing was chosen (no early stopping, the author's untuned configuration), so it is an unbiased held-out number. The paper trains 50 epochs; the epochs we ran are in the table."""),
        Custom(paper_table),
        Text("""## 2. Honest split (70/15/15): sparse RSGN and trivial baselines

`split="honest"`: train 70 %, validation 15 % carved from it (early stopping on validation loss), a held-out 15 % test set scored once. The sparse model trains with the shared trainer's default protocol (Adam, constant lr, best validation loss restored). `pool-` rows: ignited nodes start from their receptive field (`pool_sigma`, the kernel-weighted mean of all token embeddings) instead of the one nearest token (`sparse-` rows); `pool_sigma` was chosen on validation data carved from the training split (table below)."""),
        Custom(honest_table),
        Text("Validation-only choice of `pool_sigma` (seed 0, 20 % of the training split; accuracy on that validation part):"),
        Custom(pool_sigma_table),
        Text("""## 3. Tasks that test the claims (own held-out test sets)

`40k` = parameter-matched (LSTM: hidden 64, 1 bidirectional layer; Transformer: d_model 48, 4 heads, FFN 96, 2 layers, sinusoidal positions); `paper` = the task's default sizes (LSTM 2 x 128 bidirectional, Transformer d_model 128, FFN 512, 2 layers). Best validation loss restored (validation carved from train). Chance: tree 1/12 (12 classes), xor-range 1/4 (4 classes)."""),
        Custom(own_table),
        Text("## 4. Scaling (forward time per sample)"),
        Custom(scaling_section),
        Text("""## 5. Ablations of the sparse RSGN (honest split, test accuracy)

Base: 256 nodes, Hebbian on, S = 5 (hierarchical, receptive-field ignition, `pool-` labels) / 7 (long-range, `sparse-` labels). One change per row."""),
        Custom(ablation_table),
        Text("## 6. Measured activity"),
        Custom(activity_section),
        Figure("activity", "activity", "Measured activity of the sparse RSGN and the author's model on the test split",
               {"benches": ("paper_hierarchical", "paper_longrange", "honest_hierarchical", "honest_longrange")}),
        Text("## 7. Where the paper's claims hold and where they do not"),
        Custom(claims_section),
    ),
))
