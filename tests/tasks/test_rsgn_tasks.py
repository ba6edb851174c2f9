import hashlib

import numpy as np
import pytest
import torch

import hebbnets as hn
from hebbnets.tasks.rsgn_tasks import author_hierarchical, author_longrange, author_split



def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def hier():
    return author_hierarchical()


@pytest.fixture(scope="module")
def longr():
    return author_longrange()


def test_hierarchical_checksum_and_split(hier):
    X, y = hier
    assert X.shape == (5000, 64, 32) and X.dtype == np.float32 and y.dtype == np.int64
    assert _sha(X) == "f6e589e84746e190829ba0ae4b1a1f98ae79e7f116a5be3e1a1cd924c7aa6784"
    assert _sha(y) == "abcd39745130734700ce140b7994d67b0327e4ec72021eb93fbf784bd928d928"
    tr, va = author_split(5000)
    assert _sha(tr.astype(np.int64)) == "6e6003e2444aa134879b5ae2c26bbe41b7a7cb7fdb30efb30fd72ce67b426120"
    assert len(tr) == 4000 and len(va) == 1000 and len(np.intersect1d(tr, va)) == 0
    counts = np.bincount(y[va], minlength=20)
    assert counts.min() == 41 and counts.max() == 64  # docs/rsgn.md §4.1


def test_longrange_checksum(longr):
    X, y = longr
    assert X.shape == (3000, 128, 32)
    assert _sha(X) == "f8eb701d5b4e4e1dde3cf61612626ece9b37c666851576d3df2f3b70e5577db3"
    assert _sha(y) == "997c7606a330438ed0ee128b976d69527246fe2d91892298ff991971b79d31a5"
    tr, va = author_split(3000)
    assert len(tr) == 2400 and _sha(tr.astype(np.int64)) == "d77c81da2a12329b3266a22a7bb2ae49a896059d9c7b89156be59c53e13e0a70"


def test_generators_reproduce_the_independently_measured_trivial_baselines(hier, longr):
    # docs/rsgn.md §4.7 (an independent NumPy re-run of the author's notebook data): nearest
    # centroid on the mean-pooled input scores 24.1 % (hierarchical) and 92.5 % (long-range).
    # Matching to the sample is strong evidence the draw order is the author's.
    for (X, y), expected in ((hier, 0.241), (longr, 0.925)):
        tr, te = author_split(len(y))
        x_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
        m = hn.models.make("centroid").fit(hn.Split(x_t[tr], y_t[tr]))
        assert m.score(hn.Split(x_t[te], y_t[te])) == pytest.approx(expected, abs=1e-6)


def test_registered_task_is_the_author_data_and_split(longr):
    task = hn.tasks.make("rsgn_longrange")
    tr, te = author_split(3000)
    assert torch.equal(task.train.x, torch.from_numpy(longr[0][tr]))
    assert torch.equal(task.tests["id"].y, torch.from_numpy(longr[1][te]))


def test_honest_split_and_params():
    task = hn.tasks.make("rsgn_longrange", split="honest")
    assert len(task.train) == 2550 and len(task.tests["id"]) == 450
    assert task.model_configs["lstm"]["val_fraction"] == pytest.approx(0.1765)
    with pytest.raises(ValueError, match="split"):
        hn.tasks.make("rsgn_longrange", split="x")
    with pytest.raises(ValueError, match="params"):
        hn.tasks.make("rsgn_hierarchical", bogus=1)


@pytest.mark.parametrize("name", ["rsgn_tree", "rsgn_xor_range"])
def test_new_tasks_defeat_bag_of_tokens_baselines(name):
    task = hn.tasks.make(name, seed=0, n_train=1200, n_test=600)
    chance = task.info["chance"]
    for model in ("centroid", "lda"):
        acc = hn.models.make(model, task=task).fit(task.train).score(task.tests["id"])
        assert acc < chance + 0.06, (model, acc, chance)
    assert len(torch.unique(task.train.y)) == round(1 / chance)  # every class occurs


