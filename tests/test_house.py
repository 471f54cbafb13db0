"""The house's import rules (docs/architecture.md §1), checked on the sources' own imports:
faces do not import each other, a command module never imports another command module, and
the library below the faces never imports a face or a terminal library."""

from __future__ import annotations

import ast
from pathlib import Path

from segtools.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("analysis", "storage", "decode", "formats", "fetch")
FACE_ONLY = ("segtools.cli", "segtools.report", "pyspark_kafkalog", "pyspark", "rich",
             "matplotlib", "jinja2", "markupsafe", "playwright")


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (imports inside functions count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_no_command_imports_another_command():
    commands = {module for module, _ in COMMANDS.values()}
    for module in commands:
        path = ROOT / (module.replace(".", "/") + ".py")
        others = (imports(path) & commands) - {module}
        assert not others, f"{module} imports {sorted(others)}"


def test_library_imports_no_face_and_no_terminal_library():
    for room in LIBRARY:
        for path in (ROOT / "segtools" / room).rglob("*.py"):
            bad = {m for m in imports(path) if m.startswith(FACE_ONLY)}
            assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_spark_face_does_not_import_the_cli():
    for path in (ROOT / "spark" / "pyspark_kafkalog").rglob("*.py"):
        bad = {m for m in imports(path) if m.startswith("segtools.cli")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_report_is_a_face_over_the_library():
    """The report room calls the library (through the API) and shared presentation
    (``cli/render``), never a command module; the template library stays in it."""
    commands = {module for module, _ in COMMANDS.values()}
    for path in (ROOT / "segtools" / "report").rglob("*.py"):
        bad = imports(path) & commands
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
    for path in (ROOT / "segtools").rglob("*.py"):
        if "report" in path.relative_to(ROOT / "segtools").parts[:1]:
            continue
        found = {m for m in imports(path) if m.startswith(("jinja2", "markupsafe"))}
        assert not found, f"{path.relative_to(ROOT)} imports {sorted(found)}"
