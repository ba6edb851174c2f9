"""The one-page scorecard, ``reports/README.md``, and its companion ``reports/claims.md``.

``README.md`` fits one screen: per report how many claims hold; "when to use what" from the same
verdicts; one figure of every ratio a VN claim rests on; then every claim, grouped into its family
(the same statement checked on several benches or tasks: one row, one cell per bench or task with
its verdict and effect). ``claims.md`` has one row per claim with everything behind it: the effect
with its interval and p-value, what it was compared with, the seeds, and a link to the report.

Built from the project specs' ``Verdicts`` sections and their records alone, so it can never
say something the reports do not (``hebbnets report all`` and ``hebbnets report scorecard``).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from .._spec import Spec
from .._store import RecordStore
from .sections import Claim, Point, ReportContext, Verdict, Verdicts, report_pages, table_cell, write_page

#: what each model is, in the words of the "when to use what" table (data; one line each)
MODEL_ROLES = {
    "vn": "plain Vector Network (vector reading, FISTA codes + Atomic-Hebb)",
    "vn_matrix": "matrix reading: `U G S^T` over shared row and column factors",
    "vn_pairs": "pair atoms `u_a v_b^T` decoded from two factor codes",
    "vn_applied": "applied reading: a context-selected map of a content input",
    "vn_applied_set": "applied reading over a set of bodies (nbody)",
    "applied_set_implicit": "control: `vn_applied_set` by implicit gradients, not Atomic-Hebb",
    "applied_implicit": "control: `vn_applied` by implicit gradients, not Atomic-Hebb",
    "AmortisedVN": "a LISTA encoder replacing FISTA at prediction",
    "vn-inpaint": "VN inpainting: `S g` fitted to the observed entries",
    "rsgn": "sparse RSGN (Poincaré-ball kNN graph, thresholded ignition)",
    "rsgn_parity": "the RSGN author's dense notebook model",
}

#: scorecard figure: the paper's bands (ID parity within 1.25x, OOD about 10x lower: at most 0.2x)
BANDS = {"ID parity (1.25x)": 1.25, "OOD 10x lower (0.2x)": 0.2}


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, spaces to '-', punctuation dropped."""
    keep = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return keep.replace(" ", "-")


def collect(specs: tuple[Spec, ...], records_dir: Path, configs_dir: Path | None = None,
            scale: str = "quick") -> list[tuple[Spec, Verdicts, Claim, Verdict]]:
    """Every claim of every ``Verdicts`` section of ``specs`` with its verdict, from the records."""
    out = []
    for spec in specs:
        path = Path(records_dir) / f"{spec.name}.jsonl"
        entries = RecordStore(path).entries() if path.exists() else []
        ctx = ReportContext(spec, scale, entries, Path(records_dir), False, f"records/{spec.name}.jsonl",
                            configs_dir, Path(records_dir))
        for section in spec.sections:
            if isinstance(section, Verdicts):
                out += [(spec, section, c, v) for c, v in section.verdicts(ctx)]
    return out


def _when_to_use(rows: list[tuple[Spec, Verdicts, Claim, Verdict]]) -> list[str]:
    by: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for spec, _, claim, v in rows:
        if not v.reading:
            continue
        holds, fails, open_ = by.setdefault(v.reading, ([], [], []))
        name = claim.key or claim.statement
        # the claim's bench (the text before its first ':'), else its report
        topic = name.split(":", 1)[0] if ":" in name else f"{spec.name} report"
        (holds if v.holds else fails if v.holds is False else open_).append(topic)
    if not by:
        return []
    lines = ["## When to use what", "",
             "Per model, from the verdicts below.", "",
             "| model | what it is | its claims hold on | do not hold on | undecided |", "|---|---|---|---|---|"]
    for reading, (holds, fails, open_) in by.items():
        lines.append("| " + " | ".join(table_cell(t) for t in (
            f"`{reading}`", MODEL_ROLES.get(reading, ""), _topics(holds) or "none",
            _topics(fails) or "none", _topics(open_) or "—")) + " |")
    return lines + [""]


def _topics(topics: list[str]) -> str:
    """``"3: spatial2d_decode (2), toy_atoms"``: how many claims, then their benches or reports,
    each with a count where several claims share it."""
    if not topics:
        return ""
    counts: dict[str, int] = {}
    for topic in topics:
        counts[topic] = counts.get(topic, 0) + 1
    return f"{len(topics)}: " + ", ".join(t if n == 1 else f"{t} ({n})" for t, n in counts.items())


def _summary(rows: list[tuple[Spec, Verdicts, Claim, Verdict]]) -> list[str]:
    """One line per report: how many of its claims hold, do not hold, or are open."""
    lines = ["## In one screen", "",
             "| report | claims | hold | do not hold | open (undecided, not measured) |", "|---|---|---|---|---|"]
    for name in dict.fromkeys(spec.name for spec, *_ in rows):
        mine = [v.holds for spec, _, _, v in rows if spec.name == name]
        page = report_pages(next(spec for spec, *_ in rows if spec.name == name))[0]
        lines.append(f"| [{name}]({page}) | {len(mine)} | {mine.count(True)} | {mine.count(False)} | "
                     f"{mine.count(None)} |")
    return lines + [""]


#: the scorecard's second page: one row per claim with its interval, comparison, seeds and link
CLAIMS_PAGE = "claims.md"

#: a trailing parenthetical names a claim's bench or task: "Sparser activity ... (tree, N = 1,024)"
_TRAILING_TOPIC = re.compile(r"^(?P<family>.+?) \((?P<topic>[^()]+)\)$")


