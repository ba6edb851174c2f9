"""The README's report table quotes each report's recorded compute: the two must agree, so a
rerun that adds records cannot leave a stale figure in the README."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _report_hours(name: str) -> str:
    text = (ROOT / "reports" / f"{name}.md").read_text()
    m = re.search(r"Compute behind these records: ([0-9.]+) h", text)
    assert m, f"reports/{name}.md has no 'Compute behind these records' line"
    return m.group(1)


def test_readme_quotes_every_reports_recorded_compute():
    rows = re.findall(r"^\| \[`reports/(\w+)\.md`\].*?not run in one go: ([0-9.]+) h of recorded", (ROOT / "README.md")
                      .read_text(), flags=re.M)
    assert len(rows) >= 4, "the README's report table lost its 'not run in one go: X h of recorded ...' cells"
    for name, hours in rows:
        assert hours == _report_hours(name), f"README quotes {hours} h for {name}, the report says {_report_hours(name)} h"


def test_ci_runs_the_readmes_second_command_verbatim_and_the_test_extra_has_its_plugins():
    """``.ci/run`` is the README's command 2, word for word; its pytest options come from plugins the
    ``test`` extra installs (``-n`` is pytest-xdist's)."""
    block = re.search(r"^## Quick start\n\n```bash\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.M | re.S)
    commands = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, "the README opens with exactly two commands"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [commands[1]]
    if " -n " in commands[1]:
        extra = re.search(r'^test = \[(.*?)\]', (ROOT / "pyproject.toml").read_text(), flags=re.M | re.S).group(1)
        assert '"pytest-xdist' in extra


def _python_snippets() -> list[tuple[int, str]]:
    """Every ``python`` block of the README, with the line it starts on."""
    text = (ROOT / "README.md").read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.M | re.S)]


def test_the_readme_shows_the_library_and_the_layers():
    snippets = [code for _, code in _python_snippets()]
    assert len(snippets) >= 7
    assert any("VNLayer" in c and "Adam" in c and "mnist_comp" in c for c in snippets)
    assert any("RSGNEncoder" in c and "slow_step" in c for c in snippets)


@pytest.mark.parametrize("line, code", _python_snippets(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_every_readme_snippet_runs_alone_and_writes_nothing(line, code, tmp_path, monkeypatch, capsys):
    """Each block runs on its own (a fresh namespace: it imports what it uses) in an empty working
    folder, prints something, and leaves the folder empty (examples write into temporary folders)."""
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), f"the snippet at README.md:{line} prints nothing"
    assert not list(tmp_path.iterdir()), f"the snippet at README.md:{line} wrote {list(tmp_path.iterdir())}"
