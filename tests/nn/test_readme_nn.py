"""The README's ``hebbnets.nn`` examples run as written: every ``python`` snippet of the section
"Layers for your own networks" is executed, each in a fresh namespace (it imports what it uses)
and with a temporary working directory, so nothing is written into the repository."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### Layers for your own networks: `hebbnets.nn`"


def _snippets() -> list[str]:
    text = (ROOT / "README.md").read_text()
    assert SECTION in text, f"README.md lost its section {SECTION!r}"
    body = text.split(SECTION, 1)[1]
    body = re.split(r"^#{2,6} ", body, maxsplit=1, flags=re.M)[0]  # up to the next heading (not a # comment)
    return re.findall(r"^```python\n(.*?)^```", body, flags=re.M | re.S)


def test_the_section_has_the_two_examples():
    snippets = _snippets()
    assert len(snippets) == 2
    assert "VNLayer" in snippets[0] and "Adam" in snippets[0] and "mnist_comp" in snippets[0]
    assert "RSGNEncoder" in snippets[1] and "slow_step" in snippets[1]


@pytest.mark.parametrize("index", range(len(_snippets())))
def test_readme_snippet_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_snippets()[index], f"README.md[hebbnets.nn snippet {index}]", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), "the example prints its results"
    assert not list(tmp_path.iterdir()), "the example writes no files"
