"""Figure kinds for ``Figure`` sections, drawn from records only (matplotlib, Agg backend).

* ``id_vs_ood``: per bench and OOD split, every model's mean ID error against its mean OOD
  error, with sample-std error bars over seeds, on log-log axes with the diagonal.
* ``error_maps``: spatial2d per-centre error (``stats["error_map"]``, averaged over seeds), one
  panel per bench and model, the OOD square outlined.
* ``atoms``: a VN's most used atoms as images (``stats["atoms"]``, first seed), per bench and label.
* ``factors``: the factor libraries ``U``, ``S`` of a matrix reading as images (first seed).
* ``activity``: RSGN-style activity per model: fraction of nodes active and edges per sample.
* ``scaling``: time per sample against size on log-log axes, with least-squares slopes.
* ``forgetting_bars``, ``atom_factor_usage``, ``sparsity``, ``stage_atoms``: the vn_claims report's
  forgetting ratios and ``stats["entanglement"]`` (atom usage per factor, active atoms, each stage's atoms).
* ``verdict_ratios``: the ratios a report's verdicts rest on (error / the best baseline's per bench
  and split, per-seed dots), with the scorecard's bands.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...measures.speed import loglog_slope
from ...measures.summary import to_error
from .._protocols import decode_images
from .sections import ReportContext, register_figure


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@register_figure("id_vs_ood")
def id_vs_ood(ctx: ReportContext, benches: tuple[str, ...], metric: str | None = None) -> Any:
    panels = []
    for b in benches:
        metrics = [metric] if metric else ctx.metrics(b)[:1]
        for m in metrics:
            cells = ctx.cells(b, m)
            splits = [s for s in dict.fromkeys(c.split for c in cells) if s != "id"]
            panels += [(b, m, s) for s in splits]
    if not panels:
        return None
    plt = _plt()
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(4.5, 3.4 * cols), 4.0 * rows + 1.0), squeeze=False)
    labels_all = list(dict.fromkeys(c.label for b, m, _ in panels for c in ctx.cells(b, m)))
    style = _styles(labels_all, plt)
    for ax, (b, m, s) in zip(axes.flat, panels):
        lo, hi = math.inf, 0.0
        for c_id in ctx.cells(b, m):
            if c_id.split != "id":
                continue
            c_ood = ctx.cell(b, c_id.label, s, m)
            if c_ood is None:
                continue
            x, y = to_error(c_id.mean, m), to_error(c_ood.mean, m)
            xe = 0.0 if math.isnan(c_id.std) else c_id.std
            ye = 0.0 if math.isnan(c_ood.std) else c_ood.std
            color, marker = style[c_id.label]
            ax.errorbar([x], [y], xerr=[[min(xe, 0.99 * x)], [xe]], yerr=[[min(ye, 0.99 * y)], [ye]], fmt=marker,
                        color=color, label=c_id.label, capsize=2, ms=8 if marker == "*" else 5)
            lo, hi = min(lo, x, y), max(hi, x, y)
        if hi > 0:
            lo = max(lo, hi * 1e-12)
            ax.plot([lo / 2, hi * 2], [lo / 2, hi * 2], color="0.7", lw=0.8, ls="--", zorder=0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            _plain_log_ticks(ax)
        ax.set_box_aspect(1)
        ax.set_xlabel(f"id error ({m})", fontsize=8)
        ax.set_ylabel(f"{s} error", fontsize=8)
        ax.set_title(f"{b}: {s}", fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], marker=style[lab][1], ls="", color=style[lab][0], label=lab) for lab in labels_all]
    fig.legend(handles=handles, loc="lower center", ncol=min(8, len(handles)), fontsize=8, frameon=False)
    fig.suptitle("ID vs OOD test error per model\n(mean ± sample std over seeds; dashed: equal error)", fontsize=9)
    fig.tight_layout(rect=(0, 0.45 / (4.0 * rows + 1.0), 1, 1 - 0.5 / (4.0 * rows + 1.0)))
    return fig


def _styles(labels: list[str], plt: Any) -> dict[str, tuple[Any, str]]:
    """A distinct (colour, marker) per label; ``vn`` is always a black star."""
    markers = "osD^vPXh"
    out, i = {}, 0
    for lab in labels:
        if lab == "vn":
            out[lab] = ("black", "*")
            continue
        out[lab] = (plt.cm.tab10(i % 10), markers[(i // 10 + i) % len(markers)])
        i += 1
    return out


def _plain_log_ticks(ax: Any) -> None:
    """Log axes of a small panel: minor labels only when the axis spans under a decade (they
    overlap otherwise), in plain short form."""
    from matplotlib.ticker import LogFormatterSciNotation, NullFormatter

    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        narrow = lo > 0 and hi / lo < 10
        axis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(1, 0.4))
                                 if narrow else NullFormatter())
        axis.set_tick_params(which="both", labelsize=7)


def _mean_map(ctx: ReportContext, bench: str, label: str) -> tuple[np.ndarray, np.ndarray] | None:
    maps, split = [], None
    for e in ctx.fits(bench, label):
        em = e["stats"].get("error_map")
        if em:
            maps.append(np.asarray(em["error"], dtype=float))
            split = np.asarray(em["split"])
    if not maps:
        s = ctx.summary_entry(bench, label)
        em = s.get("stats", {}).get("error_map") if s else None
        if not em:
            return None
        return np.asarray(em["error"], dtype=float), np.asarray(em["split"])
    return np.mean(maps, axis=0), split


@register_figure("error_maps")
def error_maps(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    rows = []
    for b in benches:
        labs = [lab for lab in ctx.labels(b) if _mean_map(ctx, b, lab) is not None]
        if labs:
            rows.append((b, labs))
    if not rows:
        return None
    plt = _plt()
    cols = max(len(labs) for _, labs in rows)
    fig, axes = plt.subplots(len(rows), cols, figsize=(max(6.0, 2.5 * cols), 2.7 * len(rows) + 0.6), squeeze=False)
    im = None
    for i, (b, labs) in enumerate(rows):
        for j in range(cols):
            ax = axes[i][j]
            if not _image_axis(ax, j < len(labs)):
                continue
            err, split = _mean_map(ctx, b, labs[j])
            im = ax.imshow(np.log10(np.clip(err, 1e-8, None)).T, origin="lower", vmin=-8, vmax=-1.5, cmap="viridis")
            inside = np.argwhere(split == 2)
            if len(inside):
                (x0, y0), (x1, y1) = inside.min(0), inside.max(0)
                ax.add_patch(plt.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0 + 1, y1 - y0 + 1, fill=False, edgecolor="red", lw=1))
            ax.set_title(labs[j], fontsize=9)
            if j == 0:
                ax.set_ylabel(b, fontsize=9)
    fig.colorbar(im, ax=axes, shrink=0.8, label="log10 MSE at the centre\n(mean over seeds)")
    fig.suptitle("spatial2d: per-centre error on every split; red square = OOD centres", fontsize=10)
    return fig


def _image_axis(ax: Any, used: bool) -> bool:
    """An axis for an image: no ticks; switched off (and False returned) when unused."""
    ax.set_xticks([])
    ax.set_yticks([])
    if not used:
        ax.axis("off")
    return used


@register_figure("atoms")
def atoms(ctx: ReportContext, benches: tuple[str, ...] = (), label: str = "vn",
          rows: tuple[tuple[str, str], ...] | None = None) -> Any:
    """One row per (bench, label) with an ``atoms`` statistic (``rows``; default: ``label`` on every
    bench of ``benches``): its most used atoms, first seed, each titled with its usage."""
    wanted = rows if rows is not None else tuple((b, label) for b in benches)
    found = []
    for b, lab in wanted:
        fits = [e for e in ctx.fits(b, lab) if e["stats"].get("atoms")] if lab in ctx.labels(b) else []
        if fits:
            found.append((b, lab, fits[0]))
    if not found:
        return None
    plt = _plt()
    n = max(len(decode_images(e["stats"]["atoms"])) for *_, e in found)
    fig, axes = plt.subplots(len(found), n, figsize=(max(6.0, 1.1 * n), 1.35 * len(found) + 0.8), squeeze=False)
    for i, (b, lab, e) in enumerate(found):
        blob = e["stats"]["atoms"]
        imgs = decode_images(blob).numpy()
        for j in range(n):
            ax = axes[i][j]
            if not _image_axis(ax, j < len(imgs)):
                continue
            lim = np.abs(imgs[j]).max() or 1.0
            ax.imshow(imgs[j], cmap="RdBu_r", vmin=-lim, vmax=lim)
            ax.set_title(f"{blob['usage'][j]:.2f}", fontsize=6)
        axes[i][0].set_ylabel(f"{b}\n{lab}\n({blob['side']}, seed {e['seed']})", fontsize=6)
    who = label if rows is None else "each model"
    fig.suptitle(f"{who}: most used atoms\n(above each: fraction of id test samples using it)", fontsize=9)
    fig.tight_layout()
    return fig


@register_figure("factors")
def factors(ctx: ReportContext, rows: tuple[tuple[str, str], ...]) -> Any:
    """Matrix readings: the factor libraries ``U`` ``(m, Ku)`` and ``S`` ``(n, Ks)`` (the
    ``atoms`` statistic's ``factors``, first seed) as images, one column per factor, ordered by
    how often the factor is in an active pair on the id test split."""
    found = []
    for b, lab in rows:
        fits = [e for e in ctx.fits(b, lab) if (e["stats"].get("atoms") or {}).get("factors")] \
            if lab in ctx.labels(b) else []
        if fits:
            found.append((b, lab, fits[0]))
    if not found:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(found), 2, figsize=(8.0, 2.6 * len(found) + 0.6), squeeze=False)
    for i, (b, lab, e) in enumerate(found):
        for j, key in enumerate(("U", "S")):
            blob = e["stats"]["atoms"]["factors"][key]
            img = decode_images(blob).numpy()[0]  # (rows of the image, factors)
            ax = axes[i][j]
            lim = np.abs(img).max() or 1.0
            ax.imshow(img, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
            ax.set_xlabel(f"{key} columns by usage ({blob['used']} of {img.shape[1]} used)", fontsize=7)
            ax.set_ylabel("pixel index", fontsize=7)
            ax.tick_params(labelsize=6)
            ax.set_title(f"{b}: {lab}, {key} (seed {e['seed']})", fontsize=8)
    fig.suptitle("Factor libraries: each column one learned profile (a bump along one image axis is a reusable factor)",
                 fontsize=9)
    fig.tight_layout()
    return fig


@register_figure("activity")
def activity(ctx: ReportContext, benches: tuple[str, ...], split: str = "id") -> Any:
    bars = []  # (bench/label, active fraction mean, std, edges mean, std)
    for b in benches:
        for lab in ctx.labels(b):
            act = [r["active_fraction"] for e in ctx.fits(b, lab) for r in e["rows"]
                   if r["split"] == split and r.get("active_fraction") is not None]
            edges = [r["edges_per_sample"] for e in ctx.fits(b, lab) for r in e["rows"]
                     if r["split"] == split and r.get("edges_per_sample") is not None]
            if act:
                bars.append((f"{b}: {lab}", np.mean(act), np.std(act, ddof=1) if len(act) > 1 else 0.0,
                             np.mean(edges), np.std(edges, ddof=1) if len(edges) > 1 else 0.0))
    if not bars:
        return None
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.32 * len(bars) + 1.4), sharey=True)
    y = np.arange(len(bars))
    a1.barh(y, [b[1] for b in bars], xerr=[b[2] for b in bars], color="tab:blue", capsize=2)
    a2.barh(y, [b[3] for b in bars], xerr=[b[4] for b in bars], color="tab:orange", capsize=2)
    a1.set_yticks(y)
    a1.set_yticklabels([b[0] for b in bars], fontsize=7)
    a1.invert_yaxis()
    a1.set_xlabel("fraction of nodes active after the last step", fontsize=8)
    a2.set_xlabel("edges touched per sample", fontsize=8)
    a2.set_xscale("log")
    for ax in (a1, a2):
        ax.tick_params(labelsize=7)
    fig.suptitle(f"Measured activity on the {split} test split (mean ± sample std over seeds)", fontsize=9)
    fig.tight_layout()
    return fig


@register_figure("scaling")
def scaling(ctx: ReportContext, panels: tuple[dict[str, Any], ...]) -> Any:
    """``panels``: ``{"measure": name, "x": field, "series": {label: field}, "title": str,
    "xlabel": str}``; each series is drawn with its fitted log-log slope."""
    drawn = [(p, ctx.measure(p["measure"])) for p in panels]
    drawn = [(p, e) for p, e in drawn if e is not None]
    if not drawn:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(drawn), figsize=(4.6 * len(drawn), 3.6), squeeze=False)
    for ax, (p, e) in zip(axes[0], drawn):
        rows = [r for r in e["rows"] if r.get("table", p.get("table")) == p.get("table")]
        for name, fieldname in p["series"].items():
            pts = [(r[p["x"]], r.get(fieldname)) for r in rows if r.get(fieldname) is not None]
            if not pts:
                continue
            xs, ys = [a for a, _ in pts], [1e3 * b for _, b in pts]
            ax.plot(xs, ys, "o-", label=f"{name} (slope {loglog_slope(xs, ys):.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax)
        ax.set_xlabel(p.get("xlabel", p["x"]), fontsize=8)
        ax.set_ylabel("ms per sample", fontsize=8)
        ax.set_title(p.get("title", p["measure"]), fontsize=9)
        ax.legend(fontsize=7)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


# -- validation curves (every report) ---------------------------------------------------------------
# (VALIDATION CURVES: added by the lead)
@register_figure("validation_curves")
def validation_curves(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    """Per bench, every model's training: its validation curve per seed where the record holds
    one (``stats.history.val``), else its length: epochs run per seed (dots) and the best
    validation epoch (open circles) against its epoch cap (a bar end); a fit the cap ended is
    drawn in red, so cap hits are visible at a glance."""
    panels = []
    for b in benches:
        rows = []
        for label in ctx.labels(b):
            fits = [e for e in ctx.fits(b, label) if "epochs_run" in (e["stats"].get("history") or {})]
            if fits:
                rows.append((label, fits))
        if rows:
            panels.append((b, rows))
    if not panels:
        return None
    plt = _plt()
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    tallest = max(len(rows) for _, rows in panels)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, (0.32 * tallest + 1.4) * nrows), squeeze=False)
    for ax, (b, rows) in zip(axes.flat, panels):
        curves = [(label, e) for label, fits in rows for e in fits if e["stats"]["history"].get("val")]
        if curves:
            for label, e in curves:
                val = e["stats"]["history"]["val"]
                ax.plot(range(1, len(val) + 1), val, lw=1, label=f"{label} s{e['seed']}")
            ax.set_xlabel("epoch")
            ax.set_ylabel("validation loss")
            ax.set_yscale("log")
            ax.legend(fontsize=6)
        else:
            for y, (label, fits) in enumerate(rows):
                cap = max(int(e["config"].get("epochs", 0) or 0) for e in fits)
                if cap:
                    ax.plot([0, cap], [y, y], color="0.85", lw=6, solid_capstyle="butt", zorder=1)
                for e in fits:
                    h = e["stats"]["history"]
                    run = h["epochs_run"]
                    capped = run >= int(e["config"].get("epochs", math.inf) or math.inf)
                    ax.scatter([run], [y], s=16, color="tab:red" if capped else "black", zorder=3)
                    if "best_val_epoch" in h:
                        ax.scatter([h["best_val_epoch"] + 1], [y], s=30, facecolors="none", edgecolors="tab:blue",
                                   zorder=4)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels([label for label, _ in rows], fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel("epochs (grey bar: the cap; dot: run, red = ended by the cap; circle: best validation)")
            ax.xaxis.label.set_size(7)
        ax.set_title(b, fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


# -- figure kinds of the vn_benchmarks report -------------------------------------------------------
# (VN_BENCHMARKS FIGURES: insert below this line)
@register_figure("verdict_ratios")
def verdict_ratios(ctx: ReportContext, benches: tuple[str, ...] = ()) -> Any:
    """The ratios this report's verdicts rest on (``Verdict.points`` of its ``Verdicts`` sections):
    per bench and split, each reading's error / the best baseline's (bars: the ratio of the means;
    dots: each seed's error over the baseline's mean) on a log axis, with the scorecard's bands
    (``scorecard.BANDS``: ID parity within 1.25x, OOD at most 0.2x). ``benches`` filters (default all)."""
    from .sections import Verdicts

    points = [p for sec in ctx.spec.sections if isinstance(sec, Verdicts) for _, v in sec.verdicts(ctx)
              for p in v.points if (not benches or p.bench in benches) and math.isfinite(p.ratio) and p.ratio > 0]
    if not points:
        return None
    return ratio_bars(points)


def ratio_bars(points: list[Any]) -> Any:
    """The figure of ``verdict_ratios`` and of the scorecard: ``Point``s (bench, split, label,
    ratio, per-seed ratios) as bars per bench and split with per-seed dots and the bands."""
    from .scorecard import BANDS

    plt = _plt()
    keys = list(dict.fromkeys((p.bench, p.split) for p in points))
    labels = list(dict.fromkeys(p.label for p in points))
    # constrained layout: the long rotated bench labels always fit (tight_layout gives up on few bars)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(keys) + 2.5), 4.8), layout="constrained")
    colours = plt.get_cmap("tab10")
    shown: set[str] = set()
    low = min(p.ratio for p in points)
    for i, key in enumerate(keys):
        here = [p for p in points if (p.bench, p.split) == key]  # the labels drawn at this key, side by side
        width = 0.8 / len(here)
        for k, p in enumerate(here):
            x = i - 0.4 + width * (k + 0.5)
            j = labels.index(p.label)
            ax.bar(x, p.ratio, width * 0.9, color=colours(j % 10), alpha=0.55,
                   label=None if p.label in shown else p.label)
            shown.add(p.label)
            seeds = [v for v in p.per_seed if v > 0 and math.isfinite(v)]
            low = min([low, *seeds])
            ax.scatter([x] * len(seeds), seeds, s=10, color="black", zorder=3)
    ax.set_ylim(bottom=low / 3)
    for name, y in BANDS.items():
        ax.axhline(y, color="grey", ls="--", lw=1)
        ax.text(len(keys) - 0.45, y, name, va="bottom", ha="right", fontsize=7, color="grey", in_layout=False)
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_yscale("log")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{b}\n{s}" for b, s in keys], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("error / best baseline's error")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return fig


# -- figure kinds of the vn_dynamics and vn_claims reports ------------------------------------------
# (VN_CLAIMS FIGURES: insert below this line)
# the vn_claims report: forgetting, atom usage, sparsity and the atoms each stage uses (from
# stats["entanglement"]; helpers in narration_vn_claims)
@register_figure("forgetting_bars")
def forgetting_bars(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    from ...measures.summary import sample_std
    from . import narration_vn_claims as N
    panels = [(b, [lab for lab in ctx.labels(b) if N.vals(ctx, b, lab, "id_stage1", "forgetting_ratio")]) for b in benches]
    panels = [(b, labs) for b, labs in panels if labs]
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    style = _styles(list(dict.fromkeys(lab for _, labs in panels for lab in labs)), plt)
    for ax, (b, labs) in zip(axes[0], panels):
        vals = [N.vals(ctx, b, lab, "id_stage1", "forgetting_ratio") for lab in labs]
        means = [N.mean(v) for v in vals]
        errs = [sample_std(v) if len(v) > 1 else 0.0 for v in vals]
        ax.bar(range(len(labs)), means, yerr=errs, capsize=3, color=[style[lab][0] for lab in labs])
        for i, v in enumerate(vals):
            ax.plot([i] * len(v), v, "k.", ms=4)
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_xticks(range(len(labs)))
        ax.set_xticklabels(labs, rotation=30, ha="right", fontsize=7)
        ax.set_title(b, fontsize=9)
        ax.set_ylabel("stage-1 error after / before stage 2", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Forgetting: first-stage test error after learning the second stage over right after the first\n"
                 "(bars: mean ± sample std over seeds; dots: seeds; dashed: no forgetting)", fontsize=9)
    fig.tight_layout()
    return fig


@register_figure("atom_factor_usage")
def atom_factor_usage(ctx: ReportContext, benches: tuple[str, ...], label: str = "vn") -> Any:
    from . import narration_vn_claims as N
    rows = []
    for b in benches:
        ents = N.ent(ctx, b, label) if label in ctx.labels(b) else []
        usage = N.dig(ents[0], "final", "usage") if ents else None
        if usage and usage.get("by_factor"):
            rows.append((b, usage, ctx.fits(b, label)[0]["seed"]))
    if not rows:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(rows), 1, figsize=(9.5, 1.1 + 0.32 * sum(len(u["factors"]) for _, u, _ in rows)
                                                     + 0.6 * len(rows)), squeeze=False)
    im = None
    for ax, (b, usage, seed) in zip(axes[:, 0], rows):
        m = np.asarray(usage["by_factor"], dtype=float)  # (K, F)
        order = np.lexsort((-m.max(1), m.argmax(1)))  # atoms grouped by their most used factor
        im = ax.imshow(m[order].T, aspect="auto", cmap="magma", vmin=0, vmax=1, interpolation="nearest")
        ax.set_yticks(range(len(usage["factors"])))
        ax.set_yticklabels(usage["factors"], fontsize=7)
        ax.set_xlabel(f"atom (sorted by the factor it is most used with); {m.shape[0]} atoms", fontsize=7)
        ax.set_title(f"{b} ({label}, seed {seed})", fontsize=8)
        ax.tick_params(labelsize=6)
    fig.colorbar(im, ax=axes[:, 0], shrink=0.9, label="share of the samples with the factor\nin which the atom is active")
    fig.suptitle("Atom-by-factor usage after both stages (first layer, id test split)", fontsize=9)
    return fig


@register_figure("sparsity")
def sparsity_figure(ctx: ReportContext, benches: tuple[str, ...], labels: tuple[str, ...] = ("vn",)) -> Any:
    from . import narration_vn_claims as N
    panels = []
    for b in benches:
        for lab in labels:
            hists = [h for e in N.ent(ctx, b, lab) if (h := N.dig(e, "final", "sparsity", 0, "histogram"))]
            if hists:
                panels.append((b, lab, hists, N.dig(N.ent(ctx, b, lab)[0], "final", "sparsity", 0, "atoms")))
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(3.8 * len(panels), 3.0), squeeze=False)
    for ax, (b, lab, hists, atoms) in zip(axes[0], panels):
        for i, h in enumerate(hists):
            h = np.asarray(h, dtype=float)
            ax.step(np.arange(len(h)), h / h.sum(), where="mid", lw=1, label=f"seed {i}" if len(hists) > 1 else None)
        ax.set_xlabel(f"active atoms per sample (of {atoms})", fontsize=8)
        ax.set_ylabel("share of id test samples", fontsize=8)
        ax.set_title(f"{b}: {lab}", fontsize=9)
        ax.tick_params(labelsize=7)
        if len(hists) > 1:
            ax.legend(fontsize=6)
    fig.suptitle("Sparsity: distribution of active first-layer atoms per test sample (after both stages)", fontsize=9)
    fig.tight_layout()
    return fig


@register_figure("stage_atoms")
def stage_atoms(ctx: ReportContext, benches: tuple[str, ...], label: str = "vn") -> Any:
    from . import narration_vn_claims as N
    rows = []
    for b in benches:
        ents = N.ent(ctx, b, label) if label in ctx.labels(b) else []
        atoms = N.dig(ents[0], "final", "atoms") if ents else None
        for stage, blob in (atoms or {}).items():
            rows.append((b, stage, blob))
    if not rows:
        return None
    plt = _plt()
    n = max(len(decode_images(blob)) for _, _, blob in rows)
    fig, axes = plt.subplots(len(rows), n, figsize=(max(6.0, 1.15 * n), 1.3 * len(rows) + 0.9), squeeze=False)
    for i, (b, stage, blob) in enumerate(rows):
        imgs = decode_images(blob).numpy()
        for j in range(n):
            ax = axes[i][j]
            if not _image_axis(ax, j < len(imgs)):
                continue
            if imgs[j].shape[0] == 1:  # a 1-D input: the atom as a curve
                ax.plot(imgs[j][0], lw=0.9, color="tab:blue")
                ax.axhline(0, color="0.8", lw=0.5)
            else:
                lim = np.abs(imgs[j]).max() or 1.0
                ax.imshow(imgs[j], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
            ax.set_title(f"#{blob['index'][j]}: {blob['usage'][j]:.2f}", fontsize=6)
        axes[i][0].set_ylabel(f"{b.split('_')[0]}\n{stage}", fontsize=7)
    fig.suptitle(f"{label}: the first-layer atoms (input side) most used by each stage's test samples, after both "
                 "stages\n(atom index: share of that stage's test samples using it; the same index in both rows is one "
                 "shared atom)", fontsize=8)
    fig.tight_layout()
    return fig



# -- figure kinds of the rsgn report ----------------------------------------------------------------
# (RSGN FIGURES: insert below this line)
@register_figure("rsgn_accuracy_activity")
def rsgn_accuracy_activity(ctx: ReportContext, panels: tuple[tuple[str, tuple[str, ...], str, float], ...],
                           labels: tuple[str, ...]) -> Any:
    """One panel per task, ``panels`` = (title, benches, trivial bench, chance): test accuracy
    against measured activity before the cap (mean ± sample std over seeds in both), one point
    per label of ``labels`` and one line per node count; the trivial classifiers and chance as
    horizontal lines, the 2 % selection limit as a vertical one. The activity axis is log with
    plain tick labels (1, 2, 5, ...), fewer where a panel is narrow."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    panels = tuple(p for p in panels if any(ctx.fits(b) for b in p[1]))
    if not panels:
        return None
    plt = _plt()
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, benches, trivial, chance) in zip(axes.flat, panels):
        curves: dict[int, list[tuple[float, float, float, float]]] = {}
        for b in benches:
            for v in ctx.spec.bench(b).variants:
                tr = [r for e in ctx.fits(b, v.label) for r in e["rows"] if r["split"] == "id" and r["metric"] == "accuracy"]
                if not tr or v.label not in labels:
                    continue
                acts, accs = [r["activity"] for r in tr], [r["value"] for r in tr]
                curves.setdefault(v.config["n_nodes"], []).append((
                    float(np.mean(acts)), float(np.std(acts, ddof=1)) if len(acts) > 1 else 0.0,
                    float(np.mean(accs)), float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0))
        for (n, pts), marker in zip(sorted(curves.items()), "osD^"):
            pts.sort()
            ax.errorbar([100 * p[0] for p in pts], [100 * p[2] for p in pts], xerr=[100 * p[1] for p in pts],
                        yerr=[100 * p[3] for p in pts], marker=marker, capsize=2, label=f"N = {n:,}")
        for v, style in zip(ctx.spec.bench(trivial).variants, (":", "--", "-.")):
            c = ctx.cell(trivial, v.label, "id", "accuracy")
            if c is not None:
                ax.axhline(100 * c.mean, color="grey", ls=style, lw=0.8, label=v.label)
        ax.axhline(100 * chance, color="black", lw=0.6, label="chance")
        ax.axvline(2.0, color="tab:red", lw=0.6, alpha=0.5, label="2 % limit")
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if hi / lo < 30 else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("measured activity before the cap, % (test)", fontsize=8)
        ax.set_ylabel("test accuracy, %", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.tick_params(which="both", labelsize=7)
        ax.legend(fontsize=6, ncol=2, loc="best")
    fig.tight_layout()
    return fig


@register_figure("rsgn_cost")
def rsgn_cost(ctx: ReportContext, measure: str = "cost", names: dict[str, str] | None = None) -> Any:
    """Seconds per full training step and peak memory against N (T = N / 8), log-log, one line
    per model of the ``measure`` record (``names``: readable model names), slopes in the legend."""
    from ...rsgn import _speed

    e = ctx.measure(measure)
    if e is None:
        return None
    names = names or {}
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.2, 3.6))
    for model in e["params"]["models"]:
        rows = [r for r in e["rows"] if r["model"] == model]
        if not rows:
            continue
        xs = [r["n_nodes"] for r in rows]
        _, slope = _speed.segment_slopes(xs, [r["step_s"] for r in rows]) if len(rows) > 1 else ([], math.nan)
        a1.plot(xs, [r["step_s"] for r in rows], "o-", label=f"{names.get(model, model)} (slope {slope:.2f})")
        a2.plot(xs, [r["peak_rss_gb"] for r in rows], "o-", label=names.get(model, model))
    for ax, ylabel in ((a1, "seconds per training step"), (a2, "peak memory, GiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes N (tokens T = N / 8)", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@register_figure("rsgn_budget_curves")
def rsgn_budget_curves(ctx: ReportContext, panels: tuple[tuple[str, str, str, float, tuple[str, str] | None], ...]) -> Any:
    """One panel per task, ``panels`` = (title, equal-budget bench, trivial bench, chance, the dense
    model's (bench, label) or None): test accuracy against epoch (the fit protocol's ``curve``),
    mean over seeds with the seed range shaded, one line per variant; the dense model's curve
    dashed, the trivial classifiers and chance as horizontal lines."""
    panels = tuple(p for p in panels if any(e["stats"].get("curve") for e in ctx.fits(p[1])))
    if not panels:
        return None
    plt = _plt()
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, bench, trivial, chance, dense) in zip(axes.flat, panels):
        runs = [(v.label, bench, v.label, "-") for v in ctx.spec.bench(bench).variants]
        if dense is not None:
            runs.append((f"dense {dense[1]}", dense[0], dense[1], "--"))
        for name, b, label, style in runs:
            curves = [e["stats"]["curve"]["id"] for e in ctx.fits(b, label) if e["stats"].get("curve")]
            if not curves:
                continue
            n = min(len(c) for c in curves)
            arr = 100 * np.array([c[:n] for c in curves])
            ep = np.arange(1, n + 1)
            line, = ax.plot(ep, arr.mean(0), ls=style, lw=1.2, label=f"{name} ({len(curves)})")
            if len(curves) > 1:
                ax.fill_between(ep, arr.min(0), arr.max(0), color=line.get_color(), alpha=0.15, lw=0)
        for v, style in zip(ctx.spec.bench(trivial).variants, (":", "--", "-.")):
            c = ctx.cell(trivial, v.label, "id", "accuracy")
            if c is not None:
                ax.axhline(100 * c.mean, color="grey", ls=style, lw=0.8, label=v.label)
        ax.axhline(100 * chance, color="black", lw=0.6, label="chance")
        ax.set_xlabel("epoch", fontsize=8)
        ax.set_ylabel("test accuracy, %", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6, ncol=2, loc="best")
    fig.tight_layout()
    return fig


@register_figure("rsgn_gradient_flow")
def rsgn_gradient_flow(ctx: ReportContext, runs: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> Any:
    """Three panels against the propagation step (0 = ignition): the loss gradient reaching the
    node states (log), the step's share of the readout, and a linear probe's test accuracy on the
    step's pooled state; one line per (task, run). ``runs`` = (task name, candidate (bench,
    label) pairs, the first with ``rsgn_gradient_flow`` records is drawn, S = the task's and S = 1)."""
    drawn = []
    for task, candidates in runs:
        for bench, label in candidates:
            flows = [e["stats"]["rsgn_gradient_flow"] for e in ctx.fits(bench, label)
                     if e["stats"].get("rsgn_gradient_flow")]
            if flows:
                drawn.append((f"{task} {label}", flows))
                break
    if not drawn:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6))
    for name, flows in drawn:
        steps = np.arange(flows[0]["steps"])
        style = "--" if name.endswith("steps1") else "-"
        for ax, values in zip(axes, ([f["at_model"]["grad_state"] for f in flows],
                                     [f["at_model"]["readout_share"] for f in flows], [f["probe"] for f in flows])):
            ax.plot(steps, np.nanmean(np.array(values, dtype=float), axis=0), marker="o", ms=3, ls=style, label=name)
    axes[0].set_yscale("log")
    for ax, what in zip(axes, ("state gradient norm per sample", "share of the readout", "probe test accuracy")):
        ax.set_xlabel("propagation step (0 = ignition)", fontsize=8)
        ax.set_ylabel(what, fontsize=8)
        ax.tick_params(labelsize=7)
    axes[2].legend(fontsize=6, loc="best")
    fig.tight_layout()
    return fig



