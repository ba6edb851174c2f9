"""Sequence-classification tasks of the RSGN paper, and two that test what it claims.

* ``rsgn_hierarchical`` and ``rsgn_longrange``: the author's notebook generators, re-implemented
  bit-exactly (NumPy legacy ``RandomState``, seed 42, the draw order of docs/rsgn.md
  §4.1-4.2), with the author's split (``RandomState(42).permutation``, 80/20). The author's data
  never depend on the run seed; neither do these (``seed`` is recorded only). ``split="author"``
  gives train = the author's 80 % and ``tests["id"]`` = the author's 20 % validation set (the
  set the paper's "best validation accuracy" is read on); ``split="honest"`` gives train = 85 %
  and a held-out ``tests["id"]`` = 15 % (a model carves its validation set from train, e.g.
  ``val_fraction=0.1765`` for 70/15/15).
* ``rsgn_tree``: every sequence contains each of ``n_motifs`` motifs exactly once, in random
  order at random places, and the class is the ordered pair (first motif, second motif). All
  motifs are permutations of the same token alphabet, so every sample has the same bag of
  tokens: a classifier on the mean (or any order-free pooling) is at chance by construction.
  Solving it needs two levels: token order inside a motif, then motif order in the sequence.
* ``rsgn_xor_range``: a start pattern ``s`` (near the beginning) and an end pattern ``e`` (near
  the end), each one of ``n_patterns``; the class is ``(s + e) mod n_patterns``. Every class
  contains every ``s`` and every ``e`` equally often, so neither end alone nor the mean decides
  it (class-conditional means are identical).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._split import Split
from ._task import Task, check_params, register_task

# --- the author's generators (bit-exact) ---------------------------------------------------


def author_hierarchical(n_samples: int = 5000, seq_len: int = 64, n_features: int = 32,
                        n_classes: int = 20, noise: float = 0.3, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """The notebook's ``generate_hierarchical_data``: ``X (n, seq_len, n_features)`` float32 and
    ``y (n,)`` int64. The legacy RNG draw order is part of the contract (checksum-tested)."""
    rs = np.random.RandomState(seed)  # == np.random.seed(seed) followed by np.random.* calls
    X = rs.randn(n_samples, seq_len, n_features) * noise
    y = rs.randint(0, n_classes, size=n_samples)
    L1 = rs.randn(n_classes, 8, 5, n_features) * 0.15  # 8 local 5-token patterns per class
    L2 = rs.randn(n_classes, 4, n_features) * 0.10  # 4 "quarter markers" per class
    L3 = rs.randn(n_classes, n_features) * 0.08  # global pattern
    quarter = seq_len // 4
    for i in range(n_samples):
        c = y[i]
        for _ in range(rs.randint(2, 5)):
            pos = rs.randint(0, seq_len - 5)
            k = rs.randint(0, 8)
            X[i, pos : pos + 5] += L1[c, k]
        for p in range(4):
            pos = min(quarter * p + rs.randint(0, 8), seq_len - 1)
            X[i, pos] += L2[c, p]
        X[i] += 0.05 * L3[c]
    return X.astype(np.float32), y.astype(np.int64)


def author_longrange(n_samples: int = 3000, seq_len: int = 128, n_features: int = 32,
                     n_classes: int = 10, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """The notebook's ``generate_long_range_data``: fixed begin / end patterns per class."""
    rs = np.random.RandomState(seed)
    X = rs.randn(n_samples, seq_len, n_features) * 0.3
    begin = rs.randn(n_classes, 8, n_features) * 0.5
    end = rs.randn(n_classes, 8, n_features) * 0.5
    y = np.zeros(n_samples, dtype=np.int64)
    for i in range(n_samples):
        c = rs.randint(0, n_classes)
        y[i] = c
        X[i, :8] += begin[c]
        X[i, -8:] += end[c]
    return X.astype(np.float32), y


