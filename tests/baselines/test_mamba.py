import pytest
import torch

import hebbnets as hn

FAST = dict(epochs=1, batch_size=16, progress=False, d_model=8, n_layers=1, d_state=4)


def _split(n=16, length=8):
    g = torch.Generator().manual_seed(0)
    y = torch.randn(n, length, generator=g)
    return hn.Split(y.clone(), y)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_causality_matches_direction(bidirectional):
    s = _split()
    m = hn.models.make("mamba", seed=0, bidirectional=bidirectional, **FAST).fit(s)
    x2 = s.x.clone()
    x2[:, -1] += 5.0  # change only the last position
    d = (m.predict(s.x) - m.predict(x2)).abs()  # (N, L)
    assert float(d[:, -1].max()) > 0
    if bidirectional:
        assert float(d[:, 0].max()) > 1e-6  # the reversed stack carries the future backwards
    else:
        assert float(d[:, :-1].max()) == 0.0  # causal: the past cannot see the future


def test_masked_values_are_invisible_and_shapes():
    s = _split()
    mask = torch.ones_like(s.x)
    mask[:, 2:4] = 0
    s = hn.Split(s.y * mask, s.y, x_mask=mask)
    m = hn.models.make("mamba", seed=0, **FAST).fit(s)
    x2 = s.x.clone()
    x2[mask == 0] = -7.0
    p = m.predict(s.x, mask)
    assert p.shape == s.y.shape
    assert torch.allclose(p, m.predict(x2, mask), atol=1e-6)


def test_bad_config():
    with pytest.raises(ValueError, match="d_state"):
        hn.models.make("mamba", d_state=0)
