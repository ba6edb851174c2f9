import math

import pytest
import torch

import hebbnets as hn
from hebbnets.tasks.spatial2d import error_map, render


def _centres(task, split):
    return {tuple(c) for c in task.info["centres"][split].tolist()}


def test_deterministic_under_seed():
    a = hn.tasks.make("spatial2d", seed=5)
    b = hn.tasks.make("spatial2d", seed=5)
    c = hn.tasks.make("spatial2d", seed=6)
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.info["centres"]["id"], b.info["centres"]["id"])
    assert _centres(a, "train") != _centres(c, "train")


def test_ood_centres_inside_square_and_never_trained():
    t = hn.tasks.make("spatial2d", seed=0)
    lo, hi = t.params["held_out"]
    train, ident, ood = _centres(t, "train"), _centres(t, "id"), _centres(t, "ood")
    assert len(ood) == (hi - lo + 1) ** 2 == 81
    assert all(lo <= x <= hi and lo <= y <= hi for x, y in ood)
    assert not any(lo <= x <= hi and lo <= y <= hi for x, y in train | ident)
    assert not (train & ood) and not (train & ident)
    assert len(train | ident | ood) == 28 * 28
    # compositional: every x and every y of the square occurs in training
    assert {x for x, _ in ood} <= {x for x, _ in train} and {y for _, y in ood} <= {y for _, y in train}


def test_render_matches_formula_and_decode_codes():
    t = hn.tasks.make("spatial2d", seed=0, sigma=1.5)
    c = t.info["centres"]["ood"][:3]
    img = render(c, 28, 1.5)
    for k in range(3):
        cx, cy = c[k].tolist()
        for a, b in [(cx, cy), (0, 0), (cx + 2, cy - 1)]:
            ref = math.exp(-((a - cx) ** 2 + (b - cy) ** 2) / (2 * 1.5**2))
            assert abs(float(img[k, a, b]) - ref) < 1e-6
    assert torch.allclose(t.tests["ood"].y[:3], img)
    x = t.train.x
    assert x.shape[1] == 56 and torch.all(x.sum(1) == 2)
    assert torch.equal(torch.stack([x[:, :28].argmax(1), x[:, 28:].argmax(1)], 1), t.info["centres"]["train"])


def test_reconstruct_mode_and_parameters():
    t = hn.tasks.make("spatial2d", seed=0, mode="reconstruct", held_out=[5, 8], grid=14, noise=0.1)
    assert t.train.x.shape == (len(t.train), 14, 14) and not torch.equal(t.train.x, t.train.y)
    assert len(t.tests["ood"]) == 16
    for bad in (dict(held_out=[0, 5]), dict(held_out=[10, 27]), dict(held_out=[3]), dict(mode="x"),
                dict(sigma=0), dict(id_fraction=1.0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            hn.tasks.make("spatial2d", **bad)


class _Zero:
    def predict(self, x, x_mask=None):
        return torch.zeros(x.shape[0], 28, 28)


def test_error_map_of_zero_predictor_is_image_energy():
    t = hn.tasks.make("spatial2d", seed=0)
    out = error_map(_Zero(), t)
    err, codes = out["error"], out["split"]
    assert err.shape == codes.shape == (28, 28)
    assert int((codes == 2).sum()) == 81 and int((codes == 1).sum()) == len(t.tests["id"])
    # reference: per-centre mean of image^2 (border bumps are truncated, so values differ)
    for cx, cy in [(0, 0), (14, 14), (27, 3)]:
        ref = float((render(torch.tensor([[cx, cy]]), 28, 1.0) ** 2).mean())
        assert abs(float(err[cx, cy]) - ref) < 1e-7
    assert len(out["values"]) == 784 and out["centres"][29] == (1, 1)


@pytest.mark.parametrize("mode", ["decode", "reconstruct"])
def test_recorded_vn_config_fits_and_predicts_on_a_tiny_instance(mode):
    """The chosen VN configuration (layers, atoms, nonneg, top-k as recorded) runs as is."""
    t = hn.tasks.make("spatial2d", seed=0, mode=mode, grid=8, held_out=[3, 4])
    m = hn.models.make("vn", seed=0, task=t, epochs=1, max_iter=10, max_sweeps=2, progress=False).fit(t.train)
    y_hat = m.predict(t.tests["ood"].x)
    assert y_hat.shape == t.tests["ood"].y.shape and bool(torch.isfinite(y_hat).all())
    assert len(m.layers) == len(t.model_configs["vn"]["atoms"])