def test_xor_range_label_is_recoverable_from_the_two_ends():
    task = hn.tasks.make("rsgn_xor_range", seed=0, n_train=800, n_test=400, jitter=0)
    k, pl = task.params["n_patterns"], task.params["pattern_len"]
    b, e = task.info["begin"], task.info["end"]
    x = task.tests["id"].x
    s_hat = torch.einsum("ntd,ktd->nk", x[:, :pl], b).argmax(1)
    e_hat = torch.einsum("ntd,ktd->nk", x[:, -pl:], e).argmax(1)
    assert float(((s_hat + e_hat) % k == task.tests["id"].y).float().mean()) > 0.95


def test_tree_every_sample_has_the_same_bag_of_tokens_and_labels_are_ordered_pairs():
    task = hn.tasks.make("rsgn_tree", seed=0, n_train=50, n_test=20, noise=0.0)
    x, y = task.train.x, task.train.y
    sums = x.sum(1)
    torch.testing.assert_close(sums, sums[:1].expand_as(sums), rtol=1e-5, atol=1e-4)
    assert int(y.max()) < 12 and len(torch.unique(y)) > 6


def test_new_tasks_are_deterministic_under_seed():
    for name in ("rsgn_tree", "rsgn_xor_range"):
        a = hn.tasks.make(name, seed=3, n_train=30, n_test=10)
        b = hn.tasks.make(name, seed=3, n_train=30, n_test=10)
        c = hn.tasks.make(name, seed=4, n_train=30, n_test=10)
        assert torch.equal(a.train.x, b.train.x) and torch.equal(a.train.y, b.train.y)
        assert not torch.equal(a.train.x, c.train.x)
    with pytest.raises(ValueError, match="n_patterns"):
        hn.tasks.make("rsgn_xor_range", n_patterns=1)
    with pytest.raises(ValueError, match="n_motifs"):
        hn.tasks.make("rsgn_tree", n_motifs=20)


def test_model_configs_build_every_model():
    for name in ("rsgn_tree", "rsgn_xor_range", "rsgn_longrange"):
        task = hn.tasks.make(name, **({} if name == "rsgn_longrange" else dict(n_train=20, n_test=10)))
        for model in ("rsgn", "rsgn_parity", "lstm", "mlp", "centroid", "lda", "transformer", "sparse_transformer"):
            assert model in task.model_configs
            hn.models.make(model, task=task)  # raises on a key the model does not know


def test_paper_configs_give_the_papers_exact_parameter_counts():
    expected = {
        "rsgn_hierarchical": {"transformer": 403_348, "sparse_transformer": 403_348, "lstm": 566_292,
                              "mlp": 281_364, "rsgn_parity": 41_672},
        "rsgn_longrange": {"transformer": 600_330, "lstm": 563_722, "rsgn_parity": 40_382},
    }
    for task_name, counts in expected.items():
        task = hn.tasks.make(task_name)
        spec = hn.DataSpec.from_split(task.train)
        for model, count in counts.items():
            m = hn.models.make(model, task=task)
            m.spec = spec
            m._build(spec)
            assert m.num_parameters == count, (task_name, model)


def test_xor_range_default_is_solvable_by_matched_filters_despite_jitter():
    # an oracle that knows the patterns but not their jittered places: best match over shifts
    task = hn.tasks.make("rsgn_xor_range", seed=0, n_train=10, n_test=400)
    p = task.params
    k, pl, t, jit = p["n_patterns"], p["pattern_len"], p["seq_len"], p["jitter"]
    assert jit > 0
    x = task.tests["id"].x  # (n, T, D)

    def best(patterns, starts):
        scores = torch.stack([torch.einsum("ntd,ktd->nk", x[:, a : a + pl], patterns) for a in starts])  # (S, n, K)
        return scores.amax(0).argmax(1)  # (n,)

    s_hat = best(task.info["begin"], range(jit + 1))
    e_hat = best(task.info["end"], range(t - pl - jit, t - pl + 1))
    assert float(((s_hat + e_hat) % k == task.tests["id"].y).float().mean()) > 0.95
