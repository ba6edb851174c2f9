import pytest
import torch

import hebbnets as hn

FAST = dict(epochs=2, batch_size=16, progress=False, hidden=8)


def _codes(c, grid):
    eye = torch.eye(grid)
    return torch.cat([eye[c[:, 0]], eye[c[:, 1]]], 1)


def test_output_is_outer_product_of_profiles():
    t = hn.tasks.make("spatial2d", seed=0, grid=12, held_out=[4, 6])
    m = hn.models.make("factorized", seed=0, **FAST).fit(t.train)
    assert m.inputs == "halves"
    c = torch.tensor([[1, 2], [7, 9], [1, 9], [7, 2]])
    img = m.predict(_codes(c, 12))  # (4, 12, 12)
    # rank one per image, and swapping y codes between two centres swaps the y-profiles
    assert float(torch.linalg.svdvals(img[0])[1]) < 1e-5 * float(torch.linalg.svdvals(img[0])[0]) + 1e-9
    assert torch.allclose(img[0] * img[1], img[2] * img[3], atol=1e-6)


def test_marginals_for_image_input():
    t = hn.tasks.make("spatial2d", seed=0, grid=12, held_out=[4, 6], mode="reconstruct")
    m = hn.models.make("factorized", seed=0, **FAST).fit(t.train)
    assert m.inputs == "marginals" and m.predict(t.tests["ood"].x).shape == (9, 12, 12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="inputs"):
        hn.models.make("factorized", inputs="marginals", **FAST).fit(hn.Split(torch.randn(6, 8), torch.randn(6, 4, 4)))
    with pytest.raises(ValueError, match="inputs"):
        hn.models.make("factorized", **FAST).fit(hn.Split(torch.randn(6, 7), torch.randn(6, 4, 4)))
