"""``vn_claims``: the Vector Network paper's second claim, measured (reports/vn_claims.md).

1. **No weight entanglement.** Continual learning on disjoint factor sets (protocol
   ``continual``: ``fit`` on the first stage, ``partial_fit`` on the second): functions1d {sin,
   cos} then {poly, gauss}; mnist reconstruction of the digits 0-4 then 5-9; nbody under
   {gravity, drag} then {lorentz, spring}. Forgetting = the error on the first stage's test split
   after the second stage over the error right after the first. Every model is tuned on
   validation data carved from the *first* stage only (equal points per model); MLP+EWC is the
   tuned MLP plus the EWC penalty, whose strength no first-stage validation can choose (it acts
   only from the second stage on), so it runs at fixed strengths, each a row of its own. With
   option ``entanglement`` every fit also records the overlap and reuse measures of
   ``hebbnets.entanglement`` (``hebbnets.continual.entanglement_summary``).
2. **Amortised inference** (protocol ``amortised``): on every VN benchmark (``vn_benchmarks``'
   result benches, ``vn_dynamics``' nbody and mnist transform; the same task parameters and chosen
   ``vn`` configuration), a LISTA encoder per layer trained on
   the training inputs, timed against plain FISTA at equal energy and at equal test error, alone
   and as FISTA's warm start, on every test split.
3. **Faster FISTA at scale**: quoted from the ``speed`` report's ``vn_inference`` measurement.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..reporting.figures import _image_axis, _plt, _styles
from .._protocols import decode_images
from ..reporting import Claim, Custom, Figure, ReportContext, Text, TuningTable, fmt, register_figure, unrun_line
from .._spec import Bench, Grid, Scale, Spec, register_spec, variant
from ...bench.summary import sample_std
from . import vn_benchmarks as VB
from . import vn_dynamics as VD

SEEDS = (0, 1, 2)
_SMOKE_CONFIG = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}, "vn_matrix": {"max_iter": 20},
                 "vn_applied_set": {"max_iter": 20}}
# EWC strengths (lambda, on the scale of the MSE training loss): none can be chosen on the first stage
EWC = (100.0, 10000.0)


def _ewc_rows(model: str = "mlp") -> tuple[Any, ...]:
    return tuple(variant(f"{model}+ewc{int(lam)}", model, ewc_lambda=lam) for lam in EWC)


# -- 1. continual learning -----------------------------------------------------------------------
_OPTS = {"entanglement": True}
F1D = Bench(
    "functions1d_continual", "functions1d_continual", params={"mode": "masked"}, seeds=SEEDS, protocol="continual",
    options=_OPTS, models=("vn", "mlp", *_ewc_rows()),
    tuning={"vn": Grid({"lam": [0.003, 0.01, 0.03]}, base=dict(atoms=(150,), output="message", epochs=15, batch_size=64,
                                                            norm_policy="clip_s")),
            "mlp": Grid({"lr": [1e-3, 3e-3, 1e-2]}, base=dict(hidden=(64, 64), epochs=200, patience=20, batch_size=64))},
    scales={"smoke": Scale(params={"n_train": 32, "n_test": 8, "length": 16}, config=_SMOKE_CONFIG)},
    title="functions1d (masked): {sin, cos} then {poly, gauss}")
MNIST = Bench(
    "mnist_continual", "mnist_continual", seeds=SEEDS, protocol="continual", options=_OPTS,
    models=("vn", "vn_matrix", "mlp", *_ewc_rows()),
    tuning={"vn": Grid({"lam": [0.01, 0.05, 0.1]}, base=dict(atoms=(512,), output="reconstruction", nonneg=True, epochs=5,
                                                          batch_size=64)),
            "vn_matrix": Grid({"lam": [0.01, 0.05, 0.1]}, base=dict(nonneg=True, epochs=5)),
            "mlp": Grid({"lr": [3e-4, 1e-3, 3e-3]}, base=dict(hidden=(512, 512), epochs=40, patience=5, batch_size=64))},
    scales={"smoke": Scale(params={"n_train": 24, "n_test": 6}, config=_SMOKE_CONFIG)},
    title="mnist_comp reconstruction: digits 0-4 then 5-9")
NBODY = Bench(
    "nbody_continual", "nbody_continual", seeds=SEEDS, protocol="continual", options=_OPTS,
    models=("vn", "vn_applied_set", "mlp", *_ewc_rows()),
    tuning={"vn": Grid({"lam": [0.0009, 0.003, 0.01]}, base=dict(atoms=(1024,), epochs=5, batch_size=64)),
            "vn_applied_set": Grid({"lam": [0.03, 0.1, 0.3]}, base=dict(epochs=30, patience=5)),
            "mlp": Grid({"lr": [1e-4, 3e-4, 1e-3]}, base=dict(hidden=(128, 128), epochs=200, patience=20, batch_size=64))},
    scales={"smoke": Scale(params={"n_train": 24, "n_test": 6, "substeps": 2}, config=_SMOKE_CONFIG)},
    title="nbody: {gravity, drag} then {lorentz, spring}")
CONTINUAL = (F1D, MNIST, NBODY)
VN_LABELS = ("vn", "vn_matrix", "vn_applied_set")


def _metric(ctx: ReportContext, bench: str) -> str | None:
    """The task metric of a continual bench: the one that also has an ``after_`` version."""
    ms = ctx.metrics(bench)
    return next((m for m in ms if f"after_stage1:{m}" in ms), None)


def _vals(ctx: ReportContext, bench: str, label: str, split: str, metric: str) -> list[float]:
    c = ctx.cell(bench, label, split, metric)
    return [] if c is None else [v for v in c.values if not math.isnan(v)]


def _ms(values: list[float], digits: int = 3) -> str:
    """``mean ± sample std`` (the mean alone for one value, "—" for none)."""
    if not values:
        return "—"
    m = sum(values) / len(values)
    return fmt(m, digits) if len(values) < 2 else f"{fmt(m, digits)} ± {fmt(sample_std(values), digits)}"


def _ms_count(values: list[float]) -> str:
    """``_ms`` for counts: an integral mean without exponent (1024, not 1.02e+03)."""
    if not values or len(values) < 2:
        return _num(values[0]) if values else "—"
    return f"{_num(_mean(values))} ± {fmt(sample_std(values))}"


def _num(v: float) -> str:
    """A count as an integer, anything else with 3 significant digits."""
    if v is None or math.isnan(v):
        return "—"
    return str(int(round(v))) if abs(v - round(v)) < 1e-9 else fmt(v)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def forgetting_table(bench: str):
    def render(ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(bench)
        lines = [f"### {b.title}", ""]
        m = _metric(ctx, bench)
        if m is None:
            return lines + [f"No records yet (`hebbnets reproduce vn_claims --benches {bench}`).", ""]
        cross = next((c.split for c in ctx.cells(bench, m) if c.split.startswith("ood_cross")), None)
        lines += [f"Test error (`{m}`), mean ± sample std over seeds. *Stage 1 after 1*: on the first stage's test split "
                  "right after learning it; *after 2*: the same split after the second stage; *forgetting*: their ratio "
                  "(1 = nothing forgotten); *both*: the `id` split (both stages) after the second stage"
                  + (f"; *{cross}*: combinations across the stages" if cross else "") + ".", "",
                  "| model | seeds | stage 1 after 1 | stage 1 after 2 | forgetting (ratio) | stage 2 after 2 | both after 2 |"
                  + (f" {cross} |" if cross else ""), "|---|---|---|---|---|---|---|" + ("---|" if cross else "")]
        for lab in ctx.labels(bench):
            c = ctx.cell(bench, lab, "id_stage1", m)
            cells = [_ms(_vals(ctx, bench, lab, "id_stage1", f"after_stage1:{m}")),
                     _ms(_vals(ctx, bench, lab, "id_stage1", m)),
                     "**" + _ms(_vals(ctx, bench, lab, "id_stage1", "forgetting_ratio")) + "**",
                     _ms(_vals(ctx, bench, lab, "id_stage2", m)), _ms(_vals(ctx, bench, lab, "id", m))]
            if cross:
                cells.append(_ms(_vals(ctx, bench, lab, cross, m)))
            lines.append(f"| {lab} | {','.join(map(str, c.seeds)) if c else '—'} | " + " | ".join(cells) + " |")
        return lines + [""]
    return render


def _forgetting_claim(bench: str) -> Claim:
    def check(ctx: ReportContext) -> tuple[bool | None, str]:
        m = _metric(ctx, bench)
        labels = ctx.labels(bench)
        if m is None or "vn" not in labels:
            return None, "no records yet."
        ratio = {lab: _mean(_vals(ctx, bench, lab, "id_stage1", "forgetting_ratio")) for lab in labels}
        vn = [lab for lab in labels if lab in VN_LABELS]
        backprop = [lab for lab in labels if lab not in VN_LABELS]
        best_bp = min(backprop, key=lambda lab: ratio[lab]) if backprop else None
        ok = all(ratio[v] <= 1.25 for v in vn) and best_bp is not None and all(ratio[v] < ratio[best_bp] for v in vn)
        ev = ("forgetting ratio (mean ± sample std over seeds) "
              + ", ".join(f"{lab} {_ms(_vals(ctx, bench, lab, 'id_stage1', 'forgetting_ratio'))}" for lab in labels) + ".")
        return ok, ev
    return Claim(f"{bench}: every VN variant keeps the first stage (forgetting ratio at most 1.25) and forgets less "
                 "than the MLP and MLP+EWC", check)


def _vn_vs_mlp(ctx: ReportContext) -> tuple[bool | None, str]:
    """The paper's comparison on every continual bench: the vector VN against the plain MLP,
    forgetting ratios compared by their means (with the sample std beside them)."""
    parts, ok = [], True
    for b in CONTINUAL:
        vn, mlp = (_vals(ctx, b.name, lab, "id_stage1", "forgetting_ratio") for lab in ("vn", "mlp"))
        if not vn or not mlp:
            continue
        less = _mean(vn) < _mean(mlp)
        ok = ok and less
        parts.append(f"{b.name}: vn {_ms(vn)} {'<' if less else '≥'} mlp {_ms(mlp)}")
    if not parts:
        return None, "no records yet."
    return ok, "forgetting ratio " + "; ".join(parts) + "."


def _final_claim(bench: str) -> Claim:
    """Forgetting alone rewards a model that never learns the second stage (a strong EWC penalty):
    the error on both stages after both is the trade-off that continual learning asks for."""
    def check(ctx: ReportContext) -> tuple[bool | None, str]:
        m = _metric(ctx, bench)
        labels = ctx.labels(bench)
        if m is None or "vn" not in labels:
            return None, "no records yet."
        final = {lab: _vals(ctx, bench, lab, "id", m) for lab in labels}
        vn = [lab for lab in labels if lab in VN_LABELS]
        backprop = [lab for lab in labels if lab not in VN_LABELS]
        if not backprop:
            return None, "no backprop rows."
        best_bp = min(backprop, key=lambda lab: _mean(final[lab]))
        best_vn = min(vn, key=lambda lab: _mean(final[lab]))
        ok = _mean(final[best_vn]) < _mean(final[best_bp])
        return ok, (f"error on both stages after both (`id`, `{m}`): "
                    + ", ".join(f"{lab} {_ms(final[lab])}" for lab in labels)
                    + f"; best VN row {best_vn}, best backprop row {best_bp}.")
    return Claim(f"{bench}: after both stages, a VN has a lower error on both stages together than the MLP and every "
                 "MLP+EWC row", check)


# -- entanglement and reuse, from stats["entanglement"] ----------------------------------------------
def _ent(ctx: ReportContext, bench: str, label: str) -> list[dict[str, Any]]:
    return [e["stats"]["entanglement"] for e in ctx.fits(bench, label) if e["stats"].get("entanglement")]


def _dig(d: Any, *path: Any) -> Any:
    for p in path:
        if d is None:
            return None
        d = d.get(p) if isinstance(d, dict) else (d[p] if isinstance(d, list) and isinstance(p, int) and p < len(d) else None)
    return d


def _collect(ents: list[dict[str, Any]], *path: Any) -> list[float]:
    out = []
    for e in ents:
        v = _dig(e, *path)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out.append(float(v))
    return out


def entanglement_table(bench: str):
    def render(ctx: ReportContext) -> list[str]:
        b = ctx.spec.bench(bench)
        lines = [f"### {b.title}: overlap, reuse, sparsity", ""]
        labels = [lab for lab in ctx.labels(bench) if _ent(ctx, bench, lab)]
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
            ents = _ent(ctx, bench, lab)
            layers = list(_dig(ents[0], "after_stage1", "overlap") or {})
            if not layers:
                lines.append(f"| {lab} | not measured (no update overlap for this model) | | | "
                             + _moved(ents) + " |")
                continue

            def span(time: str, key: str) -> str:
                per = [_mean(_collect(ents, time, "overlap", layer, key)) for layer in layers]
                per = [v for v in per if not math.isnan(v)]
                if not per:
                    return "—"
                if len(layers) == 1:
                    return _ms(_collect(ents, time, "overlap", layers[0], key))
                return f"{fmt(min(per))} to {fmt(max(per))} ({len(layers)} layers)"
            wj = span("after_stage1", "weighted_jaccard")
            lines.append(f"| {lab} | {span('after_stage1', 'cosine')} | {span('final', 'cosine')} | "
                         f"{wj if wj != '—' else 'n/a'} | {_moved(ents)} |")
        lines.append("")
        vn = [lab for lab in labels if _collect(_ent(ctx, bench, lab), "final", "usage", "stages", "atoms")]
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
                ents = _ent(ctx, bench, lab)
                factors = _dig(ents[0], "final", "usage", "factors") or []

                def per_factor(key: str) -> str:
                    cols = [_collect(ents, "final", "usage", key, i) for i in range(len(factors))]
                    return ", ".join(f"{f} {_num(_mean(c)) if c else '—'}" for f, c in zip(factors, cols))
                st = ["first_only", "second_only", "both"]
                unchanged = [v for e in ents for k, w in (e.get("weight_change") or {}).items()
                             if k.endswith(".S") and (v := w.get("atoms_unchanged")) is not None]
                lines.append(f"| {lab} | {_num(_mean(_collect(ents, 'final', 'usage', 'stages', 'atoms')))} | "
                             + " | ".join(_ms_count(_collect(ents, "final", "usage", "stages", k)) for k in st)
                             + f" | {per_factor('atoms_per_factor')} | {per_factor('specific_per_factor')} | {per_factor('reuse')}"
                             + f" | {_ms(_collect(ents, 'final', 'sparsity', 0, 'mean'))} / "
                               f"{_ms(_collect(ents, 'final', 'sparsity', 0, 'median'))} | {_ms(unchanged)} |")
            lines.append("")
        return lines
    return render


def _moved(ents: list[dict[str, Any]]) -> str:
    """Relative parameter change during stage 2, range over the parameters (mean over seeds)."""
    names = list((ents[0].get("weight_change") or {}))
    per = [_mean([e["weight_change"][n]["relative"] for e in ents if n in e.get("weight_change", {})]) for n in names]
    per = [v for v in per if not math.isnan(v)]
    if not per:
        return "—"
    return fmt(per[0]) if len(per) == 1 else f"{fmt(min(per))} to {fmt(max(per))}"


def _entanglement_claims() -> tuple[Claim, Claim]:
    def orth(ctx: ReportContext) -> tuple[bool | None, str]:
        parts, ok = [], True
        for b in CONTINUAL:
            vals = _collect(_ent(ctx, b.name, "vn"), "after_stage1", "overlap", "layer0", "cosine")
            mlp = [abs(v) for e in _ent(ctx, b.name, "mlp") for v in
                   [w.get("cosine") for w in (_dig(e, "after_stage1", "overlap") or {}).values()] if v is not None]
            if not vals:
                continue
            ok = ok and abs(_mean(vals)) < 0.1
            parts.append(f"{b.name}: VN {fmt(_mean(vals))}" + (f" (MLP layers |cos| up to {fmt(max(mlp))})" if mlp else ""))
        if not parts:
            return None, "no records yet."
        return ok, "mean update cosine after stage 1: " + "; ".join(parts) + "."

    def disjoint(ctx: ReportContext) -> tuple[bool | None, str]:
        parts, ok = [], True
        for b in CONTINUAL:
            ents = _ent(ctx, b.name, "vn")
            both, atoms = _collect(ents, "final", "usage", "stages", "both"), _collect(ents, "final", "usage", "stages", "atoms")
            wj = _collect(ents, "final", "usage", "stages", "weighted_jaccard")
            if not both:
                continue
            share = _mean(both) / _mean(atoms)
            ok = ok and share < 0.5
            parts.append(f"{b.name}: {100 * share:.0f} % of the atoms serve test samples of both stages "
                         f"(usage-weighted Jaccard {fmt(_mean(wj))})")
        if not parts:
            return None, "no records yet."
        return ok, "; ".join(parts) + "."

    return (Claim("VN's two stages pull its atoms in near-orthogonal directions (|update cosine| below 0.1 on every "
                  "benchmark)", orth),
            Claim("VN's low forgetting comes from disjoint atoms (fewer than half of the used atoms serve both stages)",
                  disjoint))


# -- figures ---------------------------------------------------------------------------------------
@register_figure("forgetting_bars")
def forgetting_bars(ctx: ReportContext, benches: tuple[str, ...]) -> Any:
    panels = [(b, [lab for lab in ctx.labels(b) if _vals(ctx, b, lab, "id_stage1", "forgetting_ratio")]) for b in benches]
    panels = [(b, labs) for b, labs in panels if labs]
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    style = _styles(list(dict.fromkeys(lab for _, labs in panels for lab in labs)), plt)
    for ax, (b, labs) in zip(axes[0], panels):
        vals = [_vals(ctx, b, lab, "id_stage1", "forgetting_ratio") for lab in labs]
        means = [_mean(v) for v in vals]
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
    rows = []
    for b in benches:
        ents = _ent(ctx, b, label) if label in ctx.labels(b) else []
        usage = _dig(ents[0], "final", "usage") if ents else None
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
    panels = []
    for b in benches:
        for lab in labels:
            hists = [h for e in _ent(ctx, b, lab) if (h := _dig(e, "final", "sparsity", 0, "histogram"))]
            if hists:
                panels.append((b, lab, hists, _dig(_ent(ctx, b, lab)[0], "final", "sparsity", 0, "atoms")))
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
    rows = []
    for b in benches:
        ents = _ent(ctx, b, label) if label in ctx.labels(b) else []
        atoms = _dig(ents[0], "final", "atoms") if ents else None
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


# -- 2. amortised inference --------------------------------------------------------------------------
_AM_OPTS = {"objective": "lasso", "steps": 3, "encoder": {"epochs": 50, "lr": 3e-3, "patience": 5}, "repeats": 3}
_AM_SMOKE = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}}


def _amortised(bench: Bench, *, quick: bool = False) -> Bench:
    """Protocol ``amortised`` on ``bench``'s task with its chosen ``vn``. ``quick``: also take
    the bench's quick-scale task parameters (vn_dynamics ran nbody and mnist transform at a
    smaller quick scale than the tasks' own; the amortised rows must measure that VN)."""
    smoke = bench.scales.get("smoke")
    scales = {"smoke": Scale(params=dict(smoke.params) if smoke else {}, config=_AM_SMOKE)}
    if quick and "quick" in bench.scales:
        scales["quick"] = Scale(params=dict(bench.scales["quick"].params))
    return Bench(f"amortised_{bench.name}", bench.task, params=bench.params, seeds=SEEDS, protocol="amortised",
                 options=_AM_OPTS, models=("vn",), configs=bench.configs, scales=scales,
                 title=f"amortised: {bench.title or bench.name}")


