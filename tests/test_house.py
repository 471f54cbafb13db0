"""The house's import rules (docs/architecture.md §1), checked on the sources' own imports:
faces do not import each other, a command module never imports another command module, the
library below the faces never imports a face or a terminal library, and a compiled module is
imported only inside its own room (the others use the room's public wrappers)."""

from __future__ import annotations

import ast
from pathlib import Path

from segtools.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("analysis", "storage", "decode", "formats", "fetch")
#: The library's rooms that are single modules at the top of the package.
LIBRARY_MODULES = ("codecs", "errors", "findings", "model", "redact", "sensitive", "text",
                   "timestamps", "units")
FACES = ("segtools.api", "segtools.cli", "segtools.report", "pyspark_kafkalog")
FACE_ONLY = (*FACES, "pyspark", "rich", "matplotlib", "jinja2", "markupsafe", "playwright")


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


def library_files() -> list[Path]:
    return [*(p for room in LIBRARY for p in (ROOT / "segtools" / room).rglob("*.py")),
            *(ROOT / "segtools" / f"{m}.py" for m in LIBRARY_MODULES)]


def test_library_imports_no_face_and_no_terminal_library():
    files = library_files()
    assert len(files) > 60
    for path in files:
        bad = {m for m in imports(path) if m.startswith(FACE_ONLY)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_report_imports_no_other_face():
    """The report shares presentation with the CLI through the library (``segtools.text``,
    ``segtools.units``), never by importing the CLI."""
    for path in (ROOT / "segtools" / "report").rglob("*.py"):
        bad = {m for m in imports(path) if m.startswith(("segtools.cli", "pyspark_kafkalog"))}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_compiled_modules_are_imported_only_in_their_room():
    """``decode/_programs.pyx`` is reached through ``decode.programs``, ``decode/_walk.pyx``
    through ``decode.walk`` (and the decode room's own modules), and so on."""
    compiled = {p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
                for p in (ROOT / "segtools").rglob("_*.pyx")}
    assert "segtools.decode._programs" in compiled
    for path in [*(ROOT / "segtools").rglob("*.py"), *(ROOT / "spark").rglob("*.py")]:
        room = path.relative_to(ROOT).parent.as_posix().replace("/", ".")
        found = imports(path)
        for module in compiled:
            if room == module.rsplit(".", 1)[0]:
                continue
            bad = {m for m in found if m == module or m.startswith(module + ".")}
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


def test_each_command_says_in_its_help_what_segtools_help_says():
    """The one-line help of a command is written twice (``cli.main.COMMANDS`` lists it for
    ``segtools --help`` without importing the command); the two stay the same."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    shown = {a.dest: a.help for a in sub._choices_actions}
    assert shown == {name: help_line for name, (_, help_line) in COMMANDS.items()}


#: What opens a file: the storage room's readers.
READERS = ("segtools.storage.files", "segtools.storage.index", "segtools.storage.segment.Segment",
           "segtools.storage.summary.summarize", "segtools.storage.remote_store.LocalTieredStorage",
           "segtools.storage.partition.load_partition_dir", "segtools.storage.logdirs.walk")
#: The analysis rooms that read (docs/architecture.md §7): a partition's log and files
#: (``partition_log``), the retention and cleaner input (``partition_input``,
#: ``cleaner_input``), the remote tier (``remote_input``), the what-if's history
#: (``simulation_input``), and ``verify``, whose job is to read every file (its rules are
#: ``integrity``'s).
READING_ROOMS = {"partition_log", "partition_input", "cleaner_input", "remote_input",
                 "simulation_input", "verify"}


def test_analysis_rules_open_no_file():
    """Under ``analysis/`` the rules and the reading are apart: only the reading rooms import
    a storage reader; the others get batches, records and files' contents from them."""
    for path in (ROOT / "segtools" / "analysis").glob("*.py"):
        if path.stem in READING_ROOMS:
            continue
        bad = {m for m in imports(path) if m.startswith(READERS)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_no_module_writes_the_environment():
    """Settings travel as arguments (worker counts, storage options, credentials): a write to
    ``os.environ`` would hand one caller's setting to every other in the process."""
    writers = []
    for path in sorted([*(ROOT / "segtools").rglob("*.py"),
                        *(ROOT / "spark" / "pyspark_kafkalog").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = node.targets if not isinstance(node, ast.AugAssign) else [node.target]
                hit = any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ"
                          for t in targets)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner, name = ast.unparse(node.func.value), node.func.attr
                hit = (owner == "os.environ" and name in ("setdefault", "update", "pop",
                                                           "clear", "popitem")) or \
                    (owner == "os" and name in ("putenv", "unsetenv"))
            else:
                hit = False
            if hit:
                writers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert writers == []


def _storage_graph() -> dict[str, set[str]]:
    """``storage/``'s modules and the storage modules each imports (any depth)."""
    rooms = {p.stem: p for p in (ROOT / "segtools" / "storage").glob("*.py")}
    graph = {}
    for name, path in rooms.items():
        named = {m.removeprefix("segtools.storage.").split(".")[0] for m in imports(path)
                 if m.startswith("segtools.storage.")}
        graph[name] = {m for m in named if m in rooms and m != name}
    return graph


def test_storage_has_no_import_circle():
    """Where bytes come from is one seam without a loop (docs/architecture.md §1): the
    abstract location (located), each kind (objectstore, archive), the dispatch (location)
    and the owner (scope) each import only downward. Imports inside functions count (the
    dispatch loads a kind's module when one is first opened): none can hide a loop."""
    graph = _storage_graph()
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, f"storage import circle: {' -> '.join((*trail, name))}"
        if name in done:
            return
        for nxt in sorted(graph[name]):
            visit(nxt, (*trail, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def test_no_process_wide_registry_of_locations():
    """Locations are owned by a run, a dataset or a task (segtools/storage/scope.py): no
    module of ``storage/`` or ``fanout`` starts a module-level dict, set or weak set empty
    (to put locations into), or rebinds a module global from a function."""
    found = []
    for path in [*sorted((ROOT / "segtools" / "storage").glob("*.py")),
                 ROOT / "segtools" / "fanout.py"]:
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            # a registry starts empty (a constant table is written out in full)
            if value is not None and ((isinstance(value, ast.Dict) and not value.keys) or (
                    isinstance(value, ast.Call) and not value.args and ast.unparse(value.func)
                    in ("dict", "set", "weakref.WeakSet", "weakref.WeakValueDictionary"))):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if path.name == "fanout.py":  # its _WORK: handed to the workers it forks, then unset
            continue
        found += [f"{path.relative_to(ROOT)}:{fn.lineno} global" for fn in ast.walk(tree)
                  if isinstance(fn, ast.FunctionDef)
                  and any(isinstance(n, ast.Global) for n in ast.walk(fn))]
    assert found == []


#: The seam itself: the abstract location, the dispatch, and one module per kind.
SEAM = {"located", "location", "local", "objectstore", "archive", "scope"}


def test_no_room_below_the_seam_branches_on_the_kind_of_location():
    """Every kind of place is a ``Location``, the local disk included (docs/locations.md):
    a room asks ``path.location`` what differs between kinds, never which kind a path is
    (an ``is_remote`` test, an ``isinstance`` of a located path's class)."""
    kinds = ("RemotePath", "LocalPath", "RemoteDirEntry", "RemoteFile", "LocalFile",
             "ObjectStoreLocation", "ArchiveLocation", "LocalDisk")
    found = []
    rooms = [p for p in (ROOT / "segtools").rglob("*.py")
             if not (p.parent.name == "storage" and p.stem in SEAM)]
    for path in rooms:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Name) and node.id == "is_remote") or \
                    (isinstance(node, ast.Attribute) and node.attr == "is_remote"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} is_remote")
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and \
                    len(node.args) == 2 and any(k in ast.unparse(node.args[1]) for k in kinds):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert found == []
