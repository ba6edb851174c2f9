import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.baselines.sparse_transformer import SparseTransformer, SparseTransformerConfig, local_strided_mask


def _built(t=64, d_in=32, classes=20, **cfg):
    torch.manual_seed(0)
    m = SparseTransformer(SparseTransformerConfig(progress=False, **cfg))
    m.spec = DataSpec((t, d_in), (), classes)
    m._build(m.spec)
    return m


def test_parameter_count_matches_the_paper():
    assert _built().num_parameters == 403_348


def test_mask_is_local_band_plus_strided_columns():
    allowed = local_strided_mask(10, 2, 4)
    i, j = torch.meshgrid(torch.arange(10), torch.arange(10), indexing="ij")
    assert torch.equal(allowed, ((i - j).abs() <= 2) | (j % 4 == 0))
    assert bool(allowed.diagonal().all())


def test_one_layer_ignores_far_tokens_outside_the_mask():
    m = _built(t=32, d_in=4, classes=3, n_layers=1, d_model=16, n_heads=2, d_ff=32).eval()
    layer = m.layers[0]
    x = torch.randn(2, 32, 4)
    far = x.clone()
    far[:, 9] += 5.0  # token 9: not a strided column (9 % 4 != 0), so only |i - 9| <= 2 see it
    with torch.no_grad():
        h, hf = layer(m.embed(x), m.blocked), layer(m.embed(far), m.blocked)  # (2, 32, 16)
    changed = (h - hf).abs().amax(dim=(0, 2)) > 1e-6  # (32,) which outputs moved
    assert torch.equal(changed.nonzero().flatten(), torch.tensor([7, 8, 9, 10, 11]))
    strided = x.clone()
    strided[:, 8] += 5.0  # a strided column (8 % 4 == 0) is seen by every token
    with torch.no_grad():
        hs = layer(m.embed(strided), m.blocked)
    assert bool(((h - hs).abs().amax(dim=(0, 2)) > 1e-6).all())


def test_learns_a_small_task_and_round_trips(tmp_path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, 3, generator=g)
    y = (x[:, :, 0].mean(1) > 0).long()
    m = hn.models.make("sparse_transformer", d_model=16, n_heads=2, d_ff=32, n_layers=1, epochs=15, lr=1e-2,
                       progress=False).fit(hn.Split(x, y))
    assert m.score(hn.Split(x, y)) > 0.9
    m.save(tmp_path / "s")
    torch.testing.assert_close(hn.models.load(tmp_path / "s").predict(x), m.predict(x))


@pytest.mark.parametrize("field,value", [("window", -1), ("stride", 0), ("n_heads", 3), ("readout", "x")])
def test_bad_config_names_the_argument(field, value):
    with pytest.raises(ValueError, match=field):
        SparseTransformerConfig(**{field: value})
