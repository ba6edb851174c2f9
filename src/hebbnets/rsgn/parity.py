"""``"rsgn_parity"``: the author's notebook RSGN, reproduced as it is (docs/rsgn.md §2-3),
flaws included, so its numbers can be compared with the paper's. Everything here is dense.

Per forward pass (``N`` nodes, ``d`` = 3, ``d_h`` = 128):

* ``W[i, j] = sigmoid(u_i . v_j) exp(-d_H(p_i, p_j) / tau) softplus(l_i - l_j + 1)``, ``W[i, i] = 0``
  (the code's level sign; distance with the code's eps 1e-5 in the denominator and clamp at
  ``1 + 1e-5``); positions are rescaled to norm 0.95 only when their norm is >= 1 (the code's
  projection);
* ignition ``alpha0_i = exp(-min_t |s_t - p_i|^2 / (2 0.4^2))`` (Euclidean), sparks
  ``s_t = tanh(MLP(x_t)) * input_scale`` rescaled to 0.9 when outside the ball;
* ``h0_i = alpha0_i (W_in mean_t x_t + b_in)``;
* ``S`` steps: ``msg_i = sum_j W[j, i] alpha_j [alpha_j > 0.01] h_j``, ``u = W_h msg + b_h``,
  ``alpha' = sigmoid((alpha + 0.1 |u| - theta) / T)``, ``h = LN(u + h) alpha'``, then the code's
  "inhibition" ``alpha_i <- clip(alpha_i |N_i| / (sum_{j in N_i} alpha_j + 1e-6), 0, 1)`` over the
  Euclidean radius-0.3 neighbourhood (which can only raise activity, see the reference §2.8);
* readout ``o = sum_i alpha_i h_i`` (unnormalised), linear head.

The notebook's ``HebbianLearner`` runs after every optimiser step (``hebbian=True``; a
``SlowRules`` training callback):
``u <- u + eta_a decay ((eta_a mean(alpha) mean(alpha)^T R) * sigmoid'(u v^T)) v`` with
``R = -loss`` (``reward="negloss"``, the author's sign) or the baseline-subtracted reward,
``theta <- clip(theta + eta_theta (mean(alpha) - 0.1), 0.01, 0.99)``, and every 10 epochs
nodes with mean activity < 0.01 get position noise (a no-op in practice).

Optimisation is the notebook's ``train_model`` through the shared trainer: AdamW (lr 1e-3, weight
decay 1e-4 on every parameter), cosine schedule over the epochs stepped per epoch, gradient norm
clipped at 1.0, 50 epochs, the final model kept (``restore="last"``); ``val_fraction = 0`` trains
on the author's full 80 % and the task's ``tests["id"]`` is the author's validation set. The
author's reported number (the best accuracy on that set over the epochs) is read from a learning
curve recorded by an epoch callback (the ``fit`` protocol's ``curve`` option in
``hebbnets.experiments``), never used to pick weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .._model import DataSpec
from .._validation import check_int_fields, check_positive
from ..training import TrainConfig
from ._slow import SlowRuleModel
from ..models import register


@dataclass
class RSGNParityConfig(TrainConfig):
    # the notebook's optimisation settings (see module docstring)
    weight_decay: float = 1e-4
    epochs: int = 50
    val_fraction: float = 0.0
    patience: int = 50
    optimizer: str = "adamw"
    schedule: str = "cosine"
    grad_clip: float = 1.0
    restore: str = "last"
    # the notebook's model
    n_nodes: int = 256
    d_space: int = 3
    d_hidden: int = 128
    n_steps: int = 5
    rank: int = 32  # affinity u v^T rank
    tau: float = 1.0
    temperature: float = 1.0
    inhibition_radius: float = 0.3
    sigma_ign: float = 0.4
    # the notebook's HebbianLearner
    hebbian: bool = True
    eta_affinity: float = 0.002
    eta_threshold: float = 1e-3
    decay: float = 0.995
    sparsity_target: float = 0.1
    reward: str = "negloss"  # "negloss": R = -loss (author); "baseline": EMA(loss) - loss

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("n_nodes", "d_space", "d_hidden", "n_steps", "rank"))
        for name in ("tau", "temperature", "inhibition_radius", "sigma_ign"):
            check_positive(getattr(self, name), name)
        for name in ("eta_affinity", "eta_threshold", "decay", "sparsity_target"):
            check_positive(getattr(self, name), name, allow_zero=True)
        if self.reward not in ("negloss", "baseline"):
            raise ValueError(f"reward: expected 'negloss' or 'baseline', got {self.reward!r}")


def code_project(x: torch.Tensor, max_norm: float) -> torch.Tensor:
    """The author's ``project_to_poincare``: rows with norm >= 1 are rescaled to ``max_norm``;
    rows with norm in ``[max_norm, 1)`` are left alone (kept for parity)."""
    n = x.norm(dim=-1, keepdim=True)
    return torch.where(n >= 1.0, x / n.clamp_min(1e-12) * max_norm, x)


def code_poincare_dist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The author's ``poincare_distance`` between ``x (M, d)`` and ``y (K, d)`` -> ``(M, K)``."""
    sq = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)  # (M, K)
    xx, yy = (x * x).sum(-1), (y * y).sum(-1)
    arg = 1.0 + 2.0 * sq / ((1.0 - xx)[:, None] * (1.0 - yy)[None, :] + 1e-5)
    return torch.acosh(arg.clamp_min(1.0 + 1e-5))


