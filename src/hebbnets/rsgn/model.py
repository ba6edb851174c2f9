"""The sparse Resonant Sparse Geometry Network (registered ``"rsgn"``).

Read top to bottom: config, graph (edge list), inhibition and the cap, one propagation step
(sparse gather/scatter and its dense reference), the model (ignition, propagation, readout),
the slow rules.

Nodes ``i = 1..N`` carry a position ``p_i`` in the Poincaré ball (a ``geoopt.ManifoldParameter``),
a threshold ``theta_i`` and a level ``l_i``. Connectivity is an edge list: every node has ``k``
out-edges to its ``k`` nearest nodes by geodesic distance (exact, from a KD-tree, see
``geometry.knn_kdtree``), rebuilt on the slow timescale (never per sample), stored as
``nbr (N, k)`` (destinations), ``alive (N, k)`` (pruned edges are dead) and a free per-edge
affinity ``a (N, k)``. Structural plasticity prunes weak edges and sprouts edges to correlated
2-hop nodes into pruned slots (``sprouted (N, k)``, with the pruned kNN edge each one
``displaced``), so kNN rebuilds neither revive pruned edges nor drop sprouted ones. Edge weights
exist on edges only:

    w_e = sigmoid(a_e) * exp(-d_H(p_src, p_dst) / tau) * softplus(s (l_dst - l_src) + 1)

(``s = +1``: the paper's direction; ``s = -1``: the author's code). The level is the node's
hyperbolic radius ``l_i = d_H(0, p_i)`` (``levels="radius"``: nodes near the origin are
"abstract", near the boundary "specific", as the paper describes), or the author's frozen
``linspace(0, 1, N)`` by node index (``levels="index"``). A forward pass:

1. ignition: tokens -> spark points ``expmap0(MLP(x_t))``; node ``i`` gets
   ``g_i = max_t exp(-d_H(s_t, p_i)^2 / (2 sigma^2))`` and only the ``ceil(ignite_frac N)``
   largest survive (all other nodes are exactly 0). The nearest spark of every node is found
   exactly either from the ``T x N`` distances (``ignition="dense"``) or from a KD-tree over
   the sparks (``"kdtree"``, ``O(N log T)`` per sample instead of ``O(T N)``); ignition reads it
   only for the nodes that can matter (``ignition_search``: the ignited ones and those near the
   floor's distance, the rest settled by bounds; same ignition, tested); gradients flow
   through the distances of the ignited nodes only. An ignited node starts from the embedding of
   the token that ignited it (``token_injection``), or with ``pool_sigma > 0`` from its receptive
   field, the average of all token embeddings weighted by
   ``softmax_t(-d_H(s_t, p_i)^2 / (2 pool_sigma^2))`` (``O(B n_ign T d_h)``).
2. ``n_steps`` propagation steps; only active nodes send, along their alive out-edges:
   ``z_i = sum_{e: j->i} w_e alpha_j + c alpha_i``, ``m_i = sum_{e: j->i} w_e alpha_j h_j``,
   ``g_i = sigmoid((z_i - theta_i) / T)`` with ``T`` annealed, a hard floor
   ``alpha_i = g_i [g_i >= floor]`` (exact zeros; at the default ``floor = 1/2`` a node fires iff
   ``z_i >= theta_i``), states ``h_i = LN(W_h m_i + b + h_i)``;
   nodes that are neither active nor receive a message stay exactly 0.
3. local inhibition (divisive normalisation over the k-neighbourhood, can only lower):
   ``alpha_i <- alpha_i / (1 + beta mean_{j in kNN(i)} alpha_j)`` and the floor again. The
   activity *here* is the model's measured activity ("pre-cap"). Then a per-sample safety cap
   (k-WTA, ``max_active_frac``, set well above the homeostatic target) and ``h_i <- h_i alpha_i``.
4. readout ``o = sum_i alpha_i h_i / (sum_i alpha_i + eps)`` over the active nodes after the last
   step (``readout="last"``) or after ignition and every step (``"all"``), and a linear head.

The sparse path costs ``O(B S |A| k (d + d_h))`` for ``|A|`` active nodes plus the ignition
(``O(B N log T)`` with the tree); no ``(B, N)`` tensor is formed in propagation.
``step_dense`` is the obviously-correct ``N x N`` reference, tested equal on the same graph.

Slow rules (``hebbnets.rsgn.plasticity``), run by a training callback after every optimiser
step, never inside ``forward``:

* three-factor Hebbian affinity rule ``da_e = eta_a mean_b[(Lbar - L_b) c_eb]`` with per-sample
  losses ``L_b`` and co-activation ``c_eb = sum_s alpha_src^(s-1) alpha_dst^(s)`` over the steps
  in which ``e`` carried a message;
* homeostasis on each node's firing rate before the cap, ``theta_i += eta_theta (r_i - rho)``,
  with the target ``rho`` lowered from ``target_start`` to ``target_activity`` over
  ``target_epochs`` epochs; only epochs whose validation activity (pre-cap) is at most
  ``max_activity`` may be restored as the fit's result;
* once per epoch (``structure_every``): Riemannian drift of each node towards correlated
  neighbours, pruning of edges with ``sigmoid(a_e) < prune_threshold``, sprouting into pruned
  slots, and an exact kNN rebuild; the temperature ``T`` anneals at each epoch's end.

The paper's mechanisms and what the default model uses: one table, generated from
``RSGNConfig``'s defaults by the rsgn report (``reports/rsgn_sparse.md``; built by
``experiments/reporting/narration_rsgn.py``), so it cannot drift from the code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import geoopt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._model import DataSpec
from .._validation import check_int_fields, check_positive
from ..models import register
from ..training import TrainConfig
from . import geometry as G
from . import plasticity as P
from ._slow import SlowRuleModel

#: ``ignition="auto"`` uses the KD-tree from this many tokens on (below, the T x N matmul wins)
KDTREE_MIN_TOKENS = 256
#: a sparse step finds its rows through a flat ``B N`` buffer (O(B N) memory, no sort) up to this
#: many (sample, node) pairs, and by sorting and binary search (O(R log R), no ``B N`` tensor) above.
#: The buffer costs 8 bytes a pair (its int64 row map), 256 MiB at this limit: small beside the
#: step's own tensors at such sizes, while sorting millions of receivers per step is not
#: (8 x 1,048,576 pairs, the million-node measure, stays under it)
DENSE_INDEX_MAX = 2**25
#: a sparse step computes new states (the ``(messages, d_h)`` gather, ``W_h``, the norm) only for
#: the candidates that stay active; False: for every candidate, then drops the others (the
#: reference; equal, tested). With the surrogate every candidate's state is needed either way.
KEPT_STATES_ONLY = True
#: a sparse step weighs the out-edges of each sending node once per step, not once per sample
#: it is active in; False: per (sample, edge) pair (the reference; equal, tested)
SENDER_WEIGHTS_ONCE = True
#: messages per chunk of a sparse step's fused gather-scale-scatter (``_Messages``): 4 MiB of
#: float32 products at d_h = 64
MESSAGE_CHUNK = 2**14
#: inhibition reads the neighbourhoods of the non-zero activities only (with ``floor > 0``);
#: False: of every candidate (the reference; equal, tested)
INHIBIT_ACTIVE_ONLY = True


# --- configuration -----------------------------------------------------------------------------
@dataclass
class RSGNConfig(TrainConfig):
    """Sparse RSGN. Fast (gradient) fields first, then the slow (local-rule) fields."""

    n_nodes: int = 256
    d_space: int = 3  # dimension of the Poincaré ball
    d_hidden: int = 64  # node state width d_h
    n_steps: int = 5  # propagation steps S
    k: int = 16  # out-degree of the kNN graph
    ignite_frac: float = 0.02  # fraction of nodes ignited per sample
    sigma_ign: float = 0.4
    tau: float = 1.0  # distance temperature of the edge weights
    level_sign: str = "paper"  # "paper": phi(l_dst - l_src); "code": phi(l_src - l_dst)
    levels: str = "radius"  # "radius": l_i = d_H(0, p_i); "index": the author's linspace(0, 1, N) by index
    self_excitation: float = 0.5  # c: an active node's own contribution to its drive
    # hard floor: alpha < floor is set to exactly 0. At 0.5 a node fires iff its drive reaches its
    # threshold (sigmoid((z - theta) / T) >= 1/2 <=> z >= theta), whatever the temperature, so
    # annealing T sharpens activities without moving the firing set that homeostasis controls
    floor: float = 0.5
    t_start: float = 1.0  # soft-threshold temperature at the first epoch ...
    t_end: float = 0.1  # ... annealed geometrically to this at the last epoch
    inhibition: float = 1.0  # beta of the divisive normalisation (0: off)
    max_active_frac: float = 0.1  # safety cap on active nodes per sample and step (0: off)
    token_injection: bool = True  # False: every ignited node starts from W_in mean_t(x_t)
    pool_sigma: float = 0.0  # > 0: an ignited node starts from its receptive field (see module docstring)
    positional: bool = False  # append fixed sinusoidal position features to every token
    readout: str = "all"  # "all": active nodes after ignition and every step; "last": after the last step only;
    # "steps": one pooled vector per step side by side (head width d_h (S + 1); departs from the paper)
    # straight-through gradient of the firing threshold (departs from the paper): candidates that did
    # not fire enter the readout with activity exactly 0 whose gradient is that of g (see step_sparse)
    surrogate: bool = field(default=False, metadata={"neutral": False})  # neutral: fits before the field
    mode: str = "sparse"  # "sparse" (gather/scatter) or "dense" (N x N reference)
    ignition: str = "auto"  # nearest spark: "dense" (T x N, one matmul), "kdtree", "auto" (by T), "reference" (slow)
    knn: str = "kdtree"  # graph builder: "kdtree" (exact, sub-quadratic) or "brute" (O(N^2) reference)
    position_grad: bool = False  # True: positions also get gradients (geoopt RiemannianAdam)
    # -- slow timescale ----------------------------------------------------------------------
    slow_grad: bool = False  # True: positions, thresholds, affinities (and index levels) also get gradients
    hebbian: bool = True  # three-factor affinity rule (off: affinities stay at init)
    homeostasis: bool = True
    structural: bool = True  # position drift, pruning and sprouting
    eta_affinity: float = 20.0
    eta_threshold: float = 0.5  # fast enough to track the target as T anneals and the sparks learn
    target_activity: float = 0.015  # homeostatic target firing rate (pre-cap) at the end of the schedule
    target_start: float = 0.1  # ... and at the start
    target_epochs: int = 3  # epochs over which the target falls geometrically (0: target_activity throughout)
    max_activity: float = 0.02  # only epochs with validation activity <= this may be restored (0: any epoch)
    eta_position: float = 0.01
    affinity_bound: float = 6.0  # |a_e| <= bound keeps the Hebbian dynamics bounded
    structure_every: int = 0  # optimiser steps between drift / prune / sprout / kNN rebuild (0: each epoch)
    prune_threshold: float = 0.05  # sigmoid(a_e) below this -> edge pruned (a_e < -2.94)
    sprout_threshold: float = 0.7  # firing correlation above this -> new edge
    history: int = 256  # samples of firing kept for correlations

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("n_nodes", "d_space", "d_hidden", "n_steps", "k", "history"))
        if not isinstance(self.surrogate, bool):
            raise ValueError(f"surrogate: expected a bool, got {self.surrogate!r}")
        if self.k >= self.n_nodes:
            raise ValueError(f"k: must be < n_nodes ({self.n_nodes}), got {self.k}")
        for name in ("structure_every", "target_epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
        for name in ("ignite_frac", "max_active_frac", "target_activity", "target_start", "max_activity",
                     "prune_threshold", "floor"):
            v = getattr(self, name)
            check_positive(v, name, allow_zero=True)
            if v > 1:
                raise ValueError(f"{name}: must be in [0, 1], got {v!r}")
        if self.ignite_frac == 0:
            raise ValueError("ignite_frac: must be > 0")
        for name in ("sigma_ign", "tau", "t_start", "t_end", "affinity_bound"):
            check_positive(getattr(self, name), name)
        for name in ("self_excitation", "inhibition", "eta_affinity", "eta_threshold", "eta_position", "pool_sigma"):
            check_positive(getattr(self, name), name, allow_zero=True)
        for name, allowed in (("level_sign", ("paper", "code")), ("levels", ("radius", "index")),
                              ("mode", ("sparse", "dense")), ("readout", ("last", "all", "steps")),
                              ("ignition", ("auto", "dense", "kdtree", "reference")),
                              ("knn", ("kdtree", "brute"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: expected one of {list(allowed)}, got {getattr(self, name)!r}")


# --- graph ------------------------------------------------------------------------------------
@dataclass
class Graph:
    """The edge list of one forward pass: ``E = N k`` slots, slot ``e`` goes from node
    ``e // k`` to ``nbr.flatten()[e]``; dead (pruned) slots have weight 0. Weights are computed
    on demand for the slots a step uses (``weights``), all at once only for the dense reference.
    ``nbr (N, k)`` doubles as each node's inhibition neighbourhood."""

    nbr: torch.Tensor  # (N, k) long
    alive: torch.Tensor  # (N, k) bool
    affinity: torch.Tensor  # (N, k)
    p: torch.Tensor  # (N, d) positions
    levels: torch.Tensor  # (N,)
    tau: float
    level_sign: float

    @property
    def n(self) -> int:
        return self.nbr.shape[0]

    @property
    def k(self) -> int:
        return self.nbr.shape[1]

    def weights(self, slots: torch.Tensor | None = None) -> torch.Tensor:
        """``w (len(slots),)`` of the given flat edge slots (all ``E`` when None), ``O(len d)``."""
        if slots is None:
            slots = torch.arange(self.n * self.k, device=self.nbr.device)
        src, dst = slots // self.k, _at(self.nbr.reshape(-1), slots)
        d = G.dist(_at(self.p, src), _at(self.p, dst))
        phi = F.softplus(self.level_sign * (_at(self.levels, dst) - _at(self.levels, src)) + 1.0)
        return torch.sigmoid(_at(self.affinity.reshape(-1), slots)) * torch.exp(-d / self.tau) * phi \
            * _at(self.alive.reshape(-1), slots)

    def dense(self) -> torch.Tensor:
        """``W (N, N)`` with ``W[src, dst] = w_e`` (reference only: O(N^2) memory)."""
        n, k = self.nbr.shape
        src = torch.arange(n, device=self.nbr.device).repeat_interleave(k)
        w = self.weights()
        W = torch.zeros(n, n, dtype=w.dtype, device=w.device)
        return W.index_put((src, self.nbr.flatten()), w, accumulate=True)


