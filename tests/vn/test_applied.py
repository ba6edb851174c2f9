"""Applied-weight layers: product forms vs the explicit-design reference, Danskin, exact zeros,
energies, stacking as a product of effective weights, bad input."""
import pytest
import torch

from hebbnets.vn import lasso_optimality_residual
from hebbnets.vn.applied import AppliedAtomLayer, AppliedAtomStack, design_matrix, reference_codes

D64 = torch.float64


def _stack(layers=1, residual=False, R=1, p=3, seed=0, **kw):
    """A stack with random atoms and a random batch (z, c, y, row mask, entry mask)."""
    torch.manual_seed(seed)
    sizes = (5,) * (layers + 1) if residual else (5, 4, 6)[: layers + 1]
    cfg = dict(alpha=0.7, beta=1.3, lam=0.05, max_iter=3000, tol=1e-9, max_sweeps=30, dtype=D64)
    cfg.update(kw)
    st = AppliedAtomStack(sizes, (5, 4)[:layers], context_dim=p, residual=residual, **cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    B = 4
    z = torch.randn(B, R, sizes[0], generator=gen, dtype=D64)
    c = torch.randn(B, p, generator=gen, dtype=D64) if p else None
    y = torch.randn(B, R, sizes[-1], generator=gen, dtype=D64)
    rows = (torch.rand(B, R, 1, generator=gen) > 0.3).double()
    rows[:, 0] = 1.0
    entries = (torch.rand(B, R, sizes[-1], generator=gen) > 0.3).double()
    return st, z, c, y, rows, entries


def kkt_ok(blk, g, lam, tol=1e-6):
    from hebbnets.vn import kkt_violation
    return float(kkt_violation(blk.smooth_gradient(g), g, lam).max()) < tol


def _objective(st, inf, l):
    """LASSO objective of layer l's block from the explicit design (per sample)."""
    out = []
    for i in range(inf.z.shape[0]):
        D, t = design_matrix(st, inf.codes, l, i, inf.z, inf.c, inf.y, inf.c_mask, inf.y_mask)
        g = inf.codes[l][i]
        out.append(0.5 * ((t - D @ g) ** 2).sum() + st.lam * g.abs().sum())
    return torch.stack(out)


@pytest.mark.parametrize("path", ["factor", "gram", "per_sample"])
@pytest.mark.parametrize("R", [1, 3])
def test_every_product_form_matches_the_explicit_design_reference(path, R):
    """Fast path (each product form) vs the slow per-sample reference on the explicit design
    matrix: equal objective and a zero KKT residual, certified by the generic operator-based
    ``lasso_optimality_residual`` on the reference's own Gram matrix."""
    st, z, c, y, rows, entries = _stack(R=R)
    mask = entries if path == "factor" else rows
    inf = st.infer(z, c, y, y_mask=mask, path=path)
    assert inf.paths == [path]
    ref = reference_codes(st, inf.codes, 0, inf.z, inf.c, inf.y, inf.c_mask, inf.y_mask, n_iter=3000, gram=True)
    ref_inf = type(inf)(**{**inf.__dict__, "codes": [ref]})
    torch.testing.assert_close(_objective(st, inf, 0), _objective(st, ref_inf, 0), rtol=1e-7, atol=1e-10)
    Gs, bs = [], []
    for i in range(z.shape[0]):
        D, t = design_matrix(st, inf.codes, 0, i, inf.z, inf.c, inf.y, inf.c_mask, inf.y_mask)
        Gs.append(D.T @ D)
        bs.append(D.T @ t)
    G, b = torch.stack(Gs), torch.stack(bs)
    op = lambda v: torch.bmm(G, v.unsqueeze(-1)).squeeze(-1)  # noqa: E731
    assert float(lasso_optimality_residual(op, b, inf.codes[0], st.lam).max()) < 1e-6
    assert float(st.optimality_residual(inf)[0].max()) < 1e-6


def test_plain_ista_reference_agrees_on_a_small_problem():
    st, z, c, y, rows, _ = _stack(R=2)
    inf = st.infer(z, c, y, y_mask=rows)
    ista = reference_codes(st, inf.codes, 0, inf.z, inf.c, inf.y, None, inf.y_mask, n_iter=5000)
    ref_inf = type(inf)(**{**inf.__dict__, "codes": [ista]})
    torch.testing.assert_close(_objective(st, inf, 0), _objective(st, ref_inf, 0), rtol=1e-7, atol=1e-10)


def test_auto_path_picks_the_cheapest_form():
    """Small output (m=4 < K/2): the factor form; one content row and a batch larger than m: the
    shared Gram matrix (formed once per batch); many rows per code: the per-sample Gram matrix,
    formed once per solve."""
    cases = [((8, 4), 32, 1, 3, "factor"), ((20, 20), 8, 1, 32, "gram"), ((20, 20), 8, 40, 3, "per_sample")]
    for (n, m), K, R, B, want in cases:
        st = AppliedAtomStack((n, m), (K,), dtype=D64, max_iter=50)
        inf = st.infer(torch.randn(B, R, n, dtype=D64), y=torch.randn(B, R, m, dtype=D64))
        assert inf.paths == [want], (n, m, K, R)


def test_lipschitz_bound_is_an_upper_bound_and_tight_for_orthonormal_atoms():
    st, z, c, y, rows, _ = _stack(R=3)
    blk = st.block([torch.zeros(4, 5, dtype=D64)], 0, z, c, y, None, rows)
    _, G = blk.hessian("per_sample")
    exact = torch.linalg.eigvalsh(G)[:, -1]
    assert bool((blk.lipschitz() >= exact * (1 - 1e-6)).all())
    # orthonormal output vectors and one row: the bound max_k w_k^2 is the exact eigenvalue
    lay = AppliedAtomStack((6, 6), (6,), dtype=D64)
    lay.layers[0].U.copy_(torch.linalg.qr(torch.randn(6, 6, dtype=D64))[0])
    zz, yy = torch.randn(2, 1, 6, dtype=D64), torch.randn(2, 1, 6, dtype=D64)
    b2 = lay.block([torch.zeros(2, 6, dtype=D64)], 0, zz, None, yy, None, None)
    _, G2 = b2.hessian("per_sample")
    torch.testing.assert_close(b2.lipschitz(), torch.linalg.eigvalsh(G2)[:, -1] * 1.0, rtol=0.02, atol=0)


@pytest.mark.parametrize("layers, residual", [(1, False), (2, False), (2, True)])
def test_atomic_hebb_is_minus_the_autograd_gradient_of_the_free_energy(layers, residual):
    """Danskin: the Hebbian directions equal -dF/d(U, S, C) at the inferred codes (codes fixed),
    for one layer and for stacks (residual passed down through the layers above)."""
    st, z, c, y, rows, entries = _stack(layers=layers, residual=residual, R=2, max_iter=300, max_sweeps=3)
    inf = st.infer(z, c, y, y_mask=entries)
    params = [(l, k, getattr(layer, k)) for l, layer in enumerate(st.layers) for k in ("U", "S", "C")]
    for *_, p in params:
        p.requires_grad_(True)
    st.energy(inf).mean().backward()
    grads = {(l, k): p.grad.clone() for l, k, p in params}
    for *_, p in params:
        p.requires_grad_(False)
        p.grad = None
    upd = st.hebbian_updates(inf)
    for (l, k), grad in grads.items():
        torch.testing.assert_close(upd[l][k], -grad, rtol=1e-9, atol=1e-12)
        assert float(upd[l][k].abs().max()) > 0
    # and the rates scale them: atomic_hebb adds rho * direction (norm policy off)
    before = {(l, k): p.clone() for l, k, p in params}
    st.atomic_hebb(inf, rho_u=0.2, rho_s=0.3, rho_c=0.4, norm_policy="none")
    rho = {"U": 0.2, "S": 0.3, "C": 0.4}
    for l, k, p in params:
        torch.testing.assert_close(p - before[(l, k)], rho[k] * upd[l][k], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("policy", ["unit", "clip", "none"])
def test_inactive_atoms_are_bit_for_bit_unchanged(policy):
    st, z, c, y, rows, _ = _stack(R=2, lam=2.0, dtype=torch.float32)
    z, c, y = z.float(), c.float(), y.float()
    inf = st.infer(z, c, y)
    active = (inf.codes[0] != 0).any(0)
    assert 0 < int(active.sum()) < active.numel(), "need both active and inactive atoms"
    layer = st.layers[0]
    before = {k: getattr(layer, k).clone() for k in ("U", "S", "C")}
    st.atomic_hebb(inf, rho_u=0.5, rho_s=0.5, rho_c=0.5, norm_policy=policy)
    for k, old in before.items():
        new = getattr(layer, k)
        assert torch.equal(new[:, ~active], old[:, ~active]), k
        assert not torch.equal(new[:, active], old[:, active]), k
    if policy == "unit":  # with a context: s and c are bounded, u keeps the output scale
        torch.testing.assert_close(layer.S[:, active].norm(dim=0), torch.ones(int(active.sum())))
        torch.testing.assert_close(layer.C[:, active].norm(dim=0), torch.ones(int(active.sum())))
        assert not torch.allclose(layer.U[:, active].norm(dim=0), torch.ones(int(active.sum())))
    if policy == "clip":
        assert float(layer.S[:, active].norm(dim=0).max()) <= 1 + 1e-6


def test_unit_norm_policy_without_context_bounds_s_and_u():
    st, z, _, y, _, _ = _stack(R=2, p=0, lam=0.3)
    inf = st.infer(z, None, y)
    st.atomic_hebb(inf, rho_u=0.5, rho_s=0.5, norm_policy="unit")
    active = (inf.codes[0] != 0).any(0)
    for A in (st.layers[0].S, st.layers[0].U):
        torch.testing.assert_close(A[:, active].norm(dim=0), torch.ones(int(active.sum()), dtype=D64))


def test_exact_zeros_and_nonneg():
    st, z, c, y, _, _ = _stack(R=2, lam=0.8)
    inf = st.infer(z, c, y)
    g = inf.codes[0]
    assert bool((g == 0).any()) and bool((g != 0).any())
    # a zero code means the atom is exactly absent from the output
    keep = g != 0
    torch.testing.assert_close(st.output([g], inf.z), st.output([g * keep], inf.z), rtol=0, atol=0)
    stn, z, c, y, _, _ = _stack(R=2, lam=0.05, nonneg=True)
    assert float(stn.infer(z, c, y).codes[0].min()) >= 0.0


def test_free_energy_non_increasing_over_stack_sweeps_and_blocks_are_exact():
    st, z, c, y, rows, _ = _stack(layers=2, R=3, max_sweeps=8, max_iter=500)
    inf = st.infer(z, c, y, y_mask=rows)
    h = torch.tensor(inf.energy_history, dtype=D64)
    assert len(h) == inf.sweeps + 1 >= 3
    assert bool((h[1:] <= h[:-1] + 1e-10 * h[0].abs()).all()), h
    torch.testing.assert_close(st.energy(inf).mean(), h[-1])
    # the top block was solved last: it is at its exact minimum given the layer below
    assert float(st.optimality_residual(inf)[-1].max()) < 1e-6
    # the lower block against the explicit-design reference with the top layer fixed
    ref = reference_codes(st, inf.codes, 0, inf.z, inf.c, inf.y, None, inf.y_mask, n_iter=3000, gram=True)
    blk = st.block(inf.codes, 0, inf.z, inf.c, inf.y, None, inf.y_mask)
    fast = st.solve_block(blk, st.lam, None, max_iter=3000)[0].codes
    objective = [_objective(st, type(inf)(**{**inf.__dict__, "codes": [g, inf.codes[1]]}), 0) for g in (fast, ref)]
    torch.testing.assert_close(objective[0], objective[1], rtol=1e-7, atol=1e-10)
    assert kkt_ok(blk, fast, st.lam)


def test_stack_composes_the_product_of_effective_weights():
    st, z, c, y, _, _ = _stack(layers=2, R=3, max_iter=100, max_sweeps=2)
    inf = st.infer(z, c, y)
    W1 = st.layers[0].effective_weight(inf.codes[0])  # (B, 4, 5)
    W2 = st.layers[1].effective_weight(inf.codes[1])  # (B, 6, 4)
    W = st.effective_weight(inf.codes)
    torch.testing.assert_close(W, W2 @ W1)
    torch.testing.assert_close(st.output(inf.codes, inf.z), inf.z @ W.transpose(1, 2))
    res, z5, c5, y5, _, _ = _stack(layers=2, residual=True, R=2, max_iter=100, max_sweeps=2)
    inf5 = res.infer(z5, c5, y5)
    eye = torch.eye(5, dtype=D64)
    W1 = eye + torch.einsum("mk,bk,nk->bmn", res.layers[0].U, inf5.codes[0], res.layers[0].S)
    W2 = eye + torch.einsum("mk,bk,nk->bmn", res.layers[1].U, inf5.codes[1], res.layers[1].S)
    torch.testing.assert_close(res.output(inf5.codes, inf5.z), inf5.z @ (W2 @ W1).transpose(1, 2))
    # the contexts add: each layer's context vectors explain part of c
    torch.testing.assert_close(res.context_part(inf5.codes),
                               inf5.codes[0] @ res.layers[0].C.T + inf5.codes[1] @ res.layers[1].C.T)


def test_context_only_inference_ignores_the_content_target():
    st, z, c, y, _, _ = _stack(R=1)
    a = st.infer(z, c).codes[0]
    b = st.infer(z * 3.0 + 1.0, c).codes[0]
    torch.testing.assert_close(a, b)
    assert not torch.equal(a, st.infer(z, c, y).codes[0])


def test_layer_shapes_and_residual():
    lay = AppliedAtomLayer(5, 3, 7, context_dim=2)
    g, z = torch.randn(4, 7), torch.randn(4, 2, 5)
    assert lay.apply(g, z).shape == (4, 2, 3) and lay.effective_weight(g).shape == (4, 3, 5)
    torch.testing.assert_close(lay.apply(g, z), z @ lay.effective_weight(g).transpose(1, 2), rtol=1e-5, atol=1e-5)
    r = AppliedAtomLayer(5, 5, 7, residual=True)
    torch.testing.assert_close(r.apply(torch.zeros(4, 7), z), z)
    assert AppliedAtomLayer(5, 3, 7).C is None


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda st, z, c, y: st.infer(z[:, :, :3], c, y), "z"),
        (lambda st, z, c, y: st.infer(z.new_full(z.shape, float("nan")), c, y), "z"),
        (lambda st, z, c, y: st.infer(z[:0], c, y), "z"),
        (lambda st, z, c, y: st.infer(z, c[:, :2], y), "c"),
        (lambda st, z, c, y: st.infer(z, c * float("inf"), y), "c"),
        (lambda st, z, c, y: st.infer(z, c, y[:, :, :2]), "y"),
        (lambda st, z, c, y: st.infer(z, c, y, y_mask=torch.ones(4, 2, 3)), "y_mask"),
        (lambda st, z, c, y: st.infer(z, c, None, y_mask=torch.ones(y.shape)), "y_mask"),
        (lambda st, z, c, y: st.infer(z, c, y, c_mask=torch.ones(4, 1)), "c_mask"),
        (lambda st, z, c, y: st.infer(z, c, y, lam=-1.0), "lam"),
        (lambda st, z, c, y: st.infer(z, c, y, path="magic"), "path"),
        (lambda st, z, c, y: st.infer(z, c, y, y_mask=torch.bernoulli(torch.full(y.shape, 0.5)), path="gram"), "path"),
        (lambda st, z, c, y: AppliedAtomStack((5, 6), (7, 3)), "sizes"),
        (lambda st, z, c, y: AppliedAtomStack((5, 6), (7,), beta=-1.0), "beta"),
        (lambda st, z, c, y: AppliedAtomStack((5, 6), (7,), path="nope"), "path"),
        (lambda st, z, c, y: AppliedAtomLayer(5, 6, 7, residual=True), "residual"),
        (lambda st, z, c, y: AppliedAtomLayer(5, 6, 0), "k"),
        (lambda st, z, c, y: AppliedAtomStack((5, 4, 6), (3, 3)).infer(z), "c"),
        (lambda st, z, c, y: st.atomic_hebb(st.infer(z, c, y), 0.1, 0.1, norm_policy="big"), "norm_policy"),
    ],
)
def test_bad_input_raises_one_error_naming_the_argument(call, word):
    st, z, c, y, _, _ = _stack(R=2)
    with pytest.raises(ValueError, match=f"^{word}"):
        call(st, z, c, y)


