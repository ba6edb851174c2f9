"""The summary-first report layout: verdict tables, numbered notes, further pages, the
statistics a claim's ratio carries, the scorecard, and the validation-curves figure."""
import math
import subprocess
import sys

import pytest
from scipy import stats

from hebbnets.experiments import Bench, RecordStore, Spec, Text, build_report
from hebbnets.experiments.reporting import (Claim, Figure, Notes, Point, ReportContext, Verdict, Verdicts, report_pages,
                                            table_cell)
from hebbnets.experiments.reporting.queries import log_ratio_interval, mean_std, ratio_effect, seeds_text, table
from hebbnets.experiments.reporting.scorecard import build_scorecard, collect

BENCH = Bench("b", "toy_atoms", ("vn", "mlp"))


def _fit(label, seed, id_, ood, history=None, epochs=10):
    stats_ = {"num_parameters": 10, **({"history": history} if history else {})}
    return {"key": f"{label}{seed}", "kind": "fit", "model": label, "seed": seed, "config": {"epochs": epochs},
            "task": "toy_atoms", "slots": [{"spec": "s", "bench": "b", "label": label, "scale": "quick", "seed": seed}],
            "rows": [{"split": "id", "metric": "mse", "value": id_}, {"split": "ood", "metric": "mse", "value": ood}],
            "stats": stats_, "commit": "abcdef0123", "dirty": False}


ENTRIES = [_fit("vn", 0, 1.0, 0.10, {"epochs_run": 10, "best_val_epoch": 9}),
           _fit("vn", 1, 1.1, 0.12, {"epochs_run": 6, "best_val_epoch": 2}),
           _fit("vn", 2, 0.9, 0.11, {"epochs_run": 7, "best_val_epoch": 3}),
           _fit("mlp", 0, 1.0, 1.0, {"epochs_run": 5, "best_val_epoch": 1, "val": [3.0, 2.0, 2.5, 2.6, 2.7]}),
           _fit("mlp", 1, 1.2, 1.3), _fit("mlp", 2, 0.8, 0.9)]


def _ood_claim(ctx):
    vn, mlp = ctx.cell("b", "vn", "ood"), ctx.cell("b", "mlp", "ood")
    effect, point, r = ratio_effect(vn, mlp)
    return Verdict(r <= 0.2, f"vn/mlp OOD {r:.3g}x.", effect=effect, against="mlp", seeds="0,1,2",
                   notes=("a caveat | with a pipe", "a second caveat"), points=(point,), reading="vn")


def _id_claim(ctx):
    return Verdict("holds narrowly", "id parity.", notes=("a caveat | with a pipe",), reading="vn")


CLAIMS = (Claim("vn OOD 10x lower", _ood_claim, key="b: OOD"), Claim("vn ID parity", _id_claim))
SPEC = Spec("s", "Test report", benches=(BENCH,), intro="How it was made.",
            sections=(Verdicts(CLAIMS), Text("## Tables"), Notes()),
            pages={"configs": (Text("## Configs"), Verdicts(CLAIMS[1:], title="Again"), Notes())})


@pytest.fixture
def store(tmp_path):
    s = RecordStore(tmp_path / "records" / "s.jsonl")
    s.put_many(ENTRIES)
    return s


def test_log_ratio_interval_is_welch_on_log_errors():
    a, b = [0.10, 0.12, 0.11], [1.0, 1.3, 0.9]
    lo, hi, p = log_ratio_interval(a, b)
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    assert p == pytest.approx(stats.ttest_ind(la, lb, equal_var=False).pvalue, rel=1e-9)
    gm = math.exp(sum(la) / 3 - sum(lb) / 3)
    assert lo < gm < hi and hi / gm == pytest.approx(gm / lo)  # symmetric on the log scale
    wider = log_ratio_interval(a, b, level=0.99)
    assert wider[0] < lo and wider[1] > hi
    assert all(math.isnan(v) for v in log_ratio_interval([0.1], b))  # one seed: no interval


