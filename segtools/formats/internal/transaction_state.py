"""``__transaction_state`` records: one per state change of a transactional id.

Decoding mirrors ``TransactionLog.readTxnRecordKey`` / ``readTxnRecordValue``
(``core/.../coordinator/transaction/TransactionLog.scala``): the key is an int16 version (0)
and ``TransactionLogKey``; the value an int16 version and ``TransactionLogValue`` (v0, or the
flexible v1 with tagged producer-id history and client transaction version), or null when the
transactional id expired or was removed. The status byte is ``TransactionState.id``.
"""

from __future__ import annotations

from dataclasses import dataclass

from segtools.formats.internal.generated import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    SchemaError,
    UnsupportedVersionError,
    array,
    field,
    message,
    struct_of,
    tagged,
    version_prefix,
)

TRANSACTION_LOG_KEY = message(
    "TransactionLogKey", "0", "none", field("TransactionalId", STRING, "0"))

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue", "0-1", "1+",
    field("ProducerId", INT64),
    tagged("PreviousProducerId", INT64, 0, "1+", default=-1),
    tagged("NextProducerId", INT64, 1, "1+", default=-1),
    field("ProducerEpoch", INT16),
    field("TransactionTimeoutMs", INT32),
    field("TransactionStatus", INT8),
    field("TransactionPartitions", array(struct_of(
        "PartitionsSchema", field("Topic", STRING), field("PartitionIds", array(INT32)))),
        nullable="0+"),
    field("TransactionLastUpdateTimestampMs", INT64),
    field("TransactionStartTimestampMs", INT64),
    tagged("ClientTransactionVersion", INT16, 2, "1+", default=0))

#: ``TransactionState.id`` -> name (``TransactionMetadata.scala``).
TRANSACTION_STATUSES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                        4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead",
                        7: "PrepareEpochFence"}
#: States in which the coordinator still owes the partitions a marker or the client an answer.
OPEN_STATUSES = frozenset(("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"))


@dataclass(frozen=True, slots=True)
class TransactionLogRecord:
    transactional_id: str
    value_version: int | None  # None: tombstone
    value: dict | None

    @property
    def status(self) -> str | None:
        if self.value is None:
            return None
        code = self.value["transactionStatus"]
        return TRANSACTION_STATUSES.get(code, f"Unknown({code})")


def decode_record(key: bytes | None, value: bytes | None) -> TransactionLogRecord:
    if key is None:
        raise SchemaError("__transaction_state record has a null key")
    key_version = version_prefix(key, "key")
    if key_version not in TRANSACTION_LOG_KEY.valid:
        raise UnsupportedVersionError(f"unknown transaction log key version {key_version}")
    transactional_id = TRANSACTION_LOG_KEY.read_exact(memoryview(key)[2:], key_version)
    if value is None:
        return TransactionLogRecord(transactional_id["transactionalId"], None, None)
    version = version_prefix(value, "value")
    decoded = TRANSACTION_LOG_VALUE.read_exact(memoryview(value)[2:], version)
    return TransactionLogRecord(transactional_id["transactionalId"], version, decoded)
