"""``vn_benchmarks``: the Vector Network paper's benchmarks (reports/vn_benchmarks.md).

The paper's claim: VN matches the baselines in distribution and reaches an OOD error about 10x
lower. Three task families here (``functions1d``, ``spatial2d``, ``mnist_comp`` reconstruct;
nbody and mnist_comp transform are in the ``vn_dynamics`` spec), each read by every VN variant
that fits its data:

``vn`` (the vector reading: a layer's message ``U g``, or with ``output="reconstruction"`` the input
dictionary's ``S g``, e.g. ``vn-inpaint``); ``vn_matrix`` (the matrix reading: the composed operator
``U G S^T`` is the output; ``vn_matrix-private``: the same atom and active counts, no shared factors);
``vn_pairs`` (pair atoms ``[p_a; q_b] -> u_a v_b^T``, spatial2d decode).

Every model runs at the configuration chosen on validation data carved from the task's training split (the task's
configs file; ``--stage tune`` reruns the searches below and writes it), with the same number of validation points per
model within a bench, and trains until its validation error stops improving (the bench's epoch cap and patience, the
same for every model). Where a round cut the VN side for compute time, the report's budget table (page ``readings``,
read from the configs files) says so. Test error on held-out ID and OOD splits, 3 or 5 seeds (``SEEDS5``), data and
models re-seeded. Background: ``docs/vn.md``; claim checks and prose: ``reporting/narration_vn_benchmarks.py``. A
new model: one line in the bench's ``models`` (and a tuning search with as many points).
"""
from __future__ import annotations

from typing import Any

from ..reporting import Custom, Figure, Notes, ResultsTable, Text, TuningTable, Verdicts
from ..reporting import narration_vn_benchmarks as nar
from ..reporting.narration_vn_benchmarks import HAND_FACTORISED, REFERENCES, bench_claims
from .._spec import Bench, Grid, Moves, Scale, Spec, register_spec, variant

SEEDS = (0, 1, 2)
#: claim-carrying benches (issue 29): spatial2d decode and reconstruct, mnist reconstruct; mnist's costliest
#: rows (``vn``, ``vn_matrix-earlier`` and its control: 17-85 min a fit, no claim line) keep seeds 0-2
SEEDS5 = (0, 1, 2, 3, 4)
LR3 = [1e-3, 3e-3, 1e-2]
#: smoke scale: one epoch, short FISTA budgets (the whole spec, searches included, in seconds)
_SMOKE_CONFIG = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}, "vn_matrix": {"max_iter": 20},
                 "vn_pairs": {"max_iter": 20}, "vn_matrix_implicit": {"max_iter": 20}, "pca": {"n_components": 4},
                 "dict_learning": {"n_components": 8, "n_iter": 2, "alpha": 0.01}}


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
    # vn-inpaint: plain inpainting (the input dictionary S alone); gap_interp: model-free reference, linear
    # interpolation across the gap
    models=("vn", variant("vn-inpaint", "vn", output="reconstruction"), "transformer", "mamba", "mlp", "gap_interp"),
    # the baselines keep the configurations of their earlier rounds (8 points each: a learning-rate x
    # weight-decay round under a 20-epoch cap, then a learning-rate grid under _SEQ; configs file)
    tuning={"vn": F_VN}, kept={"transformer": 8, "mamba": 8, "mlp": 8},
    scales={"smoke": _F_SMOKE}, title="functions1d, mode=masked")
