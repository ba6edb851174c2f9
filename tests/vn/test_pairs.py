"""Pair atoms: operator vs explicit design, reference equality, Danskin, inactive factors,
the atom-choice measure, and the vn_pairs model."""
import pytest
import torch

import hebbnets as hn
from hebbnets.vn import PairAtomLayer, PairVN, ista_reference, lasso_optimality_residual, pair_atom_choice

D64 = torch.float64


def _layer(n_a=5, n_b=4, m=6, n=5, ka=3, kb=4, seed=0):
    torch.manual_seed(seed)
    return PairAtomLayer(n_a, n_b, m, n, ka, kb, D64)


def _input_design(layer):
    """Column ``a Kb + b`` is ``[p_a; q_b]``: ``(n_a + n_b, Ka Kb)``."""
    ka, kb = layer.code_shape
    top = layer.P.repeat_interleave(kb, dim=1)  # p_a for every b
    bottom = layer.Q.repeat(1, ka)  # q_b for every a
    return torch.cat([top, bottom], dim=0)


def _data(layer, B=6, seed=1):
    gen = torch.Generator().manual_seed(seed)
    m, n = layer.out.image_shape
    x = torch.randn(B, layer.input_size, generator=gen, dtype=D64)
    y = torch.randn(B, m, n, generator=gen, dtype=D64)
    return x, y


def _mask(shape, seed):
    return (torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.7).to(D64)


def test_operator_and_lipschitz_match_the_explicit_design():
    layer = _layer()
    S_in, S_out = _input_design(layer), layer.out.design()  # (n_in, A), (m n, A)
    codes = torch.randn(4, *layer.code_shape, dtype=D64)
    flat = codes.reshape(4, -1)
    torch.testing.assert_close(layer.reconstruct_input(codes), flat @ S_in.T)
    xm, ym = _mask((4, layer.input_size), 2), _mask((4, *layer.out.image_shape), 3)
    beta = 0.7
    H = torch.einsum("pa,bp,pc->bac", S_in, xm, S_in) + beta * torch.einsum(
        "pa,bp,pc->bac", S_out, ym.reshape(4, -1), S_out)
    got = layer.hessian(xm, beta * ym)(codes).reshape(4, -1)
    torch.testing.assert_close(got, torch.bmm(H, flat.unsqueeze(-1)).squeeze(-1))
    H0 = S_in.T @ S_in
    torch.testing.assert_close(layer.hessian(None, None)(codes).reshape(4, -1), flat @ H0)
    # the bound is above the true top eigenvalue, and tight when P and Q are orthonormal
    assert float(layer.lipschitz(None)) >= float(torch.linalg.eigvalsh(H0)[-1]) * (1 - 1e-9)
    assert bool((layer.lipschitz(beta * ym) >= torch.linalg.eigvalsh(H)[:, -1] * (1 - 1e-9)).all())
    layer.P.copy_(torch.eye(5, 3, dtype=D64))
    layer.Q.copy_(torch.eye(4, dtype=D64))
    torch.testing.assert_close(layer.lipschitz(None), torch.linalg.eigvalsh(_input_design(layer).T @ _input_design(layer))[-1])


@pytest.mark.parametrize("nonneg", [False, True])
def test_inference_equals_plain_ista_on_the_explicit_design(nonneg):
    layer = _layer(seed=4)
    x, y = _data(layer, B=3, seed=5)
    lam, beta = 0.05, 0.6
    fast = layer.infer(x, y, lam=lam, beta=beta, nonneg=nonneg, max_iter=20000, tol=1e-10).codes
    S_in, S_out = _input_design(layer), layer.out.design()
    ref = ista_reference(S_in, x, lam, n_iter=5000, nonneg=nonneg, U=S_out, h=y.reshape(len(y), -1), beta=beta)
    ref = ref.reshape(fast.shape)
    for codes in (fast, ref):
        assert float(layer.optimality_residual(x, codes, lam, y, beta=beta, nonneg=nonneg).max()) < 1e-6
    G = S_in.T @ S_in + beta * S_out.T @ S_out
    b = x @ S_in + beta * y.reshape(len(y), -1) @ S_out
    assert float(lasso_optimality_residual(G, b, fast.reshape(len(x), -1), lam, nonneg).max()) < 1e-6
    torch.testing.assert_close(layer.energy(x, fast, lam, y, beta=beta), layer.energy(x, ref, lam, y, beta=beta),
                               rtol=1e-9, atol=1e-12)


