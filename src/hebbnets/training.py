"""The one training loop for everything trained by gradients, with callbacks.

Adam on a validation-carved training split, early stopping on validation loss (the best
weights are restored), a tqdm progress bar. Models differ only in their network, in
``BackpropModel._forward`` and (optionally) ``_loss``; no benchmark has its own copy of this loop.

Protocol options (defaults keep the behaviour above): ``optimizer="adamw"`` (decoupled weight
decay), ``schedule="cosine"`` (``CosineAnnealingLR(T_max=epochs)`` stepped once per epoch),
``grad_clip`` (global gradient-norm bound), and ``restore`` = which weights the fit ends with:
the best validation loss (default, with early stopping), the best validation accuracy over the
epochs, or the last epoch's.

Callbacks (``Callback`` subclasses) observe or extend training at fixed points::

    on_fit_start(model, train, val)               before the first epoch
    penalty(model, batch)                         a term added to the batch's training loss
    on_step_end(model, step, batch, loss)         after each optimiser step (train mode)
    on_epoch_end(model, epoch, history)           after validation, in eval mode
    on_fit_end(model)                             after the selected weights are restored
    selectable(model, epoch, history) -> bool     after validation: may this epoch be restored?

``selectable`` lets a model restrict which epochs ``restore`` may choose (e.g. RSGN: only epochs
whose measured validation activity meets its target); an epoch is a candidate only if every
callback agrees, ``history["selectable"]`` records the verdicts and ``model.selected_epoch`` the
epoch whose weights the fit ends with (``None``: the last epoch's, because ``restore="last"``, there
is no validation set, or no epoch was selectable). Early stopping counts epochs without
improvement only once some epoch was selectable.

``penalty`` is how a regulariser that needs state from earlier fits enters the objective (e.g.
EWC's quadratic penalty, ``EWC`` below, switched on by ``ewc_lambda > 0``); the
recorded training loss includes it, validation and early stopping never do.

A model contributes its own (e.g. RSGN's slow local rules run ``on_step_end``: they change
the model between optimiser steps, never inside ``forward``) through
``BackpropModel.training_callbacks()``; a user adds observers with ``model.callbacks = [...]``
or ``train_backprop(model, split, callbacks=[...])``. Observers must not change the model.
Everything a callback changes in ``on_step_end`` is part of the state that validation scores
and that early stopping saves and restores, so the model that is scored is the one selected.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ._model import DataSpec, Model
from ._split import Split
from ._validation import check_choice, check_int_fields, check_positive

OPTIMIZERS = ("adam", "adamw")
SCHEDULES = ("constant", "cosine")
RESTORES = ("best_val_loss", "best_val_accuracy", "last")


@dataclass
class TrainConfig:
    """Optimisation settings shared by every backprop baseline (inherited by their configs)."""

    lr: float = 1e-3
    weight_decay: float = 0.0
    epochs: int = 200
    batch_size: int = 64
    val_fraction: float = 0.1  # carved from the training split, never from a test split
    patience: int = 20  # epochs without validation improvement before stopping
    progress: bool = True
    optimizer: str = "adam"  # "adam": L2 weight decay in the gradient; "adamw": decoupled decay
    schedule: str = "constant"  # "cosine": lr (1 + cos(pi epoch / epochs)) / 2 during epoch `epoch`
    grad_clip: float = 0.0  # max global L2 norm of the gradient per step; 0 = no clipping
    # weights kept at the end: "best_val_loss" (early stopping after `patience` epochs without a
    # lower validation loss), "best_val_accuracy" (classification; the state of the first epoch
    # with the highest validation accuracy, early stopping likewise), "last" (no early stopping)
    restore: str = "best_val_loss"
    # elastic weight consolidation (Kirkpatrick et al. 2017) across partial_fit stages: after every
    # fit the diagonal Fisher on (at most ewc_samples of) its training data is kept, and later fits
    # add ewc_lambda/2 sum_i F_i (theta_i - theta*_i)^2 per finished stage; 0 = off
    # neutral: the value that computes what fits did before the field existed (record keys omit it)
    ewc_lambda: float = field(default=0.0, metadata={"neutral": 0.0})
    ewc_samples: int = field(default=1024, metadata={"neutral": 1024})
    # torch.compile the training step's loss (forward) once per fit: pays on long fits only (the
    # compile costs seconds to a minute); what compiles and the measured ratios: reports/speed.md
    compile: bool = field(default=False, metadata={"neutral": False})

    def __post_init__(self) -> None:
        check_positive(self.lr, "lr")
        check_positive(self.ewc_lambda, "ewc_lambda", allow_zero=True)
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        check_positive(self.grad_clip, "grad_clip", allow_zero=True)
        for name, allowed in (("optimizer", OPTIMIZERS), ("schedule", SCHEDULES), ("restore", RESTORES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: unknown {getattr(self, name)!r}; expected one of {list(allowed)}")
        check_int_fields(self, ("epochs", "batch_size", "patience", "ewc_samples"))
        if not isinstance(self.compile, bool):
            raise ValueError(f"compile: expected True or False, got {self.compile!r}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise ValueError(f"val_fraction: must be in [0, 1), got {self.val_fraction!r}")


def carve_validation(n: int, fraction: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random (train_idx, val_idx) of ``range(n)``; at least one sample in each when fraction > 0."""
    perm = torch.randperm(n, generator=generator, device=generator.device)
    n_val = validation_size(n, fraction)
    return perm[n_val:], perm[:n_val]


