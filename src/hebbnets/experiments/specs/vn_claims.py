"""``vn_claims``: the Vector Network paper's second claim, measured (reports/vn_claims.md).

1. **No weight entanglement.** Continual learning on disjoint factor sets (protocol
   ``continual``: ``fit`` on the first stage, ``partial_fit`` on the second): functions1d {sin,
   cos} then {poly, gauss}; mnist reconstruction of the digits 0-4 then 5-9; nbody under
   {gravity, drag} then {lorentz, spring}. Forgetting = the error on the first stage's test split
   after the second stage over the error right after the first. Every model is tuned on
   validation data carved from the *first* stage only (equal points per model); MLP+EWC is the
   tuned MLP plus the EWC penalty, whose strength no first-stage validation can choose (it acts
   only from the second stage on), so it runs at fixed strengths (a sweep over decades), each a row
   of its own; beside it the MLP with a replay buffer and, as the reference without forgetting, the
   MLP trained on both stages at once (``mlp-joint``, never a continual row of a claim). With
   option ``entanglement`` every fit also records the overlap and reuse measures of
   ``hebbnets.entanglement`` (``hebbnets.continual.entanglement_summary``).
2. **Amortised inference** (protocol ``amortised``): on every VN benchmark (``vn_benchmarks``'
   result benches, ``vn_dynamics``' nbody and mnist transform; the same task parameters and chosen
   ``vn`` configuration), a LISTA encoder per layer trained on
   the training inputs, timed against plain FISTA at equal energy and at equal test error, alone
   and as FISTA's warm start, on every test split.
3. **Faster FISTA at scale**: quoted from the ``speed`` report's ``vn_inference`` measurement.

The prose, tables and claim checks: ``reporting/narration_vn_claims.py``; the figures: ``reporting/figures.py``.
"""
from __future__ import annotations

from typing import Any

from ..reporting import Claim, Custom, Figure, Notes, Text, TuningTable, Verdicts, fmt
from ..reporting import narration_vn_claims as N
from .._spec import Bench, Grid, Scale, Spec, register_spec, variant
from . import vn_benchmarks as VB
from . import vn_dynamics as VD

SEEDS = (0, 1, 2)
#: the continual benches whose VN wins carry a claim line (issue 29: claim-carrying rows at 5 seeds)
SEEDS5 = (0, 1, 2, 3, 4)
_SMOKE_CONFIG = {"*": {"epochs": 1}, "vn": {"max_iter": 20, "max_sweeps": 2}, "vn_matrix": {"max_iter": 20},
                 "vn_applied_set": {"max_iter": 20}}
# EWC strengths (lambda, on the scale of the MSE training loss), a sweep over decades: none can be
# chosen on the first stage (100 and 10,000 were the first round's; 1 and 1e6 close the curve)
EWC = (1.0, 100.0, 10000.0, 1000000.0)
# the field's references beside EWC: a replay buffer of 10 % of stage 1's training samples,
# and joint training on both stages at once (no forgetting by construction; never a continual row)
REPLAY_FRACTION = 0.1


def _ewc_rows(model: str = "mlp") -> tuple[Any, ...]:
    return (*(variant(f"{model}+ewc{int(lam)}", model, ewc_lambda=lam) for lam in EWC),
            variant(f"{model}-replay", model, options={"schedule": "replay", "replay_fraction": REPLAY_FRACTION}),
            variant(f"{model}-joint", model, options={"schedule": "joint", "entanglement": False}))