def test_atomic_hebb_is_minus_rho_times_autograd_gradient():
    layer = _layer(seed=6)
    x, y = _data(layer, seed=7)
    xm, ym = _mask(x.shape, 8), _mask(y.shape, 9)
    lam, beta = 0.05, 0.8
    codes = layer.infer(x, y, xm, ym, lam=lam, beta=beta, max_iter=20000, tol=1e-10).codes
    assert float(layer.optimality_residual(x, codes, lam, y, xm, ym, beta).max()) < 1e-6
    params = [layer.P, layer.Q, layer.U, layer.V]
    for p in params:
        p.requires_grad_(True)
    layer.energy(x, codes, lam, y, xm, ym, beta).mean().backward()
    grads = [p.grad.clone() for p in params]
    for p in params:
        p.requires_grad_(False)
        p.grad = None
    upd = layer.atomic_hebb(x, codes, y, xm, ym, beta=beta, rho_in=0.3, rho_out=0.2, norm_policy="none")
    for key, g, rho in zip("PQUV", grads, (0.3, 0.3, 0.2, 0.2)):
        torch.testing.assert_close(upd[key], -rho * g, rtol=1e-9, atol=1e-12)
        assert float(upd[key].abs().max()) > 0


@pytest.mark.parametrize("policy", ["unit", "clip", "none"])
def test_inactive_factors_are_bit_for_bit_unchanged(policy):
    torch.manual_seed(0)
    layer = PairAtomLayer(6, 6, 5, 5, 6, 6)  # float32
    x = torch.zeros(4, 12)
    x[:, 2] = 1.0
    x[:, 6 + 4] = 1.0
    y = torch.rand(4, 5, 5)
    codes = layer.infer(x, y, lam=0.05, beta=0.5, nonneg=True, topk=1).codes
    act_a, act_b = layer.out.active_vectors(codes)
    assert 0 < int(act_a.sum()) < 6 and 0 < int(act_b.sum()) < 6
    before = [t.clone() for t in (layer.P, layer.Q, layer.U, layer.V)]
    layer.atomic_hebb(x, codes, y, beta=0.5, rho_in=0.5, rho_out=0.5, norm_policy=policy)
    after = (layer.P, layer.Q, layer.U, layer.V)
    for t0, t1, act in zip(before, after, (act_a, act_b, act_a, act_b)):
        assert torch.equal(t1[:, ~act], t0[:, ~act])
        assert not torch.equal(t1[:, act], t0[:, act])
    assert int(layer.unused_a[~act_a].min()) == 1 and int(layer.unused_a[act_a].max()) == 0


def test_dead_factors_are_reseeded_to_unit_norm():
    torch.manual_seed(0)
    layer = PairAtomLayer(6, 6, 5, 5, 6, 6, D64)
    x = torch.zeros(4, 12, dtype=D64)
    x[torch.arange(4), torch.arange(4)] = 1.0
    x[:, 6] = 1.0
    for _ in range(2):
        codes = layer.infer(x, lam=0.05, nonneg=True, topk=1).codes
        act_a, _ = layer.out.active_vectors(codes)
        layer.atomic_hebb(x, codes, rho_in=0.5, rho_out=0.5, reseed_after=2)
    dead = ~act_a
    assert bool(dead.any())
    torch.testing.assert_close(layer.P[:, dead].norm(dim=0), torch.ones(int(dead.sum()), dtype=D64))
    assert int(layer.unused_a.max()) < 2


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda L, x, y: L.infer(x[:, :-1], lam=0.1), "x"),
        (lambda L, x, y: L.infer(x, y[:, :-1], lam=0.1), "y"),
        (lambda L, x, y: L.infer(x, y, x_mask=torch.ones(6, 3, dtype=D64), lam=0.1), "x_mask"),
        (lambda L, x, y: L.infer(x, y[:2], lam=0.1), "y"),
        (lambda L, x, y: L.infer(torch.full_like(x, float("inf")), lam=0.1), "x"),
        (lambda L, x, y: L.infer(x, lam=-0.1), "lam"),
    ],
)
def test_layer_bad_input_raises_naming_the_argument(call, word):
    layer = _layer()
    x, y = _data(layer)
    with pytest.raises(ValueError, match=f"^{word}"):
        call(layer, x, y)


# -- the model and the atom-choice measure -----------------------------------------------------
def _decode_task(grid=10):
    return hn.tasks.make("spatial2d", seed=0, mode="decode", grid=grid, held_out=(3, 6))


def _perfect_model(task, grid=10):
    """A vn_pairs model whose factors are exactly the one-hot codes and the bump profiles."""
    model = hn.models.make("vn_pairs", atoms_a=grid, atoms_b=grid, epochs=1, rho_in=0.0, rho_out=0.0,
                           reseed_after=0, progress=False, dtype="float64", max_iter=5000, tol=1e-10).fit(task.train)
    from hebbnets.tasks.spatial2d import render

    prof = render(torch.stack([torch.arange(grid), torch.zeros(grid, dtype=torch.long)], 1), grid, 1.0)[:, :, 0]
    layer = model.layer
    layer.P.copy_(torch.eye(grid))
    layer.Q.copy_(torch.eye(grid))
    layer.U.copy_(prof.T)  # u_a: the x-profile of a bump at row a
    layer.V.copy_(prof.T)
    return model


