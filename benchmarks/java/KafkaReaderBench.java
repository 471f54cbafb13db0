import java.io.BufferedOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.Base64;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;

/**
 * The peer for segtools' benchmarks: Apache Kafka's own reader (FileRecords + RecordBatch)
 * over the same file. Modes: "shallow" (batch headers + isValid CRC check), "deep" (every
 * record's key, value and headers touched), "print" (deep, printing one JSON line per record
 * as `kafka-dump-log.sh --deep-iteration --print-data-log` would print a line).
 * Prints one summary line to stderr: mode records batches nanos.
 */
public final class KafkaReaderBench {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        File file = new File(args[1]);
        int repeat = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false);
        Base64.Encoder b64 = Base64.getEncoder();
        for (int r = 0; r < repeat; r++) {
            long t0 = System.nanoTime();
            long records = 0, batches = 0, bytes = 0;
            try (FileRecords log = FileRecords.open(file, false)) {
                for (RecordBatch batch : log.batches()) {
                    batches++;
                    if (!batch.isValid()) bytes++;
                    if (mode.equals("shallow")) continue;
                    for (Record rec : batch) {
                        records++;
                        ByteBuffer k = rec.key(), v = rec.value();
                        bytes += (k == null ? 0 : k.remaining()) + (v == null ? 0 : v.remaining());
                        for (Header h : rec.headers()) bytes += h.key().length();
                        if (mode.equals("print")) {
                            out.print("{\"type\":\"record\",\"offset\":");
                            out.print(rec.offset());
                            out.print(",\"timestamp\":");
                            out.print(rec.timestamp());
                            out.print(",\"key\":");
                            out.print(k == null ? "null" : "\"" + b64.encodeToString(toArray(k)) + "\"");
                            out.print(",\"value\":");
                            out.print(v == null ? "null" : "\"" + b64.encodeToString(toArray(v)) + "\"");
                            out.print("}\n");
                        }
                    }
                }
            }
            out.flush();
            System.err.println(mode + " " + records + " " + batches + " " + (System.nanoTime() - t0) + " " + bytes);
        }
    }

    private static byte[] toArray(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        return a;
    }
}
