import json

import pytest

from hebbnets.bench.cli_run import main, parse_assignments, parse_value


def test_parse_values():
    assert parse_value("masked") == "masked" and parse_value("3") == 3 and parse_value("[8, 16]") == [8, 16]
    assert parse_assignments(["mode=masked", "noise=0.1"], "--set") == {"mode": "masked", "noise": 0.1}
    assert parse_assignments(["mlp.epochs=2"], "--model-set", dotted=True) == {"mlp": {"epochs": 2}}
    with pytest.raises(ValueError, match="--set"):
        parse_assignments(["novalue"], "--set")


@pytest.mark.parametrize("argv, needle", [
    (["run", "nope", "--models", "mlp"], "unknown task"),
    (["run", "spatial2d", "--models", "mlp,nope"], "unknown model"),
    (["run", "spatial2d", "--models", "mlp", "--set", "oops"], "KEY=VALUE"),
    (["run", "spatial2d", "--models", "mlp", "--set", "bogus=1"], "bogus"),
    (["run", "spatial2d", "--models", "mlp", "--set", "mode=nope"], "mode"),
    (["run", "spatial2d", "--models", "mlp", "--seeds", "0,x"], "--seeds"),
    (["run", "spatial2d", "--models", "mlp", "--scale", "huge"], "scale"),
    (["run", "spatial2d", "--models", "mlp", "--model-set", "mlp.bogus=1"], "bogus"),
])
def test_bad_input_exits_2_with_message(argv, needle, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hebbnets run: error:") and needle in err
    assert not list(tmp_path.iterdir())


def test_missing_models_is_an_argparse_error():
    with pytest.raises(SystemExit) as exc:
        main(["run", "spatial2d"])
    assert exc.value.code == 2


def test_successful_run_prints_table_and_writes_files(capsys, tmp_path):
    argv = ["run", "spatial2d", "--models", "mlp,factorized", "--seeds", "0,1", "--out", str(tmp_path), "--quiet",
            "--set", "grid=8", "--set", "held_out=[3,4]", "--model-set", "mlp.epochs=1", "--model-set", "mlp.hidden=[8]",
            "--model-set", "factorized.epochs=1", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "OOD/ID" in out and "mlp" in out and "factorized" in out
    files = sorted(p.suffix for p in tmp_path.iterdir())
    assert files == [".csv", ".json", ".jsonl"]  # results + the per-fit checkpoint
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert len(doc["records"]) == 2 * 2 * 2 and doc["records"][0]["model_config"]["epochs"] == 1
    assert all(r["model_config"]["progress"] is False for r in doc["records"])


TINY_ARGS = ["--set", "grid=8", "--set", "held_out=[3,4]", "--model-set", "mlp.epochs=1",
             "--model-set", "mlp.hidden=[8]", "--quiet", "--no-progress"]


def _records(path):
    return sorted((r["seed"], r["split"], r["value"]) for r in json.loads(path.read_text())["records"])


def test_resume_reuses_finished_fits(capsys, tmp_path):
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0", "--out", str(tmp_path)] + TINY_ARGS) == 0
    first = _records(next(tmp_path.glob("*.json")))
    capsys.readouterr()
    argv = ["run", "spatial2d", "--models", "mlp", "--seeds", "0,1", "--out", str(tmp_path), "--resume"]
    assert main(argv + [a for a in TINY_ARGS if a != "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "mlp seed=0: reused" in err and "mlp seed=1: fit" in err
    both = _records(next(tmp_path.glob("*.json")))
    assert [r for r in both if r[0] == 0] == first and {r[0] for r in both} == {0, 1}


def test_merge_equals_a_joint_run(capsys, tmp_path):
    for seed in ("0", "1"):
        argv = ["run", "spatial2d", "--models", "mlp", "--seeds", seed, "--out", str(tmp_path / seed)]
        assert main(argv + TINY_ARGS) == 0
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0,1", "--out", str(tmp_path / "joint")]
                + TINY_ARGS) == 0
    parts = [str(next((tmp_path / s).glob("*.json"))) for s in ("0", "1")]
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m.json")] + parts) == 0
    assert "mlp" in capsys.readouterr().out and (tmp_path / "m.csv").is_file()
    merged = json.loads((tmp_path / "m.json").read_text())
    joint = json.loads(next((tmp_path / "joint").glob("*.json")).read_text())
    assert _records(tmp_path / "m.json") == _records(next((tmp_path / "joint").glob("*.json")))
    assert merged["summary"] == joint["summary"]


@pytest.mark.parametrize("make_inputs, needle", [
    (lambda d, good: [good, good], "both hold"),
    (lambda d, good: [str(d / "missing.json")], "no such file"),
    (lambda d, good: [(d / "bad.json").write_text("{") and str(d / "bad.json")], "not JSON"),
    (lambda d, good: [(d / "nr.json").write_text("{}") and str(d / "nr.json")], "records"),
    (lambda d, good: [(d / "bad_rec.json").write_text('{"records": [{"model": "mlp"}]}') and str(d / "bad_rec.json")],
     "without task"),
])
def test_merge_bad_input_exits_2(make_inputs, needle, capsys, tmp_path):
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0", "--out", str(tmp_path / "r")] + TINY_ARGS) == 0
    good = str(next((tmp_path / "r").glob("*.json")))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m.json")] + make_inputs(tmp_path, good)) == 2
    err = capsys.readouterr().err
    assert err.startswith("hebbnets merge: error: inputs:") and needle in err
    assert not (tmp_path / "m.json").exists()


def test_merge_output_must_be_json(capsys, tmp_path):
    assert main(["merge", str(tmp_path / "m.txt"), str(tmp_path / "x.json")]) == 2
    assert "output" in capsys.readouterr().err
