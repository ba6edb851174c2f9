"""Training glue shared by the RSGN models: the one backprop loop plus slow local rules run
from a ``hebbnets.training.Callback``.

A training-mode forward leaves what the slow rules need from *this* batch (activity, per-edge
co-activation) in ``model._batch``; ``_loss`` adds the per-sample losses; ``SlowRules.on_step_end``
consumes it right after the batch's optimiser step (the author's order: Hebbian updates follow
the gradient step). Nothing is carried to the next batch, so the model validated at an epoch's
end, the model early stopping saves, and the model restored at the end of ``fit`` are one and
the same (no slow step runs after the restore).
"""
from __future__ import annotations

from typing import Any

import torch

from .._split import Split
from ..training import BackpropModel, Callback, per_sample_loss, supervised_loss, train_backprop


class SlowRules(Callback):
    """Runs a ``SlowRuleModel``'s slow rules: ``_slow_fit_start`` before training,
    ``_slow_step`` after every optimiser step, ``_slow_epoch_end`` after each epoch's validation
    (and after the checkpoint decision), ``_slow_selectable`` to veto restoring an epoch."""

    def on_fit_start(self, model, train, val):
        model._slow_fit_start(train, val)

    def on_step_end(self, model, step, batch, loss):
        record, model._batch = model._batch, None
        if record is None or record.get("loss") is None:
            raise RuntimeError("SlowRules: no training-mode forward recorded this batch (train through _loss)")
        model._slow_step(step, record)

    def on_epoch_end(self, model, epoch, history):
        model._slow_epoch_end(epoch, history)

    def selectable(self, model, epoch, history):
        return model._slow_selectable(epoch, history)


class SlowRuleModel(BackpropModel):
    """``BackpropModel`` whose slow rules run from ``SlowRules`` (see module docstring)."""

    _batch: dict[str, Any] | None = None

    def training_callbacks(self) -> list[Callback]:
        return [SlowRules()]

    def _slow_fit_start(self, train: Split, val: Split | None) -> None:
        """Reset per-fit bookkeeping (default: nothing)."""

    def _slow_step(self, step: int, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def _slow_epoch_end(self, epoch: int, history: dict[str, list]) -> None:
        """After epoch ``epoch``'s validation (default: nothing)."""

    def _slow_selectable(self, epoch: int, history: dict[str, list]) -> bool:
        return True

    def _loss(self, batch: Split) -> torch.Tensor:
        out = self._forward(batch.x, batch.x_mask)
        if self._batch is not None:
            self._batch["loss"] = per_sample_loss(out.detach(), batch, self.spec)  # (B,)
        return supervised_loss(out, batch, self.spec)

    def _fit(self, split: Split) -> None:
        train_backprop(self, split)
        self.eval()
