"""The rsgn report's prose, tables and claim checks (``specs/rsgn.py`` lays them out).

The spec passes its data (bench names, the paper's numbers, the curve's targets, the ablations)
in one ``RSGNReport``; its methods are the report's ``Custom`` sections and, through the
``*_claim`` methods, the checks of its ``Verdicts`` table. Every method reads the records
through a ``ReportContext`` and the benches by name (``ctx.spec.bench``); nothing here trains or
measures.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...measures.summary import sample_std
from ...rsgn import _speed
from .queries import seeds_text, table
from .sections import Cell, ReportContext, Verdict, fmt

Check = Callable[[ReportContext], Verdict]

#: the readable name of each model of the cost measurement
MODEL_NAME = {"rsgn": "sparse RSGN", "rsgn_parity": "rsgn_parity (author's, dense)", "mamba": "Mamba"}


# -- formatting -------------------------------------------------------------------------------------
def pct(cell: Cell | None) -> str:
    """``mean ± std`` of an accuracy cell in % with one decimal ("—" for none)."""
    return "—" if cell is None else (f"{100 * cell.mean:.1f}" if cell.n < 2 or math.isnan(cell.std)
                                    else f"{100 * cell.mean:.1f} ± {100 * cell.std:.1f}")


def pct1(cell: Cell | None) -> str:
    """A percentage, with '(1 seed)' when there is one."""
    return "—" if cell is None else pct(cell) + (" (1 seed)" if cell.n < 2 else "")


def ms(values: list[Any], scale: float = 100.0, digits: int = 2) -> str:
    """``mean ± sample std`` of ``values`` times ``scale`` with ``digits`` decimals ("—" when empty)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return "—"
    m = scale * statistics.mean(vals)
    return f"{m:.{digits}f}" if len(vals) < 2 else f"{m:.{digits}f} ± {scale * sample_std(vals):.{digits}f}"


def ratio_text(r: float) -> str:
    return f"1/{1 / r:.0f}" if 0 < r < 0.5 else f"{r:.2f}"


def _gib(v: float | None) -> str:
    return "—" if v is None or math.isnan(v) else f"{v:.2f}"


def diff(on: Cell | None, off: Cell | None) -> tuple[bool | None, str, str]:
    """``on`` vs ``off``: (True when on is better by more than 2 pooled seed std, False when worse
    by more, None within noise or without 2 seeds of both; the numbers; the effect in pp)."""
    if on is None or off is None or on.n < 2 or off.n < 2:
        return None, "(needs at least 2 seeds of both settings)", "—"
    d = 100 * (on.mean - off.mean)
    noise = 100 * math.sqrt((on.std ** 2 + off.std ** 2) / 2)
    verdict = True if d > 2 * noise else None if abs(d) <= 2 * noise else False
    return (verdict, f"{pct(on)} vs {pct(off)}: {d:+.1f} pp against a seed std of {noise:.1f} pp",
            f"{d:+.1f} pp (seed std {noise:.1f} pp)")


#: a three-way comparison as a verdict: better, worse, within noise
WORD3 = {True: True, False: False, None: "undecided"}


