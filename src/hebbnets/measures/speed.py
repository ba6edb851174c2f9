"""Speed and scaling measurements (not unit tests: timings are machine-dependent).

Each measurement is a registered function returning a list of row dicts; the ``speed`` spec
runs them (``hebbnets reproduce speed``), stores the rows as records and the report prints the
measured ratios. ``benchmarks/vn_inference.py`` prints the same tables directly (the sparse RSGN's
cost is ``hebbnets.rsgn._speed``, recorded by the ``rsgn`` spec, printed by
``benchmarks/rsgn_scaling.py``).

* ``vn_inference``: batched Gram-form FISTA against scikit-learn's ``sparse_encode(lasso_cd)``
  at equal objective, and the fraction of the machine's matmul rate its GEMMs reach.
* ``vn_matrix_inference``: matrix-atom inference (factorised Gram product) against the vector
  layer's explicit Kronecker Gram matrix on the same flattened problem, at equal objective.
* ``rsgn_parity_speed``: the author's einsum message op against the matmul ``rsgn_parity`` uses.
"""
from __future__ import annotations

import contextlib
import math
import os
import platform
import time
from typing import Any, Callable, Iterator

import numpy as np
import torch

from .._registry import Registry
from .._timing import best_time, iterations_to_reach, median_time

MEASUREMENTS: Registry[Callable[..., list[dict[str, Any]]]] = Registry("measurement")


def register_measurement(name: str) -> Callable[[Callable[..., list[dict[str, Any]]]], Callable[..., list[dict[str, Any]]]]:
    """Decorator: ``fn(**params) -> list[dict]`` becomes the measurement ``name``."""
    return MEASUREMENTS.register(name)


def get_measurement(name: str) -> Callable[..., list[dict[str, Any]]]:
    return MEASUREMENTS.get(name, "function")


