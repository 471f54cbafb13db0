"""Planted secrets never leave (issue 41): a KRaft metadata log holding a keystore password,
a JAAS config, a plugin's secret config and a SCRAM credential, and URIs holding store
credentials; every output of every command that can read them is grepped for every form of
every secret."""

from __future__ import annotations

import shutil

import pytest

from segtools.analysis.cluster_metadata import timeline
from segtools.sensitive import HIDDEN
from tests.fixtures_manifest import FIXTURES
from tests.forensics import records_batch, write_partition
from tests.robustness.commands import command_names, run_cli
from tests.s3server import SECRET_KEY
from tests.security.planted import (
    BROKER,
    JAAS_PASSWORD,
    KEYSTORE_PASSWORD,
    METADATA_SECRETS,
    SCRAM_SALT,
    URI_SECRET,
    frame,
    leaked,
    write_metadata_log,
)


@pytest.fixture
def metadata_log(tmp_path):
    return write_metadata_log(tmp_path / "logs")


def argvs(pdir, out_dir) -> list[list[str]]:
    log = str(pdir / "00000000000000000000.log")
    logs = str(pdir.parent)
    return [
        ["metadata", str(pdir)],
        ["metadata", "--format", "jsonl", str(pdir)],
        ["metadata", "--records", str(pdir)],
        ["metadata", "--records", "--format", "jsonl", logs],
        ["dump", "--deep", "--print-data", log],
        ["dump", "--deep", "--print-data", "--format", "jsonl", log],
        ["dump", "--deep", "--print-data", "--bytes", "hex", log],
        ["dump", "--deep", "--print-data", "--bytes", "base64", log],
        ["dump", "--deep", "--cluster-metadata-decoder", log],
        ["dump", "--deep", "--cluster-metadata-decoder", "--format", "jsonl", log],
        ["scan", "-q", "--format", "jsonl", logs],
        ["verify", "-q", "--deep", "--format", "jsonl", logs],
        ["report", "-q", "-o", str(out_dir / "report.html"), logs],
        # the samples decoded as text: what a value decodes to is hidden as its bytes are
        ["report", "-q", "--decode", "string", "-o", str(out_dir / "report.html"), logs],
        ["query", logs, "-c", "select * from records", "--format", "jsonl"],
        *(["find", str(pdir), "--offset", str(offset), *fmt] for offset in (2, 3, 5)
          for fmt in ([], ["--format", "jsonl"])),
        ["query", logs, "-c", "select key, value from records", "--bytes", "utf8"],
    ]


def test_no_command_shows_a_sensitive_config_or_scram_credential(metadata_log, tmp_path):
    for argv in argvs(metadata_log, tmp_path):
        run = run_cli(argv)
        assert run.code in (0, 1), (argv, run.stderr)
        shown = run.stdout + run.stderr.encode()
        if argv[0] == "report":
            shown += (tmp_path / "report.html").read_bytes()
        assert leaked(shown, METADATA_SECRETS) == [], argv
        if argv[0] == "metadata" or "utf8" in argv:
            assert HIDDEN.encode() in shown, argv


def test_they_show_only_when_asked_by_name(metadata_log):
    run = run_cli(["metadata", "--records", "--show-sensitive", str(metadata_log)])
    assert leaked(run.stdout, [KEYSTORE_PASSWORD, JAAS_PASSWORD, SCRAM_SALT]) == [
        repr(KEYSTORE_PASSWORD), repr(JAAS_PASSWORD), repr(SCRAM_SALT)]


def test_the_replay_hands_out_no_secret(metadata_log):
    """The library itself (every face's source) hides them: state, events and records."""
    replay = timeline(metadata_log, keep_records=True)
    shown = repr((replay.image, replay.events, replay.records)).encode()
    assert leaked(shown, METADATA_SECRETS) == []
    configs = replay.image.configs[(4, "1")]
    assert configs == {"listener.name.internal.ssl.keystore.password": HIDDEN}
    assert replay.image.topic_configs()["orders"]["retention.ms"] == "604800000"


