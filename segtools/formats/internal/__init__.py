"""Decoders for the records of Kafka's internal topics and of KRaft control batches.

Every schema here is declared as data for :mod:`segtools.formats.internal.generated`, field by
field in the order of Kafka's JSON message definitions (``group-coordinator/.../message``,
``transaction-coordinator/.../message``, ``metadata/.../common/metadata``,
``clients/.../common/message``). No I/O: callers hand in key and value bytes.
"""
