"""Resource bounds (issue 8 §2): hostile framing, lying counts, endless varints, decompression
bombs in every codec, nested legacy wrappers, a flood of inner messages and an index claiming
10^9 entries; each ends in a finding, and time and peak memory stay bounded.

All operations run in one child interpreter (``hostile.measure``), ordered by the memory bound
they are held to; ``growth_mib`` is each operation's peak RSS above the RSS before it.
Wall-time bounds are generous (a loaded CI machine); the memory bounds are what the design
promises: flat in the file size, at most about the decompression cap for a bomb.
"""

from __future__ import annotations

import pytest

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from tests.fixtures_manifest import SAMPLE
from tests.robustness import hostile as h

MIB = 1 << 20
SMALL_CAP = 8 * MIB
DEFAULT_CAP_MIB = DEFAULT_DECOMPRESS_LIMIT / MIB
FLOOD = 500_000

# name -> (max seconds, max growth MiB, text every finding output must contain, exit code)
BOUNDS = {
    "length_2g": (5, 24, "truncated_tail", 1),
    "lying_count_dump": (10, 24, "corrupt_records", 1),
    "lying_count_verify": (10, 24, "corrupt_records", 1),
    "endless_varint": (10, 24, "corrupt_records", 1),
    "nested_wrappers": (5, 24, "nested inside a compressed wrapper", 1),
    "snappy_liar": (5, 24, "inflates past the 8388608-byte cap", 1),
    "index_1e9_dump": (5, 24, "", 0),
    "timeindex_1e9_dump": (5, 24, "", 0),
    "index_1e9_verify": (5, 24, "", 0),
    "index_1e9_find": (5, 24, "", 0),
    **{f"bomb_{c}_small_cap": (10, 64, f"{c} payload inflates past the {SMALL_CAP}-byte cap", 1)
       for c in h.BOMBS},
    "legacy_flood_scan": (15, 128, "", 0),
    "sparse_2g_batch": (30, 200, "crc_mismatch", 1),
    "legacy_flood_dump": (60, 512, "", 0),
    **{f"bomb_{c}_default_cap": (30, 2 * DEFAULT_CAP_MIB + 128,
                                 f"inflates past the {DEFAULT_DECOMPRESS_LIMIT}-byte cap", 1)
       for c in ("gzip", "lz4", "zstd")},
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("hostile")
    log = h.SEGMENT
    length = h.write_length_2g(tmp)
    lying = h.write_lying_count(tmp)
    varint = h.write_endless_varints(tmp)
    nested = h.write_nested_wrappers(tmp)
    liar = h._pdir(tmp, "snappy-liar")
    (liar / log).write_bytes(h._batch(h.snappy_liar(), codec=2))
    index = h.write_huge_sparse_index(tmp)
    small = {c: h.write_bomb(tmp / "small", c, 64 * MIB) for c in h.BOMBS}
    flood = h.write_legacy_inner_flood(tmp, FLOOD)
    sparse = h.write_sparse_2g_batch(tmp)
    big = {c: h.write_bomb(tmp / "big", c, 1 << 30) for c in ("gzip", "lz4", "zstd")}

    def cli(name: str, *argv) -> dict:
        return {"name": name, "mode": "cli", "argv": [str(a) for a in argv]}

    def lib(name: str, path, limit: int) -> dict:
        return {"name": name, "mode": "library", "path": str(path), "limit": limit}

    specs = [
        cli("length_2g", "dump", "--deep", length / log),
        cli("lying_count_dump", "dump", "--deep", lying / log),
        cli("lying_count_verify", "verify", "-q", "--deep", lying),
        cli("endless_varint", "dump", "--deep", varint / log),
        cli("nested_wrappers", "dump", "--deep", nested / log),
        lib("snappy_liar", liar / log, SMALL_CAP),
        cli("index_1e9_dump", "dump", "--index-sanity-check", index / log.replace(".log",
                                                                                  ".index")),
        cli("timeindex_1e9_dump", "dump", "--index-sanity-check",
            index / log.replace(".log", ".timeindex")),
        cli("index_1e9_verify", "verify", "-q", index),
        cli("index_1e9_find", "find", index, "--offset", "2"),
        *(lib(f"bomb_{c}_small_cap", p / log, SMALL_CAP) for c, p in small.items()),
        cli("legacy_flood_scan", "scan", "-q", flood),
        cli("sparse_2g_batch", "dump", "--deep", sparse / log),
        cli("legacy_flood_dump", "dump", "--deep", flood / log),
        *(cli(f"bomb_{c}_default_cap", "dump", "--deep", p / log) for c, p in big.items()),
    ]
    assert [s["name"] for s in specs] == list(BOUNDS)
    return h.measure(specs, SAMPLE / "orders.v2-eu-0" / log)


@pytest.mark.parametrize("name", list(BOUNDS))
def test_hostile_input_is_bounded(measured, name):
    seconds, growth_mib, finding, code = BOUNDS[name]
    row = measured[name]
    assert row["code"] == code, row
    assert finding in row["stderr"], row
    assert "internal error" not in row["stderr"] and "Traceback" not in row["stderr"], row
    assert row["seconds"] < seconds, row
    assert row["growth_mib"] < growth_mib, row


def test_bounds_table(measured, record_property):
    """The numbers behind docs/robustness.md: every operation was measured once, with a time
    and a memory growth; they go to the JUnit XML (``--junitxml``) as properties, labelled,
    instead of into the middle of pytest's progress dots."""
    assert list(measured) == list(BOUNDS)
    for name, row in measured.items():
        assert row["seconds"] >= 0 and isinstance(row["growth_mib"], int | float), row
        record_property(name, f"{row['seconds']:.2f} s, +{row['growth_mib']:.0f} MiB")
