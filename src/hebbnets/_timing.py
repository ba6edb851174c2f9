"""Timing helpers every measurement uses (the speed benchmarks in ``hebbnets.measures.speed``, the
models' own cost measurements in ``vn/_speed.py`` and ``rsgn/_speed.py``). Standard library and
torch only, so any layer may time itself without importing the tooling that reports the times."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch


def sync() -> None:
    """Wait for queued CUDA work (a no-op without CUDA): its kernels run asynchronously, so a clock
    read must wait for them to time what they cost."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``(fn(), seconds)``, the device synchronised before and after."""
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def best_time(fn: Callable[[], Any], repeats: int = 3) -> float:
    """Fastest of ``repeats`` wall-clock timings of ``fn()`` (seconds; the device synchronised)."""
    return min(timed(fn)[1] for _ in range(repeats))


def median_time(fn: Callable[[], Any], repeats: int = 3) -> float:
    """Median of ``repeats`` timings of ``fn()`` after one warm-up call (seconds)."""
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def iterations_to_reach(energy_at: Callable[[int], torch.Tensor], target: torch.Tensor, rel_tol: float = 1e-5,
                        max_iter: int = 5000) -> int | None:
    """Smallest iteration count (doubling, then bisection) at which every sample's energy
    ``energy_at(iterations)`` ``(B,)`` is within ``rel_tol`` (relative) of ``target`` ``(B,)``;
    ``None`` if ``max_iter`` does not reach it. For timing solvers at equal objective."""

    def ok(it: int) -> bool:
        return bool((energy_at(it) <= target * (1 + rel_tol)).all())

    hi = 8
    while not ok(hi):
        hi *= 2
        if hi > max_iter:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
