"""toy_atoms: deterministic, compositional split (OOD pairs never trained, every atom trained)."""
import torch

import hebbnets as hn


def test_deterministic_under_seed():
    a, b, c = (hn.tasks.make("toy_atoms", seed=s, n_train=100, n_test=20) for s in (0, 0, 1))
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.tests["ood"].y, b.tests["ood"].y)
    assert not torch.equal(a.train.x, c.train.x)


def test_ood_pairs_never_trained_and_every_atom_seen():
    t = hn.tasks.make("toy_atoms", seed=0)
    train = {tuple(p) for p in t.info["train_pairs"].tolist()}
    ood = {tuple(p) for p in t.info["ood_pairs"].tolist()}
    assert train and ood and not (train & ood)
    assert {i for p in train for i in p} == set(range(t.params["n_atoms"]))
    # every sample is built from its split's pairs, with y = U c exactly
    for name, allowed in (("train", train), ("id", train), ("ood", ood)):
        picks = t.info["sample_pairs"][name]
        assert {tuple(sorted(q)) for q in picks.tolist()} <= allowed
        split = t.train if name == "train" else t.tests[name]
        codes = torch.linalg.lstsq(t.info["U"][:, picks[0]], split.y[0]).solution
        torch.testing.assert_close(t.info["U"][:, picks[0]] @ codes, split.y[0], atol=1e-5, rtol=0)


def test_splits_and_metric():
    t = hn.tasks.make("toy_atoms", seed=0, n_train=50, n_test=10)
    assert set(t.tests) == {"id", "ood"} and t.metric == "mse"
    assert t.train.x.shape == (50, t.params["x_dim"]) and t.tests["id"].y.shape == (10, t.params["y_dim"])