# every VN benchmark: the vn_benchmarks result benches, and nbody / mnist transform of vn_dynamics
# (there the vector reading `vn`; AmortisedVN wraps VectorNetwork layers only, so the applied readings have no row)
AMORTISED = (*(_amortised(b) for b in VB.RESULT_BENCHES), *(_amortised(b, quick=True) for b in VD.BENCHES))
GOAL_SPEEDUP, GOAL_ERROR = 10.0, 1.2


def amortised_table(ctx: ReportContext) -> list[str]:
    lines = ["Per benchmark and test split, mean ± sample std over seeds. *FISTA error*: the VN with plain FISTA "
             "(its own budget); *encoder error ratio*: the encoder alone over FISTA; *x faster, equal energy* / *equal "
             "error*: FISTA's time at its cheapest iteration budget whose free energy (test error) is at least as low "
             "as the encoder's, over the encoder's time (`≥`: no budget up to FISTA's `max_iter` is as good, so the "
             "ratio uses the full budget: a lower bound); *warm start*: FISTA warm-started by the encoder, its time to "
             "plain FISTA's final energy, as a speed-up (*not reached*: no warm-started budget up to `max_iter` gets as "
             "low; in brackets the speed-up with both at the full budget); *OOD/ID*: each method's error on the "
             "split over its error on "
             "`id` (an encoder that loses VN's OOD behaviour has a larger ratio than FISTA). Goal: at least "
             f"{fmt(GOAL_SPEEDUP)}x faster at no more than {fmt(GOAL_ERROR)}x FISTA's error.", "",
             "| benchmark | split | FISTA error | encoder error ratio | x faster, equal energy | x faster, equal error | "
             "warm start x faster | OOD/ID FISTA | OOD/ID encoder | goal |", "|---|---|---|---|---|---|---|---|---|---|"]
    any_rows = False
    for b in AMORTISED:
        if "vn" not in ctx.labels(b.name):
            continue
        splits = list(dict.fromkeys(c.split for c in ctx.cells(b.name, "error_ratio")))
        for s in splits:
            any_rows = True
            v = lambda m: _vals(ctx, b.name, "vn", s, m)  # noqa: E731

            def bound(key: str) -> str:
                text = _ms(v(f"speedup_equal_{key}"), 2)
                return ("≥ " + text) if any(x > 0 for x in v(f"beyond_budget_{key}")) else text
            met = _goal_met(v)
            ood = ["—", "—"]
            if s != "id":
                for i, m in enumerate(("fista_error", "amortised_error")):
                    num, den = _mean(v(m)), _mean(_vals(ctx, b.name, "vn", "id", m))
                    ood[i] = fmt(num / den) if den and not math.isnan(num) else "—"
            lines.append(f"| {b.name.removeprefix('amortised_')} | {s} | {_ms(v('fista_error'))} | {_ms(v('error_ratio'))} | "
                         f"{bound('energy')} | {bound('error')} | {warm(v)} | "
                         f"{ood[0]} | {ood[1]} | {'met' if met else 'not met'} |")
    if not any_rows:
        return ["No records yet (`hebbnets reproduce vn_claims --benches " + ",".join(b.name for b in AMORTISED) + "`).", ""]
    return lines + [""] + _amortised_configs(ctx)


