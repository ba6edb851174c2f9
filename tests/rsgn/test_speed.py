"""The cost-measurement functions return records whose parts are consistent (the timings
themselves are benchmarks, never asserted here)."""
import math

import pytest

from hebbnets.rsgn._speed import (cost_scaling, graph_build_speed, segment_slope_intervals, segment_slopes,
                                  training_step_cost)


def test_graph_build_record_compares_identical_graphs():
    rec = graph_build_speed(n_nodes=600, k=8)
    assert rec["identical"] and rec["mismatched_rows"] == 0
    assert rec["ratio"] == pytest.approx(rec["kdtree_s"] / rec["brute_s"])


@pytest.mark.parametrize("model", ["rsgn", "rsgn_parity", "lstm"])
def test_training_step_cost_parts_add_up(model):
    cfg = dict(d_hidden=8, k=4) if model == "rsgn" else dict(d_hidden=8) if model == "rsgn_parity" else dict(hidden=8)
    rec = training_step_cost(model, 64, 16, batch_size=4, n_features=5, repeats=1, structure_every=10,
                             calibrate_steps=2 if model == "rsgn" else 0, **cfg)
    parts = rec["forward_s"] + rec["backward_s"] + rec["optimizer_s"] + rec["slow_s"]
    assert rec["step_s_repeats"] == [pytest.approx(rec["step_s"])]  # one timed step: its total is the median's
    if model == "rsgn":
        assert rec["step_s"] == pytest.approx(parts + rec["structure_s"] / 10)
        assert 0 < rec["activity_post_cap"] <= rec["activity"] <= 1
        # seconds per edge the batch touched: the step's time over (edges per sample x batch)
        assert rec["s_per_edge_repeats"] == [pytest.approx(rec["step_s"] / (rec["edges_per_sample"] * 4))]
    else:
        assert rec["step_s"] == pytest.approx(parts) and math.isnan(rec["structure_s"])
    assert (rec["slow_s"] > 0) == model.startswith("rsgn")
    assert rec["peak_rss_gb"] > 0


def test_segment_slopes_per_segment_and_overall():
    xs = [1.0, 4.0, 16.0, 64.0]
    ys = [2.0, 8.0, 128.0, 512.0]  # slope 1, then 2, then 1
    seg, overall = segment_slopes(list(reversed(xs)), list(reversed(ys)))  # order does not matter
    assert seg == pytest.approx([1.0, 2.0, 1.0])
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / 4, sum(ly) / 4
    ref = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    assert overall == pytest.approx(ref)
    assert segment_slopes([3.0], [1.0])[0] == [] and math.isnan(segment_slopes([3.0], [1.0])[1])
    with pytest.raises(ValueError, match="ys"):
        segment_slopes([1.0, 2.0], [1.0])


def test_cost_scaling_grows_sizes_together_and_skips_models_above_their_limit():
    rows = cost_scaling([[64, 16], [32, 8]], ("rsgn", "rsgn_parity"), max_nodes={"rsgn_parity": 32}, batch_size=2,
                        n_features=3, repeats=1, structure_every=10, configs={"rsgn": {"d_hidden": 4, "k": 4},
                                                                               "rsgn_parity": {"d_hidden": 4}})
    assert [(r["model"], r["n_nodes"], r["seq_len"]) for r in rows] == [("rsgn", 32, 8), ("rsgn_parity", 32, 8),
                                                                        ("rsgn", 64, 16)]
    with pytest.raises(ValueError, match="sizes"):
        cost_scaling([[64]], ("rsgn",))


def test_segment_slope_intervals_match_welch_t_on_log_times():
    from scipy import stats

    xs = [4.0, 1.0, 16.0]  # any order
    samples = [[8.0, 9.0, 7.0, 8.5, 8.2], [2.0, 2.1, 1.9, 2.05, 1.95], [40.0, 30.0, 36.0, 33.0, 35.0]]
    (s1, lo1, hi1), (s2, lo2, hi2) = segment_slope_intervals(xs, samples)
    logs = {x: [math.log(v) for v in s] for x, s in zip(xs, samples)}
    for (a, b), (s, lo, hi) in zip(((1.0, 4.0), (4.0, 16.0)), ((s1, lo1, hi1), (s2, lo2, hi2))):
        la, lb = logs[a], logs[b]
        dx = math.log(b) - math.log(a)
        mean = lambda v: sum(v) / len(v)  # noqa: E731
        assert s == pytest.approx((mean(lb) - mean(la)) / dx)
        # scipy's Welch test: the interval's end points are where the two-sided p-value is 0.05
        for end in (lo, hi):
            shifted = [v - end * dx for v in lb]
            assert stats.ttest_ind(shifted, la, equal_var=False).pvalue == pytest.approx(0.05, rel=1e-6)
        assert lo < s < hi


def test_segment_slope_intervals_degenerate_and_bad_input():
    # no spread: the interval is the point; a single measurement: no interval
    assert segment_slope_intervals([1.0, 2.0], [[3.0, 3.0], [6.0, 6.0]]) == [(pytest.approx(1.0),) * 3]
    (s, lo, hi), = segment_slope_intervals([1.0, 2.0], [[3.0], [6.0, 6.1]])
    assert s == pytest.approx(math.log(6.05 / 3) / math.log(2), rel=1e-3) and math.isnan(lo) and math.isnan(hi)
    with pytest.raises(ValueError, match="samples"):
        segment_slope_intervals([1.0, 2.0], [[1.0]])
    with pytest.raises(ValueError, match="samples"):
        segment_slope_intervals([1.0, 2.0], [[1.0], [0.0]])
    with pytest.raises(ValueError, match="samples"):
        segment_slope_intervals([1.0, 2.0], [[1.0], [math.nan]])
    for xs in ([1.0], [1.0, 1.0], [0.0, 2.0], [1.0, math.inf]):
        with pytest.raises(ValueError, match="^xs:"):
            segment_slope_intervals(xs, [[1.0]] * len(xs))
    with pytest.raises(ValueError, match="^level:"):
        segment_slope_intervals([1.0, 2.0], [[1.0], [2.0]], level=95)
