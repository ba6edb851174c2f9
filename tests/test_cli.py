"""The thin CLI: bad input is one error line and exit code 2."""
import json

import pytest
import torch

from hebbnets.cli import main


@pytest.mark.parametrize(
    "argv, word",
    [
        (["demo", "--seeds", "x"], "--seeds"),
        (["demo", "--seeds", "-1"], "seed"),
        (["run", "nope", "--models", "vn"], "task"),
        (["run", "toy_atoms", "--models", "nope"], "nope"),
        (["run", "toy_atoms", "--models", "vn", "--set", "n_atomz=3"], "n_atomz"),
        (["--threads", "0", "demo"], "--threads"),
        (["run", "toy_atoms", "--threads", "0", "--models", "vn"], "--threads"),  # after the subcommand too
        # task parameters of the wrong kind: one line naming the parameter, before anything trains
        (["run", "toy_atoms", "--models", "mlp", "--set", "n_train=-5"], "n_train"),
        (["run", "toy_atoms", "--models", "mlp", "--set", "n_train=1.5"], "n_train"),
        (["run", "toy_atoms", "--models", "mlp", "--set", "n_train=true"], "n_train"),
        (["run", "toy_atoms", "--models", "mlp", "--set", "noise=-1"], "noise"),
        (["run", "toy_atoms", "--models", "mlp", "--set", "noise=NaN"], "noise"),
        (["run", "toy_atoms", "--models", "mlp", "--model-set", "mlp.lr=Infinity"], "mlp.lr"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, word, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0]


def test_unknown_command_is_an_argparse_error():
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and "hebbnets" in capsys.readouterr().out


def test_an_out_path_that_is_a_file_fails_before_anything_trains(tmp_path, capsys, monkeypatch):
    import hebbnets.experiments as ex
    import hebbnets.experiments._reproduce as rep

    def no_training(*args, **kwargs):  # pragma: no cover - reached only if the check comes too late
        raise AssertionError("training started before --out was checked")

    for module in (ex, rep):
        monkeypatch.setattr(module, "execute", no_training)
    afile = tmp_path / "afile"
    afile.write_text("")
    for argv in (["run", "toy_atoms", "--models", "mlp", "--out", str(afile)],
                 ["reproduce", "toy", "--out", str(afile / "below")],
                 ["report", "toy", "--out", str(afile)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--out" in err[0] and "is a file" in err[0], err


def test_threads_after_the_subcommand_sets_torch_threads(tmp_path, monkeypatch):
    import torch

    seen = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen.append(n))
    argv = ["run", "toy_atoms", "--models", "mlp", "--seeds", "0", "--set", "n_train=40", "--set", "n_test=10",
            "--model-set", "mlp.epochs=1", "--out", str(tmp_path), "--threads", "1", "--quiet"]
    assert main(argv) == 0 and seen and seen[0] == 1


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("device, says", [("tpu", "is not a device"), ("cuda:x", "is not a device")])
def test_a_bad_device_is_one_error_naming_device_before_anything_runs(tmp_path, capsys, where, device, says):
    run = ["run", "toy_atoms", "--models", "mlp", "--out", str(tmp_path)]
    argv = ["--device", device, *run] if where == "before" else [*run, "--device", device]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device" in err[0] and says in err[0], err
    assert not list(tmp_path.iterdir())  # nothing trained, nothing written


def test_device_reaches_every_fit_and_the_cpu_keeps_the_record_format(tmp_path, monkeypatch):
    import hebbnets.experiments._run as run_module

    made = []
    real_make = run_module._models.make
    monkeypatch.setattr(run_module._models, "make", lambda *a, **k: made.append(k.get("device")) or real_make(*a, **k))
    argv = ["run", "toy_atoms", "--models", "mlp", "--seeds", "0", "--set", "n_train=40", "--set", "n_test=10",
            "--model-set", "mlp.epochs=1", "--out", str(tmp_path), "--device", "auto", "--quiet"]
    assert main(argv) == 0
    assert made[-1] == ("cuda:0" if torch.cuda.is_available() else "cpu")  # the fit (planning probes on the CPU)
    entry = json.loads(next(tmp_path.glob("*.jsonl")).read_text().splitlines()[0])
    assert ("device" in entry["stats"]) == torch.cuda.is_available()
