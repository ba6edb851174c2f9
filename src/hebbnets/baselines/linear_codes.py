"""The field's simplest code-based baselines: a code of the input, then a linear read-out.

* ``pca``: the input's top ``n_components`` principal directions (fitted on the training inputs
  by an exact SVD); the code is the projection of the centred input.
* ``dict_learning``: scikit-learn's ``MiniBatchDictionaryLearning`` with ``n_components`` atoms
  and sparsity ``alpha``, codes by ``sparse_encode`` (the standard sparse coder; ``alpha`` is the
  l1 weight of scikit-learn's objective ``0.5 ||x - g D||^2 + alpha ||g||_1``, VN's ``lam`` in the
  same units).

Both read the target out of the code with least squares on the training split (``code -> y``,
with an intercept), so on a reconstruct task (``y = x``) ``pca`` predicts exactly the PCA
reconstruction and ``dict_learning`` the dictionary's reconstruction. No gradient training, no
epochs: a fit is one pass of linear algebra (or of scikit-learn's online dictionary learning).

Inputs are flattened to ``(N, D)``; targets to ``(N, E)`` and reshaped back. Masked inputs and
class labels are refused (one ``ValueError`` naming the argument).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from .._model import DataSpec, Model
from .._split import Split
from ..models import register


def _positive_int(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")


def _check_spec(spec: DataSpec, model: str) -> None:
    if spec.is_classification:
        raise ValueError(f"split: {model!r} predicts real-valued targets; got integer class labels")
    if spec.x_masked:
        raise ValueError(f"x_mask: model {model!r} does not take masked inputs")


def fit_readout(codes: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Least squares ``y ~ codes W + b``: ``codes (N, K), y (N, E) -> W (K, E), b (E,)``
    (the minimum-norm solution when ``codes`` is rank-deficient; float64 inside)."""
    c, t = codes.double(), y.double()
    c_mean, t_mean = c.mean(0), t.mean(0)
    w = torch.linalg.lstsq(c - c_mean, t - t_mean, driver="gelsd").solution  # (K, E)
    return w.to(y.dtype), (t_mean - c_mean @ w).to(y.dtype)


@dataclass
class PCAConfig:
    """``n_components``: the number of principal directions kept (at most min(N, D))."""

    n_components: int = 64

    def __post_init__(self) -> None:
        _positive_int(self.n_components, "n_components")


@register("pca")
class PCA(Model):
    """PCA code of the input, linear read-out of the target (see the module docstring)."""

    Config = PCAConfig

    def _build(self, spec: DataSpec) -> None:
        _check_spec(spec, "pca")
        k = self.config.n_components
        if k > spec.x_dim:
            raise ValueError(f"n_components: {k} exceeds the input dimension {spec.x_dim}")
        # parameters, not buffers: learned scalars count in num_parameters like any model's
        self.mean = torch.nn.Parameter(torch.zeros(spec.x_dim), requires_grad=False)
        self.components = torch.nn.Parameter(torch.zeros(spec.x_dim, k), requires_grad=False)  # (D, K) orthonormal
        self.readout_w = torch.nn.Parameter(torch.zeros(k, spec.y_dim), requires_grad=False)
        self.readout_b = torch.nn.Parameter(torch.zeros(spec.y_dim), requires_grad=False)

    def _fit(self, split: Split) -> None:
        x = split.x.reshape(len(split.x), -1).double()
        k = self.config.n_components
        if k > min(x.shape):
            raise ValueError(f"n_components: {k} exceeds min(samples, features) = {min(x.shape)}")
        mean = x.mean(0)
        _, _, vh = torch.linalg.svd(x - mean, full_matrices=False)  # exact: no randomised solver
        dtype = split.x.dtype  # the model keeps the training data's precision
        self.mean.data = mean.to(dtype)
        self.components.data = vh[:k].T.to(dtype)
        w, b = fit_readout(self.encode(split.x), split.y.reshape(len(split.y), -1))
        self.readout_w.data, self.readout_b.data = w.to(dtype), b.to(dtype)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Codes ``(N, n_components)`` of inputs ``(N, *x_shape)``, in the model's dtype."""
        return (x.reshape(len(x), -1).to(self.mean.dtype) - self.mean) @ self.components

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        y = self.encode(x) @ self.readout_w + self.readout_b
        return y.reshape(len(x), *self.spec.y_shape)


