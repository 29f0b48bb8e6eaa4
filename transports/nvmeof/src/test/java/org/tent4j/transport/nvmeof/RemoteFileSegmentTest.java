package org.tent4j.transport.nvmeof;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.nvmeof.FileSegmentEngineTest.crc;
import static org.tent4j.transport.nvmeof.FileSegmentEngineTest.fill;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.BufferInfo;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.net.FreePorts;

/**
 * Remote file segments (issue 12): an engine's files reached by another engine through tcp, the owner's engine doing
 * the file I/O (runtime {@code FileAccess}, tcp {@code FileServing}). The owner runs only tcp, so nothing but tcp can
 * serve its files; the reader also runs nvmeof and still goes through tcp (required, and shown by explain).
 */
class RemoteFileSegmentTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private static TransferEngine engine(String name, String enabled, int tcpPort) {
        return engine(name, enabled, tcpPort, java.util.Map.of());
    }

    private static TransferEngine engine(String name, String enabled, int tcpPort, java.util.Map<String, Object> more) {
        EngineConfig.Builder b = EngineConfig.builder();
        more.forEach(b::set);
        return TransferEngine.create(b
                .set(EngineConfig.SEGMENT_NAME, name)
                .set(EngineConfig.METADATA_URI, "memory://remote-files-" + name.split("-")[0])
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, enabled)
                .set(EngineConfig.SLICE_SIZE, "1m")
                .set(EngineConfig.WORKERS, 2)
                .set("transports.tcp.port", tcpPort)
                .build());
    }

    /** An engine whose tcp port (and metrics port, when asked for) the test connects to directly. */
    private record Owner(TransferEngine engine, int port, int metricsPort) implements AutoCloseable {
        @Override
        public void close() {
            engine.close();
        }
    }

    /**
     * Starts an owner on free ports, again on fresh ones when one was taken before the engine bound it
     * ({@link FreePorts}); the tcp and metrics ports are never the same.
     */
    private static Owner owner(String name, boolean withMetrics, java.util.Map<String, Object> more) throws IOException {
        return FreePorts.startOn(2, ports -> {
            java.util.Map<String, Object> all = new java.util.HashMap<>(more);
            if (withMetrics) {
                all.put(EngineConfig.METRICS_PORT, ports[1]);
            }
            return new Owner(engine(name, "tcp", ports[0], all), ports[0], withMetrics ? ports[1] : -1);
        });
    }

    private static TransferStatus run(TransferEngine e, Opcode op, MemorySegment local, SegmentHandle seg, long target) {
        return e.transfer(TransferRequest.builder(op, local, seg, target).require("tcp").build());
    }

    private static void ok(TransferStatus s) {
        assertEquals(TransferState.COMPLETED, s.state(), s::toString);
    }

    private static byte[] onDisk(Path p, long offset, int length) throws IOException {
        byte[] b = new byte[length];
        try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "r")) {
            raf.seek(offset);
            raf.readFully(b);
        }
        return b;
    }

    @Test
    void peerFileIsReadAndWrittenThroughTcp() throws Exception {
        try (TransferEngine owner = engine("rw-owner", "tcp", 0);
             TransferEngine reader = engine("rw-reader", "tcp,nvmeof", 0)) {
            Path path = dir.resolve("pool.bin");
            RegisteredFile file = owner.registerFile(path, 16 * MIB, Permission.READ_WRITE);
            // lay out known bytes without the engine
            MemorySegment seed = MemorySegment.ofArray(new byte[(int) (16 * MIB)]);
            fill(seed, 42);
            try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw")) {
                raf.write(seed.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            }
            SegmentHandle seg = reader.openSegment("rw-owner");
            BufferInfo published = reader.segmentInfo(seg).buffers().stream()
                    .filter(b -> b.location().kind() == MemoryKind.FILE).findFirst().orElseThrow();
            assertTrue(published.transports().contains("tcp"), "the file lists tcp: " + published);

            RegisteredMemory local = reader.allocate(8 * MIB, Location.CPU, Permission.LOCAL_ONLY);
            // unaligned, several slices: read
            long fileOffset = 3 * MIB + 12345;
            MemorySegment into = local.segment().asSlice(7, 5 * MIB + 3);
            TransferRequest read = TransferRequest.builder(Opcode.READ, into, seg, file.address() + fileOffset)
                    .require("tcp").build();
            TransferPlan plan = reader.explain(read);
            assertEquals("tcp", plan.transport(), plan::toString);
            ok(reader.transfer(read));
            assertEquals(crc(seed.asSlice(fileOffset, into.byteSize())), crc(into));

            // write, acknowledged only once in the file: read back without the engine right after completion
            MemorySegment from = local.segment().asSlice(1, 2 * MIB + 7);
            fill(from, 7);
            long writeOffset = 9 * MIB + 1;
            ok(run(reader, Opcode.WRITE, from, seg, file.address() + writeOffset));
            assertEquals(crc(from), crc(MemorySegment.ofArray(onDisk(path, writeOffset, (int) from.byteSize()))));

            // and through the engine again, from the owner's file via tcp
            MemorySegment back = local.segment().asSlice(3 * MIB, from.byteSize());
            ok(run(reader, Opcode.READ, back, seg, file.address() + writeOffset));
            assertEquals(crc(from), crc(back));
        }
    }

    /** The target's own checks, for a peer that does not check (raw protocol): each answer names file, offset, length. */
    @Test
    void targetRejectsBadRangesAndPermissionsAndServesInOrder() throws Exception {
        try (Owner o = owner("raw-owner", false, java.util.Map.of())) {
            TransferEngine owner = o.engine();
            int port = o.port();
            Path rwPath = dir.resolve("rw.bin");
            Path roPath = dir.resolve("ro.bin");
            RegisteredFile rw = owner.registerFile(rwPath, 1 * MIB, Permission.READ_WRITE);
            RegisteredFile ro = owner.registerFile(roPath, 64 * 1024, Permission.READ_ONLY);
            byte[] content = new byte[(int) MIB];
            new java.util.Random(5).nextBytes(content);
            try (RandomAccessFile raf = new RandomAccessFile(rwPath.toFile(), "rw")) {
                raf.write(content);
            }
            try (Raw raw = new Raw(port)) {
                // pipelined: a good READ, an over-long READ, a WRITE to the read-only file, an address in the gap after
                // a file, a good WRITE, then a READ of what it wrote; answers come back in this order
                byte[] payload = new byte[1000];
                new java.util.Random(6).nextBytes(payload);
                raw.request(1, 1, rw.address() + 100, 4096);
                raw.request(1, 2, rw.address() + MIB - 10, 11);
                raw.request(2, 3, ro.address() + 5, payload.length);
                raw.out.write(payload);
                raw.request(1, 4, rw.address() + MIB + 4096, 8);
                raw.request(2, 5, rw.address() + 777, payload.length);
                raw.out.write(payload);
                raw.request(1, 6, rw.address() + 777, payload.length);
                raw.out.flush();

                raw.expectOk(1);
                assertEquals(java.util.Arrays.toString(java.util.Arrays.copyOfRange(content, 100, 100 + 4096)),
                        java.util.Arrays.toString(raw.in.readNBytes(4096)));
                String outOfBounds = raw.expectError(2, 3);
                assertTrue(outOfBounds.contains(rwPath.toString()) && outOfBounds.contains("offset " + (MIB - 10))
                        && outOfBounds.contains("length 11"), outOfBounds);
                String denied = raw.expectError(3, 4);
                assertTrue(denied.contains(roPath.toString()) && denied.contains("offset 5")
                        && denied.contains("length 1000") && denied.contains("READ_ONLY"), denied);
                String gap = raw.expectError(4, 2);
                assertTrue(gap.contains("no registered file"), gap);
                raw.expectOk(5);
                raw.expectOk(6);
                assertEquals(java.util.Arrays.toString(payload), java.util.Arrays.toString(raw.in.readNBytes(payload.length)));
                assertEquals(java.util.Arrays.toString(payload), java.util.Arrays.toString(onDisk(rwPath, 777, payload.length)));
                // the read-only file is untouched
                assertEquals(crc(MemorySegment.ofArray(new byte[payload.length])),
                        crc(MemorySegment.ofArray(onDisk(roPath, 5, payload.length))));
            }
        }
    }

    /** Once unregistered, a file is out of reach at once, even on a connection that used it a moment before. */
    @Test
    void anUnregisteredFileIsNoLongerServed() throws Exception {
        try (Owner o = owner("gone-owner", false, java.util.Map.of())) {
            TransferEngine owner = o.engine();
            int port = o.port();
            Path path = dir.resolve("gone.bin");
            RegisteredFile f = owner.registerFile(path, 1 * MIB, Permission.READ_WRITE);
            try (Raw raw = new Raw(port)) {
                raw.request(1, 1, f.address() + 10, 100);
                raw.out.flush();
                raw.expectOk(1);
                raw.in.readNBytes(100);
                owner.unregisterFile(f);
                raw.request(1, 2, f.address() + 10, 100);
                raw.out.flush();
                String gone = raw.expectError(2, 2);
                assertTrue(gone.contains("no registered file"), gone);
            }
        }
    }

    /**
     * A peer with many connections cannot make the target hold more file request buffers than
     * {@code max_file_buffer_bytes}: each connection may have 8 file requests in flight, so 6 connections asking for
     * 8 MiB each (and reading nothing) would make it hold 48 MiB; with a 2 MiB budget it holds at most 2 MiB, stops
     * reading the connections that find it spent, and serves every request, in order and intact, once the peer reads.
     */
    @Test
    void fileBuffersAreBoundedAcrossConnections() throws Exception {
        try (Owner o = owner("budget-owner", true, java.util.Map.of(
                "transports.tcp.max_frame", "1m", "transports.tcp.max_file_buffer_bytes", "2m"))) {
            TransferEngine owner = o.engine();
            int port = o.port();
            int metricsPort = o.metricsPort();
            Path path = dir.resolve("budget.bin");
            RegisteredFile f = owner.registerFile(path, 8 * MIB, Permission.READ_ONLY);
            byte[] content = new byte[(int) (8 * MIB)];
            new java.util.Random(11).nextBytes(content);
            try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw")) {
                raf.write(content);
            }
            Metrics metrics = new Metrics(metricsPort);
            java.util.List<Raw> raws = new java.util.ArrayList<>();
            java.util.concurrent.ExecutorService readers = java.util.concurrent.Executors.newFixedThreadPool(6);
            try {
                for (int c = 0; c < 6; c++) {
                    Raw raw = new Raw(port, 4096); // a small receive window: answers stay in the target's hands
                    raws.add(raw);
                    for (int i = 0; i < 8; i++) {
                        raw.request(1, i + 1, f.address() + i * MIB, MIB);
                    }
                    raw.out.flush();
                }
                // each connection's 8 requests arrive in one read, and the target takes a buffer for each before any
                // file I/O can report back on its event loop: the third finds the 2 MiB spent, whatever the kernel's
                // socket buffers would take
                assertTrue(metrics.await("tent4j_transport_tcp_file_buffer_pauses", v -> v >= 1),
                        "no connection paused for the file buffer budget");
                java.util.List<java.util.concurrent.Future<?>> read = new java.util.ArrayList<>();
                for (Raw raw : raws) {
                    read.add(readers.submit(() -> {
                        for (int i = 0; i < 8; i++) {
                            raw.expectOk(i + 1);
                            byte[] got = raw.in.readNBytes((int) MIB);
                            assertEquals(crc(MemorySegment.ofArray(java.util.Arrays.copyOfRange(content,
                                    (int) (i * MIB), (int) ((i + 1) * MIB)))), crc(MemorySegment.ofArray(got)),
                                    "answer " + (i + 1));
                        }
                        return null;
                    }));
                }
                for (var r : read) {
                    r.get(60, java.util.concurrent.TimeUnit.SECONDS); // hang guard only
                }
                assertTrue(metrics.value("tent4j_transport_tcp_file_buffer_peak_bytes") <= 2 * MIB,
                        () -> "held more than the budget: " + metrics.scrape());
                // every buffer goes back once its answer is in the socket
                assertTrue(metrics.await("tent4j_transport_tcp_file_buffer_bytes", v -> v == 0),
                        () -> "file buffers still held: " + metrics.scrape());
            } finally {
                readers.shutdownNow();
                for (Raw raw : raws) {
                    raw.close();
                }
            }
        }
    }

    /**
     * File WRITEs share the budget: 4 connections each pipelining 4 WRITEs of 1 MiB (16 MiB of payload) against a 2 MiB
     * budget all land, in order and intact, and the target never holds more than the budget.
     */
    @Test
    void fileWritesShareTheBudgetAndLandIntact() throws Exception {
        try (Owner o = owner("wbudget-owner", true, java.util.Map.of(
                "transports.tcp.max_frame", "1m", "transports.tcp.max_file_buffer_bytes", "2m"))) {
            TransferEngine owner = o.engine();
            int port = o.port();
            int metricsPort = o.metricsPort();
            Path path = dir.resolve("wbudget.bin");
            RegisteredFile f = owner.registerFile(path, 16 * MIB, Permission.READ_WRITE);
            byte[] content = new byte[(int) (16 * MIB)];
            new java.util.Random(12).nextBytes(content);
            java.util.List<Raw> raws = new java.util.ArrayList<>();
            try {
                for (int c = 0; c < 4; c++) {
                    Raw raw = new Raw(port);
                    raws.add(raw);
                    for (int i = 0; i < 4; i++) {
                        int at = (int) ((c * 4 + i) * MIB);
                        raw.request(2, i + 1, f.address() + at, MIB);
                        raw.out.write(content, at, (int) MIB);
                    }
                }
                for (Raw raw : raws) {
                    raw.out.flush(); // blocks until the target, reading as its budget allows, has taken it
                }
                for (Raw raw : raws) {
                    for (int i = 0; i < 4; i++) {
                        raw.expectOk(i + 1);
                    }
                }
                assertEquals(crc(MemorySegment.ofArray(content)),
                        crc(MemorySegment.ofArray(onDisk(path, 0, content.length))));
                Metrics metrics = new Metrics(metricsPort);
                assertTrue(metrics.value("tent4j_transport_tcp_file_buffer_peak_bytes") <= 2 * MIB, metrics::scrape);
                assertTrue(metrics.await("tent4j_transport_tcp_file_buffer_bytes", v -> v == 0), metrics::scrape);
            } finally {
                for (Raw raw : raws) {
                    raw.close();
                }
            }
        }
    }

    /** The engine's Prometheus endpoint. */
    private record Metrics(int port) {
        String scrape() {
            try {
                var c = (java.net.HttpURLConnection) java.net.URI.create("http://127.0.0.1:" + port + "/metrics")
                        .toURL().openConnection();
                try (var in = c.getInputStream()) {
                    return new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        double value(String name) {
            String text = scrape();
            var m = java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(name)
                    + "(\\{[^}]*})? (\\S+)$").matcher(text);
            assertTrue(m.find(), () -> name + " missing in:\n" + text);
            return Double.parseDouble(m.group(2));
        }

        /** Waits (bounded; a metric has no event to wait on from outside) until {@code name} satisfies {@code ok}. */
        boolean await(String name, java.util.function.DoublePredicate ok) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (!ok.test(value(name))) {
                if (System.nanoTime() > deadline) {
                    return false;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            return true;
        }
    }

    /** The tcp data protocol, spoken over a plain socket (transports/tcp/PROTOCOL.md). */
    private static final class Raw implements AutoCloseable {
        final Socket socket;
        final OutputStream out;
        final DataInputStream in;

        Raw(int port) throws IOException {
            this(port, 0);
        }

        /** With {@code receiveBuffer} > 0, that socket receive buffer (set before connecting, so the window is small). */
        Raw(int port, int receiveBuffer) throws IOException {
            socket = new Socket();
            if (receiveBuffer > 0) {
                socket.setReceiveBufferSize(receiveBuffer);
            }
            socket.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            socket.setSoTimeout(20_000); // hang guard only
            // requests go out together at flush(), so a pipeline arrives in one segment (one read at the target)
            out = new java.io.BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
            in = new DataInputStream(socket.getInputStream());
        }

        void request(int op, long id, long address, long length) throws IOException {
            out.write(ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN).putInt(0x544A3454).put((byte) 1)
                    .put((byte) op).putShort((short) 0).putLong(id).putLong(address).putLong(length).array());
        }

        private ByteBuffer header() throws IOException {
            ByteBuffer h = ByteBuffer.wrap(in.readNBytes(16)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(0x524A3454, h.getInt(0));
            return h;
        }

        void expectOk(long id) throws IOException {
            ByteBuffer h = header();
            assertEquals(0, h.getInt(4), "status of request " + id);
            assertEquals(id, h.getLong(8));
        }

        String expectError(long id, int status) throws IOException {
            ByteBuffer h = header();
            int n = Integer.reverseBytes(in.readInt());
            String text = new String(in.readNBytes(n), StandardCharsets.UTF_8);
            assertEquals(status, h.getInt(4), text);
            assertEquals(id, h.getLong(8));
            return text;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
