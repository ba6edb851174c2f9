"""The model registry and the shared Model API (checked on every registered model)."""
import dataclasses
import pytest
import torch

import hebbnets as hn


def test_registry_lists_vn_and_mlp():
    assert {"vn", "mlp"} <= set(hn.models.names())


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: hn.models.make("nope"), "name"),
        (lambda: hn.models.make("mlp", hiden=(3,)), "hiden"),
        (lambda: hn.models.make("mlp", seed=-1), "seed"),
        (lambda: hn.models.make("mlp", lr=0.0), "lr"),
        (lambda: hn.models.load("/nonexistent/dir"), "path"),
        (lambda: hn.tasks.make("nope"), "name"),
        (lambda: hn.tasks.make("toy_atoms", scale="huge"), "scale"),
        (lambda: hn.tasks.make("toy_atoms", n_atomz=3), "n_atomz"),
    ],
)
def test_bad_names_and_keys_raise(call, word):
    with pytest.raises(ValueError, match=word):
        call()


@pytest.fixture(scope="module")
def tiny_task():
    return hn.tasks.make("toy_atoms", seed=1, n_train=120, n_test=30, n_atoms=8, x_dim=6, y_dim=5)


TINY = {"vn": dict(atoms=(10,), epochs=1), "mlp": dict(hidden=(16,), epochs=2)}


@pytest.mark.parametrize("name", ["vn", "mlp"])
def test_model_api_contract(name, tiny_task, tmp_path):
    model = hn.models.make(name, seed=0, task=tiny_task, progress=False, **TINY[name])
    with pytest.raises(ValueError, match="model"):
        model.predict(tiny_task.tests["id"].x)  # not fitted
    assert model.fit(tiny_task.train) is model
    x = tiny_task.tests["ood"].x
    y_hat = model.predict(x)
    assert y_hat.shape == tiny_task.tests["ood"].y.shape and y_hat.dtype == torch.float32
    assert model.score(tiny_task.tests["ood"]) == pytest.approx(float(((y_hat - tiny_task.tests["ood"].y) ** 2).mean()))
    assert isinstance(model.num_parameters, int) and model.num_parameters > 0
    with pytest.raises(ValueError, match="^x:"):
        model.predict(x[:, :3])
    with pytest.raises(ValueError, match="^x:"):
        model.predict(torch.full_like(x, float("nan")))
    with pytest.raises(ValueError, match="^split:"):
        model.fit((x, x))
    model.save(tmp_path / name)
    assert torch.equal(hn.models.load(tmp_path / name).predict(x), y_hat)
    again = hn.models.make(name, seed=0, task=tiny_task, progress=False, **TINY[name]).fit(tiny_task.train)
    assert torch.equal(again.predict(x), y_hat)


def test_task_model_configs_are_the_starting_point(tiny_task):
    m = hn.models.make("vn", task=tiny_task, lam=0.2)
    assert m.config.lam == 0.2
    assert m.config.atoms == tuple(tiny_task.model_configs["vn"]["atoms"])


def test_masked_metrics():
    x = torch.randn(4, 3)
    mask = torch.tensor([[1.0, 0, 1]] * 4)
    split = hn.Split(x, x, x_mask=mask, metric="mse_missing")
    y_hat = x.clone()
    y_hat[:, 1] += 2.0  # error only on the missing entries
    y_hat[:, 0] += 5.0  # error on observed entries is ignored by mse_missing
    assert hn.metrics.mse_missing(y_hat, split) == pytest.approx(4.0)
    assert hn.metrics.mse(y_hat, hn.Split(x, x, y_mask=mask)) == pytest.approx(25.0 / 2)


def test_mlp_classifies_with_integer_targets():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 4, generator=gen)
    y = (x[:, 0] > 0).long()
    m = hn.models.make("mlp", hidden=(16,), epochs=60, lr=1e-2, progress=False).fit(hn.Split(x, y))
    split = hn.Split(x, y)
    assert m.predict(x).dtype == torch.long
    assert m.score(split) > 0.9  # accuracy


