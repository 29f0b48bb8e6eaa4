package org.tent4j.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.zip.CRC32C;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.ChildJvm;

/**
 * A target engine in its own JVM, driven over stdin/stdout by {@link Child}. It allocates one buffer of the given size
 * filled with a known pattern, prints {@code READY <segment> <address> <size>}, then answers {@code CRC <offset>
 * <length>} with the checksum of that range, {@code NOTE} with the next notification's text, and ends on {@code EXIT}.
 * It can be an initiator too: {@code FILL <seed>} refills its buffer, {@code OPEN <segment>} opens a peer's segment and
 * {@code WRITE <remote address> <length> [<deadline ms>]} writes the start of its buffer there over tcp (with that
 * deadline, else under transfer.timeout), printing {@code SUBMITTED} at once and {@code DONE <state> <ms> <crc of what it
 * sent> <error code> <message>} when the task ends. {@code METRIC <prefix>} answers the sum of the engine's Prometheus
 * samples whose line starts with the prefix (the engine needs {@code metrics.port} among its settings).
 */
public final class TargetProcess {
    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        EngineConfig.Builder b = EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1");
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            b.set(kv[0], kv[1]);
        }
        try (TransferEngine engine = TransferEngine.create(b.build())) {
            RegisteredMemory mem = engine.allocate(size, Location.CPU, Permission.READ_WRITE);
            pattern(mem.segment(), 99);
            PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
            out.println("READY " + engine.segmentName() + " " + mem.address() + " " + size);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            SegmentHandle peer = null;
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                switch (w[0]) {
                    case "FILL" -> {
                        pattern(mem.segment(), Long.parseLong(w[1]));
                        out.println("FILLED");
                    }
                    case "OPEN" -> {
                        peer = engine.openSegment(w[1]);
                        out.println("OPENED");
                    }
                    case "WRITE" -> write(engine, mem.segment().asSlice(0, Long.parseLong(w[2])), peer, Long.parseLong(w[1]),
                            w.length > 3 ? Duration.ofMillis(Long.parseLong(w[3])) : null, out);
                    case "CRC" -> out.println("CRC " + crc(mem.segment().asSlice(Long.parseLong(w[1]), Long.parseLong(w[2]))));
                    case "METRIC" -> out.println("METRIC " + metric(setting(args, "control.host", "127.0.0.1"),
                            Integer.parseInt(setting(args, "metrics.port", null)), w[1]));
                    case "NOTE" -> {
                        var n = engine.awaitNotification(Duration.ofSeconds(10));
                        out.println("NOTE " + (n == null ? "<none>" : n.sender() + " " + n.message()));
                    }
                    case "EXIT" -> {
                        return;
                    }
                    default -> out.println("ERR unknown command " + w[0]);
                }
            }
        }
    }

    private static void write(TransferEngine engine, MemorySegment src, SegmentHandle peer, long remote, Duration deadline,
                              PrintWriter out) {
        Batch batch = engine.allocateBatch(1);
        long start = System.nanoTime();
        TransferRequest.Builder r = TransferRequest.builder(Opcode.WRITE, src, peer, remote).require("tcp");
        if (deadline != null) {
            r.timeout(deadline);
        }
        batch.submit(List.of(r.build()));
        out.println("SUBMITTED");
        Thread.ofPlatform().daemon().start(() -> {
            try (batch) {
                TransferStatus s = batch.await(Duration.ofMinutes(2));
                out.println("DONE " + s.state() + " " + (System.nanoTime() - start) / 1_000_000 + " " + crc(src) + " " + s.error() + " " + s.message());
            } catch (InterruptedException e) {
                out.println("DONE INTERRUPTED");
            }
        });
    }

    /**
     * The value of {@code key=} among the arguments, else {@code otherwise}; the engine serves its Prometheus page at
     * {@code control.host:metrics.port}.
     */
    private static String setting(String[] args, String key, String otherwise) {
        for (String a : args) {
            if (a.startsWith(key + "=")) {
                return a.substring(key.length() + 1);
            }
        }
        if (otherwise == null) {
            throw new IllegalStateException("METRIC needs " + key + "=<value> among the engine's settings");
        }
        return otherwise;
    }

    /** The sum of the engine's Prometheus samples whose line starts with {@code prefix} (name and first labels). */
    private static long metric(String host, int port, String prefix) throws IOException, InterruptedException {
        try (var http = java.net.http.HttpClient.newHttpClient()) {
            String page = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + host + ":" + port
                    + "/metrics")).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            double sum = 0;
            for (String line : page.split("\n")) {
                if (line.startsWith(prefix)) {
                    sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return Math.round(sum);
        }
    }

    static void pattern(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i += 8) {
            long v = (i * 0x9E3779B97F4A7C15L) ^ seed;
            if (i + 8 <= s.byteSize()) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, v);
            } else {
                for (long j = i; j < s.byteSize(); j++) {
                    s.set(ValueLayout.JAVA_BYTE, j, (byte) (v >>> (8 * (j - i))));
                }
            }
        }
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    /** The test's handle on a running {@link TargetProcess}. */
    static final class Child implements AutoCloseable {
        final ChildJvm jvm;
        final String segment;
        final long address;
        final long size;

        Child(long size, String... config) throws IOException, InterruptedException {
            this(ChildJvm.builder(TargetProcess.class), size, config);
        }

        /** Started from {@code builder} (e.g. a TestNetwork host's, to run it inside that host). */
        Child(ChildJvm.Builder builder, long size, String... config) throws IOException, InterruptedException {
            jvm = builder.heap("512m").args(Long.toString(size)).args(config).start();
            try {
                String[] w = jvm.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
                segment = w[1];
                address = Long.parseLong(w[2]);
                this.size = Long.parseLong(w[3]);
            } catch (IOException e) {
                jvm.kill();
                throw e;
            }
        }

        /** The sum of the engine's Prometheus samples whose line starts with {@code prefix}. */
        long metric(String prefix) throws IOException, InterruptedException {
            return Long.parseLong(jvm.ask("METRIC " + prefix, "METRIC ").split(" ")[1]);
        }

        long crc(long offset, long length) throws IOException, InterruptedException {
            return Long.parseLong(jvm.ask("CRC " + offset + " " + length, "CRC ").split(" ")[1]);
        }

        String note() throws IOException, InterruptedException {
            return jvm.ask("NOTE", "NOTE ").substring(5);
        }

        void kill() throws InterruptedException {
            jvm.kill();
        }

        @Override
        public void close() throws InterruptedException {
            jvm.close();
        }
    }
}