@register_figure("stability_plasticity")
def stability_plasticity(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    """One panel per continual bench: stage 1's error after stage 2 (stability, y) against stage
    2's error after stage 2 (plasticity, x), every model (mean over seeds, seeds as small dots);
    models whose labels share a prefix before ``+`` (an MLP and its EWC strengths) joined by a line
    in the order of the spec. Log axes; lower-left is better."""
    from .narration_vn_claims import error_matrix

    panels = [b for b in benches if any(error_matrix(ctx, b, lab) for lab in ctx.labels(b))]
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    for ax, bench in zip(axes[0], panels):
        families: dict[str, list[tuple[float, float]]] = {}
        for lab in ctx.labels(bench):
            Rs = error_matrix(ctx, bench, lab)
            if not Rs:
                continue
            xs, ys = [R["R22"] for R in Rs], [R["R21"] for R in Rs]
            joint = math.isnan(Rs[0]["R11"])  # trained on both stages at once: the reference point, a star
            point = ax.scatter([float(np.mean(xs))], [float(np.mean(ys))], s=90 if joint else 30, marker="*" if joint else "o",
                               label=lab + (" (joint reference)" if joint else ""), zorder=3)
            ax.scatter(xs, ys, s=6, color=point.get_facecolor(), alpha=0.5, zorder=2)
            families.setdefault(lab.split("+")[0], []).append((float(np.mean(xs)), float(np.mean(ys))))
        for pts in families.values():
            if len(pts) > 1:
                ax.plot(*zip(*pts), color="grey", lw=0.7, zorder=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("stage 2 error after stage 2", fontsize=8)
        ax.set_ylabel("stage 1 error after stage 2", fontsize=8)
        ax.set_title(bench, fontsize=9)
        _plain_log_ticks(ax)
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return fig



@register_figure("lasso_anchors")
def lasso_anchors_figure(ctx: ReportContext, measure: str = "lasso_anchors") -> Any:
    """One panel per problem size: every solver's largest suboptimality over the samples against
    its wall time, one point per setting joined in order of time (log-log), as benchopt draws it."""
    e = ctx.measure(measure)
    if e is None:
        return None
    sizes = sorted({(r["B"], r["K"], r["n"]) for r in e["rows"]})
    plt = _plt()
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.0 * len(sizes), 3.8), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        rows = [r for r in e["rows"] if (r["B"], r["K"], r["n"]) == size]
        for solver in dict.fromkeys(r["solver"] for r in rows):
            pts = sorted((r["seconds"], max(r["suboptimality_max"], 1e-16)) for r in rows if r["solver"] == solver)
            ax.plot(*zip(*pts), marker="o", ms=3, lw=1, ls="-" if solver.startswith("hebbnets") else "--", label=solver)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("seconds for all samples", fontsize=8)
        ax.set_ylabel("largest suboptimality (f - f*) / f*", fontsize=8)
        ax.set_title(" x ".join(map(str, size)), fontsize=9)
        ax.tick_params(which="both", labelsize=7)
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return fig
