"""What the what-if says and refuses, in every face: one parser of changes and one check of
horizon and ingest, sentences that compare only what differs, on one line in a pipe, figures
in units, caps said when they bind, recommendations that improve what they claim (tier by
tier), and the trees' version evidence."""

from __future__ import annotations

import json
import re
import subprocess
from html import escape

import pytest

import segtools
from segtools.analysis import whatif
from segtools.analysis.config import TopicConfig
from segtools.analysis.simulation import Outcome
from segtools.cli.whatif_plot import binary_ticks
from tests.analysis.whatif_tree import CONFIG, DAY, SEGTOOLS, TREE
from tests.fixtures_manifest import FIXTURES

AT = "2024-01-11T00:00Z"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, "retention", *args], capture_output=True, text=True,
                          timeout=300)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("args", "says"), [
    (["--what-if", "segment.bytes=0"], "segment.bytes=0 is below Kafka's minimum of 14"),
    (["--what-if", "segment.ms=0"], "segment.ms=0 is below Kafka's minimum of 1"),
    (["--what-if", "segment.bytes=100", "--horizon", "0"],
     "--horizon: the horizon must be more than 0 and at most 3650 days, not 0\n"),
    (["--what-if", "segment.bytes=100", "--horizon", "-1"],
     "the horizon must be more than 0 and at most 3650 days, not -1\n"),  # as typed
    (["--what-if", "segment.bytes=100", "--ingest", "-5"],
     "an ingest rate must be more than 0 and below 1,000,000,000,000,000 bytes per second"),
    (["--what-if", "segment.bytes=100", "--ingest", "1e30"],
     "an ingest rate must be more than 0 and below 1,000,000,000,000,000 bytes per second"),
    # segment.bytes is a Java int in Kafka's LogConfig: a broker would refuse this
    (["--what-if", "segment.bytes=99999999999999999999"],
     "segment.bytes=99999999999999999999 is above Kafka's maximum of 2,147,483,647"),
    (["--what-if", "retention.ms=9223372036854775808"],
     "retention.ms=9223372036854775808 is above Kafka's maximum of 9,223,372,036,854,775,807"),
    # settings weighed against each other, as LogConfig.validateValues does
    (["--what-if", "min.compaction.lag.ms=10000,max.compaction.lag.ms=5000"],
     "topic quiet-events: Kafka refuses min.compaction.lag.ms=10000, "
     "max.compaction.lag.ms=5000: min.compaction.lag.ms (10000) is more than "
     "max.compaction.lag.ms (5000)"),
    # the last of two values must not silently win
    (["--what-if", "segment.bytes=4096,segment.bytes=8192"], "segment.bytes is given twice"),
    # options that only shape a simulation are refused without one, not ignored
    (["--horizon", "60"], "--horizon without --what-if or --recommend: nothing to simulate"),
    (["--horizon", "-1", "--ingest", "5"],
     "--horizon and --ingest without --what-if or --recommend"),
    (["--what-if", "segment.bytes=100", "--forecast", "5"],
     "--forecast projects today's segments with no new data"),
])
def test_the_cli_refuses_in_one_line(args, says):
    proc = _cli(str(TREE / "quiet-events-0"), "--at", AT, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_tiered_topic_refuses_a_local_retention_past_its_retention():
    """LogConfig.validateRemoteStorageRetentionTime/Size: on a tiered topic the local log may
    keep no more than the whole log (clicks.tiered's local.retention.ms=10d under a 7-day
    retention.ms was simulated, keeping 17 days locally); -1 is refused where retention.ms
    is set; a topic without remote storage takes anything, and a config already refused
    before the change is not the change's doing."""
    tiered = TopicConfig(retention_ms=7 * DAY, retention_bytes=1000,
                         remote_storage_enable=True, local_retention_ms=2 * DAY)
    assert "local.retention.ms (864000000) must be -2 or between 0 and retention.ms " \
        "(604800000)" in whatif.refused(tiered, {"local.retention.ms": 10 * DAY})
    assert "local.retention.ms (-1)" in whatif.refused(tiered, {"local.retention.ms": -1})
    assert "local.retention.bytes (2000)" in whatif.refused(
        tiered, {"local.retention.bytes": 2000})
    assert whatif.refused(tiered, {"local.retention.ms": DAY}) == ""
    assert whatif.refused(tiered, {"local.retention.ms": 10 * DAY,
                                   "retention.ms": -1}) == ""
    assert whatif.refused(TopicConfig(retention_ms=7 * DAY),
                          {"local.retention.ms": 10 * DAY}) == ""
    already = TopicConfig(min_compaction_lag_ms=10, max_compaction_lag_ms=5)
    assert whatif.refused(already, {"segment.bytes": 4096}) == ""
    proc = _cli(str(FIXTURES / "logdirs" / "tiered"), "--at", "2024-06-01T12:00Z",
                "--what-if", "local.retention.ms=864000000")
    assert proc.returncode == 2 and proc.stderr.startswith(
        "segtools: error: topic clicks.tiered: Kafka refuses local.retention.ms=864000000")


def test_the_api_refuses_with_the_same_words():
    with pytest.raises(segtools.SegtoolsError, match="below Kafka's minimum of 14"):
        segtools.what_if(TREE, changes={"segment.bytes": 0}, at=AT)
    with pytest.raises(segtools.SegtoolsError, match="the horizon must be more than 0"):
        segtools.what_if(TREE, changes="segment.bytes=100", at=AT, horizon_days=0)
    with pytest.raises(segtools.SegtoolsError, match="ingest rate must be more than 0"):
        segtools.what_if(TREE, changes="segment.bytes=100", at=AT, ingest_bytes_per_s=0)


def test_one_parser_for_text_and_mappings():
    text = whatif.parse_changes("cleanup.policy=compact,delete,segment.ms=1000")
    mapping = whatif.parse_changes({"cleanup.policy": ["compact", "delete"],
                                    "segment.ms": 1000})
    assert text == mapping == {"cleanup.policy": ("compact", "delete"), "segment.ms": 1000}
    overrides = whatif.ConfigOverrides.parse(
        {"retention.ms": 1000, "orders": {"cleanup.policy": "compact", "retention.ms": "5"}})
    assert overrides.flags("orders") == {"retention.ms": "5", "cleanup.policy": "compact"}
    assert overrides.config("other").retention_ms == 1000
    assert overrides.config("orders").compact
    with pytest.raises(ValueError, match="retention"):
        whatif.ConfigOverrides.parse({"orders": {"retention.ms": "soon"}})


# --------------------------------------------------------------------------- wording


def _outcome(peak: int, trough: int, late_age: int) -> Outcome:
    return Outcome(peak, trough, late_age, late_age, (), 1, 0, 0, 0, start_bytes=peak,
                   oldest_age_ms_late=late_age, late_peak_bytes=peak, late_trough_bytes=trough)


def test_a_sentence_never_compares_a_figure_with_itself():
    """The swing of ``retention --recommend`` on the whatif tree was "100% instead of 100%":
    equal figures are said to stay; a wider swing is said to be wider, never as a gain; and
    the setting named is the one the local log keeps."""
    config = TopicConfig(retention_ms=7 * DAY)
    same = whatif._why("t", config, {"segment.bytes": 4096}, _outcome(100, 0, 10 * DAY),
                       _outcome(100, 0, 7 * DAY))
    assert "swing stays 100%" in same and "100% instead of 100%" not in same
    wider = whatif._why("t", config, {"segment.bytes": 4096}, _outcome(100, 50, 10 * DAY),
                        _outcome(100, 10, 7 * DAY))
    assert "swings wider, 90% instead of 50%" in wider
    tiered = TopicConfig(retention_ms=7 * DAY, remote_storage_enable=True,
                         local_retention_ms=2 * DAY)
    said = whatif._why("t", tiered, {"segment.ms": 3_600_000}, _outcome(100, 0, 3 * DAY),
                       _outcome(100, 0, 2 * DAY))
    assert "(local.retention.ms 2d)" in said and "(retention.ms" not in said


def test_a_share_never_rounds_to_none_or_all():
    """customers.compact's proposed swing (a 764 B trough under a 274 KiB peak) was printed
    "100%", which says the log empties; rounding keeps a share that is neither none nor all
    off both ends, in the table and in the sentence."""
    assert [whatif.percent(f) for f in (0.9973, 0.99996, 1.0, 0.0004, 0.0, 0.5076)] == \
        ["99.7%", "99.9%", "100%", "0.1%", "0%", "51%"]
    said = whatif._why("t", TopicConfig(retention_ms=7 * DAY), {"segment.bytes": 4096},
                       _outcome(1000, 0, 10 * DAY), _outcome(1000, 3, 7 * DAY))
    assert "the size swings 99.7% instead of 100%" in said
    rows = dict((label, (cur, prop)) for label, cur, prop in whatif.table_rows(
        _outcome(1000, 0, DAY), _outcome(1000, 3, DAY)))
    assert rows["swing"] == ("100%", "99.7%")


def test_a_topic_sentence_never_compares_a_figure_with_itself():
    """``retention --recommend`` said "with no change the size moves between 0 B and 0 B
    (current config 0 B..0 B)" of every topic it had nothing to recommend for: with no change
    only the current config is said, a size that does not move is one figure, and a figure a
    change leaves alone is said once, "as under the current config"."""
    def item(changes: dict, cur: Outcome, prop: Outcome) -> whatif.WhatIf:
        return whatif.WhatIf("t", None, changes, cur, prop)

    same = _outcome(2048, 1024, 9 * DAY)
    none = whatif.topic_sentence(item({}, same, same))
    assert "no change proposed: under the current config the size moves between 1.0 KiB " \
        "and 2.0 KiB and over the horizon's second half the oldest record is at most 9d old" \
        in none and "current config 1.0 KiB" not in none
    empty = Outcome(0, 0, None, None, (), 1, 0, 1, 0, start_bytes=100)
    said = whatif.topic_sentence(item({}, empty, empty))
    assert "the size stays at 0 B (empty) and the topic is empty over the horizon's " \
        "second half" in said and "0 B and 0 B" not in said
    assert "the first retention check takes every segment" in said
    # a log with no record at all has no segment for retention to take
    nothing = Outcome(0, 0, None, None, (), 1, 0, 0, 0, start_bytes=0)
    said = whatif.topic_sentence(item({}, nothing, nothing))
    assert said.startswith("topic t: 0 B on disk now (no record); ") and \
        "retention check" not in said
    unchanged = whatif.topic_sentence(item({"segment.ms": 10**12}, same, same))
    assert "with segment.ms=1000000000000 the size moves between 1.0 KiB and 2.0 KiB, as " \
        "under the current config, and over the horizon's second half the oldest record is " \
        "at most 9d old, as under the current config" in unchanged
    moved = whatif.topic_sentence(item({"segment.bytes": 4096}, same,
                                     _outcome(2048, 2048, 7 * DAY)))
    assert "the size stays at 2.0 KiB (current config 1.0 KiB..2.0 KiB)" in moved
    assert "at most 7d old (current config 9d)" in moved


def test_no_recommendation_says_why():
    """A topic ``--recommend`` leaves alone says why, in recommend_topic's order of
    reasons (busy-clicks' sentence read "no change proposed" with no word of why)."""
    kept = _outcome(100, 0, 8 * DAY)
    too_old = _outcome(100, 0, 30 * DAY)
    week = TopicConfig(retention_ms=7 * DAY)
    assert whatif.unrecommended(TopicConfig(cleanup_policy=("compact",)), kept, False) == \
        "cleanup.policy=compact removes records by key only, with no time to keep"
    assert whatif.unrecommended(TopicConfig(retention_ms=-1), kept, False) == \
        "retention.ms is -1, so time retention is off"
    assert whatif.unrecommended(week, too_old, True) == \
        "a partition's history is too short to extrapolate"
    assert whatif.unrecommended(week, kept, False) == \
        "the current config keeps its promise (retention.ms 7d, with 25% slack)"
    assert whatif.unrecommended(week, too_old, False) == \
        "no segment change tried keeps the promise (retention.ms 7d, with 25% slack)"
    both = TopicConfig(retention_ms=7 * DAY, cleanup_policy=("compact", "delete"))
    assert whatif.unrecommended(both, too_old, False).startswith("no segment or cleaner ")


def test_copies_of_a_partition_are_named_once():
    """The replicas tree holds orders.v2-eu-9 in two brokers' log dirs; the short-history
    line named it twice ("orders.v2-eu-9, orders.v2-eu-9")."""
    proc = _cli(str(FIXTURES / "logdirs" / "replicas"), "--at", "2023-11-20T10:31Z",
                "--recommend")
    assert "  orders.v2-eu-9 (2 copies): the history spans less than 1d" in proc.stdout
    assert "orders.v2-eu-9, orders.v2-eu-9" not in proc.stdout


def test_text_in_a_pipe_is_one_line_per_sentence_with_units():
    """Piped (not a terminal), every sentence is one line however long; costs are in units
    (no "index bytes 20971800"), the ingest rate is written out."""
    proc = _cli(str(TREE), "--config", str(CONFIG), "--at", AT, "--recommend")
    assert proc.returncode == 0, proc.stderr
    rate = _cli(str(TREE / "quiet-events-0"), "--config", str(CONFIG), "--at", AT,
                "--what-if", "segment.bytes=4096", "--ingest", "2000000", "--horizon", "3")
    assert "2,000,000 B/s" in rate.stdout.splitlines()[0] and "2e+06" not in rate.stdout
    lines = proc.stdout.splitlines()
    sentences = [x for x in lines if x.startswith("topic ")]
    assert len(sentences) == 4
    assert all("oldest record is at most" in x for x in sentences)
    assert [x.endswith(")") for x in sentences] == [False, True, True, True]  # busy-clicks
    assert "no change proposed because the current config keeps its promise (retention.ms " \
        "7d, with 25% slack): under the current config" in sentences[0]
    assert not any(x.startswith(("(", "14d)", "old (")) for x in lines)
    index = [x for x in lines if x.startswith("index bytes")]
    assert index and all("MiB" in x for x in index)
    # a lag shown in days is not named in ms ("min compaction lag ms  0s")
    assert [x.split()[-2:] for x in lines if x.startswith("min compaction lag ")] == \
        [["0s", "0s"], ["0s", "0s"]]
    assert not any("lag ms" in x for x in lines)


def test_the_replay_cap_is_said_when_it_binds():
    """At 2 MB/s a month of the tree's topics is far more than MAX_REPLAY_BATCHES batches: the
    JSON says how many batches one simulated batch stands for, the text says the cap binds."""
    proc = _cli(str(TREE / "busy-clicks-0"), "--config", str(CONFIG), "--at", AT,
                "--what-if", "segment.bytes=1048576", "--ingest", "2000000", "--format",
                "json")
    doc = json.loads(proc.stdout)
    topic = next(w for w in doc["what_if"] if w["partition"] is None)
    assert topic["current"]["replay_scale"] > 1000
    # modelled at the scale asked: 2 MB/s for 30 days is ~5.2 TB appended, which 1 MiB
    # segments take in ~4.9 million rolls, 64 KiB ones (today's) in ~79 million
    appended = topic["proposed"]["appended_bytes"]
    assert abs(appended - 2_000_000 * 30 * 86_400) < 0.01 * appended
    full = topic["full_scale"]
    assert full["proposed"]["rolls"] == -(-appended // 1_048_576)
    assert full["current"]["rolls"] == -(-topic["current"]["appended_bytes"] // 65_536)
    assert full["proposed"]["segments_max"] == 1 + -(-topic["proposed"]["peak_bytes"] //
                                                    1_048_576)
    auto = json.loads(_cli(str(TREE / "busy-clicks-0"), "--config", str(CONFIG), "--at", AT,
                           "--what-if", "segment.bytes=1048576", "--format",
                           "json").stdout)
    uncapped = next(w for w in auto["what_if"] if w["partition"] is None)
    assert uncapped["current"]["replay_scale"] == 1 and "full_scale" not in uncapped
    text = _cli(str(TREE / "busy-clicks-0"), "--config", str(CONFIG), "--at", AT,
                "--what-if", "segment.bytes=1048576", "--ingest", "2000000").stdout
    assert "the replay cap binds: each simulated batch stands for" in text
    assert "at the scale asked: current config about" in text


def test_counts_at_scale_are_said_once_when_equal():
    """With no change (or one that changes neither count) the cap's line said "current config
    about 18,467,214 segments at once ...; proposed config about 18,467,214 segments at once
    ..." of figures that are one and the same."""
    same = _outcome(100, 0, DAY)
    big, small = whatif.FullScale(10, 20), whatif.FullScale(30, 40)

    def said(changes: dict, scales: tuple) -> str:
        return whatif._at_scale(whatif.WhatIf("t", None, changes, same, same,
                                                  full_scale=scales))

    assert said({}, (big, big)) == "the current config about 10 segments at once and 20 rolls"
    assert said({"segment.ms": 1}, (big, big)) == \
        "either config about 10 segments at once and 20 rolls"
    assert said({"segment.bytes": 14}, (big, small)) == (
        "current config about 10 segments at once and 20 rolls; proposed config about 30 "
        "segments at once and 40 rolls")


def test_a_compacted_replay_is_bounded_by_its_segments():
    """ledger-compact at 2 MB/s with 16 KiB segments: every replayed batch fills segments of
    its own, and the cleaner weighs each segment in Python at each pass, so 20,000 replayed
    batches took minutes for this one partition (the CLI on the whatif tree ran over ten).
    The replay keeps to MAX_CLEANED_SEGMENTS batches there, still at the rate asked, and the
    counts at the scale asked come from the bytes; a delete-only config, or a compacted one
    whose log holds fewer segments at once, keeps the full replay."""
    from segtools.analysis.config import parse_config_text
    from segtools.analysis.partition_input import load_inputs
    from segtools.analysis.simulation import MAX_CLEANED_SEGMENTS, MAX_REPLAY_BATCHES
    from segtools.storage.logdirs import walk

    loaded = load_inputs(walk([str(TREE / "ledger-compact-0"),
                               str(TREE / "customers.compact-0")])[0],
                         config_file=parse_config_text(CONFIG.read_text(), str(CONFIG)))
    pi, customers = sorted(loaded.partitions, key=lambda p: p.topic != "ledger-compact")
    part = whatif.PartitionHistory(pi, whatif.history(pi))
    now = whatif.horizon_end(int(part.history.batch_ts.max()), 1 / 24)
    horizon = whatif.Horizon(now, whatif.horizon_end(now, 30), whatif.parse_ingest(2e6), 1)
    small = whatif.apply_changes(pi.config, {"segment.bytes": 16384})
    disk = part.history.batches
    bounded = horizon.extend(part.history, [pi.config, small])
    assert bounded.batches - disk <= MAX_CLEANED_SEGMENTS + 24
    appended = float(bounded.batch_size[disk:].sum())
    assert abs(appended - 2e6 * 30 * 86_400) < 0.01 * appended
    deleting = whatif.apply_changes(small, {"cleanup.policy": "delete"})
    full = horizon.extend(part.history, [deleting])
    assert MAX_CLEANED_SEGMENTS * 5 < full.batches - disk <= MAX_REPLAY_BATCHES + 24
    auto = whatif.Horizon(now, horizon.end_ms, whatif.AUTO, 1)
    assert auto.extend(part.history, [small]).replay_scale == 1
    # ten years of customers.compact's own rate: over 10,000 16 KiB segments over the
    # horizon, but a week's worth at once; a bound there stretched the window's quiet hours
    # into weeks (the partition was simulated empty for days)
    hot = whatif.history(customers)
    decade = whatif.Horizon(now, whatif.horizon_end(now, 3650), whatif.AUTO, 1)
    tiny = whatif.apply_changes(customers.config, {"segment.bytes": 16384})
    assert decade.extend(hot, [customers.config, tiny]).replay_scale == \
        decade.extend(hot).replay_scale < 30


def test_the_charts_name_the_setting_they_hold_to():
    """clicks.tiered keeps local.retention.ms (2d) locally; the PNG's and the report's age
    charts drew that line labelled "retention.ms" (7d on this topic), the mislabel the
    sentence had; the report's legend called the current config "today"."""
    from segtools.cli.whatif_plot import figure
    from segtools.report import whatif as report_whatif
    from segtools.timestamps import to_millis

    loaded = segtools.open(FIXTURES / "logdirs" / "tiered").inputs(
        at=to_millis("2024-06-01T12:00Z"))
    report = whatif.what_if_report(loaded, {"segment.ms": 43_200_000},
                                   now_ms=to_millis("2024-06-01T12:00Z"), horizon_days=2)
    assert report.retention_names == {"__remote_log_metadata": "retention.ms",
                                      "clicks.tiered": "local.retention.ms"}
    legends = [t.get_text() for ax in figure(report).axes if ax.get_legend()
               for t in ax.get_legend().get_texts()]
    assert "local.retention.ms" in legends
    doc = report_whatif.from_report(report)
    chart = next(t["chart"] for t in doc["topics"] if t["topic"] == "clicks.tiered")
    assert (chart["retention_name"], chart["retention_ms"]) == ("local.retention.ms", 2 * DAY)
    script = report_whatif.script()
    assert "c.retention_name" in script and '"today"' not in script


def test_plot_ticks_and_page_are_in_units(tmp_path):
    assert binary_ticks(200 * 1024) == [i * 50 * 1024.0 for i in range(6)]
    assert binary_ticks(3 * 1024 ** 3) == [i * 1024.0 ** 3 for i in range(5)]
    page = tmp_path / "w.html"
    proc = _cli(str(TREE / "quiet-events-0"), "--config", str(CONFIG), "--at", AT,
                "--what-if", "segment.bytes=4096", "--horizon", "10", "--plot", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert "oldest record, 2nd half" in html and "KiB" in html
    assert "starting from the segments on disk" in html


def test_the_plot_page_says_what_the_text_says(tmp_path):
    """``--plot x.html`` was the tables alone: no sentence, no recommendation, no cost, and
    the rolls / deletions cell's exact figure was the rolls only. The page holds every line
    the text prints about a topic and its recommendation, and each cell's exact figures."""
    page = tmp_path / "w.html"
    proc = _cli(str(TREE / "customers.compact-0"), "--config", str(CONFIG), "--at", AT,
                "--recommend", "--plot", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    said = [line.strip() for line in proc.stdout.splitlines()
            if line.startswith(("topic ", "recommendation: ", "  also keeps it: "))]
    assert any(line.startswith("recommendation: ") for line in said)
    for line in said:
        assert escape(line.removeprefix("recommendation: ")) in html, line
    doc = json.loads(_cli(str(TREE / "customers.compact-0"), "--config", str(CONFIG),
                          "--at", AT, "--recommend", "--format", "json").stdout)
    topic = next(w for w in doc["what_if"] if w["partition"] is None)
    for side in ("current", "proposed"):
        run = topic[side]
        assert f"title='{run['rolls']} / {run['deletions']}'" in html
    assert "cleaner passes" in html and "also keeps it: min.compaction.lag.ms=" in html


# --------------------------------------------------------------------------- claims


#: Each bundled tree at an hour after its newest record (the whatif tree at its tests' --at).
AT_OF_TREE = {"forensics": "2023-11-20T12:00Z", "hostile": "2023-12-08T03:46Z",
              "legacy": "2017-07-14T05:40Z", "producers": "2023-11-26T13:01Z",
              "replicas": "2023-11-20T10:31Z", "sample": "2023-11-15T06:14Z",
              "tiered": "2024-06-01T12:00Z", "tiered-hostile": "2024-05-31T13:00Z",
              "whatif": AT, "zookeeper": "2023-03-15T01:00Z"}


@pytest.mark.parametrize("tree", sorted(AT_OF_TREE))
def test_every_recommendation_improves_what_it_claims(tree):
    """On every bundled tree: a recommendation comes only from histories long enough to
    extrapolate, its oldest record (over the horizon's second half) is within the promise and
    no older, and its peak no higher, than today's config gives; a swing it calls narrower is
    narrower, and no figure is compared with itself."""
    args = ["--config", str(CONFIG)] if tree == "whatif" else []
    proc = _cli(str(FIXTURES / "logdirs" / tree), *args, "--at", AT_OF_TREE[tree],
                "--recommend", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    short = {w["topic"] for w in doc["what_if"] if w["too_short"]}
    for r in doc["recommendations"]:
        assert r["topic"] not in short
        before, after = r["before"], r["after"]
        assert after["oldest_age_ms_late"] <= before["oldest_age_ms_late"]
        assert after["oldest_age_ms_late"] <= 1.25 * _retention(r["why"])
        said = re.search(r"swings (\d+)% instead of (\d+)%", r["why"])
        if said:
            assert int(said[1]) < int(said[2])
            assert after["swing_late"] < before["swing_late"]
        assert not re.search(r"(\d+)% instead of \1%", r["why"])


def _retention(why: str) -> int:
    days = re.search(r"\((?:local\.)?retention\.ms (\d+)d", why)
    assert days, why
    return int(days[1]) * DAY


def test_tiered_recommendations_are_held_to_local_retention():
    """clicks.tiered (the tiered tree at 2024-06-01T12:00Z, local.retention.ms 2 days,
    retention.ms 7 days): partition 0's segments @200 and @300 are copied (the highest offset
    in remote storage is 399) and past local retention, so the first check at --at takes
    them, as ``segtools retention`` does; @400 is past it too but waits for its copy, and the
    next check (5 minutes on, the copy task taken as keeping up) takes it. The recommendation
    is held to local.retention.ms, names it, and its swing is narrower (before this, the
    sentence said "(retention.ms 2d)" and called a wider swing an improvement)."""
    from segtools.analysis.simulation import RETENTION_CHECK_INTERVAL_MS
    from segtools.timestamps import to_millis

    at = to_millis("2024-06-01T12:00Z")
    loaded = segtools.open(FIXTURES / "logdirs" / "tiered").inputs(at=at)
    parts = whatif._inputs(loaded, 1 << 30)["clicks.tiered"]
    first = next(p for p in parts if p.pi.partition == 0)
    assert first.highest_remote_offset == 399
    run = whatif.run_partition(first, first.pi.config, now_ms=at, end_ms=at + DAY,
                               ingest=whatif.AUTO, partitions=len(parts))
    assert [(d.at_ms, d.base_offsets) for d in run.deletions[:2]] == [
        (at, (200, 300)), (at + RETENTION_CHECK_INTERVAL_MS, (400,))]
    proc = _cli(str(FIXTURES / "logdirs" / "tiered"), "--at", "2024-06-01T12:00Z",
                "--recommend", "--format", "json")
    (rec,) = [r for r in json.loads(proc.stdout)["recommendations"]
              if r["topic"] == "clicks.tiered"]
    assert "(local.retention.ms 2d)" in rec["why"] and "(retention.ms" not in rec["why"]
    assert rec["after"]["oldest_age_ms_late"] <= 1.25 * 2 * DAY
    assert rec["after"]["swing_late"] < rec["before"]["swing_late"]


# --------------------------------------------------------------------------- versions


def test_the_whatif_tree_is_one_kafka_release_range():
    """Its meta.properties has a directory.id (3.7+) and its .kafka_cleanshutdown is 3.7's
    JSON: the evidence agrees."""
    proc = subprocess.run([SEGTOOLS, "scan", str(TREE), "-q"], capture_output=True,
                          text=True, timeout=300)
    assert "written by Kafka 3.7 or later" in proc.stdout
    assert "evidence disagrees" not in proc.stdout and " to 3.6" not in proc.stdout


def test_the_forecast_says_when_its_end_size_is_reached():
    """quiet-events-0 with no new data: segment @0 (largest timestamp T + 168 h) goes at
    T + 336 h, segment @169 (largest T + 239 h) at T + 407 h = 2024-01-17T23:00Z, and then
    the partition is empty: the line names that moment, not the window's end."""
    proc = _cli(str(TREE / "quiet-events-0"), "--config", str(CONFIG), "--at", AT,
                "--forecast", "14")
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("forecast:"))
    assert "-> 0 B at 2024-01-17T23:00:00Z (2 step(s); nothing changes after it until " \
           "2024-01-25T00:00:00Z)" in line
    doc = json.loads(_cli(str(TREE / "quiet-events-0"), "--config", str(CONFIG), "--at", AT,
                          "--forecast", "14", "--format", "json").stdout)
    fc = doc["topics"][0]["forecast"]
    # the first millisecond past retention.ms (the rule is strict)
    assert fc["end_size"] == 0 and fc["end_size_at_ms"] == 1_705_532_400_001


def test_a_quiet_active_segment_never_goes_at_never():
    """The quiet-active-segment callout named its time with ``format_time``, which says
    "never" for none: "can only go as a whole, at never". Behind a tiered segment that waits
    for its remote copy there is no time; the callout says what it waits for."""
    from segtools.analysis.retention import explain_retention
    from segtools.storage.summary import SegmentSummary

    t0 = 1_704_067_200_000

    def seg(base: int, first_ts: int, max_ts: int, active: bool) -> SegmentSummary:
        return SegmentSummary(path="", base_offset=base, size=1000, valid_bytes=1000,
                              is_active=active, mtime_ms=max_ts, batch_count=1,
                              record_count=10, first_offset=base, last_offset=base + 9,
                              first_timestamp=first_ts, log_max_timestamp=max_ts,
                              max_timestamp=max_ts, max_timestamp_source="log")

    config = TopicConfig(retention_ms=7 * DAY, remote_storage_enable=True,
                         local_retention_ms=2 * DAY)
    pr = explain_retention([seg(0, t0, t0 + DAY, False), seg(10, t0 + 2 * DAY, t0 + 5 * DAY,
                                                             True)],
                           config, now_ms=t0 + 6 * DAY, high_watermark=None,
                           log_start_offset=None, highest_remote_offset=-1)
    (quiet,) = [c for c in pr.callouts if c.code == "quiet_active_segment"]
    assert "at never" not in quiet.message
    assert "can only go as a whole, once the segments before it are copied to remote " \
           "storage" in quiet.message


def test_an_empty_log_keeps_the_promise():
    """A topic empty over the horizon's second half keeps no old record: nothing to
    recommend (before, ``meets`` said no and every candidate was simulated in vain)."""
    config = TopicConfig(retention_ms=7 * DAY)
    empty = Outcome(0, 0, None, None, (), 0, 0, 1, 0)
    assert whatif.meets(empty, config)
    assert not whatif.meets(_outcome(100, 0, 9 * DAY), config)
    assert whatif.meets(_outcome(100, 0, 8 * DAY), config)


@pytest.mark.parametrize("after_ms", [3_600_000, 8 * DAY])
def test_the_what_if_sentence_says_what_retention_says_of_a_magic_0_partition(after_ms):
    """Magic 0 records carry no timestamp, so the log has no oldest record age: the what-if
    took that for "the first retention check takes every segment", while ``segtools
    retention`` at the same moment kept both segments (aged by their files' mtimes, an hour
    old). Each command is asked at an hour and at eight days past the files' mtimes (a
    week's retention between them); the sentence says what retention's verdict is."""
    part = FIXTURES / "logdirs" / "legacy" / "legacy.v0-0"
    at = str(max(p.stat().st_mtime_ns // 1_000_000 for p in part.glob("*.log")) + after_ms)
    kept = json.loads(_cli(str(part), "--at", at, "--format", "json").stdout)
    deletable = {v["deletable"] for p in kept["partitions"] for v in p["segments"]}
    said = _cli(str(part), "--at", at, "--what-if", "segment.bytes=16384").stdout
    if deletable == {False}:
        assert "the first retention check keeps 3.1 KiB whose records carry no timestamp" \
            in said and "takes every segment" not in said
    else:
        assert deletable == {True} and "the first retention check takes every segment" in said