def test_the_record_views_hide_them_unless_asked(metadata_log):
    """The Python API's and the Spark source's record rows (what the SQL face reads too) are
    outputs like any other: a ``__cluster_metadata`` value reads as the CLI shows it, and as
    stored only with ``reveal_sensitive`` / ``revealSensitive``."""
    import segtools

    logs = str(metadata_log.parent)
    for strings in (False, True):
        values = segtools.open(logs).to_arrow(strings=strings).read_all().column("value")
        shown = repr(values.to_pylist()).encode()
        assert leaked(shown, METADATA_SECRETS) == [] and HIDDEN.encode() in shown
    revealed = segtools.open(logs).to_arrow(reveal_sensitive=True).read_all()
    assert KEYSTORE_PASSWORD.encode() in b"".join(v or b"" for v in
                                                  revealed.column("value").to_pylist())
    pytest.importorskip("pyspark")
    from tests.spark.inprocess import read

    rows = read({"path": logs}).column("value").to_pylist()
    assert leaked(repr(rows).encode(), METADATA_SECRETS) == []
    rows = read({"path": logs, "revealSensitive": "true"}).column("value").to_pylist()
    assert SCRAM_SALT in b"".join(v or b"" for v in rows)


URIS = [f"s3://AKIAPLANTED:{URI_SECRET}@logs/sample",
        f"s3://logs/sample?access_key=AKIAPLANTED&secret_key={URI_SECRET}",
        f"gs://logs/sample?token={URI_SECRET}",
        f"abfs://user:{URI_SECRET}@account.dfs.core.windows.net/sample",
        f"file://user:{URI_SECRET}@localhost/var/kafka-logs"]


#: How each command is given one path (the rest of its arguments a normal use needs).
PATH_ARGV = {"report": lambda uri, out: ["report", "-q", "-o", str(out / "r.html"), uri],
             "find": lambda uri, out: ["find", uri, "--offset", "0"],
             "query": lambda uri, out: ["query", uri, "-c", "select count(*) from segments"]}


@pytest.mark.parametrize("uri", URIS)
@pytest.mark.parametrize("command", command_names())
def test_credentials_in_a_uri_are_refused_and_never_shown(uri, command, tmp_path):
    argv = PATH_ARGV.get(command, lambda u, _: [command, u])(uri, tmp_path)
    for debug in ([], ["--debug"]):
        try:
            run = run_cli([*debug, *argv])
        except Exception as e:  # --debug raises: the traceback's text is an output too
            shown = repr(e).encode() + str(e).encode()
        else:
            assert run.code == 2
            assert "credentials written into the URI" in run.stderr.splitlines()[-1]
            assert run.stderr.count("\n") == 1 or debug  # --debug: the traceback first
            shown = run.stdout + run.stderr.encode()
        assert leaked(shown, [URI_SECRET]) == []
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("uri", URIS)
def test_the_api_refuses_them_too(uri):
    import segtools
    from segtools.errors import SegtoolsError

    with pytest.raises(SegtoolsError, match="credentials written into the URI") as caught:
        segtools.open(uri)
    assert URI_SECRET not in str(caught.value) + str(caught.value.path)


@pytest.mark.parametrize("uri", URIS)
def test_the_spark_source_refuses_them_in_its_options(uri):
    pytest.importorskip("pyspark")
    from pyspark_kafkalog.options import OptionError, parse_options

    with pytest.raises(OptionError, match="credentials written into the URI") as caught:
        parse_options({"path": uri})
    assert URI_SECRET not in str(caught.value)


@pytest.mark.parametrize("command", command_names())
def test_every_command_over_the_planted_tree(metadata_log, tmp_path, command):
    """Each command, run on the log dir holding the planted metadata: no secret in what it
    prints, in any form (the report: in its page too)."""
    logs = str(metadata_log.parent)
    argv = PATH_ARGV.get(command, lambda u, _: [command, u])(logs, tmp_path)
    if command == "find":  # offset 2: the keystore password's record
        argv = ["find", str(metadata_log), "--offset", "2"]
    run = run_cli(argv)
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    shown = run.stdout + run.stderr.encode()
    if command == "report" and (tmp_path / "r.html").exists():
        shown += (tmp_path / "r.html").read_bytes()
    assert leaked(shown, METADATA_SECRETS) == [], argv


@pytest.fixture(scope="module")
def planted_store(s3_server, tmp_path_factory):
    """The planted-metadata log dir (and a copy of ``sample`` beside it) in the session's S3
    server, read with the server's storage options (its secret key among them)."""
    root = tmp_path_factory.mktemp("planted-store")
    write_metadata_log(root / "logs")
    shutil.copytree(FIXTURES / "logdirs" / "sample" / "orders.v2-eu-1",
                    root / "logs" / "orders.v2-eu-1")
    return s3_server.upload_tree(root / "logs", "planted", "logs"), s3_server


