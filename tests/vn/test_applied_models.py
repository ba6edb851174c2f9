"""The registered applied-weight models (vn_applied, vn_applied_set) and the set_mlp counterpart:
the Model API, early stopping that keeps the best state, symmetries of the body-set models,
Atomic-Hebb wiring, bad input."""
import pytest
import torch

import hebbnets as hn
from hebbnets.tasks.nbody_windows import BodyEncoder
from hebbnets.vn.applied_model import tuning_code


def _context_task(n=160, d=6, seed=0):
    """y = (I + c A) z: the context c (one entry) selects how much of a fixed map A is applied."""
    A = torch.randn(d, d, generator=torch.Generator().manual_seed(100)) / d**0.5  # one map for every seed
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=gen)
    c = torch.rand(n, 1, generator=gen) * 2 - 1
    y = z + c * (z @ A.T)
    return hn.Split(torch.cat([z, c], 1), y)


TINY_APPLIED = dict(atoms=(12,), context_dims=1, epochs=3, max_iter=30, progress=False, dtype="float64")


def test_vn_applied_model_api_and_determinism(tmp_path):
    split = _context_task()
    model = hn.models.make("vn_applied", seed=0, **TINY_APPLIED).fit(split)
    pred = model.predict(split.x)
    assert pred.shape == split.y.shape and pred.dtype == torch.float64 and bool(torch.isfinite(pred).all())  # its dtype
    model.save(tmp_path / "m")
    assert torch.equal(hn.models.load(tmp_path / "m").predict(split.x), pred)
    again = hn.models.make("vn_applied", seed=0, **TINY_APPLIED).fit(split)
    assert torch.equal(again.predict(split.x), pred)
    with pytest.raises(ValueError, match="^x"):
        model.predict(split.x[:, :3])


def test_vn_applied_keeps_the_best_validation_epoch():
    split = _context_task()
    model = hn.models.make("vn_applied", seed=0, **{**TINY_APPLIED, "epochs": 6, "patience": 2}).fit(split)
    val = model.train_history["val"]
    assert 1 <= len(val) <= 6
    # the fit ends with the state of the best epoch: rescoring the carved validation set gives it
    from hebbnets.training import carve_validation

    _, va = carve_validation(len(split), model.config.val_fraction, torch.Generator().manual_seed(0))
    assert model.score(split.subset(va)) == pytest.approx(min(val), rel=1e-6)
    if len(val) < 6:  # stopped early: the last `patience` epochs did not improve
        assert min(val[-2:]) >= min(val)


@pytest.mark.parametrize("train_codes, factor", [("context", 0.25), ("clamped", 0.5)])
def test_vn_applied_learns_a_context_selected_map(train_codes, factor):
    """The context alone selects the applied weight y = (I + c A) z (A of full rank 6): after
    training, prediction is well below the identity's error (the content copied)."""
    split, test = _context_task(n=400, seed=1), _context_task(n=200, seed=2)
    cfg = {**TINY_APPLIED, "atoms": (24,), "epochs": 30, "patience": 30, "max_iter": 100, "lam": 0.01,
           "context_encoding": "tuning", "tuning_points": 5, "rho_u": 2.0, "rho_s": 2.0, "rho_c": 2.0,
           "alpha": 1.0 if train_codes == "context" else 100.0, "residual": True, "train_codes": train_codes}
    model = hn.models.make("vn_applied", seed=0, **cfg).fit(split)
    identity = float(((test.x[:, :-1] - test.y) ** 2).mean())
    assert model.score(test) < factor * identity, (model.score(test), identity)


def test_tuning_code_peaks_at_its_centres():
    c = torch.tensor([[-1.0, 0.0], [1.0, 0.5]])
    t = tuning_code(c, 5)  # (2, 10): five curves per entry
    assert t.shape == (2, 10)
    assert int(t[0, :5].argmax()) == 0 and int(t[0, 5:].argmax()) == 2
    assert int(t[1, :5].argmax()) == 4 and int(t[1, 5:].argmax()) == 3
    torch.testing.assert_close(t.max(), torch.tensor(1.0))


@pytest.mark.parametrize("cfg, word", [
    (dict(context_dims=0), "context_dims"),
    (dict(atoms=(4, 4), hidden=()), "hidden"),
    (dict(context_encoding="onehot"), "context_encoding"),
    (dict(test_lam=-0.1), "test_lam"),
    (dict(norm_policy="unit_s"), "norm_policy"),
    (dict(val_fraction=1.0), "val_fraction"),
    (dict(train_codes="target"), "train_codes"),
    (dict(atoms=(4, 4), hidden=(3,), context_dims=2, context_groups=((0,),)), "context_groups"),
    (dict(context_dims=2, context_groups=((2,),)), "context_groups"),
])
def test_vn_applied_bad_config(cfg, word):
    with pytest.raises(ValueError, match=f"^{word}"):
        hn.models.make("vn_applied", **cfg)