def validation_size(n: int, fraction: float) -> int:
    """How many of ``n`` training samples ``carve_validation`` holds out."""
    return 0 if fraction == 0 else min(max(1, round(fraction * n)), n - 1)


def per_sample_loss(out: torch.Tensor, split: Split, spec: DataSpec) -> torch.Tensor:
    """The supervised loss of each sample ``(N,)``: cross-entropy for class labels, else the
    (masked) mean squared error over the sample's entries, weighted as ``supervised_loss``
    weights them (a sample with no weighted entry scores 0). For local rules that need a
    per-sample reward, e.g. RSGN's three-factor Hebbian rule."""
    if spec.is_classification:
        return F.cross_entropy(out, split.y, reduction="none")
    err = ((out - split.y) ** 2).reshape(out.shape[0], -1)
    weight = _loss_weight(split)
    if weight is None:
        return err.mean(1)
    weight = weight.reshape(out.shape[0], -1)
    return (err * weight).sum(1) / weight.sum(1).clamp_min(1)


def _loss_weight(split: Split) -> torch.Tensor | None:
    weight = split.y_mask
    if split.metric == "mse_missing" and split.x_mask is not None and split.x_mask.shape == split.y.shape:
        missing = 1.0 - split.x_mask
        weight = missing if weight is None else weight * missing
    return weight


def supervised_loss(out: torch.Tensor, split: Split, spec: DataSpec) -> torch.Tensor:
    """Cross-entropy for class labels, (masked) MSE for float targets.

    A split scored by ``"mse_missing"`` (masked prediction) is trained on exactly that: the MSE
    over the entries hidden from the input (``x_mask == 0``), as a masked autoencoder is.
    """
    if spec.is_classification:
        return F.cross_entropy(out, split.y)
    err = (out - split.y) ** 2
    weight = _loss_weight(split)
    if weight is None:
        return err.mean()
    return (err * weight).sum() / weight.sum().clamp_min(1)


