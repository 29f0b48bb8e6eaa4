package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * Peers that choose sizes and counts to exhaust the target: requests whose answers are never read, thousands of
 * connections, connections that send nothing. The target holds a bounded amount for each and keeps serving an honest
 * peer. Each test prints the process's resident set and heap after its flood (docs/PERFORMANCE.md).
 */
class TcpFloodTest {
    private TcpFixture f;
    private TestLocalMemory.Buffer remote;
    private TestLocalMemory.Buffer local;
    private PeerConnection good;

    private void start(Map<String, String> targetOptions) throws IOException {
        f = new TcpFixture(Map.of(), targetOptions);
        remote = f.registerAtTarget(f.arena.allocate(1 << 20, 64), Permission.READ_WRITE);
        local = f.registerAtInitiator(f.arena.allocate(1 << 20, 64));
        good = f.connect(remote);
        assertHonestTransferWorks(1);
        report("before the flood");
    }

    @AfterEach
    void tearDown() {
        if (f != null) {
            try {
                good.close();
            } finally {
                f.close();
            }
        }
    }

    private void assertHonestTransferWorks(long seed) {
        TcpFixture.fillRandom(local.segment().asSlice(0, 65536), seed);
        TestSlice w = slice(Opcode.WRITE, local, 0, remote, 4096, 65536);
        good.post(w);
        awaitDone(w);
        TestSlice r = slice(Opcode.READ, local, 65536, remote, 4096, 65536);
        good.post(r);
        awaitDone(r);
        assertEquals(-1, local.segment().asSlice(0, 65536).mismatch(local.segment().asSlice(65536, 65536)));
    }

    @Test
    void pipelinedReadsWhoseAnswersAreNeverReadPauseThatConnectionWithABoundedQueue() throws Exception {
        start(Map.of());
        int batches = 49; // 100,352 requests, 3.2 MB: socket buffers on loopback take what the target leaves unread
        try (RawClient c = new RawClient(f.b.port(), 4096)) {
            // 1-byte READs, all sent at once; the client never reads an answer
            ByteBuffer batch = ByteBuffer.allocate(2048 * 32).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < 2048; i++) {
                batch.put(RawClient.header(RawClient.MAGIC, 1, 1, 0, i, remote.address() + i, 1));
            }
            // sent from another thread: once the target stops reading, the rest waits in socket buffers whose size
            // is the kernel's business, so nothing here waits for the last batch to leave
            java.util.concurrent.atomic.AtomicInteger sentBatches = new java.util.concurrent.atomic.AtomicInteger();
            CompletableFuture<Void> sent = CompletableFuture.runAsync(() -> {
                try {
                    for (int i = 0; i < batches; i++) {
                        c.send(batch.array());
                        sentBatches.incrementAndGet();
                    }
                } catch (IOException e) {
                    throw new IllegalStateException("the target dropped the connection", e);
                }
            });
            assertTrue(f.b.awaitReadPauses(1, Duration.ofSeconds(30)), "the target never stopped reading");
            assertTrue(!sent.isCompletedExceptionally(), "the target dropped the connection");
            long queued = f.b.queuedAnswersPeak();
            // 16m / 4k charged per message (a READ answer is two), plus what the rest of one 16 KiB read of
            // requests adds after the mark is crossed
            long bound = (16 << 20) / InboundLimits.MIN_ANSWER_CHARGE / 2 + MemoryRegionBufs.READ_BUFFER_BYTES / 32;
            assertTrue(queued > 0 && queued <= bound, queued + " answers queued for one peer; the bound is " + bound);
            assertHonestTransferWorks(2);
            report(sentBatches.get() * 2048 + " pipelined 1-byte READs never read (at most " + queued
                    + " answers queued)");
            c.abort();
        }
        assertEquals(0, f.b.awaitPinsReleased(remote, Duration.ofSeconds(10)));
        assertHonestTransferWorks(3);
    }

    @Test
    void connectionsBeyondMaxConnectionsAreClosedAtOnce() throws Exception {
        int max = 200;
        int flood = 3000;
        start(Map.of("max_connections", Integer.toString(max)));
        List<RawClient> clients = new ArrayList<>();
        int served = 0;
        int refused = 0;
        try {
            for (int i = 0; i < flood; i++) {
                RawClient c = new RawClient(f.b.port());
                clients.add(c);
                c.request(1, i, remote.address(), 1);
                try {
                    c.response();
                    c.bytes(1);
                    served++;
                } catch (IOException closed) {
                    refused++;
                    c.close();
                }
            }
            // the honest peer's lanes are two of the max
            assertEquals(max - 2, served);
            assertEquals(flood - served, refused);
            assertEquals(refused, f.b.refusedConnections());
            report(flood + " connections, " + served + " held open");
        } finally {
            for (RawClient c : clients) {
                c.close();
            }
        }
        assertHonestTransferWorks(4);
    }

    @Test
    void idleConnectionsAndStalledHeadersAreClosed() throws Exception {
        start(Map.of("idle_timeout", "300ms", "max_connections", "4000"));
        List<RawClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < 2000; i++) {
                RawClient c = new RawClient(f.b.port());
                clients.add(c);
                if (i % 2 == 1) {
                    // half a header, and then nothing
                    c.send(java.util.Arrays.copyOf(RawClient.header(RawClient.MAGIC, 1, 1, 0, i, remote.address(), 1), 20));
                }
            }
            report("2000 idle connections open");
            for (RawClient c : clients) {
                assertTrue(c.closedByServer(), "an idle connection is closed after idle_timeout");
            }
        } finally {
            for (RawClient c : clients) {
                c.close();
            }
        }
        assertTrue(f.b.idleConnectionsClosed() >= 2000);
    }

    /** Prints what the process holds now, for docs/PERFORMANCE.md. */
    private static void report(String what) throws IOException {
        String rss = Files.readAllLines(Path.of("/proc/self/status")).stream()
                .filter(l -> l.startsWith("VmRSS") || l.startsWith("VmHWM")).map(l -> l.replaceAll("\\s+", " "))
                .reduce((a, b) -> a + ", " + b).orElse("?");
        var heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        long direct = ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
                .filter(p -> p.getName().equals("direct")).mapToLong(java.lang.management.BufferPoolMXBean::getMemoryUsed)
                .sum();
        System.out.printf("[flood] %s: %s, heap used %d MiB of %d MiB, direct buffers %d KiB%n", what, rss,
                heap.getUsed() >> 20, heap.getCommitted() >> 20, direct >> 10);
    }
}
