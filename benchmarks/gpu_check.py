"""The device check: one run, on whatever torch device it is given, printing side by side

1. VN batched inference (``fista_gram``: one shared Gram, every sample at once) against
   scikit-learn's ``sparse_encode(lasso_cd)`` on the CPU, at equal objective, at 1024x256x128,
   4096x512x256 and 16384x1024x512 (``B x K x n``): samples/s, the speed-up, and the fraction of the
   device's measured matmul rate that the FISTA loop's GEMMs reach;
2. one VN training epoch on mnist_comp reconstruct (the chosen ``vn`` configuration);
3. the sparse RSGN's full training step at 65,536 and 1,048,576 nodes;
4. a baseline for scale: one epoch of the convolutional autoencoder ``conv_ae`` (the chosen
   configuration) on the same mnist_comp split.

    python benchmarks/gpu_check.py --device auto --out results/gpu_check.json   # cuda when present
    python benchmarks/gpu_check.py --smoke --device cpu                         # tiny sizes (CI)

A part that fails on the device (e.g. an operation without a kernel there) is recorded with its
error and the run goes on, so one run shows everything that works and everything that does not.
Timings synchronise the device before reading the clock. Results: a JSON file (``--out``) with the
device, the machine and every row.
"""
from __future__ import annotations

import argparse
import json
import platform
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

FULL = {"sizes": [(1024, 256, 128), (4096, 512, 256), (16384, 1024, 512)], "rsgn_nodes": [65536, 1048576],
        "rsgn_seq_len": 64, "mnist_train": 3000}
SMOKE = {"sizes": [(64, 32, 16)], "rsgn_nodes": [512], "rsgn_seq_len": 8, "mnist_train": 64}


def timed(fn: Callable[[], Any], device: torch.device, repeats: int = 3) -> float:
    """Fastest of ``repeats`` wall-clock timings of ``fn()``, the device synchronised around each
    (``hebbnets._timing.best_time``; ``device`` names where the work runs, for the reader)."""
    from hebbnets._timing import best_time

    return best_time(fn, repeats)


