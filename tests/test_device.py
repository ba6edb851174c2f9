"""Device and dtype contract of every registered model (``make(device=..., dtype=...)``, ``.to``).

This machine has no GPU, so the CUDA cases skip here; what a GPU run would catch is checked on
the CPU another way: fit and predict run with torch's default device set to ``meta``, so any
tensor a model creates without naming a device lands on ``meta`` and the first operation that
mixes it with the model's (CPU) tensors fails, exactly as a CPU tensor would on a CUDA model.
Parameters are built on the CPU (``Model.build``), so the probe covers training and prediction.
"""
import warnings

import pytest
import torch

import hebbnets as hn

from .test_models import CASES, CLOSED_FORM

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


def _data(name, n=32, seed=1):
    cfg, make_split = CASES[name]
    return cfg, make_split(n, seed=seed)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_partial_fit_and_predict_name_the_device_of_every_tensor_they_create(name):
    cfg, split = _data(name)
    more = CASES[name][1](24, seed=2)
    model = hn.models.make(name, seed=0, **cfg)
    with torch.device("meta"):  # an un-placed tensor goes here and fails against the CPU ones
        model.fit(split)
        if name not in CLOSED_FORM:
            model.partial_fit(more)
        out = model.predict(split.x, split.x_mask)
    assert out.device.type == "cpu"
    assert all(t.device.type == "cpu" for t in [*model.parameters(), *model.buffers()])


@pytest.mark.parametrize("name", sorted(CASES))
def test_make_with_a_dtype_trains_and_predicts_in_it(name):
    cfg, split = _data(name)
    model = hn.models.make(name, seed=0, dtype=torch.float64, **cfg).fit(split)  # float32 data is cast
    assert model.model_dtype == torch.float64
    floats = [t for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()]
    assert all(t.dtype == torch.float64 for t in floats)
    out = model.predict(split.x, split.x_mask)
    assert out.dtype == (torch.int64 if split.is_classification else torch.float64)
    assert torch.isfinite(out.double()).all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_to_after_fit_moves_every_learned_tensor_and_later_fits_continue_there(name):
    cfg, split = _data(name)
    model = hn.models.make(name, seed=0, **cfg).fit(split)
    before = model.predict(split.x, split.x_mask)
    model.to(torch.float64)  # a tensor left behind would now meet float64 data and fail
    after = model.predict(split.x.double(), None if split.x_mask is None else split.x_mask.double())
    if split.is_classification:
        assert (after == before).float().mean() >= 0.9
    else:
        assert after.dtype == torch.float64
        torch.testing.assert_close(after.float(), before, rtol=1e-2, atol=2e-3)
    if name not in CLOSED_FORM:
        model.partial_fit(CASES[name][1](24, seed=2))
        assert all(t.dtype == torch.float64 for t in model.parameters() if t.is_floating_point())


def test_a_float64_model_matches_its_float32_twin_on_a_closed_form_fit():
    cfg, split = _data("pca")
    a = hn.models.make("pca", **cfg).fit(split).predict(split.x)
    b = hn.models.make("pca", dtype="float64", **cfg).fit(split).predict(split.x)
    assert b.dtype == torch.float64
    torch.testing.assert_close(b.float(), a, rtol=1e-4, atol=1e-5)


def test_vn_config_dtype_follows_the_model_dtype():
    cfg, _ = _data("vn")
    model = hn.models.make("vn", dtype=torch.float64, **cfg)
    assert model.config.dtype == "float64"
    assert model.to(torch.float32).config.dtype == "float32"


@pytest.mark.parametrize("device, match", [("tpu", "device"), ("cuda:x", "device"), (3, "device")])
def test_an_unknown_device_is_one_error_naming_device(device, match):
    with pytest.raises(ValueError, match=f"^{match}:"):
        hn.models.make("mlp", device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_on_a_machine_without_it_is_one_error_and_auto_picks_the_cpu():
    with pytest.raises(ValueError, match="^device: 'cuda' asked for CUDA"):
        hn.models.make("mlp", device="cuda")
    assert hn.models.make("mlp", device="auto").device == torch.device("cpu")


@pytest.mark.parametrize("dtype", [torch.int64, "int8", "float128", 1.0])
def test_a_non_floating_dtype_is_one_error_naming_dtype(dtype):
    with pytest.raises(ValueError, match="^dtype:"):
        hn.models.make("mlp", dtype=dtype)


def test_split_to_moves_and_casts_floats_only():
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 0, 1])
    split = hn.Split(x, y)
    moved = split.to("cpu", torch.float64)
    assert moved.x.dtype == torch.float64 and moved.y.dtype == torch.int64
    assert split.to("cpu") is split  # nothing to move: the same split
    with pytest.raises(ValueError, match="^dtype:"):
        split.to(dtype=torch.int32)


