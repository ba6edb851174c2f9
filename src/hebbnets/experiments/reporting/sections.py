"""Reports from records alone: ``build_report(spec, store)`` renders markdown (and figures)
from the entries of a ``RecordStore``; nothing is trained or measured here, and the same
records give the same bytes.

A spec's ``sections`` are objects with ``render(ctx) -> list[str]`` (markdown lines). Generic
builders: ``Text``, ``ResultsTable`` (mean ± sample std per model and split, parameter counts,
OOD/ID ratios, the ratio to the best baseline), ``Claim`` (a statement with its verdict and
the numbers behind it), ``Figure`` (a registered figure kind, drawn next to the report),
``TuningTable`` (validation points of a task's configs file) and ``Custom`` (any function of
the context: the hook for a section no builder covers).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..._registry import Registry
from ...measures.summary import sample_std, to_error
from .._spec import Grid, Spec
from .._store import RecordStore


def fmt(v: float | None, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits ("—" for a missing value)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def fmt_pct(v: float | None) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.1f}"


@dataclass
class Cell:
    """Summary of one (label, split, metric) over seeds: ``n``, ``mean``, ``std`` (sample; NaN
    for one seed), the seeds, the mean parameter count, and whether it is an imported summary
    (no per-seed records)."""

    label: str
    split: str
    metric: str
    n: int
    mean: float
    std: float
    seeds: list[int]
    num_parameters: float | None
    imported: bool = False
    values: list[float] = field(default_factory=list)

    def text(self, percent: bool = False, digits: int = 3) -> str:
        """``mean ± std``; one seed prints the mean alone (no ``± nan``)."""
        f = fmt_pct if percent else (lambda v: fmt(v, digits))
        if self.n < 2 or math.isnan(self.std):
            return f(self.mean)
        return f"{f(self.mean)} ± {f(self.std)}"


class ReportContext:
    """What sections read: the spec, the scale, and the entries that answer its slots.

    Args:
        spec: the ``Spec`` being rendered; scale: which scale's slots to read.
        entries: every entry of the spec's record store.
        out: the reports folder (figures are written there); figures: draw figures or not.
    """

    def __init__(self, spec: Spec, scale: str, entries: Iterable[dict[str, Any]], out: Path,
                 figures: bool = True, store_path: str = "", configs_dir: Path | None = None,
                 records_dir: Path | None = None):
        self.spec, self.scale, self.out, self.figures, self.store_path = spec, scale, Path(out), figures, store_path
        self.configs_dir, self.records_dir = configs_dir, records_dir
        self.entries = list(entries)
        self._fits: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self._summaries: dict[tuple[str, str], dict[str, Any]] = {}
        self._measures: dict[str, dict[str, Any]] = {}
        self._tune: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        for e in self.entries:
            for s in e.get("slots", []):
                if s.get("spec") != spec.name or s.get("scale") != scale:
                    continue
                where = (s["bench"], s["label"])
                if s.get("stage") == "tune":
                    self._tune[where].append((s.get("point", 0), e))
                elif e["kind"] == "fit":
                    self._fits[where].append(e)
                elif e["kind"] == "summary":
                    self._summaries[where] = e
                elif e["kind"] == "measure":
                    self._measures[s["bench"]] = e
        for k in self._fits:
            self._fits[k].sort(key=lambda e: e["seed"])
        self.figure_files: list[str] = []
        self.notes: list[str] = []  # numbered notes of this page, in the order first referred to

    def note(self, text: str) -> int:
        """The number of note ``text`` on this page (added at the end if new)."""
        if text not in self.notes:
            self.notes.append(text)
        return self.notes.index(text) + 1

    def note_refs(self, texts: Iterable[str]) -> str:
        """`` (notes 1, 2)`` for ``texts`` (each numbered by ``note``); empty for none."""
        nums = [self.note(t) for t in texts if t]
        if not nums:
            return ""
        return f" (note{'s' if len(nums) > 1 else ''} {', '.join(map(str, nums))})"

    # -- lookups ---------------------------------------------------------------------------------
    def fits(self, bench: str, label: str | None = None) -> list[dict[str, Any]]:
        """Per-seed fit entries of a bench (one label, or all labels in spec order)."""
        labels = [label] if label else [v.label for v in self.spec.bench(bench).variants]
        return [e for lab in labels for e in self._fits.get((bench, lab), [])]

    def measure(self, name: str) -> dict[str, Any] | None:
        return self._measures.get(name)

    def tune_points(self, bench: str, model: str) -> list[dict[str, Any]]:
        return [e for _, e in sorted(self._tune.get((bench, model), []), key=lambda p: p[0])]

    def labels(self, bench: str) -> list[str]:
        """Labels of a bench that have records (fits or an imported summary), in spec order."""
        return [v.label for v in self.spec.bench(bench).variants
                if (bench, v.label) in self._fits or (bench, v.label) in self._summaries]

    def summary_entry(self, bench: str, label: str) -> dict[str, Any] | None:
        return self._summaries.get((bench, label))

    def cells(self, bench: str, metric: str | None = None) -> list[Cell]:
        """Mean ± sample std per (label, split, metric) of a bench, in spec order; per-seed
        fits when a label has them, else its imported summary. ``metric`` filters."""
        out: list[Cell] = []
        for label in self.labels(bench):
            fits = self._fits.get((bench, label), [])
            if fits:
                groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
                for e in fits:
                    for r in e["rows"]:
                        v = math.nan if r.get("value") is None else float(r["value"])
                        groups.setdefault((r["split"], r["metric"]), []).append((e["seed"], v))
                params = [e["stats"].get("num_parameters") for e in fits if e["stats"].get("num_parameters") is not None]
                for (split, m), vals in groups.items():
                    values = [v for _, v in vals]
                    out.append(Cell(label, split, m, len(values), sum(values) / len(values), sample_std(values),
                                    [s for s, _ in vals], sum(params) / len(params) if params else None, False, values))
            else:
                e = self._summaries[(bench, label)]
                for r in e["rows"]:
                    out.append(Cell(label, r["split"], r["metric"], r["n"], float(r["mean"]),
                                    math.nan if r.get("std") is None else float(r["std"]), list(r.get("seeds", [])),
                                    e.get("stats", {}).get("num_parameters"), True))
        return [c for c in out if metric is None or c.metric == metric]

    def cell(self, bench: str, label: str, split: str, metric: str | None = None) -> Cell | None:
        for c in self.cells(bench, metric):
            if c.label == label and c.split == split:
                return c
        return None

    def metrics(self, bench: str) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.cells(bench)))

    def other_spec(self, name: str) -> "ReportContext | None":
        """The context of another spec's records in the same records folder (e.g. the rsgn
        report quoting the speed spec's scaling measurement); None if it has no records."""
        from .._spec import get_spec

        if self.records_dir is None or not (self.records_dir / f"{name}.jsonl").exists():
            return None
        return ReportContext(get_spec(name), self.scale, RecordStore(self.records_dir / f"{name}.jsonl").entries(),
                             self.out, False, f"{name}.jsonl", self.configs_dir, self.records_dir)

    def configs(self, stem: str, follow: bool = True) -> dict[str, Any]:
        """The configs file ``stem`` this report's runs start from (``OUT/configs/SCALE`` when a
        tune wrote one there, else the package's); ``follow`` resolves ``same_as``."""
        from ...tasks import _configs

        if self.configs_dir is not None and _configs.path(stem, self.configs_dir).exists():
            return _configs.load(stem, self.configs_dir, follow=follow)
        return _configs.load(stem, follow=follow)

    def chosen_config(self, bench: str, label: str) -> dict[str, Any]:
        """The configuration the configs file of ``bench`` holds for ``label`` (what a run
        starts from now; ``{}`` when none was chosen): to tell records of an earlier choice."""
        b = self.spec.bench(bench)
        return self.configs(b.configs).get("models", {}).get(b.tuned_config_key(b.variant(label)), {}).get("config", {})

    def commits(self) -> list[str]:
        return sorted({str(e.get("commit"))[:7] for e in self.entries if e.get("commit")})

    def figure_path(self, name: str) -> Path:
        """Where figure ``name`` of this report is written (``NAME_<name>.png`` beside it)."""
        suffix = "" if self.scale == "quick" else f"_{self.scale}"
        return self.out / f"{self.spec.name}{suffix}_{name}.png"


