"""``speed``: speed and scaling, measured against the reference each fast path replaces
(reports/speed.md). Timings depend on the machine; each record names it (``stats.machine``), and
``benchmarks/vn_inference.py`` prints the same table directly. RSGN's cost is measured by the ``rsgn`` spec."""
from __future__ import annotations

from .._report import Custom, ReportContext, Text, fmt
from .._spec import Measure, Spec, register_spec

VN_INFERENCE = Measure("vn_inference", "vn_inference", {"sizes": [[1024, 256, 128], [4096, 512, 256]], "lam": 0.1},
                       scales={"smoke": {"sizes": [[64, 16, 8]]}}, title="VN inference")
VN_MATRIX = Measure("vn_matrix_inference", "vn_matrix_inference", {"batch": 256, "atoms_u": 28, "atoms_s": 28},
                    scales={"smoke": {"batch": 8, "m": 6, "n": 5, "atoms_u": 4, "atoms_s": 3, "repeats": 1}},
                    title="matrix-atom inference")
PARITY_SPEED = Measure("rsgn_parity_speed", "rsgn_parity_speed", {"batches": 4, "repeats": 10, "threads": 1},
                       scales={"smoke": {"batches": 1, "repeats": 1}}, title="rsgn_parity message op")


def _machine(e: dict) -> str:
    m = e["stats"].get("machine", {})
    load = m.get("load_average_1min")
    return (f"{m.get('processor', '?')}, {m.get('cpus', '?')} logical CPUs, torch {m.get('torch', '?')}"
            + ("" if load is None else f", 1-minute load average {load:.1f} when it ended (other work on the machine "
                                       "slows absolute rates; the ratios are measured in the same run)"))


