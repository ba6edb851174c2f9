"""``vn_benchmarks``: the Vector Network paper's benchmarks (reports/vn_benchmarks.md).

The paper's claim: VN matches the baselines in distribution and reaches an OOD error about 10x
lower. Three task families (``functions1d``, ``spatial2d``, ``mnist_comp`` reconstruct; nbody and mnist_comp
transform are in the ``vn_dynamics`` spec), every model
at the configuration chosen on validation data carved from the task's training split (the
task's configs file; ``--stage tune`` reruns the grids below and writes it), test error on
held-out ID and OOD splits, 3 seeds (data and models re-seeded). Background: ``docs/vn.md``.

To add a model to a benchmark: one line in the bench's ``models`` (and, for an honest
comparison, a tuning grid with as many points as the others).
"""
from __future__ import annotations

import math
from typing import Any

from .._report import (Claim, Custom, Figure, ReportContext, ResultsTable, Text, TuningTable, fmt, ood_id_ratio,
                       ratio_to_best)
from .._spec import Bench, Grid, Scale, Spec, register_spec, variant

SEEDS = (0, 1, 2)
LR3 = [1e-3, 3e-3, 1e-2]
_SMOKE_CONFIG = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}}

# -- functions1d ------------------------------------------------------------------------------
_F_SMOKE = Scale(params={"n_train": 48, "n_test": 12, "length": 16}, config=_SMOKE_CONFIG)
_SEQ = dict(epochs=200, patience=20, batch_size=64)
FUNCTIONS_MASKED = Bench(
    "functions1d_masked", "functions1d", params={"mode": "masked"}, seeds=SEEDS,
    models=(
        "vn",
        "transformer",
        "mamba",
        "mlp",
        "gap_interp",  # model-free reference: linear interpolation across the gap
    ),
    tuning={
        "vn": Grid({"lam": [0.003, 0.01, 0.03]}, base=dict(atoms=(150,), output="message", epochs=15, batch_size=64,
                                                            norm_policy="clip_s")),
        "transformer": Grid({"lr": LR3}, base=dict(d_model=32, n_heads=4, n_layers=2, d_ff=64, **_SEQ)),
        "mamba": Grid({"lr": LR3}, base=dict(d_model=24, n_layers=2, d_state=8, expand_factor=1, **_SEQ)),
        "mlp": Grid({"lr": LR3}, base=dict(hidden=(64, 64), **_SEQ)),
    },
    scales={"smoke": _F_SMOKE}, title="functions1d, mode=masked")
# reconstruct mode reuses the masked-mode choice (its configs file says so)
FUNCTIONS_RECONSTRUCT = Bench(
    "functions1d_reconstruct", "functions1d", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=("vn", "transformer", "mamba", "mlp"), scales={"smoke": _F_SMOKE}, title="functions1d, mode=reconstruct")
# the first version of the split (kept to show why it was replaced): trained sin+cos, OOD sin+gauss, cos+poly
FUNCTIONS_ROUND1 = Bench(
    "functions1d_round1_split", "functions1d", seeds=SEEDS, models=("mlp", "gap_interp"),
    params={"mode": "masked", "freq_high": 2.5, "mask_fraction": 0.25, "ood_pairs": ["sin+gauss", "cos+poly"],
            "train_combos": ["sin", "cos", "poly", "gauss", "sin+cos", "sin+poly", "cos+gauss", "poly+gauss", "sin(poly)",
                             "gauss(sin)"]},
    configs="functions1d-masked", scales={"smoke": _F_SMOKE}, title="functions1d, the round-1 split (masked)")

# -- spatial2d --------------------------------------------------------------------------------
_S_SMOKE = Scale(params={"grid": 8, "held_out": [3, 4]}, config=_SMOKE_CONFIG)
_IMG = dict(epochs=400, patience=25, batch_size=32)


def _spatial(mode: str, vn_base: dict[str, Any], vae: dict[str, Any]) -> Bench:
    return Bench(
        f"spatial2d_{mode}", "spatial2d", params={"mode": mode}, seeds=SEEDS,
        models=(
            "vn",
            "cnn",
            "vae",
            "factorized",  # the answer's structure built in (a product of x and y profiles)
            "mlp",
            "zeros",  # reference: the empty image
        ),
        options={"statistics": ["error_map", "atoms"]},
        tuning={
            "vn": Grid({"lam": [0.003, 0.01, 0.05]}, base=vn_base),
            "cnn": Grid({"lr": LR3}, base=dict(channels=16, latent=64, **_IMG)),
            "vae": Grid({"lr": LR3}, base={**vae, **_IMG}),
            "factorized": Grid({"lr": LR3}, base=dict(hidden=512, **_IMG)),
            "mlp": Grid({"lr": LR3}, base=dict(hidden=(64,), **_IMG)),
        },
        scales={"smoke": _S_SMOKE}, title=f"spatial2d, mode={mode}")


