"""The implicit gradient of the LASSO solution (``hebbnets.nn.implicit``) against central finite
differences and against autograd through a long unrolled FISTA, on small float64 problems solved
tightly enough that the active set is exact."""
import pytest
import torch

from hebbnets.nn import active_set_solve, implicit_lasso, sparse_code
from hebbnets.vn.fista import lasso_optimality_residual, soft_threshold

TIGHT = dict(max_iter=50000, tol=1e-12)
F64 = torch.float64


def _problem(seed: int, B: int = 4, n: int = 8, K: int = 12, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n, generator=gen, dtype=F64)
    D = torch.randn(n, K, generator=gen, dtype=F64)
    D = D / D.norm(dim=0)
    w = torch.randn(B, K, generator=gen, dtype=F64)  # the loss <w, g*>
    return x.to(device), D.to(device), w.to(device)


def _margins(x, D, g, lam, mask=None, nonneg=False):
    """(smallest |g_i| on the active set, smallest slack lam - |d_i| off it): both > 0 means the
    active set is locally constant, so finite differences see the same piece as the gradient."""
    r = x - g @ D.T
    d = -((r if mask is None else r * mask) @ D)
    active = g != 0
    slack = (lam + d) if nonneg else (lam - d.abs())
    return float(g.abs()[active].min()), float(slack[~active].min())


def _polished(x, D, lam, g, mask=None):
    """FISTA's codes made exact to rounding: on each sample's active set and signs, the closed
    form ``g_A = H_AA^{-1} (b_A - lam sign(g_A))`` (FISTA's own stopping rule leaves errors of
    ~1e-10, which central differences would divide by ``eps``)."""
    out = torch.zeros_like(g)
    for b in range(g.shape[0]):
        A = g[b] != 0
        m = torch.ones_like(x[b]) if mask is None else mask[b]
        DA = D[:, A]
        out[b, A] = torch.linalg.solve(DA.T @ (m[:, None] * DA), DA.T @ (m * x[b]) - lam * torch.sign(g[b, A]))
    assert bool((torch.sign(out) == torch.sign(g)).all())
    return out


def _directional_fd(codes_at, t, direction, w, support, eps=1e-6):
    """Central difference of ``<w, g*>`` along ``direction``; both sides must keep the active
    set (then ``g*`` is smooth between them)."""
    with torch.no_grad():
        plus, minus = codes_at(t + eps * direction), codes_at(t - eps * direction)
    assert bool(((plus != 0) == support).all()) and bool(((minus != 0) == support).all())
    return float((w * (plus - minus)).sum()) / (2 * eps)


@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_sparse_code_gradient_matches_central_differences(nonneg, masked):
    x, D, w = _problem(1)
    lam = 0.2
    mask = None
    if masked:
        mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(5)) > 0.25).to(F64)
    g, res = sparse_code(x, D, lam, x_mask=mask, nonneg=nonneg, **TIGHT)
    assert res.converged
    on, off = _margins(x, D, g, lam, mask, nonneg)
    assert on > 1e-4 and off > 1e-4, "the test problem needs a strict active set (strict complementarity)"
    supports = {tuple((g[b] != 0).tolist()) for b in range(g.shape[0])}
    assert len(supports) > 1, "every sample should have its own active set"

    xs, Ds = x.clone().requires_grad_(), D.clone().requires_grad_()
    lam_t = torch.tensor(lam, dtype=F64, requires_grad=True)
    code, _ = sparse_code(xs, Ds, lam_t, x_mask=mask, nonneg=nonneg, **TIGHT)
    (w * code).sum().backward()

    def codes_at(x_=x, D_=D, lam_=lam):
        return _polished(x_, D_, lam_, sparse_code(x_, D_, lam_, x_mask=mask, nonneg=nonneg, **TIGHT)[0], mask)

    support = g != 0
    gen = torch.Generator().manual_seed(7)
    for _ in range(2):
        dx, dD = torch.randn(x.shape, generator=gen, dtype=F64), torch.randn(D.shape, generator=gen, dtype=F64)
        fd_x = _directional_fd(lambda t: codes_at(x_=t), x, dx, w, support)
        fd_D = _directional_fd(lambda t: codes_at(D_=t), D, dD, w, support)
        assert float((xs.grad * dx).sum()) == pytest.approx(fd_x, rel=1e-6, abs=1e-8)
        assert float((Ds.grad * dD).sum()) == pytest.approx(fd_D, rel=1e-6, abs=1e-8)
    fd_lam = _directional_fd(lambda t: codes_at(lam_=float(t)), torch.tensor(lam, dtype=F64),
                             torch.tensor(1.0, dtype=F64), w, support)
    assert float(lam_t.grad) == pytest.approx(fd_lam, rel=1e-6, abs=1e-8)


