import csv
import json
import math

import pytest

import hebbnets as hn
from hebbnets.bench import format_table, ood_id_ratios, read_json, run, summarize, write_csv, write_json

TINY = dict(grid=8, held_out=[3, 4], id_fraction=0.2)
FAST = {"factorized": dict(epochs=2, hidden=4, progress=False), "mlp": dict(epochs=2, hidden=(8,), progress=False)}


def test_records_fields_counts_and_determinism(tmp_path):
    recs = run("spatial2d", ["factorized", "mlp"], [0, 1], task_params=TINY, overrides=FAST)
    assert len(recs) == 2 * 2 * 2  # seeds x models x splits
    r = recs[0]
    for key in ("task", "task_params", "model", "model_config", "seed", "split", "metric", "value",
                "num_parameters", "fit_seconds", "predict_seconds", "version", "git_commit"):
        assert key in r
    assert r["version"] == hn.__version__ and r["task_params"]["held_out"] == [3, 4]
    assert r["model_config"]["hidden"] == 4 and r["task_params"]["seed"] == r["seed"]
    again = run("spatial2d", ["factorized", "mlp"], [0, 1], task_params=TINY, overrides=FAST)
    assert [x["value"] for x in recs] == [x["value"] for x in again]
    # a fixed Task: same data for every seed, seeds vary the model only
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    fixed = run(task, ["mlp"], [0, 1], overrides={"mlp": FAST["mlp"]})
    assert {x["task_params"]["seed"] for x in fixed} == {0}

    jpath = write_json(recs, tmp_path / "r.json", model="factorized")
    doc = read_json(jpath)
    assert len(doc["records"]) == 8 and len(doc["summary"]) == 4
    assert doc["relative_to_best_baseline"]["metrics"]["mse"]["ood"]["best_baseline"] == "mlp"
    assert set(doc["ood_id_ratio"]["mse"]) == {"factorized", "mlp"}
    with write_csv(recs, tmp_path / "r.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and json.loads(rows[0]["task_params"])["grid"] == 8
    assert math.isclose(float(rows[0]["value"]), recs[0]["value"], rel_tol=1e-12)


def test_json_writes_nan_as_null(tmp_path):
    recs = run("spatial2d", ["mlp"], [0], task_params=TINY, overrides={"mlp": FAST["mlp"]})
    doc = read_json(write_json(recs, tmp_path / "one.json"))
    assert doc["summary"][0]["std"] is None  # one seed: sample std undefined


@pytest.mark.parametrize("kwargs, name", [
    (dict(models=["nope"]), "models"),
    (dict(models="mlp"), "models"),
    (dict(seeds=[]), "seeds"),
    (dict(seeds=[0, 0]), "seeds"),
    (dict(seeds=[-1]), "seeds"),
    (dict(task_params={"bogus": 1}), "params"),
    (dict(overrides={"mlp": {"bogus": 1}}), "config"),
    (dict(overrides={"vae": {"epochs": 1}}), "overrides"),
])
def test_bad_input_fails_before_training(kwargs, name):
    args = dict(task="spatial2d", models=["mlp"], seeds=[0], task_params=TINY)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        run(args.pop("task"), args.pop("models"), args.pop("seeds"), **args)


def test_rsgn_records_carry_measured_active_fraction():
    task = hn.tasks.make("rsgn_tree", seed=0, n_train=60, n_test=20)
    records = hn.bench.run(task, ["rsgn", "centroid"], seeds=[0], overrides={"rsgn": {"epochs": 1, "progress": False}})
    rsgn = [r for r in records if r["model"] == "rsgn"]
    assert rsgn and all(0.0 <= r["active_fraction"] <= 0.5 and r["edges_per_sample"] > 0 for r in rsgn)
    assert all(0.0 < r["activity_post_cap"] <= r["activity"] <= 0.5 for r in rsgn)  # measured, before / after the cap
    assert all("active_fraction" not in r for r in records if r["model"] == "centroid")


def test_extra_metrics_get_their_own_records_and_table_block(tmp_path):
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
    doc = read_json(write_json(recs, tmp_path / "r.json", model="factorized"))
    r_mse = doc["ood_id_ratio"]["mse"]["mlp"]["ood"]
    assert math.isclose(doc["ood_id_ratio"]["doubled"]["mlp"]["ood"], r_mse, rel_tol=1e-6)
    with pytest.raises(ValueError, match="summary"):
        ood_id_ratios(summary)


def test_task_rejects_bad_extra_metrics():
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    with pytest.raises(ValueError, match="extra_metrics"):
        hn.tasks.Task("t", task.train, task.tests, extra_metrics={"x": 3})
    with pytest.raises(ValueError, match="extra_metrics"):
        hn.tasks.Task("t", task.train, task.tests, extra_metrics={"mse": lambda m, t, s: 0.0})


def test_checkpoint_appends_each_fit_and_resume_reuses_only_matching_ones(tmp_path):
    ckpt = tmp_path / "fits.jsonl"
    recs = run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=FAST, checkpoint=ckpt)
    lines = ckpt.read_text().splitlines()
    assert len(lines) == 2 and sum(len(json.loads(x)) for x in lines) == len(recs)
    # a run killed while writing leaves a truncated last line: it is dropped, not an error
    ckpt.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    logs = []
    again = run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=FAST, checkpoint=ckpt,
                resume=True, log=logs.append)
    assert [x["value"] for x in again] == [x["value"] for x in recs]
    assert "reused" in logs[0] and "factorized" in logs[0] and "fit" in logs[1]
    assert len(ckpt.read_text().splitlines()) == 2
    # another config is another fit: nothing reused
    logs.clear()
    other = {"factorized": {**FAST["factorized"], "hidden": 5}, "mlp": FAST["mlp"]}
    run("spatial2d", ["factorized", "mlp"], [0], task_params=TINY, overrides=other, checkpoint=ckpt,
        resume=True, log=logs.append)
    assert "reused" not in logs[0] and "reused" in logs[1]
    # without resume the checkpoint starts afresh
    run("spatial2d", ["mlp"], [1], task_params=TINY, overrides={"mlp": FAST["mlp"]}, checkpoint=ckpt)
    assert [json.loads(x)[0]["seed"] for x in ckpt.read_text().splitlines()] == [1]
    with pytest.raises(ValueError, match="resume"):
        run("spatial2d", ["mlp"], [0], task_params=TINY, overrides={"mlp": FAST["mlp"]}, resume=True)
