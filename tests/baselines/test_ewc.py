"""EWC: the penalty and its gradient, the diagonal Fisher of known models, the callback across stages."""
import pytest
import torch
from torch import nn

import hebbnets as hn
from hebbnets.training import EWC, diagonal_fisher, ewc_penalty
from hebbnets.training import BackpropModel, TrainConfig


class _Linear(BackpropModel):
    """``y = W x`` (no bias): its per-sample gradients have a closed form."""

    Config = TrainConfig

    def _build(self, spec):
        d_out = spec.n_classes if spec.is_classification else spec.y_dim
        self.net = nn.Linear(spec.x_dim, d_out, bias=False)

    def _forward(self, x, x_mask):
        out = self.net(x)
        return out if self.spec.is_classification else out.reshape(x.shape[0], *self.spec.y_shape)


def _linear(split, seed=0):
    return _Linear(TrainConfig(epochs=1, progress=False), seed=seed).fit(split)


def test_penalty_value_and_gradient_by_hand():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0], requires_grad=True)
    anchors = {"w": torch.tensor([0.0, 1.0]), "b": torch.tensor([3.0])}
    fisher = {"w": torch.tensor([2.0, 0.5]), "b": torch.tensor([7.0])}
    pen = ewc_penalty({"w": w, "b": b}, anchors, fisher, lam=4.0)
    assert float(pen.detach()) == pytest.approx(0.5 * 4.0 * (2.0 * 1.0 + 0.5 * 1.0))  # b sits at its anchor
    gw, gb = torch.autograd.grad(pen, [w, b])
    torch.testing.assert_close(gw, torch.tensor([8.0, 2.0]))  # lam F (theta - theta*)
    torch.testing.assert_close(gb, torch.tensor([0.0]))
    with pytest.raises(ValueError, match="^params:"):
        ewc_penalty({"w": w}, anchors, fisher, lam=1.0)
    with pytest.raises(ValueError, match="^lam:"):
        ewc_penalty({"w": w, "b": b}, anchors, fisher, lam=-1.0)


def test_empirical_fisher_of_linear_regression_is_the_mean_squared_per_sample_gradient():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(50, 3, generator=g), torch.randn(50, 1, generator=g)
    model = _linear(hn.Split(x, y))
    w = model.net.weight.detach()  # (1, 3)
    r = x @ w.T - y  # (50, 1) residuals; loss_n = r_n^2, gradient 2 r_n x_n
    expected = (4 * r**2 * x**2).mean(0, keepdim=True)
    fisher = diagonal_fisher(model, hn.Split(x, y), kind="empirical")
    torch.testing.assert_close(fisher["net.weight"], expected, rtol=1e-4, atol=1e-6)
    # not the square of the batch gradient
    assert not torch.allclose(fisher["net.weight"], (2 * r * x).mean(0, keepdim=True) ** 2, rtol=0.1)


def test_sampled_fisher_matches_its_expectation_for_regression_and_classification():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4000, 2, generator=g)
    reg = _linear(hn.Split(x, torch.randn(4000, 1, generator=g)))
    # label ~ N(f, 1): gradient -2 eps x, expectation 4 E[x^2]
    torch.testing.assert_close(diagonal_fisher(reg, hn.Split(x, x[:, :1]))["net.weight"],
                               4 * (x**2).mean(0, keepdim=True), rtol=0.1, atol=0)
    cls = _linear(hn.Split(x, (x[:, 0] > 0).long()))
    p = torch.softmax(x @ cls.net.weight.detach().T, -1)  # (N, 2)
    # label ~ p: d(-log p_y)/dW = (p - e_y) x^T, expectation p_c (1 - p_c) x_j^2
    exact = torch.einsum("nc,nj->cj", p * (1 - p), x**2) / len(x)
    torch.testing.assert_close(diagonal_fisher(cls, hn.Split(x, (x[:, 0] > 0).long()))["net.weight"], exact,
                               rtol=0.1, atol=0)


def test_ewc_callback_holds_weights_that_mattered_for_the_first_stage():
    g = torch.Generator().manual_seed(2)
    xa, xb = torch.randn(200, 4, generator=g), torch.randn(200, 4, generator=g)
    a, b = hn.Split(xa, xa.sin()), hn.Split(xb, -xb)
    cfg = dict(hidden=(16,), epochs=20, lr=1e-2, progress=False, patience=50)
    plain = hn.models.make("mlp", seed=0, **cfg).fit(a)
    ewc = hn.models.make("mlp", seed=0, ewc_lambda=1e4, **cfg).fit(a)
    # the first stage has no penalty: the same weights as without EWC
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), ewc.parameters()))
    (anchors, fisher), = ewc._ewc.stages
    assert all(torch.equal(anchors[n], p) for n, p in ewc.named_parameters())

    def drift(model):
        params = dict(model.named_parameters())
        return float(sum((fisher[n] * (params[n].detach() - anchors[n]) ** 2).sum() for n in fisher))

    plain.partial_fit(b)
    ewc.partial_fit(b)
    assert drift(ewc) < 0.2 * drift(plain)
    assert ewc.score(a) < plain.score(a)  # less forgetting of stage a
    assert len(ewc._ewc.stages) == 2  # a Fisher per finished stage
    ewc.fit(a)  # a fresh fit forgets the stages
    assert len(ewc._ewc.stages) == 1


def test_bad_ewc_settings_name_the_argument():
    with pytest.raises(ValueError, match="^ewc_lambda:"):
        hn.models.make("mlp", ewc_lambda=-1.0)
    with pytest.raises(ValueError, match="^ewc_samples:"):
        hn.models.make("mlp", ewc_samples=0)
    with pytest.raises(ValueError, match="^lam:"):
        EWC(0.0)
    x = torch.randn(8, 2)
    with pytest.raises(ValueError, match="^kind:"):
        diagonal_fisher(_linear(hn.Split(x, x)), hn.Split(x, x), kind="exact")
