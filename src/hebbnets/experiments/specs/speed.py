"""``speed``: speed and scaling, measured against the reference each fast path replaces
(reports/speed.md). Timings depend on the machine; each record names it (``stats.machine``), and
``benchmarks/vn_inference.py`` / ``benchmarks/rsgn_scaling.py`` print the same tables directly."""
from __future__ import annotations

from .._report import Custom, Figure, ReportContext, Text, fmt
from .._spec import Measure, Spec, register_spec

VN_INFERENCE = Measure("vn_inference", "vn_inference",
                       {"sizes": [[1024, 256, 128], [4096, 512, 256]], "lam": 0.1, "masked": [[256, 512, 64]]},
                       scales={"smoke": {"sizes": [[64, 16, 8]], "masked": [[16, 32, 8]]}}, title="VN inference")
RSGN_SCALING = Measure(
    "rsgn_scaling", "rsgn_scaling",
    {"nodes": [256, 1024, 4096, 16384, 65536], "tokens": [128, 256, 512, 1024, 2048, 4096], "dense_max": 4096,
     "batch": 2, "threads": 1},
    scales={"smoke": {"nodes": [64, 128], "tokens": [16, 32], "dense_max": 128, "token_nodes": 64, "repeats": 1}},
    title="RSGN scaling")
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


def rsgn_scaling_section(ctx: ReportContext) -> list[str]:
    from ...bench.speed import scaling_slopes

    e = ctx.measure("rsgn_scaling")
    if e is None:
        return ["No records yet (`hebbnets reproduce speed`).", ""]
    p = e["params"]
    lines = [f"Machine: {_machine(e)}; {p.get('threads', 1)} thread; k = 16, S = 5, d_h = 64, batch {p.get('batch')}. "
             "The forward pass is O(n·k); the exact kNN graph build is O(N²) (block-wise, so memory stays O(block·N)) and "
             "runs on the slow timescale only (once per epoch by default), so its time is listed apart.", "",
             "| nodes | sparse ms | dense ms | dense / sparse | active fraction | edges / sample | kNN graph build s |",
             "|---|---|---|---|---|---|---|"]
    for r in (r for r in e["rows"] if r["table"] == "nodes"):
        d, sp = r["dense_s"], r["sparse_s"]
        dense = "not run" if d is None else f"{1e3 * d:.1f}"
        ratio = "—" if d is None else f"{d / sp:.1f}x"
        lines.append(f"| {r['n_nodes']:,} | {1e3 * sp:.1f} | {dense} | {ratio} | {r['active_fraction']:.3f} | "
                     f"{r['edges_per_sample']:,.0f} | {r['knn_build_s']:.2f} |")
    toks = [r for r in e["rows"] if r["table"] == "tokens"]
    lines += ["", f"| tokens (RSGN at {toks[0]['token_nodes']:,} nodes) | sparse RSGN ms | Transformer ms |", "|---|---|---|"]
    lines += [f"| {r['seq_len']:,} | {1e3 * r['rsgn_s']:.1f} | {1e3 * r['transformer_s']:.1f} |" for r in toks]
    s = scaling_slopes(e["rows"])
    lines += ["", f"Log-log slope in nodes: sparse {s['sparse_nodes']:.2f}, dense {s['dense_nodes']:.2f} (target <= 1.1 for "
              f"sparse: {'holds' if s['sparse_nodes'] <= 1.1 else 'does not hold'}); in tokens: RSGN "
              f"{s['rsgn_tokens']:.2f}, Transformer {s['transformer_tokens']:.2f}.", ""]
    return lines


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
    measures=(VN_INFERENCE, RSGN_SCALING, PARITY_SPEED),
    intro="Measured in one run each (`hebbnets reproduce speed`); every ratio is against a reference timed in the same run.",
    sections=(
        Text("## VN inference: batched FISTA against scikit-learn"),
        Custom(vn_inference_section),
        Text("## RSGN: forward time per sample"),
        Custom(rsgn_scaling_section),
        Figure("scaling", "scaling", "RSGN forward time per sample, log-log, with least-squares slopes", {"panels": (
            {"measure": "rsgn_scaling", "table": "nodes", "x": "n_nodes", "xlabel": "nodes",
             "series": {"sparse RSGN": "sparse_s", "dense reference": "dense_s"}, "title": "against the node count"},
            {"measure": "rsgn_scaling", "table": "tokens", "x": "seq_len", "xlabel": "tokens",
             "series": {"sparse RSGN": "rsgn_s", "Transformer": "transformer_s"}, "title": "against the sequence length"},
        )}),
        Text("## rsgn_parity: the author's message op"),
        Custom(parity_section),
    ),
))
