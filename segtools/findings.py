"""Findings: problems worth reporting that do not stop the read, and the one registry of them.

A finding is a value, not an exception: a torn tail or a bad CRC is evidence an operator wants to
see next to the data around it, so parsers yield findings and carry on where the framing allows.

Every code is declared once in :data:`RULES` with its severity, its area and a one-line
meaning; :class:`Finding` refuses a code that is not declared, or a severity other than the
declared one, so a code cannot drift between modules. ``docs/findings.md`` is generated from the
registry (``python -m segtools.findings``) and a test keeps it in step. Codes are stable
snake_case identifiers: renaming one is a change of the output contract.

Severity rule (the same for every command):

- **error**: bytes that cannot be read, or data that is lost;
- **warning**: a state that needs a person's attention;
- **info**: an explained, normal state.

A healthy broker's data dir verifies with no error and no warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Area(StrEnum):
    """Where a finding comes from, in the order the docs list them."""

    FRAMING = "segment framing"
    RECORDS = "records"
    OFFSETS = "offsets and leader epochs"
    INDEXES = "indexes against the log"
    OFFSET_INDEX = "offset index files"
    TIME_INDEX = "time index files"
    TXN_INDEX = "transaction index files"
    SNAPSHOTS = "producer snapshots"
    CHECKPOINTS = "checkpoints and metadata files"
    DIRECTORIES = "files and directories"
    READING = "reading a live tree"
    TRANSACTIONS = "transactions"
    PRODUCERS = "producers"
    CONSUMER_OFFSETS = "__consumer_offsets"
    CLUSTER_METADATA = "__cluster_metadata"
    REPLICAS = "replicas"
    CONFIG = "configuration"
    REMOTE_LOG = "tiered storage (__remote_log_metadata)"
    PAYLOADS = "payloads and schemas"


@dataclass(frozen=True, slots=True)
class Rule:
    """One finding code: what it means and how serious it is, declared once."""

    code: str
    severity: Severity
    area: Area
    meaning: str


class UnknownFindingCode(LookupError):
    """A finding built with a code the registry does not declare (a programming error)."""


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741 (table shorthand)
A = Area

RULES: tuple[Rule, ...] = (
    # ---------------------------------------------------------------- segment framing
    Rule("truncated_tail", W, A.FRAMING,
         "the last batch is cut short (torn write, crash, partial copy); Kafka's recovery "
         "truncates it"),
    Rule("append_in_flight", I, A.FRAMING,
         "a running broker's active segment ends in a batch it is still writing: the data "
         "ends at the last whole batch, as a fetch reads it (FileLogInputStream)"),
    Rule("zero_filled_tail", I, A.FRAMING,
         "zero bytes after the last batch (preallocated segment, or a crash before data reached "
         "the disk)"),
    Rule("corrupt_batch_length", E, A.FRAMING,
         "a batch length below the minimum: the framing is lost from this byte"),
    Rule("batch_too_small", E, A.FRAMING, "a v2 batch shorter than its 61-byte header"),
    Rule("invalid_magic", E, A.FRAMING, "a magic byte other than 0, 1 or 2"),
    Rule("invalid_compression", E, A.FRAMING,
         "a compression id Kafka does not define, or zstd in a v0/v1 message"),
    Rule("crc_mismatch", E, A.FRAMING, "the stored CRC does not match the batch's bytes"),
    Rule("salvage_skipped", E, A.FRAMING,
         "--salvage skipped these bytes to resynchronise on the next valid batch: data lost"),
    Rule("segment_truncated_while_reading", W, A.READING,
         "the file shrank while it was read (follower truncation or a copy in progress); the "
         "read stops at that byte"),
    Rule("object_changed_while_reading", E, A.READING,
         "an object (or archive member) was replaced after it was listed: its size or "
         "modification time changed; it is not read further, so no answer mixes two objects"),
    # ---------------------------------------------------------------- records
    Rule("corrupt_records", E, A.RECORDS, "a v2 batch's records do not decode"),
    Rule("corrupt_compressed_payload", E, A.RECORDS,
         "a compressed payload does not decompress, or inflates past the cap"),
    Rule("corrupt_message", E, A.RECORDS, "a v0/v1 message (or wrapper) does not decode"),
    Rule("batch_exceeds_cap", E, A.RECORDS,
         "an uncompressed batch larger than --max-decompressed-bytes was not decoded"),
    # ---------------------------------------------------------------- offsets and epochs
    Rule("offset_gap_compaction", I, A.OFFSETS,
         "offsets missing between batches where the cleaner removed records"),
    Rule("offset_hole", W, A.OFFSETS,
         "offsets missing between batches with no compaction to explain them"),
    Rule("offset_overlap", E, A.OFFSETS, "a batch starts at or below the previous batch's last "
         "offset"),
    Rule("batch_below_segment_base", E, A.OFFSETS,
         "a batch whose offsets lie below the segment's base offset (its file name)"),
    Rule("leader_epoch_decreasing", E, A.OFFSETS,
         "a batch's partition leader epoch is lower than an earlier batch's"),
    Rule("leader_epoch_not_in_checkpoint", W, A.OFFSETS,
         "a leader epoch seen in batches that leader-epoch-checkpoint does not list"),
    Rule("leader_epoch_checkpoint_truncated", I, A.OFFSETS,
         "batches below the log start offset carry epochs leader-epoch-checkpoint dropped when "
         "the log start advanced (LeaderEpochFileCache.truncateFromStart): normal"),
    Rule("leader_epoch_start_mismatch", W, A.OFFSETS,
         "leader-epoch-checkpoint's start offset for an epoch differs from the first batch of "
         "that epoch"),
    # ---------------------------------------------------------------- indexes vs log
    Rule("index_entry_not_at_batch", E, A.INDEXES,
         "an offset index entry's position is not the start of a batch"),
    Rule("index_entry_mismatch", E, A.INDEXES,
         "an offset index entry's offset is below the batch at its position, or in no batch "
         "from there on: a lookup from that position cannot find it"),
    Rule("timeindex_offset_not_in_log", E, A.INDEXES,
         "a time index entry points past the segment's last batch"),
    Rule("timeindex_offset_missing", W, A.INDEXES,
         "a time index entry names an offset no batch holds, with no sign of compaction"),
    Rule("timeindex_offset_cleaned", I, A.INDEXES,
         "time index entries of a compacted partition name offsets no batch covers (not what "
         "Kafka's cleaner writes: it names the last offset of a batch it kept): lookups scan "
         "forward, harmless"),
    Rule("timeindex_record_offset_convention", I, A.INDEXES,
         "time index entries name the max-timestamp record's offset, as older brokers wrote "
         "them: healthy"),
    Rule("timeindex_entry_mismatch", E, A.INDEXES,
         "a time index entry's timestamp differs from the max timestamp of its batch"),
    Rule("timeindex_not_running_max", W, A.INDEXES,
         "a time index entry is not the running maximum timestamp at its offset"),
    Rule("timeindex_max_mismatch", W, A.INDEXES,
         "the time index's last entry and the log's max timestamp disagree"),
    # ---------------------------------------------------------------- offset index files
    Rule("index_length_not_multiple", E, A.OFFSET_INDEX,
         "the .index size is not a multiple of 8 bytes (Kafka's sanity check fails)"),
    Rule("index_last_offset_below_base", E, A.OFFSET_INDEX,
         "the .index's last entry is below its base offset (Kafka's sanity check fails)"),
    Rule("index_offset_below_base", E, A.OFFSET_INDEX, "an .index entry below the base offset"),
    Rule("index_offset_not_increasing", E, A.OFFSET_INDEX,
         ".index offsets do not strictly increase"),
    Rule("index_position_not_increasing", E, A.OFFSET_INDEX,
         ".index positions do not increase"),
    Rule("index_position_negative", E, A.OFFSET_INDEX, "an .index entry with a negative position"),
    Rule("index_position_past_log_end", E, A.OFFSET_INDEX,
         "an .index entry points past the end of the .log"),
    Rule("index_zero_entries_inside", I, A.OFFSET_INDEX,
         "a run of zero entries inside the .index, then valid entries: Kafka counts them "
         "all and its lookups stay correct"),
    Rule("index_garbage_after_entries", E, A.OFFSET_INDEX,
         "non-zero bytes after the .index's valid entries"),
    # ---------------------------------------------------------------- time index files
    Rule("timeindex_length_not_multiple", E, A.TIME_INDEX,
         "the .timeindex size is not a multiple of 12 bytes (Kafka's sanity check fails)"),
    Rule("timeindex_last_offset_below_base", E, A.TIME_INDEX,
         "the .timeindex's last entry is below its base offset"),
    Rule("timeindex_last_timestamp_below_first", E, A.TIME_INDEX,
         "the .timeindex's last timestamp is below its first (Kafka's sanity check fails)"),
    Rule("timeindex_offset_below_base", E, A.TIME_INDEX,
         "a .timeindex entry below the base offset"),
    Rule("timeindex_offset_decreasing", E, A.TIME_INDEX, ".timeindex offsets decrease"),
    Rule("timeindex_timestamp_not_increasing", E, A.TIME_INDEX,
         ".timeindex timestamps do not increase"),
    Rule("timeindex_zero_entries_inside", I, A.TIME_INDEX,
         "a run of zero entries inside the .timeindex, then valid entries: Kafka counts them "
         "all and its lookups stay correct"),
    Rule("timeindex_garbage_after_entries", E, A.TIME_INDEX,
         "non-zero bytes after the .timeindex's valid entries"),
    Rule("timeindex_padded_active", I, A.TIME_INDEX,
         "the active segment's .timeindex is preallocated with zero entries (normal while the "
         "broker runs)"),
    # ---------------------------------------------------------------- transaction index files
    Rule("txnindex_unsupported_version", E, A.TXN_INDEX, "a .txnindex entry version other than 0"),
    Rule("txnindex_last_offset_below_base", E, A.TXN_INDEX,
         "a .txnindex entry's last offset is below the segment's base offset"),
    Rule("txnindex_first_offset_after_last", E, A.TXN_INDEX,
         "a .txnindex entry whose first offset is after its last offset"),
    Rule("txnindex_last_offset_not_increasing", E, A.TXN_INDEX,
         ".txnindex last offsets do not increase"),
    Rule("txnindex_too_large", E, A.TXN_INDEX,
         "a .txnindex larger than any segment's aborted transactions need: read up to a cap"),
    Rule("txnindex_partial_entry", W, A.TXN_INDEX,
         "bytes after the last whole .txnindex entry (an entry cut short)"),
    Rule("txnindex_missing_entry", W, A.TXN_INDEX,
         "an ABORT marker in the log with no .txnindex entry"),
    Rule("txnindex_unexpected_entry", W, A.TXN_INDEX,
         "a .txnindex entry with no ABORT marker in the log"),
    Rule("txnindex_first_offset_mismatch", W, A.TXN_INDEX,
         "a .txnindex entry's first offset differs from the transaction's first batch"),
    Rule("txnindex_lso_mismatch", W, A.TXN_INDEX,
         "a .txnindex entry's last stable offset differs from the one the log implies"),
    Rule("txnindex_wrong_segment", W, A.TXN_INDEX,
         "a .txnindex entry stored beside a segment that does not hold its ABORT marker"),
    # ---------------------------------------------------------------- producer snapshots
    Rule("snapshot_truncated", E, A.SNAPSHOTS, "a .snapshot shorter than its header or entries"),
    Rule("snapshot_unsupported_version", E, A.SNAPSHOTS, "a .snapshot version other than 1"),
    Rule("snapshot_crc_mismatch", E, A.SNAPSHOTS,
         "a .snapshot's CRC-32C does not match its entries"),
    Rule("snapshot_size_mismatch", E, A.SNAPSHOTS,
         "a .snapshot's size disagrees with its entry count"),
    Rule("snapshot_state_mismatch", W, A.SNAPSHOTS,
         "a .snapshot and the log disagree on a producer's state"),
    Rule("snapshot_producer_unknown", W, A.SNAPSHOTS,
         "a .snapshot holds a producer the log below it never shows"),
    Rule("snapshot_producer_missing", I, A.SNAPSHOTS,
         "a producer of the log is not in the snapshot (expired by producer id expiration)"),
    # ---------------------------------------------------------------- checkpoints, metadata files
    Rule("checkpoint_bad_version", E, A.CHECKPOINTS, "a checkpoint file with a version Kafka does "
         "not write"),
    Rule("checkpoint_bad_count", E, A.CHECKPOINTS, "a checkpoint's entry count is not a number"),
    Rule("checkpoint_bad_entry", E, A.CHECKPOINTS, "a checkpoint line that does not parse"),
    Rule("checkpoint_count_mismatch", E, A.CHECKPOINTS,
         "a checkpoint holds a different number of entries than its header says"),
    Rule("checkpoint_duplicate_entry", W, A.CHECKPOINTS, "a checkpoint names a partition twice"),
    Rule("leader_epoch_not_increasing", W, A.CHECKPOINTS,
         "leader-epoch-checkpoint epochs or start offsets do not increase"),
    Rule("partition_metadata_malformed", E, A.CHECKPOINTS, "partition.metadata does not parse"),
    Rule("partition_metadata_bad_version", E, A.CHECKPOINTS,
         "partition.metadata has a version other than 0"),
    Rule("partition_metadata_bad_topic_id", E, A.CHECKPOINTS,
         "partition.metadata's topic id is not a 16-byte base64 UUID"),
    Rule("partition_metadata_unexpected_key", W, A.CHECKPOINTS,
         "partition.metadata has a key Kafka does not write"),
    Rule("meta_properties_invalid", E, A.CHECKPOINTS, "meta.properties lacks a required field"),
    Rule("meta_properties_bad_version", E, A.CHECKPOINTS,
         "meta.properties has a version other than 0 or 1"),
    Rule("meta_properties_missing", I, A.CHECKPOINTS,
         "a log dir without meta.properties (a copy, or a broker that never started on it)"),
    Rule("clean_shutdown_malformed", W, A.CHECKPOINTS,
         ".kafka_cleanshutdown is not the JSON Kafka writes"),
    Rule("file_unreadable", E, A.CHECKPOINTS,
         "a file beside the segments (checkpoint, index, snapshot) could not be read; the "
         "answer goes on without it"),
    Rule("file_too_large", E, A.CHECKPOINTS,
         "a metadata file far larger than Kafka ever writes (not read)"),
    Rule("file_not_utf8", E, A.CHECKPOINTS, "a text metadata file that is not UTF-8"),
    # ---------------------------------------------------------------- files and directories
    Rule("path_not_found", E, A.DIRECTORIES, "a path given on the command line does not exist"),
    Rule("archive_member_refused", E, A.DIRECTORIES,
         "an archive member that is a link, a device or a name escaping the archive (an "
         "absolute path or '..'): listed, never read or followed, so what it names is not "
         "read (an error, as symlink_not_followed is on disk)"),
    Rule("archive_damaged", E, A.DIRECTORIES,
         "an archive that ends early or does not parse: the members after the damage are "
         "missing from the answer"),
    Rule("archive_member_too_large", E, A.DIRECTORIES,
         "a compressed archive member that would inflate past the limit on temporary space "
         "(a zip bomb, or a limit set too low): not read"),
    Rule("not_a_segment_file", E, A.DIRECTORIES, "a file given on the command line is not a "
         "Kafka segment"),
    Rule("log_dir_unreadable", E, A.DIRECTORIES, "a log dir that cannot be listed"),
    Rule("partition_dir_unreadable", E, A.DIRECTORIES, "a partition dir that cannot be listed"),
    Rule("partition_dir_name_invalid", W, A.DIRECTORIES,
         "a directory that looks like a partition but is not <topic>-<partition>"),
    Rule("partition_delete", I, A.DIRECTORIES,
         "a partition dir renamed -delete: pending asynchronous deletion"),
    Rule("partition_future", I, A.DIRECTORIES,
         "a partition dir renamed -future: a move between log dirs in progress"),
    Rule("partition_stray", I, A.DIRECTORIES,
         "a partition dir renamed -stray: a replica this broker no longer owns (KRaft)"),
    Rule("segment_missing_index", W, A.DIRECTORIES,
         "a rolled segment without its .index (Kafka rebuilds it on startup)"),
    Rule("segment_missing_timeindex", W, A.DIRECTORIES,
         "a rolled segment without its .timeindex (Kafka rebuilds it on startup)"),
    Rule("active_segment_missing_index", I, A.DIRECTORIES,
         "the active segment has no .index yet (created when first needed)"),
    Rule("active_segment_missing_timeindex", I, A.DIRECTORIES,
         "the active segment has no .timeindex yet (created when first needed)"),
    Rule("segment_name_not_canonical", W, A.DIRECTORIES,
         "a segment name that is not 20 zero-padded digits"),
    Rule("orphan_index_file", W, A.DIRECTORIES, "an index file without its .log"),
    Rule("not_a_regular_file", E, A.DIRECTORIES,
         "a FIFO, socket, device or dangling link under a Kafka file name: not read"),
    Rule("symlink_not_followed", E, A.DIRECTORIES,
         "a symbolic link inside a log dir: listed, never followed (it could lead outside "
         "the tree), so what it names is not read"),
    Rule("leftover_deleted_file", I, A.DIRECTORIES,
         "a .deleted file: scheduled for deletion, data intact until file.delete.delay.ms"),
    Rule("leftover_cleaned_file", I, A.DIRECTORIES,
         "a .cleaned file: incomplete cleaner output, deleted by Kafka on startup"),
    Rule("leftover_swap_file", I, A.DIRECTORIES,
         "a .swap file: cleaner output not yet swapped in, finished by Kafka on startup"),
    Rule("leftover_tmp_file", I, A.DIRECTORIES, "a temporary file Kafka deletes on startup"),
    Rule("stray_file", W, A.DIRECTORIES, "a file Kafka does not write in a partition dir"),
    Rule("stray_directory", W, A.DIRECTORIES, "a directory inside a partition dir"),
    Rule("unknown_directory", W, A.DIRECTORIES, "a directory that is neither a log dir nor a "
         "partition"),
    Rule("skipped_directory", I, A.DIRECTORIES,
         "a directory skipped on purpose (hidden, lost+found)"),
    Rule("directory_seen_twice", W, A.DIRECTORIES,
         "the same directory reached twice (a symlink or a repeated path): read once"),
    Rule("file_vanished", I, A.READING,
         "a file listed but gone before it was opened (a live broker deleted it)"),
    # ---------------------------------------------------------------- reading a live tree
    Rule("segment_unreadable", E, A.READING, "a segment that could not be opened or read"),
    Rule("segment_vanished", W, A.READING,
         "a segment deleted after it was listed (retention on a live broker): its batches are "
         "missing from the answer"),
    # ---------------------------------------------------------------- transactions
    Rule("hanging_transaction", W, A.TRANSACTIONS,
         "an open transaction older than transaction.max.timeout.ms, pinning the last stable "
         "offset"),
    Rule("transactional_id_open", I, A.TRANSACTIONS,
         "a transactional id still Ongoing or Prepare*, within its timeout"),
    Rule("transactional_id_past_timeout", W, A.TRANSACTIONS,
         "a transactional id open longer than its timeout: the coordinator should have aborted "
         "it"),
    Rule("transaction_state_undecodable", E, A.TRANSACTIONS,
         "a __transaction_state record that breaks the schema"),
    # ---------------------------------------------------------------- __consumer_offsets
    Rule("consumer_offsets_unknown_record_type", W, A.CONSUMER_OFFSETS,
         "a __consumer_offsets key type this reader does not know; skipped"),
    Rule("consumer_offsets_unknown_version", W, A.CONSUMER_OFFSETS,
         "a value version outside the schema's valid versions"),
    Rule("consumer_offsets_record_undecodable", E, A.CONSUMER_OFFSETS,
         "key or value bytes that break the schema"),
    Rule("consumer_protocol_undecodable", W, A.CONSUMER_OFFSETS,
         "a classic member's subscription or assignment that is not the consumer protocol"),
    Rule("consumer_protocol_older_layout", I, A.CONSUMER_OFFSETS,
         "a member's subscription laid out as an older version than it declares (a client "
         "quirk, e.g. kafka-go): read leniently"),
    Rule("transactional_offset_commit_pending", I, A.CONSUMER_OFFSETS,
         "transactional offset commits with no marker yet (not applied)"),
    # ---------------------------------------------------------------- __cluster_metadata
    Rule("metadata_record_unknown_type", W, A.CLUSTER_METADATA,
         "a metadata record type (apiKey) this reader does not know; skipped"),
    Rule("metadata_record_undecodable", E, A.CLUSTER_METADATA,
         "metadata record bytes that break the frame or the schema"),
    Rule("control_record_undecodable", E, A.CLUSTER_METADATA,
         "a control record that breaks its schema"),
    Rule("metadata_unknown_topic", W, A.CLUSTER_METADATA,
         "a record for a topic id never created"),
    Rule("metadata_unknown_partition", W, A.CLUSTER_METADATA,
         "a record for a partition never created"),
    Rule("metadata_transaction_open", I, A.CLUSTER_METADATA,
         "a metadata transaction with no End or Abort by the end of the log (not applied)"),
    Rule("metadata_transaction_nested", W, A.CLUSTER_METADATA,
         "a BeginTransaction inside a metadata transaction"),
    Rule("metadata_transaction_unmatched", W, A.CLUSTER_METADATA,
         "an End or Abort without a BeginTransaction"),
    Rule("metadata_history_incomplete", W, A.CLUSTER_METADATA,
         "the log starts after offset 0 and no snapshot covers the gap"),
    Rule("kraft_snapshot_header_missing", E, A.CLUSTER_METADATA,
         "a KRaft snapshot that does not start with a SnapshotHeader: Kafka cannot load it"),
    Rule("kraft_snapshot_footer_missing", E, A.CLUSTER_METADATA,
         "a KRaft snapshot that does not end with a SnapshotFooter: it was never completed"),
    Rule("kraft_snapshot_partial", I, A.CLUSTER_METADATA,
         "a KRaft snapshot still being written (.checkpoint.part), deleted by Kafka on startup"),
    # ---------------------------------------------------------------- producers
    Rule("producer_unbatched", I, A.PRODUCERS,
         "nearly every batch of a producer holds one record (linger.ms=0): batching would "
         "save batches and bytes; not raised on topics only brokers write "
         "(__consumer_offsets, __transaction_state, ...)"),
    Rule("producer_batch_size_bound", I, A.PRODUCERS,
         "a producer's batches close at a common size: batch.size is reached before linger.ms"),
    Rule("compression_ineffective", I, A.PRODUCERS,
         "a codec on batches of about one record: it has almost nothing to compress together"),
    Rule("producer_sequence_gap", W, A.PRODUCERS,
         "an idempotent producer's sequences skip numbers while no offsets are missing"),
    Rule("producer_sequence_gap_explained", I, A.PRODUCERS,
         "a sequence gap where offsets are missing too: compaction or retention removed batches"),
    Rule("producer_sequence_duplicate", W, A.PRODUCERS,
         "an idempotent producer's sequence range written twice: the records are duplicated"),
    Rule("producer_sequence_out_of_order", W, A.PRODUCERS,
         "a batch whose sequence or epoch goes backwards"),
    Rule("producer_epoch_bump", I, A.PRODUCERS,
         "a producer's epoch bumped (restart, timeout or fencing); sequences restart at 0; "
         "says what became of the transaction it had open"),
    Rule("producer_only_in_snapshot", I, A.PRODUCERS,
         "a producer the broker still tracks (its latest .snapshot) has no batch left in the "
         "log: retention or the cleaner removed them"),
    # ---------------------------------------------------------------- replicas
    Rule("leader_epoch_checkpoint_mismatch", W, A.REPLICAS,
         "a replica's batch leader epochs disagree with its leader-epoch-checkpoint"),
    Rule("replica_diverged", W, A.REPLICAS,
         "copies of a partition hold different batches at the same offset: a follower "
         "truncates to the leader's epoch end (ReplicaFetcherThread) and loses what follows"),
    # ---------------------------------------------------------------- configuration
    Rule("cluster_metadata_decoder_missing", I, A.CONFIG,
         "topic configs not read from __cluster_metadata (its decoder is unavailable)"),
    Rule("cluster_metadata_unreadable", W, A.CONFIG,
         "__cluster_metadata could not be read for topic configs; defaults assumed"),
    # ---------------------------------------------------------------- tiered storage
    Rule("remote_log_metadata_undecodable", E, A.REMOTE_LOG,
         "a __remote_log_metadata record that breaks its schema (cut short, a bad frame, "
         "bytes after the record, a null value); skipped"),
    Rule("remote_log_metadata_unknown_version", W, A.REMOTE_LOG,
         "a __remote_log_metadata record type or version this reader does not know (a newer "
         "broker, or frame version 0); skipped"),
    Rule("remote_log_metadata_unknown_state", W, A.REMOTE_LOG,
         "a remote segment or partition-delete state id Kafka does not define; the record is "
         "ignored"),
    Rule("remote_log_segment_invalid_transition", W, A.REMOTE_LOG,
         "a remote segment event Kafka's RemoteLogMetadataCache refuses (a state change "
         "isValidTransition rejects, an update of an unknown segment, a segment added twice)"),
    Rule("remote_log_metadata_snapshot_record", I, A.REMOTE_LOG,
         "a RemoteLogSegmentMetadataSnapshotRecord in the topic: it names no partition and is "
         "not placed"),
    Rule("remote_segment_copy_unfinished", W, A.REMOTE_LOG,
         "a copy to remote storage started (COPY_SEGMENT_STARTED) over an hour ago and never "
         "finished, and no later copy holds its offsets: local retention waits for it"),
    Rule("remote_segment_copy_abandoned", I, A.REMOTE_LOG,
         "an unfinished copy whose offsets a later copy holds: a failed attempt, whose objects "
         "may linger in the store"),
    Rule("remote_segment_delete_unfinished", W, A.REMOTE_LOG,
         "a remote segment delete started (DELETE_SEGMENT_STARTED) over an hour ago and never "
         "finished"),
    Rule("remote_partition_delete_unfinished", W, A.REMOTE_LOG,
         "a deleted partition's remote data is marked or being deleted, not finished, after "
         "over an hour"),
    Rule("remote_segments_overlap", I, A.REMOTE_LOG,
         "copied remote segments whose offsets overlap (a new leader copied again what the old "
         "one had copied; Kafka tolerates it)"),
    Rule("remote_segments_gap", W, A.REMOTE_LOG,
         "offsets held by no copied remote segment, between two of them or before the first "
         "local segment"),
    Rule("remote_leader_epoch_mismatch", W, A.REMOTE_LOG,
         "a copied remote segment whose leader epochs are not in the local leader epoch "
         "lineage (isRemoteSegmentWithinLeaderEpochs): the expiration task never deletes it, "
         "and only the offsets of epochs the lineage shares count as copied"),
    Rule("remote_segment_missing", W, A.REMOTE_LOG,
         "a segment that finished copying has no .log in the remote store given"),
    Rule("remote_segment_incomplete", W, A.REMOTE_LOG,
         "a segment that finished copying lacks some of its files (indexes, leader epoch "
         "checkpoint, producer snapshot) in the remote store"),
    Rule("remote_segment_content_mismatch", E, A.REMOTE_LOG,
         "a remote .log does not hold the offsets, or the leader epochs, its "
         "__remote_log_metadata record names"),
    Rule("remote_segment_not_deleted", W, A.REMOTE_LOG,
         "files of a remote segment deleted (DELETE_SEGMENT_FINISHED) remain in the store"),
    Rule("remote_segment_encrypted", I, A.REMOTE_LOG,
         "a remote segment the plugin encrypted: reading it needs the plugin's private key, "
         "which segtools does not have and does not guess"),
    Rule("remote_segment_unreadable", E, A.REMOTE_LOG,
         "a remote segment whose objects do not fit together (a manifest that does not parse, "
         "chunks that do not add up or do not decompress)"),
    Rule("remote_store_orphan_segment", I, A.REMOTE_LOG,
         "a segment in the remote store that __remote_log_metadata does not name"),
    # ---------------------------------------------------------------- payloads and schemas
    Rule("payload_unknown_magic", W, A.PAYLOADS,
         "a value decoded as Confluent-framed does not start with the magic byte 0 (the "
         "deserializer's \"Unknown magic byte\")"),
    Rule("payload_frame_truncated", E, A.PAYLOADS,
         "a framed payload is cut inside its header or its Protobuf message indexes"),
    Rule("payload_unknown_schema_id", W, A.PAYLOADS,
         "the frame names a schema id that no schema source (_schemas, files, registry) knows"),
    Rule("payload_schema_hard_deleted", W, A.PAYLOADS,
         "the frame names a schema id whose versions were all hard-deleted from the registry"),
    Rule("payload_reference_missing", W, A.PAYLOADS,
         "the payload's schema references a subject version no schema source holds"),
    Rule("payload_schema_invalid", W, A.PAYLOADS,
         "the payload's schema text does not compile (or references itself)"),
    Rule("payload_body_mismatch", E, A.PAYLOADS,
         "the body does not decode with the schema its frame names (torn, or another format)"),
    Rule("schemas_record_undecodable", W, A.PAYLOADS,
         "a _schemas record is not the JSON Schema Registry writes; the registry skips it too"),
)

del E, W, I, A

#: code -> rule, read-only.
REGISTRY: Mapping[str, Rule] = MappingProxyType({r.code: r for r in RULES})


def rule(code: str) -> Rule:
    """The declaration of ``code``; :class:`UnknownFindingCode` if there is none."""
    try:
        return REGISTRY[code]
    except KeyError:
        raise UnknownFindingCode(f"finding code {code!r} is not declared in "
                                 "segtools.findings.RULES") from None


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    path: str
    message: str
    position: int | None = None
    offset: int | None = None

    def __post_init__(self) -> None:
        declared = rule(self.code).severity
        if self.severity != declared:
            raise UnknownFindingCode(f"finding code {self.code!r} is declared {declared}, "
                                     f"not {self.severity}")

    def to_json(self) -> dict:
        out: dict = {"type": "finding", "code": self.code, "severity": str(self.severity),
                     "path": self.path}
        if self.position is not None:
            out["position"] = self.position
        if self.offset is not None:
            out["offset"] = self.offset
        out["message"] = self.message
        return out


def leaves_data_unread(f: Finding) -> bool:
    """Whether a listing finding means some of a partition's bytes could not be read at all (a
    FIFO or device under a segment's name, a directory that cannot be listed): an analysis over
    that partition is incomplete, so every command that reads it reports the finding too,
    not only ``scan`` and ``verify``."""
    return f.severity is Severity.ERROR and rule(f.code).area is Area.DIRECTORIES


def finding(code: str, path: str, message: str, *, position: int | None = None,
            offset: int | None = None) -> Finding:
    """A finding with the severity its code is declared with."""
    return Finding(code, rule(code).severity, path, message, position, offset)


def markdown() -> str:
    """The registry as the Markdown table of ``docs/findings.md``."""
    lines = ["# Finding codes", "",
             "Generated from `segtools/findings.py` (`python -m segtools.findings`); a test keeps "
             "this file in step.", "",
             "Severity: **error** = bytes that cannot be read or data that is lost; **warning** "
             "= a state that needs a person's attention; **info** = an explained, normal state. "
             "A healthy broker's data dir verifies with no error and no warning.", ""]
    for area in Area:
        rules = [r for r in RULES if r.area is area]
        if not rules:
            continue
        lines += [f"## {area.value}", "", "| code | severity | meaning |", "|---|---|---|"]
        lines += [f"| `{r.code}` | {r.severity} | {r.meaning} |" for r in rules]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
