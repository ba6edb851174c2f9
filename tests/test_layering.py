"""The import layering written down in ``pyproject.toml`` ([tool.importlinter]) holds: a module
imports only from its own layer or below (CLI > benchmark front ends > experiments >
measurements > analyses > models and tasks > training > core), and no report builder imports
a spec."""
from pathlib import Path

import pytest

lint = pytest.importorskip("importlinter.cli", reason="import-linter is in the test extra")

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept(capsys):
    code = lint.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out[-4000:]


def test_the_contracts_would_catch_an_upward_import(tmp_path, monkeypatch, capsys):
    # the same contracts over a copy of the package in which the core imports the experiments
    import shutil
    import sys

    pkg = tmp_path / "hebbnets"
    shutil.copytree(ROOT / "src" / "hebbnets", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    model = pkg / "_model.py"
    model.write_text(model.read_text() + "\nfrom .experiments import _spec  # an upward import\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "hebbnets" or m.startswith("hebbnets.")]:
        monkeypatch.delitem(sys.modules, name)
    code = lint.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 1
    assert "hebbnets._model -> hebbnets.experiments" in capsys.readouterr().out


def test_no_import_circle_among_the_packages():
    """No two top-level packages or modules of hebbnets import each other, directly or through
    others (a package spanning two layers, as ``bench`` did with its measurements, makes one)."""
    import grimp

    graph = grimp.build_graph("hebbnets", exclude_type_checking_imports=True)
    top = lambda module: ".".join(module.split(".")[:2])  # noqa: E731
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if top(module) != top(imported):
                edges.setdefault(top(module), set()).add(top(imported))

    def reachable(start: str) -> set[str]:
        seen, stack = set(), [start]
        while stack:
            for nxt in edges.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    assert sorted(p for p in edges if p in reachable(p)) == []
