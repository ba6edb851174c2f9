"""The same-structure controls (``hebbnets.controls``): the output is ``U G V^T`` with unit factor
columns (``U (g ⊙ S^T z)`` for the applied-weight control), the feed-forward code's l1 penalty is
the documented one, the implicit control's code is the LASSO solution and its factors stay unit
norm through training, and bad input is refused."""
import pytest
import torch

import hebbnets as hn
from hebbnets.controls import unit_columns
import hebbnets.controls
from hebbnets.vn.fista import fista_gram, kkt_violation

QUIET = dict(progress=False, epochs=3, batch_size=16)


def _decode(n=48, seed=0):  # (N, 10) one-hot pairs -> (N, 5, 5) images
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randint(5, (n,), generator=g), torch.randint(5, (n,), generator=g)
    eye = torch.eye(5)
    return hn.Split(torch.cat([eye[a], eye[b]], 1), eye[a][:, :, None] * eye[b][:, None, :])


def _images(n=48, seed=0):  # (N, 6, 5) rank-1 non-negative images, reconstruct
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 6, 1, generator=g) * torch.rand(n, 1, 5, generator=g)
    return hn.Split(x, x.clone())


def test_feed_forward_code_composes_its_code_with_unit_factors():
    split = _decode()
    model = hn.models.make("matrix_code_ff", seed=0, atoms_u=4, atoms_s=3, hidden=16, **QUIET).fit(split)
    with torch.no_grad():
        g = model.code(split.x)
        by_hand = unit_columns(model.U) @ g @ unit_columns(model.V).T
    assert g.shape == (48, 4, 3) and bool((g >= 0).all()) and bool((g == 0).any())  # ReLU: exact zeros
    assert torch.allclose(unit_columns(model.U).norm(dim=0), torch.ones(4))
    assert torch.equal(model.predict(split.x), by_hand)
    assert model.predict(split.x).shape == (48, 5, 5)


def test_feed_forward_l1_penalty_is_the_documented_term():
    split = _decode()
    plain = hn.models.make("matrix_code_ff", seed=0, atoms_u=4, atoms_s=3, hidden=16, **QUIET)
    sparse = hn.models.make("matrix_code_ff", seed=0, atoms_u=4, atoms_s=3, hidden=16, l1=0.3, **QUIET)
    plain.build(hn.DataSpec.from_split(split))
    sparse.build(hn.DataSpec.from_split(split))
    sparse.load_state_dict(plain.state_dict())
    g = plain.code(split.x)
    want = plain._loss(split) + 0.3 * g.abs().sum((1, 2)).mean() / 25
    assert torch.allclose(sparse._loss(split), want, rtol=1e-6)


def test_linear_encoder_and_signed_codes():
    split = _decode()
    model = hn.models.make("matrix_code_ff", seed=0, atoms_u=2, atoms_s=2, hidden=0, nonneg=False, **QUIET).fit(split)
    assert len([m for m in model.encoder if isinstance(m, torch.nn.Linear)]) == 1
    assert bool((model.code(split.x) < 0).any())


