"""Per-body, per-time-step content features of a system of bodies, learned (shared by
``vn_applied_set`` and its MLP counterpart ``set_mlp``).

Input ``x`` ``(B, M, W, F)``: ``M`` bodies (``body`` ``(B, M)`` marks the real ones), ``W`` time
steps, ``F`` features whose first ``position_dims`` are positions. For body ``i`` at step ``t``::

    z_it = phi_self(q_it) + sum_{j != i, real} phi_pair([p_jt - p_it, |p_jt - p_it|, q_it, q_jt])

with ``p`` the positions and ``q`` the other features (velocities, mass, charge), then
standardised per feature over the real bodies (running statistics at evaluation, like a
batch norm without affine parameters, so the features cannot grow to escape an l1 penalty).
What this builds in (hand-engineered): positions enter only as differences (translation
invariance), interactions are summed over the other bodies (as in the interaction network
baseline), and each step's features depend on that step's state only.
"""
from __future__ import annotations

import torch
from torch import nn

from .._model import DataSpec
from .._split import Split
from ..baselines.window_extrapolators import body_mask, check_window_layout, window_changes
from ..training import Callback


def body_set_encoder(spec: DataSpec, name: str, content: int, hidden: int, position_dims: int) -> tuple[int, "BodyEncoder"]:
    """``(D, encoder)`` for a model named ``name`` on body-window data (layout checked)."""
    d = check_window_layout(spec, name)
    features = spec.x_shape[2]
    if position_dims >= features:
        raise ValueError(f"position_dims: {position_dims} leaves no other feature of {features}")
    return d, BodyEncoder(features, content, hidden, position_dims)


def standardisers(split: Split, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-feature std ``(D,)`` of the window changes and of the targets over the real bodies."""
    body = body_mask(split.x, split.x_mask) > 0  # (N, M)
    ch = window_changes(split.x, d)[body]  # (bodies, W-1, D)
    return ch.reshape(-1, d).std(0).clamp_min(1e-12), split.y[body].std(0).clamp_min(1e-12)


class Standardise(Callback):
    """At the start of the first fit, set the model's ``change_std`` (and ``target_std`` if it has
    one) from the training part of the split (validation excluded); ``partial_fit`` keeps them."""

    def on_fit_start(self, model, train, val):
        if bool(model.standardised):
            return
        cs, ts = standardisers(train, model.d)
        model.change_std.copy_(cs)
        if hasattr(model, "target_std"):
            model.target_std.copy_(ts)
        model.standardised.fill_(True)


def mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, d_out))


class BodyEncoder(nn.Module):
    """``(B, M, W, F)`` states and ``(B, M)`` body mask -> ``(B, M, W, out)`` content features."""

    def __init__(self, n_features: int, out: int, hidden: int, position_dims: int = 2, momentum: float = 0.1):
        super().__init__()
        if not 0 < position_dims < n_features:
            raise ValueError(f"position_dims: need 0 < position_dims < {n_features} features, got {position_dims}")
        self.position_dims, self.momentum = position_dims, momentum
        rest = n_features - position_dims
        self.phi_self = mlp(rest, hidden, out)
        self.phi_pair = mlp(position_dims + 1 + 2 * rest, hidden, out)
        self.register_buffer("running_mean", torch.zeros(out))
        self.register_buffer("running_var", torch.ones(out))

    def forward(self, x: torch.Tensor, body: torch.Tensor) -> torch.Tensor:
        B, M, W, _ = x.shape
        p, q = x[..., : self.position_dims], x[..., self.position_dims:]  # (B, M, W, P), (B, M, W, Q)
        rel = p[:, None] - p[:, :, None]  # (B, M, M, W, P): p_j - p_i at [i, j]
        dist = rel.norm(dim=-1, keepdim=True)
        qi = q[:, :, None].expand(B, M, M, W, q.shape[-1])
        qj = q[:, None, :].expand(B, M, M, W, q.shape[-1])
        pair = body[:, :, None] * body[:, None, :] * (1 - torch.eye(M, dtype=x.dtype))  # (B, M, M)
        messages = self.phi_pair(torch.cat([rel, dist, qi, qj], -1)) * pair[..., None, None]  # (B, M, M, W, out)
        z = self.phi_self(q) + messages.sum(2)  # (B, M, W, out)
        return self._standardise(z, body)

    def _standardise(self, z: torch.Tensor, body: torch.Tensor) -> torch.Tensor:
        w = body[:, :, None, None].expand(*z.shape[:3], 1)  # (B, M, W, 1)
        if self.training:
            count = w.sum().clamp_min(1)
            mean = (z * w).sum((0, 1, 2)) / count
            var = (((z - mean) ** 2) * w).sum((0, 1, 2)) / count
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(var.detach(), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (z - mean) / (var + 1e-5).sqrt() * w
