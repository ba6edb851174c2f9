"""``VNLayer``, ``MatrixAtomLayer`` and ``AppliedAtomLayer``: shapes on every device, dtype
conversion, gradients through the LASSO solution against finite differences, the Hebbian step
against the Danskin gradient (and exact zeros for inactive atoms), and bad input."""
import pytest
import torch

import hebbnets.nn as hnn
from hebbnets.vn.fista import ista_reference

F64 = torch.float64
TIGHT = dict(max_iter=50000, tol=1e-13)


def _vn(**kw) -> hnn.VNLayer:
    torch.manual_seed(0)
    return hnn.VNLayer(8, 5, 12, **{"lam": 0.2, **kw})


def _matrix(atoms=(3, 3), **kw) -> hnn.MatrixAtomLayer:
    torch.manual_seed(0)
    return hnn.MatrixAtomLayer((5, 4), atoms, **{"lam": 0.1, **kw})


def _applied(**kw) -> hnn.AppliedAtomLayer:
    torch.manual_seed(0)
    return hnn.AppliedAtomLayer(6, 4, 5, 8, **{"lam": 0.1, **kw})


def _randn(*shape, seed=0, dtype=F64, device="cpu"):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(device)


def _check_fd(loss_of, tensors, seed=1, eps=1e-4, rel=1e-5):
    """Directional central differences of ``loss_of()`` along a random unit direction per tensor
    (parameters or inputs, perturbed in place and restored) against their ``.grad``.
    ``loss_of`` returns ``(loss, codes)``; the codes' support must not change (the solution is
    smooth only on one active set). The solver's error in the codes (~1e-11) over ``eps`` and
    the O(eps^2) curvature error are both far below ``rel``."""
    loss, code = loss_of()
    support = code.detach() != 0
    for t in tensors:
        t.grad = None
    loss.backward()
    gen = torch.Generator().manual_seed(seed)
    for t in tensors:
        d = torch.randn(t.shape, generator=gen, dtype=t.dtype)
        d = d / d.norm()
        values = []
        with torch.no_grad():
            for sign in (1, -1):
                t.add_(sign * eps * d)
                lo, c = loss_of()
                t.sub_(sign * eps * d)
                assert bool(((c != 0) == support).all()), "the active set moved: smaller eps"
                values.append(float(lo))
        fd = (values[0] - values[1]) / (2 * eps)
        assert float((t.grad * d).sum()) == pytest.approx(fd, rel=rel, abs=1e-6)


# --- VNLayer ------------------------------------------------------------------------------------
def test_vn_layer_shapes_on_the_device(device):
    layer = _vn(device=device)
    x = _randn(6, 8, dtype=torch.float32, device=device)
    out, code = layer(x, return_code=True)
    assert out.shape == (6, 5) and code.shape == (6, 12) and out.device.type == device.type
    out3, code3 = layer(x.reshape(2, 3, 8), x_mask=torch.ones(2, 3, 8, device=device), return_code=True)
    assert out3.shape == (2, 3, 5) and code3.shape == (2, 3, 12)
    out3.sum().backward()
    assert layer.S.grad.device.type == device.type and layer.U.grad.shape == (5, 12)
    upd = layer.hebb_step(x, _randn(6, 5, dtype=torch.float32, device=device))
    assert upd["S"].shape == (8, 12) and upd["U"].shape == (5, 12) and upd["code"].shape == (6, 12)


def test_layers_convert_to_float64_with_their_buffers():
    vn = _vn().to(F64)
    assert vn(_randn(3, 8)).dtype == F64 and "unused_batches" in vn.state_dict()
    m = _matrix().to(F64)
    assert m(_randn(2, 5, 4)).dtype == F64
    a = _applied().to(F64)
    assert a(_randn(3, 6), _randn(3, 5)).dtype == F64
    assert {"layers.0.unused_batches", "layers.0.context_rows"} <= set(a.state_dict())
    assert hnn.VNLayer(4, 3, 5, dtype=F64).S.dtype == F64


