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


PAPER = dict(d_model=128, n_heads=4, d_ff=512, positions="none", norm_first=False, final_norm=False,
             activation="relu", dropout=0.1, readout="pool", epochs=1, progress=False)


@pytest.mark.parametrize("length, features, classes, layers, expected", [
    (64, 32, 20, 2, 403_348),  # rsgn_hierarchical (docs/rsgn.md)
    (128, 32, 10, 3, 600_330),  # rsgn_longrange
])
def test_rsgn_paper_transformer_parameter_counts(length, features, classes, layers, expected):
    from hebbnets._model import DataSpec

    m = hn.models.make("transformer", n_layers=layers, **PAPER)
    m.spec = DataSpec(x_shape=(length, features), y_shape=(), n_classes=classes)
    m._build(m.spec)
    assert m.num_parameters == expected


def _bodies(n=16, bodies=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, bodies, 3, generator=g)
    mask = torch.ones_like(x)
    mask[: n // 2, 3:] = 0  # half the samples have 3 real bodies, 2 padded
    return hn.Split(x * mask, x.sum(-1, keepdim=True).expand(n, bodies, 2).contiguous(), x_mask=mask,
                    y_mask=mask[..., :2].contiguous())


SET = dict(FAST, positions="none", missing="padding")


def test_padding_mode_is_permutation_equivariant_and_ignores_padded_values():
    s = _bodies()
    m = hn.models.make("transformer", seed=0, **SET).fit(s)
    out = m.predict(s.x, s.x_mask)  # (N, M, 2)
    perm = torch.tensor([4, 2, 0, 3, 1])
    out_p = m.predict(s.x[:, perm], s.x_mask[:, perm])
    assert torch.allclose(out_p, out[:, perm], atol=1e-5)
    # values in padded bodies never reach a real body
    x2 = s.x.clone()
    x2[s.x_mask == 0] = 50.0
    real = s.x_mask[..., 0] == 1  # (N, M)
    assert torch.allclose(m.predict(x2, s.x_mask)[real], out[real], atol=1e-5)
    # ...whereas a real body's values do matter to the others
    x3 = s.x.clone()
    x3[:, 0] += 1.0
    assert not torch.allclose(m.predict(x3, s.x_mask)[:, 1], out[:, 1])


def test_positions_break_permutation_equivariance():
    s = _bodies()
    m = hn.models.make("transformer", seed=0, **dict(SET, positions="learned")).fit(s)
    perm = torch.tensor([1, 0, 2, 3, 4])
    m.pos.data.normal_()  # make the learned positions matter
    assert not torch.allclose(m.predict(s.x[:, perm], s.x_mask[:, perm]), m.predict(s.x, s.x_mask)[:, perm], atol=1e-4)


def test_padding_needs_a_mask_and_new_options_are_validated():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 4, 3, generator=g)
    with pytest.raises(ValueError, match="missing"):
        hn.models.make("transformer", missing="padding", **FAST).fit(hn.Split(x, x))
    for bad in (dict(missing="drop"), dict(activation="swish"), dict(norm_first=1), dict(final_norm="no"),
                dict(positions="rotary")):
        with pytest.raises(ValueError, match=next(iter(bad))):
            hn.models.make("transformer", **bad)
