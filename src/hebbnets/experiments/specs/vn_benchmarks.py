"""``vn_benchmarks``: the Vector Network paper's benchmarks (reports/vn_benchmarks.md).

The paper's claim: VN matches the baselines in distribution and reaches an OOD error about 10x
lower. Three task families here (``functions1d``, ``spatial2d``, ``mnist_comp`` reconstruct;
nbody and mnist_comp transform are in the ``vn_dynamics`` spec), each read by every VN variant
that fits its data:

* ``vn``: the vector reading (a layer's message ``U g``; ``output="reconstruction"`` reads the
  input dictionary ``S g``, e.g. ``vn-inpaint`` on functions1d masked);
* ``vn_matrix``: the matrix reading, the composed operator ``U G S^T`` is the output (images);
  ``vn_matrix-private`` is its control with the same atom count and active count and no shared
  factors (a flat library of fixed pairs ``u_k s_k^T``);
* ``vn_pairs``: pair atoms ``[p_a; q_b] -> u_a v_b^T`` (spatial2d decode).

Every model runs at the configuration chosen on validation data carved from the task's training
split (the task's configs file; ``--stage tune`` reruns the searches below and writes it), with
the same number of validation points per model within a bench, and trains until its validation
error stops improving (the bench's epoch cap and patience, the same for every model). Where a
round cut the VN side for compute time, the report's budget table (read from the configs files)
says so. Test error on held-out ID and OOD splits, 3 seeds (data and models re-seeded).
Background: ``docs/vn.md``.

To add a model to a benchmark: one line in the bench's ``models`` (and, for an honest
comparison, a tuning search with as many points as the others).
"""
from __future__ import annotations

import math
from typing import Any

from ..reporting import (Cell, Claim, Custom, Figure, ReportContext, ResultsTable, Text, TuningTable, capped_fits, fmt,
                       ood_id_ratio, unrun_line)
from .._spec import Bench, Grid, Moves, Scale, Spec, register_spec, variant

SEEDS = (0, 1, 2)
LR3 = [1e-3, 3e-3, 1e-2]
#: smoke scale: one epoch, short FISTA budgets (the whole spec, searches included, in seconds)
_SMOKE_CONFIG = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}, "vn_matrix": {"max_iter": 20},
                 "vn_pairs": {"max_iter": 20}}


def _rates(vn_rho: float) -> dict[str, float]:
    return {"rho_s": vn_rho, "rho_u": vn_rho}


def _budget() -> dict[str, Any]:
    """The FISTA-budget move of every VN search: 2.5x the iterations, a 10x tighter tolerance."""
    return {"max_iter": 500, "tol": 1e-5}


# -- functions1d ------------------------------------------------------------------------------
_F_SMOKE = Scale(params={"n_train": 48, "n_test": 12, "length": 16}, config=_SMOKE_CONFIG)
_SEQ = dict(epochs=200, patience=20, batch_size=64)
#: functions1d: every model trains under the same stopping rule (``_SEQ``) and is chosen from the
#: same number of validation points as each baseline (8: a learning-rate round and a learning-rate
#: grid). VN's search moves every knob the issue names: ``lam`` (down and up), ``beta``, the
#: Hebbian rates, the test-time ``lam`` (0.003: never a training ``lam`` of the search, so the move
#: cannot repeat a point), the FISTA budget and the atom count. Atoms start at 150 (the baselines'
#: parameter count) and move down only: 300 atoms (38,400 parameters) break the 2x parameter rule
#: against Mamba's 10,513; more atoms are the diagnostic sweep's question.
F_VN = Moves(
    base=dict(atoms=(150,), output="message", lam=0.01, norm_policy="clip_s", **_SEQ),
    moves=({"lam": 0.005}, {"lam": 0.02}, {"beta": 0.5}, _rates(1.0), {"test_lam": 0.003}, _budget(),
           {"atoms": (100,)}))
#: the configuration an earlier, smaller search chose (3 points, 30 epochs, patience 5): the
#: atom-count sweep below stays at it (its 9 fits, about 25 min on one core, were not rerun at the new choice)
F_VN_EARLIER = dict(atoms=(150,), output="message", lam=0.01, norm_policy="clip_s", epochs=30, patience=5,
                    batch_size=64, test_lam=0.005, beta=1.0, rho_s=0.5, rho_u=0.5, max_iter=200, tol=1e-4)
FUNCTIONS_MASKED = Bench(
    "functions1d_masked", "functions1d", params={"mode": "masked"}, seeds=SEEDS,
    models=(
        "vn",
        variant("vn-inpaint", "vn", output="reconstruction"),  # plain inpainting: the input dictionary S alone
        "transformer",
        "mamba",
        "mlp",
        "gap_interp",  # model-free reference: linear interpolation across the gap
    ),
    # the baselines keep the configurations of their earlier rounds (8 points each: a learning-rate x
    # weight-decay round under a 20-epoch cap, then a learning-rate grid under _SEQ; configs file)
    tuning={"vn": F_VN}, kept={"transformer": 8, "mamba": 8, "mlp": 8},
    scales={"smoke": _F_SMOKE}, title="functions1d, mode=masked")
# reconstruct mode reuses the masked-mode choice (its configs file says so)
FUNCTIONS_RECONSTRUCT = Bench(
    "functions1d_reconstruct", "functions1d", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=("vn", "transformer", "mamba", "mlp"), scales={"smoke": _F_SMOKE},
    title="functions1d, mode=reconstruct")
# a diagnostic beyond the parameter budget (VN at 150 atoms has the baselines' parameter count; 300
# is the 2x rule's limit): nothing is chosen with it. Every row runs at the earlier configuration
# (F_VN_EARLIER), 150 atoms included, so the rows differ in the atom count alone
F_SWEEP_ATOMS = (300, 600, 1200)
FUNCTIONS_ATOMS = Bench(
    "functions1d_atoms_sweep", "functions1d", params={"mode": "masked"}, seeds=SEEDS,
    models=tuple(variant(f"vn-{k}-atoms", "vn", **{**F_VN_EARLIER, "atoms": (k,)}) for k in (150, *F_SWEEP_ATOMS)),
    scales={"smoke": _F_SMOKE}, title="Diagnostic: VN atom count beyond the parameter budget (functions1d masked)")
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
#: spatial2d (both modes): every model under the baselines' stopping rule (``_IMG``) and 9 validation
#: points each (the baselines' configs file entries: a learning-rate x weight-decay round of 6,
#: then a learning-rate grid of 3). Each VN variant's 9 points move the atom counts (twice where the
#: parameter rule allows it), ``lam`` (down and up), ``beta``, the Hebbian rates, the test-time
#: ``lam`` (never a training ``lam`` of the search) and the FISTA budget.
#: the no-shared-factor control's top-k: the shared model's measured active count per sample on the
#: id test split, rounded (set from seed 0's 2.68 so the control could start before seeds 1-2 ended;
#: the mean over seeds, 2.99, rounds the same; the report prints both measured counts)
S_CONTROL_TOPK = 3


#: the spatial2d baselines (``factorized`` is listed but never counted as the best baseline)
S_BASELINES = ("cnn", "vae", "factorized", "mlp")


def _spatial(mode: str, vn: Moves, extra: tuple, extra_tuning: dict[str, Moves]) -> Bench:
    """The baselines keep their earlier rounds' choice (9 points each in the configs file: a
    learning-rate x weight-decay round of 6, then a learning-rate grid of 3 under ``_IMG``)."""
    return Bench(
        f"spatial2d_{mode}", "spatial2d", params={"mode": mode}, seeds=SEEDS,
        models=(
            "vn",
            *extra,
            # factorized: the answer's structure built in (a product of x and y profiles): exact by construction
            *S_BASELINES,
            "zeros",  # reference: the empty image
        ),
        options={"statistics": ["error_map", "atoms"]},
        tuning={"vn": vn, **extra_tuning}, kept=dict.fromkeys(S_BASELINES, 9),
        scales={"smoke": _S_SMOKE}, title=f"spatial2d, mode={mode}")


