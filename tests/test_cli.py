"""The thin CLI: bad input is one error line and exit code 2."""
import pytest

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