def _unrolled_fista(x, D, lam, n_iter):
    """Plain FISTA written out in torch ops, differentiated by autograd through every iteration."""
    H = D.T @ D
    step = 1.0 / float(torch.linalg.eigvalsh(H.detach()).max())
    g = torch.zeros(x.shape[0], D.shape[1], dtype=x.dtype)
    y, t = g, 1.0
    for _ in range(n_iter):
        g_next = soft_threshold(y - step * (y @ H - x @ D), lam * step)
        t_next = 0.5 * (1 + (1 + 4 * t * t) ** 0.5)
        y = g_next + (t - 1) / t_next * (g_next - g)
        g, t = g_next, t_next
    return g


def test_implicit_gradient_matches_autograd_through_unrolled_fista():
    x, D, w = _problem(2, B=3, n=6, K=8)
    lam = 0.15
    grads = []
    for solve in ("implicit", "unrolled"):
        xs, Ds = x.clone().requires_grad_(), D.clone().requires_grad_()
        code = sparse_code(xs, Ds, lam, max_iter=50000, tol=1e-14)[0] if solve == "implicit" else _unrolled_fista(xs, Ds, lam, 6000)
        (w * code).sum().backward()
        grads.append((code.detach(), xs.grad, Ds.grad))
    (g_i, gx_i, gD_i), (g_u, gx_u, gD_u) = grads
    H = D.T @ D
    for g in (g_i, g_u):  # both solvers at the optimum (compared by optimality, not by codes)
        assert float(lasso_optimality_residual(H, x @ D, g, lam).max()) < 1e-9
    torch.testing.assert_close(gx_i, gx_u, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(gD_i, gD_u, rtol=1e-7, atol=1e-9)


def test_operator_path_equals_gram_path_and_is_zero_off_the_active_set():
    x, D, _ = _problem(3, B=5, K=10)
    g, _ = sparse_code(x, D, 0.2, **TIGHT)
    rhs = torch.randn(g.shape, generator=torch.Generator().manual_seed(0), dtype=F64)
    H = D.T @ D
    dense = active_set_solve(H, g, rhs)
    per_sample = active_set_solve(H.expand(g.shape[0], -1, -1).contiguous(), g, rhs)
    cg = active_set_solve(lambda v: v @ H, g, rhs)
    torch.testing.assert_close(per_sample, dense, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(cg, dense, rtol=1e-9, atol=1e-10)
    assert bool((dense[g == 0] == 0).all()) and bool((cg[g == 0] == 0).all())
    active = g != 0
    for b in range(g.shape[0]):  # the definition, one sample at a time
        A = active[b]
        ref = torch.linalg.solve(H[A][:, A], rhs[b, A])
        torch.testing.assert_close(dense[b, A], ref, rtol=1e-10, atol=1e-12)


def test_a_sample_with_no_active_atom_gets_exactly_zero_gradient():
    x, D, w = _problem(4, B=3)
    x[1] = 1e-3 * x[1]  # below lam: its code is exactly zero
    xs, Ds = x.clone().requires_grad_(), D.clone().requires_grad_()
    code, _ = sparse_code(xs, Ds, 0.2, **TIGHT)
    assert bool((code[1] == 0).all()) and bool((code[0] != 0).any())
    (w * code).sum().backward()
    assert bool((xs.grad[1] == 0).all()) and bool((xs.grad[0] != 0).any())
    # an atom active for no sample gets no gradient through the solution either
    dead = (code == 0).all(0)
    assert bool(dead.any()) and bool((Ds.grad[:, dead] == 0).all())


def test_singular_active_block_gives_a_finite_gradient():
    x, D, w = _problem(5, B=2, n=6, K=6)
    D = torch.cat([D, D[:, :1]], dim=1)  # a duplicated atom: the LASSO solution is not unique
    xs = x.clone().requires_grad_()
    code, _ = sparse_code(xs, D, 0.05, **TIGHT)
    (w[:, :1].expand(-1, 7) * code).sum().backward()
    assert bool(torch.isfinite(xs.grad).all())


def test_implicit_lasso_without_gradients_returns_the_codes_themselves():
    x, D, _ = _problem(6)
    g, _ = sparse_code(x, D, 0.2)
    assert implicit_lasso(g, 0.2, lambda c: c, lambda: D.T @ D, x, D) is g


def test_sparse_code_runs_on_the_device(device):
    x, D, w = _problem(7, device=device)
    xs, Ds = x.clone().requires_grad_(), D.clone().requires_grad_()
    code, _ = sparse_code(xs, Ds, 0.2)
    (w * code).sum().backward()
    assert code.device.type == device.type and xs.grad.device.type == device.type
    assert Ds.grad.device.type == device.type
