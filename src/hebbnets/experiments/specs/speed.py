"""``speed``: speed and scaling, measured against the reference each fast path replaces
(reports/speed.md). Timings depend on the machine; each record names it (``stats.machine``), and
``benchmarks/vn_inference.py`` prints the same table directly. RSGN's cost is measured by the ``rsgn`` spec."""
from __future__ import annotations

from ..reporting import Custom, ReportContext, Text, fmt
from .._spec import Measure, Spec, register_spec

VN_INFERENCE = Measure("vn_inference", "vn_inference",
                       {"sizes": [[1024, 256, 128], [4096, 512, 256]], "lam": 0.1, "masked": [[256, 512, 64]]},
                       scales={"smoke": {"sizes": [[64, 16, 8]], "masked": [[16, 32, 8]]}}, title="VN inference")
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
    return vn_inference_lines(e)


def vn_inference_lines(e: dict) -> list[str]:
    """The VN-inference tables and verdicts of a ``vn_inference`` entry (also quoted by ``vn_claims``)."""
    shared = [r for r in e["rows"] if r.get("table", "shared") == "shared"]
    masked = [r for r in e["rows"] if r.get("table") == "masked"]
    lines = [f"Machine: {_machine(e)}; {e['rows'][0]['threads']} torch thread(s). Target: at least 5x faster than "
             "scikit-learn's `sparse_encode(algorithm=\"lasso_cd\")` at equal objective (every sample within 1e-5 "
             "relative of lasso_cd's), every time including the Gram matrix and correlations. *fista* / *mfista*: the "
             "dense Gram loop (`fista_gram`, one `(B, K) x (K, K)` GEMM per iteration; its share of the machine's matmul "
             "rate at 200 iterations); *working set*: `fista_working_set` (per sample, the support plus the worst "
             "optimality violators; sub-problems solved by the same MFISTA loop on gathered `(w, w)` blocks, one full "
             "GEMM per round to check optimality), at the fastest inner tolerance that reaches the target.", "",
             "| B x K x n | matmul GFLOP/s | lasso_cd ms | variant | samples/s (200 it.) | % of matmul rate | "
             "iterations to lasso_cd's objective | ms to it | x faster than lasso_cd |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for r in shared:
        head = f"| {r['B']} x {r['K']} x {r['n']} | {r['matmul_gflops']:.1f} | {1e3 * r['sklearn_seconds']:.1f} "
        for key in ("mfista", "fista"):
            ms, sp = r[f"{key}_seconds_to_sklearn"], r[f"{key}_speedup_vs_sklearn"]
            lines.append(head + f"| {key} | {r[f'{key}_samples_per_s']:,.0f} | {100 * r[f'{key}_fraction_of_matmul']:.0f} % "
                         f"| {r[f'{key}_iterations_to_sklearn']} | {'—' if ms is None else f'{1e3 * ms:.1f}'} "
                         f"| {'—' if sp is None else f'{sp:.1f}'} |")
        if "working_set_tol" in r:
            ms, sp = r["working_set_seconds_to_sklearn"], r["working_set_speedup_vs_sklearn"]
            lines.append(head + f"| working set (tol {fmt(r['working_set_tol'])}, {r['working_set_rounds']} rounds) | — | — "
                         f"| {r['working_set_iterations']} (inner, all rounds) | {'—' if ms is None else f'{1e3 * ms:.1f}'} "
                         f"| {'—' if sp is None else f'**{sp:.1f}**'} |")
        best = max((r.get(f"{k}_speedup_vs_sklearn") or 0) for k in ("mfista", "fista", "working_set"))
        frac = max(r[f"{k}_fraction_of_matmul"] for k in ("mfista", "fista"))
        share = r.get("working_set_gemm_share")
        verdicts.append(f"- {r['B']} x {r['K']} x {r['n']}: 5x faster than lasso_cd "
                        f"{'holds' if best >= 5 else 'does not hold'} ({best:.1f}x); the dense loop runs at "
                        f"{100 * frac:.0f} % of the matmul rate"
                        + ("" if share is None else f"; the working-set solver spends {100 * share:.0f} % of its time in "
                           "its full-gradient GEMMs, the rest in gathering blocks, the small batched sub-problem solves "
                           "and the optimality checks") + ".")
    lines += [""] + verdicts + [""]
    if masked:
        lines += ["Masked case (a random 0/1 mask per sample over the input entries, as in a masked VN layer): the reference "
                  "is `lasso_cd` once per sample on its observed rows; `masked_lasso`'s per-sample Gram form (a `(K, K)` "
                  "matrix per sample, built once, then a batched matrix-vector product per iteration) against its factor "
                  "form (`S^T (m ⊙ (S v))`, two GEMMs per iteration, no per-sample matrix), each timed to the reference "
                  "objective including its products and Lipschitz constants.", "",
                  "| B x K x n | masked | lasso_cd per sample, ms | form | iterations to its objective | ms to it "
                  "| x faster than lasso_cd | `auto` picks |", "|---|---|---|---|---|---|---|---|"]
        for r in masked:
            for form in ("per_sample", "factor"):
                ms, sp = r[f"{form}_seconds_to_sklearn"], r[f"{form}_speedup_vs_sklearn"]
                lines.append(f"| {r['B']} x {r['K']} x {r['n']} | {100 * r['mask_fraction']:.0f} % | "
                             f"{1e3 * r['sklearn_seconds']:.0f} | {form} | {r[f'{form}_iterations_to_sklearn']} | "
                             f"{'—' if ms is None else f'{1e3 * ms:.1f}'} | {'—' if sp is None else f'{sp:.1f}'} | "
                             f"{r['auto_form']} |")
        lines.append("")
    return lines


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
        Text("## VN inference: batched FISTA against scikit-learn"),
        Custom(vn_inference_section),
        Text("## VN matrix atoms: factorised against Kronecker Gram inference"),
        Custom(vn_matrix_section),
        Text("## RSGN: cost of a training step\n\nThe sparse RSGN's cost is measured in `reports/rsgn.md` (section 6): a full training step (forward, backward, slow rules, amortised structure step and graph rebuild) against the author's dense model and Mamba with N and T grown together, the exact graph build against brute force, and one step at 1,048,576 nodes (`hebbnets reproduce rsgn --benches cost,graph_build,million`; `benchmarks/rsgn_scaling.py` prints the same)."),
        Text("## rsgn_parity: the author's message op"),
        Custom(parity_section),
    ),
))