def test_load_onto_a_device_and_into_a_dtype(tmp_path):
    cfg, split = _data("mlp")
    model = hn.models.make("mlp", **cfg).fit(split)
    model.save(tmp_path / "m")
    back = hn.models.load(tmp_path / "m", device="cpu")
    assert back.device == torch.device("cpu")
    torch.testing.assert_close(back.predict(split.x), model.predict(split.x))
    assert back.to(torch.float64).predict(split.x).dtype == torch.float64
    with pytest.raises(ValueError, match="^device:"):
        hn.models.load(tmp_path / "m", device="tpu")


def _placed_on(model, device):
    return all(t.device == device for t in [*model.parameters(), *model.buffers()])


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_model_fits_predicts_saves_and_loads_on_the_device_it_was_made_for(name, device, tmp_path):
    cfg, split = _data(name)
    model = hn.models.make(name, seed=0, device=device, **cfg).fit(split)
    assert model.device == device and _placed_on(model, device)
    out = model.predict(split.x, split.x_mask)
    assert out.device == device
    twin = hn.models.make(name, seed=0, device=device, **cfg).fit(split)  # determinism per device
    assert torch.equal(twin.predict(split.x, split.x_mask), out)
    model.save(tmp_path / "m")
    back = hn.models.load(tmp_path / "m", device=device)
    assert back.device == device and _placed_on(back, device)
    assert torch.equal(back.predict(split.x, split.x_mask), out)
    assert isinstance(model.score(split), float)


@CUDA
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_model_fits_and_predicts_on_cuda_like_on_the_cpu(name):
    cfg, split = _data(name)
    gpu = hn.models.make(name, seed=0, device="cuda", dtype=torch.float64, **cfg).fit(split)
    cpu = hn.models.make(name, seed=0, dtype=torch.float64, **cfg).fit(split)
    assert all(t.device.type == "cuda" for t in [*gpu.parameters(), *gpu.buffers()])
    out = gpu.predict(split.x, split.x_mask)
    assert out.device.type == "cuda"
    ref = cpu.predict(split.x, split.x_mask)
    if split.is_classification:
        assert (out.cpu() == ref).float().mean() >= 0.9
    else:
        torch.testing.assert_close(out.cpu(), ref, rtol=1e-3, atol=1e-4)


def test_the_device_check_script_runs_end_to_end_at_smoke_sizes(tmp_path):
    # benchmarks/gpu_check.py is what a machine with a GPU runs; here: every part at tiny sizes on the CPU
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
    spec = importlib.util.spec_from_file_location("gpu_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--smoke", "--device", "cpu", "--out", str(tmp_path / "r.json")]) == 0
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert [r["part"] for r in rows] == ["vn_inference", "epoch", "epoch", "rsgn_step"] and all(r["ok"] for r in rows)
    assert module.main(["--device", "tpu"]) == 2


@pytest.mark.parametrize("name, field", [("mlp", "compile"), ("vn", "warm_start")])
def test_the_new_switches_take_booleans_only(name, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        hn.models.make(name, **{field: "yes"})


def test_half_and_bfloat16_are_remembered_like_to():
    model = hn.models.make("mlp")
    assert model.half().model_dtype == torch.float16 and model.bfloat16().model_dtype == torch.bfloat16
    assert model.double().model_dtype == torch.float64


@pytest.mark.parametrize("bad", ["tpu", "cuda:x"])
def test_to_and_split_to_name_the_device_they_reject(bad):
    with pytest.raises(ValueError, match="^device:"):
        hn.models.make("mlp").to(bad)
    with pytest.raises(ValueError, match="^device:"):
        hn.Split(torch.randn(4, 2), torch.randn(4, 1)).to(bad)