# reconstruct mode reuses the masked-mode choice (configs file); vn refit at cap 2000, warm starts: at 200, 3 of 3 hit it.
# Simple codes: PCA at `vn`'s measured active count (14 on id); dict_learning at `vn`'s 150 atoms, alpha searched here
# (8 points, the bench's count): the error falls to the lowest alpha (150 atoms in 64 dims copy the input as alpha -> 0)
FUNCTIONS_RECONSTRUCT = Bench(
    "functions1d_reconstruct", "functions1d", params={"mode": "reconstruct"}, seeds=SEEDS, scales={"smoke": _F_SMOKE},
    models=(variant("vn", epochs=2000, warm_start=True), "transformer", "mamba", "mlp",
            variant("pca-14", "pca", n_components=14), "dict_learning"),
    tuning={"dict_learning": Grid({"alpha": [1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]},
                                  base=dict(n_components=150))}, title="functions1d, mode=reconstruct")
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
#: the no-shared-factor control's top-k: the shared model's measured active count per sample on id, rounded
#: (seed 0's 2.68, so the control could start before seeds 1-2 ended; the mean over seeds, 2.99, rounds the same)
S_CONTROL_TOPK = 3


#: the spatial2d baselines (``factorized`` is listed but never counted as the best baseline)
S_BASELINES = ("cnn", "vae", "factorized", "mlp")


def _spatial(mode: str, vn: Moves, extra: tuple, extra_tuning: dict[str, Moves], seeds: tuple = SEEDS) -> Bench:
    """The baselines keep their earlier rounds' choice (9 points each in the configs file: a
    learning-rate x weight-decay round of 6, then a learning-rate grid of 3 under ``_IMG``)."""
    return Bench(
        f"spatial2d_{mode}", "spatial2d", params={"mode": mode}, seeds=seeds,
        models=(
            "vn",
            *extra,
            # factorized: the answer's structure built in (a product of x and y profiles): exact by construction
            *S_BASELINES,
            "zeros",  # reference: the empty image
            # reference: each image's own best rank-1 approximation, no learning; a bump is rank 1. The
            # field's simple codes (baselines): PCA at `vn`'s active count (top-8) and at the CNN's latent
            # width (64); scikit-learn's dictionary learning + sparse_encode, `vn`'s 128 atoms, codes >= 0
            *((variant("svd_image-r1", "svd_image", rank=1), variant("pca-8", "pca", n_components=8),
               variant("pca-64", "pca", n_components=64), "dict_learning") if mode == "reconstruct" else ()),
        ),
        options={"statistics": ["error_map", "atoms"]},
        tuning={"vn": vn, **extra_tuning}, kept=dict.fromkeys(S_BASELINES, 9),
        scales={"smoke": _S_SMOKE}, title=f"spatial2d, mode={mode}")


#: same-structure controls (issue 29; ``hebbnets.controls``): the reading's factor counts, its code from
#: a feed-forward encoder (l1 0 = none), the baselines' 9 points (l1 x learning rate); and the reading
#: itself with dense codes (lam 1e-4, at its chosen configuration otherwise)
def _ff_control(factors: int) -> Grid:
    return Grid({"l1": [0.0, 1e-3, 1e-2], "lr": LR3}, base=dict(atoms_u=factors, atoms_s=factors, hidden=256, **_IMG))


SPATIAL_DECODE = _spatial(
    "decode",
    Moves(base=dict(atoms=(96, 64), hidden=(64,), lam=0.05, nonneg=True, **_IMG),
          moves=({"atoms": (128, 96)}, {"lam": 0.02}, {"lam": 0.1}, {"beta": 0.5}, _rates(1.0), {"test_lam": 0.01},
                 {**_budget(), "max_sweeps": 20}, {"atoms": (192, 128)})),
    ("vn_pairs", variant("vn_pairs-dense", "vn_pairs", lam=1e-4), "matrix_code_ff"),
    # vn_pairs' Hebbian rates default to rho_in 1, rho_out 10 (its own scale): the move doubles both
    {"matrix_code_ff": _ff_control(28), "vn_pairs": Moves(base=dict(atoms_a=28, atoms_b=28, lam=0.05, **_IMG),
                       moves=({"atoms_a": 40, "atoms_b": 40}, {"lam": 0.02}, {"lam": 0.1}, {"beta": 0.3},
                              {"rho_in": 2.0, "rho_out": 20.0}, {"test_lam": 0.01}, _budget(),
                              {"atoms_a": 56, "atoms_b": 56}))},
    seeds=SEEDS5)