def _source_spec(bench: Bench) -> str:
    """The spec whose bench an amortised bench measures (``vn_dynamics`` or ``vn_benchmarks``)."""
    return "vn_dynamics" if bench.name.removeprefix("amortised_") in {b.name for b in VD.BENCHES} else "vn_benchmarks"


def _amortised_configs(ctx: ReportContext) -> list[str]:
    """The VN configuration each amortised bench ran (from its records) and the code commit whose
    task configs file chose it (the ``vn_benchmarks`` choice at that commit)."""
    lines = ["The VN each row measures: the configuration `vn_benchmarks` (nbody, mnist transform: `vn_dynamics`) had "
             "chosen for the task at the records' commit (`src/hebbnets/tasks/configs/`), as recorded:", ""]
    for b in AMORTISED:
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
        if cfg.get("test_lam") is not None and cfg.get("test_lam") != cfg.get("lam"):
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


def warm(v: Any) -> str:
    """The warm start's speed-up to plain FISTA's final energy; when no warm-started budget up to
    ``max_iter`` reaches it, says so, with the speed-up at the full budget beside it."""
    reached = v("warm_start_speedup_equal_energy")
    if reached:
        return _ms(reached, 2)
    full = v("warm_start_speedup")
    return "not reached" + (f" ({_ms(full, 2)} at the full budget)" if full else "")


