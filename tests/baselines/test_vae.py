import pytest
import torch
from torch.distributions import Normal, kl_divergence

import hebbnets as hn
from hebbnets.baselines import train_backprop

FAST = dict(epochs=2, batch_size=8, progress=False, hidden=16, latent=3, channels=4)


def _split():
    g = torch.Generator().manual_seed(0)
    img = torch.rand(16, 8, 8, generator=g)
    return hn.Split(img, img)


def test_kl_matches_torch_distributions():
    s = _split()
    m = hn.models.make("vae", seed=0, **FAST).fit(s)
    mu, log_var = m._posterior(s.x, None)
    _, kl = m.elbo_terms(s.x, None, s.y)
    ref = kl_divergence(Normal(mu, (0.5 * log_var).exp()), Normal(0.0, 1.0)).sum(1)
    assert torch.allclose(kl, ref, atol=1e-5)


def test_trainer_uses_the_loss_hook_and_predict_is_deterministic():
    s = _split()
    m = hn.models.make("vae", seed=0, **FAST)
    calls = []
    orig = type(m)._loss

    def counting(self, batch):
        calls.append(len(batch))
        return orig(self, batch)

    m._loss = counting.__get__(m)
    m.fit(s)
    assert sum(calls) == 2 * (len(s) - round(0.1 * len(s)))  # every training sample, both epochs
    assert torch.equal(m.predict(s.x), m.predict(s.x))  # decodes the posterior mean
    assert m.predict(s.x).shape == (16, 8, 8)
    hist = train_backprop(m, s)
    assert len(hist["train"]) >= 1


def test_vector_targets_and_bad_config():
    x = torch.randn(12, 5)
    m = hn.models.make("vae", seed=0, **FAST).fit(hn.Split(x, x))
    assert m.predict(x).shape == (12, 5)
    with pytest.raises(ValueError, match="beta"):
        hn.models.make("vae", beta=-1.0)