# -- sections ---------------------------------------------------------------------------------------
class Section:
    """Base class: ``render(ctx) -> list[str]`` markdown lines."""

    def render(self, ctx: ReportContext) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Section):
    """Fixed markdown (headings, definitions). Numbers belong in the other sections, which
    compute them from records."""

    text: str

    def render(self, ctx: ReportContext) -> list[str]:
        return self.text.strip("\n").splitlines() + [""]


@dataclass(frozen=True)
class Custom(Section):
    """``fn(ctx) -> list[str]``: a section computed from the records by the spec's own code."""

    fn: Callable[[ReportContext], list[str]]

    def render(self, ctx: ReportContext) -> list[str]:
        return list(self.fn(ctx))


def unrun_line(ctx: ReportContext, bench: str, qualifier: str = "") -> str | None:
    """One markdown bullet naming what of ``bench`` has no records: the whole bench, its labels
    without records, and the seeds of the bench a label's fits lack (``qualifier`` follows "not
    run", e.g. " in this round"); ``None`` when every label has records on every seed (an
    imported summary counts as every seed)."""
    labels = [v.label for v in ctx.spec.bench(bench).variants]
    have = set(ctx.labels(bench))
    if not have:
        return f"- `{bench}`: not run{qualifier} (no records)."
    gone = [f"`{lab}`" for lab in labels if lab not in have]
    seeds = ctx.spec.bench(bench).at(ctx.scale).seeds
    for lab in labels:
        done = {f["seed"] for f in ctx.fits(bench, lab)}
        lacking = [str(s) for s in seeds if s not in done]
        if done and lacking:
            gone.append(f"`{lab}` seed{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}")
    return f"- `{bench}`: not run{qualifier}: " + ", ".join(gone) + "." if gone else None


