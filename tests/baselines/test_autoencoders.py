"""Fully connected and convolutional autoencoder baselines."""
import pytest
import torch

import hebbnets as hn


def _images(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 12, 12, generator=g)


@pytest.mark.parametrize("name", ["ae", "conv_ae"])
def test_reconstructs_and_outputs_image_shape(name):
    x = _images()
    cfg = dict(latent=4, epochs=1, progress=False)
    model = hn.models.make(name, seed=0, **cfg).fit(hn.Split(x, x))
    assert model.predict(x).shape == (32, 12, 12)
    sig = hn.models.make(name, seed=0, output="sigmoid", **cfg).fit(hn.Split(x, x))
    out = sig.predict(x)
    assert bool(((out > 0) & (out < 1)).all())


def test_ae_learns_a_low_rank_signal_through_its_bottleneck():
    g = torch.Generator().manual_seed(0)
    basis = torch.randn(3, 20, generator=g)
    x = torch.randn(300, 3, generator=g) @ basis
    model = hn.models.make("ae", seed=0, hidden=(32,), latent=3, epochs=150, lr=3e-3, progress=False).fit(hn.Split(x, x))
    assert model.score(hn.Split(x, x)) < 0.05 * float(x.var())
    assert model.encode(x).shape == (300, 3)


def test_conv_ae_routes_the_code_to_the_bottleneck():
    x = _images(8)
    code = torch.randn(8, 3)
    flat = torch.cat([x.reshape(8, -1), code], 1)  # (8, 144 + 3)
    model = hn.models.make("conv_ae", seed=0, channels=4, latent=4, epochs=1, progress=False).fit(hn.Split(flat, x))
    assert model.code_dim == 3
    other = flat.clone()
    other[:, 144:] += 1.0
    assert not torch.allclose(model.predict(other), model.predict(flat))
    # masked training: mask becomes an image channel; masked-out pixels do not matter
    mask = (torch.rand(8, 147) > 0.3).float()
    masked = hn.models.make("conv_ae", seed=0, channels=4, latent=4, epochs=1, progress=False).fit(
        hn.Split(flat, x, x_mask=mask))
    noisy = flat + 5 * (1 - mask) * torch.randn_like(flat)
    torch.testing.assert_close(masked.predict(noisy, mask), masked.predict(flat, mask))


def test_bad_inputs_raise():
    x = _images(4)
    with pytest.raises(ValueError, match="^y:"):
        hn.models.make("conv_ae", epochs=1, progress=False).fit(hn.Split(x, x.reshape(4, -1)))
    with pytest.raises(ValueError, match="^x:"):
        hn.models.make("conv_ae", epochs=1, progress=False).fit(hn.Split(x.reshape(4, -1)[:, :50], x))
    with pytest.raises(ValueError, match="^y:"):
        hn.models.make("ae", epochs=1, progress=False).fit(hn.Split(x, torch.tensor([0, 1, 0, 1])))
    for name in ("ae", "conv_ae"):
        with pytest.raises(ValueError, match="latent"):
            hn.models.make(name, latent=0)
        with pytest.raises(ValueError, match="output"):
            hn.models.make(name, output="relu")
    with pytest.raises(ValueError, match="hidden"):
        hn.models.make("ae", hidden=(0,))