SPATIAL_DECODE = _spatial(
    "decode",
    Moves(base=dict(atoms=(96, 64), hidden=(64,), lam=0.05, nonneg=True, **_IMG),
          moves=({"atoms": (128, 96)}, {"lam": 0.02}, {"lam": 0.1}, {"beta": 0.5}, _rates(1.0), {"test_lam": 0.01},
                 {**_budget(), "max_sweeps": 20}, {"atoms": (192, 128)})),
    ("vn_pairs",),
    # vn_pairs' Hebbian rates default to rho_in 1, rho_out 10 (its own scale): the move doubles both
    {"vn_pairs": Moves(base=dict(atoms_a=28, atoms_b=28, lam=0.05, **_IMG),
                       moves=({"atoms_a": 40, "atoms_b": 40}, {"lam": 0.02}, {"lam": 0.1}, {"beta": 0.3},
                              {"rho_in": 2.0, "rho_out": 20.0}, {"test_lam": 0.01}, _budget(),
                              {"atoms_a": 56, "atoms_b": 56}))})
SPATIAL_RECONSTRUCT = _spatial(
    "reconstruct",
    # atoms move down only: 128 atoms (200,704 parameters) are 1.9x the CNN's 105,585 (the 2x rule);
    # the capacity diagnostic below is the question beyond it. The top-k moves as well (the cap is a knob)
    Moves(base=dict(atoms=(128,), output="reconstruction", lam=0.001, nonneg=True, topk=4, **_IMG),
          moves=({"atoms": (64,)}, {"lam": 0.0003}, {"lam": 0.003}, {"beta": 0.5}, _rates(1.0), {"test_lam": 0.0005},
                 {"topk": 8}, _budget())),
    ("vn_matrix", variant("vn_matrix-private", "vn_matrix", factors="private", topk=S_CONTROL_TOPK)),
    # with input = target and no mask, beta > 0 weighs the reconstruction (1 + beta) during training only:
    # training at lam / (1 + beta) while predicting at lam (not a repeat of a lam move). The costlier
    # moves (more factors, the FISTA budget) come last, so an accepted one slows no later point
    {"vn_matrix": Moves(base=dict(atoms_u=28, atoms_s=28, lam=0.02, nonneg=True, **_IMG),
                        moves=({"atoms_u": 20, "atoms_s": 20}, {"lam": 0.01}, {"lam": 0.05}, {"beta": 1.0}, _rates(1.0),
                               {"test_lam": 0.015}, {"atoms_u": 36, "atoms_s": 36}, _budget()))})
#: the configuration an earlier, smaller search of spatial2d reconstruct chose (3 points, 60 epochs,
#: patience 10): the capacity row stays at it, with one atom per pixel
S_VN_EARLIER = dict(atoms=(128,), output="reconstruction", lam=0.001, nonneg=True, topk=4, epochs=60, patience=10,
                    batch_size=32, beta=1.0, rho_s=0.5, rho_u=0.5, test_lam=None, max_iter=200, tol=1e-4)
# a diagnostic far outside the parameter budget (12x): one atom per pixel; nothing is chosen with it
SPATIAL_CAPACITY = Bench(
    "spatial2d_capacity", "spatial2d", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=(variant("vn-784-atoms", "vn", **{**S_VN_EARLIER, "atoms": (784,)}),), scales={"smoke": _S_SMOKE},
    title="Diagnostic: VN with one atom per pixel (not a benchmark row, the earlier configuration)")

# -- mnist_comp -------------------------------------------------------------------------------
_MN = dict(epochs=40, patience=5, batch_size=64)
#: the configuration ``vn_matrix``'s mnist search chose while its test-time-``lam`` move was void (it
#: repeated the chosen ``lam`` 0.02). The no-shared-factor control ran at it (about 1.5 h per fit on one
#: core; the report prints the recorded times), and so does the pinned row ``vn_matrix-earlier`` (its 3
#: fits are that search's refits): the control is compared with the shared model at its own
#: configuration, not at the one chosen since
M_VN_MATRIX_EARLIER = dict(atoms_u=40, atoms_s=40, lam=0.02, nonneg=True, epochs=40, patience=5, batch_size=64,
                           max_iter=500, tol=1e-5, test_lam=None)
#: the control's top-k on mnist (as S_CONTROL_TOPK: ``vn_matrix-earlier`` measured 260.2, 286.1, 249.7 on id,
#: seeds 0-2)
M_CONTROL_TOPK = 265
#: mnist: 6 validation points per model: the autoencoders' latent width x learning rate, every VN
#: variant a successive search
MNIST_RECONSTRUCT = Bench(
    "mnist_reconstruct", "mnist_comp", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=(
        "vn",
        "vn_matrix",  # digits as 28 x 28 operators U G S^T
        variant("vn_matrix-earlier", "vn_matrix", **M_VN_MATRIX_EARLIER),
        variant("vn_matrix-private", "vn_matrix", **M_VN_MATRIX_EARLIER, factors="private", topk=M_CONTROL_TOPK),
        "ae",
        "conv_ae",
        "vae",
        "mlp",
    ),
    options={"statistics": ["atoms"]},
    tuning={
        "vn": Moves(base=dict(atoms=(512,), output="reconstruction", lam=0.05, nonneg=True, **_MN),
                    moves=({"atoms": (1024,)}, {"lam": 0.02}, {"beta": 0.3, **_rates(1.0)}, {"test_lam": 0.01},
                           _budget())),
        "vn_matrix": Moves(base=dict(atoms_u=28, atoms_s=28, lam=0.05, nonneg=True, **_MN),
                           moves=({"atoms_u": 40, "atoms_s": 40}, {"lam": 0.02}, {"rho_u": 1.0, "rho_s": 1.0},
                                  {"test_lam": 0.01}, _budget())),
        "ae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "conv_ae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "vae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "mlp": Grid({"hidden": [(512, 512), (1024, 1024)], "lr": LR3}, base=_MN),
    },
    scales={"smoke": Scale(params={"n_train": 48, "n_test": 12}, config=_SMOKE_CONFIG)},
    title="mnist_comp, mode=reconstruct")

RESULT_BENCHES = (FUNCTIONS_MASKED, FUNCTIONS_RECONSTRUCT, SPATIAL_DECODE, SPATIAL_RECONSTRUCT, MNIST_RECONSTRUCT)
REFERENCES = ("gap_interp", "zeros")


# -- who is who in the tables -------------------------------------------------------------------
#: the VN readings (rows that can reproduce the paper's claim) and what each reads
READINGS = {
    "vn": "vector reading (message `U g`, or `S g` with output=reconstruction)",
    "vn-inpaint": "vector reading, input dictionary `S g` alone (plain inpainting)",
    "vn_matrix": "matrix reading (`U G S^T`, shared factors)",
    "vn_pairs": "pair atoms (`[p_a; q_b] -> u_a v_b^T`)",
}
#: what a reading that carries a claim line builds in, per task (stated next to the verdict)
_MATRIX_CAVEATS = {
    "spatial2d": "a bump image is exactly one matrix atom `u_a s_b^T`: the reading has the data's rank-1 structure as "
                 "its inductive bias, learned rather than built in",
    "mnist_comp": "a digit is not one rank-1 atom, but factor libraries as wide as the image span every image, so the "
                  "reading can copy any digit: the no-shared-factor control (its ratio follows), not the error, says "
                  "whether shared factors carry the OOD result",
}
CAVEATS = {
    ("spatial2d", "vn_pairs"): "its output atoms `u_a v_b^T` have the product form of the images, the hand-factorised "
                               "decoder's inductive bias; inference picks the pair atom and Atomic-Hebb learns the "
                               "factors",
    **{(task, "vn_matrix"): text for task, text in _MATRIX_CAVEATS.items()},
}
#: ablations of a reading, never a baseline and never a reading that can carry the claim
CONTROLS = {"vn_matrix-private": "vn_matrix"}
#: a reading pinned at the configuration its control ran at, where the reading's choice moved on after
#: the control's fits: on a bench that has it, the control is compared with this row (like with like)
CONTROL_REFERENCES = {"vn_matrix-earlier": "vn_matrix"}
#: exact by construction (the answer's product structure is built in by hand): shown, labelled,
#: never the best baseline of a claim
HAND_FACTORISED = ("factorized",)
#: the baselines the paper names per task (the hand-factorised decoder of spatial2d is excluded above)
PAPER_NAMED = {"functions1d": ("transformer", "mamba"), "spatial2d": ("cnn", "vae"),
               "mnist_comp": ("ae", "conv_ae", "vae")}
