import json

import pytest

from hebbnets.cli import main
from hebbnets.experiments import Bench, RecordStore, Scale, Spec, get_spec, register_spec, report, reproduce
from hebbnets.experiments import _spec
from hebbnets.tasks import _configs


def test_toy_spec_end_to_end_at_smoke_scale(tmp_path, capsys):
    """tune -> run -> report into --out; the report is rebuilt byte for byte from the records;
    a second run recomputes nothing; the package's configs are never touched by a smoke tune."""
    package = sorted((p.name, p.read_bytes()) for p in _configs.PACKAGE_DIR.glob("*.json"))
    logs = []
    [path] = reproduce("toy", ["tune", "run", "report"], scale="smoke", out=tmp_path, log=logs.append)
    assert path == tmp_path / "reports" / "toy_smoke.md"
    assert sorted((p.name, p.read_bytes()) for p in _configs.PACKAGE_DIR.glob("*.json")) == package
    tuned = json.loads((tmp_path / "configs" / "smoke" / "toy_atoms.json").read_text())
    assert set(tuned["models"]) == {"vn", "mlp"}
    assert all(len(m["points"]) == 6 for m in tuned["models"].values())
    # every point carries the epochs it ran and the cap it ran under (smoke: 1), so the configs table marks it
    assert all(p["epochs_run"] == p["epochs_cap"] == 1 for m in tuned["models"].values() for p in m["points"])
    entries = RecordStore(tmp_path / "records" / "toy.jsonl").entries()
    fits = [e for e in entries if e["protocol"] == "fit"]
    assert len(fits) == 2 and len(entries) == 2 + 12  # two fits (1 seed), 12 tuning points
    for e in fits:  # the run stage used the configs just tuned (under --out), at smoke overrides
        chosen = tuned["models"][e["model"]]["config"]
        assert all(e["config"][k] == v for k, v in chosen.items() if k != "epochs") and e["config"]["epochs"] == 1
        assert e["commit"] is None or len(e["commit"]) == 40
        assert {"rows", "stats", "slots", "dirty", "version"} <= set(e)
    text = path.read_text()
    assert "| vn |" in text and "| mlp |" in text and "toy_smoke_id_vs_ood.png" in text
    assert "ended at their epoch cap, not by patience: `vn` 6 of 6 (the chosen point among them)" in text
    assert (tmp_path / "reports" / "toy_smoke_id_vs_ood.png").exists()
    path.unlink()
    assert report("toy", scale="smoke", out=tmp_path, figures=False)[0].read_text() == text
    logs.clear()
    reproduce("toy", ["run"], scale="smoke", out=tmp_path, log=logs.append)
    assert any("2 already in" in line and "0 to run" in line for line in logs)


@pytest.mark.parametrize("calls", [[["tune", "run"]], [["tune"], ["run"]]], ids=["one call", "two calls"])
def test_the_run_stage_uses_the_configs_the_tune_stage_just_wrote_into_the_package(tmp_path, monkeypatch, calls):
    """With the package's own configs (quick scale in the checkout), a task generated before the
    tune stage carries the old choice: the run stage must not use it, also when it runs in a
    later ``reproduce`` call of the same process (the tune stage's own seed-0 task is cached)."""
    from hebbnets.experiments import _reproduce

    package = tmp_path / "package_configs"
    package.mkdir()
    before = json.loads((_configs.PACKAGE_DIR / "toy_atoms.json").read_text())
    before["models"]["vn"]["config"]["lam"] = 0.5  # a choice no point of the search has: stale if it survives
    (package / "toy_atoms.json").write_text(json.dumps(before))
    monkeypatch.setattr(_configs, "PACKAGE_DIR", package)
    monkeypatch.setattr(_reproduce, "configs_dir", lambda out, scale: None)  # as for quick in the checkout
    for stages in calls:
        reproduce("toy", stages, scale="smoke", out=tmp_path / "out", log=None, models=["vn"])
    tuned = json.loads((package / "toy_atoms.json").read_text())["models"]["vn"]
    assert tuned["commit"] is None or tuned["scale"] == "smoke"  # written by this tune, into the package
    [fit] = [e for e in RecordStore(tmp_path / "out" / "records" / "toy.jsonl").entries() if e["protocol"] == "fit"]
    assert all(fit["config"][k] == v for k, v in tuned["config"].items() if k != "epochs")