# -- 1. continual learning -----------------------------------------------------------------------
_OPTS = {"entanglement": True}
F1D_VN_CAP = 2000
F1D = Bench(
    "functions1d_continual", "functions1d_continual", params={"mode": "masked"}, seeds=SEEDS5, protocol="continual",
    # the chosen `vn` configuration (searched at cap 200) refit at cap 2000: at 200 and at 500 every vn fit's first
    # stage ended at the cap (3 of 3) while the MLP rows stopped by patience at 64-79 epochs. Warm starts (the same
    # energies within the solver's tolerance; 2.8x less wall time at equal validation error on functions1d,
    # reports/speed.md) make the larger cap affordable
    options=_OPTS, models=(variant("vn", epochs=F1D_VN_CAP, warm_start=True), "mlp", *_ewc_rows(),
                           # same-structure controls of vn (issue 29; never backprop rows of a claim)
                           "vector_code_ff", "vn_implicit", variant("vn-dense", "vn", epochs=F1D_VN_CAP, warm_start=True,
                                                                    lam=1e-4)),
    # VN and MLP under one stopping rule (issue 29): patience 20 (the VN had a fixed cap of 15)
    # vn's lam grid moved up one step: on [0.003, 0.01, 0.03] its upper edge (0.03) was chosen; 0.1 did worse
    tuning={"vn": Grid({"lam": [0.01, 0.03, 0.1]}, base=dict(atoms=(150,), output="message", epochs=200, patience=20,
                                                            batch_size=64, norm_policy="clip_s")),
            "mlp": Grid({"lr": [1e-3, 3e-3, 1e-2]}, base=dict(hidden=(64, 64), epochs=200, patience=20, batch_size=64)),
            # the controls with vn's 150 atoms (the implicit one its chosen lam 0.03), under the same rule
            "vector_code_ff": Grid({"lr": [1e-3, 3e-3, 1e-2]}, base=dict(atoms=150, epochs=200, patience=20, batch_size=64)),
            # vn_implicit's lr grid moved down one step: on [1e-3, 3e-3, 1e-2] its lower edge (1e-3) was chosen
            "vn_implicit": Grid({"lr": [3e-4, 1e-3, 3e-3]}, base=dict(atoms=150, lam=0.03, epochs=200, patience=20,
                                                                     batch_size=64))},
    scales={"smoke": Scale(params={"n_train": 32, "n_test": 8, "length": 16}, config=_SMOKE_CONFIG)},
    title="functions1d (masked): {sin, cos} then {poly, gauss}")
MNIST = Bench(
    "mnist_continual", "mnist_continual", seeds=SEEDS5, protocol="continual", options=_OPTS,
    models=("vn", "vn_matrix", "mlp", *_ewc_rows()),
    # VN rows and MLP under one stopping rule (issue 29): an epoch cap of 200, patience 5 (at cap 40 every MLP
    # fit's first stage ended at it, 3 of 3; the VN rows stopped by patience at 7-18 epochs)
    # vn's lam grid moved down one step four times: on [0.01, 0.05, 0.1], [0.003, 0.01, 0.05], [0.001, 0.003, 0.01] and
    # [0.0003, 0.001, 0.003] its lower edge was chosen (validation 0.0036, 0.0035, 0.0030, 0.0028)
    tuning={"vn": Grid({"lam": [0.0001, 0.0003, 0.001]}, base=dict(atoms=(512,), output="reconstruction", nonneg=True,
                                                          epochs=200, patience=5, batch_size=64)),
            "vn_matrix": Grid({"lam": [0.01, 0.05, 0.1]}, base=dict(nonneg=True, epochs=200, patience=5)),
            # mlp's lr grid moved down one step: on [3e-4, 1e-3, 3e-3] its lower edge (3e-4) was chosen
            "mlp": Grid({"lr": [1e-4, 3e-4, 1e-3]}, base=dict(hidden=(512, 512), epochs=200, patience=5, batch_size=64))},
    scales={"smoke": Scale(params={"n_train": 24, "n_test": 6}, config=_SMOKE_CONFIG)},
    title="mnist_comp reconstruction: digits 0-4 then 5-9")
