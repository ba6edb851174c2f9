import math

import pytest
import torch

import hebbnets as hn
from hebbnets.tasks.functions1d import FAMILIES, canonical, parse_combo, sample_combo

TINY = dict(length=16, n_train=60, n_test=12)


def test_deterministic_under_seed_and_seed_matters():
    for mode in ("reconstruct", "masked"):
        a = hn.tasks.make("functions1d", seed=3, mode=mode, **TINY)
        b = hn.tasks.make("functions1d", seed=3, mode=mode, **TINY)
        c = hn.tasks.make("functions1d", seed=4, mode=mode, **TINY)
        assert torch.equal(a.train.x, b.train.x) and torch.equal(a.train.y, b.train.y)
        for k in a.tests:
            assert torch.equal(a.tests[k].x, b.tests[k].x)
        assert not torch.equal(a.train.y, c.train.y)


def test_splits_and_shapes():
    t = hn.tasks.make("functions1d", seed=0, **TINY)
    assert set(t.tests) == {"id", "ood_pairs", "ood_triples", "ood_nested"}
    assert t.train.x.shape == (60, 16) and t.tests["ood_nested"].y.shape == (12, 16)
    assert torch.equal(t.train.x, t.train.y)  # reconstruct: input = output
    assert t.metric == "mse" and t.params["length"] == 16
    assert hn.tasks.make("functions1d", seed=0, scale="quick").params["length"] == 64


def test_ood_combinations_never_trained_but_every_family_seen():
    t = hn.tasks.make("functions1d", seed=0, **TINY)
    train = set(t.info["combos"]["train"])
    assert set(t.info["combos"]["id"]) == train
    fams_seen = {f for c in train for term in parse_combo(c) for f in term if f}
    assert fams_seen == set(FAMILIES)
    pairs_seen = {tuple(sorted(o for o, _ in parse_combo(c))) for c in train if "+" in c}
    for split in ("ood_pairs", "ood_triples", "ood_nested"):
        combos = t.info["combos"][split]
        assert combos and not (set(combos) & train)
        # every sample of the split carries one of its own combinations
        ids = t.info["combo_ids"][split]
        assert int(ids.max()) < len(combos)
    for c in t.info["combos"]["ood_pairs"]:
        assert tuple(sorted(o for o, _ in parse_combo(c))) not in pairs_seen
    assert all(len(parse_combo(c)) == 3 for c in t.info["combos"]["ood_triples"])


def test_default_ood_pairs_are_within_group_pairs_never_trained_together():
    """sin and cos differ only in phase, so an honest held-out pair must not be 'the same pair
    with sin swapped for cos': the defaults hold out sin+cos and poly+gauss, and no training
    combination contains both members of either pair (also nested, e.g. sin(cos))."""
    t = hn.tasks.make("functions1d", seed=0, **TINY)
    assert set(t.info["combos"]["ood_pairs"]) == {"cos+sin", "gauss+poly"}
    for combo in t.info["combos"]["train"]:
        fams = {f for term in parse_combo(combo) for f in term if f}
        assert not {"sin", "cos"} <= fams and not {"poly", "gauss"} <= fams, combo
    # every family still occurs in a trained sum
    summed = {o for c in t.info["combos"]["train"] if "+" in c for o, _ in parse_combo(c)}
    assert summed == set(FAMILIES)


def test_masked_mode_hides_one_contiguous_segment():
    t = hn.tasks.make("functions1d", seed=1, mode="masked", mask_fraction=0.25, **TINY)
    assert t.metric == "mse_missing"
    for split in (t.train, t.tests["ood_pairs"]):
        m = split.x_mask
        assert torch.all(split.x[m == 0] == 0)
        assert torch.equal(split.x[m == 1], split.y[m == 1])
        missing = (1 - m)
        assert torch.all(missing.sum(1) == 4)
        # contiguous: exactly one 0->1 transition edge pair along the sequence
        edges = (missing[:, 1:] - missing[:, :-1]).abs().sum(1) + missing[:, 0] + missing[:, -1]
        assert torch.all(edges == 2)


