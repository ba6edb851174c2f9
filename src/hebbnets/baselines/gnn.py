"""Interaction-network baseline (Battaglia et al. 2016) over bodies, in plain torch.

Layout: per-sample input ``(M, *rest)`` is ``M`` bodies with ``prod(rest)`` features each (for
``nbody``: ``(M, W, 6)``, a window of states per body); the target is ``(M, *out)``, one slice per
body. A body is real if any of its input entries is observed (``x_mask``); padded bodies send
and receive no messages and their outputs are 0. With an input mask the per-body mask is also
appended to the body's features (as the MLP does), so partly observed bodies are allowed.

One interaction step (repeated ``rounds`` times, with residual node updates):

    e_ij = phi_R([h_i, h_j, h_j - h_i])          for every ordered pair of real bodies i != j
    h_i <- h_i + phi_O([h_i, sum_j e_ij])

then a linear readout per body. ``h_i`` starts as a linear embedding of body ``i``'s features.
Sum aggregation (not mean) because physical interactions add up. ``forward_reference`` is a
slow loop over pairs used by the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec
from .._validation import check_int_fields
from ..models import register
from ..training import BackpropModel, TrainConfig


def _mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, d_out))


@dataclass
class GNNConfig(TrainConfig):
    hidden: int = 128  # width of node states, messages and both MLPs
    rounds: int = 1  # interaction steps

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("hidden", "rounds"))


@register("gnn")
class GNN(BackpropModel):
    """Interaction network over the bodies (first input axis) of each sample."""

    Config = GNNConfig

    def _build(self, spec: DataSpec) -> None:
        if spec.is_classification:
            raise ValueError("y: model 'gnn' predicts per-body regression targets, not class labels")
        if len(spec.x_shape) < 2 or len(spec.y_shape) < 1 or spec.y_shape[0] != spec.x_shape[0]:
            raise ValueError(
                f"x: model 'gnn' needs inputs (M, features...) and targets (M, ...) with the same number "
                f"of bodies M, got x {spec.x_shape} and y {spec.y_shape}"
            )
        cfg = self.config
        self.bodies = spec.x_shape[0]
        self.feat = math.prod(spec.x_shape[1:])
        self.out_per_body = math.prod(spec.y_shape[1:])
        d_in = self.feat * (2 if spec.x_masked else 1)
        h = cfg.hidden
        self.embed = nn.Linear(d_in, h)
        self.relation = nn.ModuleList([_mlp(3 * h, h, h) for _ in range(cfg.rounds)])
        self.update = nn.ModuleList([_mlp(2 * h, h, h) for _ in range(cfg.rounds)])
        self.readout = nn.Linear(h, self.out_per_body)

    def _nodes(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Body features ``(N, M, d_in)`` and the body mask ``(N, M)``."""
        n = x.shape[0]
        feats = x.reshape(n, self.bodies, self.feat)  # (N, M, F)
        if not self.spec.x_masked:
            if x_mask is not None:
                raise ValueError("x_mask: this model was trained without an input mask")
            return feats, torch.ones(n, self.bodies, dtype=x.dtype, device=x.device)
        m = torch.ones_like(feats) if x_mask is None else x_mask.reshape(n, self.bodies, self.feat)
        body = m.amax(-1)  # (N, M) a body exists if anything about it is observed
        return torch.cat([feats * m, m], -1), body

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        feats, body = self._nodes(x, x_mask)
        n, m = body.shape
        eye = torch.eye(m, dtype=x.dtype, device=x.device)
        pair = body[:, :, None] * body[:, None, :] * (1 - eye)  # (N, M, M) receiver i, sender j
        h = self.embed(feats)  # (N, M, H)
        for rel, upd in zip(self.relation, self.update):
            hi = h[:, :, None].expand(n, m, m, h.shape[-1])  # (N, M, M, H) receiver
            hj = h[:, None, :].expand(n, m, m, h.shape[-1])  # (N, M, M, H) sender
            e = rel(torch.cat([hi, hj, hj - hi], -1))  # (N, M, M, H)
            agg = (e * pair[..., None]).sum(2)  # (N, M, H)
            h = h + upd(torch.cat([h, agg], -1))
        out = self.readout(h) * body[..., None]  # (N, M, out) padded bodies predict 0
        return out.reshape(n, *self.spec.y_shape)

    @torch.no_grad()
    def forward_reference(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Slow per-sample, per-pair version of ``_forward`` (for tests)."""
        feats, body = self._nodes(x, x_mask)
        outs = []
        for s in range(x.shape[0]):
            real = [i for i in range(self.bodies) if body[s, i] > 0]
            h = {i: self.embed(feats[s, i]) for i in range(self.bodies)}
            for rel, upd in zip(self.relation, self.update):
                new = {}
                for i in range(self.bodies):
                    agg = torch.zeros_like(h[i])
                    if i in real:
                        for j in real:
                            if j != i:
                                agg = agg + rel(torch.cat([h[i], h[j], h[j] - h[i]]))
                    new[i] = h[i] + upd(torch.cat([h[i], agg]))
                h = new
            rows = [self.readout(h[i]) if i in real else feats.new_zeros(self.out_per_body) for i in range(self.bodies)]
            outs.append(torch.stack(rows).reshape(self.spec.y_shape))
        return torch.stack(outs)
