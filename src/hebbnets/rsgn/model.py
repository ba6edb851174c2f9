"""The sparse Resonant Sparse Geometry Network (registered ``"rsgn"``).

Read top to bottom: config, graph (edge list), ignition, one propagation step (sparse
gather/scatter and its dense reference), inhibition, readout, the model, the slow rules.

Nodes ``i = 1..N`` carry a position ``p_i`` in the Poincaré ball (``p = to_ball(z)``), a threshold
``theta_i`` and a level ``l_i``. Connectivity is an edge list: every node has ``k`` out-edges to
its ``k`` nearest nodes by geodesic distance, rebuilt on the slow timescale (never per sample),
stored as ``nbr (N, k)`` (destinations), ``alive (N, k)`` (pruned edges are dead) and a free
per-edge affinity ``a (N, k)``. Structural plasticity prunes weak edges and sprouts edges to
correlated 2-hop nodes into pruned slots (``sprouted (N, k)``, with the pruned kNN edge each one
``displaced``), so kNN rebuilds neither revive pruned edges nor drop sprouted ones. Edge weights
exist on edges only:

    w_e = sigmoid(a_e) * exp(-d_H(p_src, p_dst) / tau) * softplus(s (l_dst - l_src) + 1)

(``s = +1``: the paper's direction; ``s = -1``: the author's code). A forward pass:

1. ignition: tokens -> spark points ``expmap0(MLP(x_t))``; node ``i`` gets
   ``g_i = max_t exp(-d_H(s_t, p_i)^2 / (2 sigma^2))`` and only the ``ceil(ignite_frac N)``
   largest survive (all other nodes are exactly 0). An ignited node starts from the embedding of
   the token that ignited it (``token_injection``), so the network is not fed the mean only; with
   ``pool_sigma > 0`` it starts from its receptive field instead, the average of all token
   embeddings weighted by ``softmax_t(-d_H(s_t, p_i)^2 / (2 pool_sigma^2))``, computed for the
   ignited nodes only (``O(B n_ign T d_h)``). With ~2 % of nodes ignited, the nearest-token
   start sees only a handful of the tokens; pooling lets the sparse network see all of them.
2. ``n_steps`` propagation steps; only active nodes send, along their alive out-edges:
   ``z_i = sum_{e: j->i} w_e alpha_j + c alpha_i``, ``m_i = sum_{e: j->i} w_e alpha_j h_j``,
   ``g_i = sigmoid((z_i - theta_i) / T)`` with ``T`` annealed, a hard floor
   ``alpha_i = g_i [g_i >= floor]`` (exact zeros), states ``h_i = LN(W_h m_i + b + h_i)``;
   nodes that are neither active nor receive a message stay exactly 0.
3. local inhibition (divisive normalisation over the k-neighbourhood, can only lower):
   ``alpha_i <- alpha_i / (1 + beta mean_{j in kNN(i)} alpha_j)``, the floor again, then an
   optional per-sample cap (k-WTA) on the number of active nodes; ``h_i <- h_i alpha_i``.
4. readout ``o = sum_i alpha_i h_i / (sum_i alpha_i + eps)`` and a linear head.

The sparse path costs ``O(B S |A| k d_h)`` for ``|A|`` active nodes (plus ``O(B N)`` scalar
bookkeeping and ``O(B T N d)`` ignition); ``step_dense`` is the obviously-correct ``N x N``
reference, tested equal on the same graph.
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
from . import geometry as G


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
    self_excitation: float = 0.5  # c: an active node's own contribution to its drive
    floor: float = 0.1  # hard floor: alpha < floor is set to exactly 0
    t_start: float = 1.0  # soft-threshold temperature at the first epoch ...
    t_end: float = 0.1  # ... annealed geometrically to this at the last epoch
    inhibition: float = 1.0  # beta of the divisive normalisation (0: off)
    max_active_frac: float = 0.1  # per-sample cap on active nodes after each step (0: off)
    token_injection: bool = True  # False: every ignited node starts from W_in mean_t(x_t)
    pool_sigma: float = 0.0  # > 0: an ignited node starts from its receptive field (see module docstring)
    positional: bool = False  # append fixed sinusoidal position features to every token
    mode: str = "sparse"  # "sparse" (gather/scatter) or "dense" (N x N reference)
    # -- slow timescale ----------------------------------------------------------------------
    slow_grad: bool = False  # True: positions, thresholds, levels, affinities also get gradients
    hebbian: bool = True  # reward-modulated affinity rule (off: affinities stay at init)
    homeostasis: bool = True
    structural: bool = True  # position drift, pruning and sprouting
    eta_affinity: float = 1.0
    eta_threshold: float = 0.01
    target_activity: float = 0.02  # homeostatic target for each node's mean activity
    eta_position: float = 0.01
    reward_decay: float = 0.9  # EMA of the loss that the reward is measured against
    affinity_bound: float = 6.0  # |a_e| <= bound keeps the Hebbian dynamics bounded
    structure_every: int = 0  # batches between drift / prune / sprout / kNN rebuild (0: each epoch)
    # sigmoid(a_e) below this -> edge pruned. While the loss falls the reward is mostly positive,
    # so the rule rarely depresses an edge: 0.05 (a < -2.9) never fired in reports/rsgn.md;
    # 0.5 prunes every edge the rule depressed at all (a < 0).
    prune_threshold: float = 0.05
    sprout_threshold: float = 0.7  # activity correlation above this -> new edge
    history: int = 100  # batches of mean activity kept for correlations

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("n_nodes", "d_space", "d_hidden", "n_steps", "k", "history"))
        if self.k >= self.n_nodes:
            raise ValueError(f"k: must be < n_nodes ({self.n_nodes}), got {self.k}")
        if isinstance(self.structure_every, bool) or not isinstance(self.structure_every, int) or self.structure_every < 0:
            raise ValueError(f"structure_every: expected an int >= 0, got {self.structure_every!r}")
        for name in ("ignite_frac", "max_active_frac", "target_activity", "prune_threshold", "floor"):
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
        if not 0 <= self.reward_decay < 1:
            raise ValueError(f"reward_decay: must be in [0, 1), got {self.reward_decay!r}")
        if self.level_sign not in ("paper", "code"):
            raise ValueError(f"level_sign: expected 'paper' or 'code', got {self.level_sign!r}")
        if self.mode not in ("sparse", "dense"):
            raise ValueError(f"mode: expected 'sparse' or 'dense', got {self.mode!r}")


# --- graph ------------------------------------------------------------------------------------
@dataclass
class Graph:
    """The weighted edge list of one forward pass (``E = N k`` slots; dead slots have ``w = 0``).

    ``src[e] = e // k`` and ``dst[e] = nbr.flatten()[e]``; ``w (E,)`` the edge weights;
    ``nbr (N, k)`` doubles as each node's inhibition neighbourhood."""

    nbr: torch.Tensor  # (N, k) long
    alive: torch.Tensor  # (N, k) bool
    w: torch.Tensor  # (E,) float, 0 on dead edges

    @property
    def n(self) -> int:
        return self.nbr.shape[0]

    @property
    def k(self) -> int:
        return self.nbr.shape[1]

    def dense(self) -> torch.Tensor:
        """``W (N, N)`` with ``W[src, dst] = w_e`` (reference only: O(N^2) memory)."""
        n, k = self.nbr.shape
        src = torch.arange(n, device=self.nbr.device).repeat_interleave(k)
        W = torch.zeros(n, n, dtype=self.w.dtype, device=self.w.device)
        return W.index_put((src, self.nbr.flatten()), self.w, accumulate=True)