def test_vn_forward_code_solves_the_lasso():
    layer = _vn(dtype=F64, max_iter=20000, tol=1e-12)
    x = _randn(5, 8)
    with torch.no_grad():
        _, code = layer(x, return_code=True)
    assert float(layer.optimality_residual(x, code).max()) < 1e-8
    ref = ista_reference(layer.S.detach(), x, layer.lam, n_iter=20000)

    def objective(g):
        return 0.5 * ((x - g @ layer.S.detach().T) ** 2).sum(-1) + layer.lam * g.abs().sum(-1)

    torch.testing.assert_close(objective(code), objective(ref), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("masked", [False, True])
def test_vn_layer_gradient_matches_finite_differences(masked):
    layer = _vn(dtype=F64, **TIGHT)
    x = _randn(4, 8, seed=2).requires_grad_()
    mask = (torch.rand(4, 8, generator=torch.Generator().manual_seed(3)) > 0.3).to(F64) if masked else None
    w = _randn(4, 5, seed=4)

    def loss_of():
        out, code = layer(x, x_mask=mask, return_code=True)
        return (w * out).sum(), code

    _check_fd(loss_of, [layer.S, layer.U, x])


@pytest.mark.parametrize("with_target", [False, True])
def test_vn_hebb_step_is_the_danskin_gradient_and_skips_inactive_atoms(with_target):
    layer = _vn(dtype=F64, norm_policy="none", lam=0.4, **TIGHT)
    x, h = _randn(3, 8, seed=5), (_randn(3, 5, seed=6) if with_target else None)
    code = layer.infer(x, h)
    dead = (code == 0).all(0)
    assert bool(dead.any()) and bool((~dead).any())
    # the partial gradient of the batch-mean energy at the fixed code, by autograd
    energy = layer.energy(x, code, h).mean()
    gS, gU = torch.autograd.grad(energy, [layer.S, layer.U], allow_unused=True)
    gU = torch.zeros_like(layer.U) if gU is None else gU  # no target: the energy does not involve U
    # Danskin: it is the gradient of the minimised energy V(S, U) = min_g E (central differences)
    gen = torch.Generator().manual_seed(7)
    dS, dU = torch.randn(8, 12, generator=gen, dtype=F64), torch.randn(5, 12, generator=gen, dtype=F64)
    values = []
    with torch.no_grad():
        for sign in (1, -1):
            layer.S.add_(sign * 1e-5 * dS)
            layer.U.add_(sign * 1e-5 * dU)
            values.append(float(layer.energy(x, layer.infer(x, h), h).mean()))
            layer.S.sub_(sign * 1e-5 * dS)
            layer.U.sub_(sign * 1e-5 * dU)
    fd = (values[0] - values[1]) / 2e-5
    assert float((gS * dS).sum() + (gU * dU).sum()) == pytest.approx(fd, rel=1e-6)

    before_S, before_U = layer.S.detach().clone(), layer.U.detach().clone()
    upd = layer.hebb_step(x, h, lr=0.3)
    torch.testing.assert_close(upd["S"], -0.3 * gS, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(upd["U"], -0.3 * gU, rtol=1e-10, atol=1e-12)
    assert bool((upd["S"][:, dead] == 0).all()) and bool((upd["U"][:, dead] == 0).all())
    assert torch.equal(layer.S[:, dead], before_S[:, dead]) and torch.equal(layer.U[:, dead], before_U[:, dead])
    assert with_target or torch.equal(layer.U, before_U)  # no target: U has nothing to learn from
    assert torch.equal(layer.unused_batches, dead.long())


def test_vn_hebb_step_norm_policy_touches_only_active_atoms():
    layer = _vn(dtype=F64, lam=0.4)  # norm_policy "unit_s"
    x = _randn(3, 8, seed=5)
    before = layer.S.detach().clone()
    upd = layer.hebb_step(x, _randn(3, 5, seed=6))
    active = (upd["code"] != 0).any(0)
    torch.testing.assert_close(layer.S[:, active].norm(dim=0), torch.ones(int(active.sum()), dtype=F64))
    assert torch.equal(layer.S[:, ~active], before[:, ~active])


def test_vn_layer_trains_inside_a_network_with_adam():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), hnn.VNLayer(8, 3, 16, lam=0.05))
    x = torch.randn(64, 6)
    y = torch.tanh(x[:, :3] * 2)
    opt = torch.optim.Adam(net.parameters(), lr=2e-2)
    losses = []
    for _ in range(40):
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert net[0].weight.grad.abs().sum() > 0  # the gradient reached the layer below through the LASSO
    assert losses[-1] < 0.5 * losses[0]


