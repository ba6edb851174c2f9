"""Entanglement and reuse: does learning one behaviour touch the weights of another?

Vector Networks claim limited weight entanglement: Atomic-Hebb changes only the atoms active
for a sample, so two behaviours that use different atoms do not interfere, and an atom that
serves a factor is reused wherever the factor occurs. These functions measure it on a fitted
model and plain splits (factor labels from a task's ``info["factor_labels"]``); they return
plain tensors and dicts.

* ``update_overlap(model, a, b)``: for a ``VectorNetwork``, per layer the overlap of the atoms
  the two behaviours use (Jaccard of the sets, and of the usage frequencies) and the cosine
  between their summed Atomic-Hebb updates of ``S`` and ``U``; for a backprop model, per layer
  the cosine between the two behaviours' loss gradients. Cosine 0: the updates touch orthogonal
  (for VN, typically disjoint) weights; 1: the same direction.
* ``atom_reuse(model, split, factor_labels)`` / ``atom_usage(codes, factor_labels)``: the
  atom-by-factor usage matrix, atoms per factor, and how consistently each factor's atoms are
  used in every combination that contains the factor.
* ``sparsity(model, split)`` / ``code_sparsity(codes)``: active atoms per sample per layer.

Codes are inferred as at prediction (input only) for usage and sparsity, and as in training
(target clamped) for update overlap, which is about learning.
"""
from __future__ import annotations

import copy
from typing import Any

import torch

from ._split import Split
from .training import BackpropModel, supervised_loss
from .vn.network import VectorNetwork



def _check_split(split: Any, name: str) -> Split:
    if not isinstance(split, Split) or len(split) == 0:
        raise ValueError(f"{name}: expected a non-empty hebbnets.Split")
    return split


def _check_vn(model: Any) -> VectorNetwork:
    if not isinstance(model, VectorNetwork):
        raise ValueError(f"model: expected a fitted VectorNetwork, got {type(model).__name__}")
    model.require_built()
    return model


def vn_codes(model: VectorNetwork, split: Split, clamp_targets: bool = False) -> list[torch.Tensor]:
    """Per layer the inferred codes ``(N, K_l)`` of ``split``: as at prediction (input and its
    mask only) or, with ``clamp_targets``, as in training (target clamped at the top)."""
    model = _check_vn(model)
    _check_split(split, "split")
    parts = [inf.codes for _, inf in model.iter_inference(split, clamp_targets)]
    return [torch.cat([p[l] for p in parts]) for l in range(len(model.layers))]


# --- sparsity ---------------------------------------------------------------------------------------
def code_sparsity(codes: torch.Tensor) -> dict[str, Any]:
    """Active (non-zero) atoms per sample of codes ``(N, K)``: ``active_per_sample`` ``(N,)``
    and its ``mean``, ``median``, ``min``, ``max``, ``fraction`` (mean / K), ``histogram``
    ``(K + 1,)`` (samples with 0..K active atoms), ``atoms`` (K)."""
    if codes.ndim != 2 or codes.shape[0] == 0:
        raise ValueError(f"codes: expected a non-empty (N, K) tensor, got shape {tuple(codes.shape)}")
    active = (codes != 0).sum(1)  # (N,)
    k = codes.shape[1]
    return {"active_per_sample": active, "mean": float(active.double().mean()), "median": float(active.median()),
            "min": int(active.min()), "max": int(active.max()), "fraction": float(active.double().mean()) / k,
            "histogram": torch.bincount(active, minlength=k + 1), "atoms": k}


def sparsity(model: VectorNetwork, split: Split) -> list[dict[str, Any]]:
    """``code_sparsity`` of every layer's prediction-time codes on ``split``."""
    return [code_sparsity(g) for g in vn_codes(model, split)]


# --- atom reuse ----------------------------------------------------------------------------------------
def _check_labels(labels: Any, n: int, name: str = "factor_labels") -> torch.Tensor:
    if not isinstance(labels, torch.Tensor) or labels.ndim != 2 or labels.shape[0] != n:
        raise ValueError(f"{name}: expected a (N={n}, F) tensor of 0/1 factor indicators")
    if labels.dtype != torch.bool:
        if not bool(((labels == 0) | (labels == 1)).all()):
            raise ValueError(f"{name}: entries must be 0 or 1 (bool)")
        labels = labels.bool()
    return labels


def _used(share: torch.Tensor, threshold: float) -> torch.Tensor:
    """Active in at least ``threshold`` of the samples (in any, for 0)."""
    return share >= threshold if threshold > 0 else share > 0


