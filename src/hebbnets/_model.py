"""``Model``: the fit / predict / score / save surface shared by every registered model.

A subclass supplies a ``Config`` dataclass and three hooks:

* ``_build(spec)``: create parameters once the data shapes are known (every ``fit``, and
  ``build(spec)`` alone);
* ``_fit(split)``: train from the current state (the split is validated and matches ``spec``);
* ``_predict(x, x_mask)``: return predictions shaped ``(N, *spec.y_shape)`` (class labels
  ``(N,)`` for classification);

and optionally ``_partial_fit(split)`` (default: ``_fit``, which continues from the current
state) and ``_reset()`` (forget per-fit state kept outside what ``_build`` creates).

``fit`` follows scikit-learn: it starts fresh (every parameter, buffer and sub-module ``_build``
made is dropped and built again under the seed), so a second ``fit`` equals a first one.
``partial_fit`` continues learning from the current state (the first call on an unfitted model
is a ``fit``); a continual-learning stage is one ``partial_fit``.

Everything else (validation, seeding, scoring, safetensors checkpoints) lives here once.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from ._split import Split
from ._validation import as_tensor, check_float, check_mask, resolve_device, resolve_dtype
from ._version import __version__
from .metrics import default_metric, get_metric

CONFIG_FILE = "config.json"

#: torch intra-op threads while a model fits or predicts (``set_threads``); ``None``: torch's own
_THREADS: list[int | None] = [1]


def set_threads(n: int | None) -> None:
    """Torch threads every ``fit``, ``partial_fit`` and ``predict`` runs with (default 1, as the
    CLI); the caller's setting is restored after each call. ``None`` leaves torch's setting alone.

    One thread is the default because the fits' matmuls are small: on a busy machine OpenMP's
    spinning threads slow them several-fold, while on an idle one more threads help the larger
    backprop models somewhat and the VN's sparse inference hardly at all (README, "Threads").
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads: expected an int >= 1 or None, got {n!r}")
    _THREADS[0] = n


class _threads:
    """Run a block with ``set_threads``' thread count, restoring torch's setting afterwards."""

    def __enter__(self) -> None:
        self.before = torch.get_num_threads()
        if _THREADS[0] is not None and _THREADS[0] != self.before:
            torch.set_num_threads(_THREADS[0])

    def __exit__(self, *exc: Any) -> None:
        if torch.get_num_threads() != self.before:
            torch.set_num_threads(self.before)
WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class DataSpec:
    """Shapes a model was built for (per sample, i.e. without the leading N)."""

    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    n_classes: int | None = None  # None: regression
    x_masked: bool = False  # trained with an input mask

    @classmethod
    def from_split(cls, split: Split) -> "DataSpec":
        n_classes = int(split.y.max()) + 1 if split.is_classification else None
        return cls(tuple(split.x.shape[1:]), tuple(split.y.shape[1:]), n_classes, split.x_mask is not None)

    @property
    def x_dim(self) -> int:
        return math.prod(self.x_shape)

    @property
    def y_dim(self) -> int:
        return math.prod(self.y_shape)

    @property
    def is_classification(self) -> bool:
        return self.n_classes is not None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DataSpec":
        return cls(tuple(d["x_shape"]), tuple(d["y_shape"]), d["n_classes"], d["x_masked"])