@dataclass
class DictLearningConfig:
    """``n_components`` atoms, l1 weight ``alpha`` (learning and coding), ``n_iter`` passes over
    the training set (``max_iter`` of scikit-learn), mini-batches of ``batch_size``;
    ``positive``: non-negative codes (as VN's ``nonneg``)."""

    n_components: int = 128
    alpha: float = 0.1
    n_iter: int = 10
    batch_size: int = 256
    positive: bool = False

    def __post_init__(self) -> None:
        _positive_int(self.n_components, "n_components")
        _positive_int(self.n_iter, "n_iter")
        _positive_int(self.batch_size, "batch_size")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not self.alpha > 0:
            raise ValueError(f"alpha: expected a float > 0, got {self.alpha!r}")
        if not isinstance(self.positive, bool):
            raise ValueError(f"positive: expected a bool, got {self.positive!r}")


@register("dict_learning")
class DictLearning(Model):
    """scikit-learn's dictionary learning and sparse coding, linear read-out of the target."""

    Config = DictLearningConfig

    def _build(self, spec: DataSpec) -> None:
        _check_spec(spec, "dict_learning")
        k = self.config.n_components
        self.dictionary = torch.nn.Parameter(torch.zeros(k, spec.x_dim), requires_grad=False)  # (K, D) atoms
        self.readout_w = torch.nn.Parameter(torch.zeros(k, spec.y_dim), requires_grad=False)
        self.readout_b = torch.nn.Parameter(torch.zeros(spec.y_dim), requires_grad=False)

    def _fit(self, split: Split) -> None:
        from sklearn.decomposition import MiniBatchDictionaryLearning
        from sklearn.exceptions import ConvergenceWarning

        cfg = self.config
        x = split.x.reshape(len(split.x), -1).double().cpu().numpy()  # scikit-learn works on the CPU
        learner = MiniBatchDictionaryLearning(
            n_components=cfg.n_components, alpha=cfg.alpha, max_iter=cfg.n_iter, batch_size=cfg.batch_size,
            fit_algorithm="cd", transform_algorithm="lasso_cd", transform_alpha=cfg.alpha,
            positive_code=cfg.positive, random_state=self.seed)
        with warnings.catch_warnings():
            # the online learner's inner coding steps are warm-started partial solves by design;
            # the codes the model predicts with (``encode``) are solved to convergence and warn
            warnings.simplefilter("ignore", ConvergenceWarning)
            learner.fit(x)
        # passes over the training set scikit-learn ran (its early stopping, else the cap ``n_iter``):
        # on record as the equal-budget tables' cap hits (statistic "solver_passes")
        self.passes_run = int(learner.n_iter_)
        dtype = split.x.dtype  # the model keeps the training data's precision
        self.dictionary.data = torch.from_numpy(learner.components_).to(device=split.x.device, dtype=dtype)
        w, b = fit_readout(self.encode(split.x), split.y.reshape(len(split.y), -1))
        self.readout_w.data, self.readout_b.data = w.to(dtype), b.to(dtype)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Sparse codes ``(N, n_components)`` of inputs ``(N, *x_shape)`` (``sparse_encode``)."""
        from sklearn.decomposition import sparse_encode

        flat = x.reshape(len(x), -1).double().cpu().numpy()
        codes = sparse_encode(flat, self.dictionary.double().cpu().numpy(), algorithm="lasso_cd", alpha=self.config.alpha,
                              positive=self.config.positive, max_iter=5000)
        return torch.from_numpy(codes).to(self.dictionary)

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        y = self.encode(x) @ self.readout_w + self.readout_b
        return y.reshape(len(x), *self.spec.y_shape)
