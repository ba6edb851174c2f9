"""Choose the toy_atoms configurations of VN and the MLP on validation data (never a test split).

Equal effort: 6 grid points per model, each fitted on the training split minus a carved 20 %
validation part (``hn.bench.tune``). Prints the ranked grid and writes
``results/tune_toy_atoms.json``; the winners are copied into ``tasks/toy_atoms.py``.

    python benchmarks/tune_toy_atoms.py [vn] [mlp]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import hebbnets as hn

# Second round of each model's search (the first, equally sized, round -- VN lam {0.02, 0.05,
# 0.1} x rho {1, 2}; MLP hidden {256^2, 512^2, 128^3} x lr {1e-3, 3e-3} -- put the best points on
# the grid's edge, so each grid was moved once in that direction).
GRIDS = {
    "vn": {"lam": [0.03, 0.05], "rho_s": [2.0, 4.0, 8.0]},
    "mlp": {"hidden": [(512, 512), (1024, 1024), (512, 512, 512)], "lr": [1e-3, 3e-3]},
}


def main() -> None:
    task = hn.tasks.make("toy_atoms", seed=0, scale="quick")
    out = {}
    only = sys.argv[1:] or list(GRIDS)
    for model, grid in GRIDS.items():
        if model not in only:
            continue
        base = {**task.model_configs[model], "progress": False}
        if model == "vn":  # tie rho_u to rho_s: one learning-rate axis, like the MLP's lr
            rows = []
            for point in hn.bench.grid_points(grid):
                rows += hn.bench.tune(task, model, {k: [v] for k, v in point.items()},
                                      base={**base, "rho_u": point["rho_s"]})
            rows.sort(key=lambda r: r["value"])
        else:
            rows = hn.bench.tune(task, model, grid, base=base)
        out[model] = rows
        print(f"\n{model}: validation MSE (best first)")
        for r in rows:
            point = {k: r["config"][k] for k in grid}
            print(f"  {r['value']:.3e}  {point}  ({r['fit_seconds']:.0f}s)")
    path = Path(f"results/tune_toy_atoms_{'_'.join(only)}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