#: the paper's pattern: ID parity (within this factor of the best baseline) and OOD error about
#: 10x lower (at most this factor of the best baseline on every OOD split)
ID_PARITY, OOD_FACTOR = 1.25, 0.2
#: a reconstruct result is carried by shared factors only if the no-shared-factor control's OOD
#: error is at least this many times the shared model's
CONTROL_MARGIN = 2.0
#: a control decides a verdict only on at least this many seeds (and as many as the reading has)
MIN_SEEDS = 3
NOT_BASELINES = set(READINGS) | set(CONTROLS) | set(CONTROL_REFERENCES) | set(HAND_FACTORISED) | set(REFERENCES)


def _metric(ctx: ReportContext, bench: str) -> str | None:
    metrics = ctx.metrics(bench)
    return metrics[0] if metrics else None


def _ood_splits(ctx: ReportContext, bench: str, metric: str) -> list[str]:
    return [s for s in dict.fromkeys(c.split for c in ctx.cells(bench, metric)) if s != "id"]


def _best(ctx: ReportContext, bench: str, split: str, metric: str, among: set[str] | tuple[str, ...]) -> Cell | None:
    cells = [c for c in ctx.cells(bench, metric) if c.split == split and c.label in among]
    return min(cells, key=lambda c: c.mean) if cells else None


def _baselines(ctx: ReportContext, bench: str) -> set[str]:
    return set(ctx.labels(bench)) - NOT_BASELINES


def _named(ctx: ReportContext, bench: str) -> set[str]:
    return set(PAPER_NAMED.get(ctx.spec.bench(bench).task, ())) & set(ctx.labels(bench))


def _mode(bench: str) -> str:
    return bench.split("_", 1)[1] if "_" in bench else bench


def _ratios(ctx: ReportContext, bench: str, label: str) -> list[tuple[str, float, Cell | None, float, Cell | None]]:
    """Per split: (split, error / best baseline's, that baseline, error / best paper-named one's, it)."""
    m = _metric(ctx, bench)
    out = []
    for s in ["id"] + _ood_splits(ctx, bench, m):
        mine = ctx.cell(bench, label, s, m)
        if mine is None:
            continue
        best, named = _best(ctx, bench, s, m, _baselines(ctx, bench)), _best(ctx, bench, s, m, _named(ctx, bench))
        out.append((s, mine.mean / best.mean if best else math.nan, best,
                    mine.mean / named.mean if named else math.nan, named))
    return out


def _pattern(rows: list[tuple]) -> tuple[bool, list[str]]:
    """Whether ratios to the best baseline show the paper's pattern, and notes on partial wins."""
    id_r = next((r for s, r, *_ in rows if s == "id"), math.nan)
    ood = [(s, r) for s, r, *_ in rows if s != "id"]
    ok = id_r <= ID_PARITY and bool(ood) and all(r <= OOD_FACTOR for _, r in ood)
    notes = []
    wins = [s for s, r in ood if r < 1]
    if wins and len(wins) < len(ood):
        notes.append("lower error than every baseline only on " + ", ".join(wins))
    if wins and id_r > ID_PARITY:
        notes.append(f"loses ID accuracy ({fmt(id_r)}x the best baseline in distribution)")
    return ok, notes


def _seeds_outside(ctx: ReportContext, bench: str, label: str, rows: list[tuple]) -> list[str]:
    """Each seed whose error / the best baseline's (mean) error misses its split's bound (ID
    ``ID_PARITY``, OOD ``OOD_FACTOR``): a pattern shown by the mean but not by every seed is narrow."""
    m = _metric(ctx, bench)
    out = []
    for s, _, best, *_ in rows:
        cell = ctx.cell(bench, label, s, m)
        if best is None or cell is None:
            continue
        bound = ID_PARITY if s == "id" else OOD_FACTOR
        out += [f"{s} seed {seed} {fmt(v / best.mean)}x" for seed, v in zip(cell.seeds, cell.values)
                if v / best.mean > bound]
    return out


def _control_reference(ctx: ReportContext, bench: str, reading: str) -> str:
    """The row ``reading``'s control is compared with: the reading pinned at the control's
    configuration where ``bench`` has such a row (``CONTROL_REFERENCES``), else the reading."""
    return next((lab for lab, of in CONTROL_REFERENCES.items() if of == reading and lab in ctx.labels(bench)), reading)


def _control_ratio(ctx: ReportContext, bench: str, reading: str) -> dict[str, float]:
    """Per OOD split: the control's error / its reference row's error (NaN without both)."""
    m = _metric(ctx, bench)
    ref = _control_reference(ctx, bench, reading)
    out = {}
    for ctl, of in CONTROLS.items():
        if of != reading:
            continue
        for s in _ood_splits(ctx, bench, m):
            a, b = ctx.cell(bench, ctl, s, m), ctx.cell(bench, ref, s, m)
            out[s] = a.mean / b.mean if a and b else math.nan
    return out


def _control_of(reading: str) -> str:
    return next(ctl for ctl, of in CONTROLS.items() if of == reading)


def _seeds(ctx: ReportContext, bench: str, label: str) -> tuple[int, list[int]]:
    """The fewest seeds any split of ``label`` has on ``bench``'s metric, and those seeds."""
    m = _metric(ctx, bench)
    cells = [c for c in (ctx.cell(bench, label, s, m) for s in ["id", *_ood_splits(ctx, bench, m)]) if c]
    if not cells:
        return 0, []
    fewest = min(cells, key=lambda c: c.n)
    return fewest.n, sorted(fewest.seeds)


def _reading_verdict(ctx: ReportContext, bench: str, label: str) -> tuple[bool | None, str]:
    """(True / False: the reading shows the paper's pattern or not; None: it does, but its
    no-shared-factor control has no records or fewer seeds than the reading (at least
    ``MIN_SEEDS``), so whether shared factors carry it is undecided)."""
    rows = _ratios(ctx, bench, label)
    ok, notes = _pattern(rows)
    if ok and (outside := _seeds_outside(ctx, bench, label, rows)):
        notes.append(f"narrow: the mean is within the bounds ({ID_PARITY}x ID, {OOD_FACTOR}x OOD), not every seed ("
                     + ", ".join(outside) + ")")
    parts = [f"{s} {fmt(r)}x ({b.label})" for s, r, b, *_ in rows if b]
    text = f"`{label}`: " + ", ".join(parts)
    ctl = _control_ratio(ctx, bench, label)
    if ctl and any(math.isnan(v) for v in ctl.values()):
        text += ("; its no-shared-factor control has no records, so whether shared factors or capacity carry the "
                 "OOD result is undecided")
        ok = None if ok else ok
    elif ctl:
        carried = all(v >= CONTROL_MARGIN for v in ctl.values())
        ratios = ", ".join(f"{s} {fmt(v)}x" for s, v in ctl.items())
        ref = _control_reference(ctx, bench, label)
        (n_ctl, ctl_seeds), (n_read, _) = _seeds(ctx, bench, _control_of(label)), _seeds(ctx, bench, ref)
        # a pinned reference: the control ran at an earlier choice of the reading, so it is compared at that one
        this = "this" if ref == label else (f"`{ref}` (this reading at the configuration the control ran at, the "
                                            "earlier choice)")
        if n_ctl < max(MIN_SEEDS, n_read):
            # a decision needs the control on as many seeds as the reading; fewer only indicate
            text += (f"; control (no shared factors) / {this}, on the control's {n_ctl} seed{'s' if n_ctl > 1 else ''} "
                     f"({', '.join(map(str, ctl_seeds))}) of the reading's {n_read}: {ratios} (too few control seeds "
                     "to decide, so undecided)")
            ok = None if ok else ok
        else:
            text += (f"; control (no shared factors) / {this}: " + ratios
                     + (" (shared factors carry the OOD result)" if carried else " (the control does about as well: "
                        "capacity, not shared factors)"))
            ok = ok and carried
    if notes:
        text += " — " + "; ".join(notes)
    return ok, text