SPATIAL_DECODE = _spatial("decode", dict(atoms=(96, 64), hidden=(64,), epochs=30, batch_size=32, nonneg=True),
                          dict(hidden=256, latent=8, channels=32, beta=1e-3))
SPATIAL_RECONSTRUCT = _spatial("reconstruct", dict(atoms=(64,), output="reconstruction", epochs=30, batch_size=32,
                                                   nonneg=True, topk=4), dict(hidden=128, latent=8, channels=32, beta=1e-2))
# a diagnostic far outside the parameter budget (12x): one atom per pixel; nothing is chosen with it
SPATIAL_CAPACITY = Bench(
    "spatial2d_capacity", "spatial2d", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=(variant("vn-784-atoms", "vn", atoms=(784,)),), scales={"smoke": _S_SMOKE},
    title="Diagnostic: VN with one atom per pixel (not a benchmark row)")

# -- mnist_comp -------------------------------------------------------------------------------
_MN = dict(epochs=40, patience=5, batch_size=64)


def _mnist(mode: str, vn_base: dict[str, Any]) -> Bench:
    return Bench(
        f"mnist_{mode}", "mnist_comp", params={"mode": mode}, seeds=SEEDS,
        models=(
            "vn",
            "mlp",
            "ae",
            "conv_ae",
            "vae",
        ),
        options={"statistics": ["atoms"]},
        tuning={
            "vn": Grid({"atoms": [(128,), (512,)], "lam": [0.01, 0.05]}, base=vn_base),
            "mlp": Grid({"hidden": [(256,), (512, 512)], "lr": [1e-3, 3e-3]}, base=_MN),
            "ae": Grid({"latent": [16, 64], "lr": [1e-3, 3e-3]}, base=_MN),
            "conv_ae": Grid({"latent": [16, 64], "lr": [1e-3, 3e-3]}, base=_MN),
            "vae": Grid({"latent": [16, 64], "lr": [1e-3, 3e-3]}, base=_MN),
        },
        scales={"smoke": Scale(params={"n_train": 48, "n_test": 12}, config=_SMOKE_CONFIG)}, title=f"mnist_comp, mode={mode}")


MNIST_RECONSTRUCT = _mnist("reconstruct", dict(epochs=5, batch_size=64, output="reconstruction", nonneg=True))

RESULT_BENCHES = (FUNCTIONS_MASKED, FUNCTIONS_RECONSTRUCT, SPATIAL_DECODE, SPATIAL_RECONSTRUCT, MNIST_RECONSTRUCT)
REFERENCES = ("gap_interp", "zeros")


# -- claims and findings, computed from the records ---------------------------------------------
def _ood_splits(ctx: ReportContext, bench: str, metric: str) -> list[str]:
    return [s for s in dict.fromkeys(c.split for c in ctx.cells(bench, metric)) if s != "id"]


def _metric(ctx: ReportContext, bench: str) -> str | None:
    metrics = ctx.metrics(bench)
    return metrics[0] if metrics else None


def _paper_claim(bench: str) -> Claim:
    def check(ctx: ReportContext) -> tuple[bool | None, str]:
        m = _metric(ctx, bench)
        if m is None or "vn" not in ctx.labels(bench):
            return None, "no records yet."
        parts, ok = [], True
        for s in ["id"] + _ood_splits(ctx, bench, m):
            r, best, _ = ratio_to_best(ctx, bench, "vn", s, m, REFERENCES)
            if best is None:
                return None, "no baseline records yet."
            parts.append(f"{s} {fmt(r)} (best {best})")
            ok = ok and (r <= 1.25 if s == "id" else r <= 0.2)
        return ok, "VN error / best baseline error: " + "; ".join(parts) + "."
    return Claim(f"{bench}: ID parity (VN within 1.25x of the best baseline) and OOD error about 10x lower (at most "
                 "0.2x on every OOD split)", check)


def _ratio(ctx: ReportContext, bench: str, a: str, b: str, split: str, metric: str) -> float:
    x, y = ctx.cell(bench, a, split, metric), ctx.cell(bench, b, split, metric)
    return math.nan if x is None or y is None else x.mean / y.mean


