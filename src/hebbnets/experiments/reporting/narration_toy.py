"""The toy report's claim checks (``specs/toy.py`` lays them out)."""
from __future__ import annotations

from .queries import ratio_effect, seeds_text
from .sections import ReportContext, Verdict, fmt, ood_id_ratio


def gap_claim(ctx: ReportContext) -> Verdict:
    """VN's OOD error stays within 2x of its ID error while the MLP's grows more than 10x."""
    vn = ood_id_ratio(ctx, "toy_atoms", "vn", "ood", "mse")
    mlp = ood_id_ratio(ctx, "toy_atoms", "mlp", "ood", "mse")
    if vn != vn or mlp != mlp:  # NaN: a model has no records
        return Verdict(None, "needs records of both models.")
    cells = (ctx.cell("toy_atoms", "vn", "ood", "mse"), ctx.cell("toy_atoms", "mlp", "ood", "mse"))
    return Verdict(vn < 2 and mlp > 10, f"OOD/ID error ratio: vn {fmt(vn)}, mlp {fmt(mlp)}.",
                   effect=f"OOD/ID {fmt(vn)} (vn), {fmt(mlp)} (mlp)", against="the model's own ID error",
                   seeds=seeds_text(*cells), reading="vn")


def ood_claim(ctx: ReportContext) -> Verdict:
    """VN's OOD error is lower than the MLP's by more than the two seed spreads."""
    vn, mlp = ctx.cell("toy_atoms", "vn", "ood", "mse"), ctx.cell("toy_atoms", "mlp", "ood", "mse")
    if vn is None or mlp is None:
        return Verdict(None, "needs records of both models.")
    spread = (0 if vn.std != vn.std else vn.std) + (0 if mlp.std != mlp.std else mlp.std)
    effect, point, _ = ratio_effect(vn, mlp)
    return Verdict(mlp.mean - vn.mean > spread, f"OOD test MSE vn {vn.text()}, mlp {mlp.text()} "
                   f"({fmt(mlp.mean / vn.mean)}x; seeds {vn.seeds}).", effect=effect, against="mlp",
                   seeds=seeds_text(vn, mlp), reading="vn")
