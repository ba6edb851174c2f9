"""``spatial2d``: a Gaussian bump at integer centres; OOD = centres inside a held-out square.

Template: Liang, Qian, Ziyin and Fiete, "Compositional Generalization via Forced Rendering of
Disentangled Latents" (ICML 2025). A ``grid x grid`` image holds one Gaussian bump of width
``sigma`` pixels centred at integer ``(cx, cy)``:

    image[a, b] = exp(-((a - cx)^2 + (b - cy)^2) / (2 sigma^2))      (axis 0 <-> x, axis 1 <-> y)

Centres inside the held-out square ``[lo, hi]^2`` (inclusive, default ``[10, 18]^2``) form the
``ood`` split: every x and every y there also occurs in training, but never together. Centres
outside the square are split at random into training centres and ``id`` centres (a fraction
``id_fraction``, never trained on).

Modes: ``decode`` (input = concatenated one-hot codes of ``cx`` and ``cy``, shape ``(2 grid,)``;
output = the image ``(grid, grid)``) and ``reconstruct`` (input = output = the image, plus
optional input ``noise``). Each centre appears ``repeats`` times (useful only with noise).
``error_map`` gives each model's error at every centre, as data for a plot.
"""
from __future__ import annotations

from typing import Any

import torch

from .._split import Split
from .._validation import check_choice
from . import _configs
from ._task import Task, check_params, register_task

MODES = ("decode", "reconstruct")
SPLIT_CODES = {"train": 0, "id": 1, "ood": 2}

_COMMON = dict(mode="decode", sigma=1.0, held_out=(10, 18), id_fraction=0.2, noise=0.0, repeats=1)
_DEFAULTS = {
    "quick": dict(grid=28, **_COMMON),
    "paper": dict(grid=28, **_COMMON),
}

# Per mode, the configuration of each model chosen on validation data carved from the training
# split, with every validation point behind it: hebbnets/tasks/configs/spatial2d-<mode>.json.

def render(centres: torch.Tensor, grid: int, sigma: float) -> torch.Tensor:
    """Images of Gaussian bumps: centres (N, 2) (x, y) -> (N, grid, grid)."""
    pos = torch.arange(grid, dtype=torch.float32)  # (G,)
    c = centres.to(torch.float32)
    gx = torch.exp(-((pos[None, :] - c[:, :1]) ** 2) / (2 * sigma**2))  # (N, G) x-profile
    gy = torch.exp(-((pos[None, :] - c[:, 1:]) ** 2) / (2 * sigma**2))  # (N, G) y-profile
    # the 2D Gaussian is separable: exactly the outer product of the two profiles
    return gx[:, :, None] * gy[:, None, :]


def one_hot_codes(centres: torch.Tensor, grid: int) -> torch.Tensor:
    """Concatenated one-hot codes of x and y: centres (N, 2) -> (N, 2 grid)."""
    eye = torch.eye(grid)
    return torch.cat([eye[centres[:, 0]], eye[centres[:, 1]]], dim=1)


def _make_split(centres: torch.Tensor, p: dict[str, Any], gen: torch.Generator) -> Split:
    centres = centres.repeat_interleave(p["repeats"], dim=0)  # (N, 2)
    img = render(centres, p["grid"], p["sigma"])  # (N, G, G)
    if p["mode"] == "decode":
        return Split(one_hot_codes(centres, p["grid"]), img)
    x = img + p["noise"] * torch.randn(img.shape, generator=gen) if p["noise"] > 0 else img.clone()
    return Split(x, img)


