"""The compiled JSON Lines renderer is byte-identical to the Python renderer (``json.dumps``)
on every fixture and every bytes mode, including hostile keys, values and headers."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.cli.main import main
from segtools.cli.render import dumps, record_json
from tests.builders import make_batch
from tests.decoding import records_of
from tests.fixtures_manifest import LOGS, log_path


def python_lines(buf: bytes, mode: str) -> list[str]:
    return [dumps(record_json(r, mode)) for br in records_of(buf)
            for r in br.records]


def cli_record_lines(capsysbinary, path, mode: str) -> list[str]:
    main(["dump", "--deep", "--format", "jsonl", "--bytes", mode, str(path)])
    out = capsysbinary.readouterr().out.decode()
    return [line for line in out.splitlines() if line.startswith('{"type":"record"')]


@pytest.mark.parametrize("mode", ["base64", "hex", "utf8"])
@pytest.mark.parametrize("entry", LOGS, ids=[e["case"] for e in LOGS])
def test_fixtures_render_identically(entry, mode, capsysbinary):
    path = log_path(entry)
    assert cli_record_lines(capsysbinary, path, mode) == python_lines(path.read_bytes(), mode)


hostile = st.one_of(st.none(), st.binary(max_size=20),
                    st.sampled_from([b"\x1b[31m", b'"\\', b"\xff\xfe", "é".encode(), b"\x7f"]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(hostile, hostile, st.lists(st.tuples(st.binary(max_size=6), hostile),
                                                     max_size=2)), min_size=1, max_size=8),
       st.sampled_from(["base64", "hex", "utf8"]))
def test_generated_records_render_identically(tmp_path_factory, records, mode):
    buf = make_batch([dict(timestamp_delta=i, offset_delta=i, key=k, value=v, headers=h)
                      for i, (k, v, h) in enumerate(records)], base_sequence=2**31 - 3,
                     producer_id=7, producer_epoch=1)
    path = tmp_path_factory.mktemp("r") / "00000000000000000000.log"
    path.write_bytes(buf)
    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(sink):
        main(["dump", "--deep", "--format", "jsonl", "--bytes", mode, str(path)])
    sink.flush()
    out = sink.buffer.getvalue().decode()
    got = [line for line in out.splitlines() if line.startswith('{"type":"record"')]
    assert got == python_lines(buf, mode)