def atom_usage(codes: torch.Tensor, factor_labels: torch.Tensor, groups: torch.Tensor | None = None,
               threshold: float = 0.05) -> dict[str, torch.Tensor]:
    """Which atoms serve which factor, from codes and the factors each sample contains.

    An atom is *used* by a set of samples when it is non-zero in at least ``threshold`` of them.
    A *combination* is a group of samples with the same factors (or the ids in ``groups``). An
    atom is *specific* to factor ``f`` when it is used by some combination containing ``f`` and
    by none without ``f``; the *reuse* of ``f`` is the mean, over its specific atoms, of the
    share of ``f``'s combinations that use the atom: 1 when each of ``f``'s atoms serves it in
    every combination (e.g. the sin atoms in every sum that contains sin), low when every
    combination has atoms of its own (a look-up table).

    Args:
        codes: ``(N, K)`` codes of one layer.
        factor_labels: ``(N, F)`` bool, the factors sample ``n`` contains.
        groups: optional ``(N,)`` combination ids (default: the distinct rows of ``factor_labels``).
        threshold: share of samples in ``[0, 1)`` from which on an atom counts as used (0: any use).

    Returns:
        ``by_factor`` ``(K, F)``: share of the samples containing ``f`` in which atom ``k`` is
        active (the atom-by-factor usage matrix); ``by_combination`` ``(K, C)``;
        ``combinations`` ``(C, F)`` bool; ``atoms_per_factor`` ``(F,)``: atoms used by the
        samples containing ``f``; ``specific`` ``(K, F)`` bool; ``reuse`` ``(F,)`` (NaN where
        ``f`` has no specific atom or occurs in fewer than two combinations).
    """
    if codes.ndim != 2 or codes.shape[0] == 0:
        raise ValueError(f"codes: expected a non-empty (N, K) tensor, got shape {tuple(codes.shape)}")
    labels = _check_labels(factor_labels, codes.shape[0])
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold: must be in [0, 1), got {threshold!r}")
    if groups is None:
        combos, groups = torch.unique(labels, dim=0, return_inverse=True)  # (C, F), (N,)
    else:
        if groups.shape != (codes.shape[0],) or groups.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"groups: expected (N={codes.shape[0]},) integer combination ids")
        uniq, groups = torch.unique(groups, return_inverse=True)
        # the factors of each combination (any of its samples)
        combos = torch.zeros(len(uniq), labels.shape[1], device=labels.device).index_add_(0, groups, labels.float()) > 0
    active = (codes != 0).double()  # (N, K)

    def share(member: torch.Tensor) -> torch.Tensor:  # (N, G) 0/1 -> (K, G) share of members active
        member = member.double()
        return (active.T @ member) / member.sum(0).clamp_min(1)

    by_factor = share(labels)  # (K, F)
    by_combo = share(torch.nn.functional.one_hot(groups, len(combos)))  # (K, C)
    used = _used(by_combo, threshold)  # (K, C)
    has = combos.T  # (F, C) combination contains factor
    used_with = (used.double() @ has.double().T) > 0  # (K, F) used by a combination with f
    used_without = (used.double() @ (~has).double().T) > 0  # (K, F) used by a combination without f
    specific = used_with & ~used_without
    n_with = has.sum(1)  # (F,) combinations containing f
    served = (used.double() @ has.double().T) / n_with.clamp_min(1)  # (K, F) share of f's combinations using k
    reuse = (served * specific).sum(0) / specific.sum(0).clamp_min(1)
    reuse = torch.where((specific.sum(0) > 0) & (n_with >= 2), reuse, torch.nan)
    per_factor = _used(by_factor, threshold)
    return {"by_factor": by_factor, "by_combination": by_combo, "combinations": combos,
            "atoms_per_factor": per_factor.sum(0), "specific": specific, "reuse": reuse}


def atom_reuse(model: VectorNetwork, split: Split, factor_labels: torch.Tensor, layer: int = 0,
               groups: torch.Tensor | None = None, threshold: float = 0.05) -> dict[str, torch.Tensor]:
    """``atom_usage`` of layer ``layer``'s prediction-time codes on ``split``."""
    codes = vn_codes(model, split)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(codes):
        raise ValueError(f"layer: expected an int in [0, {len(codes) - 1}], got {layer!r}")
    return atom_usage(codes[layer], factor_labels, groups, threshold)


# --- update overlap -------------------------------------------------------------------------------------
def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.flatten().double(), b.flatten().double()
    denom = float(a.norm() * b.norm())
    return float(a @ b) / denom if denom > 0 else float("nan")


