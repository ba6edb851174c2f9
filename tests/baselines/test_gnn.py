"""The interaction-network baseline: reference agreement, equivariance, masking, errors."""
import pytest
import torch

import hebbnets as hn


def _data(n=6, m=4, w=3, f=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, m, w, f, generator=g)
    mask = torch.ones(n, m, w, f)
    mask[0, 3:] = 0  # padded bodies
    mask[1, 2:] = 0
    x = x * mask
    y = torch.randn(n, m, 2, generator=g) * mask[:, :, 0, :2]
    return hn.Split(x, y, x_mask=mask, y_mask=mask[:, :, 0, :2].contiguous())


def test_forward_matches_pairwise_reference():
    split = _data()
    model = hn.models.make("gnn", seed=1, hidden=8, rounds=2, epochs=1, progress=False).fit(split)
    fast = model.predict(split.x, split.x_mask)
    slow = model.forward_reference(split.x, split.x_mask)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)


def test_permutation_equivariant_and_padding_ignored():
    split = _data()
    model = hn.models.make("gnn", seed=0, hidden=8, epochs=1, progress=False).fit(split)
    perm = torch.tensor([2, 0, 3, 1])
    out = model.predict(split.x, split.x_mask)
    out_p = model.predict(split.x[:, perm], split.x_mask[:, perm])
    torch.testing.assert_close(out_p, out[:, perm], rtol=1e-5, atol=1e-6)
    # garbage in padded slots changes nothing, and padded bodies predict exactly 0
    noisy = split.x + 100 * (1 - split.x_mask) * torch.randn_like(split.x)
    torch.testing.assert_close(model.predict(noisy, split.x_mask), out)
    assert torch.equal(out[0, 3], torch.zeros(2)) and torch.equal(out[1, 2:], torch.zeros(2, 2))
    # a real body's prediction depends on the other real bodies (messages flow)
    moved = split.x.clone()
    moved[2, 1] += 1.0
    assert not torch.allclose(model.predict(moved, split.x_mask)[2, 0], out[2, 0])


def test_learns_a_pairwise_sum_better_than_mean():
    # y_i = sum_j (x_j - x_i): needs messages between bodies
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 3, 2, generator=g)
    y = x.sum(1, keepdim=True) - 3 * x
    split = hn.Split(x, y)
    model = hn.models.make("gnn", seed=0, hidden=32, epochs=60, lr=3e-3, progress=False).fit(split)
    base = float(((y - y.mean(0)) ** 2).mean())
    assert model.score(split) < 0.1 * base


def test_save_load_roundtrip(tmp_path):
    split = _data()
    model = hn.models.make("gnn", seed=0, hidden=8, epochs=1, progress=False).fit(split)
    model.save(tmp_path / "gnn")
    again = hn.models.load(tmp_path / "gnn")
    assert torch.equal(again.predict(split.x, split.x_mask), model.predict(split.x, split.x_mask))


def test_bad_shapes_and_config_raise():
    with pytest.raises(ValueError, match="hidden"):
        hn.models.make("gnn", hidden=0)
    with pytest.raises(ValueError, match="rounds"):
        hn.models.make("gnn", rounds=0)
    with pytest.raises(ValueError, match="^x:"):
        hn.models.make("gnn", epochs=1, progress=False).fit(hn.Split(torch.randn(4, 3, 2), torch.randn(4, 2, 2)))
    with pytest.raises(ValueError, match="^y:"):
        hn.models.make("gnn", epochs=1, progress=False).fit(hn.Split(torch.randn(4, 3, 2), torch.tensor([0, 1, 0, 1])))
    split = _data()
    unmasked = hn.models.make("gnn", epochs=1, progress=False).fit(hn.Split(split.x, split.y))
    with pytest.raises(ValueError, match="x_mask"):
        unmasked.predict(split.x, split.x_mask)