def test_mlp_uses_input_masks():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=gen)
    mask = (torch.rand(64, 4, generator=gen) > 0.3).float()
    m = hn.models.make("mlp", hidden=(8,), epochs=2, progress=False).fit(hn.Split(x, x, x_mask=mask))
    a = m.predict(x, mask)
    x2 = x + 10 * (1 - mask)  # values at missing entries must not matter
    assert torch.equal(m.predict(x2, mask), a)
    plain = hn.models.make("mlp", hidden=(8,), epochs=1, progress=False).fit(hn.Split(x, x))
    with pytest.raises(ValueError, match="x_mask"):
        plain.predict(x, mask)


# --- fit starts fresh, partial_fit continues (every registered model) ---------------------------
def _seq(n, seed):  # (N, 8) signals, reconstruct
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(seed))
    return hn.Split(x, x.clone())


def _img(n, seed):  # (N, 8, 8) images, reconstruct
    x = torch.rand(n, 8, 8, generator=torch.Generator().manual_seed(seed))
    return hn.Split(x, x.clone())


def _cls(n, seed, t=6, d=4):  # (N, T, D) token sequences, 3 classes
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.randn(n, t, d, generator=g)
    x[:, 0, :3] += 2.0 * torch.nn.functional.one_hot(y, 3).float()
    return hn.Split(x, y)


def _bodies(n, seed):  # (N, M, W, F) padded bodies -> (N, M, 2)
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(n, 4, 3, 5)
    mask[::2, 3:] = 0
    x = torch.randn(n, 4, 3, 5, generator=g) * mask
    y = torch.randn(n, 4, 2, generator=g) * mask[:, :, 0, :2]
    return hn.Split(x, y, x_mask=mask, y_mask=mask[:, :, 0, :2].contiguous())


def _codes(n, seed):  # (N, 8) one-hot pairs -> (N, 4, 4) outer products, decode
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randint(4, (n,), generator=g), torch.randint(4, (n,), generator=g)
    eye = torch.eye(4)
    return hn.Split(torch.cat([eye[a], eye[b]], 1), eye[a][:, :, None] * torch.rand(n, 1, 4, generator=g))


def _masked(n, seed):  # (N, 8) signals with a hidden segment -> the full signals
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(seed))
    mask = torch.ones(n, 8)
    mask[:, 3:5] = 0
    return hn.Split(x * mask, x, x_mask=mask)


def _ctx(n, seed):  # (N, 8 + 1) content and one context entry -> (N, 8)
    g = torch.Generator().manual_seed(seed)
    z, c = torch.randn(n, 8, generator=g), torch.rand(n, 1, generator=g) * 2 - 1
    return hn.Split(torch.cat([z, c], 1), z * (1 + c))