def split_check(ctx: ReportContext) -> list[str]:
    rows = []
    for bench, what in (("functions1d_round1_split", "round 1: train sin+cos, sin+poly, cos+gauss, poly+gauss; OOD "
                                                     "sin+gauss, cos+poly; 0.5-2.5 cycles, 25 % gap"),
                        ("functions1d_masked", "now: train {sin,cos}x{poly,gauss}; OOD sin+cos, poly+gauss; 0.5-4 cycles, "
                                               "30 % gap")):
        interp = ood_id_ratio(ctx, bench, "gap_interp", "ood_pairs", "mse_missing")
        mlp = ood_id_ratio(ctx, bench, "mlp", "ood_pairs", "mse_missing")
        if math.isnan(interp) or math.isnan(mlp):
            continue
        rows.append(f"| {what} | {fmt(interp)} | {fmt(mlp)} | {fmt(mlp / interp)} |")
    if not rows:
        return ["No records of the split check yet.", ""]
    return ["| split definition | interpolation ood_pairs/id | MLP ood_pairs/id | excess (MLP / interpolation) |",
            "|---|---|---|---|", *rows, ""]


def error_by_split(ctx: ReportContext) -> list[str]:
    """Mean per-centre error over the training, id and ood centres (error maps, mean over seeds)."""
    import numpy as np

    from .._figures import _mean_map

    rows = []
    for b in ("spatial2d_decode", "spatial2d_reconstruct"):
        for lab in ctx.labels(b):
            got = _mean_map(ctx, b, lab)
            if got is None:
                continue
            err, split = got
            cells = [fmt(float(np.mean(err[split == code]))) for code in (0, 1, 2)]
            rows.append(f"| {b.split('_')[1]} | {lab} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["Mean per-centre MSE by split (the error maps above; seeds averaged). The training centres' error shows how "
            "well each model fits what it was trained on:", "", "| mode | model | train | id | ood |",
            "|---|---|---|---|---|", *rows, ""]


