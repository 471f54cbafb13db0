"""Fixtures shared across test packages: the S3-protocol server (tests/s3server.py) and the
GCS and Azure emulators (tests/stores.py), each alone and as ``object_store``, one of each per
pytest process (under ``pytest-xdist``, per worker: each starts its own, on a free port).

How the suite shares two cores (``make test``; docs/development.md, The suite's time):

* every test runs in the group :func:`xdist_group_of` names (``--dist loadgroup``): a JVM, a
  browser or the stores' copies of the trees are started or uploaded by one worker, and a
  module's own fixtures are set up once;
* a test that measures the machine (wall time, the page cache, its own priority) is marked
  ``serial`` (:data:`MEASURES_THE_MACHINE`) and runs after the parallel phase, alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from segtools.storage import scope
from tests.s3server import S3Server
from tests.stores import AzuriteServer, GcsServer

#: Every object store the README names, by the scheme of its URIs.
STORES = ("s3", "gs", "abfs")

TESTS = Path(__file__).resolve().parent

#: Tests whose verdict depends on having the machine to themselves, by node id (a module, or
#: one test), and what they measure: beside a busy neighbour they would fail for the
#: neighbour's sake, or pass without proving anything.
MEASURES_THE_MACHINE = {
    "tests/storage/test_gentle.py": "the page cache before and after a command (mincore), "
                                    "and the runner's own CPU and I/O priority",
    "tests/storage/test_readahead.py": "which pages the kernel read ahead (mincore)",
    "tests/storage/test_throttle.py": "a read rate held within 10 % of its cap, in wall time",
    "tests/robustness/test_bounds.py": "each hostile file's wall-clock bound",
    "tests/robustness/test_live_broker.py::test_every_command_survives_appends_rolls_and_"
    "retention": "a writer that must append enough in seconds of wall time while every "
                 "command reads",
    "tests/robustness/test_live_broker.py::test_every_command_survives_follower_truncation":
        "the same writer, truncating",
    "tests/report/test_report.py::test_help_stays_fast_and_lists_the_report":
        "--help under two seconds of wall time",
}

#: Fixtures that start or fill something once per process, and the group whose tests share
#: it: one worker starts it, the other never does. Only the ``local[2]`` session binds Spark's
#: tests together: a test that starts its own JVM (the standalone cluster, the tour, a user's
#: install) or reads in-process as an executor does shares nothing with it, and runs in its
#: module's group, on whichever worker is free.
SHARED_BY_GROUP = (
    ("spark", frozenset({"spark"})),  # the local[2] session, one JVM
    ("browser", frozenset({"browser", "open_report"})),  # chromium through Playwright
    ("store-copies", frozenset({"copies", "store_copies"})),  # the trees uploaded to each store
)

#: Parametrised session fixtures whose parameters are each set up on their own: a store's
#: server, or its copies of the trees (S3, GCS, Azure, and S3 again with small ranges). The
#: tests of one parameter share nothing with another's, so each parameter is a group of its
#: own (``store-copies(gs)``, ``tests/locations/test_exact_bytes.py(abfs)``) and may run on
#: the other worker: together, the stores' copies were the longest group once Spark's was
#: split.
SET_UP_PER_PARAMETER = frozenset({"object_store", "store_copies"})

#: The groups that take longest, longest first (a whole run's timeline, docs/development.md,
#: The suite's time), handed out first: begun together they end together, and the many short
#: modules fill in around them.
LONGEST_FIRST = ("spark", "tests/spark/test_cluster.py", "store-copies(s3-small)",
                 "store-copies(s3)", "browser", "tests/cli/test_scale.py", "store-copies(abfs)",
                 "tests/spark/test_tour.py", "store-copies", "tests/spark/test_autoregister.py",
                 "tests/locations/test_exact_bytes.py(s3)", "tests/robustness/test_fuzz.py",
                 "tests/locations/test_exact_bytes.py(gs)",
                 "tests/locations/test_exact_bytes.py(abfs)",
                 "tests/storage/test_seek_and_summary.py")


@pytest.fixture(scope="session")
def s3_server():
    """One moto server for the session, on 127.0.0.1 and a free port; stopped at the end."""
    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def gcs_server():
    """fake-gcs-server for the session (``gs://``)."""
    with GcsServer() as server:
        yield server


@pytest.fixture(scope="session")
def azurite_server():
    """Azurite's blob service for the session (``abfs://``)."""
    with AzuriteServer() as server:
        yield server


@pytest.fixture(scope="session", params=STORES)
def object_store(request):
    """Each store in turn: a test that takes it runs once per protocol."""
    return request.getfixturevalue({"s3": "s3_server", "gs": "gcs_server",
                                    "abfs": "azurite_server"}[request.param])


@pytest.fixture(autouse=True)
def _no_location_left_open():
    """No test leaves a location scope applied behind it: what a run, a dataset or a task
    opens is theirs and ends with them (segtools.storage.scope), so the next test starts as a
    fresh process would."""
    yield
    assert scope.current() is None, "a location scope is still applied after the test"


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: starts a Spark JVM (local or standalone)")
    config.addinivalue_line("markers", "serial: measures the machine (wall time, the page cache, "
                                       "priorities): make test runs it after the parallel phase")


def xdist_group_of(item: pytest.Item) -> str:
    """The group a test runs in under ``--dist loadgroup``: the tests of the Spark session on
    one worker (one session, one JVM), the browser's on one, the stores' copies on one, and
    otherwise its module, so a module's own fixtures (a tree built once, a fuzz run of every
    target) are made once. Spark's long tests that start JVMs of their own (the standalone
    cluster, the tour, the install checks) were in the session's group, the parallel phase's
    longest (882 s of a run at a load of 15): each now runs beside the session on the other
    worker."""
    used = _fixtures_from_conftests(item)
    parameters = _parameters(item, used & SET_UP_PER_PARAMETER)
    for group, fixtures in SHARED_BY_GROUP:
        if used & fixtures:
            return group + parameters
    return item.nodeid.split("::", 1)[0] + parameters


def _parameters(item: pytest.Item, fixtures: set[str]) -> str:
    """The parameter of each of ``fixtures`` the test takes, as ``(...)``: never in square
    brackets, as pytest writes a test's own parameters, since pytest-xdist reads the group
    from the id only where its last ``@`` comes after its last ``]`` (else every test of the
    group was a group of its own, handed to either worker)."""
    callspec = getattr(item, "callspec", None)
    params = [str(callspec.params[name]) for name in sorted(fixtures)
              if callspec is not None and name in callspec.params]
    return f"({'-'.join(params)})" if params else ""


def _fixtures_from_conftests(item: pytest.Item) -> set[str]:
    """The fixtures a test takes from a conftest, which many modules share (a module that
    imports one, as ``tests/payloads/test_spark_decode.py`` imports the Spark session, takes
    the conftest's function): a module's own fixture of the same name
    (``tests/analysis/test_offsets_compiled.py``'s ``copies`` is not the stores' ``copies``)
    is made for that module alone and binds it to no group. The definition a test uses is the
    last one pytest found for the name."""
    definitions = getattr(item, "_fixtureinfo", None)
    if definitions is None:  # not a function (a doctest, say): no fixtures of its own
        return set(getattr(item, "fixturenames", ()))
    return {name for name in item.fixturenames
            if (defs := definitions.name2fixturedefs.get(name))
            and getattr(defs[-1].func, "__module__", "").rpartition(".")[2] == "conftest"}


def _measures_the_machine(nodeid: str) -> bool:
    return any(nodeid == key or nodeid.startswith((key + "::", key + "["))
               for key in MEASURES_THE_MACHINE)


def distributed_by_group(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker under ``--dist loadgroup``: a worker's
    own ``dist`` option reads ``no`` (it distributes nothing), and its ``loadgroup`` says how
    the controller schedules what it collects."""
    return bool(config.getoption("loadgroup", default=False))


def _group_mark(item: pytest.Item) -> str:
    """The group a test was given (a test may name its own with ``xdist_group``), else the
    one :func:`xdist_group_of` gives it, marked."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        group = xdist_group_of(item)
        item.add_marker(pytest.mark.xdist_group(group))
        return group
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _measures_the_machine(item.nodeid):
            item.add_marker(pytest.mark.serial)
    if distributed_by_group(config):
        for item in items:
            _group_mark(item)


def hand_out_key(groups: dict[str, str]) -> Callable[[pytest.Item], tuple[int, int, str]]:
    """The order the groups are handed out in (make test passes ``--no-loadscope-reorder``,
    so the scheduler takes them in the order their first test is collected): the long ones
    first, so that they end together and what is left to balance at the end is small, then
    the rest largest first. The sort is stable: inside a group the tests keep pytest's order
    (which sets up each parameter of a session fixture once)."""
    sizes = Counter(groups.values())

    def key(item: pytest.Item) -> tuple[int, int, str]:
        group = groups[item.nodeid]
        rank = LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)
        return rank, -sizes[group], group
    return key


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's sends the ids to the controller
def pytest_collection_finish(session):
    """The group into the node id where pytest-xdist's own write did not reach it: the
    controller schedules a test by the name after the ``@`` of the id its worker sends.
    pytest-xdist 3.8 writes ``item._nodeid``, which pytest 9.2 no longer reads (an item's
    ``nodeid`` is ``str(item._id)``, a ``NodeId``), so without this every test was its own
    group and both workers started a JVM and a browser. Done once collection is over (every
    plugin's ``pytest_collection_modifyitems`` has run, ``-m`` and ``-k`` included) and before
    the worker sends the ids.

    The tests are put in their hand-out order here too (:func:`hand_out_key`), after every
    plugin has reordered them: sorted in a ``tryfirst`` ``pytest_collection_modifyitems``,
    pytest's fixtures plugin then moved each parameter's tests of the session fixture
    ``object_store`` together across modules, and ``test_exact_bytes.py`` reached the
    scheduler before Spark's group and the stores' copies."""
    if not distributed_by_group(session.config):
        return
    groups = {item.nodeid: _group_mark(item) for item in session.items}
    session.items.sort(key=hand_out_key(groups))
    for item in session.items:
        group = groups[item.nodeid]
        if not item.nodeid.endswith("@" + group) and hasattr(item, "_id"):
            item._id = type(item._id).parse(f"{item.nodeid}@{group}")