def edge_weights(p: torch.Tensor, nbr: torch.Tensor, alive: torch.Tensor, aff: torch.Tensor,
                 levels: torch.Tensor, tau: float, level_sign: float) -> torch.Tensor:
    """``w (E,)`` from positions ``p (N, d)``, ``nbr / alive / aff (N, k)``, ``levels (N,)``;
    computed on the ``E = N k`` edge slots only, ``O(E d)``."""
    n, k = nbr.shape
    src = torch.arange(n, device=nbr.device).repeat_interleave(k)  # (E,)
    dst = nbr.flatten()  # (E,)
    d = G.dist(p[src], p[dst])  # (E,)
    phi = F.softplus(level_sign * (levels[dst] - levels[src]) + 1.0)  # (E,)
    return torch.sigmoid(aff.flatten()) * torch.exp(-d / tau) * phi * alive.flatten()


# --- the two propagation formulations ---------------------------------------------------------
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


def step_sparse(alpha: torch.Tensor, idx: torch.Tensor, h: torch.Tensor, graph: Graph,
                sp: StepParams) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """One propagation step by gather / scatter over the edges of active nodes only.

    Args:
        alpha: dense activity ``(B, N)`` (exact zeros for inactive nodes).
        idx: sorted flat indices ``(A,)`` into ``B * N`` of the active nodes.
        h: their states ``(A, d_h)`` (rows aligned with ``idx``).
    Returns:
        ``(alpha', idx', h', edges)``: the new dense activity, active indices and states, and
        the number of edges that carried a message.
    """
    B, N = alpha.shape
    k = graph.k
    a_flat = alpha.reshape(-1)  # (B N,)
    node = idx % N  # (A,)
    base = idx - node  # (A,) = b * N
    slots = (node[:, None] * k + torch.arange(k, device=idx.device)).reshape(-1)  # (A k,) edge ids
    row = torch.arange(idx.shape[0], device=idx.device).repeat_interleave(k)  # (A k,) sender row
    live = graph.alive.reshape(-1)[slots]  # (A k,)
    slots, row = slots[live], row[live]  # (M,)
    recv = base[row] + graph.nbr.reshape(-1)[slots]  # (M,) flat receiver ids
    coef = graph.w[slots] * a_flat[idx[row]]  # (M,) w_e alpha_src
    # candidates: every active node plus every receiver; all other nodes stay exactly 0
    cand = torch.unique(torch.cat([idx, recv]))  # (R,) sorted
    at = torch.searchsorted(cand, recv)  # (M,) receiver row in cand
    msg = torch.zeros(cand.shape[0], h.shape[1], dtype=h.dtype, device=h.device)
    msg = msg.index_add(0, at, coef[:, None] * h[row])  # (R, d_h)
    drive = torch.zeros(cand.shape[0], dtype=h.dtype, device=h.device).index_add(0, at, coef)  # (R,)
    drive = drive + sp.self_excitation * a_flat[cand]
    prev = torch.zeros(cand.shape[0], h.shape[1], dtype=h.dtype, device=h.device)
    prev = prev.index_copy(0, torch.searchsorted(cand, idx), h)  # (R, d_h) old state (0 if new)
    g = torch.sigmoid((drive - sp.theta[cand % N]) / sp.temperature)  # (R,)
    a_cand = _hard_floor(g, sp.floor)
    state = sp.norm(sp.transform(msg) + prev)  # (R, d_h)
    new = torch.zeros(B * N, dtype=alpha.dtype, device=alpha.device).index_put((cand,), a_cand)
    new = inhibit(new.reshape(B, N), graph.nbr, sp.inhibition, sp.floor)
    new = cap_active(new, sp.max_active)  # (B, N)
    a_rows = new.reshape(-1)[cand]  # (R,)
    keep = a_rows > 0
    return new, cand[keep], state[keep] * a_rows[keep, None], int(row.shape[0])