# --- MatrixAtomLayer ------------------------------------------------------------------------------
def test_matrix_layer_shapes_on_the_device(device):
    layer = _matrix(device=device)
    x = _randn(3, 5, 4, dtype=torch.float32, device=device)
    out, code = layer(x, x_mask=torch.ones_like(x), return_code=True)
    assert out.shape == (3, 5, 4) and code.shape == (3, 3, 3) and out.device.type == device.type
    out.sum().backward()
    assert layer.U.grad.shape == (5, 3) and layer.S.grad.shape == (4, 3)


@pytest.mark.parametrize("masked", [False, True])
def test_matrix_layer_gradient_matches_finite_differences(masked):
    layer = _matrix(dtype=F64, **TIGHT)
    x = _randn(2, 5, 4, seed=8).requires_grad_()
    mask = (torch.rand(2, 5, 4, generator=torch.Generator().manual_seed(9)) > 0.3).to(F64) if masked else None
    w = _randn(2, 5, 4, seed=10)
    with torch.no_grad():
        _, code = layer(x, mask, return_code=True)
        assert float(layer.optimality_residual(x, code, layer.lam, mask).max()) < 1e-9
    assert int((code != 0).sum()) > 4  # a real active set, solved by conjugate gradients

    def loss_of():
        out, c = layer(x, x_mask=mask, return_code=True)
        return (w * out).sum(), c

    _check_fd(loss_of, [layer.U, layer.S, x])