def _goal_met(v: Any) -> bool:
    return _mean(v("speedup_equal_energy")) >= GOAL_SPEEDUP and _mean(v("error_ratio")) <= GOAL_ERROR


def _amortised_claim(ctx: ReportContext) -> tuple[bool | None, str]:
    met, missed = [], []
    for b in AMORTISED:
        if "vn" not in ctx.labels(b.name):
            continue
        for s in dict.fromkeys(c.split for c in ctx.cells(b.name, "error_ratio")):
            v = lambda m: _vals(ctx, b.name, "vn", s, m)  # noqa: E731
            (met if _goal_met(v) else missed).append(f"{b.name.removeprefix('amortised_')}/{s}")
    if not met and not missed:
        return None, "no records yet."
    return not missed, (f"met on {len(met)} of {len(met) + len(missed)} benchmark splits"
                        + (f" ({', '.join(met)})" if met else "") + (f"; not met on {', '.join(missed)}" if missed else "") + ".")


# -- 3. faster FISTA (the speed report's measurement) ------------------------------------------------
def fista_speed(ctx: ReportContext) -> list[str]:
    from .speed import vn_inference_lines

    other = ctx.other_spec("speed")
    e = other.measure("vn_inference") if other is not None else None
    if e is None:
        return ["No `vn_inference` record in `records/speed.jsonl` yet (`hebbnets reproduce speed --benches vn_inference`).",
                ""]
    return ["From `reports/speed.md` (the `vn_inference` measurement of the `speed` spec; "
            "`python benchmarks/vn_inference.py` prints the same table):", "", *vn_inference_lines(e)]


