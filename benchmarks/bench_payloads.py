"""Decoded payloads: segtools' faces against the decoding library's own loop, in the same run.

The tree: one partition of 200,000 Avro values (an order: long, strings, a nested record, an
array of records, a map, a union, a timestamp-millis), each framed as Confluent's serializer
frames it, in uncompressed batches of 500 records built by kafka-python (not by segtools), and
a ``_schemas`` partition holding the schema as Schema Registry writes it.

The peer: the values held in memory (bytes), decoded one by one with fastavro's
``schemaless_reader`` and the parsed writer schema, each written as JSON (``json.dumps``): what
a script with the library and no segtools does, without reading any file.

* ``dump --deep --decode --format jsonl`` (the whole command, a fresh process, output to
  /dev/null) against the loop: target <= 1.0x;
* ``to_arrow(decode=True)`` read to the end (in process): target <= 0.5x;
* Spark ``.option("decode", "true")`` on ``local[2]``, every decoded value read: records per
  second, best of three; target >= 0.5 M/s. Measured beside the same read without ``decode``
  (the ratio is what a loaded machine does not disturb), each with the source's default
  schema and with a schema naming only the columns the query uses, and beside what the Spark
  tasks' Python does without Spark (the source's reader run in process, CPU time).

Prints JSON with the load average beside the figures. ``--records N`` for a shorter run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fastavro
from kafka.record.default_records import DefaultRecordBatchBuilder
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from benchmarks.common import OUT, best_of

ORDER = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "total", "type": {"type": "record", "name": "Money", "fields": [
        {"name": "cents", "type": "long"}, {"name": "currency", "type": "string"}]}},
    {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "lines", "type": {"type": "array", "items": {
        "type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "tags", "type": {"type": "map", "values": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None}]}
SCHEMA_ID = 1
PER_BATCH = 500
T0 = 1_714_572_000_000


def values(n: int) -> list[bytes]:
    parsed = fastavro.parse_schema(ORDER)
    rnd = random.Random(7)
    out = []
    for i in range(n):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {
            "order_id": 10_000 + i, "customer": f"customer-{rnd.randrange(5000)}",
            "total": {"cents": rnd.randrange(100, 100_000), "currency": "EUR"},
            "placed_at": dt.datetime.fromtimestamp((T0 + i) / 1000, dt.UTC),
            "lines": [{"sku": f"SKU-{rnd.randrange(900)}", "qty": rnd.randrange(1, 5)}
                      for _ in range(1 + i % 3)],
            "tags": {"channel": "web"} if i % 2 else {},
            "note": None if i % 3 else "gift wrap"})
        out.append(b"\x00" + SCHEMA_ID.to_bytes(4, "big") + buf.getvalue())
    return out


def write_partition(path: Path, records: list[tuple[bytes | None, bytes | None]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "00000000000000000000.log", "wb") as f:
        for start in range(0, len(records), PER_BATCH):
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                          producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                          batch_size=1 << 26)
            for i, (key, value) in enumerate(records[start:start + PER_BATCH]):
                b.append(i, timestamp=T0 + start + i, key=key, value=value, headers=[])
            batch = bytearray(b.build())
            batch[0:8] = start.to_bytes(8, "big")
            f.write(batch)


def tree(n: int) -> tuple[Path, list[bytes]]:
    root = OUT / f"payloads-{n}"
    vals = values(n)
    if not (root / "orders-0" / "00000000000000000000.log").exists():
        write_partition(root / "orders-0", [(b"order-%d" % i, v) for i, v in enumerate(vals)])
        key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": 1,
                          "magic": 1}).encode()
        value = json.dumps({"subject": "orders-value", "version": 1, "id": SCHEMA_ID,
                            "schema": json.dumps(ORDER), "deleted": False}).encode()
        write_partition(root / "_schemas-0", [(key, value)])
    return root, vals


def loop(vals: list[bytes]) -> None:
    """The peer: fastavro one value at a time, each written as JSON."""
    parsed = fastavro.parse_schema(ORDER)
    sink = io.StringIO()
    for v in vals:
        datum = fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed, None)
        sink.write(json.dumps(datum, default=str))
        sink.write("\n")


def dump(root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-m", "segtools.cli.main", "dump", "--deep", "--decode",
                    "--format", "jsonl", "-q", str(root / "orders-0" / "00000000000000000000.log")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)


def arrow(root: Path) -> None:
    import segtools

    for _ in segtools.open(root).to_arrow(decode=True, topics="orders", partitions=0):
        pass


#: The Spark reads measured in one session: (name, decode option, user schema or None).
SPARK_READS = (
    ("plain", False, None),
    ("decode", True, None),
    ("plain_narrow", False, "offset long, value binary"),
    ("decode_narrow", True, "offset long, value_decoded string"),
)


_READY: dict = {}


class _ReadyReader(DataSourceReader):
    """Yields, per task, the batches of an Arrow file written beforehand (read once per Python
    worker): Spark's cost of taking in exactly the rows a decode read gives, with no reading
    or decoding at all."""

    def __init__(self, path: str, tasks: int):
        self.path, self.tasks = path, tasks

    def partitions(self):
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition):
        import pyarrow as pa

        if self.path not in _READY:
            with pa.memory_map(self.path) as source:
                _READY[self.path] = pa.ipc.open_file(source).read_all().combine_chunks()
        yield from _READY[self.path].to_batches(max_chunksize=50_000)


class ReadySource(DataSource):
    """``kafkalog_ready``: the ceiling of a decode read (see :class:`_ReadyReader`)."""

    @classmethod
    def name(cls):
        return "kafkalog_ready"

    def schema(self):
        return "offset long, value_decoded string"

    def reader(self, schema):
        return _ReadyReader(self.options["path"], int(self.options["tasks"]))


def ready_file(root: Path) -> Path:
    """The rows ``decode_narrow`` gives for one partition, as an Arrow file."""
    import pyarrow as pa

    import segtools

    out = OUT / f"decoded-{root.name}.arrow"  # beside the tree, not in its log dir
    if not out.exists():
        table = segtools.open(root).to_arrow(decode=True, topics="orders",
                                             partitions=0).read_all()
        table = table.select(["offset", "value_decoded"])
        with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    return out


#: Partitions read in the large Spark runs (copies of the one segment): enough rows that a
#: query's fixed cost (planning in a fresh Python process, scheduling) is a small part.
MANY = 8


def spark_rates(root: Path, n: int) -> dict[str, float]:
    """Records per second on local[2], best of three, for each of :data:`SPARK_READS` in one
    session: the same read with and without ``decode``, with the source's default schema and
    with a schema naming only the columns a query uses (Spark gives Python sources no column
    pruning: the schema is how a user narrows a read); and beside them the ceiling of the
    narrow decode read (Spark taking in the same rows from a source that does nothing).

    Each is measured over 2 partitions (the segment copied once more, one per core) and over
    :data:`MANY`; the rate of the rows added between the two (``*_marginal``) is the read's
    own, without a query's fixed cost, which at 400,000 rows is most of the time here."""
    from pyspark_kafkalog import register

    from benchmarks.bench_spark import session

    for k in range(1, MANY):
        twin = root / f"orders-{k}"
        if not twin.exists():
            twin.mkdir()
            shutil.copyfile(root / "orders-0" / "00000000000000000000.log",
                            twin / "00000000000000000000.log")
    spark = session("local[2]")
    register(spark)
    spark.dataSource.register(ReadySource)
    rates = {}
    for name, decode, schema in (*SPARK_READS, ("decode_narrow_ceiling", None, None)):
        times = {}
        for parts in (2, MANY):
            if decode is None:
                df = (spark.read.format("kafkalog_ready").option("path", str(ready_file(root)))
                      .option("tasks", str(parts)).load())
            else:
                reader = (spark.read.format("kafkalog").option("topics", "orders")
                          .option("partitions", ",".join(map(str, range(parts)))))
                if decode:
                    reader = reader.option("decode", "true")
                if schema is not None:
                    reader = reader.schema(schema)
                df = reader.load(str(root))
            times[parts] = best_of(
                lambda df=df: df.write.format("noop").mode("overwrite").save(), repeat=3)
        rates[name] = round(2 * n / times[2])
        rates[f"{name}_{MANY}"] = round(MANY * n / times[MANY])
        rates[f"{name}_marginal"] = round((MANY - 2) * n / max(times[MANY] - times[2], 1e-9))
    spark.stop()
    return rates


