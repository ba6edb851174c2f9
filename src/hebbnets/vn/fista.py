"""Batched sparse coding in Gram form, and the slow per-sample reference it must agree with.

Every VN layer solves, per sample, the LASSO

    min_g  f(g) + lam ||g||_1,     f(g) = 1/2 g^T G g - b^T g   (+ a constant)

with ``G`` the (precision-weighted) Gram matrix of the layer's atoms and ``b`` the
correlations of the atoms with the clamped neighbours (``docs/vn.md`` section 2).
``fista`` runs monotone FISTA (Beck and Teboulle 2009, "MFISTA") for a whole batch with the
Hessian given as an operator applied once per iteration (``H y`` for the momentum point is a
linear combination of products already computed); ``fista_gram`` is it with a Gram matrix, one
``(B, K) x (K, K)`` GEMM per iteration. ``lasso_optimality_residual`` certifies a solution
independently of the solver.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch


def soft_threshold(z: torch.Tensor, thresh: torch.Tensor | float, nonneg: bool = False) -> torch.Tensor:
    """Proximal map of ``thresh * ||.||_1`` (plus the indicator of ``g >= 0`` if ``nonneg``).

    Entries with ``|z| <= thresh`` become exact zeros.
    """
    if nonneg:
        return (z - thresh).clamp_min(0.0)
    if not isinstance(thresh, torch.Tensor):
        thresh = torch.tensor(thresh, dtype=z.dtype, device=z.device)
    # z - clip(z, -t, t): two passes instead of four, and z - z is an exact zero
    return z - torch.clamp(z, -thresh, thresh)


def keep_topk(g: torch.Tensor, k: int) -> torch.Tensor:
    """Zero all but the ``k`` largest-magnitude entries of each row of ``g`` ``(B, K)``."""
    if k <= 0 or k >= g.shape[-1]:
        return g
    idx = g.abs().topk(k, dim=-1).indices  # (B, k)
    keep = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True)
    return torch.where(keep, g, torch.zeros_like(g))


def largest_eigenvalue(G: torch.Tensor | Callable[[torch.Tensor], torch.Tensor], n_iter: int = 100,
                       like: torch.Tensor | None = None) -> torch.Tensor:
    """Largest eigenvalue of symmetric PSD ``G`` ``(K, K)`` or ``(B, K, K)`` by power iteration.

    ``G`` may instead be an operator ``v -> G v`` on ``(B, K)`` vectors (per-sample matrices
    never formed); ``like`` ``(B, K)`` then gives the batch shape and dtype.

    Returns a scalar tensor or ``(B,)``. The start vector is fixed (seeded), so the result is
    deterministic. Uses the Rayleigh quotient of the final iterate.
    """
    if isinstance(G, torch.Tensor):
        apply = lambda v: (G @ v.unsqueeze(-1)).squeeze(-1)  # noqa: E731
        shape, ref = G.shape[:-1], G
    else:
        if like is None or like.ndim != 2:
            raise ValueError("like: an operator needs a (B, K) tensor giving its vectors' shape")
        apply, shape, ref = G, like.shape, like
    k = shape[-1]
    gen = torch.Generator().manual_seed(0)
    v = torch.rand(k, generator=gen, dtype=torch.float64).to(ref) + 0.5  # positive: not orthogonal to
    v = v.expand(*shape).clone()  # (..., K)                              the Perron vector of a Gram matrix
    for _ in range(n_iter):
        w = apply(v)
        v = w / w.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(ref.dtype).tiny)
    return (v * apply(v)).sum(-1)


@dataclass
class FistaResult:
    """Output of ``fista`` / ``fista_gram``.

    Attributes:
        codes: ``(B, ...)`` solution, shaped like ``b``.
        objective: ``(B,)`` value of ``1/2 <g, H g> - <b, g> + lam ||g||_1`` at ``codes``.
        iterations: iterations run.
        converged: every row's prox-gradient residual fell below ``tol``.
        history: ``(iterations + 1, B)`` objective after each iteration (if requested).
    """

    codes: torch.Tensor
    objective: torch.Tensor
    iterations: int
    converged: bool
    history: torch.Tensor | None = None


def _rowsum(t: torch.Tensor) -> torch.Tensor:
    """Sum over every dim but the first: ``(B, ...) -> (B,)``."""
    return t.reshape(t.shape[0], -1).sum(-1)


def lasso_gram_objective(g: torch.Tensor, Gg: torch.Tensor, b: torch.Tensor, lam: float) -> torch.Tensor:
    """``1/2 <g, H g> - <b, g> + lam ||g||_1`` per row, given the product ``Gg = H g``. ``(B,)``

    ``g``, ``Gg`` and ``b`` are ``(B, ...)`` of one shape (vectors ``(B, K)`` or matrices
    ``(B, Ku, Ks)``)."""
    return _rowsum((0.5 * Gg - b).mul(g)) + lam * _rowsum(g.abs())


def keep_topk_rows(g: torch.Tensor, k: int) -> torch.Tensor:
    """``keep_topk`` on ``(B, ...)`` codes, counting all entries of a sample together."""
    if g.ndim == 2:
        return keep_topk(g, k)
    return keep_topk(g.reshape(g.shape[0], -1), k).reshape(g.shape)


def lasso_optimality_residual(
    G: torch.Tensor | Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, g: torch.Tensor, lam: float,
    nonneg: bool = False,
) -> torch.Tensor:
    """Largest violation of the LASSO's optimality (KKT) conditions, per row. ``(B,)``

    For ``min_g 1/2 g^T G g - b^T g + lam ||g||_1`` (``g >= 0`` with ``nonneg``) with gradient
    ``d = G g - b`` of the smooth part, ``g`` is optimal iff every entry satisfies

        g_i != 0:  d_i + lam sign(g_i) = 0
        g_i == 0:  |d_i| <= lam            (nonneg: d_i + lam >= 0)

    The residual is the largest absolute violation over the entries. It is zero exactly at a
    solution and, unlike a solver's own stopping test, does not depend on the path taken, so
    two solvers (or two product forms of one solver) are compared by it and by the objective.
    Under a top-k constraint the problem is not a LASSO and this is no certificate.

    Args:
        G: ``(K, K)`` or ``(B, K, K)`` Gram matrix, or the operator ``v -> H v`` that ``fista``
            takes (then ``b`` and ``g`` may be ``(B, ...)``, e.g. matrix codes).
        b: ``(B, K)``; g: ``(B, K)`` codes.
        lam: l1 weight; nonneg: the ``g >= 0`` constraint.
    """
    if callable(G):
        d = G(g) - b
    elif G.ndim == 2:
        d = g @ G - b  # (B, K)
    else:
        d = torch.bmm(G, g.unsqueeze(-1)).squeeze(-1) - b
    return kkt_violation(d, g, lam, nonneg)


def kkt_violation(d: torch.Tensor, g: torch.Tensor, lam: float, nonneg: bool = False) -> torch.Tensor:
    """``lasso_optimality_residual`` from the smooth part's gradient ``d`` at ``g`` (both
    ``(B, ...)``); returns ``(B,)``."""
    active = g != 0
    if nonneg:
        inactive_violation = (-(d + lam)).clamp_min(0.0)
    else:
        inactive_violation = (d.abs() - lam).clamp_min(0.0)
    viol = torch.where(active, (d + lam * torch.sign(g)).abs(), inactive_violation)
    return viol.reshape(viol.shape[0], -1).amax(dim=-1)


def fista(
    hessian: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    lam: float,
    lip: torch.Tensor | float,
    g0: torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-5,
    nonneg: bool = False,
    topk: int = 0,
    record_history: bool = False,
    monotone: bool = True,
) -> FistaResult:
    """Solve ``min_g 1/2 <g, H g> - <b, g> + lam ||g||_1`` for every sample at once, with ``H``
    given only as a linear operator (the one loop behind every VN inference).

    Args:
        hessian: ``v -> H v`` for ``(B, ...)`` tensors shaped like ``b``; ``H`` symmetric
            positive semi-definite per sample (a shared Gram matrix, one per sample, or a
            factorised form such as ``U^T U G S^T S`` that is never formed as a matrix).
        b: ``(B, ...)`` linear term (``(B, K)`` vectors or ``(B, Ku, Ks)`` matrix codes).
        lam: l1 weight (>= 0).
        lip: Lipschitz constant of the smooth part (largest eigenvalue of ``H``): scalar or
            ``(B,)``.
        g0: warm start shaped like ``b`` (zeros when ``None``).
        max_iter: iteration budget.
        tol: stop when every row's ``||p - y|| / max(||p||, 1e-12)`` (prox-gradient residual) is
            below ``tol``. Use a tolerance the dtype can reach (not below ~1e-10 in float64,
            ~1e-6 in float32); to certify a solution use ``lasso_optimality_residual``.
        nonneg: constrain ``g >= 0``.
        topk: keep only the ``k`` largest entries of each sample after every prox step (0 =
            off). The problem is then non-convex; the monotone step still never increases the
            objective.
        record_history: also return the objective after every iteration.
        monotone: accept a step only if it does not increase the objective (MFISTA, Beck and
            Teboulle 2009). With ``False`` this is plain FISTA: fewer element-wise passes per
            iteration, but the objective may rise temporarily (never use it with ``topk``).

    The monotone variant accepts a proximal point only if it does not increase the objective,
    so the objective is non-increasing by construction, while the momentum still uses the
    proximal point (this keeps FISTA's O(1/k^2) rate). ``H y`` for the momentum point is a
    linear combination of products already computed, so each iteration applies ``H`` once.
    """
    if b.ndim < 2 or b.shape[0] == 0 or b.numel() == 0:
        raise ValueError(f"b: expected a non-empty (B, ...) tensor, got shape {tuple(b.shape)}")
    if not (lam >= 0 and math.isfinite(lam)):
        raise ValueError(f"lam: expected a finite number >= 0, got {lam!r}")
    if not bool(torch.isfinite(b).all()):
        raise ValueError("b: must be finite (NaN or Inf found)")
    if g0 is not None and tuple(g0.shape) != tuple(b.shape):
        raise ValueError(f"g0: expected shape {tuple(b.shape)} (like b), got {tuple(g0.shape)}")
    if topk and not monotone:
        raise ValueError("monotone: top-k is non-convex; only the monotone variant is safe with topk > 0")
    B = b.shape[0]
    bshape = (-1,) + (1,) * (b.ndim - 1)  # broadcast a (B,) or scalar quantity over a sample
    lip_t = torch.as_tensor(lip, dtype=b.dtype, device=b.device)
    # 1% margin: the power-iteration estimate approaches the eigenvalue from below
    step = (1.0 / (1.01 * lip_t.clamp_min(torch.finfo(b.dtype).tiny))).reshape(bshape)  # (B or 1, 1...)
    thresh = lam * step
    step_b = step * b  # hoisted out of the loop

    x_prev = torch.zeros_like(b) if g0 is None else g0.clone()
    Gx_prev = hessian(x_prev)
    f_prev = lasso_gram_objective(x_prev, Gx_prev, b, lam)
    y, Gy, t = x_prev, Gx_prev, 1.0
    history = [f_prev] if record_history else None
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        p = soft_threshold(torch.addcmul(y + step_b, step, Gy, value=-1.0), thresh, nonneg)
        if topk:
            p = keep_topk_rows(p, topk)
        Gp = hessian(p)  # the iteration's only operator application
        if monotone:
            f_p = lasso_gram_objective(p, Gp, b, lam)  # (B,)
            accept = (f_p <= f_prev).reshape(bshape)
            x = torch.where(accept, p, x_prev)
            Gx = torch.where(accept, Gp, Gx_prev)
            f = torch.minimum(f_p, f_prev)
        else:
            x, Gx = p, Gp
            f = lasso_gram_objective(p, Gp, b, lam) if history is not None else f_prev
        t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t) ** 0.5)
        a, c = t / t_next, (t - 1.0) / t_next
        d = (p - y).reshape(B, -1)
        residual = d.norm(dim=-1) / p.reshape(B, -1).norm(dim=-1).clamp_min(1e-12)  # (B,)
        y = x + a * (p - x) + c * (x - x_prev)
        Gy = Gx + a * (Gp - Gx) + c * (Gx - Gx_prev)
        x_prev, Gx_prev, f_prev, t = x, Gx, f, t_next
        if history is not None:
            history.append(f)
        if bool((residual < tol).all()):
            converged = True
            break
    if topk and g0 is not None:  # the output may still be the warm start: enforce the constraint
        x_prev = keep_topk_rows(x_prev, topk)
        Gx_prev = hessian(x_prev)
    if not monotone or (topk and g0 is not None):
        f_prev = lasso_gram_objective(x_prev, Gx_prev, b, lam)
    return FistaResult(
        codes=x_prev,
        objective=f_prev,
        iterations=it,
        converged=converged,
        history=torch.stack(history) if history is not None else None,
    )


def fista_gram(
    G: torch.Tensor,
    b: torch.Tensor,
    lam: float,
    lip: torch.Tensor | float | None = None,
    g0: torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-5,
    nonneg: bool = False,
    topk: int = 0,
    record_history: bool = False,
    monotone: bool = True,
) -> FistaResult:
    """Solve ``min_g 1/2 g^T G g - b^T g + lam ||g||_1`` for every row of ``b`` at once.

    ``fista`` with the Hessian given as a Gram matrix: one ``(B, K) x (K, K)`` GEMM per
    iteration for a shared ``G``, a batched matrix-vector product for per-sample ones.

    Args:
        G: ``(K, K)`` shared Gram matrix, or ``(B, K, K)`` per sample (per-sample masks).
        b: ``(B, K)`` linear term.
        lam: l1 weight (>= 0).
        lip: Lipschitz constant of the smooth part (largest eigenvalue of G): scalar or ``(B,)``;
            computed by power iteration when ``None``.
        g0, max_iter, tol, nonneg, topk, record_history, monotone: as in ``fista``.
    """
    if b.ndim != 2 or b.shape[0] == 0:
        raise ValueError(f"b: expected a non-empty (B, K) tensor, got shape {tuple(b.shape)}")
    K = b.shape[1]
    if not (G.shape == (K, K) or G.shape == (b.shape[0], K, K)):
        raise ValueError(f"G: expected shape ({K}, {K}) or ({b.shape[0]}, {K}, {K}), got {tuple(G.shape)}")
    if not (bool(torch.isfinite(b).all()) and bool(torch.isfinite(G).all())):
        raise ValueError("b: G and b must be finite (NaN or Inf found)")
    if G.ndim == 2:
        hessian = lambda v: v @ G  # noqa: E731  G symmetric: (B,K)(K,K), one GEMM for the batch
    else:
        hessian = lambda v: torch.bmm(G, v.unsqueeze(-1)).squeeze(-1)  # noqa: E731
    if lip is None:
        lip = largest_eigenvalue(G)
    return fista(hessian, b, lam, lip, g0=g0, max_iter=max_iter, tol=tol, nonneg=nonneg, topk=topk,
                 record_history=record_history, monotone=monotone)


def ista_reference(
    S: torch.Tensor,
    x: torch.Tensor,
    lam: float,
    n_iter: int = 20000,
    nonneg: bool = False,
    U: torch.Tensor | None = None,
    h: torch.Tensor | None = None,
    beta: float = 0.0,
) -> torch.Tensor:
    """The slow, obviously correct reference: plain ISTA, one sample at a time, on the
    un-expanded energy ``1/2||x - S g||^2 + beta/2||h - U g||^2 + lam||g||_1``.

    Args:
        S: ``(n, K)``; x: ``(B, n)``; U: ``(m, K)``; h: ``(B, m)``.
    Returns:
        ``(B, K)`` codes.
    """
    A = S.T @ S
    if U is not None and beta:
        A = A + beta * U.T @ U
    lip = float(torch.linalg.eigvalsh(A).max())
    out = []
    for i in range(x.shape[0]):
        g = torch.zeros(S.shape[1], dtype=S.dtype)
        for _ in range(n_iter):
            grad = -S.T @ (x[i] - S @ g)
            if U is not None and beta:
                grad = grad - beta * U.T @ (h[i] - U @ g)
            g = soft_threshold(g - grad / lip, lam / lip, nonneg)
        out.append(g)
    return torch.stack(out)
