"""The vn_dynamics report's prose and claim checks (``specs/vn_dynamics.py`` lays them out).

The spec names who is who on each bench (a ``Roles``: the VN readings, the baselines the paper
names, the model-free references, the trivial baselines) and passes it to the factories here; a
factory returns a claim check ``(ctx) -> Verdict`` or a ``Custom`` section ``(ctx) -> list[str]``.
Every number is read from the records (``ctx``), the spec's benches or the task modules' defaults.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from .queries import (MIN_CONTROL_SEEDS, control_outcome, control_tests, control_tests_text, errors, located,
                      log_ratio_interval, ratio_effect, seeds_text)
from .sections import Cell, ReportContext, Verdict, capped_fits, fmt, grid_edges, ood_id_ratio, report_pages, unrun_line


@dataclass(frozen=True)
class Roles:
    """Who is who on a bench: ``vn`` the VN readings, ``paper`` the baselines the VN paper names,
    ``references`` model-free rows (shown, never a baseline), ``trivial`` baselines that need no
    learning (counted as baselines, never as a "learned model"), ``controls`` same-structure
    controls of a reading (``{label: what it replaces}``; shown, never a baseline: they only
    decide whether a reading's win needs VN's mechanism)."""

    vn: tuple[str, ...]
    paper: tuple[str, ...]
    references: tuple[str, ...] = ()
    trivial: tuple[str, ...] = ()
    controls: dict[str, str] = field(default_factory=dict)


# -- helpers over the records -----------------------------------------------------------------------
def splits(ctx: ReportContext, bench: str, metric: str) -> list[str]:
    return list(dict.fromkeys(c.split for c in ctx.cells(bench, metric)))


def best(ctx: ReportContext, bench: str, split: str, metric: str, among: tuple[str, ...]) -> Cell | None:
    """The cell with the lowest mean error among ``among`` on ``split`` (None if none)."""
    cells = [c for c in ctx.cells(bench, metric) if c.split == split and c.label in among]
    return min(cells, key=lambda c: c.mean) if cells else None


def baselines(ctx: ReportContext, bench: str, roles: Roles) -> tuple[str, ...]:
    """Every label that is neither a VN reading, a reference nor a control (the trivial baselines included)."""
    return tuple(lab for lab in ctx.labels(bench)
                 if lab not in roles.vn and lab not in roles.references and lab not in roles.controls)


def learned(ctx: ReportContext, bench: str, roles: Roles) -> tuple[str, ...]:
    return tuple(lab for lab in ctx.labels(bench)
                 if lab not in roles.trivial and lab not in roles.references and lab not in roles.controls)


def ratio(a: Any, b: Any) -> float:
    return math.nan if a is None or b is None or b.mean <= 0 else a.mean / b.mean


def _span(lo: float, hi: float) -> str:
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}–{fmt(hi)}"


def _page(ctx: ReportContext, page: str, anchor: str = "") -> str:
    """A markdown link to further page ``page`` of this report (at this scale)."""
    names = report_pages(ctx.spec, ctx.scale)
    name = names[1 + list(ctx.spec.pages).index(page)]
    return f"[{name[:-3]}]({name}{'#' + anchor if anchor else ''})"


def _stop(bench: Any) -> dict[str, Any]:
    """The stopping rule every trained model of ``bench`` shares (the first tuning base with one)."""
    return next(dict(s.base) for s in bench.tuning.values() if "epochs" in s.base)


def _points(bench: Any) -> int:
    return next(iter(bench.tuning.values())).n_points


def _task_defaults(task: str) -> dict[str, Any]:
    """A task's quick-scale parameters (its module's public ``DEFAULTS``)."""
    from ...tasks import mnist_comp, nbody

    return dict({"nbody": nbody, "mnist_comp": mnist_comp}[task].DEFAULTS["quick"])


# -- nbody: does the task test composition? -------------------------------------------------------
def trivial_ratios(ctx: ReportContext, bench: str, roles: Roles, metric: str) -> dict[str, float]:
    """Per split: the best trivial baseline's error / the best learned model's."""
    return {s: ratio(best(ctx, bench, s, metric, roles.trivial), best(ctx, bench, s, metric, learned(ctx, bench, roles)))
            for s in splits(ctx, bench, metric)}


def trivial_table(bench: str, roles: Roles) -> Callable[[ReportContext], list[str]]:
    """Per split and metric: the references and trivial baselines next to the best learned model."""
    def render(ctx: ReportContext) -> list[str]:
        if not set(roles.trivial) <= set(ctx.labels(bench)) or not learned(ctx, bench, roles):
            return ["No records of the trivial baselines and the learned models yet.", ""]
        lines = []
        shown = (*roles.references, *roles.trivial)
        for metric, what in (("mse", "next-step MSE (target units)"), ("rollout_mse", "5-step rollout MSE (state units)")):
            lines += [f"{what}, mean over seeds:", "",
                      "| split | " + " | ".join(shown) + " | best learned model | best trivial / best learned |",
                      "|---|" + "---|" * (len(shown) + 2)]
            for s in splits(ctx, bench, metric):
                cells = [ctx.cell(bench, lab, s, metric) for lab in shown]
                top = best(ctx, bench, s, metric, learned(ctx, bench, roles))
                trivial = best(ctx, bench, s, metric, roles.trivial)
                lines.append(f"| {s} | " + " | ".join(fmt(c.mean) if c else "—" for c in cells)
                             + f" | {top.label} {fmt(top.mean)} | {fmt(ratio(trivial, top))} |")
            lines.append("")
        return lines
    return render


def headline_note(ctx: ReportContext, bench: str, roles: Roles) -> str:
    """Why the next-step MSE is the headline metric: both metrics' trivial-baseline margins."""
    nxt, roll = trivial_ratios(ctx, bench, roles, "mse"), trivial_ratios(ctx, bench, roles, "rollout_mse")
    if not nxt or not roll:
        return ""
    ood = [s for s in nxt if s != "id"]
    lo_n, hi_n = min(nxt[s] for s in ood), max(nxt[s] for s in ood)
    lo_r, hi_r = min(roll[s] for s in ood), max(roll[s] for s in ood)
    margins = (f"On the OOD splits the best trivial baseline's error is {_span(lo_n, hi_n)}x the best learned "
               f"model's on the next step and {_span(lo_r, hi_r)}x on the 5-step rollout")
    if lo_n >= lo_r:
        horizon = _task_defaults(ctx.spec.bench(bench).task)
        why = (": the next step separates composition from extrapolation more clearly. Fed back its own predictions "
               f"for {fmt(horizon['rollout_steps'] * horizon['dt'])} time units, every model drifts from the chaotic "
               "true trajectory, so the rollout adds how stably a model's errors compound to how well it composes the "
               "laws; every table has it too.")
    else:
        why = (". The rollout separates the learned models from the extrapolators more clearly here; the next step "
               "stays the tuning metric, and every table has both.")
    return f"**Headline metric: the next-step MSE** (`task.metric`; every model is tuned on it). {margins}{why}"


