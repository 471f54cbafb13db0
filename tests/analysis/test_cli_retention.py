"""`segtools retention` end to end: the JSON contract, exit codes, errors, mtime fallback on
Kafka-written v0 data, and the plot files."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES, LEGACY, LOGS, SAMPLE

SEGTOOLS = str(Path(sys.executable).parent / "segtools")
AT = "2023-11-21T22:14:00Z"  # orders.v2-eu-0's first two segments are just past 7 days


def test_subprocess_json_document_and_exit_code():
    proc = subprocess.run([SEGTOOLS, "retention", str(SAMPLE), "--at", AT, "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # torn-tail-0's truncated tail is a finding
    doc = json.loads(proc.stdout)
    assert doc["type"] == "retention" and doc["at"] == 1_700_604_840_000
    assert any(f["code"] == "truncated_tail" for f in doc["findings"])
    assert any(s["path"].endswith("-delete") for s in doc["skipped"])
    parts = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    orders = parts[("orders.v2-eu", 0)]
    assert orders["high_watermark"] == 252 and not orders["high_watermark_assumed"]
    assert orders["log_start_offset"] == 3
    assert orders["log_start_offset_source"] == "log-start-offset-checkpoint"
    assert orders["config"]["retention.ms"]["source"] == "default"
    segs = orders["segments"]
    assert [s["base_offset"] for s in segs] == [0, 5, 205]
    assert [s["reason"] for s in segs] == ["retention_ms_breached", "retention_ms_breached",
                                           "within_retention_ms"]
    assert [s["deletable"] for s in segs] == [True, True, False]
    # largest timestamps from the time index (+7 days +1 ms: strictly greater)
    assert [s["max_timestamp_source"] for s in segs] == ["timeindex"] * 3
    assert [s["eligible_at"] for s in segs] == [1_700_000_005_000 + 604_800_001,
                                                1_700_000_007_250 + 604_800_001,
                                                1_700_000_073_800 + 604_800_001]
    assert segs[2]["stale_records"]["count"] == 30  # the deep pass over the kept segment
    empty = parts[("payments-compact", 0)]["segments"][-1]
    assert empty["reason"] == "empty_active_segment" and empty["eligible_at"] is None

    clean = subprocess.run([SEGTOOLS, "retention", str(SAMPLE / "orders.v2-eu-0"), "--at", AT],
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stderr
    assert "retention_ms_breached" in clean.stdout and "quiet_active_segment" in clean.stdout


@pytest.mark.parametrize("argv, message", [
    (["retention", str(SAMPLE), "--at", "yesterday"], "not epoch milliseconds or ISO-8601"),
    (["retention", str(SAMPLE), "--retention-ms", "soon"], "retention.ms"),
    (["retention", str(SAMPLE), "--cleanup-policy", "shred"], "not compact or delete"),
])
def test_bad_arguments_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("extra, message", [
    (["--plot", "out.txt"], "--plot needs a .png or .html"),
    (["--config", "/nonexistent/cfg"], "/nonexistent/cfg"),
    (["--forecast", "-1"], "--forecast DAYS"),
])
def test_unusable_input_exit_2(extra, message, capsys):
    assert main(["retention", str(SAMPLE / "orders.v2-eu-0"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("segtools: error:") and message in err and "\n" not in err


def test_missing_path_exit_2(capsys):
    assert main(["retention", "/nonexistent/kafka-logs"]) == 2
    assert "no such file" in capsys.readouterr().err


def restore_mtimes(tree: Path, name: str) -> None:
    """git keeps no mtimes: put the generator's back (indexes share their .log's)."""
    for entry in LOGS:
        if entry["tree"] != name or not entry["path"].endswith(".log"):
            continue
        log = tree / Path(entry["path"]).relative_to(f"logdirs/{name}")
        seconds = entry["mtime_ms"] / 1000
        for sibling in log.parent.glob(log.name.split(".")[0] + ".*"):
            os.utime(sibling, (seconds, seconds))


def test_mtime_fallback_on_magic_0_data(tmp_path, capsys):
    tree = tmp_path / "legacy"
    shutil.copytree(LEGACY, tree)
    restore_mtimes(tree, "legacy")
    mtimes = {e["path"].rsplit("/", 1)[1]: e["mtime_ms"] for e in LOGS
              if "/legacy.v0-0/" in e["path"]}
    first = mtimes["00000000000000000000.log"]
    at = first + 604_800_001  # segment @0's mtime is now just past 7 days
    code = main(["retention", str(tree / "legacy.v0-0"), "--at", str(at), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    [part] = doc["partitions"]
    segs = part["segments"]
    assert [s["max_timestamp_source"] for s in segs] == ["mtime", "mtime"]
    assert [s["max_timestamp"] for s in segs] == [first, mtimes["00000000000000000021.log"]]
    assert [s["reason"] for s in segs] == ["retention_ms_breached", "within_retention_ms"]
    assert segs[1]["eligible_at"] == mtimes["00000000000000000021.log"] + 604_800_001
    assert "file mtime" in segs[0]["reason_text"]
    assert any(c["code"] == "mtime_fallback" for c in part["callouts"])


def test_forecast_and_plot_files(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png, page = tmp_path / "r.png", tmp_path / "r.html"
    args = ["retention", str(SAMPLE / "orders.v2-eu-0"), "--at", "2023-11-14T22:14:40Z",
            "--retention-ms", "60000", "--forecast", "0.002", "-q"]
    assert main([*args, "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "forecast for topic orders.v2-eu" in out and f"plot written to {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*args, "--plot", str(page), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = doc["partitions"][0]["forecast"]["steps"]
    assert [s["removed"] for s in steps] == [[0, 5], [205]]
    assert steps[-1]["size_after"] == 0
    assert doc["topics"][0]["forecast"]["end_size"] == 0
    text = page.read_text()
    assert "data:image/png;base64," in text and "retention_ms_breached" in text
    assert "http://" not in text and "https://" not in text  # nothing fetched at view time
    assert FIXTURES.exists()


def test_partitions_are_shown_as_they_are_read(monkeypatch, capsys):
    """A large tree's answer streams: each partition is explained and printed while the
    next ones are still being read, so the printing overlaps the workers' reading."""
    from segtools.analysis import partition_input

    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    printed_before: list[int] = []
    real = partition_input._summaries

    def watched(p, **options):
        printed_before.append(sys.stdout.getvalue().count("\n"))
        return real(p, **options)

    monkeypatch.setattr(partition_input, "_summaries", watched)
    assert main(["retention", str(SAMPLE), "--at", AT]) == 1
    assert len(printed_before) > 3
    assert printed_before[0] == 1  # the header only
    assert printed_before == sorted(printed_before) and printed_before[-1] > 20


