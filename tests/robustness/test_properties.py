"""Hypothesis over every parser entry point: structured, nearly-valid inputs into the fuzz
targets, which assert the contract (a value, a finding, or a typed SegtoolsError; kernel and
construct reference agree; caps hold)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import targets
from tests.robustness import strategies as s

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(s.v2_segments(), st.booleans())
def test_v2_batch_walk(data, fix_crcs):
    targets.batch_walk(bytes([fix_crcs]) + data)


@FAST
@given(st.sampled_from(range(5)), st.integers(0, 255), st.binary(max_size=200))
def test_v2_records_kernel_matches_reference(codec, count, payload):
    targets.v2_records(bytes([codec, 0, count, 0]) + bytes(16) + payload)


@FAST
@given(st.lists(s.record, max_size=5))
def test_v2_records_from_real_records(records):
    payload = s.make_batch(records)[61:]
    targets.v2_records(bytes([0, 0, len(records), 0]) + bytes(16) + payload)


@FAST
@given(s.legacy_segments())
def test_legacy_entries(data):
    targets.batch_walk(b"\x01" + data)
    targets.legacy(b"\x00" + data)


@FAST
@given(st.integers(0, 255), st.binary(max_size=300))
def test_legacy_wrappers_around_hostile_inner_sets(mode, inner):
    targets.legacy(bytes([mode | 1, 1, 0, 0, 0, 0, 9, 2]) + inner)


@FAST
@given(st.integers(0, 255), st.binary(min_size=2, max_size=2), st.binary(max_size=400))
def test_codec_paths(selector, limit, payload):
    targets.codec_paths(bytes([selector]) + limit + payload)


@FAST
@given(s.index_files(time=False))
def test_offset_index(data):
    targets.offset_index(data)


@FAST
@given(s.index_files(time=True))
def test_time_index(data):
    targets.time_index(data)


@FAST
@given(st.binary(max_size=20), st.lists(st.binary(min_size=34, max_size=34), max_size=6),
       st.binary(max_size=40))
def test_txn_index(head, entries, tail):
    targets.txn_index(head.ljust(20, b"\0") + b"".join(entries) + tail)


@FAST
@given(st.integers(0, 255), s.index_files(time=False), st.binary(max_size=60))
def test_seek_with_lying_indexes(which, index, time_index):
    body = index[33:]
    targets.seek(bytes([which, 0]) + b"\0\0\0\x07" + len(body).to_bytes(2, "big") + body
                 + time_index)


@FAST
@given(s.snapshots())
def test_producer_snapshot(data):
    targets.snapshot(data)


@FAST
@given(s.checkpoint_texts())
def test_text_files(data):
    targets.text_files(data)


@FAST
@given(s.dir_name_inputs())
def test_dir_names(data):
    targets.dir_names(data)


@FAST
@given(st.integers(0, 6), st.integers(0, 0xFFFF), st.binary(max_size=120))
def test_internal_topic_decoders(which, split, body):
    targets.internal(bytes([which]) + split.to_bytes(2, "big") + body)


@FAST
@given(st.integers(0, 3), st.integers(0, 0xFFFF), st.binary(max_size=120))
def test_internal_topic_programs(which, split, body):
    targets.internal_programs(bytes([which]) + split.to_bytes(2, "big") + body)