def composition_claim(bench: str, roles: Roles, metric: str, factor: float) -> Callable[[ReportContext], Verdict]:
    """On every split the best trivial baseline's error is at least ``factor`` x the best learned model's."""
    def check(ctx: ReportContext) -> Verdict:
        r = trivial_ratios(ctx, bench, roles, metric)
        if not r or any(math.isnan(v) for v in r.values()):
            return Verdict(None, "needs records of the trivial baselines and the learned models.")
        low = min(r, key=r.get)
        trivial = best(ctx, bench, low, metric, roles.trivial)
        top = best(ctx, bench, low, metric, learned(ctx, bench, roles))
        effect, _, _ = ratio_effect(trivial, top)
        weak = [s for s, v in r.items() if v < factor]
        notes = [headline_note(ctx, bench, roles)]
        if weak:
            notes.append(f"On {', '.join(weak)} a trivial baseline comes within {factor:g}x of the best learned model "
                         f"on the `{metric}`: there it measures window extrapolation as much as composition, and a "
                         "model's result on it is weak evidence of composing the laws.")
        return Verdict(not weak, "best trivial baseline / best learned model: "
                       + ", ".join(f"{s} {fmt(v)}" for s, v in r.items()) + ".",
                       effect=f"{effect} ({low}, the smallest)", against="the best learned model of each split",
                       seeds=seeds_text(trivial, top), notes=tuple(notes))
    return check


# -- the paper's claim and the ratios --------------------------------------------------------------
def ratio_table(bench: str, roles: Roles, metrics: tuple[str, ...]) -> Callable[[ReportContext], list[str]]:
    """Per VN reading and split: its error / the best baseline's, and / the best baseline the paper names."""
    def render(ctx: ReportContext) -> list[str]:
        readings = [lab for lab in roles.vn if lab in ctx.labels(bench)]
        if not readings or not baselines(ctx, bench, roles):
            return []
        lines = []
        for metric in metrics:
            ss = splits(ctx, bench, metric)
            if not ss:
                continue
            lines += [f"`{metric}`: VN reading's error / best baseline's (which) | / best of the paper's baselines "
                      f"({', '.join(roles.paper)}); < 1: the VN reading is better", "",
                      "| reading | " + " | ".join(ss) + " |", "|---|" + "---|" * len(ss)]
            paper = tuple(p for p in roles.paper if p in ctx.labels(bench))
            for lab in readings:
                parts = []
                for s in ss:
                    mine = ctx.cell(bench, lab, s, metric)
                    top, named = best(ctx, bench, s, metric, baselines(ctx, bench, roles)), best(ctx, bench, s, metric, paper)
                    parts.append(f"{fmt(ratio(mine, top))} ({top.label if top else '—'}) · "
                                 f"{fmt(ratio(mine, named))} ({named.label if named else '—'})")
                lines.append(f"| {lab} | " + " | ".join(parts) + " |")
            lines.append("")
        return lines
    return render


