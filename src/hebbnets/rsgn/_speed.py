"""Cost measurements of RSGN as plain functions returning records (dicts), for the scaling
benchmark (``benchmarks/rsgn_scaling.py``) and the experiment specs. No timing here is a unit
test; each function measures a fast path against the reference it replaces in the same run.

* ``graph_build_speed``: the exact kNN graph from the KD-tree (``geometry.knn_kdtree``) against
  the brute-force ``O(N^2)`` builder (``geometry.knn``) on the same positions, with the check that
  both give identical neighbour lists (the ratio the issue targets is ``kdtree_s / brute_s``).
* ``ignition_speed``: every node's nearest spark from the dense ``T x N`` distances against the
  KD-tree over the sparks (the choice ``ignition="auto"`` makes by ``T``).
* ``training_step_cost``: one full training step (forward, backward, optimiser step, the slow
  rules, and the structure step with its kNN rebuild amortised over the steps between two of
  them) of a registered model (``"rsgn"``, ``"rsgn_parity"``, or a sequence baseline such as
  ``"mamba"``), with the process's peak resident memory.
* ``cost_scaling``: ``training_step_cost`` of several models over sizes where the node count and
  the sequence length grow together, one record per (model, size); ``segment_slopes`` reads the
  log-log slope of each segment between consecutive sizes (and over all of them).
* ``graph_builds``: ``graph_build_speed`` at several node counts.
"""
from __future__ import annotations

import math
import os
import time
from typing import Any

import torch

from .._timing import timed as _timed
from . import geometry as G


def _peak_rss_reset() -> bool:
    # Linux: writing 5 to clear_refs resets the peak resident set size (VmHWM) of the process
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_gb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20  # kB -> GiB
    except OSError:
        pass
    return math.nan


