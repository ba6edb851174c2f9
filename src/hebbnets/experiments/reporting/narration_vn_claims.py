"""The vn_claims report's prose, tables and claim checks (``specs/vn_claims.py`` lays them out).

The spec's benches are read from the context by protocol (``continual`` benches, ``amortised``
benches); the claims' bounds come from the spec as factory arguments. Every number is read from the
records (``ctx``), the spec's benches or the ``speed`` report's records; nothing here trains or measures.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ...measures.summary import sample_std
from .queries import (MIN_CONTROL_SEEDS, control_outcome, control_tests, control_tests_text, errors, log_ratio_interval,
                      ratio_effect, seeds_text)
from .sections import Cell, ReportContext, Verdict, fmt, grid_edges, report_pages, unrun_line


# -- helpers over the records -----------------------------------------------------------------------
def continual_benches(ctx: ReportContext) -> list[Any]:
    return [b for b in ctx.spec.benches if b.protocol == "continual"]


def amortised_benches(ctx: ReportContext) -> list[Any]:
    return [b for b in ctx.spec.benches if b.protocol == "amortised"]


def metric_of(ctx: ReportContext, bench: str) -> str | None:
    """The task metric of a continual bench: the one that also has an ``after_`` version."""
    ms = ctx.metrics(bench)
    return next((m for m in ms if f"after_stage1:{m}" in ms), None)


def vals(ctx: ReportContext, bench: str, label: str, split: str, metric: str) -> list[float]:
    c = ctx.cell(bench, label, split, metric)
    return [] if c is None else [v for v in c.values if not math.isnan(v)]


def ms(values: list[float], digits: int = 3) -> str:
    """``mean ± sample std`` (the mean alone for one value, "—" for none)."""
    if not values:
        return "—"
    m = sum(values) / len(values)
    return fmt(m, digits) if len(values) < 2 else f"{fmt(m, digits)} ± {fmt(sample_std(values), digits)}"


def _ms_count(values: list[float]) -> str:
    """``ms`` for counts: an integral mean without exponent (1024, not 1.02e+03)."""
    if not values or len(values) < 2:
        return _num(values[0]) if values else "—"
    return f"{_num(mean(values))} ± {fmt(sample_std(values))}"


def _num(v: float) -> str:
    """A count as an integer, anything else with 3 significant digits."""
    if v is None or math.isnan(v):
        return "—"
    return str(int(round(v))) if abs(v - round(v)) < 1e-9 else fmt(v)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def ent(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
    """The ``stats["entanglement"]`` of every fit of ``label`` on ``bench``."""
    return [e["stats"]["entanglement"] for e in ctx.fits(bench, label) if e["stats"].get("entanglement")]


def dig(d: Any, *path: Any) -> Any:
    for p in path:
        if d is None:
            return None
        d = d.get(p) if isinstance(d, dict) else (d[p] if isinstance(d, list) and isinstance(p, int) and p < len(d) else None)
    return d


def collect(ents: list[dict[str, Any]], *path: Any) -> list[float]:
    out = []
    for e in ents:
        v = dig(e, *path)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out.append(float(v))
    return out


def _page(ctx: ReportContext, page: str) -> str:
    """A markdown link to further page ``page`` of this report (at this scale)."""
    names = report_pages(ctx.spec, ctx.scale)
    name = names[1 + list(ctx.spec.pages).index(page)]
    return f"[{name[:-3]}]({name})"


def _forgetting(ctx: ReportContext, bench: str, label: str) -> Cell | None:
    return ctx.cell(bench, label, "id_stage1", "forgetting_ratio")


def schedule_of(ctx: ReportContext, bench: str, label: str) -> str:
    """How a row learned its stages (the continual protocol's ``schedule`` option, from its records)."""
    fits = ctx.fits(bench, label)
    return fits[0].get("options", {}).get("schedule", "sequential") if fits else "sequential"


def continual_rows(ctx: ReportContext, bench: str) -> list[str]:
    """The rows that learned stage by stage (joint training is a reference, not a continual learner)."""
    return [lab for lab in ctx.labels(bench) if schedule_of(ctx, bench, lab) != "joint"]


# -- 1. continual learning -----------------------------------------------------------------------
def tuning_note(ctx: ReportContext) -> str:
    points = sorted({s.n_points for b in continual_benches(ctx) for s in b.tuning.values()})
    return ("Every model was tuned on validation data carved from the **first stage only** ("
            + "/".join(map(str, points)) + f" points per model; every point: {_page(ctx, 'configs')}); `mlp+ewcN` is "
            "the tuned MLP with elastic weight consolidation of strength N, fixed: nothing in the first stage can "
            "choose it, so each strength is a row of its own (a sweep over decades); `mlp-replay` learns stage 2 with a "
            "replay buffer of 10 % of stage 1's training samples; `mlp-joint` trains on both stages at once, the "
            "reference without forgetting (never a continual row of a claim).")


INTERVAL_NOTE = ("A comparison claim holds when the VN row is lower in the mean *and* the 95 % interval of the ratio "
                 "lies below 1 (Welch's t on log values over seeds); lower in the mean with an interval that reaches 1 is "
                 "not resolvable at this size.")


def lower_beyond_interval(pairs: list[tuple[Cell | None, Cell | None]]) -> bool | str:
    """The verdict of "``mine`` is lower than ``other``" for pairs already lower in the mean: True
    when every pair's 95 % interval of the ratio (``queries.log_ratio_interval``) lies below 1 (or
    has no spread to test), "not resolvable at this size" when one reaches 1, "undecided" when a
    side has fewer than 2 seeds."""
    for mine, other in pairs:
        a, b = errors(mine), errors(other)
        if len(a) < 2 or len(b) < 2:
            return "undecided"
        _, hi, _ = log_ratio_interval(a, b)
        if not math.isnan(hi) and hi >= 1:
            return "not resolvable at this size"
    return True


FINAL_NOTE = ("Forgetting alone rewards a model that never learns the second stage (a strong EWC penalty): the error on "
              "both stages after both is the trade-off continual learning asks for.")


def continual_text(ctx: ReportContext) -> list[str]:
    return ["## Continual learning: does learning a second stage degrade the first?", "",
            "Each task learns two stages with disjoint factors, the second by `partial_fit` from the state the first "
            "left (how every row was tuned, and what the EWC, replay and joint rows are: the notes below). The `-dense`, `vector_code_ff`, `vn_implicit` and `applied_set_*` rows are "
            "same-structure controls, compared only in the mechanism lines.", ""]


def forgetting_table(bench: str, controls: tuple[str, ...] = ()) -> Callable[[ReportContext], list[str]]:
    """The bench's forgetting table; the same-structure ``controls`` are named under it, their
    numbers in the mechanism line and on the metrics page."""
    def render(ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(bench)
        lines = [f"### {b.title}", ""]
        m = metric_of(ctx, bench)
        if m is None:
            return lines + [f"No records yet (`hebbnets reproduce vn_claims --benches {bench}`).", ""]
        cross = next((c.split for c in ctx.cells(bench, m) if c.split.startswith("ood_cross")), None)
        lines += [f"Test error (`{m}`), mean ± sample std over seeds. *Stage 1 after 1*: on the first stage's test split "
                  "right after learning it; *after 2*: the same split after the second stage; *forgetting*: their ratio "
                  "(1 = nothing forgotten); *both*: the `id` split (both stages) after the second stage"
                  + (f"; *{cross}*: combinations across the stages" if cross else "") + ".", "",
                  "| model | seeds | stage 1 after 1 | stage 1 after 2 | forgetting (ratio) | stage 2 after 2 | both after 2 |"
                  + (f" {cross} |" if cross else ""), "|---|---|---|---|---|---|---|" + ("---|" if cross else "")]
        for lab in [lab for lab in ctx.labels(bench) if lab not in controls]:
            c = ctx.cell(bench, lab, "id_stage1", m)
            cells = [ms(vals(ctx, bench, lab, "id_stage1", f"after_stage1:{m}")),
                     ms(vals(ctx, bench, lab, "id_stage1", m)),
                     "**" + ms(vals(ctx, bench, lab, "id_stage1", "forgetting_ratio")) + "**",
                     ms(vals(ctx, bench, lab, "id_stage2", m)), ms(vals(ctx, bench, lab, "id", m))]
            if cross:
                cells.append(ms(vals(ctx, bench, lab, cross, m)))
            lines.append(f"| {lab} | {','.join(map(str, c.seeds)) if c else '—'} | " + " | ".join(cells) + " |")
        shown = [f"`{lab}`" for lab in controls if lab in ctx.labels(bench)]
        return lines + ([""] + [f"Controls {', '.join(shown)}: the mechanism line and {_page(ctx, 'metrics')}."]
                        if shown else []) + [""]
    return render


def vn_vs_mlp(ctx: ReportContext) -> Verdict:
    """The paper's comparison on every continual bench: the vector VN against the plain MLP,
    forgetting ratios compared by their means (with the sample std beside them); where ``vn`` is
    lower in the mean everywhere, the verdict is ``lower_beyond_interval`` over the benches."""
    parts, ok, effects = [], True, {}
    for b in continual_benches(ctx):
        vn, mlp = (vals(ctx, b.name, lab, "id_stage1", "forgetting_ratio") for lab in ("vn", "mlp"))
        if not vn or not mlp:
            continue
        less = mean(vn) < mean(mlp)
        ok = ok and less
        parts.append(f"{b.name}: vn {ms(vn)} {'<' if less else '≥'} mlp {ms(mlp)}")
        effects[b.name] = ratio_effect(_forgetting(ctx, b.name, "vn"), _forgetting(ctx, b.name, "mlp"))
    if not parts:
        return Verdict(None, "no records yet.")
    worst = max(effects, key=lambda n: effects[n][2])
    if ok:
        ok = lower_beyond_interval([(_forgetting(ctx, n, "vn"), _forgetting(ctx, n, "mlp")) for n in effects])
    return Verdict(ok, "forgetting ratio " + "; ".join(parts) + ".",
                   effect=f"{effects[worst][0]} ({worst}, the largest)", against="mlp (forgetting ratio)",
                   seeds=seeds_text(_forgetting(ctx, worst, "vn"), _forgetting(ctx, worst, "mlp")),
                   notes=(tuning_note(ctx), INTERVAL_NOTE), reading="vn")


def _shown_only_text(ctx: ReportContext, bench: str, shown_only: tuple[str, ...], split: str, metric: str) -> str:
    """The evidence's clause on the rows shown beside a claim but not in it (``shown_only``)."""
    rows = [lab for lab in shown_only if lab in ctx.labels(bench)]
    return "".join(f"; shown only (another configuration, in no claim): {lab} {ms(vals(ctx, bench, lab, split, metric))}"
                   for lab in rows)


def forgetting_claim(bench: str, vn_labels: tuple[str, ...], keep: float, shown_only: tuple[str, ...] = (),
                     controls: tuple[str, ...] = ()) -> Callable[[ReportContext], Verdict]:
    """Every VN variant keeps the first stage (forgetting ratio at most ``keep``) and forgets less
    than the backprop row that forgets least (each VN variant's ratio beyond its interval:
    ``lower_beyond_interval``). Rows in ``shown_only`` are named in the evidence, in no comparison;
    the same-structure ``controls`` are in neither side (``mechanism_claim`` compares them)."""
    def check(ctx: ReportContext) -> Verdict:
        m = metric_of(ctx, bench)
        labels = [lab for lab in continual_rows(ctx, bench) if lab not in shown_only and lab not in controls]
        if m is None or "vn" not in labels:
            return Verdict(None, "no records yet.")
        ratio = {lab: mean(vals(ctx, bench, lab, "id_stage1", "forgetting_ratio")) for lab in labels}
        vn = [lab for lab in labels if lab in vn_labels]
        backprop = [lab for lab in labels if lab not in vn_labels]
        best_bp = min(backprop, key=lambda lab: ratio[lab]) if backprop else None
        ok = all(ratio[v] <= keep for v in vn) and best_bp is not None and all(ratio[v] < ratio[best_bp] for v in vn)
        ev = ("forgetting ratio (mean ± sample std over seeds) "
              + ", ".join(f"{lab} {ms(vals(ctx, bench, lab, 'id_stage1', 'forgetting_ratio'))}" for lab in labels)
              + _shown_only_text(ctx, bench, shown_only, "id_stage1", "forgetting_ratio") + ".")
        if best_bp is None:
            return Verdict(ok, ev)
        worst = max(vn, key=lambda v: ratio[v])
        mine, other = _forgetting(ctx, bench, worst), _forgetting(ctx, bench, best_bp)
        effect, _, _ = ratio_effect(mine, other)
        if ok:
            ok = lower_beyond_interval([(_forgetting(ctx, bench, v), other) for v in vn])
        return Verdict(ok, ev, effect=f"{worst}: {effect}", against=f"{best_bp} (the backprop row that forgets least)",
                       seeds=seeds_text(mine, other), notes=(tuning_note(ctx), INTERVAL_NOTE), reading=worst)
    return check


def _final_rows(ctx: ReportContext, bench: str, shown_only: tuple[str, ...], controls: tuple[str, ...]) -> list[str]:
    """The continual rows a final-error comparison ranks (no reference, shown-only or control row)."""
    return [lab for lab in continual_rows(ctx, bench) if lab not in shown_only and lab not in controls]


def final_claim(bench: str, vn_labels: tuple[str, ...], shown_only: tuple[str, ...] = (),
                controls: tuple[str, ...] = ()) -> Callable[[ReportContext], Verdict]:
    """After both stages, the best VN row's error on both stages together is below the best backprop
    row's, beyond its interval (``lower_beyond_interval``). Rows in ``shown_only`` are named in the
    evidence, in no comparison; the same-structure ``controls`` are in neither side."""
    def check(ctx: ReportContext) -> Verdict:
        m = metric_of(ctx, bench)
        labels = _final_rows(ctx, bench, shown_only, controls)
        if m is None or "vn" not in labels:
            return Verdict(None, "no records yet.")
        final = {lab: vals(ctx, bench, lab, "id", m) for lab in labels}
        vn = [lab for lab in labels if lab in vn_labels]
        backprop = [lab for lab in labels if lab not in vn_labels]
        if not backprop:
            return Verdict(None, "no backprop rows.")
        best_bp = min(backprop, key=lambda lab: mean(final[lab]))
        best_vn = min(vn, key=lambda lab: mean(final[lab]))
        mine, other = ctx.cell(bench, best_vn, "id", m), ctx.cell(bench, best_bp, "id", m)
        effect, _, _ = ratio_effect(mine, other)
        joint = [lab for lab in ctx.labels(bench) if lab not in labels and lab not in shown_only and lab not in controls]
        reference = "".join(f"; joint training (the reference, not a continual row): {lab} "
                            f"{ms(vals(ctx, bench, lab, 'id', m))}" for lab in joint)
        lower = mean(final[best_vn]) < mean(final[best_bp])
        return Verdict(lower_beyond_interval([(mine, other)]) if lower else False,
                       f"error on both stages after both (`id`, `{m}`): "
                       + ", ".join(f"{lab} {ms(final[lab])}" for lab in labels)
                       + f"; best VN row {best_vn}, best backprop row {best_bp}{reference}"
                       + _shown_only_text(ctx, bench, shown_only, "id", m) + ".",
                       effect=f"{best_vn}: {effect}", against=f"{best_bp} (the best backprop row)",
                       seeds=seeds_text(mine, other), notes=(FINAL_NOTE, INTERVAL_NOTE), reading=best_vn)
    return check


def _final_winner(ctx: ReportContext, bench: str, vn_labels: tuple[str, ...], shown_only: tuple[str, ...],
                  controls: tuple[str, ...]) -> tuple[Cell, Cell] | None:
    """(best VN row's ``id`` cell, best backprop row's) when the VN row is below it beyond the 95 %
    interval of their ratio (``final_claim``'s win), else None."""
    m = metric_of(ctx, bench)
    labels = _final_rows(ctx, bench, shown_only, controls)
    vn = [lab for lab in labels if lab in vn_labels]
    backprop = [lab for lab in labels if lab not in vn_labels]
    if m is None or not vn or not backprop:
        return None
    final = {lab: mean(vals(ctx, bench, lab, "id", m)) for lab in labels}
    mine, other = (ctx.cell(bench, min(side, key=final.__getitem__), "id", m) for side in (vn, backprop))
    if mine is None or other is None or not final[mine.label] < final[other.label]:
        return None
    return (mine, other) if lower_beyond_interval([(mine, other)]) is True else None


def mechanism_claim(bench: str, vn_labels: tuple[str, ...], controls: dict[str, str], shown_only: tuple[str, ...] = ()
                    ) -> Callable[[ReportContext], Verdict]:
    """Whether the VN's continual win needs VN's mechanism (issue 29): where the best VN row's error on
    both stages after both (``id``) is below the best backprop row's beyond the interval
    (``final_claim``), each same-structure control of ``controls`` (label -> what it is; trained on
    the stages in the same order) against that VN row on ``id``, with the 95 % interval and Welch
    test on log errors (``queries.control_outcome``). Does not hold: no win to credit; undecided:
    a control without records on the VN row's seeds (unless another is already as good)."""
    def check(ctx: ReportContext) -> Verdict:
        m = metric_of(ctx, bench)
        if m is None:
            return Verdict(None, "no records yet.")
        win = _final_winner(ctx, bench, vn_labels, shown_only, tuple(controls))
        if win is None:
            return Verdict("does not hold", "no VN row is below the best backprop row beyond the interval after both "
                           "stages: no win to credit.", against="the best backprop row")
        mine, other = win
        reading = mine.label
        ran = {c: control_tests(ctx, bench, reading, c, m, ["id"]) for c in controls
               if (cell := ctx.cell(bench, c, "id", m)) is not None and cell.n >= max(MIN_CONTROL_SEEDS, mine.n)}
        won = f"`{reading}` below {other.label} beyond the interval ({ratio_effect(mine, other)[0]})"
        lines = [f"`{c}` / `{reading}`: {control_tests_text(t)}" for c, t in ran.items()]
        close = min(((t[2], c, t) for c, ts in ran.items() for t in ts), default=None, key=lambda x: x[0])
        common = dict(effect=f"{fmt(close[2][1])}x (id)" if close else "—",
                      against=f"`{close[1]}` (same structure)" if close else "—", reading=reading,
                      seeds=seeds_text(mine), notes=tuple(f"{bench}, same-structure control `{c}`: {d}." for c, d in
                                                         controls.items() if c in ran))
        worse, match, word = control_outcome(ran)
        if len(ran) < len(controls) and not match:
            missing = ", ".join(f"`{c}`" for c in controls if c not in ran)
            return Verdict("undecided", f"{won}; {'controls' if len(controls) - len(ran) > 1 else 'control'} {missing} not run "
                           f"on the VN row's {mine.n} seeds.", **common)
        names = lambda cs: ", ".join(f"`{c}`" for c in cs) or "none"  # noqa: E731
        return Verdict(word, f"{won}, on both stages after both (`id`, `{m}`). " + "; ".join(lines)
                       + f". Worse beyond its interval: {names(worse)}; as good within it: {names(match)}.", **common)
    return check


# -- 2. entanglement and reuse, from stats["entanglement"] ----------------------------------------------
def entanglement_text(ctx: ReportContext) -> list[str]:
    return ["## Entanglement and reuse", "",
            "Why a model forgets (or not): do the two stages' updates touch the same weights, do they use the same atoms, "
            "and does an atom that serves a factor serve it in every combination that contains the factor? Measured by "
            "`hebbnets.entanglement` on every fitted model. " + ENTANGLEMENT_NOTE, ""]


ENTANGLEMENT_NOTE = ("For `vn_applied_set` (a backprop-trained content encoder plus atoms learned by Atomic-Hebb) the "
                     "overlap is its encoder's gradient cosine; its atoms, and `vn_matrix`'s, have no overlap or reuse "
                     "measure yet.")


def entanglement_table(bench: str) -> Callable[[ReportContext], list[str]]:
    def render(ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(bench)
        lines = [f"### {b.title}: overlap, reuse, sparsity", ""]
        labels = [lab for lab in ctx.labels(bench) if ent(ctx, bench, lab)]
        if not labels:
            return lines + ["No entanglement records yet.", ""]
        lines += ["Update overlap between the two stages' training data, measured on the model right after the first stage "
                  "(where the second stage starts) and after both. VN: cosine between the summed Atomic-Hebb updates of the "
                  "two stages (all atoms of a layer, `S` and `U` together) and the weighted Jaccard overlap of their atom "
                  "usage; backprop: cosine between the two stages' loss gradients, per layer (range over layers). "
                  "*Moved*: relative change of the parameters while the second stage was learned.", "",
                  "| model | update cosine after stage 1 | update cosine after both | usage overlap (weighted Jaccard) after stage 1 "
                  "| moved during stage 2 |", "|---|---|---|---|---|"]
        for lab in labels:
            ents = ent(ctx, bench, lab)
            layers = list(dig(ents[0], "after_stage1", "overlap") or {})
            if not layers:
                lines.append(f"| {lab} | not measured (no update overlap for this model) | | | "
                             + _moved(ents) + " |")
                continue

            def span(time: str, key: str) -> str:
                per = [mean(collect(ents, time, "overlap", layer, key)) for layer in layers]
                per = [v for v in per if not math.isnan(v)]
                if not per:
                    return "—"
                if len(layers) == 1:
                    return ms(collect(ents, time, "overlap", layers[0], key))
                return f"{fmt(min(per))} to {fmt(max(per))} ({len(layers)} layers)"
            wj = span("after_stage1", "weighted_jaccard")
            lines.append(f"| {lab} | {span('after_stage1', 'cosine')} | {span('final', 'cosine')} | "
                         f"{wj if wj != '—' else 'n/a'} | {_moved(ents)} |")
        lines.append("")
        vn = [lab for lab in labels if collect(ent(ctx, bench, lab), "final", "usage", "stages", "atoms")]
        if vn:
            lines += ["Atom reuse (first layer, test splits, after both stages): atoms used by any test sample of the first "
                      "stage only, of the second only, of both; per factor (on `id` and the split across stages together) "
                      "the atoms it uses (active in at least 5 % of the "
                      "samples containing it), the atoms specific to it (used by no combination without it) and their reuse "
                      "(share of the factor's combinations that use each specific atom; 1 = every combination containing "
                      "the factor uses it); active atoms per sample on `id` (mean, median; the distribution is in the "
                      "sparsity figure); atoms left bit-for-bit unchanged by the second stage.", "",
                      "| model | atoms | stage 1 only | stage 2 only | both | atoms per factor | specific per factor | reuse "
                      "| active per sample (mean / median) | unchanged by stage 2 |", "|---|---|---|---|---|---|---|---|---|---|"]
            for lab in vn:
                ents = ent(ctx, bench, lab)
                factors = dig(ents[0], "final", "usage", "factors") or []

                def per_factor(key: str) -> str:
                    cols = [collect(ents, "final", "usage", key, i) for i in range(len(factors))]
                    return ", ".join(f"{f} {_num(mean(c)) if c else '—'}" for f, c in zip(factors, cols))
                st = ["first_only", "second_only", "both"]
                unchanged = [v for e in ents for k, w in (e.get("weight_change") or {}).items()
                             if k.endswith(".S") and (v := w.get("atoms_unchanged")) is not None]
                lines.append(f"| {lab} | {_num(mean(collect(ents, 'final', 'usage', 'stages', 'atoms')))} | "
                             + " | ".join(_ms_count(collect(ents, "final", "usage", "stages", k)) for k in st)
                             + f" | {per_factor('atoms_per_factor')} | {per_factor('specific_per_factor')} | {per_factor('reuse')}"
                             + f" | {ms(collect(ents, 'final', 'sparsity', 0, 'mean'))} / "
                               f"{ms(collect(ents, 'final', 'sparsity', 0, 'median'))} | {ms(unchanged)} |")
            lines.append("")
        return lines
    return render


def _moved(ents: list[dict[str, Any]]) -> str:
    """Relative parameter change during stage 2, range over the parameters (mean over seeds)."""
    names = list((ents[0].get("weight_change") or {}))
    per = [mean([e["weight_change"][n]["relative"] for e in ents if n in e.get("weight_change", {})]) for n in names]
    per = [v for v in per if not math.isnan(v)]
    if not per:
        return "—"
    return fmt(per[0]) if len(per) == 1 else f"{fmt(min(per))} to {fmt(max(per))}"


def _ent_seeds(ctx: ReportContext, benches: list[str]) -> str:
    seeds = sorted({e["seed"] for b in benches for e in ctx.fits(b, "vn") if e["stats"].get("entanglement")})
    return ",".join(map(str, seeds)) or "—"


def orthogonal_claim(bound: float) -> Callable[[ReportContext], Verdict]:
    """VN's mean update cosine after stage 1 has |.| below ``bound`` on every continual bench."""
    def check(ctx: ReportContext) -> Verdict:
        parts, ok, cos = [], True, {}
        for b in continual_benches(ctx):
            values = collect(ent(ctx, b.name, "vn"), "after_stage1", "overlap", "layer0", "cosine")
            mlp = [abs(v) for e in ent(ctx, b.name, "mlp") for v in
                   [w.get("cosine") for w in (dig(e, "after_stage1", "overlap") or {}).values()] if v is not None]
            if not values:
                continue
            ok = ok and abs(mean(values)) < bound
            cos[b.name] = mean(values)
            parts.append(f"{b.name}: VN {fmt(mean(values))}" + (f" (MLP layers |cos| up to {fmt(max(mlp))})" if mlp else ""))
        if not parts:
            return Verdict(None, "no records yet.")
        worst = max(cos, key=lambda n: abs(cos[n]))
        return Verdict(ok, "mean update cosine after stage 1: " + "; ".join(parts) + ".",
                       effect=f"|cos| up to {fmt(abs(cos[worst]))} ({worst})", against=f"the bound {fmt(bound)}",
                       seeds=_ent_seeds(ctx, list(cos)), notes=(ENTANGLEMENT_NOTE,), reading="vn")
    return check


def disjoint_claim(bound: float) -> Callable[[ReportContext], Verdict]:
    """Fewer than ``bound`` of VN's used atoms serve test samples of both stages, on every continual bench."""
    def check(ctx: ReportContext) -> Verdict:
        parts, ok, shares = [], True, {}
        for b in continual_benches(ctx):
            ents = ent(ctx, b.name, "vn")
            both, atoms = collect(ents, "final", "usage", "stages", "both"), collect(ents, "final", "usage", "stages", "atoms")
            wj = collect(ents, "final", "usage", "stages", "weighted_jaccard")
            if not both:
                continue
            share = mean(both) / mean(atoms)
            ok = ok and share < bound
            shares[b.name] = share
            parts.append(f"{b.name}: {100 * share:.0f} % of the atoms serve test samples of both stages "
                         f"(usage-weighted Jaccard {fmt(mean(wj))})")
        if not parts:
            return Verdict(None, "no records yet.")
        lo, hi = min(shares.values()), max(shares.values())
        span = f"{100 * lo:.0f} %" if f"{100 * lo:.0f}" == f"{100 * hi:.0f}" else f"{100 * lo:.0f}–{100 * hi:.0f} %"
        return Verdict(ok, "; ".join(parts) + ".", effect=f"{span} of the atoms shared",
                       against=f"{100 * bound:.0f} % of the used atoms", seeds=_ent_seeds(ctx, list(shares)),
                       notes=(ENTANGLEMENT_NOTE,), reading="vn")
    return check


# -- 3. amortised inference --------------------------------------------------------------------------
def amortised_text(ctx: ReportContext) -> list[str]:
    b = amortised_benches(ctx)[0]
    steps, repeats = b.options["steps"], b.options["repeats"]
    return ["## Amortised inference", "",
            f"A LISTA encoder per layer ({steps} unrolled steps, trained on the training inputs to minimise the layer's "
            "own LASSO objective: no FISTA codes needed), on every VN benchmark: those of `vn_benchmarks`, and nbody and "
            "mnist transform of `vn_dynamics` at its (smaller) task sizes (same task parameters, same chosen "
            f"configuration of the vector reading `vn`), alone and as FISTA's warm start. {AMORTISED_NOTE} Times are the "
            f"fastest of {repeats} runs, one thread, the whole test split at once.", ""]


AMORTISED_NOTE = ("Not amortised: the applied-weight readings `vn_applied` / `vn_applied_set` (their context inference "
                  "is also a FISTA-solved LASSO, but `AmortisedVN` wraps only `VectorNetwork` layers and no encoder was "
                  "built for them).")


def _goal_met(v: Any, speedup: float, error: float) -> bool:
    return mean(v("speedup_equal_energy")) >= speedup and mean(v("error_ratio")) <= error


def warm(v: Any) -> str:
    """The warm start's speed-up to plain FISTA's final energy; when no warm-started budget up to
    ``max_iter`` reaches it, says so, with the speed-up at the full budget beside it."""
    reached = v("warm_start_speedup_equal_energy")
    if reached:
        return ms(reached, 2)
    full = v("warm_start_speedup")
    return "not reached" + (f" ({ms(full, 2)} at the full budget)" if full else "")


def amortised_table(speedup: float, error: float) -> Callable[[ReportContext], list[str]]:
    def render(ctx: ReportContext) -> list[str]:
        lines = ["Per benchmark and test split, mean ± sample std over seeds. *FISTA error*: the VN with plain FISTA "
                 "(its own budget); *encoder error ratio*: the encoder alone over FISTA; *x faster, equal energy* / *equal "
                 "error*: FISTA's time at its cheapest iteration budget whose free energy (test error) is at least as low "
                 "as the encoder's, over the encoder's time (`≥`: no budget up to FISTA's `max_iter` is as good, so the "
                 "ratio uses the full budget: a lower bound); *warm start*: FISTA warm-started by the encoder, its time to "
                 "plain FISTA's final energy, as a speed-up (*not reached*: no warm-started budget up to `max_iter` gets "
                 "as low; in brackets the speed-up with both at the full budget); *OOD/ID*: each method's error on the "
                 "split over its error on `id` (an encoder that loses VN's OOD behaviour has a larger ratio than FISTA). "
                 f"Goal: at least {fmt(speedup)}x faster at no more than {fmt(error)}x FISTA's error.", "",
                 "| benchmark | split | FISTA error | encoder error ratio | x faster, equal energy | x faster, equal error | "
                 "warm start x faster | OOD/ID FISTA | OOD/ID encoder | goal |", "|---|---|---|---|---|---|---|---|---|---|"]
        any_rows = False
        for b in amortised_benches(ctx):
            if "vn" not in ctx.labels(b.name):
                continue
            for s in dict.fromkeys(c.split for c in ctx.cells(b.name, "error_ratio")):
                any_rows = True
                v = lambda m: vals(ctx, b.name, "vn", s, m)  # noqa: E731

                def bound(key: str) -> str:
                    text = ms(v(f"speedup_equal_{key}"), 2)
                    return ("≥ " + text) if any(x > 0 for x in v(f"beyond_budget_{key}")) else text
                ood = ["—", "—"]
                if s != "id":
                    for i, m in enumerate(("fista_error", "amortised_error")):
                        num, den = mean(v(m)), mean(vals(ctx, b.name, "vn", "id", m))
                        ood[i] = fmt(num / den) if den and not math.isnan(num) else "—"
                lines.append(f"| {b.name.removeprefix('amortised_')} | {s} | {ms(v('fista_error'))} | "
                             f"{ms(v('error_ratio'))} | {bound('energy')} | {bound('error')} | {warm(v)} | "
                             f"{ood[0]} | {ood[1]} | {'met' if _goal_met(v, speedup, error) else 'not met'} |")
        if not any_rows:
            return ["No records yet (`hebbnets reproduce vn_claims --benches "
                    + ",".join(b.name for b in amortised_benches(ctx)) + "`).", ""]
        return lines + [""] + amortised_configs(ctx)
    return render


def _source_spec(bench: Any) -> str:
    """The spec whose bench an amortised bench measures (``vn_dynamics`` or ``vn_benchmarks``)."""
    from .._spec import get_spec

    dynamics = {b.name for b in get_spec("vn_dynamics").benches}
    return "vn_dynamics" if bench.name.removeprefix("amortised_") in dynamics else "vn_benchmarks"


def _lam_differs(cfg: dict[str, Any]) -> bool:
    return cfg.get("test_lam") is not None and cfg.get("test_lam") != cfg.get("lam")


def amortised_configs(ctx: ReportContext) -> list[str]:
    """The VN configuration each amortised bench ran (from its records) and the code commit whose
    task configs file chose it (the ``vn_benchmarks`` choice at that commit)."""
    lines = ["The VN each row measures: the configuration `vn_benchmarks` (nbody, mnist transform: `vn_dynamics`) had "
             "chosen for the task at the records' commit (`src/hebbnets/tasks/configs/`), as recorded:", ""]
    for b in amortised_benches(ctx):
        fits = ctx.fits(b.name, "vn")
        if not fits:
            lines.append(f"- `{b.name.removeprefix('amortised_')}`: not run (no records).")
            continue
        cfg = fits[0]["config"]
        shown = {k: cfg[k] for k in ("atoms", "hidden", "lam", "beta", "test_lam", "topk", "epochs", "patience", "max_iter")
                 if k in cfg}
        commits = sorted({str(e.get("commit"))[:7] for e in fits})
        line = (f"- `{b.name.removeprefix('amortised_')}` (seeds {','.join(str(e['seed']) for e in fits)}; "
                f"commit {', '.join(commits)}): " + ", ".join(f"`{k}={v}`" for k, v in shown.items()) + ".")
        # the amortised measurement infers at the training lam (the encoder learns that LASSO), while the
        # benchmark rows predict at test_lam: where they differ, the FISTA column is not that row's error
        if _lam_differs(cfg):
            line += (f" FISTA and the encoder both infer at the training `lam={cfg.get('lam')}` here, not at the "
                     f"test-time `lam={cfg['test_lam']}` the `{_source_spec(b)}` row predicts with, so the FISTA error "
                     "column differs from that row's test error.")
        # a later search may have chosen another configuration: these rows then measure the earlier one
        changed = {k: v for k, v in ctx.chosen_config(b.name, "vn").items() if cfg.get(k) != v}
        if changed:
            line += (" **Not the configuration chosen now** (now: " + ", ".join(f"`{k}={v}`" for k, v in changed.items())
                     + f"), so these rows measure the earlier one (rerun: `hebbnets reproduce vn_claims --stage run "
                     f"--benches {b.name}`).")
        lines.append(line)
    return lines + [""]


def amortised_claim(speedup: float, error: float) -> Callable[[ReportContext], Verdict]:
    """At least ``speedup`` x faster than FISTA at equal energy at no more than ``error`` x its test
    error, on every amortised benchmark and split."""
    def check(ctx: ReportContext) -> Verdict:
        met, missed, cells = [], [], []
        for b in amortised_benches(ctx):
            if "vn" not in ctx.labels(b.name):
                continue
            for s in dict.fromkeys(c.split for c in ctx.cells(b.name, "error_ratio")):
                v = lambda m: vals(ctx, b.name, "vn", s, m)  # noqa: E731
                (met if _goal_met(v, speedup, error) else missed).append(f"{b.name.removeprefix('amortised_')}/{s}")
                cells.append(ctx.cell(b.name, "vn", s, "error_ratio"))
        if not met and not missed:
            return Verdict(None, "no records yet.")
        lam = [b.name.removeprefix("amortised_") for b in amortised_benches(ctx)
               if ctx.fits(b.name, "vn") and _lam_differs(ctx.fits(b.name, "vn")[0]["config"])]
        notes = ((f"Not met on {', '.join(missed)}." if missed else ""), AMORTISED_NOTE,
                 (f"On {', '.join(lam)} FISTA and the encoder infer at the training `lam`, not at the test-time `lam` "
                  f"the benchmark row predicts with ({_page(ctx, 'amortised')})." if lam else ""))
        return Verdict(not missed, f"met on {len(met)} of {len(met) + len(missed)} benchmark splits"
                       + (f" ({', '.join(met)})" if met else "") + (f"; not met on {len(missed)}" if missed else "")
                       + ".", effect=f"goal met on {len(met)} of {len(met) + len(missed)} splits",
                       against="plain FISTA (the VN's own inference)", seeds=seeds_text(*cells), notes=notes,
                       reading="AmortisedVN")
    return check


# -- 4. faster FISTA (the speed report's measurement) ------------------------------------------------
def fista_speed(ctx: ReportContext) -> list[str]:
    from .narration_speed import vn_inference_lines

    other = ctx.other_spec("speed")
    e = other.measure("vn_inference") if other is not None else None
    lines = ["## Faster FISTA at scale", ""]
    if e is None:
        return lines + ["No `vn_inference` record in `records/speed.jsonl` yet (`hebbnets reproduce speed --benches "
                        "vn_inference`).", ""]
    return lines + ["From `reports/speed.md` (the `vn_inference` measurement of the `speed` spec; "
                    "`python benchmarks/vn_inference.py` prints the same table):", "", *vn_inference_lines(e)]


# -- layout helpers ------------------------------------------------------------------------------------
def coverage(ctx: ReportContext) -> list[str]:
    """What the records hold against what the spec plans: benches and rows not run, and rows with
    fewer seeds than planned (a cut for compute time is stated here, from the store)."""
    missing = [line for b in ctx.spec.benches if (line := unrun_line(ctx, b.name))]
    if not missing:
        seeds = sorted({s for b in ctx.spec.benches for s in b.at(ctx.scale).seeds})
        return ["Every bench and row of the spec has records for seeds " + ", ".join(map(str, seeds)) + ".", ""]
    return ["Not run in this round (compute time: one single-thread process on a shared 2-core machine), so every "
            "statement below leaves these out:", "", *missing, ""]


def links(ctx: ReportContext) -> list[str]:
    return [f"Why a model forgets (update overlap, atom reuse, sparsity) and its figures: {_page(ctx, 'entanglement')}. "
            f"Amortised inference per benchmark and split, and the faster FISTA quoted from the speed report: "
            f"{_page(ctx, 'amortised')}. Every validation point: {_page(ctx, 'configs')}.", ""]


# -- the field's continual-learning metrics, from the error matrix -----------------------------------
def error_matrix(ctx: ReportContext, bench: str, label: str) -> list[dict[str, float]]:
    """Per seed the error matrix of a two-stage run, ``R[i][j]`` = test error on stage ``j`` after
    learning stage ``i`` (the task metric; lower is better): ``{"R11", "R12", "R21", "R22"}``, and
    ``"B2"``, the untrained model's error on stage 2 (NaN in records written before it was measured)."""
    m = metric_of(ctx, bench)
    out = []
    for e in ctx.fits(bench, label):
        row = {(r["split"], r["metric"]): r["value"] for r in e["rows"]}
        try:
            final = {"R21": row[("id_stage1", m)], "R22": row[("id_stage2", m)]}
            if e.get("options", {}).get("schedule") == "joint":  # one state only: no row "after stage 1"
                out.append({"R11": math.nan, "R12": math.nan, "B2": math.nan, **final})
                continue
            out.append({"R11": row[("id_stage1", f"after_stage1:{m}")], "R12": row[("id_stage2", f"after_stage1:{m}")],
                        "B2": row.get(("id_stage2", f"before:{m}"), math.nan), **final})
        except KeyError:
            continue
    return out


def continual_metrics(R: dict[str, float]) -> dict[str, float]:
    """The field's metrics for two stages (T = 2), written for errors (lower is better):
    average error after the last stage ``(R21 + R22) / 2``; backward transfer
    ``BWT = R21 - R11`` (Lopez-Paz and Ranzato 2017, with the sign flipped for errors: > 0 means
    stage 2 raised stage 1's error); forgetting ``F = R21 - min_{l < T} R_l1`` (Chaudhry et al.
    2018, for errors), equal to BWT at T = 2; the zero-shot error ``R12`` on stage 2 before it
    is learned; and forward transfer ``FWT = B2 - R12`` (Lopez-Paz and Ranzato 2017 for errors:
    ``B2`` the untrained model's error on stage 2; > 0 means learning stage 1 lowered it; NaN
    without ``B2``)."""
    return {"average": (R["R21"] + R["R22"]) / 2, "bwt": R["R21"] - R["R11"], "forgetting": R["R21"] - R["R11"],
            "zero_shot": R["R12"], "fwt": R.get("B2", math.nan) - R["R12"]}


def metrics_text(ctx: ReportContext) -> list[str]:
    return ["The error matrix `R[i, j]` = test error on stage `j` after learning stage `i` (the task metric of each "
            "benchmark; lower is better), and the field's metrics computed from it per seed (`continual_metrics`): "
            "*average* error on both stages after stage 2; *BWT* = R[2,1] - R[1,1] (backward transfer, the sign "
            "flipped for errors: > 0 means learning stage 2 raised stage 1's error); *forgetting* as in Chaudhry et "
            "al. 2018 (R[2,1] minus the best earlier error on stage 1; with two stages it equals BWT); *zero-shot* = "
            "R[1,2], stage 2's error before it is learned; *intransigence* (Chaudhry et al. 2018, for errors) = R[2,2] "
            "minus the jointly trained MLP's (`mlp-joint`) error on stage 2, the price of learning it second. The "
            "jointly trained row has no state after stage 1 (—). *FWT* = B[2] - R[1,2] (forward transfer, Lopez-Paz and "
            "Ranzato 2017, for errors: B[2] is the untrained model's error on stage 2, built under the fit's seed; > 0 "
            "means learning stage 1 lowered stage 2's error); records written before the protocol measured B[2] show "
            "— there.", ""]


def metrics_table(bench: str) -> Callable[[ReportContext], list[str]]:
    def render(ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(bench)
        m = metric_of(ctx, bench)
        lines = [f"### {b.title}", ""]
        if m is None:
            return lines + ["No records yet.", ""]
        lines += [f"`{m}`, mean ± sample std over seeds.", "",
                  "| model | seeds | R[1,1] | R[1,2] (zero-shot) | R[2,1] | R[2,2] | average after 2 | BWT = forgetting "
                  "| intransigence | FWT |", "|---|---|---|---|---|---|---|---|---|---|"]
        joint = [R["R22"] for lab in ctx.labels(bench) if schedule_of(ctx, bench, lab) == "joint"
                 for R in error_matrix(ctx, bench, lab)]
        for lab in ctx.labels(bench):
            Rs = error_matrix(ctx, bench, lab)
            if not Rs:
                continue
            mets = [continual_metrics(R) for R in Rs]
            finite = lambda xs: [x for x in xs if not math.isnan(x)]  # noqa: E731
            intrans = [R["R22"] - mean(joint) for R in Rs] if joint and not math.isnan(Rs[0]["R11"]) else []
            lines.append(f"| {lab} | {len(Rs)} | " + " | ".join(ms(finite([R[k] for R in Rs])) for k in
                                                               ("R11", "R12", "R21", "R22"))
                         + f" | {ms([x['average'] for x in mets])} | {ms(finite([x['bwt'] for x in mets]))} | "
                         + f"{ms(intrans)} | {ms(finite([x['fwt'] for x in mets]))} |")
        return lines + [""]
    return render


# -- how long each stage trained (equal stopping rules) -----------------------------------------------
def stage_training_table(ctx: ReportContext) -> list[str]:
    """Per bench and row, the epochs each stage trained (``stats["stages"]``, ``continual.stage_training``)
    and the fits that ran to their cap; records written before the protocol measured it are counted."""
    lines = ["## How long each stage trained", "",
             "Epochs run per stage (mean ± sample std over seeds) and the fits that ended at their epoch cap, from "
             "each record's `stages` (written by the continual protocol since it measures them).", ""]
    for b in continual_benches(ctx):
        fits = {lab: ctx.fits(b.name, lab) for lab in ctx.labels(b.name)}
        have = {lab: [e["stats"]["stages"] for e in es if e["stats"].get("stages")] for lab, es in fits.items()}
        lacking = sum(len(es) for es in fits.values()) - sum(len(v) for v in have.values())
        lines += [f"### {b.title}", ""]
        if not lacking and not any(have.values()):
            lines += ["No records yet.", ""]
            continue
        if not any(have.values()):
            lines += [f"None of its {lacking} records has per-stage training lengths: they were run before the "
                      "protocol measured them (a rerun of this spec writes them).", ""]
            continue
        if lacking:
            lines += [f"{lacking} of its records were run before the protocol measured them: left out here.", ""]
        lines += ["| model | seeds | stage | epochs run | cap | at cap |", "|---|---|---|---|---|---|"]
        for lab, runs in have.items():
            for k, name in enumerate(dict.fromkeys(s["stage"] for r in runs for s in r)):
                st = [r[k] for r in runs if len(r) > k and r[k]["epochs_run"] is not None]
                if not st:
                    continue
                lines.append(f"| {lab} | {len(st)} | {name} | {_ms_count([s['epochs_run'] for s in st])} | "
                             f"{_num(st[0]['epochs'])} | {sum(bool(s['at_cap']) for s in st)} of {len(st)} |")
        lines.append("")
    return lines


def grid_edge_note(ctx: ReportContext) -> list[str]:
    """Per bench, the grid searches that chose an end of a numeric axis (``grid_edges``)."""
    lines = [f"- {b.name}: {', '.join(e)}." for b in ctx.spec.benches if (e := grid_edges(ctx, b.name))]
    if not lines:
        return []
    return ["## Chosen at an end of its grid", "",
            "A value beyond the grid, not tried, might have done better:", "", *lines, ""]
