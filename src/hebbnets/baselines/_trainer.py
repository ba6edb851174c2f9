"""The one backprop training loop every baseline uses.

Adam on a validation-carved training split, early stopping on validation loss (the best
weights are restored), a tqdm progress bar. Baselines differ only in their network and in
``BackpropModel._forward``; no benchmark has its own copy of this loop.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_positive


@dataclass
class TrainConfig:
    """Optimisation settings shared by every backprop baseline (inherited by their configs)."""

    lr: float = 1e-3
    weight_decay: float = 0.0
    epochs: int = 200
    batch_size: int = 64
    val_fraction: float = 0.1  # carved from the training split, never from a test split
    patience: int = 20  # epochs without validation improvement before stopping
    progress: bool = True

    def __post_init__(self) -> None:
        check_positive(self.lr, "lr")
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        for name in ("epochs", "batch_size", "patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {value!r}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise ValueError(f"val_fraction: must be in [0, 1), got {self.val_fraction!r}")


def carve_validation(n: int, fraction: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random (train_idx, val_idx) of ``range(n)``; at least one sample in each when fraction > 0."""
    perm = torch.randperm(n, generator=generator)
    n_val = validation_size(n, fraction)
    return perm[n_val:], perm[:n_val]


def validation_size(n: int, fraction: float) -> int:
    """How many of ``n`` training samples ``carve_validation`` holds out."""
    return 0 if fraction == 0 else min(max(1, round(fraction * n)), n - 1)


def supervised_loss(out: torch.Tensor, split: Split, spec: DataSpec) -> torch.Tensor:
    """Cross-entropy for class labels, (masked) MSE for float targets.

    A split scored by ``"mse_missing"`` (masked prediction) is trained on exactly that: the MSE
    over the entries hidden from the input (``x_mask == 0``), as a masked autoencoder is.
    """
    if spec.is_classification:
        return F.cross_entropy(out, split.y)
    err = (out - split.y) ** 2
    weight = split.y_mask
    if split.metric == "mse_missing" and split.x_mask is not None and split.x_mask.shape == split.y.shape:
        missing = 1.0 - split.x_mask
        weight = missing if weight is None else weight * missing
    if weight is None:
        return err.mean()
    return (err * weight).sum() / weight.sum().clamp_min(1)


class BackpropModel(Model):
    """A model trained end-to-end by backprop with ``train_backprop``.

    Subclasses implement ``_build`` (creating ``self.net``) and ``_forward(x, x_mask)`` that
    returns ``(N, *y_shape)`` regression outputs or ``(N, n_classes)`` logits.
    """

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def _loss(self, batch: Split) -> torch.Tensor:
        """Training objective on one batch (default: the supervised loss of ``_forward``).

        Override for another objective (e.g. a VAE's ELBO). Early stopping always uses the
        supervised loss of the eval-mode ``_forward``, the quantity the model is scored by.
        """
        return supervised_loss(self._forward(batch.x, batch.x_mask), batch, self.spec)

    def _fit(self, split: Split) -> None:
        train_backprop(self, split)

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        outs = []
        for start in range(0, x.shape[0], 1024):
            m = None if x_mask is None else x_mask[start : start + 1024]
            outs.append(self._forward(x[start : start + 1024], m))
        out = torch.cat(outs)
        return out.argmax(-1) if self.spec.is_classification else out


def train_backprop(model: BackpropModel, split: Split) -> dict[str, list[float]]:
    """Train ``model`` on ``split`` with Adam + early stopping; returns the loss history."""
    cfg: TrainConfig = model.config
    spec = model.spec
    gen = torch.Generator().manual_seed(model.seed)
    tr_idx, va_idx = carve_validation(len(split), cfg.val_fraction, gen)
    train, val = split.subset(tr_idx), (split.subset(va_idx) if len(va_idx) else None)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    best, best_state, stale = math.inf, None, 0
    history: dict[str, list[float]] = {"train": [], "val": []}
    bar = tqdm(range(cfg.epochs), desc=f"{model.name} fit", disable=not cfg.progress or None, leave=False)
    for _epoch in bar:
        model.train()
        perm = torch.randperm(len(train), generator=gen)
        total = 0.0
        for start in range(0, len(train), cfg.batch_size):
            batch = train.subset(perm[start : start + cfg.batch_size])
            loss = model._loss(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        history["train"].append(total / len(train))
        if val is None:
            continue
        model.eval()
        with torch.no_grad():
            v = float(supervised_loss(model._forward(val.x, val.x_mask), val, spec))
        history["val"].append(v)
        bar.set_postfix(train=f"{history['train'][-1]:.4g}", val=f"{v:.4g}")
        if v < best - 1e-12:
            best, stale = v, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            stale += 1
            if stale >= cfg.patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return history
