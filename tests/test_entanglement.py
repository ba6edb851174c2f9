"""Entanglement and reuse measures on hand-made cases where the answer is known."""
import math

import pytest
import torch
from torch import nn

import hebbnets as hn
from hebbnets.entanglement import atom_reuse, atom_usage, code_sparsity, sparsity, update_overlap, vn_codes
from hebbnets.training import BackpropModel, TrainConfig


def _identity_vn(n=4, lam=0.1):
    """A one-layer VN whose atoms are the unit vectors (S = U = I): the code of x is the
    soft-thresholded x, so which atoms a sample uses is known by hand."""
    x = torch.randn(6, n, dtype=torch.float64)
    vn = hn.models.make("vn", atoms=(n,), lam=lam, init="random", epochs=1, reseed_after=0,
                        dtype="float64", progress=False, max_iter=500, tol=1e-10)
    vn.fit(hn.Split(x, x))
    with torch.no_grad():
        vn.layers[0].S.copy_(torch.eye(n, dtype=torch.float64))
        vn.layers[0].U.copy_(torch.eye(n, dtype=torch.float64))
    return vn


def _on(coords, n=4, rows=5, seed=0):
    """Samples supported on ``coords`` (values of size 1-2, above the threshold), as x = y."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(rows, n, dtype=torch.float64)
    x[:, coords] = (1 + torch.rand(rows, len(coords), generator=g, dtype=torch.float64)) * torch.where(
        torch.rand(rows, len(coords), generator=g) < 0.5, -1.0, 1.0).double()
    return hn.Split(x, x.clone())


def test_vn_behaviours_on_disjoint_atoms_do_not_overlap():
    vn = _identity_vn()
    a, b = _on([0, 1]), _on([2, 3], seed=1)
    out = update_overlap(vn, a, b)["layer0"]
    assert out["jaccard"] == 0.0 and out["weighted_jaccard"] == 0.0
    assert out["atoms_a"] == 2 and out["atoms_b"] == 2
    assert out["cosine_S"] == 0.0 and out["cosine_U"] == 0.0 and out["cosine"] == 0.0  # disjoint columns
    same = update_overlap(vn, a, a)["layer0"]
    assert same["jaccard"] == 1.0 and same["cosine"] == pytest.approx(1.0)
    half = update_overlap(vn, a, _on([1, 2], seed=2))["layer0"]
    assert half["jaccard"] == pytest.approx(1 / 3)
    # the model is not changed by measuring
    torch.testing.assert_close(vn.layers[0].S, torch.eye(4, dtype=torch.float64), rtol=0, atol=0)


def test_sparsity_counts_non_zero_codes():
    vn = _identity_vn(n=5)
    split = hn.Split(torch.tensor([[2.0, 0, 0, 0, 0], [2.0, -3.0, 0.05, 0, 0], [1.0, 1.0, 1.0, 1.0, 0.0]]).double(),
                     torch.zeros(3, 5, dtype=torch.float64))
    (layer,) = sparsity(vn, split)
    assert layer["active_per_sample"].tolist() == [1, 2, 4]  # 0.05 is below lam = 0.1: an exact zero
    assert layer["mean"] == pytest.approx(7 / 3) and layer["fraction"] == pytest.approx(7 / 15)
    assert layer["histogram"].tolist() == [0, 1, 1, 0, 1, 0] and layer["max"] == 4
    assert torch.equal(vn_codes(vn, split)[0][1, 2:], torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="^codes:"):
        code_sparsity(torch.zeros(3))


def test_atom_usage_finds_reused_and_look_up_atoms():
    # factors (sin, cos); combinations: sin, cos, sin+cos, 4 samples each
    labels = torch.tensor([[1, 0]] * 4 + [[0, 1]] * 4 + [[1, 1]] * 4).bool()
    codes = torch.zeros(12, 5)
    codes[:4, [0, 1]] = 1.0  # sin uses atoms 0, 1
    codes[4:8, 2] = 1.0  # cos uses atom 2
    codes[8:, [0, 1, 2]] = 1.0  # sin+cos reuses them all: perfect reuse
    codes[0, 4] = 1.0  # one sample of sin touches atom 4: below the 0.3 usage threshold
    out = atom_usage(codes, labels, threshold=0.3)
    assert out["specific"][:, 0].tolist() == [True, True, False, False, False]
    assert out["specific"][:, 1].tolist() == [False, False, True, False, False]
    assert out["reuse"].tolist() == [1.0, 1.0]
    assert out["atoms_per_factor"].tolist() == [3, 3]  # sin samples (incl. sin+cos) use atoms 0, 1, 2
    torch.testing.assert_close(out["by_factor"][:, 0], torch.tensor([1.0, 1.0, 0.5, 0.0, 0.125], dtype=torch.float64))
    assert out["combinations"].tolist() == [[False, True], [True, False], [True, True]]
    # now sin+cos has an atom of its own (a look-up table entry): it is specific to both factors,
    # used by one of each factor's two combinations
    codes[8:] = 0.0
    codes[8:, 3] = 1.0
    out = atom_usage(codes, labels, threshold=0.3)
    assert out["specific"][3].tolist() == [True, True]
    torch.testing.assert_close(out["reuse"], torch.tensor([(0.5 + 0.5 + 0.5) / 3, (0.5 + 0.5) / 2], dtype=torch.float64))
    # a factor seen in one combination only has no defined reuse
    one = atom_usage(codes[:8], labels[:8], threshold=0.3)
    assert all(math.isnan(v) for v in one["reuse"].tolist())


def test_atom_usage_with_explicit_groups_and_bad_input():
    labels = torch.tensor([[1, 0], [1, 0], [1, 0]]).bool()
    codes = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    out = atom_usage(codes, labels, groups=torch.tensor([0, 0, 1]), threshold=0.5)
    assert out["combinations"].tolist() == [[True, False], [True, False]]
    assert out["specific"][:, 0].tolist() == [True, True] and out["reuse"][0] == 0.5
    with pytest.raises(ValueError, match="^factor_labels:"):
        atom_usage(codes, labels[:2])
    with pytest.raises(ValueError, match="^factor_labels:"):
        atom_usage(codes, torch.full((3, 2), 2))
    with pytest.raises(ValueError, match="^threshold:"):
        atom_usage(codes, labels, threshold=1.0)
    with pytest.raises(ValueError, match="^groups:"):
        atom_usage(codes, labels, groups=torch.tensor([0.0, 1.0, 1.0]))


def test_atom_reuse_on_a_vn_reads_its_codes():
    vn = _identity_vn()
    split = hn.Split(torch.cat([_on([0]).x, _on([1], seed=1).x, _on([0, 1], seed=2).x]), torch.zeros(15, 4).double())
    labels = torch.tensor([[1, 0]] * 5 + [[0, 1]] * 5 + [[1, 1]] * 5).bool()
    out = atom_reuse(vn, split, labels)
    assert out["specific"][:2].tolist() == [[True, False], [False, True]] and out["reuse"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="^layer:"):
        atom_reuse(vn, split, labels, layer=1)
    with pytest.raises(ValueError, match="^model:"):
        atom_reuse(hn.models.make("mlp"), split, labels)


class _Linear(BackpropModel):
    Config = TrainConfig

    def _build(self, spec):
        self.net = nn.Linear(spec.x_dim, spec.y_dim, bias=False)

    def _forward(self, x, x_mask):
        return self.net(x)


def test_gradient_overlap_of_a_linear_model_by_hand():
    x = torch.randn(10, 4)
    model = _Linear(TrainConfig(epochs=1, progress=False)).fit(hn.Split(x, x[:, :2]))
    with torch.no_grad():
        model.net.weight.zero_()  # residual = -y: gradient -2/(N d) sum y x^T
    e = torch.zeros(10, 4)
    a, b = e.clone(), e.clone()
    a[:, 0], b[:, 1] = 1.0, 1.0  # inputs on different coordinates: gradients on disjoint columns
    y = torch.randn(10, 2)
    assert update_overlap(model, hn.Split(a, y), hn.Split(b, y)) == {"net": {"cosine": 0.0}}
    assert update_overlap(model, hn.Split(a, y), hn.Split(a, -y))["net"]["cosine"] == pytest.approx(-1.0)
    assert update_overlap(model, hn.Split(a, y), hn.Split(a, 3 * y))["net"]["cosine"] == pytest.approx(1.0)


def test_gradient_overlap_is_per_layer_for_an_mlp():
    x = torch.randn(20, 4)
    mlp = hn.models.make("mlp", hidden=(6,), epochs=1, progress=False).fit(hn.Split(x, x))
    out = update_overlap(mlp, hn.Split(x[:10], x[:10]), hn.Split(x[10:], x[10:]))
    assert set(out) == {"net.0", "net.2"} and all(-1 <= v["cosine"] <= 1 for v in out.values())
    with pytest.raises(ValueError, match="^model:"):
        update_overlap(hn.models.make("centroid"), hn.Split(x, x), hn.Split(x, x))
    with pytest.raises(ValueError, match="^split_b:"):
        update_overlap(mlp, hn.Split(x, x), (x, x))