def test_verdict_words_and_holds():
    assert Verdict(True).word == "holds" and Verdict(False).holds is False and Verdict(None).holds is None
    assert Verdict("holds narrowly").holds is True and Verdict("undecided").holds is None
    with pytest.raises(ValueError, match="verdict"):
        Verdict("sort of")
    assert Claim("x", lambda ctx: (True, "e")).verdict(None).word == "holds"  # a plain pair still works


def test_verdict_table_first_notes_numbered_once_and_pages_apart(store, tmp_path):
    main = build_report(SPEC, store, tmp_path / "out").read_text()
    lines = main.splitlines()
    assert lines[0] == "# Test report" and "## Verdicts" in main
    assert main.index("## Verdicts") < main.index("## Tables") < main.index("## Notes") < main.index(
        "## How these numbers were made") < main.index("How it was made.")
    row = next(line for line in lines if line.startswith("| vn OOD 10x lower"))
    assert "**holds**" in row and "(notes 1, 2)" in row and "| mlp | 0,1,2 |" in row
    assert "[" in row.split("|")[3]  # the effect carries its interval
    assert "(note 1)" in next(line for line in lines if line.startswith("| vn ID parity"))  # the same note, same number
    assert "1. a caveat \\| with a pipe" not in main and "1. a caveat | with a pipe" in main
    assert "2. a second caveat" in main and "3." not in main.split("## Notes")[1].split("##")[0]
    assert report_pages(SPEC) == ["s.md", "s_configs.md"] and "[s_configs](s_configs.md)" in main
    page = (tmp_path / "out" / "s_configs.md").read_text()
    assert page.startswith("# Test report: configs") and "## Again" in page
    assert "1. a caveat | with a pipe" in page and "a second caveat" not in page  # numbered per page
    again = build_report(SPEC, store, tmp_path / "again").read_text()
    assert again == main and (tmp_path / "again" / "s_configs.md").read_text() == page


def test_a_claim_line_is_one_table_row_even_with_pipes_and_newlines():
    assert table_cell("a | b\nc") == "a \\| b c"
    assert table(["x", "y"], [["1", "2"]]) == ["| x | y |", "|---|---|", "| 1 | 2 |", ""]
    assert mean_std([1.0, 3.0]) == "2 ± 1.41" and mean_std([]) == "—" and mean_std([0.5]) == "0.5"


def test_scorecard_gathers_every_claim_with_links_and_when_to_use(store, tmp_path):
    rows = collect((SPEC,), store.path.parent)
    assert [(c.key or c.statement, v.word) for _, _, c, v in rows] == [("b: OOD", "holds"),
                                                                       ("vn ID parity", "holds narrowly")]
    path = build_scorecard((SPEC,), store.path.parent, tmp_path / "reports")
    text = path.read_text()
    claims = (tmp_path / "reports" / "claims.md").read_text()
    assert path.name == "README.md" and "| [b: OOD](s.md#verdicts) | **holds** |" in claims
    # the README groups by family: "b: OOD" is the family "OOD" on bench "b"
    assert "| [s](claims.md#s) | OOD | b: **holds** " in text
    assert "## When to use what" in text and "| `vn` |" in text
    assert "| [s](s.md) | 2 | 2 | 0 | 0 |" in text  # the one-screen summary: both claims hold
    assert (tmp_path / "reports" / "scorecard.png").read_bytes()[:4] == b"\x89PNG"
    assert build_scorecard((SPEC,), store.path.parent, tmp_path / "nofig", figures=False).read_text() == text


def test_ratio_effect_points_carry_per_seed_ratios(store, tmp_path):
    ctx = ReportContext(SPEC, "quick", store.entries(), tmp_path, False)
    effect, point, r = ratio_effect(ctx.cell("b", "vn", "ood"), ctx.cell("b", "mlp", "ood"))
    assert r == pytest.approx(0.11 / (3.2 / 3)) and effect.startswith(f"{r:.3g}x [")
    assert isinstance(point, Point) and point.label == "vn" and point.against == "mlp"
    assert point.per_seed == pytest.approx(tuple(v / (3.2 / 3) for v in (0.10, 0.12, 0.11)))