# --- inhibition and the cap, dense (reference) and sparse -----------------------------------------
@dataclass
class StepParams:
    """What one propagation step needs besides the state."""

    theta: torch.Tensor  # (N,)
    transform: nn.Linear  # W_h, b_h
    norm: nn.LayerNorm
    temperature: float
    self_excitation: float
    floor: float
    inhibition: float
    max_active: int  # 0: no cap
    surrogate: bool = False  # also return the candidates that did not fire (StepOut.ghost)
    n_flat: int = 0  # B N: > 0 and <= DENSE_INDEX_MAX selects the flat-buffer row lookup (same result)


def _at(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    """``x[i]`` for an integer index tensor ``i`` of any shape (rows of ``x``), by ``index_select``:
    the same values, several times faster than advanced indexing on the CPU."""
    return x.index_select(0, i.reshape(-1)).reshape(*i.shape, *x.shape[1:])


def _hard_floor(g: torch.Tensor, floor: float) -> torch.Tensor:
    # values below the floor become exact zeros; survivors keep their gradient
    return g * (g >= floor)


def inhibit(alpha: torch.Tensor, nbr: torch.Tensor, beta: float, floor: float) -> torch.Tensor:
    """Divisive normalisation over each node's k-neighbourhood (dense ``alpha (B, N)``):

        alpha_i <- alpha_i / (1 + beta * mean_{j in nbr(i)} alpha_j)

    The divisor is >= 1 for alpha >= 0, so no activity can rise (tested); the floor then turns
    strongly suppressed nodes into exact zeros. ``O(B N k)``."""
    if beta == 0:
        return alpha
    neigh = alpha[:, nbr].mean(-1)  # (B, N)
    return _hard_floor(alpha / (1.0 + beta * neigh), floor)


def cap_active(alpha: torch.Tensor, max_active: int) -> torch.Tensor:
    """Keep at most ``max_active`` non-zeros per sample (the largest); ``alpha (B, N)``."""
    if max_active <= 0 or max_active >= alpha.shape[1]:
        return alpha
    top = alpha.detach().topk(max_active, dim=1).indices  # (B, K)
    keep = torch.zeros_like(alpha, dtype=torch.bool).scatter_(1, top, True)
    return alpha * keep


def _lookup(ids: torch.Tensor, values: torch.Tensor, query: torch.Tensor, n_flat: int = 0) -> torch.Tensor:
    """``values`` at flat ids ``query`` (any shape) where ``ids`` (sorted, ``(R,)``) holds them,
    else 0: by binary search, or with ``0 < n_flat <= DENSE_INDEX_MAX`` (all ids ``< n_flat``)
    through a flat buffer of ``n_flat`` values (equal, tested)."""
    if 0 < n_flat <= DENSE_INDEX_MAX:
        return _at(torch.zeros(n_flat, dtype=values.dtype, device=values.device).index_put((ids,), values), query)
    pos = torch.searchsorted(ids, query).clamp_max(ids.shape[0] - 1)
    return values[pos] * (ids[pos] == query)


def _rows_of(cand_parts: tuple[torch.Tensor, ...], queries: tuple[torch.Tensor, ...], n_flat: int
             ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """The sorted union ``cand (R,)`` of the flat ids in ``cand_parts`` and each query's row in it;
    by sort and binary search, or through a flat ``n_flat`` buffer (``_lookup``'s rule; equal)."""
    if 0 < n_flat <= DENSE_INDEX_MAX:
        mark = torch.zeros(n_flat, dtype=torch.bool, device=cand_parts[0].device)
        for part in cand_parts:
            mark[part] = True
        cand = mark.nonzero().squeeze(1)  # sorted
        row = torch.empty(n_flat, dtype=torch.long, device=cand.device)
        row[cand] = torch.arange(cand.shape[0], device=cand.device)
        return cand, tuple(_at(row, q) for q in queries)
    cand = torch.unique(torch.cat(cand_parts))  # (R,) sorted
    return cand, tuple(torch.searchsorted(cand, q) for q in queries)


def inhibit_sparse(ids: torch.Tensor, alpha: torch.Tensor, nbr: torch.Tensor, beta: float, floor: float,
                   n_flat: int = 0) -> torch.Tensor:
    """``inhibit`` on a sparse activity: ``alpha (R,)`` at sorted flat ids ``ids = b N + i``
    (every other node is 0). ``O(R k log R)`` (``O(R k + n_flat)`` with ``n_flat``, see ``_lookup``)."""
    if beta == 0 or ids.numel() == 0:
        return alpha
    n = nbr.shape[0]
    if floor > 0 and INHIBIT_ACTIVE_ONLY:
        # a zero stays zero, and with floor > 0 its value and gradient are both 0 (its pre-floor
        # value 0 is below the floor), so only the non-zeros need their neighbourhoods (equal, tested)
        pos = (alpha > 0).nonzero().squeeze(1)  # (F,)
        ids_f = _at(ids, pos)
        node = ids_f % n
        neigh = _lookup(ids, alpha, (ids_f - node)[:, None] + _at(nbr, node), n_flat).mean(1)  # (F,)
        out = _hard_floor(_at(alpha, pos) / (1.0 + beta * neigh), floor)
        return torch.zeros_like(alpha).index_put((pos,), out)
    node = ids % n
    neigh = _lookup(ids, alpha, (ids - node)[:, None] + nbr[node], n_flat).mean(1)  # (R,)
    return _hard_floor(alpha / (1.0 + beta * neigh), floor)


def cap_sparse(ids: torch.Tensor, alpha: torch.Tensor, max_active: int, n_nodes: int) -> torch.Tensor:
    """``cap_active`` on a sparse activity ``alpha (R,)`` at sorted flat ids ``ids``: per sample
    (``ids // n_nodes``) only the ``max_active`` largest non-zeros survive. ``O(R log R)``."""
    if max_active <= 0 or max_active >= n_nodes:
        return alpha
    pos = (alpha > 0).nonzero().squeeze(1)
    pos = pos[torch.argsort(-alpha.detach()[pos], stable=True)]  # by decreasing activity ...
    sample = ids[pos] // n_nodes
    order = torch.argsort(sample, stable=True)  # ... within each sample
    pos, sample = pos[order], sample[order]
    rank = torch.arange(pos.shape[0], device=ids.device) - torch.searchsorted(sample, sample)
    keep = torch.ones_like(alpha, dtype=torch.bool)
    keep[pos[rank >= max_active]] = False
    return alpha * keep


# --- the two propagation formulations ---------------------------------------------------------
@dataclass
class StepOut:
    """One sparse step's result: the new active set (sorted flat ids, activity, states), what
    fired before the cap, edges used, and each used edge's co-activation."""

    idx: torch.Tensor  # (A',) sorted flat ids b N + i
    alpha: torch.Tensor  # (A',)
    h: torch.Tensor  # (A', d_h), already scaled by alpha
    fired: torch.Tensor  # (F,) flat ids active before the cap
    edges: int
    coact: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (sample, slot, alpha_src alpha_dst), detached
    gate: torch.Tensor  # (R,) every candidate's g = sigmoid((z - theta) / T) before the floor, detached
    # with StepParams.surrogate: the candidates that did not fire, (ids (G,), activity (G,) exactly 0
    # carrying the gradient of g, states (G, d_h)), for the readout only
    ghost: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None


class _Messages(torch.autograd.Function):
    """``msg (n_out, d) = zeros.index_add(0, to, coef[:, None] * h[row])`` (messages ``(M,)``:
    weight ``coef``, sender row ``row`` of ``h (A, d)``, receiver row ``to``) without the
    ``(M, d)`` products: forward and backward run over ``MESSAGE_CHUNK`` messages at a time, so
    the temporaries stay cache-sized (no ``(M, d)`` tensor is allocated, zeroed by the OS and saved
    for backward) and only ``coef``, ``row``, ``to`` and ``h`` are kept. Each receiver sums its
    messages in the same order as the one ``index_add`` (equal, tested)."""

    @staticmethod
    def forward(ctx, coef: torch.Tensor, h: torch.Tensor, row: torch.Tensor, to: torch.Tensor, n_out: int
                ) -> torch.Tensor:
        out = torch.zeros(n_out, h.shape[1], dtype=h.dtype, device=h.device)
        for s in range(0, row.shape[0], MESSAGE_CHUNK):
            e = s + MESSAGE_CHUNK
            out.index_add_(0, to[s:e], coef[s:e, None] * _at(h, row[s:e]))
        ctx.save_for_backward(coef, h, row, to)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        coef, h, row, to = ctx.saved_tensors
        g_coef = torch.empty_like(coef) if ctx.needs_input_grad[0] else None
        g_h = torch.zeros_like(h) if ctx.needs_input_grad[1] else None
        for s in range(0, row.shape[0], MESSAGE_CHUNK):
            e = s + MESSAGE_CHUNK
            gm = _at(grad, to[s:e])  # (c, d) the gradient reaching each message
            if g_coef is not None:
                g_coef[s:e] = (gm * _at(h, row[s:e])).sum(1)
            if g_h is not None:
                g_h.index_add_(0, row[s:e], gm * coef[s:e, None])
        return g_coef, g_h, None, None, None


def step_sparse(idx: torch.Tensor, alpha: torch.Tensor, h: torch.Tensor, graph: Graph, sp: StepParams) -> StepOut:
    """One propagation step by gather / scatter over the edges of active nodes only.

    Args:
        idx: sorted flat indices ``(A,)`` into ``B * N`` of the active nodes.
        alpha: their activity ``(A,)`` (> 0).
        h: their states ``(A, d_h)`` (rows aligned with ``idx``).

    With ``sp.surrogate`` the candidates the floor, inhibition or cap zeroed are returned too
    (``ghost``): activity ``g - g.detach()`` (exactly 0, so no value changes, but
    ``d alpha / d g = 1``: the straight-through estimator of the step ``g [g >= floor]``) and
    their states. The caller adds them to the readout only: they do not send in the next step
    (that would grow the candidate set ``k``-fold per step).
    """
    n, k = graph.n, graph.k
    node = idx % n  # (A,)
    base = idx - node  # (A,) = b * N
    arange_k = torch.arange(k, device=idx.device)
    slots = (node[:, None] * k + arange_k).reshape(-1)  # (A k,) edge ids
    row = torch.arange(idx.shape[0], device=idx.device).repeat_interleave(k)  # (A k,) sender row
    live = _at(graph.alive.reshape(-1), slots)
    if SENDER_WEIGHTS_ONCE:
        # a node active in several samples sends along the same edges in each: weigh its edges
        # once (the same elementwise formula on the same values) and gather
        sender, inv = torch.unique(node, return_inverse=True)  # (U,), (A,)
        w = _at(graph.weights((sender[:, None] * k + arange_k).reshape(-1)).reshape(-1, k), inv).reshape(-1)[live]
    slots, row = slots[live], row[live]  # (M,)
    recv = _at(base, row) + _at(graph.nbr.reshape(-1), slots)  # (M,) flat receiver ids
    if not SENDER_WEIGHTS_ONCE:  # the reference: every (sample, edge) pair weighed on its own
        w = graph.weights(slots)
    coef = w * _at(alpha, row)  # (M,) w_e alpha_src
    # candidates: every active node plus every receiver; all other nodes stay exactly 0
    # (R,) sorted; the receiver row in cand of every message (M,), the sender row of every active node (A,)
    cand, (at, mine) = _rows_of((idx, recv), (recv, idx), sp.n_flat)
    R, dh = cand.shape[0], h.shape[1]
    drive = torch.zeros(R, dtype=h.dtype, device=h.device).index_add(0, at, coef)  # (R,)
    drive = drive + sp.self_excitation * torch.zeros(R, dtype=h.dtype, device=h.device).index_copy(0, mine, alpha)
    g = torch.sigmoid((drive - _at(sp.theta, cand % n)) / sp.temperature)  # (R,)
    a = inhibit_sparse(cand, _hard_floor(g, sp.floor), graph.nbr, sp.inhibition, sp.floor, sp.n_flat)
    fired = cand[a > 0]  # measured activity, before the cap
    a = cap_sparse(cand, a, sp.max_active, n)
    keep = a > 0
    with torch.no_grad():
        c = _at(alpha, row) * _at(a, at)  # (M,) co-activation of every used edge
        used = (c > 0).nonzero().squeeze(1)
        coact = (_at(idx, _at(row, used)) // n, _at(slots, used), _at(c, used))
    ghost = None
    if not KEPT_STATES_ONLY:  # the reference: every candidate's new state, then the kept ones
        msg = torch.zeros(R, dh, dtype=h.dtype, device=h.device).index_add(0, at, coef[:, None] * h[row])  # (R, d_h)
        prev = torch.zeros(R, dh, dtype=h.dtype, device=h.device).index_copy(0, mine, h)  # (R, d_h) old state (0 if new)
        state = sp.norm(sp.transform(msg) + prev)  # (R, d_h)
        if sp.surrogate:
            off = ~keep
            ghost = (cand[off], g[off] - g[off].detach(), state[off])
        state = state[keep]
    elif sp.surrogate:  # every candidate's new state (the ghosts need them)
        msg = _Messages.apply(coef, h, row, at, R)  # (R, d_h)
        prev = torch.zeros(R, dh, dtype=h.dtype, device=h.device).index_copy(0, mine, h)  # (R, d_h) old state (0 if new)
        state = sp.norm(sp.transform(msg) + prev)  # (R, d_h)
        off = ~keep
        ghost = (cand[off], g[off] - g[off].detach(), state[off])
        state = state[keep]
    else:
        # only the candidates still active carry a state on (every other one is dropped with
        # activity 0): the (messages, d_h) gather and the transform run for them alone. Each
        # kept row sums its messages in the same order as above (equal, tested).
        kept = keep.nonzero().squeeze(1)  # (K,) rows of cand
        slot_of = torch.full((R,), -1, dtype=torch.long, device=cand.device)
        slot_of[kept] = torch.arange(kept.shape[0], device=cand.device)
        to, was = _at(slot_of, at), _at(slot_of, mine)  # (M,), (A,) row in the kept set or -1
        m_in, a_in = (to >= 0).nonzero().squeeze(1), (was >= 0).nonzero().squeeze(1)
        K = kept.shape[0]
        msg = _Messages.apply(_at(coef, m_in), h, _at(row, m_in), _at(to, m_in), K)  # (K, d_h)
        prev = torch.zeros(K, dh, dtype=h.dtype, device=h.device).index_copy(0, _at(was, a_in), _at(h, a_in))  # (K, d_h)
        state = sp.norm(sp.transform(msg) + prev)  # (K, d_h)
    return StepOut(cand[keep], a[keep], state * a[keep, None], fired, int(row.shape[0]), coact,
                   g.detach(), ghost)


def step_dense(alpha: torch.Tensor, h: torch.Tensor, W: torch.Tensor, nbr: torch.Tensor,
               sp: StepParams) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The reference step with a dense ``W (N, N)`` (``W[src, dst]``) and dense states
    ``h (B, N, d_h)``: ``O(B N^2 d_h)``. Same equations as ``step_sparse``. Returns the new
    activity ``(B, N)``, states ``(B, N, d_h)``, the activity before the cap ``(B, N)`` and, with
    ``sp.surrogate``, the zeroed candidates' straight-through activity times their states
    ``(B, N, d_h)`` paired with that activity ``(B, N)`` (else ``None``)."""
    msg = torch.einsum("bi,ij,bid->bjd", alpha, W, h)  # (B, N, d_h)
    drive = alpha @ W + sp.self_excitation * alpha  # (B, N)
    active = (alpha > 0).to(W.dtype)
    cand = (active + active @ (W > 0).to(W.dtype)) > 0  # (B, N) active or receiving
    g = torch.sigmoid((drive - sp.theta) / sp.temperature)
    state = sp.norm(sp.transform(msg) + h)  # (B, N, d_h)
    pre = inhibit(_hard_floor(g, sp.floor) * cand, nbr, sp.inhibition, sp.floor)
    new = cap_active(pre, sp.max_active)
    ghost = None
    if sp.surrogate:
        ga = (g - g.detach()) * (cand & (new == 0))  # (B, N) exactly 0, gradient of g on zeroed candidates
        ghost = (ga[..., None] * state, ga)
    return new, state * new[..., None], pre, ghost


def _sinusoid(t: int, dim: int = 8) -> torch.Tensor:
    pos = torch.arange(t, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(1e4) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=1)  # (T, dim)


@dataclass
class Ignition:
    """The ignited nodes of a batch, as sorted flat ids ``b N + i``."""

    idx: torch.Tensor  # (A,) sorted
    g: torch.Tensor  # (A,) ignition values (differentiable)
    token: torch.Tensor  # (A,) index of each node's nearest spark
    sparks: torch.Tensor  # (B, T, d)
    pre_cap: float  # fraction of (sample, node) pairs with g >= floor, before the top-k


# --- the model ---------------------------------------------------------------------------------
@register("rsgn")
class RSGN(SlowRuleModel):
    """Sparse RSGN trained by backprop (fast weights) plus slow local rules run from a training
    callback (see module docstring). Inputs ``(N, T, D)`` token sequences (``(N, D)`` is read as
    D scalar tokens).

    ``last_stats`` (latest forward pass): ``active_fraction`` and ``active_pre_cap`` (fraction of
    nodes exactly non-zero after / before the cap, per step, index 0 = ignition, where "pre-cap"
    counts nodes with ``g >= floor`` before the top-k), ``activity`` and ``activity_post_cap``
    (their means over the propagation steps: the measured activity), ``edges_per_sample``.
    ``stats`` holds per-batch lists over ``fit``; ``train_history`` per-epoch summaries."""

    Config = RSGNConfig

    # -- construction ----------------------------------------------------------------------
    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if len(spec.x_shape) > 2:
            raise ValueError(f"x: RSGN takes (N, T, D) or (N, T) inputs, got per-sample shape {spec.x_shape}")
        self.seq_len = spec.x_shape[0]
        d_tok = (spec.x_shape[1] if len(spec.x_shape) == 2 else 1) * (2 if spec.x_masked else 1)
        d_tok += 8 if cfg.positional else 0
        n, k, ds, dh = cfg.n_nodes, cfg.k, cfg.d_space, cfg.d_hidden
        d_out = spec.n_classes if spec.is_classification else spec.y_dim
        # slow parameters; positions live on the ball (RiemannianAdam when they get gradients)
        self.pos = geoopt.ManifoldParameter(G.to_ball(0.3 * torch.randn(n, ds)), manifold=G.BALL,
                                            requires_grad=cfg.slow_grad or cfg.position_grad)  # (N, d)
        self.theta = nn.Parameter(torch.full((n,), 0.5), requires_grad=cfg.slow_grad)  # (N,)
        self.affinity = nn.Parameter(torch.zeros(n, k), requires_grad=cfg.slow_grad)  # (N, k) sigmoid(0) = 0.5
        if cfg.levels == "index":
            self.index_levels = nn.Parameter(torch.linspace(0.0, 1.0, n), requires_grad=cfg.slow_grad)  # (N,)
        self.register_buffer("nbr", self._knn(self.pos.detach()))  # (N, k) long
        self.register_buffer("alive", torch.ones(n, k, dtype=torch.bool))  # (N, k)
        # a sprouted edge sits in the slot of a pruned kNN edge; that edge is kept in `displaced`
        # so the next kNN rebuild still knows it was pruned
        self.register_buffer("sprouted", torch.zeros(n, k, dtype=torch.bool))  # (N, k)
        self.register_buffer("displaced", torch.full((n, k), -1, dtype=torch.long))  # (N, k)
        self.register_buffer("temperature", torch.tensor(float(cfg.t_start)))
        # fast parameters
        self.spark = nn.Sequential(nn.Linear(d_tok, 4 * ds), nn.GELU(), nn.Linear(4 * ds, ds))
        self.embed = nn.Linear(d_tok, dh)  # W_in: token -> initial node state
        self.transform = nn.Linear(dh, dh)  # W_h
        self.norm = nn.LayerNorm(dh)
        self.head = nn.Linear(dh * (cfg.n_steps + 1) if cfg.readout == "steps" else dh, d_out)
        # slow-rule bookkeeping (not checkpointed; reset at each fit)
        self._firing = P.FiringHistory(cfg.history, n)
        self._steps_per_epoch = 1
        self.last_stats: dict[str, Any] = {}
        self.stats: dict[str, list] = {}

    def _knn(self, p: torch.Tensor) -> torch.Tensor:
        return (G.knn_kdtree if self.config.knn == "kdtree" else G.knn)(p, self.config.k)

    # -- pieces of the forward pass -----------------------------------------------------------
    def positions(self) -> torch.Tensor:
        """Node positions ``(N, d)`` strictly inside the ball."""
        return G.project(self.pos)

    def node_levels(self, p: torch.Tensor) -> torch.Tensor:
        """Levels ``(N,)``: the hyperbolic radius ``d_H(0, p_i)`` or the index levels."""
        if self.config.levels == "index":
            return self.index_levels
        return G.dist(p, torch.zeros_like(p))

    def graph(self) -> Graph:
        cfg = self.config
        p = self.positions()
        return Graph(self.nbr, self.alive, self.affinity, p, self.node_levels(p), cfg.tau,
                     1.0 if cfg.level_sign == "paper" else -1.0)

    def tokens(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The propagation's input tokens of a batch ``x`` ``(B, T, F)`` (``(B, T)`` is one
        feature), as ``propagate`` takes them (what ``hebbnets.nn.RSGNEncoder.forward`` feeds it)."""
        return self._tokens(x, x_mask)

    def take_batch_record(self) -> dict | None:
        """What the latest training-mode forward recorded for the slow rules (``slow_step``), or
        ``None``; taking it clears it, so each record feeds one slow step."""
        record, self._batch = self._batch, None
        return record

    def _tokens(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x.ndim == 2:
            x = x[..., None]  # (B, T, 1)
            x_mask = None if x_mask is None else x_mask[..., None]
        if self.spec.x_masked:
            m = torch.ones_like(x) if x_mask is None else x_mask
            x = torch.cat([x * m, m], dim=-1)
        elif x_mask is not None:
            raise ValueError("x_mask: this model was trained without an input mask")
        if self.config.positional:
            pe = _sinusoid(x.shape[1]).to(x)  # (T, 8)
            x = torch.cat([x, pe.expand(x.shape[0], -1, -1)], dim=-1)
        return x  # (B, T, d_tok)

    @torch.no_grad()
    def nearest_spark(self, sparks: torch.Tensor, p: torch.Tensor, method: str | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        """For every sample and node the distance proxy ``t`` (``d_H = 2 asinh(sqrt t)``) to its
        nearest spark and that spark's index: ``sparks (B, T, d)``, ``p (N, d)`` ->
        ``(B, N)``, ``(B, N)``. ``"dense"``: the ``T x N`` proxies in node chunks of about 2^24
        values, one matmul each (``geometry.nearest_t``; ``"reference"``: the proxies themselves, then
        their minimum); ``"kdtree"``: exact, from a KD-tree over each sample's sparks (equal, tested)."""
        method = method or self.config.ignition
        B, T, _ = sparks.shape
        if method == "auto":
            method = "kdtree" if T >= KDTREE_MIN_TOKENS else "dense"
        if method == "kdtree":
            q = p.double().cpu().numpy()
            out = [G.nearest_kdtree(s.double().cpu().numpy(), q) for s in sparks]
            t = torch.from_numpy(np.stack([o[0] for o in out])).to(p)
            arg = torch.from_numpy(np.stack([o[1] for o in out])).to(p.device)
            return t, arg
        n = p.shape[0]
        t = torch.empty(B, n, dtype=p.dtype, device=p.device)
        arg = torch.empty(B, n, dtype=torch.long, device=p.device)
        # the one-matmul form in cache-sized chunks (about 2^18 products each); the reference in 2^24
        chunk = max(1, (2**18 if method == "dense" else 2**24) // (B * T))
        nearest = G.nearest_t if method == "dense" else lambda x, y: G._pairwise_t(x, y).min(dim=1)  # "reference"
        for s in range(0, n, chunk):
            t[:, s : s + chunk], arg[:, s : s + chunk] = nearest(sparks, p[s : s + chunk])
        return t, arg

    def _n_ignited(self, n: int) -> int:
        return max(1, math.ceil(self.config.ignite_frac * n))

    def _t_floor(self) -> float:
        # g >= floor  <=>  d <= sigma sqrt(2 ln(1 / floor))  <=>  t <= sinh(d / 2)^2
        cfg = self.config
        d_floor = cfg.sigma_ign * math.sqrt(2 * math.log(1 / cfg.floor)) if cfg.floor > 0 else math.inf
        return math.sinh(d_floor / 2) ** 2

    @torch.no_grad()
    def ignition_search(self, sparks: torch.Tensor, p: torch.Tensor, method: str | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """``nearest_spark(sparks, p, method)`` as far as ignition reads it: the ``n_ign`` nodes of
        smallest ``t`` per sample (their ``t`` and spark) and which nodes have ``t`` at most the
        floor's ``t``. With the KD-tree (``"kdtree"``, or ``"auto"`` at ``T >= KDTREE_MIN_TOKENS``)
        and a finite floor ``t``: ``geometry.nearest_kdtree_bounded`` per sample, exact there, an
        upper bound (spark -1) or ``inf`` elsewhere, so that ``ignite`` selects, counts and reads
        the same as from ``nearest_spark`` (tested); other methods: ``nearest_spark`` itself."""
        method = method or self.config.ignition
        B, T, _ = sparks.shape
        if method == "auto":
            method = "kdtree" if T >= KDTREE_MIN_TOKENS else "dense"
        t_floor = self._t_floor()
        if method != "kdtree" or not math.isfinite(t_floor):
            return self.nearest_spark(sparks, p, method)
        groups = G.QueryGroups(p.double().cpu().numpy())
        n_ign = self._n_ignited(p.shape[0])
        out = [G.nearest_kdtree_bounded(s.double().cpu().numpy(), groups, n_ign, t_floor) for s in sparks]
        t = torch.from_numpy(np.stack([o[0] for o in out])).to(p)
        arg = torch.from_numpy(np.stack([o[1] for o in out])).to(p.device)
        return t, arg

    def ignite(self, tok: torch.Tensor, p: torch.Tensor) -> Ignition:
        """Tokens ``(B, T, d_tok)`` -> the ``ceil(ignite_frac N)`` nodes per sample nearest to a
        spark, with ``g = exp(-d_H^2 / (2 sigma^2))``."""
        cfg = self.config
        sparks = G.to_ball(self.spark(tok))  # (B, T, d)
        B, n = sparks.shape[0], p.shape[0]
        n_ign = self._n_ignited(n)
        with torch.no_grad():
            t, arg = self.ignition_search(sparks.detach(), p.detach())  # (B, N)
            top = t.topk(n_ign, dim=1, largest=False).indices  # (B, n_ign)
            idx = ((torch.arange(B, device=p.device)[:, None] * n) + top).reshape(-1).sort().values  # (A,)
            b, i = idx // n, idx % n
            token = arg[b, i]
            pre_cap = float((t <= self._t_floor()).float().mean())
        d = G.dist(sparks[b, token], p[i])  # (A,) differentiable, ignited nodes only
        g = torch.exp(-(d**2) / (2 * cfg.sigma_ign**2))
        return Ignition(idx, g, token, sparks, pre_cap)

    def receptive_field(self, sparks: torch.Tensor, emb: torch.Tensor, b: torch.Tensor,
                        p_nodes: torch.Tensor, per_sample: int = 0) -> torch.Tensor:
        """Start states of nodes at ``p_nodes (A, d)`` in samples ``b (A,)``: the token embeddings
        ``emb (B, T, d_h)`` averaged with ``softmax_t(-d_H(s_t, p)^2 / (2 pool_sigma^2))`` over the
        sample's sparks ``sparks (B, T, d)`` -> ``(A, d_h)``. ``per_sample > 0`` says the rows are
        sample-major, ``per_sample`` per sample (``b = arange(B).repeat_interleave(per_sample)``, as
        ignition gives them): then one batched matmul without the ``(A, T, d_h)`` gather (equal, tested)."""
        d = G.dist(sparks[b], p_nodes[:, None, :])  # (A, T)
        w = torch.softmax(-(d**2) / (2 * self.config.pool_sigma**2), dim=1)  # (A, T)
        if per_sample > 0:
            B = emb.shape[0]
            return torch.bmm(w.reshape(B, per_sample, -1), emb).reshape(B * per_sample, -1)
        return torch.einsum("at,atd->ad", w, emb[b])

    def _step_params(self, n_samples: int = 0) -> StepParams:
        cfg = self.config
        cap = 0 if cfg.max_active_frac == 0 else max(1, math.ceil(cfg.max_active_frac * cfg.n_nodes))
        return StepParams(self.theta, self.transform, self.norm, float(self.temperature), cfg.self_excitation,
                          cfg.floor, cfg.inhibition, cap, cfg.surrogate and torch.is_grad_enabled(),
                          n_samples * cfg.n_nodes)

    def propagate(self, tok: torch.Tensor, mode: str | None = None, states: list | None = None
                  ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Ignition + ``n_steps`` steps; returns the readout ``(B, d_h)`` (``(B, d_h (S + 1))``
        with ``readout="steps"``) and the activity after ignition and after every step as sparse
        pairs ``(flat ids (A,), values (A,))`` (``dense_activity`` turns one into ``(B, N)``).
        Sets ``last_stats``; in training mode also ``_batch`` (firing and co-activation for the
        slow rules). ``states`` (sparse mode only): a list that gets, per step ``s = 0..S``, a dict
        of the tensors entering the readout (``idx``, ``alpha``, ``h`` in the autograd graph;
        ``gate``: the candidates' ``g`` before the floor, ``None`` at ignition; ``ghost``), for
        diagnostics such as ``hebbnets.rsgn.diagnostics.gradient_flow``."""
        cfg = self.config
        mode = mode or cfg.mode
        if states is not None and mode != "sparse":
            raise ValueError(f"states: recorded by the sparse path only, got mode={mode!r}")
        graph = self.graph()
        p = graph.p
        B, n = tok.shape[0], cfg.n_nodes
        ign = self.ignite(tok, p)
        b, i = ign.idx // n, ign.idx % n
        emb = self.embed(tok)  # (B, T, d_h)
        if not cfg.token_injection:
            h0 = emb.mean(1)[b]
        elif cfg.pool_sigma > 0:
            h0 = self.receptive_field(ign.sparks, emb, b, p[i], ign.idx.shape[0] // B)  # (A, d_h)
        else:
            h0 = emb[b, ign.token]  # (A, d_h)
        idx, alpha, h = ign.idx, ign.g, h0 * ign.g[:, None]
        sp = self._step_params(B)
        trace, fired, coact, edges = [(idx, alpha)], [], [], 0
        num = torch.zeros(B, h.shape[1], dtype=h.dtype, device=h.device)  # readout sums
        den = torch.zeros(B, dtype=h.dtype, device=h.device)
        per_step = []  # readout="steps": one pooled vector per step
        if mode == "sparse":
            for s in range(cfg.n_steps + 1):
                out = None
                if s > 0:
                    out = step_sparse(idx, alpha, h, graph, sp)
                    idx, alpha, h = out.idx, out.alpha, out.h
                    trace.append((idx, alpha))
                    fired.append(out.fired)
                    coact.append(out.coact)
                    edges += out.edges
                if states is not None:
                    states.append({"idx": idx, "alpha": alpha, "h": h, "gate": None if out is None else out.gate,
                                   "ghost": None if out is None else out.ghost})
                if cfg.readout == "steps":
                    num, den = torch.zeros_like(num), torch.zeros_like(den)
                if cfg.readout != "last" or s == cfg.n_steps:
                    num = num.index_add(0, idx // n, alpha[:, None] * h)
                    den = den.index_add(0, idx // n, alpha)
                    if out is not None and out.ghost is not None:
                        g_idx, g_a, g_h = out.ghost
                        num = num.index_add(0, g_idx // n, g_a[:, None] * g_h)
                        den = den.index_add(0, g_idx // n, g_a)
                if cfg.readout == "steps":
                    per_step.append(num / (den[:, None] + 1e-6))
        else:
            W = graph.dense()  # (N, N)
            src = torch.arange(n, device=W.device).repeat_interleave(cfg.k)
            a_d = torch.zeros(B * n, dtype=alpha.dtype, device=alpha.device).index_put((idx,), alpha).reshape(B, n)
            h_d = torch.zeros(B * n, h.shape[1], dtype=h.dtype, device=h.device).index_put((idx,), h).reshape(B, n, -1)
            if cfg.readout == "all":
                num, den = num + (a_d[..., None] * h_d).sum(1), den + a_d.sum(1)
            elif cfg.readout == "steps":
                per_step.append((a_d[..., None] * h_d).sum(1) / (a_d.sum(1)[:, None] + 1e-6))
            for s in range(cfg.n_steps):
                sending = (a_d > 0).to(W.dtype)
                edges += int((sending @ (W > 0).to(W.dtype)).sum())
                prev = a_d
                a_d, h_d, pre, ghost = step_dense(a_d, h_d, W, self.nbr, sp)
                trace.append(_sparse(a_d))
                fired.append(pre.reshape(-1).nonzero().squeeze(1))
                with torch.no_grad():  # co-activation of every alive edge from an active sender
                    c = prev[:, src] * a_d[:, self.nbr.reshape(-1)] * self.alive.reshape(-1)  # (B, E)
                    s_b, s_e = c.nonzero(as_tuple=True)
                    coact.append((s_b, s_e, c[s_b, s_e]))
                g_num, g_den = (0.0, 0.0) if ghost is None else (ghost[0].sum(1), ghost[1].sum(1))
                if cfg.readout == "all":
                    num, den = num + (a_d[..., None] * h_d).sum(1) + g_num, den + a_d.sum(1) + g_den
                elif cfg.readout == "steps":
                    per_step.append(((a_d[..., None] * h_d).sum(1) + g_num) / ((a_d.sum(1) + g_den)[:, None] + 1e-6))
                elif s == cfg.n_steps - 1:
                    num, den = (a_d[..., None] * h_d).sum(1) + g_num, a_d.sum(1) + g_den
        # activity-normalised readout
        out = torch.cat(per_step, dim=1) if cfg.readout == "steps" else num / (den[:, None] + 1e-6)
        post = [tr[0].shape[0] / (B * n) for tr in trace]
        pre = [ign.pre_cap] + [f.shape[0] / (B * n) for f in fired]
        self.last_stats = {
            "active_fraction": post,
            "active_pre_cap": pre,
            "activity": sum(pre[1:]) / cfg.n_steps,
            "activity_post_cap": sum(post[1:]) / cfg.n_steps,
            "edges_per_sample": edges / B,
        }
        if self.training:
            self._batch = {"n_samples": B, "fired": torch.cat(fired), "loss": None,
                           "coact": tuple(torch.cat(parts) for parts in zip(*coact))}
        return out, trace

    def dense_activity(self, pair: tuple[torch.Tensor, torch.Tensor], n_samples: int) -> torch.Tensor:
        """A trace entry ``(flat ids, values)`` as a dense ``(B, N)`` activity."""
        idx, a = pair
        return torch.zeros(n_samples * self.config.n_nodes, dtype=a.dtype, device=a.device) \
            .index_put((idx,), a).reshape(n_samples, -1)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        out, _ = self.propagate(self._tokens(x, x_mask))
        y = self.head(out)
        return y if self.spec.is_classification else y.reshape(x.shape[0], *self.spec.y_shape)

    def fit_summary(self) -> dict[str, Any]:
        """Flat per-fit statistics for a result record: the measured activity (before / after
        the cap) in the last training epoch and, with a validation set, at the restored epoch;
        whether that epoch met ``max_activity``; edges pruned / sprouted over the fit and alive at
        the end; mean Hebbian update norm per step; the affinities' spread. The test-set activity
        is in ``last_stats`` after ``predict`` / ``score``."""
        h = getattr(self, "train_history", {})
        if not h:
            raise ValueError("model: fit_summary needs a fitted model (call fit first)")
        sel = self.selected_epoch if self.selected_epoch is not None else len(h["train"]) - 1
        alive = self.affinity.detach()[self.alive]
        out = {
            "epochs_run": len(h["train"]), "selected_epoch": self.selected_epoch,
            "activity_train_last_epoch": h["activity_train"][-1],
            "activity_post_cap_train_last_epoch": h["activity_post_cap_train"][-1],
            "activity_val_selected": h["activity_val"][sel] if h.get("activity_val") else None,
            "activity_post_cap_val_selected": h["activity_post_cap_val"][sel] if h.get("activity_post_cap_val") else None,
            "activity_target_met": (self.config.max_activity == 0 or (bool(h.get("selectable")) and bool(h["selectable"][sel]))),
            "pruned_total": int(sum(h["pruned"])), "sprouted_total": int(sum(h["sprouted"])),
            "alive_edges": int(self.alive.sum()), "edges": int(self.alive.numel()),
            "hebbian_update_mean": (sum(self.stats["hebbian_update"]) / len(self.stats["hebbian_update"])
                                    if self.stats.get("hebbian_update") else None),
            "affinity_std": float(alive.std()) if alive.numel() > 1 else None,
            "affinity_negative_fraction": float((alive < 0).float().mean()) if alive.numel() else None,
            "temperature": float(self.temperature),
        }
        return out

    # -- slow rules (run by the SlowRules callback, after each optimiser step) ---------------
    def target_at(self, step: int) -> float:
        """The homeostatic target firing rate at optimiser step ``step`` of a fit."""
        cfg = self.config
        return P.target_at(step, self._steps_per_epoch, cfg.target_start, cfg.target_activity, cfg.target_epochs)

    def _slow_fit_start(self, train, val) -> None:
        cfg = self.config
        self._steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
        self._firing = P.FiringHistory(cfg.history, cfg.n_nodes, device=self.device)
        self._epoch_marks: list[int] = []
        self._structure_mark = 0
        self.temperature.fill_(cfg.t_start)
        self.stats = {key: [] for key in ("activity", "activity_post_cap", "activity_pre_cap_per_step",
                                          "activity_post_cap_per_step", "edges_per_sample", "target",
                                          "hebbian_update", "gradient_update", "pruned", "sprouted")}
        self._affinity_before = self.affinity.detach().clone()

    @torch.no_grad()
    def _slow_step(self, step: int, record: dict[str, Any]) -> None:
        cfg = self.config
        if cfg.slow_grad:  # the optimiser's move on the affinities in this step
            self.stats["gradient_update"].append(float((self.affinity - self._affinity_before).norm()))
        out = self.slow_step(record, self.target_at(step))
        self._affinity_before = self.affinity.detach().clone()
        every = cfg.structure_every or self._steps_per_epoch
        if (step + 1) % every == 0:
            self.structure_step()
        for key in ("activity", "activity_post_cap", "edges_per_sample"):
            self.stats[key].append(self.last_stats[key])
        self.stats["activity_pre_cap_per_step"].append(self.last_stats["active_pre_cap"])
        self.stats["activity_post_cap_per_step"].append(self.last_stats["active_fraction"])
        self.stats["target"].append(out["target"])
        self.stats["hebbian_update"].append(out["hebbian_update"])

    @torch.no_grad()
    def slow_step(self, record: dict[str, Any], target: float) -> dict[str, float]:
        """The per-batch slow rules on one batch's ``record`` (``propagate``'s ``_batch`` plus
        per-sample losses ``loss (B,)``): the three-factor Hebbian rule on alive edges (clipped to
        ``[-affinity_bound, affinity_bound]``), homeostasis towards ``target``, and the firing
        history. Returns the target and the norm of the Hebbian change."""
        cfg = self.config
        n, k = cfg.n_nodes, cfg.k  # the config: the one source of the graph's size
        B = record["n_samples"]
        delta = 0.0
        if cfg.hebbian:
            step = cfg.eta_affinity * P.three_factor(record["loss"], *record["coact"], n * k).reshape(n, k)
            new = (self.affinity + step.to(self.affinity.dtype) * self.alive).clamp(-cfg.affinity_bound, cfg.affinity_bound)
            delta = float((new - self.affinity).norm())
            self.affinity.copy_(new)
        fired = record["fired"]
        if cfg.homeostasis:
            rate = torch.bincount(fired % n, minlength=n).to(self.theta.dtype) / (B * cfg.n_steps)  # (N,)
            P.homeostasis(self.theta, rate, target, cfg.eta_threshold)
        any_step = torch.unique(fired)  # (sample, node) pairs that fired at some step
        self._firing.add(any_step // n, any_step % n, B)
        return {"target": target, "hebbian_update": delta}

    def _slow_selectable(self, epoch: int, history: dict[str, list]) -> bool:
        # the validation forward just ran: last_stats is the validation set's activity
        return self.config.max_activity == 0 or self.last_stats["activity"] <= self.config.max_activity

    def _slow_epoch_end(self, epoch: int, history: dict[str, list]) -> None:
        cfg = self.config
        start = self._epoch_marks[-1] if self._epoch_marks else 0
        self._epoch_marks.append(len(self.stats["activity"]))
        for key in ("activity", "activity_post_cap"):
            part = self.stats[key][start:]
            history.setdefault(f"{key}_train", []).append(sum(part) / max(1, len(part)))
        for key in ("activity_pre_cap_per_step", "activity_post_cap_per_step"):
            part = self.stats[key][start:]
            history.setdefault(f"{key}_train", []).append([sum(v) / len(part) for v in zip(*part)] if part else [])
        if history.get("val"):  # the validation forward's activity (the one selection reads)
            history.setdefault("activity_val", []).append(self.last_stats["activity"])
            history.setdefault("activity_post_cap_val", []).append(self.last_stats["activity_post_cap"])
            history.setdefault("activity_pre_cap_per_step_val", []).append(self.last_stats["active_pre_cap"])
        history.setdefault("target_activity", []).append(self.stats["target"][-1] if self.stats["target"] else math.nan)
        history.setdefault("temperature", []).append(float(self.temperature))
        done, self._structure_mark = self._structure_mark, len(self.stats["pruned"])
        for key in ("pruned", "sprouted"):  # edges pruned / sprouted during this epoch
            history.setdefault(key, []).append(sum(self.stats[key][done:]))
        history.setdefault("alive_edges", []).append(int(self.alive.sum()))
        # anneal the temperature for the next epoch (after the checkpoint decision, so a
        # restored epoch keeps the temperature it was validated at)
        frac = min(1.0, (epoch + 1) / max(1, cfg.epochs - 1))
        self.temperature.fill_(cfg.t_start * (cfg.t_end / cfg.t_start) ** frac)

    @torch.no_grad()
    def structure_step(self, min_history: int = 16) -> dict[str, int]:
        """Slow structural plasticity (every ``structure_every`` steps, default each epoch):
        Riemannian drift of each node towards its positively correlated neighbours, pruning of
        alive edges with ``sigmoid(a) < prune_threshold``, sprouting of one edge per node with a
        dead slot towards its most correlated unconnected 2-hop node (correlation above
        ``sprout_threshold``), then the kNN graph is rebuilt from the new positions (affinity and
        pruned state carried over for edges that remain). Skipped until the firing history holds
        ``min_history`` samples (correlations need them)."""
        cfg = self.config
        out = {"pruned": 0, "sprouted": 0}
        if not cfg.structural or len(self._firing) < min_history:
            return out
        n, k = cfg.n_nodes, cfg.k
        # drift: p_i <- exp_{p_i}(eta sum_j c_ij^+ log_{p_i}(p_j) / k)
        if cfg.eta_position > 0:
            p = self.positions()
            corr = self._firing.correlation(torch.arange(n, device=self.nbr.device)[:, None].expand(n, k), self.nbr) * self.alive  # (N, k)
            pull = (corr.clamp_min(0)[..., None] * G.logmap(p[:, None], p[self.nbr])).mean(1)  # (N, d)
            self.pos.copy_(G.project(G.expmap(p, cfg.eta_position * pull)))
        # prune
        weak = self.alive & (torch.sigmoid(self.affinity) < cfg.prune_threshold)
        self.alive &= ~weak
        out["pruned"] = int(weak.sum())
        # sprout, only for nodes with a dead slot, from their 2-hop nodes
        rows = (~self.alive).any(1).nonzero().squeeze(1)  # (R,)
        if len(rows):
            cand = self.nbr[self.nbr[rows]].reshape(len(rows), k * k)  # (R, k^2)
            c = self._firing.correlation(rows[:, None].expand_as(cand), cand)  # (R, k^2)
            mine = torch.where(self.alive[rows], self.nbr[rows], -1).sort(1).values  # (R, k) alive targets
            at = torch.searchsorted(mine, cand).clamp_max(k - 1)
            connected = mine.gather(1, at) == cand
            c = c.masked_fill(connected | (cand == rows[:, None]), -2.0)
            best, arg = c.max(1)  # (R,)
            grow = best > cfg.sprout_threshold
            g_idx = rows[grow]
            g_slot = (~self.alive[g_idx]).float().argmax(1)  # first dead slot
            # the pruned kNN edge whose slot is taken (a pruned sprout's slot already names it)
            self.displaced[g_idx, g_slot] = torch.where(self.sprouted[g_idx, g_slot], self.displaced[g_idx, g_slot],
                                                        self.nbr[g_idx, g_slot])
            self.nbr[g_idx, g_slot] = cand[grow, arg[grow]]
            self.alive[g_idx, g_slot] = True
            self.sprouted[g_idx, g_slot] = True
            self.affinity[g_idx, g_slot] = 0.0
            out["sprouted"] = int(grow.sum())
        self.rebuild_graph()
        if self.stats:
            self.stats["pruned"].append(out["pruned"])
            self.stats["sprouted"].append(out["sprouted"])
        return out

    @torch.no_grad()
    def rebuild_graph(self) -> None:
        """Recompute the kNN edge list from the current positions (slow timescale).

        kNN edges that stay keep their affinity and pruned state (a pruned edge is not revived by
        the rebuild); new kNN edges start alive at affinity 0. Alive sprouted edges keep their
        affinity: a sprouted node that is now among the k nearest becomes that kNN edge, the others
        move into a dead (pruned) slot of the new list and are dropped only if the row has none.
        """
        new = self._knn(self.positions().detach())  # (N, k)
        # the kNN edge behind each old slot: a sprouted slot stands for the pruned edge it displaced
        knn_old = torch.where(self.sprouted, self.displaced, self.nbr)  # (N, k)
        knn_alive = self.alive & ~self.sprouted  # (N, k)
        knn_aff = torch.where(self.sprouted, torch.zeros_like(self.affinity), self.affinity)  # (N, k)
        match = new[:, :, None] == knn_old[:, None, :]  # (N, k_new, k_old)
        found = match.any(-1)
        old_slot = match.to(torch.uint8).argmax(-1)  # (N, k_new) first matching old slot
        aff = torch.where(found, knn_aff.gather(1, old_slot), torch.zeros_like(self.affinity))
        alive = torch.where(found, knn_alive.gather(1, old_slot), torch.ones_like(self.alive))
        sprouted = torch.zeros_like(self.sprouted)
        displaced = torch.full_like(self.displaced, -1)
        nbr = new.clone()
        # sprouts are few (at most one per node per structure step): a loop over them is cheap
        for i, s in (self.sprouted & self.alive).nonzero().tolist():
            j, a = int(self.nbr[i, s]), self.affinity[i, s]
            hit = (nbr[i] == j).nonzero()
            if len(hit):  # now a kNN neighbour: that edge, alive, with the sprout's affinity
                t = int(hit[0, 0])
                alive[i, t], aff[i, t] = True, a
                continue
            free = (~alive[i] & ~sprouted[i]).nonzero()
            if not len(free):
                continue
            t = int(free[0, 0])
            displaced[i, t], nbr[i, t] = nbr[i, t], j
            alive[i, t], aff[i, t], sprouted[i, t] = True, a, True
        self.nbr.copy_(nbr)
        self.alive.copy_(alive)
        self.affinity.copy_(aff)
        self.sprouted.copy_(sprouted)
        self.displaced.copy_(displaced)


def _sparse(alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense ``(B, N)`` activity -> ``(sorted flat ids, values)``."""
    idx = alpha.reshape(-1).nonzero().squeeze(1)
    return idx, alpha.reshape(-1)[idx]


__all__ = ["Graph", "Ignition", "RSGN", "RSGNConfig", "StepOut", "StepParams", "cap_active", "cap_sparse",
           "inhibit", "inhibit_sparse", "step_dense", "step_sparse"]
