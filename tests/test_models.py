"""The model registry and the shared Model API (checked on every registered model)."""
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
