"""Images in records: a compact JSON encoding of ``(K, H, W)`` float images (8 bits per pixel,
base64). Records of fits (the experiments' statistics) and of continual stages
(``hebbnets.continual``) carry learned atoms as images this way; the reports decode them."""
from __future__ import annotations

import base64
from typing import Any

import numpy as np
import torch


def encode_images(images: torch.Tensor) -> dict[str, Any]:
    """``(K, H, W)`` floats -> compact JSON: each image min-max scaled to 8 bits, base64.
    ``decode_images`` inverts it (to 8-bit precision)."""
    images = images.detach().float().cpu()
    lo = images.flatten(1).min(1).values
    hi = images.flatten(1).max(1).values
    span = (hi - lo).clamp_min(1e-12)
    q = ((images - lo[:, None, None]) / span[:, None, None] * 255).round().clamp(0, 255).to(torch.uint8)
    return {"shape": list(images.shape), "lo": [float(f"{v:.4g}") for v in lo.tolist()],
            "hi": [float(f"{v:.4g}") for v in hi.tolist()], "data": base64.b64encode(q.numpy().tobytes()).decode()}


def decode_images(blob: dict[str, Any]) -> torch.Tensor:
    """The ``(K, H, W)`` float32 images of an ``encode_images`` blob (8-bit precision)."""
    q = np.frombuffer(base64.b64decode(blob["data"]), dtype=np.uint8).reshape(blob["shape"])
    lo = torch.tensor(blob["lo"])[:, None, None]
    hi = torch.tensor(blob["hi"])[:, None, None]
    return lo + torch.from_numpy(q.astype("float32")) / 255 * (hi - lo)
