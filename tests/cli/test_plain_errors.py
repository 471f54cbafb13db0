"""Errors and plain lines as the contract writes them: ``segtools: error: <subject>: <what>``
once, in words rather than Python's, and nothing said that the input is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures_manifest import FIXTURES, SAMPLE

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))


def run(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def test_an_unknown_option_names_the_command_once():
    proc = run("scan", "--topcs", "x", str(SAMPLE))
    assert proc.returncode == 2
    assert proc.stderr == ("segtools: error: scan: unrecognized arguments: --topcs "
                           "(see 'segtools scan --help')\n")
    proc = run("retention", "--bogus", str(SAMPLE))
    assert proc.stderr.startswith("segtools: error: retention: unrecognized arguments")


def test_a_bad_config_value_is_said_in_words():
    proc = run("retention", str(SAMPLE), "--retention-ms", "abc")
    assert proc.returncode == 2
    assert "invalid literal" not in proc.stderr and "base 10" not in proc.stderr
    assert "retention.ms='abc': not a whole number" in proc.stderr


def test_an_empty_path_is_refused_not_the_current_directory(tmp_path):
    proc = run("scan", "", cwd=str(FIXTURES / "logdirs" / "sample"))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("segtools: error: scan: argument PATH: empty path")


def test_a_log_file_without_a_segment_name_is_not_a_kraft_snapshot(tmp_path):
    odd = tmp_path / "notkafka.log"
    odd.write_bytes((SAMPLE / "orders.v2-eu-1" / "00000000000000000000.log").read_bytes())
    proc = run("dump", str(odd))
    assert "KRaft snapshot" not in proc.stdout
    assert "not named as a Kafka segment" in proc.stdout


def test_a_log_dir_without_version_evidence_is_not_written_by_kafka_unknown(tmp_path):
    bare = tmp_path / "bare"
    (bare / "orders-0").mkdir(parents=True)
    (bare / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    proc = run("scan", str(bare))
    assert "written by Kafka unknown" not in proc.stdout
    assert "no file in it names the Kafka version" in proc.stdout


def test_the_verify_example_in_the_docs_is_what_verify_prints():
    """docs/cli.md shows ``segtools verify fixtures/logdirs``: its summary line is the one the
    command prints on the fixtures as they are now."""
    docs = (FIXTURES.parent / "docs" / "cli.md").read_text()
    shown = next(line for line in docs.splitlines() if line.startswith("verified "))
    proc = run("verify", "-q", str(FIXTURES / "logdirs"))
    assert proc.stdout.splitlines()[-1] == shown


def test_scan_json_lines_have_type_first():
    proc = run("scan", "--format", "jsonl", str(SAMPLE))
    assert all(line.startswith('{"type":') for line in proc.stdout.splitlines()), \
        proc.stdout[:300]


def test_verify_index_says_when_the_index_is_fine():
    proc = run("dump", "--verify-index", str(SAMPLE / "orders.v2-eu-1" /
                                             "00000000000000000000.index"))
    assert proc.returncode == 0
    assert "checked against the .log" in proc.stdout


def test_the_chain_of_custody_shows_times_as_times():
    proc = run("scan", "--hashes", str(SAMPLE / "orders.v2-eu-1"))
    custody = proc.stdout.split("chain of custody:", 1)[1]
    assert " ms " not in custody and "modified 20" in custody


def test_find_help_names_kafkas_method_whole():
    proc = run("find", "--help")
    assert "UnifiedLog.fetchOffsetByTimestamp" in " ".join(proc.stdout.split())
    assert "UnifiedLog. " not in proc.stdout


def test_an_answer_cut_by_its_reader_is_not_exit_0():
    """``segtools ... | head`` under ``set -o pipefail``: the cut answer shows, as 141 (a
    command ended by SIGPIPE), not as 0, "read fully"."""
    big = SAMPLE / "big-value-0" / "00000000000000000000.log"
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; '{SEGTOOLS}' dump --deep "
                           f"--print-data '{big}' | head -c 10 >/dev/null"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_rich_table_cut_by_its_reader_is_141_too():
    """The what-if's tables are rich's; rich ends a closed pipe with exit 1 of its own, which
    reads as "findings"."""
    whatif = FIXTURES / "logdirs" / "whatif"
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; '{SEGTOOLS}' retention -q "
                           f"'{whatif}' --at 2024-01-11T00:00Z --what-if retention.ms=86400000"
                           " | head -3 >/dev/null"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 141, proc.stderr


def test_debug_shows_the_traceback_and_keeps_the_exit_status(tmp_path):
    """A script that adds ``--debug`` to see more must get the same answer: exit 2, the
    error line last, the traceback above it."""
    missing = str(tmp_path / "nowhere")
    plain, debug = run("scan", missing), run("--debug", "scan", missing)
    assert plain.returncode == debug.returncode == 2
    assert debug.stderr.splitlines()[-1] == plain.stderr.strip()
    assert debug.stderr.startswith("Traceback (most recent call last):")


def test_a_uri_with_one_slash_is_named_without_its_key(tmp_path):
    proc = run("scan", "s3:/AKIAPLANTED:PLANTEDSECRET@bucket/p", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert "PLANTEDSECRET" not in proc.stderr and "AKIAPLANTED" not in proc.stderr
    assert proc.stderr.rstrip().endswith("(read as a local path; a URI is written s3://...)")


#: Every command, with what it needs besides the path.
EVERY_COMMAND = {"dump": (), "scan": (), "verify": (), "find": ("--offset", "1"),
                 "retention": (), "compaction": (), "metadata": (), "offsets": (),
                 "transactions": (), "diverge": (), "producers": (), "tiered": (),
                 "schemas": (), "report": ("-o", "{tmp}/r.html"), "query": ("-c", "select 1")}


def test_every_command_names_a_missing_path_once(tmp_path):
    """The contract's one line, ``segtools: error: <path>: <what>``: the same from every face
    of the same reader (``report`` and ``query`` said the path twice)."""
    missing = str(tmp_path / "gone" / "00000000000000000000.log")
    for command, extra in EVERY_COMMAND.items():
        proc = run(command, missing, *(a.format(tmp=tmp_path) for a in extra))
        assert proc.returncode == 2, command
        assert proc.stderr.lower() == \
            f"segtools: error: {missing}: no such file or directory\n", (command, proc.stderr)


def test_a_topic_that_matches_nothing_is_an_error_naming_the_topics():
    """``--topic nope`` printed "0 segment(s)" and exit 0: a typo read as "no data"."""
    for command in ("scan", "verify", "producers", "find"):
        extra = ["--offset", "1"] if command == "find" else []
        proc = run(command, str(SAMPLE), "--topic", "ordrs*", *extra)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "--topic: no topic matches 'ordrs*' (topics here: big-value," in proc.stderr
        assert proc.stderr.count("\n") == 1


def test_a_group_that_matches_nothing_is_an_error():
    forensics = str(FIXTURES / "logdirs" / "forensics")
    proc = run("offsets", forensics, "--group", "biling")
    assert proc.returncode == 2
    assert proc.stderr.endswith("--group: no group matches 'biling' in __consumer_offsets\n")
    assert run("offsets", forensics, "--group", "billing*").returncode in (0, 1)


def test_a_file_that_is_not_kafka_is_exit_2_from_every_tree_command(tmp_path):
    """The contract: 2 when segtools could not run on the input ("not a Kafka file"), as
    ``dump`` already said; ``scan /etc/passwd`` was a finding and exit 1."""
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    for command in ("scan", "verify", "retention", "producers"):
        proc = run(command, str(text))
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr == f"segtools: error: {text}: not a segment file " \
                              "(<20-digit offset>.<suffix>)\n", command


def test_offsets_history_of_a_topic_no_group_committed_is_an_error():
    """``--history --topic ordrs`` printed an empty history and exit 0: read as "no commits"."""
    forensics = str(FIXTURES / "logdirs" / "forensics")
    proc = run("offsets", forensics, "--history", "--topic", "ordrs")
    assert proc.returncode == 2
    assert proc.stderr.endswith("--topic: no group committed offsets of 'ordrs' in "
                                "__consumer_offsets\n")
    assert run("offsets", forensics, "--history", "--topic", "orders.v2-eu").returncode in (0, 1)


def test_sigterm_ends_a_run_stuck_on_a_store_that_never_answers():
    """A store that accepts connections and never replies kept a run (blocked in the SDK's C++,
    where no Python handler runs) deaf to SIGTERM and Ctrl-C for five minutes."""
    import signal
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    silent.settimeout(120)
    port = silent.getsockname()[1]
    asked = None
    try:
        proc = subprocess.Popen([SEGTOOLS, "scan", "-q", "s3://bucket/logs",
                                 "--storage-option", f"endpoint_url=http://127.0.0.1:{port}",
                                 "--storage-option", "access_key=a",
                                 "--storage-option", "secret_key=b"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        asked, _ = silent.accept()  # the run has reached the store: its wait begins
        asked.settimeout(30)
        assert asked.recv(4096)  # its request is sent, and is never answered
        assert proc.poll() is None  # still waiting on the store
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert proc.returncode == 128 + signal.SIGTERM
        assert time.monotonic() - began < 15
    finally:
        if asked is not None:
            asked.close()
        silent.close()


def test_a_mistyped_storage_option_is_named_as_an_option():
    """It leaked the SDK's ``__init__() got an unexpected keyword argument``."""
    proc = run("scan", "s3://bucket/logs", "--storage-option", "endponit_url=http://x",
               "--storage-option", "access_key=a", "--storage-option", "secret_key=b")
    assert proc.returncode == 2
    assert proc.stderr == "segtools: error: s3://bucket: unknown storage option 'endponit_url' " \
                          "for s3:// (see docs/locations.md for the options each store takes)\n"


def test_a_producer_id_in_no_partition_is_an_error():
    forensics = str(FIXTURES / "logdirs" / "forensics")
    proc = run("transactions", forensics, "--producer-id", "99999", "--at", "2023-11-20T11:00Z")
    assert proc.returncode == 2
    assert proc.stderr.endswith("--producer-id: no producer 99999 in the partitions or the "
                                "transaction state read\n")