S_VN_MATRIX_CAP = 2000
SPATIAL_RECONSTRUCT = _spatial(
    "reconstruct",
    # atoms move down only: 128 atoms (200,704 parameters) are 1.9x the CNN's 105,585 (the 2x rule);
    # the capacity diagnostic below is the question beyond it. The top-k moves as well (the cap is a knob)
    Moves(base=dict(atoms=(128,), output="reconstruction", lam=0.001, nonneg=True, topk=4, **_IMG),
          moves=({"atoms": (64,)}, {"lam": 0.0003}, {"lam": 0.003}, {"beta": 0.5}, _rates(1.0), {"test_lam": 0.0005},
                 {"topk": 8}, _budget())),
    # vn_matrix refit at cap 2000, warm starts (same energies, less time an epoch): at cap 400 5 of 5 fits ended at it
    (variant("vn_matrix", epochs=S_VN_MATRIX_CAP, warm_start=True),
     variant("vn_matrix-private", "vn_matrix", factors="private", topk=S_CONTROL_TOPK),
     variant("vn_matrix-dense", "vn_matrix", lam=1e-4), "matrix_code_ff",
     "vn_matrix_implicit"),
    # input = target, no mask: beta > 0 weighs the reconstruction (1 + beta) in training only (training at
    # lam / (1 + beta), predicting at lam: no repeat of a lam move). Costlier moves (more factors, FISTA budget) last, so an
    # accepted one slows no later point. vn_matrix_implicit: a lam x lr grid at vn_matrix's factor counts, moved up a
    # step on both axes after lam 0.003-0.03 x lr 1e-3-1e-2 chose both upper ends
    # dict_learning: 9 alphas over decades (10/30/100 passes validated equal: scikit-learn stops early; 3e-4 was the edge)
    {"matrix_code_ff": _ff_control(36), "vn_matrix_implicit": Grid(
        {"lam": [0.01, 0.03, 0.1], "lr": [3e-3, 1e-2, 3e-2]}, base=dict(atoms_u=36, atoms_s=36, **_IMG)),
     "dict_learning": Grid(
        {"alpha": [1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]}, base=dict(n_components=128, positive=True)),
     "vn_matrix": Moves(base=dict(atoms_u=28, atoms_s=28, lam=0.02, nonneg=True, **_IMG),
                        moves=({"atoms_u": 20, "atoms_s": 20}, {"lam": 0.01}, {"lam": 0.05}, {"beta": 1.0}, _rates(1.0),
                               {"test_lam": 0.015}, {"atoms_u": 36, "atoms_s": 36}, _budget()))},
    seeds=SEEDS5)
#: an earlier, smaller search's choice (3 points, 60 epochs, patience 10): the capacity row, one atom per pixel
S_VN_EARLIER = dict(atoms=(128,), output="reconstruction", lam=0.001, nonneg=True, topk=4, epochs=60, patience=10,
                    batch_size=32, beta=1.0, rho_s=0.5, rho_u=0.5, test_lam=None, max_iter=200, tol=1e-4)
# a diagnostic far outside the parameter budget (12x): one atom per pixel; nothing is chosen with it
SPATIAL_CAPACITY = Bench(
    "spatial2d_capacity", "spatial2d", params={"mode": "reconstruct"}, seeds=SEEDS,
    models=(variant("vn-784-atoms", "vn", **{**S_VN_EARLIER, "atoms": (784,)}),), scales={"smoke": _S_SMOKE},
    title="Diagnostic: VN with one atom per pixel (not a benchmark row, the earlier configuration)")

# -- mnist_comp -------------------------------------------------------------------------------
#: every trained model: cap 200 epochs, patience 5 (round 2: at cap 40 most baseline and `vn` fits hit
#: it). VN's searches keep their round-1 points at 40 (a re-search is ~3 h here): the budget table says so
_MN = dict(epochs=200, patience=5, batch_size=64)
_MN_SEARCH_VN = dict(_MN, epochs=40)
#: the configuration ``vn_matrix``'s mnist search chose while its test-time-``lam`` move was void: the
#: no-shared-factor control ran at it (about 1.5 h a fit on one core), and so does the pinned row
#: ``vn_matrix-earlier`` (that search's refits), so the control meets the shared model at its own configuration
M_VN_MATRIX_EARLIER = dict(atoms_u=40, atoms_s=40, lam=0.02, nonneg=True, epochs=40, patience=5, batch_size=64,
                           max_iter=500, tol=1e-5, test_lam=None)