def findings(ctx: ReportContext) -> list[str]:
    """The measured findings, each with the numbers behind it (skipped when its records are missing)."""
    out: list[str] = []
    fm, b = "mse_missing", "functions1d_masked"
    if {"vn", "mamba"} <= set(ctx.labels(b)):
        vs = {s: _ratio(ctx, b, "vn", "mamba", s, fm) for s in ["id"] + _ood_splits(ctx, b, fm)}
        ratios = {lab: ood_id_ratio(ctx, b, lab, "ood_pairs", fm) for lab in ("vn", "transformer", "mamba", "mlp")}
        others = [v for k, v in ratios.items() if k != "vn" and not math.isnan(v)]
        out.append(f"- **functions1d masked.** VN's OOD/ID ratio on `ood_pairs` is {fmt(ratios['vn'])}, against "
                   f"{fmt(min(others))}–{fmt(max(others))} for the Transformer, Mamba and the MLP, but Mamba is better on "
                   "every split: VN's error is " + ", ".join(f"{fmt(v)}x Mamba's on {s}" for s, v in vs.items())
                   + ". So VN's smaller OOD gap comes from a worse ID error, not from a lower OOD error. An earlier "
                   "round with the baselines capped at 20 epochs had VN closer to Mamba; training the baselines to "
                   "convergence widened the gap (that round's test runs are not in the committed records).")
    fr, b = "mse", "functions1d_reconstruct"
    if "vn" in ctx.labels(b):
        parts = []
        for s in ["id"] + _ood_splits(ctx, b, fr):
            r, best, _ = ratio_to_best(ctx, b, "vn", s, fr, REFERENCES)
            if best is not None:
                parts.append(f"{fmt(r)}x the best ({best}) on {s}")
        ood = {s: ood_id_ratio(ctx, b, "vn", s, fr) for s in _ood_splits(ctx, b, fr)}
        worst = max((c.mean for c in ctx.cells(b, fr)), default=math.nan)
        out.append(f"- **functions1d reconstruct** is almost an identity map (every error below {fmt(worst)}); VN reuses "
                   "the masked-mode choice. VN's error is " + "; ".join(parts) + ". VN's OOD/ID ratios: "
                   + ", ".join(f"{s} {fmt(v)}" for s, v in ood.items())
                   + " (below 1 means its error is set by what its atoms cannot represent rather than by which "
                   "combinations it saw; not checked further).")
    for mode in ("decode", "reconstruct"):
        b = f"spatial2d_{mode}"
        if not {"vn", "zeros"} <= set(ctx.labels(b)):
            continue
        vn_id, vn_ood = ctx.cell(b, "vn", "id", "mse"), ctx.cell(b, "vn", "ood", "mse")
        z_id, z_ood = ctx.cell(b, "zeros", "id", "mse"), ctx.cell(b, "zeros", "ood", "mse")
        r, best, _ = ratio_to_best(ctx, b, "vn", "ood", "mse", REFERENCES + ("factorized",))
        line = (f"- **spatial2d {mode}.** VN scores {fmt(vn_id.mean)} on ID and {fmt(vn_ood.mean)} on OOD against "
                f"{fmt(z_id.mean)} / {fmt(z_ood.mean)} for predicting all zeros (OOD/ID ratio "
                f"{fmt(ood_id_ratio(ctx, b, 'vn', 'ood', 'mse'))}). Without the hand-factorised decoder, VN's OOD error "
                f"is {fmt(r)}x the best other model's ({best}).")
        if mode == "decode":
            line += (" VN's output is a *sum* of learned atoms `U g`, while a bump at `(x, y)` is the *product* of an "
                     "x-profile and a y-profile: a sparse sum of atoms trained on other centres cannot form a bump at a "
                     "new centre, and the `id` centres are new centres too. Its OOD/ID ratio near 1 means it fails "
                     "everywhere alike, not that it generalises.")
        else:
            cap = ctx.cell("spatial2d_capacity", "vn-784-atoms", "id", "mse")
            cap_ood = ctx.cell("spatial2d_capacity", "vn-784-atoms", "ood", "mse")
            mlp = ctx.cell(b, "mlp", "id", "mse")
            line += (f" At a matched parameter count VN behaves like a bottleneck: its ID error is {fmt(vn_id.mean / mlp.mean)}x "
                     "the MLP's.")
            if cap is not None and cap_ood is not None:
                line += (f" With one atom per pixel (784 atoms, {fmt(cap.num_parameters / ctx.cell(b, 'vn', 'id', 'mse').num_parameters)}x "
                         f"the parameters; a diagnostic, not a benchmark row) the ID error drops {fmt(vn_id.mean / cap.mean)}x, "
                         f"but the OOD error stays at {fmt(cap_ood.mean)} (ratio {fmt(cap_ood.mean / cap.mean)}): extra "
                         "atoms become templates of more trained centres, not reusable parts.")
            if any(e["stats"].get("atoms") for e in ctx.fits(b, "vn")):
                line += (" The atoms figure shows it for the benchmark VN too: each of its most used atoms is a bump "
                         "at one place (a template of trained centres), not a row or column profile that new centres "
                         "could be composed from.")
        out.append(line)
    comp = []
    for b in ("spatial2d_decode", "spatial2d_reconstruct"):
        for lab in ("cnn", "vae", "factorized"):
            r = ood_id_ratio(ctx, b, lab, "ood", "mse")
            if not math.isnan(r):
                comp.append(f"{lab} {fmt(r)} ({b.split('_')[1]})")
    if comp:
        out.append("- **The splits are compositional.** spatial2d OOD/ID ratios: " + ", ".join(comp) + ": the dense "
                   "decoders degrade by an order of magnitude where the hand-factorised decoder does not. On functions1d "
                   "`ood_pairs`, the round-1 split was not compositional (the MLP degraded no more than gap "
                   "interpolation); the current one is (table above).")
    out += _search_findings(ctx)
    return out + [""]


