"""Speed of matrix-atom inference against the plain vector layer on the same flattened problem.

``matrix_inference_speed`` builds one batch of ``m x n`` images that are sparse combinations of a
``MatrixAtomLayer``'s atoms plus noise, and solves the same LASSO two ways:

* **factorised** (``MatrixAtomLayer.infer``): codes ``(B, Ku, Ks)``, Hessian applied as
  ``(U^T U) G (S^T S)``, Lipschitz constant from the two factor spectra;
* **vector** (``fista_gram``, what a flat VN layer does): images flattened to ``(B, m n)``,
  atoms as the explicit ``(m n, Ku Ks)`` design ``kron(U, S)``, the ``(Ku Ks, Ku Ks)`` Kronecker
  Gram matrix (built the cheapest way, ``kron(U^T U, S^T S)``), Lipschitz by power iteration,
  one ``(B, Ku Ks) x (Ku Ks, Ku Ks)`` GEMM per iteration.

Both run monotone FISTA to the same objective: the number of iterations each path needs to be
within ``rel_tol`` (relative) of a float64 reference optimum for *every* sample is found by
doubling and bisection, and each path is timed at its own count (best of ``repeats``; every
call includes what an inference call does: correlations, Gram/Lipschitz, the loop). The ratio
``vector_seconds / factorised_seconds`` is the speed-up of the factorised product.
"""
from __future__ import annotations

from typing import Any

import torch

from .._timing import best_time, iterations_to_reach
from .fista import fista, fista_gram
from .matrix import MatrixAtomLayer


def _problem(batch: int, m: int, n: int, ku: int, ks: int, active: int, noise: float, seed: int):
    torch.manual_seed(seed)
    layer = MatrixAtomLayer(m, n, ku, ks, torch.float64)
    gen = torch.Generator().manual_seed(seed)
    codes = torch.zeros(batch, ku * ks, dtype=torch.float64)
    for i in range(batch):
        idx = torch.randperm(ku * ks, generator=gen)[:active]
        codes[i, idx] = torch.rand(active, generator=gen, dtype=torch.float64) + 0.5
    images = layer.compose(codes.reshape(batch, ku, ks))
    images = images + noise * torch.randn(images.shape, generator=gen, dtype=torch.float64)
    return layer, images


def matrix_inference_speed(batch: int = 256, m: int = 28, n: int = 28, atoms_u: int = 28, atoms_s: int = 28,
                           lam: float = 0.05, nonneg: bool = True, active: int = 3, noise: float = 0.01,
                           rel_tol: float = 1e-5, repeats: int = 3, max_iter: int = 8192, seed: int = 0,
                           dtype: torch.dtype = torch.float32, verbose: bool = True) -> dict[str, Any]:
    """Time the factorised matrix-atom inference against the flat Kronecker-Gram path at equal
    objective (module docstring) and print the ratio.

    Args:
        batch, m, n, atoms_u, atoms_s: problem size (images ``(batch, m, n)``, ``Ku x Ks`` atoms).
        lam, nonneg: the LASSO; active, noise: non-zeros per true code and noise std.
        rel_tol: relative objective gap to the float64 optimum both paths must reach.
        repeats: timings per path (best kept); max_iter: give-up budget; seed: the problem.
        dtype: dtype of the timed runs (the reference optimum is always float64).
        verbose: print a one-line summary.
    Returns:
        a record: sizes, ``threads``, per path ``*_iterations`` and ``*_seconds`` (to the common
        objective), ``*_seconds_per_iteration`` (at 200 iterations), ``speedup`` = vector /
        factorised seconds, and ``*_product_seconds`` / ``product_speedup``: one Hessian product
        alone (the rest of an iteration, the MFISTA loop's element-wise work, is common to both).
    """
    layer64, images64 = _problem(batch, m, n, atoms_u, atoms_s, active, noise, seed)
    # float64 optimum of the energy 1/2 ||I - U G S^T||^2 + lam ||G||_1 (the common target)
    best = layer64.infer(images64, lam=lam, nonneg=nonneg, max_iter=20000, tol=1e-12).codes
    target = layer64.energy(images64, best, lam)  # (B,)
    layer = MatrixAtomLayer(m, n, atoms_u, atoms_s, dtype)
    layer.U.copy_(layer64.U)
    layer.S.copy_(layer64.S)
    images = images64.to(dtype)

    def factorised(iters: int) -> torch.Tensor:
        b = layer.correlate(images)  # (B, Ku, Ks)
        return fista(layer.hessian(), b, lam, layer.lipschitz(), max_iter=iters, tol=0.0, nonneg=nonneg).codes

    def vector(iters: int) -> torch.Tensor:
        gram = layer.kronecker_gram()  # (Ku Ks, Ku Ks)
        b = images.reshape(batch, -1) @ layer.design()  # (B, Ku Ks)
        codes = fista_gram(gram, b, lam, max_iter=iters, tol=0.0, nonneg=nonneg).codes
        return codes.reshape(batch, atoms_u, atoms_s)

    record: dict[str, Any] = {"batch": batch, "m": m, "n": n, "atoms_u": atoms_u, "atoms_s": atoms_s, "lam": lam,
                              "nonneg": nonneg, "rel_tol": rel_tol, "dtype": str(dtype).replace("torch.", ""),
                              "threads": torch.get_num_threads()}
    for name, solve in (("factorised", factorised), ("vector", vector)):
        energy_at = lambda it, solve=solve: layer64.energy(images64, solve(it).to(torch.float64), lam)  # noqa: E731
        its = iterations_to_reach(energy_at, target, rel_tol, max_iter)
        record[f"{name}_iterations"] = its
        record[f"{name}_seconds"] = None if its is None else best_time(lambda: solve(its), repeats)
        record[f"{name}_seconds_per_iteration"] = best_time(lambda: solve(200), repeats) / 200
    # the Hessian product alone (one application per FISTA iteration): what the two paths differ in
    codes = torch.rand(batch, atoms_u, atoms_s, dtype=dtype)
    product_f, gram = layer.hessian(), layer.kronecker_gram()
    flat = codes.reshape(batch, -1)
    record["factorised_product_seconds"] = best_time(lambda: [product_f(codes) for _ in range(20)], repeats) / 20
    record["vector_product_seconds"] = best_time(lambda: [flat @ gram for _ in range(20)], repeats) / 20
    record["product_speedup"] = record["vector_product_seconds"] / record["factorised_product_seconds"]
    f, v = record["factorised_seconds"], record["vector_seconds"]
    record["speedup"] = None if f is None or v is None else v / f
    if verbose:
        print(f"matrix-atom inference, B={batch}, {m}x{n} images, {atoms_u}x{atoms_s} atoms, "
              f"{record['threads']} thread(s), {record['dtype']}: factorised {record['factorised_iterations']} it "
              f"{_fmt(f)} s, Kronecker-Gram vector {record['vector_iterations']} it {_fmt(v)} s "
              f"(equal objective, rel {rel_tol:g}): speed-up {_fmt(record['speedup'])}x; Hessian product alone "
              f"{_fmt(record['product_speedup'])}x")
    return record


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4g}"
