import csv
import json
import math

import pytest

import hebbnets as hn
from hebbnets.bench import format_table, ood_id_ratios, run, summarize, write_csv
from hebbnets.experiments import RecordStore

TINY = dict(grid=8, held_out=[3, 4], id_fraction=0.2)
FAST = {"factorized": dict(epochs=2, hidden=4), "mlp": dict(epochs=2, hidden=(8,))}


def test_records_fields_counts_and_determinism(tmp_path):
    recs = run("spatial2d", ["factorized", "mlp"], [0, 1], task_params=TINY, overrides=FAST)
    assert len(recs) == 2 * 2 * 2  # seeds x models x splits
    r = recs[0]
    for key in ("task", "task_params", "model", "model_config", "seed", "split", "metric", "value",
                "num_parameters", "fit_seconds", "predict_seconds", "version", "git_commit", "git_dirty"):
        assert key in r
    assert r["version"] == hn.__version__ and r["task_params"]["held_out"] == [3, 4]
    assert r["model_config"]["hidden"] == 4 and r["task_params"]["seed"] == r["seed"]
    assert r["model_config"]["progress"] is False  # the models' own bars are off under the runner
    again = run("spatial2d", ["factorized", "mlp"], [0, 1], task_params=TINY, overrides=FAST)
    assert [x["value"] for x in recs] == [x["value"] for x in again]
    # a fixed Task: same data for every seed, seeds vary the model only
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    fixed = run(task, ["mlp"], [0, 1], overrides={"mlp": FAST["mlp"]})
    assert {x["task_params"]["seed"] for x in fixed} == {0}
    assert fixed[0]["value"] != fixed[2]["value"]  # another model seed, another model
    with write_csv(recs, tmp_path / "r.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and json.loads(rows[0]["task_params"])["grid"] == 8
    assert math.isclose(float(rows[0]["value"]), recs[0]["value"], rel_tol=1e-12)


@pytest.mark.parametrize("kwargs, name", [
    (dict(models=["nope"]), "models"),
    (dict(models="mlp"), "models"),
    (dict(seeds=[]), "seeds"),
    (dict(seeds=[0, 0]), "seeds"),
    (dict(seeds=[-1]), "seeds"),
    (dict(task_params={"bogus": 1}), "params"),
    (dict(overrides={"mlp": {"bogus": 1}}), "config"),
    (dict(overrides={"vae": {"epochs": 1}}), "overrides"),
    (dict(scale="huge"), "scale"),
])
def test_bad_input_fails_before_training(kwargs, name):
    args = dict(task="spatial2d", models=["mlp"], seeds=[0], task_params=TINY)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        run(args.pop("task"), args.pop("models"), args.pop("seeds"), **args)


def test_a_model_that_cannot_run_on_the_task_fails_before_any_fit():
    """The plan is checked whole: the classifier is refused before VN trains (issue 14, item 7)."""
    calls = []

    class Count(hn.experiments.FitHook):
        def on_fit_start(self, ctx):
            calls.append(ctx.model.name)

    with pytest.raises(ValueError, match=r"^models: 'centroid'.*classifier"):
        run("toy_atoms", ["vn", "centroid"], [0], task_params=dict(n_train=40, n_test=10), hooks=[Count()])
    assert calls == []


def test_rsgn_records_carry_measured_active_fraction_and_slow_rule_statistics(tmp_path):
    task = hn.tasks.make("rsgn_tree", seed=0, n_train=60, n_test=20)
    records = run(task, ["rsgn", "centroid"], seeds=[0], overrides={"rsgn": {"epochs": 1, "batch_size": 16}}, store=tmp_path / "s.jsonl")
    rsgn = [r for r in records if r["model"] == "rsgn"]
    assert rsgn and all(0.0 <= r["active_fraction"] <= 0.5 and r["edges_per_sample"] > 0 for r in rsgn)
    assert all(0.0 < r["activity_post_cap"] <= r["activity"] <= 0.5 for r in rsgn)  # measured, before / after the cap
    assert all("active_fraction" not in r for r in records if r["model"] == "centroid")
    stats = {e["model"]: e["stats"] for e in RecordStore(tmp_path / "s.jsonl").entries()}
    rules = stats["rsgn"]["slow_rules"]
    assert rules["hebbian_update_mean"] > 0 and rules["pruned_total"] >= 0
    assert rules["reward_positive_fraction"] is None or 0 <= rules["reward_positive_fraction"] <= 1
    assert "slow_rules" not in stats["centroid"] and stats["rsgn"]["history"]["epochs_run"] == 1


def test_extra_metrics_get_their_own_records_and_table_block():
    """A task's extra_metrics (scores that need the model, e.g. a rollout) are recorded on every
    split next to the task metric, and every table and ratio is computed per metric."""
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    calls = []

    def doubled(model, t, split_name):
        calls.append(split_name)
        return 2.0 * model.score(t.tests[split_name])

    task.extra_metrics = {"doubled": doubled}
    recs = run(task, ["mlp", "factorized"], [0, 1], overrides=FAST)
    assert len(recs) == 2 * 2 * 2 * 2 and calls.count("ood") == 4
    by = {(r["model"], r["seed"], r["split"], r["metric"]): r["value"] for r in recs}
    for (m, seed, split, metric), v in by.items():
        if metric == "doubled":
            assert math.isclose(v, 2.0 * by[(m, seed, split, "mse")], rel_tol=1e-6)
    summary = summarize(recs)
    assert len(summary) == 2 * 2 * 2
    table = format_table(summary, title="x", model="factorized")
    assert "metric: mse" in table and "metric: doubled" in table
    with pytest.raises(ValueError, match="summary"):
        ood_id_ratios(summary)


def test_task_rejects_bad_extra_metrics():
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    with pytest.raises(ValueError, match="extra_metrics"):
        hn.tasks.Task("t", task.train, task.tests, extra_metrics={"x": 3})
    with pytest.raises(ValueError, match="extra_metrics"):
        hn.tasks.Task("t", task.train, task.tests, extra_metrics={"mse": lambda m, t, s: 0.0})


def test_store_reuses_only_matching_fits(tmp_path):
    store = tmp_path / "fits.jsonl"
    logs = []
    recs = run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=FAST, store=store, log=logs.append)
    assert len(RecordStore(store)) == 2 and "2 to run" in logs[0]
    logs.clear()
    again = run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=FAST, store=store, log=logs.append)
    assert [x["value"] for x in again] == [x["value"] for x in recs] and "0 to run" in logs[0]
    # another config is another fit: only that model is trained, and its slot's old entry goes
    logs.clear()
    other = {"factorized": {**FAST["factorized"], "hidden": 5}, "mlp": FAST["mlp"]}
    run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=other, store=store, log=logs.append)
    assert "1 already" in logs[0] and "1 to run" in logs[0] and "factorized" in logs[1]
    assert len(RecordStore(store)) == 2
    assert sorted(str(e["config"]["hidden"]) for e in RecordStore(store).entries()) == ["5", "[8]"]
    logs.clear()
    run("spatial2d", ["mlp"], [0], task_params=TINY, overrides={"mlp": FAST["mlp"]}, store=store, log=logs.append,
        recompute=True)
    assert "1 to run" in logs[0] and len(RecordStore(store)) == 2