def _readings_present(ctx: ReportContext, bench: str) -> list[str]:
    return [lab for lab in ctx.labels(bench) if lab in READINGS]


def _bench_claim(bench: Bench, strength: str) -> Claim:
    def check(ctx: ReportContext) -> tuple[bool | None, str]:
        readings = _readings_present(ctx, bench.name)
        if not readings or not _baselines(ctx, bench.name):
            return None, "no records yet."
        verdicts = [(lab, *_reading_verdict(ctx, bench.name, lab)) for lab in readings]
        holding = [lab for lab, ok, _ in verdicts if ok]
        undecided = [lab for lab, ok, _ in verdicts if ok is None]
        if undecided and not holding:
            return None, (f"Undecided: {', '.join(f'`{u}`' for u in undecided)} shows the pattern but the control that "
                          f"decides it was not run on every seed. ({strength}) Error / best baseline's error per "
                          "split (the baseline in brackets): " + "; ".join(t for _, _, t in verdicts) + ".")
        head = (f"Under the {', '.join(f'`{h}`' for h in holding)} reading{'s' if len(holding) > 1 else ''}"
                + "".join(f" (`{h}`: {c})" for h in holding if (c := _caveat(ctx, bench, h))) + ". "
                if holding
                else "Under no reading. ")
        return bool(holding), (head + f"({strength}) Error / best baseline's error per split (the baseline in "
                               "brackets): " + "; ".join(t for _, _, t in verdicts) + ".")
    return Claim(f"{bench.name}: ID parity (within {ID_PARITY}x of the best baseline) and OOD error about 10x "
                 f"lower (at most {OOD_FACTOR}x on every OOD split)", check)


def _caveat(ctx: ReportContext, bench: Bench, reading: str) -> str:
    """What a holding reading builds in (``CAVEATS``), or, for a reading with no no-shared-factor
    control whose library spans every image, that nothing on the bench tells composition from copying."""
    if (bench.task, reading) in CAVEATS:
        return CAVEATS[bench.task, reading]
    wide, _ = _spanning(ctx, bench.name)
    if reading in wide and reading not in CONTROLS.values():
        return (f"its library spans every image ({wide[reading]}), so it can copy any input, and no "
                "no-shared-factor control exists for this reading (its atoms are whole images, not shared factors): "
                "this bench cannot tell composition from copying for it")
    return ""


_STRENGTH = {
    "functions1d_masked": "masked: the stronger test (the gap is predicted, not copied)",
    "functions1d_reconstruct": "reconstruct: a weak test (an identity map scores near zero)",
    "spatial2d_decode": "decode: the stronger test (the image is generated from two one-hot codes)",
    "spatial2d_reconstruct": "reconstruct: a weak test (any model that copies its input scores well; the "
                             "no-shared-factor control decides whether shared factors carry an OOD result)",
    "mnist_reconstruct": "reconstruct: a weak test (a copy task; the control decides whether shared factors carry "
                         "an OOD result); mnist transform, the stronger test, is in the vn_dynamics report",
}


def _stopping(cfg: dict[str, Any]) -> str:
    return f"{cfg['epochs']} epochs, patience {cfg['patience']}"


def _points_and_stopping(ctx: ReportContext, bench: Bench, model: str) -> tuple[int, str]:
    """(validation points, stopping rule) of ``model``'s entry in ``bench``'s configs file."""
    entry = ctx.configs(bench.configs).get("models", {}).get(model, {})
    cfg = entry.get("config", {})
    return len(entry.get("points", [])), (_stopping(cfg) if {"epochs", "patience"} <= set(cfg) else "?")


_CUT_MARK = "**no** (cut against VN)"


def budget_table(ctx: ReportContext) -> list[str]:
    """Per bench: each VN variant's and each baseline's validation points and stopping rule, read
    from the configs files (what was run, not what the spec plans), and whether they are equal."""
    lines = ["| bench | VN variants (points, stopping rule) | baselines (points, stopping rule) | equal budgets |",
             "|---|---|---|---|"]
    for b in RESULT_BENCHES:
        tuned = [*b.tuning, *b.kept]
        if not tuned:
            lines.append(f"| {b.name} | the `{ctx.configs(b.configs, follow=False).get('same_as', '?')}` choices | "
                         "the same | (no search of its own) |")
            continue
        vn = {m: _points_and_stopping(ctx, b, m) for m in tuned if m in READINGS}
        base = {m: _points_and_stopping(ctx, b, m) for m in tuned if m not in READINGS}
        equal = (len({n for n, _ in (*vn.values(), *base.values())}) == 1
                 and len({r for _, r in (*vn.values(), *base.values())}) == 1)
        def show(budgets: dict[str, tuple[int, str]]) -> str:
            groups: dict[tuple[int, str], list[str]] = {}
            for m, nr in budgets.items():
                groups.setdefault(nr, []).append(f"`{m}`")
            return "; ".join(f"{', '.join(ms)}: {n} points, {r}" for (n, r), ms in groups.items())

        lines.append(f"| {b.name} | {show(vn)} | {show(base)} | {'yes' if equal else _CUT_MARK} |")
    return lines


def round_cuts(ctx: ReportContext) -> list[str]:
    """What this round cut for compute time (from the configs files and the spec) and which
    benches and rows have no records (from the store)."""
    table = budget_table(ctx)
    # the compute-cut explanation only where the table shows a cut
    cut = ("Where a bench's budgets are unequal, this round ran as single-thread processes on a shared 2-core machine "
           "over sessions of a few hours each and cut the VN side (a VN epoch costs seconds where a baseline's costs "
           "a fraction of one): a VN variant stopped by its cap may still have been improving (each fit records its "
           "best epoch). ") if any(line.endswith(_CUT_MARK + " |") for line in table) else ""
    lines = ["## This round: budgets, what was cut and what was not run", "",
             "Validation points and stopping rule of every searched model, from the configs files (the VN searches "
             "move the atom count, `lam`, `beta`, the Hebbian rates, the test-time `lam` and the FISTA budget where "
             "the bench's budget is equal; the baselines' points are their earlier rounds' grids):", "",
             *table, "",
             cut + "On functions1d the atom move goes down only (100 atoms): 300 atoms break the 2x parameter rule against "
             "Mamba (the atom sweep below is the diagnostic beyond it); so does `vn`'s on spatial2d reconstruct (64 "
             "atoms: its 128 have 1.9x the CNN's parameters; the capacity diagnostic is the question beyond). On "
             "mnist_comp reconstruct `vn_matrix` has no `beta` move: with input = target and no mask, `beta` only "
             "trains at `lam / (1 + beta)` while predicting at `lam`.",
             "", *_void_moves(ctx),
             "- **Not re-tuned rows.** `vn-inpaint` runs at `vn`'s chosen configuration (only the reading differs); "
             "`vn_matrix-private` at `vn_matrix`'s with its own top-k" + _pinned_controls(ctx) + ".",
             *_cap_bound(ctx), *_retired_rows(ctx), ""]
    missing = [line for b in ctx.spec.benches if (line := unrun_line(ctx, b.name, " in this round"))]
    same, older = [], []
    for bench in ctx.spec.benches:
        for lab in ctx.labels(bench.name):
            e = ctx.summary_entry(bench.name, lab)
            if ctx.fits(bench.name, lab) or e is None:
                continue
            want = ctx.chosen_config(bench.name, lab)
            (same if all(e["config"].get(k) == v for k, v in want.items()) else older).append(f"`{bench.name}/{lab}`")
    if same:
        missing.append("- Imported summaries, not rerun (3 seeds each, from an earlier result file, at the configuration "
                       "chosen now; provenance in the record): " + ", ".join(same) + ".")
    if older:
        missing.append("- Imported summaries at an **earlier configuration** than the one chosen now (not rerun this "
                       "round; their rows and claim lines describe that earlier configuration): " + ", ".join(older) + ".")
    if missing:
        lines += ["Not run (compute time), so every statement below leaves these out:", "", *missing, ""]
    return lines