#: the control's top-k on mnist (as S_CONTROL_TOPK: ``vn_matrix-earlier`` measured 260.2, 286.1, 249.7 on id)
M_CONTROL_TOPK = 265
#: mnist: 6 validation points per model: the autoencoders' latent width x learning rate, every VN
#: variant a successive search
MNIST_RECONSTRUCT = Bench(
    "mnist_reconstruct", "mnist_comp", params={"mode": "reconstruct"}, seeds=SEEDS5,
    models=(
        variant("vn", epochs=_MN["epochs"]),  # the chosen configuration (searched at 40 epochs), refit at the cap
        variant("vn_matrix", epochs=_MN["epochs"]),  # digits as 28 x 28 operators U G S^T
        variant("vn_matrix-earlier", "vn_matrix", **M_VN_MATRIX_EARLIER),
        variant("vn_matrix-private", "vn_matrix", **M_VN_MATRIX_EARLIER, factors="private", topk=M_CONTROL_TOPK),
        "ae", "conv_ae", "vae", "mlp",
        # the field's simple codes: PCA on the training digits at `vn`'s measured active count (418 of 1,024 atoms on id)
        # and at the autoencoders' latent size; dictionary learning at vn's 1,024 atoms, codes >= 0, alpha searched
        variant("pca-418", "pca", n_components=418), variant("pca-128", "pca", n_components=128), "dict_learning",
        # references: each digit's own truncated SVD (rank 1, and rank 7: 7 x (28 + 28) = 392 numbers,
        # about the code size), no learning
        variant("svd_image-r1", "svd_image", rank=1), variant("svd_image-r7", "svd_image", rank=7),
        "matrix_code_ff",  # same-structure control: vn_matrix's 40 x 40 factors, the code feed-forward
    ),
    options={"statistics": ["atoms"]},
    tuning={
        "vn": Moves(base=dict(atoms=(512,), output="reconstruction", lam=0.05, nonneg=True, **_MN_SEARCH_VN),
                    moves=({"atoms": (1024,)}, {"lam": 0.02}, {"beta": 0.3, **_rates(1.0)}, {"test_lam": 0.01},
                           _budget())),
        "vn_matrix": Moves(base=dict(atoms_u=28, atoms_s=28, lam=0.05, nonneg=True, **_MN_SEARCH_VN),
                           moves=({"atoms_u": 40, "atoms_s": 40}, {"lam": 0.02}, {"rho_u": 1.0, "rho_s": 1.0},
                                  {"test_lam": 0.01}, _budget())),
        "ae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "conv_ae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "vae": Grid({"latent": [64, 128], "lr": LR3}, base=_MN),
        "mlp": Grid({"hidden": [(512, 512), (1024, 1024)], "lr": LR3}, base=_MN),
        "matrix_code_ff": Grid({"l1": [0.0, 1e-3], "lr": LR3}, base=dict(atoms_u=40, atoms_s=40, hidden=256, **_MN)),
        # half decades around vn's lam moves, the same units; below 3e-4 left out for compute (a point there: 34 min)
        "dict_learning": Grid({"alpha": [3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]}, base=dict(n_components=1024, positive=True)),
    },
    scales={"smoke": Scale(params={"n_train": 48, "n_test": 12}, config=_SMOKE_CONFIG)},
    title="mnist_comp, mode=reconstruct")

RESULT_BENCHES = (FUNCTIONS_MASKED, FUNCTIONS_RECONSTRUCT, SPATIAL_DECODE, SPATIAL_RECONSTRUCT, MNIST_RECONSTRUCT)