def test_recompute_refits_the_tune_stages_validation_points(tmp_path):
    """``--recompute`` applies to the tune stage as to the run stage: every point is fitted again
    (a record made from a dirty tree can be replaced from a clean one), not reused."""
    logs = []
    for recompute in (False, False, True):
        logs.clear()
        reproduce("toy", ["tune"], scale="smoke", out=tmp_path, log=logs.append, models=["mlp"], recompute=recompute)
    assert any("6 to run" in line for line in logs) and not any("6 already in" in line for line in logs)
    assert len(RecordStore(tmp_path / "records" / "toy.jsonl").entries()) == 6  # replaced, not added


@pytest.mark.parametrize("argv, needle", [
    (["reproduce", "nope"], "unknown spec"),
    (["reproduce", "toy", "--stage", "train"], "--stage"),
    (["reproduce", "toy", "--benches", "nope"], "benches"),
    (["reproduce", "toy", "--models", "cnn"], "models"),
    (["reproduce", "toy", "--seeds", "1,1"], "seeds"),
    (["reproduce", "toy", "--address", "x:1"], "--address"),
    (["report", "nope"], "unknown spec"),
])
def test_bad_reproduce_input_exits_2(argv, needle, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert not (tmp_path / "records").exists()


def test_a_plan_is_checked_whole_before_the_first_fit(capsys, tmp_path, monkeypatch):
    """VN first, then a classifier on a regression task: the error names the classifier and no
    record is written (issue 14, item 7)."""
    monkeypatch.setattr(_spec, "_SPECS", dict(_spec._SPECS))  # registered for this test only
    register_spec(Spec("bad_plan_test", "t", benches=(
        Bench("ok", "toy_atoms", ("vn",), scales={"smoke": Scale(params={"n_train": 40, "n_test": 10})}),
        Bench("bad", "toy_atoms", ("vn", "centroid"), scales={"smoke": Scale(params={"n_train": 40, "n_test": 10})}),
    )))
    assert get_spec("bad_plan_test").bench("bad").variants[1].model == "centroid"
    assert main(["reproduce", "bad_plan_test", "--scale", "smoke", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "'centroid'" in err and "classifier" in err and "bench 'bad'" in err
    assert not (tmp_path / "records").exists()


def test_a_variant_tuned_by_its_label_runs_with_its_own_choice(tmp_path, monkeypatch):
    """``tuning`` keyed by a variant label: that variant gets its own search, its choice is kept
    under the label (naming its model) and its fits start from it, not from the model's choice."""
    from hebbnets.experiments import Grid, variant

    monkeypatch.setattr(_spec, "_SPECS", dict(_spec._SPECS))  # registered for this test only
    base = dict(hidden=(4,), epochs=1, batch_size=16)
    register_spec(Spec("label_tune_test", "t", benches=(Bench(
        "b", "toy_atoms", ("mlp", variant("mlp-wide", "mlp", hidden=(12,))),
        tuning={"mlp": Grid({"lr": [1e-3, 2e-3]}, base=base),
                "mlp-wide": Grid({"lr": [5e-2, 6e-2]}, base={**base, "hidden": (12,)})},
        scales={"smoke": Scale(params={"n_train": 40, "n_test": 10})}),)))
    with pytest.raises(ValueError, match="not among the models"):
        Bench("b", "toy_atoms", ("mlp",), tuning={"mlp-wide": Grid({"lr": [1e-3]})})
    reproduce("label_tune_test", ["tune", "run"], scale="smoke", out=tmp_path, log=None)
    doc = json.loads((tmp_path / "configs" / "smoke" / "toy_atoms.json").read_text())["models"]
    assert doc["mlp-wide"]["model"] == "mlp" and "model" not in doc["mlp"]
    assert doc["mlp-wide"]["config"]["hidden"] == [12] and len(doc["mlp-wide"]["points"]) == 2
    entries = RecordStore(tmp_path / "records" / "label_tune_test.jsonl").entries()
    fits = {e["slots"][0]["label"]: e for e in entries if e["protocol"] == "fit"}
    assert fits["mlp-wide"]["config"]["lr"] == doc["mlp-wide"]["config"]["lr"] in (5e-2, 6e-2)
    assert fits["mlp"]["config"]["lr"] == doc["mlp"]["config"]["lr"] in (1e-3, 2e-3)
    assert fits["mlp-wide"]["config"]["hidden"] == [12] and fits["mlp"]["config"]["hidden"] == [4]
    tuned = {e["slots"][0]["label"] for e in entries if e["protocol"] == "tune"}
    assert tuned == {"mlp", "mlp-wide"}