def vn_updates(model: VectorNetwork, split: Split) -> tuple[list[dict[str, torch.Tensor]], list[torch.Tensor]]:
    """The Atomic-Hebb update ``split`` would make, summed over its samples, and its usage.

    Codes are inferred with the target clamped (as in training) by the current atoms; the
    model is not changed (the rule runs on a copy). Returns per layer ``{"S": (n, K), "U": (m, K)}``
    (the raw updates before the norm policy) and per layer the share of samples in which each
    atom is active ``(K,)``.
    """
    model = _check_vn(model)
    _check_split(split, "split")
    total: list[dict[str, torch.Tensor]] | None = None
    usage = [torch.zeros(layer.num_atoms, dtype=torch.float64) for layer in model.layers]
    for n, inf in model.iter_inference(split, clamp_targets=True):
        upd = copy.deepcopy(model).atomic_hebb(inf)  # a batch mean; weighted back to a sum
        upd = [{k: v.double() * n for k, v in u.items()} for u in upd]
        total = upd if total is None else [{k: t[k] + u[k] for k in t} for t, u in zip(total, upd)]
        for l, g in enumerate(inf.codes):
            usage[l] += (g != 0).sum(0).double()
    return total, [u / len(split) for u in usage]


def _vn_overlap(model: VectorNetwork, a: Split, b: Split, threshold: float) -> dict[str, dict[str, float]]:
    (upd_a, use_a), (upd_b, use_b) = vn_updates(model, a), vn_updates(model, b)
    out = {}
    for l in range(len(model.layers)):
        set_a, set_b = _used(use_a[l], threshold), _used(use_b[l], threshold)
        union = int((set_a | set_b).sum())
        both = torch.cat([upd_a[l]["S"].flatten(), upd_a[l]["U"].flatten()]), torch.cat(
            [upd_b[l]["S"].flatten(), upd_b[l]["U"].flatten()])
        mx = float(torch.maximum(use_a[l], use_b[l]).sum())
        out[f"layer{l}"] = {
            "jaccard": int((set_a & set_b).sum()) / union if union else float("nan"),
            "weighted_jaccard": float(torch.minimum(use_a[l], use_b[l]).sum()) / mx if mx else float("nan"),
            "atoms_a": int(set_a.sum()), "atoms_b": int(set_b.sum()),
            "cosine_S": _cosine(upd_a[l]["S"], upd_b[l]["S"]), "cosine_U": _cosine(upd_a[l]["U"], upd_b[l]["U"]),
            "cosine": _cosine(*both),
        }
    return out


def loss_gradients(model: BackpropModel, split: Split) -> dict[str, torch.Tensor]:
    """Gradient of the supervised loss over all of ``split`` (eval mode) for every trainable
    parameter: ``{name: (parameter shape)}``; the model is not changed."""
    spec = model.require_built()
    _check_split(split, "split")
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            loss = supervised_loss(model._forward(split.x, split.x_mask), split, spec)
            grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    finally:
        model.train(was_training)
    return {n: torch.zeros_like(p) if g is None else g for (n, p), g in zip(params.items(), grads)}


def _layer_of(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def _gradient_overlap(model: BackpropModel, a: Split, b: Split) -> dict[str, dict[str, float]]:
    ga, gb = loss_gradients(model, a), loss_gradients(model, b)
    layers: dict[str, list[str]] = {}
    for name in ga:
        layers.setdefault(_layer_of(name), []).append(name)
    return {layer: {"cosine": _cosine(torch.cat([ga[n].flatten() for n in names]),
                                      torch.cat([gb[n].flatten() for n in names]))}
            for layer, names in layers.items()}


def update_overlap(model: VectorNetwork | BackpropModel, split_a: Split, split_b: Split,
                   threshold: float = 0.0) -> dict[str, dict[str, float]]:
    """How much learning behaviour ``a`` and behaviour ``b`` touch the same weights.

    Args:
        model: a fitted ``VectorNetwork`` or backprop model.
        split_a, split_b: the two behaviours' samples.
        threshold: VN only: an atom belongs to a behaviour's active set when it is active in
            at least this share of its samples (0: in any sample).

    Returns:
        ``{layer: measures}``. VN (``"layer0"``, ...): ``jaccard`` (of the active sets),
        ``weighted_jaccard`` (``sum min(p_a, p_b) / sum max(p_a, p_b)`` of the per-atom usage
        shares, threshold-free), ``atoms_a``, ``atoms_b``, and the cosines between the summed
        Atomic-Hebb updates: ``cosine_S``, ``cosine_U``, ``cosine`` (both together). Backprop
        (one entry per module that owns parameters, e.g. ``"net.0"``): ``cosine`` between the
        loss gradients of the two behaviours. A cosine is NaN when an update is exactly zero.
    """
    _check_split(split_a, "split_a")
    _check_split(split_b, "split_b")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold: must be in [0, 1), got {threshold!r}")
    if isinstance(model, VectorNetwork):
        return _vn_overlap(model, split_a, split_b, threshold)
    if isinstance(model, BackpropModel):
        return _gradient_overlap(model, split_a, split_b)
    raise ValueError(f"model: expected a VectorNetwork or a backprop model, got {type(model).__name__}")


__all__ = ["atom_reuse", "atom_usage", "code_sparsity", "loss_gradients", "sparsity", "update_overlap",
           "vn_codes", "vn_updates"]
