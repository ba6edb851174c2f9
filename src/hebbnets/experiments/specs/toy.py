"""``toy``: the main job (``hebbnets demo``): VN against an MLP on ``toy_atoms``, where the OOD
split holds pairs of ground-truth atoms never seen together in training."""
from __future__ import annotations

from ..reporting import Claim, Figure, Notes, ResultsTable, TuningTable, Verdicts
from ..reporting.narration_toy import gap_claim, ood_claim
from .._spec import Bench, Grid, Scale, Spec, register_spec

TOY = Bench(
    "toy_atoms", task="toy_atoms", seeds=(0, 1, 2),
    models=(
        "vn",
        "mlp",
    ),
    # two models x 6 validation points; a second round of each search (the first put the best
    # points on the grids' edges). rho_u is tied to rho_s: one learning-rate axis, like the MLP's lr.
    # Equal budgets: both train up to 200 epochs and stop after 20 without a lower validation error.
    tuning={
        "vn": Grid({"lam": [0.03, 0.05], ("rho_s", "rho_u"): [2.0, 4.0, 8.0]},
                   base=dict(atoms=(48,), beta=1.0, nonneg=True, epochs=200, patience=20, batch_size=128, tol=1e-3)),
        "mlp": Grid({"hidden": [(512, 512), (1024, 1024), (512, 512, 512)], "lr": [1e-3, 3e-3]},
                    base=dict(epochs=200, batch_size=64, patience=20)),
    },
    scales={"smoke": Scale(params=dict(n_train=200, n_test=50), config={"*": {"epochs": 1}, "vn": {"max_iter": 50}})},
    title="toy_atoms: VN vs MLP",
)


SPEC = register_spec(Spec(
    "toy", "toy_atoms: Vector Network vs MLP on unseen atom pairs",
    benches=(TOY,),
    intro=("`toy_atoms` (`hebbnets.tasks.toy_atoms`): sparse pairs of ground-truth rank-1 atoms; the OOD split "
           "draws pairs that never co-occur in training, so every factor is familiar and only the combination is "
           "new. Both models use the configuration chosen on validation data carved from the seed-0 training split "
           "(`hebbnets/tasks/configs/toy_atoms.json`, 6 points each). Test MSE on held-out splits; data and models "
           "re-seeded per seed."),
    sections=(
        Verdicts((
            Claim("VN generalises to unseen atom pairs (OOD/ID error below 2) where the MLP does not (above 10)",
                  gap_claim, key="toy_atoms: VN's OOD/ID gap small, the MLP's large"),
            Claim("VN's OOD error is lower than the MLP's", ood_claim, key="toy_atoms: VN's OOD error below the MLP's"),
        )),
        Figure("id_vs_ood", "id_vs_ood", "ID vs OOD test error, mean ± sample std over seeds",
               {"benches": ("toy_atoms",)}),
        ResultsTable("toy_atoms", title="Results", model="vn"),
        Figure("validation_curves", "training", "Training length of every fit against its epoch cap",
               {"benches": ("toy_atoms",)}),
        Notes(),
        TuningTable("toy_atoms", title="Configurations (chosen on validation data)", level=2),
    ),
))