def dense_messages(W: torch.Tensor, send: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``msg[b, i] = sum_j W[j, i] send[b, j] h[b, j]`` for ``W (N, N)``, ``send (B, N)``,
    ``h (B, N, d_h)`` -> ``(B, N, d_h)``: the notebook's ``einsum("ji,bj,bjd->bid")`` as one
    broadcast matmul, which is faster on CPU (forward and backward; see
    ``benchmarks/rsgn_parity_speed.py``) and equal up to float rounding (tested)."""
    return torch.matmul(W.T, send[..., None] * h)  # (N, N) @ (B, N, d_h)


@register("rsgn_parity")
class RSGNParity(SlowRuleModel):
    """The author's dense RSGN (see module docstring). Inputs ``(N, T, D)``."""

    Config = RSGNParityConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if len(spec.x_shape) != 2 or spec.x_masked:
            raise ValueError(f"x: rsgn_parity takes unmasked (N, T, D) inputs, got per-sample shape {spec.x_shape}")
        if not spec.is_classification:
            raise ValueError("split: rsgn_parity is a classifier; it needs integer class targets y (N,)")
        n, d, dh, din = cfg.n_nodes, cfg.d_space, cfg.d_hidden, spec.x_shape[1]
        self.positions = nn.Parameter(0.3 * torch.randn(n, d))  # (N, d)
        self.thresholds = nn.Parameter(torch.full((n,), 0.5))  # (N,)
        self.levels = nn.Parameter(torch.linspace(0.0, 1.0, n))  # (N,)
        self.affinity_u = nn.Parameter(0.01 * torch.randn(n, cfg.rank))  # (N, r)
        self.affinity_v = nn.Parameter(0.01 * torch.randn(n, cfg.rank))  # (N, r)
        self.input_embed = nn.Sequential(nn.Linear(din, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.input_scale = nn.Parameter(torch.tensor(0.7))
        self.transform = nn.Linear(dh, dh)  # W_h
        self.norm = nn.LayerNorm(dh)
        self.init_state = nn.Linear(din, dh)
        self.head = nn.Linear(dh, spec.n_classes)
        self._history: list[torch.Tensor] = []
        self._loss_ema: float | None = None
        self._steps_per_epoch = 1
        self.last_stats: dict[str, Any] = {}
        self.stats: dict[str, list[float]] = {}

    def weights(self, pos: torch.Tensor) -> torch.Tensor:
        """Dense ``W (N, N)``, ``W[src, dst]``, diagonal 0."""
        cfg = self.config
        aff = torch.sigmoid(self.affinity_u @ self.affinity_v.T)  # (N, N)
        dist = code_poincare_dist(pos, pos)  # (N, N)
        level = F.softplus(self.levels[:, None] - self.levels[None, :] + 1.0)  # (N, N)
        W = aff * torch.exp(-dist / cfg.tau) * level
        return W * (1.0 - torch.eye(W.shape[0], dtype=W.dtype, device=W.device))

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError("x_mask: rsgn_parity takes no input mask")
        cfg = self.config
        pos = code_project(self.positions, 0.95)  # (N, d)
        W = self.weights(pos)  # (N, N)
        sparks = torch.tanh(self.input_embed(x)) * self.input_scale  # (B, T, d)
        sparks = code_project(sparks, 0.9)
        sq = ((sparks[:, :, None, :] - pos[None, None]) ** 2).sum(-1)  # (B, T, N) Euclidean
        alpha = torch.exp(-sq.min(dim=1).values / (2 * cfg.sigma_ign**2))  # (B, N)
        h = alpha[..., None] * self.init_state(x.mean(1))[:, None, :]  # (B, N, d_h)
        pd = pos.detach()
        neigh = (torch.cdist(pd, pd) < cfg.inhibition_radius).to(W.dtype)  # (N, N), includes i
        trace = [alpha]
        for _ in range(cfg.n_steps):
            send = alpha * (alpha > 0.01)  # (B, N)
            msg = dense_messages(W, send, h)  # (B, N, d_h)
            u = self.transform(msg)
            alpha_new = torch.sigmoid((alpha + 0.1 * u.norm(dim=-1) - self.thresholds) / cfg.temperature)
            h = self.norm(u + h) * alpha_new[..., None]
            alpha = (alpha_new * neigh.sum(1) / (alpha_new @ neigh.T + 1e-6)).clamp(0.0, 1.0)
            trace.append(alpha)
        out = (alpha[..., None] * h).sum(1)  # (B, d_h), unnormalised as in the code
        self.last_stats = {
            "active_fraction": [float((a > 0.01).float().mean()) for a in trace],  # the code's measure
            "exact_zero_fraction": [float((a == 0).float().mean()) for a in trace],
            "edges_per_sample": float(cfg.n_steps * W.shape[0] * (W.shape[0] - 1)),
        }
        if self.training:  # what the slow rules of this batch need (SlowRules, after the optimiser step)
            self._batch = {"mean": alpha.detach().mean(0), "loss": None, "snapshot": self.affinity_u.detach().clone()}
            self.stats.setdefault("active_fraction", []).append(self.last_stats["active_fraction"][-1])
        return self.head(out)

    def _slow_fit_start(self, train, val) -> None:
        self._steps_per_epoch = math.ceil(len(train) / self.config.batch_size)
        self.stats = {}

    def _slow_step(self, step: int, record: dict[str, Any]) -> None:
        """The notebook's order: ``HebbianLearner.update`` after every optimiser step, and every
        10 epochs ``prune_and_sprout``."""
        if not self.config.hebbian:
            return
        self.stats.setdefault("gradient_update", []).append(
            float((self.affinity_u.detach() - record["snapshot"]).norm()))
        self.hebbian_update(record["mean"], float(record["loss"].mean()))
        if (step + 1) % (10 * self._steps_per_epoch) == 0:
            self.prune_and_sprout()

    @torch.no_grad()
    def hebbian_update(self, mean_alpha: torch.Tensor, loss: float) -> float:
        """The notebook's ``HebbianLearner.update``; returns the norm of the change of ``u``."""
        cfg = self.config
        if cfg.reward == "negloss":
            reward = -loss
        else:
            base = loss if self._loss_ema is None else self._loss_ema
            reward, self._loss_ema = base - loss, 0.9 * base + 0.1 * loss
        delta = cfg.eta_affinity * torch.outer(mean_alpha, mean_alpha) * reward  # (N, N)
        sig = torch.sigmoid(self.affinity_u @ self.affinity_v.T)
        step = cfg.eta_affinity * cfg.decay * ((delta * sig * (1 - sig)) @ self.affinity_v)  # (N, r)
        self.affinity_u.add_(step)
        self.thresholds.copy_((self.thresholds + cfg.eta_threshold * (mean_alpha - cfg.sparsity_target)).clamp(0.01, 0.99))
        self._history.append(mean_alpha)
        del self._history[:-100]
        size = float(step.norm())
        self.stats.setdefault("hebbian_update", []).append(size)
        self.stats.setdefault("reward", []).append(reward)
        return size

    @torch.no_grad()
    def prune_and_sprout(self) -> int:
        """The notebook's version: nodes whose mean activity over the history is < 0.01 get
        N(0, 0.05^2) position noise; returns how many (always 0 in the reported setups)."""
        if len(self._history) < 10:
            return 0
        under = torch.stack(self._history).mean(0) < 0.01  # (N,)
        if under.any():
            noise = 0.05 * torch.randn_like(self.positions)
            self.positions.copy_(code_project(torch.where(under[:, None], self.positions + noise, self.positions), 0.95))
        return int(under.sum())


__all__ = ["RSGNParity", "RSGNParityConfig", "code_poincare_dist", "code_project", "dense_messages"]