def mechanism_claim(bench: str, reading: str, roles: Roles, metric: str) -> Callable[[ReportContext], Verdict]:
    """Whether ``reading``'s wins need VN's mechanism (issue 29), on the OOD splits it wins: where its
    error is below the best baseline's beyond the 95 % interval of their ratio (Welch's t on log
    errors; a mean a hair below is not a win to credit). Each same-structure control (``roles.controls``) against
    the reading there, with the 95 % interval and Welch test on log errors. Holds, and the mechanism
    is needed: every control worse beyond its interval on every such split; holds only through the
    structure: a control as good there (``queries.control_outcome``); not resolvable at this size:
    neither; does not hold: the reading wins no OOD split so; undecided: a control not run on the
    reading's seeds (unless another is already as good)."""
    def check(ctx: ReportContext) -> Verdict:
        base = baselines(ctx, bench, roles)
        if reading not in ctx.labels(bench) or not base:
            return Verdict(None, "no records yet.")
        top = {s: best(ctx, bench, s, metric, base) for s in splits(ctx, bench, metric) if s != "id"}
        cells = {s: ctx.cell(bench, reading, s, metric) for s in top}
        wins = [s for s, c in cells.items() if c is not None and top[s] is not None
                and log_ratio_interval(errors(c), errors(top[s]))[1] < 1]
        if not wins:
            return Verdict("does not hold", f"`{reading}` is below the best baseline beyond the interval on no OOD "
                           "split: no win to credit.", against="the best baseline", reading=reading)
        n_read = min(cells[s].n for s in wins)
        planned = {c: d for c, d in roles.controls.items() if c in {v.label for v in ctx.spec.bench(bench).variants}}
        ran = {c: control_tests(ctx, bench, reading, c, metric, wins) for c in planned
               if min((cell.n for s in wins if (cell := ctx.cell(bench, c, s, metric))), default=0)
               >= max(MIN_CONTROL_SEEDS, n_read)}
        won = "`" + reading + "` below the best baseline beyond the interval on " + ", ".join(
            f"{s} ({ratio_effect(cells[s], top[s])[0]} against {top[s].label})" for s in wins)
        lines = [f"`{c}` / `{reading}`: {control_tests_text(t)}" for c, t in ran.items()]
        close = min(((t[2], c, t) for c, ts in ran.items() for t in ts), default=None, key=lambda x: x[0])
        common = dict(effect=f"{fmt(close[2][1])}x ({close[2][0]})" if close else "—",
                      against=f"`{close[1]}` (same structure)" if close else "—", reading=reading,
                      seeds=seeds_text(*(cells[s] for s in wins)),
                      notes=tuple(f"{bench}, same-structure control `{c}`: {planned[c]}." for c in ran))
        if not planned:
            return Verdict("undecided", f"{won}; no same-structure control is planned.", **common)
        worse, match, word = control_outcome(ran)
        if len(ran) < len(planned) and not match:
            missing = ", ".join(f"`{c}`" for c in planned if c not in ran)
            return Verdict("undecided", f"{won}; control {missing} not run on the reading's {n_read} seeds.", **common)
        names = lambda cs: ", ".join(f"`{c}`" for c in cs) or "none"  # noqa: E731
        return Verdict(word, f"{won}. " + "; ".join(lines) + f". Worse beyond its interval on every such split: "
                       f"{names(worse)}; as good within it: {names(match)}.", **common)
    return check


