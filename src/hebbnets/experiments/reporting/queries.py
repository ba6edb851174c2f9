"""Queries several reports share: the first metric of a bench, its OOD splits, the best of a set
of labels, ``mean ± std`` strings, markdown tables, and the statistics a claim's ratio carries
(a 95 % interval and a Welch test on log errors).

Every function reads a ``ReportContext`` or plain values; nothing here trains or measures.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Sequence

from ...measures.summary import sample_std, to_error
from .sections import Cell, Point, ReportContext, fmt


def first_metric(ctx: ReportContext, bench: str) -> str | None:
    """The bench's first recorded metric (its task metric), or None without records."""
    metrics = ctx.metrics(bench)
    return metrics[0] if metrics else None


def ood_splits(ctx: ReportContext, bench: str, metric: str | None) -> list[str]:
    """The bench's recorded splits other than ``id``, in record order."""
    return [s for s in dict.fromkeys(c.split for c in ctx.cells(bench, metric)) if s != "id"]


def best(ctx: ReportContext, bench: str, split: str, metric: str | None, among: Iterable[str]) -> Cell | None:
    """The cell with the lowest mean error among the labels ``among`` on ``split`` (None if none)."""
    among = set(among)
    cells = [c for c in ctx.cells(bench, metric) if c.split == split and c.label in among]
    return min(cells, key=lambda c: to_error(c.mean, c.metric)) if cells else None


def mean_std(values: Sequence[float], digits: int = 3, scale: float = 1.0, fixed: bool = False) -> str:
    """``mean ± sample std`` of ``values`` (NaN and None dropped) times ``scale``: ``digits``
    significant digits, or ``digits`` decimals with ``fixed``; the mean alone for one value, "—"
    for none."""
    vals = [scale * v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return "—"
    f = (lambda v: f"{v:.{digits}f}") if fixed else (lambda v: fmt(v, digits))
    m = statistics.mean(vals)
    return f(m) if len(vals) < 2 else f"{f(m)} ± {f(sample_std(vals))}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown table (and the blank line after it)."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows] + [""])


def _t_quantile(df: float, q: float = 0.975) -> float:
    from scipy import stats

    return float(stats.t.ppf(q, df))