def _search_findings(ctx: ReportContext) -> list[str]:
    """What the two-round validation searches of functions1d and spatial2d showed (configs files)."""
    hurt, total, caps = 0, 0, []
    for bench in (FUNCTIONS_MASKED, SPATIAL_DECODE, SPATIAL_RECONSTRUCT):
        models = ctx.configs(bench.configs).get("models", {})
        for m, d in models.items():
            pts = [p for p in d.get("points", []) if p.get("round") == 2]
            plain = {p["config"].get("lr"): p["value"] for p in pts if not p["config"].get("weight_decay")}
            for p in pts:
                if p["config"].get("weight_decay") and p["config"].get("lr") in plain:
                    total += 1
                    hurt += p["value"] > plain[p["config"]["lr"]]
            r2 = [p["value"] for p in pts]
            r3 = [p["value"] for p in d.get("points", []) if p.get("round") == 3]
            if bench is FUNCTIONS_MASKED and m != "vn" and r2 and r3:
                caps.append(f"{m} {fmt(min(r2))} -> {fmt(min(r3))}")
    out = []
    effort = []
    for bench in RESULT_BENCHES:
        own = ctx.configs(bench.configs, follow=False)
        models = ctx.configs(bench.configs).get("models", {})
        if "same_as" in own or not models:
            continue
        rounds = sorted({p.get("round") for d in models.values() for p in d.get("points", [])}, key=str)
        parts = []
        for r in rounds:
            counts = {m: sum(1 for p in d.get("points", []) if p.get("round") == r) for m, d in models.items()}
            equal = "equal" if len(set(counts.values())) == 1 else "unequal"
            label = f"round {r}" if r is not None else "one round"
            parts.append(f"{label} " + ", ".join(f"{m} {n}" for m, n in counts.items()) + f" ({equal})")
        effort.append(f"{bench.configs}: " + "; ".join(parts))
    if effort:
        out.append("- **Tuning effort** (validation points per model, from the configs files): " + " | ".join(effort)
                   + ". `beta` and the Hebbian rates were not searched anywhere.")
    if total:
        out.append(f"- **Weight decay.** In the round-2 baseline grids, weight decay 1e-4 (Adam L2) was worse than the same "
                   f"learning rate without it in {hurt} of {total} pairs, so only the learning-rate points were "
                   "informative.")
    if caps:
        out.append("- **The epoch cap mattered.** functions1d masked, best validation error of each baseline with the "
                   "round-2 cap (20 epochs) -> without it (200 epochs, patience 20): " + ", ".join(caps) + ".")
    return out


def _bench_sections(bench: Bench, **table: Any) -> tuple[Any, ...]:
    return (ResultsTable(bench.name, references=REFERENCES, **table),)


SPEC = register_spec(Spec(
    "vn_benchmarks", "VN benchmarks: functions1d, spatial2d, mnist_comp reconstruct",
    benches=(*RESULT_BENCHES, FUNCTIONS_ROUND1, SPATIAL_CAPACITY),
    intro=("Every number is a test-split value, mean ± sample std over seeds 0, 1, 2 (data and models re-seeded), at "
           "the configuration chosen on validation data carved from the seed-0 training split (section \"Configurations\"; "
           "the validation points per model are counted under \"What the numbers say\"). Rows marked `(summary)` are imported "
           "summaries of earlier runs (mean ± std only; the per-seed values were not committed); `reproduce` replaces "
           "them with per-seed records. `gap_interp` and `zeros` are model-free references, never counted as the best "
           "baseline. Background: `docs/vn.md`."),
    sections=(
        Text("## The paper's claim, benchmark by benchmark"),
        *(_paper_claim(b.name) for b in RESULT_BENCHES),
        *(s for b in RESULT_BENCHES[:4] for s in _bench_sections(
            b, exclude_from_best=("factorized",) if b.task == "spatial2d" else ())),
        Figure("error_maps", "error_maps", "spatial2d: per-centre test error, mean over seeds",
               {"benches": ("spatial2d_decode", "spatial2d_reconstruct")}),
        Custom(error_by_split),
        *(s for b in RESULT_BENCHES[4:] for s in _bench_sections(b)),
        Figure("id_vs_ood", "id_vs_ood", "ID vs OOD test error of every model, mean ± sample std over seeds",
               {"benches": tuple(b.name for b in RESULT_BENCHES)}),
        Figure("atoms", "atoms", "VN's most used first-layer atoms on the image tasks (first seed)",
               {"benches": ("spatial2d_reconstruct", "spatial2d_decode", "mnist_reconstruct")}),
        Text("""## Is functions1d `ood_pairs` compositional?

A dense model should degrade on unseen pairs clearly more than a model-free reference (linear interpolation across the masked gap, `gap_interp`), whose OOD/ID ratio measures only how much harder the OOD signals are intrinsically. Masked mode, seeds 0-2, test splits (a check of the benchmark; nothing is chosen with it)."""),
        Custom(split_check),
        ResultsTable("spatial2d_capacity", model=None, note="The spatial2d reconstruct VN configuration with 784 atoms "
                     "(12x the parameters of the baselines); far outside the parameter budget, nothing chosen with it."),
        Text("## What the numbers say"),
        Custom(findings),
        Text("## Configurations (validation only)"),
        *(TuningTable(b.name) for b in RESULT_BENCHES),
    ),
))