def structure_claim(bench: str, controls: tuple[str, ...], roles: Roles, metric: str) -> Callable[[ReportContext], Verdict]:
    """Whether a reading's structure, trained without VN's mechanism, beats the best baseline out of
    distribution: holds where some control of ``controls`` (same-structure controls that replace
    Atomic-Hebb, ``roles.controls``) has a lower error than the best baseline on some OOD split
    beyond the 95 % interval of their ratio (Welch's t on log errors, as every claim here); does not
    hold where none does. The effect is the control and split with the lowest upper bound; the
    evidence gives, per control with records, its OOD split nearest a win (the lowest upper bound)."""
    def check(ctx: ReportContext) -> Verdict:
        base = baselines(ctx, bench, roles)
        ran = [c for c in controls if c in ctx.labels(bench)]
        if not ran or not base:
            return Verdict(None, "no records yet.")
        top = {s: best(ctx, bench, s, metric, base) for s in splits(ctx, bench, metric) if s != "id"}
        tests = {c: {s: (log_ratio_interval(errors(cell), errors(top[s])), ratio_effect(cell, top[s]))
                     for s in top if top[s] is not None and (cell := ctx.cell(bench, c, s, metric)) is not None}
                 for c in ran}
        wins = {c: [s for s, ((_, hi, _), _) in t.items() if hi < 1] for c, t in tests.items()}
        lowest = min(((hi, c, s) for c, t in tests.items() for s, ((_, hi, _), _) in t.items()), default=None)
        if lowest is None:
            return Verdict(None, "no OOD split with records for both sides.")
        _, c0, s0 = lowest
        text, point, _ = tests[c0][s0][1]
        parts = []
        for c, t in tests.items():
            s = min(t, key=lambda split: t[split][0][1])
            parts.append(f"`{c}` {s} {t[s][1][0]} against {top[s].label}")
        winners = [c for c in ran if wins[c]]
        lead = (("Below the best baseline beyond the interval: " + ", ".join(f"`{c}` on {', '.join(wins[c])}"
                                                                              for c in winners))
                if winners else "No control below the best baseline beyond the interval on any OOD split")
        return Verdict(bool(winners), f"{lead}. Nearest a win: " + "; ".join(parts) + ".", effect=f"{text} ({s0}, `{c0}`)",
                       against=f"{top[s0].label} (best baseline)", seeds=seeds_text(
                           *(ctx.cell(bench, c, s, metric) for c in tests for s in tests[c])),
                       points=(point,) if point is not None else (), reading=c0,
                       notes=tuple(f"{bench}, same-structure control `{c}`: {roles.controls[c]}." for c in tests
                                   if c in roles.controls))
    return check


def _against(labels: dict[str, str]) -> str:
    """``"set_mlp (id), gnn (ood_fewer)"``; one label once: ``"conv_ae (id, ood_compose)"``."""
    by: dict[str, list[str]] = {}
    for split, label in labels.items():
        by.setdefault(label, []).append(split)
    return ", ".join(f"{label} ({', '.join(ss)})" for label, ss in by.items())


def _cap_text(ctx: ReportContext, bench: str) -> str:
    total, capped = capped_fits(ctx, bench)
    if not capped:
        return ""
    which = ", ".join(f"{lab} {len(hit)}/{n}" for lab, (n, hit) in capped.items())
    return (f"{bench}: the epoch cap, not the patience rule, ended {sum(len(h) for _, h in capped.values())} of "
            f"{total} trained fits ({which}); those models might have improved with more epochs.")


def paper_claim(bench: str, roles: Roles, metric: str, id_band: float, ood_band: float,
                note: Callable[[ReportContext], str] | None = None) -> Callable[[ReportContext], Verdict]:
    """ID parity (within ``id_band`` x the best baseline) and OOD error at most ``ood_band`` x on
    every OOD split, under at least one VN reading; the evidence names every reading's ratios, the
    effect is the reading nearest the bands (the lowest max(ID ratio / id_band, worst OOD ratio / ood_band))."""
    def check(ctx: ReportContext) -> Verdict:
        readings = [lab for lab in roles.vn if lab in ctx.labels(bench)]
        base = baselines(ctx, bench, roles)
        if not readings or not base:
            return Verdict(None, "no records yet.")
        ss = splits(ctx, bench, metric)
        if "id" not in ss or len(ss) < 2:
            return Verdict(None, "needs records of the id split and an OOD split.")
        top = {s: best(ctx, bench, s, metric, base) for s in ss}
        holds, parts, wins, score = [], [], [], {}
        for lab in readings:
            r = {s: ratio(ctx.cell(bench, lab, s, metric), top[s]) for s in ss}
            ood = [v for s, v in r.items() if s != "id"]
            score[lab] = max(r.get("id", math.inf) / id_band, max(ood, default=0.0) / ood_band)
            if r.get("id", math.inf) <= id_band and all(v <= ood_band for v in ood):
                holds.append(lab)
            better = [s for s, v in r.items() if v < 1]
            if better:
                wins.append(f"{lab} on " + ", ".join(better) + (" only" if len(better) < len(r) else ""))
            parts.append(f"{lab}: " + ", ".join(f"{s} {fmt(v)}" for s, v in r.items()))
        near = min(holds or readings, key=lambda lab: score[lab])
        worst = max((s for s in ss if s != "id"), key=lambda s: ratio(ctx.cell(bench, near, s, metric), top[s]))
        effects, points = [], []
        for s in ss:
            text, point, _ = ratio_effect(ctx.cell(bench, near, s, metric), top[s])
            points.append(located(point, bench))
            if s in ("id", worst):
                effects.append(f"{s} {text}")
        verdict = f"Under {', '.join(holds)}" if holds else "Under no reading"
        notes = (f"{bench}: the baselines are every model that is neither a VN reading, a same-structure control nor a "
                 f"model-free reference ({', '.join(roles.references)})" + (f", the trivial ones ({', '.join(roles.trivial)}) "
                                                                           "included" if roles.trivial else "") + ".",
                 f"{bench}: the effect is that of the VN reading nearest the claim's bands ({near}; ID and its worst OOD "
                 "split). Better than every baseline: " + ("; ".join(wins) or "no reading on any split") + ".",
                 _cap_text(ctx, bench), note(ctx) if note else "")
        return Verdict(bool(holds), f"{verdict}. Error / best baseline's (`{metric}`): " + "; ".join(parts) + ".",
                       effect=f"{near}: " + "; ".join(effects),
                       against=_against({s: top[s].label for s in ("id", worst)}),
                       seeds=seeds_text(*(ctx.cell(bench, near, s, metric) for s in ss), *top.values()),
                       notes=notes, points=tuple(p for p in points if p is not None), reading=near)
    return check