def test_vn_applied_bad_data():
    split = _context_task()
    with pytest.raises(ValueError, match="^context_dims"):
        hn.models.make("vn_applied", context_dims=7, progress=False).fit(split)
    with pytest.raises(ValueError, match="^x_mask"):
        hn.models.make("vn_applied", progress=False).fit(hn.Split(split.x, split.y, x_mask=torch.ones_like(split.x)))
    with pytest.raises(ValueError, match="^residual"):
        hn.models.make("vn_applied", residual=True, progress=False).fit(hn.Split(split.x, split.y[:, :3]))


# -- body sets ------------------------------------------------------------------------------------
def _bodies(n=24, m=4, w=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, m, w, 6, generator=gen)
    mask = torch.ones(n, m, w, 6)
    mask[0, 3:] = 0
    mask[1, 2:] = 0
    x = x * mask
    y = torch.randn(n, m, 4, generator=gen) * mask[:, :, 0, :4]
    return hn.Split(x, y, x_mask=mask, y_mask=mask[:, :, 0, :4].contiguous())


def test_body_encoder_symmetries():
    split = _bodies()
    enc = BodyEncoder(6, 5, 8).eval()
    body = split.x_mask[:, :, 0, 0]
    z = enc(split.x, body)
    perm = torch.tensor([2, 0, 3, 1])
    torch.testing.assert_close(enc(split.x[:, perm], body[:, perm]), z[:, perm])
    shifted = split.x.clone()
    shifted[..., :2] += 3.0 * split.x_mask[..., :2]  # translate every real body
    torch.testing.assert_close(enc(shifted, body), z, rtol=1e-4, atol=1e-5)
    noisy = split.x + 100 * (1 - split.x_mask) * torch.randn_like(split.x)
    torch.testing.assert_close(enc(noisy, body), z)
    assert bool((z[0, 3] == 0).all())


SET_TINY = {
    "vn_applied_set": dict(atoms=8, content=6, hidden=8, epochs=3, max_iter=20, progress=False),
    "set_mlp": dict(content=6, hidden=8, summary=4, epochs=3, progress=False),
}


@pytest.mark.parametrize("name", sorted(SET_TINY))
def test_set_models_api_equivariance_padding(name, tmp_path):
    split = _bodies()
    model = hn.models.make(name, seed=0, **SET_TINY[name]).fit(split)
    out = model.predict(split.x, split.x_mask)
    assert out.shape == split.y.shape and bool(torch.isfinite(out).all())
    perm = torch.tensor([2, 0, 3, 1])
    torch.testing.assert_close(model.predict(split.x[:, perm], split.x_mask[:, perm]), out[:, perm], rtol=1e-4, atol=1e-5)
    noisy = split.x + 100 * (1 - split.x_mask) * torch.randn_like(split.x)
    torch.testing.assert_close(model.predict(noisy, split.x_mask), out)
    assert bool((out[0, 3] == 0).all()) and bool((out[1, 2:] == 0).all())
    # one system's prediction does not depend on the other systems of the batch
    torch.testing.assert_close(model.predict(split.x[2:3], split.x_mask[2:3]), out[2:3], rtol=1e-4, atol=1e-5)
    model.save(tmp_path / name)
    assert torch.equal(hn.models.load(tmp_path / name).predict(split.x, split.x_mask), out)
    again = hn.models.make(name, seed=0, **SET_TINY[name]).fit(split)
    assert torch.equal(again.predict(split.x, split.x_mask), out)
    # early stopping keeps the best validation state
    hist = model.train_history["val"]
    from hebbnets.training import carve_validation, supervised_loss

    _, va = carve_validation(len(split), model.config.val_fraction, torch.Generator().manual_seed(0))
    val = split.subset(va)
    got = float(supervised_loss(model.predict(val.x, val.x_mask), val, model.spec))
    assert got == pytest.approx(min(hist), rel=1e-5)


