"""Matrix-valued atoms: factorised inference vs the Kronecker reference, Danskin, exact zeros,
bad input, and the vn_matrix model's API."""
import pytest
import torch

import hebbnets as hn
from hebbnets.vn import (
    MatrixAtomLayer, MatrixVN, PrivatePairLayer, fista_gram, lasso_optimality_residual, lasso_reference,
)

D64 = torch.float64


def _layer(kind="shared", m=7, n=6, ku=4, ks=3, seed=0):
    torch.manual_seed(seed)
    if kind == "shared":
        return MatrixAtomLayer(m, n, ku, ks, D64)
    return PrivatePairLayer(m, n, ku * ks, D64)


def _images(layer, B=5, seed=1, noise=0.02):
    """Images that are sparse non-negative combinations of the layer's atoms, plus noise."""
    gen = torch.Generator().manual_seed(seed)
    codes = torch.zeros(B, *layer.code_shape, dtype=D64)
    flat = codes.view(B, -1)
    for i in range(B):
        idx = torch.randperm(flat.shape[1], generator=gen)[:2]
        flat[i, idx] = torch.rand(2, generator=gen, dtype=D64) + 0.5
    m, n = layer.image_shape
    return layer.compose(codes) + noise * torch.randn(B, m, n, generator=gen, dtype=D64)


def _mask(shape, seed=2, keep=0.7):
    return (torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < keep).to(D64)


def _objective(layer, image, codes, lam, precision=None):
    return layer.energy(image, codes, lam, precision)


@pytest.mark.parametrize("kind", ["shared", "private"])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("nonneg", [False, True])
def test_fast_inference_equals_per_sample_kronecker_reference(kind, masked, nonneg):
    layer = _layer(kind)
    image = _images(layer, B=3)
    mask = _mask(image.shape) if masked else None
    lam = 0.05
    fast = layer.infer(image, mask, lam=lam, nonneg=nonneg, max_iter=20000, tol=1e-10)
    ref = lasso_reference(layer, image, lam, precision=mask, nonneg=nonneg, n_iter=3000)
    # certified independently of both solvers: KKT residual from the un-expanded gradient
    # (lam = 0.05: 1e-6 is 0.002 % of it) and, for the fast path, through fista's operator form
    for codes in (fast.codes, ref):
        assert float(layer.optimality_residual(image, codes, lam, mask, nonneg).max()) < 1e-6
    b = layer.correlate(image if mask is None else mask * image)
    assert float(lasso_optimality_residual(layer.hessian(mask), b, fast.codes, lam, nonneg).max()) < 1e-6
    torch.testing.assert_close(_objective(layer, image, fast.codes, lam, mask),
                               _objective(layer, image, ref, lam, mask), rtol=1e-9, atol=1e-12)
    # the objective fista reports is the energy minus the constant 1/2 sum P I^2
    const = 0.5 * ((image**2) if mask is None else mask * image**2).flatten(1).sum(-1)
    torch.testing.assert_close(fast.objective, _objective(layer, image, fast.codes, lam, mask) - const)
    if nonneg:
        assert bool((fast.codes >= 0).all())


def test_factorised_path_equals_fista_gram_with_explicit_kronecker_gram():
    """The plain vector layer on the flattened problem (one (B, KuKs) x (KuKs, KuKs) GEMM per
    iteration) solves the same LASSO: equal objective and optimality."""
    layer = _layer("shared", m=9, n=8, ku=5, ks=4)
    image = _images(layer, B=16, seed=3)
    lam = 0.05
    G = layer.kronecker_gram()
    b = image.reshape(16, -1) @ layer.design()  # (B, KuKs)
    vec = fista_gram(G, b, lam, max_iter=20000, tol=1e-10, nonneg=True)
    mat = layer.infer(image, lam=lam, nonneg=True, max_iter=20000, tol=1e-10)
    assert float(lasso_optimality_residual(G, b, vec.codes, lam, True).max()) < 1e-6
    torch.testing.assert_close(mat.objective, vec.objective, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["shared", "private"])