# -- vn_applied_set against set_mlp (the same features) -------------------------------------------
PAIR = ("vn_applied_set", "set_mlp")


def same_features(bench: str) -> Callable[[ReportContext], list[str]]:
    def render(ctx: ReportContext) -> list[str]:
        if not set(PAIR) <= set(ctx.labels(bench)):
            return ["No records of both models yet.", ""]
        ss = splits(ctx, bench, "mse")
        lines = ["| metric | model | " + " | ".join(ss) + " | " + " | ".join(f"{s}/id" for s in ss if s != "id") + " |",
                 "|---|---|" + "---|" * (2 * len(ss) - 1)]
        for metric in ("mse", "rollout_mse"):
            for lab in PAIR:
                vals = [ctx.cell(bench, lab, s, metric) for s in splits(ctx, bench, metric)]
                rats = [fmt(ood_id_ratio(ctx, bench, lab, s, metric)) for s in splits(ctx, bench, metric) if s != "id"]
                lines.append(f"| `{metric}` | {lab} | " + " | ".join(v.text() if v else "—" for v in vals) + " | "
                             + " | ".join(rats) + " |")
        return lines + [""]
    return render


def set_claim(bench: str) -> Callable[[ReportContext], Verdict]:
    """vn_applied_set's next-step error is below set_mlp's on every OOD split."""
    def check(ctx: ReportContext) -> Verdict:
        if not set(PAIR) <= set(ctx.labels(bench)):
            return Verdict(None, "needs records of both models.")
        parts, better, cells = [], [], {}
        for s in splits(ctx, bench, "mse"):
            v, m = ctx.cell(bench, PAIR[0], s, "mse"), ctx.cell(bench, PAIR[1], s, "mse")
            parts.append(f"{s} {fmt(v.mean)} vs {fmt(m.mean)}")
            if s != "id":
                better.append(v.mean < m.mean)
                cells[s] = (v, m)
        if not cells:
            return Verdict(None, "needs records of an OOD split.")
        worst = max(cells, key=lambda s: ratio(*cells[s]))
        effect, point, _ = ratio_effect(*cells[worst])
        note = (f"{PAIR[1]} gets the same encoder, rows and standardisation as {PAIR[0]}, whose structure is built in by "
                f"hand ({_page(ctx, 'details', 'what-is-hand-engineered-in-vn_applied_set')}); the comparison isolates "
                "the applied-weight readout from the features.")
        return Verdict(all(better), "next-step MSE, vn_applied_set vs set_mlp: " + "; ".join(parts) + ".",
                       effect=f"{effect} ({worst}, the largest OOD)", against=f"{PAIR[1]} (same features)",
                       seeds=seeds_text(*cells[worst]), notes=(note,), points=(located(point, bench),),
                       reading=PAIR[0])
    return check


# -- equal budgets ------------------------------------------------------------------------------------
def _caps(ctx: ReportContext, bench: Any, label: str) -> tuple[Any, list[int]]:
    """``(epoch cap of the chosen configuration's search, sorted distinct caps of the fits)`` of
    ``label`` on ``bench`` (configs file, records); ``None`` / ``[]`` where there is none."""
    chosen = ctx.chosen_config(bench.name, label)
    fits = sorted({int(e["config"]["epochs"]) for e in ctx.fits(bench.name, label) if "epochs" in e["config"]})
    return chosen.get("epochs"), fits