def author_split(n_samples: int, train_ratio: float = 0.8, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """The notebook's ``create_dataloaders`` split: (train indices, val indices)."""
    perm = np.random.RandomState(seed).permutation(n_samples)
    n_train = int(train_ratio * n_samples)
    return perm[:n_train], perm[n_train:]


# --- model configurations -------------------------------------------------------------------
# The author's configurations (docs/rsgn.md §4.3) for the paper tasks. These were NOT tuned
# on validation data (a reproduction must use the author's settings). Every model gets the
# notebook's ``train_model`` protocol: AdamW (lr 1e-3, weight decay 1e-4), cosine schedule over
# 50 epochs, gradient norm clipped at 1.0, the final model kept. ``transformer`` is the registered
# encoder in the paper's form (no positions, post-LN, ReLU, dropout 0.1, no final norm, mean
# pool): 403,348 / 600,330 parameters; ``sparse_transformer`` 403,348; ``lstm`` 566,292 / 563,722;
# ``mlp`` 281,364 (counts tested in tests/baselines).
PAPER_PROTOCOL = dict(optimizer="adamw", lr=1e-3, weight_decay=1e-4, schedule="cosine", grad_clip=1.0,
                      restore="last")
PAPER_TRANSFORMER = dict(d_model=128, n_heads=4, d_ff=512, dropout=0.1, positions="none", norm_first=False,
                         final_norm=False, activation="relu", readout="pool")


def _paper_configs(n_steps: int, batch_size: int, n_layers: int = 2, pool_sigma: float = 0.0) -> dict[str, dict[str, Any]]:
    common = dict(epochs=50, batch_size=batch_size, val_fraction=0.0, patience=50, **PAPER_PROTOCOL)
    return {
        "transformer": dict(n_layers=n_layers, **PAPER_TRANSFORMER, **common),
        "sparse_transformer": dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, window=2, stride=4, **common),
        "rsgn_parity": dict(n_steps=n_steps, hebbian=True, **common),
        # the sparse model is ours, not the author's: the shared trainer's default protocol (Adam,
        # constant lr, best validation loss), the one its ablation runs use; pool_sigma was chosen on
        # validation data carved from the honest split's training part (the rsgn spec's pool_sigma
        # benches; reports/rsgn.md section 2), long-range was not searched
        "rsgn": dict(n_steps=n_steps, pool_sigma=pool_sigma, epochs=50, batch_size=batch_size, val_fraction=0.0, patience=50),
        "lstm": dict(hidden=128, layers=2, bidirectional=True, **common),
        "mlp": dict(hidden=(128, 128), activation="relu", **common),
        "centroid": {},
        "lda": {},
    }


def _small_configs() -> dict[str, dict[str, Any]]:
    common = dict(epochs=30, batch_size=64, val_fraction=0.1, patience=10)
    return {
        "transformer": dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, dropout=0.1, **common),
        "sparse_transformer": dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, **common),
        "rsgn_parity": dict(n_steps=5, hebbian=True, **common),
        "rsgn": dict(n_steps=5, pool_sigma=2.0, **common),  # pool_sigma chosen on validation (tree, xor_range)
        "lstm": dict(hidden=128, layers=2, bidirectional=True, **common),
        "mlp": dict(hidden=(128, 128), activation="relu", **common),
        "centroid": {},
        "lda": {},
    }


def _author_task(name: str, X: np.ndarray, y: np.ndarray, p: dict[str, Any], seed: int, scale: str,
                 configs: dict[str, dict[str, Any]], info: dict[str, Any]) -> Task:
    if p["split"] not in ("author", "honest"):
        raise ValueError(f"split: expected 'author' or 'honest', got {p['split']!r}")
    ratio = 0.8 if p["split"] == "author" else 0.85
    tr, te = author_split(len(y), ratio, 42)
    x_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
    train = Split(x_t[tr], y_t[tr])
    tests = {"id": Split(x_t[te], y_t[te])}
    if p["split"] == "honest":
        configs = {k: ({**v, "val_fraction": 0.1765} if "val_fraction" in v else v) for k, v in configs.items()}
    return Task(name, train, tests, "accuracy", {**p, "seed": seed, "scale": scale}, configs,
                {**info, "train_index": tr, "test_index": te})


