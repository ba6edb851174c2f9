"""The one epoch loop of every model trained by inference + Atomic-Hebb (the VN family).

Local rules have no loss to differentiate, so these models do not go through
``hebbnets.training.train_backprop``; they share this loop instead, with the same protocol as
the baselines (equal budgets):

* a validation part is carved from the *training* split only (``carve_validation``, a fraction
  ``val_fraction``), the rest is trained on;
* after every epoch the model predicts the validation inputs exactly as it predicts a test set
  and is scored with the supervised loss the baselines stop on (MSE over observed targets, or
  over the hidden entries for a split scored by ``mse_missing``);
* the atoms of the best validation epoch are kept (a copy of the whole ``state_dict``), and
  training stops after ``patience`` epochs without a lower validation error, or at ``epochs``.

With ``val_fraction = 0`` nothing is held out: every epoch runs and the last atoms are kept.

A model supplies ``learn_batch(index) -> float``: inference and Atomic-Hebb on the training
samples ``split[index]``, returning the batch's summed free energy (for the progress bar and
the history). The loop owns the data order, the validation and the bookkeeping.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from tqdm.auto import tqdm

from .._split import Split
from .._validation import check_choice, check_int
from ..training import carve_validation, supervised_loss


PHASES = ("train", "predict")


def lam_for(config: Any, phase: str) -> Any:
    """The one rule for the l1 weight of every VN-family model: ``lam`` while training,
    ``test_lam`` at prediction (and on the validation data of early stopping), ``lam`` when
    ``test_lam`` is ``None``. Returns the config's value as it is (a float, or ``vn``'s
    per-layer tuple). Used by ``LocalFitConfig.lam_for`` and by the configs of the VN readings
    that train through the backprop loop (``vn_applied_set``)."""
    check_choice(phase, PHASES, "phase")
    if phase == "predict" and config.test_lam is not None:
        return config.test_lam
    return config.lam


@dataclass
class LocalFitConfig:
    """The fields every VN-family config shares: the l1 weights and the training loop of
    ``fit_local``. ``VNConfig``, ``AppliedVNConfig``, ``MatrixVNConfig`` and ``PairVNConfig``
    subclass it and redeclare a field only to change its default or its record-key metadata
    (``dataclasses.field(metadata={"neutral": ...})``, ``hebbnets.experiments``).

    Attributes:
        lam: l1 weight of the codes during training.
        test_lam: l1 weight at prediction and on the validation data (``None``: ``lam``);
            ``lam_for(phase)`` is the one place that reads the two.
        epochs: epoch cap (training stops earlier after ``patience`` epochs without a lower
            validation error); batch_size: samples per Atomic-Hebb step.
        val_fraction: share of the training split held out for early stopping, in ``[0, 1)``
            (0: train on everything for ``epochs`` epochs and keep the last atoms).
        patience: epochs without a lower validation error before training stops.
        progress: show a progress bar during ``fit``.
        dtype: ``"float32"`` or ``"float64"``: the dtype of the model's atoms and codes.
    """

    lam: float = 0.05
    test_lam: float | None = None
    epochs: int = 20
    batch_size: int = 64
    val_fraction: float = 0.1
    patience: int = 5
    progress: bool = True
    dtype: str = "float32"

    def __post_init__(self) -> None:
        check_fit_fields(self)
        check_choice(self.dtype, ("float32", "float64"), "dtype")

    def lam_for(self, phase: str) -> Any:
        """The l1 weight of ``phase`` (``"train"`` or ``"predict"``): ``lam_for`` above."""
        return lam_for(self, phase)


def check_fit_fields(config: Any) -> None:
    """Validate the loop's fields of a config: ``epochs``, ``batch_size``, ``patience`` (ints
    >= 1) and ``val_fraction`` in ``[0, 1)``."""
    for name in ("epochs", "batch_size", "patience"):
        check_int(getattr(config, name), name)
    v = config.val_fraction
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v < 1.0:
        raise ValueError(f"val_fraction: must be in [0, 1), got {v!r}")


def fit_local(model: Any, split: Split, learn_batch: Callable[[torch.Tensor], float], *, desc: str,
              on_start: Callable[[Split], None] | None = None) -> dict[str, list[float]]:
    """Train ``model`` on ``split`` by ``learn_batch`` with early stopping (module docstring).

    Args:
        model: a built ``hebbnets.Model`` whose ``config`` has ``epochs``, ``batch_size``,
            ``val_fraction``, ``patience`` and ``progress``; its ``_predict`` scores validation.
        split: the training split (validation is carved from it).
        learn_batch: ``(B,)`` long indices into ``split`` -> summed free energy of that batch.
        desc: progress-bar label.
        on_start: called once with the training part (validation removed) before the first
            epoch, e.g. for a data-driven initialisation that must not see validation samples.

    Returns:
        ``{"energy": [...], "val": [...], "best_epoch": [e]}``: per epoch the mean free energy
        per training sample and the validation error (empty without validation), and the
        0-based epoch whose atoms the model ends with. Also stored as ``model.train_history``.
    """
    cfg = model.config
    gen = torch.Generator().manual_seed(model.seed)
    if cfg.val_fraction > 0:
        train_idx, val_idx = carve_validation(len(split), cfg.val_fraction, gen)
        val = split.subset(val_idx)
    else:  # no carving: the data order is exactly that of an un-validated loop
        train_idx, val = torch.arange(len(split), device=split.device), None
    if on_start is not None:
        on_start(split.subset(train_idx))
    history: dict[str, list[float]] = {"energy": [], "val": [], "best_epoch": []}
    best, best_state, best_epoch, stale = math.inf, None, -1, 0
    bar = tqdm(range(cfg.epochs), desc=desc, disable=not cfg.progress or None, leave=False)
    for epoch in bar:
        perm = train_idx[torch.randperm(len(train_idx), generator=gen, device=gen.device).to(train_idx.device)]
        total = 0.0
        for start in range(0, len(perm), cfg.batch_size):
            total += learn_batch(perm[start : start + cfg.batch_size])
        history["energy"].append(total / len(perm))
        if val is None:
            best_epoch = epoch
            bar.set_postfix(energy=f"{history['energy'][-1]:.4g}")
            continue
        with torch.no_grad():
            v = float(supervised_loss(model._predict(val.x, val.x_mask), val, model.spec))
        history["val"].append(v)
        bar.set_postfix(energy=f"{history['energy'][-1]:.4g}", val=f"{v:.4g}")
        if v < best:  # strict: the first best epoch wins
            best, best_epoch, stale = v, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            stale += 1
            if stale >= cfg.patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    history["best_epoch"] = [best_epoch]
    model.train_history = history
    return history