def at_epoch_cap(entry: dict) -> bool:
    """Whether a fit's epoch cap, not the patience rule, ended it (from its record's ``history``)."""
    return entry["stats"]["history"]["epochs_run"] >= int(entry["config"].get("epochs", math.inf))


def capped_fits(ctx: ReportContext, bench: str) -> tuple[int, dict[str, tuple[int, list[int]]]]:
    """Fits of ``bench`` that its epoch cap, not the patience rule, ended (from each record's
    ``history``): ``(trained fits with a history, {label: (fits of that label, best validation
    epochs of its capped fits, 1-based)})``, only labels with a capped fit, in spec order."""
    total, capped = 0, {}
    for label in ctx.labels(bench):
        fits = [e for e in ctx.fits(bench, label) if "epochs_run" in (e["stats"].get("history") or {})]
        total += len(fits)
        hit = [e["stats"]["history"]["best_val_epoch"] + 1 for e in fits if at_epoch_cap(e)]  # 0-based in the records
        if hit:
            capped[label] = (len(fits), hit)
    return total, capped


def stale_fits(ctx: ReportContext) -> dict[tuple[str, str], tuple[list[int], list[str]]]:
    """Fits this report reads that a run would not reuse: made at another configuration (the chosen
    one with the variant's and the scale's overrides) or another task size than the spec asks for
    now. ``{(bench, label): (seeds, differing keys)}`` in record order. Task parameters are compared
    where the spec sets a scalar (e.g. ``n_train``); lists are left out because a task may
    normalise them (``"sin+gauss"`` is stored as ``"gauss+sin"``). Such fits stay in the tables
    until they are rerun, so the provenance section names them."""
    out: dict[tuple[str, str], tuple[list[int], list[str]]] = {}
    for e in ctx.entries:
        if e.get("kind") != "fit":
            continue
        for slot in e.get("slots", []):
            if slot.get("spec") != ctx.spec.name or slot.get("scale") != ctx.scale or slot.get("stage") == "tune":
                continue
            try:
                params = ctx.spec.bench(slot["bench"]).at(ctx.scale).params
            except ValueError:  # a bench the spec no longer has: no table reads it
                continue
            keys = _config_differences(ctx, e, slot)
            have = e.get("task_params") or {}
            keys += [k for k, v in params.items() if isinstance(v, (int, float, str, bool)) and k in have and have[k] != v]
            if keys:
                seeds, diff = out.setdefault((slot["bench"], slot["label"]), ([], []))
                seeds.append(slot.get("seed"))
                diff += [k for k in keys if k not in diff]
    return out


def grid_edges(ctx: ReportContext, bench: str) -> list[str]:
    """Grid searches of ``bench`` that chose the smallest or largest value of a numeric axis with at
    least 3 values (from the configs file's chosen configuration): ``["`dict_learning` alpha
    0.0003 (the smallest of 6 tried)"]``. A value beyond the grid might have done better; a chosen 0
    (a penalty switched off) is not an edge."""
    b = ctx.spec.bench(bench)
    models = ctx.configs(b.configs).get("models", {})
    out = []
    for key, search in b.tuning.items():
        chosen = models.get(key, {}).get("config", {})
        if not isinstance(search, Grid) or not chosen:
            continue
        for axis, values in search.axes.items():
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            if isinstance(axis, tuple) or len(values) < 3 or not numeric or chosen.get(axis) is None:
                continue
            v = chosen[axis]
            if v != 0 and v in (min(values), max(values)):  # 0 (a penalty off) has nothing beyond it
                side = "smallest" if v == min(values) else "largest"
                out.append(f"`{key}` {axis} {fmt(v)} (the {side} of {len(values)} tried)")
    return out


def ood_id_ratio(ctx: ReportContext, bench: str, label: str, split: str, metric: str) -> float:
    """Mean error on ``split`` / mean error on ``id`` (errors: ``1 - accuracy`` for accuracy)."""
    a, b = ctx.cell(bench, label, split, metric), ctx.cell(bench, label, "id", metric)
    if a is None or b is None:
        return math.nan
    den = to_error(b.mean, metric)
    return to_error(a.mean, metric) / den if den > 0 else math.inf


