"""``__remote_log_metadata``: the four record types, their frame, the compiled family and dump."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.analysis.partition_log import file_records
from segtools.decode import _programs as K
from segtools.decode import programs
from segtools.errors import SegtoolsError
from segtools.formats.internal import cluster_metadata, remote_log_metadata
from segtools.formats.internal.generated import SchemaError, UnsupportedVersionError
from tests.fixtures_manifest import FIXTURES
from tests.forensics import message_values

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TIERED = FIXTURES / "logdirs" / "tiered"
HOSTILE = FIXTURES / "logdirs" / "tiered-hostile" / "__remote_log_metadata-0" / \
    "00000000000000000000.log"

CASES = [pytest.param(m, v, id=f"{m.name}-v{v}") for m in remote_log_metadata.RECORDS
         for v in range(m.valid.low, m.valid.high + 1)]


def _compiled(value: bytes | None):
    decoder = programs.Decoder(programs.remote_log_metadata_family())
    buf = np.frombuffer(value, np.uint8) if value else np.zeros(0, np.uint8)
    b = decoder.decode(buf, np.array([0]), np.array([-1]), np.array([0]),
                       np.array([-1 if value is None else len(value)]), np.zeros(1, np.int8))
    return b.value(0) if b.status[0] == K.ST_OK else None


def _reference(value: bytes | None):
    try:
        return remote_log_metadata.decode_frame(value).data
    except SegtoolsError:
        return None


def test_the_declarations_are_kafkas_api_keys_and_versions():
    assert {m.api_key: (m.name, str(m.valid), str(m.flexible))
            for m in remote_log_metadata.RECORDS} == {
        0: ("RemoteLogSegmentMetadataRecord", "0", "0+"),
        1: ("RemoteLogSegmentMetadataUpdateRecord", "0", "0+"),
        2: ("RemotePartitionDeleteMetadataRecord", "0", "0+"),
        3: ("RemoteLogSegmentMetadataSnapshotRecord", "0", "0+")}


@pytest.mark.parametrize(("schema", "version"), CASES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_record_type_reads_the_same_compiled_and_by_reference(schema, version, data):
    value = data.draw(message_values(schema, version))
    raw = cluster_metadata.encode_frame(schema, value, version)
    want = _reference(raw)
    assert want is not None
    assert _compiled(raw) == want
    cut = raw[:data.draw(st.integers(0, len(raw) - 1))]
    assert _compiled(cut) == _reference(cut)


def _fixture_values():
    """Every record value of the tiered tree's metadata partitions (Kafka-built batches)."""
    out = []
    for log in sorted(TIERED.glob("__remote_log_metadata-*/*.log")):
        findings: list = []
        out += [r.record.value for r in file_records(log, findings)]
        assert findings == []
    return out


def test_the_fixture_records_decode_alike_and_cover_every_type_and_state():
    values = _fixture_values()
    assert len(values) == 28
    decoded = [remote_log_metadata.decode_frame(v) for v in values]
    assert [_compiled(v) for v in values] == [d.data for d in decoded]
    assert {d.name for d in decoded} == {"RemoteLogSegmentMetadataRecord",
                                          "RemoteLogSegmentMetadataUpdateRecord",
                                          "RemotePartitionDeleteMetadataRecord"}
    states = {remote_log_metadata.state_name(d.api_key, d.data.get(
        "remotePartitionDeleteState", d.data.get("remoteLogSegmentState"))) for d in decoded}
    assert states == set(remote_log_metadata.SEGMENT_STATES.values()) | set(
        remote_log_metadata.PARTITION_DELETE_STATES.values())
    first = decoded[0].data
    assert len(first["remoteLogSegmentId"]["id"]) == 22  # Uuid.toString: base64url, no padding


def test_hostile_records_are_refused_with_the_reason():
    with pytest.raises(SchemaError, match="null value"):
        remote_log_metadata.decode_frame(None)
    good = cluster_metadata.encode_frame(remote_log_metadata.BY_API_KEY[2], {}, 0)
    with pytest.raises(UnsupportedVersionError, match="version 5"):
        remote_log_metadata.decode_frame(good[:2] + b"\x05" + good[3:])
    with pytest.raises(UnsupportedVersionError, match="apiKey 4"):
        remote_log_metadata.decode_frame(good[:1] + b"\x04" + good[2:])
    with pytest.raises(SchemaError, match="garbage"):
        remote_log_metadata.decode_frame(good + b"\x00")
    assert remote_log_metadata.state_name(0, 9) == "UNKNOWN(9)"


def test_dump_decodes_every_record_and_names_what_it_cannot():
    p = subprocess.run([SEGTOOLS, "dump", "--remote-log-metadata-decoder", "--format", "jsonl",
                        str(HOSTILE)], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    records = [json.loads(line) for line in p.stdout.splitlines()
               if json.loads(line)["type"] == "record"]
    assert len(records) == 10
    payloads = [r.get("payload") or r.get("decoded") or r for r in records]
    text = json.dumps(payloads)
    for reason in ("only 0 remain", "version 7", "apiKey 9", "frame version 0", "UNKNOWN(9)",
                   "garbage", "null value", "RemoteLogSegmentMetadataSnapshotRecord"):
        assert reason in text, reason
