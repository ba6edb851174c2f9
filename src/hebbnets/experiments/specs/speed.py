"""``speed``: speed and scaling, measured against the reference each fast path replaces
(reports/speed.md). Timings depend on the machine; each record names it (``stats.machine``), and
``benchmarks/vn_inference.py`` prints the same table directly. RSGN's cost is measured by the ``rsgn`` spec.
The prose, tables and claim checks are ``reporting/narration_speed.py`` (``vn_inference_lines`` is
re-exported here for the ``vn_claims`` report)."""
from __future__ import annotations

from ..reporting import Claim, Custom, Figure, Notes, Text, Verdicts
from ..reporting.narration_speed import (anchors_claim, anchors_section, compile_section, inference_claim,  # noqa: F401
                                         matmul_claim, matrix_claim, million_claim, parity_section, warm_start_claim,
                                         rsgn_paths_claim, rsgn_paths_section, vn_inference_lines,
                                         vn_inference_section, vn_matrix_section, warm_start_section)
from .._spec import Measure, Spec, register_spec

VN_INFERENCE = Measure("vn_inference", "vn_inference",
                       {"sizes": [[1024, 256, 128], [4096, 512, 256]], "lam": 0.1, "masked": [[256, 512, 64]]},
                       scales={"smoke": {"sizes": [[64, 16, 8]], "masked": [[16, 32, 8]]}}, title="VN inference")
VN_MATRIX = Measure("vn_matrix_inference", "vn_matrix_inference", {"batch": 256, "atoms_u": 28, "atoms_s": 28},
                    scales={"smoke": {"batch": 8, "m": 6, "n": 5, "atoms_u": 4, "atoms_s": 3, "repeats": 1}},
                    title="matrix-atom inference")
PARITY_SPEED = Measure("rsgn_parity_speed", "rsgn_parity_speed", {"batches": 4, "repeats": 10, "threads": 1},
                       scales={"smoke": {"batches": 1, "repeats": 1}}, title="rsgn_parity message op")
COMPILE = Measure("compile_speed", "compile_speed", {"fista_size": [1024, 256, 128], "rsgn_nodes": 4096},
                  scales={"smoke": {"fista_size": [16, 8, 4], "fista_iters": 3, "rsgn_nodes": 0, "repeats": 1}},
                  title="torch.compile against eager")
WARM_START = Measure("vn_warm_start", "vn_warm_start", {"task": "toy_atoms", "fast": True},
                     scales={"smoke": {"params": {"n_train": 64, "n_test": 16}}}, title="VN warm starts across epochs")
# the chosen vn of a paper benchmark (functions1d masked)
WARM_START_F1D = Measure("vn_warm_start_functions1d", "vn_warm_start",
                         {"task": "functions1d", "params": {"mode": "masked"}, "fast": True},
                         scales={"smoke": {"params": {"mode": "masked", "n_train": 48, "n_test": 12, "length": 16}}},
                         title="VN warm starts across epochs (functions1d masked)")
WARM_START_MNIST = Measure("vn_warm_start_mnist_matrix", "vn_warm_start",
                           {"task": "mnist_comp", "params": {"mode": "reconstruct"}, "model": "vn_matrix", "fast": True},
                           scales={"smoke": {"params": {"mode": "reconstruct", "n_train": 48, "n_test": 12}}},
                           title="VN warm starts across epochs (vn_matrix, mnist_comp reconstruct)")
WARM_START_MNIST_VN = Measure("vn_warm_start_mnist", "vn_warm_start",
                              {"task": "mnist_comp", "params": {"mode": "reconstruct"}, "fast": True},
                              scales={"smoke": {"params": {"mode": "reconstruct", "n_train": 48, "n_test": 12}}},
                              title="VN warm starts across epochs (vn, mnist_comp reconstruct)")
# the toy fit again with every run's FISTA tolerance 10x below the chosen 1e-3: whether the warm fit's higher
# validation error at the chosen tolerance is the warm start's, or where a loose tolerance stops each start
WARM_START_TOL = Measure("vn_warm_start_tol1e-4", "vn_warm_start", {"task": "toy_atoms", "fast": True, "tol": 1e-4},
                         scales={"smoke": {"params": {"n_train": 64, "n_test": 16}}},
                         title="VN warm starts across epochs (FISTA tol 1e-4)")
# each of these again with the fast paths and every sample's FISTA solve retiring at its own convergence
# (``retire_rows``): cold, warm and retire in one run
_RETIRED = (WARM_START, WARM_START_F1D, WARM_START_MNIST_VN, WARM_START_MNIST)
WARM_RETIRES = tuple(Measure(f"{m.name}_retire", "vn_warm_start", {**m.params, "retire": True},
                             scales=m.scales, title=f"{m.title}, rows that retire") for m in _RETIRED)
