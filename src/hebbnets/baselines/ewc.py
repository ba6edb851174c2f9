"""Elastic weight consolidation (EWC; Kirkpatrick et al., PNAS 2017) for any backprop model.

The standard continual-learning remedy for backprop: after a stage (one ``fit`` or
``partial_fit``) keep the weights ``theta*`` and the diagonal of the Fisher information ``F`` on
that stage's data; every later stage adds, per finished stage,

    lambda/2 sum_i F_i (theta_i - theta*_i)^2

to its training loss, so the weights that mattered for earlier stages are held near their old
values. Any ``BackpropModel`` uses it through its config: ``ewc_lambda > 0`` makes
``BackpropModel.training_callbacks`` add an ``EWC`` callback (kept across ``partial_fit`` calls,
dropped by a fresh ``fit``).

The Fisher is the expected squared gradient of the per-sample log-likelihood, with the label
drawn from the model's own predictive distribution (``kind="sampled"``, the paper's choice; one
draw per sample): a categorical over the logits for classification, a unit-variance Gaussian
around the output for regression. The log-likelihood is the model's supervised training loss
(``hebbnets.training.supervised_loss``: mean squared error over the target's entries, or
cross-entropy), so ``lambda`` is on the scale of that loss. ``kind="empirical"`` uses the
observed labels instead. The Fisher and anchors live in the callback, not in checkpoints.
"""
from __future__ import annotations

import torch

from .._split import Split
from .._validation import check_choice, check_positive
from ..training import BackpropModel, Callback, supervised_loss

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
    return out + torch.randn(out.shape, generator=gen, dtype=out.dtype)


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
    spec = model._require_built()
    gen = torch.Generator().manual_seed(seed)
    index = torch.arange(len(split))
    if max_samples is not None and max_samples < len(split):
        index = torch.randperm(len(split), generator=gen)[:max_samples]
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
    """The EWC penalty as a ``hebbnets.training`` callback.

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


__all__ = ["EWC", "diagonal_fisher", "ewc_penalty", "trainable_parameters"]
