"""The cost-measurement functions return records whose parts are consistent (the timings
themselves are benchmarks, never asserted here)."""
import math

import pytest

from hebbnets.rsgn._speed import graph_build_speed, training_step_cost


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
    if model == "rsgn":
        assert rec["step_s"] == pytest.approx(parts + rec["structure_s"] / 10)
        assert 0 < rec["activity_post_cap"] <= rec["activity"] <= 1
    else:
        assert rec["step_s"] == pytest.approx(parts) and math.isnan(rec["structure_s"])
    assert (rec["slow_s"] > 0) == model.startswith("rsgn")
    assert rec["peak_rss_gb"] > 0
