"""Poincaré-ball geometry (curvature -1) for RSGN, on top of ``geoopt.PoincareBall``.

Everything the paper calls "distance" is the geodesic distance of the ball

    d_H(x, y) = arcosh(1 + 2 |x - y|^2 / ((1 - |x|^2) (1 - |y|^2)))

Node positions are stored as Euclidean tangent vectors ``z`` at the origin and mapped into the
ball by ``to_ball(z) = project(expmap0(z))``: any optimiser (plain Adam included) can move ``z``
and the position stays strictly inside the ball, because ``project`` clamps the norm to
``1 - eps`` (geoopt's float32 margin 4e-3) where ``tanh`` would round to 1.

Nearest neighbours (the kNN graph, ignition's nearest spark) come in two exact forms: the
brute-force ``knn`` (``O(N^2)``, the reference) and ``knn_kdtree`` / ``nearest_kdtree``, which
use that a hyperbolic ball is a Euclidean ball with a shifted centre and radius
(``hyperbolic_ball``): a Euclidean KD-tree (scipy's ``cKDTree``) gives k candidates and so a
bound on the k-th hyperbolic distance, one query with the shifted ball returns every point inside
that bound, and re-ranking those by ``d_H`` gives the exact answer (``O(N log N)`` for a
low-dimensional ball; tested identical to brute force, ties included). Both order each row by
``(distance, index)``, so ties resolve the same way.

For a high space dimension (``d_space`` >~ 20), where KD-trees degrade towards brute force, the
exact route is the Lorentz model: with ``X = ((1 + |x|^2), 2x) / (1 - |x|^2)``,
``cosh d_H(x, y) = -<X, Y>_L = <(X_0, -X_1..d), Y>``, so the nearest node is a maximum inner
product search (MIPS) over the lifted keys; an inner-product index (FAISS ``IndexFlatIP`` exactly,
or its HNSW / IVF indexes approximately, followed by a ``d_H`` re-rank) serves it. This package
keeps to the low-dimensional balls of the paper (``d_space = 3``) and does not depend on FAISS.
"""
from __future__ import annotations

import geoopt
import numpy as np
import torch

#: The unit Poincaré ball, c = 1 (sectional curvature -1).
BALL = geoopt.PoincareBall(c=1.0)

def project(x: torch.Tensor) -> torch.Tensor:
    """Points ``(..., d)`` -> the same points with norm clamped strictly below 1."""
    return BALL.projx(x)


def expmap0(v: torch.Tensor) -> torch.Tensor:
    """Tangent vectors at the origin ``(..., d)`` -> points in the ball ``(..., d)``."""
    return BALL.expmap0(v)


def logmap0(x: torch.Tensor) -> torch.Tensor:
    """Points in the ball ``(..., d)`` -> tangent vectors at the origin ``(..., d)``."""
    return BALL.logmap0(x)


