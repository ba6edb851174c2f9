"""Trivial dynamics baselines for windows of body states: closed-form, nothing about force laws.

A dynamics task that these solve well measures how well a window extrapolates, not whether a
model composes force laws; ``nbody`` is built so that they fall well behind the learned models.

Layout (as in ``nbody``): per-sample input ``(M, W, F)``, ``M`` bodies (padded bodies have
``x_mask == 0``), ``W`` past states of ``F`` features whose first ``D`` are the evolving state;
target ``(M, D)``, the next change of that state in the task's units (any per-feature scale).

* ``"window_linear"``: one global linear map (least squares over every real body of the
  training split) from a body's own ``W - 1`` window changes (``(W - 1) D`` numbers, plus a
  bias) to its target.
* ``"system_ridge"``: per system, ridge regression (unpenalised intercept) from a body's state
  ``(x_t[:D], 1)`` to its change ``x_{t+1}[:D] - x_t[:D]``, fitted on the ``M (W - 1)``
  transitions observed in the window and applied to the last state; the raw change is put in
  the target's units by one least-squares factor per feature fitted on the training split.

Both keep the sufficient statistics of their training fit, so ``partial_fit(b)`` after
``fit(a)`` equals ``fit`` on ``a`` and ``b`` together.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_positive
from ..models import register
from ..tasks.nbody_windows import body_mask, check_window_layout, window_changes


@dataclass
class WindowLinearConfig:
    ridge: float = 1e-6  # Tikhonov term (relative to the mean feature energy), for conditioning only


@register("window_linear")
class WindowLinear(Model):
    """Global linear extrapolator from a body's own window changes to its target (module docstring)."""

    Config = WindowLinearConfig

    def _build(self, spec: DataSpec) -> None:
        check_positive(self.config.ridge, "ridge", allow_zero=True)
        d = check_window_layout(spec, "window_linear")
        p = (spec.x_shape[1] - 1) * d + 1
        self.register_buffer("weight", torch.zeros(p, d))  # ((W-1) D + 1, D)
        # sufficient statistics of the least-squares fit, so partial_fit equals a fit on all data
        self.register_buffer("gram", torch.zeros(p, p, dtype=torch.float64))
        self.register_buffer("cross", torch.zeros(p, d, dtype=torch.float64))

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        d = self.weight.shape[1]
        ch = window_changes(x, d).flatten(2)  # (N, M, (W-1) D)
        return torch.cat([ch, torch.ones_like(ch[..., :1])], -1)

    def _fit(self, split: Split) -> None:
        """Accumulate the normal equations of ``split`` and solve (``partial_fit`` adds a split's
        statistics to those already seen: the fit on all data so far)."""
        real = body_mask(split.x, split.x_mask) > 0  # (N, M)
        phi = self._features(split.x)[real].double()  # (rows, P)
        self.gram += phi.T @ phi
        self.cross += phi.T @ split.y[real].double()
        reg = self.config.ridge * self.gram.diagonal().mean() * torch.eye(self.gram.shape[0], dtype=torch.float64, device=self.gram.device)
        self.weight.copy_(torch.linalg.solve(self.gram + reg, self.cross).to(self.weight))

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return (self._features(x) @ self.weight) * body_mask(x, x_mask)[..., None]


@dataclass
class SystemRidgeConfig:
    alpha: float = 0.01  # ridge penalty of each system's fit (state features are O(1)); chosen on nbody validation data


def system_ridge_changes(x: torch.Tensor, body: torch.Tensor, d: int, alpha: float) -> torch.Tensor:
    """Per system, ridge fit of ``x_{t+1}[:D] - x_t[:D]`` on ``(x_t[:D], 1)`` over the window's
    real transitions, applied to the last state. ``x`` ``(N, M, W, F)``, ``body`` ``(N, M)``;
    returns ``(N, M, D)`` raw changes (float64)."""
    x = x.double()
    n, m, w, _ = x.shape
    feats = x[:, :, :-1, :d].reshape(n, m * (w - 1), d)  # (N, R, D)
    target = window_changes(x, d).reshape(n, m * (w - 1), d)  # (N, R, D)
    wt = body.double()[:, :, None].expand(n, m, w - 1).reshape(n, m * (w - 1), 1)  # (N, R, 1)
    count = wt.sum(1, keepdim=True).clamp_min(1)
    f_mean, t_mean = (feats * wt).sum(1, keepdim=True) / count, (target * wt).sum(1, keepdim=True) / count
    fc, tc = (feats - f_mean) * wt, (target - t_mean) * wt  # centred: the intercept is not penalised
    gram = fc.transpose(1, 2) @ fc + alpha * torch.eye(d, dtype=x.dtype, device=x.device)  # (N, D, D)
    coef = torch.linalg.solve(gram, fc.transpose(1, 2) @ tc)  # (N, D, D)
    last = x[:, :, -1, :d]  # (N, M, D)
    return ((last - f_mean) @ coef + t_mean) * body.double()[..., None]


@register("system_ridge")
class SystemRidge(Model):
    """Per-system ridge regression of the state change on the state (module docstring)."""

    Config = SystemRidgeConfig

    def _build(self, spec: DataSpec) -> None:
        check_positive(self.config.alpha, "alpha")
        d = check_window_layout(spec, "system_ridge")
        self.register_buffer("units", torch.ones(d))  # (D,) raw change -> target units
        # sums behind the per-feature factor, so partial_fit equals a fit on all data
        self.register_buffer("sum_py", torch.zeros(d, dtype=torch.float64))
        self.register_buffer("sum_pp", torch.zeros(d, dtype=torch.float64))

    def _fit(self, split: Split) -> None:
        body = body_mask(split.x, split.x_mask)
        raw = system_ridge_changes(split.x, body, self.units.shape[0], self.config.alpha)  # (N, M, D)
        real = body > 0
        p, y = raw[real], split.y[real].double()  # (rows, D)
        self.sum_py += (p * y).sum(0)
        self.sum_pp += (p * p).sum(0)
        self.units.copy_((self.sum_py / self.sum_pp.clamp_min(1e-300)).to(self.units))

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        raw = system_ridge_changes(x, body_mask(x, x_mask), self.units.shape[0], self.config.alpha)
        return (raw * self.units.double()).to(x.dtype)


__all__ = ["SystemRidge", "WindowLinear", "system_ridge_changes"]
