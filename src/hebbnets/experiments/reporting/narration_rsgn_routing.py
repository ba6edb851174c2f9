"""The rsgn report's routing page (``reports/rsgn_routing.md``): the sparse model at the author's
budget, the routing designs tried, and where the gradient goes step by step (issue 30).

``specs/rsgn.py`` passes the bench names in one ``RoutingReport``; its methods are the page's
``Custom`` sections and the checks of the claims it adds to the report's ``Verdicts``.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .narration_rsgn import diff, pct, pct1
from .queries import seeds_text, table
from .sections import Cell, Claim, ReportContext, Verdict

Check = Callable[[ReportContext], Verdict]
#: the activity bound of the goal (measured before any cap, mean over the propagation steps)
ACTIVITY_LIMIT = 0.02
#: the per-step measures of the gradient-flow table: (record key, column name, scale, digits)
FLOW = (("active", "active %", 100.0, 2), ("grad_state", "state gradient per sample", 1.0, -2),
        ("grad_rows", "rows with gradient %", 100.0, 0), ("readout_share", "readout share %", 100.0, 1),
        ("gate_slope", "gate slope g(1-g)/T", 1.0, 2), ("cut", "candidates cut %", 100.0, 1))


def _mean(values: list[float]) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.mean(vals) if vals else math.nan


def _num(v: float, scale: float, digits: int) -> str:
    """``scale * v`` with ``digits`` decimals; negative ``digits``: ``-digits`` in scientific notation."""
    if math.isnan(v):
        return "—"
    return f"{scale * v:.{-digits}e}" if digits < 0 else f"{scale * v:.{digits}f}"


@dataclass(frozen=True, eq=False)
class RoutingReport:
    """Attributes: short / chance / trivial_of as in ``RSGNReport``; budget: the equal-budget
    benches (one per task); screen: the design-screen benches (same task order); dense:
    ``{task: (bench, label)}`` of the dense model at the same budget; designs: ``(suffix,
    meaning)`` of the routing designs (the first is the default model); n_small: the node count."""

    short: Mapping[str, str]
    chance: Mapping[str, float]
    trivial_of: Mapping[tuple[str, str | None], str]
    budget: tuple[str, ...]
    screen: tuple[str, ...]
    dense: Mapping[str, tuple[str, str]]
    designs: tuple[tuple[str, str], ...]
    n_small: int

    @property
    def base(self) -> str:
        return f"n{self.n_small}-e50"

    def _trivial(self, ctx: ReportContext, bench: Any) -> list[tuple[str, Cell]]:
        name = self.trivial_of[(bench.task, bench.params.get("split"))]
        cells = [(v.label, ctx.cell(name, v.label, "id", "accuracy")) for v in ctx.spec.bench(name).variants]
        return [(lab, c) for lab, c in cells if c is not None]

    @staticmethod
    def _rows(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
        return [r for e in ctx.fits(bench, label) for r in e["rows"] if r["split"] == "id" and r["metric"] == "accuracy"]

    @staticmethod
    def _flows(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
        return [e["stats"]["rsgn_gradient_flow"] for e in ctx.fits(bench, label) if e["stats"].get("rsgn_gradient_flow")]

    def _activity(self, ctx: ReportContext, bench: str, label: str) -> float:
        return _mean([r.get("activity") for r in self._rows(ctx, bench, label)])

    # == figure options ===========================================================================
    def curve_panels(self, budget: tuple[Any, ...]) -> tuple[tuple[str, str, str, float, Any], ...]:
        """``rsgn_budget_curves`` panels of the equal-budget benches: (task, bench, trivial bench,
        chance, the dense model's (bench, label) or None)."""
        return tuple((self.short[b.task], b.name, self.trivial_of[(b.task, b.params.get("split"))], self.chance[b.task],
                      self.dense.get(b.task)) for b in budget)

    def flow_runs(self, budget: tuple[Any, ...], screen: tuple[Any, ...]) -> tuple[Any, ...]:
        """``rsgn_gradient_flow`` runs: per task and S (the task's, then 1) the equal-budget default,
        else the screen's."""
        return tuple((self.short[b.task], ((b.name, f"{self.base}{x}"), (c.name, f"n{self.n_small}{x}")))
                     for b, c in zip(budget, screen) for x in ("", "-steps1"))

    # == text ===================================================================================
    def method(self, ctx: ReportContext) -> list[str]:
        designs = "; ".join(f"`{sfx or 'default'}`: {what}" for sfx, what in self.designs)
        return [f"**Equal budget**: the sparse RSGN at N = {self.n_small:,} under the author's protocol, the one the "
                "dense model trained with (50 epochs, AdamW lr 1e-3 wd 1e-4, cosine schedule, gradient norm clipped at "
                "1.0, the final weights kept, no validation selection), with S = the task's steps and S = 1; on the "
                "paper tasks on the author's 80/20 split (where the dense model's 50-epoch numbers are), on tree and "
                "xor-range on their own split. Tree with positions (without them every sample is the same bag of "
                "tokens), xor-range without (its class `(s + e) mod 4` is symmetric in the two patterns, so a "
                "nonlinear bag of tokens can solve it; the reported runs with positions sat at chance). *final* = "
                "the last epoch's model on the test split; *best epoch* = the best of the per-epoch test scores "
                "(selected on the test set, shown as the paper reports it). **Activity** = fraction of nodes firing "
                "per propagation step before the cap (test split, mean over steps).", "",
                f"**Designs** (6 epochs, the sparse benches' protocol, one change each): {designs}.", ""]

    # == the equal-budget table and the per-step flow ============================================
    def budget_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for name in self.budget:
            bench = ctx.spec.bench(name)
            task = self.short[bench.task]
            for lab, c in self._trivial(ctx, bench):
                rows.append([task, lab, "—", str(c.n), pct(c), "—", "—"])
            if bench.task in self.dense:
                d_bench, d_label = self.dense[bench.task]
                for metric, what in (("accuracy", "final"), ("best_epoch_accuracy", "best epoch")):
                    c = ctx.cell(d_bench, d_label, "id", metric)
                    if c is not None and what == "final":
                        best = ctx.cell(d_bench, d_label, "id", "best_epoch_accuracy")
                        rows.append([task, f"dense `{d_label}`", "—", str(c.n), pct(c), pct(best), "—"])
            for v in bench.variants:
                c = ctx.cell(name, v.label, "id", "accuracy")
                if c is None:
                    continue
                best = ctx.cell(name, v.label, "id", "best_epoch_accuracy")
                fits = ctx.fits(name, v.label)
                rows.append([task, v.label, str(fits[0]["config"]["n_steps"]), str(c.n), pct(c), pct(best),
                             _num(self._activity(ctx, name, v.label), 100.0, 2)])
        if not rows:
            return ["No equal-budget records yet.", ""]
        return table(["task", "model", "S", "seeds", "final test accuracy %", "best epoch %", "activity before cap %"],
                     rows)

    def _flow_source(self, ctx: ReportContext, i: int, steps1: bool = False) -> tuple[str, str] | None:
        """The run whose gradient flow a task's row shows: the equal-budget default, else the screen's."""
        sfx = "-steps1" if steps1 else ""
        for bench, label in ((self.budget[i], self.base + sfx), (self.screen[i], f"n{self.n_small}{sfx}")):
            if self._flows(ctx, bench, label):
                return bench, label
        return None

    def flow_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for i, name in enumerate(self.budget):
            task = self.short[ctx.spec.bench(name).task]
            for steps1 in (False, True):
                src = self._flow_source(ctx, i, steps1)
                if src is None:
                    continue
                flows = self._flows(ctx, *src)
                n_steps = flows[0]["steps"]
                for s in range(n_steps):
                    cells = [_num(_mean([f["at_model"][key][s] for f in flows]), sc, dg) for key, _, sc, dg in FLOW]
                    probe = _num(_mean([f["probe"][s] for f in flows]), 100.0, 1)
                    rows.append([task if s == 0 else "", f"`{src[1]}` ({len(flows)})" if s == 0 else "",
                                 "ignition" if s == 0 else str(s), *cells, probe])
        if not rows:
            return ["No gradient-flow records yet.", ""]
        return ["Per propagation step, at the fit's final temperature (512 test samples, mean over the seeds in "
                "brackets): the fraction of (sample, node) pairs in the readout, the norm of the loss gradient reaching "
                "the step's node states (per sample), the fraction of the step's active rows it reaches, the step's part of the "
                "activity-weighted readout, the soft threshold's slope over the nodes that fired, the fraction of "
                "candidates (receivers and active nodes) the floor, inhibition and cap set to exactly 0, and a logistic "
                "probe's test accuracy on the step's pooled state (the class information the step holds).", "",
                *table(["task", "run (seeds)", "step", *(name for _, name, _, _ in FLOW), "probe accuracy %"], rows)]

    def findings(self, ctx: ReportContext) -> list[str]:
        """Per task, from the flow records above: how much the state gradient shrinks from ignition
        to the last step, the probe accuracy at ignition, at its best step and at the last step, and
        the last steps' share of the readout; then, from the screen, what the per-step readout does
        to the gap between S = the task's and S = 1."""
        out = []
        for i, name in enumerate(self.budget):
            task = self.short[ctx.spec.bench(name).task]
            src = self._flow_source(ctx, i)
            if src is None:
                continue
            flows = self._flows(ctx, *src)
            S = flows[0]["steps"] - 1
            grad = [_mean([f["at_model"]["grad_state"][s] for f in flows]) for s in range(S + 1)]
            probe = [_mean([f["probe"][s] for f in flows]) for s in range(S + 1)]
            share = _mean([sum(f["at_model"]["readout_share"][1:]) for f in flows])
            best = max(range(S + 1), key=lambda s: probe[s])
            out.append(f"- **{task}** (`{src[1]}`, {len(flows)} seed{'s' if len(flows) > 1 else ''}, S = {S}): the gradient "
                       f"reaching the node states falls {grad[0] / grad[S]:.0f}x from ignition to step {S}; the probe reads "
                       f"{100 * probe[0]:.1f} % at ignition, {100 * probe[best]:.1f} % at its best step ({best}) and "
                       f"{100 * probe[S]:.1f} % at step {S}, while steps 1-{S} hold {100 * share:.0f} % of the readout.")
        gaps = []
        for name in self.screen:
            bench = ctx.spec.bench(name)
            row = []
            for sfx in ("", "-readsteps"):
                lab = f"n{self.n_small}{sfx}"
                sd, s1 = ctx.cell(name, lab, "id", "accuracy"), ctx.cell(name, lab + "-steps1", "id", "accuracy")
                if sd is not None and s1 is not None:
                    row.append(f"{100 * (sd.mean - s1.mean):+.1f} pp {'default' if not sfx else 'per-step readout'}")
            if row:
                gaps.append(f"{self.short[bench.task]} {' / '.join(row)}")
        if gaps:
            out.append("- S = the task's minus S = 1 at 6 epochs (design screen): " + "; ".join(gaps) + ".")
        if not out:
            return []
        return ["What the measurements show (computed from the records above):", "", *out, ""]

    def temperature_table(self, ctx: ReportContext) -> list[str]:
        """What the annealed temperature does: gate slope and state gradient at the schedule's start and end."""
        rows = []
        for i, name in enumerate(self.budget):
            src = self._flow_source(ctx, i)
            if src is None:
                continue
            flows = self._flows(ctx, *src)
            for t in sorted({t for f in flows for t in f["at"]}, key=float):
                at = [f["at"][t] for f in flows if t in f["at"]]
                slope = _mean([_mean(a["gate_slope"][1:]) for a in at])
                grad = _mean([_mean(a["grad_state"][1:]) for a in at])
                share = _mean([sum(a["readout_share"][1:]) for a in at])
                rows.append([self.short[ctx.spec.bench(name).task], f"`{src[1]}`", t, _num(slope, 1.0, 2),
                             _num(grad, 1.0, -2), _num(share, 100.0, 1), _num(_mean([_mean(a["cut"][1:]) for a in at]), 100.0, 1)])
        if not rows:
            return []
        return ["The same trained models with the soft threshold's temperature set to the schedule's start and end "
                "(weights and graph unchanged; means over the propagation steps):", "",
                *table(["task", "run", "temperature", "gate slope", "state gradient per sample", "readout share of steps >= 1 %",
                        "candidates cut %"], rows)]

    def screen_table(self, ctx: ReportContext) -> list[str]:
        rows = []
        for name in self.screen:
            bench = ctx.spec.bench(name)
            task = self.short[bench.task]
            labels = [v.label for v in bench.variants]
            for v in bench.variants:
                if v.label.endswith("-steps1"):
                    continue
                c = ctx.cell(name, v.label, "id", "accuracy")
                if c is None:
                    continue
                one = ctx.cell(name, v.label + "-steps1", "id", "accuracy") if v.label + "-steps1" in labels else None
                verdict, _, effect = diff(c, one)
                said = "—" if one is None else (effect if one.n > 1 and c.n > 1 else
                                                f"{100 * (c.mean - one.mean):+.1f} pp (1 seed)")
                rows.append([task, v.label, pct1(c), pct1(one), said, _num(self._activity(ctx, name, v.label), 100.0, 2)])
        if not rows:
            return ["No design-screen records yet.", ""]
        return table(["task", "design", "S = task %", "S = 1 %", "S = task minus S = 1", "activity before cap %"], rows)

    # == claims ===================================================================================
    def claims(self, budget: tuple[Any, ...], screen: tuple[Any, ...]) -> tuple[Claim, ...]:
        """The claim lines this page adds to the report's verdicts: the issue's goal per task at the
        author's budget, and per own task whether a routing design makes S > 1 help."""
        n = f"N = {self.n_small:,}"
        out = []
        for b in budget:
            what = ("sparse RSGN (a design tried) is within 2 pp of the dense model" if b.task in self.dense else
                    "S > 1 beats S = 1 by more than 2 seed std and sparse RSGN beats every trivial classifier (a design tried)")
            out.append(Claim(f"At the author's budget and <= 2 % activity, {what} ({self.short[b.task]}, {n})",
                             self.goal_claim(b.name)))
        for b in screen:
            if b.task not in self.dense:
                out.append(Claim(f"A routing design makes S > 1 beat S = 1 ({self.short[b.task]}, 6 epochs)",
                                 self.design_claim(b.name)))
        return tuple(out)

    def goal_claim(self, bench: str) -> Check:
        """The goal at the author's budget: paper tasks, within 2 pp of the dense model; own tasks, S
        > 1 ahead of S = 1 (the same design) beyond 2 seed std and above every trivial classifier;
        both at <= 2 % activity before any cap. Checked for every design the bench runs; it holds when
        one design meets it (the evidence names each)."""
        def one(ctx: ReportContext, task: str, base: str) -> Verdict:
            parts = [self.dense_claim(bench, base)] if task in self.dense else \
                [self.steps_claim(bench, base), self.trivial_claim(bench, base)]
            verdicts = [c(ctx) for c in parts]
            values = [v.verdict for v in verdicts]
            if any(v is None for v in values):
                return Verdict(None, " ".join(v.evidence for v in verdicts if v.verdict is None), reading="rsgn")
            verdict = True if all(v is True for v in values) else False if any(v is False for v in values) else "undecided"
            return Verdict(verdict, " ".join(v.evidence for v in verdicts if v.evidence),
                           effect="; ".join(v.effect for v in verdicts),
                           against="; ".join(v.against for v in verdicts), seeds=verdicts[0].seeds, reading="rsgn")

        def check(ctx: ReportContext) -> Verdict:
            b = ctx.spec.bench(bench)
            designs = [v.label for v in b.variants if not v.label.endswith("-steps1")]
            results = [(lab, one(ctx, b.task, lab)) for lab in designs]
            measured = [(lab, v) for lab, v in results if v.verdict is not None]
            if not measured:
                return results[0][1]
            values = [v.verdict for _, v in measured]
            verdict = True if True in values else False if all(v is False for v in values) else "undecided"
            name = lambda lab: lab.removeprefix(self.base) or "default"  # noqa: E731
            return Verdict(verdict, " ".join(f"`{name(lab)}`: {v.evidence}" for lab, v in measured),
                           effect=" / ".join(f"{name(lab)} {v.effect}" for lab, v in measured),
                           against=measured[0][1].against, seeds=measured[0][1].seeds, reading="rsgn")
        return check

    def _activity_note(self, ctx: ReportContext, bench: str, label: str) -> tuple[bool, str]:
        a = self._activity(ctx, bench, label)
        return (not math.isnan(a) and a <= ACTIVITY_LIMIT), f"activity {_num(a, 100.0, 2)} % before the cap"

    def dense_claim(self, bench: str, base: str | None = None) -> Check:
        """Equal budget, paper task: the sparse model within 2 pp of the dense model's final accuracy."""
        base = base or self.base

        def check(ctx: ReportContext) -> Verdict:
            task = ctx.spec.bench(bench).task
            sp = ctx.cell(bench, base, "id", "accuracy")
            dense = ctx.cell(*self.dense[task], "id", "accuracy")
            if sp is None or dense is None:
                return Verdict(None, "needs the sparse and the dense model at the author's budget.", reading="rsgn")
            ok, act = self._activity_note(ctx, bench, base)
            gap = 100 * (sp.mean - dense.mean)
            return Verdict(gap >= -2.0 and ok, f"{pct(sp)} % vs dense {pct(dense)} % ({act}).",
                           effect=f"{gap:+.1f} pp", against=f"dense `{self.dense[task][1]}` - 2 pp",
                           seeds=seeds_text(sp, dense), reading="rsgn")
        return check

    def steps_claim(self, bench: str, base: str | None = None) -> Check:
        """Equal budget: S = the task's beats S = 1 by more than two pooled seed std."""
        base = base or self.base

        def check(ctx: ReportContext) -> Verdict:
            sd, s1 = (ctx.cell(bench, base + x, "id", "accuracy") for x in ("", "-steps1"))
            if sd is None or s1 is None:
                return Verdict(None, "needs both runs at the author's budget.", reading="rsgn")
            verdict, ev, effect = diff(sd, s1)
            ok, act = self._activity_note(ctx, bench, base)
            word = {True: "S > 1 ahead" if ok else f"S > 1 ahead but {act}", False: "S = 1 better",
                    None: "S within seed noise"}[verdict] if min(sd.n, s1.n) >= 2 else "one seed"
            # the claim is "by more than 2 seed std": within noise it does not hold; fewer than 2
            # seeds of either cannot decide
            decided = min(sd.n, s1.n) >= 2
            return Verdict(bool(verdict and ok) if decided else "undecided",
                           f"{word}: {pct(sd)} vs {pct(s1)} % ({act}).", effect=effect, against="S = 1",
                           seeds=seeds_text(sd, s1), reading="rsgn")
        return check

    def trivial_claim(self, bench: str, base: str | None = None) -> Check:
        """Equal budget: the model ``base`` (default: the default design) above every trivial classifier
        (by more than its seed std)."""
        base = base or self.base

        def check(ctx: ReportContext) -> Verdict:
            b = ctx.spec.bench(bench)
            sp = ctx.cell(bench, base, "id", "accuracy")
            triv = self._trivial(ctx, b)
            if sp is None or not triv:
                return Verdict(None, "needs the sparse model and the trivial classifiers.", reading="rsgn")
            lab, best = max(triv, key=lambda p: p[1].mean)
            margin = sp.mean - best.mean
            noise = 0.0 if math.isnan(sp.std) else sp.std
            verdict = False if margin <= 0 else "undecided" if sp.n < 2 else True if margin > noise else "holds narrowly"
            ok, act = self._activity_note(ctx, bench, base)
            return Verdict(verdict, "", effect=f"{100 * margin:+.1f} pp", against=f"{lab} {100 * best.mean:.1f} %",
                           seeds=seeds_text(sp), reading="rsgn")
        return check

    def design_claim(self, screen: str) -> Check:
        """Screen: some routing design makes S = the task's beat S = 1 by more than two seed std."""
        def check(ctx: ReportContext) -> Verdict:
            bench = ctx.spec.bench(screen)
            found = []
            for sfx, _ in self.designs:
                lab = f"n{self.n_small}{sfx}"
                sd, s1 = ctx.cell(screen, lab, "id", "accuracy"), ctx.cell(screen, lab + "-steps1", "id", "accuracy")
                if sd is not None and s1 is not None:
                    found.append((lab, sd, s1, diff(sd, s1)[0]))
            if not found:
                return Verdict(None, "no design-screen records yet.", reading="rsgn")
            wins = [f for f in found if f[3] is True]
            text = "; ".join(f"{lab} {pct1(sd)} vs {pct1(s1)}" for lab, sd, s1, _ in found)
            if wins:
                return Verdict(True, f"S > 1 ahead beyond 2 seed std with {', '.join(w[0] for w in wins)}: {text}.",
                               against="the same design with S = 1", seeds=seeds_text(*(w[1] for w in wins)),
                               reading="rsgn")
            undecided = any(min(sd.n, s1.n) < 2 for _, sd, s1, _ in found)  # within noise: does not hold
            return Verdict("undecided" if undecided else False,
                           ("no design ahead beyond 2 seed std (some have 1 seed): " if undecided else
                            "S = 1 as good or better with every design: ") + text + ".",
                           against="the same design with S = 1", seeds=seeds_text(*(f[1] for f in found)),
                           notes=(f"Designs screened at 6 epochs on {self.short[bench.task]}.",), reading="rsgn")
        return check


__all__ = ["ACTIVITY_LIMIT", "FLOW", "RoutingReport"]