def ratio_to_best(ctx: ReportContext, bench: str, label: str, split: str, metric: str,
                  exclude: Iterable[str] = ()) -> tuple[float, str | None, float]:
    """``(label's mean error / the best other label's, best label, its error)`` on ``split``;
    labels in ``exclude`` are not candidates. NaN when nothing to compare."""
    mine = ctx.cell(bench, label, split, metric)
    others = [c for c in ctx.cells(bench, metric) if c.split == split and c.label != label and c.label not in exclude]
    if mine is None or not others:
        return math.nan, None, math.nan
    best = min(others, key=lambda c: to_error(c.mean, metric))
    b = to_error(best.mean, metric)
    return (to_error(mine.mean, metric) / b if b > 0 else math.inf), best.label, b


@dataclass(frozen=True)
class ResultsTable(Section):
    """Per label: parameters, seeds, mean ± sample std on every split (one seed: the mean
    alone), OOD/ID error ratios; then ``model``'s error relative to the best other label per
    split (once more without ``exclude_from_best``, if given). One table per metric.

    Attributes:
        bench: the bench; title: a heading (default: the bench's title or name);
        metrics: which metrics (default all); model: the label compared with the rest;
        references: labels shown for reference (e.g. a model-free predictor), never "best";
        percent: print accuracy-like values in %; note: a line under the heading.
    """

    bench: str
    title: str | None = None
    metrics: tuple[str, ...] | None = None
    model: str | None = "vn"
    exclude_from_best: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    percent: bool = False
    ratios: bool = True
    note: str = ""
    level: int = 2

    def render(self, ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(self.bench)
        title = self.title or b.title or b.name
        lines = [f"{'#' * self.level} {title}", ""]
        if self.note:
            lines += [self.note, ""]
        if not ctx.labels(self.bench):
            return lines + [f"No records yet (`hebbnets reproduce {ctx.spec.name} --benches {self.bench}`).", ""]
        for metric in self.metrics or ctx.metrics(self.bench):
            cells = ctx.cells(self.bench, metric)
            if not cells:
                continue
            splits = list(dict.fromkeys(c.split for c in cells))
            ood = [s for s in splits if s != "id"] if "id" in splits and self.ratios else []
            labels = list(dict.fromkeys(c.label for c in cells))
            by = {(c.label, c.split): c for c in cells}
            unit = " (%)" if self.percent else ""
            lines += [f"metric: `{metric}`{unit}, mean ± sample std over seeds", ""]
            head = ["model", "params", "seeds", *splits, *[f"{s}/id" for s in ood]]
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for lab in labels:
                first = next(c for c in cells if c.label == lab)
                params = "—" if first.num_parameters is None else f"{int(round(first.num_parameters)):,}"
                seeds = ",".join(map(str, first.seeds)) + (" (summary)" if first.imported else "")
                vals = [by[(lab, s)].text(self.percent) if (lab, s) in by else "—" for s in splits]
                rats = [fmt(ood_id_ratio(ctx, self.bench, lab, s, metric)) for s in ood]
                lines.append("| " + " | ".join([lab, params, seeds, *vals, *rats]) + " |")
            lines.append("")
            if self.model and self.model in labels and len(labels) > 1:
                refs = tuple(self.references)
                for exclude in (refs, refs + tuple(self.exclude_from_best)) if self.exclude_from_best else (refs,):
                    parts = []
                    for s in splits:
                        r, best, _ = ratio_to_best(ctx, self.bench, self.model, s, metric, exclude)
                        if best is not None:
                            parts.append(f"{s} **{fmt(r)}** (best {best})")
                    if parts:
                        dropped = [x for x in exclude if x not in refs]
                        without = (" without " + ", ".join(dropped)) if dropped else ""
                        lines += [f"{self.model} error / best other model's error{without} (< 1: {self.model} better): "
                                  + "; ".join(parts), ""]
        return lines


#: the words a verdict may take (``Verdict.word``); True / False / None map to the first three
VERDICT_WORDS = ("holds", "does not hold", "not measured", "holds narrowly", "holds only through the structure",
                 "holds, and the mechanism is needed", "not resolvable at this size", "undecided")


@dataclass(frozen=True)
class Point:
    """One ratio a claim rests on, for the scorecard figure: ``label``'s error / ``against``'s
    on ``bench`` / ``split``, the ratio of the means and the per-seed ratios (each seed's error
    over the comparison's mean error)."""

    bench: str
    split: str
    label: str
    against: str
    ratio: float
    per_seed: tuple[float, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """What a claim's check returns.

    Attributes:
        verdict: True (holds), False (does not hold), None (not measured), or one of
            ``VERDICT_WORDS``.
        evidence: the numbers behind it, one short sentence (a claim line is at most two lines).
        effect: the effect with its interval, e.g. ``"0.255x [0.24, 0.27]"``.
        against: what it was compared with (e.g. ``"mlp, the best baseline"``).
        seeds: the seeds behind it (e.g. ``"0,1,2"``).
        notes: caveats, rendered as numbered notes under the report (``Notes``) and linked.
        points: the ratios it rests on, drawn by the scorecard figure.
        reading: the model the claim is about where that is one model (the "when to use what" table).
    """

    verdict: bool | None | str
    evidence: str = ""
    effect: str = ""
    against: str = ""
    seeds: str = ""
    notes: tuple[str, ...] = ()
    points: tuple[Point, ...] = ()
    reading: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.verdict, str) and self.verdict not in VERDICT_WORDS:
            raise ValueError(f"verdict: expected True, False, None or one of {list(VERDICT_WORDS)}, "
                             f"got {self.verdict!r}")
        object.__setattr__(self, "notes", tuple(n for n in self.notes if n))
        object.__setattr__(self, "points", tuple(self.points))

    @property
    def word(self) -> str:
        if isinstance(self.verdict, str):
            return self.verdict
        return {True: "holds", False: "does not hold", None: "not measured"}[self.verdict]

    @property
    def holds(self) -> bool | None:
        """True for every "holds ..." word, False for "does not hold" and for "holds only through
        the structure" (said of a claim that VN's mechanism is needed: the result holds, the
        claim about its cause does not), None otherwise."""
        w = self.word
        if w == "holds only through the structure":
            return False
        return None if w in ("not measured", "not resolvable at this size", "undecided") else w.startswith("holds")


def as_verdict(result: Verdict | tuple[bool | None, str]) -> Verdict:
    """A check's result as a ``Verdict`` (a plain ``(verdict, evidence)`` pair is accepted)."""
    if isinstance(result, Verdict):
        return result
    verdict, evidence = result
    return Verdict(verdict, evidence)


@dataclass(frozen=True)
class Claim(Section):
    """A statement and its verdict from the records: ``check(ctx)`` returns a ``Verdict`` (or a
    plain ``(verdict, evidence)`` pair). Rendered alone it is one claim line; inside ``Verdicts``
    it is one row of the report's verdict table. ``key`` names it in the scorecard (default: the
    statement); ``group`` is the scorecard's grouping (e.g. "VN ID parity")."""

    statement: str
    check: Callable[[ReportContext], Verdict | tuple[bool | None, str]]
    key: str = ""
    group: str = ""

    def verdict(self, ctx: ReportContext) -> Verdict:
        return as_verdict(self.check(ctx))

    def render(self, ctx: ReportContext) -> list[str]:
        v = self.verdict(ctx)
        refs = ctx.note_refs(v.notes)
        return [f"- **{self.statement}**: {v.word}. {v.evidence}{refs}".rstrip(), ""]


def table_cell(text: str) -> str:
    """``text`` safe inside a markdown table cell (pipes escaped, one line)."""
    return text.replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class Verdicts(Section):
    """The report's verdict table: one row per claim (statement, verdict, effect with its
    interval, what it was compared with, seeds, the numbers), caveats as numbered notes. A
    report opens with it; ``reports/README.md`` (the scorecard) gathers every spec's."""

    claims: tuple[Claim, ...]
    title: str = "Verdicts"
    note: str = ""
    level: int = 2

    def render(self, ctx: ReportContext) -> list[str]:
        lines = [f"{'#' * self.level} {self.title}", ""]
        if self.note:
            lines += [self.note, ""]
        lines += ["| claim | verdict | effect [95 % CI] | against | seeds | evidence |", "|---|---|---|---|---|---|"]
        for c in self.claims:
            v = c.verdict(ctx)
            lines.append("| " + " | ".join(table_cell(t) for t in (
                c.statement, f"**{v.word}**", v.effect or "—", v.against or "—", v.seeds or "—",
                (v.evidence + ctx.note_refs(v.notes)).strip() or "—")) + " |")
        return lines + [""]

    def verdicts(self, ctx: ReportContext) -> list[tuple[Claim, Verdict]]:
        return [(c, c.verdict(ctx)) for c in self.claims]


@dataclass(frozen=True)
class Notes(Section):
    """The numbered notes that claims and tables referred to (in the order first referred to)."""

    title: str = "Notes"
    level: int = 2

    def render(self, ctx: ReportContext) -> list[str]:
        if not ctx.notes:
            return []
        lines = [f"{'#' * self.level} {self.title}", ""]
        lines += [f"{i}. {text}" for i, text in enumerate(ctx.notes, 1)]
        return lines + [""]


def _point_text(config: dict[str, Any], keys: list[str] | None = None) -> str:
    items = config.items() if keys is None else ((k, config[k]) for k in keys if k in config)
    return ", ".join(f"{k}={v}" for k, v in items)


@dataclass(frozen=True)
class TuningTable(Section):
    """The configuration each model of a bench runs with, chosen on validation data, and every
    validation point behind the choice, from the bench's configs file."""

    bench: str
    title: str | None = None
    level: int = 3

    def render(self, ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(self.bench)
        doc = ctx.configs(b.configs)
        lines = [f"{'#' * self.level} {self.title or f'Configurations of {b.name} (validation only)'}", ""]
        models = doc.get("models", {})
        if not models:
            return lines + [f"No configs file `{b.configs}.json` yet: every model runs with its defaults.", ""]
        own = ctx.configs(b.configs, follow=False)
        searched_here = ", ".join(f"`{m}`" for m in own.get("models", {}))
        same = (f" = the choice made for `{own['same_as']}`" + (f" ({own['note']})" if own.get("note") else "")
                + (f", except {searched_here}, searched here" if searched_here else "") if "same_as" in own else "")
        lines += [f"From `hebbnets/tasks/configs/{b.configs}.json`{same}; validation metric `{doc.get('metric', '?')}`.", ""]
        hows = {}
        for m, d in models.items():
            how = d.get("source", "") + (f" (configuration set at commit {str(d['commit'])[:7]})" if d.get("commit") else "")
            hows.setdefault(how, []).append(m)
        for how, ms in hows.items():
            lines += [(f"How ({', '.join(ms)}): " if len(hows) > 1 else "How: ") + how, ""]
        lines += ["| model | points | chosen configuration | validation |", "|---|---|---|---|"]
        for m, d in models.items():
            lines.append(f"| {m} | {len(d.get('points', []))} | `{json.dumps(d['config'])}` | {fmt(d.get('value'), 4)} |")
        lines.append("")
        rows = [(m, p) for m, d in models.items() for p in d.get("points", [])]
        if rows:
            rounds = any("round" in p for _, p in rows)
            kept_col = any("accepted" in p for _, p in rows)
            epochs_col = any("epochs_run" in p for _, p in rows)
            lines += ["| model |" + (" round |" if rounds else "") + " point | validation |" + (" kept |" if kept_col else "")
                      + (" epochs |" if epochs_col else ""),
                      "|---|" + ("---|" if rounds else "") + "---|---|" + ("---|" if kept_col else "")
                      + ("---|" if epochs_col else "")]
            for m, d in models.items():
                varying = _varying(d.get("points", []))
                for p in d.get("points", []):
                    varied = p.get("move", p.get("point"))
                    if isinstance(varied, dict):
                        point = _point_text(varied)
                    elif "accepted" in p:
                        point = "base"  # the first point of a successive search
                    else:
                        point = _point_text(p["config"], varying)
                    kept = {True: " yes |", False: " no |"}.get(p.get("accepted"), " |") if kept_col else ""
                    epochs = f" {_epochs_text(p)} |" if epochs_col else ""
                    lines.append(f"| {m} |" + (f" {p.get('round', '')} |" if rounds else "")
                                 + f" `{point}` | {fmt(p['value'], 4)} |" + kept + epochs)
            lines.append("")
            if epochs_col:
                lines += [_capped_points_line(models), ""]
        return lines


def _point_at_cap(point: dict[str, Any]) -> bool | None:
    """Whether a validation point's training ended at its epoch cap (not the patience rule); None
    when the point carries no epoch count (recorded before the tune protocol kept it) or no cap."""
    cap = point.get("epochs_cap")
    if "epochs_run" not in point or not isinstance(cap, (int, float)) or isinstance(cap, bool):
        return None
    return point["epochs_run"] >= cap


def _epochs_text(point: dict[str, Any]) -> str:
    """``"37"``, ``"200 (cap)"``, or ``"?"`` for a point recorded without its epoch count."""
    if "epochs_run" not in point:
        return "?"
    return f"{point['epochs_run']}" + (" (cap)" if _point_at_cap(point) else "")


def _capped_points_line(models: dict[str, Any]) -> str:
    """One line under the points table: per model, how many of its points with an epoch count
    ended at their cap, so a search whose best point was still improving is visible."""
    parts, unknown = [], 0
    for m, d in models.items():
        known = [p for p in d.get("points", []) if _point_at_cap(p) is not None]
        unknown += len(d.get("points", [])) - len(known)
        hit = sum(bool(_point_at_cap(p)) for p in known)
        if hit:
            chosen = any(_point_at_cap(p) and p.get("value") == d.get("value") for p in known)  # the best value
            parts.append(f"`{m}` {hit} of {len(known)}" + (" (the chosen point among them)" if chosen else ""))
    head = ("Validation points that ended at their epoch cap, not by patience: "
            + ("; ".join(parts) if parts else "none") + ".")
    return head + (f" {unknown} point(s) were recorded without an epoch count (`?`)." if unknown else "")


def _varying(points: list[dict[str, Any]]) -> list[str]:
    """Config keys whose values differ between ``points`` (all keys for a single point)."""
    configs = [p["config"] for p in points if isinstance(p.get("config"), dict)]
    keys = list(dict.fromkeys(k for c in configs for k in c))
    if len(configs) < 2:
        return keys
    return [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1]


FIGURES: Registry[Callable[..., Any]] = Registry("figure")


def register_figure(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``fn(ctx, **options) -> matplotlib Figure | None`` draws figure ``kind``
    from records (``None``: nothing to draw yet)."""
    return FIGURES.register(kind)


def figure_kinds() -> list[str]:
    return FIGURES.names()


@dataclass(frozen=True)
class Figure(Section):
    """A registered figure ``kind`` drawn from the records into ``NAME_<name>.png`` beside the
    report and linked from it; ``options`` go to the drawing function."""

    kind: str
    name: str
    caption: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        FIGURES.get(self.kind, "kind")

    def render(self, ctx: ReportContext) -> list[str]:
        path = ctx.figure_path(self.name)
        if ctx.figures:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig = FIGURES.get(self.kind)(ctx, **self.options)
            if fig is None:
                return [f"*{self.caption}*: no records to draw yet.", ""]
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=110, metadata={"Software": None})
            plt.close(fig)
            ctx.figure_files.append(str(path))
        elif not _has_data(ctx, self):
            return [f"*{self.caption}*: no records to draw yet.", ""]
        return [f"![{self.caption}]({path.name})", "", f"*{self.caption}*", ""]


def _has_data(ctx: ReportContext, fig: Figure) -> bool:
    """Whether ``fig`` would draw something (without drawing it): used when figures are off."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = FIGURES.get(fig.kind)(ctx, **fig.options)
    if out is None:
        return False
    plt.close(out)
    return True


def report_pages(spec: Spec, scale: str = "quick") -> list[str]:
    """File names of ``spec``'s report pages at ``scale``: the main page, then ``spec.pages``."""
    suffix = "" if scale == "quick" else f"_{scale}"
    return [f"{spec.name}{suffix}.md", *(f"{spec.name}_{page}{suffix}.md" for page in spec.pages)]


def build_report(spec: Spec, store: RecordStore, out: str | Path, *, scale: str = "quick",
                 figures: bool = True, records_name: str | None = None, configs_dir: Path | None = None) -> Path:
    """Render ``spec`` from ``store`` into ``out/NAME.md`` (``NAME_<scale>.md`` off the quick
    scale), its further pages (``report_pages``) and its figures; returns the main page's path.
    Deterministic in the records."""
    out = Path(out)
    ctx = ReportContext(spec, scale, store.entries(), out, figures, records_name or store.path.name, configs_dir,
                        store.path.parent)
    names = report_pages(spec, scale)
    scale_arg = "" if scale == "quick" else f" --scale {scale}"
    comment = (f"<!-- written by `hebbnets report {spec.name}{scale_arg}` from {ctx.store_path}; edit the spec "
               f"(hebbnets/experiments/specs), not this file -->")
    others = [f"[{name[:-3]}]({name})" for name in names[1:]]
    lines = [f"# {spec.title}", "", comment, ""]
    if others:
        lines += ["More of this report: " + ", ".join(others) + ".", ""]
    for section in spec.sections:
        lines += section.render(ctx)
    lines += _provenance(spec, ctx, scale_arg)
    paths = [write_page(out / names[0], lines)]
    for (page, sections), name in zip(spec.pages.items(), names[1:]):
        ctx.notes = []  # notes are numbered per page
        lines = [f"# {spec.title}: {page}", "", comment, "", f"Part of [{names[0][:-3]}]({names[0]}).", ""]
        for section in sections:
            lines += section.render(ctx)
        paths.append(write_page(out / name, lines))
    return paths[0]


def write_page(path: Path, lines: list[str]) -> Path:
    while lines and not lines[-1]:
        lines.pop()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _dirty_text(ctx: ReportContext, entries: list[dict[str, Any]]) -> str:
    """The entries computed from a tree with uncommitted changes, counted per code commit, and how many
    of their fits ran the configuration the configs file chooses now: those measure the current choice
    (a ``reproduce --stage tune,run`` invocation rewrites that file before its fits, so they are dirty
    by that file even when the code is the commit's)."""
    dirty = [e for e in entries if e.get("dirty")]
    commits = sorted({str(e.get("commit"))[:7] for e in dirty})
    counts = ", ".join(f"{c}: {sum(1 for e in dirty if str(e.get('commit'))[:7] == c)}" for c in commits)
    fits = [(e, slot) for e in dirty for slot in [s for s in e["slots"] if s.get("spec") == ctx.spec.name][:1]
            if e["kind"] == "fit" and slot.get("stage") != "tune"]
    same = sum(1 for e, slot in fits if not _config_differences(ctx, e, slot))
    if not fits:
        return counts
    which = "all" if same == len(fits) else f"{same} of {len(fits)} fits"
    return f"{counts}; {which} at the configurations chosen now, so they measure the current choice"


def _config_differences(ctx: ReportContext, entry: dict[str, Any], slot: dict[str, Any]) -> list[str]:
    """The keys where a fit record's configuration differs from the one a run of ``slot`` would use
    now (``_chosen_or_empty``), in that configuration's order; ``[]`` when it would be reused."""
    have = entry.get("config", {})
    return [k for k, v in _chosen_or_empty(ctx, slot).items() if have.get(k) != v]


def _chosen_or_empty(ctx: ReportContext, slot: dict[str, Any]) -> dict[str, Any]:
    """The configuration a run of ``slot`` would start from now (the chosen one, the variant's and the
    scale's overrides: what the run stage resolves); ``{}`` for a bench or label the spec no longer has."""
    from .._run import resolve_config

    try:
        bench = ctx.spec.bench(slot["bench"])
        v = bench.variant(slot["label"])
    except ValueError:
        return {}
    scale_config = {k: dict(c) for k, c in bench.at(ctx.scale).config.items()}
    cfg = resolve_config(v.model, ctx.chosen_config(bench.name, v.label), dict(v.config), scale_config)
    cfg.pop("progress", None)  # cosmetic, never part of a record's identity
    return json.loads(json.dumps(cfg))  # as a record stores it (tuples as lists)


def _provenance(spec: Spec, ctx: ReportContext, scale_arg: str) -> list[str]:
    """How the numbers were made (the spec's intro), the records behind them and their compute."""
    scale = ctx.scale
    fits = [e for e in ctx.entries if any(s.get("spec") == spec.name and s.get("scale") == scale
                                          for s in e.get("slots", []))]
    dirty = sum(1 for e in fits if e.get("dirty"))
    imported = sum(1 for e in fits if e.get("imported_from"))
    commits = sorted({str(e.get("commit"))[:7] for e in fits if e.get("commit")})
    lines = ["## How these numbers were made", ""]
    if spec.intro:
        lines += [spec.intro.strip(), ""]
    tuning = sum(1 for e in fits if any(s.get("stage") == "tune" for s in e.get("slots", [])))
    kinds = [f"{n} {what}" for n, what in ((sum(1 for e in fits if e["kind"] == "fit") - tuning, "fits"),
                                            (tuning, "validation points"),
                                            (sum(1 for e in fits if e["kind"] == "summary"), "imported summaries"),
                                            (sum(1 for e in fits if e["kind"] == "measure"), "measurements")) if n]
    lines += [f"Rerun: `hebbnets reproduce {spec.name}{scale_arg}` (scale `{scale}`). Rebuild this page from the "
              f"committed records alone: `hebbnets report {spec.name}{scale_arg}`. Records: `{ctx.store_path}`, "
              f"{len(fits)} entries ({', '.join(kinds)})" + (f"; {imported} imported from earlier result files, with "
                                                             "provenance" if imported else "")
              + (f"; code commits {', '.join(commits)}" if commits else "")
              + (f"; {dirty} computed from a tree with uncommitted changes ({_dirty_text(ctx, fits)})" if dirty else "")
              + ".", ""]
    stale = stale_fits(ctx)
    if stale:
        lines += ["**Records from an earlier setting:** these fits were made at another configuration or task size than "
                  "the spec and the configs file ask for now, so `hebbnets reproduce` would run them again; every number "
                  "of theirs above comes from that earlier setting: "
                  + "; ".join(f"`{b}/{lab}` seed{'s' if len(seeds) > 1 else ''} {', '.join(str(x) for x in sorted(seeds))} "
                              f"(differs in {', '.join(f'`{k}`' for k in keys)})"
                              for (b, lab), (seeds, keys) in stale.items()) + ".", ""]
    # a job's own wall time (`seconds`: data, every training stage, scoring), not `fit_seconds`, which a
    # continual fit's second stage (`partial_fit_seconds`) and the scoring leave out
    timed = [e["stats"].get("seconds", e["stats"].get("fit_seconds")) for e in fits if e["kind"] != "summary"]
    known = [t for t in timed if t is not None]
    if known:
        untimed = len(fits) - len(known)
        lines += [f"Compute behind these records: {sum(known) / 3600:.1f} h of job time over {len(known)} entries "
                  "(each fit's or measurement's own wall time as recorded: data, every training stage, scoring)"
                  + (f"; {untimed} entries recorded no time" if untimed else "") + ".", ""]
    return lines