def step_dense(alpha: torch.Tensor, h: torch.Tensor, W: torch.Tensor, nbr: torch.Tensor,
               sp: StepParams) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference step with a dense ``W (N, N)`` (``W[src, dst]``) and dense states
    ``h (B, N, d_h)``: ``O(B N^2 d_h)``. Same equations as ``step_sparse``."""
    msg = torch.einsum("bi,ij,bid->bjd", alpha, W, h)  # (B, N, d_h)
    drive = alpha @ W + sp.self_excitation * alpha  # (B, N)
    active = (alpha > 0).to(W.dtype)
    cand = (active + active @ (W > 0).to(W.dtype)) > 0  # (B, N) active or receiving
    g = torch.sigmoid((drive - sp.theta) / sp.temperature)
    new = _hard_floor(g, sp.floor) * cand
    state = sp.norm(sp.transform(msg) + h)  # (B, N, d_h)
    new = cap_active(inhibit(new, nbr, sp.inhibition, sp.floor), sp.max_active)
    return new, state * new[..., None]


def _sinusoid(t: int, dim: int = 8) -> torch.Tensor:
    pos = torch.arange(t, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(1e4) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=1)  # (T, dim)


# --- the model ---------------------------------------------------------------------------------
@register("rsgn")
class RSGN(SlowRuleModel):
    """Sparse RSGN trained by backprop (fast weights) plus slow local rules (see module docstring
    and ``slow_step``). Inputs ``(N, T, D)`` token sequences (``(N, D)`` is read as D scalar
    tokens). ``last_stats`` holds the measured active fraction per step and edges per sample of
    the latest forward pass; ``stats`` accumulates them and the Hebbian/gradient update sizes
    over ``fit``."""

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
        # slow parameters (positions as tangent vectors at the origin, see geometry.to_ball)
        self.z = nn.Parameter(0.3 * torch.randn(n, ds))  # (N, d)
        self.theta = nn.Parameter(torch.full((n,), 0.5))  # (N,)
        self.levels = nn.Parameter(torch.linspace(0.0, 1.0, n))  # (N,)
        self.affinity = nn.Parameter(torch.zeros(n, k))  # (N, k) sigmoid(0) = 0.5
        for p in (self.z, self.theta, self.levels, self.affinity):
            p.requires_grad_(cfg.slow_grad)
        with torch.no_grad():
            nbr = G.knn(G.to_ball(self.z), k)
        self.register_buffer("nbr", nbr)  # (N, k) long
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
        self.head = nn.Linear(dh, d_out)
        # slow-rule bookkeeping (not checkpointed)
        self._history: list[torch.Tensor] = []  # batch-mean activity (N,) per batch
        self._pending: dict[str, Any] | None = None  # statistics of the last training batch
        self._loss_ema: float | None = None
        self._batches = 0
        self._steps_per_epoch = 1
        self.last_stats: dict[str, Any] = {}
        self.stats: dict[str, list[float]] = {}

    # -- pieces of the forward pass -----------------------------------------------------------
    def positions(self) -> torch.Tensor:
        """Node positions ``(N, d)`` strictly inside the ball."""
        return G.to_ball(self.z)

    def graph(self) -> Graph:
        cfg = self.config
        sign = 1.0 if cfg.level_sign == "paper" else -1.0
        w = edge_weights(self.positions(), self.nbr, self.alive, self.affinity, self.levels, cfg.tau, sign)
        return Graph(self.nbr, self.alive, w)

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

    def ignite(self, tok: torch.Tensor, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tokens ``(B, T, d_tok)`` -> ignition ``alpha0 (B, N)`` with exactly
        ``ceil(ignite_frac N)`` non-zeros per sample, the igniting token of each node ``(B, N)``
        and the sparks ``(B, T, d)``."""
        cfg = self.config
        sparks = G.to_ball(self.spark(tok))  # (B, T, d)
        d, t_star = G.min_dist(sparks, p)  # (B, N) geodesic distance to the nearest spark
        g = torch.exp(-(d**2) / (2 * cfg.sigma_ign**2))  # (B, N) = max_t exp(-d(s_t, p_i)^2 / 2 sigma^2)
        n_ign = max(1, math.ceil(cfg.ignite_frac * cfg.n_nodes))
        top = g.detach().topk(n_ign, dim=1).indices  # (B, n_ign)
        keep = torch.zeros_like(g, dtype=torch.bool).scatter_(1, top, True)
        return g * keep, t_star, sparks

    def receptive_field(self, sparks: torch.Tensor, emb: torch.Tensor, b: torch.Tensor,
                        p_nodes: torch.Tensor) -> torch.Tensor:
        """Start states of nodes at ``p_nodes (A, d)`` in samples ``b (A,)``: the token embeddings
        ``emb (B, T, d_h)`` averaged with ``softmax_t(-d_H(s_t, p)^2 / (2 pool_sigma^2))`` over the
        sample's sparks ``sparks (B, T, d)`` -> ``(A, d_h)``."""
        d = G.dist(sparks[b], p_nodes[:, None, :])  # (A, T)
        w = torch.softmax(-(d**2) / (2 * self.config.pool_sigma**2), dim=1)  # (A, T)
        return torch.einsum("at,atd->ad", w, emb[b])

    def _step_params(self) -> StepParams:
        cfg = self.config
        cap = 0 if cfg.max_active_frac == 0 else max(1, math.ceil(cfg.max_active_frac * cfg.n_nodes))
        return StepParams(self.theta, self.transform, self.norm, float(self.temperature), cfg.self_excitation,
                          cfg.floor, cfg.inhibition, cap)

    def propagate(self, tok: torch.Tensor, mode: str | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Ignition + ``n_steps`` steps; returns the readout ``(B, d_h)`` and the dense
        activity ``(B, N)`` after ignition and after every step."""
        cfg = self.config
        mode = mode or cfg.mode
        p = self.positions()
        graph = self.graph()
        alpha, t_star, sparks = self.ignite(tok, p)  # (B, N)
        B, N = alpha.shape
        emb = self.embed(tok)  # (B, T, d_h)
        if not cfg.token_injection:
            emb = emb.mean(1, keepdim=True).expand(-1, tok.shape[1], -1)
        sp = self._step_params()
        trace, edges = [alpha], 0
        if mode == "sparse":
            idx = alpha.reshape(-1).nonzero().squeeze(1)  # (A,) sorted flat ids
            b, i = idx // N, idx % N
            if cfg.pool_sigma > 0 and cfg.token_injection:
                h0 = self.receptive_field(sparks, emb, b, p[i])  # (A, d_h)
            else:
                h0 = emb[b, t_star[b, i]]  # (A, d_h)
            h = h0 * alpha.reshape(-1)[idx, None]  # (A, d_h)
            for _ in range(cfg.n_steps):
                alpha, idx, h, m = step_sparse(alpha, idx, h, graph, sp)
                trace.append(alpha)
                edges += m
            b = idx // N
            a = alpha.reshape(-1)[idx]  # (A,)
            num = torch.zeros(B, h.shape[1], dtype=h.dtype, device=h.device).index_add(0, b, a[:, None] * h)
        else:
            W = graph.dense()  # (N, N)
            if cfg.pool_sigma > 0 and cfg.token_injection:  # every node's field; the inactive ones are zeroed by alpha
                bb = torch.arange(B).repeat_interleave(N)
                h0 = self.receptive_field(sparks, emb, bb, p.repeat(B, 1)).reshape(B, N, -1)
            else:
                h0 = torch.gather(emb, 1, t_star[..., None].expand(-1, -1, emb.shape[-1]))
            h = h0 * alpha[..., None]  # (B, N, d_h)
            for _ in range(cfg.n_steps):
                src_active = (alpha > 0).to(W.dtype)
                edges += int((src_active @ (W > 0).to(W.dtype)).sum())
                alpha, h = step_dense(alpha, h, W, self.nbr, sp)
                trace.append(alpha)
            num = (alpha[..., None] * h).sum(1)  # (B, d_h)
        out = num / (alpha.sum(1, keepdim=True) + 1e-6)  # activity-normalised readout
        self.last_stats = {
            "active_fraction": [float((a > 0).float().mean()) for a in trace],
            "edges_per_sample": edges / B,
        }
        return out, trace

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if self.training:
            self._apply_pending()  # slow rules of the previous batch, after its optimiser step
        tok = self._tokens(x, x_mask)
        out, trace = self.propagate(tok)
        if self.training:
            self._record(trace[-1])
        y = self.head(out)
        return y if self.spec.is_classification else y.reshape(x.shape[0], *self.spec.y_shape)

    # -- training: the shared loop plus the slow rules -------------------------------------
    def _start_fit(self) -> None:
        self.stats = {"active_fraction": [], "edges_per_sample": [], "hebbian_update": [],
                      "gradient_update": [], "reward": [], "pruned": [], "sprouted": []}

    def _record(self, alpha: torch.Tensor) -> None:
        """Keep what the slow rules need from this batch (applied at the next batch)."""
        a = alpha.detach()  # (B, N)
        graph_alive = self.alive.reshape(-1)
        src = torch.arange(self.config.n_nodes).repeat_interleave(self.config.k)
        # co-activation of every edge: batch mean of alpha_src * alpha_dst
        co = (a[:, src] * a[:, self.nbr.reshape(-1)]).mean(0) * graph_alive  # (E,)
        self._pending = {"mean": a.mean(0), "co": co.reshape(self.nbr.shape), "loss": None,
                         "snapshot": self.affinity.detach().clone()}
        self.stats.setdefault("active_fraction", []).append(self.last_stats["active_fraction"][-1])
        self.stats.setdefault("edges_per_sample", []).append(self.last_stats["edges_per_sample"])

    def _apply_pending(self) -> None:
        pend, self._pending = self._pending, None
        if pend is None or pend["loss"] is None:
            return
        if self.config.slow_grad:  # the optimiser's move on the affinities since the last batch
            self.stats.setdefault("gradient_update", []).append(float((self.affinity.detach() - pend["snapshot"]).norm()))
        self.slow_step(pend["mean"], pend["co"], pend["loss"])
        self._batches += 1
        every = self.config.structure_every or self._steps_per_epoch
        if self._batches % every == 0:
            self.structure_step()
        if self._batches % self._steps_per_epoch == 0:
            self._anneal(self._batches // self._steps_per_epoch)

    def _anneal(self, epoch: int) -> None:
        cfg = self.config
        frac = min(1.0, epoch / max(1, cfg.epochs - 1))
        self.temperature.fill_(cfg.t_start * (cfg.t_end / cfg.t_start) ** frac)

    @torch.no_grad()
    def slow_step(self, mean_activity: torch.Tensor, coactivation: torch.Tensor, loss: float) -> dict[str, float]:
        """The per-batch slow rules.

        * reward ``R = EMA(loss) - loss`` (positive when this batch beat the running mean);
        * Hebbian affinity ``a_e += eta_a R coact_e`` on alive edges, clipped to
          ``[-affinity_bound, affinity_bound]``;
        * homeostasis ``theta_i += eta_theta (mean_activity_i - target_activity)``.

        ``mean_activity (N,)``, ``coactivation (N, k)``."""
        cfg = self.config
        base = loss if self._loss_ema is None else self._loss_ema
        reward = base - loss
        self._loss_ema = cfg.reward_decay * base + (1 - cfg.reward_decay) * loss
        delta = 0.0
        if cfg.hebbian:
            step = cfg.eta_affinity * reward * coactivation * self.alive
            new = (self.affinity + step).clamp(-cfg.affinity_bound, cfg.affinity_bound)
            delta = float((new - self.affinity).norm())
            self.affinity.copy_(new)
        if cfg.homeostasis:
            self.theta.add_(cfg.eta_threshold * (mean_activity - cfg.target_activity)).clamp_(0.0, 10.0)
        self._history.append(mean_activity)
        del self._history[: -cfg.history]
        self.stats.setdefault("hebbian_update", []).append(delta)
        self.stats.setdefault("reward", []).append(reward)
        return {"reward": reward, "hebbian_update": delta}

    def _correlation(self, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """Pearson correlation over the activity history of node pairs ``i, j`` (same shape)."""
        hist = torch.stack(self._history)  # (H, N)
        hist = hist - hist.mean(0)
        hist = hist / (hist.norm(dim=0) + 1e-8)
        return (hist[:, i] * hist[:, j]).sum(0)

    @torch.no_grad()
    def structure_step(self) -> dict[str, int]:
        """Slow structural plasticity (every ``structure_every`` batches, default each epoch):
        Riemannian drift of each node towards its positively correlated neighbours, pruning of
        alive edges with ``sigmoid(a) < prune_threshold``, sprouting of one edge per node with a
        dead slot towards its most correlated unconnected 2-hop node (correlation above
        ``sprout_threshold``), then the kNN graph is rebuilt from the new positions (affinity and
        pruned state carried over for edges that remain)."""
        cfg = self.config
        out = {"pruned": 0, "sprouted": 0}
        if not cfg.structural or len(self._history) < 10:
            return out
        n, k = self.nbr.shape
        rows = torch.arange(n)[:, None].expand(n, k)
        corr = self._correlation(rows, self.nbr) * self.alive  # (N, k)
        # drift: p_i <- exp_{p_i}(eta sum_j c_ij^+ log_{p_i}(p_j) / k)
        p = self.positions()
        if cfg.eta_position > 0:
            pull = (corr.clamp_min(0)[..., None] * G.logmap(p[:, None], p[self.nbr])).mean(1)  # (N, d)
            p = G.project(G.expmap(p, cfg.eta_position * pull))
            self.z.copy_(G.logmap0(p))
        # prune
        weak = self.alive & (torch.sigmoid(self.affinity) < cfg.prune_threshold)
        self.alive &= ~weak
        out["pruned"] = int(weak.sum())
        # sprout from 2-hop candidates into dead slots
        cand = self.nbr[self.nbr].reshape(n, k * k)  # (N, k^2)
        c = self._correlation(torch.arange(n)[:, None].expand_as(cand), cand)  # (N, k^2)
        connected = ((cand[:, :, None] == self.nbr[:, None, :]) & self.alive[:, None, :]).any(-1)
        c = c.masked_fill(connected | (cand == torch.arange(n)[:, None]), -2.0)
        best, arg = c.max(1)  # (N,)
        has_dead = (~self.alive).any(1)
        grow = has_dead & (best > cfg.sprout_threshold)
        slot = (~self.alive).float().argmax(1)  # first dead slot
        g_idx = grow.nonzero().squeeze(1)
        g_slot = slot[g_idx]
        # the pruned kNN edge whose slot is taken (a pruned sprout's slot already names it)
        self.displaced[g_idx, g_slot] = torch.where(self.sprouted[g_idx, g_slot], self.displaced[g_idx, g_slot],
                                                    self.nbr[g_idx, g_slot])
        self.nbr[g_idx, g_slot] = cand[g_idx, arg[g_idx]]
        self.alive[g_idx, g_slot] = True
        self.sprouted[g_idx, g_slot] = True
        self.affinity[g_idx, g_slot] = 0.0
        out["sprouted"] = int(grow.sum())
        self.rebuild_graph()
        self.stats.setdefault("pruned", []).append(out["pruned"])
        self.stats.setdefault("sprouted", []).append(out["sprouted"])
        return out

    @torch.no_grad()
    def rebuild_graph(self) -> None:
        """Recompute the kNN edge list from the current positions (slow timescale).

        kNN edges that stay keep their affinity and pruned state (a pruned edge is not revived by
        the rebuild); new kNN edges start alive at affinity 0. Alive sprouted edges keep their
        affinity: a sprouted node that is now among the k nearest becomes that kNN edge, the others
        move into a dead (pruned) slot of the new list and are dropped only if the row has none.
        """
        n, k = self.nbr.shape
        new = G.knn(self.positions(), k)  # (N, k)
        # the kNN edge behind each old slot: a sprouted slot stands for the pruned edge it displaced
        knn_old = torch.where(self.sprouted, self.displaced, self.nbr)  # (N, k)
        knn_alive = self.alive & ~self.sprouted  # (N, k)
        knn_aff = torch.where(self.sprouted, torch.zeros_like(self.affinity), self.affinity)  # (N, k)
        match = new[:, :, None] == knn_old[:, None, :]  # (N, k_new, k_old)
        found = match.any(-1)
        old_slot = match.float().argmax(-1)  # (N, k_new)
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

__all__ = ["Graph", "RSGN", "RSGNConfig", "StepParams", "cap_active", "edge_weights", "inhibit",
           "step_dense", "step_sparse"]
