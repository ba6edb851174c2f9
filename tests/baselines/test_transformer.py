import pytest
import torch

import hebbnets as hn

FAST = dict(epochs=2, batch_size=16, progress=False, d_model=8, n_heads=2, n_layers=1, d_ff=16)


def _masked_split(n=24, length=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(n, length, generator=g)
    mask = torch.ones(n, length)
    mask[:, 3:6] = 0
    return hn.Split(y * mask, y, x_mask=mask, metric="mse_missing")


def test_fit_predict_shapes_and_determinism():
    s = _masked_split()
    a = hn.models.make("transformer", seed=1, **FAST).fit(s)
    b = hn.models.make("transformer", seed=1, **FAST).fit(s)
    pa = a.predict(s.x, s.x_mask)
    assert pa.shape == s.y.shape and torch.equal(pa, b.predict(s.x, s.x_mask))


def test_masked_values_are_invisible():
    """The mask token replaces missing tokens: values under the mask cannot leak."""
    s = _masked_split()
    m = hn.models.make("transformer", seed=0, **FAST).fit(s)
    x2 = s.x.clone()
    x2[s.x_mask == 0] = 123.0
    assert torch.allclose(m.predict(s.x, s.x_mask), m.predict(x2, s.x_mask), atol=1e-6)
    # ...while observed values do matter
    x3 = s.x.clone()
    x3[:, 0] += 1.0
    assert not torch.allclose(m.predict(s.x, s.x_mask), m.predict(x3, s.x_mask))


def test_classification_pool_readout_and_multichannel_tokens():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 6, 3, generator=g)
    y = (x[:, :, 0].sum(1) > 0).long()
    m = hn.models.make("transformer", seed=0, **FAST).fit(hn.Split(x, y))
    assert m.head.readout == "pool" and m.predict(x).shape == (30,) and m.predict(x).dtype == torch.long
    # a target of another length needs the pooled readout
    with pytest.raises(ValueError, match="readout"):
        hn.models.make("transformer", readout="token", **FAST).fit(hn.Split(x, torch.randn(30, 4)))


def test_bad_config():
    with pytest.raises(ValueError, match="n_heads"):
        hn.models.make("transformer", d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="readout"):
        hn.models.make("transformer", readout="cls")


def test_sinusoidal_table_matches_formula():
    import math

    from hebbnets.baselines.transformer import sinusoidal_positions

    table = sinusoidal_positions(7, 6)
    for p in range(7):
        for i in range(3):
            angle = p / 10000 ** (2 * i / 6)
            assert abs(float(table[p, 2 * i]) - math.sin(angle)) < 1e-5
            assert abs(float(table[p, 2 * i + 1]) - math.cos(angle)) < 1e-5
    assert sinusoidal_positions(5, 5).shape == (5, 5)
    m = hn.models.make("transformer", positions="learned", **FAST).fit(_masked_split())
    assert float(m.pos_fixed.abs().max()) == 0.0
    with pytest.raises(ValueError, match="positions"):
        hn.models.make("transformer", positions="rotary")