def budgets(ctx: ReportContext) -> list[str]:
    """Validation points per tuned model (configs files), the epoch cap of its search and of its
    fits, and epochs run per fit (records)."""
    lines = ["| bench | model | validation points | epoch cap (search / fits) | epochs run per seed (best validation epoch) |",
             "|---|---|---|---|---|"]
    for bench in ctx.spec.benches:
        models = ctx.configs(bench.configs).get("models", {})
        tuned = {k: len(d.get("points", [])) for k, d in models.items() if k in bench.tuning}
        for lab in ctx.labels(bench.name):
            key = bench.tuned_config_key(bench.variant(lab))
            runs = []
            for e in ctx.fits(bench.name, lab):
                h = e["stats"].get("history") or {}
                if "epochs_run" in h:
                    runs.append(f"{h['epochs_run']} ({h.get('best_val_epoch', '—')})")
            search, fits = _caps(ctx, bench, lab)
            cap = "—" if search is None and not fits else \
                f"{search if search is not None else '—'} / {', '.join(map(str, fits)) or '—'}"
            lines.append(f"| {bench.name} | {lab} | {tuned.get(key, 'not tuned')} | {cap} | {', '.join(runs) or '—'} |")
    return lines + [""]


def raised_caps(ctx: ReportContext, bench: Any) -> list[str]:
    """``"mlp: 1000 in the search and the fits"`` for every label of ``bench`` whose search or fits
    ran at an epoch cap other than the bench's rule (``_stop``)."""
    rule, out = _stop(bench)["epochs"], []
    for lab in ctx.labels(bench.name):
        search, fits = _caps(ctx, bench, lab)
        if search is None or not fits or (search == rule and fits == [rule]):
            continue
        f = ", ".join(map(str, fits))
        out.append(f"{lab}: {search} in the search and the fits" if fits == [search]
                   else f"{lab}: {search} in the search, {f} in the fits")
    return out


def cap_note(ctx: ReportContext) -> list[str]:
    """Per bench: the fits whose epoch cap, not the patience rule, ended training (from the records),
    and the models that ran at a cap other than the bench's."""
    lines = []
    for bench in ctx.spec.benches:
        total, capped = capped_fits(ctx, bench.name)
        if total:
            which = ", ".join(f"{lab} {len(hit)}/{n}" for lab, (n, hit) in capped.items()) or "none"
            lines.append(f"- {bench.name}: the epoch cap ended {sum(len(h) for _, h in capped.values())} of {total} "
                         f"trained fits (per model: {which}).")
        edges = grid_edges(ctx, bench.name)
        if edges:
            lines.append(f"- {bench.name}, chosen at an end of its grid (a value beyond it, not tried, might have done "
                         f"better): {', '.join(edges)}.")
        raised = raised_caps(ctx, bench)
        if raised:
            lines.append(f"- {bench.name}, caps other than the bench's {_stop(bench)['epochs']} epochs (raised where "
                         f"that model's fits ended at the cap; a larger cap favours its model, so a verdict resting on "
                         f"that model rests on the larger cap as well): {'; '.join(raised)}.")
    return (lines + [""]) if lines else []


# -- prose ----------------------------------------------------------------------------------------------
def links(ctx: ReportContext) -> list[str]:
    return [f"The tasks, the trivial baselines' tables, what is hand-engineered and more figures: "
            f"{_page(ctx, 'details')}. What this run cut, the equal budgets and every validation point: "
            f"{_page(ctx, 'configs')}.", ""]


def _size_cut(size: dict, task: dict) -> str:
    """' (no cut)' where a bench trains on the task's quick-scale set size, else what it was cut from."""
    return " (no cut)" if size["n_train"] >= task["n_train"] else f" (cut from {task['n_train']:,})"


#: the design's epoch cap of nbody (the VN paper's protocol as this project planned it)
NBODY_DESIGN_EPOCHS = 200


def _cap_cut(cap: int, design: int) -> str:
    """' (no cut)' where a bench's epoch cap is the design's, else what it was cut from."""
    return " (no cut)" if cap >= design else f" (cut from {design})"


