import numpy as np
import pytest
import torch

import hebbnets as hn
from hebbnets.baselines.centroid import ends_pool, mean_pool




def _data(n=90, t=5, d=4, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % c
    x = torch.randn(n, t, d, generator=g) + torch.nn.functional.one_hot(y, d).float()[:, None, :]
    return hn.Split(x, y)


@pytest.mark.parametrize("name", ["centroid", "lda"])
def test_predictions_agree_with_sklearn_and_survive_checkpoint(name, tmp_path):
    tr, te = _data(), _data(seed=1)
    m = hn.models.make(name).fit(tr)
    pred = m.predict(te.x)
    sk = m._sk.predict(mean_pool(te.x).double().numpy())
    assert np.array_equal(pred.numpy(), sk)
    assert m.score(te) > 0.8
    m.save(tmp_path / name)
    assert torch.equal(hn.models.load(tmp_path / name).predict(te.x), pred)


def test_lda_binary_and_unseen_classes():
    tr = _data(c=2)
    m = hn.models.make("lda").fit(tr)
    assert np.array_equal(m.predict(tr.x).numpy(), m._sk.predict(mean_pool(tr.x).double().numpy()))
    # label 3 never appears among 0, 1, 3 -> class 2 exists in the spec but is never predicted
    x = tr.x
    y = torch.where(tr.y == 1, 3, 0)
    for name in ("lda", "centroid"):
        m = hn.models.make(name).fit(hn.Split(x, y))
        assert set(m.predict(x).tolist()) <= {0, 3}


def test_mean_pool_and_errors():
    x = torch.arange(12.0).reshape(1, 3, 4)
    torch.testing.assert_close(mean_pool(x), x.mean(1))
    mask = torch.tensor([[[1.0] * 4, [0.0] * 4, [1.0] * 4]])
    torch.testing.assert_close(mean_pool(x, mask), (x[:, 0] + x[:, 2]) / 2)
    with pytest.raises(ValueError, match="split"):
        hn.models.make("centroid").fit(hn.Split(torch.randn(5, 3), torch.randn(5)))
    with pytest.raises(ValueError, match="shrinkage"):
        hn.models.make("lda", shrinkage=0.5)


def test_lda_on_the_two_ends_reads_the_first_and_last_tokens(tmp_path):
    # the class sits only in the first 3 and last 3 of 20 tokens, in opposite directions, so
    # the two ends cancel in the mean: LDA on the mean is at chance, LDA on the ends is not
    g = torch.Generator().manual_seed(0)
    n, t, d, c = 300, 20, 4, 3
    y = torch.arange(n) % c
    code = torch.nn.functional.one_hot(y, d).float()
    x = 0.3 * torch.randn(n, t, d, generator=g)
    x[:, :3] += code[:, None]
    x[:, -3:] -= code[:, None]
    tr, te = hn.Split(x[:200], y[:200]), hn.Split(x[200:], y[200:])
    ends = hn.models.make("lda", pool="ends", n_ends=3).fit(tr)
    assert ends.score(te) > 0.95 and hn.models.make("lda").fit(tr).score(te) < 0.6
    torch.testing.assert_close(ends_pool(x, 3), torch.cat([x[:, :3].mean(1), x[:, -3:].mean(1)], 1))
    f = ends_pool(te.x, 3).double().numpy()
    assert np.array_equal(ends.predict(te.x).numpy(), ends._sk.predict(f))  # the buffers are sklearn's model
    ends.save(tmp_path / "e")
    assert torch.equal(hn.models.load(tmp_path / "e").predict(te.x), ends.predict(te.x))
    for bad in (dict(pool="last"), dict(n_ends=0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            hn.models.make("lda", **bad)
    with pytest.raises(ValueError, match="x"):
        hn.models.make("lda", pool="ends", n_ends=30).fit(tr)