def test_implicit_control_codes_solve_the_lasso_and_factors_stay_unit_norm():
    split = _images()
    model = hn.models.make("vn_matrix_implicit", seed=0, atoms_u=3, atoms_s=3, lam=0.01, max_iter=2000, tol=1e-9,
                           lr=1e-2, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    start = {k: v.clone() for k, v in model.state_dict().items()}
    model.fit(split)
    layer = model.layer
    assert not torch.equal(layer.U, start["layer.U"])  # the factors learned by gradients
    for w in (layer.U, layer.S):
        assert torch.allclose(w.norm(dim=0), torch.ones(3), atol=1e-5)
    with torch.no_grad():
        g = model.code(split.x)  # (N, 3, 3)
        d = -layer.correlate(layer.residual(split.x, g, None))  # energy gradient, (N, 3, 3)
        viol = kkt_violation(d.flatten(1), g.flatten(1), 0.01, True)
    assert float(viol.max()) < 1e-4  # 1 % of lam in float32 (an unsolved code violates by ~lam)
    assert torch.allclose(model.predict(split.x), layer.compose(g), atol=1e-6)


def test_implicit_training_lowers_the_reconstruction_error():
    split = _images(96)
    model = hn.models.make("vn_matrix_implicit", seed=0, atoms_u=3, atoms_s=3, lam=0.005, lr=3e-2,
                           **{**QUIET, "epochs": 15, "patience": 15})
    model.build(hn.DataSpec.from_split(split))
    with torch.no_grad():
        before = float(((model.layer(split.x) - split.y) ** 2).mean())
    model.fit(split)
    assert model.score(split) < 0.7 * before


@pytest.mark.parametrize("name,kwargs,arg", [
    ("matrix_code_ff", {"atoms_u": 0}, "atoms_u"), ("matrix_code_ff", {"l1": -1.0}, "l1"),
    ("matrix_code_ff", {"hidden": -1}, "hidden"), ("matrix_code_ff", {"nonneg": "yes"}, "nonneg"),
    ("vn_matrix_implicit", {"lam": 0.0}, "lam"), ("vn_matrix_implicit", {"atoms_s": 1.5}, "atoms_s"),
    ("vn_matrix_implicit", {"tol": -1.0}, "tol"), ("applied_set_code_ff", {"atoms": 0}, "atoms"),
    ("applied_set_code_ff", {"summary": 1.5}, "summary"), ("applied_set_code_ff", {"l1": -0.1}, "l1"),
    ("applied_set_code_ff", {"nonneg": 1}, "nonneg"), ("applied_set_implicit", {"lam": 0.0}, "lam"),
    ("applied_set_implicit", {"beta": -1.0}, "beta"), ("applied_set_implicit", {"max_iter": 0}, "max_iter"),
    ("applied_set_implicit", {"nonneg": "no"}, "nonneg"), ("applied_set_implicit", {"l2": -0.1}, "l2")])
def test_bad_config_names_the_field(name, kwargs, arg):
    with pytest.raises(ValueError, match=f"^{arg}:"):
        hn.models.make(name, **kwargs)


def test_bad_data_names_the_argument():
    labels = hn.Split(torch.randn(8, 4), torch.randint(3, (8,)))
    for name in ("matrix_code_ff", "vn_matrix_implicit"):
        with pytest.raises(ValueError, match="^y:"):
            hn.models.make(name, **QUIET).fit(labels)
        img = _images(8)
        with pytest.raises(ValueError, match="^x_mask:"):
            hn.models.make(name, **QUIET).fit(hn.Split(img.x, img.y, x_mask=torch.ones_like(img.x)))
    with pytest.raises(ValueError, match="^x:"):  # decode input: no image energy to minimise
        hn.models.make("vn_matrix_implicit", **QUIET).fit(_decode(8))


# -- the applied-weight control (nbody's vn_applied_set) ----------------------------------------------
SMALL = dict(atoms=6, content=4, hidden=8, summary=4)
IMPLICIT = dict(atoms=6, content=4, hidden=8, lam=0.02, l2=0.05)


def _bodies(n=40, seed=0):
    task = hn.tasks.make("nbody", seed=seed, n_train=n, n_test=8)
    return task.train


def test_applied_control_composes_its_code_with_unit_atoms_and_zeros_padded_bodies():
    split = _bodies()
    model = hn.models.make("applied_set_code_ff", seed=0, nonneg=True, **SMALL, **QUIET).fit(split)
    x, xm = split.x, split.x_mask
    with torch.no_grad():
        g = model.code(x, xm)  # (N, K)
        body = model.encoder(x, (xm.reshape(*x.shape[:2], -1).amax(-1)))
        z_last = body[:, :, -1]
        by_hand = ((z_last @ unit_columns(model.S)) * g[:, None, :]) @ unit_columns(model.U).T * model.target_std
        pred = model.predict(x, xm)
    real = xm.reshape(*x.shape[:2], -1).amax(-1)  # (N, M) 1 for real bodies
    assert g.shape == (len(split), 6) and bool((g >= 0).all()) and bool((g == 0).any())  # ReLU: exact zeros
    assert pred.shape == split.y.shape
    torch.testing.assert_close(pred, by_hand * real[..., None])
    assert bool((real == 0).any()) and bool((pred[real == 0] == 0).all())  # padded bodies: exactly zero
    assert bool((model.target_std != 1).any())  # standardised from the training part, as vn_applied_set


def test_applied_control_l1_penalty_is_the_documented_term_and_training_lowers_the_error():
    split = _bodies(96)
    plain = hn.models.make("applied_set_code_ff", seed=0, **SMALL, **QUIET)
    sparse = hn.models.make("applied_set_code_ff", seed=0, l1=0.3, **SMALL, **QUIET)
    plain.build(hn.DataSpec.from_split(split))
    sparse.build(hn.DataSpec.from_split(split))
    sparse.load_state_dict(plain.state_dict())
    g = plain.code(split.x, split.x_mask)
    want = plain._loss(split) + 0.3 * g.abs().sum(1).mean() / 6
    assert torch.allclose(sparse._loss(split), want, rtol=1e-6)
    with torch.no_grad():
        before = float(plain._loss(split))
    plain.config.epochs, plain.config.patience, plain.config.lr = 30, 30, 1e-2
    plain.fit(split)
    assert plain.score(split) < 0.8 * before


@pytest.mark.parametrize("name, kwargs", [("applied_set_code_ff", SMALL), ("applied_set_implicit", IMPLICIT)])
def test_applied_controls_refuse_data_without_the_body_window_layout(name, kwargs):
    for split in (_images(8), hn.Split(torch.randn(8, 4), torch.randint(3, (8,)))):
        with pytest.raises(ValueError, match="^(x|y):"):
            hn.models.make(name, **kwargs, **QUIET).fit(split)


# -- the implicit applied-weight control: vn_applied_set's FISTA code, atoms learned through the solution --
def _polished(G, b, lam, **kwargs):
    """``fista_gram``, then each code solved exactly on the active set FISTA found (``G_AA g_A =
    b_A - lam sign(g_A)``): the finite differences below need codes exact to float64 precision."""
    res = fista_gram(G, b, lam, **kwargs)
    g = res.codes.clone()
    for i in range(len(g)):
        act = g[i] != 0
        if bool(act.any()):
            g[i, act] = torch.linalg.solve(G[i][act][:, act], b[i, act] - lam * torch.sign(g[i, act]))
    res.codes = g
    return res


def _central_differences_agree(loss, params, per_tensor: int) -> int:
    """Compare each parameter's ``.grad`` (from one ``loss().backward()``) with central differences
    (step 1e-6, float64) at about ``per_tensor`` entries per tensor; returns the entries checked."""
    checked = 0
    for p in params:
        grad, flat = p.grad.flatten().clone(), p.data.view(-1)
        for j in range(0, flat.numel(), max(1, flat.numel() // per_tensor)):
            with torch.no_grad():
                flat[j] += 1e-6
                up = float(loss())
                flat[j] -= 2e-6
                down = float(loss())
                flat[j] += 1e-6
            fd = (up - down) / 2e-6
            assert abs(float(grad[j]) - fd) <= 1e-4 * max(abs(fd), 1e-3), (p.shape, j, float(grad[j]), fd)
            checked += 1
    return checked


def test_applied_implicit_gradient_matches_central_differences(monkeypatch):
    monkeypatch.setattr(hebbnets.controls, "fista_gram", _polished)
    split = _bodies(16)  # 16 systems: each of the ~50 losses below is a float64 solve to 1e-10
    model = hn.models.make("applied_set_implicit", seed=0, max_iter=3000, tol=1e-10, **IMPLICIT, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    model.double().eval()
    x, xm, y = split.x.double(), split.x_mask.double(), split.y.double()

    def loss() -> torch.Tensor:
        return ((model._forward(x, xm) - y) ** 2).sum()

    loss().backward()
    assert bool((model.code(x, xm) == 0).any())  # some atoms inactive: the active-set solve is exercised
    assert _central_differences_agree(loss, (model.U, model.S, *model.encoder.parameters()), per_tensor=4) > 20


def test_applied_implicit_codes_solve_the_window_lasso_and_padded_bodies_are_zero():
    split = _bodies()
    model = hn.models.make("applied_set_implicit", seed=0, max_iter=2000, tol=1e-9, **IMPLICIT, **QUIET).fit(split)
    x, xm = split.x, split.x_mask
    with torch.no_grad():
        g = model.code(x, xm)  # (N, K)
        body = model.encoder(x, xm.reshape(*x.shape[:2], -1).amax(-1))
        by_hand = ((body[:, :, -1] @ unit_columns(model.S)) * g[:, None, :]) @ unit_columns(model.U).T * model.target_std
        pred = model.predict(x, xm)
    gv = g.clone().requires_grad_()
    smooth = model.window_energy(gv, x, xm) - 0.02 * gv.abs().sum(1)
    d = torch.autograd.grad(smooth.sum(), gv)[0]
    assert float(kkt_violation(d, g, 0.02).max()) < 2e-4  # 1 % of lam in float32 (an unsolved code violates by ~lam)
    assert g.shape == (len(split), 6) and bool((g == 0).any()) and bool((g != 0).any())
    real = xm.reshape(*x.shape[:2], -1).amax(-1)
    torch.testing.assert_close(pred, by_hand * real[..., None])
    assert bool((real == 0).any()) and bool((pred[real == 0] == 0).all())  # padded bodies: exactly zero
    assert bool((model.target_std != 1).any())


def test_applied_implicit_training_lowers_the_error_and_moves_the_atoms():
    split = _bodies(96)
    model = hn.models.make("applied_set_implicit", seed=0, **IMPLICIT, **{**QUIET, "epochs": 20, "patience": 20,
                                                                          "lr": 1e-2})
    model.build(hn.DataSpec.from_split(split))
    start = model.U.detach().clone()
    with torch.no_grad():
        before = float(((model.predict(split.x, split.x_mask) - split.y) ** 2).mean())
    model.fit(split)
    assert not torch.equal(model.U.detach(), start)
    assert model.score(split) < 0.8 * before


# -- the single applied-weight reading's controls (vn_applied: content z, trailing context c) -------------
APPLIED = dict(atoms=8, context_dims=2, context_encoding="tuning", tuning_points=3)


def _transform(n=64, seed=0):  # x = [z (6), c (2)], y = (c_0 A_0 + c_1 A_1) z (5): a context-selected map
    g = torch.Generator().manual_seed(seed)
    z, c = torch.randn(n, 6, generator=g), torch.rand(n, 2, generator=g) * 2 - 1
    A = torch.randn(2, 5, 6, generator=g) / 6**0.5
    return hn.Split(torch.cat([z, c], 1), torch.einsum("nk,kmd,nd->nm", c, A, z))


@pytest.mark.parametrize("name", ["applied_code_ff", "applied_implicit"])
def test_applied_reading_controls_compose_their_code_with_unit_content_atoms(name):
    split = _transform()
    model = hn.models.make(name, seed=0, **APPLIED, **QUIET).fit(split)
    with torch.no_grad():
        g = model.code(split.x)
        z = split.x[:, :6]
        by_hand = ((z @ unit_columns(model.S)) * g) @ model.U.T
        pred = model.predict(split.x)
    assert g.shape == (64, 8) and pred.shape == split.y.shape
    torch.testing.assert_close(pred, by_hand)
    c = model.split_input(split.x)[1]
    assert c.shape == (64, 6)  # 2 entries x 3 tuning curves, as vn_applied encodes them
    torch.testing.assert_close(c, hn.vn.applied_model.tuning_code(split.x[:, 6:], 3))
    again = hn.models.make(name, seed=0, **APPLIED, **QUIET).fit(split)
    assert torch.equal(again.predict(split.x), pred)  # deterministic under the seed


def test_applied_code_ff_l1_penalty_is_the_documented_term_and_nonneg_codes_have_exact_zeros():
    split = _transform()
    model = hn.models.make("applied_code_ff", seed=0, l1=0.3, nonneg=True, **APPLIED, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    g = model.code(split.x)
    assert bool((g == 0).any()) and bool((g >= 0).all())  # the ReLU's exact zeros
    mse = ((model._forward(split.x, None) - split.y) ** 2).mean()
    torch.testing.assert_close(model._loss(split), mse + 0.3 * g.abs().sum(1).mean() / 8)


def test_applied_controls_training_lowers_the_error():
    split = _transform(128)
    for name, extra in (("applied_code_ff", {}), ("applied_implicit", {"lam": 0.01})):
        model = hn.models.make(name, seed=0, **APPLIED, **extra, **{**QUIET, "epochs": 30, "patience": 30, "lr": 1e-2})
        model.build(hn.DataSpec.from_split(split))
        with torch.no_grad():
            before = float(((model.predict(split.x) - split.y) ** 2).mean())
        model.fit(split)
        assert model.score(split) < 0.5 * before, name


def test_applied_implicit_codes_solve_the_context_lasso():
    split = _transform()
    model = hn.models.make("applied_implicit", seed=0, lam=0.02, max_iter=3000, tol=1e-9, **APPLIED, **QUIET).fit(split)
    with torch.no_grad():
        g = model.code(split.x)
    gv = g.clone().requires_grad_()
    smooth = model.context_energy(gv, split.x) - 0.02 * gv.abs().sum(1)
    d = torch.autograd.grad(smooth.sum(), gv)[0]
    assert float(kkt_violation(d, g, 0.02).max()) < 2e-4  # 1 % of lam in float32
    assert bool((g == 0).any()) and bool((g != 0).any())  # a sparse code: exact zeros, some atoms on


def _polished_shared(G, b, lam, **kwargs):
    """``fista_gram`` on a shared ``G``, then each code solved exactly on its active set (float64
    finite differences need codes exact to the last digits)."""
    res = fista_gram(G, b, lam, **kwargs)
    g = res.codes.clone()
    for i in range(len(g)):
        act = g[i] != 0
        if bool(act.any()):
            g[i, act] = torch.linalg.solve(G[act][:, act], b[i, act] - lam * torch.sign(g[i, act]))
    res.codes = g
    return res


def test_applied_reading_implicit_gradient_matches_central_differences(monkeypatch):
    monkeypatch.setattr(hebbnets.controls, "fista_gram", _polished_shared)
    split = _transform(24)
    model = hn.models.make("applied_implicit", seed=0, lam=0.05, max_iter=3000, tol=1e-10, **APPLIED, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    model.double().eval()
    x, y = split.x.double(), split.y.double()

    def loss() -> torch.Tensor:
        return ((model._forward(x, None) - y) ** 2).sum()

    loss().backward()
    g = model.code(x)
    assert bool((g == 0).any()) and bool((g != 0).any())  # the active-set solve is exercised
    assert _central_differences_agree(loss, (model.C, model.S, model.U), per_tensor=6) >= 18
    assert float(model.C.grad.abs().sum()) > 0  # the code's gradient reaches C


@pytest.mark.parametrize("name", ["applied_code_ff", "applied_implicit"])
def test_applied_reading_controls_refuse_bad_input(name):
    with pytest.raises(ValueError, match="^split:"):
        hn.models.make(name, **APPLIED, **QUIET).fit(hn.Split(torch.randn(8, 8), torch.randint(3, (8,))))
    masked = _transform(8)
    with pytest.raises(ValueError, match="^x_mask:"):
        hn.models.make(name, **APPLIED, **QUIET).fit(hn.Split(masked.x, masked.y, x_mask=torch.ones_like(masked.x)))
    with pytest.raises(ValueError, match="^context_dims:"):
        hn.models.make(name, **{**APPLIED, "context_dims": 8}, **QUIET).fit(_transform(8))
    with pytest.raises(ValueError, match="^context_encoding:"):
        hn.models.make(name, **{**APPLIED, "context_encoding": "tuning_centred"})
    with pytest.raises(ValueError, match="^atoms:"):
        hn.models.make(name, **{**APPLIED, "atoms": 0})


# -- the vector reading's controls (vn: one layer, masked inputs) -------------------------------------------
def _signals(n=64, seed=0):  # (N, 8) sparse combinations of 3 fixed patterns, two entries hidden -> the full signals
    g = torch.Generator().manual_seed(seed)
    D = torch.randn(8, 3, generator=g)
    x = (torch.rand(n, 3, generator=g) * (torch.rand(n, 3, generator=g) < 0.6)) @ D.T
    mask = torch.ones(n, 8)
    mask[:, 5:7] = 0
    return hn.Split(x * mask, x, x_mask=mask)


def test_vector_code_ff_composes_its_code_with_unit_atoms_and_ignores_hidden_entries():
    split = _signals()
    model = hn.models.make("vector_code_ff", seed=0, atoms=5, hidden=8, nonneg=True, **QUIET).fit(split)
    with torch.no_grad():
        g = model.code(split.x, split.x_mask)
        by_hand = g @ unit_columns(model.U).T
        noisy = split.x + (1 - split.x_mask) * torch.randn(split.x.shape)  # changes only the hidden entries
        same = model.code(noisy, split.x_mask)
    assert g.shape == (64, 5) and bool((g >= 0).all()) and bool((g == 0).any())  # ReLU: exact zeros
    assert torch.equal(g, same)
    assert torch.equal(model.predict(split.x, split.x_mask), by_hand)
    plain = hn.models.make("vector_code_ff", seed=0, atoms=5, hidden=0, **QUIET)
    sparse = hn.models.make("vector_code_ff", seed=0, atoms=5, hidden=0, l1=0.3, **QUIET)
    for m in (plain, sparse):
        m.build(hn.DataSpec.from_split(split))
    sparse.load_state_dict(plain.state_dict())
    assert isinstance(plain.encoder, torch.nn.Linear)
    want = plain._loss(split) + 0.3 * plain.code(split.x, split.x_mask).abs().sum(1).mean() / 5
    assert torch.allclose(sparse._loss(split), want, rtol=1e-6)


def test_vn_implicit_codes_solve_the_masked_lasso_and_input_atoms_stay_clipped():
    split = _signals()
    model = hn.models.make("vn_implicit", seed=0, atoms=5, lam=0.01, max_iter=3000, tol=1e-9, lr=3e-2, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    start = {k: v.clone() for k, v in model.state_dict().items()}
    model.fit(split)
    layer = model.layer
    assert not torch.equal(layer.U, start["layer.U"]) and not torch.equal(layer.S, start["layer.S"])
    assert float(layer.S.detach().norm(dim=0).max()) <= 1 + 1e-5  # vn's clip_s policy after every step
    with torch.no_grad():
        g = model.code(split.x, split.x_mask)  # (N, K)
        viol = layer.optimality_residual(split.x, g, split.x_mask)
    assert float(viol.max()) < 1e-4  # 1 % of lam in float32 (an unsolved code violates by ~lam)
    assert bool((g == 0).any()) and bool((g != 0).any())
    torch.testing.assert_close(model.predict(split.x, split.x_mask), g @ layer.U.T)


def test_vector_controls_training_lowers_the_error():
    split = _signals(128)
    for name, kwargs in (("vector_code_ff", dict(atoms=6, hidden=16, lr=1e-2)), ("vn_implicit", dict(atoms=6, lam=0.01, lr=3e-2))):
        model = hn.models.make(name, seed=0, **kwargs, **{**QUIET, "epochs": 20, "patience": 20})
        model.build(hn.DataSpec.from_split(split))
        with torch.no_grad():
            before = float(((model.predict(split.x, split.x_mask) - split.y) ** 2).mean())
        model.fit(split)
        assert model.score(split) < 0.7 * before, name


@pytest.mark.parametrize("name,kwargs,arg", [
    ("vector_code_ff", {"atoms": 0}, "atoms"), ("vector_code_ff", {"hidden": -1}, "hidden"),
    ("vector_code_ff", {"l1": -1.0}, "l1"), ("vector_code_ff", {"nonneg": "yes"}, "nonneg"),
    ("vn_implicit", {"lam": 0.0}, "lam"), ("vn_implicit", {"atoms": 1.5}, "atoms"),
    ("vn_implicit", {"max_iter": 0}, "max_iter"), ("vn_implicit", {"tol": -1.0}, "tol"),
    ("vn_implicit", {"nonneg": 1}, "nonneg"), ("vn_implicit", {"init": "zeros"}, "init")])
def test_vector_controls_bad_config_names_the_field(name, kwargs, arg):
    with pytest.raises(ValueError, match=f"^{arg}:"):
        hn.models.make(name, **kwargs)


@pytest.mark.parametrize("name", ["vector_code_ff", "vn_implicit"])
def test_vector_controls_refuse_class_labels(name):
    with pytest.raises(ValueError, match="^y:"):
        hn.models.make(name, **QUIET).fit(hn.Split(torch.randn(8, 4), torch.randint(3, (8,))))


def test_vn_implicit_starts_from_vn_data_atoms_once():
    from hebbnets.controls import DataAtoms
    from hebbnets.vn.network import atoms_from_data
    split = _signals()
    model = hn.models.make("vn_implicit", seed=3, atoms=5, **QUIET)
    model.build(hn.DataSpec.from_split(split))
    DataAtoms().on_fit_start(model, split, None)
    S, U = atoms_from_data(split, 5, 3)
    assert torch.equal(model.layer.S.detach(), S) and torch.equal(model.layer.U.detach(), U)
    assert torch.allclose(S.norm(dim=0), torch.ones(5)) and bool((S[5:7] == 0).all())  # hidden entries never enter
    with torch.no_grad():
        model.layer.S.mul_(0.5)
    DataAtoms().on_fit_start(model, split, None)  # a partial_fit: the atoms continue
    assert torch.equal(model.layer.S.detach(), 0.5 * S)
    rand = hn.models.make("vn_implicit", seed=3, atoms=5, init="random", **QUIET)
    rand.build(hn.DataSpec.from_split(split))
    before = rand.layer.S.detach().clone()
    DataAtoms().on_fit_start(rand, split, None)
    assert torch.equal(rand.layer.S.detach(), before)
