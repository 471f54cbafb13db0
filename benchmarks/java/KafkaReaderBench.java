import java.io.BufferedOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.apache.kafka.common.utils.CloseableIterator;

/**
 * The peer for segtools' benchmarks: Apache Kafka's own record classes, in the same run.
 *
 * generate OUT RECORDS VALUE_BYTES CODEC MAGIC TARGET_BYTES
 *     writes a segment of batches built by MemoryRecordsBuilder (RECORDS records per batch of
 *     VALUE_BYTES-byte text values, keys "key-NNNNNN"), as a producer with that batch shape
 *     and the broker would leave it: rising offsets, leader epoch 0, CreateTime.
 * shallow FILE REPEAT   FileRecords.batches() + ensureValid() on every batch (the CRC check)
 * deep FILE REPEAT      every batch's streamingIterator, touching each record's key, value and
 *                       headers (ensureValid first, as a consumer's fetch does)
 * print FILE            the JSON lines `segtools dump --deep --format jsonl --bytes base64`
 *                       prints, byte for byte: the file line, then per batch its batch line
 *                       and its records' lines
 * Timed modes print "mode records batches nanos" per repeat to stderr.
 */
public final class KafkaReaderBench {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        if (mode.equals("generate")) {
            generate(new File(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                     args[4], Byte.parseByte(args[5]), Long.parseLong(args[6]));
            return;
        }
        File file = new File(args[1]);
        if (mode.equals("print")) {
            print(file);
            return;
        }
        int repeat = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        for (int r = 0; r < repeat; r++) {
            long t0 = System.nanoTime();
            long records = 0, batches = 0, touched = 0;
            try (FileRecords log = FileRecords.open(file, false)) {
                for (RecordBatch batch : log.batches()) {
                    batches++;
                    batch.ensureValid();
                    if (mode.equals("shallow")) continue;
                    try (CloseableIterator<Record> it = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
                        while (it.hasNext()) {
                            Record rec = it.next();
                            records++;
                            ByteBuffer k = rec.key(), v = rec.value();
                            touched += (k == null ? 0 : k.remaining()) + (v == null ? 0 : v.remaining());
                            for (Header h : rec.headers()) touched += h.key().length();
                        }
                    }
                }
            }
            System.err.println(mode + " " + records + " " + batches + " " + (System.nanoTime() - t0) + " " + touched);
        }
    }

