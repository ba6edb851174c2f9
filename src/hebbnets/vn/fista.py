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

Two ways to spend less on the Hessian product, each beside the plain form it replaces (and
tested against it by objective and optimality, never by timings):

* ``masked_lasso``: a LASSO whose smooth part is a sum of masked least-squares terms
  ``c/2 ||m ⊙ (t - A g)||^2`` (a VN layer's energy) in the cheapest of three *product forms*,
  chosen by shape (``choose_product_form``): ``"gram"`` (one shared ``(K, K)`` Gram matrix per
  mask pattern), ``"per_sample"`` (a ``(B, K, K)`` Gram matrix, one per sample) or
  ``"factor"`` (``c A^T (m ⊙ (A v))`` as two GEMMs with the shared design, never forming a
  per-sample matrix). With per-sample masks and more atoms than rows the per-sample Gram form
  costs ``B K^2 n`` to build and streams ``B K^2`` numbers per iteration, the factor form
  ``2 B K n`` per iteration in GEMMs.
* ``fista_working_set``: a shared-Gram LASSO solved on a small per-sample *working set* of atoms
  (the support so far plus the worst optimality violators), growing it until the full problem's
  KKT conditions hold; the inner solves are ``fista`` on ``(B, w, w)`` gathered Gram matrices,
  ``w`` much smaller than ``K`` when the codes are sparse.

And one way to spend less between the products: ``fista(..., fused=True)`` runs the same
iteration with its element-wise work (the proximal point; the monotone test; the momentum step
and the stopping residual) as three ``torch.compile``'d kernels, one pass over the codes each,
instead of about twenty separate element-wise passes (``_fused_kernels``; tested against the
eager loop by objective and codes).
"""
from __future__ import annotations

import math
import warnings
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
    v = torch.rand(k, generator=gen, dtype=torch.float64, device=gen.device).to(ref) + 0.5  # positive: not orthogonal to
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
        form: the product form ``masked_lasso`` used (empty for the other solvers).
        rounds: ``fista_working_set`` only: the samples solved in each round (each round ends
            with a ``(samples, K) x (K, K)`` GEMM for the full problem's gradient).
        fused: whether the fused loop ran (``fista``'s ``fused``).
        row_iterations: ``(B,)`` iterations each row ran, where rows retire on their own
            convergence (``fista``'s ``hessian_rows``); ``None`` otherwise (every row ran
            ``iterations``).
    """

    codes: torch.Tensor
    objective: torch.Tensor
    iterations: int
    converged: bool
    history: torch.Tensor | None = None
    form: str = ""
    rounds: tuple[int, ...] = ()
    fused: bool = False
    row_iterations: torch.Tensor | None = None


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


class _Retirement:
    """Per-row stopping for ``fista``'s loops: the rows still iterating (``live``, indices into the
    batch), the operator restricted to them, and what each retired row left behind (its code,
    product, objective and iteration count), written into full-batch buffers."""

    def __init__(self, b: torch.Tensor, hessian_rows: Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]):
        B = b.shape[0]
        self.hessian_rows = hessian_rows
        self.live = torch.arange(B, device=b.device)
        self.x, self.Gx, self.f = torch.empty_like(b), torch.empty_like(b), b.new_empty(B)
        self.iterations = torch.zeros(B, dtype=torch.long, device=b.device)

    def retire(self, leave: torch.Tensor, it: int, x: torch.Tensor, Gx: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """Store the live rows where ``leave`` ``(R,)`` is true; return the mask of those that stay."""
        rows = self.live[leave]
        self.x[rows], self.Gx[rows], self.f[rows] = x[leave], Gx[leave], f[leave]
        self.iterations[rows] = it
        keep = ~leave
        self.live = self.live[keep]
        return keep

    def finish(self, it: int, x: torch.Tensor, Gx: torch.Tensor, f: torch.Tensor) -> bool:
        """Retire every row still live after ``it`` iterations; return whether all had converged."""
        converged = not len(self.live)
        if not converged:
            self.retire(torch.ones(len(self.live), dtype=torch.bool, device=x.device), it, x, Gx, f)
        return converged


def _stopping_test(done: torch.Tensor, it: int, retiring: _Retirement | None, state: tuple[torch.Tensor, ...],
                   hessian: Callable[[torch.Tensor], torch.Tensor]) -> tuple[bool, bool, tuple[torch.Tensor, ...], Callable]:
    """One stopping test of ``fista``'s loops, given which rows passed it (``done`` ``(R,)``) and
    the loop's per-row state ``(y, Gy, x, Gx, f, step, thresh, step_b, b)``. Returns ``(stop,
    converged, state, hessian)``: without ``retiring`` the batch stops when every row passed;
    with it the rows that passed retire, and the state and the operator shrink to the others
    (whether all converged is then ``_Retirement.finish``'s answer)."""
    if retiring is None:
        stop = bool(done.all())
        return stop, stop, state, hessian
    if not bool(done.any()):
        return False, False, state, hessian
    keep = retiring.retire(done, it, state[2], state[3], state[4])
    if not len(retiring.live):
        return True, False, state, hessian
    return False, False, tuple(v[keep] for v in state), retiring.hessian_rows(retiring.live)


#: iterations between two stopping tests on an accelerator (``fista``'s ``check_every`` default)
ACCELERATOR_CHECK_EVERY = 8


# -- the fused iteration: the eager loop's element-wise work in three compiled kernels -------------
def _prox_point(y, Gy, step, step_b, thresh, nonneg: bool):
    """``prox(y - step (H y - b))``: the eager loop's ``soft_threshold(addcmul(...))``."""
    z = y + step_b - step * Gy
    return (z - thresh).clamp_min(0.0) if nonneg else z - torch.clamp(z, -thresh, thresh)


def _monotone_step(p, Gp, x_prev, Gx_prev, f_prev, b, lam):
    """MFISTA's test on ``(B, K)`` rows: keep ``p`` where its objective is no higher."""
    f_p = ((0.5 * Gp - b) * p).sum(-1) + lam * p.abs().sum(-1)
    accept = (f_p <= f_prev).unsqueeze(-1)
    return torch.where(accept, p, x_prev), torch.where(accept, Gp, Gx_prev), torch.minimum(f_p, f_prev)


def _momentum_step(p, Gp, y, x, Gx, x_prev, Gx_prev, a, c):
    """The next momentum point and its product, and the stopping residual ``(B,)``."""
    residual = (p - y).norm(dim=-1) / p.norm(dim=-1).clamp_min(1e-12)
    return x + a * (p - x) + c * (x - x_prev), Gx + a * (Gp - Gx) + c * (Gx - Gx_prev), residual


_FUSED: dict[str, Callable] = {}
_FUSED_WORKS: dict[str, bool] = {}  # device type -> whether the kernels compiled and ran there

#: ``fused="auto"`` fuses a solve of at least this many code entries (``b.numel()``). Timed once
#: on the development machine (a one-off script, not a record: one thread, float32, 100
#: iterations, shared Gram ``fista_gram``, best of 3): the fused loop is 0.81x the eager one
#: at 1,024 entries, 1.06-1.10x at 16,384, 1.28x at 65,536, 1.63x at 262,144; the first call in a
#: process compiles (5-25 s), so the threshold sits above the break-even
FUSED_MIN_ENTRIES = 1 << 15


def _fused_kernels() -> dict[str, Callable]:
    """The three kernels, compiled once per process (``dynamic=True``: one graph for every batch
    size and atom count; the scalars enter as 0-d tensors so no value forces a recompile)."""
    if not _FUSED:
        for name, fn in (("prox", _prox_point), ("monotone", _monotone_step), ("momentum", _momentum_step)):
            _FUSED[name] = torch.compile(fn, dynamic=True)
    return _FUSED


def fused_available(device: torch.device | str = "cpu") -> bool:
    """Whether the fused kernels compile and run on ``device``'s type, tried once per process on
    a 2 x 2 problem. Where they do not (no C++ compiler for the CPU backend, no Triton for a GPU)
    ``fused="auto"`` stays on the eager loop, with one warning naming the error."""
    kind = torch.device(device).type
    if kind not in _FUSED_WORKS:
        try:
            G = torch.eye(2, device=device)
            b = torch.ones(2, 2, device=device)
            one = torch.ones(2, 1, device=device)
            x, _, _, _ = _fista_fused(lambda v: v @ G, b, 0.1, one, 0.1 * one, torch.zeros_like(b), 2, 0.0, False,
                                      True, 1)
            _FUSED_WORKS[kind] = bool(torch.isfinite(x).all())
        except Exception as exc:  # noqa: BLE001 - any compile failure means: use the eager loop
            warnings.warn(f"fused FISTA unavailable on {kind} ({type(exc).__name__}: "
                          f"{str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ''}); "
                          "fused='auto' runs the eager loop", RuntimeWarning, stacklevel=2)
            _FUSED_WORKS[kind] = False
    return _FUSED_WORKS[kind]


def resolve_fused(fused: bool | str, b: torch.Tensor, topk: int = 0, record_history: bool = False) -> bool:
    """The loop ``fista`` runs: ``fused`` itself when a bool, and for ``"auto"`` the fused loop
    where it applies and pays: no top-k, no history, no autograd graph being recorded (the VN
    models infer under ``torch.no_grad``), at least ``FUSED_MIN_ENTRIES`` code entries, and
    kernels that compile on ``b``'s device (``fused_available``)."""
    if isinstance(fused, bool):
        return fused
    if fused != "auto":
        raise ValueError(f"fused: expected True, False or 'auto', got {fused!r}")
    return (not topk and not record_history and not torch.is_grad_enabled() and b.numel() >= FUSED_MIN_ENTRIES
            and fused_available(b.device))


def _fista_fused(hessian, b, lam, step, thresh, x_prev, max_iter, tol, nonneg, monotone, check_every,
                 retiring: _Retirement | None = None):
    """``fista``'s loop on ``(B, K)`` rows (matrix codes flattened by the caller's hessian
    wrapper) with the fused kernels; returns ``(x, f, iterations, converged)``. With ``retiring``
    (``step`` and ``thresh`` then ``(B, 1)``) a row leaves the batch at its own convergence."""
    k = _fused_kernels()
    b_full = b
    lam_t = torch.tensor(lam, dtype=b.dtype, device=b.device)
    step_b = step * b
    Gx_prev = hessian(x_prev)
    f_prev = lasso_gram_objective(x_prev, Gx_prev, b, lam)
    y, Gy, t = x_prev, Gx_prev, 1.0
    a = torch.zeros((), dtype=b.dtype, device=b.device)
    c = torch.zeros((), dtype=b.dtype, device=b.device)
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        p = k["prox"](y, Gy, step, step_b, thresh, nonneg)
        Gp = hessian(p)
        x, Gx, f = k["monotone"](p, Gp, x_prev, Gx_prev, f_prev, b, lam_t) if monotone else (p, Gp, f_prev)
        t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t) ** 0.5)
        a.fill_(t / t_next)
        c.fill_((t - 1.0) / t_next)
        y, Gy, residual = k["momentum"](p, Gp, y, x, Gx, x_prev, Gx_prev, a, c)
        x_prev, Gx_prev, f_prev, t = x, Gx, f, t_next
        if it % check_every == 0 or it == max_iter:
            stop, converged, state, hessian = _stopping_test(
                residual < tol, it, retiring, (y, Gy, x_prev, Gx_prev, f_prev, step, thresh, step_b, b), hessian)
            y, Gy, x_prev, Gx_prev, f_prev, step, thresh, step_b, b = state
            if stop:
                break
    if retiring is not None:
        converged = retiring.finish(it, x_prev, Gx_prev, f_prev)
        x_prev, Gx_prev, f_prev, b = retiring.x, retiring.Gx, retiring.f, b_full
    if not monotone:
        f_prev = lasso_gram_objective(x_prev, Gx_prev, b, lam)
    return x_prev, f_prev, it, converged


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
    check_every: int | None = None,
    fused: bool | str = False,
    hessian_rows: Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor]] | None = None,
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
        check_every: test the stopping rule every this many iterations (and at the last).
            Default: every iteration on the CPU, where the test is free; every 8 on an
            accelerator, where reading the residual back is a host-device synchronisation that
            stalls the queued work (a converged batch then runs up to 7 iterations more).
        fused: run the iteration's element-wise work as three ``torch.compile``'d kernels
            (module docstring): the same iterates up to floating-point rounding, fewer passes
            over memory; the first call compiles (seconds). Not with ``topk`` or
            ``record_history``. ``"auto"``: where it applies and pays (``resolve_fused``; the
            VN models' default); the result's ``fused`` says which loop ran.
        hessian_rows: ``rows -> (v -> H v)``: the operator of the samples ``rows`` (a ``(R,)``
            index tensor) alone, acting on ``(R, ...)`` tensors. Given, each row *retires* at the
            first stopping test its own residual passes, and the batch shrinks to the rows still
            iterating (``hessian_rows`` is called each time it shrinks). Without it a batch
            iterates until its slowest row converges. A retired row runs the iterations and
            returns the code of a solve of that sample alone (the momentum schedule is shared
            by every row) up to floating-point rounding: the operator's products may round
            differently in a smaller batch, which near the dtype's noise floor can move a row's
            stop by a few iterations. ``row_iterations`` says how many iterations each row ran.
            Not with ``record_history``.

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
    if fused is True and (topk or record_history):
        raise ValueError("fused: the fused loop has no top-k step and records no history; use fused=False")
    if hessian_rows is not None and not callable(hessian_rows):
        raise ValueError(f"hessian_rows: expected None or a callable rows -> operator, got {type(hessian_rows).__name__}")
    if hessian_rows is not None and record_history:
        raise ValueError("hessian_rows: retired rows leave the batch, so there is no per-iteration history; "
                         "use record_history=False")
    use_fused = resolve_fused(fused, b, topk, record_history)  # refuses anything but True, False, "auto"
    if check_every is None:
        check_every = 1 if b.device.type == "cpu" else ACCELERATOR_CHECK_EVERY
    if isinstance(check_every, bool) or not isinstance(check_every, int) or check_every < 1:
        raise ValueError(f"check_every: expected an int >= 1, got {check_every!r}")
    B = b.shape[0]
    bshape = (-1,) + (1,) * (b.ndim - 1)  # broadcast a (B,) or scalar quantity over a sample
    lip_t = torch.as_tensor(lip, dtype=b.dtype, device=b.device)
    # 1% margin: the power-iteration estimate approaches the eigenvalue from below
    step = (1.0 / (1.01 * lip_t.clamp_min(torch.finfo(b.dtype).tiny))).reshape(bshape)  # (B or 1, 1...)
    if hessian_rows is not None:  # one step per row, so a shrinking batch can take its rows' steps
        step = step.expand((B,) + step.shape[1:])
    thresh = lam * step
    step_b = step * b  # hoisted out of the loop

    x_prev = torch.zeros_like(b) if g0 is None else g0.clone()
    retiring = None if hessian_rows is None else _Retirement(b.reshape(B, -1) if use_fused else b, hessian_rows)
    if use_fused:
        tail = b.shape[1:]  # the kernels work on (R, K) rows: matrix codes are flattened around them
        flat = lambda v: v.reshape(v.shape[0], -1)  # noqa: E731
        wrap = lambda h: lambda v: flat(h(v.reshape((-1,) + tail)))  # noqa: E731
        if retiring is not None:
            retiring.hessian_rows = lambda rows: wrap(hessian_rows(rows))
        x, f, it, converged = _fista_fused(wrap(hessian), flat(b), lam, step.reshape(-1, 1), thresh.reshape(-1, 1),
                                           flat(x_prev), max_iter, tol, nonneg, monotone, check_every, retiring)
        return FistaResult(codes=x.reshape(b.shape), objective=f, iterations=it, converged=converged, history=None,
                           fused=True, row_iterations=None if retiring is None else retiring.iterations)
    full_hessian, b_full = hessian, b
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
            f_p = lasso_gram_objective(p, Gp, b, lam)  # (R,)
            accept = (f_p <= f_prev).reshape(bshape)
            x = torch.where(accept, p, x_prev)
            Gx = torch.where(accept, Gp, Gx_prev)
            f = torch.minimum(f_p, f_prev)
        else:
            x, Gx = p, Gp
            f = lasso_gram_objective(p, Gp, b, lam) if history is not None else f_prev
        t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t) ** 0.5)
        a, c = t / t_next, (t - 1.0) / t_next
        R = p.shape[0]  # the rows still iterating (B unless rows retire)
        residual = (p - y).reshape(R, -1).norm(dim=-1) / p.reshape(R, -1).norm(dim=-1).clamp_min(1e-12)  # (R,)
        y = x + a * (p - x) + c * (x - x_prev)
        Gy = Gx + a * (Gp - Gx) + c * (Gx - Gx_prev)
        x_prev, Gx_prev, f_prev, t = x, Gx, f, t_next
        if history is not None:
            history.append(f)
        if it % check_every == 0 or it == max_iter:
            stop, converged, state, hessian = _stopping_test(
                residual < tol, it, retiring, (y, Gy, x_prev, Gx_prev, f_prev, step, thresh, step_b, b), hessian)
            y, Gy, x_prev, Gx_prev, f_prev, step, thresh, step_b, b = state
            if stop:
                break
    if retiring is not None:
        converged = retiring.finish(it, x_prev, Gx_prev, f_prev)
        x_prev, Gx_prev, f_prev = retiring.x, retiring.Gx, retiring.f
        hessian, b = full_hessian, b_full
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
        row_iterations=None if retiring is None else retiring.iterations,
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
    fused: bool | str = False,
    retire_rows: bool = False,
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
        g0, max_iter, tol, nonneg, topk, record_history, monotone, fused: as in ``fista``.
        retire_rows: each row stops at its own convergence and leaves the batch (``fista``'s
            ``hessian_rows``; a shared ``G`` serves every subset of rows as it is).
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
                 record_history=record_history, monotone=monotone, fused=fused,
                 hessian_rows=_gram_rows(G) if retire_rows else None)