def log_ratio_interval(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Welch's test on log errors: ``(lo, hi, p)``, the ``level`` interval of the ratio of the
    geometric means ``a / b`` (per-seed errors, both positive) and the two-sided p-value of
    "equal means of the logs". NaN where either side has fewer than 2 values or no spread.

    Errors are compared on the log scale because a ratio is the claim's unit and errors are
    skewed; with 3 seeds per side the interval is wide, which is the point of printing it."""
    la = [math.log(v) for v in a if v is not None and v > 0 and math.isfinite(v)]
    lb = [math.log(v) for v in b if v is not None and v > 0 and math.isfinite(v)]
    if len(la) < 2 or len(lb) < 2:
        return math.nan, math.nan, math.nan
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    diff = statistics.mean(la) - statistics.mean(lb)
    if se == 0:
        return math.exp(diff), math.exp(diff), (0.0 if diff else 1.0)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    from scipy import stats

    t = _t_quantile(df, 0.5 + level / 2)
    p = float(2 * stats.t.sf(abs(diff / se), df))
    return math.exp(diff - t * se), math.exp(diff + t * se), p


def errors(cell: Cell | None) -> list[float]:
    """A cell's per-seed values as errors (``1 - accuracy`` for accuracy-like metrics)."""
    if cell is None:
        return []
    return [to_error(v, cell.metric) for v in cell.values if not math.isnan(v)]


def ratio_effect(mine: Cell | None, other: Cell | None) -> tuple[str, Point | None, float]:
    """``mine``'s mean error / ``other``'s as a claim's effect text ``"0.255x [0.24, 0.27], p 0.01"``
    (the ratio of the means; the bracket is the 95 % interval of the geometric-mean ratio from
    Welch's t on log errors, p its test), the ``Point`` the scorecard draws, and the ratio."""
    if mine is None or other is None:
        return "—", None, math.nan
    den = to_error(other.mean, other.metric)
    r = to_error(mine.mean, mine.metric) / den if den > 0 else math.inf
    lo, hi, p = log_ratio_interval(errors(mine), errors(other))
    text = f"{fmt(r)}x" + ("" if math.isnan(lo) else f" [{fmt(lo, 2)}, {fmt(hi, 2)}], p {fmt(p, 2)}")
    per_seed = tuple(v / den for v in errors(mine)) if den > 0 else ()
    return text, Point("", mine.split, mine.label, other.label, r, per_seed), r


#: a same-structure control "does as well" as a VN reading when, on every split compared, its 95 %
#: interval reaches 1 and its mean error is less than this many times the reading's
CONTROL_MARGIN = 2.0
#: a control decides a mechanism verdict only on at least this many seeds (and the reading's)
MIN_CONTROL_SEEDS = 3
#: (split, control / reading mean error, 95 % interval lo, hi, Welch p) on log errors
ControlTest = tuple[str, float, float, float, float]


def control_tests(ctx: ReportContext, bench: str, reading: str, control: str, metric: str | None,
                  splits: Iterable[str]) -> list[ControlTest]:
    """Per split of ``splits`` where both rows have records: the control's error against the reading's."""
    out = []
    for s in splits:
        a, b = ctx.cell(bench, control, s, metric), ctx.cell(bench, reading, s, metric)
        if a is None or b is None:
            continue
        lo, hi, p = log_ratio_interval(errors(a), errors(b))
        out.append((s, a.mean / b.mean, lo, hi, p))
    return out


def control_tests_text(tests: list[ControlTest]) -> str:
    return ", ".join(f"{s} {fmt(r)}x" + ("" if math.isnan(lo) else f" [{fmt(lo, 2)}, {fmt(hi, 2)}], p {fmt(p, 2)}")
                     for s, r, lo, hi, p in tests)


def control_outcome(ran: dict[str, list[ControlTest]]) -> tuple[list[str], list[str], str]:
    """``(worse, as_good, word)`` over the controls that ran: the controls worse beyond their
    interval on every split, those as good (within it and under ``CONTROL_MARGIN`` on every split),
    and the verdict word: every control worse -> the mechanism is needed; one as good -> only the
    structure; otherwise not resolvable at this size (mixed, or worse in the mean with an interval
    too wide to say so). The caller decides first whether enough controls ran."""
    worse = [c for c, t in ran.items() if t and all(lo > 1 for _, _, lo, _, _ in t)]
    match = [c for c, t in ran.items() if all(not lo > 1 and r < CONTROL_MARGIN for _, r, lo, _, _ in t)]
    word = ("holds, and the mechanism is needed" if ran and len(worse) == len(ran) else
            "holds only through the structure" if match else "not resolvable at this size")
    return worse, match, word


def seeds_text(*cells: Cell | None) -> str:
    """The seeds behind a comparison: ``"0,1,2"`` when every cell has the same, else per label
    (each label once, in first-seen order: cells of several splits repeat their labels)."""
    present = [c for c in cells if c is not None]
    if not present:
        return "—"
    sets = {tuple(sorted(c.seeds)) for c in present}
    if len(sets) == 1:
        return ",".join(map(str, next(iter(sets))))
    per_label = dict.fromkeys(f"{c.label} {','.join(map(str, sorted(c.seeds)))}" for c in present)
    return "; ".join(per_label)


def located(point: Point | None, bench: str) -> Point | None:
    """``point`` with its bench filled in (``ratio_effect`` does not know it)."""
    if point is None:
        return None
    return Point(bench, point.split, point.label, point.against, point.ratio, point.per_seed)


def values_of(entries: Iterable[dict[str, Any]], *path: str) -> list[float]:
    """``entry["stats"][path...]`` of each entry that has it (NaN and None dropped)."""
    out = []
    for e in entries:
        v: Any = e.get("stats", {})
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v):
            out.append(float(v))
    return out


# -- more shared queries (other engineers: insert below this line, one function per helper) ---------