def test_hessian_operator_and_lipschitz_match_the_explicit_gram(kind):
    layer = _layer(kind)
    D = layer.design()  # (m n, A)
    codes = torch.randn(4, *layer.code_shape, dtype=D64)
    flat = codes.reshape(4, -1)
    torch.testing.assert_close(layer.hessian()(codes).reshape(4, -1), flat @ (D.T @ D))
    mask = _mask((4, *layer.image_shape))
    per_sample = torch.einsum("pa,bp,pc->bac", D, mask.reshape(4, -1), D)  # (B, A, A)
    torch.testing.assert_close(layer.hessian(mask)(codes).reshape(4, -1),
                               torch.bmm(per_sample, flat.unsqueeze(-1)).squeeze(-1))
    top = torch.linalg.eigvalsh(D.T @ D)[-1]
    torch.testing.assert_close(layer.lipschitz(), top, rtol=1e-6, atol=0)  # exact product of spectra
    # with a mask the bound is valid (above every sample's top eigenvalue)
    assert bool((layer.lipschitz(mask) >= torch.linalg.eigvalsh(per_sample)[:, -1] * (1 - 1e-9)).all())


@pytest.mark.parametrize("kind", ["shared", "private"])
def test_atomic_hebb_is_minus_rho_times_autograd_gradient(kind):
    """Danskin: at converged codes the updates equal -rho dE/d(U, S) with codes held fixed."""
    layer = _layer(kind)
    image = _images(layer, B=6, seed=4)
    mask = _mask(image.shape, seed=5)
    lam = 0.05
    codes = layer.infer(image, mask, lam=lam, max_iter=20000, tol=1e-10).codes
    assert float(layer.optimality_residual(image, codes, lam, mask).max()) < 1e-6
    for p in (layer.U, layer.S):
        p.requires_grad_(True)
    layer.energy(image, codes, lam, mask).mean().backward()
    gU, gS = layer.U.grad.clone(), layer.S.grad.clone()
    for p in (layer.U, layer.S):
        p.requires_grad_(False)
        p.grad = None
    upd = layer.atomic_hebb(image, codes, mask, rho_u=0.3, rho_s=0.2, norm_policy="none")
    torch.testing.assert_close(upd["U"], -0.3 * gU, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(upd["S"], -0.2 * gS, rtol=1e-9, atol=1e-12)
    assert float(upd["U"].abs().max()) > 0 and float(upd["S"].abs().max()) > 0


@pytest.mark.parametrize("policy", ["unit", "clip", "none"])
def test_inactive_code_vectors_are_bit_for_bit_unchanged(policy):
    torch.manual_seed(0)
    layer = MatrixAtomLayer(8, 7, 6, 5)  # float32
    image = torch.zeros(4, 8, 7)
    image[:, 2:5, 1:4] = 1.0
    codes = layer.infer(image, lam=0.05, nonneg=True, topk=3).codes  # (4, 6, 5)
    act_u, act_s = layer.active_vectors(codes)
    assert 0 < int(act_u.sum()) < 6 and 0 < int(act_s.sum()) < 5
    U0, S0 = layer.U.clone(), layer.S.clone()
    upd = layer.atomic_hebb(image, codes, rho_u=0.5, rho_s=0.5, norm_policy=policy)
    # the update is exactly zero outside active rows (U) and columns (S) of G, not merely small
    assert bool((upd["U"][:, ~act_u] == 0).all()) and bool((upd["S"][:, ~act_s] == 0).all())
    assert torch.equal(layer.U[:, ~act_u], U0[:, ~act_u]) and torch.equal(layer.S[:, ~act_s], S0[:, ~act_s])
    assert not torch.equal(layer.U[:, act_u], U0[:, act_u]) and not torch.equal(layer.S[:, act_s], S0[:, act_s])
    if policy == "unit":
        torch.testing.assert_close(layer.U[:, act_u].norm(dim=0), torch.ones(int(act_u.sum())))
        torch.testing.assert_close(layer.S[:, act_s].norm(dim=0), torch.ones(int(act_s.sum())))


def test_private_layer_updates_only_active_pairs():
    torch.manual_seed(0)
    layer = PrivatePairLayer(8, 7, 12)
    image = torch.zeros(4, 8, 7)
    image[:, 3, 2] = 1.0
    codes = layer.infer(image, lam=0.05, nonneg=True, topk=2).codes  # (4, 12)
    active, _ = layer.active_vectors(codes)
    assert 0 < int(active.sum()) < 12
    U0, S0 = layer.U.clone(), layer.S.clone()
    layer.atomic_hebb(image, codes, rho_u=0.5, rho_s=0.5)
    assert torch.equal(layer.U[:, ~active], U0[:, ~active]) and torch.equal(layer.S[:, ~active], S0[:, ~active])


@pytest.mark.parametrize("kind", ["shared", "private"])
def test_hebb_step_lowers_energy_at_fixed_codes_then_inference_lowers_it_further(kind):
    layer = _layer(kind, seed=6)
    image = _images(layer, B=8, seed=7, noise=0.2)
    lam = 0.05
    codes = layer.infer(image, lam=lam, max_iter=5000, tol=1e-9).codes
    e0 = layer.energy(image, codes, lam).mean()
    layer.atomic_hebb(image, codes, rho_u=0.05, rho_s=0.05, norm_policy="none")
    e1 = layer.energy(image, codes, lam).mean()
    e2 = layer.energy(image, layer.infer(image, lam=lam, max_iter=5000, tol=1e-9, g0=codes).codes, lam).mean()
    assert float(e1) < float(e0) and float(e2) <= float(e1) + 1e-12


def test_inference_objective_is_non_increasing_and_codes_have_exact_zeros():
    layer = _layer("shared", m=10, n=9, ku=6, ks=5, seed=8)
    image = _images(layer, B=6, seed=9)
    lam = 0.1
    from hebbnets.vn import fista

    b = layer.correlate(image)
    res = fista(layer.hessian(), b, lam, layer.lipschitz(), max_iter=3000, tol=1e-10, record_history=True)
    h = res.history
    assert bool((h[1:] <= h[:-1]).all())
    grad = layer.hessian()(res.codes) - b
    dead = grad.abs() < 0.99 * lam  # strictly inside the dead zone: the prox gives true zeros
    assert bool(dead.any()) and bool((res.codes[dead] == 0).all())
    topk = layer.infer(image, lam=lam, topk=2, nonneg=True).codes
    assert int((topk != 0).flatten(1).sum(-1).max()) <= 2 and bool((topk >= 0).all())


def test_masked_pixels_do_not_influence_codes():
    layer = _layer("shared", seed=10)
    image = _images(layer, B=4, seed=11)
    mask = _mask(image.shape, seed=12)
    a = layer.infer(image, mask, lam=0.05).codes
    b = layer.infer(torch.where(mask > 0, image, 100.0), mask, lam=0.05).codes
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda L, I: L.infer(I[:, :-1], lam=0.1), "image"),
        (lambda L, I: L.infer(I.reshape(3, -1), lam=0.1), "image"),
        (lambda L, I: L.infer(torch.full_like(I, float("nan")), lam=0.1), "image"),
        (lambda L, I: L.infer(I, I[:, :, :-1], lam=0.1), "precision"),
        (lambda L, I: L.infer(I, -torch.ones_like(I), lam=0.1), "precision"),
        (lambda L, I: L.infer(I, lam=-1.0), "lam"),
        (lambda L, I: L.atomic_hebb(I, torch.zeros(3, 4, 3, dtype=D64), rho_u=0.1, rho_s=0.1, norm_policy="x"),
         "norm_policy"),
    ],
)
def test_layer_bad_input_raises_naming_the_argument(call, word):
    layer = _layer("shared")
    image = _images(layer, B=3)
    with pytest.raises(ValueError, match=f"^{word}"):
        call(layer, image)