_HIER = dict(n_samples=5000, seq_len=64, n_features=32, n_classes=20, noise=0.3, split="author")


@register_task("rsgn_hierarchical")
def make_rsgn_hierarchical(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """The paper's 20-class "hierarchical" task (both scales are the author's full data)."""
    p = check_params(params, _HIER, "rsgn_hierarchical")
    X, y = author_hierarchical(int(p["n_samples"]), int(p["seq_len"]), int(p["n_features"]),
                               int(p["n_classes"]), float(p["noise"]))
    return _author_task("rsgn_hierarchical", X, y, p, seed, scale, _paper_configs(5, 64, pool_sigma=1.0),
                        {"paper_accuracy": {"rsgn": 0.238, "transformer": 0.301, "lstm": 0.181, "mlp": 0.160,
                                            "sparse_transformer": 0.159}})


_LONG = dict(n_samples=3000, seq_len=128, n_features=32, n_classes=10, split="author")


@register_task("rsgn_longrange")
def make_rsgn_longrange(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """The paper's 10-class "long-range" task (both scales are the author's full data)."""
    p = check_params(params, _LONG, "rsgn_longrange")
    X, y = author_longrange(int(p["n_samples"]), int(p["seq_len"]), int(p["n_features"]), int(p["n_classes"]))
    return _author_task("rsgn_longrange", X, y, p, seed, scale, _paper_configs(7, 32, n_layers=3),
                        {"paper_accuracy": {"rsgn": 0.965, "transformer": 1.0, "lstm": 1.0}})


# --- tasks that test the claims -------------------------------------------------------------
_TREE = {
    "quick": dict(n_train=3000, n_test=600, seq_len=48, n_features=16, n_motifs=4, motif_len=4, noise=0.3),
    "paper": dict(n_train=8000, n_test=2000, seq_len=64, n_features=32, n_motifs=4, motif_len=4, noise=0.3),
}


def _tree_samples(n: int, p: dict[str, Any], alphabet: torch.Tensor, motif_order: torch.Tensor,
                  gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    m, ml, t = int(p["n_motifs"]), int(p["motif_len"]), int(p["seq_len"])
    x = p["noise"] * torch.randn(n, t, alphabet.shape[1], generator=gen)  # (n, T, D)
    y = torch.empty(n, dtype=torch.long)
    free = t - m * ml  # blank tokens distributed in the gaps between the motifs
    for i in range(n):
        order = torch.randperm(m, generator=gen)  # motif order in this sequence
        # random gap sizes (stars and bars) so motifs sit anywhere but never overlap
        cuts = torch.sort(torch.randint(0, free + 1, (m,), generator=gen)).values
        gaps = torch.diff(cuts, prepend=torch.zeros(1, dtype=torch.long))
        pos = 0
        for j in range(m):
            pos += int(gaps[j])
            x[i, pos : pos + ml] += alphabet[motif_order[order[j]]]  # (ml, D)
            pos += ml
        first, second = int(order[0]), int(order[1])
        y[i] = first * (m - 1) + (second if second < first else second - 1)  # ordered pair id
    return x, y


@register_task("rsgn_tree")
def make_rsgn_tree(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Class = ordered pair (first motif, second motif); ``n_motifs * (n_motifs - 1)`` classes.
    Every sample holds the same multiset of tokens (see the module docstring)."""
    p = check_params(params, _TREE[scale], "rsgn_tree")
    m, ml = int(p["n_motifs"]), int(p["motif_len"])
    if m < 2 or ml < 2 or m * ml > int(p["seq_len"]):
        raise ValueError(f"n_motifs: need n_motifs >= 2, motif_len >= 2 and n_motifs * motif_len <= seq_len, got {p}")
    gen = torch.Generator().manual_seed(seed)
    alphabet = torch.randn(ml, int(p["n_features"]), generator=gen)  # (ml, D) shared token alphabet
    # distinct permutations of the alphabet: the motifs differ only in token order
    perms: list[torch.Tensor] = []
    while len(perms) < m:
        q = torch.randperm(ml, generator=gen)
        if not any(torch.equal(q, r) for r in perms):
            perms.append(q)
    motif_order = torch.stack(perms)  # (M, ml) token ids of each motif
    xs, ys = _tree_samples(int(p["n_train"]), p, alphabet, motif_order, gen)
    xt, yt = _tree_samples(int(p["n_test"]), p, alphabet, motif_order, gen)
    return Task("rsgn_tree", Split(xs, ys), {"id": Split(xt, yt)}, "accuracy",
                {**p, "seed": seed, "scale": scale}, _small_configs(),
                {"alphabet": alphabet, "motifs": motif_order, "chance": 1.0 / (m * (m - 1))})


# Defaults chosen so that order-aware models can learn the task at quick budgets (the first
# version, 128 tokens, jitter 8, amplitude 0.5, stayed at chance for every model in 20-30 epochs):
# 64 tokens, strong patterns (amplitude 1.0 against noise 0.3), jitter 4. Still neither end nor
# the mean decides the class (tested), and the two ends are 48+ tokens apart.
_XOR = {
    "quick": dict(n_train=3000, n_test=600, seq_len=64, n_features=16, n_patterns=4, pattern_len=8,
                  jitter=4, amplitude=1.0, noise=0.3),
    "paper": dict(n_train=8000, n_test=2000, seq_len=128, n_features=32, n_patterns=4, pattern_len=8,
                  jitter=8, amplitude=1.0, noise=0.3),
}


def _xor_samples(n: int, p: dict[str, Any], begin: torch.Tensor, end: torch.Tensor,
                 gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    k, pl, t, jit = int(p["n_patterns"]), int(p["pattern_len"]), int(p["seq_len"]), int(p["jitter"])
    x = p["noise"] * torch.randn(n, t, begin.shape[-1], generator=gen)  # (n, T, D)
    # balanced (s, e) combinations: every class holds every s and every e equally often
    combo = torch.arange(n) % (k * k)
    combo = combo[torch.randperm(n, generator=gen)]
    s, e = combo // k, combo % k
    a = torch.randint(0, jit + 1, (n,), generator=gen)
    b = torch.randint(0, jit + 1, (n,), generator=gen)
    for i in range(n):
        x[i, a[i] : a[i] + pl] += begin[s[i]]
        x[i, t - pl - b[i] : t - b[i]] += end[e[i]]
    return x, (s + e) % k


@register_task("rsgn_xor_range")
def make_rsgn_xor_range(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Class = (start pattern + end pattern) mod ``n_patterns``."""
    p = check_params(params, _XOR[scale], "rsgn_xor_range")
    k, pl, t, jit = int(p["n_patterns"]), int(p["pattern_len"]), int(p["seq_len"]), int(p["jitter"])
    if k < 2 or 2 * (pl + jit) > t:
        raise ValueError(f"n_patterns: need n_patterns >= 2 and 2 * (pattern_len + jitter) <= seq_len, got {p}")
    gen = torch.Generator().manual_seed(seed)
    d = int(p["n_features"])
    begin = p["amplitude"] * torch.randn(k, pl, d, generator=gen)  # (K, pl, D)
    end = p["amplitude"] * torch.randn(k, pl, d, generator=gen)  # (K, pl, D)
    xs, ys = _xor_samples(int(p["n_train"]), p, begin, end, gen)
    xt, yt = _xor_samples(int(p["n_test"]), p, begin, end, gen)
    return Task("rsgn_xor_range", Split(xs, ys), {"id": Split(xt, yt)}, "accuracy",
                {**p, "seed": seed, "scale": scale}, _small_configs(),
                {"begin": begin, "end": end, "chance": 1.0 / k})


__all__ = ["author_hierarchical", "author_longrange", "author_split"]