def _pinned_controls(ctx: ReportContext) -> str:
    """Where a control stays at an earlier choice of its reading (a ``CONTROL_REFERENCES`` row on
    the bench): which bench, and the control's fit times from its records (why it was not rerun)."""
    parts = []
    for b in ctx.spec.benches:
        for ref, reading in CONTROL_REFERENCES.items():
            ctl = _control_of(reading)
            if ref not in ctx.labels(b.name) or not (fits := ctx.fits(b.name, ctl)):
                continue
            minutes = sorted(f["stats"]["fit_seconds"] / 60 for f in fits if f["stats"].get("fit_seconds"))
            took = f"; the control's fits took {minutes[0]:.0f}-{minutes[-1]:.0f} min each on one core" if minutes else ""
            parts.append(f", except on {b.name}: there it and `{ref}` stay at the configuration `{reading}`'s earlier "
                         f"search chose (`{ref}`'s fits are that search's refits, not new runs{took}), so the control "
                         "is compared with the shared model at its own configuration")
    return "".join(parts)


def _seed_spread(cell: Cell) -> str:
    """A sentence when one seed dominates a mean (sample std above the mean): the per-seed values."""
    if cell.n < 2 or not cell.values or not cell.std > cell.mean:
        return ""
    per = ", ".join(f"seed {s} {fmt(v)}" for s, v in zip(cell.seeds, cell.values))
    return (f" One seed dominates `{cell.label}`'s {cell.split} mean (std above the mean): {per}; the ratios above are "
            "of the mean.")


def _retired_rows(ctx: ReportContext) -> list[str]:
    """One line naming the rows whose fits are in the records but that the spec no longer plans
    (e.g. ``*-e200`` once the chosen row itself trains under the baselines' stopping rule)."""
    planned = {(b.name, v.label) for b in ctx.spec.benches for v in b.variants}
    retired: dict[str, int] = {}
    for e in ctx.entries:
        for s in e.get("slots", []):
            if (s.get("spec") == ctx.spec.name and s.get("scale") == ctx.scale and s.get("stage") != "tune"
                    and (s["bench"], s["label"]) not in planned):
                retired[f"`{s['bench']}/{s['label']}`"] = retired.get(f"`{s['bench']}/{s['label']}`", 0) + 1
    if not retired:
        return []
    return ["- **Retired rows.** Fits in the records of rows this spec no longer runs (not shown, not used by any "
            "line): " + ", ".join(f"{k} ({n} fit{'s' if n > 1 else ''})" for k, n in retired.items()) + "."]


def _void_moves(ctx: ReportContext) -> list[str]:
    """Validation points whose test-time ``lam`` equals the training ``lam`` of the same point: the
    move repeated the configuration it started from (from the configs files)."""
    void = []
    for b in ctx.spec.benches:
        for model, d in ctx.configs(b.configs).get("models", {}).items():
            if any(p["config"].get("test_lam") is not None and p["config"]["test_lam"] == p["config"].get("lam")
                   for p in d.get("points", [])):
                void.append(f"`{b.name}/{model}`")
    if not void:
        return []
    return [f"- **Void moves.** In {', '.join(dict.fromkeys(void))} the test-time-`lam` move set it to the training "
            "`lam` the search had already chosen, so that point repeated the configuration before it: the test-time "
            "`lam` was not searched there."]


def _cap_bound(ctx: ReportContext) -> list[str]:
    """One line: per bench, the trained rows whose fits ended at their epoch cap, not by patience
    (from each record's ``history``), so more epochs might still have helped them."""
    parts, total = [], 0
    for b in ctx.spec.benches:
        n_fits, capped = capped_fits(ctx, b.name)
        total += n_fits
        parts += [f"`{b.name}/{lab}` {len(hit)}/{n} (cap {ctx.fits(b.name, lab)[0]['config']['epochs']}, best validation "
                  f"epoch {', '.join(map(str, hit))})" for lab, (n, hit) in capped.items()]
    if not total:
        return []
    return ["- **Fits that ended at their epoch cap** (not stopped by patience; from the records, so more epochs might "
            "still have lowered their error): " + ("; ".join(parts) if parts else "none") + "."]


def family_summary(ctx: ReportContext) -> list[str]:
    """One line per task family: the verdict of its stronger mode, the weaker one beside it."""
    lines = []
    for task, benches in (("functions1d", ("functions1d_masked", "functions1d_reconstruct")),
                          ("spatial2d", ("spatial2d_decode", "spatial2d_reconstruct")),
                          ("mnist_comp (reconstruct only here)", ("mnist_reconstruct",))):
        parts = []
        for b in benches:
            readings = _readings_present(ctx, b)
            if not readings or not _baselines(ctx, b):
                parts.append(f"{_mode(b)} not measured")
                continue
            verdicts = {lab: _reading_verdict(ctx, b, lab)[0] for lab in readings}
            holding = [lab for lab, ok in verdicts.items() if ok]
            undecided = [lab for lab, ok in verdicts.items() if ok is None]
            parts.append(f"{_mode(b)} " + (f"holds under {', '.join(f'`{h}`' for h in holding)}" if holding else
                                           f"undecided under {', '.join(f'`{u}`' for u in undecided)} (its control "
                                           "was not run on every seed)" if undecided else
                                           "does not hold under any reading"))
        lines.append(f"- **{task}**: " + "; ".join(parts) + ".")
    return lines + ["", "The first mode listed is the stronger test: the claim line of a family follows it; a "
                    "reconstruct result alone is weak evidence (see each bench's line).", ""]


def reading_table(ctx: ReportContext) -> list[str]:
    """Per bench, reading and split: the error, its ratio to the best baseline and to the best
    baseline the paper names, and whether the split shows the paper's pattern."""
    rows = []
    for b in RESULT_BENCHES:
        m = _metric(ctx, b.name)
        if m is None:
            continue
        for lab in [*_readings_present(ctx, b.name),
                    *(c for c in (*CONTROL_REFERENCES, *CONTROLS) if c in ctx.labels(b.name))]:
            for s, r, best, rn, named in _ratios(ctx, b.name, lab):
                cell = ctx.cell(b.name, lab, s, m)
                goal = (r <= ID_PARITY) if s == "id" else (r <= OOD_FACTOR)
                mark = ("parity" if goal else "no parity") if s == "id" else ("≤ 0.2x" if goal else "no")
                rows.append(f"| {b.name} | {lab} | {s} | {cell.text()} | {fmt(r)} ({best.label if best else '—'}) | "
                            f"{fmt(rn)} ({named.label if named else '—'}) | {mark} |")
    if not rows:
        return ["No records yet.", ""]
    return ["Each VN reading's test error against the best baseline (no VN variant, no reference predictor, not the "
            "hand-factorised decoder) and against the best of the baselines the paper names (functions1d: Transformer, "
            "Mamba; spatial2d: CNN, VAE; mnist: the autoencoders `ae`, `conv_ae`, `vae`). Pattern: ID within "
            f"{ID_PARITY}x, OOD at most {OOD_FACTOR}x. `vn_matrix-private` is the no-shared-factor control and "
            "`vn_matrix-earlier` the shared model at the control's configuration, listed for comparison (never "
            "readings that can carry the claim).", "",
            "| bench | reading | split | error | / best baseline | / best paper-named baseline | pattern |",
            "|---|---|---|---|---|---|---|", *rows, ""]


