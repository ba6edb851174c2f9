"""``RSGNEncoder``: the sparse RSGN's ignition and propagation as an ``nn.Module``.

A token sequence ``(B, T, d)`` goes through the registered ``rsgn`` model's own pieces
(``hebbnets.rsgn.model.RSGN``: ``_tokens``, ``propagate`` = ignition + sparse propagation +
activity-weighted readout, and its linear ``head``) to pooled features ``(B, d_out)``; nothing of
the model's math is copied. The fast parameters (spark MLP, token embedding, ``W_h``, LayerNorm,
head) train by gradients in the user's loop; the slow ones (positions, thresholds, per-edge
affinities) have no gradient and move only by the slow rules, called explicitly after an
optimiser step, never inside ``forward`` (``docs/rsgn.md`` section 3.3):

* ``slow_step(loss)``: per-sample losses ``(B,)`` of the latest training-mode forward -> the
  three-factor Hebbian rule on the alive edges' affinities, homeostasis of the thresholds, and
  the firing history;
* ``structure_step()``: Riemannian drift of positions, pruning, sprouting and the kNN rebuild
  (the model runs it once per epoch).

The temperature of the soft threshold is the buffer ``core.temperature`` (the model anneals it per
epoch; here it stays at ``t_start`` unless ``set_temperature`` changes it).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

from .._model import DataSpec
from .._validation import check_int, check_positive
from ..rsgn.model import RSGN, RSGNConfig
from ..training import TrainConfig
from ._checks import check_input, check_per_sample

#: RSGNConfig fields that configure the model's training loop, which the encoder does not run
_LOOP_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainConfig))
#: the encoder's options: every other RSGNConfig field
OPTIONS = tuple(f.name for f in dataclasses.fields(RSGNConfig) if f.name not in _LOOP_FIELDS)


class RSGNEncoder(nn.Module):
    """Sparse RSGN encoder: ``(B, T, in_features)`` token sequences -> ``(B, out_features)``.

    ``forward`` (``hebbnets.rsgn.model``, module docstring there): tokens become spark points in
    the Poincaré ball; the ``ceil(ignite_frac N)`` nodes nearest a spark ignite (every other node
    is exactly 0); ``n_steps`` sparse propagation steps along the kNN edges of active nodes only,
    with a hard floor, divisive inhibition and a cap (exact zeros below them); the readout
    ``sum_i alpha_i h_i / sum_i alpha_i`` ``(B, d_hidden)`` and a linear map to ``out_features``.

    Args:
        in_features: token size ``d``; out_features: ``d_out``.
        n_nodes, d_hidden, n_steps, k: nodes ``N``, node state width, propagation steps, kNN
            out-degree.
        options: any other ``RSGNConfig`` field of the model (``OPTIONS``: e.g. ``ignite_frac``,
            ``pool_sigma``, ``positional``, ``eta_affinity``, ``target_activity``); its training
            loop's fields (``epochs``, ``lr``, ...) are not options: the encoder trains in yours.

    Built from the global RNG (``torch.manual_seed`` fixes it); ``forward`` itself is
    deterministic. The model is ``self.core`` (its ``last_stats`` after each forward: active
    fractions per step, measured activity, edges per sample).
    """

    def __init__(self, in_features: int, out_features: int, *, n_nodes: int = 256, d_hidden: int = 64,
                 n_steps: int = 5, k: int = 16, **options: Any):
        super().__init__()
        check_int(in_features, "in_features")
        check_int(out_features, "out_features")
        for key in options:
            if key not in OPTIONS:
                what = "a training-loop field (the encoder trains in your loop)" if key in _LOOP_FIELDS else \
                    "not an RSGN option"
                raise ValueError(f"{key}: {what}; options: {sorted(OPTIONS)}")
        config = RSGNConfig(n_nodes=n_nodes, d_hidden=d_hidden, n_steps=n_steps, k=k, **options)
        self.core = RSGN(config)
        # the model builds its parameters for a data shape: tokens of in_features entries (T free)
        self.core.build(DataSpec((1, in_features), (out_features,)))
        self.in_features, self.out_features = in_features, out_features

    @property
    def config(self) -> RSGNConfig:
        return self.core.config

    @property
    def last_stats(self) -> dict[str, Any]:
        return self.core.last_stats

    def extra_repr(self) -> str:
        cfg = self.config
        return (f"in_features={self.in_features}, out_features={self.out_features}, n_nodes={cfg.n_nodes}, "
                f"d_hidden={cfg.d_hidden}, n_steps={cfg.n_steps}, k={cfg.k}")

    def forward(self, x: torch.Tensor, return_activity: bool = False):
        """``x`` ``(B, T, in_features)`` -> features ``(B, out_features)``; with
        ``return_activity`` also the activity after ignition and after every step, a list of
        ``n_steps + 1`` dense ``(B, n_nodes)`` tensors (exact zeros for inactive nodes)."""
        x = check_input(x, "x", self.core.embed.weight, (self.in_features,), ndim=3)
        readout, trace = self.core.propagate(self.core.tokens(x))  # (B, d_hidden)
        out = self.core.head(readout)
        if not return_activity:
            return out
        return out, [self.core.dense_activity(pair, x.shape[0]) for pair in trace]

    @torch.no_grad()
    def slow_step(self, loss: torch.Tensor, target: float | None = None) -> dict[str, float]:
        """The per-batch slow rules after an optimiser step (``RSGN.slow_step``), on what the latest
        training-mode ``forward`` recorded.

        Args:
            loss: per-sample losses ``(B,)`` of that forward's batch (e.g.
                ``F.cross_entropy(..., reduction="none")``); the reward is the batch mean minus
                each sample's loss.
            target: homeostatic target firing rate (default ``target_activity``).
        Returns:
            ``{"target", "hebbian_update"}``: the target used and the norm of the affinity change.
        """
        record = self.core.take_batch_record()
        if record is None:
            raise ValueError("loss: no training-mode forward since the last slow_step; call the encoder in "
                             "train() mode on the batch first")
        loss = check_per_sample(loss, "loss", self.core.embed.weight, record["n_samples"])
        target = self.config.target_activity if target is None else target
        check_positive(target, "target", allow_zero=True)
        return self.core.slow_step({**record, "loss": loss.detach()}, float(target))

    @torch.no_grad()
    def structure_step(self) -> dict[str, int]:
        """Drift, prune, sprout and rebuild the kNN graph (``RSGN.structure_step``; skipped until
        ``slow_step`` has recorded 16 samples of firing). Returns ``{"pruned", "sprouted"}``."""
        return self.core.structure_step()

    @torch.no_grad()
    def set_temperature(self, value: float) -> None:
        """Set the soft threshold's temperature ``T`` (> 0)."""
        check_positive(value, "value")
        self.core.temperature.fill_(float(value))


__all__ = ["OPTIONS", "RSGNEncoder"]
