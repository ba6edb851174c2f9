"""The model-free reference predictors: exact values on hand-made inputs."""
import pytest
import torch

import hebbnets as hn
from hebbnets.experiments.references import interpolate_gap


def test_gap_interp_is_linear_across_the_gap_and_flat_beyond_the_ends():
    x = torch.tensor([[0.0, 1.0, 0.0, 0.0, 4.0, 5.0], [7.0, 0.0, 0.0, 3.0, 0.0, 0.0]])
    m = torch.tensor([[1.0, 1.0, 0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]])
    out = interpolate_gap(x * m, m)
    torch.testing.assert_close(out[0], torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
    torch.testing.assert_close(out[1], torch.tensor([0.0, 0.0, 0.0, 3.0, 3.0, 3.0]))
    split = hn.Split(x * m, x, x_mask=m)
    model = hn.models.make("gap_interp").fit(split)
    assert model.num_parameters == 0 and torch.equal(model.predict(split.x, split.x_mask), out)
    with pytest.raises(ValueError, match="^x:"):
        hn.models.make("gap_interp").fit(hn.Split(x, x))  # no mask: nothing to fill


def test_zeros_predicts_zeros_and_refuses_classification():
    split = hn.Split(torch.randn(5, 3), torch.randn(5, 2, 2))
    model = hn.models.make("zeros").fit(split)
    assert torch.equal(model.predict(split.x), torch.zeros(5, 2, 2)) and model.num_parameters == 0
    with pytest.raises(ValueError, match="^split:"):
        hn.models.make("zeros").fit(hn.Split(torch.randn(4, 3), torch.tensor([0, 1, 0, 1])))