@pytest.mark.parametrize("command", command_names())
def test_every_command_over_a_store_shows_no_storage_secret(planted_store, tmp_path, command):
    """Each command on a tree in an object store, its secret key given with
    ``--storage-option`` (and once with ``--debug`` and ``--hashes``, where a command takes
    them): neither the key nor a planted config secret in what it prints or writes."""
    uri, server = planted_store
    argv = PATH_ARGV.get(command, lambda u, _: [command, u])(uri, tmp_path)
    if command == "find":
        argv = ["find", f"{uri}/orders.v2-eu-1", "--offset", "0"]
    if command == "dump":
        argv = ["dump", "--deep", "--print-data",
                f"{uri}/__cluster_metadata-0/00000000000000000000.log"]
    options = [f"--storage-option={k}={v}" for k, v in server.options.items()]
    hashes = ["--hashes"] if command in ("dump", "scan", "verify", "report") else []
    for extra in ([], ["--debug"]):
        try:
            run = run_cli([*extra, *argv, *options, *hashes])
        except Exception as e:  # --debug raises: its text is an output too
            shown = f"{e!r} {e}".encode()
        else:
            assert "internal error" not in run.stderr, run.stderr
            shown = run.stdout + run.stderr.encode()
        if command == "report" and (tmp_path / "r.html").exists():
            shown += (tmp_path / "r.html").read_bytes()
        assert leaked(shown, [SECRET_KEY, *METADATA_SECRETS]) == [], [*extra, *argv]


def test_an_undecodable_metadata_record_is_hidden_whole(tmp_path):
    """A ``ConfigRecord`` segtools cannot decode (one byte after it, a version newer than it
    knows) still holds the password as stored: the views that show a value raw hid nothing in
    it, because only a decoded record could be re-encoded. It now reads ``[hidden]`` whole,
    and as stored only when asked."""
    import segtools

    password = frame("ConfigRecord", resourceType=BROKER, resourceName="1",
                     name="ssl.keystore.password", value=KEYSTORE_PASSWORD)
    newer = bytearray(password)
    newer[2] = 1  # the record's version: ConfigRecord has only version 0
    pdir = write_partition(tmp_path / "logs", "__cluster_metadata-0", [records_batch(
        [(None, password + b"\0"), (None, bytes(newer))], base_offset=0,
        timestamp=1_700_000_000_000)])
    logs = str(pdir.parent)
    for argv in (["dump", "--deep", "--print-data", str(pdir / "00000000000000000000.log")],
                 ["query", logs, "-c", "select value from records", "--bytes", "utf8"]):
        run = run_cli(argv)
        shown = run.stdout + run.stderr.encode()
        assert leaked(shown, [KEYSTORE_PASSWORD]) == [] and HIDDEN.encode() in shown, argv
    values = segtools.open(logs).to_arrow().read_all().column("value").to_pylist()
    assert values == [HIDDEN.encode()] * 2
    revealed = segtools.open(logs).to_arrow(reveal_sensitive=True).read_all()
    assert revealed.column("value").to_pylist() == [password + b"\0", bytes(newer)]


def test_the_spark_source_keeps_a_credential_in_an_option_value_secret():
    """``storage.endpoint_url=http://KEY:SECRET@minio:9000``: a public option by its name,
    so it travelled in every task and plan with the credential in it. A storage option
    whose value is a URI with credentials is a secret one, whatever its name."""
    pytest.importorskip("pyspark")
    from pyspark_kafkalog.options import is_secret_option, parse_options

    endpoint = f"http://AKIAPLANTED:{URI_SECRET}@minio:9000"
    opts = parse_options({"path": "s3://b/logs", "storage.endpoint_url": endpoint,
                          "storage.region": "eu-west-1"})
    assert opts.storage_options == {"region": "eu-west-1"}
    assert opts.storage_secrets == {"endpoint_url": endpoint}
    assert leaked(repr(opts).encode(), [URI_SECRET]) == []
    assert is_secret_option("proxy", f"http://u:{URI_SECRET}@proxy:3128")
    assert not is_secret_option("endpoint_url", "http://minio:9000")