@register_task("spatial2d")
def make_spatial2d(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task. Parameters: ``mode`` ("decode" | "reconstruct"), ``grid``, ``sigma``,
    ``held_out`` ((lo, hi): the inclusive held-out square ``[lo, hi]^2``), ``id_fraction``
    (fraction of outside centres kept for the ``id`` split), ``noise`` (input noise std,
    reconstruct mode), ``repeats`` (samples per centre).

    Returns a ``Task``; ``info["centres"][split]`` holds each sample's centre ``(N, 2)``.
    """
    p = check_params(params, _DEFAULTS[scale], "spatial2d")
    check_choice(p["mode"], MODES, "mode")
    g = p["grid"]
    if isinstance(g, bool) or not isinstance(g, int) or g < 4:
        raise ValueError(f"grid: expected an int >= 4, got {g!r}")
    if isinstance(p["repeats"], bool) or not isinstance(p["repeats"], int) or p["repeats"] < 1:
        raise ValueError(f"repeats: expected an int >= 1, got {p['repeats']!r}")
    if not (isinstance(p["sigma"], (int, float)) and p["sigma"] > 0):
        raise ValueError(f"sigma: must be > 0, got {p['sigma']!r}")
    if not 0 < p["id_fraction"] < 1:
        raise ValueError(f"id_fraction: must be in (0, 1), got {p['id_fraction']!r}")
    if p["noise"] < 0:
        raise ValueError(f"noise: must be >= 0, got {p['noise']!r}")
    held = p["held_out"]
    if (not isinstance(held, (list, tuple)) or len(held) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in held)):
        raise ValueError(f"held_out: expected (lo, hi) integers, got {held!r}")
    lo, hi = held
    # the square must leave room for every row/column inside it to be seen outside it
    if not (0 < lo <= hi < g - 1) or (hi - lo + 1) >= g - 1:
        raise ValueError(f"held_out: need 0 < lo <= hi < grid - 1 with room outside, got {held!r} for grid {g}")

    gen = torch.Generator().manual_seed(seed)
    xs, ys = torch.meshgrid(torch.arange(g), torch.arange(g), indexing="ij")
    centres = torch.stack([xs.flatten(), ys.flatten()], dim=1)  # (G*G, 2)
    inside = ((centres >= lo) & (centres <= hi)).all(dim=1)  # (G*G,)
    outside = centres[~inside]
    perm = torch.randperm(len(outside), generator=gen)
    n_id = max(1, round(p["id_fraction"] * len(outside)))
    id_c, train_c = outside[perm[:n_id]], outside[perm[n_id:]]
    ood_c = centres[inside]
    # compositional split: every coordinate value of the OOD centres is seen in training
    for axis, name in ((0, "x"), (1, "y")):
        missing = set(range(g)) - set(train_c[:, axis].tolist())
        if missing:
            raise ValueError(f"id_fraction: training centres miss {name} values {sorted(missing)}; lower it")

    train = _make_split(train_c, p, gen)
    tests = {"id": _make_split(id_c, p, gen), "ood": _make_split(ood_c, p, gen)}
    rep = lambda c: c.repeat_interleave(p["repeats"], dim=0)  # noqa: E731
    return Task(
        name="spatial2d",
        train=train,
        tests=tests,
        metric="mse",
        params={"seed": seed, "scale": scale, **p, "held_out": [lo, hi]},
        model_configs=_configs.chosen(f"spatial2d-{p['mode']}"),
        info={"centres": {"train": rep(train_c), "id": rep(id_c), "ood": rep(ood_c)}},
    )


@torch.no_grad()
def error_map(model: Any, task: Task) -> dict[str, Any]:
    """Per-centre error of a fitted ``model`` on every split of a ``spatial2d`` task.

    Returns a dict with ``"error"``: (grid, grid) float tensor, the mean squared error of the
    model's image at each centre (averaged over repeats); ``"split"``: (grid, grid) int tensor
    with codes ``SPLIT_CODES`` (0 train, 1 id, 2 ood); ``"centres"`` and ``"values"``: flat
    lists (centre, error) for plotting tools that want records.
    """
    if not isinstance(task, Task) or task.name != "spatial2d":
        raise ValueError("task: expected a spatial2d Task")
    g = task.params["grid"]
    total = torch.zeros(g, g)
    count = torch.zeros(g, g)
    codes = torch.full((g, g), -1, dtype=torch.long)
    splits = {"train": task.train, **task.tests}
    for name, split in splits.items():
        c = task.info["centres"][name]  # (N, 2)
        err = ((model.predict(split.x, split.x_mask) - split.y) ** 2).flatten(1).mean(dim=1)  # (N,)
        total.index_put_((c[:, 0], c[:, 1]), err, accumulate=True)
        count.index_put_((c[:, 0], c[:, 1]), torch.ones_like(err), accumulate=True)
        codes[c[:, 0], c[:, 1]] = SPLIT_CODES[name]
    error = total / count.clamp_min(1)  # (G, G)
    flat_c = [(a, b) for a in range(g) for b in range(g)]
    return {"error": error, "split": codes, "centres": flat_c, "values": error.flatten().tolist()}