def test_vn_applied_set_atoms_follow_atomic_hebb_after_each_step():
    """The callback applies exactly the Atomic-Hebb update of the step's own inference."""
    split = _bodies()
    cfg = dict(SET_TINY["vn_applied_set"], epochs=1, batch_size=64, norm_policy="none", reseed_after=0, rho_u=0.3,
               rho_s=0.2, val_fraction=0.0)
    model = hn.models.make("vn_applied_set", seed=0, **cfg)
    seen = {}

    class Spy(hn.training.Callback):
        def on_fit_start(self, m, train, val):
            seen["before"] = {k: getattr(m.stack.layers[0], k).clone() for k in ("U", "S")}

        def on_step_end(self, m, step, batch, loss):
            seen["inference"] = m.last_inference

    model.callbacks = [Spy()]
    model.fit(split)  # one epoch, one batch: the model's Hebb callback runs before the spy
    layer = model.stack.layers[0]
    now = {k: getattr(layer, k).clone() for k in ("U", "S")}
    for k in ("U", "S"):  # the directions at the step's inference, on the atoms before the step
        getattr(layer, k).copy_(seen["before"][k])
    upd = model.stack.hebbian_updates(seen["inference"])[0]
    for k, rho in (("U", 0.3), ("S", 0.2)):
        torch.testing.assert_close(now[k] - seen["before"][k], rho * upd[k], rtol=1e-5, atol=1e-7)
        assert float(upd[k].abs().max()) > 0


@pytest.mark.parametrize("name", sorted(SET_TINY))
def test_set_models_refuse_other_layouts(name):
    with pytest.raises(ValueError, match="^x"):
        hn.models.make(name, progress=False).fit(hn.Split(torch.randn(10, 6), torch.randn(10, 3)))
    with pytest.raises(ValueError, match="^position_dims"):
        hn.models.make(name, position_dims=6, progress=False).fit(_bodies())


def test_routed_stack_composes_two_maps_learned_one_at_a_time():
    """y = (I + c_2 B)(I + c_1 A) z. Training shows one map at a time (c_1 or c_2 zero); the test
    composes both. Two stacked residual layers, each explaining one context entry, compose the
    product of their effective weights and beat one layer (which can only add them)."""
    d = 4
    A = torch.randn(d, d, generator=torch.Generator().manual_seed(100)) / d**0.5
    B = torch.randn(d, d, generator=torch.Generator().manual_seed(101)) / d**0.5

    def data(n, seed, both):
        gen = torch.Generator().manual_seed(seed)
        z, c = torch.randn(n, d, generator=gen), torch.rand(n, 2, generator=gen) * 2 - 1
        if not both:
            c = c * torch.nn.functional.one_hot(torch.randint(2, (n,), generator=gen), 2)
        h = z + c[:, :1] * (z @ A.T)
        return hn.Split(torch.cat([z, c], 1), h + c[:, 1:] * (h @ B.T))

    train, composed = data(300, 0, False), data(200, 2, True)
    cfg = dict(context_dims=2, max_iter=60, max_sweeps=2, lam=0.01, context_encoding="tuning_centred", tuning_points=5,
               rho_u=2.0, rho_s=2.0, rho_c=2.0, alpha=1.0, residual=True, progress=False, dtype="float64",
               train_codes="context", epochs=12, patience=12)
    one = hn.models.make("vn_applied", seed=0, atoms=(12,), **cfg).fit(train)
    two = hn.models.make("vn_applied", seed=0, atoms=(12, 12), hidden=(d,), context_groups=((0,), (1,)), **cfg).fit(train)
    identity = float(((composed.x[:, :-2] - composed.y) ** 2).mean())
    assert two.score(composed) < 0.45 * identity
    assert two.score(composed) < 0.75 * one.score(composed)


def test_vn_applied_set_window_rows_training_infers_like_prediction():
    """train_rows="window": the training code comes from the window rows alone (as at
    prediction), while the learning signal still includes the target row."""
    split = _bodies()
    model = hn.models.make("vn_applied_set", seed=0, **{**SET_TINY["vn_applied_set"], "train_rows": "window",
                                                         "epochs": 1, "val_fraction": 0.0, "batch_size": 64})
    model.fit(split)
    model.train()
    loss = model._loss(split)
    inf = model.last_inference
    M, W = split.x.shape[1], split.x.shape[2]
    n_win = M * (W - 1)
    again = model.stack.infer(inf.z[:, :n_win], y=inf.y[:, :n_win], y_mask=inf.y_mask[:, :n_win, 0]).codes[0]
    torch.testing.assert_close(inf.codes[0], again)
    assert inf.y.shape[1] == n_win + M  # the target rows are part of the energy
    torch.testing.assert_close(loss, model.stack.energy(inf).mean())