def test_validation_curves_mark_cap_hits_or_say_there_is_nothing(store, tmp_path):
    spec = Spec("s", "t", benches=(BENCH,), sections=(Figure("validation_curves", "vc", "curves", {"benches": ("b",)}),))
    text = build_report(spec, store, tmp_path).read_text()
    assert (tmp_path / "s_vc.png").read_bytes()[:4] == b"\x89PNG" and "](s_vc.png)" in text
    empty = RecordStore(tmp_path / "empty.jsonl")
    empty.put_many([_fit("vn", 0, 1.0, 1.0)])  # no history: nothing to draw
    assert "*curves*: no records to draw yet." in build_report(spec, empty, tmp_path / "e").read_text()


def test_import_hebbnets_does_not_import_the_report_specs():
    code = ("import sys, hebbnets; assert 'hebbnets.experiments.specs' not in sys.modules, 'specs imported'; "
            "from hebbnets.experiments import get_spec; get_spec('toy'); "
            "assert 'hebbnets.experiments.specs' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_claim_families_come_from_the_key_or_a_trailing_parenthetical():
    from hebbnets.experiments.reporting.scorecard import family_and_topic

    def check(ctx):
        return True, ""

    assert family_and_topic(Claim("x", check, key="spatial2d_decode: VN's ID parity")) == ("VN's ID parity",
                                                                                            "spatial2d_decode")
    assert family_and_topic(Claim("Sparser is better (tree, N = 1,024)", check)) == ("Sparser is better",
                                                                                     "tree, N = 1,024")
    assert family_and_topic(Claim("A claim with no topic", check)) == ("A claim with no topic", "")
    # a parenthetical inside the statement is not a topic
    assert family_and_topic(Claim("O(N²) per step", check)) == ("O(N²) per step", "")


def test_when_to_use_cells_count_claims_by_topic():
    from hebbnets.experiments.reporting.scorecard import _topics

    assert _topics(["a", "a", "speed report"]) == "3: a (2), speed report"
    assert _topics([]) == ""


def test_speed_goal_claims_read_their_measures(tmp_path):
    """The dense loop's matmul fraction (the best variant) and the million-node step's bounds."""
    import json

    from hebbnets.experiments import get_spec
    from hebbnets.experiments.reporting.narration_speed import matmul_claim, million_claim

    row = {"table": "shared", "B": 8, "K": 4, "n": 2, "matmul_gflops": 10.0, "mfista_samples_per_s": 1.0,
           "mfista_fraction_of_matmul": 0.3, "fista_samples_per_s": 1.0, "fista_fraction_of_matmul": 0.5,
           "fista_fused_samples_per_s": 1.0, "fista_fused_fraction_of_matmul": 0.7}
    ctx = ReportContext(get_spec("speed"), "quick", [], tmp_path, False, records_dir=tmp_path)
    ctx.measure = lambda name: {"rows": [row]}  # noqa: E731  the entry a record would hold
    v = matmul_claim((8, 4, 2))(ctx)
    assert v.holds is True and v.effect == "70 % (fista fused)"
    row["fista_fused_fraction_of_matmul"] = 0.55
    assert matmul_claim((8, 4, 2))(ctx).holds is False
    assert matmul_claim((1, 1, 1))(ctx).holds is None  # no record of that size
    assert million_claim()(ctx).holds is None  # no rsgn records beside the speed records
    million = {"kind": "measure", "function": "rsgn_training_step", "key": "k", "params": {},
               "slots": [{"spec": "rsgn", "bench": "million", "label": "million", "scale": "quick", "seed": None}],
               "rows": [{"step_s": 12.0, "peak_rss_gb": 9.0, "forward_s": 8.0, "backward_s": 2.0, "structure_s": 40.0,
                         "structure_every": 50, "threads": 1, "seq_len": 8192}]}
    (tmp_path / "rsgn.jsonl").write_text(json.dumps(million) + "\n")
    assert million_claim()(ctx).holds is False  # 9 GiB is over the memory bound
    assert million_claim(gib=10.0)(ctx).holds is True


def test_the_warm_start_claim_reads_the_faster_run_at_equal_error_of_its_first_recorded_measure(tmp_path):
    """The claim reads the first of its measures with a record; "after" is the faster of the warm
    and retire runs at a validation error at most 2 % above the cold fit's; the section's table lists
    the record's runs (no fused row in a retire record)."""
    from hebbnets.experiments import get_spec
    from hebbnets.experiments.reporting.narration_speed import _warm_start_lines, warm_start_claim

    runs = {"cold": (100.0, 1.0), "warm": (40.0, 1.0), "retire": (10.0, 1.01)}
    row = {"task": "toy_atoms", "model": "vn", "seed": 0, "threads": 1, "n_train": 8,
           "seconds_ratio": 2.5, "iterations_ratio": 3.0, "retire_seconds_ratio": 10.0, "retire_iterations_ratio": 4.0}
    for run, (seconds, val) in runs.items():
        row.update({f"{run}_seconds": seconds, f"{run}_iterations": 10, f"{run}_epochs": 3, f"{run}_best_val": val,
                    f"{run}_test_id": val})
    entry = {"params": {"fast": True, "retire": True}, "rows": [row], "stats": {"machine": {}}}
    ctx = ReportContext(get_spec("speed"), "quick", [], tmp_path, False, records_dir=tmp_path)
    ctx.measure = lambda name: entry if name == "retire" else None  # noqa: E731  the entry a record would hold
    v = warm_start_claim("retire", "fast")(ctx)
    assert v.holds is True and v.effect == "10.00x" and "(warm starts and `retire_rows`)" in v.evidence
    row["retire_best_val"] = 1.03  # 3 % worse than cold: the warm run is "after"
    v = warm_start_claim("retire", "fast")(ctx)
    assert v.holds is False and v.effect == "2.50x" and "(warm starts)" in v.evidence
    row["warm_best_val"] = 0.9  # a lower error than cold's is no cost of the speed-up
    assert warm_start_claim("retire", "fast")(ctx).effect == "2.50x"
    row["warm_best_val"] = 1.05  # neither at equal error: the faster, and the claim fails
    v = warm_start_claim("retire", "fast")(ctx)
    assert v.holds is False and v.effect == "10.00x"
    lines = "\n".join(_warm_start_lines(ctx, "retire"))
    assert "`retire_rows=True`, the default loop: the path after | 10.0 |" in lines and "fused=\"auto\"`)" not in lines
    assert warm_start_claim("fast")(ctx).holds is None  # no record of any of its measures


def test_the_speed_pages_name_the_kernel_level_where_a_record_has_it():
    from hebbnets.experiments.reporting import narration_speed as ns

    old = {"stats": {"machine": {"processor": "x86_64", "cpus": 2, "torch": "2.13.0", "load_average_1min": 1.0}}}
    assert ns._machine(old).startswith("x86_64, 2 logical CPUs, torch 2.13.0, 1-minute load average 1.0")
    new = {"stats": {"machine": {**old["stats"]["machine"], "cpu_model": "AMD EPYC", "cpu_capability": "AVX512"}}}
    assert ns._machine(new).startswith("x86_64 (AMD EPYC, torch's AVX512 kernels), 2 logical CPUs")


def test_seeds_text_names_each_label_once_where_the_seeds_differ():
    from hebbnets.experiments import Cell

    def cell(label, split, seeds):
        return Cell(label, split, "mse", len(seeds), 1.0, 0.1, list(seeds), None)
    same = [cell("vn", "id", [0, 1, 2]), cell("pca", "id", [2, 0, 1])]
    assert seeds_text(*same) == "0,1,2"
    both_splits = [cell(lab, s, seeds) for s in ("ood_add", "ood_max") for lab, seeds in
                   (("vn_matrix", range(5)), ("dict_learning", (0, 2)))]
    assert seeds_text(*both_splits, None) == "vn_matrix 0,1,2,3,4; dict_learning 0,2"
    assert seeds_text(None) == "—"


def test_scorecard_effects_drop_the_p_value_and_the_seed_spread_only():
    from hebbnets.experiments.reporting.scorecard import _short_effect

    assert _short_effect("0.5x [0.4, 0.6], p 0.01") == "0.5x [0.4, 0.6]"
    assert _short_effect("default -0.7 pp (seed std 0.9 pp); -1.2 pp") == "default -0.7 pp; -1.2 pp"
    assert _short_effect("13.4x (ood)") == "13.4x (ood)"  # other parentheticals stay
