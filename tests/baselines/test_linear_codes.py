"""The simplest code-based baselines (PCA, scikit-learn's dictionary learning) and the per-image
SVD reference: against numpy/scikit-learn directly, exact where the math is exact."""
import warnings

import numpy as np
import pytest
import torch

import hebbnets as hn
from hebbnets.baselines.linear_codes import fit_readout
from hebbnets.experiments.references import truncated_svd


def _low_rank_split(n=80, d=12, rank=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    f64 = dict(generator=g, dtype=torch.float64)  # exactly rank 3 in the dtype the model keeps
    x = torch.randn(n, rank, **f64) @ torch.randn(rank, d, **f64) + 0.5
    return hn.Split(x, x.clone())


def test_pca_reconstructs_data_of_its_rank_exactly_and_matches_numpy_svd():
    split = _low_rank_split()
    model = hn.models.make("pca", n_components=3).fit(split)
    assert torch.allclose(model.predict(split.x), split.y, atol=1e-10)  # rank 3 data, 3 components: exact
    two = hn.models.make("pca", n_components=2).fit(split)
    xc = split.x.numpy() - split.x.numpy().mean(0)
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    ref = (u[:, :2] * s[:2]) @ vt[:2] + split.x.numpy().mean(0)  # the rank-2 PCA reconstruction
    assert np.allclose(two.predict(split.x).numpy(), ref, atol=1e-10)
    assert two.num_parameters == 12 + 12 * 2 + 2 * 12 + 12  # mean, components, read-out


def test_pca_reads_out_a_different_target_by_least_squares():
    split = _low_rank_split()
    y = split.x @ torch.randn(12, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    model = hn.models.make("pca", n_components=3).fit(hn.Split(split.x, y))
    assert torch.allclose(model.predict(split.x), y, atol=1e-9)  # y is linear in a rank-3 input
    w, b = fit_readout(torch.eye(3, dtype=torch.float64).repeat(2, 1), torch.ones(6, 2, dtype=torch.float64))
    assert torch.allclose(b, torch.ones(2, dtype=torch.float64)) and torch.allclose(w, torch.zeros(3, 2, dtype=w.dtype))


def test_dict_learning_equals_scikit_learn_and_reconstructs():
    from sklearn.decomposition import MiniBatchDictionaryLearning, sparse_encode
    from sklearn.exceptions import ConvergenceWarning

    split = _low_rank_split(n=60, d=10)
    model = hn.models.make("dict_learning", n_components=6, alpha=0.05, n_iter=20, batch_size=16, seed=3).fit(split)
    ref = MiniBatchDictionaryLearning(n_components=6, alpha=0.05, max_iter=20, batch_size=16, fit_algorithm="cd",
                                      transform_algorithm="lasso_cd", transform_alpha=0.05, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(split.x.numpy())
    assert np.allclose(model.dictionary.numpy(), ref.components_)
    codes = sparse_encode(split.x.numpy(), ref.components_, algorithm="lasso_cd", alpha=0.05, max_iter=5000)
    assert np.allclose(model.encode(split.x).numpy(), codes)
    err = ((model.predict(split.x) - split.y) ** 2).mean() / (split.y ** 2).mean()
    assert err < 5e-2
    again = hn.models.make("dict_learning", n_components=6, alpha=0.05, n_iter=20, batch_size=16, seed=3).fit(split)
    assert torch.equal(again.predict(split.x), model.predict(split.x))  # deterministic under the seed


def test_svd_image_is_eckart_young_and_exact_on_rank_one_images():
    g = torch.Generator().manual_seed(0)
    bumps = torch.einsum("na,nb->nab", torch.rand(5, 7, generator=g), torch.rand(5, 6, generator=g)).double()
    assert torch.allclose(truncated_svd(bumps, 1), bumps, atol=1e-12)  # a rank-1 image is its own rank-1 SVD
    noisy = bumps + 0.1 * torch.randn(5, 7, 6, generator=g, dtype=torch.float64)
    r2 = truncated_svd(noisy, 2)
    assert torch.linalg.matrix_rank(r2[0]) == 2
    s = torch.linalg.svdvals(noisy)
    assert torch.allclose(((noisy - r2) ** 2).sum((1, 2)), (s[:, 2:] ** 2).sum(1))  # the optimal error
    model = hn.models.make("svd_image", rank=1).fit(hn.Split(bumps, bumps))
    assert model.num_parameters == 0 and torch.allclose(model.predict(bumps), bumps, atol=1e-12)


@pytest.mark.parametrize("name, bad, match", [
    ("pca", {"n_components": 0}, "n_components"), ("pca", {"n_components": 2.5}, "n_components"),
    ("dict_learning", {"alpha": -1.0}, "alpha"), ("dict_learning", {"n_iter": 0}, "n_iter"),
    ("dict_learning", {"positive": "yes"}, "positive"), ("svd_image", {"rank": 0}, "rank")])
def test_bad_config_is_one_value_error_naming_the_field(name, bad, match):
    with pytest.raises(ValueError, match=f"^{match}"):
        hn.models.make(name, **bad)


def test_bad_data_is_refused_by_name():
    split = _low_rank_split()
    with pytest.raises(ValueError, match="^n_components"):
        hn.models.make("pca", n_components=13).fit(split)
    with pytest.raises(ValueError, match="^x_mask"):
        hn.models.make("pca", n_components=2).fit(hn.Split(split.x, split.y, x_mask=torch.ones_like(split.x)))
    with pytest.raises(ValueError, match="^split"):
        hn.models.make("pca", n_components=2).fit(hn.Split(split.x, torch.zeros(80, dtype=torch.long)))
    with pytest.raises(ValueError, match="^x"):
        hn.models.make("svd_image").fit(split)  # vectors, not images
