"""Gradients of a LASSO solution by implicit differentiation on its active set.

A layer's sparse code solves, per sample, ``g* = argmin_g f(g; theta) + lam ||g||_1`` with a
quadratic smooth part ``f`` (Hessian ``H``, gradient ``d(g; theta) = H g - b(theta)``). On the
active set ``A = {i : g*_i != 0}`` the optimality conditions read

    d_A(g*; theta) + lam sign(g*_A) = 0,        g*_i = 0 off A.

If ``H_AA`` is invertible and complementarity is strict (``|d_i| < lam`` off ``A``), the active
set and the signs are locally constant, and the implicit function theorem gives

    dg*_A = -H_AA^{-1} (d/dtheta d_A) dtheta - H_AA^{-1} sign(g*_A) dlam,     dg*_i = 0 off A.

So for a loss with cotangent ``c = dL/dg*`` and ``v = H_AA^{-1} c_A`` (zero off ``A``)::

    dL/dtheta = -d/dtheta <v, d(g*; theta)>      (g* and v held fixed)
    dL/dlam   = -<v, sign(g*)>

The first line is one autograd call through the layer's own formula for ``d``: a layer supplies
its energy's gradient and Hessian, never a derivative of the solver, and the solver's iterations
are never unrolled (``implicit_lasso``). Each sample has its own active set; ``v`` is a batched
solve restricted to it (``active_set_solve``): gathered ``(B, w, w)`` blocks of a Gram matrix
(``w`` the largest active set in the batch), or conjugate gradients on the masked operator
``M H M + (I - M)`` when the Hessian is only an operator (matrix codes).

The non-negative LASSO (``g >= 0``) has the same conditions on its active set (``sign = +1``).
The gradient is exact at the solution; for a solution found to a loose tolerance it is the
gradient of the active set the solver returned.
"""
from __future__ import annotations

from typing import Callable, Union

import torch

from ..vn.fista import FistaResult, LassoTerm, masked_lasso

#: the Hessian a layer hands to ``implicit_lasso``: a Gram matrix ``(K, K)`` / ``(B, K, K)`` for
#: vector codes, or an operator ``v -> H v`` on ``(B, ...)`` codes
Hessian = Union[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]


class _Problem:
    """What the backward pass needs: the smooth gradient ``d(g)`` (a closure over ``inputs``),
    a builder of the Hessian, and the tensors gradients should reach."""

    def __init__(self, smooth_grad, hessian, inputs):
        self.smooth_grad, self.hessian, self.inputs = smooth_grad, hessian, inputs


class _ImplicitLasso(torch.autograd.Function):
    @staticmethod
    def forward(ctx, problem: _Problem, codes: torch.Tensor, lam: torch.Tensor, *inputs: torch.Tensor):
        ctx.problem = problem
        ctx.save_for_backward(codes)
        return codes.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (codes,) = ctx.saved_tensors
        problem = ctx.problem
        with torch.no_grad():
            v = active_set_solve(problem.hessian(), codes, grad)
        needs = ctx.needs_input_grad[3:]
        wanted = [t for t, need in zip(problem.inputs, needs) if need]
        grads: list[torch.Tensor | None] = [None] * len(needs)
        if wanted:
            with torch.enable_grad():
                # <v, d(g*; theta)> with g* and v constants: its theta-gradient, negated, is dL/dtheta
                phi = (v * problem.smooth_grad(codes)).sum()
                got = iter(torch.autograd.grad(phi, wanted, allow_unused=True))
            grads = [None if not need else _neg(next(got)) for need in needs]
        grad_lam = -(v * torch.sign(codes)).sum() if ctx.needs_input_grad[2] else None
        return (None, None, grad_lam, *grads)