def test_context_rows_route_each_part_of_the_context_to_one_layer():
    """Disjoint row masks: each layer's context vectors stay exactly zero outside its rows (after
    learning too), and a context that addresses only layer 0 leaves layer 1 at a zero code."""
    torch.manual_seed(0)
    rows = [torch.tensor([1.0, 1.0, 0.0]), torch.tensor([0.0, 0.0, 1.0])]
    st = AppliedAtomStack((5, 5, 5), (4, 4), context_dim=3, residual=True, lam=0.05, max_iter=300, max_sweeps=4,
                          context_rows=rows, dtype=D64)
    for layer, r in zip(st.layers, rows):
        assert bool((layer.C[r == 0] == 0).all())
    z, y = torch.randn(6, 1, 5, dtype=D64), torch.randn(6, 1, 5, dtype=D64)
    c = torch.randn(6, 3, dtype=D64)
    inf = st.infer(z, c, y)
    st.atomic_hebb(inf, 0.3, 0.3, 0.3, norm_policy="unit", reseed_after=1)
    for layer, r in zip(st.layers, rows):
        assert bool((layer.C[r == 0] == 0).all()) and bool((layer.C[r == 1] != 0).any())
    only0 = c * rows[0]
    codes = st.infer(z, only0).codes
    assert bool((codes[1] == 0).all()) and bool((codes[0] != 0).any())
    with pytest.raises(ValueError, match="^context_rows"):
        AppliedAtomStack((5, 5), (4,), context_dim=3, context_rows=[torch.tensor([0.0, 0.5, 1.0])])
    with pytest.raises(ValueError, match="^context_rows"):
        AppliedAtomStack((5, 5, 5), (4, 4), context_dim=3, context_rows=rows[:1])