NB_VN_CAP = 2000
NBODY = Bench(
    "nbody_continual", "nbody_continual", seeds=SEEDS5, protocol="continual", options=_OPTS,
    # vn refit at cap 2000 (searched at 1000): at 1000 the second stage of 2 of 3 vn fits ended at the cap
    # vn_applied_set-lam0.3: the choice of the same search on an earlier machine (a tie there, 0.4 %), shown beside
    # the claim rows (SHOWN_ONLY): its fits are that machine's records
    models=(variant("vn", epochs=NB_VN_CAP), "vn_applied_set", variant("vn_applied_set-lam0.3", "vn_applied_set", lam=0.3),
            "mlp", *_ewc_rows(),
            # same-structure controls of vn_applied_set (issue 29; never backprop rows of a claim): as in vn_dynamics
            "applied_set_code_ff", "applied_set_implicit", variant("vn_applied_set-dense", "vn_applied_set", lam=1e-4)),
    # every row under one stopping rule (issue 29): cap 1000, patience 20. The VN rows had fixed caps of 5 (vn) and 30
    # (vn_applied_set) epochs, at which 3 of 3 vn fits and 2 of 3 vn_applied_set second stages ended; vn with warm
    # starts (the same energies within the solver's tolerance, less time an epoch). vn_applied_set's lam grid moved up
    # one step: at cap 30 its top point (0.3) was chosen. Its search rerun on this machine chose 0.1 (an earlier
    # machine's values chose 0.3 by 0.4 %: docs/experiments.md, "Reproducibility")
    tuning={"vn": Grid({"lam": [0.0009, 0.003, 0.01]}, base=dict(atoms=(1024,), epochs=1000, patience=20, batch_size=64,
                                                               warm_start=True)),
            # moved back down one step at cap 1000, twice: on [0.1, 0.3, 1.0] and [0.03, 0.1, 0.3] its lower edge was chosen
            "vn_applied_set": Grid({"lam": [0.01, 0.03, 0.1]}, base=dict(epochs=1000, patience=20)),
            # cap 1000: at 200 the second stage of mlp, mlp+ewc1 (3 of 3) and mlp-replay (2 of 3) ended at the cap. The lr
            # grid moved down one step: on [1e-4, 3e-4, 1e-3] its lower edge (1e-4) was chosen
            "mlp": Grid({"lr": [3e-5, 1e-4, 3e-4]}, base=dict(hidden=(128, 128), epochs=1000, patience=20, batch_size=64)),
            # the control at vn_applied_set's defaults (atoms, encoder); its lr grid moved up one step: on [1e-3, 3e-3, 1e-2]
            # its upper edge (1e-2) was chosen
            "applied_set_code_ff": Grid({"lr": [3e-3, 1e-2, 3e-2]}, base=dict(epochs=1000, patience=20)),
            # the implicit control at vn_applied_set's lam and beta and the l2 vn_dynamics chose (0.1); its lr searched
            # around the one vn_dynamics chose at 2,000 systems (1e-2; its fits before this search ran at that lr)
            "applied_set_implicit": Grid({"lr": [3e-3, 1e-2, 3e-2]}, base=dict(l2=0.1, lam=0.03, beta=1.0, epochs=1000,
                                                                              patience=20))},
    scales={"smoke": Scale(params={"n_train": 24, "n_test": 6, "substeps": 2}, config=_SMOKE_CONFIG)},
    title="nbody: {gravity, drag} then {lorentz, spring}")
CONTINUAL = (F1D, MNIST, NBODY)
VN_LABELS = ("vn", "vn_matrix", "vn_applied_set")  # the VN rows; every other row is trained by backprop
#: same-structure controls (issue 29): neither VN nor backprop rows of a claim; each bench's mechanism line
#: compares them with its best VN row
CONTROLS = {"functions1d_continual": {"vector_code_ff": "the code from an MLP of the observed entries, by backprop",
                                      "vn_implicit": "FISTA's code kept, the atoms learned through it by implicit gradients",
                                      "vn-dense": "VN with dense codes (lam 1e-4)"},
            "nbody_continual": {"applied_set_code_ff": "the code from a feed-forward window summary, by backprop",
                                "applied_set_implicit": "FISTA's window code kept, atoms and encoder learned through it",
                                "vn_applied_set-dense": "VN with dense codes (lam 1e-4)"}}
#: rows shown in the tables but in no claim: another configuration of a claim row (a sensitivity check, not chosen
#: on validation data, so never the best of its side)
SHOWN_ONLY = ("vn_applied_set-lam0.3",)
# the claims' bounds: a VN keeps the first stage when its forgetting ratio is at most KEEP; the two
# stages' updates are near-orthogonal when |cosine| < ORTHOGONAL; atoms are disjoint when fewer than
# DISJOINT of the used ones serve both stages
KEEP, ORTHOGONAL, DISJOINT = 1.25, 0.1, 0.5


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
_CONT = {"benches": tuple(b.name for b in CONTINUAL)}


def _per_bench(b: Bench) -> tuple[Claim, ...]:
    controls = tuple(CONTROLS.get(b.name, {}))
    return (Claim(f"{b.name}: every VN variant keeps the first stage (forgetting ratio at most {fmt(KEEP)}) and forgets "
                  "less than every continual backprop row (MLP, its EWC sweep, replay)",
                  N.forgetting_claim(b.name, VN_LABELS, KEEP, SHOWN_ONLY, controls),
                  key=f"{b.name}: every VN variant keeps the first stage"),
            Claim(f"{b.name}: after both stages, a VN has a lower error on both stages together than every continual "
                  "backprop row", N.final_claim(b.name, VN_LABELS, SHOWN_ONLY, controls), key=f"{b.name}: a VN has the lowest error after both stages"),
            *((Claim(f"{b.name}: where a VN's error after both stages is the lowest, the win needs VN's mechanism (every "
                     "same-structure control worse beyond its interval)",
                     N.mechanism_claim(b.name, VN_LABELS, CONTROLS[b.name], SHOWN_ONLY),
                     key=f"{b.name}: the VN's continual win needs its mechanism"),) if controls else ()))


