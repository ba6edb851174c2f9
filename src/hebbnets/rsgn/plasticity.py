"""RSGN's slow local rules as plain functions on tensors (the model calls them between
optimiser steps, from its training callback; see ``hebbnets.rsgn.model``).

* ``three_factor``: the reward-modulated Hebbian rule with a per-sample reward,
  ``da_e = eta mean_b[(mean_b' L_b' - L_b) c_eb]``;
* ``homeostasis``: ``theta_i += eta (r_i - rho)`` on each node's measured firing rate;
* ``target_at``: the homeostatic target ``rho``, lowered geometrically over the first epochs;
* ``FiringHistory``: which nodes fired in each of the last ``H`` samples, and the activity
  correlation between node pairs that pruning's partner rule, sprouting, reads.

Why the three-factor form carries credit: with ``c_eb`` the co-activation of edge ``e`` in sample
``b`` and ``L_b`` that sample's loss, ``mean_b[(Lbar - L_b) c_eb] = -Cov_b(L, c_e)`` (the batch
mean ``Lbar`` is the baseline; any constant baseline gives the same update after centring ``c``,
``mean_b[(baseline - L_b)(c_eb - cbar_e)]``). An edge whose use goes with low loss grows, one whose
use goes with high loss shrinks, and an edge used equally in good and bad samples does not move,
whatever the sign of the loss. A batch-level reward times a batch-mean co-activation (the
author's form) has no such contrast: it tracks how much an edge is used.
"""
from __future__ import annotations

import math

import torch


def three_factor(loss: torch.Tensor, sample: torch.Tensor, edge: torch.Tensor, coact: torch.Tensor,
                 n_edges: int) -> torch.Tensor:
    """The Hebbian update direction ``(n_edges,)``: ``mean_b[(mean(loss) - loss_b) c_eb]``.

    Args:
        loss: per-sample losses ``(B,)``.
        sample, edge, coact: the non-zero co-activations as triples ``(M,)`` each: sample index,
            flat edge id and ``c_eb`` (repeated ``(b, e)`` pairs add up).
        n_edges: number of edge slots ``E``.
    """
    if loss.ndim != 1 or loss.numel() == 0:
        raise ValueError(f"loss: expected per-sample losses (B,), got shape {tuple(loss.shape)}")
    if not (sample.shape == edge.shape == coact.shape):
        raise ValueError("coact: sample, edge and coact must have the same shape (M,)")
    reward = (loss.mean() - loss) / loss.numel()  # (B,) positive: better than the batch
    return torch.zeros(n_edges, dtype=coact.dtype, device=coact.device).index_add_(0, edge, coact * reward[sample].to(coact.dtype))


def homeostasis(theta: torch.Tensor, rate: torch.Tensor, target: float, eta: float,
                bounds: tuple[float, float] = (0.0, 10.0)) -> torch.Tensor:
    """In place: ``theta_i += eta (rate_i - target)``, clipped to ``bounds``; ``theta, rate (N,)``.
    ``rate_i`` is node ``i``'s measured firing rate before any cap (fraction of samples x steps
    in which it was active)."""
    theta.add_(eta * (rate.to(theta.dtype) - target)).clamp_(*bounds)
    return theta


def target_at(step: int, steps_per_epoch: int, start: float, end: float, epochs: int) -> float:
    """The homeostatic target at optimiser step ``step``: geometric from ``start`` to ``end`` over
    the first ``epochs`` epochs, then ``end`` (``epochs = 0`` or ``start <= end``: always ``end``)."""
    if epochs <= 0 or start <= end:
        return end
    frac = min(1.0, step / (epochs * max(1, steps_per_epoch)))
    return start * math.exp(frac * math.log(end / start))


class FiringHistory:
    """Ring buffer of the last ``size`` samples' firing: ``fired[h, i]`` = node ``i`` was active
    (before the cap) at some propagation step of sample ``h``. ``(size, N)`` bools."""

    def __init__(self, size: int, n_nodes: int, device: torch.device | str | None = None):
        self.fired = torch.zeros(size, n_nodes, dtype=torch.bool, device=device)
        self.count = 0  # samples written so far
        self._next = 0

    def __len__(self) -> int:
        return min(self.count, self.fired.shape[0])

    def add(self, sample: torch.Tensor, node: torch.Tensor, n_samples: int) -> None:
        """Append ``n_samples`` samples whose firing is given as pairs ``(sample, node)``."""
        if self.fired.device != node.device:  # the history follows the model (it is not a buffer)
            self.fired = self.fired.to(node.device)
        size = self.fired.shape[0]
        n_samples = min(n_samples, size)
        keep = sample < n_samples
        rows = (self._next + torch.arange(n_samples, device=self.fired.device)) % size
        self.fired[rows] = False
        self.fired[rows[sample[keep]], node[keep]] = True
        self._next = int((self._next + n_samples) % size)
        self.count += n_samples

    def correlation(self, i: torch.Tensor, j: torch.Tensor, chunk: int = 2**24) -> torch.Tensor:
        """Pearson correlation over the stored samples between the firing of nodes ``i`` and
        ``j`` (same shape, any); 0 where a node never (or always) fired."""
        x = self.fired[: len(self)]
        h = max(1, x.shape[0])
        mean = x.float().mean(0)  # (N,)
        std = (mean * (1 - mean)).sqrt()
        fi, fj = i.reshape(-1), j.reshape(-1)
        out = torch.empty(fi.shape[0], device=self.fired.device)
        step = max(1, chunk // h)
        for s in range(0, fi.shape[0], step):
            a, b = fi[s : s + step], fj[s : s + step]
            joint = (x[:, a] & x[:, b]).float().mean(0)
            cov = joint - mean[a] * mean[b]
            out[s : s + step] = cov / (std[a] * std[b]).clamp_min(1e-12) * ((std[a] > 0) & (std[b] > 0))
        return out.reshape(i.shape)


__all__ = ["FiringHistory", "homeostasis", "target_at", "three_factor"]