def _latent(entry: dict[str, Any]) -> str:
    """What a baseline's reconstruction passes through, from its config."""
    cfg, model = entry["config"], entry["model"]
    if model == "factorized":
        return "2 profiles (rank-1 product, by construction)"
    if "latent" in cfg:
        return f"{cfg['latent']} latent units"
    if "d_model" in cfg:
        return f"{cfg['d_model']} units per position (no bottleneck)"
    if model == "mlp":
        return f"hidden widths {list(cfg['hidden'])} (no bottleneck below the narrowest layer)"
    return "—"


def _spanning(ctx: ReportContext, bench: str) -> tuple[dict[str, str], int]:
    """The rows whose library spans the image space (so they can copy any input), each with what
    spans it, and the image side: a matrix reading with factor libraries at least as wide as the
    image (full-rank ``U``, ``S``: ``U G S^T`` is any image), a vector reading with at least as
    many atoms as pixels."""
    wide, side = {}, 28  # mnist digits are 28 x 28; spatial2d records carry their grid
    for lab in ctx.labels(bench):
        fits = [f for f in ctx.fits(bench, lab) if f["config"].get("factors") != "private"]
        if not fits:
            continue
        cfg, side = fits[0]["config"], fits[0]["task_params"].get("grid", 28)
        if "atoms_u" in cfg and cfg["atoms_u"] >= side and cfg["atoms_s"] >= side:
            wide[lab] = f"{cfg['atoms_u']} x {cfg['atoms_s']} factors"
        elif cfg.get("output") == "reconstruction" and cfg.get("atoms") and cfg["atoms"][0] >= side * side:
            wide[lab] = f"{cfg['atoms'][0]:,} atoms for {side * side} pixels"
    return wide, side


def _span_note(ctx: ReportContext, bench: str) -> str:
    """A reading whose library spans the image space can copy any input, so the note names it."""
    wide, side = _spanning(ctx, bench)
    if not wide:
        return ""
    return (f" Libraries that span every {side} x {side} image: "
            + ", ".join(f"`{lab}` ({what})" for lab, what in wide.items()) + ". Factor libraries at least as "
            "wide as the image (full-rank `U`, `S`: `U G S^T`), or at least as many atoms as pixels, can write any "
            "image, so such a reading can copy any input; what the span does not give is a sparse code that "
            "transfers, which is what the no-shared-factor control tests (a control of the matrix reading only).")


def code_size_table(bench: str) -> Custom:
    """Next to every reconstruct result: the code size (active coefficients per sample at
    prediction, from the ``code_size`` statistic) against the baselines' latent sizes, and the
    no-shared-factor control."""
    def render(ctx: ReportContext) -> list[str]:
        m = _metric(ctx, bench)
        if m is None:
            return []
        splits = ["id"] + _ood_splits(ctx, bench, m)
        rows = []
        for lab in ctx.labels(bench):
            fits = ctx.fits(bench, lab)
            first = fits[0] if fits else ctx.summary_entry(bench, lab)  # an imported summary has no per-seed stats
            if first is None or lab in REFERENCES:
                continue
            sizes = [f["stats"].get("code_size") for f in fits if f["stats"].get("code_size")]
            cfg = first["config"]
            if sizes:
                atoms = (cfg["atoms_u"] * cfg["atoms_s"] if "atoms_u" in cfg else cfg["atoms"][0])
                code = f"{atoms:,} atoms" + (f", top-{cfg['topk']}" if cfg.get("topk") else "")
                active = [fmt(sum(s[x] for s in sizes) / len(sizes)) for x in splits]
            else:
                code, active = _latent(first), ["—"] * len(splits)
            errs = [c.text() if (c := ctx.cell(bench, lab, s, m)) else "—" for s in splits]
            params = ctx.cell(bench, lab, "id", m).num_parameters
            rows.append(f"| {lab} | {code} | " + " | ".join(active) + " | "
                        + ("—" if params is None else f"{int(round(params)):,}") + " | " + " | ".join(errs) + " |")
        if not rows:
            return []
        head = ["model", "code / latent", *[f"active per sample ({s})" for s in splits], "params",
                *[f"{m} {s}" for s in splits]]
        note = ("Code size next to the result (a reconstruction rewards any model that can copy its input): active "
                "coefficients per sample at prediction (mean over seeds; at most 1,024 test samples per split) for the "
                "VN variants, the latent width for the baselines.")
        note += _span_note(ctx, bench)
        ref = _control_reference(ctx, bench, "vn_matrix")
        ctl, shared = ctx.fits(bench, "vn_matrix-private"), ctx.fits(bench, ref)
        shared_sizes = [f["stats"]["code_size"]["id"] for f in shared if f["stats"].get("code_size")]
        if ctl and shared_sizes:
            measured = sum(shared_sizes) / len(shared_sizes)
            topk = ctl[0]["config"].get("topk")
            note += (f" The control `vn_matrix-private` has as many atoms as `{ref}` (`atoms_u x atoms_s` fixed pairs "
                     f"`u_k s_k^T`, each with its own two vectors) and a top-{topk}, against `{ref}`'s measured id "
                     f"active count of {fmt(measured)} per sample"
                     + (" (rounded: the same), so it matches atoms and code size but shares no factors."
                        if topk == round(measured) else
                        f" (rounded {round(measured)}: the control's top-k was fixed before that count was measured)."))
            p_ctl, p_shared = ctl[0]["stats"].get("num_parameters"), shared[0]["stats"].get("num_parameters")
            if p_ctl and p_shared:
                note += (f" Without shared factors every pair carries its own two vectors, so the control has "
                         f"{fmt(p_ctl / p_shared)}x the parameters ({p_ctl:,} against {p_shared:,}).")
        elif not ctl and "vn_matrix-private" in {v.label for v in ctx.spec.bench(bench).variants}:
            note += (" The no-shared-factor control `vn_matrix-private` is planned here but has no records (not run in "
                     "this round), so this table cannot tell whether shared factors or capacity carry the result.")
        elif not ctl:
            note += " No no-shared-factor control here (it is a control of the matrix reading, which this bench lacks)."
        return [note, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows, ""]
    return Custom(render)