def _cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def platform_fingerprint() -> dict[str, Any]:
    """What decides a fit's floating-point rounding besides its inputs: the processor, the kernel
    level torch dispatches to on it (``torch.backends.cpu.get_cpu_capability()``: AVX512, AVX2,
    ...), the torch version and the number of torch threads. Two runs that agree on these give the
    same records bit for bit; runs that differ in them round differently, and a long fit can
    end elsewhere (docs/experiments.md, "Reproducibility")."""
    return {"cpu": _cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def machine() -> dict[str, Any]:
    """Where a measurement ran: processor, logical CPUs, torch threads, versions, the kernel level
    (``platform_fingerprint``), and the 1-minute load average when it ended (other work on the
    machine slows absolute rates; ratios measured in the same run are still comparable)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    fp = platform_fingerprint()
    return {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "torch_threads": fp["torch_threads"], "torch": fp["torch"], "python": platform.python_version(),
            "cpu_model": fp["cpu"], "cpu_capability": fp["cpu_capability"], "load_average_1min": load}


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (NaN with fewer than two finite points)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and not math.isnan(y) and y > 0]
    if len(pts) < 2:
        return math.nan
    return float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])


# -- VN inference --------------------------------------------------------------------------------
def lasso_problem(B: int, K: int, n: int, seed: int = 0, dtype: torch.dtype = torch.float32
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """A dictionary ``S`` ``(n, K)`` with unit columns and ``B`` signals ``x`` ``(B, n)``, each
    5 random atoms plus 1 % noise."""
    gen = torch.Generator().manual_seed(seed)
    S = torch.randn(n, K, generator=gen, dtype=torch.float64)
    S = S / S.norm(dim=0)
    codes = torch.zeros(B, K, dtype=torch.float64)
    for i in range(B):
        idx = torch.randperm(K, generator=gen)[:5]
        codes[i, idx] = torch.randn(5, generator=gen, dtype=torch.float64)
    x = codes @ S.T + 0.01 * torch.randn(B, n, generator=gen, dtype=torch.float64)
    return S.to(dtype), x.to(dtype)


def lasso_objective(S: torch.Tensor, x: torch.Tensor, g: torch.Tensor, lam: float) -> torch.Tensor:
    """Per-sample ``0.5 ||x - S g||^2 + lam ||g||_1`` in float64: ``(B,)``."""
    S, x, g = S.double(), x.double(), g.double()
    return 0.5 * ((x - g @ S.T) ** 2).sum(-1) + lam * g.abs().sum(-1)


def _encode(S: torch.Tensor, x: torch.Tensor, lam: float, iters: int, monotone: bool, fused: bool = False) -> Any:
    """Everything one inference call does: Gram, correlations, Lipschitz bound, FISTA."""
    from ..vn import fista_gram, largest_eigenvalue

    G = S.T @ S
    return fista_gram(G, x @ S, lam, largest_eigenvalue(G), max_iter=iters, tol=0.0, monotone=monotone, fused=fused)


#: the dense loop's variants timed by ``vn_inference``: (record key, monotone, fused)
DENSE_VARIANTS = (("mfista", True, False), ("fista", False, False), ("mfista_fused", True, True),
                  ("fista_fused", False, True))


#: inner tolerances tried for the working-set solver (the fastest that reaches the target counts)
WORKING_SET_TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


@register_measurement("vn_inference")
def vn_inference(sizes: list[list[int]], lam: float = 0.1, fixed_iters: int = 200,
                 masked: list[list[int]] | None = None, mask_fraction: float = 0.3,
                 tols: list[float] | tuple[float, ...] = WORKING_SET_TOLS) -> list[dict[str, Any]]:
    """VN inference against scikit-learn ``lasso_cd`` at equal objective.

    ``table="shared"`` rows, one per ``(B, K, n)`` in ``sizes`` (one dictionary for every
    sample): the matmul rate of the dense loop's GEMM shape; plain FISTA and MFISTA (the Gram
    loop, ``fista_gram``), eager and fused (``DENSE_VARIANTS``), samples/s at ``fixed_iters``
    iterations and their GEMM GFLOP/s as a fraction of that rate, and their time to reach
    ``lasso_cd``'s objective; and the
    working-set solver (``fista_working_set``): its time to reach it (the fastest inner
    tolerance of ``tols`` that does), and the share of that time spent in its full-gradient
    GEMMs (what bounds it).

    ``table="masked"`` rows, one per ``(B, K, n)`` in ``masked`` (a random 0/1 mask per sample
    hiding ``mask_fraction`` of the entries): ``lasso_cd`` once per sample on the observed rows
    (the reference: each sample is its own LASSO) against ``masked_lasso``'s per-sample Gram
    form and factor form (and which form ``"auto"`` picks), each timed to reach the reference
    objective. Every time includes forming the products (Gram matrices, correlations, Lipschitz
    constants)."""
    import warnings

    from sklearn.decomposition import sparse_encode
    from sklearn.exceptions import ConvergenceWarning

    rows = []
    with warnings.catch_warnings():
        # lasso_cd on float32 data stops at its iteration cap short of its own duality-gap
        # tolerance on some samples (a warning each); its objective is still the target timed
        warnings.simplefilter("ignore", ConvergenceWarning)
        for B, K, n in sizes:
            rows.append(_vn_inference_row(B, K, n, lam, fixed_iters, tuple(tols), sparse_encode))
        for B, K, n in masked or []:
            rows.append(_masked_row(B, K, n, lam, mask_fraction, sparse_encode))
    return rows


def _vn_inference_row(B: int, K: int, n: int, lam: float, fixed_iters: int, tols: tuple[float, ...],
                      sparse_encode: Any) -> dict[str, Any]:
    """One size of ``vn_inference``'s shared-dictionary table."""
    from ..vn.fista import fista_working_set

    S, x = lasso_problem(B, K, n)
    a, G = torch.randn(B, K), torch.randn(K, K)
    reps = 50
    gemm = best_time(lambda: [a @ G for _ in range(reps)]) / reps
    rate = 2 * B * K * K / gemm / 1e9
    row: dict[str, Any] = {"table": "shared", "B": B, "K": K, "n": n, "lam": lam, "threads": torch.get_num_threads(),
                           "matmul_gflops": rate}
    row["sklearn_seconds"] = best_time(lambda: sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam),
                                       repeats=2)
    sk = sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam)
    target = lasso_objective(S, x, torch.from_numpy(np.asarray(sk)), lam)
    for key, monotone, fused in DENSE_VARIANTS:
        if fused:  # compile once before timing (best_time keeps the fastest call in any case)
            _encode(S, x, lam, 2, monotone, fused)
        t_loop = best_time(lambda: _encode(S, x, lam, fixed_iters, monotone, fused))
        row[f"{key}_samples_per_s"] = B / t_loop
        row[f"{key}_gemm_gflops"] = 2 * B * K * K * fixed_iters / t_loop / 1e9
        row[f"{key}_fraction_of_matmul"] = row[f"{key}_gemm_gflops"] / rate
        its = iterations_to_reach(lambda it: lasso_objective(S, x, _encode(S, x, lam, it, monotone, fused).codes, lam),
                                  target)
        row[f"{key}_iterations_to_sklearn"] = its
        t = None if its is None else best_time(lambda: _encode(S, x, lam, its, monotone, fused))
        row[f"{key}_seconds_to_sklearn"] = t
        row[f"{key}_speedup_vs_sklearn"] = None if t is None else row["sklearn_seconds"] / t

    def working_set(tol: float) -> Any:  # everything one call does: Gram, correlations, the solve
        return fista_working_set(S.T @ S, x @ S, lam, tol=tol)

    best = None
    for tol in tols:
        res = working_set(tol)
        if not bool((lasso_objective(S, x, res.codes, lam) <= target * (1 + 1e-5)).all()):
            continue
        t = best_time(lambda: working_set(tol))
        if best is None or t < best[1]:
            best = (tol, t, res)
    row["working_set_tol"] = None if best is None else best[0]
    row["working_set_seconds_to_sklearn"] = None if best is None else best[1]
    row["working_set_speedup_vs_sklearn"] = None if best is None else row["sklearn_seconds"] / best[1]
    row["working_set_iterations"] = None if best is None else best[2].iterations
    row["working_set_rounds"] = None if best is None else len(best[2].rounds)
    # the full-gradient GEMMs (one per round, over the samples not yet done) against the whole time
    row["working_set_gemm_share"] = None if best is None else sum(best[2].rounds) / B * gemm / best[1]
    return row


