"""A batched 2D N-body simulator with four force laws, integrated by classical RK4.

State of one system: positions ``r`` ``(N, 2)``, velocities ``v`` ``(N, 2)``, masses ``m``
``(N,)`` (> 0), charges ``q`` ``(N,)`` and a body mask ``(N,)`` (1 = body exists, 0 = padding;
padded bodies feel and exert no force and never move). Everything is batched over ``B``
independent systems, each with its own force strengths, and vectorised in torch (float64 by
default so conservation checks are meaningful).

Force laws (each strength may be zero; ``r_ij = r_j - r_i``, ``d_ij = |r_ij|``):

* softened gravity: ``F_i = G m_i sum_j m_j r_ij / (d_ij^2 + eps^2)^{3/2}``,
  potential ``-G m_i m_j / sqrt(d_ij^2 + eps^2)`` per pair;
* linear drag: ``F_i = -gamma v_i`` (so ``v(t) = v0 exp(-gamma t / m)``);
* Lorentz force in a constant out-of-plane field ``B z``: ``F_i = q_i v_i x B z
  = q_i B (v_y, -v_x)`` (does no work: speeds are constant under it alone);
* Hooke springs between every pair: ``F_i = k sum_j (d_ij - L) r_ij / d_ij``,
  potential ``k (d_ij - L)^2 / 2`` per pair.

Integrator: classical fourth-order Runge-Kutta on ``(r, v)`` with a fixed step. RK4 (rather
than velocity Verlet) because drag and the Lorentz force depend on velocity, which Verlet
does not handle without an implicit step. ``accelerations_reference`` is a slow loop version
of ``accelerations`` used by the tests.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from .._validation import check_positive

LAWS = ("gravity", "drag", "lorentz", "spring")


@dataclass(frozen=True)
class ForceParams:
    """Strengths of the four laws (0 disables a law) and their shape parameters.

    Attributes:
        gravity: gravitational constant ``G``.
        drag: linear drag coefficient ``gamma`` (force ``-gamma v``).
        lorentz: out-of-plane magnetic field ``B``.
        spring: spring constant ``k`` between every pair of bodies.
        softening: gravitational softening length ``eps`` (>= 0).
        rest_length: spring rest length ``L`` (>= 0).
    """

    gravity: float = 0.0
    drag: float = 0.0
    lorentz: float = 0.0
    spring: float = 0.0
    softening: float = 0.1
    rest_length: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "lorentz":  # the field may point either way
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
                    raise ValueError(f"lorentz: expected a finite number, got {value!r}")
            else:
                check_positive(value, f.name, allow_zero=True)

    @classmethod
    def only(cls, law: str, strength: float, **shape: float) -> "ForceParams":
        """Parameters with a single active law, e.g. ``ForceParams.only("drag", 0.5)``."""
        if law not in LAWS:
            raise ValueError(f"law: unknown {law!r}; expected one of {list(LAWS)}")
        return cls(**{law: strength}, **shape)


def _per_system(value: Any, b: int, ref: torch.Tensor, name: str) -> torch.Tensor:
    """A scalar or ``(B,)`` strength as a ``(B, 1, 1)`` tensor broadcastable over bodies."""
    t = torch.as_tensor(value, dtype=ref.dtype, device=ref.device)
    if t.ndim == 0:
        t = t.expand(b)
    if t.shape != (b,):
        raise ValueError(f"{name}: expected a scalar or shape ({b},), got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or Inf")
    return t[:, None, None]


class Forces:
    """Per-system force parameters for a batch: each field a ``(B,)`` tensor.

    Build with ``Forces.stack([ForceParams, ...])`` or ``Forces.broadcast(ForceParams, B)``.
    """

    def __init__(self, gravity, drag, lorentz, spring, softening, rest_length):
        self.gravity, self.drag, self.lorentz = gravity, drag, lorentz
        self.spring, self.softening, self.rest_length = spring, softening, rest_length

    @classmethod
    def stack(cls, params: list[ForceParams], dtype: torch.dtype = torch.float64) -> "Forces":
        if not params:
            raise ValueError("params: is empty")
        cols = {f.name: torch.tensor([getattr(p, f.name) for p in params], dtype=dtype) for f in fields(ForceParams)}
        return cls(**cols)

    @classmethod
    def broadcast(cls, params: ForceParams, b: int, dtype: torch.dtype = torch.float64) -> "Forces":
        return cls.stack([params] * b, dtype)

    def __len__(self) -> int:
        return int(self.gravity.shape[0])


def _check_state(r, v, m, q, mask):
    if r.ndim != 3 or r.shape[-1] != 2:
        raise ValueError(f"r: expected shape (B, N, 2), got {tuple(r.shape)}")
    if v.shape != r.shape:
        raise ValueError(f"v: shape {tuple(v.shape)} does not match r {tuple(r.shape)}")
    b, n, _ = r.shape
    for t, name in ((m, "m"), (q, "q"), (mask, "mask")):
        if t.shape != (b, n):
            raise ValueError(f"{name}: expected shape ({b}, {n}), got {tuple(t.shape)}")
    for t, name in ((r, "r"), (v, "v"), (m, "m"), (q, "q")):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name}: contains NaN or Inf")
    if bool(((m <= 0) & (mask > 0)).any()):
        raise ValueError("m: masses of existing bodies must be > 0")


def accelerations(r: torch.Tensor, v: torch.Tensor, m: torch.Tensor, q: torch.Tensor,
                  mask: torch.Tensor, forces: Forces) -> torch.Tensor:
    """Accelerations ``(B, N, 2)`` of every body (zero for padded bodies).

    Args:
        r, v: positions and velocities ``(B, N, 2)``.
        m, q: masses and charges ``(B, N)``.
        mask: ``(B, N)`` 1 for real bodies, 0 for padding.
        forces: per-system strengths (``len(forces) == B``).
    """
    b = r.shape[0]
    if len(forces) != b:
        raise ValueError(f"forces: has {len(forces)} systems but r has {b}")
    G = _per_system(forces.gravity, b, r, "gravity")  # (B, 1, 1)
    gam = _per_system(forces.drag, b, r, "drag")
    B = _per_system(forces.lorentz, b, r, "lorentz")
    k = _per_system(forces.spring, b, r, "spring")
    eps = _per_system(forces.softening, b, r, "softening")
    L = _per_system(forces.rest_length, b, r, "rest_length")

    diff = r[:, None, :, :] - r[:, :, None, :]  # (B, N, N, 2): r_j - r_i at [i, j]
    d2 = (diff**2).sum(-1)  # (B, N, N)
    n = r.shape[1]
    # a pair interacts only if both bodies exist and i != j
    pair = mask[:, :, None] * mask[:, None, :] * (1 - torch.eye(n, dtype=r.dtype, device=r.device))  # (B, N, N)

    # gravity: the 1/(d^2+eps^2)^1.5 kernel; masked / diagonal pairs use a safe denominator
    soft = torch.where(pair > 0, d2 + eps**2, torch.ones_like(d2))
    grav_w = G * m[:, None, :] * pair / soft**1.5  # (B, N, N): G m_j / (...)^1.5
    # springs: k (d - L) / d along r_ij; coincident bodies have no direction, so no force
    d = torch.sqrt(torch.where(pair > 0, d2, torch.ones_like(d2)))
    spring_w = torch.where((pair > 0) & (d2 > 0), k * (d - L) / d, torch.zeros_like(d2)) / m[:, :, None].clamp_min(1e-300)
    pairwise = ((grav_w + spring_w)[..., None] * diff).sum(2)  # (B, N, 2)

    inv_m = torch.where(mask > 0, 1 / m.clamp_min(1e-300), torch.zeros_like(m))[..., None]  # (B, N, 1)
    drag = -gam * v * inv_m
    lorentz = (q[..., None] * inv_m) * B * torch.stack([v[..., 1], -v[..., 0]], dim=-1)  # q v x B z / m
    return (pairwise + drag + lorentz) * mask[..., None]


def accelerations_reference(r, v, m, q, mask, forces: Forces) -> torch.Tensor:
    """Slow, loop-based accelerations written straight from the force laws (for tests)."""
    out = torch.zeros_like(r)
    b, n, _ = r.shape
    for s in range(b):
        G, gam, B = float(forces.gravity[s]), float(forces.drag[s]), float(forces.lorentz[s])
        k, eps, L = float(forces.spring[s]), float(forces.softening[s]), float(forces.rest_length[s])
        for i in range(n):
            if mask[s, i] == 0:
                continue
            f = torch.zeros(2, dtype=r.dtype)
            for j in range(n):
                if j == i or mask[s, j] == 0:
                    continue
                rij = r[s, j] - r[s, i]
                dist = float(torch.linalg.norm(rij))
                f = f + G * m[s, i] * m[s, j] * rij / (dist**2 + eps**2) ** 1.5
                if dist > 0:
                    f = f + k * (dist - L) * rij / dist
            f = f - gam * v[s, i]
            f = f + q[s, i] * B * torch.stack([v[s, i, 1], -v[s, i, 0]])
            out[s, i] = f / m[s, i]
    return out


def rk4_step(r, v, m, q, mask, forces: Forces, dt: float):
    """One classical RK4 step of ``dr/dt = v, dv/dt = a(r, v)``; returns ``(r, v)``."""
    def acc(r_, v_):
        return accelerations(r_, v_, m, q, mask, forces)

    k1r, k1v = v, acc(r, v)
    k2r, k2v = v + 0.5 * dt * k1v, acc(r + 0.5 * dt * k1r, v + 0.5 * dt * k1v)
    k3r, k3v = v + 0.5 * dt * k2v, acc(r + 0.5 * dt * k2r, v + 0.5 * dt * k2v)
    k4r, k4v = v + dt * k3v, acc(r + dt * k3r, v + dt * k3v)
    r_new = r + dt / 6 * (k1r + 2 * k2r + 2 * k3r + k4r)
    v_new = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    keep = mask[..., None]  # padded bodies stay exactly where they are
    return r_new * keep + r * (1 - keep), v_new * keep + v * (1 - keep)


def simulate(r0: torch.Tensor, v0: torch.Tensor, m: torch.Tensor, q: torch.Tensor, forces: Forces,
             n_steps: int, dt: float, substeps: int = 1, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Integrate ``B`` systems and return the observed trajectory.

    Args:
        r0, v0: initial positions and velocities ``(B, N, 2)``.
        m, q: masses (> 0 for real bodies) and charges ``(B, N)``.
        forces: ``Forces`` with ``B`` systems.
        n_steps: number of observation intervals to integrate.
        dt: observation interval; RK4 uses ``dt / substeps`` internally.
        substeps: RK4 steps per observation interval.
        mask: ``(B, N)`` body mask (default all ones).

    Returns:
        ``(B, n_steps + 1, N, 4)`` states ``(x, y, vx, vy)`` at times ``0, dt, ..., n_steps dt``
        (padded bodies keep their initial values).
    """
    if mask is None:
        mask = torch.ones(r0.shape[:2], dtype=r0.dtype, device=r0.device)
    mask = mask.to(r0.dtype)
    _check_state(r0, v0, m, q, mask)
    for value, name in ((n_steps, "n_steps"), (substeps, "substeps")):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "n_steps" else 1):
            raise ValueError(f"{name}: expected a non-negative int (substeps >= 1), got {value!r}")
    check_positive(dt, "dt")
    h = dt / substeps
    r, v = r0, v0
    states = [torch.cat([r, v], -1)]
    for _ in range(n_steps):
        for _ in range(substeps):
            r, v = rk4_step(r, v, m, q, mask, forces, h)
        states.append(torch.cat([r, v], -1))
    return torch.stack(states, 1)  # (B, T+1, N, 4)