def executor_rates(root: Path, n: int) -> dict[str, float]:
    """What the Spark tasks' Python does, without Spark: the source's reader run in this
    process over two partitions, with and without ``decode`` (records per second of wall
    time, best of three, one core): the part of a Spark read that is segtools'."""
    import pickle

    from pyspark_kafkalog import DefaultSource

    out = {}
    for name, decode in (("executor_plain", False), ("executor_decode", True)):
        options = {"path": str(root), "topics": "orders", "partitions": "0,1",
                   **({"decode": "true"} if decode else {})}
        source = DefaultSource(options)
        reader = pickle.loads(pickle.dumps(source.reader(source.schema())))
        tasks = reader.partitions()

        def run(reader=reader, tasks=tasks) -> None:
            for task in tasks:
                for _ in reader.read(task):
                    pass

        out[name] = round(2 * n / best_of(run))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    root, vals = tree(args.records)
    results: dict = {"records": args.records, "load_average_before": os.getloadavg()}
    peer = best_of(lambda: loop(vals))
    results["loop_s"] = round(peer, 3)
    d = best_of(lambda: dump(root))
    results["dump_s"] = round(d, 3)
    results["dump_vs_loop"] = round(d / peer, 2)
    a = best_of(lambda: arrow(root))
    results["to_arrow_s"] = round(a, 3)
    results["to_arrow_vs_loop"] = round(a / peer, 2)
    results["to_arrow_records_per_s"] = round(args.records / a)
    results["loop_records_per_s"] = round(args.records / peer)
    if not args.no_spark:
        rates = spark_rates(root, args.records)
        results["spark_records_per_s"] = rates
        for suffix in ("", f"_{MANY}", "_marginal"):
            results[f"spark_decode_vs_plain{suffix}"] = round(
                rates[f"decode{suffix}"] / rates[f"plain{suffix}"], 2)
            results[f"spark_decode_narrow_vs_plain_narrow{suffix}"] = round(
                rates[f"decode_narrow{suffix}"] / rates[f"plain_narrow{suffix}"], 2)
            results[f"spark_decode_narrow_vs_its_ceiling{suffix}"] = round(
                rates[f"decode_narrow{suffix}"] / rates[f"decode_narrow_ceiling{suffix}"], 2)
        results.update(executor_rates(root, args.records))
    results["load_average_after"] = os.getloadavg()
    results["targets"] = {"dump_vs_loop": "<= 1.0", "to_arrow_vs_loop": "<= 0.5",
                          "spark_records_per_s": ">= 500000"}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    started = time.time()
    main()