    private static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "kafka", "segment",
                                           "order", "payment", "eu-west-1", "pending", "shipped"};

    private static byte[] text(Random rnd, int size) {
        StringBuilder sb = new StringBuilder(size + 16);
        sb.append("{\"id\":").append(rnd.nextInt(1_000_000)).append(",\"note\":\"");
        while (sb.length() < size - 2) sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
        sb.setLength(Math.max(0, size - 2));
        sb.append("\"}");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static Compression compression(String name) {
        switch (name) {
            case "none": return Compression.NONE;
            case "gzip": return Compression.gzip().build();
            case "snappy": return Compression.snappy().build();
            case "lz4": return Compression.lz4().build();
            case "zstd": return Compression.zstd().build();
            default: throw new IllegalArgumentException(name);
        }
    }

    private static void generate(File out, int records, int valueBytes, String codec, byte magic,
                                 long target) throws Exception {
        Random rnd = new Random(42);
        Compression compression = compression(codec);
        long offset = 0, written = 0, ts = 1_700_000_000_000L;
        try (OutputStream os = new BufferedOutputStream(new FileOutputStream(out), 1 << 20)) {
            while (written < target) {
                MemoryRecordsBuilder b = new MemoryRecordsBuilder(
                        new ByteBufferOutputStream(Math.max(1024, records * (valueBytes + 64) + 256)),
                        magic, compression,
                        magic == 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME,
                        offset, RecordBatch.NO_TIMESTAMP, RecordBatch.NO_PRODUCER_ID,
                        RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, false,
                        magic >= 2 ? 0 : RecordBatch.NO_PARTITION_LEADER_EPOCH,
                        Integer.MAX_VALUE, RecordBatch.NO_TIMESTAMP);
                for (int i = 0; i < records; i++) {
                    byte[] key = String.format("key-%06d", rnd.nextInt(100_000)).getBytes(StandardCharsets.UTF_8);
                    b.appendWithOffset(offset + i, ts + i, key, text(rnd, valueBytes));
                }
                MemoryRecords built = b.build();
                ByteBuffer bytes = built.buffer();
                byte[] arr = new byte[bytes.remaining()];
                bytes.get(arr);
                os.write(arr);
                written += arr.length;
                offset += records;
                ts += records;
            }
        }
    }

    private static void print(File file) throws Exception {
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 20), false, "UTF-8");
        Base64.Encoder b64 = Base64.getEncoder();
        StringBuilder sb = new StringBuilder(1 << 12);
        String base = file.getName().split("\\.", 2)[0];
        out.print("{\"type\":\"file\",\"path\":\"" + file.getPath() + "\",\"base_offset\":" + Long.parseLong(base) + "}\n");
        try (FileRecords log = FileRecords.open(file, false)) {
            for (RecordBatch batch : log.batches()) {
                sb.setLength(0);
                boolean v2 = batch.magic() >= 2;
                Integer count = batch.countOrNull();
                sb.append("{\"type\":\"batch\",\"base_offset\":").append(batch.baseOffset())
                  .append(",\"last_offset\":").append(batch.lastOffset())
                  .append(",\"count\":").append(count == null ? "null" : count.toString())
                  .append(",\"position\":").append(position(batch))
                  .append(",\"size\":").append(batch.sizeInBytes())
                  .append(",\"magic\":").append(batch.magic())
                  .append(",\"compression\":\"").append(batch.compressionType().name)
                  .append("\",\"crc\":").append(batch.checksum())
                  .append(",\"crc_valid\":").append(batch.isValid())
                  .append(",\"timestamp_type\":\"").append(batch.timestampType().name)
                  .append("\",\"max_timestamp\":").append(batch.maxTimestamp())
                  .append(",\"producer_id\":").append(batch.producerId())
                  .append(",\"producer_epoch\":").append(batch.producerEpoch())
                  .append(",\"base_sequence\":").append(batch.baseSequence())
                  .append(",\"last_sequence\":").append(batch.lastSequence())
                  .append(",\"partition_leader_epoch\":").append(batch.partitionLeaderEpoch())
                  .append(",\"is_transactional\":").append(batch.isTransactional())
                  .append(",\"is_control\":").append(batch.isControlBatch())
                  .append(",\"delete_horizon_ms\":")
                  .append(batch.deleteHorizonMs().isPresent() ? Long.toString(batch.deleteHorizonMs().getAsLong()) : "null")
                  .append("}\n");
                out.print(sb);
                try (CloseableIterator<Record> it = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
                    while (it.hasNext()) {
                        Record rec = it.next();
                        sb.setLength(0);
                        sb.append("{\"type\":\"record\",\"offset\":").append(rec.offset())
                          .append(",\"timestamp\":").append(rec.timestamp())
                          .append(",\"key\":");
                        bytes(sb, b64, rec.key());
                        sb.append(",\"value\":");
                        bytes(sb, b64, rec.value());
                        sb.append(",\"headers\":[");
                        boolean first = true;
                        for (Header h : rec.headers()) {
                            if (!first) sb.append(',');
                            first = false;
                            sb.append("{\"key\":\"").append(h.key()).append("\",\"value\":");
                            bytes(sb, b64, h.value() == null ? null : ByteBuffer.wrap(h.value()));
                            sb.append('}');
                        }
                        sb.append("],\"sequence\":").append(v2 ? rec.sequence() : -1).append("}\n");
                        out.print(sb);
                    }
                }
            }
        }
        out.flush();
    }

    private static int position(RecordBatch batch) {
        return ((org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch) batch).position();
    }

    private static void bytes(StringBuilder sb, Base64.Encoder b64, ByteBuffer b) {
        if (b == null) {
            sb.append("null");
            return;
        }
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        sb.append('"').append(b64.encodeToString(a)).append('"');
    }
}
