"""Checkpoints (safetensors + JSON): a broken or mismatched folder is one ValueError naming the
path; a model comes back in the dtype it was saved in."""
import json

import pytest
import torch

import hebbnets as hn


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    task = hn.tasks.make("toy_atoms", seed=0, n_train=60, n_test=10)
    model = hn.models.make("mlp", seed=0, hidden=(8,), epochs=1, progress=False).fit(task.train)
    path = tmp_path_factory.mktemp("ckpt") / "mlp"
    model.save(path)
    return path, task


def _copy(saved, tmp_path):
    path, _ = saved
    out = tmp_path / "ckpt"
    out.mkdir()
    for f in path.iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    return out


@pytest.mark.parametrize("damage, words", [
    (lambda p: (p / "config.json").write_text("{not json"), "not valid JSON"),
    (lambda p: (p / "config.json").write_text(json.dumps({"model": "mlp"})), "lacks"),
    (lambda p: (p / "config.json").write_text(json.dumps({**json.loads((p / "config.json").read_text()),
                                                           "model": "nope"})), "not registered"),
    (lambda p: (p / "model.safetensors").write_bytes(b"garbage"), "safetensors"),
    (lambda p: (p / "model.safetensors").unlink(), "no model.safetensors"),
    (lambda p: (p / "config.json").write_text(json.dumps({**json.loads((p / "config.json").read_text()),
                                                           "config": {"hidden": [16]}})), "do not match"),
    (lambda p: (p / "config.json").write_text(json.dumps({**json.loads((p / "config.json").read_text()),
                                                           "config": {"hiddn": [8]}})), "does not describe"),
])
def test_a_broken_checkpoint_is_one_value_error_naming_the_path(saved, tmp_path, damage, words):
    path = _copy(saved, tmp_path)
    damage(path)
    with pytest.raises(ValueError, match="^path: ") as exc:
        hn.models.load(path)
    assert words in str(exc.value) and str(path) in str(exc.value)


def test_a_float64_model_comes_back_float64_and_predicts_float64(saved, tmp_path):
    path, task = saved
    model = hn.models.load(path).to(torch.float64)
    model.save(tmp_path / "f64")
    again = hn.models.load(tmp_path / "f64", device="cpu")
    assert all(p.dtype == torch.float64 for p in again.parameters())
    x = task.tests["id"].x.double()
    assert torch.equal(again.predict(x), model.predict(x))
