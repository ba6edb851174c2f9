import json

import pytest

from hebbnets.bench.cli_run import main, parse_assignments, parse_value
from hebbnets.experiments import RecordStore


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
    (["run", "toy_atoms", "--models", "vn,centroid"], "classifier"),
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


TINY_ARGS = ["--set", "grid=8", "--set", "held_out=[3,4]", "--model-set", "mlp.epochs=1",
             "--model-set", "mlp.hidden=[8]", "--quiet"]


def _values(path):
    return sorted((e["seed"], r["split"], r["value"]) for e in RecordStore(path).entries() for r in e["rows"])


def test_successful_run_prints_table_and_writes_store_and_csv(capsys, tmp_path):
    argv = ["run", "spatial2d", "--models", "mlp,factorized", "--seeds", "0,1", "--out", str(tmp_path),
            "--model-set", "factorized.epochs=1"] + TINY_ARGS
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "OOD/ID" in out and "mlp" in out and "factorized" in out
    assert sorted(p.suffix for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [".csv", ".jsonl"]
    entries = RecordStore(next(tmp_path.glob("*.jsonl"))).entries()
    assert len(entries) == 2 * 2 and all(len(e["rows"]) == 2 for e in entries)
    assert all(e["config"]["progress"] is False and e["config"]["epochs"] == 1 for e in entries)


def test_rerun_reuses_finished_fits(capsys, tmp_path):
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0", "--out", str(tmp_path)] + TINY_ARGS) == 0
    store = next(tmp_path.glob("*.jsonl"))
    first = _values(store)
    capsys.readouterr()
    argv = ["run", "spatial2d", "--models", "mlp", "--seeds", "0,1", "--out", str(tmp_path)]
    assert main(argv + [a for a in TINY_ARGS if a != "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 already in" in err and "1 to run" in err and "mlp seed=1" in err and "mlp seed=0" not in err
    both = _values(store)
    assert [r for r in both if r[0] == 0] == first and {r[0] for r in both} == {0, 1}


def test_merge_equals_a_joint_run(capsys, tmp_path):
    for seed in ("0", "1"):
        argv = ["run", "spatial2d", "--models", "mlp", "--seeds", seed, "--out", str(tmp_path / seed)]
        assert main(argv + TINY_ARGS) == 0
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0,1", "--out", str(tmp_path / "joint")]
                + TINY_ARGS) == 0
    parts = [str(next((tmp_path / s).glob("*.jsonl"))) for s in ("0", "1")]
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m.jsonl")] + parts) == 0
    assert "mlp" in capsys.readouterr().out and (tmp_path / "m.csv").is_file()
    assert _values(tmp_path / "m.jsonl") == _values(next((tmp_path / "joint").glob("*.jsonl")))


@pytest.mark.parametrize("make_inputs, needle", [
    (lambda d, good: [good, good], "both hold"),
    (lambda d, good: [str(d / "missing.jsonl")], "no such file"),
    (lambda d, good: [(d / "bad.jsonl").write_text("{\n{\n") and str(d / "bad.jsonl")], "not a record entry"),
    (lambda d, good: [(d / "x.json").write_text("{}") and str(d / "x.json")], "not a record store"),
    (lambda d, good: [(d / "nk.jsonl").write_text('{"key": "a"}\n') and str(d / "nk.jsonl")], "without key and kind"),
])
def test_merge_bad_input_exits_2(make_inputs, needle, capsys, tmp_path):
    assert main(["run", "spatial2d", "--models", "mlp", "--seeds", "0", "--out", str(tmp_path / "r")] + TINY_ARGS) == 0
    good = str(next((tmp_path / "r").glob("*.jsonl")))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m.jsonl")] + make_inputs(tmp_path, good)) == 2
    err = capsys.readouterr().err
    assert err.startswith("hebbnets merge: error: inputs:") and needle in err
    assert not (tmp_path / "m.jsonl").exists()


def test_merge_output_must_be_jsonl(capsys, tmp_path):
    assert main(["merge", str(tmp_path / "m.json"), str(tmp_path / "x.jsonl")]) == 2
    assert "output" in capsys.readouterr().err