def test_primitives_match_formulas():
    """Single primitives against a direct per-sample formula (slow reference)."""
    p = dict(hn.tasks.make("functions1d", seed=0, **TINY).params)
    t = torch.linspace(0, 1, 16)
    sig = sample_combo("gauss", 5, t, torch.Generator().manual_seed(0), p)
    # replay the generator: gauss draws amp, mu, width (each (n, 1)) in that order
    g = torch.Generator().manual_seed(0)
    amp = p["amp_low"] + (p["amp_high"] - p["amp_low"]) * torch.rand(5, 1, generator=g)
    mu = 0.1 + 0.8 * torch.rand(5, 1, generator=g)
    w = p["width_low"] + (p["width_high"] - p["width_low"]) * torch.rand(5, 1, generator=g)
    for i in range(5):
        for j in range(16):
            ref = float(amp[i]) * math.exp(-((float(t[j]) - float(mu[i])) ** 2) / (2 * float(w[i]) ** 2))
            assert abs(float(sig[i, j]) - ref) < 1e-5
    poly = sample_combo("poly", 50, torch.linspace(0, 1, 201), torch.Generator().manual_seed(1), p)
    peak = poly.abs().amax(1)
    assert torch.all(peak <= p["amp_high"] + 1e-5) and torch.all(peak >= p["amp_low"] - 1e-5)


def test_nested_uses_inner_signal_as_argument():
    p = dict(hn.tasks.make("functions1d", seed=0, **TINY).params)
    t = torch.linspace(0, 1, 16)
    nested = sample_combo("sin(poly)", 4, t, torch.Generator().manual_seed(2), p)
    g = torch.Generator().manual_seed(2)
    inner = sample_combo("poly", 4, t, g, p)  # same draws as the nested call's inner term
    z = ((inner + 1) / 2).clamp(0, 1)
    amp = p["amp_low"] + (p["amp_high"] - p["amp_low"]) * torch.rand(4, 1, generator=g)
    f = p["freq_low"] + (p["freq_high"] - p["freq_low"]) * torch.rand(4, 1, generator=g)
    assert torch.allclose(nested, amp * torch.sin(2 * math.pi * f * z), atol=1e-6)


def test_combo_parsing_and_bad_input():
    assert canonical("sin+poly") == canonical("poly + sin") == "poly+sin"
    assert canonical("gauss(sin)") == "gauss(sin)"
    with pytest.raises(ValueError, match="combo"):
        parse_combo("tan")
    with pytest.raises(ValueError, match="combo"):
        parse_combo("sin(cos(poly))")
    with pytest.raises(ValueError, match="ood_pairs"):
        hn.tasks.make("functions1d", ood_pairs=["sin+poly"], **TINY)  # trained pair
    with pytest.raises(ValueError, match="mode"):
        hn.tasks.make("functions1d", mode="nope", **TINY)
    with pytest.raises(ValueError, match="params"):
        hn.tasks.make("functions1d", bogus=1, **TINY)
    with pytest.raises(ValueError, match="train_combos"):
        hn.tasks.make("functions1d", train_combos="sin", **TINY)


def test_split_definitions_are_parameters():
    t = hn.tasks.make("functions1d", seed=0, train_combos=["sin", "cos", "sin+cos"], ood_pairs=["poly"],
                      ood_triples=[], ood_nested=["sin(cos)"], **TINY)
    assert set(t.tests) == {"id", "ood_pairs", "ood_nested"}
    assert t.info["combos"]["ood_pairs"] == ("poly",)
    assert t.params["train_combos"] == ["sin", "cos", "cos+sin"]


@pytest.mark.parametrize("mode", ["reconstruct", "masked"])
def test_recorded_vn_config_fits_and_predicts_on_a_tiny_instance(mode):
    """The chosen VN configuration (layers, atoms, top-k as recorded) runs as is."""
    t = hn.tasks.make("functions1d", seed=0, mode=mode, **TINY)
    m = hn.models.make("vn", seed=0, task=t, epochs=1, max_iter=10, max_sweeps=2, progress=False).fit(t.train)
    split = t.tests["ood_pairs"]
    y_hat = m.predict(split.x, split.x_mask)
    assert y_hat.shape == split.y.shape and bool(torch.isfinite(y_hat).all())
    assert len(m.layers) == len(t.model_configs["vn"]["atoms"])