def cuts(ctx: ReportContext) -> list[str]:
    """What this run cut against the design, from the spec's benches and the tasks' defaults."""
    nb, mn = ctx.spec.bench("nbody"), ctx.spec.bench("mnist_transform")
    nb_size, mn_size = nb.at("quick").params, mn.at("quick").params
    nb_task, mn_task = _task_defaults(nb.task), _task_defaults(mn.task)
    nb_stop, mn_stop = _stop(nb), _stop(mn)
    return [
        "## What this run cut (compute)", "",
        f"Both benches, {len(nb.seeds)} seeds each, ran as single-thread processes on a shared 2-core machine. The design: 6 validation "
        f"points per tuned model on both benches, epoch caps of {NBODY_DESIGN_EPOCHS} on nbody (patience 10) and 100 on mnist transform "
        f"(patience 5), and the tasks' quick-scale set sizes ({nb_task['n_train']:,} nbody training systems, "
        f"{mn_task['n_train']:,} mnist samples). This run cut, **equally for every model of a bench**:", "",
        f"- **nbody**: {_points(nb)} validation points per tuned model (no cut: the VN readings move the l1 weight, the "
        "Hebbian rates, the atom count with the FISTA budget, `beta` and the test-time l1 weight; `vn_applied_set` also "
        "its encoder's learning rate; the baselines a 2 x 3 grid of size and learning rate, `system_ridge` 6 ridge "
        f"strengths); at most {nb_stop['epochs']} epochs{_cap_cut(nb_stop['epochs'], NBODY_DESIGN_EPOCHS)}, stopping "
        f"after {nb_stop['patience']} without a lower "
        f"validation error; {nb_size['n_train']:,} training systems{_size_cut(nb_size, nb_task)}, {nb_size['n_test']:,} "
        "per test split.",
        f"- **mnist transform**: {_points(mn)} validation points per tuned model (the VN readings: the l1 weight, the "
        "test-time l1 weight, `beta` (for the applied readings: codes inferred with the target clamped at weight `beta` "
        "instead of from the context alone), the Hebbian rates, and twice the atoms with a 3x FISTA budget; the "
        f"baselines: size x learning rate); at most {mn_stop['epochs']} epochs, stopping after {mn_stop['patience']} "
        f"without a lower validation error (no cut); {mn_size['n_train']:,} training samples{_size_cut(mn_size, mn_task)}, "
        f"{mn_size['n_test']:,} per test split.", "",
        "The section \"Equal budgets\" counts the fits the epoch cap ended before the patience rule did (those models "
        "might have improved with more epochs).", "", *_unrun(ctx)]


def _unrun(ctx: ReportContext) -> list[str]:
    """What the spec plans and the records lack (rows, seeds), so every statement leaves it out."""
    lines = [line for b in ctx.spec.benches if (line := unrun_line(ctx, b.name))]
    return ["Not run yet (compute time), so every statement of this report leaves these out:", "", *lines, ""] if lines else []


def nbody_text(ctx: ReportContext) -> list[str]:
    b = ctx.spec.bench("nbody")
    size, task = b.at("quick").params, _task_defaults(b.task)
    spread = task["strength_spread"]
    return [
        "## nbody", "",
        f"`hebbnets.tasks.nbody` (defaults, except the set sizes): {task['n_min']}–{task['n_max']} bodies "
        f"({task['n_fewer']} in the `fewer` conditions), a window of {task['window']} states observed every "
        f"`dt = {task['dt']}` (RK4, {task['substeps']} substeps), {size['n_train']:,} training systems, "
        f"{size['n_test']:,} per test split. Each active law's strength is its nominal value times a per-system factor "
        f"uniform in [{fmt(1 - spread)}, {fmt(1 + spread)}], so it has to be read off the window. Training and `id`: one "
        f"law at a time (gravity, drag, Lorentz, springs) with {task['n_min']}–{task['n_max']} bodies, and drag or "
        f"Lorentz also with {task['n_fewer']} bodies. `ood_forces`: 2–4 laws together, {task['n_min']}–{task['n_max']} "
        f"bodies; `ood_fewer`: gravity or springs with {task['n_fewer']} bodies (a count trained only with drag and "
        f"Lorentz); `ood_both`: 2–4 laws with {task['n_fewer']} bodies. **Every law and every body count of an OOD split "
        "occurs in training; only the combination is new** (`tests/tasks/test_nbody.py::test_every_law_and_body_count_"
        "of_the_ood_splits_is_trained_only_the_combination_is_new`).", "",
        "Metrics: `mse`, the next-step MSE of every real body's change `(dx, dy, dvx, dvy)` in target units (each feature "
        f"divided by its training std); `rollout_mse`, the MSE of the states over {task['rollout_steps']} steps fed back "
        "autoregressively (state units); `next_step_nmse`, the next-step MSE divided by that of the no-change predictor "
        "on the same split (so splits of different intrinsic size compare).", "",
        "### Does the task test composition? (before any model is judged)", "",
        "A split that a linear extrapolator of each body's own window solves measures extrapolation, not composition. "
        "`no_change` predicts a zero change (a reference, never counted as a baseline); `window_linear` is one global "
        "least-squares map from a body's own two window changes to its next change; `system_ridge` fits, per system, a "
        "ridge regression of the change on the state over the window's transitions and applies it to the last state.",
        ""]