def vn_inference_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("vn_inference")
    if e is None:
        return ["No records yet (`hebbnets reproduce speed`).", ""]
    lines = [f"Machine: {_machine(e)}; {e['rows'][0]['threads']} torch thread(s). Targets: at least 5x faster than "
             "scikit-learn's `sparse_encode(algorithm=\"lasso_cd\")` at equal objective (every sample within 1e-5 "
             "relative of lasso_cd's), and at least 60 % of the machine's matmul rate inside the FISTA loop.", "",
             "| B x K x n | matmul GFLOP/s | lasso_cd ms | variant | samples/s (200 it.) | % of matmul rate | "
             "iterations to lasso_cd's objective | ms to it | x faster than lasso_cd |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for r in e["rows"]:
        for key in ("mfista", "fista"):
            ms, sp = r[f"{key}_seconds_to_sklearn"], r[f"{key}_speedup_vs_sklearn"]
            lines.append(f"| {r['B']} x {r['K']} x {r['n']} | {r['matmul_gflops']:.1f} | {1e3 * r['sklearn_seconds']:.1f} "
                         f"| {key} | {r[f'{key}_samples_per_s']:,.0f} | {100 * r[f'{key}_fraction_of_matmul']:.0f} % "
                         f"| {r[f'{key}_iterations_to_sklearn']} | {'—' if ms is None else f'{1e3 * ms:.1f}'} "
                         f"| {'—' if sp is None else f'{sp:.1f}'} |")
        best = max((r[f"{k}_speedup_vs_sklearn"] or 0) for k in ("mfista", "fista"))
        frac = max(r[f"{k}_fraction_of_matmul"] for k in ("mfista", "fista"))
        verdicts.append(f"- {r['B']} x {r['K']} x {r['n']}: 5x faster than lasso_cd "
                        f"{'holds' if best >= 5 else 'does not hold'} ({best:.1f}x); 60 % of the matmul rate "
                        f"{'holds' if frac >= 0.6 else 'does not hold'} ({100 * frac:.0f} %).")
    return lines + [""] + verdicts + [""]


def vn_matrix_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("vn_matrix_inference")
    if e is None:
        return ["No records yet (`hebbnets reproduce speed`).", ""]
    r = e["rows"][0]
    sp = r["speedup"]
    f, v = r["factorised_seconds"], r["vector_seconds"]
    return [f"Machine: {_machine(e)}; {r['threads']} torch thread(s), {r['dtype']}. One batch of {r['batch']} "
            f"{r['m']}x{r['n']} images (sparse combinations of {r['atoms_u']}x{r['atoms_s']} matrix atoms plus noise), "
            "the same LASSO solved two ways to the same objective (every sample within "
            f"{r['rel_tol']:g} relative of a float64 optimum): the matrix layer's factorised Gram product "
            "`(U^T U) G (S^T S)` against the vector layer's explicit Kronecker Gram matrix `kron(U^T U, S^T S)` "
            f"({(r['atoms_u'] * r['atoms_s']) ** 2:,} entries) on the flattened images.", "",
            "| path | iterations to the objective | ms to it | ms per iteration | ms per Hessian product |",
            "|---|---|---|---|---|",
            f"| factorised (matrix layer) | {r['factorised_iterations']} | {'—' if f is None else f'{1e3 * f:.1f}'} | "
            f"{1e3 * r['factorised_seconds_per_iteration']:.3f} | {1e3 * r['factorised_product_seconds']:.3f} |",
            f"| Kronecker Gram (vector layer) | {r['vector_iterations']} | {'—' if v is None else f'{1e3 * v:.1f}'} | "
            f"{1e3 * r['vector_seconds_per_iteration']:.3f} | {1e3 * r['vector_product_seconds']:.3f} |", "",
            f"- Factorised Gram product faster at equal objective: "
            f"{'not measured' if sp is None else ('holds' if sp > 1 else 'does not hold')} "
            f"({'—' if sp is None else f'{sp:.1f}'}x faster end to end; {r['product_speedup']:.1f}x for the Hessian "
            "product alone).", ""]


def parity_section(ctx: ReportContext) -> list[str]:
    e = ctx.measure("rsgn_parity_speed")
    if e is None:
        return ["No records yet (`hebbnets reproduce speed`).", ""]
    r = e["rows"][0]
    return [f"`rsgn_parity` message passing, the author's einsum against the broadcast matmul it uses now (forward + "
            f"backward, batch {r['batch']}, {r['nodes']} nodes, d_h {r['d_hidden']}, {r['threads']} thread): einsum "
            f"{1e3 * r['einsum_s']:.1f} ms vs matmul {1e3 * r['matmul_s']:.1f} ms per step "
            f"({r['einsum_s'] / r['matmul_s']:.2f}x; largest difference between the two {fmt(r['max_abs_diff'])}); a full "
            f"training epoch on rsgn_hierarchical {r['epoch_einsum_s']:.1f} s vs {r['epoch_matmul_s']:.1f} s (estimated "
            f"from {r['batches_timed']} batches).", ""]


SPEC = register_spec(Spec(
    "speed", "Speed and scaling, against the reference each fast path replaces",
    measures=(VN_INFERENCE, VN_MATRIX, PARITY_SPEED),
    intro="Measured in one run each (`hebbnets reproduce speed`); every ratio is against a reference timed in the same run.",
    sections=(
        Text("## VN inference: batched Gram-form FISTA"),
        Custom(vn_inference_section),
        Text("## VN matrix atoms: factorised against Kronecker Gram inference"),
        Custom(vn_matrix_section),
        Text("## RSGN: cost of a training step\n\nThe sparse RSGN's cost is measured in `reports/rsgn.md` (section 6): a full training step (forward, backward, slow rules, amortised structure step and graph rebuild) against the author's dense model and Mamba with N and T grown together, the exact graph build against brute force, and one step at 1,048,576 nodes (`hebbnets reproduce rsgn --benches cost,graph_build,million`; `benchmarks/rsgn_scaling.py` prints the same)."),
        Text("## rsgn_parity: the author's message op"),
        Custom(parity_section),
    ),
))
