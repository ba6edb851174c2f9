"""Training glue shared by the RSGN models: the one backprop loop plus slow local rules.

A training-mode ``_forward`` leaves the batch's activity statistics in ``self._pending``;
``_loss`` adds the batch loss to them; the slow rules (``_apply_pending``, defined by each model)
run at the start of the next training forward, i.e. after the optimiser step of the batch that
produced them, which is the author's order.
"""
from __future__ import annotations

import math

import torch

from .._split import Split
from ..training import BackpropModel, supervised_loss, train_backprop, validation_size


class SlowRuleModel(BackpropModel):
    """``BackpropModel`` whose slow rules run between optimiser steps (see module docstring)."""

    def _apply_pending(self) -> None:
        raise NotImplementedError

    def _start_fit(self) -> None:
        """Reset per-fit bookkeeping before training (default: nothing)."""

    def _loss(self, batch: Split) -> torch.Tensor:
        loss = supervised_loss(self._forward(batch.x, batch.x_mask), batch, self.spec)
        if self._pending is not None:
            self._pending["loss"] = float(loss.detach())
        return loss

    def _fit(self, split: Split) -> None:
        cfg = self.config
        n_train = len(split) - validation_size(len(split), cfg.val_fraction)
        self._steps_per_epoch = math.ceil(n_train / cfg.batch_size)
        self._batches = 0
        self._start_fit()
        train_backprop(self, split)
        self._apply_pending()  # the last batch's slow rules
        self.eval()