@dataclass(frozen=True, eq=False)
class RSGNReport:
    """The rsgn report's data, from the spec.

    Attributes:
        paper: ``{task: {model: accuracy % the paper reports}}``; short: ``{task: short name}``;
        chance: ``{task: chance accuracy}``; trivial_of: ``{(task, split or None): trivial bench}``.
        paper_benches: the author's-protocol benches; sparse: the sparse benches at ``n_small``
        nodes (the paper tasks first); large: ``{sparse bench: its bench at n_large nodes}``;
        own: ``(sequence-model bench, sparse bench)`` of the own tasks; targets: the label
        suffixes of the curve's points (the default first); ablations: ``(suffix, meaning)`` of
        the one-change runs on the paper tasks; steps1: the one-step run's ``(suffix, meaning)``;
        epochs: epochs of every sparse fit; cut: what the plan left out.
    """

    paper: Mapping[str, Mapping[str, float]]
    short: Mapping[str, str]
    chance: Mapping[str, float]
    trivial_of: Mapping[tuple[str, str | None], str]
    paper_benches: tuple[str, ...]
    sparse: tuple[str, ...]
    large: Mapping[str, str]
    own: tuple[tuple[str, str], ...]
    targets: tuple[str, ...]
    ablations: tuple[tuple[str, str], ...]
    steps1: tuple[str, str]
    n_small: int
    n_large: int
    epochs: int
    cut: str = ""

    # -- lookups ------------------------------------------------------------------------------------
    @property
    def default(self) -> str:
        return f"n{self.n_small}"

    @property
    def default_large(self) -> str:
        return f"n{self.n_large}"

    def curve_labels(self) -> tuple[str, ...]:
        return tuple(f"n{n}{sfx}" for n in (self.n_small, self.n_large) for sfx in self.targets)

    def default_runs(self, ctx: ReportContext, sparse: str | None = None) -> list[tuple[Any, str]]:
        """(bench, label) of every default-model run: n_small on each sparse bench, n_large where
        planned (one sparse bench's only, with ``sparse``)."""
        out = []
        for name in self.sparse if sparse is None else (sparse,):
            out.append((ctx.spec.bench(name), self.default))
            if name in self.large:
                out.append((ctx.spec.bench(self.large[name]), self.default_large))
        return out

    def trivial_cells(self, ctx: ReportContext, bench: Any) -> list[tuple[str, Cell | None]]:
        name = self.trivial_of[(bench.task, bench.params.get("split"))]
        return [(v.label, ctx.cell(name, v.label, "id", "accuracy")) for v in ctx.spec.bench(name).variants]

    @staticmethod
    def params(ctx: ReportContext, bench: str, label: str) -> str:
        p = [e["stats"].get("num_parameters") for e in ctx.fits(bench, label) if e["stats"].get("num_parameters") is not None]
        return f"{int(round(sum(p) / len(p))):,}" if p else "—"

    @staticmethod
    def test_rows(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
        """The accuracy row on the test split of every seed of ``label``."""
        return [r for e in ctx.fits(bench, label) for r in e["rows"] if r["split"] == "id" and r["metric"] == "accuracy"]

    @staticmethod
    def fit_stats(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
        return [e["stats"]["rsgn_fit"] for e in ctx.fits(bench, label) if e["stats"].get("rsgn_fit")]

    # == text of the pages ==========================================================================
    def paper_method(self, ctx: ReportContext) -> list[str]:
        return ["Protocol of the author's notebook: AdamW (lr 1e-3, wd 1e-4), cosine schedule over the epochs run, "
                "gradient norm clipped at 1.0, the author's 80/20 split (seed 42). **Author's number** = best accuracy "
                "over the epochs on the 20 % split (the paper's protocol: selected on the set it is reported on; "
                "protocol option `curve`). **Final model** = accuracy of the last epoch's model on the same 20 %, on "
                "which nothing was chosen. Trivial classifiers: nearest centroid and LDA on the mean-pooled input (a "
                "bag of tokens), and `lda-ends`, LDA on the means of the first and of the last 8 tokens side by side "
                "(the long-range task puts its class patterns exactly there).", ""]

    def sparse_method(self, ctx: ReportContext) -> list[str]:
        return [f"Sparse RSGN (`rsgn`) on the honest split of the paper tasks (`split=\"honest\"`: train 70 %, "
                "validation 15 % carved from it, a held-out 15 % test set scored once) and on the own tasks with "
                "sinusoidal token positions (`positional=True`; without them the model sees a bag of tokens and the "
                f"tree task is at chance by construction). Trainer defaults (Adam, constant lr), {self.epochs} epochs, "
                "the best validation loss restored among the epochs whose validation activity meets the selection "
                "limit. **Activity** = fraction of nodes that fire in a propagation step, measured before the safety "
                "cap, averaged over the steps (ignition excluded); *after cap* = the nodes that survive the cap. The "
                "homeostatic target is the only knob varied along the curve; the curve runs at "
                f"{self.n_small:,} and {self.n_large:,} nodes on every task, 3 seeds per point. {self.cut} "
                "`pool_sigma` (how an ignited node reads the tokens) is the task's configuration, chosen on validation "
                "data for an earlier version of the model and not searched again; nothing else was tuned.", ""]

    def rules_method(self, ctx: ReportContext) -> list[str]:
        return [f"One change to the default model at {self.n_small:,} nodes per row, on both paper tasks (3 seeds each; "
                "*vs default* = difference of the means and the pooled seed std).", ""]

    def tasks_method(self, ctx: ReportContext) -> list[str]:
        chance = ", ".join(f"{self.short[ctx.spec.bench(b).task]} 1/{round(1 / self.chance[ctx.spec.bench(b).task])}"
                           for b, _ in self.own)
        return ["`40k` = parameter-matched (LSTM: hidden 64, 1 bidirectional layer; Transformer: d_model 48, 4 heads, "
                "FFN 96, 2 layers, sinusoidal positions); `paper` = the task's default sizes (LSTM 2 x 128 "
                "bidirectional, Transformer d_model 128, FFN 512, 2 layers). Best validation loss restored (validation "
                f"carved from train). Chance: {chance}. The sparse RSGN rows are those of "
                "[rsgn_sparse](rsgn_sparse.md) (with positions).", ""]

    # == the author's protocol ======================================================================
    def paper_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for name in self.paper_benches:
            bench = ctx.spec.bench(name)
            task = bench.task
            for v in bench.variants:
                best, final = (ctx.cell(name, v.label, "id", m) for m in ("best_epoch_accuracy", "accuracy"))
                if final is None:
                    continue
                rows.append([self.short[task], v.model, self.params(ctx, name, v.label), str(v.config["epochs"]),
                             str(final.n), pct(best), pct(final), str(self.paper[task].get(v.model, "—"))])
            for label, c in self.trivial_cells(ctx, bench):
                if c is not None:
                    rows.append([self.short[task], label, "0", "—", str(c.n), "—", pct(c), "—"])
        return table(["task", "model", "params", "epochs", "seeds", "author's number (best epoch)", "final model",
                      "paper"], rows)

    def paper_rankings(self, ctx: ReportContext) -> list[str]:
        """Per paper task: the models at 50 epochs ranked by the final model, and what selecting
        the best epoch on the reported set adds."""
        out = []
        for name in self.paper_benches:
            bench = ctx.spec.bench(name)
            full = {}
            for v in bench.variants:
                if v.label.endswith("-e50"):
                    bb, ff = (ctx.cell(name, v.label, "id", m) for m in ("best_epoch_accuracy", "accuracy"))
                    if bb is not None and ff is not None:
                        full[v.model] = (bb, ff)
            if len(full) > 1:
                ranked = sorted(full, key=lambda m: -full[m][1].mean)
                out.append(f"- {self.short[bench.task]}, at 50 epochs, ranked by the final model (no selection on the "
                           "reported set): " + " > ".join(f"{m} {100 * full[m][1].mean:.1f} %" for m in ranked)
                           + ". Selecting the best epoch on the reported set adds "
                           + ", ".join(f"{100 * (full[m][0].mean - full[m][1].mean):+.1f} pp ({m})" for m in ranked) + ".")
        return out + [""] if out else []

    # == the mechanisms of the default model ========================================================
    def mechanisms(self, ctx: ReportContext) -> list[str]:
        from ...rsgn.model import RSGNConfig

        c = RSGNConfig()
        on = {True: "yes", False: "no"}
        rows = [
            ["node positions in the Poincaré ball", on[True],
             "a geoopt `ManifoldParameter`, moved once per epoch by the slow drift rule (a Riemannian exp-map step "
             "towards positively correlated neighbours, `eta_position` = " + fmt(c.eta_position) + "); gradients "
             "through geoopt's RiemannianAdam only with `position_grad=True` ("
             + ("on" if c.position_grad else "off") + " by default)"],
            ["hierarchical levels", on[c.levels == "radius"],
             "the hyperbolic radius `d_H(0, p_i)` (`levels=\"" + c.levels + "\"`), so levels move with the positions; "
             "not a separate learned quantity"],
            ["sparse, learned edges", on[True],
             f"exact kNN graph (k = {c.k}, KD-tree, rebuilt once per epoch) with free per-edge affinities learned by "
             "the Hebbian rule only (no gradient unless `slow_grad=True`)"],
            ["ignition of 1-2 % of nodes", on[True],
             f"top-k of a Gaussian field around the sparks: exactly {100 * c.ignite_frac:g} % of nodes by construction "
             "(a design choice, not a measurement)"],
            ["soft thresholds, annealed temperature", on[True],
             f"T {c.t_start:g} -> {c.t_end:g} over the epochs; a node fires iff its drive reaches its threshold "
             f"(hard floor {c.floor:g}), exact zeros otherwise"],
            ["local inhibition", on[c.inhibition > 0],
             f"divisive normalisation over the kNN neighbourhood (beta = {c.inhibition:g})"],
            ["homeostasis to 1-2 % activity", on[c.homeostasis],
             f"per-node thresholds on the firing rate before the cap, target {100 * c.target_start:g} % -> "
             f"{100 * c.target_activity:g} % over {c.target_epochs} epochs; an epoch may be restored only if its "
             f"validation activity is <= {100 * c.max_activity:g} %"],
            ["activity cap", on[c.max_active_frac > 0],
             f"k-WTA safety limit at {100 * c.max_active_frac:g} % of nodes per sample and step, after the measurement"],
            ["reward-modulated Hebbian rule", on[c.hebbian],
             f"three-factor rule with per-sample rewards, `da_e = eta mean_b[(Lbar - L_b) c_eb]` (eta = {c.eta_affinity:g})"],
            ["structural plasticity (pruning, sprouting)", on[c.structural and c.prune_threshold > 0],
             f"once per epoch: prune alive edges with sigmoid(a) < {c.prune_threshold:g}; sprout into pruned slots "
             f"towards 2-hop nodes whose firing correlates above {c.sprout_threshold:g}"],
            ["resonance to a fixed point", "no", "a fixed number of propagation steps `n_steps` (the task's "
                                                 "configuration), as in the author's code"],
        ]
        return table(["mechanism (paper)", "default `rsgn`", "how"], rows)

    # == accuracy against measured activity =========================================================
    def _setting(self, ctx: ReportContext, bench: Any, v: Any) -> str:
        """The fit's node count, target, selection limit and cap (from its record) and what the
        variant changes besides."""
        cfg = ctx.fits(bench.name, v.label)[0]["config"]
        out = (f"N = {cfg['n_nodes']:,}, target {100 * cfg['target_activity']:g} %, limit "
               f"{100 * cfg['max_activity']:g} %, cap {100 * cfg['max_active_frac']:g} %")
        changes = [f"{k} = {cfg[k]}" for k in ("hebbian", "prune_threshold", "n_steps") if k in v.config]
        return out + ("; " + ", ".join(changes) if changes else "")

    def curve_table(self, ctx: ReportContext) -> list[str]:
        """Per task and setting of the curve: test accuracy, measured activity before and after the
        cap (test split, mean over the propagation steps), the validation activity of the selected
        epoch and in how many seeds it met the selection limit, edges per sample."""
        labels = self.curve_labels()
        rows = []
        for name in self.sparse:
            first = ctx.spec.bench(name)
            for bench in (first, *((ctx.spec.bench(self.large[name]),) if name in self.large else ())):
                task = self.short[bench.task]
                for label, c in (self.trivial_cells(ctx, bench) if bench is first else []):  # once per task
                    if c is not None:
                        rows.append([task, label, "trivial, 0 parameters", "1", pct(c), "", "", "", "", "", ""])
                for v in bench.variants:
                    c = ctx.cell(bench.name, v.label, "id", "accuracy")
                    if v.label not in labels or c is None:
                        continue
                    tr, st = self.test_rows(ctx, bench.name, v.label), self.fit_stats(ctx, bench.name, v.label)
                    met = sum(bool(s.get("activity_target_met")) for s in st)
                    rows.append([task, v.label, self._setting(ctx, bench, v), str(c.n), pct(c),
                                 ms([r.get("activity") for r in tr]),
                                 f"{100 * max(r['activity'] for r in tr):.2f}" if tr else "—",
                                 ms([r.get("activity_post_cap") for r in tr]),
                                 ms([s.get("activity_val_selected") for s in st]), f"{met}/{len(st)}",
                                 ms([r.get("edges_per_sample") for r in tr], 1.0, 0)])
        return table(["task", "label", "setting", "seeds", "test accuracy %", "activity before cap %",
                      "largest seed, before cap %", "after cap %",
                      "validation activity, selected epoch %", "selected epoch within limit", "edges / sample"], rows)

    def missing_runs(self, ctx: ReportContext) -> list[str]:
        """One line naming every planned sparse fit and measure that has no record (not run)."""
        gone = []
        for name in (*self.sparse, *self.large.values()):
            bench = ctx.spec.bench(name)
            for v in bench.variants:
                have = {e["seed"] for e in ctx.fits(name, v.label)}
                seeds = [s for s in bench.at(ctx.scale).seeds if s not in have]
                if seeds:
                    gone.append(f"{self.short[bench.task]} {v.label} (seed{'s' if len(seeds) > 1 else ''} "
                                f"{', '.join(map(str, seeds))})")
        gone += [m.name for m in ctx.spec.measures if ctx.measure(m.name) is None]
        if not gone:
            return []
        return [f"Planned but not run in this session (no records; compute ran out): {'; '.join(gone)}.", ""]

    def per_step_table(self, ctx: ReportContext) -> list[str]:
        """Activity per step (test split, mean over seeds), before / after the cap, of the defaults."""
        rows, width = [], 0
        for bench, label in self.default_runs(ctx):
            st = self.fit_stats(ctx, bench.name, label)
            if not st:
                continue
            pre = list(zip(*[s["test_pre_cap_per_step"] for s in st]))
            post = list(zip(*[s["test_post_cap_per_step"] for s in st]))
            width = max(width, len(pre))
            rows.append([self.short[bench.task], f"{label} ({len(st)} seed{'s' if len(st) > 1 else ''})"]
                        + [f"{100 * statistics.mean(a):.2f} / {100 * statistics.mean(b):.2f}" for a, b in zip(pre, post)])
        if not rows:
            return ["No records yet.", ""]
        rows = [r + [""] * (width + 2 - len(r)) for r in rows]
        return ["Activity per step of the default models (test split, % of nodes, mean over seeds, before / after "
                "the cap; the ignition step is the top-k by construction):", "",
                *table(["task", "label", "ignition"] + [f"step {i}" for i in range(1, width)], rows)]

    # == the slow rules =============================================================================
    def ablation_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for name in self.sparse:
            bench = ctx.spec.bench(name)
            have = {v.label for v in bench.variants}
            if not any(self.default + sfx in have for sfx, _ in self.ablations):
                continue
            base = ctx.cell(name, self.default, "id", "accuracy")
            for sfx, meaning in (("", "default"), *self.ablations, self.steps1):
                label = self.default + sfx
                c = ctx.cell(name, label, "id", "accuracy") if label in have else None
                if c is None:
                    continue
                tr, st = self.test_rows(ctx, name, label), self.fit_stats(ctx, name, label)
                d = "" if not sfx else diff(c, base)[1].split(": ")[-1]
                rows.append([self.short[bench.task], label, meaning, str(c.n), pct(c), d,
                             ms([r.get("activity") for r in tr]), ms([s.get("pruned_total") for s in st], 1.0, 0),
                             ms([s.get("sprouted_total") for s in st], 1.0, 0)])
        return table(["task", "label", "change", "seeds", "test accuracy %", "vs default", "activity before cap %",
                      "edges pruned", "edges sprouted"], rows)

    def plasticity_table(self, ctx: ReportContext) -> list[str]:
        """Pruning and sprouting counts of the default runs (totals over the fit, per run)."""
        rows = []
        for bench, label in self.default_runs(ctx):
            st = self.fit_stats(ctx, bench.name, label)
            if not st:
                continue
            fired = sum(s["pruned_total"] > 0 and s["sprouted_total"] > 0 for s in st)
            rows.append([self.short[bench.task], label, str(len(st)), ms([s["pruned_total"] for s in st], 1.0, 0),
                         ms([s["sprouted_total"] for s in st], 1.0, 0), f"{fired}/{len(st)}",
                         ms([s["alive_edges"] / s["edges"] for s in st], 100.0, 1),
                         ms([s.get("affinity_negative_fraction") for s in st], 100.0, 1),
                         ms([s.get("hebbian_update_mean") for s in st], 1.0, 3)])
        head = ["Pruning and sprouting in the default runs (default thresholds; totals over each fit, mean ± sample "
                "std over seeds):", ""]
        if not rows:
            return head + ["No records yet.", ""]
        return head + table(["task", "label", "runs", "edges pruned (per run)", "edges sprouted",
                             "runs where both fired", "alive edges at the end %", "affinities < 0 %",
                             "Hebbian update norm per step"], rows)

    @staticmethod
    def parity_rules_line(ctx: ReportContext, bench: str = "slow_rules_parity") -> list[str]:
        par = [e["stats"]["slow_rules"] for e in ctx.fits(bench) if e["stats"].get("slow_rules")]
        if not par:
            return []
        h = statistics.mean(r["hebbian_update_mean"] for r in par)
        g = statistics.mean(r["gradient_update_mean"] for r in par)
        return [f"The author's model (`{bench}`, {len(par)} run, 2 epochs): Hebbian update {h:.2e} against "
                f"AdamW's {g:.2e} on the same affinity tensor per batch (ratio {g / h:.0f}x).", ""]

    # == tasks that test the claims =================================================================
    def own_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for seq, sparse in self.own:
            bench, sp = ctx.spec.bench(seq), ctx.spec.bench(sparse)
            task = self.short[bench.task]
            for label, c in self.trivial_cells(ctx, bench):
                if c is not None:
                    rows.append([task, label, "trivial", "0", pct1(c)])
            for v in sp.variants:
                c = ctx.cell(sparse, v.label, "id", "accuracy")
                if c is not None:
                    rows.append([task, "rsgn (sparse, positional)", v.label, self.params(ctx, sparse, v.label), pct1(c)])
            for v in bench.variants:
                c = ctx.cell(seq, v.label, "id", "accuracy")
                if c is not None:
                    rows.append([task, v.model, v.label, self.params(ctx, seq, v.label), pct1(c)])
        return table(["task", "model", "setting", "params", "test accuracy %"], rows)

    # == cost =======================================================================================
    @staticmethod
    def cost_section(ctx: ReportContext) -> list[str]:
        e = ctx.measure("cost")
        if e is None:
            return ["No records yet (`hebbnets reproduce rsgn --benches cost`).", ""]
        p = e["params"]
        rows = []
        for r in e["rows"]:
            act = "" if r.get("activity") is None else f"{100 * r['activity']:.2f} / {100 * r['activity_post_cap']:.2f}"
            struct = "" if r.get("structure_s") is None or math.isnan(r["structure_s"]) else f"{r['structure_s']:.3f}"
            rows.append([f"{r['n_nodes']:,}", f"{r['seq_len']:,}", MODEL_NAME.get(r["model"], r["model"]),
                         f"{r['step_s']:.3f}", f"{r['forward_s']:.3f}", f"{r['backward_s']:.3f}",
                         f"{r['optimizer_s'] + r['slow_s']:.3f}", struct, f"{r['num_parameters']:,}", act,
                         _gib(r["peak_rss_gb"])])
        lines = [f"One full training step of batch {p['batch_size']} (forward, loss, backward, optimiser step, the "
                 f"per-step slow rules, and one structure step — drift, pruning, sprouting, kNN rebuild — divided by the "
                 f"{p['structure_every']} steps between two of them), median of {p['repeats']} steps after a warm-up "
                 f"step, random inputs with {p['n_features']} features, 1 thread. N and T grow together (N = 8 T). The "
                 f"sparse model first runs {p['calibrate_steps']} forward passes with the slow rules at the final "
                 "temperature, so its thresholds sit near the homeostatic target as after training; its measured "
                 "activity (before / after the cap, mean over steps) is in the table. The author's dense model is run "
                 f"up to {p['max_nodes'].get('rsgn_parity', 0):,} nodes (its N x N matrices); Mamba (`mambapy`, 2 "
                 "bidirectional layers, d_model 32) does not depend on N. Memory: the process's peak resident set size "
                 "during the measurement (Linux VmHWM, reset before each model; includes the ~0.3 GiB of the Python "
                 "process).", "",
                 *table(["N", "T", "model", "step s", "forward s", "backward s", "optimiser + slow rules s",
                         "structure step s (once per 50 steps)", "parameters", "activity % before / after cap",
                         "peak memory GiB"], rows)]
        lines += ["Log-log slope of the step time per segment (N and T both x4 per segment; 95 % Welch interval over "
                  "the timed steps where they were kept) and over all sizes; for the sparse model also the slope of the "
                  "seconds per edge touched (0 when the cost is proportional to the edges the batch touches):", ""]
        for model in p["models"]:
            rows_m = [r for r in e["rows"] if r["model"] == model]
            if len(rows_m) < 2:
                continue
            _, overall = _speed.segment_slopes([r["n_nodes"] for r in rows_m], [r["step_s"] for r in rows_m])
            for label, key in (("", "step_s_repeats"), (" per edge touched", "s_per_edge_repeats")):
                if key == "s_per_edge_repeats" and not all(r.get(key) for r in rows_m):
                    continue
                slopes = RSGNReport.cost_slopes(rows_m, key)
                segs = ", ".join(f"{rows_m[i]['n_nodes']:,} -> {rows_m[i + 1]['n_nodes']:,}: {v[0]:.2f}"
                                 + ("" if math.isnan(v[1]) else f" [{v[1]:.2f}, {v[2]:.2f}]") for i, v in enumerate(slopes))
                tail = f"; overall {overall:.2f}" if not label else ""
                lines.append(f"- {MODEL_NAME.get(model, model)}{label}: {segs}{tail}.")
        return lines + [""]

    @staticmethod
    def graph_section(ctx: ReportContext) -> list[str]:
        e = ctx.measure("graph_build")
        if e is None:
            return ["No records yet (`hebbnets reproduce rsgn --benches graph_build`).", ""]
        rows = [[f"{r['n_nodes']:,}", f"{r['kdtree_s']:.2f}", f"{r['brute_s']:.2f}", ratio_text(r["ratio"]),
                 "yes" if r["identical"] else f"no ({r['mismatched_rows']} rows differ)"] for r in e["rows"]]
        return [f"Exact kNN graph (k = {e['rows'][0]['k']}) on the model's initial positions in the 3-D ball: KD-tree "
                "with a shifted-ball query and a float64 re-rank (`knn=\"kdtree\"`, the default) against the "
                "brute-force O(N²) builder (float64), same positions, same run, 1 thread.", "",
                *table(["nodes", "KD-tree s", "brute force s", "KD-tree / brute force", "identical neighbour lists"], rows)]

    @staticmethod
    def million_section(ctx: ReportContext) -> list[str]:
        e = ctx.measure("million")
        if e is None:
            return ["One million nodes: not run in this session for lack of compute (`hebbnets reproduce rsgn "
                    "--benches million`; about 6 GiB of memory).", ""]
        r = e["rows"][0]
        return [f"Sparse RSGN at {r['n_nodes']:,} nodes, T = {r['seq_len']:,} tokens, batch {r['batch_size']}, 1 "
                f"thread: building the model (positions and the exact kNN graph) {r['build_s']:.1f} s; one training "
                f"step {r['forward_s'] + r['backward_s'] + r['optimizer_s'] + r['slow_s']:.1f} s (forward "
                f"{r['forward_s']:.1f} s, of which the nearest-spark search of ignition {r['ignition_search_s']:.1f} s; "
                f"backward {r['backward_s']:.1f} s; optimiser and slow rules {r['optimizer_s'] + r['slow_s']:.1f} s); "
                f"one structure step with the kNN rebuild {r['structure_s']:.1f} s (amortised over "
                f"{r['structure_every']} steps: {r['step_s']:.1f} s per step); peak memory {r['peak_rss_gb']:.2f} GiB. "
                + (f"It runs at the initial thresholds and temperature (T = {r['temperature']:g}, the first step of "
                   "training, no calibration)" if not r.get("calibrate_steps") else
                   f"It runs after {r['calibrate_steps']} calibration passes (T = {r['temperature']:g})")
                + f", where the measured activity is {100 * r['activity']:.2f} % before and "
                f"{100 * r['activity_post_cap']:.2f} % after the cap ({r['edges_per_sample']:,.0f} edges per sample).", ""]

    # == claim checks ===============================================================================
    def parity_claim(self, bench: str) -> Check:
        """The paper's accuracy of the author's model on ``bench``'s task, reproduced (within
        max(2 seed std, 1 pp)) with the author's code, data and protocol at 50 epochs."""
        def check(ctx: ReportContext) -> Verdict:
            b = ctx.spec.bench(bench)
            best, final = (ctx.cell(bench, "rsgn_parity-e50", "id", m) for m in ("best_epoch_accuracy", "accuracy"))
            paper = self.paper[b.task]["rsgn_parity"]
            if best is None or final is None:
                return Verdict(None, "not measured at 50 epochs.", reading="rsgn_parity")
            gap = 100 * best.mean - paper
            close = abs(gap) <= max(2 * 100 * (best.std if best.n > 1 else 0), 1.0)
            triv = [(lab, c) for lab, c in self.trivial_cells(ctx, b) if c is not None]
            note = (f"{self.short[b.task]}: the author's number is selected on the set it is reported on (no test set), "
                    "on one draw of the author's data; trivial classifiers on the same split score "
                    + ", ".join(f"{lab} {100 * c.mean:.1f} %" for lab, c in triv) + ".")
            return Verdict(close, f"{100 * best.mean:.1f} % ({best.n} seeds, 50 epochs, best epoch on the reported set); "
                                  f"final model {100 * final.mean:.1f} %.",
                           effect=f"{gap:+.1f} pp", against=f"the paper's {paper} %", seeds=seeds_text(best),
                           notes=(note, "Reproduced = within max(2 seed std, 1 pp) of the paper's number."),
                           reading="rsgn_parity")
        return check

    def parity_activity_claim(self, ctx: ReportContext) -> Verdict:
        """The author's model: the share of nodes above its 0.01 threshold after the last step."""
        par = [e for b in self.paper_benches for v in ctx.spec.bench(b).variants if v.model == "rsgn_parity"
               for e in ctx.fits(b, v.label)]
        act = [r["active_fraction"] for e in par for r in e["rows"] if r.get("active_fraction") is not None
               and r["metric"] == "accuracy"]
        if not act:
            return Verdict(None, "no activity recorded.", reading="rsgn_parity")
        m = statistics.mean(act)
        return Verdict(m <= 0.02, f"{100 * m:.0f} % of nodes are above the 0.01 threshold after the last step (mean "
                                  f"over {len(act)} runs on the reported set).",
                       effect=f"{100 * m:.0f} % active", against="the paper's 1–2 %",
                       seeds=",".join(map(str, sorted({e["seed"] for e in par}))), reading="rsgn_parity")

    def activity_claim(self, ctx: ReportContext) -> Verdict:
        """The default sparse model's measured activity before any cap stays within the selection
        limit in every seed on both paper tasks."""
        from ...rsgn.model import RSGNConfig

        c = RSGNConfig()
        parts, ok_all, ign, worst_step, paper_tasks, largest, seeds = [], True, [], 0.0, set(), 0.0, set()
        for bench, label in self.default_runs(ctx):
            tr = self.test_rows(ctx, bench.name, label)
            if not tr:
                continue
            acts = [r["activity"] for r in tr]
            for s in self.fit_stats(ctx, bench.name, label):
                ign.append(s["test_pre_cap_per_step"][0])
                worst_step = max(worst_step, *s["test_pre_cap_per_step"][1:])
            if bench.task not in self.paper:
                continue
            ok_all &= max(acts) <= c.max_activity
            paper_tasks.add(bench.task)
            largest = max(largest, max(acts))
            seeds |= {e["seed"] for e in ctx.fits(bench.name, label)}
            n = ctx.fits(bench.name, label)[0]["config"]["n_nodes"]
            parts.append(f"{self.short[bench.task]} N = {n:,}: {ms(acts)} %")
        ok_all &= len(paper_tasks) == len(self.paper)
        if not parts:
            return Verdict(None, "no records of the default model.", reading="rsgn")
        note = (f"Measured activity: single steps go higher (the largest per-step value in any run is "
                f"{100 * worst_step:.2f} %, per-step table in [rsgn_sparse](rsgn_sparse.md)); ignition is the top "
                f"{100 * c.ignite_frac:g} % of nodes by construction, where {ms(ign)} % of nodes would pass the floor "
                "(not counted in the step mean: a cap that fixes a figure is not a measurement of it); the safety cap "
                "still removes nodes in some samples and steps (before > after); the selection rule restores only "
                f"epochs whose validation activity is <= {100 * c.max_activity:g} %; the fits are {self.epochs} epochs "
                "long. Every run's activity, the own tasks' too, is in the curve table of [rsgn_sparse](rsgn_sparse.md).")
        return Verdict(ok_all, "before the cap (test split, mean over the steps): " + "; ".join(parts) + ".",
                       effect=f"largest seed {100 * largest:.2f} %", against=f"the {100 * c.max_activity:g} % limit",
                       seeds=",".join(map(str, sorted(seeds))), notes=(note,), reading="rsgn")

    def curve_claim(self, sparse: str, n: int) -> Check:
        """The sparsest point of the curve against the densest: better, worse or within noise."""
        def check(ctx: ReportContext) -> Verdict:
            bench = ctx.spec.bench(sparse if n == self.n_small else self.large[sparse])
            pts = []
            for sfx in self.targets:
                tr = self.test_rows(ctx, bench.name, f"n{n}{sfx}")
                if len(tr) > 1:
                    pts.append((statistics.mean(r["activity"] for r in tr),
                                ctx.cell(bench.name, f"n{n}{sfx}", "id", "accuracy"), f"n{n}{sfx}"))
            if len(pts) < 2:
                return Verdict(None, "needs two targets with 2+ seeds.", reading="rsgn")
            pts.sort(key=lambda p: p[0])
            low, high = pts[0], pts[-1]
            verdict, ev, effect = diff(low[1], high[1])
            word = {True: "sparser is better", False: "sparsity costs accuracy",
                    None: "no difference beyond seed noise"}[verdict]
            return Verdict(WORD3[verdict], f"{word}: {pct(low[1])} % at {100 * low[0]:.2f} % active ({low[2]}) vs "
                                           f"{pct(high[1])} %"
                           + ("" if len(pts) == len(self.targets) else f" ({len(pts)} of {len(self.targets)} targets "
                                                                       "with 2+ seeds)") + ".",
                           effect=effect, against=f"{high[2]} ({100 * high[0]:.2f} % active)",
                           seeds=seeds_text(low[1], high[1]),
                           notes=(f"The curve: {self.epochs} epochs; the other targets raise the cap and the selection "
                                  "limit with them.",), reading="rsgn")
        return check

    def trivial_claim(self, sparse: str) -> Check:
        """The default sparse model (n_small and n_large) against the best trivial classifier on the
        held-out test set: holds when above it at every size, fails when below at every size."""
        def check(ctx: ReportContext) -> Verdict:
            runs = [(b, ctx.cell(b.name, lab, "id", "accuracy")) for b, lab in self.default_runs(ctx, sparse)]
            runs = [(b, c) for b, c in runs if c is not None]
            if not runs:
                return Verdict(None, "no records of the default model.", reading="rsgn")
            triv = [(lab, t) for lab, t in self.trivial_cells(ctx, runs[0][0]) if t is not None]
            if not triv:
                return Verdict(None, "no records of the trivial classifiers.", reading="rsgn")
            lab, best = max(triv, key=lambda p: p[1].mean)
            above = [c.mean >= best.mean for _, c in runs]
            verdict = True if all(above) else False if not any(above) else "undecided"
            if verdict is True and any(c.mean - best.mean < (0 if math.isnan(c.std) else c.std) for _, c in runs):
                verdict = "holds narrowly"  # above it by less than the seed std
            task = runs[0][0].task
            return Verdict(verdict, "; ".join(f"{c.label} {pct1(c)} %" for _, c in runs)
                           + f" (chance {100 * self.chance[task]:.1f} %).",
                           effect=", ".join(f"{100 * (c.mean - best.mean):+.1f} pp" for _, c in runs),
                           against=f"{lab} (best trivial, {100 * best.mean:.1f} %)",
                           seeds=seeds_text(*(c for _, c in runs)), reading="rsgn")
        return check

    def order_claim(self, seq: str, sparse: str) -> Check:
        """Sparse RSGN with positions learns an own task (more than 10 pp above chance)."""
        def check(ctx: ReportContext) -> Verdict:
            bench = ctx.spec.bench(seq)
            rs = ctx.cell(sparse, self.default, "id", "accuracy")
            others = [c for c in ctx.cells(seq, "accuracy") if c.split == "id"
                      and bench.variant(c.label).model not in ("rsgn", "rsgn_parity")]
            if rs is None or not others:
                return Verdict(None, "needs the sparse model and a sequence model.", reading="rsgn")
            best = max(others, key=lambda c: c.mean)
            chance = self.chance[bench.task]
            epochs = sorted({v.config["epochs"] for v in bench.variants if v.model not in ("rsgn", "rsgn_parity")})
            word = "fails (within 10 pp of chance)" if rs.mean < chance + 0.1 else "learns"
            return Verdict(rs.mean >= chance + 0.1, f"{word}: {pct1(rs)} % ({self.default}); best sequence model "
                                                     f"{bench.variant(best.label).model} [{best.label}] {pct1(best)} %.",
                           effect=f"{100 * (rs.mean - chance):+.1f} pp over chance",
                           against=f"chance ({100 * chance:.1f} %) + 10 pp", seeds=seeds_text(rs),
                           notes=(f"Own tasks: {self.epochs} epochs for RSGN against {epochs[0]}-{epochs[-1]} for the "
                                  "sequence models.",), reading="rsgn")
        return check

    def rule_claim(self, sparse: str, sfx: str) -> Check:
        """A slow rule improves accuracy: the default against the run with the rule off."""
        def check(ctx: ReportContext) -> Verdict:
            bench = ctx.spec.bench(sparse)
            on, off = (ctx.cell(sparse, self.default + x, "id", "accuracy") for x in ("", sfx))
            verdict, ev, effect = diff(on, off)
            if on is None or off is None:
                return Verdict(None, ev, reading="rsgn")
            said = {True: "", False: "worse with it: ", None: "not supported, within seed noise: "}[verdict]
            return Verdict(WORD3[verdict], f"{said}with {pct(on)} % vs without {pct(off)} %." if min(on.n, off.n) > 1 else ev,
                           effect=effect, against=f"{self.default}{sfx} (rule off)", seeds=seeds_text(on, off),
                           notes=(f"Ablations: {self.epochs} epochs, {len(bench.seeds)} seeds, one node count.",),
                           reading="rsgn")
        return check

    def steps_claim(self, sparse: str) -> Check:
        """The task's S propagation steps against one step: holds when S steps are better."""
        def check(ctx: ReportContext) -> Verdict:
            bench = ctx.spec.bench(sparse)
            s1, sd = (ctx.cell(sparse, self.default + x, "id", "accuracy") for x in (self.steps1[0], ""))
            if s1 is None or sd is None:
                return Verdict(None, "needs both runs.", reading="rsgn")
            n_steps = ctx.fits(sparse, self.default)[0]["config"]["n_steps"]  # the task's S
            verdict, ev, effect = diff(s1, sd)
            word = {True: f"S = 1 beats S = {n_steps}", False: f"S = {n_steps} beats S = 1",
                    None: f"S = 1 and S = {n_steps} are not distinguishable"}[verdict]
            notes = ["Propagation steps: the paper's resonance to a fixed point is not implemented, so S is a fixed "
                     "step count in both."]
            if bench.task == "rsgn_hierarchical":  # the earlier report's finding was on hierarchical
                notes.append("The previous model version, 256 nodes and a 10 % cap, had S = 1 ahead of S = 5 by 5 pp on "
                             "hierarchical; " + ("the finding stands with the measured-activity model" if verdict else
                                                 "that finding is replaced by this measurement") + ".")
            return Verdict({True: False, False: True, None: "undecided"}[verdict], f"{word}: {pct(s1)} % vs {pct(sd)} %.",
                           effect=effect.replace(" pp", " pp for S = 1", 1),
                           against=f"{self.default}{self.steps1[0]} (S = 1)", seeds=seeds_text(s1, sd),
                           notes=tuple(notes), reading="rsgn")
        return check

    def plasticity_claim(self, sparse: str) -> Check:
        """Pruning and sprouting both fire in every default run of a task (n_small and n_large)."""
        def check(ctx: ReportContext) -> Verdict:
            st = [s for b, lab in self.default_runs(ctx, sparse) for s in self.fit_stats(ctx, b.name, lab)]
            if not st:
                return Verdict(None, "no statistics of the default runs.", reading="rsgn")
            fired = sum(s["pruned_total"] > 0 and s["sprouted_total"] > 0 for s in st)
            verdict = True if fired == len(st) else False if not fired else "undecided"
            allst = [s for b, lab in self.default_runs(ctx) for s in self.fit_stats(ctx, b.name, lab)]
            notes = [f"Plasticity: the rule on a hand-made case (one edge's co-activation predicts low loss, another's "
                     "high loss: the first grows, the second shrinks, an edge used equally does not move) is "
                     "`tests/rsgn/test_model.py::test_three_factor_rule_grows_the_edge_that_predicts_low_loss_and_shrinks"
                     "_the_other`. Whether the pruned edges are the useless ones is not measured (the pruning ablation "
                     f"is the only accuracy evidence); counts are over {self.epochs} epochs with one structure step "
                     "per epoch, in [rsgn_rules](rsgn_rules.md)."]
            if fired < len(st):
                notes.append(_quiet_rule(allst))
            return Verdict(verdict, f"both fired in {fired} of {len(st)} runs; edges pruned per run "
                                    f"{ms([s['pruned_total'] for s in st], 1.0, 0)}.",
                           effect=f"{fired}/{len(st)} runs", against="every default run",
                           seeds=",".join(map(str, sorted({e["seed"] for b, lab in self.default_runs(ctx, sparse)
                                                           for e in ctx.fits(b.name, lab)}))),
                           notes=tuple(notes), reading="rsgn")
        return check

    # -- cost -----------------------------------------------------------------------------------------
    @staticmethod
    def cost_slopes(rows: list[dict[str, Any]], key: str = "step_s_repeats") -> list[tuple[float, float, float]]:
        """Per segment between consecutive sizes: the log-log slope of ``key``'s repeated
        measurements against N with its 95 % Welch interval (``_speed.segment_slope_intervals``);
        records from before per-repeat times were kept give the median's slope and no interval."""
        if all(r.get(key) for r in rows):
            return _speed.segment_slope_intervals([r["n_nodes"] for r in rows], [r[key] for r in rows])
        seg, _ = _speed.segment_slopes([r["n_nodes"] for r in rows], [r["step_s"] for r in rows])
        return [(s, math.nan, math.nan) for s in seg]

    @staticmethod
    def linear_cost_claim(ctx: ReportContext) -> Verdict:
        """O(n·k) per training step: log-log slope <= 1.1 on the two largest segments. Holds when
        both segments' 95 % intervals lie at or below 1.1, does not hold when one lies above it,
        undecided otherwise (or without repeats to give an interval: then the point slopes decide)."""
        e = ctx.measure("cost")
        rs = [r for r in e["rows"] if r["model"] == "rsgn"] if e is not None else []
        if len(rs) < 2:
            return Verdict(None, "no cost measurement.", reading="rsgn")
        raw = RSGNReport.cost_slopes(rs)
        per_edge = RSGNReport.cost_slopes(rs, "s_per_edge_repeats") if all(r.get("s_per_edge_repeats") for r in rs) else []
        _, overall = _speed.segment_slopes([r["n_nodes"] for r in rs], [r["step_s"] for r in rs])

        def text(v: tuple[float, float, float]) -> str:
            return f"{v[0]:.2f}" if math.isnan(v[1]) else f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"

        last = raw[-2:]
        if any(math.isnan(v[1]) for v in last):
            verdict: bool | str = max(v[0] for v in last) <= 1.1
        elif max(v[2] for v in last) <= 1.1:
            verdict = True
        elif any(v[1] > 1.1 for v in last):
            verdict = False
        else:
            verdict = "undecided"
        reps = rs[0].get("repeats", 0)
        note = (f"Cost: ignition's nearest-spark search is O(N log T) per sample (KD-tree), the structure step is "
                f"amortised over {e['params']['structure_every']} steps, activity was calibrated on random inputs "
                f"(table in [rsgn_cost](rsgn_cost.md)), one machine, one thread; intervals: 95 % Welch t on the log "
                f"times of the {reps} timed steps at each size.")
        edge_text = (f"; seconds per edge touched against N (0 = cost proportional to the edges) "
                     f"{', '.join(text(v) for v in per_edge)}" if per_edge else "")
        return Verdict(verdict,
                       f"slope of a full step against N (T = N / 8) per segment {', '.join(text(v) for v in raw)}"
                       f"{edge_text} (activity {100 * rs[0]['activity']:.2f} % at the smallest size, "
                       f"{100 * rs[-1]['activity']:.2f} % at the largest).",
                       effect=f"slopes {', '.join(text(v) for v in last)}; overall {overall:.2f}",
                       against="slope 1.1 (linear)", seeds=f"{reps} timed steps per size", notes=(note,), reading="rsgn")

    @staticmethod
    def mamba_claim(ctx: ReportContext) -> Verdict:
        """A sparse RSGN step is faster than Mamba's at the largest size both were measured at."""
        e = ctx.measure("cost")
        if e is None:
            return Verdict(None, "no cost measurement.", reading="rsgn")
        mb = {r["n_nodes"]: r["step_s"] for r in e["rows"] if r["model"] == "mamba"}
        both = [r for r in e["rows"] if r["model"] == "rsgn" and r["n_nodes"] in mb]
        if not both:
            return Verdict(None, "needs both models at one size.", reading="rsgn")
        big = both[-1]
        return Verdict(big["step_s"] < mb[big["n_nodes"]],
                       f"N = {big['n_nodes']:,}, T = {big['seq_len']:,}: {big['step_s']:.1f} s per step, Mamba "
                       f"{mb[big['n_nodes']]:.1f} s.",
                       effect=f"{mb[big['n_nodes']] / big['step_s']:.1f}x (Mamba's time / RSGN's)", against="Mamba",
                       seeds="one run",
                       notes=("Mamba here is `mambapy`'s pure-PyTorch parallel scan on a CPU (not the fused CUDA kernel), "
                              "with 41k parameters that do not grow with N, while the RSGN's grow with N; neither was "
                              "trained to an accuracy at these sizes.",), reading="rsgn")

    @staticmethod
    def quadratic_cost_claim(ctx: ReportContext) -> Verdict:
        """The author's dense model: slope >= 1.8 on the largest segment."""
        e = ctx.measure("cost")
        par = [(r["n_nodes"], r["step_s"]) for r in e["rows"] if r["model"] == "rsgn_parity"] if e is not None else []
        if len(par) < 2:
            return Verdict(None, "no cost measurement.", reading="rsgn_parity")
        seg, _ = _speed.segment_slopes([a for a, _ in par], [b for _, b in par])
        return Verdict(seg[-1] >= 1.8, f"slopes {', '.join(f'{s:.2f}' for s in seg)} per segment, up to {par[-1][0]:,} "
                                       "nodes (small sizes are dominated by fixed costs).",
                       effect=f"slope {seg[-1]:.2f}", against="slope 1.8", seeds="one run",
                       notes=(f"The author's model: its O(N²) memory stopped it at {par[-1][0]:,} nodes here; one "
                              "machine, one thread.",), reading="rsgn_parity")

    @staticmethod
    def graph_claim(ctx: ReportContext) -> Verdict:
        """The exact kNN build at the largest size: <= 1/20 of the brute-force time, identical lists."""
        g = ctx.measure("graph_build")
        if g is None:
            return Verdict(None, "no graph-build measurement.", reading="rsgn")
        big = max(g["rows"], key=lambda r: r["n_nodes"])
        return Verdict(big["ratio"] <= 1 / 20 and big["identical"],
                       f"{big['n_nodes']:,} nodes: {big['kdtree_s']:.2f} s vs {big['brute_s']:.1f} s, neighbour lists "
                       f"{'identical' if big['identical'] else 'differ'}.",
                       effect=ratio_text(big["ratio"]), against="the brute-force O(N²) build", seeds="one run",
                       notes=("Graph build: a 3-D ball (KD-trees degrade with dimension; for d >~ 20 the Lorentz inner "
                              "product turns the query into a maximum inner product search, e.g. FAISS, which this "
                              "package does not use).",), reading="rsgn")


def _quiet_rule(st: list[dict[str, Any]]) -> str:
    """Where pruning never fired: how much smaller the Hebbian updates were than where it did
    (mean update norm per step, from the fits' statistics)."""
    fired = [s["hebbian_update_mean"] for s in st if s["pruned_total"] > 0 and "hebbian_update_mean" in s]
    quiet = [s["hebbian_update_mean"] for s in st if s["pruned_total"] == 0 and "hebbian_update_mean" in s]
    if not fired or not quiet:
        return ""
    return (f"Where nothing was pruned, the Hebbian update per step was "
            f"{statistics.mean(fired) / statistics.mean(quiet):.1f}x smaller on average than where it was, so no "
            "affinity fell to the prune threshold within the fit.")
