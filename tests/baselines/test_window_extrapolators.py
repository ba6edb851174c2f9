"""Trivial dynamics baselines: exact on the dynamics they can represent, equal to a per-system
scikit-learn reference, padded bodies ignored, bad layouts refused."""
import numpy as np
import pytest
import torch

import hebbnets as hn
from hebbnets.baselines.window_extrapolators import system_ridge_changes


def _windows(n=60, m=4, w=4, f=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, m, w, f, generator=gen, dtype=torch.float64)
    body = (torch.rand(n, m, generator=gen) > 0.25).double()
    body[:, 0] = 1.0
    x_mask = body[:, :, None, None].expand(n, m, w, f).contiguous()
    return x * x_mask, x_mask, body


def test_window_linear_recovers_a_linear_extrapolation_rule_and_ignores_padding():
    x, x_mask, body = _windows()
    ch = (x[:, :, 1:, :4] - x[:, :, :-1, :4]).flatten(2)  # (n, m, 12)
    A = torch.randn(12, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    y = (ch @ A + 0.3) * body[..., None]
    split = hn.Split(x.float(), y.float(), x_mask=x_mask.float(), y_mask=body[..., None].expand_as(y).float())
    m = hn.models.make("window_linear", ridge=0.0).fit(split)
    pred = m.predict(split.x, split.x_mask)
    torch.testing.assert_close(pred * split.y_mask, split.y, atol=1e-4, rtol=1e-4)
    assert bool((pred[body == 0] == 0).all())
    # garbage in padded bodies changes nothing
    x2 = split.x + 50.0 * (1 - split.x_mask)
    m2 = hn.models.make("window_linear", ridge=0.0).fit(hn.Split(x2, split.y, x_mask=split.x_mask, y_mask=split.y_mask))
    torch.testing.assert_close(m2.weight, m.weight, atol=1e-5, rtol=1e-5)


def test_system_ridge_matches_scikit_learn_per_system():
    from sklearn.linear_model import Ridge

    x, x_mask, body = _windows(n=8, w=3)
    alpha = 0.3
    fast = system_ridge_changes(x, body, 4, alpha)  # (n, m, 4)
    for s in range(len(x)):
        real = body[s] > 0
        feats = x[s, real, :-1, :4].reshape(-1, 4).numpy()
        target = (x[s, real, 1:, :4] - x[s, real, :-1, :4]).reshape(-1, 4).numpy()
        ref = Ridge(alpha=alpha).fit(feats, target).predict(x[s, real, -1, :4].numpy())
        np.testing.assert_allclose(fast[s, real].numpy(), ref, rtol=1e-8, atol=1e-10)
        assert bool((fast[s, ~real] == 0).all())


def test_system_ridge_is_exact_for_per_system_linear_dynamics_up_to_units():
    """Each system evolves by its own affine map of the state; the model recovers the next change
    from the window alone and puts it in the target's units (here 1 / 0.5 per feature)."""
    gen = torch.Generator().manual_seed(1)
    n, m, w = 40, 5, 4
    s0 = torch.randn(n, m, 4, generator=gen, dtype=torch.float64)
    A = 0.1 * torch.randn(n, 4, 4, generator=gen, dtype=torch.float64)
    b = 0.1 * torch.randn(n, 1, 4, generator=gen, dtype=torch.float64)
    states = [s0]
    for _ in range(w):
        states.append(states[-1] + states[-1] @ A + b)
    traj = torch.stack(states, 2)  # (n, m, w + 1, 4)
    x = torch.cat([traj[:, :, :w], torch.ones(n, m, w, 2, dtype=torch.float64)], -1)
    y = (traj[:, :, w] - traj[:, :, w - 1]) / 0.5
    split = hn.Split(x.float(), y.float())
    model = hn.models.make("system_ridge", alpha=1e-9).fit(split)
    torch.testing.assert_close(model.units, torch.full((4,), 2.0), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(model.predict(split.x), split.y, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name", ["window_linear", "system_ridge"])
def test_refuses_layouts_without_bodies_and_windows(name):
    with pytest.raises(ValueError, match="^x"):
        hn.models.make(name).fit(hn.Split(torch.randn(10, 6), torch.randn(10, 3)))
    with pytest.raises(ValueError, match="^x"):
        hn.models.make(name).fit(hn.Split(torch.randn(10, 3, 1, 6), torch.randn(10, 3, 4)))  # one step


def test_bad_config_raises_naming_the_argument():
    x, x_mask, body = _windows(n=5)
    split = hn.Split(x.float(), x[:, :, -1, :4].float())
    with pytest.raises(ValueError, match="^alpha"):
        hn.models.make("system_ridge", alpha=0.0).fit(split)
    with pytest.raises(ValueError, match="^ridge"):
        hn.models.make("window_linear", ridge=-1.0).fit(split)
