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
    assert model.passes_run == ref.n_iter_ and 1 <= model.passes_run <= 20  # scikit-learn's passes, on record
    capped = hn.models.make("dict_learning", n_components=6, alpha=0.05, n_iter=1, batch_size=16, seed=3).fit(split)
    assert capped.passes_run == 1  # ran into its pass cap


def test_the_solver_passes_statistic_reports_the_pass_cap():
    from hebbnets.experiments import DEFAULT_STATISTICS, FitContext

    assert "solver_passes" in DEFAULT_STATISTICS  # every fit records it where it applies
    split = _low_rank_split(n=60, d=10)
    model = hn.models.make("dict_learning", n_components=6, alpha=0.05, n_iter=1, batch_size=16, seed=3).fit(split)
    ctx = FitContext(task=None, model=model, seed=3)
    ctx.record_statistics(["solver_passes"])
    assert ctx.stats == {"solver_passes": {"passes_run": 1, "max_passes": 1}}
    other = FitContext(task=None, model=hn.models.make("pca", n_components=2).fit(split), seed=0)
    other.record_statistics(["solver_passes"])
    assert other.stats == {}  # no outside solver: nothing recorded