def _gram_rows(G: torch.Tensor) -> Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]:
    """``rows -> (v -> H v)`` for a shared ``(K, K)`` or per-sample ``(B, K, K)`` Gram matrix."""
    if G.ndim == 2:
        shared = lambda v: v @ G  # noqa: E731
        return lambda rows: shared
    return lambda rows: (lambda v, Gr=G[rows]: torch.bmm(Gr, v.unsqueeze(-1)).squeeze(-1))


# --- working sets: use the sparsity of the solution ---------------------------------------------
#: atoms per sample in the first working set (grown as the optimality check asks)
WORKING_SET_SIZE = 16


def gershgorin_bound(G: torch.Tensor) -> torch.Tensor:
    """Upper bound of the largest eigenvalue of symmetric ``G`` ``(..., w, w)``: the largest
    absolute row sum (Gershgorin's circles). ``(...,)``"""
    return G.abs().sum(-1).amax(-1)


def _working_set(score: torch.Tensor, g: torch.Tensor, size: int) -> torch.Tensor:
    """``(B, size)`` atom indices per sample: the support of ``g`` first, then the highest
    ``score`` (how strongly an inactive atom violates optimality)."""
    priority = torch.where(g != 0, torch.full_like(score, math.inf), score)
    return priority.topk(size, dim=1).indices