class Model(nn.Module):
    """Base class of every registered model (see module docstring)."""

    name: ClassVar[str] = ""
    Config: ClassVar[type]

    def __init__(self, config: Any = None, seed: int = 0):
        super().__init__()
        if config is None:
            config = self.Config()
        if not isinstance(config, self.Config):
            raise ValueError(f"config: expected {self.Config.__name__}, got {type(config).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
        self.config = config
        self.seed = seed
        self.spec: DataSpec | None = None
        # where the model's parameters live and learn (``to``/``make(device=..., dtype=...)``);
        # ``None`` dtype: each model's own (its config's ``dtype`` field, or torch's default)
        self._device = torch.device("cpu")
        self._dtype: torch.dtype | None = None
        if isinstance(getattr(config, "dtype", None), str):  # a config that names its dtype sets the model's
            self._dtype = resolve_dtype(config.dtype, "dtype")

    # -- hooks -------------------------------------------------------------------------------
    def _build(self, spec: DataSpec) -> None:
        raise NotImplementedError

    def _fit(self, split: Split) -> None:
        raise NotImplementedError

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def _partial_fit(self, split: Split) -> None:
        """Continue training on ``split`` (default: ``_fit``, which starts from the current state)."""
        self._fit(split)

    def _reset(self) -> None:
        """Drop what ``_build`` created (parameters, buffers, sub-modules), so ``fit`` starts fresh.

        A subclass that keeps other learned state across fits (outside ``_build``) extends this.
        """
        for name in getattr(self, "_built_names", ()):
            if hasattr(self, name):
                delattr(self, name)
        self._built_names: tuple[str, ...] = ()
        self.spec = None

    # -- public API --------------------------------------------------------------------------
    def build(self, spec: DataSpec) -> "Model":
        """Create the parameters for data of per-sample shapes ``spec``, untrained; returns ``self``.

        For what needs a model's parameters without a fit: checking that it takes a task's
        shapes before a plan runs, timing its steps, or setting its weights by hand (e.g.
        ``LISTA.from_dictionary``). Whatever was built before is dropped first. The initial
        weights come from torch's global generator, as ``torch.nn`` layers' do (seed or fork it
        for reproducible ones); ``fit`` always builds again under ``seed``.
        """
        if not isinstance(spec, DataSpec):
            raise ValueError(f"spec: expected a hebbnets DataSpec, got {type(spec).__name__}")
        self._reset()
        self.spec = spec
        before = set(self._parameters) | set(self._buffers) | set(self._modules)
        with torch.device("cpu"):  # created on the CPU: the same initial values on every device
            self._build(spec)
        after = set(self._parameters) | set(self._buffers) | set(self._modules)
        self._built_names = tuple(sorted(after - before))  # what _reset drops
        # parameters are created on the CPU in each model's own dtype, then placed (the same
        # initial values on every device for a seed)
        torch.nn.Module.to(self, device=self._device, dtype=self._dtype)
        return self

    # -- placement ---------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        """The device the model trains and predicts on (set by ``to``; before a fit too)."""
        return self._device

    @property
    def model_dtype(self) -> torch.dtype | None:
        """The floating dtype set by ``to(dtype)`` / ``make(dtype=...)``; ``None``: the model's own."""
        return self._dtype

    def to(self, *args: Any, **kwargs: Any) -> "Model":
        """``torch.nn.Module.to``, remembered: a model moved before ``fit`` builds its parameters
        there, trains there and takes its data there (splits and inputs are moved and cast to
        the model's floating dtype on the way in; predictions come back on the model's device).
        Works before and after ``fit`` and after ``hebbnets.models.load``."""
        try:
            device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device: model.to{args!r} is not a device or dtype ({exc})") from None
        if device is not None:
            resolve_device(device, "device")  # one error for a device this machine does not have
        if dtype is not None and not dtype.is_floating_point:
            raise ValueError(f"dtype: a model's parameters are floating point; got {dtype}")
        if device is not None:
            device = torch.device(device)
            if device.type == "cuda" and device.index is None and torch.cuda.is_available():
                device = torch.device("cuda", torch.cuda.current_device())
        super().to(device=device, dtype=dtype, non_blocking=non_blocking)
        if device is not None:
            self._device = device
        if dtype is not None:
            self._dtype = dtype
            if "dtype" in {f.name for f in dataclasses.fields(self.config)}:  # one source of the dtype
                self.config = dataclasses.replace(self.config, dtype=str(dtype).removeprefix("torch."))
        return self

    def cpu(self) -> "Model":
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Model":
        return self.to(torch.device("cuda", device) if isinstance(device, int) else (device or "cuda"))

    def double(self) -> "Model":
        return self.to(torch.float64)

    def float(self) -> "Model":
        return self.to(torch.float32)

    def half(self) -> "Model":
        return self.to(torch.float16)

    def bfloat16(self) -> "Model":
        return self.to(torch.bfloat16)

    def _placed(self, split: Split) -> Split:
        """``split`` on the model's device, floating tensors in its dtype (if one is set)."""
        return split.to(self._device, self._dtype)

    def _rng_devices(self) -> list[int]:
        """The CUDA devices whose generator ``fork_rng`` saves and restores around a seeded call."""
        return [self._device.index or 0] if self._device.type == "cuda" else []

    def require_built(self) -> DataSpec:
        """The ``DataSpec`` the model was built for; ``ValueError`` naming ``model`` when it was
        never fitted (or built), so a caller fails before touching absent parameters."""
        if self.spec is None:
            raise ValueError(f"model: {self.name or type(self).__name__} is not fitted yet; call fit(split) first")
        return self.spec

    def fit(self, split: Split) -> "Model":
        """Train on ``split`` from scratch; returns ``self``.

        Starts fresh every time (scikit-learn's convention): the model is built again for the
        split's shapes under ``seed``, so ``fit`` after ``fit`` equals one ``fit`` of a new model
        with the same seed. Use ``partial_fit`` to continue from the current state.
        """
        if not isinstance(split, Split):
            raise ValueError(f"split: expected hebbnets.Split, got {type(split).__name__}")
        # fork_rng: a seeded model is reproducible without touching the caller's global RNG
        split = self._placed(split)
        with _threads(), torch.random.fork_rng(devices=self._rng_devices()):
            torch.manual_seed(self.seed)
            self.build(DataSpec.from_split(split))
            self._fit(split)
        return self

    def partial_fit(self, split: Split) -> "Model":
        """Continue learning on ``split`` from the current state; returns ``self``.

        Nothing is re-initialised (scikit-learn's convention): this is how a model learns
        stages one after the other. On a model that was never fitted it is ``fit``. The split's
        per-sample shapes must match the fitted ones (``ValueError`` naming ``split`` if not).
        What "continue" means per model: backprop models run the same training loop again
        (``hebbnets.training.train_backprop``) from the current weights with a fresh optimiser
        state; a Vector Network runs Atomic-Hebb from its current atoms.
        """
        if not isinstance(split, Split):
            raise ValueError(f"split: expected hebbnets.Split, got {type(split).__name__}")
        if self.spec is None:
            return self.fit(split)
        self._check_compatible(split)
        split = self._placed(split)
        with _threads(), torch.random.fork_rng(devices=self._rng_devices()):
            torch.manual_seed(self.seed)
            self._partial_fit(split)
        return self

    @torch.no_grad()
    def predict(self, x: Any, x_mask: Any = None) -> torch.Tensor:
        """Predict targets for inputs ``x`` ``(N, *x_shape)``; returns ``(N, *y_shape)``."""
        spec = self.require_built()
        x = check_float(as_tensor(x, "x"), "x", min_ndim=2)
        if tuple(x.shape[1:]) != spec.x_shape:
            raise ValueError(f"x: per-sample shape {tuple(x.shape[1:])} does not match the trained {spec.x_shape}")
        x_mask = check_mask(x_mask, x, "x_mask", "x")
        x = x.to(device=self._device, dtype=self._dtype)
        x_mask = None if x_mask is None else x_mask.to(device=self._device, dtype=self._dtype)
        with _threads(), torch.random.fork_rng(devices=self._rng_devices()):
            torch.manual_seed(self.seed)
            was_training = self.training
            self.eval()
            try:
                return self._predict(x, x_mask)
            finally:
                self.train(was_training)

    def score(self, split: Split, metric: str | None = None) -> float:
        """The metric on ``split``: ``metric`` if given, else ``split.metric``, else MSE
        (accuracy for integer targets)."""
        if not isinstance(split, Split):
            raise ValueError(f"split: expected hebbnets.Split, got {type(split).__name__}")
        fn = get_metric(metric or default_metric(split))
        split = self._placed(split)
        return fn(self.predict(split.x, split.x_mask), split)

    @property
    def num_parameters(self) -> int:
        """Number of learned scalars (trained by gradients or by local rules alike)."""
        self.require_built()
        return sum(p.numel() for p in self.parameters())

    def save(self, path: str | os.PathLike) -> None:
        """Write ``path/config.json`` and ``path/model.safetensors`` (no pickle)."""
        from safetensors.torch import save_file

        spec = self.require_built()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        meta = {
            "model": self.name,
            "hebbnets_version": __version__,
            "seed": self.seed,
            "config": dataclasses.asdict(self.config),
            "spec": spec.to_dict(),
        }
        (path / CONFIG_FILE).write_text(json.dumps(meta, indent=2))
        state = {k: v.detach().contiguous().clone() for k, v in self.state_dict().items()}
        save_file(state, str(path / WEIGHTS_FILE))

    # -- helpers -----------------------------------------------------------------------------
    def _check_compatible(self, split: Split) -> None:
        spec = self.spec
        assert spec is not None
        if tuple(split.x.shape[1:]) != spec.x_shape:
            raise ValueError(f"split: x per-sample shape {tuple(split.x.shape[1:])} differs from the fitted {spec.x_shape}")
        if tuple(split.y.shape[1:]) != spec.y_shape or split.is_classification != spec.is_classification:
            raise ValueError(f"split: y per-sample shape {tuple(split.y.shape[1:])} differs from the fitted {spec.y_shape}")
        if (split.x_mask is not None) != spec.x_masked:
            have = "has an x_mask" if split.x_mask is not None else "has no x_mask"
            raise ValueError(f"split: {have}, unlike the split the model was fitted on")
        if spec.is_classification and int(split.y.max()) >= spec.n_classes:
            raise ValueError(f"split: class label {int(split.y.max())} is beyond the fitted {spec.n_classes} classes")

    def extra_repr(self) -> str:
        return f"seed={self.seed}, config={self.config}"


def build_from_checkpoint(cls: type[Model], path: str | os.PathLike, meta: dict[str, Any],
                          device: Any = None) -> Model:
    """Rebuild a model of class ``cls`` from a checkpoint folder written by ``Model.save``, in
    the floating dtype its weights were saved in, on ``device`` (default: the CPU)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    where = str(path)
    try:
        config = config_from_dict(cls, meta["config"])
        model = cls(config, seed=int(meta["seed"]))
        spec = DataSpec.from_dict(meta["spec"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"path: {where!r} has a config.json that does not describe a {cls.name!r} model ({exc})") \
            from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(model.seed)
        model.build(spec)
    weights = Path(path) / WEIGHTS_FILE
    if not weights.is_file():
        raise ValueError(f"path: no {WEIGHTS_FILE} in {where!r}")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"path: {str(weights)!r} is not a readable safetensors file ({exc})") from None
    floats = {v.dtype for v in state.values() if v.is_floating_point()}
    if len(floats) == 1:  # saved in one precision: come back in it (float64 stays float64)
        model.to(floats.pop())
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"path: the weights in {where!r} do not match its config.json ({first})") from None
    return model.to(device) if device is not None else model


def config_from_dict(cls: type[Model], values: dict[str, Any], model_name: str | None = None) -> Any:
    """Build ``cls.Config`` from plain values; unknown keys raise ``ValueError`` naming them."""
    fields = {f.name: f for f in dataclasses.fields(cls.Config)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(
            f"config: unknown key(s) {unknown} for model {model_name or cls.name!r}; known keys: {sorted(fields)}"
        )
    coerced = {}
    for key, value in values.items():
        default = fields[key].default
        # JSON turns tuples into lists; restore the declared container type
        if isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        # a per-layer field given one int means one layer: atoms=64 is atoms=(64,)
        if isinstance(default, tuple) and isinstance(value, int) and not isinstance(value, bool) \
                and all(isinstance(v, int) and not isinstance(v, bool) for v in default):
            value = (value,)
        coerced[key] = value
    return cls.Config(**coerced)