@pytest.mark.parametrize("tree, deep", [(SAMPLE, True), (SAMPLE, False),
                                        (FIXTURES / "logdirs" / "tiered", True)])
def test_streamed_answer_is_the_gathered_one(tree, deep, monkeypatch):
    """What the streamed run explains in forked workers (the deep pass there too) is what
    ``retention_report`` says over ``load_inputs``'s result (the API's and the report's
    path); a tree with a tiered partition is gathered first."""
    from segtools import fanout
    from segtools.analysis.explain import retention_report, streamed_retention
    from segtools.analysis.partition_input import load_inputs, plan_inputs
    from segtools.storage.logdirs import walk

    at = 1_700_604_840_000
    log_dirs = walk([str(tree)])[0]
    expected = retention_report(load_inputs(log_dirs), now_ms=at, forecast_days=3, deep=deep)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    shown = []
    loaded, report = streamed_retention(plan_inputs(walk([str(tree)])[0]), now_ms=at,
                                        forecast_days=3, deep=deep, each=shown.append)
    assert json.dumps(report.to_json()) == json.dumps(expected.to_json())
    assert [e.to_json() for e in shown] == [e.to_json() for e in report.partitions]
    assert len(loaded.partitions) == len(report.partitions)
    if deep and tree == SAMPLE:
        assert any(v.stale for e in shown for v in e.retention.segments)