def expmap(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Exponential map at ``x`` of tangent vector ``u`` (both ``(..., d)``)."""
    return BALL.expmap(x, u)


def logmap(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Logarithmic map at ``x`` of ``y`` (both ``(..., d)``): the tangent vector pointing to ``y``."""
    return BALL.logmap(x, y)


def to_ball(z: torch.Tensor) -> torch.Tensor:
    """Parametrisation of positions: ``z (..., d)`` in R^d -> ``project(expmap0(z))`` in the ball."""
    return project(expmap0(z))


def _dist_from_sq(sq: torch.Tensor, xx: torch.Tensor, yy: torch.Tensor) -> torch.Tensor:
    # arcosh(1 + 2t) == 2 asinh(sqrt(t)): no cancellation near 0, exactly 0 for coincident
    # points, and the clamp gives a zero (finite) gradient there instead of arcosh'(1) = inf
    t = sq / ((1.0 - xx).clamp_min(1e-15) * (1.0 - yy).clamp_min(1e-15))
    return 2.0 * torch.asinh(t.clamp_min(1e-30).sqrt())


def dist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Geodesic distance ``(...)`` between broadcastable point tensors ``(..., d)``.

    The closed form above: geoopt's ``BALL.dist`` (Moebius form) agrees in the interior but
    saturates near the boundary (its artanh clamp caps distances at ~16.8 in float64), while this
    form stays exact there (tested against the Lorentz model)."""
    return _dist_from_sq(((x - y) ** 2).sum(-1), (x * x).sum(-1), (y * y).sum(-1))


def _pairwise_t(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # t = |x - y|^2 / ((1 - |x|^2)(1 - |y|^2)), monotone in the distance; (..., M, K)
    xx = (x * x).sum(-1)  # (..., M)
    yy = (y * y).sum(-1)  # (..., K)
    sq = (xx[..., :, None] + yy[..., None, :] - 2.0 * x @ y.transpose(-1, -2)).clamp_min(0.0)  # (..., M, K)
    return sq / ((1.0 - xx).clamp_min(1e-15)[..., :, None] * (1.0 - yy).clamp_min(1e-15)[..., None, :])


def _dist_t(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # t of broadcastable point pairs (..., d) -> (...), from the difference (exact near 0)
    return ((x - y) ** 2).sum(-1) / ((1.0 - (x * x).sum(-1)).clamp_min(1e-15) * (1.0 - (y * y).sum(-1)).clamp_min(1e-15))


def nearest_t(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For every ``y`` point the smallest distance proxy ``t`` to an ``x`` point and its index:
    ``x (..., M, d)``, ``y (K, d)`` -> ``(..., K)``, ``(..., K)``; equal to
    ``_pairwise_t(x, y).min(-2)`` (tested; ``t`` is then recomputed from the chosen point's
    difference, so it is exact where the expanded form cancels) in one matmul. For a fixed ``y`` the factor
    ``1 / (1 - |y|^2)`` of ``t`` is common to every ``x``, so the argmin over ``x`` is that of
    ``c_x (|x|^2 - 2 x.y + |y|^2)`` with ``c_x = 1 / (1 - |x|^2)``: the product of
    ``[c_x |x|^2, c_x, -2 c_x x]`` and ``[1, |y|^2, y]``, ``d + 2`` wide."""
    xx = (x * x).sum(-1, keepdim=True)  # (..., M, 1)
    c = 1.0 / (1.0 - xx).clamp_min(1e-15)
    yy = (y * y).sum(-1, keepdim=True)  # (K, 1)
    left = torch.cat([c * xx, c, -2.0 * c * x], dim=-1)  # (..., M, d + 2)
    right = torch.cat([torch.ones_like(yy), yy, y], dim=-1)  # (K, d + 2)
    arg = (right @ left.transpose(-1, -2)).argmin(dim=-1)  # (..., K, M) -> (..., K): reduce the contiguous dim
    # t of the chosen point from the difference itself: no cancellation (the expanded form loses
    # digits near the boundary, where c_x is large)
    near = torch.gather(x, -2, arg[..., None].expand(*arg.shape, x.shape[-1]))  # (..., K, d)
    return _dist_t(near, y), arg


def _t_to_dist(t: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.asinh(t.clamp_min(1e-30).sqrt())


def pairwise_dist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """All geodesic distances between ``x (..., M, d)`` and ``y (..., K, d)`` -> ``(..., M, K)``.

    Uses the expanded squared norm (a matmul), so memory is ``M * K`` and not ``M * K * d``;
    agrees with ``dist`` (tested)."""
    return _t_to_dist(_pairwise_t(x, y))


def min_dist(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For every ``y`` point its distance to the nearest ``x`` point and that point's index:
    ``x (..., M, d)``, ``y (..., K, d)`` -> ``(..., K)``, ``(..., K)``. Same as
    ``pairwise_dist(x, y).min(-2)`` (tested) but the transcendental runs on ``K`` values only,
    since the distance is monotone in ``t``."""
    t, arg = _pairwise_t(x, y).min(dim=-2)
    return _t_to_dist(t), arg


def edge_dist(p: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Geodesic length ``(E,)`` of edges ``src -> dst`` (``(E,)`` long) between positions ``p (N, d)``."""
    return dist(p[src], p[dst])


def lorentz_dist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Reference distance through the hyperboloid (Lorentz) model: lift ``x, y (..., d)`` to
    ``X = ((1 + |x|^2), 2x) / (1 - |x|^2)`` and return ``arcosh(-<X, Y>_L)``."""

    def lift(p: torch.Tensor) -> torch.Tensor:
        n = (p * p).sum(-1, keepdim=True)
        return torch.cat([1.0 + n, 2.0 * p], dim=-1) / (1.0 - n)

    X, Y = lift(x), lift(y)
    inner = -X[..., 0] * Y[..., 0] + (X[..., 1:] * Y[..., 1:]).sum(-1)
    return torch.acosh((-inner).clamp_min(1.0))


def _lowest_k_rows(t: torch.Tensor, k: int) -> torch.Tensor:
    """Column indices ``(M, k)`` of the ``k`` smallest entries of each row of ``t (M, N)``,
    ordered by ``(value, index)``: among equal values the smaller index wins (deterministic
    ties, the order ``knn_kdtree`` uses too)."""
    kth = t.topk(k, dim=1, largest=False).values[:, -1:]  # (M, 1) the k-th smallest value
    below = t < kth
    tied = t == kth
    need = k - below.sum(1, keepdim=True)  # how many of the tied entries are kept
    take = below | (tied & (tied.cumsum(1) <= need))  # exactly k per row, lowest indices of the ties
    cols = take.nonzero()[:, 1].reshape(t.shape[0], k)  # ascending index within each row
    order = t.gather(1, cols).sort(dim=1, stable=True).indices  # by value; ties keep index order
    return cols.gather(1, order)


@torch.no_grad()
def knn(p: torch.Tensor, k: int, block: int | None = None) -> torch.Tensor:
    """Brute-force reference: indices ``(N, k)`` of each node's ``k`` nearest other nodes by
    geodesic distance, each row ordered by ``(distance, index)``.

    Exact and block-wise: ``O(N^2 d)`` time but ``O(block * N * d)`` memory (default: about
    2^24 coordinate differences per block); computed in ``p``'s dtype. ``knn_kdtree`` is the fast path.
    """
    n = p.shape[0]
    block = block or max(1, min(4096, 2**24 // (n * max(1, p.shape[-1]))))
    _check_k(k, n)
    out = torch.empty(n, k, dtype=torch.long, device=p.device)
    xx = (p * p).sum(-1)
    for start in range(0, n, block):
        x = p[start : start + block]
        # differences, not the expanded |x|^2 + |y|^2 - 2 x.y: a matmul rounds duplicate points
        # differently by their column position on some CPUs, which breaks exact distance ties
        sq = ((x[:, None, :] - p[None, :, :]) ** 2).sum(-1)  # (b, N)
        t = sq / ((1.0 - xx[start : start + block]).clamp_min(1e-15)[:, None] * (1.0 - xx).clamp_min(1e-15)[None, :])
        rows = torch.arange(start, min(start + block, n), device=p.device)
        t[rows - start, rows] = float("inf")  # no self-loops
        out[start : start + block] = _lowest_k_rows(t, k)
    return out


def _check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < n:
        raise ValueError(f"k: need an int with 1 <= k < number of nodes ({n}), got {k!r}")


# --- exact nearest neighbours through a Euclidean KD-tree ------------------------------------
def hyperbolic_ball(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The set ``{y : |x - y|^2 / ((1 - |x|^2)(1 - |y|^2)) <= t}`` (the hyperbolic ball around
    ``x`` of radius ``r = 2 asinh(sqrt t)``) as a Euclidean ball: ``x (M, d)``, ``t (M,)`` ->
    centres ``(M, d)`` and radii ``(M,)``.

    With ``rho = tanh(r / 2)`` (so ``rho^2 = t / (1 + t)``): centre ``x (1 - rho^2) / (1 - rho^2 |x|^2)``,
    radius ``rho (1 - |x|^2) / (1 - rho^2 |x|^2)`` (the image of the origin-centred ball of radius
    ``rho`` under the Moebius translation taking 0 to ``x``; tested on sampled boundary points)."""
    rho2 = t / (1.0 + t)
    xx = (x * x).sum(-1)
    den = 1.0 - rho2 * xx
    return x * ((1.0 - rho2) / den)[:, None], np.sqrt(rho2) * (1.0 - xx) / den


def _t_np(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # the distance's monotone proxy t, elementwise on rows of x, y (..., d); float64
    return ((x - y) ** 2).sum(-1) / ((1.0 - (x * x).sum(-1)) * (1.0 - (y * y).sum(-1)))


def _tree_knn(tree, keys: np.ndarray, q: np.ndarray, k: int, self_index: np.ndarray | None,
              workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact hyperbolic kNN of queries ``q (M, d)`` among ``keys (K, d)`` held in ``tree``:
    ``(M, k)`` indices ordered by ``(t, index)`` and their ``t`` values. ``self_index (M,)``:
    the key each query must not return (itself), or None."""
    m, n_keys = q.shape[0], keys.shape[0]
    kk = k + (self_index is not None)
    # 1. Euclidean candidates bound each query's k-th hyperbolic distance from above
    _, cand = tree.query(q, [*range(1, kk + 1)], workers=workers)  # (M, kk)
    t = _t_np(q[:, None, :], keys[cand])
    if self_index is not None:
        t[cand == self_index[:, None]] = np.inf
    bound = np.partition(t, k - 1, axis=1)[:, k - 1]  # (M,)
    # 2. every key inside that hyperbolic ball: the k2 Euclidean nearest of the shifted centre,
    #    or, where the ball holds more than k2 keys, a ball query
    centre, radius = hyperbolic_ball(q, bound)
    radius = radius * (1.0 + 1e-9) + 1e-12  # rounding slack: a superset is harmless
    k2 = min(n_keys, 2 * kk + 8)
    dist, near = tree.query(centre, [*range(1, k2 + 1)], workers=workers)  # (M, k2)
    complete = (dist[:, -1] > radius) | (k2 == n_keys)
    inside = (dist <= radius[:, None]) & complete[:, None]
    rows, cols = np.nonzero(inside)
    cols = near[rows, cols]
    rest = np.nonzero(~complete)[0]
    if len(rest):
        found = tree.query_ball_point(centre[rest], radius[rest], workers=workers)
        sizes = np.fromiter((len(f) for f in found), dtype=np.int64, count=len(found))
        rows = np.concatenate([rows, np.repeat(rest, sizes)])
        cols = np.concatenate([cols, np.concatenate([np.asarray(f, dtype=np.int64) for f in found])])
    # 3. re-rank by t (then index) and keep the k first of each row
    if self_index is not None:
        keep = cols != self_index[rows]
        rows, cols = rows[keep], cols[keep]
    tv = _t_np(q[rows], keys[cols])
    order = np.lexsort((cols, tv, rows))
    rows, cols, tv = rows[order], cols[order], tv[order]
    starts = np.searchsorted(rows, np.arange(m))
    rank = np.arange(len(rows)) - starts[rows]
    sel = rank < k
    if int(sel.sum()) != m * k:  # cannot happen: step 1's candidates lie in the ball
        raise RuntimeError("knn_kdtree: a query has fewer than k candidates in its ball")
    return cols[sel].reshape(m, k), tv[sel].reshape(m, k)


@torch.no_grad()
def knn_kdtree(p: torch.Tensor, k: int, workers: int = 1, chunk: int = 2**16) -> torch.Tensor:
    """Exact kNN graph in sub-quadratic time: the same ``(N, k)`` indices as ``knn`` (each row
    ordered by ``(distance, index)``; tested), from a scipy ``cKDTree`` over the positions
    ``p (N, d)`` (see the module docstring). Float64 internally; queries in chunks of
    ``chunk`` nodes bound the memory; ``workers`` threads for the tree queries."""
    from scipy.spatial import cKDTree

    n = p.shape[0]
    _check_k(k, n)
    keys = p.detach().cpu().double().numpy()
    tree = cKDTree(keys, balanced_tree=False, compact_nodes=False)
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        out[start:stop] = _tree_knn(tree, keys, keys[start:stop], k, np.arange(start, stop), workers)[0]
    return torch.from_numpy(out).to(p.device)


def nearest_kdtree(keys: np.ndarray, queries: np.ndarray, workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """For each query ``(M, d)`` its hyperbolically nearest key among ``keys (K, d)`` (ties: the
    smaller index), exactly, in ``O((M + K) log K)``: ``(t (M,), index (M,))`` with ``t`` the
    monotone distance proxy (``d_H = 2 asinh(sqrt t)``). Float64 arrays."""
    from scipy.spatial import cKDTree

    idx, t = _tree_knn(cKDTree(keys), keys, queries, 1, None, workers)
    return t[:, 0], idx[:, 0]


#: relative margin by which ``nearest_kdtree_bounded`` leaves out a query: far above float64
#: rounding (~1e-16) and float32's half-ulp (~6e-8), so a left-out query's ``t`` stays strictly
#: above the bound even after the caller rounds every ``t`` to float32
_BOUND_MARGIN = 1e-6


class QueryGroups:
    """The queries of ``nearest_kdtree_bounded`` (the node positions, shared by every sample of a
    batch): a KD-tree over them, and groups of ``size`` neighbours (queries sorted by a Morton
    (z-order) code of their coordinates, cut into consecutive runs). Per query: its group, the
    distance to the group's centre (the group's mean point) and ``1 - |q|^2``. The bounds it serves
    hold for any grouping; compact groups only make them tight. ``q (M, d)`` float64."""

    def __init__(self, q: np.ndarray, size: int = 32, bits: int = 10):
        from scipy.spatial import cKDTree

        q = np.asarray(q)
        if q.ndim != 2 or q.shape[0] == 0 or not np.isfinite(q).all():
            raise ValueError(f"q: expected a non-empty finite (M, d) array of positions, got shape {q.shape}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size: expected an int >= 1, got {size!r}")
        m, d = q.shape
        lo = q.min(0)
        span = max(float((q.max(0) - lo).max()), 1e-300)
        cell = np.minimum(((q - lo) / span * (2**bits)).astype(np.int64), 2**bits - 1)  # (M, d)
        code = np.zeros(m, dtype=np.int64)
        if d == 3 and bits <= 10:  # spread each coordinate's bits two apart (bit b -> bit 3 b), then interleave
            for j in range(3):
                x = cell[:, j]
                x = (x | (x << 16)) & 0x030000FF
                x = (x | (x << 8)) & 0x0300F00F
                x = (x | (x << 4)) & 0x030C30C3
                x = (x | (x << 2)) & 0x09249249
                code |= x << j
        else:
            for b in range(bits):  # bit b of coordinate j -> bit b d + j
                for j in range(d):
                    code |= ((cell[:, j] >> b) & 1) << (b * d + j)
        order = np.argsort(code, kind="stable")
        self.group = np.empty(m, dtype=np.int64)
        self.group[order] = np.arange(m) // size
        n_groups = (m + size - 1) // size
        count = np.bincount(self.group, minlength=n_groups).astype(np.float64)
        self.centre = np.stack([np.bincount(self.group, q[:, j], n_groups) for j in range(d)], 1) / count[:, None]
        self.radius = np.sqrt(((q - self.centre[self.group]) ** 2).sum(-1))  # (M,) distance to the centre
        self.one_minus = 1.0 - (q * q).sum(-1)  # (M,)
        self.q = q
        self.tree = cKDTree(q, balanced_tree=False, compact_nodes=False)


def _lowest_from_keys(keys: np.ndarray, groups: QueryGroups, n_low: int, workers: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queries that may be among the ``n_low`` of smallest nearest-key ``t``, found from the
    keys' side (each key's few Euclidean nearest queries bound the ``n_low``-th smallest ``t`` by ``cap``,
    then each key's hyperbolic ball of that size): queries ``(C,)`` with their exact nearest-key
    ``t`` and key (``nearest_kdtree``'s, ties to the smaller key). Every query left out has
    ``t > cap``, and ``n_low`` queries have ``t <= cap / (1 + _BOUND_MARGIN)``."""
    q, m, n_keys = groups.q, groups.q.shape[0], keys.shape[0]
    kk = min(m, -(-n_low // n_keys) + 1)
    while True:  # each key's kk Euclidean nearest queries: upper bounds of those queries' t
        _, near = groups.tree.query(keys, [*range(1, kk + 1)], workers=workers)  # (K, kk)
        tv = _t_np(q[near], keys[:, None, :])  # (K, kk)
        best = np.full(m, np.inf)
        np.minimum.at(best, near.reshape(-1), tv.reshape(-1))
        found = np.isfinite(best)
        if int(found.sum()) >= n_low or kk == m:
            break
        kk = min(m, 2 * kk)
    cap = float(np.partition(best[found], n_low - 1)[n_low - 1]) * (1.0 + _BOUND_MARGIN)
    # every (key, query) pair with t <= cap: a query with t <= cap has all its nearest keys among them
    centre, radius = hyperbolic_ball(keys, np.full(n_keys, cap))
    radius = radius * (1.0 + 1e-9) + 1e-12  # rounding slack: a superset is harmless
    found = groups.tree.query_ball_point(centre, radius, workers=workers, return_sorted=False)
    sizes = np.fromiter((len(f) for f in found), dtype=np.int64, count=n_keys)
    cols = np.repeat(np.arange(n_keys), sizes)  # keys
    rows = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])  # queries
    tv = _t_np(q[rows], keys[cols])  # the t _tree_knn ranks by, to the last bit
    order = np.lexsort((cols, tv, rows))  # per query by (t, key)
    rows, cols, tv = rows[order], cols[order], tv[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    rows, cols, tv = rows[first], cols[first], tv[first]
    exact = tv <= cap  # then every nearest key of the query lies in the balls: exact
    return rows[exact], tv[exact], cols[exact]


def nearest_kdtree_bounded(keys: np.ndarray, groups: QueryGroups, n_low: int, t_limit: float = -np.inf,
                           workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``nearest_kdtree(keys, groups.q)`` where it can matter, for a caller that only reads the
    ``n_low`` queries of smallest ``t`` (their ``t`` and index) and which queries have
    ``t <= t_limit``: returns ``(t (M,), index (M,))`` equal to ``nearest_kdtree``'s (the same
    ``t`` formula, ties to the smaller key) for every query that could be among the ``n_low``
    smallest or whose side of ``t_limit`` its bounds leave open; for every other query an upper
    bound of its ``t`` with index -1 where the bound puts it at or below ``t_limit``, else ``inf``
    and -1. Every query not returned exactly has a true ``t`` above the ``n_low``-th smallest by a
    relative ``_BOUND_MARGIN``, so the ``n_low`` smallest and the side of ``t_limit`` of every
    query are those of ``nearest_kdtree`` (after rounding to float32 too; tested).

    The ``n_low`` smallest come from the keys' side (``_lowest_from_keys``: a key's hyperbolic
    ball holds the few queries nearest to it). The side of ``t_limit``, per query ``q`` in group
    ``g`` (centre ``c_g``, ``r_q = |q - c_g|``), with ``s_g`` the Euclidean nearest key of ``c_g``
    at distance ``e_g``: ``t <= t(q, s_g)`` (a real pair) and
    ``t >= max(e_g - r_q, 0)^2 / ((1 - |q|^2)(1 - min_s |s|^2))`` (every key is at least
    ``e_g - r_q`` from ``q``, and ``1 - |s|^2 <= 1 - min |s|^2``); the queries these bounds leave
    on both sides of ``t_limit`` count the keys in their hyperbolic ball of ``t_limit`` shrunk and
    grown by the margin, and only those still open (``t`` within the margin of ``t_limit``) are
    searched one by one. Tree work: one query per group, per key and per open query, instead of
    one nearest-key search per query."""
    from scipy.spatial import cKDTree

    q, m = groups.q, groups.q.shape[0]
    if not 1 <= n_low <= m:
        raise ValueError(f"n_low: need 1 <= n_low <= number of queries ({m}), got {n_low!r}")
    t = np.full(m, np.inf)
    idx = np.full(m, -1, dtype=np.int64)
    tree = cKDTree(keys)
    open_ = np.zeros(0, dtype=np.int64)
    if t_limit > -np.inf:
        e, near = tree.query(groups.centre, 1, workers=workers)  # (n_groups,)
        upper = _t_np(q, keys[near[groups.group]])  # (M,)
        gap = np.maximum(e[groups.group] - groups.radius, 0.0)
        lower = gap * gap / (groups.one_minus * (1.0 - float((keys * keys).sum(-1).min())))  # (M,)
        t = np.where(upper <= t_limit, upper, t)
        open_ = np.nonzero((lower <= t_limit * (1.0 + _BOUND_MARGIN)) & (upper > t_limit))[0]
    rows, tv, cols = _lowest_from_keys(keys, groups, n_low, workers)
    t[rows], idx[rows] = tv, cols
    open_ = open_[idx[open_] < 0]
    if len(open_):
        # most open queries are settled by counting the keys in two Euclidean balls: one a little
        # inside their hyperbolic ball of t_limit (a key there: t <= t_limit, and t_limit bounds t
        # from above), one a little outside it (no key there: t > t_limit by the margin)
        c, r = hyperbolic_ball(q[open_], np.full(len(open_), t_limit * (1.0 - _BOUND_MARGIN)))
        inside = tree.query_ball_point(c, np.maximum(r * (1.0 - 1e-9) - 1e-12, 0.0), workers=workers,
                                       return_length=True) > 0
        t[open_[inside]] = t_limit
        open_ = open_[~inside]
        c, r = hyperbolic_ball(q[open_], np.full(len(open_), t_limit * (1.0 + _BOUND_MARGIN)))
        open_ = open_[tree.query_ball_point(c, r * (1.0 + 1e-9) + 1e-12, workers=workers, return_length=True) > 0]
    if len(open_):  # the rest (near t_limit itself) exactly
        i, tv = _tree_knn(tree, keys, q[open_], 1, None, workers)
        t[open_], idx[open_] = tv[:, 0], i[:, 0]
    return t, idx


__all__ = [
    "BALL", "dist", "edge_dist", "expmap", "expmap0", "hyperbolic_ball", "knn", "knn_kdtree", "logmap", "logmap0",
    "lorentz_dist", "min_dist", "nearest_kdtree", "nearest_kdtree_bounded", "pairwise_dist", "project",
    "QueryGroups", "to_ball",
]