class Callback:
    """Hooks of ``train_backprop`` (module docstring); every default does nothing."""

    def on_fit_start(self, model: "BackpropModel", train: Split, val: Split | None) -> None:
        """Before the first epoch; ``train``/``val`` are the carved parts of the split."""

    def penalty(self, model: "BackpropModel", batch: Split) -> torch.Tensor | None:
        """A differentiable scalar added to the training loss of ``batch`` (``None``: nothing)."""
        return None

    def on_step_end(self, model: "BackpropModel", step: int, batch: Split, loss: torch.Tensor) -> None:
        """After optimiser step ``step`` (0-based, counted over the fit) on ``batch``; ``loss``
        is the batch's detached training loss."""

    def on_epoch_end(self, model: "BackpropModel", epoch: int, history: dict[str, list[float]]) -> None:
        """After epoch ``epoch`` (0-based) and its validation; the model is in eval mode."""

    def on_fit_end(self, model: "BackpropModel") -> None:
        """After the selected weights are restored."""

    def selectable(self, model: "BackpropModel", epoch: int, history: dict[str, list[float]]) -> bool:
        """After epoch ``epoch``'s validation (eval mode, before ``on_epoch_end``): whether its
        weights may be the ones ``restore`` keeps (default: yes)."""
        return True


class EpochEnd(Callback):
    """A plain function ``fn(model, epoch, history)`` as an ``on_epoch_end`` observer."""

    def __init__(self, fn: Any):
        if not callable(fn):
            raise ValueError(f"fn: expected a callable, got {type(fn).__name__}")
        self.fn = fn

    def on_epoch_end(self, model, epoch, history):
        self.fn(model, epoch, history)


class BackpropModel(Model):
    """A model trained end-to-end by backprop with ``train_backprop``.

    Subclasses implement ``_build`` (creating ``self.net``) and ``_forward(x, x_mask)`` that
    returns ``(N, *y_shape)`` regression outputs or ``(N, n_classes)`` logits.
    """

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def training_callbacks(self) -> list[Callback]:
        """The model's own callbacks, run before the user's (default: the EWC penalty when
        ``ewc_lambda > 0``; a subclass that adds its own extends this list)."""
        if not getattr(self.config, "ewc_lambda", 0.0):
            return []
        if getattr(self, "_ewc", None) is None:
            self._ewc = EWC(self.config.ewc_lambda, samples=self.config.ewc_samples)
        return [self._ewc]

    def _reset(self) -> None:
        super()._reset()
        self._ewc = None  # a fresh fit forgets earlier stages' Fisher information and anchors

    def _loss(self, batch: Split) -> torch.Tensor:
        """Training objective on one batch (default: the supervised loss of ``_forward``).

        Override for another objective (e.g. a VAE's ELBO). Early stopping always uses the
        supervised loss of the eval-mode ``_forward``, the quantity the model is scored by.
        """
        return supervised_loss(self._forward(batch.x, batch.x_mask), batch, self.spec)

    def _fit(self, split: Split) -> None:
        train_backprop(self, split)

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        outs = []
        for start in range(0, x.shape[0], 1024):
            m = None if x_mask is None else x_mask[start : start + 1024]
            outs.append(self._forward(x[start : start + 1024], m))
        out = torch.cat(outs)
        return out.argmax(-1) if self.spec.is_classification else out