def hand_engineered(ctx: ReportContext) -> list[str]:
    window = _task_defaults(ctx.spec.bench("nbody").task)["window"]
    return [
        "### What is hand-engineered in `vn_applied_set`", "",
        "The model is never told which laws act or how strongly; what it is given by construction:", "",
        "- **One code per system.** The laws and their strengths are system-wide, so one sparse code `g` explains every "
        "body and every observed step of a system (`W*(g)` is shared); at prediction the observed window is clamped and "
        "`g` inferred from it alone.",
        f"- **Rows = bodies x window transitions.** Each observed change of a body (the `W - 1 = {window - 1}` "
        "transitions of the window) is one clamped row `(z_it, change_it)` of the system's energy; padded bodies are "
        "masked out.",
        "- **The content encoder's structure** (`hebbnets.vn._body_encoder`): positions enter only as differences "
        "between bodies (translation invariance), pairwise terms are summed over the other bodies (the "
        "interaction-network form), and each step's content depends on that step's state only. Its weights are learned "
        "(Adam on the free energy at the inferred code); the atoms by Atomic-Hebb.",
        "- **Standardisations.** Window changes and targets are divided by their per-feature std over the training part, "
        "which assumes the window's changes are distributed like the next one; the encoder's outputs are standardised "
        "per feature (running statistics at prediction).", "",
        "`set_mlp` gets the same encoder, the same rows and the same standardisation of the window changes; it summarises "
        "the rows by a mean of an MLP (a conditional neural process) and reads each body's change out with a second MLP, "
        "trained end to end. The table isolates the applied-weight readout (one sparse code selecting a linear map) from "
        "the features.", ""]


def mnist_text(ctx: ReportContext) -> list[str]:
    b = ctx.spec.bench("mnist_transform")
    size = b.at("quick").params
    tuning_points = b.variant("vn_applied").config["tuning_points"]
    return [
        "## mnist_comp transform", "",
        "`hebbnets.tasks.mnist_comp` (`mode=\"transform\"`): input = a digit (784 pixels) and a 4-entry code (angle, x "
        "and y shift, log scale, each a signed fraction of its maximum); target = the warped digit. Training and `id`: "
        "exactly one of rotation, translation, scaling; `ood_compose`: all three composed, each within its trained range, "
        f"on test-pool digits. {size['n_train']:,} training samples, {size['n_test']:,} per test split.", "",
        "`zeros` (the empty image) is a reference, never counted as a baseline.", "",
        "VN readings: `vn` (the plain VN: one code explains the concatenated input and predicts the output through its "
        "atoms); `vn_applied` (one applied-weight layer, `y = U (g ⊙ S^T z)`: the transformation code selects, through "
        "the atoms' context vectors, the effective weight applied to the digit `z`); `vn_applied-routed` (three residual "
        "layers `z -> z + W*_l z` stacked, so their effective weights compose by product, each explaining only its own "
        "transformation family's code entries: **the routing is assigned by hand**, one layer for rotation, one for "
        "translation, one for scaling). Both applied readings expand each code entry into a Gaussian population code of "
        f"{tuning_points} tuning curves (hand-engineered: a LASSO over a 4-entry raw code can select at most a rank-4 "
        "map; the stack subtracts the code of a zero entry, so a transformation that is absent leaves its layer the "
        "identity) and infer their training codes from the code alone, as at prediction. Baselines: `mlp`, and the "
        "autoencoders the paper names (`ae` and `vae` take the code into their encoder with the digit, `conv_ae` "
        "concatenates it to its bottleneck). Same-structure controls of `vn_applied` (never baselines): "
        "`applied_code_ff` (its atoms, tuning curves and output with the code from an MLP of the encoded code, all by "
        "backprop), `applied_implicit` (its FISTA code of the context kept, the atoms learned through the LASSO "
        "solution instead of Atomic-Hebb) and `vn_applied-dense` (`lam` and `test_lam` 1e-4).", ""]


def mnist_note(ctx: ReportContext) -> str:
    """The hand-engineered parts of the mnist applied readings, as a note of the mnist claim."""
    return ("mnist_transform: the applied readings expand the transformation code into a hand-chosen population code, "
            "and `vn_applied-routed`'s routing (one layer per transformation family) is assigned by hand "
            f"({_page(ctx, 'details', 'mnist_comp-transform')}).")