def fista_working_set(
    G: torch.Tensor,
    b: torch.Tensor,
    lam: float,
    g0: torch.Tensor | None = None,
    size: int = WORKING_SET_SIZE,
    max_iter: int = 500,
    tol: float = 1e-5,
    kkt_tol: float | None = None,
    max_rounds: int = 20,
    nonneg: bool = False,
    fused: bool | str = False,
    retire_rows: bool = False,
) -> FistaResult:
    """``fista_gram``'s problem ``min_g 1/2 g^T G g - b^T g + lam ||g||_1`` (shared ``G``),
    solved on a small working set of atoms per sample.

    Each round gathers, for every sample not yet done, the ``(w, w)`` block of ``G`` on its
    working set (its current support plus the atoms that violate optimality most), solves that
    sub-LASSO with ``fista`` to ``tol`` (warm-started; a batched ``(B, w, w)`` product per
    iteration instead of a ``(B, K) x (K, K)`` GEMM), and checks the *full* problem's KKT
    conditions with one GEMM. A sample is done when no atom outside its working set violates
    them by more than ``kkt_tol``; otherwise its violators join its working set (``w`` grows,
    at most doubling per round). The working set's solution is then the full problem's up to
    the inner tolerance, so the answer is certified by ``lasso_optimality_residual`` on the full
    problem like any other solver's.

    Args:
        G: ``(K, K)`` shared Gram matrix. b: ``(B, K)``. lam: l1 weight.
        g0: warm start ``(B, K)``. size: first working-set size (at most ``K``).
        max_iter, tol: budget and tolerance of each inner ``fista`` solve.
        kkt_tol: largest optimality violation accepted outside the working set (default
            ``1e-2 lam``: activating an atom violating by ``v`` would lower the objective by
            about ``v^2 / (2 G_jj)``).
        max_rounds: rounds before giving up (``converged`` is then False).
        nonneg: the ``g >= 0`` constraint.
        fused: the inner solves' loop (``fista``).
        retire_rows: in each inner solve a sample stops at its own convergence and leaves the
            batch (``fista``'s ``hessian_rows``) instead of iterating until the slowest converges.

    Each block's Lipschitz constant is its Gershgorin bound (``gershgorin_bound``): guaranteed,
    one pass, and close for the small, nearly diagonal blocks of a sparse solution.

    Returns:
        ``FistaResult`` with ``iterations`` summed over rounds (of the inner solves; with
        ``retire_rows`` also ``row_iterations``, each sample's summed over its rounds),
        ``converged`` (every sample met ``kkt_tol``), ``objective`` of the full problem and
        ``rounds`` (samples per round).
    """
    if b.ndim != 2 or b.shape[0] == 0:
        raise ValueError(f"b: expected a non-empty (B, K) tensor, got shape {tuple(b.shape)}")
    B, K = b.shape
    if G.shape != (K, K):
        raise ValueError(f"G: expected one shared ({K}, {K}) Gram matrix, got {tuple(G.shape)}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size: expected an int >= 1, got {size!r}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds: expected an int >= 1, got {max_rounds!r}")
    if not (bool(torch.isfinite(b).all()) and bool(torch.isfinite(G).all())):
        raise ValueError("b: G and b must be finite (NaN or Inf found)")
    if g0 is not None and tuple(g0.shape) != (B, K):
        raise ValueError(f"g0: expected shape {(B, K)} (like b), got {tuple(g0.shape)}")
    kkt_tol = 1e-2 * lam if kkt_tol is None else kkt_tol
    g = torch.zeros_like(b) if g0 is None else g0.clone()
    d = g @ G - b if g0 is not None else -b  # (B, K) gradient of the smooth part
    todo = torch.arange(B, device=b.device)
    w, iterations, rounds, fused_any = min(size, K), 0, [], False
    row_iterations = torch.zeros(B, dtype=torch.long, device=b.device)
    while len(todo) and len(rounds) < max_rounds:
        rounds.append(len(todo))
        gt, dt = g[todo], d[todo]
        score = -dt if nonneg else dt.abs()
        idx = _working_set(score, gt, w)  # (T, w)
        Gw = G[idx[:, :, None], idx[:, None, :]]  # (T, w, w)
        sub = fista(lambda v: torch.bmm(Gw, v.unsqueeze(-1)).squeeze(-1), b[todo].gather(1, idx), lam,
                    gershgorin_bound(Gw), g0=gt.gather(1, idx), max_iter=max_iter, tol=tol, nonneg=nonneg, fused=fused,
                    hessian_rows=_gram_rows(Gw) if retire_rows else None)
        iterations += sub.iterations
        if sub.row_iterations is not None:
            row_iterations[todo] += sub.row_iterations
        fused_any = fused_any or sub.fused
        gt = torch.zeros_like(gt).scatter_(1, idx, sub.codes)
        dt = torch.addmm(b[todo], gt, G, alpha=1.0, beta=-1.0)  # the full problem's gradient: one GEMM
        g[todo], d[todo] = gt, dt
        # optimality outside the working set (inside it, the inner solve's tol rules); an
        # unfinished sample's violators join its working set
        over = ((-(dt + lam)) if nonneg else (dt.abs() - lam)) > kkt_tol  # (T, K)
        outside = torch.ones_like(over).scatter_(1, idx, False)
        left = (over & outside).any(1)
        if bool(left.any()):
            need = int(((gt[left] != 0) | over[left]).sum(1).max())
            w = min(K, max(w, min(2 * w, need)))
        todo = todo[left]
    objective = lasso_gram_objective(g, d + b, b, lam)  # G g = d + b: no product needed
    return FistaResult(codes=g, objective=objective, iterations=iterations, converged=len(todo) == 0,
                       rounds=tuple(rounds), fused=fused_any, row_iterations=row_iterations if retire_rows else None)