def _neg(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else -t


def implicit_lasso(codes: torch.Tensor, lam: float | torch.Tensor,
                   smooth_grad: Callable[[torch.Tensor], torch.Tensor], hessian: Callable[[], Hessian],
                   *inputs: torch.Tensor) -> torch.Tensor:
    """Attach the implicit gradient to a LASSO solution (module docstring).

    Args:
        codes: ``(B, ...)`` solution ``g*`` from any solver (no gradient of its own).
        lam: the l1 weight, a float or a 0-dim tensor (then it gets a gradient too).
        smooth_grad: ``g -> d(g)`` ``(B, ...)``, the gradient of the smooth part in ``g``, computed
            from ``inputs`` so that autograd reaches them (a closure over them).
        hessian: builds the Hessian, called once in the backward pass: a ``(K, K)`` or
            ``(B, K, K)`` Gram matrix (vector codes), or an operator ``v -> H v`` on ``(B, ...)``.
        inputs: the tensors ``smooth_grad`` reads that gradients should reach (e.g. the layer's
            input and its atoms).

    Returns:
        ``codes`` (same values, ``(B, ...)``) with a gradient to ``inputs`` and ``lam``; ``codes``
        itself when no gradient is wanted.
    """
    lam_t = lam if isinstance(lam, torch.Tensor) else torch.tensor(float(lam), dtype=codes.dtype, device=codes.device)
    if not torch.is_grad_enabled() or not any(t.requires_grad for t in (*inputs, lam_t)):
        return codes
    return _ImplicitLasso.apply(_Problem(smooth_grad, hessian, inputs), codes.detach(), lam_t, *inputs)


def active_set_solve(H: Hessian, codes: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """``v`` with ``H_AA v_A = rhs_A`` on each sample's active set ``A`` (``codes != 0``) and
    ``v = 0`` off it. ``codes``, ``rhs`` ``(B, ...)``; ``H`` as in ``implicit_lasso``."""
    active = codes != 0
    if isinstance(H, torch.Tensor):
        return _gathered_solve(H, active, rhs)
    return _masked_cg(H, active, rhs)


def _gathered_solve(H: torch.Tensor, active: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """Dense path: every sample's active atoms first (``(B, w)`` indices, ``w`` the largest active
    set), the ``(B, w, w)`` blocks of ``H`` on them, padded with the identity where a sample has
    fewer than ``w``, and one batched solve."""
    B, K = active.shape
    w = int(active.sum(1).max()) if B else 0
    out = torch.zeros_like(rhs)
    if w == 0:
        return out
    order = active.to(torch.int8).argsort(dim=1, descending=True, stable=True)[:, :w]  # (B, w)
    valid = active.gather(1, order)  # (B, w)
    if H.ndim == 2:
        Hw = H[order[:, :, None], order[:, None, :]]  # (B, w, w)
    else:
        Hw = H[torch.arange(B, device=H.device)[:, None, None], order[:, :, None], order[:, None, :]]
    both = (valid[:, :, None] & valid[:, None, :]).to(Hw.dtype)
    A = Hw * both + torch.diag_embed((~valid).to(Hw.dtype))  # padding rows: identity
    b = rhs.gather(1, order) * valid
    sol, info = torch.linalg.solve_ex(A, b)
    bad = info != 0
    if bool(bad.any()):  # a singular active block (a non-unique LASSO): the least-norm solution
        sol[bad] = (torch.linalg.pinv(A[bad], hermitian=True) @ b[bad].unsqueeze(-1)).squeeze(-1)
    return out.scatter(1, order, sol * valid)


def _masked_cg(op: Callable[[torch.Tensor], torch.Tensor], active: torch.Tensor, rhs: torch.Tensor,
               max_iter: int | None = None) -> torch.Tensor:
    """Operator path: conjugate gradients per sample on ``M H M + (I - M)`` (``M`` the active
    mask), whose solution is ``H_AA^{-1} rhs_A`` on ``A`` and 0 off it. At most ``2 |A| + 10``
    iterations (CG is exact after ``|A|`` in exact arithmetic); stops at a relative residual of
    ``eps^(3/4)`` of the dtype."""
    M = active.to(rhs.dtype)
    B = rhs.shape[0]
    bshape = (B,) + (1,) * (rhs.ndim - 1)

    def rowdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).reshape(B, -1).sum(-1)

    def apply(p: torch.Tensor) -> torch.Tensor:
        return M * op(M * p) + (1 - M) * p

    b = M * rhs
    x = torch.zeros_like(b)
    r = b.clone()
    p = r.clone()
    rs = rowdot(r, r)
    stop = rs.sqrt() * torch.finfo(rhs.dtype).eps ** 0.75  # (B,)
    n_iter = max_iter or 2 * int(active.reshape(B, -1).sum(-1).max()) + 10
    for _ in range(n_iter):
        if bool((rs.sqrt() <= stop).all()):
            break
        Ap = apply(p)
        pAp = rowdot(p, Ap)
        alpha = torch.where(pAp > 0, rs / pAp.clamp_min(torch.finfo(rhs.dtype).tiny), torch.zeros_like(rs))
        x = x + alpha.reshape(bshape) * p
        r = r - alpha.reshape(bshape) * Ap
        rs_new = rowdot(r, r)
        beta = torch.where(rs > 0, rs_new / rs.clamp_min(torch.finfo(rhs.dtype).tiny), torch.zeros_like(rs))
        p = r + beta.reshape(bshape) * p
        rs = rs_new
    return M * x


def sparse_code(x: torch.Tensor, design: torch.Tensor, lam: float | torch.Tensor, *,
                x_mask: torch.Tensor | None = None, weight: float = 1.0, nonneg: bool = False,
                max_iter: int = 200, tol: float = 1e-4, g0: torch.Tensor | None = None,
                product_form: str = "auto") -> tuple[torch.Tensor, FistaResult]:
    """The LASSO code ``g* = argmin_g weight/2 ||m ⊙ (x - D g)||^2 + lam ||g||_1`` per row,
    differentiable in ``x``, ``D`` and ``lam`` by implicit differentiation on the active set.

    Solved by the VN models' own batched FISTA (``hebbnets.vn.fista.masked_lasso``, which picks
    the product form by shape); the backward pass solves on the active set with blocks of the
    same Gram matrix (``LassoTerm.gram``).

    Args:
        x: ``(B, n)`` rows to code; design: ``D`` ``(n, K)``; lam: float or 0-dim tensor.
        x_mask: optional ``(B, n)`` 0/1 mask of observed entries (missing ones do not count).
        weight: the precision ``c`` of the term; nonneg: codes ``g >= 0``.
        max_iter, tol, g0, product_form: as in ``masked_lasso`` (``g0`` ``(B, K)`` warm start).

    Returns:
        ``(codes (B, K), FistaResult)`` (the result's codes carry no gradient).
    """
    term = LassoTerm(float(weight), design.detach(), x.detach(), None if x_mask is None else x_mask.detach())
    with torch.no_grad():
        res = masked_lasso([term], float(lam), g0=g0, max_iter=max_iter, tol=tol, nonneg=nonneg, form=product_form)

    def smooth_grad(g: torch.Tensor) -> torch.Tensor:  # -c D^T (m ⊙ (x - D g)), (B, K)
        r = x - g @ design.T
        return -float(weight) * ((r if x_mask is None else r * x_mask) @ design)

    return implicit_lasso(res.codes, lam, smooth_grad, term.gram, x, design), res


__all__ = ["active_set_solve", "implicit_lasso", "sparse_code"]
