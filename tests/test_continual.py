"""fit_stages learns stages with fit then partial_fit; forgetting reads the records."""
import pytest

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