# --- product forms of a masked LASSO -------------------------------------------------------------
PRODUCT_FORMS = ("auto", "gram", "per_sample", "factor", "working_set")
# "auto" picks the working-set solver only where the codes are known to be sparse: one shared Gram
# matrix (no per-sample mask), no top-k, at least WORKING_SET_MIN_ATOMS atoms, and every warm start
# row with at most K / WORKING_SET_SPARSITY non-zeros, or, without a warm start, the caller's estimate
# ``active`` of the most atoms a sample uses (a model's from its training codes) below that bound
WORKING_SET_MIN_ATOMS = 64
WORKING_SET_SPARSITY = 8
# The cost model counts multiply-adds per solve. A batched matrix-vector product with per-sample
# matrices streams them from memory at every use: it counts MATVEC_PENALTY times a GEMM's
# multiply-adds (measured 8-30x slower per multiply-add on this project's CPUs). Every FISTA
# iteration also pays a fixed cost of about 30 small kernel launches (~100-150 us measured), which
# ITERATION_OVERHEAD expresses in multiply-adds; the "gram" form pays it once per mask pattern.
MATVEC_PENALTY = 8
ITERATION_OVERHEAD = 1e6
# power iterations behind the Lipschitz constant of a Gram matrix (largest_eigenvalue's default)
EIG_ITERATIONS = 100
# the factor form's Lipschitz constant per sample: min(guaranteed bound, POWER_SAFETY x an estimate
# from POWER_ITERATIONS power iterations through the operator), as hebbnets.vn.applied does
POWER_ITERATIONS = 30
POWER_SAFETY = 1.02
# the per-sample form holds a (B, K, K) tensor: only below this many entries
PER_SAMPLE_MAX_ENTRIES = 2**26


