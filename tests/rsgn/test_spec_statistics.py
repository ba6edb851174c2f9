"""The rsgn spec's per-fit statistic ``rsgn_fit``: what the report's activity and plasticity
tables read, checked against the fitted model it describes."""
import pytest

import hebbnets as hn
from hebbnets.experiments import Bench, execute, plan_bench, variant


def test_rsgn_fit_statistic_matches_the_fitted_model():
    task = hn.tasks.make("rsgn_longrange", n_samples=160, seq_len=16, n_features=4, split="honest")
    bench = Bench("b", "rsgn_longrange", (variant("r", "rsgn", n_nodes=48, k=4, d_hidden=4, n_steps=2, epochs=3,
                                                   patience=3, batch_size=32, max_activity=0.0),),
                  params={"n_samples": 160, "seq_len": 16, "n_features": 4, "split": "honest"}, seeds=(0,),
                  options={"statistics": ["rsgn_fit"]})
    [entry] = execute(plan_bench("rsgn", bench, "quick", task=task), None)
    s = entry["stats"]["rsgn_fit"]
    [row] = [r for r in entry["rows"] if r["metric"] == "accuracy"]
    # the per-step activity is the scored test forward's: its step mean is the row's activity
    assert len(s["test_pre_cap_per_step"]) == len(s["test_post_cap_per_step"]) == 3  # ignition + 2 steps
    assert row["activity"] == pytest.approx(sum(s["test_pre_cap_per_step"][1:]) / 2)
    assert row["activity_post_cap"] == pytest.approx(sum(s["test_post_cap_per_step"][1:]) / 2)
    assert all(b <= a + 1e-12 for a, b in zip(s["test_pre_cap_per_step"][1:], s["test_post_cap_per_step"][1:]))
    # per-epoch history and totals agree
    assert len(s["epoch_val"]) == len(s["epoch_activity_val"]) == s["epochs_run"] == 3
    assert s["pruned_total"] == sum(s["epoch_pruned"]) and s["sprouted_total"] == sum(s["epoch_sprouted"])
    assert s["activity_val_selected"] == s["epoch_activity_val"][s["selected_epoch"]]
    assert s["activity_target_met"] is True  # max_activity = 0: every epoch may be selected
    assert entry["stats"]["slow_rules"]["pruned_total"] == s["pruned_total"]
