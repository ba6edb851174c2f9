import pytest
import torch

import hebbnets as hn
from hebbnets.baselines.cnn import ConvDecoder

FAST = dict(epochs=2, batch_size=16, progress=False, channels=4, latent=8)


def test_decoder_crops_odd_sizes():
    dec = ConvDecoder(5, 10, 7, 4)
    assert dec(torch.zeros(3, 5)).shape == (3, 10, 7)


def test_decode_and_autoencode_modes():
    g = torch.Generator().manual_seed(0)
    img = torch.rand(20, 12, 12, generator=g)
    codes = torch.randn(20, 6, generator=g)
    dec = hn.models.make("cnn", seed=0, **FAST).fit(hn.Split(codes, img))
    assert not dec.image_in and dec.predict(codes).shape == (20, 12, 12)
    ae = hn.models.make("cnn", seed=0, **FAST).fit(hn.Split(img, img))
    assert ae.image_in and ae.predict(img).shape == (20, 12, 12)
    # training lowers the loss against the untrained network with the same seed
    untrained = hn.models.make("cnn", seed=0, **{**FAST, "epochs": 1, "lr": 1e-12}).fit(hn.Split(img, img))
    assert ae.score(hn.Split(img, img)) < untrained.score(hn.Split(img, img))


def test_rejects_non_image_targets():
    with pytest.raises(ValueError, match="y"):
        hn.models.make("cnn", **FAST).fit(hn.Split(torch.randn(8, 5), torch.randn(8, 5)))