def pair_choice_table(ctx: ReportContext) -> list[str]:
    b = "spatial2d_decode"
    fits = [f for f in ctx.fits(b, "vn_pairs") if f["stats"].get("pair_choice")] if "vn_pairs" in ctx.labels(b) else []
    if not fits:
        return []
    splits = list(fits[0]["stats"]["pair_choice"])
    rows = []
    for s in splits:
        vals = {k: [f["stats"]["pair_choice"][s][k] for f in fits] for k in ("single", "two_half", "other")}
        rows.append(f"| {s} | " + " | ".join(f"{100 * sum(v) / len(v):.1f}" for v in vals.values()) + " |")
    return [f"Which atoms `vn_pairs`' inference picks at prediction (`hebbnets.vn.pair_atom_choice`, mean over "
            f"{len(fits)} seeds, % of test samples): the single matching pair atom `(cx, cy)` (at least 90 % of the "
            "code's l1 mass), two half-explaining atoms, or anything else. An OOD centre's pair was never active in "
            "training; its two factors were learned from other pairs.", "",
            "| split | single atom | two half-explaining atoms | other |", "|---|---|---|---|", *rows, ""]


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

    from ..reporting.figures import _mean_map

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
    if "vn" in ctx.labels(b) and _baselines(ctx, b):
        parts = []
        for lab in ("vn", "vn-inpaint"):
            if lab in ctx.labels(b):
                rows = _ratios(ctx, b, lab)
                parts.append(f"`{lab}` " + ", ".join(f"{s} {fmt(r)}x ({best.label})" for s, r, best, *_ in rows if best))
        ratios = {lab: ood_id_ratio(ctx, b, lab, "ood_pairs", fm) for lab in ctx.labels(b) if lab not in REFERENCES}
        out.append("- **functions1d: which reading fits.** A 1-D signal has one index, so the matrix reading "
                   "(`U G S^T` needs a row and a column index) does not apply without imposing a second index (a "
                   "reshape or a delay embedding; not tried), and the applied-weight reading has no context/content "
                   "split here (phase 1 found none that fits). The vector reading is measured two ways: the message "
                   "`U g` (`vn`) and plain inpainting with the input dictionary alone (`vn-inpaint`, `S g` inferred "
                   "from the observed entries). Error / best baseline's: " + "; ".join(parts) + ". OOD/ID on "
                   "`ood_pairs`: " + ", ".join(f"{k} {fmt(v)}" for k, v in ratios.items()) + ".")
    sweep = "functions1d_atoms_sweep"
    if ctx.labels(sweep):
        cells = [(lab, ctx.cell(sweep, lab, "id", fm), ctx.cell(sweep, lab, "ood_pairs", fm)) for lab in ctx.labels(sweep)]
        out.append("- **More atoms (diagnostic, at the earlier configuration: 30 epochs, patience 5).** id / ood_pairs "
                   "error: " + ", ".join(f"`{lab}` {fmt(i.mean)} / {fmt(o.mean)}" for lab, i, o in cells if i and o)
                   + " (150 atoms is the baselines' parameter count). The best baseline scores "
                   + (f"{fmt(bb.mean)} ({bb.label}) id" if (bb := _best(ctx, b, "id", fm, _baselines(ctx, b))) else "—")
                   + (f" and {fmt(bo.mean)} ({bo.label}) ood_pairs" if (bo := _best(ctx, b, "ood_pairs", fm,
                                                                                    _baselines(ctx, b))) else "")
                   + ".")
    for mode in ("decode", "reconstruct"):
        b = f"spatial2d_{mode}"
        if not {"vn", "zeros"} <= set(ctx.labels(b)):
            continue
        vn_id, vn_ood = ctx.cell(b, "vn", "id", "mse"), ctx.cell(b, "vn", "ood", "mse")
        z_id, z_ood = ctx.cell(b, "zeros", "id", "mse"), ctx.cell(b, "zeros", "ood", "mse")
        fact = ctx.cell(b, "factorized", "ood", "mse")
        line = (f"- **spatial2d {mode}.** The vector reading `vn` scores {fmt(vn_id.mean)} on ID and {fmt(vn_ood.mean)} on "
                f"OOD against {fmt(z_id.mean)} / {fmt(z_ood.mean)} for predicting all zeros.")
        if mode == "decode":
            line += (" Its output is a *sum* of learned atoms `U g`, while a bump at `(x, y)` is the *product* of an "
                     "x-profile and a y-profile: a sparse sum of atoms trained on other centres cannot form a bump at a "
                     "new centre (the `id` centres are new centres too), so it fails everywhere alike.")
            if "vn_pairs" in ctx.labels(b):
                p_id, p_ood = ctx.cell(b, "vn_pairs", "id", "mse"), ctx.cell(b, "vn_pairs", "ood", "mse")
                line += (f" Pair atoms (`vn_pairs`) decode through rank-1 output atoms `u_a v_b^T` chosen by inference "
                         f"from the two one-hot halves: {fmt(p_id.mean)} ID, {fmt(p_ood.mean)} OOD. Their output atoms "
                         "have the product form the images have, the inductive bias of the hand-factorised decoder; "
                         "unlike it, nothing multiplies a row code by a column code by hand: the code is a free sparse "
                         "matrix over all pairs found by FISTA, and the factors are learned by Atomic-Hebb.")
                line += _seed_spread(p_id)
        else:
            cap = ctx.cell("spatial2d_capacity", "vn-784-atoms", "id", "mse")
            cap_ood = ctx.cell("spatial2d_capacity", "vn-784-atoms", "ood", "mse")
            if cap is not None and cap_ood is not None:
                ratio_params = cap.num_parameters / vn_id.num_parameters if cap.num_parameters and vn_id.num_parameters else math.nan
                cnn_cap = ctx.cell(b, "cnn", "ood", "mse")
                line += (f" With one atom per pixel (784 atoms, {fmt(ratio_params)}x the parameters, {cap.n} seeds; a "
                         f"diagnostic, not a benchmark row) its ID error is {fmt(cap.mean)} ({fmt(cap.mean / vn_id.mean)}x "
                         f"`vn`'s) and its OOD error {fmt(cap_ood.mean)} ({fmt(cap_ood.mean / vn_ood.mean)}x `vn`'s; "
                         f"OOD/ID {fmt(cap_ood.mean / cap.mean)}"
                         + (f"; {fmt(cap_ood.mean / cnn_cap.mean)}x the CNN's OOD error" if cnn_cap else "")
                         + ")")
                if cap_ood.mean / vn_ood.mean > cap.mean / vn_id.mean and cnn_cap and cap_ood.mean > cnn_cap.mean:
                    line += (": the extra capacity lowers the ID error more than the OOD error and leaves the OOD "
                             "error above the CNN's, so capacity alone does not give the vector reading an OOD result.")
                else:
                    line += "."
        mat, ctl = ctx.cell(b, "vn_matrix", "ood", "mse"), ctx.cell(b, "vn_matrix-private", "ood", "mse")
        mat_id = ctx.cell(b, "vn_matrix", "id", "mse")
        if mode == "reconstruct" and mat is not None and mat_id is not None:
            cnn_ood = ctx.cell(b, "cnn", "ood", "mse")
            cnn_params = ctx.cell(b, "cnn", "id", "mse").num_parameters if cnn_ood else None
            line += (f" The matrix reading `vn_matrix` ({int(mat_id.num_parameters):,} parameters"
                     + (f" against the CNN's {int(cnn_params):,}" if cnn_params else "") + ") scores "
                     f"{fmt(mat_id.mean)} ID and {fmt(mat.mean)} OOD"
                     + (f" ({fmt(cnn_ood.mean / mat.mean)}x below the CNN's OOD error)" if cnn_ood else "")
                     + (f"; its no-shared-factor control `vn_matrix-private` scores {fmt(ctl.mean)} OOD" if ctl else "")
                     + ". A bump image is exactly one rank-1 product of an x- and a y-profile, the form of one matrix "
                     "atom `u_a s_b^T`: the matrix reading has the data's structure as its inductive bias, learned "
                     "rather than built in (the factors and the codes come from Atomic-Hebb and FISTA); the task is "
                     "still a copy task, so the decode line above is the stronger evidence.")
        if fact is not None:
            others = set(ctx.labels(b)) - set(HAND_FACTORISED) - set(REFERENCES)
            beats = [s for s in ("id", "ood") if (f := ctx.cell(b, "factorized", s, "mse")) is not None
                     and (o := _best(ctx, b, s, "mse", others)) is not None and f.mean < o.mean]
            line += (f" The hand-factorised decoder reaches {fmt(fact.mean)} OOD"
                     + (f" and beats every other model, VN variants included, on {' and '.join(beats)}" if beats else "")
                     + ": exact by construction (it multiplies an x-profile by a y-profile), so it is shown but never "
                     "counted as the best baseline.")
        out.append(line)
    comp = []
    for b in ("spatial2d_decode", "spatial2d_reconstruct"):
        for lab in ("cnn", "vae", "mlp"):
            r = ood_id_ratio(ctx, b, lab, "ood", "mse")
            if not math.isnan(r):
                comp.append(f"{lab} {fmt(r)} ({_mode(b)})")
    if comp:
        out.append("- **The spatial2d split is compositional.** Dense baselines' OOD/ID ratios: " + ", ".join(comp)
                   + ". On functions1d `ood_pairs`, the round-1 split was not compositional (the MLP degraded no more "
                   "than gap interpolation); the current one is (table above).")
    out += _search_findings(ctx)
    out.append("- **toy_atoms is not among these benchmarks.** Its data are sparse sums of ground-truth rank-1 atoms, "
               "generated by the VN model's own form: the toy report checks the implementation (that inference and "
               "Atomic-Hebb recover such atoms and recombine them), not the paper's claim.")
    return out + [""]