def test_perfect_factors_decode_every_unseen_pair_with_one_atom():
    task = _decode_task()
    model = _perfect_model(task)
    for split in (task.tests["ood"], task.tests["id"]):
        choice = pair_atom_choice(model, split.x)
        assert choice["single"] == 1.0 and int(choice["active"].max()) == 1
        # the only error is the LASSO's shrinkage of the one coefficient: 1 - lam / 2
        torch.testing.assert_close(model.predict(split.x).to(split.y), (1 - model.config.lam / 2) * split.y, rtol=1e-4, atol=1e-6)


def test_atom_choice_labels(monkeypatch):
    task = _decode_task()
    model = _perfect_model(task)
    x = task.tests["ood"].x[:3].double()
    a, b = x[:, :10].argmax(-1), x[:, 10:].argmax(-1)
    G = torch.zeros(3, 10, 10, dtype=D64)
    G[0, a[0], b[0]] = 1.0  # single
    G[1, a[1], (b[1] + 1) % 10] = 0.5  # two half-explaining atoms
    G[1, (a[1] + 1) % 10, b[1]] = 0.5
    G[2, (a[2] + 1) % 10, (b[2] + 1) % 10] = 1.0  # a wrong atom
    monkeypatch.setattr(model, "codes", lambda x, x_mask=None: G)
    out = pair_atom_choice(model, x)
    assert out["kind"] == ["single", "two_half", "other"]
    torch.testing.assert_close(out["matching_share"], torch.tensor([1.0, 0.0, 0.0], dtype=D64))
    with pytest.raises(ValueError, match="^share"):
        pair_atom_choice(model, x, share=0.4)
    with pytest.raises(ValueError, match="^model"):
        pair_atom_choice(hn.models.make("vn"), x)


def test_learned_pairs_decode_held_out_centres_with_single_atoms():
    """Every factor learned from other pairs; inference (plain LASSO at test) picks the one atom
    of each held-out centre."""
    task = hn.tasks.make("spatial2d", seed=0, mode="decode", grid=12, held_out=(4, 7))
    model = hn.models.make("vn_pairs", seed=0, atoms_a=12, atoms_b=12, epochs=20, batch_size=16, val_fraction=0.0,
                           progress=False).fit(task.train)
    ood = task.tests["ood"]
    assert pair_atom_choice(model, ood.x)["single"] == 1.0
    assert model.score(ood) < 1e-3 * float((ood.y**2).mean())  # measured: 6e-7 of it


def test_model_api_contract(tmp_path):
    task = _decode_task()
    cfg = dict(atoms_a=10, atoms_b=10, epochs=2, batch_size=16, progress=False)
    model = hn.models.make("vn_pairs", seed=0, **cfg).fit(task.train)
    x = task.tests["ood"].x
    y_hat = model.predict(x)
    assert y_hat.shape == task.tests["ood"].y.shape and y_hat.dtype == torch.float32
    assert model.num_parameters == 10 * (10 + 10 + 10 + 10)
    model.save(tmp_path / "p")
    loaded = hn.models.load(tmp_path / "p")
    assert isinstance(loaded, PairVN) and torch.equal(loaded.predict(x), y_hat)
    assert torch.equal(hn.models.make("vn_pairs", seed=0, **cfg).fit(task.train).predict(x), y_hat)
    with pytest.raises(ValueError, match="^x:"):
        model.predict(x[:, :5])


@pytest.mark.parametrize(
    "x, y, cfg, word",
    [
        (torch.randn(8, 4, 3), torch.randn(8, 4, 3), {}, "split"),  # matrix inputs
        (torch.randn(8, 6), torch.randn(8, 12), {}, "split"),  # vector targets
        (torch.randn(8, 6), torch.randn(8, 3, 4), dict(input_split=6), "input_split"),
    ],
)
def test_model_rejects_wrong_data(x, y, cfg, word):
    with pytest.raises(ValueError, match=f"^{word}"):
        hn.models.make("vn_pairs", atoms_a=3, atoms_b=3, epochs=1, progress=False, **cfg).fit(hn.Split(x, y))


@pytest.mark.parametrize("cfg, word", [(dict(atoms_a=0), "atoms_a"), (dict(test_topk=-1), "test_topk"),
                                       (dict(reseed_after=-1), "reseed_after"), (dict(rho_in=-1.0), "rho_in")])
def test_bad_config_raises_naming_the_argument(cfg, word):
    with pytest.raises(ValueError, match=word):
        hn.models.make("vn_pairs", **cfg)