def test_matrix_hebb_step_is_the_gradient_and_skips_inactive_vectors():
    layer = _matrix((4, 3), dtype=F64, lam=1.0, norm_policy="none", **TIGHT)
    x = _randn(2, 5, 4, seed=11)
    upd = layer.hebb_step(x, lr=0.0)  # the directions at the forward code, nothing moved
    code = upd["code"]
    gU, gS = torch.autograd.grad(layer.energy(x, code, layer.lam).mean(), [layer.U, layer.S])
    layer_u = _matrix((4, 3), dtype=F64, lam=1.0, norm_policy="unit", **TIGHT)
    before_U, before_S = layer_u.U.detach().clone(), layer_u.S.detach().clone()
    upd = layer_u.hebb_step(x, lr=0.2)
    torch.testing.assert_close(upd["U"], -0.2 * gU, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(upd["S"], -0.2 * gS, rtol=1e-10, atol=1e-12)
    rows, cols = (code != 0).any(2).any(0), (code != 0).any(1).any(0)  # active U / S vectors
    assert bool((~rows).any() or (~cols).any()), "the test needs an inactive code vector"
    assert bool((upd["U"][:, ~rows] == 0).all()) and bool((upd["S"][:, ~cols] == 0).all())
    assert torch.equal(layer_u.U[:, ~rows], before_U[:, ~rows]) and torch.equal(layer_u.S[:, ~cols], before_S[:, ~cols])


# --- AppliedAtomLayer -------------------------------------------------------------------------------
def test_applied_layer_shapes_on_the_device(device):
    layer = _applied(device=device)
    z, c = _randn(4, 6, dtype=torch.float32, device=device), _randn(4, 5, dtype=torch.float32, device=device)
    out, code = layer(z, c, return_code=True)
    assert out.shape == (4, 4) and code.shape == (4, 8) and out.device.type == device.type
    out_rows = layer(_randn(4, 3, 6, dtype=torch.float32, device=device), c, c_mask=torch.ones_like(c))
    assert out_rows.shape == (4, 3, 4)
    out_rows.sum().backward()
    assert layer.C.grad.shape == (5, 8) and layer.S.grad.shape == (6, 8) and layer.U.grad.shape == (4, 8)


def test_applied_layer_gradient_matches_finite_differences_and_the_stack_solver():
    layer = _applied(dtype=F64, **TIGHT)
    z, c = _randn(3, 2, 6, seed=12).requires_grad_(), _randn(3, 5, seed=13).requires_grad_()
    w = _randn(3, 2, 4, seed=14)
    with torch.no_grad():  # the forward's code solves the stack's context-only problem (same objective)
        _, code = layer(z, c, return_code=True)
        ref = layer.infer(z.detach(), c.detach()).codes
        torch.testing.assert_close(layer.energy_of([code], z, c), layer.energy_of(ref, z, c), rtol=1e-9, atol=1e-10)

    def loss_of():
        out, g = layer(z, c, return_code=True)
        return (w * out).sum(), g

    _check_fd(loss_of, [layer.U, layer.S, layer.C, z, c])


def test_applied_hebb_step_is_the_danskin_gradient_and_skips_inactive_atoms():
    layer = _applied(dtype=F64, lam=0.6, norm_policy="none", **TIGHT)
    z, c, y = _randn(3, 6, seed=15), _randn(3, 5, seed=16), _randn(3, 4, seed=17)
    inf = layer.infer(z, c, y)
    grads = torch.autograd.grad(layer.energy(inf).mean(), [layer.U, layer.S, layer.C])
    before = [p.detach().clone() for p in (layer.U, layer.S, layer.C)]
    upd = layer.hebb_step(z, c, y, lr=0.1)
    dead = (upd["code"] == 0).all(0)
    assert bool(dead.any()) and bool((~dead).any())
    for name, g, old in zip("USC", grads, before):
        torch.testing.assert_close(upd[name], -g, rtol=1e-9, atol=1e-11)  # directions, before the rate
        assert bool((upd[name][:, dead] == 0).all())
        assert torch.equal(getattr(layer, name)[:, dead], old[:, dead])


# --- bad input -----------------------------------------------------------------------------------------
def _cases():
    vn, m, a = _vn(), _matrix(), _applied()
    x = torch.randn(3, 8)
    nan = x.clone()
    nan[0, 0] = float("nan")
    inf = x.clone()
    inf[1, 2] = float("inf")
    z, c = torch.randn(3, 6), torch.randn(3, 5)
    return [
        ("x", lambda: vn(torch.randn(3, 7))),
        ("x", lambda: vn(torch.ones(3, 8, dtype=torch.long))),
        ("x", lambda: vn(x.double())),
        ("x", lambda: vn(nan)),
        ("x", lambda: vn(inf)),
        ("x", lambda: vn(torch.empty(0, 8))),
        ("x", lambda: vn(torch.randn(8))),
        ("x", lambda: vn(x.tolist())),
        ("x", lambda: vn(torch.randn(3, 8, device="meta"))),
        ("x_mask", lambda: vn(x, x_mask=torch.ones(3, 7))),
        ("x_mask", lambda: vn(x, x_mask=2 * torch.ones(3, 8))),
        ("target", lambda: vn.hebb_step(x, torch.randn(3, 4))),
        ("code", lambda: vn.hebb_step(x, code=torch.randn(3, 11))),
        ("lr", lambda: vn.hebb_step(x, lr=-1.0)),
        ("atoms", lambda: hnn.VNLayer(8, 5, 0)),
        ("lam", lambda: hnn.VNLayer(8, 5, 4, lam=-1.0)),
        ("norm_policy", lambda: hnn.VNLayer(8, 5, 4, norm_policy="unit")),
        ("dtype", lambda: hnn.VNLayer(8, 5, 4, dtype=torch.int32)),
        ("x", lambda: m(torch.randn(2, 5, 5))),
        ("x", lambda: m(torch.randn(5, 4))),
        ("x_mask", lambda: m(torch.randn(2, 5, 4), x_mask=torch.ones(2, 4, 5))),
        ("in_shape", lambda: hnn.MatrixAtomLayer((5,), (3, 3))),
        ("atoms", lambda: hnn.MatrixAtomLayer((5, 4), (3, 0))),
        ("z", lambda: a(torch.randn(3, 7), c)),
        ("z", lambda: a(torch.randn(3, 1, 1, 6), c)),
        ("c", lambda: a(z, torch.randn(3, 4))),
        ("c", lambda: a(z, torch.randn(2, 5))),
        ("c_mask", lambda: a(z, c, c_mask=torch.ones(3, 4))),
        ("y", lambda: a.hebb_step(z, c, torch.randn(3, 5))),
        ("context_features", lambda: hnn.AppliedAtomLayer(6, 4, 0, 8)),
    ]


@pytest.mark.parametrize("case", range(len(_cases())))
def test_bad_input_is_one_value_error_naming_the_argument(case):
    name, call = _cases()[case]
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(f"{name}:"), str(err.value)