def masked_problem(B: int, K: int, n: int, fraction: float = 0.3, seed: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``lasso_problem`` plus a random 0/1 mask per sample hiding ``fraction`` of the entries:
    ``(S (n, K), x (B, n), mask (B, n))``."""
    S, x = lasso_problem(B, K, n, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    mask = (torch.rand(B, n, generator=gen) >= fraction).to(S.dtype)
    return S, x, mask


def masked_objective(S: torch.Tensor, x: torch.Tensor, mask: torch.Tensor, g: torch.Tensor, lam: float) -> torch.Tensor:
    """Per-sample ``0.5 ||m ⊙ (x - S g)||^2 + lam ||g||_1`` in float64: ``(B,)``."""
    S, x, g, m = S.double(), x.double(), g.double(), mask.double()
    return 0.5 * ((m * (x - g @ S.T)) ** 2).sum(-1) + lam * g.abs().sum(-1)


def _masked_row(B: int, K: int, n: int, lam: float, fraction: float, sparse_encode: Any) -> dict[str, Any]:
    """One size of ``vn_inference``'s masked table."""
    from ..vn.fista import LassoTerm, choose_product_form, masked_lasso

    S, x, mask = masked_problem(B, K, n, fraction)
    keep = mask.bool()

    def reference() -> torch.Tensor:  # lasso_cd on each sample's observed rows
        out = torch.zeros(B, K, dtype=S.dtype)
        for i in range(B):
            out[i] = torch.from_numpy(np.asarray(sparse_encode(x[i:i + 1, keep[i]].numpy(), S[keep[i]].T.numpy(),
                                                               algorithm="lasso_cd", alpha=lam)))[0]
        return out

    row: dict[str, Any] = {"table": "masked", "B": B, "K": K, "n": n, "lam": lam, "mask_fraction": fraction,
                           "threads": torch.get_num_threads()}
    row["sklearn_seconds"] = best_time(reference, repeats=1)
    target = masked_objective(S, x, mask, reference(), lam)
    row["auto_form"] = choose_product_form([LassoTerm(1.0, S, x, mask)], 200)
    for form in ("per_sample", "factor"):
        def solve(it: int, form: str = form) -> Any:  # products, Lipschitz constants and the solve
            return masked_lasso([LassoTerm(1.0, S, x, mask)], lam, max_iter=it, tol=0.0, form=form)

        its = iterations_to_reach(lambda it: masked_objective(S, x, mask, solve(it).codes, lam), target)
        t = None if its is None else best_time(lambda: solve(its), repeats=2)
        row[f"{form}_iterations_to_sklearn"] = its
        row[f"{form}_seconds_to_sklearn"] = t
        row[f"{form}_speedup_vs_sklearn"] = None if t is None else row["sklearn_seconds"] / t
    return row


def format_vn_inference(rows: list[dict[str, Any]]) -> str:
    """The measured tables with the target (>= 5x scikit-learn at equal objective) and the dense
    loop's share of the matmul rate."""
    out = []
    for r in (r for r in rows if r.get("table", "shared") == "shared"):
        out.append(f"B={r['B']} K={r['K']} n={r['n']} lam={r['lam']} threads={r['threads']}  matmul "
                   f"{r['matmul_gflops']:.1f} GFLOP/s, sklearn lasso_cd {r['sklearn_seconds'] * 1e3:.1f} ms")
        out.append(f"{'variant':12s} {'samples/s':>10s} {'GEMM GFLOP/s':>13s} {'% matmul':>9s} {'iters->sk':>10s}"
                   f" {'ms->sk':>8s} {'x faster':>9s}")
        for key in ("mfista", "fista"):
            ms, sp = r[f"{key}_seconds_to_sklearn"], r[f"{key}_speedup_vs_sklearn"]
            out.append(f"{key:12s} {r[f'{key}_samples_per_s']:10.0f} {r[f'{key}_gemm_gflops']:13.1f}"
                       f" {100 * r[f'{key}_fraction_of_matmul']:8.0f}% {str(r[f'{key}_iterations_to_sklearn']):>10s}"
                       f" {('%.1f' % (ms * 1e3)) if ms else '-':>8s} {('%.1f' % sp) if sp else '-':>9s}")
        if "working_set_tol" in r:
            ms, sp, share = (r[f"working_set_{k}"] for k in ("seconds_to_sklearn", "speedup_vs_sklearn", "gemm_share"))
            out.append(f"{'working set':12s} {'':>10s} {'':>13s} {'':>9s} {str(r['working_set_iterations']):>10s}"
                       f" {('%.1f' % (ms * 1e3)) if ms else '-':>8s} {('%.1f' % sp) if sp else '-':>9s}"
                       f"   (tol {r['working_set_tol']}, {r['working_set_rounds']} rounds, "
                       f"{'-' if share is None else '%.0f%%' % (100 * share)} of its time in full-gradient GEMMs)")
        best = max((r.get(f"{k}_speedup_vs_sklearn") or 0) for k in ("mfista", "fista", "working_set"))
        frac = max(r[f"{k}_fraction_of_matmul"] for k in ("mfista", "fista"))
        out.append(f"target >= 5x faster than sklearn: {'MET' if best >= 5 else 'NOT MET'} ({best:.1f}x); "
                   f"dense FISTA loop at {100 * frac:.0f}% of the matmul rate")
        out.append("")
    for r in (r for r in rows if r.get("table") == "masked"):
        out.append(f"masked: B={r['B']} K={r['K']} n={r['n']} ({100 * r['mask_fraction']:.0f}% of the entries masked per "
                   f"sample) lam={r['lam']}: sklearn lasso_cd per sample {r['sklearn_seconds'] * 1e3:.0f} ms; "
                   f"auto picks {r['auto_form']!r}")
        for form in ("per_sample", "factor"):
            ms, sp = r[f"{form}_seconds_to_sklearn"], r[f"{form}_speedup_vs_sklearn"]
            out.append(f"  {form:10s} iters->sk {str(r[f'{form}_iterations_to_sklearn']):>5s}  "
                       f"ms->sk {('%.1f' % (ms * 1e3)) if ms else '-':>8s}  x faster {('%.1f' % sp) if sp else '-':>6s}")
        out.append("")
    return "\n".join(out).rstrip()


@register_measurement("vn_matrix_inference")
def vn_matrix_inference(batch: int = 256, m: int = 28, n: int = 28, atoms_u: int = 28, atoms_s: int = 28,
                        lam: float = 0.05, repeats: int = 3) -> list[dict[str, Any]]:
    """One row: matrix-atom inference with the factorised Gram product ``(U^T U) G (S^T S)``
    against the flat vector layer with the explicit ``(Ku Ks)^2`` Kronecker Gram matrix, on the
    same flattened LASSO at equal objective (``hebbnets.vn.matrix_inference_speed``)."""
    from ..vn import matrix_inference_speed

    return [matrix_inference_speed(batch=batch, m=m, n=n, atoms_u=atoms_u, atoms_s=atoms_s, lam=lam, repeats=repeats,
                                   verbose=False)]


# -- rsgn_parity message op ------------------------------------------------------------------------
def _einsum_messages(W: torch.Tensor, send: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    return torch.einsum("ji,bj,bjd->bid", W, send, h)  # the author's notebook form


@register_measurement("rsgn_parity_speed")
def rsgn_parity_speed(batches: int = 4, repeats: int = 10, threads: int = 1) -> list[dict[str, Any]]:
    """The message op alone (forward + backward, batch 64, 256 nodes, d_h 128) with the
    notebook's einsum and the broadcast matmul ``rsgn_parity`` uses, and full training steps of
    ``rsgn_parity`` on ``rsgn_hierarchical`` with each op, scaled to one epoch."""
    from .. import models, tasks
    from .._model import DataSpec
    from ..rsgn import parity

    prev_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    matmul = parity.dense_messages
    try:
        torch.manual_seed(0)
        B, N, D = 64, 256, 128
        W = torch.rand(N, N, requires_grad=True)
        send = torch.rand(B, N)
        h = torch.randn(B, N, D, requires_grad=True)

        def op_time(fn: Callable[..., torch.Tensor]) -> float:
            fn(W, send, h).sum().backward()  # warm-up
            t0 = time.perf_counter()
            for _ in range(repeats):
                fn(W, send, h).sum().backward()
            return (time.perf_counter() - t0) / repeats

        task = tasks.make("rsgn_hierarchical")

        def epoch_time(fn: Callable[..., torch.Tensor]) -> float:
            parity.dense_messages = fn
            m = models.make("rsgn_parity", task=task, progress=False)
            m.spec = DataSpec.from_split(task.train)
            m._build(m.spec)
            m.train()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            bs = m.config.batch_size
            xs, ys = task.train.x[: bs * (batches + 1)], task.train.y[: bs * (batches + 1)]
            times = []
            for b in range(batches + 1):  # the first batch is a warm-up
                t0 = time.perf_counter()
                loss = torch.nn.functional.cross_entropy(m._forward(xs[b * bs:(b + 1) * bs], None), ys[b * bs:(b + 1) * bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                times.append(time.perf_counter() - t0)
            return sum(times[1:]) / batches * -(-len(task.train) // bs)

        row = {"batch": B, "nodes": N, "d_hidden": D, "threads": threads, "batches_timed": batches,
               "einsum_s": op_time(_einsum_messages), "matmul_s": op_time(matmul),
               "max_abs_diff": float((_einsum_messages(W, send, h) - matmul(W, send, h)).abs().max().detach()),
               "epoch_einsum_s": epoch_time(_einsum_messages), "epoch_matmul_s": epoch_time(matmul)}
    finally:
        parity.dense_messages = matmul
        torch.set_num_threads(prev_threads)
    return [row]


# -- the sparse RSGN's cost (the rsgn report's measurements) ------------------------------------------
@register_measurement("rsgn_cost")
def _rsgn_cost(**params: Any) -> list[dict[str, Any]]:
    """The sparse RSGN's training-step cost against N (``hebbnets.rsgn._speed.cost_scaling``)."""
    from ..rsgn import _speed as rsgn_speed

    return rsgn_speed.cost_scaling(**params)


@register_measurement("rsgn_graph_build")
def _rsgn_graph_build(sizes: list[int], **params: Any) -> list[dict[str, Any]]:
    """The exact kNN graph build against the O(N^2) one (``hebbnets.rsgn._speed.graph_builds``)."""
    from ..rsgn import _speed as rsgn_speed

    return rsgn_speed.graph_builds(sizes, **params)


@register_measurement("rsgn_training_step")
def _rsgn_training_step(**params: Any) -> list[dict[str, Any]]:
    """One model's full training step (``hebbnets.rsgn._speed.training_step_cost``)."""
    from ..rsgn import _speed as rsgn_speed

    return [rsgn_speed.training_step_cost(**params)]


# -- torch.compile: does the hot path compile, and does it pay (on this machine) -----------------------
def _compiled_against_eager(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """``fn`` eager, then ``torch.compile``'d with ``fullgraph=True`` (the whole call one graph) and
    with graph breaks allowed: the first call's seconds (compilation included) and the best of
    ``repeats`` afterwards; a mode that does not compile is recorded with its error's first line."""
    import torch._dynamo

    row: dict[str, Any] = {"eager_s": best_time(fn, repeats)}
    for mode, fullgraph in (("fullgraph", True), ("graph_breaks", False)):
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=fullgraph)
        try:
            t0 = time.perf_counter()
            compiled()
            row[f"{mode}_first_call_s"] = time.perf_counter() - t0
            row[f"{mode}_s"] = best_time(compiled, repeats)
            row[f"{mode}_ratio"] = row[f"{mode}_s"] / row["eager_s"]
        except Exception as exc:  # noqa: BLE001 - not compiling is the measured outcome
            row[f"{mode}_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"
    torch._dynamo.reset()
    return row


@register_measurement("compile_speed")
def compile_speed(fista_size: tuple[int, int, int] = (1024, 256, 128), fista_iters: int = 50,
                  rsgn_nodes: int = 4096, rsgn_seq_len: int = 64, batch_size: int = 32, repeats: int = 3,
                  threads: int = 1) -> list[dict[str, Any]]:
    """``torch.compile`` of the two hot paths against eager, in one run: VN inference (``fista``
    over a shared Gram, ``fista_iters`` iterations, no early stop) and a sparse RSGN training step
    (forward and loss, then backward) at ``rsgn_nodes`` nodes. Rows: per path the eager seconds,
    each compile mode's first call (compilation included) and steady seconds, their ratio to
    eager, or the error that stopped it; ``max_abs_diff`` compiled (graph breaks) against eager.
    ``rsgn_nodes=0`` leaves the RSGN step out (its compilation takes about a minute)."""
    import torch._dynamo

    from .. import models
    from .._model import DataSpec
    from .._split import Split
    from ..vn.fista import fista, largest_eigenvalue

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    rows = []
    try:
        B, K, n = fista_size
        gen = torch.Generator().manual_seed(0)
        S = torch.randn(n, K, generator=gen)
        S = S / S.norm(dim=0)
        G, b = S.T @ S, torch.randn(B, n, generator=gen) @ S
        lip = float(largest_eigenvalue(G))

        def infer() -> torch.Tensor:
            return fista(lambda v: v @ G, b, 0.1, lip, max_iter=fista_iters, tol=0.0).codes

        row = _compiled_against_eager(infer, repeats)
        torch._dynamo.reset()
        diff = float((torch.compile(infer)() - infer()).abs().max())
        rows.append({"path": "fista", "B": B, "K": K, "n": n, "iterations": fista_iters, "threads": threads,
                     **row, "max_abs_diff": diff})
        torch._dynamo.reset()
        if not rsgn_nodes:
            return rows

        m = models.make("rsgn", seed=0, n_nodes=rsgn_nodes, batch_size=batch_size, progress=False)
        m.build(DataSpec((rsgn_seq_len, 32), (), 10))
        g = torch.Generator().manual_seed(0)
        batch = Split(torch.randn(batch_size, rsgn_seq_len, 32, generator=g), torch.randint(0, 10, (batch_size,), generator=g))
        m.train()

        def train_step() -> torch.Tensor:
            loss = m._loss(batch)
            loss.backward()
            m._batch = None  # the slow rules' record of this batch: not wanted here
            return loss.detach()

        row = _compiled_against_eager(train_step, repeats)
        rows.append({"path": "rsgn_step", "n_nodes": rsgn_nodes, "seq_len": rsgn_seq_len, "batch": batch_size,
                     "threads": threads, **row})
    finally:
        torch.set_num_threads(prev)
    return rows


@contextlib.contextmanager
def _fista_loop(fused: bool | str) -> Iterator[None]:
    """Every VN solver's FISTA loop set to ``fused`` (their ``fused`` class attributes) inside
    the block: the models' path before and after the fused loop became their default."""
    from ..vn import AppliedAtomStack, MatrixAtomLayer, PairAtomLayer, PrivatePairLayer, VectorNetwork

    owners = (VectorNetwork, MatrixAtomLayer, PrivatePairLayer, PairAtomLayer, AppliedAtomStack)
    before = [cls.__dict__.get("fused") for cls in owners]  # None: inherited, not set on the class itself
    try:
        for cls in owners:
            cls.fused = fused
        yield
    finally:
        for cls, value in zip(owners, before):
            if value is None:
                del cls.fused
            else:
                cls.fused = value


@register_measurement("vn_warm_start")
def vn_warm_start(task: str = "toy_atoms", params: dict[str, Any] | None = None, model: str = "vn",
                  seed: int = 0, threads: int = 1, fast: bool = False, tol: float | None = None,
                  retire: bool = False) -> list[dict[str, Any]]:
    """A ``model`` fit at ``task``'s chosen configuration, cold (every FISTA solve from zeros) and
    with ``warm_start`` (each training sample from its previous epoch's codes), in one run: wall
    seconds, FISTA iterations of the training inferences, epochs run, the best validation error
    and the test errors. Ratios are cold / warm.

    ``fast=True``: the models' path before and after the speed work, in one run: ``cold`` is the
    eager FISTA loop from zeros (``fused=False``), ``fused`` the default loop choice
    (``fused="auto"``) from zeros, ``warm`` the default loop with warm starts (which also lets
    ``masked_lasso`` pick the working-set solver); ratios cold / warm and cold / fused. Without it
    both runs use the eager loop (the measure as first recorded).

    ``tol``: every run's FISTA tolerance instead of the chosen configuration's (the row records
    both, ``tol`` and ``chosen_tol``): at a tolerance where both starts solve the LASSO, a gap in
    validation error between them is the warm start's, not where a loose tolerance stops each start.

    ``retire=True`` (with ``fast``): the runs are ``cold``, ``warm`` and ``retire``, the default loop
    with warm starts and ``retire_rows=True`` (each sample's FISTA solve stops at its own
    convergence and leaves the batch); the ``fused`` run is left out (its ratio is in the measure
    without ``retire``). Ratios cold / warm and cold / retire (``retire_seconds_ratio``,
    ``retire_iterations_ratio``; a batch's iterations are its longest row's)."""
    from .. import models, tasks

    if not isinstance(retire, bool):
        raise ValueError(f"retire: expected a bool, got {retire!r}")
    if retire and not fast:
        raise ValueError("retire: the retire run is the fast path's (warm starts, default loop); set fast=True")
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    runs = ((("cold", False, False, False), ("warm", True, "auto", False), ("retire", True, "auto", True)) if retire
            else (("cold", False, False, False), ("fused", False, "auto", False), ("warm", True, "auto", False)) if fast
            else (("cold", False, False, False), ("warm", True, False, False)))
    try:
        inst = tasks.make(task, seed=seed, **(params or {}))
        row: dict[str, Any] = {"task": task, "model": model, "seed": seed, "threads": threads,
                               "n_train": len(inst.train)}
        if tol is not None:  # rows of the measure without it keep their first recorded form
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
                raise ValueError(f"tol: expected a FISTA tolerance in (0, 1) or None, got {tol!r}")
            row["tol"], row["chosen_tol"] = float(tol), models.make(model, seed=seed, task=inst).config.tol
        for name, warm, loop, retire_rows in runs:
            m = models.make(model, seed=seed, task=inst, warm_start=warm, progress=False,
                            **({} if tol is None else {"tol": float(tol)}),
                            **({"retire_rows": True} if retire_rows else {}))
            t0 = time.perf_counter()
            with _fista_loop(loop):
                m.fit(inst.train)
            row[f"{name}_seconds"] = time.perf_counter() - t0
            row[f"{name}_iterations"] = m.fit_iterations
            row[f"{name}_epochs"] = len(m.train_history["energy"])
            row[f"{name}_best_val"] = min(m.train_history["val"]) if m.train_history["val"] else math.nan
            for split, test in inst.tests.items():
                row[f"{name}_test_{split}"] = m.score(test)
        row["seconds_ratio"] = row["cold_seconds"] / row["warm_seconds"]
        row["iterations_ratio"] = row["cold_iterations"] / max(1, row["warm_iterations"])
        if retire:
            row["retire_seconds_ratio"] = row["cold_seconds"] / row["retire_seconds"]
            row["retire_iterations_ratio"] = row["cold_iterations"] / max(1, row["retire_iterations"])
        elif fast:
            row["fused_seconds_ratio"] = row["cold_seconds"] / row["fused_seconds"]
    finally:
        torch.set_num_threads(prev)
    return [row]


@register_measurement("rsgn_fast_paths")
def rsgn_fast_paths(task: str = "rsgn_hierarchical", params: dict[str, Any] | None = None, n_nodes: int = 1024,
                    batch_size: int = 64, repeats: int = 7, steps: int = 3, seed: int = 0,
                    threads: int = 1) -> list[dict[str, Any]]:
    """One sparse RSGN training step (forward, loss, backward) on a batch of ``task`` at its chosen
    configuration with ``n_nodes`` nodes, through the fast paths (nearest spark by one matmul,
    ``ignition="dense"``; the flat-buffer row lookup up to ``model.DENSE_INDEX_MAX``) and through
    their references (the proxies' minimum, ``ignition="reference"``; sort and binary search), on
    two models with the same seed (the same weights), interleaved ``repeats`` times in one run (best
    of each, ``steps`` steps per timing). Both losses are recorded (equal up to rounding). Ratio:
    reference / fast."""
    from .. import models, tasks
    from ..rsgn import model as rsgn_model

    prev, limit = torch.get_num_threads(), rsgn_model.DENSE_INDEX_MAX
    torch.set_num_threads(threads)
    try:
        inst = tasks.make(task, seed=seed, **(params or {}))
        batch = inst.train.subset(torch.arange(batch_size))
        nets = {path: models.make("rsgn", seed=seed, task=inst, n_nodes=n_nodes, epochs=1, progress=False,
                                  ignition="dense" if path == "fast" else "reference").fit(batch).train()
                for path in ("fast", "reference")}

        def step(path: str) -> float:
            rsgn_model.DENSE_INDEX_MAX = limit if path == "fast" else 0
            m = nets[path]
            m.zero_grad()
            loss = torch.nn.functional.cross_entropy(m._forward(batch.x, None), batch.y)
            loss.backward()
            m._batch = None
            return float(loss.detach())

        best, losses = {"fast": math.inf, "reference": math.inf}, {}
        for _ in range(repeats):
            for path in ("fast", "reference"):
                t0 = time.perf_counter()
                for _ in range(steps):
                    losses[path] = step(path)
                best[path] = min(best[path], (time.perf_counter() - t0) / steps)
    finally:
        rsgn_model.DENSE_INDEX_MAX = limit
        torch.set_num_threads(prev)
    return [{"task": task, "n_nodes": n_nodes, "batch_size": batch_size, "seq_len": int(inst.train.x.shape[1]),
             "threads": threads, "fast_s": best["fast"], "reference_s": best["reference"],
             "ratio": best["reference"] / best["fast"], "loss_fast": losses["fast"],
             "loss_reference": losses["reference"]}]


# -- the field's LASSO solvers as anchors ----------------------------------------------------------
#: solver settings of ``lasso_anchors``: each solver at several tolerances (iterations for FISTA),
#: so every solver gives a curve of suboptimality against time
ANCHOR_TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8)
FISTA_ITERS = (25, 50, 100, 200, 400, 800)


#: iteration budget of the tolerance-stopped MFISTA runs (rows that never reach the tolerance stop here)
RETIRE_MAX_ITER = 2000


def _hebbnets_solvers(S: torch.Tensor, x: torch.Tensor, lam: float) -> dict[str, Callable[[float], np.ndarray]]:
    """hebbnets' batched solvers on ``B`` problems sharing ``S (n, K)``: ``setting -> codes (B, K)``
    (MFISTA ``fista_gram`` at a fixed iteration count; ``fista_working_set`` at an inner tolerance,
    its KKT tolerance scaled with it; each ``_retire`` variant at a tolerance with every sample
    stopping at its own convergence, ``retire_rows``, MFISTA within ``RETIRE_MAX_ITER``
    iterations). Every call forms its own products (Gram, correlations, Lipschitz constant)."""
    from ..vn.fista import fista_gram, fista_working_set, largest_eigenvalue

    def mfista_retire(tol: float) -> np.ndarray:
        G = S.T @ S
        return fista_gram(G, x @ S, lam, largest_eigenvalue(G), max_iter=RETIRE_MAX_ITER, tol=tol,
                          retire_rows=True).codes.numpy()

    return {"hebbnets_fista": lambda it: _encode(S, x, lam, int(it), True).codes.numpy(),
            "hebbnets_fista_retire": mfista_retire,
            "hebbnets_working_set": lambda tol: fista_working_set(S.T @ S, x @ S, lam, tol=tol,
                                                                  kkt_tol=lam * tol * 100).codes.numpy(),
            "hebbnets_working_set_retire": lambda tol: fista_working_set(S.T @ S, x @ S, lam, tol=tol,
                                                                         kkt_tol=lam * tol * 100,
                                                                         retire_rows=True).codes.numpy()}


def _anchor_solvers(S: torch.Tensor, x: torch.Tensor, lam: float) -> dict[str, Callable[[float], np.ndarray]]:
    """The field's solvers as a user calls them on the same problems (float64): scikit-learn, one
    multi-target ``Lasso`` (coordinate descent per target, what ``sparse_encode`` does); celer and
    skglm (the ``anchors`` extra, left out when not installed), one ``Lasso`` per sample (neither
    batches independent targets; skglm compiled once before timing)."""
    from sklearn.linear_model import Lasso

    n = S.shape[0]
    Sn, xn = S.numpy(), x.numpy()
    alpha = lam / n  # they minimise ||y - X w||^2 / (2 n) + alpha ||w||_1: the same minimiser
    solvers: dict[str, Callable[[float], np.ndarray]] = {
        "sklearn": lambda tol: Lasso(alpha=alpha, fit_intercept=False, tol=tol, max_iter=100_000).fit(Sn, xn.T).coef_}
    try:
        import celer
        solvers["celer"] = lambda tol: np.stack([celer.Lasso(alpha=alpha, fit_intercept=False, tol=tol).fit(Sn, xi).coef_
                                                 for xi in xn])
    except ImportError:
        pass
    try:
        import skglm
        skglm.Lasso(alpha=alpha, fit_intercept=False).fit(Sn, xn[0])  # numba compiles once, not timed
        solvers["skglm"] = lambda tol: np.stack([skglm.Lasso(alpha=alpha, fit_intercept=False, tol=tol).fit(Sn, xi).coef_
                                                 for xi in xn])
    except ImportError:
        pass
    return solvers


@register_measurement("lasso_anchors")
def lasso_anchors(sizes: list[list[int]], lam: float = 0.1, tols: list[float] | tuple[float, ...] = ANCHOR_TOLS,
                  iters: list[int] | tuple[int, ...] = FISTA_ITERS, dtype: str = "float32",
                  threads: int = 1) -> list[dict[str, Any]]:
    """hebbnets' batched LASSO solvers against scikit-learn, celer and skglm (``_anchor_solvers``)
    on ``speed.lasso_problem`` problems of every ``(B, K, n)`` in ``sizes``, in the style of
    benchopt's benchmark_lasso: each solver at every setting (``tols``; ``iters`` for FISTA), its
    wall time for all ``B`` samples (best of 2) and its suboptimality ``(f - f*) / f*`` (mean and
    largest over samples, objectives in float64), ``f*`` the smallest objective any run reached
    per sample. hebbnets runs in ``dtype``, the anchors in float64 (what they take)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    rows: list[dict[str, Any]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for B, K, n in sizes:
                S64, x64 = lasso_problem(B, K, n, dtype=torch.float64)
                S, x = S64.to(getattr(torch, dtype)), x64.to(getattr(torch, dtype))
                solvers = {**_hebbnets_solvers(S, x, lam), **_anchor_solvers(S64, x64, lam)}
                runs = []
                for name, solve in solvers.items():
                    for setting in (iters if name == "hebbnets_fista" else tols):
                        seconds = best_time(lambda s=setting, f=solve: f(s), repeats=2)
                        codes = torch.from_numpy(np.asarray(solve(setting), dtype=np.float64))
                        runs.append((name, setting, seconds, lasso_objective(S64, x64, codes, lam)))
                best = torch.stack([r[3] for r in runs]).min(0).values  # (B,) f* per sample
                for name, setting, seconds, obj in runs:
                    sub = (obj - best) / best
                    rows.append({"table": "anchors", "B": B, "K": K, "n": n, "lam": lam, "solver": name,
                                 "setting": setting, "seconds": seconds, "samples_per_s": B / seconds,
                                 "suboptimality_mean": float(sub.mean()), "suboptimality_max": float(sub.max()),
                                 "dtype": dtype if name.startswith("hebbnets") else "float64", "threads": threads})
    finally:
        torch.set_num_threads(prev)
    return rows


def time_to_suboptimality(rows: list[dict[str, Any]], solver: str, target: float) -> float | None:
    """The fastest setting of ``solver`` in ``lasso_anchors`` rows (one size) whose largest
    suboptimality is at most ``target``; None when no setting reaches it."""
    ok = [r["seconds"] for r in rows if r["solver"] == solver and r["suboptimality_max"] <= target]
    return min(ok) if ok else None
