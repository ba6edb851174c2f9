"""Where the sparse RSGN's gradient goes, step by step (issue 30: why one propagation step beats five).

``gradient_flow(model, train, test)`` runs the fitted model's sparse forward on a batch with the
autograd graph kept (``RSGN.propagate(..., states=...)``) and, per step ``s = 0..S`` (0 = ignition),
measures:

* ``active``: the fraction of (sample, node) pairs in the readout at that step;
* ``grad_state``: ``||dL/dh_s||_F / B``, the gradient of the mean cross-entropy reaching the
  step's node states (the states after the activity scaling, the ones the readout and the next
  step read);
* ``grad_rows``: the fraction of the step's active rows whose state gradient is non-zero;
* ``grad_alpha``: ``||dL/dalpha_s|| / B``, the gradient reaching the step's activities;
* ``readout_share``: the step's part of the readout's total activity ``sum alpha_s / sum_s' alpha_s'``
  (the readout is activity-weighted, so this is how much of it comes from step ``s``);
* ``gate_slope``: for ``s >= 1``, the mean of ``g (1 - g) / T`` over the candidates that fired
  (``d alpha / d z`` through the soft threshold, what the annealed ``T`` scales);
* ``cut``: for ``s >= 1``, the fraction of candidates (receivers and active nodes) that the hard
  floor, inhibition and the cap set to exactly 0 (no gradient reaches them);
* ``probe``: test accuracy of a logistic-regression probe on the step's pooled state
  ``sum_i alpha_i h_i / sum_i alpha_i`` (fitted on ``train``), the class information the step holds.

Each is measured at the model's own temperature and, for comparison, at every temperature in
``temperatures`` (the graph and weights unchanged; the temperature is put back afterwards).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .._split import Split


def _pooled(states: list[dict[str, Any]], n_samples: int, n_nodes: int) -> list[np.ndarray]:
    out = []
    for st in states:
        b = st["idx"] // n_nodes
        num = torch.zeros(n_samples, st["h"].shape[1], dtype=st["h"].dtype, device=st["h"].device)
        num = num.index_add(0, b, st["alpha"][:, None] * st["h"])
        den = torch.zeros(n_samples, dtype=st["h"].dtype, device=st["h"].device).index_add(0, b, st["alpha"])
        out.append((num / (den[:, None] + 1e-6)).detach().cpu().double().numpy())
    return out


def _forward_states(model: Any, split: Split) -> tuple[torch.Tensor, list[dict[str, Any]]]:
    w = model.embed.weight  # the model's device and floating dtype
    x = split.x.to(w)
    mask = None if split.x_mask is None else split.x_mask.to(w)
    states: list[dict[str, Any]] = []
    readout, _ = model.propagate(model.tokens(x, mask), "sparse", states=states)
    return model.head(readout), states


def _flow(model: Any, split: Split) -> dict[str, list[float]]:
    n, B = model.config.n_nodes, len(split)
    logits, states = _forward_states(model, split)
    loss = F.cross_entropy(logits, split.y.to(logits.device))
    leaves = [st["h"] for st in states] + [st["alpha"] for st in states]
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    S = len(states)
    g_h, g_a = grads[:S], grads[S:]
    total = sum(float(st["alpha"].detach().sum()) for st in states) or math.nan
    out: dict[str, list[float]] = {k: [] for k in ("active", "grad_state", "grad_rows", "grad_alpha", "readout_share",
                                                  "gate_slope", "cut")}
    T = float(model.temperature)
    for s, st in enumerate(states):
        rows = st["h"].shape[0]
        gh = torch.zeros_like(st["h"]) if g_h[s] is None else g_h[s]
        ga = torch.zeros_like(st["alpha"]) if g_a[s] is None else g_a[s]
        out["active"].append(rows / (B * n))
        out["grad_state"].append(float(gh.norm()) / B)
        out["grad_rows"].append(float((gh.abs().sum(1) > 0).float().mean()) if rows else math.nan)
        out["grad_alpha"].append(float(ga.norm()) / B)
        out["readout_share"].append(float(st["alpha"].detach().sum()) / total)
        gate = st["gate"]
        if gate is None:
            out["gate_slope"].append(math.nan)
            out["cut"].append(math.nan)
            continue
        fired = gate >= model.config.floor
        out["gate_slope"].append(float((gate * (1 - gate) / T)[fired].mean()) if bool(fired.any()) else math.nan)
        out["cut"].append(1.0 - rows / max(1, gate.shape[0]))
    return out


def _probe(model: Any, train: Split, test: Split) -> list[float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n = model.config.n_nodes
    with torch.no_grad():
        _, st_tr = _forward_states(model, train)
        _, st_te = _forward_states(model, test)
    acc = []
    y_tr, y_te = train.y.cpu().numpy(), test.y.cpu().numpy()
    for z_tr, z_te in zip(_pooled(st_tr, len(train), n), _pooled(st_te, len(test), n)):
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
        clf.fit(z_tr, y_tr)
        acc.append(float((clf.predict(z_te) == y_te).mean()))
    return acc


def gradient_flow(model: Any, train: Split, test: Split, *, temperatures: tuple[float, ...] = (),
                  max_samples: int = 512) -> dict[str, Any]:
    """Per-step gradient flow, readout shares and probe accuracy of a fitted sparse RSGN (module
    docstring).

    Args:
        model: a fitted ``RSGN`` on a classification task.
        train: split the probes are fitted on (its first ``max_samples`` samples).
        test: split everything is measured on (its first ``max_samples`` samples).
        temperatures: extra soft-threshold temperatures to measure at (besides the model's).
        max_samples: samples used from each split (> 0).
    Returns:
        ``{"temperature": T, "steps": S + 1, "at_model": {measure: [S + 1 values]},
        "probe": [S + 1 accuracies], "at": {str(T'): {measure: [...]}}}``.
    """
    spec = model.require_built()
    if not spec.is_classification:
        raise ValueError("model: gradient_flow measures a classification model (cross-entropy)")
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples <= 0:
        raise ValueError(f"max_samples: expected an int > 0, got {max_samples!r}")
    for t in temperatures:
        if not (isinstance(t, (int, float)) and t > 0 and math.isfinite(t)):
            raise ValueError(f"temperatures: every temperature must be a finite number > 0, got {t!r}")
    train = train.subset(torch.arange(min(len(train), max_samples)))
    test = test.subset(torch.arange(min(len(test), max_samples)))
    was_training = model.training
    model.eval()
    own = float(model.temperature)
    try:
        result: dict[str, Any] = {"temperature": own, "at_model": _flow(model, test), "probe": _probe(model, train, test),
                                  "at": {}}
        result["steps"] = len(result["probe"])
        for t in temperatures:
            with torch.no_grad():
                model.temperature.fill_(float(t))
            result["at"][f"{float(t):g}"] = _flow(model, test)
    finally:
        with torch.no_grad():
            model.temperature.fill_(own)
        model.train(was_training)
    return result


__all__ = ["gradient_flow"]
