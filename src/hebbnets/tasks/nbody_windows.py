"""Helpers for models of windows of body states (the ``nbody`` layout), shared by every model
family that reads them: the layout check, the body mask, the window's changes, and the learned
per-body content encoder of ``vn_applied_set`` and its MLP counterpart ``set_mlp``. They live with
the task because they encode its layout, so the VN and the baselines share them without importing
each other.

Layout: per-sample input ``(M, W, F)``, ``M`` bodies (padded bodies have ``x_mask == 0``), ``W``
past states of ``F`` features whose first ``D`` are the evolving state (positions first); target
``(M, D)``, the next change of that state in the task's units.

The content encoder, for body ``i`` at step ``t`` (``p`` the positions, ``q`` the other features:
velocities, mass, charge)::

    z_it = phi_self(q_it) + sum_{j != i, real} phi_pair([p_jt - p_it, |p_jt - p_it|, q_it, q_jt])

then standardised per feature over the real bodies (running statistics at evaluation, like a
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
from ..training import Callback


def check_window_layout(spec: DataSpec, name: str) -> int:
    """Return ``D`` for inputs ``(M, W, F)`` and targets ``(M, D)`` with ``D <= F``, ``W >= 2``."""
    ok = (len(spec.x_shape) == 3 and len(spec.y_shape) == 2 and spec.x_shape[0] == spec.y_shape[0]
          and spec.x_shape[1] >= 2 and spec.y_shape[1] <= spec.x_shape[2] and not spec.is_classification)
    if not ok:
        raise ValueError(
            f"x: model {name!r} needs inputs (M, W >= 2, F) and targets (M, D <= F) with the same number of "
            f"bodies M, got x {spec.x_shape} and y {spec.y_shape}"
        )
    return spec.y_shape[1]


def body_mask(x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
    """``(N, M)`` 1 for bodies with any observed input entry (all bodies without a mask)."""
    if x_mask is None:
        return x.new_ones(x.shape[:2])
    return x_mask.reshape(*x.shape[:2], -1).amax(-1)


def window_changes(x: torch.Tensor, d: int) -> torch.Tensor:
    """``(N, M, W, F)`` -> ``(N, M, W - 1, D)`` changes of the first ``D`` features."""
    return x[..., 1:, :d] - x[..., :-1, :d]



def window_rows(z: torch.Tensor, x: torch.Tensor, body: torch.Tensor, change_std: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A system's observed transitions as rows (bodies x steps, body-major), the rows that infer a
    system's code: contents ``(B, M (W-1), n)`` of every step but the last, the change that followed
    each, divided by ``change_std`` ``(D,)``, ``(B, M (W-1), D)``, and the row mask ``(B, M (W-1))``
    (padded bodies 0). ``z`` ``(B, M, W, n)`` contents, ``x`` ``(B, M, W, F)``, ``body`` ``(B, M)``."""
    B, M, W, _ = x.shape
    d = change_std.shape[0]
    zw = z[:, :, :-1].reshape(B, M * (W - 1), -1)
    tw = (window_changes(x, d) / change_std).reshape(B, M * (W - 1), d)
    mw = body[:, :, None].expand(B, M, W - 1).reshape(B, -1)
    return zw, tw, mw


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


def window_summary(phi_row: nn.Module, z: torch.Tensor, change: torch.Tensor, body: torch.Tensor) -> torch.Tensor:
    """A system's window as one vector, as a conditional neural process summarises its context:
    the mean over real window rows of ``phi_row([z_it, change_it])``. ``z`` ``(B, M, W, n)``
    contents (the last step is left out), ``change`` ``(B, M, W-1, D)``, ``body`` ``(B, M)`` ->
    ``(B, summary)``."""
    rows = phi_row(torch.cat([z[:, :, :-1], change], -1))  # (B, M, W-1, summary)
    w = body[:, :, None, None]
    return (rows * w).sum((1, 2)) / (w.sum((1, 2)) * rows.shape[2]).clamp_min(1)


def mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    """Two hidden GELU layers, ``(..., d_in) -> (..., d_out)``: every learned map of the encoder and of ``set_mlp``."""
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
        pair = body[:, :, None] * body[:, None, :] * (1 - torch.eye(M, dtype=x.dtype, device=x.device))  # (B, M, M)
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


__all__ = ["BodyEncoder", "Standardise", "body_mask", "body_set_encoder", "check_window_layout", "mlp", "standardisers",
           "window_changes", "window_rows", "window_summary"]
