package org.tent4j.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.testkit.ChildJvm;

/**
 * A target engine in its own JVM, driven over stdin/stdout by {@link Child}. It allocates one buffer of the given size
 * filled with a known pattern, prints {@code READY <segment> <address> <size>}, then answers {@code CRC <offset>
 * <length>} with the checksum of that range, {@code NOTE} with the next notification's text, and ends on {@code EXIT}.
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
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                switch (w[0]) {
                    case "CRC" -> out.println("CRC " + crc(mem.segment().asSlice(Long.parseLong(w[1]), Long.parseLong(w[2]))));
                    case "NOTE" -> {
                        var n = engine.awaitNotification(java.time.Duration.ofSeconds(10));
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
            jvm = ChildJvm.builder(TargetProcess.class).heap("512m").args(Long.toString(size)).args(config).start();
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

        long crc(long offset, long length) throws IOException, InterruptedException {
            return Long.parseLong(jvm.ask("CRC " + offset + " " + length).split(" ")[1]);
        }

        String note() throws IOException, InterruptedException {
            return jvm.ask("NOTE").substring(5);
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
