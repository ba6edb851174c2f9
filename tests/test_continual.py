"""fit_stages learns stages with fit then partial_fit; forgetting reads the records."""
import pytest
import torch

import hebbnets as hn
from hebbnets.continual import fit_stages, forgetting


def test_fit_stages_scores_every_split_after_every_stage():
    task = hn.tasks.make("functions1d_continual", seed=0, length=16, n_train=48, n_test=16)
    cfg = dict(hidden=(8,), epochs=3, progress=False)
    records = fit_stages(hn.models.make("mlp", seed=1, **cfg), task)
    assert [(r["stage"], r["split"]) for r in records] == [(s, t) for s in task.stages for t in task.tests]
    after_first = hn.models.make("mlp", seed=1, **cfg).fit(task.stages["stage1"])
    both = hn.models.make("mlp", seed=1, **cfg).fit(task.stages["stage1"]).partial_fit(task.stages["stage2"])
    for r in records:
        model = after_first if r["stage"] == "stage1" else both
        assert r["value"] == pytest.approx(model.score(task.tests[r["split"]]), rel=1e-6)
        assert r["fit_seconds"] > 0 and r["metric"] == "mse"
    f = forgetting(records)
    assert set(f) == {"stage1", "stage2"}
    value = {(r["stage"], r["split"]): r["value"] for r in records}
    assert f["stage1"]["forgetting"] == pytest.approx(value[("stage2", "id_stage1")] - value[("stage1", "id_stage1")])
    assert f["stage2"]["forgetting"] == 0.0  # the last stage is scored right after it


def test_forgetting_by_hand_and_bad_input():
    rec = lambda stage, k, split, v: dict(model="m", seed=0, stage=stage, stage_index=k, split=split, value=v)  # noqa: E731
    records = [rec("a", 0, "id_a", 1.0), rec("a", 0, "id_b", 9.0), rec("b", 1, "id_a", 3.0), rec("b", 1, "id_b", 2.0)]
    f = forgetting(records)
    assert f["a"] == {"after_own": 1.0, "final": 3.0, "forgetting": 2.0, "ratio": 3.0}
    with pytest.raises(ValueError, match="^records:"):
        forgetting(records + [dict(records[0], seed=1)])
    with pytest.raises(ValueError, match="^records:"):
        forgetting([])
    with pytest.raises(ValueError, match="^task:"):
        fit_stages(hn.models.make("mlp"), hn.tasks.make("toy_atoms", n_train=8, n_test=4))
    with pytest.raises(ValueError, match="^model:"):
        fit_stages("mlp", hn.tasks.make("functions1d_continual", length=8, n_train=8, n_test=4))


# --- protocol "continual" (the same check as a job of the experiments runner) ---------------------
def _continual_job(models, options=None, **params):
    from hebbnets.experiments import Bench, execute, plan_bench

    task = hn.tasks.make("functions1d_continual", seed=0, **{"length": 16, "n_train": 48, "n_test": 16, **params})
    bench = Bench("c", "functions1d_continual", models, params={"length": 16, "n_train": 48, "n_test": 16, **params},
                  seeds=(1,), protocol="continual", options=options or {})
    return task, execute(plan_bench(None, bench, "quick", task=task, chosen={}), None)