def family_and_topic(claim: Claim) -> tuple[str, str]:
    """The family a claim belongs to (the statement shared by every bench or task it is checked
    on) and its topic (the bench or task): from the key ``"topic: family"`` when it has one, else
    from a trailing parenthetical of the statement, else the whole statement with no topic.

    >>> family_and_topic(Claim("x", print, key="spatial2d_decode: VN's ID parity"))
    ("VN's ID parity", 'spatial2d_decode')
    """
    if claim.key and ": " in claim.key:
        topic, family = claim.key.split(": ", 1)
        return family, topic
    m = _TRAILING_TOPIC.match(claim.statement)
    if m:
        return m["family"], m["topic"]
    return claim.statement, ""


def _short_effect(effect: str) -> str:
    """The effect and its interval without the p-value and the seeds' spread (the claims page keeps
    both).

    >>> _short_effect("0.5x [0.4, 0.6], p 0.01; +1.3 pp (seed std 1.8 pp)")
    '0.5x [0.4, 0.6]; +1.3 pp'
    """
    return re.sub(r" \(seed std [0-9.]+ pp\)", "", re.sub(r", p [0-9.e+-]+", "", effect))


def _families(rows: list[tuple[Spec, Verdicts, Claim, Verdict]]) -> list[str]:
    """Every claim in one table row per family: each bench or task with its verdict and effect."""
    groups: dict[tuple[str, str], list[tuple[str, Verdict]]] = {}
    for spec, _, claim, v in rows:
        family, topic = family_and_topic(claim)
        groups.setdefault((spec.name, family), []).append((topic, v))
    lines = ["## Every claim, by family", "",
             f"Per bench or task, each claim's verdict and effect [95 % CI]; p-values, comparisons and seeds: "
             f"[{CLAIMS_PAGE}]({CLAIMS_PAGE}).", "",
             "| report | claim | per bench or task: verdict, effect |", "|---|---|---|"]
    for (name, family), members in groups.items():
        cells = []
        for topic, v in members:
            effect = _short_effect(v.effect)
            cells.append(" ".join(t for t in (f"{topic}:" if topic else "", f"**{v.word}**", effect) if t))
        lines.append("| " + " | ".join(table_cell(t) for t in (
            f"[{name}]({CLAIMS_PAGE}#{_anchor(name)})", family, "; ".join(cells))) + " |")
    return lines + [""]


def _claims_page(rows: list[tuple[Spec, Verdicts, Claim, Verdict]]) -> list[str]:
    """``claims.md``: every claim, one row each, with everything the scorecard shortens."""
    lines = ["# Every claim, with its interval, test, comparison and seeds", "",
             "<!-- written by `hebbnets report scorecard` (and `hebbnets report all`) from records/*.jsonl; edit the "
             "specs (hebbnets/experiments/specs), not this file -->", "",
             "The scorecard's second page ([README.md](README.md)). Effect: the ratio of mean errors (test splits, mean "
             "over seeds), the 95 % interval of the geometric-mean ratio and its p-value (Welch's t on log errors over "
             "seeds). Caveats and numbers: the linked report.", ""]
    for name in dict.fromkeys(spec.name for spec, *_ in rows):
        lines += [f"## {name}", "", "| claim | verdict | effect [95 % CI] | against | seeds |", "|---|---|---|---|---|"]
        for spec, section, claim, v in rows:
            if spec.name != name:
                continue
            link = f"[{claim.key or claim.statement}]({report_pages(spec)[0]}#{_anchor(section.title)})"
            lines.append("| " + " | ".join(table_cell(t) for t in (
                link, f"**{v.word}**", v.effect or "—", v.against or "—", v.seeds or "—")) + " |")
        lines.append("")
    return lines


def build_scorecard(specs: tuple[Spec, ...], records_dir: str | Path, out: str | Path, *, figures: bool = True,
                    configs_dir: Path | None = None) -> Path:
    """Write ``out/README.md`` and ``out/claims.md`` (and ``out/scorecard.png`` with
    ``figures``) from the records of ``specs``; returns the README's path. Deterministic in the
    records."""
    out = Path(out)
    rows = collect(specs, Path(records_dir), configs_dir)
    lines = ["# Scorecard: what the measurements support", "",
             "<!-- written by `hebbnets report scorecard` (and `hebbnets report all`) from records/*.jsonl; edit the "
             "specs (hebbnets/experiments/specs), not this file -->", "",
             "Every claim the project checks, from the committed records. Effect: the ratio of mean errors "
             "(test splits, mean over seeds) with the 95 % interval of the geometric-mean ratio (Welch's t on log "
             "errors).", ""]
    lines += _summary(rows) + _when_to_use(rows)
    points = [p for _, _, _, v in rows for p in v.points]
    if figures and points:
        _figure(points, out / "scorecard.png")
    if points:
        lines += ["![error / best baseline per bench and split](scorecard.png)", "",
                  "*Error / the best baseline's of each model a claim rests on, per bench and split (bars: ratio of "
                  "means; dots: seeds); the paper's bands: ID 1.25x, OOD 0.2x.*", ""]
    lines += _families(rows)
    write_page(out / CLAIMS_PAGE, _claims_page(rows))
    return write_page(out / "README.md", lines)


def _figure(points: list[Point], path: Path) -> None:
    from .figures import ratio_bars

    fig = ratio_bars([p for p in points if math.isfinite(p.ratio) and p.ratio > 0])
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)