def energy(r, v, m, mask, forces: Forces) -> torch.Tensor:
    """Total mechanical energy ``(B,)``: kinetic + softened gravity + spring potential."""
    b, n, _ = r.shape
    G = _per_system(forces.gravity, b, r, "gravity")[:, :, 0]  # (B, 1)
    k = _per_system(forces.spring, b, r, "spring")[:, :, 0]
    eps = _per_system(forces.softening, b, r, "softening")[:, :, 0]
    L = _per_system(forces.rest_length, b, r, "rest_length")[:, :, 0]
    kin = 0.5 * (m * mask * (v**2).sum(-1)).sum(-1)  # (B,)
    iu, ju = torch.triu_indices(n, n, offset=1)
    d = (r[:, iu] - r[:, ju]).norm(dim=-1)  # (B, P) each unordered pair once
    pm = mask[:, iu] * mask[:, ju]  # (B, P)
    pot = (-G * m[:, iu] * m[:, ju] / torch.sqrt(d**2 + eps**2) + 0.5 * k * (d - L) ** 2) * pm
    return kin + pot.sum(-1)


def momentum(v, m, mask) -> torch.Tensor:
    """Total linear momentum ``(B, 2)``."""
    return (m[..., None] * v * mask[..., None]).sum(1)


def pseudo_momentum(r, v, m, q, mask, forces: Forces) -> torch.Tensor:
    """``sum_i m_i v_i - q_i r_i x B z`` ``(B, 2)``: conserved by internal forces plus the Lorentz
    force of a uniform field (``d/dt(m v) = q v x B`` is the time derivative of ``q r x B``)."""
    B = _per_system(forces.lorentz, r.shape[0], r, "lorentz")[:, :, 0]  # (B, 1)
    rxb = torch.stack([r[..., 1], -r[..., 0]], -1) * B[..., None]  # (B, N, 2): r x B z
    return ((m[..., None] * v - q[..., None] * rxb) * mask[..., None]).sum(1)
