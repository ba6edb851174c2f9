"""Trivial bag-of-tokens baselines on the mean-pooled input (scikit-learn):

* ``"centroid"``: nearest class centroid (``sklearn.neighbors.NearestCentroid``);
* ``"lda"``: linear discriminant analysis with a pooled covariance
  (``sklearn.discriminant_analysis.LinearDiscriminantAnalysis``).

Inputs ``(N, T, D)`` are averaged over every axis but the last (``(N, D)`` inputs are used as
they are), so these models see exactly what a bag of tokens carries. ``lda`` with
``pool="ends"`` instead reads the mean of the first ``n_ends`` and the mean of the last
``n_ends`` tokens side by side (``2 D`` features): the trivial baseline of a task whose signal
sits at the two ends of the sequence (the RSGN paper's long-range task). The fitted scikit-learn
quantities are copied into buffers, so prediction is a torch expression and checkpoints are
safetensors like every other model (tested to agree with scikit-learn's own ``predict``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_int
from ..models import register


def mean_pool(x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``(N, ..., D)`` -> ``(N, D)``: mean over the middle (token) axes; with a mask, the mean of
    the observed entries only."""
    if x.ndim == 2:
        return x if x_mask is None else x * x_mask
    dims = tuple(range(1, x.ndim - 1))
    if x_mask is None:
        return x.mean(dims)
    return (x * x_mask).sum(dims) / x_mask.sum(dims).clamp_min(1)