@dataclass(frozen=True, eq=False)
class LassoTerm:
    """One quadratic term ``weight/2 ||m ⊙ (target - design g)||^2`` of a LASSO's smooth part.

    Attributes:
        weight: ``c >= 0``.
        design: ``(n, K)``: the atoms' side this term compares (a VN layer's ``S`` or ``U``).
        target: ``(B, n)``.
        mask: ``None`` (every entry observed), ``(n,)`` (one 0/1 pattern for every sample) or
            ``(B, n)`` (a 0/1 pattern per sample).
    """

    weight: float
    design: torch.Tensor
    target: torch.Tensor
    mask: torch.Tensor | None = None

    @property
    def per_sample(self) -> bool:
        return self.mask is not None and self.mask.ndim == 2

    def linear(self) -> torch.Tensor:
        """``c (m ⊙ t) A``: this term's part of the linear term ``b`` ``(B, K)``."""
        t = self.target if self.mask is None else self.target * self.mask
        return self.weight * (t @ self.design)

    def gram(self, mask: torch.Tensor | None | str = "own") -> torch.Tensor:
        """``c A^T diag(m) A``: ``(K, K)`` for no mask or one pattern, ``(B, K, K)`` per sample."""
        m, A = (self.mask if isinstance(mask, str) else mask), self.design
        if m is None:
            G = A.T @ A
        elif m.ndim == 1:
            G = (A * m[:, None]).T @ A
        else:
            G = torch.einsum("nk,bn,nj->bkj", A, m, A)
        return self.weight * G