def _results(bench: Bench, **table: Any) -> ResultsTable:
    ex = tuple(HAND_FACTORISED) if bench.task == "spatial2d" else ()
    return ResultsTable(bench.name, references=REFERENCES, exclude_from_best=ex, model=None, **table)


_ATOM_ROWS = (("spatial2d_reconstruct", "vn"), ("spatial2d_reconstruct", "vn_matrix"),
              ("spatial2d_reconstruct", "vn_matrix-private"), ("spatial2d_decode", "vn_pairs"),
              ("mnist_reconstruct", "vn"), ("mnist_reconstruct", "vn_matrix"), ("mnist_reconstruct", "vn_matrix-private"))
_IMAGES = ("spatial2d_decode", "spatial2d_reconstruct", "mnist_reconstruct")
assert tuple(b.name for b in RESULT_BENCHES) == nar.RESULT

SPEC = register_spec(Spec(
    "vn_benchmarks", "VN benchmarks: functions1d, spatial2d, mnist_comp reconstruct",
    benches=(*RESULT_BENCHES, FUNCTIONS_ATOMS, FUNCTIONS_ROUND1, SPATIAL_CAPACITY),
    intro=nar.INTRO,
    sections=(
        Verdicts(tuple(c for b in RESULT_BENCHES for c in bench_claims(b.name)), note=nar.VERDICTS_NOTE),
        Figure("verdict_ratios", "ratios", "Each bench's VN reading: error / the best baseline's per split (bars: "
               f"means; dots: seeds), bands {nar.ID_PARITY}x (ID) and {nar.OOD_FACTOR}x (OOD)"),
        *(_results(b) for b in RESULT_BENCHES),
        Notes(),
    ),
    pages={
        "readings": (Text(nar.READINGS_TEXT), Custom(nar.reading_table), Custom(nar.round_cuts)),
        "diagnostics": (
            *(s for b in ("functions1d_reconstruct", "spatial2d_reconstruct", "mnist_reconstruct")
              for s in (Text(f"## Code size: {b}"), nar.code_size_table(b))),
            Text("## Which atoms `vn_pairs` picks (spatial2d decode)"), Custom(nar.pair_choice_table),
            Text("## spatial2d error by centre"),
            Figure("error_maps", "error_maps", "spatial2d: per-centre test error, mean over seeds",
                   {"benches": ("spatial2d_decode", "spatial2d_reconstruct")}),
            Custom(nar.error_by_split),
            Text("## Figures"),
            Figure("id_vs_ood", "id_vs_ood", "ID vs OOD test error of every model, mean ± sample std over seeds",
                   {"benches": tuple(b.name for b in RESULT_BENCHES)}),
            Figure("atoms", "atoms", "The most used atoms of each VN variant on the image tasks (first seed)",
                   {"rows": _ATOM_ROWS}),
            Figure("factors", "factors", "The factor libraries of the matrix readings, columns by usage (first seed)",
                   {"rows": (("spatial2d_reconstruct", "vn_matrix"), ("spatial2d_decode", "vn_pairs"),
                             ("mnist_reconstruct", "vn_matrix"))}),
        ),
        "findings": (
            Text(nar.SPLIT_CHECK_TEXT), Custom(nar.split_check),
            ResultsTable("functions1d_atoms_sweep", model=None, note=nar.ATOMS_SWEEP_NOTE),
            ResultsTable("spatial2d_capacity", model=None, note=nar.CAPACITY_NOTE),
            Text("## What the numbers say"), Custom(nar.findings),
        ),
        "configs_functions1d": (Text("## Configurations (validation only)"),
                                *(TuningTable(b) for b in ("functions1d_masked", "functions1d_reconstruct"))),
        "configs_spatial2d": (Text("## Configurations (validation only)"), *(TuningTable(b) for b in _IMAGES if b.startswith("spatial2d"))),
        "configs_mnist": (Text("## Configurations (validation only)"), TuningTable("mnist_reconstruct")),
    },
))