def test_continual_protocol_scores_like_fit_stages_and_adds_forgetting():
    from hebbnets.experiments import variant

    cfg = dict(hidden=(8,), epochs=3, progress=False)
    task, [entry] = _continual_job((variant("mlp", **cfg),))
    rows = {(r["split"], r["metric"]): r["value"] for r in entry["rows"]}
    records = fit_stages(hn.models.make("mlp", seed=1, **cfg), task)
    for r in records:
        metric = "mse" if r["stage"] == "stage2" else "after_stage1:mse"
        assert rows[(r["split"], metric)] == pytest.approx(r["value"], rel=1e-6)
    f = forgetting(records)["stage1"]
    assert rows[("id_stage1", "forgetting")] == pytest.approx(f["forgetting"], rel=1e-6)
    assert rows[("id_stage1", "forgetting_ratio")] == pytest.approx(f["ratio"], rel=1e-6)
    assert ("id_stage2", "forgetting") not in rows  # the last stage is scored right after it
    # forward transfer's reference: the untrained model (built under the seed, as fit builds it) on every split
    untrained = hn.models.make("mlp", seed=1, **cfg)
    torch.manual_seed(1)
    untrained.build(hn.DataSpec.from_split(task.stages["stage1"]))
    for split, test in task.tests.items():
        assert rows[(split, "before:mse")] == pytest.approx(untrained.score(test), rel=1e-6)
    assert rows[("id_stage1", "before:mse")] != rows[("id_stage1", "after_stage1:mse")]
    assert entry["stats"]["partial_fit_seconds"] > 0 and "entanglement" not in entry["stats"]
    # every stage's training length is on record: 3 epochs without patience stopping = the cap, each stage
    assert [(s["stage"], s["epochs_run"], s["epochs"], s["at_cap"]) for s in entry["stats"]["stages"]] == [
        ("stage1", 3, 3, True), ("stage2", 3, 3, True)]
    assert all(0 <= s["best_val_epoch"] < 3 for s in entry["stats"]["stages"])


def test_stage_training_reads_both_training_loops_and_stops_below_the_cap():
    from hebbnets.continual import stage_training

    task = hn.tasks.make("functions1d_continual", seed=0, length=16, n_train=48, n_test=8)
    first, second = task.stages.values()
    vn = hn.models.make("vn", seed=0, atoms=(8,), epochs=4, lam=0.05, progress=False).fit(first)
    s = stage_training(vn.partial_fit(second), "stage2")
    assert s["stage"] == "stage2" and s["epochs"] == 4 and s["epochs_run"] == len(vn.train_history["energy"])
    assert s["at_cap"] == (s["epochs_run"] == 4)
    mlp = hn.models.make("mlp", seed=0, hidden=(4,), epochs=50, patience=1, lr=0.5, progress=False).fit(first)
    s = stage_training(mlp, "stage1")
    assert s["epochs_run"] == len(mlp.train_history["train"]) < 50 and s["at_cap"] is False  # patience 1 stops it
    assert stage_training(object(), "x") == {"stage": "x", "epochs_run": None, "epochs": None, "at_cap": None,
                                             "best_val_epoch": None}


def test_continual_protocol_records_entanglement_for_vn_and_mlp():
    from hebbnets.experiments import decode_images, variant

    task, (vn, mlp) = _continual_job((variant("vn", atoms=(12,), epochs=2, lam=0.05, progress=False),
                                      variant("mlp", hidden=(8,), epochs=2, progress=False)),
                                     options={"entanglement": True}, mode="masked")
    ent = vn["stats"]["entanglement"]
    over = ent["after_stage1"]["overlap"]["layer0"]
    assert -1 <= over["cosine"] <= 1 and 0 <= over["weighted_jaccard"] <= 1
    st = ent["final"]["usage"]["stages"]
    assert st["first_only"] + st["second_only"] + st["both"] + st["neither"] == st["atoms"] == 12
    assert len(ent["final"]["usage"]["by_factor"]) == 12 and ent["final"]["usage"]["factors"] == list(task.info["factors"])
    hist = ent["final"]["sparsity"][0]["histogram"]
    assert sum(hist) == len(task.tests["id"]) and len(hist) == ent["final"]["sparsity"][0]["max"] + 1
    atoms = decode_images(ent["final"]["atoms"]["stage1"])
    assert tuple(atoms.shape) == (8, 1, 16)  # the 8 most used input-side atoms, as 1-row images (curves)
    assert set(ent["weight_change"]) == {"layers.0.S", "layers.0.U"}
    assert 0 <= ent["weight_change"]["layers.0.S"]["atoms_unchanged"] <= 1
    layers = mlp["stats"]["entanglement"]["after_stage1"]["overlap"]
    assert len(layers) == 2 and all(-1 <= m["cosine"] <= 1 for m in layers.values())
    assert "usage" not in mlp["stats"]["entanglement"]["final"]  # atom measures are the VN's


