"""The suite's own split over two cores (tests/conftest.py): what runs alone after the
parallel phase, and which tests share a worker."""

from __future__ import annotations

import ast

import pytest

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


@pytest.mark.spark
def test_a_spark_test_anywhere_shares_the_jvm_s_worker(request):
    """Marked ``spark`` outside tests/spark/ (the payloads' and the query's Spark views are):
    grouped with the rest, so one worker holds the one JVM. Nothing here starts it."""
    assert xdist_group_of(request.node) == "spark"


@pytest.mark.parametrize("group", LONGEST_FIRST)
def test_every_group_handed_out_first_exists(group):
    """A long module renamed would be handed out with the rest, perhaps last."""
    shared = {"spark"} | {name for name, _ in SHARED_BY_GROUP}
    assert group in shared or (TESTS.parent / group).is_file(), group
