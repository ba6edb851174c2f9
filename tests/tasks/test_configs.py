"""Task configs are data (hebbnets/tasks/configs): loaded by the tasks, written by the tune stage."""
import json
from pathlib import Path

import pytest

import hebbnets as hn
from hebbnets.experiments import Bench, Grid, Moves, RecordStore, Scale, Spec, tune_bench
from hebbnets.experiments._reproduce import configs_dir, package_checkout
from hebbnets.tasks import _configs

STEMS = {("toy_atoms", None): "toy_atoms", ("functions1d", "masked"): "functions1d-masked",
         ("functions1d", "reconstruct"): "functions1d-reconstruct", ("spatial2d", "decode"): "spatial2d-decode",
         ("spatial2d", "reconstruct"): "spatial2d-reconstruct", ("nbody", None): "nbody",
         ("mnist_comp", "reconstruct"): "mnist_comp-reconstruct", ("mnist_comp", "transform"): "mnist_comp-transform"}


@pytest.mark.parametrize("task, mode", list(STEMS), ids=lambda v: str(v))
def test_tasks_start_from_their_committed_configs_file(task, mode):
    params = {"mode": mode} if mode else {}
    small = {} if task == "spatial2d" else {"n_train": 20, "n_test": 5}
    t = hn.tasks.make(task, seed=0, **params, **small)
    stem = STEMS[(task, mode)]
    assert t.model_configs == _configs.chosen(stem) and "vn" in t.model_configs
    doc = _configs.load(stem)
    for model, d in doc["models"].items():
        assert d["source"] and len(d["commit"]) == 40  # where the choice came from
        # every chosen config is a valid config of its model (a variant tuned on its own names it)
        hn.models.make(d.get("model", model), **d["config"])
        if d["points"]:  # the chosen value is the best validation point behind it
            assert d["value"] == min(p["value"] for p in d["points"])


def test_same_as_unknown_and_broken_files(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"models": {"m": {"config": {"lr": 1}}}}))
    (tmp_path / "b.json").write_text(json.dumps({"same_as": "a", "note": "reuses a"}))
    (tmp_path / "c.json").write_text(json.dumps({"same_as": "d"}))
    (tmp_path / "d.json").write_text(json.dumps({"same_as": "c"}))
    (tmp_path / "e.json").write_text("{")
    assert _configs.chosen("b", tmp_path) == {"m": {"lr": 1}} and _configs.chosen("nope", tmp_path) == {}
    with pytest.raises(ValueError, match="itself"):
        _configs.load("c", tmp_path)
    with pytest.raises(ValueError, match="JSON"):
        _configs.load("e", tmp_path)
    with pytest.raises(ValueError, match="stem"):
        _configs.path("../x")


def test_update_keeps_models_it_does_not_tune(tmp_path):
    _configs.update("t", {"task": "t", "models": {"a": {"config": {"x": 1}}, "b": {"config": {"y": 1}}}}, tmp_path)
    _configs.update("t", {"task": "t", "models": {"b": {"config": {"y": 2}}}}, tmp_path)
    assert _configs.chosen("t", tmp_path) == {"a": {"x": 1}, "b": {"y": 2}}
    (tmp_path / "s.json").write_text(json.dumps({"same_as": "t", "note": "reuses t"}))
    # a file that follows another keeps following it for the models it does not tune; its own entries win
    _configs.update("s", {"models": {"b": {"config": {"y": 3}}, "c": {"config": {"z": 1}}}}, tmp_path)
    assert _configs.chosen("s", tmp_path) == {"a": {"x": 1}, "b": {"y": 3}, "c": {"z": 1}}
    own = _configs.load("s", tmp_path, follow=False)
    assert own["same_as"] == "t" and own["note"] == "reuses t" and set(own["models"]) == {"b", "c"}
    assert _configs.chosen("t", tmp_path) == {"a": {"x": 1}, "b": {"y": 2}}  # the followed file is untouched
    _configs.update("t", {"models": {"a": {"config": {"x": 5}}}}, tmp_path)  # a later choice there reaches s
    assert _configs.chosen("s", tmp_path)["a"] == {"x": 5}


def test_where_tune_writes():
    root = Path(hn.__file__).resolve().parents[2]
    assert package_checkout(root) and configs_dir(root, "quick") is None  # the package's own folder
    assert configs_dir(root, "smoke") == root / "configs" / "smoke"
    assert configs_dir(Path("/tmp/elsewhere"), "quick") == Path("/tmp/elsewhere/configs/quick")


def test_tune_writes_the_choice_and_every_point_under_out(tmp_path):
    grid = Grid({"lr": [1e-3, 3e-2]}, base={"hidden": (8,), "epochs": 3})
    moves = Moves(({"lam": 0.5},), base={"atoms": (4,), "epochs": 1, "max_iter": 10})
    bench = Bench("b", "toy_atoms", ("vn", "mlp"), params={"n_train": 60, "n_test": 10},
                  tuning={"mlp": grid, "vn": moves}, scales={"quick": Scale(params={"n_train": 60, "n_test": 10})})
    spec = Spec("tunetest", "t", benches=(bench,))
    before = sorted((p.name, p.read_bytes()) for p in _configs.PACKAGE_DIR.glob("*.json"))
    store = RecordStore(tmp_path / "records" / "tunetest.jsonl")
    path = tune_bench(spec, bench, "quick", store, tmp_path, log=None)
    assert path == tmp_path / "configs" / "quick" / "toy_atoms.json"
    assert sorted((p.name, p.read_bytes()) for p in _configs.PACKAGE_DIR.glob("*.json")) == before
    doc = json.loads(path.read_text())
    mlp, vn = doc["models"]["mlp"], doc["models"]["vn"]
    assert [p["point"] for p in mlp["points"]] == [{"lr": 1e-3}, {"lr": 3e-2}]
    best = min(mlp["points"], key=lambda p: p["value"])
    assert mlp["config"] == {"hidden": [8], "epochs": 3, **best["point"]} and mlp["value"] == best["value"]
    assert [p.get("move") for p in vn["points"]] == [None, {"lam": 0.5}] and vn["points"][0]["accepted"]
    kept = vn["points"][1]["accepted"]
    assert vn["config"].get("lam") == (0.5 if kept else None)
    assert len(store) == 4 and all(e["protocol"] == "tune" for e in store.entries())
    # a second tune reads every point from the store: nothing is fitted again
    logs = []
    tune_bench(spec, bench, "quick", store, tmp_path, log=logs.append)
    assert all("0 to run" in line for line in logs if "to run" in line)