def test_continual_protocol_refuses_a_task_without_stages_and_unknown_options():
    from hebbnets.experiments import Bench, plan_bench, variant

    bad = Bench("c", "toy_atoms", (variant("mlp", epochs=1),), params={"n_train": 8, "n_test": 4}, seeds=(0,),
                protocol="continual")
    with pytest.raises(ValueError, match="task: 'toy_atoms' has no stages"):
        plan_bench(None, bad, "quick")
    with pytest.raises(ValueError, match="options: unknown"):
        plan_bench(None, bad.with_(task="functions1d_continual", params={"length": 8, "n_train": 8, "n_test": 4},
                                   options={"nope": 1}), "quick")


# --- schedules: joint training and a replay buffer (the field's references) -------------------------
def test_joint_schedule_fits_every_stage_at_once_and_scores_once():
    from hebbnets.continual import concat_splits
    from hebbnets.experiments import variant

    cfg = dict(hidden=(8,), epochs=3, progress=False)
    task, [entry] = _continual_job((variant("mlp-joint", "mlp", options={"schedule": "joint"}, **cfg),))
    both = concat_splits(list(task.stages.values()))
    assert len(both) == sum(len(s) for s in task.stages.values())
    assert entry["options"] == {"schedule": "joint"}
    model = hn.models.make("mlp", seed=1, **cfg).fit(both)
    rows = {(r["split"], r["metric"]): r["value"] for r in entry["rows"]}
    assert set(rows) == {(t, "mse") for t in task.tests}  # final scores only: nothing to forget
    for split, test in task.tests.items():
        assert rows[(split, "mse")] == pytest.approx(model.score(test), rel=1e-6)
    records = fit_stages(hn.models.make("mlp", seed=1, **cfg), task, schedule="joint")
    assert {r["stage"] for r in records} == {"joint"}
    assert [s["stage"] for s in entry["stats"]["stages"]] == ["joint"]


def test_replay_schedule_adds_a_seeded_buffer_of_the_earlier_stage():
    from hebbnets.continual import stage_schedule

    task = hn.tasks.make("functions1d_continual", seed=0, length=16, n_train=48, n_test=16)
    plan = stage_schedule(task, "replay", 0.25, seed=3)
    (n1, s1), (n2, s2) = plan
    first, second = task.stages.values()
    assert (n1, n2) == ("stage1", "stage2") and s1 is first
    assert len(s2) == len(second) + round(0.25 * len(first))
    assert bool((s2.x[: len(second)] == second.x).all())
    buffer = s2.x[len(second):]
    assert all(bool((first.x == row).all(-1).any()) for row in buffer)  # every replayed sample is a stage-1 sample
    again = stage_schedule(task, "replay", 0.25, seed=3)[1][1]
    assert torch.equal(again.x, s2.x)  # the buffer is a function of the seed
    assert not torch.equal(stage_schedule(task, "replay", 0.25, seed=4)[1][1].x, s2.x)


@pytest.mark.parametrize("options,match", [
    ({"schedule": "bogus"}, "schedule 'bogus' unknown"), ({"replay_fraction": 0.1}, "replay_fraction is an option"),
    ({"schedule": "replay", "replay_fraction": 0.0}, "replay_fraction: expected a number in"),
    ({"schedule": "joint", "entanglement": True}, "not with schedule 'joint'")])
def test_bad_schedule_options_fail_at_plan_time(options, match):
    from hebbnets.experiments import Bench, plan_bench, variant

    bench = Bench("c", "functions1d_continual", (variant("mlp", epochs=1),), params={"length": 8, "n_train": 8, "n_test": 4},
                  seeds=(0,), protocol="continual", options=options)
    with pytest.raises(ValueError, match=match):
        plan_bench(None, bench, "quick")
    with pytest.raises(ValueError, match="^schedule:"):
        fit_stages(hn.models.make("mlp", epochs=1), hn.tasks.make("functions1d_continual", length=8, n_train=8, n_test=4),
                   schedule="bogus")