def coverage(ctx: ReportContext) -> list[str]:
    """What the records hold against what the spec plans: benches and rows not run, and rows with
    fewer seeds than ``SEEDS`` (a cut for compute time is stated here, from the store)."""
    missing = []
    for b in ctx.spec.benches:
        line = unrun_line(ctx, b.name)  # labels without records, and the seeds a label lacks
        if line:
            missing.append(line)
    if not missing:
        return ["Every bench and row of the spec has records for seeds " + ", ".join(map(str, SEEDS)) + ".", ""]
    return ["Not run in this round (compute time: one single-thread process on a shared 2-core machine), so every "
            "statement below leaves these out:", "", *missing, ""]


SPEC = register_spec(Spec(
    "vn_claims", "VN's second claim: no weight entanglement, and amortised inference",
    benches=(*CONTINUAL, *AMORTISED),
    intro=("The Vector Network paper's structural claim: Atomic-Hebb changes only the atoms active for a sample, so "
           "learning one behaviour does not degrade another, and atoms are reusable parts. Its stated limitation: "
           "iterative inference is slower than a feed-forward pass, with learned feed-forward updates as the fix. "
           "Every number is a test-split value, mean ± sample std over seeds 0, 1, 2 (data and models re-seeded). "
           "Background: `docs/vn.md`; the measures: `hebbnets.continual`, `hebbnets.entanglement`, "
           "`hebbnets.vn.amortised`."),
    sections=(
        Custom(coverage),
        Text("""## 1. Continual learning: does learning a second stage degrade the first?

Each task learns two stages with disjoint factors, the second by `partial_fit` from the state the first left. Every model was tuned on validation data carved from the **first stage only** (three points per model; the configurations and every point are under "Configurations"). `mlp+ewcN` is the tuned MLP with elastic weight consolidation of strength N (fixed: nothing in the first stage can choose it)."""),
        Claim("The vector VN (`vn`) forgets less of the first stage than the MLP trained by backprop, on every "
              "continual benchmark", _vn_vs_mlp),
        *(s for b in CONTINUAL for s in (_forgetting_claim(b.name), _final_claim(b.name),
                                            Custom(forgetting_table(b.name)))),
        Figure("forgetting_bars", "forgetting", "Forgetting per model and benchmark",
               {"benches": tuple(b.name for b in CONTINUAL)}),
        Text("""## 2. Entanglement and reuse

Why a model forgets (or not): do the two stages' updates touch the same weights, do they use the same atoms, and does an atom that serves a factor serve it in every combination that contains the factor? Measured by `hebbnets.entanglement` on every fitted model. For `vn_applied_set` (a backprop-trained content encoder plus atoms learned by Atomic-Hebb) the overlap is its encoder's gradient cosine; its atoms, and `vn_matrix`'s, have no overlap or reuse measure yet."""),
        *_entanglement_claims(),
        *(Custom(entanglement_table(b.name)) for b in CONTINUAL),
        Figure("atom_factor_usage", "atom_factor_usage", "VN: atom-by-factor usage matrix after both stages (first seed)",
               {"benches": tuple(b.name for b in CONTINUAL)}),
        Figure("sparsity", "sparsity", "VN: active atoms per test sample (first layer, every seed)",
               {"benches": tuple(b.name for b in CONTINUAL)}),
        Figure("stage_atoms", "stage_atoms", "VN: the atoms each stage's test samples use most (first seed)",
               {"benches": tuple(b.name for b in CONTINUAL)}),
        Text("""## 3. Amortised inference

A LISTA encoder per layer (3 unrolled steps, trained on the training inputs to minimise the layer's own LASSO objective: no FISTA codes needed), on every VN benchmark: those of `vn_benchmarks`, and nbody and mnist transform of `vn_dynamics` at its (smaller) task sizes (same task parameters, same chosen configuration of the vector reading `vn`; not amortised: the applied-weight readings `vn_applied` / `vn_applied_set` (their context inference is also a FISTA-solved LASSO, but `AmortisedVN` wraps only `VectorNetwork` layers and no encoder was built for them)), alone and as FISTA's warm start. Times are the fastest of 3 runs, one thread, the whole test split at once."""),
        Claim(f"The encoder is at least {fmt(GOAL_SPEEDUP)}x faster than FISTA at equal energy at no more than "
              f"{fmt(GOAL_ERROR)}x its test error, on every benchmark and split", _amortised_claim),
        Custom(amortised_table),
        Text("## 4. Faster FISTA at scale"),
        Custom(fista_speed),
        Text("## Configurations (first-stage validation only)"),
        *(TuningTable(b.name) for b in CONTINUAL),
    ),
))
