"""Poincaré-ball geometry (curvature -1) for RSGN, on top of ``geoopt.PoincareBall``.

Everything the paper calls "distance" is the geodesic distance of the ball

    d_H(x, y) = arcosh(1 + 2 |x - y|^2 / ((1 - |x|^2) (1 - |y|^2)))

Node positions are stored as Euclidean tangent vectors ``z`` at the origin and mapped into the
ball by ``to_ball(z) = project(expmap0(z))``: any optimiser (plain Adam included) can move ``z``
and the position stays strictly inside the ball, because ``project`` clamps the norm to
``1 - eps`` (geoopt's float32 margin 4e-3) where ``tanh`` would round to 1.
"""
from __future__ import annotations

import geoopt
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


@torch.no_grad()
def knn(p: torch.Tensor, k: int, block: int | None = None) -> torch.Tensor:
    """Indices ``(N, k)`` of each node's ``k`` nearest other nodes by geodesic distance.

    Exact and block-wise: ``O(N^2 d)`` time but ``O(block * N)`` memory (default: about 2^24
    distances per block). This runs on the slow timescale (graph rebuilds), never per sample.
    """
    n = p.shape[0]
    block = block or max(1, min(4096, 2**24 // n))
    if not 1 <= k < n:
        raise ValueError(f"k: need 1 <= k < number of nodes ({n}), got {k}")
    out = torch.empty(n, k, dtype=torch.long, device=p.device)
    for start in range(0, n, block):
        d = pairwise_dist(p[start : start + block], p)  # (b, N)
        rows = torch.arange(start, min(start + block, n), device=p.device)
        d[rows - start, rows] = float("inf")  # no self-loops
        out[start : start + block] = d.topk(k, dim=1, largest=False).indices
    return out


__all__ = [
    "BALL", "dist", "edge_dist", "expmap", "expmap0", "knn", "logmap", "logmap0", "lorentz_dist", "min_dist",
    "pairwise_dist", "project", "to_ball",
]
