"""``toy_atoms``: sparse pairs of ground-truth rank-1 atoms; OOD = pairs never seen together.

Ground truth: ``K`` atoms, each a pair ``(s_i, u_i)`` of unit vectors (``s_i`` in input space,
``u_i`` in output space). A sample picks a pair ``{i, j}`` and positive coefficients ``c_i, c_j``:

    x = c_i s_i + c_j s_j + noise        y = c_i u_i + c_j u_j

With more atoms than input dimensions the map ``x -> y`` is not linear: it requires knowing
*which* atoms are present (sparse recovery). Training uses a random subset of the pairs that
still covers every atom; ``id`` draws new samples of trained pairs and ``ood`` draws pairs that
never co-occurred in training, so every factor is familiar and only the combination is new.
"""
from __future__ import annotations

import itertools
from typing import Any

import torch

from .._split import Split
from . import _configs
from ._task import Task, check_params, register_task

_DEFAULTS = {
    "quick": dict(n_atoms=32, x_dim=24, y_dim=24, n_train=3000, n_test=500, train_pair_fraction=0.3,
                  coef_low=0.5, coef_high=1.5, noise=0.01),
    "paper": dict(n_atoms=64, x_dim=48, y_dim=48, n_train=20000, n_test=2000, train_pair_fraction=0.3,
                  coef_low=0.5, coef_high=1.5, noise=0.01),
}

# The configuration of each model, chosen on validation data carved from the training split, and
# every validation point behind it: hebbnets/tasks/configs/toy_atoms.json (`hebbnets reproduce toy
# --stage tune` writes it).

def _unit_columns(d: int, k: int, gen: torch.Generator) -> torch.Tensor:
    a = torch.randn(d, k, generator=gen)
    return a / a.norm(dim=0, keepdim=True)


def _sample(pairs: torch.Tensor, n: int, s: torch.Tensor, u: torch.Tensor, p: dict[str, Any],
            gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    pick = pairs[torch.randint(len(pairs), (n,), generator=gen)]  # (n, 2) atom ids
    coef = p["coef_low"] + (p["coef_high"] - p["coef_low"]) * torch.rand(n, 2, generator=gen)
    codes = torch.zeros(n, s.shape[1])
    codes.scatter_(1, pick, coef)  # (n, K) two non-zeros per row
    x = codes @ s.T + p["noise"] * torch.randn(n, s.shape[0], generator=gen)
    y = codes @ u.T
    return x, y, pick


@register_task("toy_atoms")
def make_toy_atoms(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task. Parameters (defaults depend on ``scale``): ``n_atoms``, ``x_dim``,
    ``y_dim``, ``n_train``, ``n_test``, ``train_pair_fraction``, ``coef_low``, ``coef_high``,
    ``noise``."""
    p = check_params(params, _DEFAULTS[scale], "toy_atoms")
    k = int(p["n_atoms"])
    if k < 3:
        raise ValueError(f"n_atoms: need at least 3 atoms, got {k}")
    if not 0 < p["train_pair_fraction"] < 1:
        raise ValueError(f"train_pair_fraction: must be in (0, 1), got {p['train_pair_fraction']}")
    gen = torch.Generator().manual_seed(seed)
    s = _unit_columns(int(p["x_dim"]), k, gen)  # (x_dim, K)
    u = _unit_columns(int(p["y_dim"]), k, gen)  # (y_dim, K)

    all_pairs = torch.tensor(list(itertools.combinations(range(k), 2)))  # (P, 2)
    # A ring (i, i+1) guarantees every atom is trained; the rest of the budget is random pairs.
    ring = {(i, (i + 1) % k) if i < (i + 1) % k else ((i + 1) % k, i) for i in range(k)}
    n_train_pairs = max(len(ring), round(p["train_pair_fraction"] * len(all_pairs)))
    others = [tuple(q) for q in all_pairs.tolist() if tuple(q) not in ring]
    order = torch.randperm(len(others), generator=gen).tolist()
    train_set = sorted(ring | {others[i] for i in order[: n_train_pairs - len(ring)]})
    ood_set = sorted(set(map(tuple, all_pairs.tolist())) - set(train_set))
    train_pairs, ood_pairs = torch.tensor(train_set), torch.tensor(ood_set)

    xs, ys, pick_train = _sample(train_pairs, int(p["n_train"]), s, u, p, gen)
    xi, yi, pick_id = _sample(train_pairs, int(p["n_test"]), s, u, p, gen)
    xo, yo, pick_ood = _sample(ood_pairs, int(p["n_test"]), s, u, p, gen)
    return Task(
        name="toy_atoms",
        train=Split(xs, ys),
        tests={"id": Split(xi, yi), "ood": Split(xo, yo)},
        metric="mse",
        params={"seed": seed, "scale": scale, **p},
        model_configs=_configs.chosen("toy_atoms"),
        info={"S": s, "U": u, "train_pairs": train_pairs, "ood_pairs": ood_pairs,
              "sample_pairs": {"train": pick_train, "id": pick_id, "ood": pick_ood}},
    )