WARM_STARTS = (WARM_START, WARM_START_TOL, WARM_START_F1D, WARM_START_MNIST_VN, WARM_START_MNIST, *WARM_RETIRES)
#: one training-speed claim per workload: (its first measure, its retire measure or None); the claim
#: reads the retire measure where it has a record
WARM_CLAIMS = tuple((m, {r.name: rt for r, rt in zip(_RETIRED, WARM_RETIRES)}.get(m.name)) for m in WARM_STARTS[:5])
ANCHORS = Measure("lasso_anchors", "lasso_anchors", {"sizes": [[1024, 256, 128], [4096, 512, 256]],
                                                     "tols": [1e-2, 1e-4, 1e-6], "iters": [25, 100, 400]},
                  scales={"smoke": {"sizes": [[32, 16, 8]], "tols": [1e-2, 1e-6], "iters": [25, 200]}},
                  title="LASSO solvers against scikit-learn, celer and skglm")
RSGN_PATHS = Measure("rsgn_fast_paths", "rsgn_fast_paths", {"n_nodes": 1024, "batch_size": 64},
                     scales={"smoke": {"params": {"n_samples": 200}, "n_nodes": 64, "batch_size": 8, "repeats": 1,
                                       "steps": 1}}, title="RSGN step: fast paths against their references")


SPEC = register_spec(Spec(
    "speed", "Speed and scaling, against the reference each fast path replaces",
    measures=(VN_INFERENCE, ANCHORS, VN_MATRIX, PARITY_SPEED, COMPILE, *WARM_STARTS, RSGN_PATHS),
    intro="Measured in one run each (`hebbnets reproduce speed`); every ratio is against a reference timed in the same run.",
    sections=(
        Verdicts((
            *(Claim(f"Batched FISTA is at least 5x faster than scikit-learn's lasso_cd at equal objective "
                    f"({' x '.join(map(str, size))})", inference_claim(tuple(size)))
              for size in VN_INFERENCE.params["sizes"]),
            *(Claim(f"The dense FISTA loop runs at >= 60 % of the machine's matmul rate ({' x '.join(map(str, size))})",
                    matmul_claim(tuple(size))) for size in VN_INFERENCE.params["sizes"]),
            Claim("The matrix layer's factorised Gram product is faster than the Kronecker Gram at equal objective",
                  matrix_claim),
            *(Claim(f"hebbnets' batched LASSO is at least 10x faster than the fastest of scikit-learn, celer and skglm "
                    f"to a suboptimality of 1e-5 ({' x '.join(map(str, size))})", anchors_claim(tuple(size)))
              for size in ANCHORS.params["sizes"]),
            Claim("The sparse RSGN step's fast paths are faster than their references at the same loss", rsgn_paths_claim),
            Claim("One sparse RSGN training step at 1,048,576 nodes takes <= 20 s and <= 8 GiB (one thread)", million_claim()),
            # the fast paths: warm starts, the fused loop, working sets, and retire_rows where it is faster
            *(Claim(f"VN fits take 5x less wall time with the fast paths at equal validation error "
                    f"({m.params.get('model', 'vn')}, {m.params['task']}"
                    + (f", FISTA tol {m.params['tol']:g} in every run" if "tol" in m.params else "") + ")",
                    warm_start_claim(*(x.name for x in (retire, m) if x is not None))) for m, retire in WARM_CLAIMS),
        )),
        Text("## VN inference: batched FISTA against scikit-learn"),
        Custom(vn_inference_section),
        Text("## LASSO solvers: hebbnets against scikit-learn, celer and skglm"),
        Custom(anchors_section),
        Figure("lasso_anchors", "suboptimality", "Suboptimality against time, every solver and size (log-log)"),
        Text("## VN matrix atoms: factorised against Kronecker Gram inference"),
        Custom(vn_matrix_section),
        Text("## RSGN: cost of a training step\n\nThe sparse RSGN's cost is measured in [rsgn_cost](rsgn_cost.md): a full "
             "training step (forward, backward, slow rules, amortised structure step and graph rebuild) against the "
             "author's dense model and Mamba with N and T grown together, the exact graph build against brute force, and "
             "one step at 1,048,576 nodes (`hebbnets reproduce rsgn --benches cost,graph_build,million`; "
             "`benchmarks/rsgn_scaling.py` prints the same)."),
        Text("## RSGN training step: fast paths against their references"),
        Custom(rsgn_paths_section),
        Text("## rsgn_parity: the author's message op"),
        Custom(parity_section),
        Text("## torch.compile against eager (CPU)"),
        Custom(compile_section),
        Text("## VN training: warm starts across epochs\n\nEach VN fit timed cold and with the fast paths (warm starts, "
             "the fused loop, working sets; in the `_retire` measures also with `retire_rows`), in one run per measure "
             "(the tables: [speed_training](speed_training.md)). A claim reads a workload's `_retire` measure where it "
             "has a record, and its faster fit at equal validation error, with or without `retire_rows`."),
        Notes(),
    ),
    pages={"training": (Text("## VN training: warm starts across epochs"), Custom(warm_start_section))},
))