QUIET = dict(progress=False, epochs=2, batch_size=16)
CASES = {  # model -> (tiny config, split maker)
    "vn": (dict(atoms=(6,), epochs=2, batch_size=16, max_iter=20, progress=False), _seq),
    "vn_matrix": (dict(atoms_u=3, atoms_s=3, max_iter=20, **QUIET), _img),
    "vn_pairs": (dict(atoms_a=3, atoms_b=3, max_iter=20, **QUIET), _codes),
    "mlp": (dict(hidden=(8,), **QUIET), _seq),
    "lista": (dict(steps=2, **QUIET), _seq),
    "transformer": (dict(d_model=8, n_heads=2, n_layers=1, d_ff=8, **QUIET), _seq),
    "mamba": (dict(d_model=4, n_layers=1, d_state=2, **QUIET), _seq),
    "ae": (dict(hidden=(8,), latent=2, **QUIET), _img),
    "conv_ae": (dict(channels=2, latent=2, **QUIET), _img),
    "cnn": (dict(channels=2, latent=4, **QUIET), _img),
    "vae": (dict(hidden=8, latent=2, channels=2, **QUIET), _img),
    "factorized": (dict(hidden=4, **QUIET), _img),
    "gnn": (dict(hidden=8, rounds=1, **QUIET), _bodies),
    "lstm": (dict(hidden=4, layers=1, **QUIET), _cls),
    "sparse_transformer": (dict(d_model=8, n_heads=2, d_ff=8, n_layers=1, **QUIET), _cls),
    "rsgn": (dict(n_nodes=16, k=4, d_hidden=4, n_steps=1, **QUIET), _cls),
    "rsgn_parity": (dict(n_nodes=16, d_hidden=4, n_steps=1, **QUIET), _cls),
    "centroid": (dict(), _cls),
    "lda": (dict(), _cls),
    "vn_applied": (dict(atoms=(6,), context_dims=1, max_iter=20, **QUIET), _ctx),
    "vn_applied_set": (dict(atoms=6, content=4, hidden=8, max_iter=20, **QUIET), _bodies),
    "set_mlp": (dict(content=4, hidden=8, summary=4, **QUIET), _bodies),
    "applied_set_code_ff": (dict(atoms=6, content=4, hidden=8, summary=4, l1=1e-3, **QUIET), _bodies),
    "applied_set_implicit": (dict(atoms=6, content=4, hidden=8, lam=0.02, l2=0.05, max_iter=20, **QUIET), _bodies),
    "window_linear": (dict(), _bodies),
    "system_ridge": (dict(), _bodies),
    "zeros": (dict(), _seq),  # model-free references (hebbnets.experiments.references)
    "gap_interp": (dict(), _masked),
    "pca": (dict(n_components=3), _img),  # simple code baselines (hebbnets.baselines.linear_codes)
    "dict_learning": (dict(n_components=3, n_iter=2, batch_size=16), _img),
    "svd_image": (dict(rank=1), _img),
    # same-structure controls (hebbnets.controls)
    "matrix_code_ff": (dict(atoms_u=3, atoms_s=3, hidden=8, l1=1e-3, **QUIET), _codes),
    "vn_matrix_implicit": (dict(atoms_u=3, atoms_s=3, max_iter=20, **QUIET), _img),
    "applied_code_ff": (dict(atoms=6, context_dims=1, hidden=8, l1=1e-3, **QUIET), _ctx),
    "applied_implicit": (dict(atoms=6, context_dims=1, lam=0.02, max_iter=20, **QUIET), _ctx),
    "vector_code_ff": (dict(atoms=6, hidden=8, l1=1e-3, **QUIET), _masked),
    "vn_implicit": (dict(atoms=6, lam=0.02, max_iter=20, **QUIET), _masked),
}


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_every_registered_model_has_a_fit_case():
    assert sorted(CASES) == hn.models.names(), "add the new model to CASES (fit / partial_fit contract)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_after_fit_equals_a_fresh_fit(name):
    cfg, data = CASES[name]
    a, b = data(32, seed=1), data(40, seed=2)
    refit = hn.models.make(name, seed=3, **cfg).fit(a).fit(b)
    fresh = hn.models.make(name, seed=3, **cfg).fit(b)
    assert _same(_state(refit), _state(fresh))
    assert torch.equal(refit.predict(b.x, b.x_mask), fresh.predict(b.x, b.x_mask))


class _StartState(hn.training.Callback):
    def on_fit_start(self, model, train, val):
        self.state = _state(model)


LOCAL_RULES = {"vn": ("rho_s", "rho_u"), "vn_matrix": ("rho_u", "rho_s"), "vn_pairs": ("rho_in", "rho_out"),
               "vn_applied": ("rho_u", "rho_s", "rho_c")}
CLOSED_FORM = {"centroid", "lda", "window_linear", "system_ridge", "zeros", "gap_interp", "pca", "dict_learning",
               "svd_image"}


@pytest.mark.parametrize("name", sorted(set(CASES) - set(LOCAL_RULES) - CLOSED_FORM))
def test_partial_fit_continues_backprop_models_from_their_weights(name):
    cfg, data = CASES[name]
    a, b = data(32, seed=1), data(40, seed=2)
    model = hn.models.make(name, seed=3, **cfg).fit(a)
    after_a = _state(model)
    model.callbacks = [observer := _StartState()]
    model.partial_fit(b)
    assert _same(observer.state, after_a)  # training on b started from the weights learned on a
    assert not _same(_state(model), after_a)
    fresh = hn.models.make(name, seed=3, **cfg).fit(b)
    assert not _same(_state(model), _state(fresh))