def lasso_problem(B: int, K: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A unit-column dictionary ``S (n, K)`` and ``B`` signals ``x (B, n)`` of 5 atoms + 1 % noise
    (float32, on the CPU)."""
    gen = torch.Generator().manual_seed(seed)
    S = torch.randn(n, K, generator=gen, dtype=torch.float64)
    S = S / S.norm(dim=0)
    idx = torch.rand(B, K, generator=gen).argsort(dim=1)[:, :5]
    codes = torch.zeros(B, K, dtype=torch.float64).scatter_(1, idx, torch.randn(B, 5, generator=gen, dtype=torch.float64))
    x = codes @ S.T + 0.01 * torch.randn(B, n, generator=gen, dtype=torch.float64)
    return S.float(), x.float()


def objective(S: torch.Tensor, x: torch.Tensor, g: torch.Tensor, lam: float) -> torch.Tensor:
    """Per-sample ``0.5 ||x - S g||^2 + lam ||g||_1`` in float64 on the CPU: ``(B,)``."""
    S, x, g = S.double().cpu(), x.double().cpu(), g.double().cpu()
    return 0.5 * ((x - g @ S.T) ** 2).sum(-1) + lam * g.abs().sum(-1)


def inference_row(B: int, K: int, n: int, device: torch.device, lam: float = 0.1) -> dict[str, Any]:
    from sklearn.decomposition import sparse_encode
    from sklearn.exceptions import ConvergenceWarning

    from hebbnets.vn.fista import fista_gram, largest_eigenvalue

    S, x = lasso_problem(B, K, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # its objective is the target, wherever it stopped
        sk_s = timed(lambda: sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam),
                     torch.device("cpu"), repeats=1)
        target = objective(S, x, torch.from_numpy(sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd",
                                                                alpha=lam)), lam)
    Sd, xd = S.to(device), x.to(device)

    def encode(iters: int) -> torch.Tensor:  # everything one call does: Gram, correlations, Lipschitz, FISTA
        G = Sd.T @ Sd
        return fista_gram(G, xd @ Sd, lam, largest_eigenvalue(G), max_iter=iters, tol=0.0).codes

    iters = 8
    while not bool((objective(S, x, encode(iters), lam) <= target * (1 + 1e-5)).all()):
        iters *= 2
        if iters > 8192:
            break
    t = timed(lambda: encode(iters), device)
    a, Gm = torch.randn(B, K, device=device), torch.randn(K, K, device=device)
    gemm = timed(lambda: [a @ Gm for _ in range(20)], device) / 20
    rate = 2 * B * K * K / gemm / 1e9
    return {"part": "vn_inference", "B": B, "K": K, "n": n, "lam": lam, "sklearn_cpu_seconds": sk_s,
            "hebbnets_seconds": t, "iterations": iters, "reached_sklearn_objective": iters <= 8192,
            "samples_per_s": B / t, "speedup_vs_sklearn": sk_s / t, "matmul_gflops": rate,
            "fista_gemm_fraction_of_matmul": 2 * B * K * K * iters / t / 1e9 / rate}


def epoch_row(model_name: str, device: torch.device, n_train: int) -> dict[str, Any]:
    """One training epoch of a registered model (its chosen mnist_comp reconstruct configuration)
    on ``device`` (``make(..., device=device)``: the split moves there once per fit)."""
    import hebbnets as hn

    task = hn.tasks.make("mnist_comp", mode="reconstruct", seed=0, n_train=n_train, n_test=max(16, n_train // 8))
    extra = {"progress": False} if model_name != "vn" else {}
    model = hn.models.make(model_name, seed=0, task=task, device=device, epochs=1, **extra)
    t = timed(lambda: model.fit(task.train), device, repeats=1)
    return {"part": "epoch", "model": model_name, "n_train": n_train, "seconds": t,
            "samples_per_s": n_train / t, "test_mse_id": model.score(task.tests["id"])}


def rsgn_row(n_nodes: int, seq_len: int, device: torch.device) -> dict[str, Any]:
    from hebbnets.rsgn._speed import training_step_cost

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    row = training_step_cost("rsgn", n_nodes, seq_len, repeats=1, device=device)
    out = {"part": "rsgn_step", **{k: v for k, v in row.items() if isinstance(v, (int, float, str, bool))}}
    if device.type == "cuda":  # peak_rss_gb is the host process; the model's tensors live on the device
        out["peak_device_gb"] = torch.cuda.max_memory_allocated(device) / 2**30
    return out


def run(device: torch.device, sizes: dict[str, Any],
        on_row: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    """Every part in turn; ``on_row(rows)`` after each (the caller saves them, so a run stopped by a
    time limit keeps the parts that finished)."""
    parts: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    parts += [(f"vn_inference {B}x{K}x{n}", lambda B=B, K=K, n=n: inference_row(B, K, n, device))
              for B, K, n in sizes["sizes"]]
    parts += [(f"{m} epoch", lambda m=m: epoch_row(m, device, sizes["mnist_train"])) for m in ("vn", "conv_ae")]
    parts += [(f"rsgn step {n:,} nodes", lambda n=n: rsgn_row(n, sizes["rsgn_seq_len"], device))
              for n in sizes["rsgn_nodes"]]
    rows = []
    for name, fn in parts:
        try:
            rows.append({"name": name, "ok": True, **fn()})
        except Exception as exc:  # noqa: BLE001 - recorded, and the other parts still run
            rows.append({"name": name, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                         "where": traceback.format_exc().strip().splitlines()[-3:]})
        print(_line(rows[-1]), flush=True)
        on_row(rows)
    return rows


def _line(row: dict[str, Any]) -> str:
    if not row["ok"]:
        return f"{row['name']:<32} FAILED {row['error']}"
    if row["part"] == "vn_inference":
        return (f"{row['name']:<32} {row['samples_per_s']:>12,.0f} samples/s  {row['speedup_vs_sklearn']:6.1f}x "
                f"scikit-learn (CPU)  {100 * row['fista_gemm_fraction_of_matmul']:5.1f} % of matmul "
                f"({row['matmul_gflops']:.0f} GFLOP/s)")
    if row["part"] == "epoch":
        return f"{row['name']:<32} {row['seconds']:8.2f} s/epoch  {row['samples_per_s']:,.0f} samples/s"
    return (f"{row['name']:<32} {row.get('step_s', float('nan')):8.2f} s/step  peak {row.get('peak_rss_gb', float('nan')):.2f} GiB "
            f"host, {row.get('peak_device_gb', float('nan')):.2f} GiB device")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, cuda:1, ...")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script end to end (CI)")
    ap.add_argument("--out", default=None, help="write every row as JSON here")
    args = ap.parse_args(argv)
    from hebbnets._validation import resolve_device

    try:
        device = resolve_device(args.device, "--device")
    except ValueError as exc:
        print(f"gpu_check: error: {exc}")
        return 2
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    print(f"device {device} ({name}), torch {torch.__version__}, {torch.get_num_threads()} CPU threads")

    def save(rows: list[dict[str, Any]]) -> None:
        if args.out:
            path = Path(args.out)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"device": str(device), "device_name": name, "torch": torch.__version__,
                                        "smoke": args.smoke, "rows": rows}, indent=1) + "\n")

    rows = run(device, SMOKE if args.smoke else FULL, on_row=save)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