def _positions(n_nodes: int, d_space: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """The model's initial positions: ``to_ball(0.3 N(0, I))``."""
    g = torch.Generator().manual_seed(seed)
    return G.to_ball(0.3 * torch.randn(n_nodes, d_space, generator=g)).to(dtype)


def graph_build_speed(n_nodes: int = 65536, k: int = 16, d_space: int = 3, seed: int = 0,
                      brute_dtype: torch.dtype = torch.float64, workers: int = 1) -> dict[str, Any]:
    """Time the exact kNN graph build on the model's initial positions (float32, as in the model):
    the KD-tree builder vs the brute-force builder run in ``brute_dtype`` (float64 by default: the
    tree re-ranks in float64, so the two agree to the last index; float32 brute force is about as
    fast and may swap near-ties). Returns a record with both times, ``ratio = kdtree_s / brute_s``
    and whether the neighbour lists are identical (``mismatched_rows``: rows whose sets differ)."""
    p = _positions(n_nodes, d_space, seed, torch.float32)
    t0 = time.perf_counter()
    tree = G.knn_kdtree(p, k, workers=workers)
    t_tree = time.perf_counter() - t0
    t0 = time.perf_counter()
    brute = G.knn(p.to(brute_dtype), k)
    t_brute = time.perf_counter() - t0
    mismatched = int((tree.sort(1).values != brute.sort(1).values).any(1).sum())
    return {"benchmark": "rsgn_graph_build", "n_nodes": n_nodes, "k": k, "d_space": d_space, "seed": seed,
            "brute_dtype": str(brute_dtype).replace("torch.", ""), "workers": workers, "kdtree_s": t_tree,
            "brute_s": t_brute, "ratio": t_tree / t_brute, "identical": bool(torch.equal(tree, brute)),
            "mismatched_rows": mismatched}


def ignition_speed(n_nodes: int = 65536, seq_len: int = 512, batch_size: int = 4, d_space: int = 3,
                   seed: int = 0) -> dict[str, Any]:
    """Time the search behind ignition, every node's nearest spark, on random sparks and the
    model's initial positions: the dense ``T x N`` proxies (``O(B T N)``) against the KD-tree
    over the sparks (``O(B N log T)``), with the check that both find the same sparks."""
    from ..models import make

    p = _positions(n_nodes, d_space, seed, torch.float32)
    g = torch.Generator().manual_seed(seed + 1)
    sparks = G.to_ball(0.5 * torch.randn(batch_size, seq_len, d_space, generator=g))
    m = make("rsgn", n_nodes=max(n_nodes, 2), k=1)
    (t_d, a_d), dense_s = _timed(lambda: m.nearest_spark(sparks, p, "dense"))
    (t_k, a_k), tree_s = _timed(lambda: m.nearest_spark(sparks, p, "kdtree"))
    return {"benchmark": "rsgn_ignition", "n_nodes": n_nodes, "seq_len": seq_len, "batch_size": batch_size,
            "dense_s": dense_s, "kdtree_s": tree_s, "ratio": tree_s / dense_s,
            "same_spark_fraction": float((a_d == a_k).float().mean())}


def training_step_cost(model: str, n_nodes: int, seq_len: int, *, batch_size: int = 32, n_features: int = 32,
                       n_classes: int = 10, repeats: int = 3, structure_every: int = 100, calibrate_steps: int = 0,
                       seed: int = 0, device: Any = None, **config: Any) -> dict[str, Any]:
    """Seconds per full training step of ``model`` on random ``(batch_size, seq_len, n_features)``
    inputs, median over ``repeats`` steps after one warm-up step.

    Parts: ``forward_s`` (training-mode forward and loss), ``backward_s``, ``optimizer_s``,
    ``slow_s`` (the per-step slow rules; RSGN models only), ``structure_s`` (one structure step:
    drift, pruning, sprouting and the kNN rebuild; ``"rsgn"`` only) and ``step_s`` = their sum with
    the structure step divided by ``structure_every`` (the steps between two of them; an epoch).
    ``build_s`` is the model's construction (for ``"rsgn"``: the initial kNN graph);
    ``ignition_search_s`` the nearest-spark search of one batch as ignition runs it
    (``RSGN.ignition_search``, a part of ``forward_s``).
    ``n_nodes`` sets the node count of the RSGN models and is recorded (unused) for baselines.
    ``calibrate_steps`` > 0 (``"rsgn"``): first run that many forward passes with the slow rules
    at the final temperature, so activity is measured near the homeostatic target rather than at
    initialisation; ``activity`` / ``activity_post_cap`` report the timed steps' values.
    ``config``: overrides of the model's config. ``peak_rss_gb``: the process's peak resident
    memory over this call (reset at its start on Linux; NaN elsewhere). ``device``: where the
    model and its batches live (``hebbnets.models.make``'s ``device``; default the CPU).
    """
    from .._model import DataSpec
    from .._split import Split
    from ..models import make
    from ..training import make_optimizer

    _peak_rss_reset()
    rss0 = _peak_rss_gb()
    torch.manual_seed(seed)
    is_rsgn = model in ("rsgn", "rsgn_parity")
    cfg = dict(progress=False, **config)
    if is_rsgn:
        cfg["n_nodes"] = n_nodes
    if model == "rsgn":
        cfg.setdefault("structure_every", structure_every)
    m = make(model, seed=seed, batch_size=batch_size, device=device, **cfg)
    _, build_s = _timed(lambda: m.build(DataSpec((seq_len, n_features), (), n_classes)))
    g = torch.Generator().manual_seed(seed)
    batches = [Split(torch.randn(batch_size, seq_len, n_features, generator=g),
                     torch.randint(0, n_classes, (batch_size,), generator=g)).to(m.device) for _ in range(2)]
    opt = make_optimizer(m.parameters(), m.config)
    hooks = m.training_callbacks()
    for cb in hooks:
        cb.on_fit_start(m, batches[0], None)
    m.train()
    calibration = []
    if model == "rsgn" and calibrate_steps > 0:
        m.temperature.fill_(m.config.t_end)
        with torch.no_grad():
            for i in range(calibrate_steps):
                m._loss(batches[i % 2])
                record, m._batch = m._batch, None
                m.slow_step(record, m.config.target_activity)
                calibration.append(m.last_stats["activity"])
    parts: dict[str, list[float]] = {"forward_s": [], "backward_s": [], "optimizer_s": [], "slow_s": []}
    activity = []
    edges = []
    for r in range(repeats + 1):
        batch = batches[r % 2]
        loss, t_f = _timed(lambda: m._loss(batch))
        opt.zero_grad(set_to_none=True)
        _, t_b = _timed(loss.backward)
        _, t_o = _timed(opt.step)
        t_s = 0.0
        if hooks:
            t0 = time.perf_counter()
            if model == "rsgn":  # the per-step rules only; the structure step is timed apart
                record, m._batch = m._batch, None
                m.slow_step(record, m.config.target_activity)  # the target after the schedule
            else:
                for cb in hooks:
                    cb.on_step_end(m, r, batch, loss.detach())
            t_s = time.perf_counter() - t0
        if r > 0:  # the first step warms up
            for key, v in zip(parts, (t_f, t_b, t_o, t_s)):
                parts[key].append(v)
            if is_rsgn:
                activity.append((m.last_stats.get("activity", math.nan), m.last_stats.get("activity_post_cap", math.nan),
                                 m.last_stats["edges_per_sample"]))
                edges.append(float(m.last_stats["edges_per_sample"]) * batch_size)
    med = {key: sorted(v)[len(v) // 2] for key, v in parts.items()}
    structure_s = ignition_s = math.nan
    if model == "rsgn":
        _, structure_s = _timed(lambda: m.structure_step(min_history=1))
        with torch.no_grad():  # the nearest-spark search inside ignition (part of forward_s)
            sparks = G.to_ball(m.spark(m._tokens(batches[0].x, None)))
            _, ignition_s = _timed(lambda: m.ignition_search(sparks, m.positions().detach()))
    amortised = 0.0 if math.isnan(structure_s) else structure_s / structure_every
    step_s = sum(med.values()) + amortised
    # every timed step's total (the structure step amortised as in step_s): the spread behind the slopes' intervals
    step_s_repeats = [sum(vals) + amortised for vals in zip(*parts.values())]
    rec = {"benchmark": "rsgn_training_step", "model": model, "n_nodes": n_nodes, "seq_len": seq_len,
           "batch_size": batch_size, "n_features": n_features, "repeats": repeats, "seed": seed, "config": config,
           "build_s": build_s, **med, "ignition_search_s": ignition_s, "structure_s": structure_s, "structure_every": structure_every,
           "step_s": step_s, "step_s_repeats": step_s_repeats, "num_parameters": sum(p.numel() for p in m.parameters()),
           "peak_rss_gb": _peak_rss_gb(), "rss_at_start_gb": rss0, "threads": torch.get_num_threads(),
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}
    if is_rsgn:
        rec["activity"] = sum(a[0] for a in activity) / len(activity)
        rec["activity_post_cap"] = sum(a[1] for a in activity) / len(activity)
        rec["edges_per_sample"] = sum(a[2] for a in activity) / len(activity)
        # seconds per edge touched by the batch, per timed step: constant in N when the cost is O(edges)
        rec["s_per_edge_repeats"] = [t / e if e > 0 else math.nan for t, e in zip(step_s_repeats, edges)]
        rec["calibration_activity"] = calibration  # the measured activity after each calibration pass
        rec["calibrate_steps"] = calibrate_steps if model == "rsgn" else 0
        rec["temperature"] = float(m.temperature if model == "rsgn" else m.config.temperature)
    return rec


def cost_scaling(sizes: list[list[int]], models: tuple[str, ...] | list[str] = ("rsgn", "rsgn_parity", "mamba"), *,
                 max_nodes: dict[str, int] | None = None, configs: dict[str, dict[str, Any]] | None = None,
                 **kwargs: Any) -> list[dict[str, Any]]:
    """``training_step_cost`` of every model at every ``[n_nodes, seq_len]`` of ``sizes`` (grown
    together), smallest first; ``max_nodes[model]`` skips a model above that node count (the
    author's dense model is ``O(N^2)`` in time and memory), ``configs[model]`` overrides its config,
    ``kwargs`` go to every call (``batch_size``, ``repeats``, ``calibrate_steps``, ...). Returns the
    records in the order run."""
    if not sizes or any(len(s) != 2 for s in sizes):
        raise ValueError(f"sizes: expected a non-empty list of [n_nodes, seq_len] pairs, got {sizes!r}")
    rows = []
    for n_nodes, seq_len in sorted(sizes):
        for model in models:
            if n_nodes > (max_nodes or {}).get(model, n_nodes):
                continue
            rows.append(training_step_cost(model, int(n_nodes), int(seq_len), **kwargs, **(configs or {}).get(model, {})))
    return rows


def segment_slopes(xs: list[float], ys: list[float]) -> tuple[list[float], float]:
    """Log-log slopes of ``ys`` against ``xs`` (sorted by x): one per segment between consecutive
    points, and the least-squares slope over all points (NaN with fewer than two points)."""
    if len(xs) != len(ys):
        raise ValueError(f"ys: expected {len(xs)} values like xs, got {len(ys)}")
    pts = sorted(zip(xs, ys))
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    seg = [(ly[i + 1] - ly[i]) / (lx[i + 1] - lx[i]) for i in range(len(pts) - 1)]
    if len(pts) < 2:
        return seg, math.nan
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    overall = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    return seg, overall


def segment_slope_intervals(xs: list[float], samples: list[list[float]], level: float = 0.95
                            ) -> list[tuple[float, float, float]]:
    """Log-log slope of each segment between consecutive ``xs`` (sorted) with a ``level`` interval.

    ``samples[i]``: the repeated measurements at ``xs[i]`` (positive). A segment's slope is the
    difference of the mean log measurements over the difference of the log x; its interval is
    Welch's t interval of that difference (standard error ``sqrt(s1^2/n1 + s2^2/n2)``,
    Welch-Satterthwaite degrees of freedom), divided by the log-x step. Returns one
    ``(slope, low, high)`` per segment; ``low`` and ``high`` are NaN where a point has fewer than two
    measurements, and equal the slope where both points have no spread."""
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level: expected a number in (0, 1), got {level!r}")
    if len(xs) < 2 or any(not (math.isfinite(x) and x > 0) for x in xs) or len(set(xs)) != len(xs):
        raise ValueError(f"xs: expected at least two distinct positive, finite sizes, got {list(xs)!r}")
    if len(xs) != len(samples):
        raise ValueError(f"samples: expected {len(xs)} lists like xs, got {len(samples)}")
    if any(not s or any(not v > 0 for v in s) for s in samples):
        raise ValueError("samples: every point needs at least one positive, finite measurement")
    pts = sorted(zip(xs, samples))
    logs = [(math.log(x), [math.log(v) for v in s]) for x, s in pts]

    def mean_var(v: list[float]) -> tuple[float, float, int]:
        m = sum(v) / len(v)
        return m, (sum((a - m) ** 2 for a in v) / (len(v) - 1) if len(v) > 1 else math.nan), len(v)

    out = []
    for (x1, v1), (x2, v2) in zip(logs, logs[1:]):
        (m1, s1, n1), (m2, s2, n2) = mean_var(v1), mean_var(v2)
        dx = x2 - x1
        slope = (m2 - m1) / dx
        se2 = s1 / n1 + s2 / n2
        if math.isnan(se2):
            out.append((slope, math.nan, math.nan))
            continue
        if se2 == 0:
            out.append((slope, slope, slope))
            continue
        df = se2 ** 2 / ((s1 / n1) ** 2 / (n1 - 1) + (s2 / n2) ** 2 / (n2 - 1))
        half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(se2) / dx
        out.append((slope, slope - half, slope + half))
    return out


def graph_builds(sizes: list[int], **kwargs: Any) -> list[dict[str, Any]]:
    """``graph_build_speed`` at every node count of ``sizes`` (``kwargs`` to each call)."""
    return [graph_build_speed(int(n), **kwargs) for n in sizes]


__all__ = ["cost_scaling", "graph_build_speed", "graph_builds", "ignition_speed", "segment_slope_intervals", "segment_slopes",
           "training_step_cost"]