def _is_riemannian(p: torch.Tensor) -> bool:
    manifold = getattr(p, "manifold", None)  # a geoopt.ManifoldParameter
    return manifold is not None and type(manifold).__name__ != "Euclidean" and p.requires_grad


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adam (weight decay as an L2 term of the gradient) or AdamW (decoupled decay).

    When a trainable parameter lives on a manifold (a ``geoopt.ManifoldParameter``, e.g. RSGN's
    node positions in the Poincaré ball), "adam" is geoopt's ``RiemannianAdam``: the same Adam
    for the Euclidean parameters, Riemannian gradients and retractions on the manifold ones,
    which get no weight decay (an L2 pull in ball coordinates has no geometric meaning)."""
    params = list(params)
    manifold = [p for p in params if _is_riemannian(p)]
    if manifold:
        if cfg.optimizer != "adam":
            raise ValueError(f"optimizer: {cfg.optimizer!r} has no Riemannian form; a model with manifold "
                             f"parameters trains with 'adam' (geoopt's RiemannianAdam)")
        import geoopt

        ids = {id(p) for p in manifold}
        groups = [{"params": [p for p in params if id(p) not in ids], "weight_decay": cfg.weight_decay},
                  {"params": manifold, "weight_decay": 0.0}]
        return geoopt.optim.RiemannianAdam(groups, lr=cfg.lr)
    cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    return cls(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def epoch_lr(cfg: TrainConfig, epoch: int) -> float:
    """Learning rate during ``epoch`` (0-based): constant, or cosine-annealed from ``lr`` toward 0
    over ``epochs`` epochs (PyTorch's ``CosineAnnealingLR`` with ``eta_min=0``, stepped per epoch)."""
    if cfg.schedule == "constant":
        return cfg.lr
    return cfg.lr * 0.5 * (1.0 + math.cos(math.pi * epoch / cfg.epochs))


def _check_callbacks(callbacks: Iterable[Any]) -> list[Callback]:
    out = list(callbacks)
    for cb in out:
        if not isinstance(cb, Callback):
            raise ValueError(f"callbacks: expected hebbnets.training.Callback instances (wrap a function with "
                             f"EpochEnd), got {type(cb).__name__}")
    return out


def train_backprop(model: BackpropModel, split: Split, callbacks: Iterable[Callback] = ()) -> dict[str, list[float]]:
    """Train ``model`` on ``split`` (see the module docstring); returns the history: per epoch the
    mean training loss, the learning rate, the largest pre-clipping gradient norm, and with a
    validation set its loss (and accuracy for classification). Also kept as ``model.train_history``.

    Callbacks run in this order: ``model.training_callbacks()``, ``model.callbacks`` (if set),
    then ``callbacks``.
    """
    cfg: TrainConfig = model.config
    spec = model.spec
    if cfg.restore == "best_val_accuracy" and not spec.is_classification:
        raise ValueError("restore: 'best_val_accuracy' needs a classification task (integer targets)")
    hooks = _check_callbacks([*model.training_callbacks(), *getattr(model, "callbacks", ()), *callbacks])
    gen = torch.Generator().manual_seed(model.seed)
    tr_idx, va_idx = carve_validation(len(split), cfg.val_fraction, gen)
    train, val = split.subset(tr_idx), (split.subset(va_idx) if len(va_idx) else None)
    opt = make_optimizer(model.parameters(), cfg)
    best, best_state, stale = math.inf, None, 0
    history: dict[str, list[float]] = {"train": [], "val": [], "lr": [], "grad_norm": [], "selectable": []}
    if spec.is_classification:
        history["val_accuracy"] = []
    model.train_history = history
    model.selected_epoch = None
    for cb in hooks:
        cb.on_fit_start(model, train, val)
    # graph breaks are allowed (an RSGN step searches its kNN sparks on the CPU, and branches on data)
    loss_fn = torch.compile(model._loss) if getattr(cfg, "compile", False) else model._loss
    step = 0
    bar = tqdm(range(cfg.epochs), desc=f"{model.name} fit", disable=not cfg.progress or None, leave=False)
    for epoch in bar:
        lr = epoch_lr(cfg, epoch)
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        perm = torch.randperm(len(train), generator=gen, device=gen.device)
        total, max_norm = 0.0, 0.0
        for start in range(0, len(train), cfg.batch_size):
            batch = train.subset(perm[start : start + cfg.batch_size])
            loss = loss_fn(batch)
            for cb in hooks:
                extra = cb.penalty(model, batch)
                if extra is not None:
                    loss = loss + extra
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip > 0:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                max_norm = max(max_norm, float(norm))
            opt.step()
            loss = loss.detach()
            for cb in hooks:
                cb.on_step_end(model, step, batch, loss)
            step += 1
            total += float(loss) * len(batch)
        history["train"].append(total / len(train))
        history["lr"].append(lr)
        history["grad_norm"].append(max_norm if cfg.grad_clip > 0 else math.nan)
        model.eval()
        stop = False
        if val is not None:
            with torch.no_grad():
                out = model._forward(val.x, val.x_mask)
                v = float(supervised_loss(out, val, spec))
            history["val"].append(v)
            bar.set_postfix(train=f"{history['train'][-1]:.4g}", val=f"{v:.4g}")
            if spec.is_classification:
                history["val_accuracy"].append(float((out.argmax(-1) == val.y).float().mean()))
            ok = all([cb.selectable(model, epoch, history) for cb in hooks])  # every hook is asked
            history["selectable"].append(float(ok))
            if cfg.restore != "last":
                # lower is better: the loss, or minus the accuracy (strict: the first best epoch wins)
                score = v if cfg.restore == "best_val_loss" else -history["val_accuracy"][-1]
                if ok and score < best - 1e-12:
                    best, stale = score, 0
                    best_state = copy.deepcopy(model.state_dict())
                    model.selected_epoch = epoch
                elif best_state is not None:
                    stale += 1
                    stop = stale >= cfg.patience
        for cb in hooks:
            cb.on_epoch_end(model, epoch, history)
        if stop:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    for cb in hooks:
        cb.on_fit_end(model)
    return history


# -- elastic weight consolidation ------------------------------------------------------------------
# EWC (Kirkpatrick et al., PNAS 2017), the standard continual-learning remedy for backprop and the
# loop's own regulariser (``TrainConfig.ewc_lambda``): after a stage (one ``fit`` or
# ``partial_fit``) keep the weights ``theta*`` and the diagonal of the Fisher information ``F`` on
# that stage's data; every later stage adds, per finished stage,
#
#     lambda/2 sum_i F_i (theta_i - theta*_i)^2
#
# to its training loss, so the weights that mattered for earlier stages are held near their old
# values. It lives here, not beside the baselines, because every ``BackpropModel`` (RSGN, LISTA
# and ``vn_applied_set`` too) attaches it from its config: ``ewc_lambda > 0`` makes
# ``BackpropModel.training_callbacks`` build an ``EWC`` callback, kept across ``partial_fit``
# calls and dropped by a fresh ``fit``.
#
# The Fisher is the expected squared gradient of the per-sample log-likelihood, with the label drawn
# from the model's own predictive distribution (``kind="sampled"``, the paper's choice; one draw per
# sample): a categorical over the logits for classification, a unit-variance Gaussian around the
# output for regression. The log-likelihood is the model's supervised training loss
# (``supervised_loss``), so ``lambda`` is on the scale of that loss. ``kind="empirical"`` uses the
# observed labels instead. The Fisher and anchors live in the callback, not in checkpoints.
FISHER_KINDS = ("sampled", "empirical")


def trainable_parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``{name: parameter}`` of the parameters trained by gradients (``requires_grad``)."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def _sampled_labels(out: torch.Tensor, batch: Split, classification: bool, gen: torch.Generator) -> torch.Tensor:
    """Labels drawn from the model's predictive distribution at outputs ``out``."""
    out = out.detach()
    if classification:
        probs = torch.softmax(out, dim=-1)  # (B, C)
        return torch.multinomial(probs, 1, generator=gen).squeeze(-1)  # (B,)
    return out + torch.randn(out.shape, generator=gen, dtype=out.dtype, device=gen.device).to(out.device)


@torch.no_grad()
def diagonal_fisher(model: BackpropModel, split: Split, kind: str = "sampled", max_samples: int | None = None,
                    seed: int = 0) -> dict[str, torch.Tensor]:
    """Diagonal Fisher information of ``model`` at its current weights on ``split``.

    ``F_i = mean_n (d loss_n / d theta_i)^2`` with ``loss_n`` the supervised loss of sample ``n``
    alone (see module docstring), computed one sample at a time (a squared batch gradient would
    be a different, wrong quantity). The model is evaluated in eval mode.

    Args:
        model: a fitted ``BackpropModel``.
        split: ``(N, ...)`` samples (the stage's training data).
        kind: ``"sampled"`` (labels from the model) or ``"empirical"`` (``split.y``).
        max_samples: use a seeded random subset of at most this many samples (``None``: all).
        seed: seeds the subset and the sampled labels.

    Returns:
        ``{parameter name: (same shape as the parameter)}`` for every trainable parameter.
    """
    check_choice(kind, FISHER_KINDS, "kind")
    if not isinstance(split, Split) or len(split) == 0:
        raise ValueError("split: expected a non-empty hebbnets.Split")
    spec = model.require_built()
    gen = torch.Generator().manual_seed(seed)
    index = torch.arange(len(split))
    if max_samples is not None and max_samples < len(split):
        index = torch.randperm(len(split), generator=gen, device=gen.device)[:max_samples]
    params = trainable_parameters(model)
    fisher = {n: torch.zeros_like(p) for n, p in params.items()}
    was_training = model.training
    model.eval()
    try:
        for i in index.tolist():
            one = split.subset(torch.tensor([i]))
            with torch.enable_grad():
                out = model._forward(one.x, one.x_mask)
                if kind == "sampled":
                    one = Split(one.x, _sampled_labels(out, one, spec.is_classification, gen), one.x_mask,
                                one.y_mask, one.metric)
                loss = supervised_loss(out, one, spec)
                grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
            for (n, _), g in zip(params.items(), grads):
                if g is not None:
                    fisher[n] += g**2
    finally:
        model.train(was_training)
    return {n: f / len(index) for n, f in fisher.items()}


def ewc_penalty(params: dict[str, torch.Tensor], anchors: dict[str, torch.Tensor],
                fisher: dict[str, torch.Tensor], lam: float) -> torch.Tensor:
    """``lam/2 sum_i F_i (theta_i - theta*_i)^2`` summed over the parameters named in ``fisher``.

    Args:
        params: ``{name: theta}`` current parameters (differentiable).
        anchors: ``{name: theta*}`` and fisher: ``{name: F}``, each shaped like ``params[name]``.
        lam: the penalty's weight (>= 0).
    """
    check_positive(lam, "lam", allow_zero=True)
    missing = sorted(set(fisher) - set(params))
    if missing:
        raise ValueError(f"params: no parameter(s) {missing} named in fisher")
    total = None
    for name, f in fisher.items():
        term = (f * (params[name] - anchors[name]) ** 2).sum()
        total = term if total is None else total + term
    if total is None:
        raise ValueError("fisher: is empty")
    return 0.5 * lam * total


class EWC(Callback):
    """The EWC penalty as a training callback (``BackpropModel.training_callbacks`` attaches one
    when ``ewc_lambda > 0``; any ``train_backprop`` call may be given one).

    ``on_fit_end`` stores the weights and their diagonal Fisher on the fit's training part;
    ``penalty`` adds one quadratic term per stored stage to every later fit's training loss.

    Args:
        lam: weight of the penalty (> 0).
        samples: at most this many training samples per Fisher estimate.
        kind: ``"sampled"`` or ``"empirical"`` (see ``diagonal_fisher``).
    """

    def __init__(self, lam: float, samples: int = 1024, kind: str = "sampled"):
        check_positive(lam, "lam")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples: expected an int >= 1, got {samples!r}")
        check_choice(kind, FISHER_KINDS, "kind")
        self.lam, self.samples, self.kind = float(lam), samples, kind
        self.stages: list[tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]] = []  # (anchors, fisher)
        self._train: Split | None = None

    def on_fit_start(self, model, train, val):
        self._train = train

    def penalty(self, model, batch):
        if not self.stages:
            return None
        params = trainable_parameters(model)
        return sum(ewc_penalty(params, anchors, fisher, self.lam) for anchors, fisher in self.stages)

    def on_fit_end(self, model):
        anchors = {n: p.detach().clone() for n, p in trainable_parameters(model).items()}
        fisher = diagonal_fisher(model, self._train, self.kind, self.samples, seed=model.seed + len(self.stages))
        self.stages.append((anchors, fisher))
        self._train = None