# -- the registered model ----------------------------------------------------------------------
def _bumps(n=40, grid=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    c = torch.randint(grid, (n, 2), generator=gen)
    from hebbnets.tasks.spatial2d import render

    return render(c, grid, 1.0)  # (n, grid, grid)


TINY = dict(atoms_u=6, atoms_s=6, nonneg=True, lam=0.05, epochs=2, batch_size=8, progress=False)


@pytest.mark.parametrize("factors", ["shared", "private"])
def test_model_api_contract(factors, tmp_path):
    x = _bumps()
    split = hn.Split(x, x)
    model = hn.models.make("vn_matrix", seed=0, factors=factors, **TINY)
    assert model.fit(split) is model
    y_hat = model.predict(x)
    assert y_hat.shape == x.shape and y_hat.dtype == torch.float32
    assert model.num_parameters == (36 * 20 if factors == "private" else 6 * 10 + 6 * 10)
    with pytest.raises(ValueError, match="^x:"):
        model.predict(x[:, :, :3])
    with pytest.raises(ValueError, match="^x_mask:"):
        model.predict(x, x_mask=torch.ones(40, 10, 9))
    model.save(tmp_path / "m")
    loaded = hn.models.load(tmp_path / "m")
    assert isinstance(loaded, MatrixVN) and torch.equal(loaded.predict(x), y_hat)
    again = hn.models.make("vn_matrix", seed=0, factors=factors, **TINY).fit(split)
    assert torch.equal(again.predict(x), y_hat)
    other = hn.models.make("vn_matrix", seed=1, factors=factors, **TINY).fit(split)
    assert not torch.equal(other.layer.U, model.layer.U)
    counts = model.active_count(x)
    assert counts.shape == (40,) and int(counts.max()) <= model.layer.num_atoms


@pytest.mark.parametrize(
    "x, y, word",
    [
        (torch.randn(8, 12), torch.randn(8, 12), "split"),  # not matrices
        (torch.randn(8, 4, 3), torch.randn(8, 3, 4), "split"),  # target shaped unlike input
        (torch.randn(8, 4, 3), torch.tensor([0, 1] * 4), "split"),  # class labels
    ],
)
def test_model_rejects_non_matrix_data(x, y, word):
    with pytest.raises(ValueError, match=f"^{word}"):
        hn.models.make("vn_matrix", **TINY).fit(hn.Split(x, y))


@pytest.mark.parametrize(
    "cfg, word",
    [(dict(atoms_u=0), "atoms_u"), (dict(factors="both"), "factors"), (dict(test_lam=-1.0), "test_lam"),
     (dict(norm_policy="big"), "norm_policy"), (dict(val_fraction=1.0), "val_fraction"),
     (dict(patience=0), "patience"), (dict(topk=-2), "topk"), (dict(beta=float("inf")), "beta")],
)
def test_bad_config_raises_naming_the_argument(cfg, word):
    with pytest.raises(ValueError, match=word):
        hn.models.make("vn_matrix", **cfg)


def test_model_infer_rejects_bad_shapes():
    x = _bumps(n=8)
    model = hn.models.make("vn_matrix", **TINY).fit(hn.Split(x, x))
    with pytest.raises(ValueError, match="^x_mask"):
        model.infer(x, x_mask=torch.ones(8, 10))
    with pytest.raises(ValueError, match="^y"):
        model.infer(x, y=x[:, :5])
    with pytest.raises(ValueError, match="^y_mask"):
        model.infer(x, y=x, y_mask=torch.ones(3, 10, 10))


def test_model_energy_gradient_with_target_and_masks_is_the_update():
    """With a clamped target (beta > 0) and masks the model's un-expanded free energy and the
    combined precision-weighted term the layer solves differ by a constant: Atomic-Hebb is still
    -rho times autograd of the free energy."""
    x = _bumps(n=12, seed=3).double()
    y = x + 0.05 * torch.randn(x.shape, generator=torch.Generator().manual_seed(0), dtype=D64)
    model = hn.models.make("vn_matrix", dtype="float64", beta=0.7, rho_u=0.3, rho_s=0.4, norm_policy="none",
                           max_iter=20000, tol=1e-10, **{**TINY, "epochs": 1})
    model.fit(hn.Split(x, y))
    inf = model.infer(x, y, _mask(x.shape, seed=1), _mask(x.shape, seed=2))
    assert float(model.layer.optimality_residual(inf.image, inf.codes, inf.lam, inf.precision, True).max()) < 1e-6
    layer = model.layer
    for p in (layer.U, layer.S):
        p.requires_grad_(True)
    model.energy(inf).mean().backward()
    gU, gS = layer.U.grad.clone(), layer.S.grad.clone()
    for p in (layer.U, layer.S):
        p.requires_grad_(False)
    upd = model.atomic_hebb(inf)
    torch.testing.assert_close(upd["U"], -0.3 * gU, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(upd["S"], -0.4 * gS, rtol=1e-9, atol=1e-12)


def test_learning_beats_untrained_atoms_on_held_out_bumps():
    """Bumps at centres never seen together in training (a held-out square) are reconstructed
    far better after learning: new pairings of learned row and column profiles."""
    task = hn.tasks.make("spatial2d", seed=0, mode="reconstruct", grid=12, held_out=(4, 7))
    cfg = dict(atoms_u=12, atoms_s=12, nonneg=True, lam=0.05, rho_u=1.0, rho_s=1.0, epochs=8, batch_size=16,
               progress=False, val_fraction=0.0)
    trained = hn.models.make("vn_matrix", seed=0, **cfg).fit(task.train)
    untrained = hn.models.make("vn_matrix", seed=0, **{**cfg, "epochs": 1, "rho_u": 0.0, "rho_s": 0.0}).fit(task.train)
    ood = task.tests["ood"]
    assert trained.score(ood) < 0.2 * untrained.score(ood)


def test_inpainting_mask_and_test_lam():
    x = _bumps(n=30, seed=5)
    model = hn.models.make("vn_matrix", seed=0, **TINY).fit(hn.Split(x, x))
    mask = _mask(x.shape, seed=4).float()
    a = model.predict(x, mask)
    b = model.predict(torch.where(mask > 0, x, 5.0), mask)
    assert torch.equal(a, b)  # hidden pixels are not read
    model.config.test_lam = 10.0  # everything is shrunk to zero at a huge test-time lam
    assert int(model.active_count(x).max()) == 0 and float(model.predict(x).abs().max()) == 0.0


def test_data_init_takes_profiles_from_training_images_only():
    from hebbnets.training import carve_validation

    x = torch.rand(40, 10, 10, generator=torch.Generator().manual_seed(6))  # every column unique
    model = hn.models.make("vn_matrix", seed=0, init="data", rho_u=0.0, rho_s=0.0, val_fraction=0.25,
                           **{**TINY, "epochs": 1}).fit(hn.Split(x, x))
    _, val_idx = carve_validation(40, 0.25, torch.Generator().manual_seed(0))
    is_val = torch.isin(torch.arange(40), val_idx).repeat_interleave(10)  # per column / row
    cols = x.transpose(1, 2).reshape(-1, 10)  # every column of every image
    rows = x.reshape(-1, 10)
    for P, cands in ((model.layer.U.T, cols), (model.layer.S.T, rows)):
        unit = cands / cands.norm(dim=1, keepdim=True)
        dist, source = (P[:, None, :] - unit[None]).norm(dim=-1).min(dim=1)  # exact, unlike cdist
        assert float(dist.max()) < 1e-5 and not bool(is_val[source].any())


@pytest.mark.parametrize("factors", ["shared", "private"])
def test_warm_started_matrix_epochs_reach_the_cold_energy_in_fewer_iterations(factors):
    """``warm_start``: each training image's FISTA starts from its previous epoch's code; the same
    convex problem from a warm start reaches the cold start's energy, in fewer iterations over the fit,
    and off is the old computation (and keeps old record keys)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, 6, 1, generator=gen, dtype=torch.float64) * torch.rand(64, 1, 5, generator=gen, dtype=torch.float64)
    split = hn.Split(x, x.clone())
    cfg = dict(atoms_u=3, atoms_s=3, factors=factors, lam=0.01, max_iter=2000, tol=1e-10, epochs=4, batch_size=16,
               val_fraction=0.0, progress=False, dtype="float64", nonneg=True)
    cold = hn.models.make("vn_matrix", seed=0, **cfg).fit(split)
    warm = hn.models.make("vn_matrix", seed=0, warm_start=True, **cfg).fit(split)
    assert warm.fit_iterations < cold.fit_iterations
    codes = warm.infer(x).codes
    e_cold = warm.energy(warm.infer(x))
    e_warm = warm.energy(warm.infer(x, g0=codes * 0.9))
    torch.testing.assert_close(e_warm, e_cold, rtol=1e-7, atol=1e-10)
    torch.testing.assert_close(warm.predict(x), cold.predict(x), rtol=1e-4, atol=1e-5)
    off = hn.models.make("vn_matrix", seed=0, warm_start=False, **cfg).fit(split)
    assert torch.equal(off.predict(x), cold.predict(x))
    assert "warm_start" not in hn.experiments.canonical_config("vn_matrix", dict(off.config.__dict__))
    with pytest.raises(ValueError, match="^warm_start:"):
        hn.models.make("vn_matrix", warm_start="yes")


@pytest.mark.parametrize("kind", ["shared", "private"])
def test_retiring_rows_with_a_per_pixel_precision_reaches_the_whole_batch_objective(kind):
    """``retire_rows``: the per-pixel precision is cut to the samples still iterating; at a tight
    tolerance every sample's energy matches the whole-batch solve, and the model passes it on."""
    layer = _layer(kind)
    image = _images(layer, B=6)
    mask = _mask(image.shape)
    whole = layer.infer(image, mask, lam=0.05, max_iter=20000, tol=1e-10)
    retire = layer.infer(image, mask, lam=0.05, max_iter=20000, tol=1e-10, retire_rows=True)
    assert retire.converged and retire.row_iterations.shape == (6,)
    torch.testing.assert_close(_objective(layer, image, retire.codes, 0.05, mask),
                               _objective(layer, image, whole.codes, 0.05, mask), rtol=1e-9, atol=1e-12)
    assert float(layer.optimality_residual(image, retire.codes, 0.05, mask).max()) < 1e-6
    x = _bumps()
    cfg = {**TINY, "max_iter": 5000, "tol": 1e-9, "dtype": "float64", "factors": kind}
    fitted = {r: hn.models.make("vn_matrix", seed=0, retire_rows=r, **cfg).fit(hn.Split(x, x)) for r in (False, True)}
    inf = {r: m.infer(x) for r, m in fitted.items()}
    torch.testing.assert_close(fitted[True].energy(inf[True]), fitted[False].energy(inf[False]), rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="^retire_rows:"):
        hn.models.make("vn_matrix", retire_rows="yes")
