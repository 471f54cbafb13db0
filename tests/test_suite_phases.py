"""The suite's own split over two cores (tests/conftest.py): what runs alone after the
parallel phase, and which tests share a worker."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from xdist.scheduler.loadgroup import LoadGroupScheduling

from tests.conftest import (
    LONGEST_FIRST,
    MEASURES_THE_MACHINE,
    SHARED_BY_GROUP,
    TESTS,
    xdist_group_of,
)


def _tests_in(module: str) -> set[str]:
    tree = ast.parse((TESTS.parent / module).read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("nodeid", sorted(MEASURES_THE_MACHINE))
def test_every_test_kept_apart_still_exists(nodeid):
    """A test renamed or moved would silently lose its place in the serial phase and measure
    a machine shared with a busy neighbour: every entry names a module that exists and, where
    it names one, a test in it."""
    module, _, name = nodeid.partition("::")
    assert (TESTS.parent / module).is_file(), nodeid
    assert not name or name in _tests_in(module), nodeid


def test_a_serial_test_is_marked_and_this_one_is_not(request):
    assert request.node.get_closest_marker("serial") is None
    assert xdist_group_of(request.node) == "tests/test_suite_phases.py"


def test_the_group_reaches_the_scheduler(request):
    """pytest-xdist schedules by the group its worker appends to the node id: under
    ``--dist loadgroup`` (make test's parallel phase) this test's id ends with its module's
    group; elsewhere no group is given."""
    given = getattr(request.config, "workerinput", {}).get("mainargv", [])  # the command line
    if "loadgroup" in " ".join(given).replace("=", " ").split():
        assert request.node.nodeid.endswith("@tests/test_suite_phases.py"), request.node.nodeid
    else:
        assert request.node.get_closest_marker("xdist_group") is None


@pytest.mark.parametrize("group", LONGEST_FIRST)
def test_every_group_handed_out_first_exists(group):
    """A long module renamed would be handed out with the rest, perhaps last."""
    shared = {name for name, _ in SHARED_BY_GROUP}
    base = group.split("(", 1)[0]
    assert base in shared or (TESTS.parent / base).is_file(), group


def test_the_longest_groups_are_handed_out_first(request):
    """Under ``--dist loadgroup --no-loadscope-reorder`` the scheduler hands the groups out in
    the order their first test stands in the worker's collection: the groups of
    ``LONGEST_FIRST`` there must lead, in that order, after every plugin has reordered the
    tests (pytest's fixtures plugin moves a parametrised session fixture's tests together,
    across modules). Elsewhere no group is given and the order is pytest's."""
    given = getattr(request.config, "workerinput", {}).get("mainargv", [])
    if "loadgroup" not in " ".join(given).replace("=", " ").split():
        assert request.node.get_closest_marker("xdist_group") is None
        return
    handed_out = list(dict.fromkeys(item.nodeid.rsplit("@", 1)[-1]
                                    for item in request.session.items))
    longest = [group for group in LONGEST_FIRST if group in handed_out]
    assert handed_out[:len(longest)] == longest, handed_out[:len(longest) + 3]


#: Prints each collected test's group: run in a fresh interpreter, a collection of its own.
_PRINT_GROUPS = """
import sys
import pytest
from tests.conftest import xdist_group_of

class Groups:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("group", item.nodeid, xdist_group_of(item))

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]],
                     plugins=[Groups()]))
"""

#: Tests whose group says why, and that group.
GROUPS = {
    # the stores' copies of the trees, from tests/locations/conftest.py
    "tests/locations/test_interface.py::test_listing_and_ranges_match_the_local_files":
        "store-copies",
    # each store's copy on its own: one parameter of the session fixture store_copies
    "tests/locations/test_same_answers.py::test_command_same_from_each_store[gs-scan]":
        "store-copies(gs)",
    "tests/locations/test_same_answers.py::test_command_same_from_each_store[s3-small-scan]":
        "store-copies(s3-small)",
    # a fixture of the module's own named ``copies``, built for that module alone
    "tests/analysis/test_offsets_compiled.py::test_the_fold_of_group_records_is_the_python_rule":
        "tests/analysis/test_offsets_compiled.py",
    # one store's server, a parameter of the session fixture object_store
    "tests/locations/test_exact_bytes.py::test_default_sizes_whole_object[gs-v2-large-single-"
    "record-batches:00000000000000000000.log]": "tests/locations/test_exact_bytes.py(gs)",
    "tests/locations/test_exact_bytes.py::test_extents_never_overlap":
        "tests/locations/test_exact_bytes.py",
    # the Spark session, imported into a module outside tests/spark/
    "tests/payloads/test_spark_decode.py::test_typed_struct_from_the_latest_avro_schema":
        "spark",
    "tests/spark/test_spark_source.py": "spark",
    # JVMs of its own (a master, two workers, a driver): nothing shared with the session
    "tests/spark/test_cluster.py": "tests/spark/test_cluster.py",
    "tests/spark/test_tour.py": "tests/spark/test_tour.py",
    # in-process, as an executor reads: no JVM at all
    "tests/spark/test_planning.py": "tests/spark/test_planning.py",
}


@pytest.fixture(scope="module")
def collected_groups() -> dict[str, set[str]]:
    """Each entry of :data:`GROUPS` collected as pytest collects it, with the groups its
    tests were given."""
    done = subprocess.run([sys.executable, "-c", _PRINT_GROUPS, *GROUPS], cwd=TESTS.parent,
                          capture_output=True, text=True, timeout=300)
    groups: dict[str, set[str]] = {entry: set() for entry in GROUPS}
    for line in done.stdout.splitlines():
        if line.startswith("group "):
            _, nodeid, group = line.split(" ", 2)
            for entry in GROUPS:
                if nodeid == entry or nodeid.startswith((entry + "::", entry + "[")):
                    groups[entry].add(group)
    assert all(groups.values()), done.stdout[-2000:] + done.stderr[-2000:]
    return groups


def test_every_group_is_read_by_the_scheduler(collected_groups):
    """pytest-xdist takes the group from the end of a test's id only where the id's last
    ``@`` comes after its last ``]`` (a parameter may hold an ``@``); otherwise the test is a
    group of its own and goes to either worker. Groups named with square brackets were split
    that way, each test of the stores' copies uploading the trees again on both workers."""
    for entry, groups in collected_groups.items():
        for group in groups:
            nodeid = f"{entry}::test_x[p]@{group}"
            assert LoadGroupScheduling._split_scope(None, nodeid) == group, nodeid


@pytest.mark.parametrize("entry", list(GROUPS))
def test_a_test_is_grouped_by_what_it_shares(collected_groups, entry):
    """A module's own fixture named like a shared one binds no group (``copies`` put
    ``test_offsets_compiled.py`` behind the stores' long tail); the Spark session binds its
    tests wherever they are, and only those: the cluster and the tour start JVMs of their own
    and run beside the session instead of after it."""
    assert collected_groups[entry] == {GROUPS[entry]}