def _check_terms(terms: list[LassoTerm]) -> tuple[int, int]:
    if not terms or not all(isinstance(t, LassoTerm) for t in terms):
        raise ValueError("terms: expected a non-empty list of LassoTerm")
    B, K = terms[0].target.shape[0], terms[0].design.shape[1]
    for i, t in enumerate(terms):
        n = t.design.shape[0]
        if t.design.ndim != 2 or t.design.shape[1] != K:
            raise ValueError(f"terms: term {i}'s design must be (n, K={K}), got {tuple(t.design.shape)}")
        if tuple(t.target.shape) != (B, n):
            raise ValueError(f"terms: term {i}'s target must be (B={B}, n={n}), got {tuple(t.target.shape)}")
        if t.mask is not None and tuple(t.mask.shape) not in ((n,), (B, n)):
            raise ValueError(f"terms: term {i}'s mask must be ({n},) or ({B}, {n}), got {tuple(t.mask.shape)}")
        if not (t.weight >= 0 and math.isfinite(t.weight)):
            raise ValueError(f"terms: term {i}'s weight must be a finite number >= 0, got {t.weight!r}")
    return B, K


def _mask_patterns(terms: list[LassoTerm]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(patterns (P, .), inverse (B,))`` of the per-sample masks side by side; None without any."""
    per = [t.mask for t in terms if t.per_sample]
    if not per:
        return None
    return torch.unique(torch.cat(per, dim=1), dim=0, return_inverse=True)


def product_form_costs(terms: list[LassoTerm], max_iter: int, n_patterns: int = 1) -> dict[str, float]:
    """Estimated multiply-adds of one ``masked_lasso`` solve of ``max_iter`` iterations in each
    applicable product form (module docstring; constants above): ``{"gram", "factor"[,
    "per_sample"]}``. ``n_patterns``: distinct per-sample mask patterns (1 without any)."""
    B, K = _check_terms(terms)
    n_all = sum(t.design.shape[0] for t in terms)
    n_per = sum(t.design.shape[0] for t in terms if t.per_sample)
    it = max_iter + 1  # the initial product
    # factor: per-sample-masked terms as two GEMMs; every other term as a shared Gram matrix (when
    # K <= 2n) or as factors, as _factor_operator does
    gram_n = [t.design.shape[0] for t in terms if not t.per_sample and K <= 2 * t.design.shape[0]]
    factor_n = [t.design.shape[0] for t in terms if t.per_sample or K > 2 * t.design.shape[0]]
    per_it = B * K * (2 * sum(factor_n) + (K if gram_n else 0))
    setup = (K * K * sum(gram_n) + (EIG_ITERATIONS * K * K if gram_n else 0)
             + sum(min(K, n) ** 2 * max(K, n) + EIG_ITERATIONS * min(K, n) ** 2 for n in factor_n))
    costs = {
        "gram": n_patterns * (K * K * n_all + EIG_ITERATIONS * K * K + it * ITERATION_OVERHEAD) + it * B * K * K,
        "factor": (it + POWER_ITERATIONS) * (per_it + ITERATION_OVERHEAD) + setup,
    }
    if n_per and B * K * K <= PER_SAMPLE_MAX_ENTRIES:
        costs["per_sample"] = (B * K * K * n_per + K * K * (n_all - n_per)
                               + (it + EIG_ITERATIONS) * B * K * K * MATVEC_PENALTY + it * ITERATION_OVERHEAD)
    return costs


def choose_product_form(terms: list[LassoTerm], max_iter: int, form: str = "auto",
                        n_patterns: int | None = None, g0: torch.Tensor | None = None, topk: int = 0,
                        active: int | None = None) -> str:
    """The product form ``masked_lasso`` uses: ``form`` itself when given (an error when it
    does not apply), else ``"working_set"`` where the warm start ``g0`` (or, without one, the
    estimate ``active``: the most atoms a sample is expected to use) shows sparse codes of a
    shared-Gram problem (the constants above), else the cheapest by ``product_form_costs``."""
    if form not in PRODUCT_FORMS:
        raise ValueError(f"form: expected one of {list(PRODUCT_FORMS)}, got {form!r}")
    _check_active(active)
    if n_patterns is None:
        groups = _mask_patterns(terms)
        n_patterns = 1 if groups is None else len(groups[0])
    shared = n_patterns == 1 and not any(t.per_sample for t in terms)
    if form == "working_set":
        if not shared or topk:
            raise ValueError("form: 'working_set' needs one shared Gram matrix (no per-sample masks) and topk=0")
        return form
    costs = product_form_costs(terms, max_iter, n_patterns)
    if form != "auto":
        if form == "per_sample" and form not in costs:
            raise ValueError("form: 'per_sample' needs per-sample masks and at most "
                             f"{PER_SAMPLE_MAX_ENTRIES} Gram entries")
        return form
    K = terms[0].design.shape[1]
    used = int((g0 != 0).sum(1).max()) if g0 is not None else active  # None: nothing is known
    if shared and not topk and used is not None and K >= WORKING_SET_MIN_ATOMS and used * WORKING_SET_SPARSITY <= K:
        return "working_set"
    return min(costs, key=costs.__getitem__)  # ties go to "gram" (first)


def _check_active(active: int | None) -> None:
    if active is not None and (isinstance(active, bool) or not isinstance(active, int) or active < 0):
        raise ValueError(f"active: expected None or an int >= 0 (atoms a sample is expected to use), got {active!r}")


def working_set_start(K: int, active: int | None) -> int:
    """First working-set size of a solve from zeros: twice the expected active count (the set
    then rarely needs a second round), at least ``WORKING_SET_SIZE``, at most ``K``."""
    return min(K, max(WORKING_SET_SIZE, 2 * (active or 0)))


def _factor_operator(terms: list[LassoTerm]) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor,
                                                      Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]]:
    """``(v -> H v, guaranteed Lipschitz bound, rows -> the operator of those samples)`` of the
    factor form: per-sample-masked terms as ``c ((v A^T) ⊙ m) A``, the others as one shared
    Gram matrix or as factors by shape."""
    K = terms[0].design.shape[1]
    gram_terms = [t for t in terms if not t.per_sample and K <= 2 * t.design.shape[0]]
    factor_terms = [t for t in terms if t not in gram_terms and t.weight]
    G = None
    for t in gram_terms:
        G = t.gram() if G is None else G + t.gram()
    bound = terms[0].design.new_zeros(()) if G is None else largest_eigenvalue(G)
    for t in factor_terms:
        A = t.design
        top = largest_eigenvalue(A @ A.T if A.shape[0] < A.shape[1] else A.T @ A)  # lambda_max(A^T A)
        # diag(m) <= max(m) I, so c A^T diag(m) A <= c max(m) A^T A (Weyl: the bounds add)
        bound = bound + t.weight * (1.0 if t.mask is None else float(t.mask.max())) * top

    def operator(rows: torch.Tensor | None) -> Callable[[torch.Tensor], torch.Tensor]:
        masks = [t.mask[rows] if rows is not None and t.per_sample else t.mask for t in factor_terms]

        def hessian(v: torch.Tensor) -> torch.Tensor:  # (R, K) -> (R, K)
            out = None if G is None else v @ G
            for t, m in zip(factor_terms, masks):
                r = v @ t.design.T  # (R, n)
                if m is not None:
                    r = r * m
                r = t.weight * (r @ t.design)
                out = r if out is None else out + r
            return out

        return hessian

    return operator(None), bound, operator


def operator_power_estimate(hessian: Callable[[torch.Tensor], torch.Tensor], shape: tuple[int, int],
                            dtype: torch.dtype, n_iter: int = POWER_ITERATIONS,
                            device: torch.device | str | None = None) -> torch.Tensor:
    """Per-sample largest eigenvalue ``(B,)`` of a PSD operator by ``n_iter`` power iterations
    from a fixed positive start (a Rayleigh quotient: it approaches from below)."""
    gen = torch.Generator().manual_seed(0)
    v = (torch.rand(shape[1], generator=gen, dtype=torch.float64, device=gen.device) + 0.5).to(device=device, dtype=dtype)
    v = v.expand(shape).clone()
    for _ in range(n_iter):
        w = hessian(v)
        v = w / w.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    return (v * hessian(v)).sum(-1)


def masked_lasso(
    terms: list[LassoTerm],
    lam: float,
    g0: torch.Tensor | None = None,
    max_iter: int = 200,
    tol: float = 1e-5,
    nonneg: bool = False,
    topk: int = 0,
    form: str = "auto",
    fused: bool | str = "auto",
    active: int | None = None,
    retire_rows: bool = False,
) -> FistaResult:
    """Solve ``min_g sum_t c_t/2 ||m_t ⊙ (t_t - A_t g)||^2 + lam ||g||_1`` for every sample, in
    the product form ``choose_product_form`` picks (module docstring).

    * ``"gram"``: samples that share a mask pattern share one Gram matrix ``sum c A^T diag(m) A``
      and are solved together by ``fista_gram`` (one group without per-sample masks);
    * ``"per_sample"``: one ``(K, K)`` Gram matrix per sample (``fista_gram`` with ``(B, K, K)``);
    * ``"working_set"`` (one shared Gram matrix, no top-k): ``fista_working_set``, chosen by
      ``"auto"`` when a sparse warm start ``g0``, or without one the estimate ``active``, shows
      the codes use few atoms (from zeros its first set is ``working_set_start(K, active)``);
    * ``"factor"``: ``fista`` with the operator ``sum c A^T (m ⊙ (A v))``; its Lipschitz constant
      per sample is ``min(bound, 1.02 x estimate)``: the guaranteed bound
      ``sum c max(m) lambda_max(A^T A)`` (masks only shrink the spectrum; measured 6-15 % above
      the per-sample value with 30 % of the entries masked, which cost about 1 % of the energy
      at VN's 200-iteration budget) tightened by ``POWER_ITERATIONS`` power iterations through
      the operator (each about one FISTA iteration). Like ``fista_gram``'s power iteration the
      estimate approaches from below; the monotone step keeps the objective non-increasing.

    All four solve the same problem (tested by objective and KKT residual). Masks are 0/1.

    Args:
        terms: the ``LassoTerm``s, all with ``B`` samples and ``K`` atoms.
        lam, g0 ``(B, K)``, max_iter, tol, nonneg, topk: as in ``fista``.
        form: ``"auto"`` or a product form.
        fused: ``fista``'s loop: ``"auto"`` (the fused loop where it applies and pays,
            ``resolve_fused``), ``True`` or ``False``.
        active: without ``g0``, the most atoms a sample is expected to use (e.g. a model's
            count from its training codes), or ``None`` (unknown); only the solver's choice and
            its first working set depend on it, never the problem solved.
        retire_rows: every form stops each sample at its own convergence, and the sample leaves
            the batch (``fista``'s ``hessian_rows``); the result then has ``row_iterations``.

    Returns:
        ``FistaResult`` (``objective`` from the form's own product; ``iterations`` the most any
        group ran; ``converged`` all groups) with ``form`` set.
    """
    B, K = _check_terms(terms)
    groups = _mask_patterns(terms)
    if g0 is not None and tuple(g0.shape) != (B, K):
        raise ValueError(f"g0: expected shape {(B, K)}, got {tuple(g0.shape)}")
    chosen = choose_product_form(terms, max_iter, form, 1 if groups is None else len(groups[0]), g0=g0, topk=topk,
                                 active=active)
    b = None
    for t in terms:  # the order of the sums is that of the terms (deterministic)
        b = t.linear() if b is None else b + t.linear()
    common = dict(max_iter=max_iter, tol=tol, nonneg=nonneg, topk=topk, fused=fused)
    if chosen == "working_set":  # one shared Gram matrix, the support grown from the warm start's
        G = None
        for t in terms:
            G = t.gram() if G is None else G + t.gram()
        size = WORKING_SET_SIZE if g0 is not None else working_set_start(K, active)
        res = fista_working_set(G, b, lam, g0=g0, size=size, max_iter=max_iter, tol=tol, nonneg=nonneg, fused=fused,
                                retire_rows=retire_rows)
    elif chosen == "factor":
        hessian, bound, rows_operator = _factor_operator(terms)
        lip = torch.minimum(bound.expand(B), POWER_SAFETY * operator_power_estimate(hessian, (B, K), b.dtype, device=b.device))
        res = fista(hessian, b, lam, lip, g0=g0, hessian_rows=rows_operator if retire_rows else None, **common)
    elif chosen == "per_sample" or groups is None:
        G = None
        for t in terms:
            G = t.gram() if G is None else G + t.gram()
        res = fista_gram(G, b, lam, largest_eigenvalue(G), g0=g0, retire_rows=retire_rows, **common)
    else:  # one shared Gram matrix per mask pattern
        _, inverse = groups
        codes, objective = torch.empty_like(b), b.new_empty(B)
        row_iterations = torch.zeros(B, dtype=torch.long, device=b.device) if retire_rows else None
        iterations, converged, fused_any = 0, True, False
        for j in range(int(inverse.max()) + 1):
            rows = (inverse == j).nonzero().squeeze(-1)  # (B_j,)
            first = rows[0]
            G = None
            for t in terms:
                Gt = t.gram(t.mask[first] if t.per_sample else "own")
                G = Gt if G is None else G + Gt
            r = fista_gram(G, b[rows], lam, largest_eigenvalue(G), g0=None if g0 is None else g0[rows],
                           retire_rows=retire_rows, **common)
            codes[rows], objective[rows] = r.codes, r.objective
            if row_iterations is not None:
                row_iterations[rows] = r.row_iterations
            iterations, converged = max(iterations, r.iterations), converged and r.converged
            fused_any = fused_any or r.fused
        res = FistaResult(codes, objective, iterations, converged, fused=fused_any, row_iterations=row_iterations)
    res.form = chosen
    return res


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
        g = S.new_zeros(S.shape[1])
        for _ in range(n_iter):
            grad = -S.T @ (x[i] - S @ g)
            if U is not None and beta:
                grad = grad - beta * U.T @ (h[i] - U @ g)
            g = soft_threshold(g - grad / lip, lam / lip, nonneg)
        out.append(g)
    return torch.stack(out)