def ends_pool(x: torch.Tensor, n_ends: int, x_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``(N, T, D)`` -> ``(N, 2 D)``: the mean of the first ``n_ends`` tokens next to the mean of
    the last ``n_ends`` (with a mask, of their observed entries)."""
    first = mean_pool(x[:, :n_ends], None if x_mask is None else x_mask[:, :n_ends])
    last = mean_pool(x[:, -n_ends:], None if x_mask is None else x_mask[:, -n_ends:])
    return torch.cat([first, last], dim=1)


def _check_classification(spec: DataSpec, name: str) -> None:
    if not spec.is_classification:
        raise ValueError(f"split: {name} is a classifier; it needs integer class targets y (N,)")


@dataclass
class CentroidConfig:
    pass


@register("centroid")
class NearestCentroidModel(Model):
    """Nearest class centroid (Euclidean) on mean-pooled inputs. No learned weights beyond the
    class means."""

    Config = CentroidConfig

    def _build(self, spec: DataSpec) -> None:
        _check_classification(spec, "centroid")
        self.register_buffer("centroids", torch.zeros(spec.n_classes, spec.x_shape[-1]))  # (C, D)
        self.register_buffer("counts", torch.zeros(spec.n_classes, dtype=torch.long))  # (C,) samples per class

    def _fit(self, split: Split) -> None:
        from sklearn.neighbors import NearestCentroid

        feats = mean_pool(split.x, split.x_mask).double().cpu().numpy()  # (N, D); scikit-learn works on the CPU
        labels = split.y.cpu().numpy()
        sk = NearestCentroid().fit(feats, labels)
        cent = torch.full_like(self.centroids, float("inf"), dtype=torch.float64)
        cent[torch.from_numpy(np.asarray(sk.classes_)).to(cent.device)] = torch.from_numpy(sk.centroids_).to(cent)  # classes absent in train never win
        self.centroids = cent.to(self.centroids.dtype)
        self.counts = torch.bincount(split.y, minlength=len(self.counts))
        self._sk = sk  # kept for the agreement test; not part of the checkpoint

    def _partial_fit(self, split: Split) -> None:
        """Merge the new samples into the class means (exactly the means over all samples seen)."""
        feats = mean_pool(split.x, split.x_mask).double()  # (N, D)
        new = torch.bincount(split.y, minlength=len(self.counts))  # (C,)
        sums = feats.new_zeros(len(new), feats.shape[1]).index_add_(0, split.y, feats)
        old = torch.nan_to_num(self.centroids.double(), posinf=0.0) * self.counts[:, None]
        total = self.counts + new
        merged = (old + sums) / total.clamp_min(1)[:, None]
        self.centroids = torch.where(total[:, None] > 0, merged, torch.inf).to(self.centroids.dtype)
        self.counts = total

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        f = mean_pool(x, x_mask).to(self.centroids.dtype)  # (N, D)
        d = torch.cdist(f, torch.nan_to_num(self.centroids, posinf=1e30))  # (N, C)
        return d.argmin(1)


@dataclass
class LDAConfig:
    solver: str = "svd"
    shrinkage: float | None = None  # only with solver "lsqr" / "eigen"
    # "mean": bag of tokens; "ends": first and last n_ends tokens (see module docstring). neutral:
    # the value that computes what fits did before the field existed (record keys omit it)
    pool: str = field(default="mean", metadata={"neutral": "mean"})
    n_ends: int = field(default=8, metadata={"neutral": 8})

    def __post_init__(self) -> None:
        if self.pool not in ("mean", "ends"):
            raise ValueError(f"pool: unknown {self.pool!r}; expected one of ['ends', 'mean']")
        check_int(self.n_ends, "n_ends")
        if self.solver not in ("svd", "lsqr", "eigen"):
            raise ValueError(f"solver: unknown {self.solver!r}; expected one of ['eigen', 'lsqr', 'svd']")
        if self.shrinkage is not None and (self.solver == "svd" or not 0.0 <= self.shrinkage <= 1.0):
            raise ValueError(f"shrinkage: needs solver 'lsqr' or 'eigen' and a value in [0, 1], got {self.shrinkage!r}")


@register("lda")
class LDAModel(Model):
    """Linear discriminant analysis (pooled covariance, empirical class priors) on mean-pooled
    inputs (or the two ends' means, ``pool="ends"``); the decision function ``f W^T + b`` is
    stored as buffers."""

    Config = LDAConfig

    def _features(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if self.config.pool == "ends":
            return ends_pool(x, self.config.n_ends, x_mask)
        return mean_pool(x, x_mask)

    def _build(self, spec: DataSpec) -> None:
        _check_classification(spec, "lda")
        c, d = spec.n_classes, spec.x_shape[-1]
        if self.config.pool == "ends":
            if len(spec.x_shape) != 2 or spec.x_shape[0] < self.config.n_ends:
                raise ValueError(f"x: pool='ends' needs (N, T, D) inputs with T >= n_ends ({self.config.n_ends}), "
                                 f"got per-sample shape {spec.x_shape}")
            d = 2 * d
        self.register_buffer("coef", torch.zeros(c, d, dtype=torch.float64))  # (C, D)
        self.register_buffer("intercept", torch.full((c,), -torch.inf, dtype=torch.float64))  # (C,)

    def _fit(self, split: Split) -> None:
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        feats = self._features(split.x, split.x_mask).double().cpu().numpy()  # (N, D) or (N, 2 D)
        sk = LinearDiscriminantAnalysis(solver=self.config.solver, shrinkage=self.config.shrinkage)
        sk.fit(feats, split.y.cpu().numpy())
        coef, icpt = np.asarray(sk.coef_), np.asarray(sk.intercept_)
        if len(sk.classes_) == 2:  # sklearn's binary decision function is one score for class 1
            coef = np.concatenate([np.zeros_like(coef), coef])
            icpt = np.concatenate([np.zeros_like(icpt), icpt])
        cls = torch.from_numpy(np.asarray(sk.classes_)).to(self.coef.device)
        # classes never seen in training keep intercept -inf, so they are never predicted
        self.coef = torch.zeros_like(self.coef).index_copy(0, cls, torch.from_numpy(coef).to(self.coef))
        self.intercept = torch.full_like(self.intercept, -torch.inf).index_copy(0, cls,
                                                                            torch.from_numpy(icpt).to(self.intercept))
        self._sk = sk

    def _partial_fit(self, split: Split) -> None:
        raise ValueError("model: 'lda' cannot continue from its state (scikit-learn's "
                         "LinearDiscriminantAnalysis keeps no incremental statistics); fit it on all the data")

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        f = self._features(x, x_mask).double()  # (N, D) or (N, 2 D)
        return (f @ self.coef.T + self.intercept).argmax(1)  # (N,)