@pytest.mark.parametrize("tree", ["sample", "whatif", "legacy", "zookeeper"])
def test_the_deep_pass_skips_only_partitions_with_nothing_to_read(tree):
    """The workers replay retention for the deep pass only where a segment's records are
    within retention.ms: every segment the deep pass reads is one, at every moment that
    moves a segment across its edge."""
    from segtools.analysis.partition_input import (
        deep_segments,
        load_inputs,
        may_be_within_retention,
    )
    from segtools.analysis.retention import explain_retention
    from segtools.storage.logdirs import walk

    loaded = load_inputs(walk([str(FIXTURES / "logdirs" / tree)])[0])
    read = 0
    for pi in loaded.partitions:
        ret = pi.config.local_retention_ms_effective
        moments = {s.largest_timestamp + ret + d for s in pi.summaries for d in (-1, 0, 1)}
        for now in moments:
            pr = explain_retention(pi.summaries, pi.config, now_ms=now,
                                   high_watermark=pi.high_watermark,
                                   log_start_offset=pi.log_start_offset)
            if deep_segments(pr):
                read += 1
                assert may_be_within_retention(pi.summaries, pi.config, now)
    assert read or tree == "legacy"


@pytest.mark.parametrize("unlisted", [False, True])
@pytest.mark.parametrize("tree, options", [
    ("sample", {}), ("sample", {"forecast_days": 3, "deep": False}), ("hostile", {}),
    ("forensics", {}), ("tiered", {"forecast_days": 2})])
def test_the_workers_render_what_this_process_would(tree, options, unlisted, monkeypatch):
    """``segtools retention``'s text is rendered in the forked workers, which also list the
    partition directories (``unlisted``: this process found them only), and this process
    only writes it: the same text, in the same order, with the same skipped partitions,
    findings (the listing's first, as a plan has them) and topic forecasts as listing
    here and explaining and printing each partition here; a tree with a tiered partition
    is listed and explained here (its remote metadata first)."""
    from segtools import fanout
    from segtools.analysis.explain import shown_retention, streamed_retention
    from segtools.analysis.partition_input import plan_inputs, plan_unlisted
    from segtools.cli.retention import print_partition, rendered
    from segtools.cli.table import Lines
    from segtools.storage.logdirs import walk, walk_roots

    at = 1_700_604_840_000
    path = str(FIXTURES / "logdirs" / tree)
    planned = plan_inputs(walk([path])[0])
    printed = io.StringIO()
    _, report = streamed_retention(planned, now_ms=at, each=partial(print_partition,
                                                                    Lines(printed, None)),
                                   **options)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    if unlisted:
        planned = plan_unlisted(walk_roots([path])[0])
        assert planned.unlisted and not planned.todo
    written: list[str] = []
    tail = shown_retention(planned, partial(rendered, None), now_ms=at, write=written.append,
                           **options)
    assert len(written) == len(report.partitions) > 0
    assert "".join(written) == printed.getvalue()
    assert (tail.skipped, tail.findings) == (report.skipped, report.findings)
    assert [(t, fc.to_json()) for t, fc in tail.topics.items()] == \
        [(t, fc.to_json()) for t, fc in report.topics.items()]
    assert bool(tail.topics) == ("forecast_days" in options)


def test_this_process_lists_no_partition_directory(monkeypatch, capsys):
    """With workers, ``segtools retention`` (text) lists the log dir's root here and leaves
    every partition directory to the workers, which list, read, explain and render it;
    what is printed is what one process prints."""
    from segtools import fanout
    from segtools.storage import partition

    assert main(["retention", str(SAMPLE), "--at", AT]) == 1
    alone = capsys.readouterr().out
    listed_here: list[str] = []
    real = partition._Listing.partition_dir

    def counted(listing, name):
        listed_here.append(str(listing.pdir))
        return real(listing, name)

    monkeypatch.setattr(partition._Listing, "partition_dir", counted)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    assert main(["retention", str(SAMPLE), "--at", AT]) == 1
    assert capsys.readouterr().out == alone
    assert listed_here == []
    assert main(["retention", str(SAMPLE), "--at", AT, "--format", "json"]) == 1
    assert len(listed_here) > 10  # the JSON document is made here from the listed tree