@pytest.mark.parametrize("name", sorted(LOCAL_RULES))
def test_partial_fit_continues_vn_from_its_atoms(name):
    cfg, data = CASES[name]
    a, b = data(32, seed=1), data(40, seed=2)
    still = {rate: 0.0 for rate in LOCAL_RULES[name]}
    if "reseed_after" in {f.name for f in dataclasses.fields(hn.models.get(name).Config)}:
        still["reseed_after"] = 0
    frozen = hn.models.make(name, seed=3, **{**cfg, **still}).fit(a)
    atoms = {k: p.clone() for k, p in frozen.named_parameters()}
    frozen.partial_fit(b)  # no learning and no re-initialisation: the atoms stay bit for bit
    assert _same({k: p.clone() for k, p in frozen.named_parameters()}, atoms)
    model = hn.models.make(name, seed=3, **cfg).fit(a)
    after_a = _state(model)
    model.partial_fit(b)
    assert not _same(_state(model), after_a)
    assert not _same(_state(model), _state(hn.models.make(name, seed=3, **cfg).fit(b)))


def test_centroid_partial_fit_gives_the_means_over_all_samples():
    a, b = _cls(30, seed=1), _cls(45, seed=2)
    both = hn.Split(torch.cat([a.x, b.x]), torch.cat([a.y, b.y]))
    staged = hn.models.make("centroid").fit(a).partial_fit(b)
    joint = hn.models.make("centroid").fit(both)
    torch.testing.assert_close(staged.centroids, joint.centroids)
    assert torch.equal(staged.counts, joint.counts)
    with pytest.raises(ValueError, match="^model:"):
        hn.models.make("lda").fit(a).partial_fit(b)


@pytest.mark.parametrize("name", ["window_linear", "system_ridge"])
def test_closed_form_dynamics_baselines_partial_fit_equals_the_joint_fit(name):
    a, b = _bodies(30, seed=1), _bodies(44, seed=2)
    cat = lambda f: torch.cat([getattr(a, f), getattr(b, f)])  # noqa: E731
    both = hn.Split(cat("x"), cat("y"), x_mask=cat("x_mask"), y_mask=cat("y_mask"))
    staged = hn.models.make(name).fit(a).partial_fit(b)
    joint = hn.models.make(name).fit(both)
    for key, value in joint.state_dict().items():
        torch.testing.assert_close(staged.state_dict()[key], value, rtol=1e-6, atol=1e-8)


def test_partial_fit_on_an_unfitted_model_is_fit():
    cfg, data = CASES["mlp"]
    a = data(32, seed=1)
    assert _same(_state(hn.models.make("mlp", seed=0, **cfg).partial_fit(a)), _state(hn.models.make("mlp", seed=0, **cfg).fit(a)))


@pytest.mark.parametrize("name", ["mlp", "vn"])
def test_partial_fit_rejects_incompatible_splits(name):
    cfg, data = CASES[name]
    model = hn.models.make(name, seed=0, **cfg).fit(data(32, seed=1))
    x = torch.randn(8, 5)
    for bad in (hn.Split(x, x), hn.Split(torch.randn(8, 8), torch.randn(8, 3)),
                hn.Split(torch.randn(8, 8), torch.randn(8, 8), x_mask=torch.ones(8, 8))):
        with pytest.raises(ValueError, match="^split:"):
            model.partial_fit(bad)
    with pytest.raises(ValueError, match="^split:"):
        model.partial_fit((x, x))
    with pytest.raises(ValueError, match="^split:"):
        hn.models.make("mlp", **CASES["mlp"][0]).fit(_cls(12, 0)).partial_fit(hn.Split(_cls(12, 0).x, torch.full((12,), 5)))
