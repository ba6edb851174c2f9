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
    assert files == [".csv", ".json"]
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert len(doc["records"]) == 2 * 2 * 2 and doc["records"][0]["model_config"]["epochs"] == 1
    assert all(r["model_config"]["progress"] is False for r in doc["records"])