SPEC = register_spec(Spec(
    "vn_claims", "VN's second claim: no weight entanglement, and amortised inference",
    benches=(*CONTINUAL, *AMORTISED),
    intro=("The Vector Network paper's structural claim: Atomic-Hebb changes only the atoms active for a sample, so "
           "learning one behaviour does not degrade another, and atoms are reusable parts. Its stated limitation: "
           "iterative inference is slower than a feed-forward pass, with learned feed-forward updates as the fix. "
           "Every number is a test-split value, mean ± sample std over seeds 0-4 on the three continual benches, "
           "0, 1, 2 elsewhere (data and models re-seeded; each line's seeds: its `seeds` column). "
           "Background: `docs/vn.md`; the measures: `hebbnets.continual`, `hebbnets.entanglement`, "
           "`hebbnets.vn.amortised`."),
    sections=(
        Verdicts((
            Claim("The vector VN (`vn`) forgets less of the first stage than the MLP trained by backprop, on every "
                  "continual benchmark", N.vn_vs_mlp, key="continual: vn forgets less than the MLP on every benchmark"),
            *(c for b in CONTINUAL for c in _per_bench(b)),
            Claim(f"VN's two stages pull its atoms in near-orthogonal directions (|update cosine| below {fmt(ORTHOGONAL)} "
                  "on every benchmark)", N.orthogonal_claim(ORTHOGONAL), key="continual: VN's stage updates near-orthogonal"),
            Claim(f"VN's low forgetting comes from disjoint atoms (fewer than {100 * DISJOINT:.0f} % of the used atoms "
                  "serve both stages)", N.disjoint_claim(DISJOINT), key="continual: VN's stages use disjoint atoms"),
            Claim(f"The encoder is at least {fmt(GOAL_SPEEDUP)}x faster than FISTA at equal energy at no more than "
                  f"{fmt(GOAL_ERROR)}x its test error, on every benchmark and split",
                  N.amortised_claim(GOAL_SPEEDUP, GOAL_ERROR),
                  key=f"amortised: the LISTA encoder {fmt(GOAL_SPEEDUP)}x faster at <= {fmt(GOAL_ERROR)}x FISTA's error"),
        )),
        Figure("forgetting_bars", "forgetting", "Forgetting per model and benchmark", _CONT),
        Custom(N.coverage),
        Custom(N.links),
        Custom(N.continual_text),
        *(Custom(N.forgetting_table(b.name, tuple(CONTROLS.get(b.name, {})))) for b in CONTINUAL),
        Notes(),
    ),
    pages={
        "entanglement": (
            Custom(N.entanglement_text),
            *(Custom(N.entanglement_table(b.name)) for b in CONTINUAL),
            Figure("atom_factor_usage", "atom_factor_usage", "VN: atom-by-factor usage matrix after both stages (first seed)",
                   _CONT),
            Figure("sparsity", "sparsity", "VN: active atoms per test sample (first layer, every seed)", _CONT),
            Figure("stage_atoms", "stage_atoms", "VN: the atoms each stage's test samples use most (first seed)", _CONT),
        ),
        "metrics": (
            Text("## The field's continual-learning metrics"),
            Custom(N.metrics_text),
            *(Custom(N.metrics_table(b.name)) for b in CONTINUAL),
            Custom(N.stage_training_table),
            Figure("stability_plasticity", "stability_plasticity", "Stability against plasticity after both stages "
                   "(mean over seeds, seeds as dots; grey lines join an MLP and its EWC strengths)", _CONT),
        ),
        "amortised": (
            Custom(N.amortised_text),
            Custom(N.amortised_table(GOAL_SPEEDUP, GOAL_ERROR)),
            Custom(N.fista_speed),
        ),
        "configs": (
            Custom(N.grid_edge_note),
            *(TuningTable(b.name, title=f"Configurations of {b.name} (first-stage validation only)", level=2)
              for b in CONTINUAL),
        ),
    },
))
