import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.baselines.lstm import LSTMConfig, LSTMModel




def _count(d_in, t, classes, **cfg):
    m = LSTMModel(LSTMConfig(**cfg))
    m.spec = DataSpec((t, d_in), (), classes)
    m._build(m.spec)
    return sum(p.numel() for p in m.parameters())


def test_parameter_counts_match_the_paper():
    assert _count(32, 64, 20) == 566_292
    assert _count(32, 128, 10) == 563_722


def test_uses_final_forward_and_backward_states():
    torch.manual_seed(0)
    m = LSTMModel(LSTMConfig(hidden=5, layers=1, progress=False))
    m.spec = DataSpec((7, 3), (), 2)
    m._build(m.spec)
    x = torch.randn(4, 7, 3)
    out, _ = m.lstm(x)  # (B, T, 2H)
    ref = m.head(torch.cat([out[:, -1, :5], out[:, 0, 5:]], dim=1))
    torch.testing.assert_close(m._forward(x, None), ref)


def test_learns_order_dependent_task_and_round_trips(tmp_path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(128, 6, 2, generator=g)
    y = (x[:, 0, 0] > x[:, -1, 0]).long()  # first vs last token: needs order
    m = hn.models.make("lstm", hidden=16, layers=1, epochs=40, lr=1e-2, progress=False).fit(hn.Split(x, y))
    assert m.score(hn.Split(x, y)) > 0.9
    m.save(tmp_path / "l")
    assert torch.equal(hn.models.load(tmp_path / "l").predict(x), m.predict(x))
    with pytest.raises(ValueError, match="hidden"):
        LSTMConfig(hidden=0)
    with pytest.raises(ValueError, match="x"):
        hn.models.make("lstm", progress=False, epochs=1).fit(hn.Split(torch.randn(4, 2, 3, 3), torch.arange(4)))