def _search_findings(ctx: ReportContext) -> list[str]:
    """Validation effort per model and what the earlier baseline searches showed (configs files)."""
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
        def when(d: dict[str, Any], p: dict[str, Any]) -> str:
            if p.get("round") is not None:
                return f"round {p['round']}"
            # a search by this spec's tune stage records its command; older searches were migrated files
            return "this round" if str(d.get("source", "")).startswith(f"hebbnets reproduce {ctx.spec.name}") \
                else "an earlier round"
        rounds = list(dict.fromkeys(sorted((when(d, p) for d in models.values() for p in d.get("points", [])),
                                           key=lambda r: (r == "this round", r))))
        parts = []
        for r in rounds:
            counts = {m: sum(1 for p in d.get("points", []) if when(d, p) == r) for m, d in models.items()}
            counts = {m: n for m, n in counts.items() if n}
            parts.append(f"{r} " + ", ".join(f"{m} {n}" for m, n in counts.items()))
        effort.append(f"{bench.configs}: " + "; ".join(parts))
    if effort:
        out.append("- **Tuning effort** (validation points per model, from the configs files; every search of this round "
                   "gives each model of a bench the same count): " + " | ".join(effort) + ". On functions1d the "
                   "baselines keep their earlier points (a learning-rate round at a 20-epoch cap, then the 3-point "
                   "grid without it); VN's earlier points (15 epochs, no early stopping; then a 3-point search under a "
                   "30-epoch cap) were replaced by this round's " + str(FUNCTIONS_MASKED.tuning["vn"].n_points) + ".")
    if total:
        out.append(f"- **Weight decay.** In the earlier functions1d baseline grids, weight decay 1e-4 (Adam L2) was worse "
                   f"than the same learning rate without it in {hurt} of {total} pairs.")
    if caps:
        out.append("- **The epoch cap mattered.** functions1d masked, best validation error of each baseline with the "
                   "earlier cap (20 epochs) -> without it (200 epochs, patience 20): " + ", ".join(caps) + ".")
    return out


def _results(bench: Bench, **table: Any) -> ResultsTable:
    ex = tuple(HAND_FACTORISED) if bench.task == "spatial2d" else ()
    return ResultsTable(bench.name, references=REFERENCES, exclude_from_best=ex, model=None, **table)


_ATOM_ROWS = (("spatial2d_reconstruct", "vn"), ("spatial2d_reconstruct", "vn_matrix"),
              ("spatial2d_reconstruct", "vn_matrix-private"), ("spatial2d_decode", "vn_pairs"),
              ("mnist_reconstruct", "vn"), ("mnist_reconstruct", "vn_matrix"), ("mnist_reconstruct", "vn_matrix-private"))

SPEC = register_spec(Spec(
    "vn_benchmarks", "VN benchmarks: functions1d, spatial2d, mnist_comp reconstruct",
    benches=(*RESULT_BENCHES, FUNCTIONS_ATOMS, FUNCTIONS_ROUND1, SPATIAL_CAPACITY),
    intro=("Every number is a test-split value, mean ± sample std over seeds 0, 1, 2 (data and models re-seeded), at "
           "the configuration chosen on validation data carved from the seed-0 training split (section "
           "\"Configurations\"). This round re-tuned only the VN variants; the baselines keep configurations chosen "
           "in earlier rounds. Every model trains until its validation error stops improving or its epoch cap is "
           "reached. Where the VN variants' searches and caps match the baselines' and where this round cut them "
           "for compute time: section \"This round: budgets, what was cut and what was not run\". "
           "`gap_interp` and `zeros` are "
           "model-free references and the hand-factorised decoder `factorized` is exact by construction: none of them "
           "is ever counted as the best baseline. nbody and mnist_comp transform are in the `vn_dynamics` report. "
           "Background: `docs/vn.md`."),
    sections=(
        Text("""## Readings

- `vn`: the vector reading: a layer's message `U g` is the output (`output="reconstruction"`: the input dictionary's `S g`).
- `vn-inpaint` (functions1d masked): the same model read as plain inpainting, `S g` with `g` inferred from the observed entries.
- `vn_matrix` (images): the matrix reading, the composed operator `U G S^T` is the output; `U` (m x Ku) and `S` (n x Ks) are shared by all `Ku x Ks` atoms `u_a s_b^T`.
- `vn_matrix-private`: the control for `vn_matrix`: as many atoms (`Ku x Ks` fixed pairs `u_k s_k^T`, each with its own two vectors), the same active count (top-k), no shared factors.
- `vn_matrix-earlier` (mnist reconstruct): `vn_matrix` pinned at the configuration its control ran at; the control's ratio is taken against it.
- `vn_pairs` (spatial2d decode): pair atoms: input-side code `[p_a; q_b]` from shared per-factor codes, output `u_a v_b^T`; the sparse code over all pairs is inferred from the two one-hot halves.
- The applied-weight reading (`vn_applied`) composes transformations; it is measured on nbody and mnist transform (`vn_dynamics`)."""),
        Custom(round_cuts),
        Text("## The paper's claim, benchmark by benchmark"),
        Custom(family_summary),
        *(_bench_claim(b, _STRENGTH[b.name]) for b in RESULT_BENCHES),
        Custom(reading_table),
        _results(FUNCTIONS_MASKED),
        _results(FUNCTIONS_RECONSTRUCT),
        code_size_table("functions1d_reconstruct"),
        _results(SPATIAL_DECODE),
        Custom(pair_choice_table),
        _results(SPATIAL_RECONSTRUCT),
        code_size_table("spatial2d_reconstruct"),
        Figure("error_maps", "error_maps", "spatial2d: per-centre test error, mean over seeds",
               {"benches": ("spatial2d_decode", "spatial2d_reconstruct")}),
        Custom(error_by_split),
        _results(MNIST_RECONSTRUCT),
        code_size_table("mnist_reconstruct"),
        Figure("id_vs_ood", "id_vs_ood", "ID vs OOD test error of every model, mean ± sample std over seeds",
               {"benches": tuple(b.name for b in RESULT_BENCHES)}),
        Figure("atoms", "atoms", "The most used atoms of each VN variant on the image tasks (first seed)",
               {"rows": _ATOM_ROWS}),
        Figure("factors", "factors", "The factor libraries of the matrix readings, columns by usage (first seed)",
               {"rows": (("spatial2d_reconstruct", "vn_matrix"), ("spatial2d_decode", "vn_pairs"),
                         ("mnist_reconstruct", "vn_matrix"))}),
        Text("""## Is functions1d `ood_pairs` compositional?

A dense model should degrade on unseen pairs clearly more than a model-free reference (linear interpolation across the masked gap, `gap_interp`), whose OOD/ID ratio measures only how much harder the OOD signals are intrinsically. Masked mode, seeds 0-2, test splits (a check of the benchmark; nothing is chosen with it)."""),
        Custom(split_check),
        ResultsTable("functions1d_atoms_sweep", model=None, note="A diagnostic, not a benchmark row: `vn` with more "
                     "atoms than the parameter budget allows (150 atoms match the baselines' parameter count; 300 is "
                     "the 2x limit), every row at the configuration an earlier, smaller search chose (3 points, 30 "
                     "epochs, patience 5; `vn-150-atoms` is that search's `vn` row), so the rows differ in the atom "
                     "count alone; the benchmark's `vn` row now runs at a later choice. Nothing is chosen with it."),
        ResultsTable("spatial2d_capacity", model=None, note="A diagnostic, not a benchmark row: the spatial2d "
                     "reconstruct `vn` configuration with 784 atoms (far outside the parameter budget); nothing chosen "
                     "with it."),
        Text("## What the numbers say"),
        Custom(findings),
        Text("## Configurations (validation only)"),
        *(TuningTable(b.name) for b in RESULT_BENCHES),
    ),
))
